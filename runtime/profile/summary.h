/**
 * @file summary.h
 * @brief The board profiler's bookkeeping around the measurements: which space
 *        and sub-network to time, the table's metadata (device, CPU, compiler
 *        flags, date), progress lines and the results as JSON members. Nothing
 *        here prints; manta-profile (tools/manta-profile/) does.
 */
#ifndef MANTA_PROFILE_SUMMARY_H
#define MANTA_PROFILE_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "profile/latency_table.h"
#include "profile/measure.h"
#include "profile/timing.h"
#include "profile/validate.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/**
 * Load the search space @p spec (a spec file or built-in name). A stereo space
 * is loaded into @p ss, @p sp gets its view (stereo_space_ofa_view()) and
 * @p *stereo is set; else @p sp gets the space and @p *stereo is cleared.
 * @return stereo_spec_is_stereo()'s, stereo_space_load()'s or ofa_space_load()'s status.
 */
manta_status prof_space_load(const char *spec, ofa_space *sp, stereo_space *ss, bool *stereo,
                             manta_err *err);

/**
 * The sub-network @p spec names in space @p sp (or stereo space @p ss when not
 * NULL): "max" or "min" (the largest or smallest), JSON in the space's encoding
 * (it starts with '{'), else a file holding that JSON (at most 1 MiB).
 * @return the file read's or the parser's status; @p a is set on MANTA_OK.
 */
manta_status lat_arch_resolve(const ofa_space *sp, const stereo_space *ss, const char *spec,
                              ofa_arch *a, manta_err *err);

/**
 * Load the table @p path of space @p sp (or of stereo space @p ss when not
 * NULL) into @p t and check that it holds every key (lat_table_check_complete()).
 * @param want the table's dtype (lat_table_load_dtype()); a stereo table is float32.
 * @return the first failing status; release @p t with lat_table_free() either way.
 */
manta_status lat_table_load_complete(const char *path, const ofa_space *sp, const stereo_space *ss,
                                     lat_dtype want, lat_table *t, manta_err *err);

/**
 * Check that table @p t (read from @p path) was measured on this machine's CPU
 * (lat_host_cpu() equals t->cpu).
 * @return MANTA_ERR_INVALID_ARG naming @p path, the table's CPU and device and
 *         this CPU when not, else MANTA_OK.
 */
manta_status lat_table_check_host(const lat_table *t, const char *path, manta_err *err);

/** lat_enumerate() of @p sp, or lat_stereo_enumerate() of @p ss when not NULL. */
manta_status lat_enumerate_space(const ofa_space *sp, const stereo_space *ss, lat_layer **out,
                                 size_t *n, manta_err *err);

/**
 * Write the text of @p b to @p path (created or truncated; not atomic).
 * @return MANTA_ERR_IO "PATH: cannot write: REASON" when the file cannot be
 *         opened, "PATH: write failed" when writing or closing fails or an append
 *         to @p b had failed (b->oom), else MANTA_OK.
 */
manta_status prof_write_text(const char *path, const manta_strbuf *b, manta_err *err);

/**
 * Set the metadata of a table measured on this machine (lat_table_set_meta()):
 * device "<device> (manta engine, 1 thread, <clock>)" with @p device, or the
 * host name when NULL, cut to 120 bytes; the CPU (lat_host_cpu()); @p flags
 * (the compiler and its flags); the current UTC date, "YYYY-MM-DDTHH:MM:SSZ".
 * @return lat_table_set_meta()'s status.
 */
manta_status lat_table_name(lat_table *t, const char *device, pt_clock clock, const char *flags,
                            manta_err *err);

/**
 * Write @p s seconds, rounded to whole seconds, into @p buf: "42s" below a
 * minute, else "3m07s". @return buf.
 */
char *prof_format_secs(char *buf, size_t cap, double s);

/**
 * One progress line into @p buf (without a newline), @p done of @p total items
 * after @p elapsed_s seconds, with the remaining time extrapolated. With
 * @p bar: "WHAT [=====>    ] PCT% DONE/TOTAL  E elapsed, ETA L  ITEM" (the bar
 * 30 wide, the item cut to 40 bytes, NULL for none), for a terminal;
 * else "WHAT: PCT% (DONE/TOTAL), E elapsed, ETA L". @p total must not be 0.
 * @return the percentage done (0 to 100).
 */
int prof_progress_line(char *buf, size_t cap, const char *what, size_t done, size_t total,
                       double elapsed_s, const char *item, bool bar);

/** What one run of the board's profiler found: the fields of its JSON summary. */
typedef struct lat_results {
    const char *space;      /**< name of the search space */
    pt_clock clock;         /**< the clock of the timings */
    const char *table;      /**< path of the table profiled or loaded */
    bool profiled;          /**< the table was profiled (not loaded) in this run */
    const char *method;     /**< when profiled: "net" or "layer" */
    double profile_s;       /**< when profiled: seconds the profiling took */
    lat_profile_report rep; /**< when profiled: lat_profile()'s report */
    bool validated;         /**< sub-networks were validated against the table */
    long seed;              /**< when validated: the seed of the sub-networks */
    double validate_s;      /**< when validated: seconds the validation took */
    lat_agreement ag;       /**< when validated: the agreement */
} lat_results;

/** Whether @p ag meets the validation targets: >= 95 % within +-10 % and Kendall's tau >= 0.9. */
bool lat_agreement_meets_targets(const lat_agreement *ag);

/**
 * Append the members of the JSON summary of @p r with table @p t to @p b,
 * without the braces (the caller adds its own members): space, clock, table;
 * when profiled keys, method, profile_seconds, overhead_ms, empty_invoke_ms,
 * clock_read_ms; the table's device, cpu, compiler_flags and date; when
 * validated an object "validation" (networks, seed, seconds, errors, share
 * within 10 %, Kendall's tau, RMSE, meets_targets).
 * @return MANTA_ERR_NO_MEMORY when an append failed (b->oom), else MANTA_OK.
 */
manta_status lat_results_json(manta_strbuf *b, const lat_results *r, const lat_table *t,
                              manta_err *err);

/**
 * Append the members of one sub-network's JSON summary to @p b, without the
 * braces: arch (@p arch_json, JSON written as is), predicted_ms @p pred_ms,
 * measured_ms (the lower decile of @p st), median_ms, mean_ms, runs, error_pct,
 * arena_bytes, file_bytes.
 * @return MANTA_ERR_NO_MEMORY when an append failed (b->oom), else MANTA_OK.
 */
manta_status lat_arch_json(manta_strbuf *b, const char *arch_json, double pred_ms,
                           const lat_stats *st, size_t arena, size_t file, manta_err *err);

#endif
