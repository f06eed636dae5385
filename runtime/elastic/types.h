/**
 * @file types.h
 * @brief What every device network of elastic units (elastic/mbconv.h: the classification
 *        supernet, the stereo depth supernet) shares with the code that trains it: its
 *        slabs, the batch-norm modes of a forward pass, synchronised batch norm across
 *        replicas and the progress of a backward pass. Types only.
 */
#ifndef MANTA_ELASTIC_TYPES_H
#define MANTA_ELASTIC_TYPES_H

#include <stddef.h>

#include "cl/cl.h"
#include "core/status.h"

/** The slabs: parameters, gradients and momentum are (n_params) floats, the
 *  first n_decay of which take weight decay; state holds BN statistics. */
typedef struct ofa_slabs {
    mview params, grads, momentum, state;
    size_t n_params, n_decay, n_state;
} ofa_slabs;

/** How batch norm runs in a forward pass. */
typedef enum ofa_bn_mode {
    OFA_BN_TRAIN,      /**< batch statistics; running statistics updated (momentum 0.1) */
    OFA_BN_BATCH_ONLY, /**< batch statistics; running statistics untouched (teacher) */
    OFA_BN_EVAL,       /**< running statistics */
    OFA_BN_RECAL       /**< batch statistics; their sample-weighted average is
                             added to the running statistics (ofa_net_recal_begin(): elastic/mbconv.h) */
} ofa_bn_mode;

/** What a batch-norm synchronisation exchanges (see ofa_bn_sync_fn). */
typedef enum ofa_bn_sync_kind {
    OFA_BN_SYNC_STATS, /**< forward: (mean, biased variance) of each channel */
    OFA_BN_SYNC_GRADS  /**< backward: (sum dy, sum dy * xhat) of each channel */
} ofa_bn_sync_kind;

/**
 * Synchronised batch norm across replicas (devices or processes that each hold a
 * contiguous shard of one global batch and run the same sub-network). Called by every
 * replica for every batch-norm layer in the same order.
 * STATS: @p v (2, c) holds this replica's per-channel mean then biased variance over @p m
 * values; replace them with the mean and biased variance over all replicas and set
 * *m_total to the number of values they cover. GRADS: @p v (2, c) holds this replica's
 * sums of dy and dy * xhat; replace them with the sums over all replicas (*m_total as in
 * the forward). Every replica must receive the same values. Errors go to @p err.
 */
typedef manta_status (*ofa_bn_sync_fn)(void *ctx, ofa_bn_sync_kind kind, float *v, int c, long m,
                                       long *m_total, manta_err *err);

/**
 * Progress of a backward pass: the gradients of the decayed parameters (the weight matrices,
 * elements [@p from, n_decay) of the gradient slab) will not be written again by this
 * backward. Called by a network's backward in the order of the backward, with @p from
 * decreasing; every value is one of the network's gradient bounds (the classification
 * supernet's: classify/supernet.h). The work queued on the device so far may still be
 * running: a blocking read of the range (mcl_read) waits for it. The non-decayed parameters (batch
 * norm, biases: [n_decay, n_params)) are only final when the backward returns. A non-OK
 * return stops the backward, which returns that status.
 */
typedef manta_status (*ofa_grad_ready_fn)(void *ctx, size_t from);

#endif
