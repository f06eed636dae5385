/* manta train --space stereo-...: progressive-shrinking training of the stereo depth supernet
 * (runtime/stereo/train.h) on one or several devices and ranks (train/dp.h), on procedural pairs
 * (with photographs: --textures) or a folder of pairs (with procedural ones: --mix), from scratch
 * or fine-tuning a trained supernet (--init): the stereo task of the training driver
 * (train/driver.h), with progress lines, evaluations of the largest and smallest sub-networks on
 * held-out pairs at every phase's end, checkpoints (every phase, every --ckpt-every steps, on
 * SIGINT/SIGTERM), exact resume, the records of docs/monitor.md and the monitor. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "stereo_cmd.h"
#include "common/opts.h"
#include "core/clock.h"
#include "core/fileio.h"
#include "job.h"
#include "stereo/run.h"
#include "train/driver.h"

typedef struct st_opts {
    const char *space, *schedule, *out, *data, *val_data, *tensorboard, *textures, *init;
    const char *batch_arg; /* --batch: a number or "auto" */
    int batch, log_every;
    bool batch_auto;
    long train_pairs, eval_pairs, recal_pairs, ckpt_every, stop_after, seed;
    double lr_scale, mix; /* mix < 0: not given */
    bool resume, json, textures_given;
    job_opts job;
} st_opts;

typedef struct st_run {
    st_opts o;
    dist_config cfg;
    int rank;
    char host[256];
    stereo_space sp;
    stereo_meta meta;
    ofa_schedule sched;
    mcl_dev *devs[JOB_MAX_DEVICES];
    int n_dev, replicas;
    mcl_dev *d; /* the first device */
    ring_comm *ring;
    dp_trainer *dp;
    stereo_trainer *t; /* the first replica */
    mon_server *monitor;
    stereo_run_data data; /* folders, photographs, sources of the pairs */
    stereo_batch b;
    FILE *metrics;
    manta_tfevents *events; /* rank 0; NULL after a failed write (warned once) */
    char dir[1024];
} st_run;

/* Where the run's records go. */
static job_log run_log(const st_run *r)
{
    return (job_log){"manta train", r->metrics, r->rank, r->host, r->monitor};
}

/* Rank 0: checkpoint @p name, resuming at @p next_step. */
static manta_status save(st_run *r, const char *name, long next_step, manta_err *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    r->meta.step = next_step;
    r->meta.has_teacher = stereo_trainer_has_teacher(r->t);
    return stereo_state_save(path, r->t, r->d, &r->meta, err);
}

/* End of phase @p ph after @p done steps, its checkpoints written (by the driver first, so
 * that an evaluation that fails, on a pair of --val-data that cannot be read, loses no
 * training): evaluations (every rank, in step), their line, record and scalars (rank 0).
 * Errors are the first device's (mcl_err()). */
static manta_status phase_end(st_run *r, int ph, long done)
{
    stereo_scores lg[2], sm[2]; /* largest, smallest: every pixel, non-occluded */
    MANTA_TRY(stereo_run_evaluate(r->t, &r->b, &r->sp, &r->data, r->o.recal_pairs, r->o.eval_pairs,
                                  lg, sm, mcl_err(r->d)));
    if (r->rank != 0)
        return MANTA_OK;
    printf("phase %d/%d %s done: held-out EPE largest %.3f px (bad-3 %.2f%%, D1 %.2f%%), smallest "
           "%.3f px (bad-3 %.2f%%, D1 %.2f%%) (%s/phase-%d-%s.ckpt)\n",
           ph + 1, r->sched.n_phases, r->sched.phase[ph].name, lg[0].epe, lg[0].bad3, lg[0].d1,
           sm[0].epe, sm[0].bad3, sm[0].d1, r->dir, ph + 1, r->sched.phase[ph].name);
    manta_rec rec = {.kind = MANTA_REC_PHASE_END};
    rec.phase_end = (manta_rec_phase_end){.phase_index = ph,
                                          .step = done,
                                          .largest = {lg[0].epe, lg[0].bad3, lg[0].d1, lg[1].epe},
                                          .smallest = {sm[0].epe, sm[0].bad3, sm[0].d1, sm[1].epe}};
    snprintf(rec.phase_end.phase, sizeof rec.phase_end.phase, "%s", r->sched.phase[ph].name);
    job_log l = run_log(r);
    job_write(&l, &rec);
    const manta_tfscalar ev[] = {
        {"val/epe_largest", (float)lg[0].epe},   {"val/epe_smallest", (float)sm[0].epe},
        {"val/bad3_largest", (float)lg[0].bad3}, {"val/bad3_smallest", (float)sm[0].bad3},
        {"val/d1_largest", (float)lg[0].d1},     {"val/d1_smallest", (float)sm[0].d1}};
    job_events(&r->events, "manta train", done, ev, sizeof ev / sizeof ev[0]);
    return MANTA_OK;
}

/* The stereo task of one invocation (train/driver.h). */
typedef struct st_task {
    st_run *r;
    stereo_step_result res; /* of the last step */
    double last;            /* time of the last progress line */
    long since;             /* steps since */
} st_task;

static manta_status task_step(void *ctx, long step, manta_err *err)
{
    st_task *c = ctx;
    st_run *r = c->r;
    manta_err e = {0};
    double tw = cmd_now();
    const stereo_steps steps = stereo_run_steps(&r->data, &r->sp, &r->meta);
    manta_status st = stereo_steps_batch(&steps, step, &r->b, &e);
    dp_set_data_wait(r->dp, cmd_now() - tw);
    if (st == MANTA_OK)
        st = stereo_dp_step(r->dp, step, &r->b, &c->res, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "rank %d (%s): step %ld: %s", r->rank, r->host, step + 1,
                             e.msg);
    if (!isfinite(c->res.loss)) /* diverged: stop before a checkpoint keeps it */
        return manta_err_set(err, MANTA_ERR_INTERNAL,
                             "the loss is not a number at step %ld (phase %d); the last "
                             "checkpoint in %s is from before it",
                             step + 1, c->res.phase + 1, r->dir);
    c->since++;
    return MANTA_OK;
}

/* Rank 0: the progress line, record and scalars after @p done steps. */
static manta_status task_progress(void *ctx, long done, manta_err *err)
{
    (void)err;
    st_task *c = ctx;
    st_run *r = c->r;
    if (r->rank != 0)
        return MANTA_OK;
    const stereo_step_result *res = &c->res;
    const long total = ofa_schedule_total_steps(&r->sched);
    long in_phase;
    const int ph = ofa_schedule_locate(&r->sched, done - 1, &in_phase);
    double now = cmd_now(), rate = c->since * r->o.batch / (now - c->last + 1e-9);
    printf("phase %d/%d %-8s step %6ld/%ld  loss %.4f  EPE %.3f px  round %d  lr %.4f  "
           "%.1f pairs/s  ETA %.0f s\n",
           ph + 1, r->sched.n_phases, r->sched.phase[ph].name, done, total, res->loss, res->epe,
           res->round + 1, res->lr, rate, (double)(total - done) * r->o.batch / (rate + 1e-9));
    manta_rec rec = {.kind = MANTA_REC_STEP};
    rec.step = (manta_rec_step){.step = done,
                                .phase_index = ph,
                                .loss = res->loss,
                                .kd_loss = res->kd_loss,
                                .epe = res->epe,
                                .round = res->round + 1,
                                .lr = res->lr,
                                .pairs_per_s = rate,
                                .time = manta_wall_time()};
    snprintf(rec.step.phase, sizeof rec.step.phase, "%s", r->sched.phase[ph].name);
    const int per_rank = r->o.batch / (r->replicas / r->n_dev);
    job_log l = run_log(r);
    manta_rec_rank *ranks = NULL;
    rec.step.n_ranks = job_ranks(r->dp, &l, r->d, per_rank, rec.step.time, &ranks);
    rec.step.ranks = ranks;
    job_write(&l, &rec);
    free(ranks);
    char tags[JOB_RANK_TAGS][JOB_TAG_BYTES];
    manta_tfscalar ev[7 + JOB_RANK_TAGS] = {{"train/loss", res->loss},
                                            {"train/kd_loss", res->kd_loss},
                                            {"train/epe", res->epe},
                                            {"train/lr", res->lr},
                                            {"train/pairs_per_s", (float)rate},
                                            {"train/phase", (float)(ph + 1)},
                                            {"train/round", (float)(res->round + 1)}};
    size_t n = 7 + job_rank_scalars(r->dp, per_rank, tags, ev + 7, JOB_RANK_TAGS);
    job_events(&r->events, "manta train", done, ev, n);
    fflush(stdout);
    c->last = now, c->since = 0;
    return MANTA_OK;
}

static manta_status task_save(void *ctx, const char *name, long done, manta_err *err)
{
    return save(((st_task *)ctx)->r, name, done, err);
}

static manta_status task_evaluate(void *ctx, int phase, long done, manta_err *err)
{
    st_run *r = ((st_task *)ctx)->r;
    manta_status st = phase_end(r, phase, done);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "rank %d (%s): %s", r->rank, r->host, mcl_err(r->d)->msg);
    return MANTA_OK;
}

/* Stop together: a signal may reach the ranks at different steps. */
static manta_status task_agree_stop(void *ctx, long step, bool *signal, manta_err *err)
{
    st_run *r = ((st_task *)ctx)->r;
    manta_err e = {0};
    float f = *signal ? 1.0f : 0.0f;
    manta_status st = ring_allreduce(r->ring, &f, 1, RING_SUM, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "rank %d (%s): step %ld: %s", r->rank, r->host, step + 1,
                             e.msg);
    *signal = f > 0;
    return MANTA_OK;
}

/* Replica consistency (several replicas): the weight hashes of every device and rank agree
 * after @p done steps. */
static manta_status task_check(void *ctx, long done, manta_err *err)
{
    st_run *r = ((st_task *)ctx)->r;
    manta_err e = {0};
    manta_status st = dp_check(r->dp, done, NULL, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "rank %d (%s): %s", r->rank, r->host, manta_err_msg(&e, st));
    return MANTA_OK;
}

static void task_record(void *ctx, const manta_rec *rec)
{
    job_log l = run_log(((st_task *)ctx)->r);
    job_write(&l, rec);
}

static manta_status task_before_save(void *ctx, long done, manta_err *err)
{
    st_run *r = ((st_task *)ctx)->r;
    return (void)done, job_ef_gather(r->dp, r->rank, &r->meta.ef, &r->meta.n_ef, err);
}

static int train_loop(st_run *r)
{
    st_task c = {.r = r, .last = cmd_now()};
    const train_task task = {&c,
                             task_step,
                             task_progress,
                             task_save,
                             task_evaluate,
                             r->ring ? task_agree_stop : NULL,
                             r->replicas > 1 ? task_check : NULL,
                             task_record,
                             r->ring ? task_before_save : NULL};
    train_drive_opts o;
    train_drive_opts_default(&o, &r->sched);
    o.start = r->meta.step;
    o.log_every = r->o.log_every;
    o.ckpt_every = r->o.ckpt_every;
    o.stop_after = r->o.stop_after;
    o.check_every = r->o.job.sync_check;
    o.stop_request = job_stop_signals();
    o.rank = r->rank;
    train_drive_result res;
    manta_err err = {0};
    manta_status st = train_drive(&task, &o, &res, &err);
    job_log l = run_log(r);
    if (st != MANTA_OK) {
        job_fail(&l, res.fail_step, "%s", manta_err_msg(&err, st));
        return 1;
    }
    if (res.stopped) {
        if (r->rank == 0)
            printf("stopped after %ld steps (step %ld); resume with --resume (%s/latest.ckpt)\n",
                   res.done, res.next, r->dir);
        fflush(stdout);
        return res.by_signal ? 130 : 0;
    }
    if (r->rank == 0)
        printf("trained %ld steps in %.1f s; checkpoints in %s\n", res.done, res.seconds, r->dir);
    return 0;
}

/* --batch auto: open the devices, set r->o.batch to the largest batch the first device holds
 * per replica times the replicas (at most 64), and say so in one line; false (said) when
 * batch 1 does not fit, or with several ranks. */
static bool pick_batch(st_run *r)
{
    if (r->cfg.world_size > 1) {
        fprintf(stderr, "manta train: --batch auto plans one process's devices; give ranks a "
                        "number (--batch N)\n");
        return false;
    }
    if (!(r->n_dev = job_open_devices("manta train", &r->o.job, r->devs)))
        return false;
    r->o.batch = stereo_cmd_auto_batch(r->devs[0], &r->sp, r->n_dev);
    return r->o.batch > 0;
}

/* The options of the run's settings (stereo/run.h). */
static stereo_run_opts run_opts(const st_opts *o)
{
    return (stereo_run_opts){
        o->schedule, o->data,        o->init, o->textures_given ? o->textures : NULL,
        o->batch,    o->train_pairs, o->seed, o->lr_scale,
        o->mix,      o->resume};
}

/* Space, schedule, sources, device, trainer and outputs. */
static bool setup(st_run *r)
{
    manta_err err = {0};
    char latest[1200];
    snprintf(r->dir, sizeof r->dir, "%s", r->o.out);
    snprintf(latest, sizeof latest, "%s/latest.ckpt", r->dir);
    manta_status st = r->o.resume ? stereo_state_peek(latest, &r->sp, &r->meta, &err)
                                  : stereo_space_load(r->o.space, &r->sp, &err);
    stereo_meta init_meta = {0}; /* --init's settings */
    if (st == MANTA_OK && !r->o.resume && r->o.batch_auto && !pick_batch(r))
        return false;
    if (st == MANTA_OK && !r->o.resume) {
        const stereo_run_opts ro = run_opts(&r->o);
        bool missing;
        st = stereo_run_meta_new(&ro, &r->sp, &r->meta, &init_meta, &missing, &err);
        if (missing && r->rank == 0)
            fprintf(stderr,
                    "manta train: warning: the default photographs (%s, Debian's "
                    "mate-backgrounds: make deps) are not installed: procedural textures "
                    "alone (--textures none says so, --textures DIR gives others)\n",
                    photo_bank_dir("default"));
    }
    int th, tw;
    char what[256];
    if (st == MANTA_OK && r->rank == 0 &&
        stereo_run_dead_taps(&r->sp, &r->meta, &th, &tw, what, sizeof what) > 0)
        fprintf(stderr,
                "manta train: warning: space '%s': at its largest training crop "
                "(%dx%d), %s: those weights keep their initial values and act on real "
                "features at larger sizes only (give the space taller or wider \"crops\", "
                "docs/stereo.md)\n",
                r->sp.name, tw, th, what);
    if (r->o.val_data) /* evaluations only: a resumed run may change them */
        snprintf(r->meta.val_data, sizeof r->meta.val_data, "%s", r->o.val_data);
    r->o.batch = r->meta.batch;
    if (st == MANTA_OK)
        st = stereo_run_data_open(&r->data, &r->sp, &r->meta, &err);
    const photo_bank_report *prep = &r->data.report;
    if (st == MANTA_OK && r->rank == 0 && (prep->failed > 0 || prep->too_small > 0))
        fprintf(stderr,
                "manta train: --textures %s: %d photograph(s) kept; %d file(s) skipped as "
                "unreadable%s%s%s, %d smaller than the %dx%d crop\n",
                r->meta.textures, r->data.photos.count, prep->failed,
                prep->failed ? " (first: " : "", prep->first_failure, prep->failed ? ")" : "",
                prep->too_small, r->sp.crop_w, r->sp.crop_h);
    if (st == MANTA_OK)
        st = stereo_run_plan(&r->data, &r->sp, &r->meta, r->o.eval_pairs, &r->sched, &err);
    if (st == MANTA_OK)
        st = stereo_batch_alloc(&r->b, r->meta.batch, r->sp.crop_h, r->sp.crop_w,
                                stereo_preds(&r->sp), &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        return false;
    }
    if (!r->n_dev && !(r->n_dev = job_open_devices("manta train", &r->o.job, r->devs)))
        return false;
    if (r->rank == 0 && manta_file_mkdir_p(r->dir, &err) != MANTA_OK) { /* once a device is open */
        fprintf(stderr, "manta train: %s\n", err.msg);
        return false;
    }
    r->d = r->devs[0];
    if (r->cfg.world_size > 1 && !job_join("manta train", &r->cfg, r->rank, r->host, &r->ring))
        return false;
    st = stereo_run_replicas(r->devs, r->n_dev, &r->sp, &r->sched, &r->meta, job_mode(&r->o.job),
                             r->ring, r->o.resume ? latest : NULL, r->o.init, &r->dp, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: rank %d (%s): %s\n", r->rank, r->host, err.msg);
        return false;
    }
    if (r->o.resume && !job_ef_resume("manta train", r->dp, latest))
        return false;
    r->t = dp_replica(r->dp, 0);
    r->replicas = dp_replicas(r->dp);
    if (r->rank != 0)
        return true;
    char mpath[1200];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", r->dir);
    if (!(r->metrics = fopen(mpath, r->o.resume ? "a" : "w"))) {
        perror(mpath);
        return false;
    }
    const char *tb = r->o.tensorboard ? r->o.tensorboard : r->dir;
    if (manta_tfevents_open(tb, r->host, manta_wall_time(), &r->events, &err) != MANTA_OK) {
        fprintf(stderr, "manta train: TensorBoard events: %s\n", err.msg);
        return false;
    }
    const job_header h = {
        "stereo",    r->sp.name,   r->meta.preset, r->meta.data,
        &r->sched,   r->meta.step, r->meta.batch,  r->cfg.world_size > 1 ? r->cfg.world_size : 1,
        r->replicas, r->devs,      r->n_dev,       job_mode(&r->o.job)};
    job_log l = run_log(r);
    job_record_job(&l, &h);
    if (r->replicas > 1)
        printf("data parallel: %d rank(s) x %d device(s), %s mode, %d pairs per device\n",
               h.world_size, r->n_dev, r->o.job.mode, stereo_trainer_batch(r->t));
    if (!r->o.resume && r->o.init)
        printf("fine-tuning %s (space %s, trained %ld steps of schedule %s) on %s, schedule %s\n",
               r->o.init, r->sp.name, init_meta.step, init_meta.preset, r->meta.data,
               r->meta.preset);
    const stereo_steps steps = stereo_run_steps(&r->data, &r->sp, &r->meta);
    const int gen = stereo_steps_generated(&steps, r->meta.batch);
    if (gen > 0)
        printf("each batch: %d generated pair(s), then %d of %s\n", gen, r->meta.batch - gen,
               r->meta.data);
    return job_monitor_start("manta train", &r->o.job, r->dir, &r->monitor);
}

int cmd_train_stereo(int argc, char **argv)
{
    st_run *r = calloc(1, sizeof *r);
    if (!r)
        return 1;
    r->o = (st_opts){.space = "stereo-cpu",
                     .out = "runs/stereo",
                     .data = "synthetic",
                     .batch = 8,
                     .log_every = 10,
                     .train_pairs = 20000,
                     .eval_pairs = 200,
                     .recal_pairs = 200,
                     .ckpt_every = 500,
                     .seed = 1,
                     .lr_scale = 1.0,
                     .mix = -1};
    job_opts_init(&r->o.job);
    static const char *const presets[] = {"smoke", "quick", "full", "finetune", NULL};
    const opt_def defs[] = {
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &r->o.space,
         .metavar = "S",
         .help = "stereo-cpu (default), stereo-gpu or a spec file with \"task\": \"stereo\""},
        {.name = "schedule",
         .kind = OPT_STRING,
         .dest = &r->o.schedule,
         .choices = presets,
         .metavar = "P",
         .help = "preset: smoke, quick (default), full, or finetune (the "
                 "default with --init)"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &r->o.data,
         .metavar = "D",
         .help = "synthetic (default: procedural pairs) or a KITTI / Middlebury folder"},
        {.name = "init",
         .kind = OPT_STRING,
         .dest = &r->o.init,
         .metavar = "CKPT",
         .help = "fine-tune a trained supernet: a new run from this stereo checkpoint"},
        {.name = "mix",
         .kind = OPT_DOUBLE,
         .dest = &r->o.mix,
         .lo = 0,
         .hi = 1,
         .metavar = "R",
         .help = "with --data: round(R x batch) procedural pairs in every batch (default 0)"},
        {.name = "textures",
         .kind = OPT_STRING,
         .dest = &r->o.textures,
         .metavar = "DIR",
         .help = "photographs of the procedural pairs: a folder, 'default' (the default when "
                 "installed) or 'none'",
         .seen = &r->o.textures_given},
        {.name = "train-pairs",
         .kind = OPT_LONG,
         .dest = &r->o.train_pairs,
         .lo = 1,
         .hi = 1e9,
         .metavar = "N",
         .help = "procedural training pairs (synthetic, --mix; default 20000)"},
        {.name = "val-data",
         .kind = OPT_STRING,
         .dest = &r->o.val_data,
         .metavar = "D",
         .help = "pairs of the phase-end evaluations: synthetic (default) or a folder"},
        {.name = "eval-pairs",
         .kind = OPT_LONG,
         .dest = &r->o.eval_pairs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "pairs (a folder's: crops, its pairs in turn) per evaluation "
                 "(default 200)"},
        {.name = "recal-pairs",
         .kind = OPT_LONG,
         .dest = &r->o.recal_pairs,
         .lo = 0,
         .hi = 1e7,
         .metavar = "N",
         .help = "pairs for BN re-calibration (default 200; 0: none, the running statistics)"},
        {.name = "lr-scale",
         .kind = OPT_DOUBLE,
         .dest = &r->o.lr_scale,
         .lo = 1e-6,
         .hi = 1000,
         .metavar = "F",
         .help = "multiply every phase's learning rate by F (default 1; kept "
                 "in the checkpoint)"},
        {.name = "batch",
         .kind = OPT_STRING,
         .dest = &r->o.batch_arg,
         .metavar = "N|auto",
         .help = "pairs per step, 1 to 64 (default 8); auto: the largest the device holds "
                 "(its global memory and largest allocation, from the memory plan), said in "
                 "one line"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &r->o.out,
         .metavar = "DIR",
         .help = "checkpoints and metrics.jsonl (default runs/stereo)"},
        {.name = "tensorboard",
         .kind = OPT_STRING,
         .dest = &r->o.tensorboard,
         .metavar = "DIR",
         .help = "folder of the TensorBoard event file (default: the --out folder)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &r->o.seed,
         .lo = 0,
         .hi = 1e15,
         .metavar = "S",
         .help = "seed of weights, data and sampling (default 1)"},
        {.name = "log-every",
         .kind = OPT_INT,
         .dest = &r->o.log_every,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "a progress line every N steps (default 10)"},
        {.name = "ckpt-every",
         .kind = OPT_LONG,
         .dest = &r->o.ckpt_every,
         .lo = 0,
         .hi = 1e12,
         .metavar = "N",
         .help = "also checkpoint latest.ckpt every N steps (default 500; 0: "
                 "phases only)"},
        {.name = "stop-after",
         .kind = OPT_LONG,
         .dest = &r->o.stop_after,
         .lo = 1,
         .hi = 1e12,
         .metavar = "N",
         .help = "stop after N steps of this invocation, saving latest.ckpt "
                 "(to --resume)"},
        {.name = "resume",
         .kind = OPT_FLAG,
         .dest = &r->o.resume,
         .help = "continue DIR/latest.ckpt exactly (its settings replace the options)"},
        JOB_OPT_DEFS(&r->o.job),
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta train",
        "--space stereo-cpu|stereo-gpu|SPEC [--schedule smoke|quick|full|finetune] [--data D]\n"
        "                   [--init CKPT] [--mix R] [--textures DIR|default|none]\n"
        "                   [--batch N|auto]\n"
        "                   [--out DIR] [--ckpt-every N] [--resume] [OPTIONS]",
        stereo_cmd_train_about,
        defs,
        0,
        0};
    int first, rc = 2;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK) {
        free(r);
        return pr == OPT_HELP ? 0 : 2;
    }
    if (r->o.batch_arg && !stereo_cmd_batch_arg(r->o.batch_arg, &r->o.batch, &r->o.batch_auto)) {
        free(r);
        return 2;
    }
    const stereo_run_opts ro = run_opts(&r->o);
    const char *bad = stereo_run_conflict(&ro); /* one line, nothing written */
    if (bad) {
        fprintf(stderr, "manta train: %s\n", bad);
        free(r);
        return 2;
    }
    if (!r->o.schedule) /* --init fine-tunes by default */
        r->o.schedule = r->o.init ? "finetune" : "quick";
    if (!job_config("manta train", &r->o.job, &r->cfg)) {
        free(r);
        return 2;
    }
    r->rank = r->cfg.world_size > 1 ? r->cfg.rank : 0;
    snprintf(r->host, sizeof r->host, "?");
    gethostname(r->host, sizeof r->host - 1);
    rc = setup(r) ? train_loop(r) : 1;
    job_outputs_close("manta train", r->monitor, r->metrics, r->events);
    job_leave(r->dp, r->ring, r->devs, r->n_dev, &r->cfg);
    stereo_batch_free(&r->b);
    stereo_run_data_free(&r->data);
    free(r->meta.ef);
    free(r);
    return rc;
}
