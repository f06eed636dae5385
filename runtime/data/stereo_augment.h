/**
 * @file stereo_augment.h
 * @brief Training augmentation of stereo pairs that keeps the geometry: the
 *        disparity stays the ground truth of the output's left view.
 *
 * What it does, in this order:
 *  1. a random crop: one window of crop_h x crop_w, the same for left, right,
 *     disparity and mask (a shift common to both views leaves every
 *     disparity unchanged);
 *  2. an optional vertical flip of all four (rows stay rectified and each
 *     pixel keeps its disparity);
 *  3. colour jitter, drawn per view (asymmetric) or once for both:
 *     x' = clamp(b (c (x - m) + m), 0, 1) ^ g for every channel, where m is
 *     the mean of the cropped view over its three channels, the brightness
 *     factor b is drawn in [1 - brightness, 1 + brightness], the contrast
 *     factor c in [1 - contrast, 1 + contrast] and g = exp(U(-gamma, gamma))
 *     (stereo_tone()).
 *
 * There is no horizontal flip: mirroring a pair makes the mirrored RIGHT view
 * the new left one (the views swap), and the ground truth then needed is the
 * disparity of the right view, which the data sets do not all provide. Scaling
 * is not done either (it would scale disparities).
 *
 * Randomness, drawn from the caller's RNG in this order: the crop's row
 * (manta_rng_below(H - crop_h + 1)), its column (manta_rng_below(W - crop_w + 1)),
 * when vflip is on one manta_rng_u32 (its top bit flips), then three
 * manta_rng_uniform per view (brightness, contrast, gamma; the left view's
 * first, the right view's only when per_view). So the output is a pure
 * function of the input, the parameters and the RNG state.
 *
 * Thread-safety: reentrant; the input pair is only read.
 */
#ifndef MANTA_DATA_STEREO_AUGMENT_H
#define MANTA_DATA_STEREO_AUGMENT_H

#include <stdbool.h>

#include "core/rng.h"
#include "core/status.h"
#include "data/stereo_pair.h"

/** How to augment a pair. */
typedef struct stereo_aug_params {
    int crop_h, crop_w; /**< output size, at most the input's (the output pair's size) */
    float brightness;   /**< factor in [1 - brightness, 1 + brightness]; brightness in [0, 1] */
    float contrast;     /**< factor in [1 - contrast, 1 + contrast]; contrast in [0, 1] */
    float gamma;        /**< gamma = exp(U(-gamma, gamma)); gamma in [0, 1] */
    bool per_view;      /**< independent jitter per view (default true) */
    bool vflip;         /**< flip vertically with probability 1/2 (default false) */
} stereo_aug_params;

/** Defaults for a crop of @p crop_h x @p crop_w: brightness 0.3, contrast 0.3,
 *  gamma 0.2 (factors within about [0.82, 1.22]), per view, no flip. */
void stereo_aug_params_default(stereo_aug_params *p, int crop_h, int crop_w);

/**
 * Augment @p in into @p out, which must be allocated (stereo_pair_alloc()) at
 * crop_h x crop_w; every array of @p out is overwritten and its has_noc copied.
 * @p in and @p out must not share arrays.
 * @return MANTA_ERR_INVALID_ARG for parameters out of range, a crop larger
 *         than the input (message gives both sizes), or an output of another
 *         size than the crop. Nothing is drawn from @p rng on error.
 */
manta_status stereo_aug_apply(const stereo_aug_params *p, const stereo_pair *in, manta_rng *rng,
                              stereo_pair *out, manta_err *err);

#endif
