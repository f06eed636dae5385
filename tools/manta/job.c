/* manta train: the job's options, configuration, devices, ring and monitor (job.h). */
#include "job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "cl/devset.h"
#include "cmd.h"
#include "core/clock.h"
#include "core/strbuf.h"
#include "monitor/model.h"

const char *const JOB_MODES[] = {"data", "subnet", NULL};

void job_opts_init(job_opts *j)
{
    *j = (job_opts){.mode = "data", .sync_check = 100, .net = DIST_OVERRIDE_NONE};
    mon_alert_opts_default(&j->alerts);
}

dp_mode job_mode(const job_opts *j) { return !strcmp(j->mode, "subnet") ? DP_SUBNET : DP_DATA; }

int job_config(const char *cmd, job_opts *j, dist_config *cfg)
{
    if (j->timeout_given && !(j->net.timeout_s > 0)) {
        fprintf(stderr, "%s: --timeout needs seconds in (0, 86400], got '%g'\n", cmd,
                j->net.timeout_s);
        return 0;
    }
    j->net.rdzv_bind_all = j->bind_all;
    manta_err err;
    manta_err_clear(&err);
    dist_config_init(cfg);
    if (dist_config_from_env(cfg, NULL, NULL, &err) != MANTA_OK ||
        dist_config_override(cfg, &j->net, &err) != MANTA_OK ||
        (cfg->world_size > 1 && dist_config_check(cfg, &err) != MANTA_OK)) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return 0;
    }
    cfg->event = job_print_event;
    return 1;
}

void job_print_event(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "manta: %s\n", line);
}

int job_open_devices(const char *cmd, const job_opts *j, mcl_dev **devs)
{
    if (!j->devices) {
        devs[0] = cmd_open_device(j->device);
        return devs[0] ? 1 : 0;
    }
    mcl_device_list *list = malloc(sizeof *list);
    if (!list) {
        fprintf(stderr, "%s: out of memory\n", cmd);
        return 0;
    }
    manta_err err;
    manta_err_clear(&err);
    size_t idx[JOB_MAX_DEVICES], n = 0;
    int opened = 0;
    manta_status st = mcl_enumerate(list, &err);
    if (st != MANTA_OK)
        cmd_error("devices", st, &err);
    else if ((st = mcl_select_many(list, j->devices, idx, JOB_MAX_DEVICES, &n, &err)) != MANTA_OK)
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
    for (size_t i = 0; st == MANTA_OK && i < n; i++) {
        st = mcl_open(&list->dev[idx[i]], NULL, &devs[opened], &err);
        if (st == MANTA_OK)
            opened++;
        else
            fprintf(stderr, "%s: device %zu (%s): %s\n", cmd, idx[i], list->dev[idx[i]].name,
                    manta_err_msg(&err, st));
    }
    free(list);
    if (st != MANTA_OK) {
        for (int i = 0; i < opened; i++)
            mcl_close(devs[i]);
        return 0;
    }
    return opened;
}

bool job_join(const char *cmd, const dist_config *cfg, int rank, const char *host,
              ring_comm **ring)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st = ring_create(cfg, ring, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "%s: rank %d (%s): joining the job: %s\n", cmd, rank, host,
                manta_err_msg(&err, st));
        return false;
    }
    if (ring_warning(*ring) && rank == 0)
        fprintf(stderr, "manta: warning: %s\n", ring_warning(*ring));
    return true;
}

bool job_monitor_start(const char *cmd, const job_opts *j, const char *dir, mon_server **out)
{
    *out = NULL;
    if (!j->monitor)
        return true;
    mon_options mo;
    mon_options_default(&mo);
    mo.listen = j->monitor;
    mo.on_alert = j->on_alert;
    mo.alerts = j->alerts;
    manta_err err;
    manta_err_clear(&err);
    const char *dirs[1] = {dir};
    if (mon_server_start(&mo, dirs, 1, out, &err) != MANTA_OK) {
        fprintf(stderr, "%s: --monitor: %s\n", cmd, err.msg);
        return false;
    }
    char url[128];
    mon_server_url(*out, url, sizeof url);
    fprintf(stderr, "%s: monitor at %s%s\n", cmd, url, mo.token && *mo.token ? "?token=..." : "");
    return true;
}

void job_monitor_stop(mon_server *m)
{
    if (!m)
        return;
    mon_server_poll_now(m); /* the last records read before it goes */
    mon_server_stop(m);
}

void job_outputs_close(const char *cmd, mon_server *monitor, FILE *metrics,
                       manta_tfevents *events)
{
    job_monitor_stop(monitor);
    if (metrics)
        fclose(metrics);
    manta_err err;
    if (manta_tfevents_close(events, &err) != MANTA_OK)
        fprintf(stderr, "%s: warning: TensorBoard events: %s\n", cmd, err.msg);
}

void job_leave(dp_trainer *dp, ring_comm *ring, mcl_dev **devs, int n_dev, dist_config *cfg)
{
    dp_destroy(dp);
    ring_destroy(ring);
    for (int i = 0; i < n_dev; i++)
        mcl_close(devs[i]);
    sodium_memzero(cfg->key, sizeof cfg->key);
}

void job_record(const job_log *l, const char *line)
{
    if (l->rank != 0 || !l->metrics)
        return;
    fprintf(l->metrics, "%s\n", line);
    fflush(l->metrics);
}

/* Record the string builder's line, then free it. */
static void record_buf(const job_log *l, manta_strbuf *b)
{
    if (!b->oom)
        job_record(l, b->p);
    manta_strbuf_free(b);
}

void job_fail(const job_log *l, long step, const char *fmt, ...)
{
    char msg[MANTA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", l->cmd, msg);
    if (l->rank != 0 || !l->metrics)
        return;
    int rank = l->rank; /* a peer the message names ("rank N (addr:port)") failed */
    for (const char *p = strstr(msg, "rank "); p; p = strstr(p + 5, "rank ")) {
        char *end;
        long k = strtol(p + 5, &end, 10);
        if (end != p + 5 && k != l->rank && k >= 0 && k < 1 << 20) {
            rank = (int)k;
            break;
        }
    }
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "{\"event\":\"error\",\"time\":%.3f,\"step\":%ld,\"rank\":%d,"
                            "\"host\":", manta_wall_time(), step, rank);
    mon_json_str(&b, l->host);
    manta_strbuf_printf(&b, ",\"message\":");
    mon_json_str(&b, msg);
    manta_strbuf_printf(&b, "}");
    record_buf(l, &b);
    if (l->monitor)
        mon_server_poll_now(l->monitor);
}

void job_record_job(const job_log *l, const job_header *h)
{
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "{\"event\":\"job\",\"time\":%.3f,\"task\":", manta_wall_time());
    mon_json_str(&b, h->task);
    manta_strbuf_printf(&b, ",\"space\":");
    mon_json_str(&b, h->space);
    manta_strbuf_printf(&b, ",\"schedule\":");
    mon_json_str(&b, h->schedule);
    manta_strbuf_printf(&b, ",\"data\":");
    mon_json_str(&b, h->data);
    manta_strbuf_printf(&b, ",\"steps\":%ld,\"start_step\":%ld,\"batch\":%d,\"world_size\":%d,"
                            "\"devices_per_rank\":%d,\"replicas\":%d,\"mode\":\"%s\",\"host\":",
                        ofa_schedule_total_steps(h->sched), h->start, h->batch, h->world_size,
                        h->n_dev, h->replicas, h->mode == DP_DATA ? "data" : "subnet");
    mon_json_str(&b, l->host);
    manta_strbuf_printf(&b, ",\"devices\":[");
    for (int i = 0; i < h->n_dev; i++) {
        manta_strbuf_printf(&b, i ? "," : "");
        mon_json_str(&b, mcl_info(h->devs[i])->name);
    }
    manta_strbuf_printf(&b, "],\"device_bytes\":[");
    for (int i = 0; i < h->n_dev; i++) {
        mcl_stats st;
        mcl_get_stats(h->devs[i], &st);
        manta_strbuf_printf(&b, "%s%llu", i ? "," : "", st.bytes_allocated);
    }
    manta_strbuf_printf(&b, "],\"phases\":[");
    for (int i = 0; i < h->sched->n_phases; i++) {
        const ofa_phase *ph = &h->sched->phase[i];
        manta_strbuf_printf(&b, "%s{\"name\":", i ? "," : "");
        mon_json_str(&b, ph->name);
        manta_strbuf_printf(&b, ",\"steps\":%ld,\"subnets\":%d,\"lr\":%g,\"distill\":%s}",
                            ph->steps, ph->subnets, (double)ph->lr, ph->distill ? "true" : "false");
    }
    manta_strbuf_printf(&b, "]}");
    record_buf(l, &b);
}

void job_record_checkpoint(const job_log *l, const char *name, long step)
{
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "{\"event\":\"checkpoint\",\"time\":%.3f,\"step\":%ld,\"path\":",
                        manta_wall_time(), step);
    mon_json_str(&b, name);
    manta_strbuf_printf(&b, "}");
    record_buf(l, &b);
}

void job_record_done(const job_log *l, long step, double seconds)
{
    char ln[160];
    snprintf(ln, sizeof ln, "{\"event\":\"done\",\"time\":%.3f,\"step\":%ld,\"seconds\":%.1f}",
             manta_wall_time(), step, seconds);
    job_record(l, ln);
}

/* Samples per second of a rank: its samples over the step before's time (the last step's
 * compute and data wait before the first has one). */
static double rank_rate(const dp_rank_figures *f, int samples_per_rank)
{
    double step = f->step_s > 0 ? f->step_s : f->compute_s + f->data_wait_s;
    return step > 0 ? samples_per_rank / step : 0.0;
}

size_t job_rank_scalars(const dp_trainer *dp, int samples_per_rank, char (*tags)[JOB_TAG_BYTES],
                        manta_tfscalar *v, size_t cap)
{
    dp_rank_figures f[DIST_MAX_WORLD];
    int n = dp_rank_figures_get(dp, f, DIST_MAX_WORLD);
    size_t k = 0;
    for (int r = 0; r < n && r < DIST_MAX_WORLD && k + JOB_RANK_SCALARS <= cap; r++) {
        const char *name[JOB_RANK_SCALARS] = {"images_per_s", "compute_s", "data_wait_s",
                                              "allreduce_wait_s"};
        const double val[JOB_RANK_SCALARS] = {rank_rate(&f[r], samples_per_rank), f[r].compute_s,
                                              f[r].data_wait_s, f[r].allreduce_s};
        for (int j = 0; j < JOB_RANK_SCALARS; j++, k++) {
            snprintf(tags[k], JOB_TAG_BYTES, "rank%d/%s", r, name[j]);
            v[k] = (manta_tfscalar){tags[k], (float)val[j]};
        }
    }
    return k;
}

void job_events(manta_tfevents **ev, const char *cmd, long step, const manta_tfscalar *v, size_t n)
{
    if (!*ev)
        return;
    manta_err err;
    if (manta_tfevents_append(*ev, step, manta_wall_time(), v, n, &err) == MANTA_OK)
        return;
    fprintf(stderr, "%s: warning: TensorBoard events: %s; no more events\n", cmd, err.msg);
    manta_tfevents_close(*ev, NULL);
    *ev = NULL;
}

void job_ranks_json(manta_strbuf *b, const dp_trainer *dp, const job_log *l, mcl_dev *dev,
                    int samples_per_rank, double now)
{
    dp_rank_figures f[DIST_MAX_WORLD];
    int n = dp_rank_figures_get(dp, f, DIST_MAX_WORLD);
    n = n < DIST_MAX_WORLD ? n : DIST_MAX_WORLD;
    manta_strbuf_printf(b, ",\"ranks\":[");
    for (int r = 0; r < n; r++) {
        manta_strbuf_printf(b, "%s{\"rank\":%d,\"device\":", r ? "," : "", r);
        if (r == l->rank)
            mon_json_str(b, mcl_info(dev)->name);
        else
            manta_strbuf_printf(b, "null");
        manta_strbuf_printf(b, ",\"host\":");
        if (r == l->rank)
            mon_json_str(b, l->host);
        else
            manta_strbuf_printf(b, "null");
        manta_strbuf_printf(b,
                            ",\"images_per_s\":%.2f,\"compute_s\":%.6f,\"data_wait_s\":%.6f,"
                            "\"allreduce_wait_s\":%.6f,\"ring_bytes_per_s\":",
                            rank_rate(&f[r], samples_per_rank), f[r].compute_s,
                            f[r].data_wait_s, f[r].allreduce_s);
        if (n > 1 && f[r].allreduce_s > 0)
            manta_strbuf_printf(b, "%.0f", f[r].allreduce_bytes / f[r].allreduce_s);
        else
            manta_strbuf_printf(b, "null");
        manta_strbuf_printf(b, ",\"heartbeat\":%.3f}", now);
    }
    manta_strbuf_printf(b, "]");
}
