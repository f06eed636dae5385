/* Evolutionary search on a synthetic problem (latency from the MACs of
 * ofa_describe(), fitness growing with MACs plus per-gene preferences and
 * fixed noise): within budget and better than random sampling with as many
 * evaluations, reproducible for a seed, a clear error for an infeasible
 * budget, and the CSV / SVG writers. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "search/evolution.h"

static tu_tmpdir dir; /* the group's temporary folder */

typedef struct synth {
    ofa_space s;
    double log_min, log_max; /* log MACs of the smallest and largest sub-networks */
    long calls, fail_at;     /* measure calls; fail on call number fail_at (0: never) */
} synth;

static double macs_of(const ofa_space *s, const ofa_arch *a)
{
    ofa_desc d;
    if (ofa_describe(s, a, &d, NULL) != MANTA_OK)
        fail_msg("describe failed");
    return d.macs;
}

static void synth_init(synth *y)
{
    memset(y, 0, sizeof *y);
    ofa_space_cpu_default(&y->s);
    ofa_arch a;
    ofa_arch_min(&y->s, 0, &a);
    y->log_min = log(macs_of(&y->s, &a));
    ofa_arch_max(&y->s, 0, &a);
    y->log_max = log(macs_of(&y->s, &a));
}

/* latency 1 ms per million MACs; flash 4 bytes per parameter */
static manta_status synth_measure(void *ctx, const ofa_arch *a, evo_figures *f, manta_err *err)
{
    synth *y = ctx;
    if (++y->calls == y->fail_at)
        return manta_err_set(err, MANTA_ERR_IO, "board unplugged at call %ld", y->calls);
    ofa_desc d;
    MANTA_TRY(ofa_describe(&y->s, a, &d, err));
    f->v[EVO_LATENCY] = d.macs / 1e6;
    f->v[EVO_MACS] = d.macs;
    f->v[EVO_FLASH] = 4.0 * (double)d.params;
    return MANTA_OK;
}

/* Noise in [-1, 1) fixed per architecture (FNV-1a of its genes). */
static double arch_noise(const ofa_arch *a)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const int *g = (const int *)a;
    for (size_t i = 0; i < sizeof *a / sizeof(int); i++) {
        h ^= (uint64_t)(uint32_t)g[i];
        h *= 0x100000001b3ull;
    }
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* Monotone in MACs, plus preferences of each active slot for one kernel and one
 * expand ratio (which random sampling rarely gets right together), plus noise. */
static manta_status synth_fitness(void *ctx, const ofa_arch *a, double *acc, manta_err *err)
{
    (void)err;
    const synth *y = ctx;
    const ofa_space *s = &y->s;
    double t = (log(macs_of(s, a)) - y->log_min) / (y->log_max - y->log_min);
    double v = 0.6 + 0.1 * t;
    for (int i = 0; i < ofa_slots(s); i++) {
        if (i % s->max_depth >= a->d[i / s->max_depth])
            continue;
        v += 0.003 * (a->ks[i] == s->ks[i % 3]) + 0.003 * (a->e[i] == s->e[(i / 2) % 3]);
    }
    *acc = v + 0.001 * arch_noise(a);
    return MANTA_OK;
}

static evo_callbacks callbacks(synth *y)
{
    evo_callbacks cb = {synth_measure, y, synth_fitness, y, NULL, NULL};
    return cb;
}

/* A budget 30% of the way from the smallest to the largest latency. */
static double budget_ms(const synth *y)
{
    return (exp(y->log_min) + 0.3 * (exp(y->log_max) - exp(y->log_min))) / 1e6;
}

static void small_config(evo_config *c, const synth *y)
{
    evo_config_default(c);
    c->generations = 30;
    c->seed = 5;
    c->budget[EVO_LATENCY] = budget_ms(y);
}

static void test_default_config_is_ofa(void **state)
{
    (void)state;
    evo_config c;
    evo_config_default(&c);
    assert_int_equal(c.population, 100);
    assert_int_equal(c.generations, 500);
    assert_true(c.parent_ratio == 0.25 && c.mutation_ratio == 0.5);
    assert_true(c.mutate_prob == 0.1 && c.res_mutate_prob == 0.5);
    assert_int_equal(c.axis, EVO_LATENCY);
    for (int m = 0; m < EVO_N_METRICS; m++)
        assert_true(c.budget[m] == 0);
    assert_string_equal(evo_metric_name(EVO_ARENA), "arena");
    assert_string_equal(evo_metric_unit(EVO_LATENCY), "ms");
}

static void on_generation(void *ctx, int generation, int generations, const evo_point *best)
{
    int *calls = ctx;
    assert_int_equal(generation, ++*calls);
    assert_int_equal(generations, 30);
    assert_true(best->acc > 0);
}

static void test_beats_random_sampling_within_budget(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    evo_config c;
    small_config(&c, &y);
    evo_callbacks cb = callbacks(&y);
    int generations_seen = 0;
    cb.progress = on_generation;
    cb.progress_ctx = &generations_seen;
    evo_result r;
    manta_err e;
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &r, &e));
    assert_int_equal(generations_seen, 30);
    assert_int_equal(r.evaluated, 100 + 30 * 100);
    assert_true(r.best.f.v[EVO_LATENCY] <= c.budget[EVO_LATENCY]);
    assert_true(r.measured == r.evaluated + r.rejected + 1);

    /* random sampling with as many fitness evaluations */
    manta_rng rng;
    manta_rng_seed(&rng, 99, 1);
    double best_random = -1;
    for (long n = 0; n < r.evaluated;) {
        ofa_arch a;
        ofa_arch_sample(&y.s, &rng, &a);
        evo_figures f = {{0}};
        TU_OK_ERR(synth_measure(&y, &a, &f, &e));
        if (f.v[EVO_LATENCY] > c.budget[EVO_LATENCY])
            continue;
        double acc;
        TU_OK_ERR(synth_fitness(&y, &a, &acc, &e));
        best_random = fmax(best_random, acc);
        n++;
    }
    print_message("# evolution %.4f (front %zu points), random %.4f, %ld evaluations\n", r.best.acc,
                  r.n_front, best_random, r.evaluated);
    assert_true(r.best.acc > best_random + 0.005);

    /* history never falls; the front is a Pareto front within budget, ending at the best */
    assert_int_equal(r.n_history, 31);
    for (int g = 1; g < r.n_history; g++)
        assert_true(r.history[g] >= r.history[g - 1]);
    assert_true(r.history[30] == r.best.acc);
    assert_true(r.n_front >= 2);
    for (size_t i = 0; i < r.n_front; i++) {
        assert_true(r.front[i].f.v[EVO_LATENCY] <= c.budget[EVO_LATENCY]);
        if (i > 0) {
            assert_true(r.front[i].f.v[EVO_LATENCY] > r.front[i - 1].f.v[EVO_LATENCY]);
            assert_true(r.front[i].acc > r.front[i - 1].acc);
        }
    }
    assert_true(r.front[r.n_front - 1].acc == r.best.acc);
    evo_result_free(&r);
}

/* Field by field: the padding of an evo_point is not part of its value. */
static int same_point(const evo_point *p, const evo_point *q)
{
    return !memcmp(&p->arch, &q->arch, sizeof p->arch) && p->acc == q->acc &&
           !memcmp(&p->f, &q->f, sizeof p->f);
}

/* Fitness of the network alone (slots a depth skips zeroed before the noise),
 * every call recorded: the reference for evo_result.top. */
typedef struct recorder {
    synth *y;
    evo_point *seen;
    size_t n, cap;
} recorder;

static manta_status recorded_fitness(void *ctx, const ofa_arch *a, double *acc, manta_err *err)
{
    recorder *rc = ctx;
    const ofa_space *s = &rc->y->s;
    ofa_arch canon = *a;
    for (int i = 0; i < ofa_slots(s); i++)
        if (i % s->max_depth >= a->d[i / s->max_depth])
            canon.ks[i] = s->ks[0], canon.e[i] = s->e[0];
    MANTA_TRY(synth_fitness(rc->y, &canon, acc, err));
    if (rc->n == rc->cap) {
        rc->cap = rc->cap ? 2 * rc->cap : 1024;
        rc->seen = realloc(rc->seen, rc->cap * sizeof *rc->seen);
        assert_non_null(rc->seen);
    }
    rc->seen[rc->n].arch = *a;
    rc->seen[rc->n++].acc = *acc;
    return MANTA_OK;
}

/* Reference for top[t]: the fittest recorded candidate (at resolution @p res;
 * 0: any) at least min_genes genes from each of top[0..t-1]; NULL if none. */
static const evo_point *fittest_apart(const ofa_space *s, const recorder *rc, const evo_result *r,
                                      size_t t, int min_genes, int res)
{
    const evo_point *want = NULL;
    for (size_t i = 0; i < rc->n; i++) {
        if (res && rc->seen[i].arch.r != res)
            continue;
        int near = 0;
        for (size_t u = 0; u < t; u++)
            near |= evo_arch_distance(s, &rc->seen[i].arch, &r->top[u].arch) < min_genes;
        if (!near && (!want || rc->seen[i].acc > want->acc))
            want = &rc->seen[i];
    }
    return want;
}

/* The top list against the reference: the fittest recorded candidate, then
 * each next fittest at least min_genes (>= 1) genes from every one taken. */
static void check_top(const synth *y, const recorder *rc, const evo_result *r, int k, int min_genes,
                      double budget)
{
    const ofa_space *s = &y->s;
    assert_int_equal(r->n_top, k);
    assert_true(same_point(&r->top[0], &r->best));
    for (size_t t = 0; t < r->n_top; t++) {
        const evo_point *want = fittest_apart(s, rc, r, t, min_genes, 0);
        assert_non_null(want);
        assert_true(r->top[t].acc == want->acc);
        assert_int_equal(evo_arch_distance(s, &r->top[t].arch, &want->arch), 0);
        assert_true(r->top[t].f.v[EVO_LATENCY] <= budget);
        for (size_t u = 0; u < t; u++)
            assert_true(evo_arch_distance(s, &r->top[t].arch, &r->top[u].arch) >= min_genes);
    }
}

static void test_keep_top_is_the_fittest_distinct_networks(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    recorder rc = {&y, NULL, 0, 0};
    evo_config c;
    small_config(&c, &y);
    c.keep_top = 12;
    evo_callbacks cb = {synth_measure, &y, recorded_fitness, &rc, NULL, NULL};
    evo_result r;
    manta_err e;
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &r, &e));
    assert_int_equal((long)rc.n, r.evaluated);
    /* the search does meet networks again, so distinctness is tested */
    size_t dupes = 0;
    for (size_t i = 0; i < rc.n && !dupes; i++)
        for (size_t j = 0; j < i && j < 2000; j++)
            if (evo_arch_distance(&y.s, &rc.seen[i].arch, &rc.seen[j].arch) == 0) {
                dupes++;
                break;
            }
    assert_true(dupes > 0);
    check_top(&y, &rc, &r, 12, 1, c.budget[EVO_LATENCY]);
    /* the fittest are near one another: 5 genes apart gives a different list */
    int close = 0;
    for (size_t t = 1; t < r.n_top; t++)
        close |= evo_arch_distance(&y.s, &r.top[t].arch, &r.top[0].arch) < 5;
    assert_true(close);
    evo_result_free(&r);
    assert_null(r.top);
    rc.n = 0;
    c.top_min_genes = 5;
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &r, &e));
    check_top(&y, &rc, &r, 12, 5, c.budget[EVO_LATENCY]);
    evo_result_free(&r);
    free(rc.seen);

    /* genes: resolution, depths, and the slots both keep; a slot one keeps counts 2 */
    ofa_arch a, b;
    ofa_arch_min(&y.s, 0, &a);
    b = a;
    b.ks[y.s.max_depth - 1] = y.s.ks[y.s.n_ks - 1];
    assert_true(a.d[0] < y.s.max_depth && b.ks[y.s.max_depth - 1] != a.ks[y.s.max_depth - 1]);
    assert_int_equal(evo_arch_distance(&y.s, &a, &b), 0);
    b.d[0] = a.d[0] + 1;
    assert_int_equal(evo_arch_distance(&y.s, &a, &b), 3);
    b = a;
    b.r = y.s.res[y.s.n_res - 1];
    b.ks[0] = y.s.ks[y.s.n_ks - 1];
    b.e[0] = y.s.e[y.s.n_e - 1];
    assert_true(b.r != a.r && b.ks[0] != a.ks[0] && b.e[0] != a.e[0]);
    assert_int_equal(evo_arch_distance(&y.s, &a, &b), 3);
    assert_int_equal(evo_arch_distance(&y.s, &b, &a), 3);
    /* distance 0 exactly for the same blocks at the same resolution */
    manta_rng g;
    manta_rng_seed(&g, 5, 0);
    int zero = 0;
    for (int n = 0; n < 2000; n++) {
        ofa_arch_sample(&y.s, &g, &a);
        b = a;
        int i = (int)manta_rng_below(&g, (uint32_t)ofa_slots(&y.s));
        b.e[i] = y.s.e[manta_rng_below(&g, (uint32_t)y.s.n_e)];
        if (manta_rng_below(&g, 4) == 0)
            b.d[i / y.s.max_depth] = y.s.d[manta_rng_below(&g, (uint32_t)y.s.n_d)];
        if (manta_rng_below(&g, 4) == 0)
            b.r = y.s.res[manta_rng_below(&g, (uint32_t)y.s.n_res)];
        bool same = ofa_arch_same_blocks(&y.s, &a, &b) && a.r == b.r;
        assert_int_equal(evo_arch_distance(&y.s, &a, &b) == 0, same);
        zero += same;
    }
    assert_true(zero > 100 && zero < 1900);
}

static void test_top_by_resolution_takes_each_in_turn(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    const ofa_space *s = &y.s;
    recorder rc = {&y, NULL, 0, 0};
    evo_config c;
    small_config(&c, &y);
    c.keep_top = 9;
    c.top_min_genes = 2;
    c.top_by_res = 1;
    evo_callbacks cb = {synth_measure, &y, recorded_fitness, &rc, NULL, NULL};
    evo_result r;
    manta_err e;
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_int_equal(r.n_top, 9);
    assert_true(same_point(&r.top[0], &r.best));
    /* reference order: the resolutions by their fittest recorded candidate */
    double best_at[OFA_MAX_RES];
    int order[OFA_MAX_RES];
    for (int i = 0; i < s->n_res; i++)
        best_at[i] = -INFINITY, order[i] = i;
    for (size_t i = 0; i < rc.n; i++)
        for (int k = 0; k < s->n_res; k++)
            if (rc.seen[i].arch.r == s->res[k] && rc.seen[i].acc > best_at[k])
                best_at[k] = rc.seen[i].acc;
    for (int a = 0; a < s->n_res; a++) /* insertion sort, fittest first */
        for (int b = a; b > 0 && best_at[order[b]] > best_at[order[b - 1]]; b--) {
            int t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    for (int k = 0; k < s->n_res; k++)
        assert_true(isfinite(best_at[k])); /* the search met every resolution */
    for (size_t t = 0; t < r.n_top; t++) {
        const int want_r = s->res[order[t % (size_t)s->n_res]];
        assert_int_equal(r.top[t].arch.r, want_r);
        /* the fittest of that resolution not within 2 genes of one taken before */
        const evo_point *want = fittest_apart(s, &rc, &r, t, 2, want_r);
        assert_non_null(want);
        assert_true(r.top[t].acc == want->acc);
        assert_int_equal(evo_arch_distance(s, &r.top[t].arch, &want->arch), 0);
    }
    evo_result_free(&r);
    free(rc.seen);
}

static void test_reproducible_for_a_seed(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    evo_config c;
    small_config(&c, &y);
    c.generations = 10;
    ofa_arch mn;
    ofa_arch_min(&y.s, 0, &mn);
    ofa_desc d;
    assert_int_equal(ofa_describe(&y.s, &mn, &d, NULL), MANTA_OK);
    c.budget[EVO_FLASH] = 1.5 * 4.0 * (double)d.params; /* a second constraint */
    evo_callbacks cb = callbacks(&y);
    evo_result a, b;
    manta_err e;
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &a, &e));
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &b, &e));
    assert_true(same_point(&a.best, &b.best));
    assert_int_equal(a.n_front, b.n_front);
    for (size_t i = 0; i < a.n_front; i++)
        assert_true(same_point(&a.front[i], &b.front[i]));
    assert_int_equal(a.measured, b.measured);
    assert_true(a.best.f.v[EVO_FLASH] <= c.budget[EVO_FLASH]);
    evo_result_free(&b);
    c.seed = 6;
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &b, &e));
    assert_true(memcmp(&a.best.arch, &b.best.arch, sizeof a.best.arch) != 0 ||
                a.measured != b.measured);
    evo_result_free(&a);
    evo_result_free(&b);
}

static void test_infeasible_budget_names_smallest_figure(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    double floor_ms = exp(y.log_min) / 1e6;
    ofa_arch mn;
    ofa_arch_min(&y.s, 0, &mn);
    assert_true(fabs(macs_of(&y.s, &mn) / 1e6 - floor_ms) < 1e-9 * floor_ms);
    evo_config c;
    evo_config_default(&c);
    c.init_tries = 2000;
    c.budget[EVO_LATENCY] = 0.5 * floor_ms;
    evo_callbacks cb = callbacks(&y);
    evo_result r;
    manta_err e;
    manta_err_clear(&e);
    assert_int_equal(evo_search(&y.s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    char want[128];
    snprintf(want, sizeof want, "smallest seen: latency %.6g ms", macs_of(&y.s, &mn) / 1e6);
    if (!strstr(e.msg, want))
        fail_msg("message '%s' lacks '%s'", e.msg, want);
    assert_non_null(strstr(e.msg, "no sub-network of space 'cpu-default' meets latency <="));
    assert_non_null(strstr(e.msg, "2001 candidates"));
    assert_true(r.min_seen.v[EVO_LATENCY] == macs_of(&y.s, &mn) / 1e6);
    assert_int_equal(r.measured, 2001);
    assert_int_equal(r.rejected, 2001);
    assert_int_equal(r.evaluated, 0);
    assert_null(r.front);
    assert_null(r.history);
}

static void test_bad_settings_and_callback_errors(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    evo_config c;
    small_config(&c, &y);
    evo_callbacks cb = callbacks(&y);
    evo_result r;
    manta_err e;
    c.parent_ratio = 0;
    assert_int_equal(evo_search(&y.s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "parent_ratio"));
    small_config(&c, &y);
    c.keep_top = -1;
    assert_int_equal(evo_search(&y.s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "keep_top -1"));
    c.keep_top = 3;
    c.top_min_genes = -2;
    assert_int_equal(evo_search(&y.s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "top_min_genes -2"));
    small_config(&c, &y);
    cb.fitness = NULL;
    assert_int_equal(evo_search(&y.s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "callbacks"));
    cb = callbacks(&y);
    y.fail_at = 250;
    assert_int_equal(evo_search(&y.s, &c, &cb, &r, &e), MANTA_ERR_IO);
    assert_string_equal(e.msg, "board unplugged at call 250");
    assert_null(r.front);
}

/* synth_fitness, plus 1 for one chosen sub-network (a peak random draws miss) */
typedef struct peaked {
    synth *y;
    ofa_arch peak;
    long over_budget_calls; /* fitness asked for a candidate over budget */
} peaked;

static manta_status peaked_fitness(void *ctx, const ofa_arch *a, double *acc, manta_err *err)
{
    peaked *p = ctx;
    MANTA_TRY(synth_fitness(p->y, a, acc, err));
    if (macs_of(&p->y->s, a) / 1e6 > budget_ms(p->y))
        p->over_budget_calls++;
    if (!memcmp(a, &p->peak, sizeof *a))
        *acc += 1.0;
    return MANTA_OK;
}

static void test_seeds_enter_the_first_population(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    const ofa_space *s = &y.s;
    peaked pk;
    memset(&pk, 0, sizeof pk);
    pk.y = &y;
    ofa_arch seeds[3];
    ofa_arch_uniform(s, s->ks[2], s->e[2], s->d[2], s->res[2], &seeds[0]); /* over budget */
    ofa_arch_uniform(s, s->ks[1], s->e[0], s->d[0], s->res[0], &seeds[1]);
    ofa_arch_uniform(s, s->ks[0], s->e[0], s->d[0], s->res[0], &seeds[2]);
    assert_true(macs_of(s, &seeds[0]) / 1e6 > budget_ms(&y));
    pk.peak = seeds[1];
    evo_config c;
    small_config(&c, &y);
    c.generations = 0;
    evo_callbacks cb = {synth_measure, &y, peaked_fitness, &pk, NULL, NULL};
    evo_result r;
    manta_err e;
    /* without seeds, the first population misses the peak */
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_true(memcmp(&r.best.arch, &pk.peak, sizeof pk.peak) != 0);
    assert_int_equal(r.evaluated, c.population);
    evo_result_free(&r);
    /* with them, it is there from the start; the one over budget stays out */
    c.seeds = seeds;
    c.n_seeds = 3;
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_memory_equal(&r.best.arch, &pk.peak, sizeof pk.peak);
    assert_true(r.best.acc > 1.0);
    assert_int_equal(r.evaluated, c.population);
    assert_int_equal(pk.over_budget_calls, 0);
    assert_true(r.rejected >= 1);
    evo_result_free(&r);
    /* a search with generations keeps a seed that stays the fittest */
    c.generations = 10;
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_memory_equal(&r.best.arch, &pk.peak, sizeof pk.peak);
    evo_result_free(&r);
    /* a seed outside the space, or seeds promised but missing */
    seeds[2].ks[4] = 9;
    assert_int_equal(evo_search(s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "ks[4] = 9"));
    c.seeds = NULL;
    assert_int_equal(evo_search(s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "seeds"));
}

static void test_top_list_adds_the_fittest_seeds(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    const ofa_space *s = &y.s;
    ofa_arch seeds[81];
    int n = 0;
    for (int ri = 0; ri < s->n_res; ri++)
        for (int di = 0; di < s->n_d; di++)
            for (int ei = 0; ei < s->n_e; ei++)
                for (int ki = 0; ki < s->n_ks; ki++)
                    ofa_arch_uniform(s, s->ks[ki], s->e[ei], s->d[di], s->res[ri], &seeds[n++]);
    evo_config c;
    small_config(&c, &y);
    c.seeds = seeds;
    c.n_seeds = n;
    c.keep_top = 4;
    c.top_min_genes = 2;
    c.top_seeds = 3;
    evo_callbacks cb = callbacks(&y);
    evo_result r;
    manta_err e;
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_int_equal(r.n_top_seeds, 3);
    assert_int_equal(r.n_top, 4 + 3);
    /* reference: the seeds within budget and not among the first four, fittest first */
    double want[81];
    int n_want = 0;
    for (int i = 0; i < n; i++) {
        double acc;
        TU_OK_ERR(synth_fitness(&y, &seeds[i], &acc, &e));
        bool in_top = false;
        for (size_t t = 0; t < 4; t++)
            in_top |= evo_arch_distance(s, &r.top[t].arch, &seeds[i]) == 0;
        if (!in_top && macs_of(s, &seeds[i]) / 1e6 <= c.budget[EVO_LATENCY])
            want[n_want++] = acc;
    }
    assert_true(n_want > 3);
    for (int i = 1; i < n_want; i++) /* insertion sort, descending */
        for (int j = i; j > 0 && want[j] > want[j - 1]; j--) {
            double t = want[j];
            want[j] = want[j - 1];
            want[j - 1] = t;
        }
    for (size_t t = 4; t < r.n_top; t++) {
        assert_true(fabs(r.top[t].acc - want[t - 4]) < 1e-12);
        assert_true(r.top[t].f.v[EVO_LATENCY] <= c.budget[EVO_LATENCY]);
        bool uniform = false;
        for (int i = 0; i < n; i++)
            uniform |= evo_arch_distance(s, &r.top[t].arch, &seeds[i]) == 0;
        assert_true(uniform);
    }
    evo_result_free(&r);
    /* none asked for, none added; a bad count is refused */
    c.top_seeds = 0;
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_int_equal(r.n_top_seeds, 0);
    assert_int_equal(r.n_top, 4);
    evo_result_free(&r);
    /* as many as there are seeds: every one within budget that the list lacks */
    int in_budget = 0;
    for (int i = 0; i < n; i++)
        in_budget += macs_of(s, &seeds[i]) / 1e6 <= c.budget[EVO_LATENCY];
    c.top_seeds = n;
    TU_OK_ERR(evo_search(s, &c, &cb, &r, &e));
    assert_int_equal(r.n_seeds_in, in_budget);
    assert_int_equal(r.n_top_seeds, n_want);
    for (int i = 0; i < n; i++) {
        bool listed = false;
        for (size_t t = 0; t < r.n_top; t++)
            listed |= evo_arch_distance(s, &r.top[t].arch, &seeds[i]) == 0;
        assert_int_equal(listed, macs_of(s, &seeds[i]) / 1e6 <= c.budget[EVO_LATENCY]);
    }
    evo_result_free(&r);
    c.top_seeds = -1;
    assert_int_equal(evo_search(s, &c, &cb, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "top_seeds -1"));
}

/* Minimal XML structure check: one root, balanced and properly nested tags,
 * quoted attributes, entities only in their escaped forms. NULL when well formed,
 * else what is wrong (in a static buffer). */
static const char *xml_problem(const char *x)
{
    static char why[96];
    const char *stack[64];
    size_t lens[64];
    int depth = 0, roots = 0;
#define BAD(...) return (snprintf(why, sizeof why, __VA_ARGS__), why)
    for (const char *p = x; *p;) {
        if (*p == '&') {
            const char *ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            bool ok = false;
            for (int i = 0; i < 5; i++)
                ok = ok || !strncmp(p, ents[i], strlen(ents[i]));
            if (!ok)
                BAD("bare '&' at offset %td", p - x);
            p++;
            continue;
        }
        if (*p == '>')
            BAD("stray '>' at offset %td", p - x);
        if (*p != '<') {
            if (depth == 0 && !isspace((unsigned char)*p))
                BAD("text outside the root at offset %td", p - x);
            p++;
            continue;
        }
        if (p[1] == '?') {
            const char *end = strstr(p, "?>");
            if (!end)
                BAD("unterminated declaration");
            p = end + 2;
            continue;
        }
        if (p[1] == '/') {
            const char *name = p + 2;
            size_t len = strcspn(name, " \t\n>");
            if (depth == 0 || len != lens[depth - 1] || strncmp(name, stack[depth - 1], len))
                BAD("unbalanced end tag at offset %td", p - x);
            depth--;
            p = strchr(p, '>');
            if (!p)
                BAD("unterminated end tag");
            p++;
            continue;
        }
        const char *name = p + 1;
        size_t len = strcspn(name, " \t\n/>");
        if (len == 0 || !isalpha((unsigned char)name[0]))
            BAD("bad tag name at offset %td", p - x);
        if (depth == 0 && roots++ > 0)
            BAD("a second root element at offset %td", p - x);
        const char *q = name + len;
        for (;;) {
            while (isspace((unsigned char)*q))
                q++;
            if (q[0] == '/' && q[1] == '>') {
                q += 2;
                break;
            }
            if (*q == '>') {
                if (depth == 64)
                    BAD("nested too deep");
                stack[depth] = name;
                lens[depth++] = len;
                q++;
                break;
            }
            size_t an =
                strspn(q, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_:0123456789");
            if (an == 0 || !isalpha((unsigned char)q[0]) || q[an] != '=' || q[an + 1] != '"')
                BAD("bad attribute at offset %td", q - x);
            const char *v = q + an + 2, *end = strchr(v, '"');
            if (!end)
                BAD("unterminated attribute at offset %td", q - x);
            for (const char *c = v; c < end; c++)
                if (*c == '<')
                    BAD("'<' in an attribute at offset %td", c - x);
            q = end + 1;
        }
        p = q;
    }
    if (depth != 0)
        BAD("%d element(s) left open", depth);
    if (roots != 1)
        BAD("%d root elements", roots);
#undef BAD
    return NULL;
}

static void assert_well_formed_xml(const char *x)
{
    const char *why = xml_problem(x);
    if (why)
        fail_msg("SVG is not well formed: %s", why);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void test_front_csv_and_svg(void **state)
{
    (void)state;
    synth y;
    synth_init(&y);
    evo_config c;
    small_config(&c, &y);
    c.generations = 5;
    evo_callbacks cb = callbacks(&y);
    evo_result r;
    manta_err e;
    TU_OK_ERR(evo_search(&y.s, &c, &cb, &r, &e));
    char csv[128], svg[128];
    tu_tmpdir_path(&dir, "front.csv", csv, sizeof csv);
    tu_tmpdir_path(&dir, "front.svg", svg, sizeof svg);
    TU_OK_ERR(evo_write_front_csv(&r, &y.s, csv, &e));
    TU_OK_ERR(evo_write_front_svg(&r, "cpu-default <= 3 ms & \"fast\"", svg, &e));

    char *text;
    TU_OK_ERR(manta_file_read(csv, 1 << 20, &text, NULL, &e));
    const char *header = "rank,top1,latency_ms,macs,arena_bytes,flash_bytes,best,arch\n";
    assert_true(!strncmp(text, header, strlen(header)));
    assert_int_equal(count(text, "\n"), r.n_front + 1);
    /* every row: 7 separators outside quotes; exactly one best */
    size_t bests = 0;
    for (const char *line = strchr(text, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        int commas = 0, field = 0;
        bool quoted = false;
        const char *c = line;
        for (; *c != '\n'; c++) {
            if (*c == '"')
                quoted = !quoted;
            else if (*c == ',' && !quoted) {
                commas++;
                if (++field == 7 && c[-1] == '1')
                    bests++;
            }
        }
        assert_int_equal(commas, 7);
        assert_false(quoted);
        assert_non_null(strstr(line, "\"{\"\"ks\"\":["));
    }
    assert_int_equal(bests, 1);
    free(text);

    TU_OK_ERR(manta_file_read(svg, 1 << 20, &text, NULL, &e));
    assert_well_formed_xml(text);
    assert_int_equal(count(text, "<circle"), r.n_front + 1);
    assert_non_null(strstr(text, "best: top-1"));
    assert_non_null(strstr(text, "&lt;= 3 ms &amp; &quot;fast&quot;"));
    assert_non_null(strstr(text, "latency (ms)"));
    free(text);
    evo_result_free(&r);

    evo_result empty;
    memset(&empty, 0, sizeof empty);
    assert_int_equal(evo_write_front_svg(&empty, NULL, svg, &e), MANTA_ERR_INVALID_ARG);
}

static void test_xml_checker_catches_broken_text(void **state)
{
    (void)state;
    assert_null(xml_problem("<?xml version=\"1.0\"?>\n<svg a=\"1\"><g><text>x &amp; y</text></g>"
                            "<circle r=\"3\"/></svg>\n"));
    const char *bad[] = {
        "<svg><g></svg>", "<svg></g></svg>", "<svg a=1></svg>", "<svg><text>a & b</text></svg>",
        "<svg/><svg/>",   "<svg>",           "x<svg/>",         "<svg><g a=\"<\"/></svg>"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (!xml_problem(bad[i]))
            fail_msg("accepted: %s", bad[i]);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(&dir, "evo");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_config_is_ofa),
        cmocka_unit_test(test_beats_random_sampling_within_budget),
        cmocka_unit_test(test_keep_top_is_the_fittest_distinct_networks),
        cmocka_unit_test(test_top_list_adds_the_fittest_seeds),
        cmocka_unit_test(test_top_by_resolution_takes_each_in_turn),
        cmocka_unit_test(test_reproducible_for_a_seed),
        cmocka_unit_test(test_infeasible_budget_names_smallest_figure),
        cmocka_unit_test(test_bad_settings_and_callback_errors),
        cmocka_unit_test(test_seeds_enter_the_first_population),
        cmocka_unit_test(test_front_csv_and_svg),
        cmocka_unit_test(test_xml_checker_catches_broken_text),
    };
    return cmocka_run_group_tests_name("evolutionary search", tests, setup, teardown);
}
