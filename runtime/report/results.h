/**
 * @file results.h
 * @brief The readers of `manta report` beside a run's metrics.jsonl
 *        (core/run_history.h): the search's search.json and front.csv, and
 *        the latency table's validation (the CSV of
 *        `manta-profile --validate K --csv F` or `manta profile --lut T --csv F`,
 *        and the summary of `manta-profile --validate K --json`).
 *
 * Each reader parses text in memory; report/inputs.h finds and reads the
 * files. Errors name the file (or the name the caller gave) and what is
 * wrong; a loaded structure is freed with its free function, which also
 * accepts a zeroed or half-filled one.
 */
#ifndef MANTA_REPORT_RESULTS_H
#define MANTA_REPORT_RESULTS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

#define REP_NAME_MAX 64 /**< bytes of a space name, with the NUL */

/** One sub-network of the search's results. */
typedef struct rep_cand {
    double latency_ms;     /**< predicted latency */
    double predicted_top1; /**< the accuracy predictor's top-1 */
    double val_top1;       /**< measured validation top-1 (NaN when not measured) */
    bool uniform;          /**< one kernel size, expand ratio and depth everywhere */
} rep_cand;

/** What search.json and front.csv hold. */
typedef struct rep_search {
    char space[REP_NAME_MAX]; /**< the search space's name */
    char device[128];         /**< the latency table's device */
    double budget_ms;         /**< the latency budget (0: none) */
    rep_cand *front;          /**< (n_front) the Pareto front (front.csv), by latency */
    size_t n_front;           /**< its points (0 when front.csv was not read) */
    rep_cand *cand;           /**< (n_cand) the re-ranked candidates, measured */
    size_t n_cand;            /**< 0 without --rerank */
    long chosen;              /**< the index among cand of the chosen one (-1: none) */
    bool has_best;            /**< "best" was read */
    rep_cand best;            /**< the chosen sub-network (val_top1 from its re-rank) */
    char best_arch[1024];     /**< its encoding as JSON ("" when too long) */
    double best_macs, best_arena_bytes, best_file_bytes; /**< its sizes (NaN: unknown) */
    long evaluated, rejected; /**< candidates evaluated, over budget (-1: unknown) */
    bool stereo;              /**< a stereo search ("task":"stereo", front.csv's epe column): the
                      candidates' predicted_top1 and val_top1 hold the predicted and the
                      held-out EPE in px */
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
 * Read front.csv's text @p text (header `rank,top1,latency_ms,...,arch`, or a stereo
 * search's `rank,epe,...`, which sets @p s->stereo) into
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
    double *pred, *meas; /**< (n) milliseconds */
    size_t n;            /**< sub-networks */
    bool has_summary;    /**< the summary (JSON) was read */
    char device[128];    /**< the table's device ("" when unknown) */
    double mean_abs_pct; /**< mean absolute error, % of the measured (NaN: unknown) */
    double within_10pct; /**< share within +-10% (NaN: unknown) */
    double kendall_tau;  /**< rank agreement (NaN: unknown) */
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
