/* The training monitor's model of one run (model.h): metrics.jsonl lines in,
 * bounded records and the run's state out, as JSON and Prometheus text. */
#include "monitor/model.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/records.h"
#include "core/stats.h"

enum { ST_RUNNING, ST_DONE, ST_STOPPED, ST_FAILED };

/* The members of a progress record's "subnets" object: the sizes of the sub-networks sampled
 * since the previous report (docs/monitor.md). */
enum { SUB_N_NETS, SUB_MACS_MEAN, SUB_MACS_MIN, SUB_MACS_MAX, SUB_PARAMS_MEAN, SUB_PARAMS_MIN,
       SUB_PARAMS_MAX, SUB_N };
static const char *const sub_keys[SUB_N] = {"n", "macs_mean", "macs_min", "macs_max",
                                            "params_mean", "params_min", "params_max"};
#define MON_MAX_PHASES 16

typedef struct rank_row {
    int rank;
    char device[MANTA_REC_TEXT_MAX], host[MANTA_REC_TEXT_MAX];
    double images_per_s, compute_s, data_wait_s, allreduce_wait_s, ring_bytes_per_s, heartbeat;
    char error[MANTA_REC_MESSAGE_MAX];
} rank_row;

typedef struct val_row {
    char phase[MANTA_REC_NAME_MAX];
    long step;
    bool epe; /* stereo: end-point error in pixels; else top-1 */
    double largest, smallest;
} val_row;

struct mon_model {
    char name[128];
    mon_alert_opts ao;
    /* records: a ring of lines, oldest at head */
    char **rec;
    size_t *rec_len;
    size_t head, count, bytes;
    uint64_t last_seq, malformed, generation;
    /* the line being read */
    char *pend;
    size_t pend_n;
    bool skipping;
    /* the file */
    long long off;
    unsigned long long dev, ino;
    bool have_file;
    double activity;
    manta_rec *cur; /* the record being read (core/records.h) */
    /* job */
    char *job_json;
    char task[MANTA_REC_NAME_MAX], space[MANTA_REC_TEXT_MAX], schedule[MANTA_REC_NAME_MAX];
    long steps;
    int n_phases, world;
    char phase_name[MON_MAX_PHASES][MANTA_REC_NAME_MAX];
    long phase_steps[MON_MAX_PHASES];
    int phase_subnets[MON_MAX_PHASES];
    /* progress */
    bool have_progress;
    long step, reports;
    int phase; /* 0-based, -1 unknown */
    char cur_phase[MANTA_REC_NAME_MAX];
    double loss, batch_top1, lr, images_per_s, step_ms, data_wait, eta_s, epe;
    double subnets[SUB_N]; /* the last report's sampled sub-networks (NaN: not given) */
    double prev_loss;
    int grow_run, grow_phase;
    long nan_step, grow_step;
    /* checkpoints, validation, end */
    long ckpts, last_ckpt_step;
    char last_ckpt[MANTA_REC_TEXT_MAX];
    val_row val[MON_MAX_VALS];
    int n_val;
    int state;
    char err_msg[MANTA_REC_MESSAGE_MAX];
    int err_rank;
    long err_step;
    /* ranks, sorted by rank */
    rank_row *ranks;
    int n_ranks;
};

void mon_alert_opts_default(mon_alert_opts *o)
{
    *o = (mon_alert_opts){.grow = 5, .slow_pct = 25, .stall_s = 300, .rank_timeout_s = 120};
}

static void clear_state(mon_model *m)
{
    for (size_t i = 0; i < m->count; i++)
        free(m->rec[(m->head + i) % MON_MAX_RECORDS]);
    m->head = m->count = m->bytes = 0;
    m->pend_n = 0;
    m->skipping = false;
    free(m->job_json);
    m->job_json = NULL;
    m->task[0] = m->space[0] = m->schedule[0] = 0;
    m->steps = -1;
    m->n_phases = 0;
    m->world = 0;
    m->have_progress = false;
    m->step = -1;
    m->reports = 0;
    m->phase = -1;
    m->cur_phase[0] = 0;
    m->loss = m->batch_top1 = m->lr = m->images_per_s = m->step_ms = m->data_wait = NAN;
    m->eta_s = m->epe = m->prev_loss = NAN;
    for (int i = 0; i < SUB_N; i++)
        m->subnets[i] = NAN;
    m->grow_run = 0;
    m->grow_phase = -1;
    m->nan_step = m->grow_step = -1;
    m->ckpts = 0;
    m->last_ckpt_step = -1;
    m->last_ckpt[0] = 0;
    m->n_val = 0;
    m->state = ST_RUNNING;
    m->err_msg[0] = 0;
    m->err_rank = -1;
    m->err_step = -1;
    m->n_ranks = 0;
    m->activity = NAN;
}

manta_status mon_model_create(const char *name, const mon_alert_opts *alerts, mon_model **out,
                              manta_err *err)
{
    if (out)
        *out = NULL;
    if (!name || !out)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "monitor: a model needs a name");
    mon_alert_opts ao;
    mon_alert_opts_default(&ao);
    if (alerts)
        ao = *alerts;
    if (ao.grow < 1 || !(ao.slow_pct > 0 && ao.slow_pct < 100) || !(ao.stall_s > 0) ||
        !(ao.rank_timeout_s > 0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: alert thresholds out of range (grow %d >= 1, slow %g in "
                             "(0, 100) %%, stall %g > 0 s, rank timeout %g > 0 s)",
                             ao.grow, ao.slow_pct, ao.stall_s, ao.rank_timeout_s);
    mon_model *m = calloc(1, sizeof *m);
    if (m) {
        m->rec = calloc(MON_MAX_RECORDS, sizeof *m->rec);
        m->rec_len = calloc(MON_MAX_RECORDS, sizeof *m->rec_len);
        m->pend = malloc(MON_LINE_MAX + 1);
        m->ranks = calloc(MON_MAX_RANKS, sizeof *m->ranks);
        m->cur = calloc(1, sizeof *m->cur);
    }
    if (!m || !m->rec || !m->rec_len || !m->pend || !m->ranks || !m->cur) {
        mon_model_free(m);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "monitor: out of memory for run '%s'",
                             name);
    }
    snprintf(m->name, sizeof m->name, "%s", name);
    m->ao = ao;
    clear_state(m);
    *out = m;
    return MANTA_OK;
}

void mon_model_free(mon_model *m)
{
    if (!m)
        return;
    if (m->rec)
        clear_state(m);
    free(m->rec);
    free(m->rec_len);
    free(m->pend);
    free(m->ranks);
    manta_rec_free(m->cur);
    free(m->cur);
    free(m);
}

void mon_model_reset(mon_model *m)
{
    clear_state(m);
    m->generation++;
    m->off = 0;
}

uint64_t mon_model_last_seq(const mon_model *m) { return m->last_seq; }
uint64_t mon_model_malformed(const mon_model *m) { return m->malformed; }

bool mon_model_finished(const mon_model *m)
{
    return m->state != ST_RUNNING || (m->steps > 0 && m->step >= m->steps);
}

/* ---- reading records ---- */

static rank_row *rank_find(mon_model *m, long rank, bool add)
{
    int i = 0;
    while (i < m->n_ranks && m->ranks[i].rank < rank)
        i++;
    if (i < m->n_ranks && m->ranks[i].rank == rank)
        return &m->ranks[i];
    if (!add || m->n_ranks >= MON_MAX_RANKS)
        return NULL;
    memmove(&m->ranks[i + 1], &m->ranks[i], (size_t)(m->n_ranks - i) * sizeof m->ranks[0]);
    m->n_ranks++;
    rank_row *r = &m->ranks[i];
    memset(r, 0, sizeof *r);
    r->rank = (int)rank;
    r->images_per_s = r->compute_s = r->data_wait_s = r->allreduce_wait_s = NAN;
    r->ring_bytes_per_s = r->heartbeat = NAN;
    return r;
}

static void read_ranks(mon_model *m, const manta_rec_rank *ranks, int n, double rec_time)
{
    for (int i = 0; i < n; i++) {
        const manta_rec_rank *it = &ranks[i];
        rank_row *r = it->rank >= 0 ? rank_find(m, it->rank, true) : NULL;
        if (!r)
            continue;
        if (it->device[0])
            snprintf(r->device, sizeof r->device, "%s", it->device);
        if (it->host[0])
            snprintf(r->host, sizeof r->host, "%s", it->host);
        r->images_per_s = it->images_per_s;
        r->compute_s = it->compute_s;
        r->data_wait_s = it->data_wait_s;
        r->allreduce_wait_s = it->allreduce_wait_s;
        r->ring_bytes_per_s = it->ring_bytes_per_s;
        r->heartbeat = isnan(it->heartbeat) ? rec_time : it->heartbeat;
    }
}

static void add_val(mon_model *m, const char *phase, long step, bool epe, double big, double small)
{
    if (m->n_val == MON_MAX_VALS) {
        memmove(&m->val[0], &m->val[1], (MON_MAX_VALS - 1) * sizeof m->val[0]);
        m->n_val--;
    }
    val_row *v = &m->val[m->n_val++];
    snprintf(v->phase, sizeof v->phase, "%s", phase);
    v->step = step;
    v->epe = epe;
    v->largest = big;
    v->smallest = small;
}

/* The name of phase @p index of the job, else @p name, else "?". */
static const char *phase_name(const mon_model *m, int index, const char *name)
{
    if (name[0])
        return name;
    return index >= 0 && index < m->n_phases ? m->phase_name[index] : "?";
}

/* @p j, whose line is @p line (@p n bytes, valid JSON). */
static void read_job(mon_model *m, const manta_rec_job *j, const char *line, size_t n)
{
    /* a new invocation (a resume continues the same file): what the last one ended with
     * no longer holds */
    m->state = ST_RUNNING;
    m->err_msg[0] = 0;
    m->err_rank = -1;
    m->err_step = -1;
    m->n_ranks = 0;
    m->nan_step = m->grow_step = -1;
    m->grow_run = 0;
    m->grow_phase = -1;
    char *raw = malloc(n + 1);
    if (raw) {
        memcpy(raw, line, n);
        raw[n] = 0;
        free(m->job_json);
        m->job_json = raw;
    }
    if (j->task[0])
        snprintf(m->task, sizeof m->task, "%s", j->task);
    if (j->space[0])
        snprintf(m->space, sizeof m->space, "%s", j->space);
    if (j->schedule[0])
        snprintf(m->schedule, sizeof m->schedule, "%s", j->schedule);
    if (j->steps >= 0)
        m->steps = j->steps;
    if (j->world_size >= 1)
        m->world = j->world_size;
    if (j->n_phases > 0) {
        m->n_phases = j->n_phases < MON_MAX_PHASES ? j->n_phases : MON_MAX_PHASES;
        for (int i = 0; i < m->n_phases; i++) {
            const manta_rec_phase *p = &j->phases[i];
            snprintf(m->phase_name[i], sizeof m->phase_name[i], "%s", p->name[0] ? p->name : "?");
            m->phase_steps[i] = p->steps;
            m->phase_subnets[i] = p->subnets;
        }
    }
}

/* A progress record of either task: what the two kinds share. */
typedef struct progress_view {
    long step, steps;
    int phase;        /* 0-based, -1 unknown */
    const char *name; /* "" unknown */
    double loss, batch_top1, lr, images_per_s, step_ms, data_wait, eta_s, epe, time;
    const manta_rec_subnets *subnets; /* NULL: none */
    const manta_rec_rank *ranks;
    int n_ranks;
} progress_view;

static void read_progress(mon_model *m, const progress_view *p)
{
    m->have_progress = true;
    m->reports++;
    m->step = p->step;
    if (p->steps >= 1)
        m->steps = p->steps;
    int phase = p->phase >= 0 ? p->phase : m->phase;
    const char *pn = p->name[0] ? p->name : NULL;
    if (!pn && phase >= 0 && phase < m->n_phases)
        pn = m->phase_name[phase];
    if (pn)
        snprintf(m->cur_phase, sizeof m->cur_phase, "%s", pn);
    else if (phase != m->phase)
        m->cur_phase[0] = 0;
    m->phase = phase;
    m->loss = p->loss;
    m->batch_top1 = p->batch_top1;
    m->lr = p->lr;
    m->images_per_s = p->images_per_s;
    m->step_ms = p->step_ms;
    m->data_wait = p->data_wait;
    m->eta_s = p->eta_s;
    m->epe = p->epe;
    const manta_rec_subnets *z = p->subnets;
    const bool have = z && z->n != 0; /* n -1: the object without its count */
    const double sub[SUB_N] = {z && z->n > 0 ? (double)z->n : NAN,
                               z ? z->macs_mean : NAN, z ? z->macs_min : NAN,
                               z ? z->macs_max : NAN, z ? z->params_mean : NAN,
                               z ? z->params_min : NAN, z ? z->params_max : NAN};
    for (int i = 0; i < SUB_N; i++) /* sizes are never negative: anything else is unknown */
        m->subnets[i] = have && sub[i] >= 0 ? sub[i] : NAN;
    if (!isnan(m->epe) && !m->task[0])
        snprintf(m->task, sizeof m->task, "stereo");
    /* alerts: a loss that is not a number; a loss that grows report after report */
    if (!isfinite(m->loss)) {
        if (m->nan_step < 0)
            m->nan_step = p->step;
    } else if (phase != m->grow_phase || isnan(m->prev_loss)) {
        m->grow_phase = phase;
        m->grow_run = 0;
    } else if (m->loss > m->prev_loss) {
        if (++m->grow_run == 1)
            m->grow_step = p->step;
    } else {
        m->grow_run = 0;
    }
    if (isfinite(m->loss))
        m->prev_loss = m->loss;
    read_ranks(m, p->ranks, p->n_ranks, p->time);
}

/* What one record says about the run; @p line (@p n bytes) is its text. */
static void interpret(mon_model *m, const manta_rec *r, const char *line, size_t n)
{
    switch (r->kind) {
    case MANTA_REC_JOB: read_job(m, &r->job, line, n); break;
    case MANTA_REC_CHECKPOINT:
        m->ckpts++;
        m->last_ckpt_step = r->checkpoint.step;
        snprintf(m->last_ckpt, sizeof m->last_ckpt, "%s", r->checkpoint.path);
        break;
    case MANTA_REC_ERROR: {
        m->state = ST_FAILED;
        const manta_rec_error *e = &r->error;
        snprintf(m->err_msg, sizeof m->err_msg, "%s", e->message[0] ? e->message : "(no message)");
        m->err_step = e->step;
        m->err_rank = e->rank;
        rank_row *rr = m->err_rank >= 0 ? rank_find(m, m->err_rank, true) : NULL;
        if (rr)
            snprintf(rr->error, sizeof rr->error, "%s", m->err_msg);
        break;
    }
    case MANTA_REC_DONE: m->state = ST_DONE; break;
    case MANTA_REC_STOPPED: m->state = ST_STOPPED; break;
    case MANTA_REC_PHASE_END: {
        const manta_rec_phase_end *e = &r->phase_end;
        snprintf(m->task, sizeof m->task, "stereo");
        add_val(m, phase_name(m, e->phase_index, e->phase), e->step, true, e->largest.epe,
                e->smallest.epe);
        break;
    }
    case MANTA_REC_EVAL: {
        const manta_rec_eval *e = &r->eval;
        add_val(m, phase_name(m, e->phase_index, e->phase), e->step, false, e->max_top1,
                e->min_top1);
        break;
    }
    case MANTA_REC_PROGRESS: {
        const manta_rec_progress *p = &r->progress;
        const progress_view v = {p->step, p->steps, p->phase_index, p->phase, p->loss,
                                 p->batch_top1, p->lr, p->images_per_s, p->step_ms, p->data_wait,
                                 p->eta_s, NAN, p->time, &p->subnets, p->ranks, p->n_ranks};
        read_progress(m, &v);
        break;
    }
    case MANTA_REC_STEP: {
        const manta_rec_step *p = &r->step;
        const progress_view v = {p->step, -1, p->phase_index, p->phase, p->loss, NAN, p->lr,
                                 p->pairs_per_s, NAN, NAN, NAN, p->epe, p->time, NULL,
                                 p->ranks, p->n_ranks};
        read_progress(m, &v);
        break;
    }
    default: break; /* kept (served by /api/metrics), otherwise ignored */
    }
}

static void store(mon_model *m, const char *line, size_t n)
{
    char *copy = malloc(n + 1);
    if (!copy) {
        m->malformed++;
        return;
    }
    memcpy(copy, line, n);
    copy[n] = 0;
    while (m->count > 0 && (m->count == MON_MAX_RECORDS || m->bytes + n > MON_MAX_RECORD_BYTES)) {
        m->bytes -= m->rec_len[m->head];
        free(m->rec[m->head]);
        m->head = (m->head + 1) % MON_MAX_RECORDS;
        m->count--;
    }
    size_t at = (m->head + m->count) % MON_MAX_RECORDS;
    m->rec[at] = copy;
    m->rec_len[at] = n;
    m->count++;
    m->bytes += n;
    m->last_seq++;
}

static void read_line(mon_model *m, const char *line, size_t n)
{
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    while (n > 0 && (*line == ' ' || *line == '\t'))
        line++, n--;
    if (n == 0)
        return;
    char *clean = malloc(4 * n + 1);
    if (!clean) {
        m->malformed++;
        return;
    }
    size_t cn = manta_rec_clean(line, n, clean);
    manta_status st = memchr(line, 0, n) ? MANTA_ERR_FORMAT
                                         : manta_rec_parse(clean, cn, m->cur, NULL);
    if (st != MANTA_OK) {
        m->malformed++;
    } else {
        store(m, clean, cn);
        interpret(m, m->cur, clean, cn);
    }
    manta_rec_free(m->cur);
    free(clean);
}

void mon_model_feed(mon_model *m, const char *data, size_t n, double now)
{
    if (n > 0)
        m->activity = now;
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (!m->skipping && m->pend_n + take > MON_LINE_MAX) {
            m->skipping = true; /* too long: skipped up to its newline */
            m->malformed++;
        }
        if (!m->skipping) {
            memcpy(m->pend + m->pend_n, data, take);
            m->pend_n += take;
        }
        if (!nl)
            return;
        if (!m->skipping)
            read_line(m, m->pend, m->pend_n);
        m->pend_n = 0;
        m->skipping = false;
        data += take + 1;
        n -= take + 1;
    }
}

manta_status mon_model_tail(mon_model *m, const char *path, manta_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return MANTA_OK;
        return manta_err_set(err, MANTA_ERR_IO, "%s: %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        fclose(f);
        return manta_err_set(err, MANTA_ERR_IO, "%s: %s", path, strerror(errno));
    }
    if (m->have_file && ((unsigned long long)st.st_ino != m->ino ||
                         (unsigned long long)st.st_dev != m->dev || (long long)st.st_size < m->off))
        mon_model_reset(m); /* another file, or written anew */
    m->have_file = true;
    m->ino = (unsigned long long)st.st_ino;
    m->dev = (unsigned long long)st.st_dev;
    double mtime = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
    manta_status rc = MANTA_OK;
    if ((long long)st.st_size > m->off) {
        size_t want = (size_t)((long long)st.st_size - m->off);
        if (want > MON_TAIL_CHUNK)
            want = MON_TAIL_CHUNK;
        char *buf = malloc(want);
        if (!buf) {
            fclose(f);
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
        }
        size_t got = 0;
        if (fseeko(f, (off_t)m->off, SEEK_SET) == 0)
            got = fread(buf, 1, want, f);
        if (ferror(f))
            rc = manta_err_set(err, MANTA_ERR_IO, "%s: %s", path, strerror(errno));
        mon_model_feed(m, buf, got, mtime);
        m->off += (long long)got;
        free(buf);
    }
    if (isnan(m->activity) || mtime > m->activity)
        m->activity = mtime;
    fclose(f);
    return rc;
}

/* ---- alerts ---- */

static bool rank_dead(const mon_model *m, const rank_row *r, double now)
{
    return r->error[0] || (!mon_model_finished(m) && !isnan(r->heartbeat) &&
                           now - r->heartbeat > m->ao.rank_timeout_s);
}

static void alert(mon_alert *out, int *n, const char *kind, int rank, long step, const char *fmt,
                  ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static void alert(mon_alert *out, int *n, const char *kind, int rank, long step, const char *fmt,
                  ...)
{
    if (*n >= MON_MAX_ALERTS)
        return;
    mon_alert *a = &out[(*n)++];
    snprintf(a->kind, sizeof a->kind, "%s", kind);
    a->rank = rank;
    a->step = step;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->message, sizeof a->message, fmt, ap);
    va_end(ap);
}

int mon_model_alerts(const mon_model *m, double now, mon_alert *out)
{
    int n = 0;
    if (m->state == ST_FAILED)
        alert(out, &n, "error", m->err_rank, m->err_step, "the job stopped: %.200s", m->err_msg);
    if (m->nan_step >= 0)
        alert(out, &n, "loss_nan", -1, m->nan_step, "the loss is not a number since step %ld",
              m->nan_step);
    if (m->grow_run >= m->ao.grow)
        alert(out, &n, "loss_growing", -1, m->step,
              "the loss grew in %d consecutive reports (since step %ld), now %.5g", m->grow_run,
              m->grow_step, m->loss);
    double rate[MON_MAX_RANKS];
    int k = 0;
    for (int i = 0; i < m->n_ranks; i++)
        if (isfinite(m->ranks[i].images_per_s) && !m->ranks[i].error[0])
            rate[k++] = m->ranks[i].images_per_s;
    if (k >= 2) {
        const double med = manta_sort_median(rate, (size_t)k);
        for (int i = 0; i < m->n_ranks; i++) {
            const rank_row *r = &m->ranks[i];
            if (isfinite(r->images_per_s) && r->images_per_s < med * (1 - m->ao.slow_pct / 100))
                alert(out, &n, "rank_slow", r->rank, m->step,
                      "rank %d (%s) runs %.1f images/s, %.0f%% below the median %.1f", r->rank,
                      r->device[0] ? r->device : "?", r->images_per_s,
                      100 * (1 - r->images_per_s / med), med);
        }
    }
    for (int i = 0; i < m->n_ranks; i++) {
        const rank_row *r = &m->ranks[i];
        if (!r->error[0] && rank_dead(m, r, now))
            alert(out, &n, "rank_dead", r->rank, m->step,
                  "rank %d (%s): no heartbeat for %.0f s", r->rank,
                  r->device[0] ? r->device : "?", now - r->heartbeat);
    }
    if (m->last_seq > 0 && m->count > 0 && !mon_model_finished(m) && !isnan(m->activity) &&
        now - m->activity > m->ao.stall_s)
        alert(out, &n, "stalled", -1, m->step, "no new record for %.0f s (step %ld)",
              now - m->activity, m->step);
    return n;
}

/* ---- JSON out ---- */

void mon_json_str(manta_strbuf *b, const char *s)
{
    if (!s)
        manta_strbuf_printf(b, "null");
    else
        manta_strbuf_json_str(b, s);
}

/* A number; null when absent (NaN stands for absent). */
static void jnum(manta_strbuf *b, double v)
{
    if (isfinite(v))
        manta_strbuf_printf(b, "%.10g", v);
    else
        manta_strbuf_printf(b, "null");
}

/* A number that may be non-finite: NaN and infinities as strings, as read. */
static void jnum_nf(manta_strbuf *b, double v)
{
    if (isfinite(v))
        manta_strbuf_printf(b, "%.10g", v);
    else
        manta_strbuf_printf(b, "\"%s\"", isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
}

void mon_alert_json(const mon_alert *a, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"kind\":\"%s\",\"rank\":", a->kind);
    if (a->rank >= 0)
        manta_strbuf_printf(b, "%d", a->rank);
    else
        manta_strbuf_printf(b, "null");
    manta_strbuf_printf(b, ",\"step\":");
    if (a->step >= 0)
        manta_strbuf_printf(b, "%ld", a->step);
    else
        manta_strbuf_printf(b, "null");
    manta_strbuf_printf(b, ",\"message\":");
    mon_json_str(b, a->message);
    manta_strbuf_printf(b, "}");
}

static const char *state_name(const mon_model *m)
{
    if (m->last_seq == 0 || m->count == 0)
        return "waiting";
    switch (m->state) {
    case ST_DONE:
        return "done";
    case ST_STOPPED:
        return "stopped";
    case ST_FAILED:
        return "failed";
    default:
        return m->steps > 0 && m->step >= m->steps ? "done" : "running";
    }
}

static void jlong_or_null(manta_strbuf *b, long v)
{
    if (v >= 0)
        manta_strbuf_printf(b, "%ld", v);
    else
        manta_strbuf_printf(b, "null");
}

void mon_model_run_json(const mon_model *m, double now, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"name\":");
    mon_json_str(b, m->name);
    manta_strbuf_printf(b, ",\"state\":\"%s\",\"finished\":%s,\"task\":", state_name(m),
                        mon_model_finished(m) ? "true" : "false");
    mon_json_str(b, m->task[0] ? m->task : "classification");
    manta_strbuf_printf(b, ",\"space\":");
    mon_json_str(b, m->space[0] ? m->space : NULL);
    manta_strbuf_printf(b, ",\"schedule\":");
    mon_json_str(b, m->schedule[0] ? m->schedule : NULL);
    manta_strbuf_printf(b, ",\"job\":%s,\"step\":", m->job_json ? m->job_json : "null");
    jlong_or_null(b, m->step);
    manta_strbuf_printf(b, ",\"steps\":");
    jlong_or_null(b, m->steps);
    manta_strbuf_printf(b, ",\"phase\":{\"index\":");
    jlong_or_null(b, m->phase);
    manta_strbuf_printf(b, ",\"count\":");
    jlong_or_null(b, m->n_phases > 0 ? m->n_phases : -1);
    manta_strbuf_printf(b, ",\"name\":");
    mon_json_str(b, m->cur_phase[0] ? m->cur_phase : NULL);
    manta_strbuf_printf(b, ",\"subnets\":");
    jlong_or_null(b, m->phase >= 0 && m->phase < m->n_phases ? m->phase_subnets[m->phase] : -1);
    manta_strbuf_printf(b, ",\"steps\":");
    jlong_or_null(b, m->phase >= 0 && m->phase < m->n_phases ? m->phase_steps[m->phase] : -1);
    manta_strbuf_printf(b, "},\"eta_s\":");
    jnum(b, mon_model_finished(m) ? 0 : m->eta_s);
    manta_strbuf_printf(b, ",\"last\":{\"loss\":");
    if (m->have_progress)
        jnum_nf(b, m->loss);
    else
        manta_strbuf_printf(b, "null");
    const struct {
        const char *k;
        double v;
    } last[] = {{"batch_top1", m->batch_top1}, {"lr", m->lr},
                {"images_per_s", m->images_per_s}, {"step_ms", m->step_ms},
                {"data_wait", m->data_wait},       {"epe", m->epe}};
    for (size_t i = 0; i < sizeof last / sizeof last[0]; i++) {
        manta_strbuf_printf(b, ",\"%s\":", last[i].k);
        jnum(b, last[i].v);
    }
    manta_strbuf_printf(b, ",\"subnets\":");
    if (isnan(m->subnets[SUB_MACS_MEAN])) {
        manta_strbuf_printf(b, "null");
    } else {
        for (int i = 0; i < SUB_N; i++) {
            manta_strbuf_printf(b, "%s\"%s\":", i ? "," : "{", sub_keys[i]);
            jnum(b, m->subnets[i]);
        }
        manta_strbuf_printf(b, "}");
    }
    manta_strbuf_printf(b, "},\"checkpoints\":{\"count\":%ld,\"last\":", m->ckpts);
    mon_json_str(b, m->last_ckpt[0] ? m->last_ckpt : NULL);
    manta_strbuf_printf(b, ",\"step\":");
    jlong_or_null(b, m->last_ckpt_step);
    manta_strbuf_printf(b, "},\"validation\":[");
    for (int i = 0; i < m->n_val; i++) {
        const val_row *v = &m->val[i];
        manta_strbuf_printf(b, "%s{\"phase\":", i ? "," : "");
        mon_json_str(b, v->phase);
        manta_strbuf_printf(b, ",\"step\":");
        jlong_or_null(b, v->step);
        manta_strbuf_printf(b, ",\"metric\":\"%s\",\"largest\":", v->epe ? "epe" : "top1");
        jnum(b, v->largest);
        manta_strbuf_printf(b, ",\"smallest\":");
        jnum(b, v->smallest);
        manta_strbuf_printf(b, "}");
    }
    manta_strbuf_printf(b, "],\"error\":");
    if (m->state == ST_FAILED) {
        manta_strbuf_printf(b, "{\"message\":");
        mon_json_str(b, m->err_msg);
        manta_strbuf_printf(b, ",\"rank\":");
        jlong_or_null(b, m->err_rank);
        manta_strbuf_printf(b, ",\"step\":");
        jlong_or_null(b, m->err_step);
        manta_strbuf_printf(b, "}");
    } else {
        manta_strbuf_printf(b, "null");
    }
    mon_alert al[MON_MAX_ALERTS];
    int na = mon_model_alerts(m, now, al);
    manta_strbuf_printf(b, ",\"alerts\":[");
    for (int i = 0; i < na; i++) {
        if (i)
            manta_strbuf_printf(b, ",");
        mon_alert_json(&al[i], b);
    }
    manta_strbuf_printf(b, "],\"ranks\":%d,\"records\":{\"first\":%llu,\"last\":%llu,"
                           "\"malformed\":%llu,\"generation\":%llu},\"last_activity\":",
                        m->n_ranks,
                        (unsigned long long)(m->count ? m->last_seq - m->count + 1 : m->last_seq + 1),
                        (unsigned long long)m->last_seq, (unsigned long long)m->malformed,
                        (unsigned long long)m->generation);
    jnum(b, m->activity);
    manta_strbuf_printf(b, ",\"age_s\":");
    jnum(b, isnan(m->activity) ? NAN : now - m->activity);
    manta_strbuf_printf(b, ",\"now\":%.3f}", now);
}

void mon_model_records_json(const mon_model *m, uint64_t since, size_t max, manta_strbuf *b)
{
    uint64_t first = m->last_seq - m->count + 1; /* seq of the oldest kept */
    uint64_t from = since + 1 > first ? since + 1 : first;
    manta_strbuf_printf(b, "{\"run\":");
    mon_json_str(b, m->name);
    manta_strbuf_printf(b, ",\"generation\":%llu,\"first\":%llu,\"records\":[",
                        (unsigned long long)m->generation, (unsigned long long)from);
    uint64_t next = since > m->last_seq ? m->last_seq : since;
    size_t k = 0;
    for (uint64_t s = from; s <= m->last_seq && k < max; s++, k++) {
        size_t at = (m->head + (size_t)(s - first)) % MON_MAX_RECORDS;
        manta_strbuf_printf(b, "%s%s", k ? "," : "", m->rec[at]);
        next = s;
    }
    manta_strbuf_printf(b, "],\"last\":%llu,\"next\":%llu}", (unsigned long long)m->last_seq,
                        (unsigned long long)next);
}

void mon_model_ranks_json(const mon_model *m, double now, manta_strbuf *b)
{
    manta_strbuf_printf(b, "{\"run\":");
    mon_json_str(b, m->name);
    manta_strbuf_printf(b, ",\"rank_timeout_s\":%g,\"ranks\":[", m->ao.rank_timeout_s);
    for (int i = 0; i < m->n_ranks; i++) {
        const rank_row *r = &m->ranks[i];
        manta_strbuf_printf(b, "%s{\"rank\":%d,\"device\":", i ? "," : "", r->rank);
        mon_json_str(b, r->device[0] ? r->device : NULL);
        manta_strbuf_printf(b, ",\"host\":");
        mon_json_str(b, r->host[0] ? r->host : NULL);
        const struct {
            const char *k;
            double v;
        } f[] = {{"images_per_s", r->images_per_s},
                 {"compute_s", r->compute_s},
                 {"data_wait_s", r->data_wait_s},
                 {"allreduce_wait_s", r->allreduce_wait_s},
                 {"ring_bytes_per_s", r->ring_bytes_per_s},
                 {"heartbeat", r->heartbeat},
                 {"heartbeat_age_s", isnan(r->heartbeat) ? NAN : now - r->heartbeat}};
        for (size_t j = 0; j < sizeof f / sizeof f[0]; j++) {
            manta_strbuf_printf(b, ",\"%s\":", f[j].k);
            jnum(b, f[j].v);
        }
        manta_strbuf_printf(b, ",\"dead\":%s,\"error\":", rank_dead(m, r, now) ? "true" : "false");
        mon_json_str(b, r->error[0] ? r->error : NULL);
        manta_strbuf_printf(b, "}");
    }
    manta_strbuf_printf(b, "]}");
}

/* ---- Prometheus ---- */

/* A label value with '\\', '"' and newlines escaped. */
static void prom_label(manta_strbuf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            manta_strbuf_printf(b, "\\%c", *s);
        else if (*s == '\n')
            manta_strbuf_printf(b, "\\n");
        else
            manta_strbuf_printf(b, "%c", *s);
    }
}

static void prom_value(manta_strbuf *b, double v)
{
    if (isnan(v))
        manta_strbuf_printf(b, " NaN\n");
    else if (isinf(v))
        manta_strbuf_printf(b, " %cInf\n", v > 0 ? '+' : '-');
    else
        manta_strbuf_printf(b, " %.10g\n", v);
}

static void prom_head(manta_strbuf *b, const char *name, const char *type, const char *help)
{
    manta_strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_run(manta_strbuf *b, const char *name, const mon_model *m, const char *extra,
                     double v)
{
    manta_strbuf_printf(b, "%s{run=\"", name);
    prom_label(b, m->name);
    manta_strbuf_printf(b, "\"%s}", extra ? extra : "");
    prom_value(b, v);
}

static void prom_rank(manta_strbuf *b, const char *name, const mon_model *m, const rank_row *r,
                      double v)
{
    manta_strbuf_printf(b, "%s{run=\"", name);
    prom_label(b, m->name);
    manta_strbuf_printf(b, "\",rank=\"%d\",device=\"", r->rank);
    prom_label(b, r->device[0] ? r->device : "unknown");
    manta_strbuf_printf(b, "\"}");
    prom_value(b, v);
}

enum {
    F_STEP, F_STEPS, F_PHASE, F_LOSS, F_TOP1, F_LR, F_IPS, F_STEP_S, F_WAIT, F_ETA, F_EPE,
    F_CKPT, F_FIN, F_ERR, F_ACT, F_ALERTS, F_RECS, F_BAD, F_N
};

static double run_field(const mon_model *m, int f, double now)
{
    switch (f) {
    case F_STEP: return m->step >= 0 ? (double)m->step : NAN;
    case F_STEPS: return m->steps > 0 ? (double)m->steps : NAN;
    case F_PHASE: return m->phase >= 0 ? m->phase + 1.0 : NAN;
    case F_LOSS: return m->loss; /* written whenever a report was read, NaN too */
    case F_TOP1: return m->batch_top1;
    case F_LR: return m->lr;
    case F_IPS: return m->images_per_s;
    case F_STEP_S: return m->step_ms / 1000;
    case F_WAIT: return m->data_wait;
    case F_ETA: return mon_model_finished(m) ? 0 : m->eta_s;
    case F_EPE: return m->epe;
    case F_CKPT: return (double)m->ckpts;
    case F_FIN: return mon_model_finished(m) ? 1 : 0;
    case F_ERR: return m->state == ST_FAILED ? 1 : 0;
    case F_ACT: return m->activity;
    case F_ALERTS: {
        mon_alert al[MON_MAX_ALERTS];
        return mon_model_alerts(m, now, al);
    }
    case F_RECS: return (double)m->last_seq;
    case F_BAD: return (double)m->malformed;
    default: return NAN;
    }
}

void mon_prometheus(const mon_model *const *m, int n, double now, manta_strbuf *b)
{
    static const struct {
        const char *name, *type, *help;
    } runs[F_N] = {
        {"manta_train_step", "gauge", "Steps done (counted from 1)."},
        {"manta_train_steps", "gauge", "Steps of the schedule."},
        {"manta_train_phase", "gauge", "Phase of progressive shrinking under way (from 1)."},
        {"manta_train_loss", "gauge", "Mean training loss since the last report."},
        {"manta_train_batch_top1_ratio", "gauge", "Top-1 on the training batches since the last report."},
        {"manta_train_learning_rate", "gauge", "Learning rate of the last step."},
        {"manta_train_job_images_per_second", "gauge", "Images (stereo: pairs) per second of the whole job."},
        {"manta_train_step_seconds", "gauge", "Mean wall time of a step."},
        {"manta_train_data_wait_ratio", "gauge", "Share of the wall time spent waiting for data."},
        {"manta_train_eta_seconds", "gauge", "Estimated time left."},
        {"manta_train_epe_pixels", "gauge", "Stereo: end-point error of the last step's batch."},
        {"manta_train_checkpoints_total", "counter", "Checkpoints written."},
        {"manta_train_finished", "gauge", "1 when the run is over (done, stopped or failed)."},
        {"manta_train_failed", "gauge", "1 when an error stopped the run."},
        {"manta_train_last_record_timestamp_seconds", "gauge", "Unix time of the run's last write."},
        {"manta_train_alerts", "gauge", "Alerts that hold now."},
        {"manta_monitor_records_total", "counter", "Records the monitor read."},
        {"manta_monitor_malformed_lines_total", "counter", "Lines the monitor skipped as malformed."},
    };
    for (int f = 0; f < F_N; f++) {
        prom_head(b, runs[f].name, runs[f].type, runs[f].help);
        for (int i = 0; i < n; i++) {
            double v = run_field(m[i], f, now);
            if (f == F_LOSS ? m[i]->have_progress : !isnan(v))
                prom_run(b, runs[f].name, m[i], NULL, v);
        }
    }
    prom_head(b, "manta_train_validation_top1_ratio", "gauge",
              "Validation top-1 of the largest and smallest sub-networks after the last phase.");
    for (int i = 0; i < n; i++)
        for (int k = m[i]->n_val - 1; k >= 0; k--)
            if (!m[i]->val[k].epe) {
                prom_run(b, "manta_train_validation_top1_ratio", m[i], ",subnet=\"largest\"",
                         m[i]->val[k].largest);
                prom_run(b, "manta_train_validation_top1_ratio", m[i], ",subnet=\"smallest\"",
                         m[i]->val[k].smallest);
                break;
            }
    prom_head(b, "manta_train_validation_epe_pixels", "gauge",
              "Stereo: held-out end-point error of the largest and smallest sub-networks after "
              "the last phase.");
    for (int i = 0; i < n; i++)
        for (int k = m[i]->n_val - 1; k >= 0; k--)
            if (m[i]->val[k].epe) {
                prom_run(b, "manta_train_validation_epe_pixels", m[i], ",subnet=\"largest\"",
                         m[i]->val[k].largest);
                prom_run(b, "manta_train_validation_epe_pixels", m[i], ",subnet=\"smallest\"",
                         m[i]->val[k].smallest);
                break;
            }
    static const struct {
        const char *name, *help;
        size_t off;
    } per_rank[] = {
        {"manta_train_images_per_second", "Images per second of a rank.",
         offsetof(rank_row, images_per_s)},
        {"manta_train_compute_seconds", "Mean compute time of a step on a rank.",
         offsetof(rank_row, compute_s)},
        {"manta_train_data_wait_seconds", "Mean wait for data of a step on a rank.",
         offsetof(rank_row, data_wait_s)},
        {"manta_train_allreduce_wait_seconds", "Mean wait for the allreduce of a step on a rank.",
         offsetof(rank_row, allreduce_wait_s)},
        {"manta_train_ring_bytes_per_second", "Ring-allreduce bandwidth of a rank.",
         offsetof(rank_row, ring_bytes_per_s)},
        {"manta_train_heartbeat_timestamp_seconds", "Unix time of a rank's last report.",
         offsetof(rank_row, heartbeat)},
    };
    for (size_t f = 0; f < sizeof per_rank / sizeof per_rank[0]; f++) {
        prom_head(b, per_rank[f].name, "gauge", per_rank[f].help);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < m[i]->n_ranks; k++) {
                const rank_row *r = &m[i]->ranks[k];
                double v = *(const double *)((const char *)r + per_rank[f].off);
                if (!isnan(v))
                    prom_rank(b, per_rank[f].name, m[i], r, v);
            }
    }
    static const struct {
        const char *name, *help;
        int mean, min, max;
    } sizes[] = {
        {"manta_train_subnet_macs", "MACs per image of the sub-networks sampled since the last report.",
         SUB_MACS_MEAN, SUB_MACS_MIN, SUB_MACS_MAX},
        {"manta_train_subnet_parameters", "Parameters of the sub-networks sampled since the last report.",
         SUB_PARAMS_MEAN, SUB_PARAMS_MIN, SUB_PARAMS_MAX},
    };
    for (size_t f = 0; f < sizeof sizes / sizeof sizes[0]; f++) {
        prom_head(b, sizes[f].name, "gauge", sizes[f].help);
        for (int i = 0; i < n; i++) {
            const double *v = m[i]->subnets;
            const struct {
                const char *label;
                int at;
            } st[] = {{",stat=\"mean\"", sizes[f].mean}, {",stat=\"min\"", sizes[f].min},
                      {",stat=\"max\"", sizes[f].max}};
            for (int k = 0; k < 3; k++)
                if (!isnan(v[st[k].at]))
                    prom_run(b, sizes[f].name, m[i], st[k].label, v[st[k].at]);
        }
    }
    prom_head(b, "manta_train_rank_up", "gauge",
              "1 while a rank reports, 0 when its heartbeat is too old or an error names it.");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m[i]->n_ranks; k++)
            prom_rank(b, "manta_train_rank_up", m[i], &m[i]->ranks[k],
                      rank_dead(m[i], &m[i]->ranks[k], now) ? 0 : 1);
}
