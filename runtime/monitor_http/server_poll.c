/* The monitor server's poll thread (server_impl.h): each run's metrics.jsonl tailed into
 * its model, the alerts checked, --on-alert's command run for the new ones. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/strbuf.h"
#include "monitor/answers.h"
#include "monitor/notify.h"
#include "monitor_http/server_impl.h"

static bool same_alert(const mon_alert *a, const mon_alert *b)
{
    return !strcmp(a->kind, b->kind) && a->rank == b->rank;
}

static void poll_run(mon_server *s, run_slot *r)
{
    manta_err err = {0};
    mon_alert now_al[MON_MAX_ALERTS], fresh[MON_MAX_ALERTS];
    int n_fresh = 0;
    pthread_mutex_lock(&r->mu);
    mon_model_tail(r->m, r->path, &err); /* an unreadable file is shown as no progress */
    int n = mon_model_alerts(r->m, manta_wall_time(), now_al);
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int k = 0; k < r->n_prev && !seen; k++)
            seen = same_alert(&now_al[i], &r->prev[k]);
        if (!seen)
            fresh[n_fresh++] = now_al[i];
    }
    memcpy(r->prev, now_al, (size_t)n * sizeof now_al[0]);
    r->n_prev = n;
    pthread_mutex_unlock(&r->mu);
    for (int i = 0; i < n_fresh && s->on_alert; i++) {
        manta_strbuf b = {0};
        manta_strbuf_printf(&b, "{\"run\":");
        mon_json_str(&b, r->name);
        manta_strbuf_printf(&b, ",\"dir\":");
        mon_json_str(&b, r->dir);
        manta_strbuf_printf(&b, ",\"time\":%.3f,\"alert\":", manta_wall_time());
        mon_alert_json(&fresh[i], &b);
        manta_strbuf_printf(&b, "}\n");
        if (!b.oom && b.p && mon_notify(s->on_alert, b.p, b.n, &err) != MANTA_OK && !s->o.quiet)
            fprintf(stderr, "manta monitor: %s\n", err.msg);
        manta_strbuf_free(&b);
    }
}

static void poll_all(mon_server *s)
{
    for (int i = 0; i < s->n; i++)
        poll_run(s, &s->runs[i]);
    pthread_mutex_lock(&s->mu);
    s->tick++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void mon_server_poll_now(mon_server *s)
{
    if (s)
        poll_all(s);
}

void *mon_poller(void *arg)
{
    mon_server *s = arg;
    for (;;) {
        poll_all(s);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double t = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec + s->o.poll_s;
        ts.tv_sec = (time_t)t;
        ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
        pthread_mutex_lock(&s->mu);
        while (!s->stop)
            if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
                break;
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            return NULL;
    }
}
