/**
 * @file measure.h
 * @brief The latency profiler's methods (what `manta-profile` runs): a board's
 *        latency table measured in the inference engine, its check against
 *        whole sub-networks, and one sub-network's latency, arena and size.
 *
 * Every model is built by the graph builder with synthetic weights
 * (profile/synth.h), written as .tflite in memory and timed by the engine
 * (profile/timing.h) on the calling thread. A set of models is visited in
 * several passes, in a new random order each pass after the first, so that a
 * burst of other work on the machine touches many models a little rather
 * than a few a lot; the lower decile of a model's runs (what it takes when
 * nothing else disturbs it) is what tables and checks use.
 *
 * @par In-network profiling (::LAT_METHOD_NET)
 * The sub-networks of lat_cover_archs() (every key at least @c cover times)
 * are timed with the clock read at each keyed layer's first operator
 * (mengine_invoke_observed()). A key's p10_ms is the lower decile of its
 * times in each network that holds it, averaged over those networks; its
 * median, mean and variance are of all its times pooled; each less one clock
 * reading (pt_clock_cost_ms()). ::LAT_METHOD_LAYER times each key as a
 * one-layer model instead.
 *
 * @par Overhead
 * @c calib random sub-networks are timed end to end (no readings) in the
 * same passes; the table's overhead is the median of (measured - the sum of
 * their layers' entries), or 0 when that is negative.
 */
#ifndef MANTA_PROFILE_MEASURE_H
#define MANTA_PROFILE_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "export/xgraph.h"
#include "profile/latency_table.h"
#include "profile/timing.h"
#include "profile/validate.h"
#include "space/ofa_space.h"

/** One thing to time: a keyed layer alone, or a whole sub-network. */
typedef struct lat_item {
    const lat_layer *layer;     /**< the layer to time alone; NULL: the sub-network @c arch */
    ofa_arch arch;              /**< the sub-network (when @c layer is NULL) */
    uint64_t seed;              /**< of the synthetic weights and the input */
    bool layers;                /**< sub-network: also time each keyed layer inside it */
    const stereo_space *stereo; /**< NULL, or the stereo space of @c layer / @c arch (its
                                     graphs are export/stereo_graph.h's) */
    bool int8; /**< time the int8 model (set by lat_measure() from lat_measure_opts::int8) */
    /* set by lat_item_open() and lat_measure() */
    int nl;                   /**< keyed layers of the sub-network ... */
    int bound[PT_MAX_BOUNDS]; /**< ... their first operators; bound[nl] the operator count */
    double *ms;   /**< (n) times of whole runs, every pass's, in ms; sorted ascending by the
                      statistics at the end of lat_measure() */
    size_t n;     /**< runs timed */
    double *seg;  /**< with @c layers: (n, nl) layer times of every run, in ms, in the order
                      the runs were timed */
    lat_stats st; /**< statistics of @c ms */
    size_t cap_;  /**< private: runs @c ms and @c seg hold */
} lat_item;

/** Free the timings of @p n items and the array @p it itself. NULL is allowed. */
void lat_items_free(lat_item *it, size_t n);

/**
 * Progress of a measurement: @p done of @p total visits, @p what the layer key
 * or "sub-network" visited next ("" at the end, when @p done == @p total).
 */
typedef void (*lat_progress_fn)(void *ctx, size_t done, size_t total, const char *what);

/** How a set of items is timed. */
typedef struct lat_measure_opts {
    pt_opts t;                /**< one item's timing, over all passes (each pass takes its share) */
    int passes;               /**< rounds over all items (>= 1) */
    lat_progress_fn progress; /**< called before every visit and at the end; NULL: none */
    void *progress_ctx;
    bool int8; /**< time the int8 models (lat_item_open()); a table's dtype must agree */
} lat_measure_opts;

/** Synthetic inputs an int8 model's ranges are calibrated on (lat_item_open()). */
#define LAT_INT8_CALIB_IMAGES 4

/**
 * Calibrate @p g as `manta export --int8` does (xgraph_calibrate(), export/quant.h,
 * min/max), on ::LAT_INT8_CALIB_IMAGES synthetic inputs uniform in [-1, 1) from
 * @p seed (the values pt_open() feeds the model, quantized): tflite_write() then
 * writes @p g as an int8 file. lat_item_open()'s int8 models and the search's int8
 * sizes (search/sizes.h) are calibrated here. @p g is the caller's; its ranges are set.
 * @return xgraph_calibrate()'s errors; MANTA_ERR_NO_MEMORY.
 */
manta_status lat_int8_calibrate(xgraph *g, uint64_t seed, manta_err *err);

/**
 * Build the model of @p it (the same bytes on every call: weights from its
 * seed) and open it in the engine; a sub-network's layer bounds are set.
 * With @c it->int8 the graph is quantized as `manta export --int8` does:
 * ranges by xgraph_calibrate() (export/quant.h, min/max) over
 * ::LAT_INT8_CALIB_IMAGES synthetic inputs uniform in [-1, 1) from the
 * item's seed, then written as an int8 file (classification only).
 * @param m opened here; the caller closes it with pt_close().
 * @return the builder's, the calibration's or the engine's error (MANTA_ERR_INVALID_ARG,
 *         MANTA_ERR_NO_MEMORY); MANTA_ERR_INVALID_ARG for an int8 stereo item.
 */
manta_status lat_item_open(const ofa_space *s, lat_item *it, pt_model *m, manta_err *err);

/**
 * Time the @p n items in @p o->passes passes over all of them, each visit
 * warming up first and timing its share of the runs and the time; appends
 * to each item's timings and sets its statistics.
 * @return MANTA_ERR_INVALID_ARG for passes < 1; MANTA_ERR_NO_MEMORY; the
 *         engine's failure as MANTA_ERR_INTERNAL, naming the layer key.
 */
manta_status lat_measure(const ofa_space *s, lat_item *it, size_t n, const lat_measure_opts *o,
                         manta_err *err);

/**
 * Set @p t's overhead from @p nc sub-networks timed end to end (@p cal[i].st
 * after lat_measure()): the median of measured p10 minus the sum of the
 * table's entries, 0 when that is negative or @p nc is 0. @p median receives
 * the median itself (0 for nc 0).
 * @return lat_predict()'s error; MANTA_ERR_NO_MEMORY.
 */
manta_status lat_fit_overhead(lat_table *t, const lat_item *cal, size_t nc, double *median,
                              manta_err *err);

/** How layer keys are timed. */
typedef enum lat_method {
    LAT_METHOD_NET,   /**< inside whole sub-networks (see the file comment) */
    LAT_METHOD_LAYER, /**< each key alone as a one-layer model */
} lat_method;

/** What lat_profile() measures. */
typedef struct lat_profile_opts {
    lat_method method;
    int cover;          /**< net: sub-networks per key, at least (>= 1) */
    int calib;          /**< sub-networks for the overhead (0: overhead 0) */
    lat_measure_opts m; /**< timing, passes and progress */
    /** net: receives, appended, a CSV of each keyed layer's time in each
     *  sub-network ("network,layer,where,p10_ms,median_ms,table_p10_ms,runs,key",
     *  times less one clock reading); NULL: none */
    manta_strbuf *layers_csv;
} lat_profile_opts;

/** What lat_profile() found beside the table. */
typedef struct lat_profile_report {
    size_t keys;               /**< layer keys of the space, each now in the table */
    size_t networks;           /**< net: the sub-networks that hold every key @c cover times */
    size_t calib;              /**< sub-networks timed end to end for the overhead */
    double overhead_median_ms; /**< median of (end to end - sum of layers); may be negative */
    double empty_ms;           /**< an invocation with no work (lower decile; 0 when it failed) */
    double clock_ms;           /**< net: one clock reading, taken off every layer time; else 0 */
} lat_profile_report;

/**
 * Measure every layer key of space @p s into @p t (initialised for @p s with
 * lat_table_init(); its metadata is the caller's) and the table's overhead. A
 * stereo table (lat_table_init_stereo()) is of its own space (@p s is not read):
 * its keys (lat_stereo_enumerate()) timed in its sub-networks
 * (lat_stereo_cover_archs()) or alone, its calibration networks stereo ones.
 * With o->m.int8 the models are the int8 ones and @p t's dtype must be
 * ::LAT_DTYPE_INT8 (and ::LAT_DTYPE_F32 without).
 * @return MANTA_ERR_INVALID_ARG for a bad option or a dtype that disagrees;
 *         MANTA_ERR_NO_MEMORY; what the builder, the engine or lat_measure() report.
 */
manta_status lat_profile(const ofa_space *s, const lat_profile_opts *o, lat_table *t,
                         lat_profile_report *rep, manta_err *err);

/**
 * Check table @p t against @p k (>= 2) random sub-networks of @p s (of a stereo
 * table: of its space, stereo_arch_sample()) drawn from @p seed, timed end to end: @p ag compares the table's predictions with
 * their measured lower deciles (tolerance 10 %).
 * @param csv NULL, or receives, appended, one CSV line per network
 *            ("index,predicted_ms,measured_ms,measured_median_ms,error_pct,arch")
 *            after a header line.
 * The networks are int8 ones when o->int8; @p t's dtype must agree.
 * @return MANTA_ERR_INVALID_ARG for k < 2 or a table of the other dtype ("an int8
 *         table, float32 models measured"); lat_predict()'s, lat_measure()'s and
 *         lat_agreement_compute()'s errors; MANTA_ERR_NO_MEMORY.
 */
manta_status lat_validate(const ofa_space *s, const lat_table *t, size_t k, uint64_t seed,
                          const lat_measure_opts *o, lat_agreement *ag, manta_strbuf *csv,
                          manta_err *err);

/**
 * Time sub-network @p a of @p s end to end (synthetic weights from seed 1;
 * the int8 model when o->int8): @p st its statistics, @p arena and @p file
 * the engine's arena and the .tflite size in bytes.
 * @return the builder's, the engine's or lat_measure()'s error.
 */
manta_status lat_measure_arch(const ofa_space *s, const ofa_arch *a, const lat_measure_opts *o,
                              lat_stats *st, size_t *arena, size_t *file, manta_err *err);

/** lat_measure_arch() of stereo sub-network @p a of @p s (its graph at the crop). */
manta_status lat_measure_arch_stereo(const stereo_space *s, const ofa_arch *a,
                                     const lat_measure_opts *o, lat_stats *st, size_t *arena,
                                     size_t *file, manta_err *err);

/**
 * The CPU this runs on, as a table's "cpu" field: the model name from
 * /proc/cpuinfo ("model name", "Model" or "Hardware"), else the machine
 * name from uname(), followed by " (N logical CPUs)" when /proc/cpuinfo
 * counts them; "unknown" when neither is known. Truncated to @p cap bytes.
 */
void lat_host_cpu(char *out, size_t cap);

#endif
