/**
 * @file disp_color.h
 * @brief What manta-infer and manta eval do alike with a disparity map: its colour map
 *        (dark blue = 0 to dark red = the largest) and its resize back to the left view's
 *        pixels; plain C with no other dependency, so that manta-infer (which links none of
 *        the runtime's data pipeline) draws and scores what `manta eval` does.
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

/**
 * Bilinear resize with half-pixel centres and clamped edges (PyTorch's align_corners=False)
 * of the (ih, iw) plane @p in to the (oh, ow) plane @p out, every value multiplied by
 * @p scale (a disparity map resized to another width takes ow / iw). All sizes > 0; @p in
 * and @p out must not overlap.
 */
void data_disp_resize(const float *in, int ih, int iw, float *out, int oh, int ow, float scale);

#endif
