/* The run records of metrics.jsonl (records.h): a writer per kind, one reader. */
#include "core/records.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* ---- writing ---- */

/* A string member that is null when empty. */
static void put_str_or_null(manta_strbuf *b, const char *s)
{
    if (s[0])
        manta_strbuf_json_str(b, s);
    else
        manta_strbuf_printf(b, "null");
}

/* A required number with @p fmt (one conversion); a non-finite one as a JSON string. */
static void put_num(manta_strbuf *b, const char *fmt, double v)
{
    if (isnan(v))
        manta_strbuf_printf(b, "\"NaN\"");
    else if (isinf(v))
        manta_strbuf_printf(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    else
        manta_strbuf_printf(b, fmt, v);
}

/* An optional number: null when NaN. */
static void put_opt(manta_strbuf *b, const char *fmt, double v)
{
    if (isnan(v))
        manta_strbuf_printf(b, "null");
    else
        put_num(b, fmt, v);
}

/* `,"key":` then a required number. */
static void member_num(manta_strbuf *b, const char *key, const char *fmt, double v)
{
    manta_strbuf_printf(b, ",\"%s\":", key);
    put_num(b, fmt, v);
}

static void member_str(manta_strbuf *b, const char *key, const char *s)
{
    manta_strbuf_printf(b, ",\"%s\":", key);
    manta_strbuf_json_str(b, s);
}

static void put_ranks(manta_strbuf *b, const manta_rec_rank *ranks, int n)
{
    if (n <= 0)
        return;
    manta_strbuf_printf(b, ",\"ranks\":[");
    for (int i = 0; i < n; i++) {
        const manta_rec_rank *r = &ranks[i];
        manta_strbuf_printf(b, "%s{\"rank\":%d,\"device\":", i ? "," : "", r->rank);
        put_str_or_null(b, r->device);
        manta_strbuf_printf(b, ",\"host\":");
        put_str_or_null(b, r->host);
        manta_strbuf_printf(b, ",\"images_per_s\":");
        put_opt(b, "%.2f", r->images_per_s);
        manta_strbuf_printf(b, ",\"compute_s\":");
        put_opt(b, "%.6f", r->compute_s);
        manta_strbuf_printf(b, ",\"data_wait_s\":");
        put_opt(b, "%.6f", r->data_wait_s);
        manta_strbuf_printf(b, ",\"allreduce_wait_s\":");
        put_opt(b, "%.6f", r->allreduce_wait_s);
        manta_strbuf_printf(b, ",\"ring_bytes_per_s\":");
        put_opt(b, "%.0f", r->ring_bytes_per_s);
        manta_strbuf_printf(b, ",\"heartbeat\":");
        put_opt(b, "%.3f", r->heartbeat);
        if (!isnan(r->step_ms))
            member_num(b, "step_ms", "%.1f", r->step_ms);
        manta_strbuf_printf(b, "}");
    }
    manta_strbuf_printf(b, "]");
}

void manta_rec_job_json(const manta_rec_job *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"job\",\"schema\":%d", r->schema);
    member_num(b, "time", "%.3f", r->time);
    member_str(b, "task", r->task);
    member_str(b, "space", r->space);
    member_str(b, "schedule", r->schedule);
    member_str(b, "data", r->data);
    manta_strbuf_printf(b,
                        ",\"steps\":%ld,\"start_step\":%ld,\"batch\":%d,\"world_size\":%d,"
                        "\"devices_per_rank\":%d,\"replicas\":%d,\"mode\":",
                        r->steps, r->start_step, r->batch, r->world_size, r->devices_per_rank,
                        r->replicas);
    manta_strbuf_json_str(b, r->mode);
    member_str(b, "host", r->host);
    const int nd = r->n_devices < MANTA_REC_MAX_DEVICES ? r->n_devices : MANTA_REC_MAX_DEVICES;
    manta_strbuf_printf(b, ",\"devices\":[");
    for (int i = 0; i < nd; i++) {
        manta_strbuf_printf(b, i ? "," : "");
        manta_strbuf_json_str(b, r->devices[i]);
    }
    manta_strbuf_printf(b, "],\"device_bytes\":[");
    for (int i = 0; i < nd; i++)
        manta_strbuf_printf(b, "%s%llu", i ? "," : "", r->device_bytes[i]);
    manta_strbuf_printf(b, "],\"phases\":[");
    const int np = r->n_phases < MANTA_REC_MAX_PHASES ? r->n_phases : MANTA_REC_MAX_PHASES;
    for (int i = 0; i < np; i++) {
        const manta_rec_phase *ph = &r->phases[i];
        manta_strbuf_printf(b, "%s{\"name\":", i ? "," : "");
        manta_strbuf_json_str(b, ph->name);
        manta_strbuf_printf(b, ",\"steps\":%ld,\"subnets\":%d", ph->steps, ph->subnets);
        member_num(b, "lr", "%g", ph->lr);
        manta_strbuf_printf(b, ",\"distill\":%s}", ph->distill ? "true" : "false");
    }
    manta_strbuf_printf(b, "]}");
}

void manta_rec_progress_json(const manta_rec_progress *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"step\":%ld,\"steps\":%ld,\"phase\":", r->step, r->steps);
    manta_strbuf_json_str(b, r->phase);
    manta_strbuf_printf(b, ",\"phase_index\":%d", r->phase_index);
    member_num(b, "loss", "%.5f", r->loss);
    member_num(b, "batch_top1", "%.4f", r->batch_top1);
    manta_strbuf_printf(b, ",\"r\":%d", r->r);
    member_num(b, "lr", "%.6f", r->lr);
    member_num(b, "images_per_s", "%.1f", r->images_per_s);
    member_num(b, "data_wait", "%.4f", r->data_wait);
    member_num(b, "step_ms", "%.1f", r->step_ms);
    member_num(b, "eta_s", "%.0f", r->eta_s);
    if (!isnan(r->time))
        member_num(b, "time", "%.3f", r->time);
    const manta_rec_subnets *z = &r->subnets;
    if (z->n != 0) {
        if (z->n > 0)
            manta_strbuf_printf(b, ",\"subnets\":{\"n\":%ld,\"macs_mean\":", z->n);
        else
            manta_strbuf_printf(b, ",\"subnets\":{\"macs_mean\":");
        put_num(b, "%.0f", z->macs_mean);
        member_num(b, "macs_min", "%.0f", z->macs_min);
        member_num(b, "macs_max", "%.0f", z->macs_max);
        member_num(b, "params_mean", "%.0f", z->params_mean);
        member_num(b, "params_min", "%.0f", z->params_min);
        member_num(b, "params_max", "%.0f", z->params_max);
        manta_strbuf_printf(b, "}");
    }
    put_ranks(b, r->ranks, r->n_ranks);
    manta_strbuf_printf(b, "}");
}

void manta_rec_step_json(const manta_rec_step *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"step\",\"step\":%ld,\"phase\":", r->step);
    manta_strbuf_json_str(b, r->phase);
    manta_strbuf_printf(b, ",\"phase_index\":%d", r->phase_index);
    member_num(b, "loss", "%.6f", r->loss);
    member_num(b, "kd_loss", "%.6f", r->kd_loss);
    member_num(b, "epe", "%.5f", r->epe);
    manta_strbuf_printf(b, ",\"round\":%d", r->round);
    member_num(b, "lr", "%.6f", r->lr);
    member_num(b, "pairs_per_s", "%.3f", r->pairs_per_s);
    member_num(b, "time", "%.3f", r->time);
    put_ranks(b, r->ranks, r->n_ranks);
    manta_strbuf_printf(b, "}");
}

void manta_rec_eval_json(const manta_rec_eval *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"eval\":\"val\",\"phase\":");
    manta_strbuf_json_str(b, r->phase);
    manta_strbuf_printf(b, ",\"phase_index\":%d,\"step\":%ld", r->phase_index, r->step);
    member_num(b, "max_top1", "%.4f", r->max_top1);
    member_num(b, "min_top1", "%.4f", r->min_top1);
    manta_strbuf_printf(b, "}");
}

static void put_scores(manta_strbuf *b, const char *key, const manta_rec_scores *s)
{
    manta_strbuf_printf(b, ",\"%s\":{\"epe\":", key);
    put_num(b, "%.5f", s->epe);
    member_num(b, "bad3", "%.4f", s->bad3);
    member_num(b, "d1", "%.4f", s->d1);
    member_num(b, "epe_noc", "%.5f", s->epe_noc);
    manta_strbuf_printf(b, "}");
}

void manta_rec_phase_end_json(const manta_rec_phase_end *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"phase_end\",\"phase\":");
    manta_strbuf_json_str(b, r->phase);
    manta_strbuf_printf(b, ",\"phase_index\":%d,\"name\":", r->phase_index);
    manta_strbuf_json_str(b, r->phase);
    manta_strbuf_printf(b, ",\"step\":%ld", r->step);
    put_scores(b, "largest", &r->largest);
    put_scores(b, "smallest", &r->smallest);
    manta_strbuf_printf(b, "}");
}

void manta_rec_checkpoint_json(const manta_rec_checkpoint *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"checkpoint\"");
    member_num(b, "time", "%.3f", r->time);
    manta_strbuf_printf(b, ",\"step\":%ld,\"path\":", r->step);
    manta_strbuf_json_str(b, r->path);
    manta_strbuf_printf(b, "}");
}

void manta_rec_error_json(const manta_rec_error *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"error\"");
    member_num(b, "time", "%.3f", r->time);
    manta_strbuf_printf(b, ",\"step\":%ld,\"rank\":%d,\"host\":", r->step, r->rank);
    manta_strbuf_json_str(b, r->host);
    member_str(b, "message", r->message);
    manta_strbuf_printf(b, "}");
}

void manta_rec_stopped_json(const manta_rec_stopped *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"stopped\"");
    member_num(b, "time", "%.3f", r->time);
    manta_strbuf_printf(b, ",\"step\":%ld,\"signal\":%s}", r->step, r->signal ? "true" : "false");
}

void manta_rec_done_json(const manta_rec_done *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"done\"");
    member_num(b, "time", "%.3f", r->time);
    manta_strbuf_printf(b, ",\"step\":%ld", r->step);
    member_num(b, "seconds", "%.1f", r->seconds);
    manta_strbuf_printf(b, "}");
}

void manta_rec_membership_json(const manta_rec_membership *r, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"event\":\"membership\"");
    member_num(b, "time", "%.3f", r->time);
    manta_strbuf_printf(b, ",\"generation\":%ld,\"world\":%d,\"was\":%d,\"step\":%ld",
                        r->generation, r->world, r->was, r->step);
    member_str(b, "cause", r->cause);
    manta_strbuf_printf(b, ",\"state_bytes\":%lld}", r->state_bytes);
}

const char *manta_rec_kind_name(manta_rec_kind k)
{
    static const char *const names[] = {"unknown", "job",       "progress",   "step",
                                        "eval",    "phase_end", "checkpoint", "error",
                                        "stopped", "done",      "membership"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

manta_status manta_rec_json(const manta_rec *r, manta_strbuf *b, manta_err *err)
{
    switch (r->kind) {
    case MANTA_REC_JOB: manta_rec_job_json(&r->job, b); break;
    case MANTA_REC_PROGRESS: manta_rec_progress_json(&r->progress, b); break;
    case MANTA_REC_STEP: manta_rec_step_json(&r->step, b); break;
    case MANTA_REC_EVAL: manta_rec_eval_json(&r->eval, b); break;
    case MANTA_REC_PHASE_END: manta_rec_phase_end_json(&r->phase_end, b); break;
    case MANTA_REC_CHECKPOINT: manta_rec_checkpoint_json(&r->checkpoint, b); break;
    case MANTA_REC_ERROR: manta_rec_error_json(&r->error, b); break;
    case MANTA_REC_STOPPED: manta_rec_stopped_json(&r->stopped, b); break;
    case MANTA_REC_DONE: manta_rec_done_json(&r->done, b); break;
    case MANTA_REC_MEMBERSHIP: manta_rec_membership_json(&r->membership, b); break;
    default:
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "metrics record: kind %d has no writer",
                             (int)r->kind);
    }
    return MANTA_OK;
}

manta_status manta_rec_write(FILE *f, const manta_rec *r, manta_err *err)
{
    manta_strbuf b = {0};
    manta_status st = manta_rec_json(r, &b, err);
    if (st == MANTA_OK && b.oom)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "metrics record (%s): out of memory",
                           manta_rec_kind_name(r->kind));
    if (st == MANTA_OK && (fprintf(f, "%s\n", b.p) < 0 || fflush(f) != 0))
        st = manta_err_set(err, MANTA_ERR_IO, "metrics record (%s): write failed",
                           manta_rec_kind_name(r->kind));
    manta_strbuf_free(&b);
    return st;
}

/* ---- reading ---- */

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.';
}

size_t manta_rec_clean(const char *in, size_t n, char *out)
{
    static const struct {
        const char *tok, *rep;
    } subs[] = {
        {"-infinity", "\"-Infinity\""}, {"infinity", "\"Infinity\""}, {"-inf", "\"-Infinity\""},
        {"inf", "\"Infinity\""},        {"-nan", "\"NaN\""},          {"nan", "\"NaN\""}};
    size_t o = 0;
    bool str = false, esc = false;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (str) {
            out[o++] = c;
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                str = false;
            continue;
        }
        if (c == '"') {
            str = true;
            out[o++] = c;
            continue;
        }
        if ((c == '-' || c == 'n' || c == 'N' || c == 'i' || c == 'I') &&
            (i == 0 || !word_char(in[i - 1]))) {
            bool done = false;
            for (size_t s = 0; s < sizeof subs / sizeof subs[0] && !done; s++) {
                size_t tl = strlen(subs[s].tok);
                if (i + tl > n)
                    continue;
                bool eq = true;
                for (size_t k = 0; k < tl && eq; k++) {
                    char a = in[i + k];
                    if (a >= 'A' && a <= 'Z')
                        a = (char)(a - 'A' + 'a');
                    eq = a == subs[s].tok[k];
                }
                if (eq && (i + tl == n || !word_char(in[i + tl]))) {
                    size_t rl = strlen(subs[s].rep);
                    memcpy(out + o, subs[s].rep, rl);
                    o += rl;
                    i += tl - 1;
                    done = true;
                }
            }
            if (done)
                continue;
        }
        out[o++] = c;
    }
    out[o] = 0;
    return o;
}

/* Member @p key as a number: a JSON number, or "NaN" / "Infinity" / "-Infinity"; NaN when
 * absent or of another type. */
static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v))
        return v->valuedouble;
    if (cJSON_IsString(v)) {
        if (!strcmp(v->valuestring, "NaN"))
            return NAN;
        if (!strcmp(v->valuestring, "Infinity"))
            return INFINITY;
        if (!strcmp(v->valuestring, "-Infinity"))
            return -INFINITY;
    }
    return NAN;
}

/* Member @p key as a whole number in [lo, hi], else @p dflt. */
static long whole(const cJSON *o, const char *key, long lo, long hi, long dflt)
{
    double v = num(o, key);
    return v >= (double)lo && v <= (double)hi && v == floor(v) ? (long)v : dflt;
}

static int whole_int(const cJSON *o, const char *key, int lo, int hi, int dflt)
{
    return (int)whole(o, key, lo, hi, dflt);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Member @p key (a string) into @p dst (@p cap bytes), cut short; "" when absent. */
static void copy(char *dst, size_t cap, const cJSON *o, const char *key)
{
    const char *s = str(o, key);
    snprintf(dst, cap, "%s", s ? s : "");
}

static bool flag(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* Step counts are longs: 2^50 where a long has 64 bits, its largest value where it has 32. */
#if LONG_MAX > 0x7fffffffL
#define STEP_MAX (1L << 50)
#else
#define STEP_MAX LONG_MAX
#endif
#define PHASE_MAX 1000

/* The phase of a record: "phase_index" (0-based) with the name in "phase"; or (schema 0,
 * stereo) "phase" a number counted from 1, the name in @p name_key (NULL: none). */
static void read_phase(const cJSON *o, const char *name_key, char *name, int *index)
{
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phase");
    *index = whole_int(o, "phase_index", 0, PHASE_MAX, -1);
    name[0] = 0;
    if (cJSON_IsString(ph)) {
        snprintf(name, MANTA_REC_NAME_MAX, "%s", ph->valuestring);
    } else if (cJSON_IsNumber(ph)) {
        if (*index < 0)
            *index = whole_int(o, "phase", 1, PHASE_MAX + 1, 0) - 1;
        if (name_key)
            copy(name, MANTA_REC_NAME_MAX, o, name_key);
    }
    if (!name[0] && name_key)
        copy(name, MANTA_REC_NAME_MAX, o, name_key);
}

static manta_status read_ranks(const cJSON *o, const manta_rec_rank **out, int *n, manta_err *err)
{
    *out = NULL;
    *n = 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, "ranks"), *it;
    if (!cJSON_IsArray(arr))
        return MANTA_OK;
    int count = 0;
    cJSON_ArrayForEach(it, arr) count += cJSON_IsObject(it) && count < MANTA_REC_MAX_RANKS;
    if (count == 0)
        return MANTA_OK;
    manta_rec_rank *r = calloc((size_t)count, sizeof *r);
    if (!r)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "metrics record: out of memory for %d ranks",
                             count);
    int k = 0;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsObject(it) || k == count)
            continue;
        manta_rec_rank *x = &r[k++];
        x->rank = whole_int(it, "rank", 0, 1 << 20, -1);
        copy(x->device, sizeof x->device, it, "device");
        copy(x->host, sizeof x->host, it, "host");
        x->images_per_s = num(it, "images_per_s");
        if (isnan(x->images_per_s))
            x->images_per_s = num(it, "pairs_per_s");
        x->compute_s = num(it, "compute_s");
        x->data_wait_s = num(it, "data_wait_s");
        x->allreduce_wait_s = num(it, "allreduce_wait_s");
        x->ring_bytes_per_s = num(it, "ring_bytes_per_s");
        x->heartbeat = num(it, "heartbeat");
        x->step_ms = num(it, "step_ms");
    }
    *out = r;
    *n = k;
    return MANTA_OK;
}

static void read_job(const cJSON *o, manta_rec_job *j)
{
    j->schema = whole_int(o, "schema", 0, 1 << 20, 0);
    j->time = num(o, "time");
    copy(j->task, sizeof j->task, o, "task");
    copy(j->space, sizeof j->space, o, "space");
    copy(j->schedule, sizeof j->schedule, o, "schedule");
    copy(j->data, sizeof j->data, o, "data");
    j->steps = whole(o, "steps", 0, STEP_MAX, -1);
    j->start_step = whole(o, "start_step", 0, STEP_MAX, -1);
    j->batch = whole_int(o, "batch", 0, 1 << 30, -1);
    j->world_size = whole_int(o, "world_size", 0, 1 << 20, -1);
    j->devices_per_rank = whole_int(o, "devices_per_rank", 0, 1 << 20, -1);
    j->replicas = whole_int(o, "replicas", 0, 1 << 30, -1);
    copy(j->mode, sizeof j->mode, o, "mode");
    copy(j->host, sizeof j->host, o, "host");
    const cJSON *it, *dev = cJSON_GetObjectItemCaseSensitive(o, "devices");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(o, "device_bytes");
    int k = 0;
    cJSON_ArrayForEach(it, (cJSON_IsArray(dev) ? dev : NULL))
    {
        if (k == MANTA_REC_MAX_DEVICES)
            break;
        snprintf(j->devices[k++], MANTA_REC_TEXT_MAX, "%s",
                 cJSON_IsString(it) ? it->valuestring : "");
    }
    int kb = 0;
    cJSON_ArrayForEach(it, (cJSON_IsArray(bytes) ? bytes : NULL))
    {
        if (kb == MANTA_REC_MAX_DEVICES)
            break;
        double v = cJSON_IsNumber(it) ? it->valuedouble : 0;
        j->device_bytes[kb++] = v > 0 && v < 1.8e19 ? (unsigned long long)v : 0;
    }
    j->n_devices = k > kb ? k : kb;
    const cJSON *ph = cJSON_GetObjectItemCaseSensitive(o, "phases");
    k = 0;
    cJSON_ArrayForEach(it, (cJSON_IsArray(ph) ? ph : NULL))
    {
        if (k == MANTA_REC_MAX_PHASES)
            break;
        manta_rec_phase *p = &j->phases[k++];
        copy(p->name, sizeof p->name, it, "name");
        p->steps = whole(it, "steps", 0, STEP_MAX, -1);
        p->subnets = whole_int(it, "subnets", 0, 1 << 20, -1);
        p->lr = num(it, "lr");
        p->distill = flag(it, "distill");
    }
    j->n_phases = k;
}

static manta_status read_progress(const cJSON *o, manta_rec_progress *p, manta_err *err)
{
    p->step = whole(o, "step", 0, STEP_MAX, -1);
    p->steps = whole(o, "steps", 0, STEP_MAX, -1);
    read_phase(o, NULL, p->phase, &p->phase_index);
    p->loss = num(o, "loss");
    p->batch_top1 = num(o, "batch_top1");
    p->r = whole_int(o, "r", 0, 1 << 20, -1);
    p->lr = num(o, "lr");
    p->images_per_s = num(o, "images_per_s");
    p->data_wait = num(o, "data_wait");
    p->step_ms = num(o, "step_ms");
    p->eta_s = num(o, "eta_s");
    p->time = num(o, "time");
    const cJSON *z = cJSON_GetObjectItemCaseSensitive(o, "subnets");
    if (cJSON_IsObject(z)) {
        manta_rec_subnets *s = &p->subnets;
        s->n = whole(z, "n", 1, STEP_MAX, -1);
        s->macs_mean = num(z, "macs_mean");
        s->macs_min = num(z, "macs_min");
        s->macs_max = num(z, "macs_max");
        s->params_mean = num(z, "params_mean");
        s->params_min = num(z, "params_min");
        s->params_max = num(z, "params_max");
    }
    return read_ranks(o, &p->ranks, &p->n_ranks, err);
}

static manta_status read_step(const cJSON *o, manta_rec_step *s, manta_err *err)
{
    s->step = whole(o, "step", 0, STEP_MAX, -1);
    read_phase(o, NULL, s->phase, &s->phase_index);
    s->loss = num(o, "loss");
    s->kd_loss = num(o, "kd_loss");
    s->epe = num(o, "epe");
    s->round = whole_int(o, "round", 0, 1 << 20, -1);
    s->lr = num(o, "lr");
    s->pairs_per_s = num(o, "pairs_per_s");
    s->time = num(o, "time");
    return read_ranks(o, &s->ranks, &s->n_ranks, err);
}

static void read_scores(const cJSON *o, const char *key, manta_rec_scores *s)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, key);
    s->epe = num(m, "epe");
    s->bad3 = num(m, "bad3");
    s->d1 = num(m, "d1");
    s->epe_noc = num(m, "epe_noc");
}

/* The kind of a record and the members it needs. */
static manta_rec_kind kind_of(const cJSON *o)
{
    static const struct {
        const char *event;
        manta_rec_kind kind;
    } events[] = {{"job", MANTA_REC_JOB},
                  {"step", MANTA_REC_STEP},
                  {"phase_end", MANTA_REC_PHASE_END},
                  {"checkpoint", MANTA_REC_CHECKPOINT},
                  {"error", MANTA_REC_ERROR},
                  {"stopped", MANTA_REC_STOPPED},
                  {"done", MANTA_REC_DONE},
                  {"membership", MANTA_REC_MEMBERSHIP},
                  {"progress", MANTA_REC_PROGRESS}};
    const char *ev = str(o, "event"), *eval = str(o, "eval");
    if (ev) {
        for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
            if (!strcmp(ev, events[i].event))
                return events[i].kind;
        return MANTA_REC_UNKNOWN;
    }
    if (eval)
        return !strcmp(eval, "val") ? MANTA_REC_EVAL : MANTA_REC_UNKNOWN;
    return MANTA_REC_PROGRESS;
}

static manta_status interpret(const cJSON *o, manta_rec *r, manta_err *err)
{
    r->kind = kind_of(o);
    /* progress needs its step and loss (other objects without "event" are not progress) */
    if ((r->kind == MANTA_REC_PROGRESS || r->kind == MANTA_REC_STEP) &&
        (whole(o, "step", 0, STEP_MAX, -1) < 0 || !cJSON_GetObjectItemCaseSensitive(o, "loss")))
        r->kind = MANTA_REC_UNKNOWN;
    switch (r->kind) {
    case MANTA_REC_JOB: read_job(o, &r->job); break;
    case MANTA_REC_PROGRESS: return read_progress(o, &r->progress, err);
    case MANTA_REC_STEP: return read_step(o, &r->step, err);
    case MANTA_REC_EVAL:
        read_phase(o, NULL, r->eval.phase, &r->eval.phase_index);
        r->eval.step = whole(o, "step", 0, STEP_MAX, -1);
        r->eval.max_top1 = num(o, "max_top1");
        r->eval.min_top1 = num(o, "min_top1");
        break;
    case MANTA_REC_PHASE_END:
        read_phase(o, "name", r->phase_end.phase, &r->phase_end.phase_index);
        r->phase_end.step = whole(o, "step", 0, STEP_MAX, -1);
        read_scores(o, "largest", &r->phase_end.largest);
        read_scores(o, "smallest", &r->phase_end.smallest);
        break;
    case MANTA_REC_CHECKPOINT:
        r->checkpoint.time = num(o, "time");
        r->checkpoint.step = whole(o, "step", 0, STEP_MAX, -1);
        copy(r->checkpoint.path, sizeof r->checkpoint.path, o, "path");
        break;
    case MANTA_REC_ERROR:
        r->error.time = num(o, "time");
        r->error.step = whole(o, "step", 0, STEP_MAX, -1);
        r->error.rank = whole_int(o, "rank", 0, 1 << 20, -1);
        copy(r->error.host, sizeof r->error.host, o, "host");
        copy(r->error.message, sizeof r->error.message, o, "message");
        break;
    case MANTA_REC_STOPPED:
        r->stopped.time = num(o, "time");
        r->stopped.step = whole(o, "step", 0, STEP_MAX, -1);
        r->stopped.signal = flag(o, "signal");
        break;
    case MANTA_REC_DONE:
        r->done.time = num(o, "time");
        r->done.step = whole(o, "step", 0, STEP_MAX, -1);
        r->done.seconds = num(o, "seconds");
        break;
    case MANTA_REC_MEMBERSHIP:
        r->membership.time = num(o, "time");
        r->membership.generation = whole(o, "generation", 0, STEP_MAX, -1);
        r->membership.world = whole_int(o, "world", 0, 1 << 20, -1);
        r->membership.was = whole_int(o, "was", 0, 1 << 20, -1);
        r->membership.step = whole(o, "step", 0, STEP_MAX, -1);
        copy(r->membership.cause, sizeof r->membership.cause, o, "cause");
        r->membership.state_bytes = (long long)whole(o, "state_bytes", 0, STEP_MAX, 0);
        break;
    default: break;
    }
    return MANTA_OK;
}

void manta_rec_free(manta_rec *r)
{
    if (!r)
        return;
    if (r->kind == MANTA_REC_PROGRESS)
        free((void *)(uintptr_t)r->progress.ranks);
    else if (r->kind == MANTA_REC_STEP)
        free((void *)(uintptr_t)r->step.ranks);
    memset(r, 0, sizeof *r);
}

manta_status manta_rec_parse(const char *line, size_t n, manta_rec *out, manta_err *err)
{
    manta_rec_free(out);
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t'))
        n--;
    while (n > 0 && (*line == ' ' || *line == '\t'))
        line++, n--;
    if (n == 0 || memchr(line, 0, n))
        return manta_err_set(err, MANTA_ERR_FORMAT, "metrics record: not a JSON object");
    if (n > ((size_t)1 << 28))
        return manta_err_set(err, MANTA_ERR_FORMAT, "metrics record: a line of %zu bytes", n);
    char *clean = malloc(4 * n + 1);
    if (!clean)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "metrics record: out of memory");
    size_t cn = manta_rec_clean(line, n, clean);
    cJSON *o = cJSON_ParseWithLength(clean, cn);
    free(clean);
    manta_status st;
    if (!cJSON_IsObject(o))
        st = manta_err_set(err, MANTA_ERR_FORMAT, "metrics record: not a JSON object");
    else
        st = interpret(o, out, err);
    cJSON_Delete(o);
    if (st != MANTA_OK)
        manta_rec_free(out);
    return st;
}
