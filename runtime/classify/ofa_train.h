/**
 * @file ofa_train.h
 * @brief Progressive-shrinking training of an OFA supernet on one device, and
 *        evaluation of its sub-networks (with BN re-calibration).
 *
 * One step, as OFA: the resolution is sampled once per batch from (seed,
 * step); when the phase distils, the teacher (a frozen copy of the network
 * as it was at the end of the first phase) produces soft targets for the
 * batch once; then `subnets` times a sub-network is sampled from
 * (seed, step, k), run forward and backward on the same images, and its
 * gradients add up; then one SGD step. The loss of each sub-network is the
 * label-smoothed cross-entropy plus kd_ratio times the cross-entropy against
 * the teacher's softmax. A phase that re-organises widths does so before its
 * first step, and every phase starts with zero momentum.
 */
#ifndef MANTA_CLASSIFY_OFA_TRAIN_H
#define MANTA_CLASSIFY_OFA_TRAIN_H

#include <stdint.h>

#include "classify/supernet.h"
#include "export/xgraph.h"
#include "train/dp.h"
#include "train/schedule.h"

typedef struct ofa_trainer ofa_trainer;

/** Create the supernet and the trainer's buffers (all allocation happens here). */
manta_status ofa_trainer_create(mcl_dev *d, const ofa_space *space, const ofa_schedule *sched,
                                uint64_t seed, ofa_trainer **out);
void ofa_trainer_destroy(ofa_trainer *t);

/**
 * A trainer for one replica of data-parallel training: the schedule (learning rates, its
 * batch = the global batch) is that of the whole run, but this device processes shards of
 * @p local_batch images (1 .. sched->batch), whose batch-mean gradients it computes. The
 * caller sums the replicas' gradients and applies them with grad_scale = 1 / replicas.
 * ofa_trainer_create() is the case local_batch = sched->batch. Evaluation also runs in
 * batches of local_batch images.
 */
manta_status ofa_trainer_create_shard(mcl_dev *d, const ofa_space *space, const ofa_schedule *sched,
                                      uint64_t seed, int local_batch, ofa_trainer **out);

/** Images per batch on this device (the shard size). */
int ofa_trainer_batch(const ofa_trainer *t);

/** Seed of the sub-network sampling (default: the trainer's seed). Replicas that must train
 *  different sub-networks (OFA's per-node sampling) set different ones; the resolution and
 *  dropout stay tied to the trainer's seed. */
void ofa_trainer_set_sample_seed(ofa_trainer *t, uint64_t seed);

/**
 * Report the progress of the last sub-network's backward of every later
 * ofa_trainer_compute() to @p fn (see ofa_grad_ready_fn): when it is called, the decayed
 * gradients [from, n_decay) of the step are final, since the backwards of the earlier
 * sub-networks are complete. NULL turns it off (the default).
 */
void ofa_trainer_set_grad_ready(ofa_trainer *t, ofa_grad_ready_fn fn, void *ctx);

ofa_supernet *ofa_trainer_net(ofa_trainer *t);
const ofa_schedule *ofa_trainer_schedule(const ofa_trainer *t);

/** The resolution the batch of global step @p step must have. */
int ofa_trainer_resolution(const ofa_trainer *t, long step);

typedef struct ofa_step_result {
    int phase;       /**< index into the schedule */
    int r;           /**< resolution of the batch */
    float loss;      /**< mean over samples and sub-networks: label loss + kd_ratio * kd loss */
    float kd_loss;   /**< mean distillation loss (0 when the phase does not distil) */
    int correct;     /**< correct top-1 predictions summed over the sub-networks */
    int predictions; /**< batch x sub-networks */
    float lr;
} ofa_step_result;

/**
 * Train global step @p step (0-based) on one batch: images (batch, C, r, r)
 * normalised, r = ofa_trainer_resolution(t, step); labels (batch) as float
 * class indices. Steps are given in order from the step the trainer starts
 * at (0, or a resumed step); the first step of a phase runs the phase's
 * start (teacher snapshot, width re-organisation, zero momentum). @p out may
 * be NULL.
 */
manta_status ofa_trainer_step(ofa_trainer *t, long step, const float *images, const float *labels,
                              ofa_step_result *out);

/**
 * The two halves of ofa_trainer_step(), for data-parallel training where the
 * gradients of several replicas are summed between them: compute runs the
 * phase start (on the phase's first step), the teacher and the sub-networks
 * and leaves this step's gradients (of the batch-mean loss) in the gradient
 * slab; apply performs the SGD update of step @p step with the gradients
 * multiplied by @p grad_scale.
 */
manta_status ofa_trainer_compute(ofa_trainer *t, long step, const float *images,
                                 const float *labels, ofa_step_result *out);
manta_status ofa_trainer_apply(ofa_trainer *t, long step, float grad_scale);

/** Whether the teacher snapshot exists (taken when the first phase ends). */
int ofa_trainer_has_teacher(const ofa_trainer *t);
/** The teacher's parameter slab (same layout as the supernet's parameters). */
mview ofa_trainer_teacher(const ofa_trainer *t);
/** Mark the teacher as present after its slab was restored (resume). */
void ofa_trainer_set_has_teacher(ofa_trainer *t, int has);

/**
 * A source of batches for evaluation: fill batch number @p index at
 * resolution @p r (images (batch, C, r, r), labels (batch)) and set *count to
 * the number of real samples in it (the rest is padding, ignored).
 */
typedef manta_status (*ofa_batch_fn)(void *ctx, long index, int r, float *images, float *labels,
                                     int *count);

/**
 * Top-1 of sub-network @p a: BN statistics re-calibrated over @p recal_images
 * images from @p recal (OFA: 2000 training images with training augmentation),
 * then @p eval_images images from @p eval in eval mode. The supernet's own BN
 * statistics are restored afterwards. When @p logits is not NULL it receives
 * the logits of every evaluated image ((eval_images, classes), row-major).
 */
manta_status ofa_trainer_evaluate(ofa_trainer *t, const ofa_arch *a, ofa_batch_fn recal,
                                  void *recal_ctx, long recal_images, ofa_batch_fn eval,
                                  void *eval_ctx, long eval_images, double *top1, float *logits);

/**
 * The inference graph of sub-network @p a (export/xgraph.h) after BN
 * re-calibration as in ofa_trainer_evaluate(); the supernet's statistics are
 * restored afterwards. Free @p out with xgraph_free().
 */
manta_status ofa_trainer_extract(ofa_trainer *t, const ofa_arch *a, ofa_batch_fn recal,
                                 void *recal_ctx, long recal_images, const xg_preprocess *pre,
                                 xgraph *out, manta_err *err);

/**
 * Data-parallel classification training (train/dp.h) over the devices @p devs of this
 * process (n_dev >= 1) and the ranks of @p ring (may be NULL): one ofa_trainer replica per
 * device, all from @p seed, each for its shard of sched->batch images (a multiple of
 * ranks x devices). dp_replica() gives the ofa_trainer * of a device. Collective over the
 * ranks, as dp_create_ops().
 * @param err names the device, rank or the divisibility problem.
 */
manta_status ofa_dp_create(mcl_dev *const *devs, int n_dev, const ofa_space *space,
                           const ofa_schedule *sched, uint64_t seed, dp_mode mode, ring_comm *ring,
                           dp_trainer **out, manta_err *err);

/**
 * Train global step @p step on the global batch (images (B, C, r, r), labels (B), the same
 * on every rank): dp_run() with the ofa_trainer replicas (with one replica,
 * ofa_trainer_step() on the caller's thread). @p out (may be NULL) receives the loss,
 * distillation loss and top-1 counts over all replicas (mean loss; summed counts).
 * Collective over the ranks. @return the first failure, described in @p err.
 */
manta_status ofa_dp_step(dp_trainer *p, long step, const float *images, const float *labels,
                         ofa_step_result *out, manta_err *err);

#endif
