/* manta train: the steps of one invocation, their progress lines, the
 * replicas' weight checks, checkpoints, and the evaluation after each phase. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/clock.h"
#include "core/strbuf.h"
#include "classify/progress.h"
#include "train_run.h"

/* Set by SIGINT/SIGTERM; the loop checkpoints and stops at the next step. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
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

/* Checkpoint @p name in the run's folder (rank 0) and its record in metrics.jsonl. */
static int save(train_run *r, const char *name, long next_step)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", r->out_dir, name);
    train_meta *m = &r->meta;
    m->step = next_step;
    m->has_teacher = ofa_trainer_has_teacher(r->t);
    m->loader = r->ls;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = trainstate_save(path, r->t, r->d, m, &err);
    if (st != MANTA_OK) {
        train_fail(r, next_step, "checkpoint %s: %s", path, manta_err_msg(&err, st));
        return 0;
    }
    job_log l = run_log(r);
    job_record_checkpoint(&l, name, next_step);
    return 1;
}

/* Train global step @p step on the next batch; false after printing why not. */
static bool run_step(train_run *r, train_progress *pg, long step, ofa_step_result *res)
{
    manta_err err;
    manta_err_clear(&err);
    prefetch_batch b;
    double wait = 0;
    manta_status st = prefetch_next(r->pf, &b, &wait, &err);
    if (st != MANTA_OK || b.n != r->o.batch) {
        train_fail(r, step, "data: %s", manta_err_msg(&err, st == MANTA_OK ? MANTA_ERR_INTERNAL : st));
        return false;
    }
    double ts = cmd_now();
    dp_set_data_wait(r->dp, wait);
    st = ofa_dp_step(r->dp, step, b.images, b.labels, res, &err);
    double dt = cmd_now() - ts;
    if (st != MANTA_OK) {
        long ip;
        int pi = ofa_schedule_locate(&r->sched, step, &ip);
        if (r->replicas > 1) /* the message names the rank, step and device */
            train_fail(r, step, "%s (host %s, phase %s)", manta_err_msg(&err, st), r->host,
                       pi >= 0 ? r->sched.phase[pi].name : "?");
        else
            train_fail(r, step, "step %ld (phase %s): %s", step + 1,
                       pi >= 0 ? r->sched.phase[pi].name : "?", manta_err_msg(&err, st));
        return false;
    }
    r->ls = b.after;
    train_progress_add(pg, res, wait, dt);
    return true;
}

/* The sizes of the sub-networks this rank trained since the last progress record: MACs
 * (one image at the step's resolution) and parameters of each. The trainer draws them with
 * ofa_sample_subnet() from (sampling seed, step, k) alone, so they are drawn again here as
 * it drew them, without its help. */
typedef struct subnet_sizes {
    ofa_desc desc;  /* scratch of ofa_describe() */
    uint64_t seed;  /* the trainer's sampling seed on this rank */
    long n;         /* sub-networks counted */
    double macs_sum, macs_min, macs_max, params_sum, params_min, params_max;
} subnet_sizes;

static void subnets_start(train_run *r, subnet_sizes *z)
{
    memset(z, 0, sizeof *z);
    z->seed = dp_sample_seed(r->o.seed, r->o.mode, r->rank);
}

/* The sub-networks of global step @p step (phase and resolution from @p res) counted. */
static void subnets_add(train_run *r, subnet_sizes *z, long step, const ofa_step_result *res)
{
    if (res->phase < 0 || res->phase >= r->sched.n_phases)
        return;
    const ofa_phase *p = &r->sched.phase[res->phase];
    for (int k = 0; k < p->subnets; k++) {
        ofa_arch a;
        manta_err err;
        ofa_sample_subnet(&r->sp, p, z->seed, step, k, res->r, &a);
        if (ofa_describe(&r->sp, &a, &z->desc, &err) != MANTA_OK)
            continue;
        const double macs = z->desc.macs, params = (double)z->desc.params;
        if (z->n++ == 0) {
            z->macs_min = z->macs_max = macs;
            z->params_min = z->params_max = params;
        }
        z->macs_sum += macs;
        z->params_sum += params;
        z->macs_min = macs < z->macs_min ? macs : z->macs_min;
        z->macs_max = macs > z->macs_max ? macs : z->macs_max;
        z->params_min = params < z->params_min ? params : z->params_min;
        z->params_max = params > z->params_max ? params : z->params_max;
    }
}

/* The sizes counted since the last progress record into @p out (n 0: none were counted);
 * the count starts again. */
static void subnets_take(subnet_sizes *z, manta_rec_subnets *out)
{
    *out = (manta_rec_subnets){0};
    if (z->n > 0)
        *out = (manta_rec_subnets){z->n,
                                   z->macs_sum / (double)z->n,
                                   z->macs_min,
                                   z->macs_max,
                                   z->params_sum / (double)z->n,
                                   z->params_min,
                                   z->params_max};
    z->n = 0;
    z->macs_sum = z->params_sum = 0;
}

/* Stop together: a signal may reach the ranks at different steps. */
static bool agree_stop(train_run *r, long step, int *stop)
{
    manta_err err;
    manta_err_clear(&err);
    float f = (float)stop_requested;
    manta_status st = ring_allreduce(r->ring, &f, 1, RING_SUM, &err);
    if (st != MANTA_OK) {
        train_fail(r, step, "rank %d (%s): step %ld: %s", r->rank, r->host, step + 1,
                   manta_err_msg(&err, st));
        return false;
    }
    if (f > 0)
        stop_requested = 1, *stop = 1;
    return true;
}

/* Scalars of step @p step into the event file (job_events()). */
static void log_events(train_run *r, long step, const manta_tfscalar *v, size_t n)
{
    job_events(&r->events, "manta train", step, v, n);
}

/* The progress line after @p done steps: into metrics.jsonl, the event file, and on stdout. */
static void log_progress(train_run *r, train_progress *pg, subnet_sizes *z,
                         const ofa_step_result *res, long done)
{
    train_report rep;
    train_progress_report(pg, res, done, cmd_now(), &rep);
    /* the record of docs/monitor.md: the report, its time, the sampled sub-networks' sizes,
     * and every rank's figures of the last step */
    manta_rec rec = {.kind = MANTA_REC_PROGRESS};
    train_report_record(&rep, &rec.progress);
    rec.progress.time = manta_wall_time();
    subnets_take(z, &rec.progress.subnets);
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
        train_report_json(&rep, line, sizeof line);
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
static bool sync_check(train_run *r, long done)
{
    manta_err err;
    manta_err_clear(&err);
    unsigned char h[DP_HASH_BYTES];
    manta_status st = dp_check(r->dp, done, h, &err);
    if (st != MANTA_OK) {
        train_fail(r, done, "rank %d (%s): %s", r->rank, r->host, manta_err_msg(&err, st));
        return false;
    }
    if (r->o.json && !r->quiet) {
        char hx[2 * DP_HASH_BYTES + 1];
        for (int k = 0; k < DP_HASH_BYTES; k++)
            snprintf(hx + 2 * k, 3, "%02x", h[k]);
        printf("{\"sync_check\":%ld,\"replicas\":%d,\"hash\":\"%s\"}\n", done, r->replicas, hx);
    }
    return true;
}

/* The end of a phase after @p done steps: its checkpoint and the latest (rank 0), and
 * the evaluation of the largest and smallest sub-networks (every rank, in step). */
static bool end_phase(train_run *r, const ofa_step_result *res, long done)
{
    const ofa_phase *ph = &r->sched.phase[res->phase];
    char name[64];
    snprintf(name, sizeof name, "phase-%d-%s.ckpt", res->phase + 1, ph->name);
    if (r->rank == 0 && (!save(r, name, done) || !save(r, "latest.ckpt", done)))
        return false;
    double top1[2];
    if (r->o.eval_images <= 0 || r->rd.split.n_val <= 0)
        return true;
    if (!evaluate_phase(r->d, r->t, &r->rd, &r->o, res->phase, top1)) /* on the first device */
        return false;
    if (r->quiet)
        return true;
    manta_rec ev = {.kind = MANTA_REC_EVAL};
    ev.eval = (manta_rec_eval){.phase_index = res->phase, .step = done, .max_top1 = top1[0],
                               .min_top1 = top1[1]};
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
        printf("phase %d/%d %s done: validation top-1 largest %.2f%%, smallest %.2f%% (%s/%s)\n",
               res->phase + 1, r->sched.n_phases, ph->name, 100 * top1[0], 100 * top1[1],
               r->out_dir, name);
    }
    return true;
}

int train_loop(train_run *r)
{
    const train_opts *o = &r->o;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    train_progress pg;
    train_progress_start(&pg, &r->sched, r->work, r->start, o->batch, cmd_now());
    subnet_sizes z;
    subnets_start(r, &z);
    long done = 0;
    for (long step = r->start; step < r->total; step++) {
        ofa_step_result res;
        if (!run_step(r, &pg, step, &res))
            return 1;
        if (!r->quiet)
            subnets_add(r, &z, step, &res);
        done++;
        int stop = stop_requested || (o->stop_after > 0 && done == o->stop_after);
        if (r->ring && !agree_stop(r, step, &stop))
            return 1;
        long in_phase;
        ofa_schedule_locate(&r->sched, step, &in_phase);
        int phase_end = in_phase + 1 == r->sched.phase[res.phase].steps;
        if (!r->quiet && ((step + 1) % o->log_every == 0 || phase_end || step + 1 == r->total))
            log_progress(r, &pg, &z, &res, step + 1);
        int ckpt = phase_end || (o->ckpt_every > 0 && (step + 1) % o->ckpt_every == 0) || stop;
        if (r->replicas > 1 && (ckpt || (o->job.sync_check > 0 && (step + 1) % o->job.sync_check == 0)) &&
            !sync_check(r, step + 1))
            return 1;
        if (phase_end ? !end_phase(r, &res, step + 1)
                      : ckpt && r->rank == 0 && !save(r, "latest.ckpt", step + 1))
            return 1;
        if (stop) {
            job_log l = run_log(r);
            job_record_stopped(&l, step + 1, stop_requested);
            if (!r->quiet)
                fprintf(stderr, "manta train: stopped after step %ld; '--resume --out %s' continues\n",
                        step + 1, r->out_dir);
            return stop_requested ? 130 : 0;
        }
    }
    job_log l = run_log(r);
    job_record_done(&l, r->total, cmd_now() - pg.t0);
    if (!o->json && !r->quiet)
        printf("trained %ld steps in %.1f s; checkpoints in %s\n", done, cmd_now() - pg.t0,
               r->out_dir);
    else if (!r->quiet)
        printf("{\"done\":true,\"trained_steps\":%ld,\"seconds\":%.1f}\n", done, cmd_now() - pg.t0);
    return 0;
}

