/**
 * @file stereo_metrics.h
 * @brief Disparity quality (EPE, bad-1/2/3, KITTI D1) accumulated over pairs, the
 *        ground-truth pyramid a multi-scale loss compares predictions with, and
 *        colour maps of disparity and error for a person to look at.
 *
 * Disparities are left-view disparities in full-resolution pixels (data/stereo_pair.h),
 * at every scale of the pyramid as well. A pixel counts where the pair's mask has
 * STEREO_VALID; the "noc" figures count the pixels that also have STEREO_NOC, and exist
 * only for pairs whose NOC bits are known (stereo_pair.has_noc).
 *
 * Definitions (KITTI's and the stereo literature's): EPE, the mean absolute error;
 * bad-t, the share of pixels whose error exceeds t px; D1, the share whose error
 * exceeds both 3 px and 5% of the true disparity. Shares are percentages.
 */
#ifndef MANTA_DATA_STEREO_METRICS_H
#define MANTA_DATA_STEREO_METRICS_H

#include <stdint.h>

#include "core/status.h"
#include "data/stereo_pair.h"

/** Sums over the pixels of one region (all valid pixels, or the non-occluded ones). */
typedef struct stereo_err_sums {
    double abs_err;            /**< sum of |pred - gt| */
    long pixels;               /**< pixels counted */
    long bad1, bad2, bad3, d1; /**< pixels over each threshold */
} stereo_err_sums;

/** Running sums over pairs; zero-initialise ({0}) before the first stereo_metrics_add(). */
typedef struct stereo_metrics {
    stereo_err_sums all, noc;
    int pairs, pairs_noc; /**< pairs added; of them, those with known NOC bits */
} stereo_metrics;

/** The figures of one region; every field is NaN when no pixel was counted. */
typedef struct stereo_scores {
    double epe, bad1, bad2, bad3, d1; /**< px, then percentages */
    long pixels;
} stereo_scores;

/**
 * Add the errors of @p pred, (H, W) disparities of @p gt's left view, to @p m (the
 * pair's size, its disparity and mask). Non-finite predictions count as errors of
 * +infinity (over every threshold; the EPE becomes infinite).
 */
void stereo_metrics_add(stereo_metrics *m, const float *pred, const stereo_pair *gt);

/** The figures of the pixels added so far: all valid ones, and the non-occluded ones. */
void stereo_metrics_scores(const stereo_metrics *m, stereo_scores *all, stereo_scores *noc);

/**
 * The ground truth at scale 2^level of (H, W) disparities @p disp with validity @p mask
 * (STEREO_VALID bits): into @p out, (H >> level, W >> level) values, each the mean of the
 * valid disparities of its 2^level x 2^level block (full-resolution pixels: values are
 * not divided), 0 where no pixel of the block is valid (the loss's "no ground truth").
 * Level 0 copies the valid disparities (0 elsewhere).
 * @return MANTA_ERR_INVALID_ARG when H or W is not a multiple of 2^level, or level is
 *         outside [0, 15].
 */
manta_status stereo_disp_downsample(const float *disp, const uint8_t *mask, int height, int width,
                                    int level, float *out, manta_err *err);

/**
 * Colour map of (H, W) disparities for display: 0 .. @p max_disp from dark blue through
 * green and yellow to dark red (a piecewise-linear "jet"-like map), values outside
 * clamped, non-finite and @p mask-invalid pixels (when @p mask is not NULL) black.
 * @param rgb receives (H, W, 3) bytes, interleaved rows (the PNG writers' layout).
 */
void stereo_disp_colorize(const float *disp, const uint8_t *mask, int height, int width,
                          float max_disp, uint8_t *rgb);

/**
 * Colour map of the error |pred - gt| at the valid pixels of @p gt: black below 1 px, then
 * blue (1-2 px), green (2-3 px), yellow (3-5 px), red (over 5 px); pixels without ground
 * truth dark gray. @p rgb: (H, W, 3) bytes as above.
 */
void stereo_error_colorize(const float *pred, const stereo_pair *gt, uint8_t *rgb);

#endif
