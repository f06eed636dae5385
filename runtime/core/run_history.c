/* A training run's history from its metrics.jsonl (run_history.h). */
#include "core/run_history.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/records.h"

#define RUN_MAX_FILE (512L << 20) /* the largest file read */

/* ---- series ---- */

static bool series_push(manta_run_series *s, double step, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        double *a = realloc(s->step, cap * sizeof *a);
        if (!a)
            return false;
        s->step = a;
        double *b = realloc(s->v, cap * sizeof *b);
        if (!b)
            return false;
        s->v = b;
        s->cap = cap;
    }
    s->step[s->n] = step;
    s->v[s->n++] = v;
    return true;
}

/* Drop the points at @p step and after (a resumed run's points replace them). */
static void series_cut(manta_run_series *s, double step)
{
    while (s->n > 0 && s->step[s->n - 1] >= step)
        s->n--;
}

static void series_free(manta_run_series *s)
{
    free(s->step);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static void copy_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- metrics.jsonl ---- */

/* The phase index (0-based) of a record: its index when it has one (named @p name, "" when it
 * names none), else the phase named @p name (looked up, or added at the next free index).
 * -1 when neither. */
static int phase_of(manta_run_history *t, int index, const char *name)
{
    int idx = index >= 0 && index < MANTA_RUN_MAX_PHASES ? index : -1;
    if (index < 0 && name[0]) {
        for (int i = 0; i < t->n_phases; i++)
            if (t->phases[i].seen && !strcmp(t->phases[i].name, name))
                return i;
        idx = t->n_phases < MANTA_RUN_MAX_PHASES ? t->n_phases : -1;
    }
    if (idx < 0)
        return -1;
    manta_run_phase *p = &t->phases[idx];
    if (name[0] && (!p->seen || !strncmp(p->name, "phase ", 6)))
        copy_name(p->name, sizeof p->name, name);
    else if (!p->seen)
        snprintf(p->name, sizeof p->name, "phase %d", idx + 1);
    p->seen = true;
    if (idx + 1 > t->n_phases)
        t->n_phases = idx + 1;
    return idx;
}

static manta_run_rank *rank_of(manta_run_history *t, int rank)
{
    for (size_t i = 0; i < t->n_ranks; i++)
        if (t->ranks[i].rank == rank)
            return &t->ranks[i];
    if (t->n_ranks == MANTA_RUN_MAX_RANKS)
        return NULL;
    manta_run_rank *r = realloc(t->ranks, (t->n_ranks + 1) * sizeof *r);
    if (!r)
        return NULL;
    t->ranks = r;
    size_t at = t->n_ranks;
    while (at > 0 && r[at - 1].rank > rank) { /* sorted by rank */
        r[at] = r[at - 1];
        at--;
    }
    memset(&r[at], 0, sizeof r[at]);
    r[at].rank = rank;
    t->n_ranks++;
    return &r[at];
}

/* A progress record's ranks. */
static bool read_ranks(manta_run_history *t, const manta_rec_rank *ranks, int n, double step)
{
    for (int i = 0; i < n; i++) {
        const manta_rec_rank *it = &ranks[i];
        const double ips = it->images_per_s;
        if (it->rank < 0 || !(ips >= 0 && ips <= INFINITY))
            continue;
        manta_run_rank *r = rank_of(t, it->rank);
        if (!r)
            return t->n_ranks == MANTA_RUN_MAX_RANKS; /* more ranks than drawn: not an error */
        if (it->device[0] && !r->device[0])
            copy_name(r->device, sizeof r->device, it->device);
        /* step time: given, or its parts (seconds per step) added up */
        double c = it->compute_s, d = it->data_wait_s, a = it->allreduce_wait_s, ms = it->step_ms;
        double wait = isnan(d) && isnan(a) ? NAN : 1e3 * ((isnan(d) ? 0 : d) + (isnan(a) ? 0 : a));
        if (isnan(ms) && !isnan(c))
            ms = 1e3 * c + (isnan(wait) ? 0 : wait);
        series_cut(&r->ips, step);
        series_cut(&r->step_ms, step);
        series_cut(&r->wait_ms, step);
        if (!series_push(&r->ips, step, ips) || !series_push(&r->step_ms, step, ms) ||
            !series_push(&r->wait_ms, step, wait))
            return false;
    }
    return true;
}

/* A progress record of either task: what the report draws of it. */
typedef struct progress_view {
    double step;
    long steps;       /* -1: not given */
    int phase;        /* -1: not given */
    const char *name; /* "": not given */
    double loss, metric, lr, rate;
    const manta_rec_subnets *subnets; /* NULL: none */
    const manta_rec_rank *ranks;
    int n_ranks;
} progress_view;

static bool read_progress(manta_run_history *t, const progress_view *p)
{
    const double step = p->step;
    int ph = phase_of(t, p->phase, p->name);
    manta_run_series *all[] = {&t->loss, &t->metric, &t->lr, &t->rate, &t->phase};
    const double v[] = {p->loss, p->metric, p->lr, p->rate, ph >= 0 ? ph : NAN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        series_cut(all[i], step);
        if (!series_push(all[i], step, v[i]))
            return false;
    }
    /* the sampled sub-networks' sizes, when the record has them */
    const manta_rec_subnets *z = p->subnets && p->subnets->n != 0 ? p->subnets : NULL;
    const double sizes[2][3] = {
        {z ? z->macs_mean : NAN, z ? z->macs_min : NAN, z ? z->macs_max : NAN},
        {z ? z->params_mean : NAN, z ? z->params_min : NAN, z ? z->params_max : NAN}};
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++) {
            manta_run_series *s = k ? &t->params[j] : &t->macs[j];
            series_cut(s, step);
            double x = sizes[k][j];
            if (x >= 0 && x <= INFINITY && !series_push(s, step, x))
                return false;
        }
    if (ph >= 0 && (long)step > t->phases[ph].last_step)
        t->phases[ph].last_step = (long)step;
    if (p->steps >= 1)
        t->steps = p->steps;
    return read_ranks(t, p->ranks, p->n_ranks, step);
}

/* A phase's end: validation of the largest and smallest sub-networks after @p step. */
static void read_phase_end(manta_run_history *t, int index, const char *name, long step,
                           double largest, double smallest)
{
    int ph = phase_of(t, index, name);
    if (ph < 0 || step < 0)
        return;
    manta_run_phase *p = &t->phases[ph];
    p->has_val = true;
    p->val_step = step;
    p->val_largest = largest;
    p->val_smallest = smallest;
    if (p->val_step > p->last_step)
        p->last_step = p->val_step;
}

/* What one record adds; false when out of memory. */
static bool read_record(manta_run_history *t, const manta_rec *r)
{
    switch (r->kind) {
    case MANTA_REC_PROGRESS: {
        const manta_rec_progress *p = &r->progress;
        const progress_view v = {(double)p->step, p->steps,      p->phase_index, p->phase,
                                 p->loss,         p->batch_top1, p->lr,          p->images_per_s,
                                 &p->subnets,     p->ranks,      p->n_ranks};
        return read_progress(t, &v);
    }
    case MANTA_REC_STEP: {
        const manta_rec_step *p = &r->step;
        t->stereo = true;
        const progress_view v = {(double)p->step, -1,    p->phase_index, p->phase, p->loss,
                                 p->epe,          p->lr, p->pairs_per_s, NULL,     p->ranks,
                                 p->n_ranks};
        return read_progress(t, &v);
    }
    case MANTA_REC_EVAL:
        read_phase_end(t, r->eval.phase_index, r->eval.phase, r->eval.step, r->eval.max_top1,
                       r->eval.min_top1);
        return true;
    case MANTA_REC_PHASE_END:
        t->stereo = true;
        read_phase_end(t, r->phase_end.phase_index, r->phase_end.phase, r->phase_end.step,
                       r->phase_end.largest.epe, r->phase_end.smallest.epe);
        return true;
    default: return true;
    }
}

manta_status manta_run_history_parse(const char *text, size_t len, const char *name,
                                     manta_run_history *t, manta_err *err)
{
    size_t at = 0;
    long line_no = 0;
    manta_rec *rec = calloc(1, sizeof *rec);
    if (!rec)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
    manta_status st = MANTA_OK;
    while (at < len && st == MANTA_OK) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        line_no++;
        const char *line = text + at;
        at += n + (nl != NULL);
        size_t k = 0;
        while (k < n && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r'))
            k++;
        if (k == n)
            continue;
        t->lines++;
        manta_status ps = manta_rec_parse(line, n, rec, NULL);
        if (ps == MANTA_ERR_FORMAT) {
            if (t->malformed++ == 0)
                t->first_malformed = line_no;
            continue;
        }
        if (ps != MANTA_OK || !read_record(t, rec))
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
    }
    manta_rec_free(rec);
    free(rec);
    return st;
}

manta_status manta_run_history_load(const char *path, manta_run_history *t, manta_err *err)
{
    char *text = NULL;
    size_t len = 0;
    MANTA_TRY(manta_file_read(path, RUN_MAX_FILE, &text, &len, err));
    manta_status st = manta_run_history_parse(text, len, path, t, err);
    free(text);
    return st;
}

void manta_run_history_free(manta_run_history *t)
{
    series_free(&t->loss);
    series_free(&t->metric);
    series_free(&t->lr);
    series_free(&t->rate);
    series_free(&t->phase);
    for (int j = 0; j < 3; j++) {
        series_free(&t->macs[j]);
        series_free(&t->params[j]);
    }
    for (size_t i = 0; i < t->n_ranks; i++) {
        series_free(&t->ranks[i].ips);
        series_free(&t->ranks[i].step_ms);
        series_free(&t->ranks[i].wait_ms);
    }
    free(t->ranks);
    memset(t, 0, sizeof *t);
}
