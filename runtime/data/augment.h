/**
 * @file augment.h
 * @brief From stored 8-bit images to a normalised float batch at a requested
 *        resolution: the CIFAR-style training recipe and the evaluation view.
 *
 * An image of h x w pixels (HWC, see dataset.h) is first reduced to a square
 * view of side s = min(h, w):
 *  - eval mode: the centred square, top-left (floor((h-s)/2), floor((w-s)/2)),
 *    not flipped;
 *  - train mode: the image is padded by @c pad pixels on every side (zero
 *    padding: pixel value 0, i.e. black, like torchvision's RandomCrop(padding);
 *    or edge padding: the nearest border pixel is repeated), a square of side s
 *    is cut at a uniformly random position of the padded image, and it is
 *    mirrored left-right with probability 1/2.
 * The view is then resized to R x R with the filter of resample.h (bilinear;
 * averaging when shrinking; the identity when R == s) and each channel is
 * normalised: out = (x / 255 - mean[c]) / std[c]. Output layout is planar:
 * (C, R, R) per image, (B, C, R, R) per batch (NCHW).
 *
 * Randomness: train mode draws, per image and in batch order, the row offset
 * (manta_rng_below(h + 2 pad - s + 1)), the column offset (likewise with w) and
 * the flip (top bit of one manta_rng_u32), nothing else; eval mode draws
 * nothing. So the output is a pure function of the images, the parameters and
 * the caller's RNG state, whatever thread computes it.
 *
 * Thread-safety: every function is reentrant; the RNG and the output buffers
 * belong to the caller, the dataset is only read.
 */
#ifndef MANTA_DATA_AUGMENT_H
#define MANTA_DATA_AUGMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"
#include "data/dataset.h"

/** Which recipe to apply. */
typedef enum aug_mode {
    AUG_EVAL = 0,  /**< centred square, no randomness */
    AUG_TRAIN = 1, /**< padded random crop + random horizontal flip */
} aug_mode;

/** What fills the padding of a training crop. */
typedef enum aug_pad_kind {
    AUG_PAD_ZERO = 0, /**< pixel value 0 (before normalisation) */
    AUG_PAD_EDGE = 1, /**< replicate the nearest border pixel */
} aug_pad_kind;

/** Largest output resolution accepted. */
#define AUG_MAX_RESOLUTION 4096

/** Padding of the CIFAR recipe, in stored pixels. */
#define AUG_DEFAULT_PAD 4

/** ImageNet RGB mean and standard deviation of x/255 (torchvision's constants). */
#define AUG_IMAGENET_MEAN      \
    {                          \
        0.485f, 0.456f, 0.406f \
    }
#define AUG_IMAGENET_STD       \
    {                          \
        0.229f, 0.224f, 0.225f \
    }

/** How to turn stored images into network input. */
typedef struct aug_params {
    aug_mode mode;
    int pad;               /**< train mode padding in pixels, >= 0 (default 4) */
    aug_pad_kind pad_kind; /**< default AUG_PAD_ZERO */
    bool flip;             /**< train mode: random horizontal flip (default true) */
    float mean[3];         /**< per-channel mean of x/255 (first `channels` used) */
    float std[3];          /**< per-channel standard deviation of x/255, > 0 */
} aug_params;

/**
 * Defaults for @p mode and @p channels: pad 4 with zeros, flip on; mean/std
 * of ImageNet for 3 channels and of Fashion-MNIST (idx.h) for 1 channel.
 * For other data, data_set_channel_stats() gives the right figures.
 */
void data_aug_params_default(aug_params *p, aug_mode mode, int channels);

/** The square view cut from one image (coordinates of the unpadded image). */
typedef struct aug_view {
    int y0, x0; /**< top-left corner; negative or past the edge inside padding */
    int side;   /**< side of the square, min(h, w) */
    bool flip;  /**< mirror left-right */
} aug_view;

/**
 * Choose the view of an h x w image: the centre (eval) or a random padded
 * crop and flip (train; draws from @p rng as described above; @p rng may be
 * NULL in eval mode). In train mode y0 lies in [-pad, h + pad - side] and x0
 * in [-pad, w + pad - side].
 */
void data_aug_sample_view(const aug_params *p, int h, int w, manta_rng *rng, aug_view *v);

/**
 * Render one view of an image to (C, R, R) floats, normalised.
 * @param img  (h, w, c) HWC pixels
 * @param out  (c, r, r) output, planar
 * @return MANTA_ERR_INVALID_ARG (sizes, channels, std <= 0, a view outside
 *         the padded image), MANTA_ERR_NO_MEMORY.
 */
manta_status data_aug_render(const aug_params *p, const uint8_t *img, int h, int w, int c,
                             const aug_view *v, int r, float *out, manta_err *err);

/**
 * Build a batch: for b in [0, n) sample a view of image index[b] of @p d (in
 * order, from @p rng) and render it at resolution @p r.
 * @param images (n, d->channels, r, r) output, NCHW
 * @param labels (n) output: class indices as floats; may be NULL
 * @return MANTA_ERR_INVALID_ARG (an index outside [0, count), r outside
 *         [1, AUG_MAX_RESOLUTION], bad parameters), MANTA_ERR_NO_MEMORY.
 *         On error the outputs and @p rng are left in an unspecified state.
 */
manta_status data_aug_batch(const aug_params *p, const dataset *d, const int *index, int n, int r,
                            manta_rng *rng, float *images, float *labels, manta_err *err);

#endif
