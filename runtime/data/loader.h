/**
 * @file loader.h
 * @brief The batch sequence of a training run, computed synchronously: epoch
 *        orders, batching, per-batch resolution and augmentation. prefetch.h
 *        runs the same sequence on a producer thread.
 *
 * The sequence is a pure function of the options and a ::loader_state:
 *  - epoch e visits the sample list (opts.indices, or every image) in the
 *    order of a Fisher-Yates shuffle seeded from (opts.seed, e) alone, or in
 *    list order when shuffle is off; so any epoch's order can be rebuilt
 *    without replaying the ones before;
 *  - a batch takes the next `batch` entries of that order from position
 *    `pos`; batches never span two epochs; with drop_last the remainder
 *    shorter than a batch is skipped, else it forms a last, smaller batch;
 *  - its resolution is opts.resolution or opts.res_fn(ctx, epoch, pos / batch);
 *  - its augmentation draws from the state's RNG (augment.h), image by image.
 * After each batch the state is advanced and normalised: when the epoch has
 * no further batch, it reads (epoch + 1, 0). Saving the state after a batch
 * and starting a loader from it later continues the very same sequence.
 */
#ifndef MANTA_DATA_LOADER_H
#define MANTA_DATA_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/status.h"
#include "data/augment.h"
#include "data/dataset.h"

/**
 * Resolution of the batch at (@p epoch, @p batch), batch = position / batch
 * size. Must be a pure function of its arguments and return a value in
 * [1, max_resolution]; it is called on the producer thread when prefetching,
 * so it must not touch state the consumer changes.
 */
typedef int (*loader_res_fn)(void *ctx, int64_t epoch, int64_t batch);

/** What to load. The loader copies the struct and the index list. */
typedef struct loader_opts {
    const dataset *data; /**< read only; must outlive the loader */
    const int *indices;  /**< samples to draw from (n_indices), NULL: all images */
    int n_indices;
    int batch;            /**< images per batch, > 0 */
    bool shuffle;         /**< reshuffle every epoch from (seed, epoch) */
    bool drop_last;       /**< skip a last batch shorter than `batch` */
    uint64_t seed;        /**< seeds the epoch orders */
    aug_params aug;       /**< augmentation (mode, padding, flip, mean/std) */
    int resolution;       /**< fixed resolution when res_fn is NULL */
    int max_resolution;   /**< bound on res_fn's values (sizes the buffers) */
    loader_res_fn res_fn; /**< per-batch resolution, or NULL */
    void *res_ctx;        /**< passed to res_fn */
    int64_t epochs;       /**< end once the state's epoch reaches this; 0: never end */
} loader_opts;

/**
 * Defaults for a training loader over @p d: batch 64, shuffle, drop_last,
 * seed 0, train augmentation (data_aug_params_default), resolution = the stored
 * size (or 32 when it varies), no callback, endless.
 */
void data_loader_opts_default(loader_opts *o, const dataset *d);

/** Everything needed to resume exactly: checkpoint these three values. */
typedef struct loader_state {
    int64_t epoch; /**< current epoch, from 0 */
    int64_t pos;   /**< samples of this epoch's order already delivered */
    manta_rng rng; /**< augmentation RNG before the next batch */
} loader_state;

/** The state at the start of a run: epoch 0, position 0, RNG from @p seed. */
void data_loader_state_init(loader_state *s, uint64_t seed);

/** Description of one batch. */
typedef struct loader_batch_info {
    int n;          /**< images in the batch; 0 once the epochs are done */
    int resolution; /**< R of this batch */
    int64_t epoch;  /**< epoch it belongs to */
    int64_t batch;  /**< its number within the epoch (pos / batch size) */
} loader_batch_info;

/** A synchronous loader. Fields are private. */
typedef struct loader {
    loader_opts o;
    int *indices; /* (n) owned copy of the sample list */
    int n;
    int *order; /* (n) order of epoch order_epoch */
    int64_t order_epoch;
    loader_state st;
} loader;

/**
 * Validate @p o and start at @p start (NULL: data_loader_state_init(o->seed)).
 * @return MANTA_ERR_INVALID_ARG (no data, batch <= 0, an index out of range,
 *         drop_last with fewer samples than a batch, resolution out of
 *         [1, AUG_MAX_RESOLUTION], a start state outside the epoch, bad
 *         augmentation parameters), MANTA_ERR_NO_MEMORY. Free with data_loader_free().
 * Thread-safety: reentrant; @p o->data is only read, and must outlive @p l.
 */
manta_status data_loader_init(loader *l, const loader_opts *o, const loader_state *start,
                              manta_err *err);

/** Floats one images buffer must hold: batch * channels * R^2, R the fixed
 *  resolution or max_resolution when res_fn is set. */
size_t data_loader_image_floats(const loader *l);

/**
 * Produce the next batch and advance the state.
 * @param images (n, C, R, R) NCHW, capacity data_loader_image_floats()
 * @param labels (n) class indices as floats, capacity batch
 * @param index  (n) dataset indices of the images, capacity batch; may be NULL
 * @param info   receives n, R, epoch and batch number; n == 0 when the
 *               configured epochs are done (the state then stays put)
 * @return MANTA_ERR_INVALID_ARG when res_fn returns a value out of range (the
 *         state is not advanced), MANTA_ERR_NO_MEMORY.
 * Thread-safety: one thread at a time per loader.
 */
manta_status data_loader_next(loader *l, float *images, float *labels, int *index,
                              loader_batch_info *info, manta_err *err);

/** The state after the last batch produced (or the start state, normalised:
 *  a position with no further batch reads as the next epoch's start). */
void data_loader_get_state(const loader *l, loader_state *s);

/** Release the loader's arrays. NULL is allowed. */
void data_loader_free(loader *l);

#endif
