/**
 * @file progress.h
 * @brief Progress of an OFA training run: the means of the steps since the
 *        last report (loss, batch top-1, waiting for data, step time), images
 *        per second and the time left; and the line a report adds to the run's
 *        metrics.jsonl.
 *
 * The time left is the work of the steps left (ofa_schedule_work(): later
 * phases sample more sub-networks per step, of other sizes) at the rate of
 * this invocation so far, so that the estimate holds across phases and after
 * a resume. Times are seconds of any monotonic clock the caller reads.
 */
#ifndef MANTA_CLASSIFY_PROGRESS_H
#define MANTA_CLASSIFY_PROGRESS_H

#include <stddef.h>

#include "core/records.h"
#include "classify/ofa_train.h"
#include "train/schedule.h"

/** The running sums between two reports. Plain data; no allocation. */
typedef struct train_progress {
    const ofa_schedule *sched; /**< the run's schedule (borrowed) */
    const double *work;        /**< (sched->n_phases) work of one step of each phase (borrowed) */
    long start;                /**< first step of this invocation (0-based) */
    int batch;                 /**< images per step */
    double t0;                 /**< clock at the start of this invocation */
    double t_win;              /**< clock at the start of the window */
    double wait, loss, step_s; /**< sums over the window: data wait, loss, step time */
    long correct, predictions; /**< sums over the window */
    long steps;                /**< steps in the window */
} train_progress;

/** One report: what a progress line and the metrics line show. */
typedef struct train_report {
    long step;              /**< steps done, counted from 1 */
    long steps;             /**< steps of the schedule */
    int phase;              /**< index of the last step's phase */
    const char *phase_name; /**< its name (points into the schedule) */
    double loss;            /**< mean loss of the window's steps */
    double batch_top1;      /**< correct / predictions over the window */
    int r;                  /**< resolution of the last step */
    float lr;               /**< learning rate of the last step */
    double images_per_s;    /**< over the window's wall time */
    double data_wait;       /**< share of the window's wall time spent waiting for data */
    double step_ms;         /**< mean time of a step, milliseconds */
    double eta_s;           /**< time left, seconds */
} train_report;

/**
 * Start counting at step @p start (0-based; the first step this invocation
 * runs) at time @p now, for @p sched with @p work per step of each phase
 * (ofa_schedule_work()) and @p batch images per step.
 */
void ofa_progress_start(train_progress *p, const ofa_schedule *sched, const double *work,
                        long start, int batch, double now);

/** Add one step: its result, the seconds it waited for data and the seconds it took. */
void ofa_progress_add(train_progress *p, const ofa_step_result *r, double wait_s, double step_s);

/**
 * The report after @p done steps in all (the step just added was number
 * @p done, counted from 1), whose result was @p last, at time @p now; starts a
 * new window at @p now. At least one step must have been added since the last
 * report, and @p done must be past the start.
 */
void ofa_progress_report(train_progress *p, const ofa_step_result *last, long done, double now,
                         train_report *out);

/**
 * The progress record of a report (core/records.h) into @p out: every member
 * of @p r, the phase's name copied into out->phase (cut to its size); no
 * time, sub-networks or ranks (the caller adds them for metrics.jsonl).
 */
void ofa_report_record(const train_report *r, manta_rec_progress *out);

/**
 * The report's line, without a newline (the `--json` progress line; its
 * metrics.jsonl record adds "time", "subnets" and "ranks"):
 * `{"step":S,"steps":N,"phase":"kernel","phase_index":1,"loss":L,"batch_top1":T,"r":R,
 * "lr":LR,"images_per_s":I,"data_wait":W,"step_ms":M,"eta_s":E}`, written by
 * manta_rec_progress_json().
 * @return the length of the line (cut to @p cap - 1 in @p buf), or -1 when
 *         out of memory (@p buf then empty).
 */
int ofa_report_json(const train_report *r, char *buf, size_t cap);

/** Work (ofa_schedule_work() units) of the steps from @p step (0-based) to the end. */
double ofa_work_left(const ofa_schedule *s, const double *work, long step);

/**
 * The sizes of the sub-networks a rank trained since the last progress record: MACs (one
 * image at the step's resolution) and parameters of each. The trainer draws them with
 * ofa_sample_subnet() from (sampling seed, step, k) alone, so they are drawn again here as it
 * drew them, without its help. Plain data; no allocation.
 */
typedef struct ofa_subnet_sizes {
    ofa_desc desc; /**< scratch of ofa_describe() */
    uint64_t seed; /**< the trainer's sampling seed on this rank (dp_sample_seed()) */
    long n;        /**< sub-networks counted */
    double macs_sum, macs_min, macs_max, params_sum, params_min, params_max;
} ofa_subnet_sizes;

/** Start counting, for a rank whose trainer samples with @p sample_seed. */
void ofa_progress_subnets_start(ofa_subnet_sizes *z, uint64_t sample_seed);

/** Count the sub-networks of global step @p step of @p sched in space @p sp: phase @p phase
 *  (nothing for a phase outside the schedule) at resolution @p res. */
void ofa_progress_subnets_add(ofa_subnet_sizes *z, const ofa_space *sp, const ofa_schedule *sched,
                              long step, int phase, int res);

/** The sizes counted since the last call into @p out (n 0: none were counted); the count
 *  starts again. */
void ofa_progress_subnets_take(ofa_subnet_sizes *z, manta_rec_subnets *out);

#endif
