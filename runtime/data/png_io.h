/**
 * @file png_io.h
 * @brief PNG files through libpng: 8-bit colour or gray images in and out,
 *        16-bit gray in and out (KITTI disparity maps, which store
 *        disparity * 256 with 0 meaning "no ground truth").
 *
 * Pixels are interleaved rows, top row first (HWC: RGBRGB... or one value per
 * pixel), the layout decoders produce. Sample values are taken as stored: a
 * gAMA or colour profile chunk is not applied. Buffers returned are malloc'd
 * and owned by the caller (free()).
 *
 * Writers build the file in memory and replace the target atomically
 * (core/fileio.h), so a reader never sees half a file.
 *
 * Errors: one line naming the file and the cause ("<path>: not a PNG file",
 * "<path>: 8-bit RGB PNG, expected 16-bit gray", "<path>: PNG error: <libpng's
 * message>"); libpng's warnings are ignored; nothing is printed. On error
 * nothing stays allocated and the output pointers are NULL / zero.
 * Thread-safety: every function is reentrant.
 */
#ifndef MANTA_DATA_PNG_IO_H
#define MANTA_DATA_PNG_IO_H

#include <stdint.h>

#include "core/status.h"

/** Largest image read or written, in pixels (a guard against absurd headers). */
#define MPNG_MAX_PIXELS (1L << 28)

/**
 * Read a PNG as 8-bit samples with @p channels channels (1 or 3), whatever
 * its kind: palette images are expanded, 1/2/4-bit gray widened, 16-bit
 * samples scaled to 8 bits (rounded), alpha (and tRNS) dropped, gray
 * replicated to RGB, colour reduced to gray with libpng's default weights
 * (about 0.2126 R + 0.7152 G + 0.0722 B).
 * @param pixels receives (height, width, channels) bytes, row-major.
 * @return MANTA_ERR_IO (cannot open or read), MANTA_ERR_FORMAT (not a PNG,
 *         corrupt, too large), MANTA_ERR_INVALID_ARG (channels),
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status mpng_read_u8(const char *path, int channels, uint8_t **pixels, int *height, int *width,
                          manta_err *err);

/**
 * Read a 16-bit gray PNG exactly (no conversion; host byte order). Any other
 * kind of PNG is refused with MANTA_ERR_FORMAT naming what it is.
 * @param pixels receives (height, width) values, row-major.
 * @return as mpng_read_u8().
 */
manta_status mpng_read_gray16(const char *path, uint16_t **pixels, int *height, int *width,
                              manta_err *err);

/**
 * Write an 8-bit RGB PNG from (height, width, 3) bytes.
 * @return MANTA_ERR_INVALID_ARG (a side below 1, or more than MPNG_MAX_PIXELS),
 *         MANTA_ERR_IO (the file), MANTA_ERR_NO_MEMORY.
 */
manta_status mpng_write_rgb8(const char *path, const uint8_t *pixels, int height, int width,
                             manta_err *err);

/** Write an 8-bit gray PNG from (height, width) bytes. Errors as mpng_write_rgb8(). */
manta_status mpng_write_gray8(const char *path, const uint8_t *pixels, int height, int width,
                              manta_err *err);

/** Write a 16-bit gray PNG from (height, width) values in host byte order.
 *  Errors as mpng_write_rgb8(). */
manta_status mpng_write_gray16(const char *path, const uint16_t *pixels, int height, int width,
                               manta_err *err);

#endif
