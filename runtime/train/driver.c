#include "train/driver.h"

#include <stdio.h>

#include "core/clock.h"

void train_drive_opts_default(train_drive_opts *o, const ofa_schedule *sched)
{
    *o = (train_drive_opts){.sched = sched, .log_every = 20, .ckpt_every = 500};
}

/* Rank 0: record @p rec. */
static void record(const train_task *t, const train_drive_opts *o, const manta_rec *rec)
{
    if (o->rank == 0 && t->record)
        t->record(t->ctx, rec);
}

/* Rank 0: checkpoint @p name resuming at step @p done, and its record. */
static manta_status save(const train_task *t, const train_drive_opts *o, const char *name,
                         long done, manta_err *err)
{
    if (o->rank != 0)
        return MANTA_OK;
    MANTA_TRY(t->save(t->ctx, name, done, err));
    manta_rec rec = {.kind = MANTA_REC_CHECKPOINT};
    rec.checkpoint = (manta_rec_checkpoint){.time = manta_wall_time(), .step = done};
    snprintf(rec.checkpoint.path, sizeof rec.checkpoint.path, "%s", name);
    record(t, o, &rec);
    return MANTA_OK;
}

/* What follows step @p step (see driver.h, 2. to 6.): *stop set when the run stops there. */
static manta_status after_step(const train_task *t, const train_drive_opts *o, long step, long done,
                               bool *stop, bool *by_signal, manta_err *err)
{
    const ofa_schedule *s = o->sched;
    const long total = ofa_schedule_total_steps(s), next = step + 1;
    bool signal = o->stop_request && *o->stop_request;
    if (t->agree_stop)
        MANTA_TRY(t->agree_stop(t->ctx, step, &signal, err));
    *by_signal = signal;
    *stop = signal || (o->stop_after > 0 && done == o->stop_after);
    long in_phase;
    const int phase = ofa_schedule_locate(s, step, &in_phase);
    const bool phase_end = phase >= 0 && in_phase + 1 == s->phase[phase].steps;
    if (t->progress && (next % o->log_every == 0 || phase_end || next == total))
        MANTA_TRY(t->progress(t->ctx, next, err));
    const bool ckpt = phase_end || (o->ckpt_every > 0 && next % o->ckpt_every == 0) || *stop;
    if (t->check && (ckpt || (o->check_every > 0 && next % o->check_every == 0)))
        MANTA_TRY(t->check(t->ctx, next, err));
    if (t->before_save && (ckpt || phase_end))
        MANTA_TRY(t->before_save(t->ctx, next, err));
    if (phase_end) {
        char name[64];
        snprintf(name, sizeof name, "phase-%d-%s.ckpt", phase + 1, s->phase[phase].name);
        MANTA_TRY(save(t, o, name, next, err));
        MANTA_TRY(save(t, o, "latest.ckpt", next, err));
        if (t->evaluate)
            MANTA_TRY(t->evaluate(t->ctx, phase, next, err));
    } else if (ckpt) {
        MANTA_TRY(save(t, o, "latest.ckpt", next, err));
    }
    return MANTA_OK;
}

manta_status train_drive(const train_task *task, const train_drive_opts *o, train_drive_result *out,
                         manta_err *err)
{
    *out = (train_drive_result){.next = o->start, .fail_step = o->start};
    const long total = o->sched ? ofa_schedule_total_steps(o->sched) : 0;
    if (!o->sched || !task->step || !task->save)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "training driver: a task needs a schedule, a step and a save");
    if (o->start < 0 || o->start > total || o->log_every < 1 || o->ckpt_every < 0 ||
        o->stop_after < 0 || o->check_every < 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "training driver: start %ld of %ld steps, log every %ld, checkpoint "
                             "every %ld, stop after %ld, check every %ld",
                             o->start, total, o->log_every, o->ckpt_every, o->stop_after,
                             o->check_every);
    const double t0 = manta_now();
    for (long step = o->start; step < total; step++) {
        out->fail_step = step;
        manta_status st = task->step(task->ctx, step, err);
        if (st == MANTA_OK) {
            out->done++;
            out->next = step + 1;
            bool stop = false;
            st = after_step(task, o, step, out->done, &stop, &out->by_signal, err);
            if (st == MANTA_OK && stop) {
                manta_rec rec = {.kind = MANTA_REC_STOPPED};
                rec.stopped = (manta_rec_stopped){
                    .time = manta_wall_time(), .step = step + 1, .signal = out->by_signal};
                record(task, o, &rec);
                out->stopped = true;
                out->seconds = manta_now() - t0;
                return MANTA_OK;
            }
            if (st != MANTA_OK)
                out->fail_step = step + 1;
        }
        if (st != MANTA_OK) {
            out->seconds = manta_now() - t0;
            return st;
        }
    }
    out->seconds = manta_now() - t0;
    manta_rec rec = {.kind = MANTA_REC_DONE};
    rec.done = (manta_rec_done){.time = manta_wall_time(), .step = total, .seconds = out->seconds};
    record(task, o, &rec);
    return MANTA_OK;
}
