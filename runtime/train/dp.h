/**
 * @file dp.h
 * @brief Data-parallel supernet training over the OpenCL devices of this process and the
 *        ranks of a ring (dist/ring.h): one trainer per device (a replica), each driven
 *        by its own host thread, all with identical weights and identical updates.
 *
 * The replicas are trainers of any task that can split a step in two (dp_replica_ops):
 * compute (the phase start, the teacher and the sub-networks of the step on the replica's
 * shard, leaving the gradients in its slab) and apply (the SGD update with the gradients
 * multiplied by a factor). Each task gives its ops: the classification trainer's
 * (ofa_dp_create(), ofa_dp_step(): classify/ofa_train.h), the stereo trainer's
 * (stereo_dp_create(), stereo_dp_step(): stereo/train.h).
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
 * Encodings (the ring's, ring_wire(): --compress, --aggregate): the bucket allreduces travel
 * in it; the batch-norm and bias gradients with the figures stay float32 (small), except
 * with DIST_WIRE_FIXED, where they are one more fixed-point allreduce (the figures a float32
 * one after it), so that every gradient sum is exact and the same for any order of the
 * ranks around the ring. int8 keeps its error feedback per rank (dp_ef_count()).
 *
 * Failures: a failing device, a ring error (a dead or stalled rank, within the ring's
 * deadline) or a replica mismatch fail the call with a message naming the device, rank and
 * step; afterwards the object is unusable (every later call returns the same error).
 *
 * With one device and one rank, dp_run() is the task's whole step (dp_replica_ops.step) on
 * the caller's thread: no synchronisation, no host copies.
 */
#ifndef MANTA_TRAIN_DP_H
#define MANTA_TRAIN_DP_H

#include <stdint.h>

#include "dist/ring.h"
#include "elastic/types.h"

/** How replicas divide the work of a step. */
typedef enum dp_mode {
    DP_DATA = 0,  /**< same sub-networks everywhere, the global batch split over all replicas */
    DP_SUBNET = 1 /**< a different sub-network per rank; the rank's devices split its batch */
} dp_mode;

/** Length of a replica hash (BLAKE2b-256). */
#define DP_HASH_BYTES 32

typedef struct dp_trainer dp_trainer;

/**
 * What the data-parallel driver asks of a replica (a trainer on one device). `r` is the
 * replica's object from create(). A global batch is passed to dp_run() as an opaque
 * pointer and handed to compute() with the replica's shard [first, first + local_batch).
 */
typedef struct dp_replica_ops {
    size_t result_size; /**< bytes of one step result (ofa_step_result, stereo_step_result) */
    /** One replica for shards of @p local_batch samples of the schedule's global batch
     *  (@p cfg: the caller's description of the network and schedule). Errors go to the
     *  device's record. */
    manta_status (*create)(const void *cfg, mcl_dev *d, uint64_t seed, int local_batch, void **out);
    void (*destroy)(void *r);
    /** The parameter, gradient, momentum and statistics slabs (ofa_slabs). */
    void (*slabs)(void *r, ofa_slabs *out);
    /** ofa_supernet_grad_bounds(); NULL: one gradient bucket. */
    int (*grad_bounds)(void *r, size_t *bounds, int cap);
    /** The largest channel count of a batch norm (bounds ofa_bn_sync_fn's c). */
    int (*bn_max_channels)(void *r);
    /** Synchronised batch norm (ofa_supernet_set_bn_sync()). */
    void (*set_bn_sync)(void *r, ofa_bn_sync_fn fn, void *ctx);
    /** Global index of the shard's first sample (dropout masks); NULL: nothing to do. */
    void (*set_shard)(void *r, long first);
    /** Seed of the sub-network sampling (DP_SUBNET mixes in the rank). */
    void (*set_sample_seed)(void *r, uint64_t seed);
    /** Progress of the backward (ofa_trainer_set_grad_ready()); NULL: no overlap. */
    void (*set_grad_ready)(void *r, ofa_grad_ready_fn fn, void *ctx);
    /** Compute step @p step on samples [first, first + local_batch) of @p batch: the
     *  gradients of the shard in the gradient slab, the result in @p res and four figures
     *  that dp_run() sums over all replicas in @p sums (e.g. loss, kd loss, counts). */
    manta_status (*compute)(void *r, long step, const void *batch, int first, void *res,
                            float sums[4]);
    /** The update of step @p step with the gradients multiplied by @p grad_scale. */
    manta_status (*apply)(void *r, long step, float grad_scale);
    /** One whole step on the whole batch (one replica: no synchronisation). */
    manta_status (*step)(void *r, long step, const void *batch, void *res);
    /** Make @p res (replica 0's result) the job's from the figures summed over @p replicas. */
    void (*merge)(void *res, const float sums[4], int replicas);
} dp_replica_ops;

/**
 * Create one replica of @p ops per device in @p devs (n_dev >= 1), all from @p seed, each
 * for its shard of @p batch samples (the global batch, a multiple of ranks x devices). @p
 * cfg is passed to ops->create. @p ring (may be NULL for a single process) is used by the
 * caller's thread and the device threads of this object only, and must outlive it. With a
 * ring of several ranks this call is collective: every rank must call it (it checks that all
 * ranks drive the same number of devices and use the same mode).
 * @param err names the device, rank or the divisibility problem.
 */
manta_status dp_create_ops(const dp_replica_ops *ops, const void *cfg, mcl_dev *const *devs,
                           int n_dev, int batch, uint64_t seed, dp_mode mode, ring_comm *ring,
                           dp_trainer **out, manta_err *err);

/**
 * Train global step @p step on the global @p batch (the same on every rank; what
 * ops->compute reads): every replica computes its shard, the gradients are summed over all
 * replicas, every replica applies the update. @p res (may be NULL; ops->result_size
 * bytes) receives replica 0's result merged with the figures summed over all replicas.
 * Collective over the ranks. @return the first failure, described in @p err.
 */
manta_status dp_run(dp_trainer *p, long step, const void *batch, void *res, manta_err *err);

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
/** The trainer of local replica @p i (0 .. dp_local_replicas() - 1): what ops->create made
 *  (an ofa_trainer * for ofa_dp_create(), a stereo_trainer * for stereo_dp_create()). */
void *dp_replica(dp_trainer *p, int i);
/** The device of local replica @p i. */
mcl_dev *dp_device(dp_trainer *p, int i);

/** What a rank reports of its steps (dp_rank_figures_get()); times in seconds. The figures
 *  travel with a step's last allreduce, so those of "the step before" lag one step. */
typedef struct dp_rank_figures {
    double compute_s;       /**< the last step: computing the rank's shards until their
                             *   gradients were on the host (its slowest device) */
    double data_wait_s;     /**< the last step: what the rank gave to dp_set_data_wait() */
    double allreduce_s;     /**< the step before: waiting for the gradient allreduces after
                             *   the compute (0 with one rank) */
    double step_s;          /**< the step before: the whole dp_run() */
    double allreduce_bytes; /**< bytes one step allreduces over the ranks */
} dp_rank_figures;

/** The seed from which the replicas of rank @p rank sample their sub-networks: @p seed in
 *  DP_DATA mode, @p seed mixed with the rank in DP_SUBNET mode (the sampling of a step is a
 *  function of this seed, the step and k, so a program can draw the same sub-networks). */
uint64_t dp_sample_seed(uint64_t seed, dp_mode mode, int rank);

/** The seconds this rank waited for the data of the next dp_run() (0 by default). */
void dp_set_data_wait(dp_trainer *p, double seconds);

/** Every rank's figures of the last dp_run() into @p out (rank order, at most @p cap).
 *  @return the number of ranks. */
int dp_rank_figures_get(const dp_trainer *p, dp_rank_figures *out, int cap);

/**
 * Replica consistency check: hash (BLAKE2b-256) every local replica's parameters and
 * momentum (and, in DP_DATA mode, batch-norm statistics), compare the devices with each
 * other and the ranks with rank 0. Collective over the ranks.
 * @param hash out: the hash of local replica 0 (may be NULL).
 * @return MANTA_ERR_INTERNAL naming the first diverging device or rank and @p step on a
 *         mismatch; the ring's error if it fails.
 */
manta_status dp_check(dp_trainer *p, long step, unsigned char hash[DP_HASH_BYTES], manta_err *err);

/**
 * int8 error feedback (the ring's encoding DIST_WIRE_INT8, several ranks): the floats of this
 * rank's residual over the decayed gradients [0, n_decay) (what the allreduces rounded away,
 * sent with the next step's gradients); 0 for any other encoding or one rank. Every rank's
 * differs, so a checkpoint stores all of them for an exact resume.
 */
size_t dp_ef_count(const dp_trainer *p);

/**
 * Every rank's residual, in rank order, into @p all (ranks x dp_ef_count() floats; may be
 * NULL on ranks that do not keep it). Collective over the ranks (an allreduce of that many
 * floats); nothing to do when dp_ef_count() is 0.
 */
manta_status dp_ef_gather(dp_trainer *p, float *all, manta_err *err);

/**
 * This rank's residual from @p all (@p count floats as dp_ef_gather() wrote them).
 * @return MANTA_ERR_INVALID_ARG when @p count is not ranks x dp_ef_count() (another world size).
 */
manta_status dp_ef_load(dp_trainer *p, const float *all, size_t count, manta_err *err);

#endif
