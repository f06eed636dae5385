/**
 * @file report.h
 * @brief `manta report`'s output: the figures of a run's inputs
 *        (report/inputs.h), drawn with cairo (plot.h) as PNG and SVG files,
 *        and the HTML page index.html showing them with the key figures.
 *
 * Part of build/lib/libmanta_report.a, the report's part of the manta program
 * (with cairo; board builds have no report). The inputs are found and read by
 * the library (report/inputs.h); the command (tools/manta/report.c) parses
 * its options, fills a ::report, calls report_figures() then report_html(),
 * and prints what was written and skipped.
 */
#ifndef MANTA_REPORT_REPORT_H
#define MANTA_REPORT_REPORT_H

#include "core/status.h"
#include "report/inputs.h"

#define REPORT_MAX_PLOTS 5 /**< figures one report writes */

/** One written figure: STEM.png and STEM.svg in the output folder. */
typedef struct report_plot {
    char stem[32];   /**< "training", "subnets", "throughput", "search", "latency" */
    char title[256]; /**< what it shows (the figure's title) */
} report_plot;

/** A report: its inputs, where it goes, what was written. */
typedef struct report {
    const char *run; /**< the run's folder (names the training figure and the page), or NULL */
    char out[REP_PATH_CAP];              /**< the output folder (existing) */
    rep_inputs in;                       /**< the inputs, read (rep_inputs_load()) */
    report_plot plots[REPORT_MAX_PLOTS]; /**< figures written, in order */
    int n_plots;                         /**< how many */
} report;

/**
 * Draw every figure the inputs of @p r allow and write each as
 * `out/STEM.png` and `out/STEM.svg` (atomically), adding it to r->plots:
 * `training` (with training progress), `subnets` (when the progress records
 * carry the sampled sub-networks' sizes), `throughput` (when they carry
 * ranks), `search` (a search result), `latency` (a latency validation).
 * Stops at the first figure that fails; those written stay.
 * @return MANTA_ERR_NO_MEMORY; plot_write_png() and plot_write_svg()'s errors,
 *         naming the file.
 */
manta_status report_figures(report *r, manta_err *err);

/**
 * Write `out/index.html` (atomically): the key figures of each input (final
 * losses, phase-end validation, the chosen sub-network with its predicted
 * accuracy and latency, the latency table's errors), every figure of
 * r->plots with its title, and the inputs skipped. Every text from the
 * inputs is escaped.
 * @return MANTA_ERR_NO_MEMORY; MANTA_ERR_IO naming the file.
 */
manta_status report_html(const report *r, manta_err *err);

#endif
