/**
 * @file disp_color.h
 * @brief The colour map of disparities (dark blue = 0 to dark red = the largest), plain C
 *        with no other dependency, so that manta-infer (which links none of the runtime's
 *        data pipeline) draws what `manta eval --out` draws.
 */
#ifndef MANTA_DATA_DISP_COLOR_H
#define MANTA_DATA_DISP_COLOR_H

#include <stddef.h>
#include <stdint.h>

/**
 * Colour of each of @p count disparities @p disp: 0 .. @p max_disp along dark blue, blue,
 * cyan, green, yellow, orange, dark red (values outside clamped); non-finite values black.
 * @param rgb receives (count, 3) bytes, interleaved (the PNG writers' layout).
 */
void data_disp_colorize(const float *disp, size_t count, float max_disp, uint8_t *rgb);

#endif
