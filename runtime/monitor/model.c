/* The training monitor's model of one run (model.h): metrics.jsonl lines in (read with
 * core/records.h), the bounded records and the run's state kept (model_impl.h). */
#include "monitor/model.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/records.h"
#include "monitor/model_impl.h"

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
    m->member_changes = 0;
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
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "monitor: out of memory for run '%s'", name);
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
                               z ? z->macs_mean : NAN,
                               z ? z->macs_min : NAN,
                               z ? z->macs_max : NAN,
                               z ? z->params_mean : NAN,
                               z ? z->params_min : NAN,
                               z ? z->params_max : NAN};
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
    case MANTA_REC_MEMBERSHIP:
        m->member_changes += r->membership.was > 0;
        if (r->membership.world > 0)
            m->world = r->membership.world;
        break;
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
        const progress_view v = {p->step,    p->steps,      p->phase_index, p->phase,
                                 p->loss,    p->batch_top1, p->lr,          p->images_per_s,
                                 p->step_ms, p->data_wait,  p->eta_s,       NAN,
                                 p->time,    &p->subnets,   p->ranks,       p->n_ranks};
        read_progress(m, &v);
        break;
    }
    case MANTA_REC_STEP: {
        const manta_rec_step *p = &r->step;
        const progress_view v = {p->step,   -1,     p->phase_index, p->phase, p->loss,
                                 NAN,       p->lr,  p->pairs_per_s, NAN,      NAN,
                                 NAN,       p->epe, p->time,        NULL,     p->ranks,
                                 p->n_ranks};
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
    manta_status st =
        memchr(line, 0, n) ? MANTA_ERR_FORMAT : manta_rec_parse(clean, cn, m->cur, NULL);
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
