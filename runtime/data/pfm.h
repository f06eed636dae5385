/**
 * @file pfm.h
 * @brief Portable float maps (.pfm): the format of Middlebury's and
 *        SceneFlow's disparity maps.
 *
 * A file is a text header, then raw 32-bit IEEE floats:
 *
 *     "PF" (3 channels, interleaved) or "Pf" (1 channel), whitespace,
 *     width, whitespace, height, whitespace,
 *     scale (a decimal number; negative: the floats are little-endian,
 *            positive: big-endian), then exactly one whitespace byte,
 *     width * height * channels floats, the BOTTOM row first.
 *
 * The magnitude of the scale is not applied (Middlebury and SceneFlow write
 * 1 and store the values themselves). Values are returned as stored,
 * infinities and NaNs included (Middlebury marks unknown disparities with
 * +inf).
 *
 * In memory, maps are (height, width, channels) floats, top row first, in the
 * host's byte order. Thread-safety: reentrant.
 */
#ifndef MANTA_DATA_PFM_H
#define MANTA_DATA_PFM_H

#include "core/status.h"

/** Largest PFM file read, in bytes. */
#define PFM_MAX_BYTES ((size_t)1 << 31)

/**
 * Read a PFM file.
 * @param data     receives (height, width, channels) floats, top row first,
 *                 malloc'd, owned by the caller; NULL on error.
 * @param channels receives 1 or 3.
 * @return MANTA_ERR_IO (cannot open or read, larger than PFM_MAX_BYTES),
 *         MANTA_ERR_FORMAT with the file and the cause (not a PFM file, a bad
 *         size or scale, "N bytes of float data, expected M"),
 *         MANTA_ERR_NO_MEMORY. On error nothing stays allocated.
 */
manta_status pfm_read(const char *path, float **data, int *height, int *width, int *channels,
                      manta_err *err);

/**
 * Write @p data ((height, width, channels) floats, top row first) as a
 * little-endian PFM file (scale -1), replacing @p path atomically
 * (core/fileio.h).
 * @return MANTA_ERR_INVALID_ARG (channels not 1 or 3, a side below 1),
 *         MANTA_ERR_IO, MANTA_ERR_NO_MEMORY.
 */
manta_status pfm_write(const char *path, const float *data, int height, int width, int channels,
                       manta_err *err);

#endif
