/**
 * @file tune_time.h
 * @brief SGEMM speed at chosen shapes under CLBlast's current parameters or
 *        under several tuning sets in turn: the measurements `manta tune`
 *        chooses from (mcl_tune_choose() of cl/tune.h).
 *
 * Every timing is a median: of 5 windows (mcl_tune_time_current()), or of 5
 * rounds that visit every parameter set in turn (mcl_tune_time_sets()), so
 * that a change of machine load hits all sets alike. A window repeats one
 * GEMM as often as fits the calibration time and waits for the queue.
 */
#ifndef MANTA_CL_TUNE_TIME_H
#define MANTA_CL_TUNE_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cl/tune.h"

/** Timed windows or rounds per shape (the median is kept). */
#define MCL_TUNE_ROUNDS 5

/** One GEMM shape, row-major as mcl_sgemm() takes it: C(m,n) = op(A)(m,k) op(B)(k,n). */
typedef struct mcl_tune_shape {
    size_t m, n, k;
    size_t batch;     /**< > 1: that many GEMMs through mcl_sgemm_batched() */
    bool ta, tb;      /**< A, B transposed */
    const char *what; /**< what it stands for, for reports */
} mcl_tune_shape;

/** m*n*k of @p s: what CLBlast's kernel selection compares (the batch aside). */
uint64_t mcl_tune_shape_mnk(const mcl_tune_shape *s);

/** What a timing reports as it goes. */
typedef enum mcl_tune_event_kind {
    MCL_TUNE_TIMING,    /**< a timing of @c n_sets parameter sets starts; @c label says which */
    MCL_TUNE_SET_READY, /**< set @c set (0-based) of @c n_sets was compiled and calibrated,
                             which took @c seconds */
    MCL_TUNE_SKIPPED,   /**< preparing took the budget of @c seconds: sets @c set ..
                             n_sets-1 are skipped */
} mcl_tune_event_kind;

/** One report of a timing. */
typedef struct mcl_tune_event {
    mcl_tune_event_kind kind;
    const char *label;
    size_t set, n_sets;
    double seconds;
} mcl_tune_event;

/** Receives the reports of mcl_tune_time_sets() and mcl_tune_measure(). */
typedef void (*mcl_tune_event_fn)(void *ctx, const mcl_tune_event *e);

/** What is timed and for how long. */
typedef struct mcl_tune_timing {
    const mcl_tune_shape *shapes;
    size_t n_shapes; /**< 1 .. MCL_TUNE_MAX_SHAPES */
    double seconds;  /**< per shape: calibration and each window or round take about
                            seconds / MCL_TUNE_ROUNDS */
    /* mcl_tune_time_sets() only: */
    size_t must;              /**< sets timed whatever the budget */
    double budget_s;          /**< no set after the first @c must is started once preparing
                            (compiling, calibrating) the earlier ones took this long */
    mcl_tune_event_fn report; /**< may be NULL */
    void *ctx;                /**< passed to @c report */
} mcl_tune_timing;

/**
 * GFLOP/s of every shape with the parameters CLBlast runs on @p d now (its
 * defaults, or what was applied): after a warm-up call (which compiles), the
 * median of MCL_TUNE_ROUNDS timed windows.
 * @param gflops receives t->n_shapes values
 * @return the first failing call's status (message in mcl_err(@p d));
 *         MANTA_ERR_INVALID_ARG for a bad shape count.
 */
manta_status mcl_tune_time_current(mcl_dev *d, const mcl_tune_timing *t, double *gflops);

/**
 * GFLOP/s of every shape under each of the @p n parameter sets (@p sets are
 * applied with mcl_tune_apply(), in order). Preparing a set compiles its
 * kernels; CLBlast keeps each set's programs, so switching back and forth
 * later does not recompile. Overrides cannot be undone: each set must override
 * every kernel that any set of the call overrides and that its forced kernel
 * uses. Leaves the last set applied.
 * @param measured receives how many sets were timed: @p n, or fewer when the
 *                 budget ran out (gflops[0 .. *measured-1] are written)
 * @return the first failing call's status (message in mcl_err(@p d));
 *         MANTA_ERR_INVALID_ARG for a bad shape count.
 */
manta_status mcl_tune_time_sets(mcl_dev *d, const mcl_tune_timing *t, const mcl_tune_set *sets,
                                size_t n, size_t *measured, double (*gflops)[MCL_TUNE_MAX_SHAPES]);

/** The options of both GEMM kernels and their speed (mcl_tune_measure()). */
typedef struct mcl_tune_found {
    /** option 0: CLBlast's own parameters; then tuned candidates (tuned == true) */
    mcl_tune_option direct[1 + MCL_TUNE_MAX_CANDIDATES];
    mcl_tune_option indirect[1 + MCL_TUNE_MAX_CANDIDATES];
    size_t n_direct, n_indirect;        /**< options in each, option 0 included */
    mcl_tune_set helpers;               /**< tuned Copy/Pad/Transpose/Padtranspose kernels */
    double before[MCL_TUNE_MAX_SHAPES]; /**< GFLOP/s with CLBlast's defaults (its own
                                             kernel selection) */
    size_t t_default;                   /**< CLBlast's own kernel-selection threshold */
} mcl_tune_found;

/**
 * Time CLBlast's parameters and the tuned candidates of @p f at @p t's shapes,
 * in three timings of mcl_tune_time_sets() (each reported with MCL_TUNE_TIMING):
 *  1. CLBlast's parameters with each kernel forced: only the threshold is
 *     overridden, which the next set can set back. CLBlast's own threshold
 *     (f->t_default) says which of the two each shape runs by default: that is
 *     f->before. Each kernel is forced with the least change to that threshold
 *     (its own value when it already sends every shape there: CLBlast then builds
 *     the very program it builds untuned);
 *  2. the tuned candidates with their kernel forced, the best of each kernel
 *     first, the runners-up while @p budget_s lasts; candidates not timed are
 *     dropped from @p f;
 *  3. when there are helpers, the best indirect candidate with them, added as
 *     one more indirect option (last: the helpers' defaults cannot be restored
 *     once overridden).
 * Then every option of @p f has its gflops, ready for mcl_tune_choose().
 *
 * @param f in: n_direct, n_indirect >= 1 with the tuned candidates from index 1
 *          (at most MCL_TUNE_MAX_CANDIDATES each) and the helpers
 * @return the first failing call's status (message in mcl_err(@p d));
 *         MANTA_ERR_INVALID_ARG for bad counts.
 */
manta_status mcl_tune_measure(mcl_dev *d, const mcl_tune_timing *t, double budget_s,
                              mcl_tune_found *f);

#endif
