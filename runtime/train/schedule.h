/**
 * @file schedule.h
 * @brief OFA's progressive shrinking as data: the phases (which kernel sizes,
 *        expand ratios and depths are elastic, how many sub-networks per step,
 *        how long, which learning rate), the presets, and the deterministic
 *        sampling of sub-networks and resolutions from (seed, step, k), so
 *        every worker of a distributed run samples the same ones.
 */
#ifndef MANTA_TRAIN_SCHEDULE_H
#define MANTA_TRAIN_SCHEDULE_H

#include <stdint.h>

#include "space/ofa_space.h"

#define OFA_MAX_PHASES 8

typedef struct ofa_phase {
    char name[16];                 /**< "full", "kernel", "depth-1", ... */
    int n_ks, ks[OFA_MAX_CHOICES]; /**< kernel sizes sampled in this phase */
    int n_e, e[OFA_MAX_CHOICES];   /**< expand ratios */
    int n_d, d[OFA_MAX_CHOICES];   /**< depths */
    int subnets;                   /**< sub-networks per step (gradients add up) */
    long steps;                    /**< optimizer steps of this phase */
    long warmup_steps;             /**< linear warm-up, then cosine to 0 */
    float lr;                      /**< peak learning rate */
    int reorder;                   /**< -1: none; else width re-organisation at the
                                        start, keeping this many earlier groups */
    int distill;                   /**< 1: distil from the teacher (the network
                                        trained in the first phase) */
    int sandwich;                  /**< 1: sub-network 0 of each step is the phase's
                                        largest (2 or more a step) and the last (3 or
                                        more) its
                                        smallest, the others random (BigNAS's sandwich
                                        rule); 0: all random, as OFA */
    int n_dw;                      /**< decoder width ratios sampled, the largest ones
                                        (a task with a decoder: stereo/train.h); 0 in
                                        classification, which has none */
    int final_round;               /**< 1: a task whose loss moves over rounds
                                        (stereo/train.h) keeps its last round through
                                        the phase (fine-tuning a trained network); 0:
                                        the rounds spread over the schedule's steps */
} ofa_phase;

typedef struct ofa_schedule {
    char preset[16];
    int n_phases;
    ofa_phase phase[OFA_MAX_PHASES];
    int batch;
    float kd_ratio;        /**< weight of the distillation loss (1.0 in OFA) */
    float label_smoothing; /**< 0.1 in OFA */
    float momentum;        /**< 0.9, Nesterov */
    float weight_decay;    /**< 3e-5, not on BN or biases */
    float clip_norm;       /**< largest L2 norm of an applied gradient, a larger one scaled
                            *  down to it (0: none; the stereo presets use it) */
} ofa_schedule;

/**
 * A preset for @p space: "smoke" (a few steps per phase, for tests), "quick"
 * (the demo: about 15 minutes on a 2-core CPU), "full" (OFA's epochs and learning
 * rates scaled to the data set). @p steps_per_epoch = training images / batch.
 * Phases follow OFA: full (largest kernel, expand, depth; 1 sub-network) ->
 * elastic kernel (1) -> depth: two largest (2), all (2) -> expand: two largest
 * (4, re-organise widths), all (4, re-organise keeping the first group).
 * "full" samples its expand phases by the sandwich rule (ofa_phase.sandwich).
 * @return MANTA_ERR_INVALID_ARG naming an unknown preset.
 */
manta_status ofa_schedule_preset(const ofa_space *space, const char *preset, int batch,
                                 long steps_per_epoch, ofa_schedule *out, manta_err *err);

/** Total optimizer steps over all phases. */
long ofa_schedule_total_steps(const ofa_schedule *s);

/** Phase index and step within it of global step @p step (0-based); -1 past the end. */
int ofa_schedule_locate(const ofa_schedule *s, long step, long *step_in_phase);

/** The resolution of global step @p step: uniform over the space's list,
 *  from (seed, step) alone. */
int ofa_sample_resolution(const ofa_space *space, uint64_t seed, long step);

/** What the sandwich rule makes sub-network @p k of a step in phase @p p: 1 the phase's
 *  largest (k = 0, with 2 or more sub-networks a step), -1 its smallest (k = subnets - 1,
 *  with 3 or more), 0 a sampled one (also in every phase without the rule). */
int ofa_sandwich_role(const ofa_phase *p, int k);

/**
 * Sub-network k of global step @p step in phase @p p at resolution @p r,
 * from (seed, step, k) alone: each block's kernel and expand ratio and each
 * unit's depth uniform over the phase's lists; in a sandwich phase
 * (ofa_phase.sandwich) k = 0 is the largest of the lists everywhere (2 or more
 * sub-networks a step) and k = subnets - 1 the smallest (3 or more).
 */
void ofa_sample_subnet(const ofa_space *space, const ofa_phase *p, uint64_t seed, long step, int k,
                       int r, ofa_arch *out);

/**
 * Expected work of one optimizer step of each phase of @p s, counted in
 * activation elements: what the layers of each sampled sub-network write in a
 * forward pass, times 3 for forward and backward, times the phase's
 * sub-networks per step, plus the teacher's forward pass (the largest network)
 * where the phase distils; averaged over the space's resolutions, @p samples
 * steps at each and every sub-network k of a step (drawn as training draws
 * them, from a fixed seed; the sandwich rule's largest and smallest included).
 * Training these networks is bound by memory traffic more than by arithmetic
 * (a 7x7 depthwise step costs about what a 3x3 one does), so time per step on
 * one device is close to proportional to this figure: on PoCL, the six phases'
 * step times relative to the first were within 6% of this figure's ratios over
 * the quick schedule on one 2-core machine and within 14% (the figure high)
 * over the full schedule on another (docs/ofa.md); MACs are off by up to 20%.
 * That is what progress estimates need (`manta train`'s ETA).
 *
 * @param work  s->n_phases values, written on success.
 * @return MANTA_OK; MANTA_ERR_INVALID_ARG when @p samples < 1 or a sampled
 *         sub-network is outside the space (a schedule made for another space).
 */
manta_status ofa_schedule_work(const ofa_space *space, const ofa_schedule *s, int samples,
                               double *work, manta_err *err);

#endif
