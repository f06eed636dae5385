/* The readers of `manta report` beside metrics.jsonl (results.h). */
#include "report/results.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "core/fileio.h"
#include "core/json.h"

static void copy_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static double num_or_nan(const cJSON *o, const char *key)
{
    double v;
    return manta_json_number(o, key, -INFINITY, INFINITY, &v) ? v : NAN;
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
    return cJSON_IsObject(a) && manta_json_array(a, "ks", -1) &&
           all_equal(manta_json_array(a, "ks", -1)) && all_equal(manta_json_array(a, "e", -1)) &&
           all_equal(manta_json_array(a, "d", -1));
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
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: not a manta search result (\"format\" is "
                           "not \"manta-search\")",
                           name);
        goto out;
    }
    const char *task = manta_json_string(doc, "task");
    s->stereo = task && !strcmp(task, "stereo");
    /* a stereo search's figures are EPEs in px */
    const char *pkey = s->stereo ? "predicted_epe" : "predicted_top1",
               *vkey = s->stereo ? "heldout_epe" : "validation_top1";
    const double hi = s->stereo ? INFINITY : 1;
    if (!best ||
        !manta_json_number(best, "predicted_latency_ms", 0, INFINITY, &s->best.latency_ms) ||
        !manta_json_number(best, pkey, s->stereo ? -INFINITY : 0, hi, &s->best.predicted_top1)) {
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"best\" lacks predicted_latency_ms or %s",
                           name, pkey);
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
                !manta_json_number(it, pkey, s->stereo ? -INFINITY : 0, hi, &c->predicted_top1)) {
                st = manta_err_set(err, MANTA_ERR_FORMAT,
                                   "%s: re-ranked candidate %zu lacks predicted_latency_ms or "
                                   "%s",
                                   name, s->n_cand + 1, pkey);
                goto out;
            }
            c->val_top1 = num_or_nan(it, vkey);
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
    if (ct < 0 && nf > 0 && (ct = column(f, nf, "epe")) >= 0) /* a stereo search's */
        s->stereo = true;
    if (ct < 0 || cl < 0) {
        free(line);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: line 1: the header names no top1 (epe) or latency_ms column",
                             name);
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
                               "%s: line %ld: predicted and measured latency must be numbers", name,
                               line_no);
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
