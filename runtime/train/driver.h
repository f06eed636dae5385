/**
 * @file driver.h
 * @brief The training driver: runs a task's steps from a start step to the end of its
 *        schedule, with progress at a cadence, checkpoints at phase ends and every N steps,
 *        the evaluation after each phase, replica checks, stops (a stop request, --stop-after)
 *        and the checkpoint, stopped and done records (core/records.h). Every task
 *        (classification: classify/, stereo depth: stereo/) trains through it.
 *
 * A task is a context and a table of functions (train_task): one step, the progress
 * report, the checkpoint, the phase-end evaluation, and for several ranks the agreement on
 * stopping and the replica check. The driver owns the order of what happens after each
 * step, the same for every task:
 *
 *  1. step(s): train global step s (steps come in order from opts.start).
 *  2. The stop decision: a stop request (*opts.stop_request non-zero, e.g. set by the
 *     program's SIGINT/SIGTERM handler), or opts.stop_after steps done by this call. With
 *     several ranks agree_stop() makes the request the same on every rank (any rank's).
 *  3. progress(s + 1) every opts.log_every steps, at a phase's last step and at the last step.
 *  4. A checkpoint is due at a phase's last step, every opts.ckpt_every steps and on a stop.
 *     check(s + 1) (the replicas' weights compared) when one is due or every
 *     opts.check_every steps.
 *     before_save(s + 1) on every rank when a checkpoint is due.
 *  5. At a phase's last step: rank 0 saves "phase-N-NAME.ckpt" (N counted from 1, NAME the
 *     phase's) then "latest.ckpt", then every rank runs evaluate(phase, s + 1). Otherwise,
 *     when a checkpoint is due, rank 0 saves "latest.ckpt". Each save is followed by its
 *     checkpoint record.
 *  6. On a stop: the stopped record and the driver returns (result.stopped). A run resumed
 *     from latest.ckpt (opts.start = its step) continues exactly there.
 * After the schedule's last step: the done record (the schedule's steps and this call's
 * seconds).
 *
 * Records go to task.record on rank 0 only (the program writes them to metrics.jsonl). The
 * driver installs no signal handler, prints nothing and keeps no state between calls; the
 * program owns the stop flag (a volatile sig_atomic_t its handler sets) and passes its
 * address. Errors: the first failing function's status is returned with the function's
 * message in @p err, result.fail_step the steps done when it failed (for the error record).
 */
#ifndef MANTA_TRAIN_DRIVER_H
#define MANTA_TRAIN_DRIVER_H

#include <signal.h>
#include <stdbool.h>

#include "core/records.h"
#include "core/status.h"
#include "train/schedule.h"

/** A task's part of training. Functions marked optional may be NULL. */
typedef struct train_task {
    void *ctx; /**< passed to every function (not owned) */
    /** Train global step @p step (0-based). Required. */
    manta_status (*step)(void *ctx, long step, manta_err *err);
    /** The progress report after @p done steps (record, line); optional. */
    manta_status (*progress)(void *ctx, long done, manta_err *err);
    /** Rank 0: write checkpoint @p name (a file name in the run's folder) that resumes at
     *  step @p done. Required. */
    manta_status (*save)(void *ctx, const char *name, long done, manta_err *err);
    /** Every rank: the evaluation at the end of phase @p phase (0-based), after @p done
     *  steps, once its checkpoints are written; optional. */
    manta_status (*evaluate)(void *ctx, int phase, long done, manta_err *err);
    /** Several ranks: replace *signal with whether any rank has a stop request (collective;
     *  called after every step); optional (NULL: one rank). */
    manta_status (*agree_stop)(void *ctx, long step, bool *signal, manta_err *err);
    /** Several replicas: compare their weights after @p done steps (collective); optional. */
    manta_status (*check)(void *ctx, long done, manta_err *err);
    /** Rank 0: record @p rec (a checkpoint, stopped or done record); optional. */
    void (*record)(void *ctx, const manta_rec *rec);
    /** Several ranks: every rank, right before rank 0 saves the checkpoint(s) of @p done
     *  steps, hands over what only it holds (int8 error feedback: dp_ef_gather());
     *  collective; optional. */
    manta_status (*before_save)(void *ctx, long done, manta_err *err);
} train_task;

/** How the driver runs (train_drive_opts_default() sets the defaults). */
typedef struct train_drive_opts {
    const ofa_schedule *sched; /**< the run's phases (not owned) */
    long start;       /**< the first step: 0, or the step of the checkpoint a run resumes */
    long log_every;   /**< progress every N steps (>= 1; default 20) */
    long ckpt_every;  /**< latest.ckpt also every N steps (0: phase ends and stops only) */
    long stop_after;  /**< stop after N steps of this call (0: never) */
    long check_every; /**< replica check every N steps besides checkpoints (0: never) */
    const volatile sig_atomic_t *stop_request; /**< non-zero: stop after the step under way
                                                    (NULL: no requests) */
    int rank; /**< this rank: rank 0 saves checkpoints and records */
} train_drive_opts;

/** What a call did. */
typedef struct train_drive_result {
    long done;      /**< steps trained by this call */
    long next;      /**< the step a resumed run continues at (start + done) */
    long fail_step; /**< after an error: the steps done then (the error record's step) */
    bool stopped;   /**< stopped before the schedule's end (by a request or stop_after) */
    bool by_signal; /**< the stop came from a stop request (of any rank) */
    double seconds; /**< this call's wall time */
} train_drive_result;

/** The defaults: log_every 20, ckpt_every 500, everything else 0 / NULL. */
void train_drive_opts_default(train_drive_opts *o, const ofa_schedule *sched);

/**
 * Train from @p o->start to the end of @p o->sched, or until a stop (see the file comment).
 * @p out (required) describes the call, also after an error.
 * @return MANTA_OK after the last step or a stop; MANTA_ERR_INVALID_ARG (nothing run) for a
 *         start outside [0, steps], a log_every below 1, a negative cadence or a task
 *         without step or save; else the first failing function's status, its message in
 *         @p err.
 */
manta_status train_drive(const train_task *task, const train_drive_opts *o, train_drive_result *out,
                         manta_err *err);

#endif
