/**
 * @file stereo_pair.h
 * @brief One rectified stereo pair in host memory with the ground truth of its
 *        left view: the representation shared by the synthetic generator
 *        (stereo_synth.h), the folder loaders (stereo_folder.h) and the
 *        augmentation (stereo_augment.h).
 *
 * Layout and ranges
 * -----------------
 *  - left, right: (3, H, W) planar float (CHW: the R plane, then G, then B),
 *    values in [0, 1]. Gray sources are replicated into the three planes.
 *  - disp: (H, W) disparity of the LEFT view in pixels of this image, >= 0,
 *    sub-pixel: the scene point seen at left pixel (x, y) is seen in the right
 *    view at (x - disp, y) (pixel centres at integer coordinates). 0 where the
 *    pixel has no ground truth.
 *  - mask: (H, W) bit flags per left pixel:
 *      STEREO_VALID  disp holds ground truth there;
 *      STEREO_NOC    the point is also visible in the right view (not occluded
 *                    and not outside it); only set on VALID pixels, and only
 *                    meaningful when has_noc is true.
 *    A pair with no ground truth at all (a test set) has mask all zero.
 *
 * Ownership: the four arrays are malloc'd and owned by the struct;
 * stereo_pair_free() releases them.
 */
#ifndef MANTA_DATA_STEREO_PAIR_H
#define MANTA_DATA_STEREO_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** Channels of every stereo image (RGB). */
#define STEREO_CHANNELS 3

/** Largest side of a stereo pair accepted anywhere in the data layer, in pixels. */
#define STEREO_MAX_SIDE 16384

/** mask bit: disp holds ground truth at this pixel. */
#define STEREO_VALID 1u
/** mask bit: the pixel's point is visible in the right view (non-occluded). */
#define STEREO_NOC 2u

/** A rectified stereo pair and the ground truth of its left view (see the file comment). */
typedef struct stereo_pair {
    int height, width;
    float *left;   /**< (3, H, W) CHW in [0, 1], owned */
    float *right;  /**< (3, H, W) CHW in [0, 1], owned */
    float *disp;   /**< (H, W) left-view disparity in pixels, 0 where not VALID, owned */
    uint8_t *mask; /**< (H, W) STEREO_VALID | STEREO_NOC bits, owned */
    bool has_noc;  /**< the STEREO_NOC bits are known (else they are all clear) */
} stereo_pair;

/**
 * Allocate a pair of @p height x @p width with every array zeroed (no ground
 * truth, has_noc false).
 * @return MANTA_ERR_INVALID_ARG for a side outside [1, STEREO_MAX_SIDE],
 *         MANTA_ERR_NO_MEMORY; on error @p p is zeroed.
 * Thread-safety: reentrant.
 */
manta_status stereo_pair_alloc(stereo_pair *p, int height, int width, manta_err *err);

/** Release the arrays; the struct is zeroed. NULL is allowed. */
void stereo_pair_free(stereo_pair *p);

/** Segments of the power table of ::stereo_gamma. */
#define STEREO_GAMMA_SEGMENTS 256

/**
 * x ^ gamma on [0, 1] as a table read with linear interpolation: absolute
 * error below 4e-3 for gamma >= 2/3 and below 1e-4 for x >= 0.05 (under one
 * 8-bit step), exact for gamma 1. Cheap to apply, about 257 powf to build.
 */
typedef struct stereo_gamma {
    float v[STEREO_GAMMA_SEGMENTS + 2]; /**< v[k] = (k / SEGMENTS) ^ gamma, v[SEGMENTS + 1] = 1 */
} stereo_gamma;

/** Fill @p g for @p gamma (> 0; any other value gives the identity). Reentrant. */
void stereo_gamma_init(stereo_gamma *g, float gamma);

/** clamp(v, 0, 1) ^ gamma through the table (NaN gives 0). */
static inline float stereo_gamma_apply(const stereo_gamma *g, float v)
{
    v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;
    float f = v * STEREO_GAMMA_SEGMENTS;
    int k = (int)f;
    return g->v[k] + (f - (float)k) * (g->v[k + 1] - g->v[k]);
}

/**
 * The tone curve shared by the generator's photometric model and the colour
 * jitter: each of the @p n values of @p x becomes
 * clamp(gain * x + bias, 0, 1) ^ gamma (@p g made by stereo_gamma_init()),
 * in place. Thread-safety: reentrant.
 */
void stereo_tone(float *x, size_t n, float gain, float bias, const stereo_gamma *g);

#endif
