/**
 * @file steps.h
 * @brief The pairs of each training step of a stereo run: drawn from (seed, step) alone, so
 *        that a resumed or interrupted run, and every rank of a distributed one, sees the same
 *        pairs at the same step.
 *
 * Step s draws, from the random stream (seed, 2 s + 1): the crop (one of the space's training
 * crops, stereo_space_crop(), for generated pairs; the space's crop for a folder's pairs),
 * then the source index of every pair of the batch, then the augmentation. With a folder and
 * a mix share R (--mix R), the first round(R n) pairs of each batch of n are generated pairs
 * (@p gen), the rest the folder's.
 */
#ifndef MANTA_STEREO_STEPS_H
#define MANTA_STEREO_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "data/stereo_batch.h"
#include "space/stereo_space.h"

/** Where the pairs of a run's steps come from. */
typedef struct stereo_steps {
    const stereo_space *space;  /**< borrowed */
    uint64_t seed;              /**< the run's seed */
    const stereo_source *train; /**< the training pairs (generated, or a folder's), borrowed */
    const stereo_source *gen;   /**< with a folder: the generated pairs mixed in, or NULL */
    double mix;                 /**< share of generated pairs in a folder run's batch, [0, 1] */
    bool folder;                /**< @p train is a folder's pairs (trained at the crop alone) */
} stereo_steps;

/** Generated pairs at the start of a batch of @p n: round(mix n) with a folder, else 0. */
int stereo_steps_generated(const stereo_steps *s, int n);

/**
 * Fill @p b with the pairs of step @p step: @p b keeps its pair count and levels and is made
 * again at the step's crop size when its size differs (freed and allocated: its arrays may
 * move). @return the errors of stereo_batch_alloc() and stereo_batch_fill_range() (a pair
 * that cannot be read names its file), MANTA_ERR_NO_MEMORY; @p b is then unspecified but can
 * be freed.
 */
manta_status stereo_steps_batch(const stereo_steps *s, long step, stereo_batch *b, manta_err *err);

/** Make @p b (pair count and levels kept) hold pairs of @p h x @p w, when its size differs. */
manta_status stereo_steps_resize(stereo_batch *b, int h, int w, manta_err *err);

#endif
