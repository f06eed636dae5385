/* manta train: the classification task of the training driver (train/driver.h): one step,
 * the progress lines and records, the replicas' weight checks, checkpoints, and the
 * evaluation after each phase. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/clock.h"
#include "core/strbuf.h"
#include "classify/progress.h"
#include "train/driver.h"
#include "train_run.h"

/* Top-1 of the largest and smallest sub-networks on the validation split. */
static manta_status evaluate_phase(mcl_dev *d, ofa_trainer *t, run_data *rd, const train_opts *o,
                                   int phase, double top1[2], manta_err *err)
{
    const ofa_space *sp = ofa_supernet_space(ofa_trainer_net(t));
    const int batch = ofa_trainer_batch(t); /* this device's shard size */
    int *scratch = malloc((size_t)batch * sizeof *scratch);
    if (!scratch)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "evaluating after phase %d: out of memory",
                             phase + 1);
    manta_status st = MANTA_OK;
    for (int which = 0; which < 2 && st == MANTA_OK; which++) {
        ofa_arch a;
        (which == 0 ? ofa_arch_max : ofa_arch_min)(sp, 0, &a);
        eval_source recal = {&rd->train, rd->split.train, rd->split.n_train, batch, &rd->aug_train,
                             {0, 0},     scratch};
        eval_source val = {&rd->train,    rd->split.val, rd->split.n_val, batch,
                           &rd->aug_eval, {0, 0},        scratch};
        manta_rng_seed(&recal.rng, o->seed, 0xeca1);
        long n_eval = o->eval_images < rd->split.n_val ? o->eval_images : rd->split.n_val;
        st = ofa_trainer_evaluate(t, &a, eval_source_batch, &recal, o->recal_images,
                                  eval_source_batch, &val, n_eval, &top1[which], NULL);
        if (st != MANTA_OK)
            manta_err_set(err, st, "evaluating after phase %d: %s", phase + 1,
                          manta_err_msg(mcl_err(d), st));
    }
    free(scratch);
    return st;
}

/* Where the run's records go. */
static job_log run_log(const train_run *r)
{
    return (job_log){"manta train", r->metrics, r->rank, r->host, r->monitor};
}

void train_fail(train_run *r, long step, const char *fmt, ...)
{
    char msg[MANTA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    job_log l = run_log(r);
    job_fail(&l, step, "%s", msg);
}

/* Checkpoint @p name in the run's folder (rank 0), resuming at @p next_step. */
static manta_status save(train_run *r, const char *name, long next_step, manta_err *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", r->out_dir, name);
    train_meta *m = &r->meta;
    m->step = next_step;
    m->has_teacher = ofa_trainer_has_teacher(r->t);
    m->loader = r->ls;
    manta_err e;
    manta_err_clear(&e);
    manta_status st = trainstate_save(path, r->t, r->d, m, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "checkpoint %s: %s", path, manta_err_msg(&e, st));
    return MANTA_OK;
}

/* Train global step @p step on the next batch into @p res. */
static manta_status run_step(train_run *r, train_progress *pg, long step, ofa_step_result *res,
                             manta_err *err)
{
    manta_err e;
    manta_err_clear(&e);
    prefetch_batch b;
    double wait = 0;
    manta_status st = data_prefetch_next(r->pf, &b, &wait, &e);
    if (st != MANTA_OK || b.n != r->o.batch) {
        st = st == MANTA_OK ? MANTA_ERR_INTERNAL : st;
        return manta_err_set(err, st, "data: %s", manta_err_msg(&e, st));
    }
    double ts = cmd_now();
    dp_set_data_wait(r->dp, wait);
    st = ofa_dp_step(r->dp, step, b.images, b.labels, res, &e);
    double dt = cmd_now() - ts;
    if (st != MANTA_OK) {
        long ip;
        int pi = ofa_schedule_locate(&r->sched, step, &ip);
        if (r->replicas > 1) /* the message names the rank, step and device */
            return manta_err_set(err, st, "%s (host %s, phase %s)", manta_err_msg(&e, st), r->host,
                                 pi >= 0 ? r->sched.phase[pi].name : "?");
        return manta_err_set(err, st, "step %ld (phase %s): %s", step + 1,
                             pi >= 0 ? r->sched.phase[pi].name : "?", manta_err_msg(&e, st));
    }
    r->ls = b.after;
    ofa_progress_add(pg, res, wait, dt);
    return MANTA_OK;
}

/* Scalars of step @p step into the event file (job_events()). */
static void log_events(train_run *r, long step, const manta_tfscalar *v, size_t n)
{
    job_events(&r->events, "manta train", step, v, n);
}

/* The progress line after @p done steps: into metrics.jsonl, the event file, and on stdout. */
static void log_progress(train_run *r, train_progress *pg, ofa_subnet_sizes *z,
                         const ofa_step_result *res, long done)
{
    train_report rep;
    ofa_progress_report(pg, res, done, cmd_now(), &rep);
    /* the record of docs/monitor.md: the report, its time, the sampled sub-networks' sizes,
     * and every rank's figures of the last step */
    manta_rec rec = {.kind = MANTA_REC_PROGRESS};
    ofa_report_record(&rep, &rec.progress);
    rec.progress.time = manta_wall_time();
    ofa_progress_subnets_take(z, &rec.progress.subnets);
    const int per_rank = r->o.batch / (r->replicas / r->n_dev);
    job_log l = run_log(r);
    manta_rec_rank *ranks = NULL;
    rec.progress.n_ranks = job_ranks(r->dp, &l, r->d, per_rank, rec.progress.time, &ranks);
    rec.progress.ranks = ranks;
    job_write(&l, &rec);
    free(ranks);
    char tags[JOB_RANK_TAGS][JOB_TAG_BYTES];
    manta_tfscalar ev[8 + JOB_RANK_TAGS] = {
        {"train/loss", (float)rep.loss},
        {"train/batch_top1", (float)rep.batch_top1},
        {"train/lr", rep.lr},
        {"train/images_per_s", (float)rep.images_per_s},
        {"train/data_wait", (float)rep.data_wait},
        {"train/step_ms", (float)rep.step_ms},
        {"train/phase", (float)(rep.phase + 1)},
        {"train/resolution", (float)rep.r},
    };
    size_t nev = 8 + job_rank_scalars(r->dp, per_rank, tags, ev + 8, JOB_RANK_TAGS);
    log_events(r, rep.step, ev, nev);
    if (r->o.json) {
        char line[512];
        ofa_report_json(&rep, line, sizeof line);
        printf("%s\n", line);
    } else {
        printf("phase %d/%d %-8s step %6ld/%ld  loss %.4f  top-1 %5.1f%%  r %2d  lr %.4f  "
               "%6.1f img/s  data-wait %4.1f%%  ETA %.0f s\n",
               rep.phase + 1, r->sched.n_phases, rep.phase_name, rep.step, rep.steps, rep.loss,
               100.0 * rep.batch_top1, rep.r, rep.lr, rep.images_per_s, 100.0 * rep.data_wait,
               rep.eta_s);
    }
    fflush(stdout);
}

/* The replicas' weights compared after @p done steps. */
static manta_status sync_check(train_run *r, long done, manta_err *err)
{
    manta_err e;
    manta_err_clear(&e);
    unsigned char h[DP_HASH_BYTES];
    manta_status st = dp_check(r->dp, done, h, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "rank %d (%s): %s", r->rank, r->host, manta_err_msg(&e, st));
    if (r->o.json && !r->quiet) {
        char hx[2 * DP_HASH_BYTES + 1];
        for (int k = 0; k < DP_HASH_BYTES; k++)
            snprintf(hx + 2 * k, 3, "%02x", h[k]);
        printf("{\"sync_check\":%ld,\"replicas\":%d,\"hash\":\"%s\"}\n", done, r->replicas, hx);
    }
    return MANTA_OK;
}

/* The classification task of one invocation (train/driver.h). */
typedef struct cls_task {
    train_run *r;
    train_progress pg;
    ofa_subnet_sizes z;
    ofa_step_result res; /* of the last step */
} cls_task;

static manta_status task_step(void *ctx, long step, manta_err *err)
{
    cls_task *c = ctx;
    if (c->r->join_pending) /* agreed after the step before: leave the ring for the new rank */
        return manta_err_set(err, MANTA_ERR_UNSUPPORTED, "a new rank joins before step %ld",
                             step + 1);
    MANTA_TRY(run_step(c->r, &c->pg, step, &c->res, err));
    if (c->r->el)
        MANTA_TRY(train_elastic_snapshot(c->r, step + 1, err));
    if (!c->r->quiet)
        ofa_progress_subnets_add(&c->z, &c->r->sp, &c->r->sched, step, c->res.phase, c->res.r);
    return MANTA_OK;
}

static manta_status task_before_save(void *ctx, long done, manta_err *err)
{
    (void)done;
    train_run *r = ((cls_task *)ctx)->r;
    return job_ef_gather(r->dp, r->rank, &r->meta.ef, &r->meta.n_ef, err);
}

static manta_status task_progress(void *ctx, long done, manta_err *err)
{
    (void)err;
    cls_task *c = ctx;
    if (!c->r->quiet)
        log_progress(c->r, &c->pg, &c->z, &c->res, done);
    return MANTA_OK;
}

static manta_status task_save(void *ctx, const char *name, long done, manta_err *err)
{
    return save(((cls_task *)ctx)->r, name, done, err);
}

/* The end of phase @p phase after @p done steps (its checkpoints written): the evaluation
 * of the largest and smallest sub-networks (every rank, in step), its record and line. */
static manta_status task_evaluate(void *ctx, int phase, long done, manta_err *err)
{
    train_run *r = ((cls_task *)ctx)->r;
    const ofa_phase *ph = &r->sched.phase[phase];
    double top1[2];
    if (r->o.eval_images <= 0 || r->rd.split.n_val <= 0)
        return MANTA_OK;
    /* on the first device */
    MANTA_TRY(evaluate_phase(r->d, r->t, &r->rd, &r->o, phase, top1, err));
    if (r->quiet)
        return MANTA_OK;
    manta_rec ev = {.kind = MANTA_REC_EVAL};
    ev.eval = (manta_rec_eval){
        .phase_index = phase, .step = done, .max_top1 = top1[0], .min_top1 = top1[1]};
    snprintf(ev.eval.phase, sizeof ev.eval.phase, "%s", ph->name);
    job_log l = run_log(r);
    job_write(&l, &ev);
    const manta_tfscalar top[] = {{"val/top1_largest", (float)top1[0]},
                                  {"val/top1_smallest", (float)top1[1]}};
    log_events(r, done, top, 2);
    if (r->o.json) {
        manta_strbuf b = {0};
        manta_rec_eval_json(&ev.eval, &b);
        printf("%s\n", b.oom ? "{}" : b.p);
        manta_strbuf_free(&b);
    } else {
        printf("phase %d/%d %s done: validation top-1 largest %.2f%%, smallest %.2f%% "
               "(%s/phase-%d-%s.ckpt)\n",
               phase + 1, r->sched.n_phases, ph->name, 100 * top1[0], 100 * top1[1], r->out_dir,
               phase + 1, ph->name);
    }
    return MANTA_OK;
}

/* Stop together: a signal may reach the ranks at different steps. */
static manta_status task_agree_stop(void *ctx, long step, bool *signal, manta_err *err)
{
    train_run *r = ((cls_task *)ctx)->r;
    manta_err e;
    manta_err_clear(
        &e); /* with --elastic also whether a new rank waits (rank 0 hears it from the rendezvous) */
    float f[2] = {*signal ? 1.0f : 0.0f, r->rank == 0 && train_elastic_poll(r) ? 1.0f : 0.0f};
    manta_status st = ring_allreduce(r->ring, f, r->el ? 2 : 1, RING_SUM, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "rank %d (%s): step %ld: %s", r->rank, r->host, step + 1,
                             manta_err_msg(&e, st));
    *signal = f[0] > 0;
    r->join_pending = f[1] > 0 && !*signal;
    return MANTA_OK;
}

static manta_status task_check(void *ctx, long done, manta_err *err)
{
    return sync_check(((cls_task *)ctx)->r, done, err);
}

static void task_record(void *ctx, const manta_rec *rec)
{
    job_log l = run_log(((cls_task *)ctx)->r);
    job_write(&l, rec);
}

int train_loop(train_run *r)
{
    const train_opts *o = &r->o;
    cls_task *c = calloc(1, sizeof *c);
    if (!c) {
        train_fail(r, r->start, "out of memory");
        return 1;
    }
    c->r = r;
    ofa_progress_start(&c->pg, &r->sched, r->work, r->start, o->batch, cmd_now());
    ofa_progress_subnets_start(&c->z, dp_sample_seed(r->o.seed, r->o.mode, r->rank));
    const train_task task = {c,
                             task_step,
                             task_progress,
                             task_save,
                             task_evaluate,
                             r->ring ? task_agree_stop : NULL,
                             r->replicas > 1 ? task_check : NULL,
                             task_record,
                             r->ring ? task_before_save : NULL};
    train_drive_opts dopt;
    train_drive_opts_default(&dopt, &r->sched);
    dopt.start = r->start;
    dopt.log_every = o->log_every;
    dopt.ckpt_every = o->ckpt_every;
    dopt.stop_after = o->stop_after;
    dopt.check_every = o->job.sync_check;
    dopt.stop_request = job_stop_signals();
    dopt.rank = r->rank;
    train_drive_result res;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = train_drive(&task, &dopt, &res, &err);
    free(c);
    if (st != MANTA_OK && r->el && r->join_pending) {
        if (!r->quiet)
            fprintf(stderr, "manta train: a new rank waits: re-forming the ring after step %ld\n",
                    res.fail_step);
        return TRAIN_REFORM;
    }
    if (st != MANTA_OK && r->el && r->ring && ring_failed(r->ring)) {
        fprintf(stderr, "manta train: %s; re-forming the ring without it\n",
                manta_err_msg(&err, st));
        r->start = res.fail_step;
        return TRAIN_REFORM;
    }
    if (st != MANTA_OK) {
        train_fail(r, res.fail_step, "%s", manta_err_msg(&err, st));
        return 1;
    }
    if (res.stopped) {
        if (!r->quiet)
            fprintf(stderr, "manta train: stopped after step %ld; '--resume --out %s' continues\n",
                    res.next, r->out_dir);
        return res.by_signal ? 130 : 0;
    }
    if (!o->json && !r->quiet)
        printf("trained %ld steps in %.1f s; checkpoints in %s\n", res.done, res.seconds,
               r->out_dir);
    else if (!r->quiet)
        printf("{\"done\":true,\"trained_steps\":%ld,\"seconds\":%.1f}\n", res.done, res.seconds);
    return 0;
}
