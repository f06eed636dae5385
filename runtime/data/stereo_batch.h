/**
 * @file stereo_batch.h
 * @brief Batches of stereo pairs for training and evaluation: the two views as
 *        (N, 3, H, W) planes and the ground-truth disparity at every scale of the
 *        network's predictions.
 *
 * A source is the procedural generator (data/stereo_synth.h: pair i of a set, made
 * at the batch's size) or a folder of pairs (data/stereo_folder.h: loaded, then
 * cropped to the batch's size by data/stereo_augment.h). Scale level l of the ground
 * truth is (N, 1, H >> l, W >> l) disparities in full-resolution pixels, 0 where a
 * block has no valid pixel (stereo_disp_downsample()): what nn_disp_loss_forward()
 * takes, whose mask rule is "ground truth > 0 and finite".
 */
#ifndef MANTA_DATA_STEREO_BATCH_H
#define MANTA_DATA_STEREO_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"
#include "data/stereo_augment.h"
#include "data/stereo_folder.h"
#include "data/stereo_synth.h"

/** Most scale levels of a batch's ground truth. */
#define STEREO_BATCH_MAX_LEVELS 8

/** Where pairs come from. */
typedef enum stereo_source_kind {
    STEREO_SOURCE_SYNTH, /**< the generator: pair base + i of its set */
    STEREO_SOURCE_FOLDER /**< a folder of pairs (borrowed stereo_set) */
} stereo_source_kind;

typedef struct stereo_source {
    stereo_source_kind kind;
    stereo_synth_opts synth; /**< SYNTH: its width and height are replaced by the batch's */
    uint64_t base;           /**< SYNTH: generator index of pair 0 of this source */
    long count;              /**< pairs in the source (>= 1); indices are taken modulo it */
    const stereo_set *set;   /**< FOLDER: the listed pairs, borrowed; count = set->count */
} stereo_source;

/** A batch; every array is owned and (re)filled by stereo_batch_fill(). */
typedef struct stereo_batch {
    int n, height, width, levels;
    float *left, *right;                /**< (n, 3, H, W) each */
    float *gt[STEREO_BATCH_MAX_LEVELS]; /**< level l: (n, 1, H >> l, W >> l) */
    uint8_t *mask;                      /**< (n, H, W) the pairs' STEREO_VALID | STEREO_NOC bits */
    bool has_noc;                       /**< every pair of the batch knows its NOC bits */
    long index[64];                     /**< source indices of the first 64 pairs (reporting) */
    stereo_pair pair, crop;             /**< working pairs */
} stereo_batch;

/**
 * Allocate a batch of @p n pairs of @p height x @p width with @p levels ground-truth
 * scales (1 .. STEREO_BATCH_MAX_LEVELS; H and W multiples of 2^(levels - 1)).
 * @return MANTA_ERR_INVALID_ARG (a size, or sides not divisible), MANTA_ERR_NO_MEMORY;
 *         nothing stays allocated on error.
 */
manta_status stereo_batch_alloc(stereo_batch *b, int n, int height, int width, int levels,
                                manta_err *err);
void stereo_batch_free(stereo_batch *b);

/**
 * Fill @p b with the pairs @p idx[0 .. n - 1] of @p src (each modulo src->count). With
 * @p aug (crop_h, crop_w set to the batch's size), each pair is augmented with draws
 * from @p rng: a random crop (a folder's pairs, which may be larger) and colour jitter;
 * a folder source needs it (its pairs have their own sizes). Without it, generated
 * pairs are used as they are.
 * @return the source's errors (a file that cannot be read, naming it), or
 *         MANTA_ERR_INVALID_ARG (a folder pair smaller than the batch, naming it;
 *         a folder source without @p aug). @p b's contents are unspecified on error.
 */
manta_status stereo_batch_fill(stereo_batch *b, const stereo_source *src, const long *idx,
                               const stereo_aug_params *aug, manta_rng *rng, manta_err *err);

/**
 * Fill pairs [@p first, @p first + @p count) of @p b with the pairs @p idx[0 .. count - 1]
 * of @p src (each modulo src->count), augmented as stereo_batch_fill() does, which is the
 * range [0, b->n): a batch of several sources is filled one range a source, the pairs
 * outside the range left as they are, and b->index[] set for the range. A range that
 * starts at pair 0 sets has_noc to whether its pairs know their NOC bits, a later range
 * clears it when one of its pairs does not: fill the ranges in order from pair 0 for it to
 * cover the batch.
 * @return as stereo_batch_fill(); MANTA_ERR_INVALID_ARG for a range outside [0, b->n)
 *         (nothing filled).
 */
manta_status stereo_batch_fill_range(stereo_batch *b, const stereo_source *src, int first,
                                     int count, const long *idx, const stereo_aug_params *aug,
                                     manta_rng *rng, manta_err *err);

#endif
