#include "search/evolution.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/rng.h"
#include "core/strbuf.h"

const char *evo_metric_name(evo_metric m)
{
    static const char *const names[EVO_N_METRICS] = {"latency", "MACs", "arena", "flash"};
    return (unsigned)m < EVO_N_METRICS ? names[m] : "?";
}

const char *evo_metric_unit(evo_metric m)
{
    static const char *const units[EVO_N_METRICS] = {"ms", "", "bytes", "bytes"};
    return (unsigned)m < EVO_N_METRICS ? units[m] : "";
}

void evo_config_default(evo_config *c)
{
    memset(c, 0, sizeof *c);
    c->population = 100;
    c->generations = 500;
    c->parent_ratio = 0.25;
    c->mutation_ratio = 0.5;
    c->mutate_prob = 0.1;
    c->res_mutate_prob = 0.5;
    c->max_tries = 100;
    c->init_tries = 100 * c->population;
    c->axis = EVO_LATENCY;
    c->seed = 0;
}

void evo_result_free(evo_result *r)
{
    if (!r)
        return;
    free(r->front);
    free(r->history);
    free(r->top);
    r->front = NULL;
    r->history = NULL;
    r->top = NULL;
    r->n_front = 0;
    r->n_history = 0;
    r->n_top = 0;
}

/* ---- search state ---------------------------------------------------------------------- */

typedef struct cand {
    evo_point p;
    long order; /* evaluation number: ties in fitness go to the earlier */
} cand;

typedef struct search {
    const ofa_space *s;
    const evo_config *c;
    const evo_callbacks *cb;
    manta_rng rng;
    evo_result *out;
    bool have_best;
    size_t front_cap;
    long order;
    cand *all; /* every candidate evaluated, when keep_top > 0 */
    size_t n_all, cap_all;
} search;

static bool constrained(const evo_config *c, int m) { return c->budget[m] > 0; }

/* "latency 2.5 ms, MACs 1.2e+07" for the constrained metrics of f. */
static void describe_figures(const evo_config *c, const evo_figures *f, char *buf, size_t cap)
{
    size_t pos = 0;
    buf[0] = '\0';
    for (int m = 0; m < EVO_N_METRICS; m++) {
        if (!constrained(c, m))
            continue;
        const char *unit = evo_metric_unit((evo_metric)m);
        int n = snprintf(buf + pos, cap - pos, "%s%s %.6g%s%s", pos ? ", " : "",
                         evo_metric_name((evo_metric)m), f->v[m], *unit ? " " : "", unit);
        if (n < 0 || (size_t)n >= cap - pos)
            break;
        pos += (size_t)n;
    }
}

/* Measure a; *ok when within budget. Updates the counters and min_seen. */
static manta_status measure(search *S, const ofa_arch *a, evo_figures *f, bool *ok, manta_err *err)
{
    memset(f, 0, sizeof *f);
    MANTA_TRY(S->cb->measure(S->cb->measure_ctx, a, f, err));
    S->out->measured++;
    *ok = true;
    for (int m = 0; m < EVO_N_METRICS; m++) {
        if ((constrained(S->c, m) || m == (int)S->c->axis) && isnan(f->v[m]))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "search: the measure callback gave %s NaN",
                                 evo_metric_name((evo_metric)m));
        if (f->v[m] < S->out->min_seen.v[m])
            S->out->min_seen.v[m] = f->v[m];
        if (constrained(S->c, m) && !(f->v[m] <= S->c->budget[m]))
            *ok = false;
    }
    if (!*ok)
        S->out->rejected++;
    return MANTA_OK;
}

/* arr (n of capacity *cap elements of elem bytes) with room for one more: itself, or
 * reallocated to twice the capacity (first when empty); NULL when out of memory (arr and
 * *cap unchanged). */
static void *room_for_one(void *arr, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? 2 * *cap : first;
    void *p = realloc(arr, c * elem);
    if (p)
        *cap = c;
    return p;
}

/* p dominates or equals q: no worse in both accuracy and cost. */
static bool covers(const evo_point *p, const evo_point *q, evo_metric ax)
{
    return p->acc >= q->acc && p->f.v[ax] <= q->f.v[ax];
}

static manta_status front_add(search *S, const evo_point *p, manta_err *err)
{
    evo_result *r = S->out;
    evo_metric ax = S->c->axis;
    for (size_t i = 0; i < r->n_front; i++)
        if (covers(&r->front[i], p, ax))
            return MANTA_OK;
    size_t k = 0;
    for (size_t i = 0; i < r->n_front; i++)
        if (!covers(p, &r->front[i], ax))
            r->front[k++] = r->front[i];
    r->n_front = k;
    evo_point *f = room_for_one(r->front, r->n_front, &S->front_cap, sizeof *f, 64);
    if (!f)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory for the front");
    r->front = f;
    r->front[r->n_front++] = *p;
    return MANTA_OK;
}

int evo_arch_distance(const ofa_space *s, const ofa_arch *a, const ofa_arch *b)
{
    int n = a->r != b->r;
    for (int l = 0; l < OFA_MAX_DEC_LEVELS; l++) /* stereo's decoder widths (else all 0) */
        n += a->dw[l] != b->dw[l];
    for (int u = 0; u < s->n_units; u++) {
        n += a->d[u] != b->d[u];
        for (int k = 0; k < s->max_depth; k++) {
            int i = u * s->max_depth + k, in_a = k < a->d[u], in_b = k < b->d[u];
            n += in_a != in_b ? 2 : in_a ? (a->ks[i] != b->ks[i]) + (a->e[i] != b->e[i]) : 0;
        }
    }
    return n;
}

/* p ranks before q: fitter, or as fit and cheaper on the front's axis (else the earlier). */
static bool fitter(const evo_point *p, const evo_point *q, evo_metric ax)
{
    return p->acc > q->acc || (p->acc == q->acc && p->f.v[ax] < q->f.v[ax]);
}

/* Remember p for the top list (kept only when keep_top > 0). */
static manta_status keep(search *S, const cand *p, manta_err *err)
{
    if (S->c->keep_top == 0)
        return MANTA_OK;
    cand *all = room_for_one(S->all, S->n_all, &S->cap_all, sizeof *all, 1024);
    if (!all)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
    S->all = all;
    S->all[S->n_all++] = *p;
    return MANTA_OK;
}

/* Fitness of a candidate within budget; updates best and the front. */
static manta_status evaluate(search *S, const ofa_arch *a, const evo_figures *f, cand *out,
                             manta_err *err)
{
    double acc = 0;
    MANTA_TRY(S->cb->fitness(S->cb->fitness_ctx, a, &acc, err));
    if (!isfinite(acc))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "search: the fitness callback gave %g (must be finite)", acc);
    S->out->evaluated++;
    out->p.arch = *a;
    out->p.acc = acc;
    out->p.f = *f;
    out->order = S->order++;
    evo_metric ax = S->c->axis;
    evo_point *b = &S->out->best;
    if (!S->have_best || fitter(&out->p, b, ax)) {
        *b = out->p;
        S->have_best = true;
    }
    MANTA_TRY(keep(S, out, err));
    return front_add(S, &out->p, err);
}

static int pick(manta_rng *r, const int *list, int n)
{
    return list[manta_rng_below(r, (uint32_t)n)];
}

/* OFA's ArchManager: resolution, then each slot's kernel and expand, then each unit's depth. */
static void mutate(search *S, const ofa_arch *parent, ofa_arch *child)
{
    const ofa_space *s = S->s;
    const evo_config *c = S->c;
    *child = *parent;
    if (manta_rng_uniform(&S->rng) < c->res_mutate_prob)
        child->r = pick(&S->rng, s->res, s->n_res);
    for (int i = 0; i < ofa_slots(s); i++) {
        if (manta_rng_uniform(&S->rng) < c->mutate_prob)
            child->ks[i] = pick(&S->rng, s->ks, s->n_ks);
        if (manta_rng_uniform(&S->rng) < c->mutate_prob)
            child->e[i] = pick(&S->rng, s->e, s->n_e);
    }
    for (int u = 0; u < s->n_units; u++)
        if (manta_rng_uniform(&S->rng) < c->mutate_prob)
            child->d[u] = pick(&S->rng, s->d, s->n_d);
    const stereo_space *ss = c->stereo;
    for (int l = 0; ss && l < ss->n_levels; l++)
        if (manta_rng_uniform(&S->rng) < c->mutate_prob)
            child->dw[l] =
                stereo_dec_width(ss, l, (int)manta_rng_below(&S->rng, (uint32_t)ss->n_dec_ratios));
}

static void crossover(search *S, const ofa_arch *a, const ofa_arch *b, ofa_arch *child)
{
    const ofa_space *s = S->s;
    *child = *a;
    for (int i = 0; i < ofa_slots(s); i++)
        child->ks[i] = manta_rng_below(&S->rng, 2) ? b->ks[i] : a->ks[i];
    for (int i = 0; i < ofa_slots(s); i++)
        child->e[i] = manta_rng_below(&S->rng, 2) ? b->e[i] : a->e[i];
    for (int u = 0; u < s->n_units; u++)
        child->d[u] = manta_rng_below(&S->rng, 2) ? b->d[u] : a->d[u];
    child->r = manta_rng_below(&S->rng, 2) ? b->r : a->r;
    for (int l = 0; S->c->stereo && l < S->c->stereo->n_levels; l++)
        child->dw[l] = manta_rng_below(&S->rng, 2) ? b->dw[l] : a->dw[l];
}

static int cmp_cand(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->p.acc != b->p.acc)
        return a->p.acc > b->p.acc ? -1 : 1;
    return (a->order > b->order) - (a->order < b->order);
}

static int cmp_cost(const void *x, const void *y, evo_metric ax)
{
    const evo_point *a = x, *b = y;
    if (a->f.v[ax] != b->f.v[ax])
        return a->f.v[ax] < b->f.v[ax] ? -1 : 1;
    return (a->acc < b->acc) - (a->acc > b->acc);
}

/* Fittest first, as best: then cheaper on the axis, then earlier. */
static int cmp_rank(const void *x, const void *y, evo_metric ax)
{
    const cand *a = x, *b = y;
    if (fitter(&a->p, &b->p, ax))
        return -1;
    if (fitter(&b->p, &a->p, ax))
        return 1;
    return (a->order > b->order) - (a->order < b->order);
}

#define DEFINE_CMP_AXIS(M)                                                              \
    static int cmp_cost_##M(const void *x, const void *y) { return cmp_cost(x, y, M); } \
    static int cmp_rank_##M(const void *x, const void *y) { return cmp_rank(x, y, M); }
DEFINE_CMP_AXIS(EVO_LATENCY)
DEFINE_CMP_AXIS(EVO_MACS)
DEFINE_CMP_AXIS(EVO_ARENA)
DEFINE_CMP_AXIS(EVO_FLASH)

static manta_status check_config(const evo_config *c, const evo_callbacks *cb, manta_err *err)
{
    if (!cb || !cb->measure || !cb->fitness)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "search: the measure and fitness callbacks are required");
    if (c->population < 1 || c->generations < 0 || c->max_tries < 1 || c->init_tries < 1 ||
        c->keep_top < 0 || c->keep_top > 1000000 || c->top_min_genes < 0 || c->top_seeds < 0 ||
        c->top_seeds > 1000000)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "search: population %d, generations %d, max_tries %d, init_tries %d, "
                             "keep_top %d, top_min_genes %d, top_seeds %d (need >= 1, >= 0, >= 1, "
                             ">= 1, 0..1000000, >= 0, 0..1000000)",
                             c->population, c->generations, c->max_tries, c->init_tries,
                             c->keep_top, c->top_min_genes, c->top_seeds);
    const double *p[] = {&c->parent_ratio, &c->mutation_ratio, &c->mutate_prob,
                         &c->res_mutate_prob};
    const char *names[] = {"parent_ratio", "mutation_ratio", "mutate_prob", "res_mutate_prob"};
    for (int i = 0; i < 4; i++)
        if (!(*p[i] >= 0 && *p[i] <= 1) || (i == 0 && *p[i] == 0))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "search: %s %g is outside %s",
                                 names[i], *p[i], i == 0 ? "(0, 1]" : "[0, 1]");
    if (c->n_seeds < 0 || (c->n_seeds > 0 && !c->seeds))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "search: %d seeds at %p", c->n_seeds,
                             (const void *)c->seeds);
    if ((unsigned)c->axis >= EVO_N_METRICS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "search: unknown front axis %d",
                             (int)c->axis);
    for (int m = 0; m < EVO_N_METRICS; m++)
        if (isnan(c->budget[m]))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "search: %s budget is NaN",
                                 evo_metric_name((evo_metric)m));
    return MANTA_OK;
}

static manta_status infeasible(search *S, long tried, const evo_figures *smallest, manta_err *err)
{
    char budget[256] = "", seen[256], small[256];
    size_t pos = 0;
    for (int m = 0; m < EVO_N_METRICS; m++) {
        if (!constrained(S->c, m))
            continue;
        const char *unit = evo_metric_unit((evo_metric)m);
        int n = snprintf(budget + pos, sizeof budget - pos, "%s%s <= %.6g%s%s", pos ? ", " : "",
                         evo_metric_name((evo_metric)m), S->c->budget[m], *unit ? " " : "", unit);
        if (n < 0 || (size_t)n >= sizeof budget - pos)
            break;
        pos += (size_t)n;
    }
    describe_figures(S->c, &S->out->min_seen, seen, sizeof seen);
    describe_figures(S->c, smallest, small, sizeof small);
    return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                         "no sub-network of space '%s' meets %s in %ld candidates; smallest "
                         "seen: %s (the smallest sub-network: %s)",
                         S->s->name, budget, tried, seen, small);
}

/* Whether @p a lies at least @p min_genes from every network of out->top. */
static bool far_from_top(const ofa_space *s, const evo_result *out, const ofa_arch *a,
                         int min_genes)
{
    for (size_t t = 0; t < out->n_top; t++)
        if (evo_arch_distance(s, &out->top[t].arch, a) < min_genes)
            return false;
    return true;
}

manta_status evo_search(const ofa_space *s, const evo_config *c, const evo_callbacks *cb,
                        evo_result *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    for (int m = 0; m < EVO_N_METRICS; m++)
        out->min_seen.v[m] = INFINITY;
    MANTA_TRY(check_config(c, cb, err));
    out->axis = c->axis;
    search S;
    memset(&S, 0, sizeof S);
    S.s = s;
    S.c = c;
    S.cb = cb;
    S.out = out;
    manta_rng_seed(&S.rng, c->seed, 0xe0);

    const int P = c->population;
    int n_par = (int)lround(c->parent_ratio * P);
    n_par = n_par < 1 ? 1 : n_par;
    const int n_mut = (int)lround(c->mutation_ratio * P), n_cross = P - n_mut;
    /* population: at most n_par parents + P children */
    cand *pop = malloc((size_t)(n_par + P) * sizeof *pop);
    out->history = malloc((size_t)(c->generations + 1) * sizeof *out->history);
    const size_t top_cap = (size_t)c->keep_top + (size_t)c->top_seeds;
    if (top_cap > 0)
        out->top = malloc(top_cap * sizeof *out->top);
    cand *seeds = NULL; /* when top_seeds > 0: the n_seeds_in seeds within budget, evaluated */
    manta_status st = MANTA_OK;
    if (!pop || !out->history || (top_cap > 0 && !out->top)) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
        goto fail;
    }

    /* the smallest sub-network first: its figures are the floor reported if nothing fits */
    ofa_arch a;
    evo_figures f, smallest;
    bool ok;
    out->stereo = c->stereo;
    if (c->stereo)
        stereo_arch_min(c->stereo, &a);
    else
        ofa_arch_min(s, 0, &a);
    if ((st = measure(&S, &a, &smallest, &ok, err)) != MANTA_OK)
        goto fail;
    int n_pop = 0;
    for (int i = 0; i < c->n_seeds && n_pop < P; i++) {
        if ((st = c->stereo ? stereo_arch_validate(c->stereo, &c->seeds[i], err)
                            : ofa_arch_validate(s, &c->seeds[i], err)) != MANTA_OK)
            goto fail;
        if ((st = measure(&S, &c->seeds[i], &f, &ok, err)) != MANTA_OK)
            goto fail;
        if (ok && (st = evaluate(&S, &c->seeds[i], &f, &pop[n_pop++], err)) != MANTA_OK)
            goto fail;
    }
    out->n_seeds_in = (size_t)n_pop;
    if (c->top_seeds > 0 && n_pop > 0) {
        if (!(seeds = malloc((size_t)n_pop * sizeof *seeds))) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
            goto fail;
        }
        memcpy(seeds, pop, (size_t)n_pop * sizeof *seeds);
    }
    long tried = 1 + c->n_seeds;
    for (; n_pop < P && tried <= c->init_tries + c->n_seeds; tried++) {
        if (c->stereo)
            stereo_arch_sample(c->stereo, &S.rng, &a);
        else
            ofa_arch_sample(s, &S.rng, &a);
        if ((st = measure(&S, &a, &f, &ok, err)) != MANTA_OK)
            goto fail;
        if (ok && (st = evaluate(&S, &a, &f, &pop[n_pop++], err)) != MANTA_OK)
            goto fail;
    }
    if (n_pop == 0) {
        st = infeasible(&S, tried, &smallest, err);
        goto fail;
    }
    out->history[out->n_history++] = out->best.acc;

    for (int g = 0; g < c->generations; g++) {
        qsort(pop, (size_t)n_pop, sizeof *pop, cmp_cand);
        int np = n_pop < n_par ? n_pop : n_par;
        n_pop = np;
        for (int k = 0; k < n_mut + n_cross; k++) {
            bool by_mutation = k < n_mut;
            for (int t = 0; t < c->max_tries; t++) {
                const ofa_arch *p1 = &pop[manta_rng_below(&S.rng, (uint32_t)np)].p.arch;
                if (by_mutation) {
                    mutate(&S, p1, &a);
                } else {
                    const ofa_arch *p2 = &pop[manta_rng_below(&S.rng, (uint32_t)np)].p.arch;
                    crossover(&S, p1, p2, &a);
                }
                if ((st = measure(&S, &a, &f, &ok, err)) != MANTA_OK)
                    goto fail;
                if (ok) {
                    if ((st = evaluate(&S, &a, &f, &pop[n_pop++], err)) != MANTA_OK)
                        goto fail;
                    break;
                }
            }
        }
        out->history[out->n_history++] = out->best.acc;
        if (cb->progress)
            cb->progress(cb->progress_ctx, g + 1, c->generations, &out->best);
    }
    free(pop);
    static int (*const by_axis[EVO_N_METRICS])(const void *, const void *) = {
        cmp_cost_EVO_LATENCY, cmp_cost_EVO_MACS, cmp_cost_EVO_ARENA, cmp_cost_EVO_FLASH};
    static int (*const by_rank[EVO_N_METRICS])(const void *, const void *) = {
        cmp_rank_EVO_LATENCY, cmp_rank_EVO_MACS, cmp_rank_EVO_ARENA, cmp_rank_EVO_FLASH};
    qsort(out->front, out->n_front, sizeof *out->front, by_axis[c->axis]);
    /* the top list: the fittest first, then each next fittest at least top_min_genes from all kept */
    if (S.n_all > 0) /* S.all is NULL without keep_top */
        qsort(S.all, S.n_all, sizeof *S.all, by_rank[c->axis]);
    const int min_genes = c->top_min_genes > 1 ? c->top_min_genes : 1;
    if (!c->top_by_res) {
        for (size_t i = 0; i < S.n_all && out->n_top < (size_t)c->keep_top; i++)
            if (far_from_top(s, out, &S.all[i].p.arch, min_genes))
                out->top[out->n_top++] = S.all[i].p;
    } else {
        /* the resolutions in the order of their fittest candidate, then rounds */
        int order[OFA_MAX_RES], n_order = 0;
        size_t next[OFA_MAX_RES] = {0};
        for (size_t i = 0; i < S.n_all && n_order < s->n_res; i++) {
            int k = 0;
            while (k < n_order && order[k] != S.all[i].p.arch.r)
                k++;
            if (k == n_order)
                order[n_order++] = S.all[i].p.arch.r;
        }
        for (bool took = true; took && out->n_top < (size_t)c->keep_top;) {
            took = false;
            for (int k = 0; k < n_order && out->n_top < (size_t)c->keep_top; k++)
                for (; next[k] < S.n_all; next[k]++) {
                    const evo_point *p = &S.all[next[k]].p;
                    if (p->arch.r == order[k] && far_from_top(s, out, &p->arch, min_genes)) {
                        out->top[out->n_top++] = *p;
                        next[k]++;
                        took = true;
                        break;
                    }
                }
        }
    }
    /* then the fittest seeds not in the list yet */
    const size_t n_seeds = seeds ? out->n_seeds_in : 0;
    if (n_seeds > 0)
        qsort(seeds, n_seeds, sizeof *seeds, by_rank[c->axis]);
    for (size_t i = 0, added = 0; i < n_seeds && added < (size_t)c->top_seeds; i++)
        if (far_from_top(s, out, &seeds[i].p.arch, 1)) {
            out->top[out->n_top++] = seeds[i].p;
            out->n_top_seeds = ++added;
        }
    free(seeds);
    free(S.all);
    return MANTA_OK;
fail:
    free(pop);
    free(seeds);
    free(S.all);
    evo_result_free(out);
    return st;
}

/* ---- writers ---------------------------------------------------------------------------- */

/* A fitness as the writers show it: top-1, or a stereo search's EPE (minus its fitness). */
static double shown(const evo_result *r, double acc) { return r->stereo ? -acc : acc; }

manta_status evo_write_front_csv(const evo_result *r, const ofa_space *s, const char *path,
                                 manta_err *err)
{
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "rank,%s,latency_ms,macs,arena_bytes,flash_bytes,best,arch\n",
                        r->stereo ? "epe" : "top1");
    for (size_t i = 0; i < r->n_front; i++) {
        const evo_point *p = &r->front[i];
        char arch[1024], quoted[2048];
        MANTA_TRY(r->stereo ? stereo_arch_to_json(r->stereo, &p->arch, arch, sizeof arch, err)
                            : ofa_arch_to_json(s, &p->arch, arch, sizeof arch, err));
        size_t k = 0;
        for (const char *c = arch; *c && k + 2 < sizeof quoted; c++) {
            if (*c == '"')
                quoted[k++] = '"';
            quoted[k++] = *c;
        }
        quoted[k] = '\0';
        bool best = !memcmp(&p->arch, &r->best.arch, sizeof p->arch) && p->acc == r->best.acc;
        manta_strbuf_printf(&b, "%zu,%.9g,%.9g,%.9g,%.9g,%.9g,%d,\"%s\"\n", i + 1, shown(r, p->acc),
                            p->f.v[EVO_LATENCY], p->f.v[EVO_MACS], p->f.v[EVO_ARENA],
                            p->f.v[EVO_FLASH], best, quoted);
    }
    return manta_strbuf_write_file(&b, path, err);
}

/* Text with &, <, >, " escaped, truncated to fit. */
static void xml_escape(const char *in, char *out, size_t cap)
{
    size_t k = 0;
    for (; *in; in++) {
        const char *rep = NULL;
        char one[2] = {*in, '\0'};
        switch (*in) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        default: rep = (unsigned char)*in < 0x20 ? " " : one;
        }
        size_t n = strlen(rep);
        if (k + n + 1 > cap)
            break;
        memcpy(out + k, rep, n);
        k += n;
    }
    out[k] = '\0';
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about n ticks over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static void range_of(double lo, double hi, double *a, double *b)
{
    double pad = (hi - lo) * 0.06;
    if (!(pad > 0))
        pad = fabs(lo) > 0 ? fabs(lo) * 0.05 : 1;
    *a = lo - pad;
    *b = hi + pad;
}

manta_status evo_write_front_svg(const evo_result *r, const char *title, const char *path,
                                 manta_err *err)
{
    if (r->n_front == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: the front is empty", path);
    const double W = 720, H = 480, L = 80, R = 24, T = 48, B = 64;
    const evo_metric ax = r->axis;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (size_t i = 0; i < r->n_front; i++) {
        x0 = fmin(x0, r->front[i].f.v[ax]);
        x1 = fmax(x1, r->front[i].f.v[ax]);
        y0 = fmin(y0, shown(r, r->front[i].acc));
        y1 = fmax(y1, shown(r, r->front[i].acc));
    }
    range_of(x0, x1, &x0, &x1);
    range_of(y0, y1, &y0, &y1);
#define PX(v) (L + ((v)-x0) / (x1 - x0) * (W - L - R))
#define PY(v) (H - B - ((v)-y0) / (y1 - y0) * (H - T - B))
    char esc[512], xlabel[64];
    const char *unit = evo_metric_unit(ax);
    snprintf(xlabel, sizeof xlabel, "%s%s%s%s", evo_metric_name(ax), *unit ? " (" : "", unit,
             *unit ? ")" : "");
    manta_strbuf b = {0};
    manta_strbuf_printf(&b,
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                        "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                        W, H, W, H);
    if (title) {
        xml_escape(title, esc, sizeof esc);
        manta_strbuf_printf(&b, "<title>%s</title>\n", esc);
    }
    manta_strbuf_printf(
        &b, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
    if (title) {
        manta_strbuf_printf(&b,
                            "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">%s"
                            "</text>\n",
                            W / 2, esc);
    }
    /* axes, grid and ticks */
    manta_strbuf_printf(&b, "<g stroke=\"#444\" stroke-width=\"1\">\n");
    manta_strbuf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", L, H - B,
                        W - R, H - B);
    manta_strbuf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", L, T, L,
                        H - B);
    manta_strbuf_printf(&b, "</g>\n<g fill=\"#222\">\n");
    double sx = nice_step(x1 - x0, 6), sy = nice_step(y1 - y0, 6);
    for (double v = ceil(x0 / sx) * sx; v <= x1 + 1e-9 * sx; v += sx)
        manta_strbuf_printf(
            &b,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.6g</text>\n",
            PX(v), T, PX(v), H - B, PX(v), H - B + 18, fabs(v) < 1e-12 * sx ? 0 : v);
    for (double v = ceil(y0 / sy) * sy; v <= y1 + 1e-9 * sy; v += sy)
        manta_strbuf_printf(
            &b,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.6g</text>\n",
            L, PY(v), W - R, PY(v), L - 6, PY(v) + 4, fabs(v) < 1e-12 * sy ? 0 : v);
    manta_strbuf_printf(&b,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
                        "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 18 %.1f)\">%s</text>\n</g>\n",
                        (L + W - R) / 2, H - 20, xlabel, (T + H - B) / 2, (T + H - B) / 2,
                        r->stereo ? "predicted EPE (px)" : "predicted top-1");
    const char *what = r->stereo ? "EPE" : "top-1";
    /* the front: a step line, then the points with their figures as tooltips */
    manta_strbuf_printf(
        &b, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
    for (size_t i = 0; i < r->n_front; i++) {
        const evo_point *p = &r->front[i];
        if (i > 0)
            manta_strbuf_printf(&b, " %.2f,%.2f", PX(p->f.v[ax]),
                                PY(shown(r, r->front[i - 1].acc)));
        manta_strbuf_printf(&b, "%s%.2f,%.2f", i ? " " : "", PX(p->f.v[ax]), PY(shown(r, p->acc)));
    }
    manta_strbuf_printf(&b, "\"/>\n<g fill=\"#1f77b4\">\n");
    for (size_t i = 0; i < r->n_front; i++) {
        const evo_point *p = &r->front[i];
        manta_strbuf_printf(&b,
                            "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3\"><title>%s %.4f, %s %.6g"
                            "</title></circle>\n",
                            PX(p->f.v[ax]), PY(shown(r, p->acc)), what, shown(r, p->acc), xlabel,
                            p->f.v[ax]);
    }
    manta_strbuf_printf(&b, "</g>\n");
    const evo_point *best = &r->best;
    double bx = PX(best->f.v[ax]), by = PY(shown(r, best->acc));
    manta_strbuf_printf(&b,
                        "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"7\" fill=\"none\" stroke=\"#d62728\" "
                        "stroke-width=\"2\"/>\n"
                        "<text x=\"%.2f\" y=\"%.2f\" fill=\"#d62728\" text-anchor=\"end\">best: %s "
                        "%.4f at %.6g%s%s</text>\n</svg>\n",
                        bx, by, bx - 10, by - 10, what, shown(r, best->acc), best->f.v[ax],
                        *unit ? " " : "", unit);
#undef PX
#undef PY
    return manta_strbuf_write_file(&b, path, err);
}
