/**
 * @file run_history.h
 * @brief A training run's history, read from its metrics.jsonl (OFA training
 *        on classification or stereo) for plots (`manta report`): the series
 *        of the progress records, the phases and their validations, every
 *        rank's throughput, the sampled sub-networks' sizes.
 *
 * Each line is read with core/records.h's reader, so every schema version
 * reads alike. A parse function reads text in memory, a load function a file;
 * errors name the file (or the name the caller gave); a history is freed with
 * manta_run_history_free(), which also accepts a zeroed or half-filled one.
 *
 * metrics.jsonl is read leniently, because a run in progress may end in a
 * partly written line and runs of other versions may add records: a line that is not a JSON object is counted in @c malformed
 * and skipped; records of kinds the report does not draw are ignored. The
 * records drawn (docs/monitor.md lists their members): classification progress
 * and stereo steps (loss, batch top-1 or EPE, learning rate, images or pairs
 * per second, the phase; the sampled sub-networks' "subnets" and the "ranks"
 * when present: seconds per step, any may be null or absent, or a rank's
 * "step_ms"), and the validation at a phase's end (`"eval":"val"`'s
 * max_top1/min_top1, or a stereo phase end's largest and smallest EPE).
 * A step that goes back (a resumed run appends after its checkpoint) drops the
 * points from that step on, so that the later run's points replace them.
 */
#ifndef MANTA_CORE_RUN_HISTORY_H
#define MANTA_CORE_RUN_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define MANTA_RUN_MAX_PHASES 16 /**< phases of a schedule the report tells apart */
#define MANTA_RUN_MAX_RANKS 64  /**< ranks with their own throughput series */
#define MANTA_RUN_NAME_MAX 64   /**< bytes of a phase or device name, with the NUL */

/** A growing series of (step, value) points. */
typedef struct manta_run_series {
    double *step;  /**< (n) steps, counted from 1 */
    double *v;     /**< (n) values; NaN where a record lacked the value */
    size_t n, cap; /**< points, allocated points */
} manta_run_series;

/** One phase of a training run. */
typedef struct manta_run_phase {
    char name
        [MANTA_RUN_NAME_MAX]; /**< "full", "kernel", ... ("phase N" when the records name none) */
    bool seen;                /**< a record of this phase was read */
    long last_step;           /**< the highest step of its records (its end once done) */
    bool has_val;             /**< a phase-end validation was read */
    long val_step;            /**< the step of that validation */
    double val_largest;  /**< validation top-1 (classification) or EPE (stereo) of the largest */
    double val_smallest; /**< the same of the smallest sub-network */
} manta_run_phase;

/** One rank's throughput over the run ("ranks" arrays of progress records). */
typedef struct manta_run_rank {
    int rank;                        /**< its number */
    char device[MANTA_RUN_NAME_MAX]; /**< its device ("" when not given) */
    manta_run_series ips;            /**< images (or pairs) per second */
    manta_run_series step_ms;        /**< step time, milliseconds: "step_ms", else the sum of
                                    "compute_s", "data_wait_s" and "allreduce_wait_s" (NaN
                                    when neither is given) */
    manta_run_series wait_ms; /**< waiting for data and the allreduce, milliseconds: the sum of
                                    "data_wait_s" and "allreduce_wait_s" (NaN when neither) */
} manta_run_rank;

/** What a metrics.jsonl holds. */
typedef struct manta_run_history {
    bool stereo;             /**< records with "epe": a stereo run */
    manta_run_series loss;   /**< mean loss of each progress record */
    manta_run_series metric; /**< batch top-1, or EPE in pixels for stereo */
    manta_run_series lr;     /**< learning rate */
    manta_run_series rate;   /**< images (pairs) per second */
    manta_run_series phase;  /**< the phase index (0-based) of each progress record */
    long steps;              /**< the schedule's steps ("steps" member; 0: unknown) */
    manta_run_phase phases[MANTA_RUN_MAX_PHASES]; /**< by index (0-based) */
    int n_phases;                                 /**< 1 + the highest phase index read */
    manta_run_series macs[3];   /**< sampled sub-networks' MACs: mean, min, max ("subnets";
                                          points only where a record has them) */
    manta_run_series params[3]; /**< their parameters: mean, min, max */
    manta_run_rank *ranks;      /**< (n_ranks) sorted by rank; NULL when none */
    size_t n_ranks;             /**< ranks read */
    long lines;                 /**< non-empty lines read */
    long malformed;             /**< lines that were not JSON objects (skipped) */
    long first_malformed;       /**< line number of the first of them (1-based; 0: none) */
} manta_run_history;

/**
 * Read the metrics.jsonl text @p text (@p len bytes) into @p t (zeroed by the
 * caller or by an earlier manta_run_history_free()). @p name names it in errors.
 * @return MANTA_ERR_NO_MEMORY; MANTA_OK otherwise (malformed lines are counted,
 *         not errors).
 */
manta_status manta_run_history_parse(const char *text, size_t len, const char *name,
                                     manta_run_history *t, manta_err *err);

/** manta_run_history_parse() of the file @p path (manta_file_read()'s errors). */
manta_status manta_run_history_load(const char *path, manta_run_history *t, manta_err *err);

/** Free what @p t holds and zero it. */
void manta_run_history_free(manta_run_history *t);

#endif
