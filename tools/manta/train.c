/* manta train: OFA supernet training with progressive shrinking on one or
 * several devices of this process (--devices) and ranks of a distributed job
 * (torchrun/SLURM variables or flags; runtime/train/dp.h). Checkpoints every
 * phase (and periodically) into --out (rank 0); --resume continues from the
 * latest one and ends with the same weights as an uninterrupted run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "space/stereo_space.h"
#include "train_run.h"

static const char ABOUT[] =
    "Trains an OFA supernet with progressive shrinking (full network, then elastic\n"
    "kernel, depth and expand ratio; distillation from the full network), checkpointing\n"
    "every phase, and reports top-1 of the largest and smallest sub-networks on the\n"
    "validation split after each phase.\n\n"
    "A stereo space (--space stereo-cpu, stereo-gpu, or a spec file with \"task\":\n"
    "\"stereo\") trains the stereo depth supernet instead, with options of its own\n"
    "(pairs, evaluation pairs, fine-tuning); 'manta train --space stereo-cpu --help'\n"
    "lists them. --ckpt-every, --stop-after, --resume, SIGINT/SIGTERM and the job's\n"
    "options work the same for both.\n\n"
    "--data: a JPEG folder holds one subfolder per class (D/train and D/test, or D\n"
    "alone). --eval-images 0: no evaluation. --lr-scale is kept in the checkpoint.\n"
    "--sync-check also compares at every checkpoint (0: checkpoints only).\n"
    "--devices: one host thread per device ('all' or a comma-separated list of device\n"
    "specs); it overrides --device. --mode, with several devices or ranks: data = every\n"
    "replica trains the same sub-networks on its shard of the batch (synchronised batch\n"
    "norm; equals one device on the whole batch); subnet = each rank samples its own\n"
    "sub-networks, its devices split its share. --bucket-kib: buckets are allreduced\n"
    "across ranks during the backward.\n\n"
    "Distributed (one process per rank; 'manta launch -n N -- manta train ...' starts them\n"
    "locally). The job comes from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (torchrun) or\n"
    "SLURM_PROCID/SLURM_NTASKS/SLURM_JOB_NODELIST, MANTA_SECRET[_FILE], overridden by\n"
    "--world, --rank, --master, --iface, --ring-addr, --job, --secret-file,\n"
    "--rdzv-bind-all and --timeout. --batch is the global batch: a multiple of ranks x\n"
    "devices. Rank 0 writes checkpoints and metrics; every rank resumes from\n"
    "DIR/latest.ckpt. --master takes IPv6 as [::1]:PORT. --compress: gradients cross\n"
    "the ring as fp16/bf16 (half the bytes) or int8 (a quarter, error feedback kept in\n"
    "the checkpoint); --aggregate fixed: exact int32 sums, the same bits in any rank\n"
    "order. Every rank must use the same (docs/distributed.md).\n"
    "--elastic: MASTER_ADDR:MASTER_PORT is a 'manta rendezvous' service (started by\n"
    "'manta launch --nnodes MIN:MAX'); a rank that dies is dropped and the others go on\n"
    "from the last completed step, a new rank joins with the state of a survivor\n"
    "(docs/distributed.md, \"Elastic membership\"). --batch must then be a multiple of\n"
    "every world size the job can have x devices.\n"
    "SIGINT/SIGTERM checkpoint and stop at the next step; --resume continues.\n\n"
    "Metrics go to DIR/metrics.jsonl and, as TensorBoard scalars, to a new event\n"
    "file events.out.tfevents.<time>.<host> in DIR or the --tensorboard folder\n"
    "(tensorboard --logdir shows it); a failed write of events is a warning.\n\n"
    "--monitor [ADDR:]PORT: rank 0 serves the live page, a JSON API and Prometheus\n"
    "/metrics of this run (docs/monitor.md) from DIR/metrics.jsonl, in threads of its\n"
    "own; ADDR defaults to 127.0.0.1; any other address needs MANTA_MONITOR_TOKEN\n"
    "(the page then at http://ADDR:PORT/?token=...). Alerts: a loss that is not a\n"
    "number or grows for --alert-grow reports, a rank slower than the median by\n"
    "--alert-slow %, no record for --alert-stall seconds; --on-alert runs a shell\n"
    "command with each new alert as JSON on its standard input.\n";

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, train_opts *o)
{
    const double big = 2147483647.0;
    long seed = 1;
    *o = (train_opts){
        .space = "cpu-default",
        .data = "fashion-mnist",
        .schedule = "quick",
        .batch = 64,
        .log_every = 20,
        .val = 10000,
        .eval_images = 2000,
        .recal_images = 2000,
        .channels = 3,
        .ckpt_every = 500,
        .lr_scale = 1.0,
        .bucket_kib = (long)(DP_BUCKET_BYTES >> 10),
    };
    job_opts_init(&o->job);
    const opt_def defs[] = {
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &o->space,
         .metavar = "S",
         .help = "search space: cpu-default (default), mbv3-w1.0, a spec file, or a stereo "
                 "space (see above)"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &o->data,
         .metavar = "D",
         .help = "fashion-mnist (default), an IDX folder, or a JPEG folder"},
        {.name = "channels",
         .kind = OPT_INT,
         .dest = &o->channels,
         .lo = 1,
         .hi = 3,
         .metavar = "N",
         .help = "1 or 3: channels JPEG images are decoded to (default 3)"},
        {.name = "schedule",
         .kind = OPT_STRING,
         .dest = &o->schedule,
         .metavar = "P",
         .help = "smoke (seconds, for tests), quick (default; minutes), full"},
        {.name = "batch",
         .kind = OPT_INT,
         .dest = &o->batch,
         .lo = 1,
         .hi = big,
         .metavar = "N",
         .help = "images per step (default 64)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &seed,
         .lo = 0,
         .hi = big,
         .metavar = "N",
         .help = "seed of weights, data order, sampling (default 1)"},
        {.name = "val",
         .kind = OPT_INT,
         .dest = &o->val,
         .lo = 0,
         .hi = big,
         .metavar = "N",
         .help = "training images held out for validation (default 10000; 0: none, no evaluation)"},
        {.name = "eval-images",
         .kind = OPT_INT,
         .dest = &o->eval_images,
         .lo = 0,
         .hi = big,
         .metavar = "N",
         .help = "validation images per evaluation after a phase (default 2000)"},
        {.name = "recal-images",
         .kind = OPT_INT,
         .dest = &o->recal_images,
         .lo = 1,
         .hi = big,
         .metavar = "N",
         .help = "images for BN re-calibration before it (default 2000)"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o->out,
         .metavar = "DIR",
         .help = "checkpoints and metrics.jsonl (default runs/<space>-<schedule>)"},
        {.name = "tensorboard",
         .kind = OPT_STRING,
         .dest = &o->tensorboard,
         .metavar = "DIR",
         .help = "folder of the TensorBoard event file (default: the --out folder)"},
        {.name = "resume",
         .kind = OPT_FLAG,
         .dest = &o->resume,
         .help = "continue from DIR/latest.ckpt"},
        {.name = "ckpt-every",
         .kind = OPT_LONG,
         .dest = &o->ckpt_every,
         .lo = 0,
         .hi = 0x1p40,
         .metavar = "N",
         .help = "also checkpoint every N steps (default 500; 0: phases only)"},
        {.name = "stop-after",
         .kind = OPT_LONG,
         .dest = &o->stop_after,
         .lo = 1,
         .hi = 0x1p40,
         .metavar = "N",
         .help = "stop after N steps of this invocation, checkpointing (tests)"},
        {.name = "lr-scale",
         .kind = OPT_DOUBLE,
         .dest = &o->lr_scale,
         .lo = 0,
         .hi = 1000,
         .metavar = "F",
         .help = "multiply every phase's learning rate by F in (0, 1000] (default 1)"},
        {.name = "log-every",
         .kind = OPT_INT,
         .dest = &o->log_every,
         .lo = 1,
         .hi = big,
         .metavar = "N",
         .help = "progress line every N steps (default 20)"},
        {.name = "bucket-kib",
         .kind = OPT_LONG,
         .dest = &o->bucket_kib,
         .lo = 0,
         .hi = 0x1p30,
         .metavar = "N",
         .help = "gradient buckets of about N KiB (default 1024; 0: one bucket)"},
        {.name = "no-overlap",
         .kind = OPT_FLAG,
         .dest = &o->no_overlap,
         .help = "allreduce the buckets after the backward (same results)"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "progress as JSON lines on stdout"},
        {.name = "elastic",
         .kind = OPT_FLAG,
         .dest = &o->elastic,
         .help = "ranks may die and join: the rendezvous is a 'manta rendezvous' service"},
        JOB_OPT_DEFS(&o->job),
        {.name = NULL},
    };
    const opt_cmd cmd = {"manta train", "[OPTIONS]", ABOUT, defs, 0, 0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (o->channels == 2) {
        fprintf(stderr, "manta train: --channels must be 1 or 3\n");
        return 2;
    }
    if (!(o->lr_scale > 0)) {
        fprintf(stderr, "manta train: --lr-scale needs a factor in (0, 1000], got '%g'\n",
                o->lr_scale);
        return 2;
    }
    o->seed = (unsigned long long)seed;
    o->mode = job_mode(&o->job);
    return 1;
}

static int batch_resolution(void *ctx, int64_t epoch, int64_t batch)
{
    const res_ctx *c = ctx;
    return ofa_trainer_resolution(c->t, (long)(epoch * c->per_epoch + batch));
}

/* The output folder, the run's settings (from its checkpoint on --resume), the
 * space and the data, the space matched to the data. */
static bool run_settings(train_run *r)
{
    train_opts *o = &r->o;
    manta_err err;
    manta_err_clear(&err);
    if (o->out)
        snprintf(r->out_dir, sizeof r->out_dir, "%s", o->out);
    else
        snprintf(r->out_dir, sizeof r->out_dir, "runs/%s-%s", o->space, o->schedule);
    snprintf(r->latest, sizeof r->latest, "%s/latest.ckpt", r->out_dir);
    manta_status st;
    if (o->resume) { /* the run's settings come from its checkpoint */
        st = trainstate_peek(r->latest, &r->sp, &r->meta, &err);
        if (st != MANTA_OK) {
            cmd_error("train", st, &err);
            return false;
        }
        o->batch = r->meta.batch;
        o->seed = r->meta.seed;
        o->val = r->meta.val;
        o->schedule = r->meta.preset;
        o->data = r->meta.data;
        o->lr_scale = r->meta.lr_scale;
    } else {
        st = ofa_space_load(o->space, &r->sp, &err);
        if (st != MANTA_OK) {
            cmd_error("train", st, &err);
            return false;
        }
    }
    if (o->eval_images > 0 && o->val > 0 && o->recal_images < o->batch) {
        fprintf(stderr,
                "manta train: --recal-images %d is fewer than one batch of %d, which the BN "
                "re-calibration before each evaluation needs (or --eval-images 0)\n",
                o->recal_images, o->batch);
        return false;
    }
    if (!run_data_load("train", o->data, o->channels, o->val, o->seed, !o->json && !r->quiet,
                       &r->rd))
        return false;
    r->have_data = true;
    ofa_space *sp = &r->sp;
    const dataset *tr = &r->rd.train;
    if (!o->resume && (sp->in_channels != tr->channels || sp->classes != tr->classes)) {
        if (!o->json && !r->quiet)
            printf("space '%s': input channels %d -> %d, classes %d -> %d to match the data\n",
                   sp->name, sp->in_channels, tr->channels, sp->classes, tr->classes);
        sp->in_channels = tr->channels;
        sp->classes = tr->classes;
    }
    return true;
}

/* The schedule and its work per step, the devices, the ring, the trainers and, on
 * --resume, their checkpoint. */
static bool run_trainer(train_run *r)
{
    const train_opts *o = &r->o;
    manta_err err;
    manta_err_clear(&err);
    r->per_epoch = r->rd.split.n_train / o->batch;
    if (r->per_epoch < 1) {
        fprintf(stderr, "manta train: %d training images are fewer than one batch of %d\n",
                r->rd.split.n_train, o->batch);
        return false;
    }
    manta_status st =
        ofa_schedule_preset(&r->sp, o->schedule, o->batch, r->per_epoch, &r->sched, &err);
    for (int i = 0; st == MANTA_OK && i < r->sched.n_phases; i++)
        r->sched.phase[i].lr *= (float)o->lr_scale;
    if (st == MANTA_OK)
        st = ofa_schedule_work(&r->sp, &r->sched, 64, r->work, &err);
    if (st != MANTA_OK) {
        cmd_error("train", st, &err);
        return false;
    }
    if (!(r->n_dev = job_open_devices("manta train", &o->job, r->devs)))
        return false;
    r->d = r->devs[0];
    if (o->elastic) /* the ring and the replicas come with each generation */
        return true;
    if (r->cfg.world_size > 1) {
        if (!job_join("manta train", &r->cfg, r->rank, r->host, &r->ring))
            return false;
    }
    return train_replicas(r);
}

bool train_replicas(train_run *r)
{
    const train_opts *o = &r->o;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = ofa_dp_create(r->devs, r->n_dev, &r->sp, &r->sched, o->seed, o->mode, r->ring,
                                    &r->dp, &err);
    if (st != MANTA_OK && !r->ring) {
        fprintf(stderr, "manta train: %s\n", manta_err_msg(&err, st));
        return false;
    }
    if (st == MANTA_OK && (o->bucket_kib != (long)(DP_BUCKET_BYTES >> 10) || o->no_overlap))
        st = dp_set_buckets(r->dp, (size_t)o->bucket_kib << 10, !o->no_overlap, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: rank %d (%s): %s\n", r->rank, r->host,
                manta_err_msg(&err, st));
        return false;
    }
    r->t = dp_replica(r->dp, 0);
    r->replicas = dp_replicas(r->dp);
    if (o->elastic && r->meta.batch) /* a later generation: the state comes from a snapshot */
        return true;
    data_loader_state_init(&r->ls, o->seed);
    if (!o->resume) {
        snprintf(r->meta.preset, sizeof r->meta.preset, "%s", o->schedule);
        snprintf(r->meta.data, sizeof r->meta.data, "%s", o->data);
        r->meta.batch = o->batch;
        r->meta.seed = o->seed;
        r->meta.val = o->val;
        r->meta.lr_scale = o->lr_scale;
        return true;
    }
    for (int i = 0; i < r->n_dev; i++) { /* every replica loads the same checkpoint */
        st = trainstate_load(r->latest, dp_replica(r->dp, i), r->devs[i], &r->meta, &err);
        if (st != MANTA_OK) {
            cmd_error("train", st, &err);
            return false;
        }
    }
    r->start = r->meta.step;
    r->ls = r->meta.loader;
    return job_ef_resume("manta train", r->dp, r->latest);
}

bool train_outputs_open(train_run *r)
{
    const train_opts *o = &r->o;
    manta_err err;
    manta_err_clear(&err);
    if (r->rank == 0 && !r->metrics) {
        if (manta_file_mkdir_p(r->out_dir, &err) != MANTA_OK) {
            fprintf(stderr, "manta train: %s\n", err.msg);
            return false;
        }
        char mpath[1100];
        snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", r->out_dir);
        if (!(r->metrics = fopen(mpath, o->resume || r->outputs_taken ? "a" : "w"))) {
            fprintf(stderr, "manta train: %s: %s\n", mpath, strerror(errno));
            return false;
        }
        const char *tb = o->tensorboard ? o->tensorboard : r->out_dir;
        if (manta_tfevents_open(tb, r->host, manta_wall_time(), &r->events, &err) != MANTA_OK) {
            fprintf(stderr, "manta train: TensorBoard events: %s\n", err.msg);
            return false;
        }
    }
    return true;
}

bool train_prefetch_start(train_run *r)
{
    const train_opts *o = &r->o;
    manta_err err;
    manta_err_clear(&err);
    if (r->pf) {
        data_prefetch_stop(r->pf);
        r->pf = NULL;
    }
    r->rctx = (res_ctx){r->t, r->per_epoch};
    loader_opts lo;
    data_loader_opts_default(&lo, &r->rd.train);
    lo.indices = r->rd.split.train;
    lo.n_indices = r->rd.split.n_train;
    lo.batch = o->batch;
    lo.shuffle = true;
    lo.drop_last = true;
    lo.seed = o->seed;
    lo.aug = r->rd.aug_train;
    lo.max_resolution = r->sp.res[r->sp.n_res - 1];
    lo.res_fn = batch_resolution;
    lo.res_ctx = &r->rctx;
    manta_status st = data_prefetch_start(&r->pf, &lo, &r->ls, PREFETCH_DEFAULT_SLOTS, &err);
    if (st != MANTA_OK) {
        cmd_error("train", st, &err);
        return false;
    }
    r->total = ofa_schedule_total_steps(&r->sched);
    return true;
}

/* The output folder, metrics.jsonl and the event file (rank 0), and the data loader's thread. */
static bool run_outputs(train_run *r) { return train_outputs_open(r) && train_prefetch_start(r); }

void train_print_start(const train_run *r)
{
    const train_opts *o = &r->o;
    const ofa_space *sp = &r->sp;
    if (r->quiet)
        return;
    if (!o->json) {
        printf("device: %s; space %s (%d units, resolutions %d..%d), %d classes; schedule %s, "
               "%d phases, %ld steps of %d images%s\n",
               mcl_info(r->d)->name, sp->name, sp->n_units, sp->res[0], sp->res[sp->n_res - 1],
               sp->classes, o->schedule, r->sched.n_phases, r->total, o->batch,
               o->resume ? " (resumed)" : "");
        if (r->replicas > 1)
            printf("data parallel: %d rank(s) x %d device(s), %s mode, %d images per device\n",
                   r->cfg.world_size > 1 ? r->cfg.world_size : 1, r->n_dev,
                   o->mode == DP_DATA ? "data" : "subnet", ofa_trainer_batch(r->t));
        if (o->resume)
            printf("resuming at step %ld of %ld\n", r->start, r->total);
        return;
    }
    printf("{\"out\":");
    cmd_json_str(stdout, r->out_dir);
    printf(",\"space\":");
    cmd_json_str(stdout, sp->name);
    printf(",\"schedule\":");
    cmd_json_str(stdout, o->schedule);
    printf(",\"phases\":%d,\"steps\":%ld,\"batch\":%d,\"start_step\":%ld,\"replicas\":%d,",
           r->sched.n_phases, r->total, o->batch, r->start, r->replicas);
    cmd_json_provenance(stdout, r->d);
    printf("}\n");
    fflush(stdout);
}

bool train_monitor_start(train_run *r)
{
    const train_opts *o = &r->o;
    if (r->rank != 0 || r->outputs_taken)
        return true;
    const job_header h = {
        "classification", r->sp.name, o->schedule, o->data,
        &r->sched,        r->start,   o->batch,    r->cfg.world_size > 1 ? r->cfg.world_size : 1,
        r->replicas,      r->devs,    r->n_dev,    o->mode};
    job_log l = {"manta train", r->metrics, r->rank, r->host, NULL};
    job_record_job(&l, &h);
    if (r->monitor)
        return true;
    return job_monitor_start("manta train", &o->job, r->out_dir, &r->monitor);
}

static void run_close(train_run *r)
{
    if (r->pf)
        data_prefetch_stop(r->pf);
    job_outputs_close("manta train", r->monitor, r->metrics, r->events);
    job_leave(r->dp, r->ring, r->devs, r->n_dev, &r->cfg);
    free(r->meta.ef);
    if (r->have_data)
        run_data_free(&r->rd);
}

/* Whether the --space of argv names a stereo space (the stereo trainer takes the command). */
static bool stereo_space_arg(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "--space") && i + 1 < argc)
            v = argv[i + 1];
        else if (!strncmp(argv[i], "--space=", 8))
            v = argv[i] + 8;
        bool stereo = false;
        manta_err err = {0};
        if (v && stereo_spec_is_stereo(v, &stereo, &err) == MANTA_OK && stereo)
            return true;
    }
    return false;
}

int cmd_train(int argc, char **argv)
{
    if (stereo_space_arg(argc, argv))
        return cmd_train_stereo(argc, argv);
    train_run *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "manta train: out of memory\n");
        return 1;
    }
    int rc = parse_args(argc, argv, &r->o);
    if (rc != 1)
        goto out;
    rc = 2;
    if (!job_config("manta train", &r->o.job, &r->cfg))
        goto out;
    r->rank = r->cfg.world_size > 1 && !r->o.elastic ? r->cfg.rank : 0;
    r->quiet = r->rank != 0;
    snprintf(r->host, sizeof r->host, "?");
    gethostname(r->host, sizeof r->host - 1);
    rc = 1;
    if (r->o.elastic) {
        if (run_settings(r) && run_trainer(r))
            rc = train_elastic(r);
        goto out;
    }
    if (!run_settings(r) || !run_trainer(r) || !run_outputs(r) || !train_monitor_start(r))
        goto out;
    train_print_start(r);
    rc = train_loop(r);
out:
    run_close(r);
    free(r);
    return rc;
}
