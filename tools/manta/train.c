/* manta train: OFA supernet training with progressive shrinking on one or
 * several devices of this process (--devices) and ranks of a distributed job
 * (torchrun/SLURM variables or flags; runtime/train/dp.h). Checkpoints every
 * phase (and periodically) into --out (rank 0); --resume continues from the
 * latest one and ends with the same weights as an uninterrupted run. */
#define _DEFAULT_SOURCE

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "cmd.h"
#include "core/fileio.h"
#include "data/prefetch.h"
#include "dist/ring.h"
#include "rundata.h"
#include "train/dp.h"
#include "train/ofa_train.h"
#include "train/trainstate.h"

#define MAX_DEVICES 64

typedef struct train_opts {
    const char *space, *data, *schedule, *device, *devices, *out, *secret_file;
    int batch, log_every, json, resume, val, eval_images, recal_images, channels;
    long ckpt_every, stop_after, sync_check;
    unsigned long long seed;
    double lr_scale;
    dp_mode mode;
    int mode_set;
    /* distributed job: flags override the environment (-1 / "" / 0: not given) */
    int world, rank, master_port, rdzv_bind_all;
    char master[256], iface[64], ring_addr[64], job[DIST_JOB_MAX];
    double timeout;
    long bucket_kib; /* gradient bucket size (KiB) */
    int no_overlap;
} train_opts;

/* Set by SIGINT/SIGTERM; the loop checkpoints and stops at the next step. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta train [OPTIONS]\n\n"
            "Trains an OFA supernet with progressive shrinking (full network, then elastic\n"
            "kernel, depth and expand ratio; distillation from the full network), checkpointing\n"
            "every phase, and reports top-1 of the largest and smallest sub-networks on the\n"
            "validation split after each phase.\n\n"
            "  --space S          search space: cpu-default (default), mbv3-w1.0 or a spec file\n"
            "  --data D           fashion-mnist (default), an IDX folder, or a JPEG folder with one\n"
            "                     subfolder per class (D/train and D/test, or D alone)\n"
            "  --channels N       1 or 3: channels JPEG images are decoded to (default 3)\n"
            "  --schedule P       smoke (seconds, for tests), quick (default; minutes), full\n"
            "  --batch N          images per step (default 64)\n"
            "  --seed N           seed of weights, data order, sampling (default 1)\n"
            "  --val N            training images held out for validation (default 10000)\n"
            "  --eval-images N    validation images per evaluation after a phase (default 2000;\n"
            "                     0: no evaluation)\n"
            "  --recal-images N   images for BN re-calibration before an evaluation (default 2000)\n"
            "  --out DIR          checkpoints and metrics.jsonl (default runs/<space>-<schedule>)\n"
            "  --resume           continue from DIR/latest.ckpt\n"
            "  --ckpt-every N     also checkpoint every N steps (default 500; 0: phases only)\n"
            "  --stop-after N     stop after N steps of this invocation, checkpointing (tests)\n"
            "  --lr-scale F       multiply every phase's learning rate by F (default 1; kept in\n"
            "                     the checkpoint)\n"
            "  --log-every N      progress line every N steps (default 20)\n"
            "  --device SPEC      OpenCL device (default: MANTA_DEVICE, else 0)\n"
            "  --devices LIST     several devices of this process, one host thread each: 'all' or\n"
            "                     a comma-separated list of device specs ('0,1'); overrides --device\n"
            "  --mode data|subnet with several devices or ranks: data (default) = every replica\n"
            "                     trains the same sub-networks on its shard of the batch (synchronised\n"
            "                     batch norm; equals one device on the whole batch); subnet = each\n"
            "                     rank samples its own sub-networks, its devices split its share\n"
            "  --sync-check N     compare the replicas' weight hashes every N steps and at every\n"
            "                     checkpoint (default 100; 0: checkpoints only)\n"
            "  --bucket-kib N     gradient buckets of about N KiB, allreduced across ranks during\n"
            "                     the backward (default 1024; 0: one bucket)\n"
            "  --no-overlap       allreduce the buckets after the backward (same results)\n"
            "  --json             progress as JSON lines on stdout\n"
            "Distributed (one process per rank; 'manta launch -n N -- manta train ...' starts them\n"
            "locally). The job comes from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun) or\n"
            "SLURM_PROCID/SLURM_NTASKS/SLURM_JOB_NODELIST, MANTA_SECRET[_FILE], overridden by:\n"
            "  --world N --rank R --master HOST[:PORT] --iface NAME --ring-addr A --job ID\n"
            "  --secret-file PATH --rdzv-bind-all --timeout S (network deadline, default 60)\n"
            "--batch is the global batch: a multiple of ranks x devices. Rank 0 writes checkpoints\n"
            "and metrics; every rank resumes from DIR/latest.ckpt.\n"
            "SIGINT/SIGTERM checkpoint and stop at the next step; --resume continues.\n");
}

static int parse_args(int argc, char **argv, train_opts *o)
{
    *o = (train_opts){.space = "cpu-default", .data = "fashion-mnist", .schedule = "quick",
                      .batch = 64, .log_every = 20, .val = 10000, .eval_images = 2000,
                      .recal_images = 2000, .channels = 3, .ckpt_every = 500, .seed = 1,
                      .sync_check = 100, .world = -1, .rank = -1, .lr_scale = 1.0,
                      .bucket_kib = (long)(DP_BUCKET_BYTES >> 10)};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        } else if (!strcmp(a, "--resume")) {
            o->resume = 1;
            continue;
        } else if (!strcmp(a, "--rdzv-bind-all")) {
            o->rdzv_bind_all = 1;
            continue;
        } else if (!strcmp(a, "--devices") && v) {
            o->devices = v;
        } else if (!strcmp(a, "--mode") && v) {
            if (strcmp(v, "data") && strcmp(v, "subnet")) {
                fprintf(stderr, "manta train: --mode must be 'data' or 'subnet', got '%s'\n", v);
                return -1;
            }
            o->mode = !strcmp(v, "data") ? DP_DATA : DP_SUBNET;
            o->mode_set = 1;
        } else if (!strcmp(a, "--bucket-kib")) {
            if (!cmd_parse_long("train", a, v, 0, 1L << 30, &o->bucket_kib))
                return -1;
        } else if (!strcmp(a, "--no-overlap")) {
            o->no_overlap = 1;
            continue;
        } else if (!strcmp(a, "--sync-check")) {
            if (!cmd_parse_long("train", a, v, 0, 1L << 40, &o->sync_check))
                return -1;
        } else if (!strcmp(a, "--world") || !strcmp(a, "--rank")) {
            if (!cmd_parse_long("train", a, v, !strcmp(a, "--world") ? 1 : 0, DIST_MAX_WORLD, &x))
                return -1;
            *(!strcmp(a, "--world") ? &o->world : &o->rank) = (int)x;
        } else if (!strcmp(a, "--master") && v) {
            snprintf(o->master, sizeof o->master, "%s", v);
            char *colon = strrchr(o->master, ':');
            if (colon) {
                *colon = '\0';
                if (!cmd_parse_long("train", "--master port", colon + 1, 1, 65535, &x))
                    return -1;
                o->master_port = (int)x;
            }
        } else if (!strcmp(a, "--iface") && v) {
            snprintf(o->iface, sizeof o->iface, "%s", v);
        } else if (!strcmp(a, "--ring-addr") && v) {
            snprintf(o->ring_addr, sizeof o->ring_addr, "%s", v);
        } else if (!strcmp(a, "--job") && v) {
            snprintf(o->job, sizeof o->job, "%s", v);
        } else if (!strcmp(a, "--secret-file") && v) {
            o->secret_file = v;
        } else if (!strcmp(a, "--lr-scale") && v) {
            char *end;
            o->lr_scale = strtod(v, &end);
            if (end == v || *end || !(o->lr_scale > 0 && o->lr_scale <= 1000)) {
                fprintf(stderr, "manta train: --lr-scale needs a factor in (0, 1000], got '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--timeout") && v) {
            char *end;
            o->timeout = strtod(v, &end);
            if (end == v || *end || !(o->timeout > 0 && o->timeout <= 86400)) {
                fprintf(stderr, "manta train: --timeout needs seconds in (0, 86400], got '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--space") && v) {
            o->space = v;
        } else if (!strcmp(a, "--data") && v) {
            o->data = v;
        } else if (!strcmp(a, "--schedule") && v) {
            o->schedule = v;
        } else if (!strcmp(a, "--device") && v) {
            o->device = v;
        } else if (!strcmp(a, "--out") && v) {
            o->out = v;
        } else if (!strcmp(a, "--channels") || !strcmp(a, "--batch") || !strcmp(a, "--val") ||
                   !strcmp(a, "--eval-images") || !strcmp(a, "--recal-images") ||
                   !strcmp(a, "--log-every") || !strcmp(a, "--seed")) {
            long lo = !strcmp(a, "--val") || !strcmp(a, "--eval-images") ||
                              !strcmp(a, "--recal-images") || !strcmp(a, "--seed") ? 0 : 1;
            if (!cmd_parse_long("train", a, v, lo, !strcmp(a, "--channels") ? 3 : 2147483647L, &x))
                return -1;
            if (!strcmp(a, "--channels"))
                o->channels = (int)x;
            else if (!strcmp(a, "--batch"))
                o->batch = (int)x;
            else if (!strcmp(a, "--val"))
                o->val = (int)x;
            else if (!strcmp(a, "--eval-images"))
                o->eval_images = (int)x;
            else if (!strcmp(a, "--recal-images"))
                o->recal_images = (int)x;
            else if (!strcmp(a, "--log-every"))
                o->log_every = (int)x;
            else
                o->seed = (unsigned long long)x;
        } else if (!strcmp(a, "--ckpt-every")) {
            if (!cmd_parse_long("train", a, v, 0, 1L << 40, &o->ckpt_every))
                return -1;
        } else if (!strcmp(a, "--stop-after")) {
            if (!cmd_parse_long("train", a, v, 1, 1L << 40, &o->stop_after))
                return -1;
        } else {
            fprintf(stderr, "manta train: %s '%s' (see --help)\n",
                    v || strncmp(a, "--", 2) ? "unknown option" : "missing value for", a);
            return -1;
        }
        i++;
    }
    if (o->channels == 2) {
        fprintf(stderr, "manta train: --channels must be 1 or 3\n");
        return -1;
    }
    return 1;
}

/* Resolution of the batch (epoch, batch): that of global step epoch * per_epoch + batch. */
typedef struct res_ctx {
    const ofa_trainer *t;
    long per_epoch;
} res_ctx;

static int batch_resolution(void *ctx, int64_t epoch, int64_t batch)
{
    const res_ctx *c = ctx;
    return ofa_trainer_resolution(c->t, (long)(epoch * c->per_epoch + batch));
}

/* Top-1 of the largest and smallest sub-networks on the validation split. */
static int evaluate_phase(mcl_dev *d, ofa_trainer *t, run_data *rd, const train_opts *o,
                          int phase, double top1[2])
{
    const ofa_space *sp = ofa_supernet_space(ofa_trainer_net(t));
    const int batch = ofa_trainer_batch(t); /* this device's shard size */
    int *scratch = malloc((size_t)batch * sizeof *scratch);
    if (!scratch)
        return 0;
    int ok = 1;
    for (int which = 0; which < 2 && ok; which++) {
        ofa_arch a;
        (which == 0 ? ofa_arch_max : ofa_arch_min)(sp, 0, &a);
        eval_source recal = {&rd->train, rd->split.train, rd->split.n_train, batch,
                             &rd->aug_train, {0, 0}, scratch};
        eval_source val = {&rd->train, rd->split.val, rd->split.n_val, batch, &rd->aug_eval,
                           {0, 0}, scratch};
        manta_rng_seed(&recal.rng, o->seed, 0xeca1);
        long n_eval = o->eval_images < rd->split.n_val ? o->eval_images : rd->split.n_val;
        manta_status st = ofa_trainer_evaluate(t, &a, eval_source_batch, &recal, o->recal_images,
                                               eval_source_batch, &val, n_eval, &top1[which], NULL);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train: evaluating after phase %d: %s\n", phase + 1,
                    manta_err_msg(mcl_err(d), st));
            ok = 0;
        }
    }
    free(scratch);
    return ok;
}

static int save(const char *dir, const char *name, ofa_trainer *t, mcl_dev *d, train_meta *m,
                const loader_state *ls, long next_step)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    m->step = next_step;
    m->has_teacher = ofa_trainer_has_teacher(t);
    m->loader = *ls;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = trainstate_save(path, t, d, m, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: checkpoint %s: %s\n", path, manta_err_msg(&err, st));
        return 0;
    }
    return 1;
}

/* The job's configuration: environment, then the flags. 0 on an error (printed). */
static int job_config(const train_opts *o, dist_config *cfg)
{
    manta_err err;
    manta_err_clear(&err);
    dist_config_init(cfg);
    if (dist_config_from_env(cfg, NULL, NULL, &err) != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        return 0;
    }
    if (o->world > 0)
        cfg->world_size = o->world;
    if (o->rank >= 0)
        cfg->rank = o->rank;
    if (o->master[0])
        snprintf(cfg->master_addr, sizeof cfg->master_addr, "%s", o->master);
    if (o->master_port)
        cfg->master_port = o->master_port;
    if (o->iface[0])
        snprintf(cfg->iface, sizeof cfg->iface, "%s", o->iface);
    if (o->ring_addr[0])
        snprintf(cfg->ring_addr, sizeof cfg->ring_addr, "%s", o->ring_addr);
    if (o->job[0])
        snprintf(cfg->job_id, sizeof cfg->job_id, "%s", o->job);
    if (o->timeout > 0)
        cfg->timeout_s = o->timeout;
    if (o->rdzv_bind_all)
        cfg->rdzv_bind_all = 1;
    if (o->secret_file && dist_config_secret_file(cfg, o->secret_file, &err) != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        return 0;
    }
    if (cfg->world_size > 1 && dist_config_check(cfg, &err) != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        return 0;
    }
    return 1;
}

static void print_event(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "manta: %s\n", line);
}

/* Open the devices of --devices ("all" or a comma-separated list of specs), else the one
 * of --device. Returns how many were opened (0 after printing an error). */
static int open_devices(const train_opts *o, mcl_dev **devs)
{
    if (!o->devices) {
        devs[0] = cmd_open_device(o->device);
        return devs[0] ? 1 : 0;
    }
    mcl_device_list *list = malloc(sizeof *list);
    if (!list) {
        fprintf(stderr, "manta train: out of memory\n");
        return 0;
    }
    manta_err err;
    manta_err_clear(&err);
    int n = 0, ok = 1;
    manta_status st = mcl_enumerate(list, &err);
    if (st != MANTA_OK) {
        cmd_error("devices", st, &err);
        ok = 0;
    } else if (!strcmp(o->devices, "all")) {
        for (size_t i = 0; i < list->count && i < MAX_DEVICES && ok; i++) {
            st = mcl_open(&list->dev[i], NULL, &devs[n], &err);
            if (st != MANTA_OK) {
                fprintf(stderr, "manta train: device %zu (%s): %s\n", i, list->dev[i].name,
                        manta_err_msg(&err, st));
                ok = 0;
            } else {
                n++;
            }
        }
    } else {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", o->devices);
        size_t used[MAX_DEVICES];
        for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t && ok; t = strtok_r(NULL, ",", &sv)) {
            size_t idx;
            if (n == MAX_DEVICES || !*t || (st = mcl_select(list, t, &idx, &err)) != MANTA_OK) {
                fprintf(stderr, "manta train: --devices: '%s': %s\n", t,
                        n == MAX_DEVICES ? "too many devices" : manta_err_msg(&err, st));
                ok = 0;
                break;
            }
            for (int k = 0; k < n && ok; k++)
                if (used[k] == idx) {
                    fprintf(stderr, "manta train: --devices: device %zu is listed twice\n", idx);
                    ok = 0;
                }
            if (ok && (st = mcl_open(&list->dev[idx], NULL, &devs[n], &err)) != MANTA_OK) {
                fprintf(stderr, "manta train: device %zu (%s): %s\n", idx, list->dev[idx].name,
                        manta_err_msg(&err, st));
                ok = 0;
            }
            if (ok)
                used[n++] = idx;
        }
        if (ok && n == 0) {
            fprintf(stderr, "manta train: --devices lists no device\n");
            ok = 0;
        }
    }
    free(list);
    if (!ok) {
        for (int i = 0; i < n; i++)
            mcl_close(devs[i]);
        return 0;
    }
    return n;
}

/* Work (ofa_schedule_work units) of the steps from @p step to the end. */
static double work_left(const ofa_schedule *s, const double *work, long step)
{
    double left = 0;
    for (int p = 0; p < s->n_phases; p++) {
        long n = s->phase[p].steps < step ? 0 : s->phase[p].steps - step;
        step = step > s->phase[p].steps ? step - s->phase[p].steps : 0;
        left += (double)n * work[p];
    }
    return left;
}

int cmd_train(int argc, char **argv)
{
    train_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr <= 0)
        return pr == 0 ? 0 : 2;
    dist_config cfg;
    if (!job_config(&o, &cfg))
        return 2;
    cfg.event = print_event;
    const int rank = cfg.world_size > 1 ? cfg.rank : 0;
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    /* Only rank 0 talks, except for errors. */
    const int quiet = rank != 0;
    char out_dir[1024], latest[1100];
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    train_meta meta;
    memset(&meta, 0, sizeof meta);
    if (o.out)
        snprintf(out_dir, sizeof out_dir, "%s", o.out);
    else
        snprintf(out_dir, sizeof out_dir, "runs/%s-%s", o.space, o.schedule);
    snprintf(latest, sizeof latest, "%s/latest.ckpt", out_dir);
    manta_status st;
    if (o.resume) { /* the run's settings come from its checkpoint */
        st = trainstate_peek(latest, &sp, &meta, &err);
        if (st != MANTA_OK) {
            cmd_error("resume", st, &err);
            return 1;
        }
        o.batch = meta.batch;
        o.seed = meta.seed;
        o.val = meta.val;
        o.schedule = meta.preset;
        o.data = meta.data;
        o.lr_scale = meta.lr_scale;
    } else {
        st = ofa_space_load(o.space, &sp, &err);
        if (st != MANTA_OK) {
            cmd_error("space", st, &err);
            return 1;
        }
    }
    run_data rd;
    if (!run_data_load(o.data, o.channels, o.val, o.seed, !o.json && !quiet, &rd))
        return 1;
    if (!o.resume && (sp.in_channels != rd.train.channels || sp.classes != rd.train.classes)) {
        if (!o.json && !quiet)
            printf("space '%s': input channels %d -> %d, classes %d -> %d to match the data\n",
                   sp.name, sp.in_channels, rd.train.channels, sp.classes, rd.train.classes);
        sp.in_channels = rd.train.channels;
        sp.classes = rd.train.classes;
    }
    int rc = 1, n_dev = 0;
    mcl_dev *devs[MAX_DEVICES] = {NULL};
    mcl_dev *d = NULL;
    ring_comm *ring = NULL;
    dp_trainer *dp = NULL;
    ofa_trainer *t = NULL;
    prefetch *pf = NULL;
    FILE *metrics = NULL;
    const long per_epoch = rd.split.n_train / o.batch;
    ofa_schedule sched;
    if (per_epoch < 1) {
        fprintf(stderr, "manta train: %d training images are fewer than one batch of %d\n",
                rd.split.n_train, o.batch);
        goto out;
    }
    st = ofa_schedule_preset(&sp, o.schedule, o.batch, per_epoch, &sched, &err);
    if (st != MANTA_OK) {
        cmd_error("schedule", st, &err);
        goto out;
    }
    for (int i = 0; i < sched.n_phases; i++)
        sched.phase[i].lr *= (float)o.lr_scale;
    double work[OFA_MAX_PHASES]; /* per step of each phase, for the ETA */
    st = ofa_schedule_work(&sp, &sched, 64, work, &err);
    if (st != MANTA_OK) {
        cmd_error("schedule", st, &err);
        goto out;
    }
    if (!(n_dev = open_devices(&o, devs)))
        goto out;
    d = devs[0];
    if (cfg.world_size > 1) {
        st = ring_create(&cfg, &ring, &err);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train: rank %d (%s): joining the job: %s\n", rank, host,
                    manta_err_msg(&err, st));
            goto out;
        }
        if (ring_warning(ring) && rank == 0)
            fprintf(stderr, "manta: warning: %s\n", ring_warning(ring));
    }
    st = dp_create(devs, n_dev, &sp, &sched, o.seed, o.mode, ring, &dp, &err);
    if (st != MANTA_OK) {
        if (ring)
            fprintf(stderr, "manta train: rank %d (%s): %s\n", rank, host, manta_err_msg(&err, st));
        else
            fprintf(stderr, "manta train: %s\n", manta_err_msg(&err, st));
        goto out;
    }
    if (o.bucket_kib != (long)(DP_BUCKET_BYTES >> 10) || o.no_overlap) {
        st = dp_set_buckets(dp, (size_t)o.bucket_kib << 10, !o.no_overlap, &err);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train: rank %d (%s): %s\n", rank, host, manta_err_msg(&err, st));
            goto out;
        }
    }
    t = dp_replica(dp, 0);
    const int replicas = dp_replicas(dp);
    long start = 0;
    loader_state ls;
    loader_state_init(&ls, o.seed);
    if (o.resume) { /* every replica loads the same checkpoint */
        for (int i = 0; i < n_dev; i++) {
            st = trainstate_load(latest, dp_replica(dp, i), devs[i], &meta, &err);
            if (st != MANTA_OK) {
                cmd_error("resume", st, &err);
                goto out;
            }
        }
        start = meta.step;
        ls = meta.loader;
    } else {
        snprintf(meta.preset, sizeof meta.preset, "%s", o.schedule);
        snprintf(meta.data, sizeof meta.data, "%s", o.data);
        meta.batch = o.batch;
        meta.seed = o.seed;
        meta.val = o.val;
        meta.lr_scale = o.lr_scale;
    }
    if (rank == 0) {
        manta_err derr;
        if (manta_file_mkdir_p(out_dir, &derr) != MANTA_OK) {
            fprintf(stderr, "manta train: %s\n", derr.msg);
            goto out;
        }
        char mpath[1100];
        snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", out_dir);
        if (!(metrics = fopen(mpath, o.resume ? "a" : "w"))) {
            fprintf(stderr, "manta train: %s: %s\n", mpath, strerror(errno));
            goto out;
        }
    }
    res_ctx rctx = {t, per_epoch};
    loader_opts lo;
    loader_opts_default(&lo, &rd.train);
    lo.indices = rd.split.train;
    lo.n_indices = rd.split.n_train;
    lo.batch = o.batch;
    lo.shuffle = true;
    lo.drop_last = true;
    lo.seed = o.seed;
    lo.aug = rd.aug_train;
    lo.max_resolution = sp.res[sp.n_res - 1];
    lo.res_fn = batch_resolution;
    lo.res_ctx = &rctx;
    st = prefetch_start(&pf, &lo, &ls, PREFETCH_DEFAULT_SLOTS, &err);
    if (st != MANTA_OK) {
        cmd_error("data", st, &err);
        goto out;
    }
    const long total = ofa_schedule_total_steps(&sched);
    if (!o.json && !quiet) {
        printf("device: %s; space %s (%d units, resolutions %d..%d), %d classes; schedule %s, "
               "%d phases, %ld steps of %d images%s\n",
               mcl_info(d)->name, sp.name, sp.n_units, sp.res[0], sp.res[sp.n_res - 1],
               sp.classes, o.schedule, sched.n_phases, total, o.batch,
               o.resume ? " (resumed)" : "");
        if (replicas > 1)
            printf("data parallel: %d rank(s) x %d device(s), %s mode, %d images per device\n",
                   cfg.world_size > 1 ? cfg.world_size : 1, n_dev,
                   o.mode == DP_DATA ? "data" : "subnet", ofa_trainer_batch(t));
        if (o.resume)
            printf("resuming at step %ld of %ld\n", start, total);
    } else if (!quiet) { /* the first JSON line: the run, and what runs it */
        printf("{\"out\":");
        cmd_json_str(stdout, out_dir);
        printf(",\"space\":");
        cmd_json_str(stdout, sp.name);
        printf(",\"schedule\":");
        cmd_json_str(stdout, o.schedule);
        printf(",\"phases\":%d,\"steps\":%ld,\"batch\":%d,\"start_step\":%ld,\"replicas\":%d,",
               sched.n_phases, total, o.batch, start, replicas);
        cmd_json_provenance(stdout, d);
        printf("}\n");
        fflush(stdout);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    double t0 = cmd_now(), t_win = t0, wait_win = 0, loss_win = 0, step_win = 0;
    long correct_win = 0, pred_win = 0, steps_win = 0, done = 0;
    for (long step = start; step < total; step++) {
        prefetch_batch b;
        double wait = 0;
        st = prefetch_next(pf, &b, &wait, &err);
        if (st != MANTA_OK || b.n != o.batch) {
            cmd_error("data", st == MANTA_OK ? MANTA_ERR_INTERNAL : st, &err);
            goto out;
        }
        ofa_step_result r;
        double ts = cmd_now();
        st = dp_step(dp, step, b.images, b.labels, &r, &err);
        step_win += cmd_now() - ts;
        if (st != MANTA_OK) {
            long ip;
            int pi = ofa_schedule_locate(&sched, step, &ip);
            if (replicas > 1) /* the message names the rank, step and device */
                fprintf(stderr, "manta train: %s (host %s, phase %s)\n", manta_err_msg(&err, st),
                        host, pi >= 0 ? sched.phase[pi].name : "?");
            else
                fprintf(stderr, "manta train: step %ld (phase %s): %s\n", step + 1,
                        pi >= 0 ? sched.phase[pi].name : "?", manta_err_msg(&err, st));
            goto out;
        }
        ls = b.after;
        done++;
        int stop = stop_requested || (o.stop_after > 0 && done == o.stop_after);
        if (ring) { /* stop together: a signal may reach the ranks at different steps */
            float f = (float)stop_requested;
            st = ring_allreduce(ring, &f, 1, RING_SUM, &err);
            if (st != MANTA_OK) {
                fprintf(stderr, "manta train: rank %d (%s): step %ld: %s\n", rank, host, step + 1,
                        manta_err_msg(&err, st));
                goto out;
            }
            if (f > 0)
                stop_requested = 1, stop = 1;
        }
        wait_win += wait;
        loss_win += r.loss;
        correct_win += r.correct;
        pred_win += r.predictions;
        steps_win++;
        long in_phase;
        ofa_schedule_locate(&sched, step, &in_phase);
        const ofa_phase *ph = &sched.phase[r.phase];
        int phase_end = in_phase + 1 == ph->steps;
        if (!quiet && ((step + 1) % o.log_every == 0 || phase_end || step + 1 == total)) {
            double tn = cmd_now(), dt = tn - t_win;
            double ips = (double)steps_win * o.batch / dt;
            /* the work left at the rate of this run so far: later phases
             * sample more sub-networks per step, of other sizes */
            double left = work_left(&sched, work, step + 1);
            double eta = left * (tn - t0) / (work_left(&sched, work, start) - left);
            char line[512];
            snprintf(line, sizeof line,
                     "{\"step\":%ld,\"steps\":%ld,\"phase\":\"%s\",\"phase_index\":%d,\"loss\":%.5f,"
                     "\"batch_top1\":%.4f,\"r\":%d,\"lr\":%.6f,\"images_per_s\":%.1f,"
                     "\"data_wait\":%.4f,\"step_ms\":%.1f,\"eta_s\":%.0f}",
                     step + 1, total, ph->name, r.phase, loss_win / steps_win,
                     (double)correct_win / pred_win, r.r, r.lr, ips, wait_win / dt,
                     1e3 * step_win / steps_win, eta);
            fprintf(metrics, "%s\n", line);
            fflush(metrics);
            if (o.json)
                printf("%s\n", line);
            else
                printf("phase %d/%d %-8s step %6ld/%ld  loss %.4f  top-1 %5.1f%%  r %2d  lr %.4f  "
                       "%6.1f img/s  data-wait %4.1f%%  ETA %.0f s\n",
                       r.phase + 1, sched.n_phases, ph->name, step + 1, total,
                       loss_win / steps_win, 100.0 * correct_win / pred_win, r.r, r.lr, ips,
                       100.0 * wait_win / dt, eta);
            fflush(stdout);
            t_win = tn;
            wait_win = loss_win = 0;
            correct_win = pred_win = steps_win = 0;
            step_win = 0;
        }
        int ckpt = phase_end || (o.ckpt_every > 0 && (step + 1) % o.ckpt_every == 0) || stop;
        if (replicas > 1 && (ckpt || (o.sync_check > 0 && (step + 1) % o.sync_check == 0))) {
            unsigned char h[DP_HASH_BYTES];
            st = dp_check(dp, step + 1, h, &err);
            if (st != MANTA_OK) {
                fprintf(stderr, "manta train: rank %d (%s): %s\n", rank, host,
                        manta_err_msg(&err, st));
                goto out;
            }
            if (o.json && !quiet) {
                char hx[2 * DP_HASH_BYTES + 1];
                for (int k = 0; k < DP_HASH_BYTES; k++)
                    snprintf(hx + 2 * k, 3, "%02x", h[k]);
                printf("{\"sync_check\":%ld,\"replicas\":%d,\"hash\":\"%s\"}\n", step + 1,
                       replicas, hx);
            }
        }
        if (phase_end) {
            char name[64];
            snprintf(name, sizeof name, "phase-%d-%s.ckpt", r.phase + 1, ph->name);
            if (rank == 0 && (!save(out_dir, name, t, d, &meta, &ls, step + 1) ||
                              !save(out_dir, "latest.ckpt", t, d, &meta, &ls, step + 1)))
                goto out;
            double top1[2];
            if (o.eval_images > 0 && rd.split.n_val > 0) {
                /* every rank evaluates (on its first device) so that all stay in step */
                if (!evaluate_phase(d, t, &rd, &o, r.phase, top1))
                    goto out;
                char ev[256];
                snprintf(ev, sizeof ev,
                         "{\"eval\":\"val\",\"phase\":\"%s\",\"step\":%ld,\"max_top1\":%.4f,"
                         "\"min_top1\":%.4f}",
                         ph->name, step + 1, top1[0], top1[1]);
                if (!quiet) {
                    fprintf(metrics, "%s\n", ev);
                    fflush(metrics);
                }
                if (o.json && !quiet)
                    printf("%s\n", ev);
                else if (!quiet)
                    printf("phase %d/%d %s done: validation top-1 largest %.2f%%, smallest %.2f%% "
                           "(%s/%s)\n",
                           r.phase + 1, sched.n_phases, ph->name, 100 * top1[0], 100 * top1[1],
                           out_dir, name);
            }
        } else if (ckpt) {
            if (rank == 0 && !save(out_dir, "latest.ckpt", t, d, &meta, &ls, step + 1))
                goto out;
        }
        if (stop) {
            if (!quiet)
                fprintf(stderr, "manta train: stopped after step %ld; '--resume --out %s' continues\n",
                        step + 1, out_dir);
            rc = stop_requested ? 130 : 0;
            goto out;
        }
    }
    if (!o.json && !quiet)
        printf("trained %ld steps in %.1f s; checkpoints in %s\n", done, cmd_now() - t0, out_dir);
    else if (!quiet)
        printf("{\"done\":true,\"trained_steps\":%ld,\"seconds\":%.1f}\n", done, cmd_now() - t0);
    rc = 0;
out:
    if (pf)
        prefetch_stop(pf);
    if (metrics)
        fclose(metrics);
    dp_destroy(dp);
    ring_destroy(ring);
    for (int i = 0; i < n_dev; i++)
        mcl_close(devs[i]);
    run_data_free(&rd);
    sodium_memzero(cfg.key, sizeof cfg.key);
    return rc;
}
