/**
 * @file inputs.h
 * @brief What `manta report` draws, found and read: a run's metrics.jsonl
 *        (core/run_history.h), the search's search.json and front.csv and the
 *        latency table's validation (report/results.h), and the test.json and
 *        bench.json of a demo folder. The plots and the HTML page that show
 *        them are tools/manta-report/'s.
 *
 * Where each input is looked for (docs/report.md): an explicit file in
 * ::rep_input_opts, else in the run folder: `metrics.jsonl` or
 * `supernet/metrics.jsonl`; `search.json` or `search/search.json` (a folder
 * given as the search file means its search.json), with `front.csv` beside
 * it; `validate.csv` with `validate.json` beside it. A latency file ending in
 * `.json` is the summary of the validation (its CSV has the same name ending
 * in `.csv`) or, when its `"format"` is `"manta-latency-table"`, the latency
 * table itself (`validate.csv` and `validate.json` beside it).
 *
 * An input that is missing is no error: it is noted in
 * rep_inputs::skipped, one line saying what is left out and why. An input
 * that exists but cannot be read is an error, and nothing is reported.
 */
#ifndef MANTA_REPORT_INPUTS_H
#define MANTA_REPORT_INPUTS_H

#include <stdbool.h>

#include "core/run_history.h"
#include "core/status.h"
#include "report/results.h"

#define REP_PATH_CAP 4096 /**< bytes of a path, with the NUL */
#define REP_MAX_SKIPS 8   /**< skipped inputs noted (more are not) */
#define REP_SKIP_CAP 512  /**< bytes of one note, with the NUL */

/** Where the inputs are. Strings are borrowed during rep_inputs_load() only. */
typedef struct rep_input_opts {
    const char *run;     /**< the run's (or demo's) folder, or NULL */
    const char *metrics; /**< metrics.jsonl, or NULL: looked for in run */
    const char *search;  /**< search.json or its folder, or NULL: looked for in run */
    const char *latency; /**< the validation CSV, its summary or the latency table, or NULL */
} rep_input_opts;

/** Every input read. Paths are "" for inputs not found. */
typedef struct rep_inputs {
    char metrics_path[REP_PATH_CAP];     /**< the metrics.jsonl read */
    char search_path[REP_PATH_CAP];      /**< the search.json read */
    char front_path[REP_PATH_CAP];       /**< the front.csv read */
    char lat_path[REP_PATH_CAP];         /**< the validation CSV read */
    char lat_summary_path[REP_PATH_CAP]; /**< its summary (read when it exists) */
    bool have_metrics;       /**< metrics.jsonl read (train holds its series and counts) */
    bool have_train;         /**< metrics.jsonl read and holding progress records */
    bool have_search;        /**< search.json read */
    bool have_front;         /**< front.csv read (into search) */
    bool have_lat;           /**< the validation read, with at least one sub-network */
    manta_run_history train; /**< the training series (read whenever metrics_path is set) */
    rep_search search;       /**< the search's results */
    rep_latency lat;         /**< the latency table's validation */
    double test_top1; /**< run/test.json's "top1", a stereo search's "all" "epe" (NaN: none) */
    double bench_p10; /**< run/bench.json's bench.p10_ms (NaN: none) */
    double bench_med; /**< run/bench.json's bench.median_ms (NaN: none) */
    char skipped[REP_MAX_SKIPS][REP_SKIP_CAP]; /**< what was left out, one line each */
    int n_skipped;                             /**< notes in skipped */
} rep_inputs;

/**
 * Find and read every input of @p o into @p in (overwritten: it need not be
 * initialised; the caller owns it, a large structure best allocated, and
 * frees what it holds with rep_inputs_free(), after a failure too).
 * metrics.jsonl's lines that are not JSON objects are counted in
 * in->train (malformed, first_malformed), not refused; the caller may warn of
 * them once in->have_metrics is set, also when a later input failed.
 * @return MANTA_ERR_INVALID_ARG for NULL arguments or no input named at all;
 *         MANTA_ERR_IO naming the folder when @p o->run does not exist or is
 *         not a folder, and when none of the inputs was found ("nothing to
 *         report"); the readers' errors naming the file that cannot be read or
 *         parsed (MANTA_ERR_IO, MANTA_ERR_FORMAT, MANTA_ERR_NO_MEMORY).
 */
manta_status rep_inputs_load(const rep_input_opts *o, rep_inputs *in, manta_err *err);

/** Free what @p in holds (not @p in itself). A zeroed @p in and NULL are allowed. */
void rep_inputs_free(rep_inputs *in);

#endif
