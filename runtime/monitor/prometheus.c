/* The training monitor's Prometheus text (prometheus.h), from the runs' models
 * (model_impl.h). */
#include "monitor/prometheus.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "monitor/alerts.h"
#include "monitor/model_impl.h"

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
    F_STEP,
    F_STEPS,
    F_PHASE,
    F_LOSS,
    F_TOP1,
    F_LR,
    F_IPS,
    F_STEP_S,
    F_WAIT,
    F_ETA,
    F_EPE,
    F_CKPT,
    F_MEMBER,
    F_WORLD,
    F_FIN,
    F_ERR,
    F_ACT,
    F_ALERTS,
    F_RECS,
    F_BAD,
    F_N
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
    case F_MEMBER: return (double)m->member_changes;
    case F_WORLD: return m->world > 0 ? (double)m->world : NAN;
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
        {"manta_train_batch_top1_ratio", "gauge",
         "Top-1 on the training batches since the last report."},
        {"manta_train_learning_rate", "gauge", "Learning rate of the last step."},
        {"manta_train_job_images_per_second", "gauge",
         "Images (stereo: pairs) per second of the whole job."},
        {"manta_train_step_seconds", "gauge", "Mean wall time of a step."},
        {"manta_train_data_wait_ratio", "gauge", "Share of the wall time spent waiting for data."},
        {"manta_train_eta_seconds", "gauge", "Estimated time left."},
        {"manta_train_epe_pixels", "gauge", "Stereo: end-point error of the last step's batch."},
        {"manta_train_checkpoints_total", "counter", "Checkpoints written."},
        {"manta_train_membership_changes_total", "counter",
         "Elastic jobs: times the ring formed again (a rank died or joined)."},
        {"manta_train_world_size", "gauge", "Ranks of the job (elastic jobs: of the ring now)."},
        {"manta_train_finished", "gauge", "1 when the run is over (done, stopped or failed)."},
        {"manta_train_failed", "gauge", "1 when an error stopped the run."},
        {"manta_train_last_record_timestamp_seconds", "gauge",
         "Unix time of the run's last write."},
        {"manta_train_alerts", "gauge", "Alerts that hold now."},
        {"manta_monitor_records_total", "counter", "Records the monitor read."},
        {"manta_monitor_malformed_lines_total", "counter",
         "Lines the monitor skipped as malformed."},
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
        {"manta_train_subnet_macs",
         "MACs per image of the sub-networks sampled since the last report.", SUB_MACS_MEAN,
         SUB_MACS_MIN, SUB_MACS_MAX},
        {"manta_train_subnet_parameters",
         "Parameters of the sub-networks sampled since the last report.", SUB_PARAMS_MEAN,
         SUB_PARAMS_MIN, SUB_PARAMS_MAX},
    };
    for (size_t f = 0; f < sizeof sizes / sizeof sizes[0]; f++) {
        prom_head(b, sizes[f].name, "gauge", sizes[f].help);
        for (int i = 0; i < n; i++) {
            const double *v = m[i]->subnets;
            const struct {
                const char *label;
                int at;
            } st[] = {{",stat=\"mean\"", sizes[f].mean},
                      {",stat=\"min\"", sizes[f].min},
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
                      mon_rank_dead(m[i], &m[i]->ranks[k], now) ? 0 : 1);
}
