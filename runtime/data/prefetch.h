/**
 * @file prefetch.h
 * @brief A producer thread that builds the batches of a ::loader ahead of
 *        the trainer, into a small ring of slots.
 *
 * The producer owns a loader (loader.h) and is the only thread that advances
 * it, so the batches (order, resolution, augmentation) are exactly those the
 * same loader would give synchronously, whatever the thread timing; each
 * batch carries the loader state after it, which is what a checkpoint saves
 * to resume at that point (data_prefetch_get_state()).
 *
 * Resolution changes per batch through loader_opts.res_fn (a pure function of
 * (epoch, batch)), e.g. OFA's resolution sampled once per batch from a seed
 * derived from the step: the producer calls it on its own thread, so no
 * message from the consumer can arrive "too late" and change the sequence.
 *
 * Slots: the consumer holds the slot of the batch it last received until its
 * next data_prefetch_next() (or data_prefetch_stop()); the producer fills the others.
 * With `slots` slots the producer runs at most slots - 1 batches ahead.
 *
 * Errors in the producer (a bad resolution from res_fn, out of memory) are
 * returned by data_prefetch_next() at the position in the sequence where they
 * happened, after every batch produced before them; the producer then stops.
 *
 * Thread-safety: one consumer thread per prefetcher; data_prefetch_stop() must not
 * race with data_prefetch_next(). The dataset and res_ctx must stay valid and
 * unchanged until data_prefetch_stop() returns.
 */
#ifndef MANTA_DATA_PREFETCH_H
#define MANTA_DATA_PREFETCH_H

#include "core/status.h"
#include "data/loader.h"

/** Default ring size: two batches in the making while one is in use. */
#define PREFETCH_DEFAULT_SLOTS 3

/** A running prefetcher (opaque). */
typedef struct prefetch prefetch;

/** One batch as handed to the consumer; the arrays belong to the prefetcher. */
typedef struct prefetch_batch {
    int n;               /**< images; 0 when the configured epochs are done */
    int channels;        /**< C */
    int resolution;      /**< R */
    int64_t epoch;       /**< epoch of the batch */
    int64_t batch;       /**< batch number within the epoch */
    const float *images; /**< (n, C, R, R) NCHW, normalised */
    const float *labels; /**< (n) class indices as floats */
    const int *index;    /**< (n) dataset indices */
    loader_state after;  /**< loader state after this batch (resume point) */
} prefetch_batch;

/**
 * Start a producer thread over a loader built from @p o, beginning at
 * @p start (NULL: the run's start, data_loader_state_init(o->seed)).
 * @param slots ring size, >= 2 (0: PREFETCH_DEFAULT_SLOTS)
 * @param out   receives the prefetcher; NULL on error
 * @return the errors of data_loader_init(), MANTA_ERR_INVALID_ARG for slots,
 *         MANTA_ERR_NO_MEMORY, MANTA_ERR_INTERNAL when no thread can be made.
 */
manta_status data_prefetch_start(prefetch **out, const loader_opts *o, const loader_state *start,
                                 int slots, manta_err *err);

/**
 * Hand over the next batch, blocking until it is ready. Releases the slot of
 * the batch returned by the previous call: its arrays are then invalid.
 * @param b      receives the batch (b->n == 0: all epochs done)
 * @param wait_s receives the seconds this call spent blocked waiting for the
 *               producer (the "data wait" of a training step); may be NULL
 * @return MANTA_OK, or the producer's error (with its message) once every
 *         batch made before it has been handed over; repeated on later calls.
 */
manta_status data_prefetch_next(prefetch *p, prefetch_batch *b, double *wait_s, manta_err *err);

/**
 * The state after the last batch handed over (the start state before the
 * first): pass it to data_prefetch_start() or data_loader_init() to continue the same
 * sequence from there.
 */
void data_prefetch_get_state(const prefetch *p, loader_state *s);

/** Total seconds data_prefetch_next() has spent waiting, since the start. */
double data_prefetch_wait_total(const prefetch *p);

/**
 * Stop the producer (it finishes the batch in progress, at most), join it and
 * free everything, including the slot the consumer holds. NULL is allowed.
 */
void data_prefetch_stop(prefetch *p);

#endif
