/* The training monitor's JSON answers (answers.h), from a run's model (model_impl.h). */
#include "monitor/answers.h"

#include <math.h>
#include <stdio.h>

#include "monitor/alerts.h"
#include "monitor/model_impl.h"

/* The members of a progress record's "subnets" object, in the order of SUB_*. */
static const char *const sub_keys[SUB_N] = {"n",           "macs_mean",  "macs_min",  "macs_max",
                                            "params_mean", "params_min", "params_max"};

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
    case ST_DONE: return "done";
    case ST_STOPPED: return "stopped";
    case ST_FAILED: return "failed";
    default: return m->steps > 0 && m->step >= m->steps ? "done" : "running";
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
    } last[] = {{"batch_top1", m->batch_top1},     {"lr", m->lr},
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
    manta_strbuf_printf(b, "},\"membership\":{\"changes\":%ld,\"world\":%d", m->member_changes,
                        m->world);
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
    manta_strbuf_printf(
        b,
        "],\"ranks\":%d,\"records\":{\"first\":%llu,\"last\":%llu,"
        "\"malformed\":%llu,\"generation\":%llu},\"last_activity\":",
        m->n_ranks, (unsigned long long)(m->count ? m->last_seq - m->count + 1 : m->last_seq + 1),
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
        manta_strbuf_printf(b,
                            ",\"dead\":%s,\"error\":", mon_rank_dead(m, r, now) ? "true" : "false");
        mon_json_str(b, r->error[0] ? r->error : NULL);
        manta_strbuf_printf(b, "}");
    }
    manta_strbuf_printf(b, "]}");
}
