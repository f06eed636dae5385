/**
 * @file dp.h
 * @brief Data-parallel supernet training over the OpenCL devices of this process and the
 *        ranks of a ring (dist/ring.h): one ofa_trainer per device (a replica), each driven
 *        by its own host thread, all with identical weights and identical updates.
 *
 * Replicas: R = ranks x devices per rank (every rank must drive the same number of
 * devices). Replica g = rank * devices + device takes the contiguous shard
 * [g * B/R, (g+1) * B/R) of the global batch of B images (B a multiple of R); every rank
 * is given the whole global batch, as a one-device run would load it, so augmentation and
 * data order are those of that run.
 *
 * Modes:
 *  - DP_DATA: every replica samples the same sub-networks (from (seed, step, k)); batch
 *    norm is synchronised over all R replicas (ofa_supernet_set_bn_sync(): per-channel mean
 *    and variance in forward, sums of dy and dy * xhat in backward), the teacher's forward
 *    too; dropout masks follow the global sample index. The result is the one-device
 *    training on the whole batch, up to float rounding.
 *  - DP_SUBNET: each rank samples its own sub-networks (sampling seed mixed with the rank);
 *    the devices of a rank share them, split the rank's B/ranks images and synchronise
 *    batch norm among themselves only.
 * In both modes the gradients are summed over the devices in host memory in device order,
 * then over the ranks by the ring (a fixed order), and every replica applies the update
 * with grad_scale = 1 / R: all replicas hold the same bits afterwards.
 *
 * Gradient buckets (several ranks): the weight gradients [0, n_decay) are cut at block
 * boundaries of the supernet into buckets of about DP_BUCKET_BYTES (dp_set_buckets()), each
 * allreduced on its own, from the classifier down to the stem, then one allreduce of the
 * batch-norm and bias gradients with the step's loss counters. With overlap (the default)
 * the last sub-network's backward reports each finished block (ofa_trainer_set_grad_ready());
 * every bucket whose gradients are final is read from the devices, summed over them and
 * queued on the ring's communication thread while the backward continues. The allreduces
 * and their order are the same with and without overlap, so for a given bucket size and
 * number of ranks the results are bit-identical.
 *
 * Failures: a failing device, a ring error (a dead or stalled rank, within the ring's
 * deadline) or a replica mismatch fail the call with a message naming the device, rank and
 * step; afterwards the object is unusable (every later call returns the same error).
 *
 * With one device and one rank, dp_step() is ofa_trainer_step() on the caller's thread: no
 * synchronisation, no host copies.
 */
#ifndef MANTA_TRAIN_DP_H
#define MANTA_TRAIN_DP_H

#include <stdint.h>

#include "dist/ring.h"
#include "train/ofa_train.h"

/** How replicas divide the work of a step. */
typedef enum dp_mode {
    DP_DATA = 0,  /**< same sub-networks everywhere, the global batch split over all replicas */
    DP_SUBNET = 1 /**< a different sub-network per rank; the rank's devices split its batch */
} dp_mode;

/** Length of a replica hash (BLAKE2b-256). */
#define DP_HASH_BYTES 32

typedef struct dp_trainer dp_trainer;

/**
 * Create one replica per device in @p devs (n_dev >= 1), all from @p seed, each for its
 * shard of sched->batch. @p ring (may be NULL for a single process) is used by the
 * caller's thread and the device threads of this object only, and must outlive it. With
 * a ring of several ranks this call is collective: every rank must call it (it checks that
 * all ranks drive the same number of devices and use the same mode).
 * @param err names the device, rank or the divisibility problem.
 */
manta_status dp_create(mcl_dev *const *devs, int n_dev, const ofa_space *space,
                       const ofa_schedule *sched, uint64_t seed, dp_mode mode, ring_comm *ring,
                       dp_trainer **out, manta_err *err);

/** Default size of a gradient bucket (bytes). */
#define DP_BUCKET_BYTES ((size_t)1 << 20)

/**
 * Gradient buckets of the later steps: about @p bytes each (cut at the next block boundary;
 * 0: a single bucket), allreduced during the backward when @p overlap is non-zero, after it
 * otherwise. Collective over the ranks; all ranks must pass the same values (checked: a
 * mismatch is MANTA_ERR_INVALID_ARG naming both ranks, and the object becomes unusable).
 */
manta_status dp_set_buckets(dp_trainer *p, size_t bytes, int overlap, manta_err *err);

/** Stop the device threads and free the replicas. NULL is allowed. */
void dp_destroy(dp_trainer *p);

/** Replicas of this process (its devices). */
int dp_local_replicas(const dp_trainer *p);
/** Replicas of the whole job (ranks x devices). */
int dp_replicas(const dp_trainer *p);
/** The trainer of local replica @p i (0 .. dp_local_replicas() - 1). */
ofa_trainer *dp_replica(dp_trainer *p, int i);
/** The device of local replica @p i. */
mcl_dev *dp_device(dp_trainer *p, int i);

/**
 * Train global step @p step on the global batch (images (B, C, r, r), labels (B), the
 * same on every rank): every replica computes its shard, the gradients are summed over
 * all replicas, every replica applies the update. @p out (may be NULL) receives the
 * loss, distillation loss and top-1 counts over all replicas (mean loss; summed counts).
 * Collective over the ranks. @return the first failure, described in @p err.
 */
manta_status dp_step(dp_trainer *p, long step, const float *images, const float *labels,
                     ofa_step_result *out, manta_err *err);

/**
 * Replica consistency check: hash (BLAKE2b-256) every local replica's parameters and
 * momentum (and, in DP_DATA mode, batch-norm statistics), compare the devices with each
 * other and the ranks with rank 0. Collective over the ranks.
 * @param hash out: the hash of local replica 0 (may be NULL).
 * @return MANTA_ERR_INTERNAL naming the first diverging device or rank and @p step on a
 *         mismatch; the ring's error if it fails.
 */
manta_status dp_check(dp_trainer *p, long step, unsigned char hash[DP_HASH_BYTES],
                      manta_err *err);

#endif
