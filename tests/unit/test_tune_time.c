/* SGEMM timing for tuning on the test device: CLBlast's current parameters,
 * parameter sets in interleaved rounds with their reports and time budget, and
 * the measurements of a tuning run with tuner results as candidates. CLBlast keeps
 * overrides for the rest of the process, so this runs in a program of its own.
 *
 * The candidates are tests/data/tuner/small/: the tuners' files (test_tune parses
 * the real ones, tests/data/tuner/) with small valid parameters (8x8 and 16x16
 * tiles). Every parameter set is a CLBlast program of eleven kernels that PoCL
 * compiles, and the real results' 64x64 tiles took twice as long to compile: most
 * of this test's time on an empty PoCL cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/tune_time.h"
#include "common/testutil.h"

#define DATA "tests/data/tuner/small/"

/* Small shapes: the timing is short. Each parameter set compiles every
 * CLBlast routine it runs, so only CLBlast's defaults run the batched one. */
static const mcl_tune_shape shapes[] = {
    {16, 32, 16, 1, false, false, "small"},
    {24, 16, 32, 1, false, true, "B transposed"},
    {8, 8, 8, 3, false, false, "batched"},
};
#define N_SHAPES 2

typedef struct events {
    size_t timing, ready, skipped;
    mcl_tune_event last_skip;
} events;

static void record(void *ctx, const mcl_tune_event *e)
{
    events *ev = ctx;
    if (e->kind == MCL_TUNE_TIMING) {
        ev->timing++;
        assert_non_null(e->label);
    } else if (e->kind == MCL_TUNE_SET_READY) {
        assert_true(e->set < e->n_sets);
        assert_true(e->seconds >= 0);
        ev->ready++;
    } else {
        ev->skipped++;
        ev->last_skip = *e;
    }
}

static mcl_tune_timing timing_with(events *ev)
{
    return (mcl_tune_timing){
        .shapes = shapes, .n_shapes = N_SHAPES, .seconds = 0.02, .report = record, .ctx = ev};
}

static void assert_speeds(const double *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(g[i] > 0 && isfinite(g[i])))
            fail_msg("shape %zu: %g GFLOP/s", i, g[i]);
}

static mcl_tune_set threshold_set(size_t t)
{
    mcl_tune_set s;
    memset(&s, 0, sizeof s);
    assert_int_equal(mcl_tune_set_threshold(&s, t, NULL), MANTA_OK);
    return s;
}

static void test_shape_size(void **state)
{
    (void)state;
    mcl_tune_shape s = {1000, 2000, 3000, 7, true, false, "x"};
    assert_true(mcl_tune_shape_mnk(&s) == 6000000000ULL); /* the batch aside, no overflow */
}

/* Runs first: CLBlast's defaults, before any set is applied. */
static void test_time_current(void **state)
{
    mcl_dev *d = *state;
    events ev = {0};
    mcl_tune_timing t = timing_with(&ev);
    t.n_shapes = 3;
    double g[3];
    TU_OK(d, mcl_tune_time_current(d, &t, g));
    assert_speeds(g, 3);
    assert_int_equal(ev.ready + ev.timing + ev.skipped, 0); /* reports nothing */
    t.n_shapes = 0;
    assert_int_equal(mcl_tune_time_current(d, &t, g), MANTA_ERR_INVALID_ARG);
    t.n_shapes = MCL_TUNE_MAX_SHAPES + 1;
    assert_int_equal(mcl_tune_time_current(d, &t, g), MANTA_ERR_INVALID_ARG);
}

/* mcl_tune_time_sets() of @p n sets, @p must of them whatever the budget:
 * the sets timed, each reported ready and with its speeds. */
static size_t time_sets(mcl_dev *d, events *ev, const mcl_tune_set *sets, size_t n, size_t must,
                        double budget_s)
{
    memset(ev, 0, sizeof *ev);
    mcl_tune_timing t = timing_with(ev);
    t.must = must;
    t.budget_s = budget_s;
    double g[4][MCL_TUNE_MAX_SHAPES];
    size_t measured = 0;
    assert_true(n <= 4);
    TU_OK(d, mcl_tune_time_sets(d, &t, sets, n, &measured, g));
    assert_int_equal(ev->ready, measured);
    for (size_t v = 0; v < measured; v++)
        assert_speeds(g[v], N_SHAPES);
    return measured;
}

static void test_time_sets_and_budget(void **state)
{
    mcl_dev *d = *state;
    events ev;
    mcl_tune_set sets[3] = {threshold_set(MCL_TUNE_ALL_DIRECT),
                            threshold_set(MCL_TUNE_ALL_INDIRECT),
                            threshold_set(MCL_TUNE_ALL_DIRECT)};
    assert_int_equal(time_sets(d, &ev, sets, 3, 2, 1e9), 3);
    assert_int_equal(ev.skipped, 0);
    size_t limit = 0;
    TU_OK(d, mcl_sgemm_direct_limit(d, &limit));
    assert_int_equal(limit, MCL_SGEMM_ALWAYS_DIRECT); /* the last set stays applied */

    /* no budget: the sets after the first 'must' are skipped, and said so */
    assert_int_equal(time_sets(d, &ev, sets, 3, 1, 0), 1);
    assert_int_equal(ev.skipped, 1);
    assert_int_equal(ev.last_skip.set, 1);
    assert_int_equal(ev.last_skip.n_sets, 3);
}

static void load(const char *file, mcl_tune_kernel *k)
{
    manta_err err;
    if (mcl_tune_parse_tuner(file, k, NULL, 0, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
}

/* A tuning run's measurements: CLBlast's parameters, a direct and an indirect
 * candidate, and the indirect one again with the Copy helper; then the choice.
 * First with no budget for the runners-up: the candidates 'must' keeps are
 * still timed. (Overrides stay for the process: each part compiles only the
 * parameters it adds.) */
static void test_measure(void **state)
{
    mcl_dev *d = *state;
    events ev = {0};
    mcl_tune_timing t = timing_with(&ev);
    mcl_tune_found *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->n_direct = 3;
    f->n_indirect = 1;
    f->direct[1].tuned = f->direct[2].tuned = true;
    load(DATA "clblast_xgemm_direct_2_32.json", &f->direct[1].k);
    f->direct[2].k = f->direct[1].k;
    TU_OK(d, mcl_tune_measure(d, &t, 0, f));
    assert_int_equal(f->n_direct, 2); /* the runner-up dropped */
    assert_int_equal(f->n_indirect, 1);
    assert_int_equal(ev.skipped, 1);
    assert_int_equal(ev.timing, 2); /* no helpers: no third timing */
    assert_int_equal(ev.ready, 2 + 1);

    memset(&ev, 0, sizeof ev);
    memset(f, 0, sizeof *f);
    f->n_direct = f->n_indirect = 2;
    f->direct[1].tuned = f->indirect[1].tuned = true;
    load(DATA "clblast_xgemm_direct_2_32.json", &f->direct[1].k);
    load(DATA "clblast_xgemm_2_32.json", &f->indirect[1].k);
    mcl_tune_kernel copy;
    load(DATA "clblast_copy_32.json", &copy);
    assert_int_equal(mcl_tune_set_put(&f->helpers, &copy, NULL), MANTA_OK);
    TU_OK(d, mcl_tune_measure(d, &t, 1e9, f));
    assert_int_equal(ev.timing, 3); /* defaults, candidates, helpers */
    assert_int_equal(ev.ready, 2 + 2 + 1);
    assert_int_equal(ev.skipped, 0);
    assert_true(f->t_default > 0);
    assert_int_equal(f->n_direct, 2);
    assert_int_equal(f->n_indirect, 3);
    assert_false(f->direct[0].tuned || f->indirect[0].tuned);
    assert_true(f->indirect[2].tuned && f->indirect[2].helpers);
    assert_string_equal(f->indirect[2].k.kernel, "Xgemm");
    assert_speeds(f->before, N_SHAPES);
    for (size_t i = 0; i < f->n_direct; i++)
        assert_speeds(f->direct[i].gflops, N_SHAPES);
    for (size_t i = 0; i < f->n_indirect; i++)
        assert_speeds(f->indirect[i].gflops, N_SHAPES);
    /* before is CLBlast's own choice of kernel at each shape */
    for (size_t s = 0; s < N_SHAPES; s++) {
        const mcl_tune_option *o =
            mcl_tune_runs_direct(mcl_tune_shape_mnk(&shapes[s]), f->t_default) ? &f->direct[0]
                                                                               : &f->indirect[0];
        assert_true(f->before[s] == o->gflops[s]);
    }
    uint64_t mnk[N_SHAPES];
    for (size_t s = 0; s < N_SHAPES; s++)
        mnk[s] = mcl_tune_shape_mnk(&shapes[s]);
    mcl_tune_choice ch;
    manta_err err;
    assert_int_equal(mcl_tune_choose(mnk, f->before, N_SHAPES, f->t_default, f->direct, f->n_direct,
                                     f->indirect, f->n_indirect, &ch, &err),
                     MANTA_OK);
    assert_true(ch.direct < f->n_direct && ch.indirect < f->n_indirect);

    f->n_indirect = 0;
    assert_int_equal(mcl_tune_measure(d, &t, 0, f), MANTA_ERR_INVALID_ARG);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_size),
        cmocka_unit_test(test_time_current),
        cmocka_unit_test(test_time_sets_and_budget),
        cmocka_unit_test(test_measure),
    };
    return cmocka_run_group_tests(tests, tu_setup_device, tu_teardown_device);
}
