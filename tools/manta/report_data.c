/* The readers of `manta report` (report_data.h). */
#include "report_data.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/records.h"

#define REP_MAX_FILE (512L << 20) /* the largest input accepted */

/* ---- series ---- */

static bool series_push(rep_series *s, double step, double v)
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
static void series_cut(rep_series *s, double step)
{
    while (s->n > 0 && s->step[s->n - 1] >= step)
        s->n--;
}

static void series_free(rep_series *s)
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

static double num_or_nan(const cJSON *o, const char *key)
{
    double v;
    return manta_json_number(o, key, -INFINITY, INFINITY, &v) ? v : NAN;
}

/* The phase index (0-based) of a record: its index when it has one (named @p name, "" when it
 * names none), else the phase named @p name (looked up, or added at the next free index).
 * -1 when neither. */
static int phase_of(rep_training *t, int index, const char *name)
{
    int idx = index >= 0 && index < REP_MAX_PHASES ? index : -1;
    if (index < 0 && name[0]) {
        for (int i = 0; i < t->n_phases; i++)
            if (t->phases[i].seen && !strcmp(t->phases[i].name, name))
                return i;
        idx = t->n_phases < REP_MAX_PHASES ? t->n_phases : -1;
    }
    if (idx < 0)
        return -1;
    rep_phase *p = &t->phases[idx];
    if (name[0] && (!p->seen || !strncmp(p->name, "phase ", 6)))
        copy_name(p->name, sizeof p->name, name);
    else if (!p->seen)
        snprintf(p->name, sizeof p->name, "phase %d", idx + 1);
    p->seen = true;
    if (idx + 1 > t->n_phases)
        t->n_phases = idx + 1;
    return idx;
}

static rep_rank *rank_of(rep_training *t, int rank)
{
    for (size_t i = 0; i < t->n_ranks; i++)
        if (t->ranks[i].rank == rank)
            return &t->ranks[i];
    if (t->n_ranks == REP_MAX_RANKS)
        return NULL;
    rep_rank *r = realloc(t->ranks, (t->n_ranks + 1) * sizeof *r);
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
static bool read_ranks(rep_training *t, const manta_rec_rank *ranks, int n, double step)
{
    for (int i = 0; i < n; i++) {
        const manta_rec_rank *it = &ranks[i];
        const double ips = it->images_per_s;
        if (it->rank < 0 || !(ips >= 0 && ips <= INFINITY))
            continue;
        rep_rank *r = rank_of(t, it->rank);
        if (!r)
            return t->n_ranks == REP_MAX_RANKS; /* more ranks than drawn: not an error */
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

static bool read_progress(rep_training *t, const progress_view *p)
{
    const double step = p->step;
    int ph = phase_of(t, p->phase, p->name);
    rep_series *all[] = {&t->loss, &t->metric, &t->lr, &t->rate, &t->phase};
    const double v[] = {p->loss, p->metric, p->lr, p->rate, ph >= 0 ? ph : NAN};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        series_cut(all[i], step);
        if (!series_push(all[i], step, v[i]))
            return false;
    }
    /* the sampled sub-networks' sizes, when the record has them */
    const manta_rec_subnets *z = p->subnets && p->subnets->n != 0 ? p->subnets : NULL;
    const double sizes[2][3] = {{z ? z->macs_mean : NAN, z ? z->macs_min : NAN,
                                 z ? z->macs_max : NAN},
                                {z ? z->params_mean : NAN, z ? z->params_min : NAN,
                                 z ? z->params_max : NAN}};
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++) {
            rep_series *s = k ? &t->params[j] : &t->macs[j];
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
static void read_phase_end(rep_training *t, int index, const char *name, long step,
                           double largest, double smallest)
{
    int ph = phase_of(t, index, name);
    if (ph < 0 || step < 0)
        return;
    rep_phase *p = &t->phases[ph];
    p->has_val = true;
    p->val_step = step;
    p->val_largest = largest;
    p->val_smallest = smallest;
    if (p->val_step > p->last_step)
        p->last_step = p->val_step;
}

/* What one record adds; false when out of memory. */
static bool read_record(rep_training *t, const manta_rec *r)
{
    switch (r->kind) {
    case MANTA_REC_PROGRESS: {
        const manta_rec_progress *p = &r->progress;
        const progress_view v = {(double)p->step, p->steps, p->phase_index, p->phase, p->loss,
                                 p->batch_top1, p->lr, p->images_per_s, &p->subnets, p->ranks,
                                 p->n_ranks};
        return read_progress(t, &v);
    }
    case MANTA_REC_STEP: {
        const manta_rec_step *p = &r->step;
        t->stereo = true;
        const progress_view v = {(double)p->step, -1, p->phase_index, p->phase, p->loss, p->epe,
                                 p->lr, p->pairs_per_s, NULL, p->ranks, p->n_ranks};
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

manta_status rep_training_parse(const char *text, size_t len, const char *name, rep_training *t,
                                manta_err *err)
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

manta_status rep_training_load(const char *path, rep_training *t, manta_err *err)
{
    char *text = NULL;
    size_t len = 0;
    MANTA_TRY(manta_file_read(path, REP_MAX_FILE, &text, &len, err));
    manta_status st = rep_training_parse(text, len, path, t, err);
    free(text);
    return st;
}

void rep_training_free(rep_training *t)
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

/* ---- search ---- */

/* One gene list of an encoding: all values equal (or absent). */
static bool all_equal(const cJSON *arr)
{
    const cJSON *it, *first = NULL;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsNumber(it))
            return false;
        if (!first)
            first = it;
        else if (it->valuedouble != first->valuedouble)
            return false;
    }
    return true;
}

/* An encoding {"ks":[..],"e":[..],"d":[..],"r":[..]} is uniform: each of ks, e, d one value. */
static bool arch_uniform(const cJSON *a)
{
    return cJSON_IsObject(a) && manta_json_array(a, "ks", -1) && all_equal(manta_json_array(a, "ks", -1)) &&
           all_equal(manta_json_array(a, "e", -1)) && all_equal(manta_json_array(a, "d", -1));
}

static manta_status parse_json(const char *text, const char *name, cJSON **out, manta_err *err)
{
    const char *end = NULL;
    *out = cJSON_ParseWithOpts(text, &end, 0);
    if (!*out)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: not JSON (near byte %ld)", name,
                             end ? (long)(end - text) : 0L);
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: not a JSON object", name);
    }
    return MANTA_OK;
}

manta_status rep_search_parse(const char *text, const char *name, rep_search *s, manta_err *err)
{
    cJSON *doc;
    MANTA_TRY(parse_json(text, name, &doc, err));
    manta_status st = MANTA_OK;
    const char *fmt = manta_json_string(doc, "format");
    const cJSON *best = manta_json_object(doc, "best");
    s->chosen = -1;
    s->evaluated = s->rejected = -1;
    s->best_macs = s->best_arena_bytes = s->best_file_bytes = NAN;
    if (!fmt || strcmp(fmt, "manta-search") != 0) {
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: not a manta search result (\"format\" is "
                                                  "not \"manta-search\")", name);
        goto out;
    }
    if (!best || !manta_json_number(best, "predicted_latency_ms", 0, INFINITY, &s->best.latency_ms) ||
        !manta_json_number(best, "predicted_top1", 0, 1, &s->best.predicted_top1)) {
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: \"best\" lacks predicted_latency_ms or predicted_top1", name);
        goto out;
    }
    s->has_best = true;
    s->best.val_top1 = NAN;
    s->best.uniform = arch_uniform(manta_json_object(best, "arch"));
    char *enc = cJSON_PrintUnformatted(manta_json_object(best, "arch"));
    if (enc && strlen(enc) < sizeof s->best_arch)
        strcpy(s->best_arch, enc);
    cJSON_free(enc);
    s->best_macs = num_or_nan(best, "macs");
    s->best_arena_bytes = num_or_nan(best, "arena_bytes");
    s->best_file_bytes = num_or_nan(best, "file_bytes");
    copy_name(s->space, sizeof s->space, manta_json_string(doc, "space"));
    copy_name(s->device, sizeof s->device, manta_json_string(doc, "device"));
    const cJSON *budget = manta_json_object(doc, "budget");
    if (!manta_json_number(budget, "max_latency_ms", 0, INFINITY, &s->budget_ms))
        s->budget_ms = 0;
    double v;
    if (manta_json_number(doc, "evaluated", 0, 1e15, &v))
        s->evaluated = (long)v;
    if (manta_json_number(doc, "rejected", 0, 1e15, &v))
        s->rejected = (long)v;
    const cJSON *rr = manta_json_object(doc, "rerank");
    const cJSON *cands = manta_json_array(rr, "candidates", -1);
    int n = cands ? cJSON_GetArraySize(cands) : 0;
    if (n > 0) {
        s->cand = calloc((size_t)n, sizeof *s->cand);
        if (!s->cand) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
            goto out;
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, cands)
        {
            rep_cand *c = &s->cand[s->n_cand];
            if (!manta_json_number(it, "predicted_latency_ms", 0, INFINITY, &c->latency_ms) ||
                !manta_json_number(it, "predicted_top1", 0, 1, &c->predicted_top1)) {
                st = manta_err_set(err, MANTA_ERR_FORMAT,
                                   "%s: re-ranked candidate %zu lacks predicted_latency_ms or "
                                   "predicted_top1", name, s->n_cand + 1);
                goto out;
            }
            c->val_top1 = num_or_nan(it, "validation_top1");
            c->uniform = arch_uniform(manta_json_object(it, "arch"));
            s->n_cand++;
        }
        int chosen;
        if (manta_json_int(rr, "chosen", 1, n, &chosen)) { /* counted from 1 */
            s->chosen = chosen - 1;
            s->best.val_top1 = s->cand[s->chosen].val_top1;
        }
    }
out:
    cJSON_Delete(doc);
    return st;
}

int rep_csv_split(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        char *out = p, *start = p;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0' || *p == '\n' || *p == '\r')
                    return -1;
                if (*p == '"') {
                    if (p[1] == '"') {
                        *out++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *out++ = *p++;
            }
            while (*p && *p != ',' && *p != '\n' && *p != '\r') /* after the closing quote */
                p++;
        } else {
            while (*p && *p != ',' && *p != '\n' && *p != '\r')
                p++;
            out = p;
        }
        char sep = *p;
        *out = '\0';
        if (n < max)
            fields[n] = start;
        n++;
        if (sep != ',')
            break;
        p++;
    }
    return n < max ? n : max;
}

/* The next line of @p *text, NUL-terminated in a copy in @p buf; false at the end. */
static bool next_line(const char **text, char *buf, size_t cap)
{
    if (!**text)
        return false;
    const char *nl = strchr(*text, '\n');
    size_t n = nl ? (size_t)(nl - *text) : strlen(*text);
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(buf, *text, k);
    buf[k] = '\0';
    *text += n + (nl != NULL);
    return true;
}

static int column(char **f, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(f[i], name))
            return i;
    return -1;
}

static bool parse_num(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*v);
}

#define CSV_FIELDS 32
#define CSV_LINE 8192

/* The next row of a CSV text that is not blank, split into @p f; (*line_no) counts the
 * lines. Whether the columns @p a and @p b exist and hold numbers goes to *ok (*x, *y).
 * @return false at the end of the text. */
static bool next_row(const char **text, char *line, char **f, long *line_no, int a, int b,
                     double *x, double *y, bool *ok, int *nf)
{
    while (next_line(text, line, CSV_LINE)) {
        ++*line_no;
        if (strspn(line, " \r\t") == strlen(line))
            continue;
        *nf = rep_csv_split(line, f, CSV_FIELDS);
        *ok = *nf > (a > b ? a : b) && parse_num(f[a], x) && parse_num(f[b], y);
        return true;
    }
    return false;
}

manta_status rep_front_parse(const char *text, const char *name, rep_search *s, manta_err *err)
{
    char *line = malloc(CSV_LINE);
    char *f[CSV_FIELDS];
    manta_status st = MANTA_OK;
    if (!line)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
    int nf = next_line(&text, line, CSV_LINE) ? rep_csv_split(line, f, CSV_FIELDS) : 0;
    int ct = nf > 0 ? column(f, nf, "top1") : -1, cl = nf > 0 ? column(f, nf, "latency_ms") : -1;
    int ca = nf > 0 ? column(f, nf, "arch") : -1;
    if (ct < 0 || cl < 0) {
        free(line);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: line 1: the header names no top1 or latency_ms column", name);
    }
    long line_no = 1;
    size_t cap = 0;
    double top1, lat;
    bool ok;
    while (next_row(&text, line, f, &line_no, ct, cl, &top1, &lat, &ok, &nf)) {
        if (!ok) {
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: line %ld: top1 and latency_ms must be numbers", name, line_no);
            break;
        }
        if (s->n_front == cap) {
            cap = cap ? 2 * cap : 64;
            rep_cand *c = realloc(s->front, cap * sizeof *c);
            if (!c) {
                st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
                break;
            }
            s->front = c;
        }
        rep_cand *c = &s->front[s->n_front++];
        c->latency_ms = lat;
        c->predicted_top1 = top1;
        c->val_top1 = NAN;
        c->uniform = false;
        if (ca >= 0 && ca < nf) {
            cJSON *a = cJSON_Parse(f[ca]);
            c->uniform = arch_uniform(a);
            cJSON_Delete(a);
        }
    }
    free(line);
    return st;
}

void rep_search_free(rep_search *s)
{
    free(s->front);
    free(s->cand);
    memset(s, 0, sizeof *s);
}

/* ---- latency validation ---- */

manta_status rep_latency_parse_csv(const char *text, const char *name, rep_latency *l,
                                   manta_err *err)
{
    char *line = malloc(CSV_LINE);
    char *f[CSV_FIELDS];
    manta_status st = MANTA_OK;
    if (!line)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
    int nf = next_line(&text, line, CSV_LINE) ? rep_csv_split(line, f, CSV_FIELDS) : 0;
    int cp = nf > 0 ? column(f, nf, "predicted_ms") : -1;
    int cm = nf > 0 ? column(f, nf, "measured_ms") : -1;
    if (cm < 0 && nf > 0)
        cm = column(f, nf, "median_ms");
    if (cp < 0 || cm < 0) {
        free(line);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: line 1: the header names no predicted_ms and measured_ms (or "
                             "median_ms) columns",
                             name);
    }
    long line_no = 1;
    size_t cap = 0;
    double p, m;
    bool ok;
    while (next_row(&text, line, f, &line_no, cp, cm, &p, &m, &ok, &nf)) {
        if (!ok) {
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: line %ld: predicted and measured latency must be numbers",
                               name, line_no);
            break;
        }
        if (p <= 0 || m <= 0)
            continue;
        if (l->n == cap) {
            cap = cap ? 2 * cap : 64;
            double *a = realloc(l->pred, cap * sizeof *a);
            if (a)
                l->pred = a;
            double *b = a ? realloc(l->meas, cap * sizeof *b) : NULL;
            if (b)
                l->meas = b;
            if (!a || !b) {
                st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", name);
                break;
            }
        }
        l->pred[l->n] = p;
        l->meas[l->n++] = m;
    }
    free(line);
    return st;
}

manta_status rep_latency_parse_summary(const char *text, const char *name, rep_latency *l,
                                       manta_err *err)
{
    cJSON *doc;
    MANTA_TRY(parse_json(text, name, &doc, err));
    const cJSON *v = manta_json_object(doc, "validation");
    if (!v) {
        cJSON_Delete(doc);
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: no \"validation\" object", name);
    }
    l->has_summary = true;
    copy_name(l->device, sizeof l->device, manta_json_string(doc, "device"));
    l->mean_abs_pct = num_or_nan(v, "mean_abs_pct");
    l->within_10pct = num_or_nan(v, "within_10pct");
    l->kendall_tau = num_or_nan(v, "kendall_tau");
    cJSON_Delete(doc);
    return MANTA_OK;
}

void rep_latency_free(rep_latency *l)
{
    free(l->pred);
    free(l->meas);
    memset(l, 0, sizeof *l);
}
