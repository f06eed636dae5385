/**
 * @file report_data.h
 * @brief The readers of `manta report`: a run's metrics.jsonl (OFA training
 *        on classification or stereo), the search's search.json and
 *        front.csv, and the latency table's validation (the CSV of
 *        `manta-profile --validate K --csv F` or `manta profile --lut T --csv F`,
 *        and the summary of `manta-profile --validate K --json`).
 *
 * Each reader has a parse function over text in memory (for tests) and a load
 * function over a file. Errors name the file (or the name the caller gave) and
 * what is wrong; a loaded structure is freed with its free function, which
 * also accepts a zeroed or half-filled one.
 *
 * metrics.jsonl is read leniently, line by line with core/records.h's reader
 * (manta_rec_parse(): every schema version, both phase numberings), because a
 * run in progress may end in a partly written line and runs of other versions
 * may add records: a line that is not a JSON object is counted in @c malformed
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
#ifndef MANTA_TOOLS_REPORT_DATA_H
#define MANTA_TOOLS_REPORT_DATA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define REP_MAX_PHASES 16 /**< phases of a schedule the report tells apart */
#define REP_MAX_RANKS 64  /**< ranks with their own throughput series */
#define REP_NAME_MAX 64   /**< bytes of a phase or device name, with the NUL */

/** A growing series of (step, value) points. */
typedef struct rep_series {
    double *step;  /**< (n) steps, counted from 1 */
    double *v;     /**< (n) values; NaN where a record lacked the value */
    size_t n, cap; /**< points, allocated points */
} rep_series;

/** One phase of a training run. */
typedef struct rep_phase {
    char name[REP_NAME_MAX]; /**< "full", "kernel", ... ("phase N" when the records name none) */
    bool seen;               /**< a record of this phase was read */
    long last_step;          /**< the highest step of its records (its end once done) */
    bool has_val;            /**< a phase-end validation was read */
    long val_step;           /**< the step of that validation */
    double val_largest;      /**< validation top-1 (classification) or EPE (stereo) of the largest */
    double val_smallest;     /**< the same of the smallest sub-network */
} rep_phase;

/** One rank's throughput over the run ("ranks" arrays of progress records). */
typedef struct rep_rank {
    int rank;                  /**< its number */
    char device[REP_NAME_MAX]; /**< its device ("" when not given) */
    rep_series ips;            /**< images (or pairs) per second */
    rep_series step_ms;        /**< step time, milliseconds: "step_ms", else the sum of
                                    "compute_s", "data_wait_s" and "allreduce_wait_s" (NaN
                                    when neither is given) */
    rep_series wait_ms;        /**< waiting for data and the allreduce, milliseconds: the sum of
                                    "data_wait_s" and "allreduce_wait_s" (NaN when neither) */
} rep_rank;

/** What a metrics.jsonl holds. */
typedef struct rep_training {
    bool stereo;                     /**< records with "epe": a stereo run */
    rep_series loss;                 /**< mean loss of each progress record */
    rep_series metric;               /**< batch top-1, or EPE in pixels for stereo */
    rep_series lr;                   /**< learning rate */
    rep_series rate;                 /**< images (pairs) per second */
    rep_series phase;                /**< the phase index (0-based) of each progress record */
    long steps;                      /**< the schedule's steps ("steps" member; 0: unknown) */
    rep_phase phases[REP_MAX_PHASES];/**< by index (0-based) */
    int n_phases;                    /**< 1 + the highest phase index read */
    rep_series macs[3];              /**< sampled sub-networks' MACs: mean, min, max ("subnets";
                                          points only where a record has them) */
    rep_series params[3];            /**< their parameters: mean, min, max */
    rep_rank *ranks;                 /**< (n_ranks) sorted by rank; NULL when none */
    size_t n_ranks;                  /**< ranks read */
    long lines;                      /**< non-empty lines read */
    long malformed;                  /**< lines that were not JSON objects (skipped) */
    long first_malformed;            /**< line number of the first of them (1-based; 0: none) */
} rep_training;

/**
 * Read the metrics.jsonl text @p text (@p len bytes) into @p t (zeroed by the
 * caller or by an earlier rep_training_free()). @p name names it in errors.
 * @return MANTA_ERR_NO_MEMORY; MANTA_OK otherwise (malformed lines are counted,
 *         not errors).
 */
manta_status rep_training_parse(const char *text, size_t len, const char *name, rep_training *t,
                                manta_err *err);

/** rep_training_parse() of the file @p path (manta_file_read()'s errors). */
manta_status rep_training_load(const char *path, rep_training *t, manta_err *err);

/** Free what @p t holds and zero it. */
void rep_training_free(rep_training *t);

/** One sub-network of the search's results. */
typedef struct rep_cand {
    double latency_ms;     /**< predicted latency */
    double predicted_top1; /**< the accuracy predictor's top-1 */
    double val_top1;       /**< measured validation top-1 (NaN when not measured) */
    bool uniform;          /**< one kernel size, expand ratio and depth everywhere */
} rep_cand;

/** What search.json and front.csv hold. */
typedef struct rep_search {
    char space[REP_NAME_MAX];   /**< the search space's name */
    char device[128];           /**< the latency table's device */
    double budget_ms;           /**< the latency budget (0: none) */
    rep_cand *front;            /**< (n_front) the Pareto front (front.csv), by latency */
    size_t n_front;             /**< its points (0 when front.csv was not read) */
    rep_cand *cand;             /**< (n_cand) the re-ranked candidates, measured */
    size_t n_cand;              /**< 0 without --rerank */
    long chosen;                /**< the index among cand of the chosen one (-1: none) */
    bool has_best;              /**< "best" was read */
    rep_cand best;              /**< the chosen sub-network (val_top1 from its re-rank) */
    char best_arch[1024];       /**< its encoding as JSON ("" when too long) */
    double best_macs, best_arena_bytes, best_file_bytes; /**< its sizes (NaN: unknown) */
    long evaluated, rejected;   /**< candidates evaluated, over budget (-1: unknown) */
} rep_search;

/**
 * Read search.json's text @p text into @p s (zeroed by the caller); @p name
 * names it in errors.
 * @return MANTA_ERR_FORMAT when it is not JSON, not a "manta-search" document
 *         or lacks "best"'s figures ("<name>: not JSON near byte N", "<name>:
 *         \"best\" lacks predicted_latency_ms"); MANTA_ERR_NO_MEMORY.
 */
manta_status rep_search_parse(const char *text, const char *name, rep_search *s, manta_err *err);

/**
 * Read front.csv's text @p text (header `rank,top1,latency_ms,...,arch`) into
 * @p s->front; @p name names it in errors.
 * @return MANTA_ERR_FORMAT naming the line and column when the header lacks
 *         top1 or latency_ms or a row's number does not parse;
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status rep_front_parse(const char *text, const char *name, rep_search *s, manta_err *err);

/** Free what @p s holds and zero it. */
void rep_search_free(rep_search *s);

/** The table's validation: predicted against measured latency of whole sub-networks. */
typedef struct rep_latency {
    double *pred, *meas;   /**< (n) milliseconds */
    size_t n;              /**< sub-networks */
    bool has_summary;      /**< the summary (JSON) was read */
    char device[128];      /**< the table's device ("" when unknown) */
    double mean_abs_pct;   /**< mean absolute error, % of the measured (NaN: unknown) */
    double within_10pct;   /**< share within +-10% (NaN: unknown) */
    double kendall_tau;    /**< rank agreement (NaN: unknown) */
} rep_latency;

/**
 * Read a validation CSV @p text into @p l (zeroed by the caller): a header
 * naming predicted_ms and measured_ms (manta-profile) or median_ms (manta
 * profile), then a row per sub-network. Rows whose prediction is 0 (manta
 * profile without --lut) are left out.
 * @return MANTA_ERR_FORMAT naming the line when the header lacks the columns
 *         or a number does not parse; MANTA_ERR_NO_MEMORY.
 */
manta_status rep_latency_parse_csv(const char *text, const char *name, rep_latency *l,
                                   manta_err *err);

/**
 * Read the summary `{"device":...,"validation":{"mean_abs_pct":...,"within_10pct":...,
 * "kendall_tau":...}}` of `manta-profile --validate K --json` into @p l.
 * @return MANTA_ERR_FORMAT when it is not JSON or has no "validation" object.
 */
manta_status rep_latency_parse_summary(const char *text, const char *name, rep_latency *l,
                                       manta_err *err);

/** Free what @p l holds and zero it. */
void rep_latency_free(rep_latency *l);

/**
 * Split one CSV line @p line (RFC 4180: fields in double quotes may hold commas
 * and doubled quotes) in place into at most @p max fields; quotes are removed
 * and doubled ones undone. The line ends at '\n', '\r' or NUL.
 * @return the number of fields, or -1 when a quoted field is not closed.
 */
int rep_csv_split(char *line, char **fields, int max);

#endif
