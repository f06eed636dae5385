/**
 * @file train.h
 * @brief Progressive-shrinking training of the stereo depth supernet on one device, and
 *        evaluation of its sub-networks (EPE, bad-t, D1; with BN re-calibration).
 *
 * One step, as the classification trainer (classify/ofa_train.h): on a phase's first step
 * the phase starts (the teacher snapshot after the first phase, the width re-organisation
 * of a phase whose reorder is 0 or more, zero momentum); when the phase distils, the
 * teacher (the network as it was at the end of the first phase) predicts the batch's
 * finest disparity once; then `subnets` times a sub-network is
 * sampled from (seed, step, k) over the phase's choices, run forward and backward on the
 * same pairs, and its gradients add up; then one SGD step with their mean (divided by
 * the sub-networks, and by 1 + kd_ratio when the phase distils, so that a step keeps the
 * first phase's scale). The loss of a sub-network is
 * the multi-scale disparity loss, sum over predictions p of w_p * mean L1 error over the
 * valid pixels of the ground truth at p's scale (data/stereo_batch.h), w the space's loss
 * weights of the round the step is in, divided by their sum (so that the loss keeps its
 * scale from round to round) (round r of R covers steps [r T / R, (r + 1) T / R)
 * of the T steps of the schedule: the weight moves from the coarse predictions to the
 * finest over training), plus kd_ratio times the mean L1 difference between its finest
 * prediction and the teacher's (pixels where the teacher's is positive).
 * Width re-organisation (OFA's channel sorting before the expand phases) is the
 * classification supernet's (stereo_net_reorder_width(), one implementation with
 * ofa_supernet_reorder_width()): the encoder's expanded channels are sorted by importance
 * so that the leading ones, which the smaller expand ratios keep, are the most important.
 * It happens at a phase's start, so a run resumed inside a phase does not repeat it and a
 * run resumed at a phase boundary does it as an uninterrupted run does.
 */
#ifndef MANTA_STEREO_TRAIN_H
#define MANTA_STEREO_TRAIN_H

#include <stdint.h>

#include "data/stereo_batch.h"
#include "data/stereo_metrics.h"
#include "stereo/net.h"
#include "train/dp.h"
#include "train/schedule.h"

typedef struct stereo_trainer stereo_trainer;

/**
 * A schedule preset for @p space, batches of @p batch pairs: train/schedule.h's phases over
 * the space's encoder (full network, elastic kernel, depth, expand ratio; the sub-networks
 * per step and distillation as there; width re-organisation at the start of the two expand
 * phases, the second one keeping the first one's nesting, none to keep with a single
 * expand ratio; the decoder's width elastic with the expand ratio: its largest ratio
 * before, its two largest in expand-1, all in expand-2: ofa_phase.n_dw; the sandwich rule
 * in every phase of several sub-networks a step, stereo_sample_subnet()), learning rates for
 * the disparity loss (0.02 in the first phase, 0.01 later), and steps per phase: "smoke"
 * 3 each (tests); "quick" 800, 90, 50, 50, 32, 48 (about 19 minutes for stereo-cpu at
 * batch 8 on 2 cores); "full" 8 times those. @p steps_per_epoch is used by smoke only.
 * "finetune" continues a trained supernet (its parameters and statistics loaded first:
 * stereo_state_init(), which makes them the teacher): one phase "finetune" of 200 steps
 * (warm-up 10) with the last shrinking phase's sampling (every kernel size, depth, expand
 * ratio and decoder width, four sub-networks a step, the sandwich rule), distillation from
 * the teacher from its first step, no width re-organisation, learning rate 0.003 (below the
 * last phase's 0.01) and the loss's last round throughout (ofa_phase.final_round).
 * @return MANTA_ERR_INVALID_ARG naming an unknown preset.
 */
manta_status stereo_schedule_preset(const stereo_space *space, const char *preset, int batch,
                                    long steps_per_epoch, ofa_schedule *out, manta_err *err);

/**
 * Sub-network @p k of step @p step in phase @p p: the encoder's genes by
 * ofa_sample_subnet() of @p view (stereo_space_ofa_view() of @p space) at the crop height,
 * and each decoder level's width uniformly among the phase's p->n_dw widest (at least 1),
 * from a stream of its own seeded by (@p seed, @p step, @p k). In a sandwich phase
 * (ofa_phase.sandwich) sub-network k = 0 is the phase's largest (its largest kernel, expand
 * ratio and depth everywhere, the widest decoder) when the step has 2 or more, and
 * k = subnets - 1 its smallest when it has 3 or more (BigNAS's rule, ofa_sample_subnet()'s). Deterministic: a replica or a resumed run draws the same sub-networks.
 */
void stereo_sample_subnet(const stereo_space *space, const ofa_space *view, const ofa_phase *p,
                          uint64_t seed, long step, int k, ofa_arch *a);

/** The device memory of a trainer (stereo_trainer_plan_memory()). */
typedef struct stereo_mem {
    ofa_net_mem net;               /**< the network's slabs (stereo_net_plan_memory()) */
    size_t io;                     /**< floats of the trainer's buffers (ground truth, results) */
    unsigned long long bytes;      /**< everything: the network, the teacher's parameters, the saved
                               *  statistics and the trainer's buffers */
    unsigned long long unit_bytes; /**< the largest part that must fit one buffer */
    const char *unit_what;         /**< its name */
} stereo_mem;

/**
 * The device memory stereo_trainer_create() would create for @p space, batches of @p batch
 * pairs on @p d and schedules of at most @p max_subnets sub-networks a step, planned
 * without creating anything (stereo_net_plan_memory()). @return its errors.
 */
manta_status stereo_trainer_plan_memory(mcl_dev *d, const stereo_space *space, int max_subnets,
                                        int batch, stereo_mem *out);

/**
 * `--batch auto`: the largest batch in [1, @p max_batch] whose trainer fits a device of
 * @p global_mem bytes and largest allocation @p max_alloc (ofa_net_mem_fits(): 95% of the global
 * memory, the largest indivisible part within one allocation), from the plans alone
 * (ofa_net_pick_batch()); 0 when batch 1 does not fit. @p plan receives the chosen batch's
 * plan (batch 1's when none fits: its unit names what is too large). The scratch bound reads
 * @p d's largest allocation, so pass @p d's limits (mcl_info()) for a real choice.
 */
manta_status stereo_trainer_pick_batch(mcl_dev *d, const stereo_space *space, int max_subnets,
                                       int max_batch, unsigned long long global_mem,
                                       unsigned long long max_alloc, int *batch, stereo_mem *plan);

/** Create the supernet and the trainer's buffers (all allocation happens here). */
manta_status stereo_trainer_create(mcl_dev *d, const stereo_space *space, const ofa_schedule *sched,
                                   uint64_t seed, stereo_trainer **out);

/**
 * A trainer for one replica of data-parallel training (stereo_dp_create()): the schedule is
 * the whole run's (its batch the global batch), this device processes shards of
 * @p local_batch pairs (1 .. sched->batch). stereo_trainer_create() is the case
 * local_batch = sched->batch. Evaluation runs in batches of local_batch pairs.
 */
manta_status stereo_trainer_create_shard(mcl_dev *d, const stereo_space *space,
                                         const ofa_schedule *sched, uint64_t seed, int local_batch,
                                         stereo_trainer **out);

/** Pairs per batch on this device (the shard size). */
int stereo_trainer_batch(const stereo_trainer *t);

/** Seed of the sub-network sampling (default: the trainer's seed; DP_SUBNET mixes in the
 *  rank). */
void stereo_trainer_set_sample_seed(stereo_trainer *t, uint64_t seed);
void stereo_trainer_destroy(stereo_trainer *t);

stereo_net *stereo_trainer_net(stereo_trainer *t);
const ofa_schedule *stereo_trainer_schedule(const stereo_trainer *t);

/** Whether the teacher snapshot exists; its slab; mark it present after a restore. */
int stereo_trainer_has_teacher(const stereo_trainer *t);
mview stereo_trainer_teacher(const stereo_trainer *t);
void stereo_trainer_set_has_teacher(stereo_trainer *t, int has);

/** The teacher snapshot becomes the network's present parameters, and present (a phase's
 *  start then keeps it): the first phase's end does this, and a fine-tuning run right after
 *  loading its initial network (stereo_state_init()), so that it distils from its first
 *  step. @return the device's errors (mcl_err()). */
manta_status stereo_trainer_snapshot_teacher(stereo_trainer *t);

/** The loss round of global step @p step (see the file comment; the last round in a phase
 *  with ofa_phase.final_round). */
int stereo_trainer_round(const stereo_trainer *t, long step);

typedef struct stereo_step_result {
    int phase, round;
    float loss;    /**< mean over the sub-networks: multi-scale loss + kd_ratio * kd loss */
    float kd_loss; /**< mean distillation loss (0 when the phase does not distil) */
    float epe;     /**< mean over the sub-networks of the finest prediction's EPE (px) */
    float lr;
} stereo_step_result;

/**
 * Train global step @p step (0-based) on batch @p b (its n the trainer's batch, its size
 * the space's crop, its levels at least the space's n_levels + 1). Steps are given in
 * order from the step the trainer starts at. @p out may be NULL.
 */
manta_status stereo_trainer_step(stereo_trainer *t, long step, const stereo_batch *b,
                                 stereo_step_result *out);

/**
 * The two halves of stereo_trainer_step(), for data-parallel training: compute runs the
 * phase start (on its first step), the teacher and the sub-networks on pairs
 * [first, first + stereo_trainer_batch()) of @p b and leaves the step's gradients (of the
 * shard's loss: the mean over its valid pixels) in the gradient slab; apply performs the SGD
 * update of step @p step with the gradients multiplied by @p grad_scale (and, as in a
 * step, divided by the sub-networks and 1 + kd_ratio when the phase distils).
 */
manta_status stereo_trainer_compute(stereo_trainer *t, long step, const stereo_batch *b, int first,
                                    stereo_step_result *out);
manta_status stereo_trainer_apply(stereo_trainer *t, long step, float grad_scale);

/**
 * Data-parallel stereo training (train/dp.h) over the devices @p devs of this process and
 * the ranks of @p ring (may be NULL): one stereo trainer per device on its shard of
 * sched->batch pairs (a multiple of ranks x devices), batch norm synchronised (DP_DATA: over
 * all replicas; DP_SUBNET: over the devices of a rank, each rank sampling its own
 * sub-networks), the gradients summed and applied with grad_scale = 1 / replicas. The step's
 * loss is thereby the mean of the shards' losses (each a mean over its valid pixels): the
 * one-device loss when the shards have equally many valid pixels. dp_replica() gives the
 * stereo_trainer * of a device. Collective over the ranks, as dp_create_ops().
 */
manta_status stereo_dp_create(mcl_dev *const *devs, int n_dev, const stereo_space *space,
                              const ofa_schedule *sched, uint64_t seed, dp_mode mode,
                              ring_comm *ring, dp_trainer **out, manta_err *err);

/** Train global step @p step on @p b (the global batch, the same on every rank): dp_run()
 *  with the stereo replicas; @p out (may be NULL) gets the mean loss, distillation loss and
 *  EPE over the replicas. */
manta_status stereo_dp_step(dp_trainer *p, long step, const stereo_batch *b,
                            stereo_step_result *out, manta_err *err);

/** Fill batch @p index of an evaluation or re-calibration source into @p b; *count is the
 *  number of real pairs in it (0: the source is exhausted). Errors (a file that cannot be
 *  read, naming it) go to @p err: the trainer passes its device's record (mcl_err()). */
typedef manta_status (*stereo_batch_fn)(void *ctx, long index, stereo_batch *b, int *count,
                                        manta_err *err);

/** The held-out pairs of a run seeded @p seed: @p count generated pairs of the space's crop
 *  and max_disp, generator indices from 2^40 with the seed xor 0x6865 (never a training
 *  pair). `manta stereo-data --seed <seed xor 26725> --first 1099511627776` writes them. */
void stereo_heldout_source(const stereo_space *s, uint64_t seed, long count, stereo_source *out);

/** A stereo_batch_fn over @p src (a stereo_source *): pairs index * n .. index * n + n - 1,
 *  a folder's cropped to the batch's size at a place drawn from the index; *count = n. */
manta_status stereo_ordered_batch(void *src, long index, stereo_batch *b, int *count,
                                  manta_err *err);

/**
 * The first half of stereo_trainer_evaluate(), for runs of the sub-network elsewhere (at
 * other sizes: stereo/infer.h): make @p a the active sub-network, save the supernet's BN
 * statistics (unless a re-calibration not restored yet saved them: those stay saved), then
 * re-calibrate them over @p recal_pairs pairs from @p recal (@p b as in
 * stereo_trainer_evaluate(); fewer pairs than one batch leave the statistics as they are).
 * The network keeps the re-calibrated statistics until stereo_trainer_restore_bn().
 * @return MANTA_ERR_INVALID_ARG for a sub-network not of the space (nothing saved or
 *         changed); the device's or the source's errors (in mcl_err() of the trainer's
 *         device).
 */
manta_status stereo_trainer_recalibrate(stereo_trainer *t, const ofa_arch *a, stereo_batch *b,
                                        stereo_batch_fn recal, void *recal_ctx, long recal_pairs);

/** Put back the BN statistics stereo_trainer_recalibrate() saved; nothing to do (MANTA_OK)
 *  when none are saved (a re-calibration refused its sub-network, or they were put back). */
manta_status stereo_trainer_restore_bn(stereo_trainer *t);

/**
 * Quality of sub-network @p a: BN statistics re-calibrated over @p recal_pairs pairs from
 * @p recal, then @p eval_pairs pairs from @p eval in eval mode, their finest predictions
 * added to @p m (stereo_metrics_add()). The supernet's statistics are restored afterwards.
 * @p b: a batch for the sources to fill, of a multiple of stereo_trainer_batch() pairs (the
 * global batch of a replica), run in pieces of the trainer's size. When @p pred is not NULL it
 * receives the finest prediction of every evaluated pair ((eval_pairs, H, W)).
 */
manta_status stereo_trainer_evaluate(stereo_trainer *t, const ofa_arch *a, stereo_batch *b,
                                     stereo_batch_fn recal, void *recal_ctx, long recal_pairs,
                                     stereo_batch_fn eval, void *eval_ctx, long eval_pairs,
                                     stereo_metrics *m, float *pred);

#endif
