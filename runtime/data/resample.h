/**
 * @file resample.h
 * @brief The one resampling filter of the data pipeline: bilinear as a
 *        triangle filter whose support widens when shrinking (PIL's BILINEAR).
 *
 * Output sample o of an axis of @c in samples resized to @c out sits at the
 * source position c = (o + 0.5) * in / out (pixel centres at i + 0.5). With
 * s = max(1, in / out), input sample i gets weight max(0, 1 - |i + 0.5 - c| / s),
 * the weights of the samples inside [0, in) are normalised to sum to one.
 * Enlarging, this is ordinary bilinear interpolation with half-pixel centres
 * and clamped edges (PyTorch's align_corners=False); shrinking, it averages
 * every covered input sample, so small stored images do not alias; at equal
 * sizes it is the identity. Used by the JPEG loader (to the stored size) and
 * by augmentation (to the training resolution).
 */
#ifndef MANTA_DATA_RESAMPLE_H
#define MANTA_DATA_RESAMPLE_H

#include <stdint.h>

#include "core/status.h"

/** Filter taps of one axis: output o reads inputs first[o] .. first[o]+taps-1. */
typedef struct rs_taps {
    int out;    /**< output samples */
    int taps;   /**< taps per output (unused ones have weight 0) */
    int *first; /**< (out) first input index, within [0, in) */
    float *w;   /**< (out, taps) weights; the taps of an output sum to 1 */
} rs_taps;

/**
 * Compute the taps resizing an axis of @p in samples to @p out (both > 0).
 * Every index first[o] + t with a nonzero weight lies in [0, in).
 * @return MANTA_ERR_INVALID_ARG for sizes out of range, MANTA_ERR_NO_MEMORY.
 * Free with data_rs_taps_free(). Thread-safety: reentrant.
 */
manta_status data_rs_taps_make(rs_taps *t, int in, int out, manta_err *err);

/** Release the taps' arrays; the struct is zeroed. NULL is allowed. */
void data_rs_taps_free(rs_taps *t);

/**
 * Resize an 8-bit HWC image (h, w, c) to (oh, ow, c), horizontally first,
 * rounding to the nearest integer. @p src and @p dst must not overlap.
 * @return MANTA_ERR_NO_MEMORY when the temporary buffers cannot be had.
 * Thread-safety: reentrant.
 */
manta_status data_rs_resize_u8(const uint8_t *src, int h, int w, int c, uint8_t *dst, int oh,
                               int ow, manta_err *err);

#endif
