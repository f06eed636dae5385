/* manta train: the job's options, configuration, devices, ring and monitor (job.h). */
#include "job.h"

#include <math.h>
#include <signal.h>
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
#include "train/checkpoint.h"

const char *const JOB_MODES[] = {"data", "subnet", NULL};
const char *const JOB_COMPRESS[] = {"none", "fp16", "bf16", "int8", NULL};
const char *const JOB_AGGREGATE[] = {"float", "fixed", NULL};

/* Set by SIGINT/SIGTERM (job_stop_signals()). */
static volatile sig_atomic_t stop_requested;

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

volatile sig_atomic_t *job_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return &stop_requested;
}

void job_opts_init(job_opts *j)
{
    *j = (job_opts){.mode = "data",
                    .compress = "none",
                    .aggregate = "float",
                    .sync_check = 100,
                    .net = DIST_OVERRIDE_NONE};
    mon_alert_opts_default(&j->alerts);
}

dp_mode job_mode(const job_opts *j) { return !strcmp(j->mode, "subnet") ? DP_SUBNET : DP_DATA; }

int job_config(const char *cmd, job_opts *j, dist_config *cfg)
{
    if (!strcmp(j->aggregate, "fixed") && strcmp(j->compress, "none")) {
        fprintf(stderr,
                "%s: --aggregate fixed sends exact int32 fixed-point sums and cannot be combined "
                "with --compress %s (choose one)\n",
                cmd, j->compress);
        return 0;
    }
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
    cfg->wire = DIST_WIRE_F32;
    if (!strcmp(j->aggregate, "fixed"))
        cfg->wire = DIST_WIRE_FIXED;
    for (int w = 1; w < DIST_WIRE_COUNT; w++)
        if (!strcmp(j->compress, dist_wire_name((dist_wire)w)))
            cfg->wire = (dist_wire)w;
    cfg->event = job_print_event;
    return 1;
}

void job_print_event(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "manta train: %s\n", line);
}

int job_open_devices(const char *cmd, const job_opts *j, mcl_dev **devs)
{
    if (!j->devices) {
        devs[0] = cmd_open_device("train", j->device);
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

bool job_join(const char *cmd, const dist_config *cfg, int rank, const char *host, ring_comm **ring)
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
        fprintf(stderr, "manta train: warning: %s\n", ring_warning(*ring));
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

void job_outputs_close(const char *cmd, mon_server *monitor, FILE *metrics, manta_tfevents *events)
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

manta_status job_ef_gather(dp_trainer *dp, int rank, float **ef, size_t *n, manta_err *err)
{
    const size_t per = dp_ef_count(dp);
    if (!per)
        return MANTA_OK;
    const size_t all = per * (size_t)(dp_replicas(dp) / dp_local_replicas(dp));
    if (rank == 0 && !*ef && !(*ef = malloc(all * sizeof **ef)))
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "error feedback: out of host memory");
    MANTA_TRY(dp_ef_gather(dp, rank == 0 ? *ef : NULL, err));
    if (rank == 0)
        *n = all;
    return MANTA_OK;
}

bool job_ef_resume(const char *cmd, dp_trainer *dp, const char *ckpt)
{
    if (!dp_ef_count(dp))
        return true;
    float *all = NULL;
    size_t n = 0;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = train_ckpt_read_ef(ckpt, &all, &n, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "%s: %s\n", cmd, err.msg);
        return false;
    }
    if (!all || dp_ef_load(dp, all, n, &err) != MANTA_OK)
        fprintf(stderr, "%s: %s: %s: the int8 error feedback starts from zero\n", cmd, ckpt,
                all ? err.msg : "no error feedback saved (another --compress)");
    free(all);
    return true;
}

void job_write(const job_log *l, const manta_rec *r)
{
    if (l->rank != 0 || !l->metrics)
        return;
    manta_err err;
    manta_err_clear(&err);
    if (manta_rec_write(l->metrics, r, &err) != MANTA_OK)
        fprintf(stderr, "%s: warning: metrics.jsonl: %s\n", l->cmd, err.msg);
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
    manta_rec r = {.kind = MANTA_REC_ERROR};
    r.error = (manta_rec_error){.time = manta_wall_time(), .step = step, .rank = rank};
    snprintf(r.error.host, sizeof r.error.host, "%s", l->host);
    snprintf(r.error.message, sizeof r.error.message, "%s", msg);
    job_write(l, &r);
    if (l->monitor)
        mon_server_poll_now(l->monitor);
}

void job_record_job(const job_log *l, const job_header *h)
{
    manta_rec *r = calloc(1, sizeof *r); /* the job record holds the device names: large */
    if (!r) {
        fprintf(stderr, "%s: warning: metrics.jsonl: out of memory for the job record\n", l->cmd);
        return;
    }
    r->kind = MANTA_REC_JOB;
    manta_rec_job *j = &r->job;
    j->schema = MANTA_REC_SCHEMA;
    j->time = manta_wall_time();
    snprintf(j->task, sizeof j->task, "%s", h->task);
    snprintf(j->space, sizeof j->space, "%s", h->space);
    snprintf(j->schedule, sizeof j->schedule, "%s", h->schedule);
    snprintf(j->data, sizeof j->data, "%s", h->data);
    j->steps = ofa_schedule_total_steps(h->sched);
    j->start_step = h->start;
    j->batch = h->batch;
    j->world_size = h->world_size;
    j->devices_per_rank = h->n_dev;
    j->replicas = h->replicas;
    snprintf(j->mode, sizeof j->mode, "%s", h->mode == DP_DATA ? "data" : "subnet");
    snprintf(j->host, sizeof j->host, "%s", l->host);
    j->n_devices = h->n_dev < MANTA_REC_MAX_DEVICES ? h->n_dev : MANTA_REC_MAX_DEVICES;
    for (int i = 0; i < j->n_devices; i++) {
        mcl_stats st;
        mcl_get_stats(h->devs[i], &st);
        snprintf(j->devices[i], sizeof j->devices[i], "%s", mcl_info(h->devs[i])->name);
        j->device_bytes[i] = st.bytes_allocated;
    }
    j->n_phases =
        h->sched->n_phases < MANTA_REC_MAX_PHASES ? h->sched->n_phases : MANTA_REC_MAX_PHASES;
    for (int i = 0; i < j->n_phases; i++) {
        const ofa_phase *ph = &h->sched->phase[i];
        manta_rec_phase *o = &j->phases[i];
        snprintf(o->name, sizeof o->name, "%s", ph->name);
        o->steps = ph->steps;
        o->subnets = ph->subnets;
        o->lr = (double)ph->lr;
        o->distill = ph->distill;
    }
    job_write(l, r);
    free(r);
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

int job_ranks(const dp_trainer *dp, const job_log *l, mcl_dev *dev, int samples_per_rank,
              double now, manta_rec_rank **out)
{
    dp_rank_figures *f = malloc(DIST_MAX_WORLD * sizeof *f);
    int n = f ? dp_rank_figures_get(dp, f, DIST_MAX_WORLD) : 0;
    n = n < DIST_MAX_WORLD ? n : DIST_MAX_WORLD;
    *out = n > 0 ? calloc((size_t)n, sizeof **out) : NULL;
    if (!*out)
        n = 0;
    for (int r = 0; r < n; r++) {
        manta_rec_rank *o = &(*out)[r];
        o->rank = r;
        if (r == l->rank) {
            snprintf(o->device, sizeof o->device, "%s", mcl_info(dev)->name);
            snprintf(o->host, sizeof o->host, "%s", l->host);
        }
        o->images_per_s = rank_rate(&f[r], samples_per_rank);
        o->compute_s = f[r].compute_s;
        o->data_wait_s = f[r].data_wait_s;
        o->allreduce_wait_s = f[r].allreduce_s;
        o->ring_bytes_per_s =
            n > 1 && f[r].allreduce_s > 0 ? (double)f[r].allreduce_bytes / f[r].allreduce_s : NAN;
        o->heartbeat = now;
        o->step_ms = NAN; /* in compute_s and the waits */
    }
    free(f);
    return n;
}
