/* The training monitor's alerts (alerts.h), from a run's model (model_impl.h). */
#include "monitor/alerts.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "core/stats.h"
#include "monitor/model_impl.h"

void mon_alert_opts_default(mon_alert_opts *o)
{
    *o = (mon_alert_opts){.grow = 5, .slow_pct = 25, .stall_s = 300, .rank_timeout_s = 120};
}

bool mon_rank_dead(const mon_model *m, const rank_row *r, double now)
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
        if (!r->error[0] && mon_rank_dead(m, r, now))
            alert(out, &n, "rank_dead", r->rank, m->step, "rank %d (%s): no heartbeat for %.0f s",
                  r->rank, r->device[0] ? r->device : "?", now - r->heartbeat);
    }
    if (m->last_seq > 0 && m->count > 0 && !mon_model_finished(m) && !isnan(m->activity) &&
        now - m->activity > m->ao.stall_s)
        alert(out, &n, "stalled", -1, m->step, "no new record for %.0f s (step %ld)",
              now - m->activity, m->step);
    return n;
}
