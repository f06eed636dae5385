#include "cl/tune_time.h"

#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "core/clock.h"
#include "core/stats.h"

/* Most repetitions of one GEMM in a window. */
#define MAX_REPS 10000

uint64_t mcl_tune_shape_mnk(const mcl_tune_shape *s)
{
    return (uint64_t)s->m * (uint64_t)s->n * (uint64_t)s->k;
}

/* Operands large enough for every shape, filled with a fixed pattern. */
typedef struct operands {
    mslab mem;
    mview a, b, c;
} operands;

static manta_status operands_create(mcl_dev *d, const mcl_tune_timing *t, operands *o)
{
    memset(o, 0, sizeof *o);
    if (t->n_shapes == 0 || t->n_shapes > MCL_TUNE_MAX_SHAPES)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "SGEMM timing: %zu shapes, 1 .. %d allowed", t->n_shapes,
                             MCL_TUNE_MAX_SHAPES);
    size_t na = 0, nb = 0, nc = 0;
    for (size_t i = 0; i < t->n_shapes; i++) {
        const mcl_tune_shape *s = &t->shapes[i];
        na = na > s->m * s->k ? na : s->m * s->k;
        nb = nb > s->k * s->n * s->batch ? nb : s->k * s->n * s->batch;
        nc = nc > s->m * s->n * s->batch ? nc : s->m * s->n * s->batch;
    }
    mlayout l = {0};
    size_t oa = mlayout_add(&l, na), ob = mlayout_add(&l, nb), oc = mlayout_add(&l, nc);
    manta_status st = mslab_create(d, &o->mem, l.total, "SGEMM operands");
    if (st != MANTA_OK)
        return st;
    float *h = malloc(l.total * sizeof *h);
    if (!h)
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "out of host memory");
    for (size_t i = 0; h && i < l.total; i++)
        h[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    if (h)
        st = mcl_write(d, mslab_view(&o->mem, 0), h, l.total);
    free(h);
    o->a = mslab_view(&o->mem, oa), o->b = mslab_view(&o->mem, ob), o->c = mslab_view(&o->mem, oc);
    if (st != MANTA_OK)
        mslab_destroy(d, &o->mem);
    return st;
}

static manta_status gemm(mcl_dev *d, const operands *o, const mcl_tune_shape *s)
{
    size_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    if (s->batch > 1)
        return mcl_sgemm_batched(d, s->ta, s->tb, s->m, s->n, s->k, 1.0f, o->a, lda, 0, o->b, ldb,
                                 s->k * s->n, 0.0f, o->c, s->n, s->m * s->n, s->batch);
    return mcl_sgemm(d, s->ta, s->tb, s->m, s->n, s->k, 1.0f, o->a, lda, o->b, ldb, 0.0f, o->c,
                     s->n);
}

/* One call and a wait for it (the first compiles), then the repetitions that
 * fill @p seconds, each waited for, in *reps (at least 1). */
static manta_status calibrate(mcl_dev *d, const operands *o, const mcl_tune_shape *s,
                              double seconds, size_t *reps)
{
    manta_status st = gemm(d, o, s);
    if (st == MANTA_OK)
        st = mcl_finish(d);
    double t0 = manta_now();
    *reps = 0;
    do {
        if (st == MANTA_OK)
            st = gemm(d, o, s);
        if (st == MANTA_OK)
            st = mcl_finish(d);
        (*reps)++;
    } while (st == MANTA_OK && manta_now() - t0 < seconds && *reps < MAX_REPS);
    return st;
}

/* Seconds per call of @p reps calls in a row, then one wait. */
static manta_status window(mcl_dev *d, const operands *o, const mcl_tune_shape *s, size_t reps,
                           double *per_call)
{
    double t = manta_now();
    manta_status st = MANTA_OK;
    for (size_t r = 0; r < reps && st == MANTA_OK; r++)
        st = gemm(d, o, s);
    if (st == MANTA_OK)
        st = mcl_finish(d);
    *per_call = (manta_now() - t) / (double)reps;
    return st;
}

/* GFLOP/s from the median of MCL_TUNE_ROUNDS per-call times (sorted in place). */
static double median_gflops(const mcl_tune_shape *s, double *w)
{
    return 2.0 * (double)mcl_tune_shape_mnk(s) * (double)s->batch /
           manta_sort_median(w, MCL_TUNE_ROUNDS) * 1e-9;
}

manta_status mcl_tune_time_current(mcl_dev *d, const mcl_tune_timing *t, double *gflops)
{
    operands o;
    manta_status st = operands_create(d, t, &o);
    for (size_t i = 0; i < t->n_shapes && st == MANTA_OK; i++) {
        const mcl_tune_shape *s = &t->shapes[i];
        size_t reps = 0;
        double w[MCL_TUNE_ROUNDS];
        st = calibrate(d, &o, s, t->seconds / MCL_TUNE_ROUNDS, &reps);
        for (int r = 0; r < MCL_TUNE_ROUNDS && st == MANTA_OK; r++)
            st = window(d, &o, s, reps, &w[r]);
        if (st == MANTA_OK)
            gflops[i] = median_gflops(s, w);
    }
    mslab_destroy(d, &o.mem);
    return st;
}

static void report(const mcl_tune_timing *t, mcl_tune_event_kind kind, const char *label,
                   size_t set, size_t n_sets, double seconds)
{
    mcl_tune_event e = {kind, label, set, n_sets, seconds};
    if (t->report)
        t->report(t->ctx, &e);
}

/* Apply each set in turn and calibrate every shape under it, while the budget
 * lasts; the sets prepared in *n. */
static manta_status prepare_sets(mcl_dev *d, const mcl_tune_timing *t, const operands *o,
                                 const mcl_tune_set *sets, size_t *n, size_t *reps)
{
    cl_device_id id = mcl_info(d)->id;
    manta_status st = MANTA_OK;
    double t_start = manta_now();
    for (size_t v = 0; v < *n && st == MANTA_OK; v++) {
        if (v >= t->must && manta_now() - t_start > t->budget_s) {
            report(t, MCL_TUNE_SKIPPED, NULL, v, *n, t->budget_s);
            *n = v;
            break;
        }
        double t_set = manta_now();
        st = mcl_tune_apply(id, &sets[v], mcl_err(d));
        for (size_t s = 0; s < t->n_shapes && st == MANTA_OK; s++)
            st = calibrate(d, o, &t->shapes[s], t->seconds / MCL_TUNE_ROUNDS,
                           &reps[v * MCL_TUNE_MAX_SHAPES + s]);
        if (st == MANTA_OK)
            report(t, MCL_TUNE_SET_READY, NULL, v, *n, manta_now() - t_set);
    }
    return st;
}

manta_status mcl_tune_time_sets(mcl_dev *d, const mcl_tune_timing *t, const mcl_tune_set *sets,
                                size_t n, size_t *measured, double (*gflops)[MCL_TUNE_MAX_SHAPES])
{
    *measured = 0;
    operands o;
    manta_status st = operands_create(d, t, &o);
    if (st != MANTA_OK)
        return st;
    size_t *reps = malloc((n ? n : 1) * MCL_TUNE_MAX_SHAPES * sizeof *reps);
    double *w = malloc((n ? n : 1) * MCL_TUNE_MAX_SHAPES * MCL_TUNE_ROUNDS * sizeof *w);
    if (!reps || !w)
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "out of host memory");
    if (st == MANTA_OK)
        st = prepare_sets(d, t, &o, sets, &n, reps);
    cl_device_id id = mcl_info(d)->id;
    for (int round = 0; round < MCL_TUNE_ROUNDS && st == MANTA_OK; round++)
        for (size_t v = 0; v < n && st == MANTA_OK; v++) {
            st = mcl_tune_apply(id, &sets[v], mcl_err(d));
            for (size_t s = 0; s < t->n_shapes && st == MANTA_OK; s++)
                st = window(d, &o, &t->shapes[s], reps[v * MCL_TUNE_MAX_SHAPES + s],
                            &w[(v * MCL_TUNE_MAX_SHAPES + s) * MCL_TUNE_ROUNDS + (size_t)round]);
        }
    for (size_t v = 0; v < n && st == MANTA_OK; v++)
        for (size_t s = 0; s < t->n_shapes; s++)
            gflops[v][s] =
                median_gflops(&t->shapes[s], &w[(v * MCL_TUNE_MAX_SHAPES + s) * MCL_TUNE_ROUNDS]);
    if (st == MANTA_OK)
        *measured = n;
    free(reps);
    free(w);
    mslab_destroy(d, &o.mem);
    return st;
}

/* ---- the measurements of a tuning run -------------------------------------------- */

/* A set holding @p k (when not NULL) and the threshold @p t. */
static void forced_set(const mcl_tune_kernel *k, size_t t, mcl_tune_set *out)
{
    memset(out, 0, sizeof *out);
    if (k)
        mcl_tune_set_put(out, k, NULL);
    mcl_tune_set_threshold(out, t, NULL); /* fits: GemmRoutine is one of 7 kernels */
}

/* mcl_tune_time_sets() of @p n sets, announced as @p label. */
static manta_status time_stage(mcl_dev *d, const mcl_tune_timing *t, const char *label,
                               const mcl_tune_set *sets, size_t n, size_t must, double budget_s,
                               size_t *measured, double (*gflops)[MCL_TUNE_MAX_SHAPES])
{
    mcl_tune_timing ts = *t;
    ts.must = must;
    ts.budget_s = budget_s;
    report(&ts, MCL_TUNE_TIMING, label, 0, n, 0);
    return mcl_tune_time_sets(d, &ts, sets, n, measured, gflops);
}

/* Step 1: CLBlast's parameters with each kernel forced, and "before". */
static manta_status time_defaults(mcl_dev *d, const mcl_tune_timing *t, mcl_tune_found *f,
                                  size_t t_dir, size_t t_ind)
{
    mcl_tune_set sets[2];
    double g[2][MCL_TUNE_MAX_SHAPES];
    size_t measured = 0;
    forced_set(NULL, t_dir, &sets[0]);
    forced_set(NULL, t_ind, &sets[1]);
    manta_status st =
        time_stage(d, t, "CLBlast's parameters, each kernel forced", sets, 2, 2, 0, &measured, g);
    if (st != MANTA_OK)
        return st;
    memcpy(f->direct[0].gflops, g[0], sizeof g[0]);
    memcpy(f->indirect[0].gflops, g[1], sizeof g[1]);
    for (size_t s = 0; s < t->n_shapes; s++)
        f->before[s] = mcl_tune_runs_direct(mcl_tune_shape_mnk(&t->shapes[s]), f->t_default)
                           ? g[0][s]
                           : g[1][s];
    return MANTA_OK;
}

/* Step 2: the tuned candidates (the tuners timed one size each), the options
 * not timed dropped. */
static manta_status time_candidates(mcl_dev *d, const mcl_tune_timing *t, double budget_s,
                                    mcl_tune_found *f, size_t t_dir, size_t t_ind)
{
    enum { MAX_SETS = 2 * MCL_TUNE_MAX_CANDIDATES };
    mcl_tune_set *sets = malloc(MAX_SETS * sizeof *sets);
    double(*g)[MCL_TUNE_MAX_SHAPES] = malloc(MAX_SETS * sizeof *g);
    if (!sets || !g) {
        free(sets);
        free(g);
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "out of host memory");
    }
    size_t nv = 0, which[MAX_SETS]; /* option: k < n_direct direct, else indirect k - n_direct */
    for (size_t r = 1; r < f->n_direct || r < f->n_indirect; r++) {
        if (r < f->n_direct) {
            forced_set(&f->direct[r].k, t_dir, &sets[nv]);
            which[nv++] = r;
        }
        if (r < f->n_indirect) {
            forced_set(&f->indirect[r].k, t_ind, &sets[nv]);
            which[nv++] = f->n_direct + r;
        }
    }
    size_t measured = 0, must = (f->n_direct > 1) + (f->n_indirect > 1);
    manta_status st = time_stage(d, t, "tuned candidates, each kernel forced", sets, nv, must,
                                 budget_s, &measured, g);
    size_t nd = 1, ni = 1; /* options timed, in order */
    for (size_t v = 0; v < measured; v++) {
        bool direct = which[v] < f->n_direct;
        mcl_tune_option *o = direct ? &f->direct[which[v]] : &f->indirect[which[v] - f->n_direct];
        memcpy(o->gflops, g[v], sizeof g[v]);
        if (direct)
            f->direct[nd++] = *o; /* nd <= which[v]: moves down or stays */
        else
            f->indirect[ni++] = *o;
    }
    if (st == MANTA_OK) {
        f->n_direct = nd;
        f->n_indirect = ni;
    }
    free(sets);
    free(g);
    return st;
}

/* Step 3: the best indirect candidate with the tuned helpers too. */
static manta_status time_helpers(mcl_dev *d, const mcl_tune_timing *t, mcl_tune_found *f,
                                 size_t t_ind)
{
    if (f->helpers.count == 0 || f->n_indirect < 2 || f->n_indirect >= 1 + MCL_TUNE_MAX_CANDIDATES)
        return MANTA_OK;
    size_t b = mcl_tune_fastest(f->before, t->n_shapes, f->indirect, 1, f->n_indirect);
    size_t measured = 0;
    mcl_tune_set one = f->helpers;
    mcl_tune_set_put(&one, &f->indirect[b].k, NULL);
    mcl_tune_set_threshold(&one, t_ind, NULL);
    double g[1][MCL_TUNE_MAX_SHAPES];
    manta_status st = time_stage(d, t, "best indirect candidate with tuned copy/pad/transpose",
                                 &one, 1, 1, 0, &measured, g);
    if (st != MANTA_OK)
        return st;
    mcl_tune_option *o = &f->indirect[f->n_indirect++];
    *o = f->indirect[b];
    o->helpers = true;
    memcpy(o->gflops, g[0], sizeof g[0]);
    return MANTA_OK;
}

manta_status mcl_tune_measure(mcl_dev *d, const mcl_tune_timing *t, double budget_s,
                              mcl_tune_found *f)
{
    if (f->n_direct < 1 || f->n_direct > 1 + MCL_TUNE_MAX_CANDIDATES || f->n_indirect < 1 ||
        f->n_indirect > 1 + MCL_TUNE_MAX_CANDIDATES || t->n_shapes == 0 ||
        t->n_shapes > MCL_TUNE_MAX_SHAPES)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "SGEMM timing: %zu direct and %zu indirect options (1 .. %d each), "
                             "%zu shapes (1 .. %d)",
                             f->n_direct, f->n_indirect, 1 + MCL_TUNE_MAX_CANDIDATES, t->n_shapes,
                             MCL_TUNE_MAX_SHAPES);
    manta_status st = mcl_sgemm_direct_limit(d, &f->t_default);
    if (st != MANTA_OK)
        return st;
    size_t n_def_direct = 0;
    for (size_t s = 0; s < t->n_shapes; s++)
        n_def_direct += mcl_tune_runs_direct(mcl_tune_shape_mnk(&t->shapes[s]), f->t_default);
    size_t t_dir = n_def_direct == t->n_shapes ? f->t_default : MCL_TUNE_ALL_DIRECT;
    size_t t_ind = n_def_direct == 0 ? f->t_default : MCL_TUNE_ALL_INDIRECT;
    f->direct[0].tuned = f->indirect[0].tuned = false;
    st = time_defaults(d, t, f, t_dir, t_ind);
    if (st == MANTA_OK)
        st = time_candidates(d, t, budget_s, f, t_dir, t_ind);
    if (st == MANTA_OK)
        st = time_helpers(d, t, f, t_ind);
    return st;
}
