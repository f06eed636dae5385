/* The training driver (train/driver.h) over a fake task that logs what it is asked to do:
 * progress, checkpoints and evaluations at their cadence, a stop request honoured after
 * the step under way, --stop-after, a stopped run resumed from its latest checkpoint ending
 * as an uninterrupted one, the records, another rank's request, errors. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/testutil.h"
#include "train/driver.h"

typedef struct fake {
    char log[4096];              /* what the driver asked, in order */
    long state;                  /* what training computes: a function of the steps run, in order */
    long latest_state;           /* the state latest.ckpt holds */
    long latest_step;            /* the step it resumes at */
    volatile sig_atomic_t *flag; /* set at step signal_at (a signal during that step) */
    long signal_at, fail_at;
    bool fail_save, remote_signal;
} fake;

static void logf_(fake *f, const char *fmt, ...)
{
    size_t n = strlen(f->log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->log + n, sizeof f->log - n, fmt, ap);
    va_end(ap);
}

static manta_status f_step(void *ctx, long step, manta_err *err)
{
    fake *f = ctx;
    if (step == f->fail_at)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "step %ld failed", step + 1);
    f->state = f->state * 31 + step + 1;
    if (step == f->signal_at && f->flag)
        *f->flag = 1;
    logf_(f, "s%ld ", step);
    return MANTA_OK;
}

static manta_status f_progress(void *ctx, long done, manta_err *err)
{
    (void)err;
    logf_(ctx, "p%ld ", done);
    return MANTA_OK;
}

static manta_status f_save(void *ctx, const char *name, long done, manta_err *err)
{
    fake *f = ctx;
    if (f->fail_save)
        return manta_err_set(err, MANTA_ERR_IO, "checkpoint %s: disk full", name);
    if (!strcmp(name, "latest.ckpt"))
        f->latest_state = f->state, f->latest_step = done;
    logf_(f, "c%ld:%s ", done, name);
    return MANTA_OK;
}

static manta_status f_evaluate(void *ctx, int phase, long done, manta_err *err)
{
    (void)err;
    logf_(ctx, "e%d@%ld ", phase, done);
    return MANTA_OK;
}

static manta_status f_agree(void *ctx, long step, bool *signal, manta_err *err)
{
    (void)step, (void)err;
    fake *f = ctx;
    *signal = *signal || f->remote_signal;
    return MANTA_OK;
}

static void f_record(void *ctx, const manta_rec *r)
{
    fake *f = ctx;
    switch (r->kind) {
    case MANTA_REC_CHECKPOINT: logf_(f, "R:ckpt@%ld ", r->checkpoint.step); break;
    case MANTA_REC_STOPPED:
        logf_(f, "R:stopped@%ld%s ", r->stopped.step, r->stopped.signal ? "(signal)" : "");
        break;
    case MANTA_REC_DONE: logf_(f, "R:done@%ld ", r->done.step); break;
    default: logf_(f, "R:other ");
    }
}

/* Two phases "a" and "b" of 5 steps each. */
static void schedule(ofa_schedule *s)
{
    memset(s, 0, sizeof *s);
    s->n_phases = 2;
    snprintf(s->phase[0].name, sizeof s->phase[0].name, "a");
    snprintf(s->phase[1].name, sizeof s->phase[1].name, "b");
    s->phase[0].steps = s->phase[1].steps = 5;
}

static train_task task_of(fake *f)
{
    return (train_task){f, f_step, f_progress, f_save, f_evaluate, NULL, NULL, f_record, NULL};
}

static void test_runs_the_schedule(void **state)
{
    (void)state;
    ofa_schedule s;
    schedule(&s);
    fake f = {.signal_at = -1, .fail_at = -1};
    train_task t = task_of(&f);
    train_drive_opts o;
    train_drive_opts_default(&o, &s);
    o.log_every = 3;
    o.ckpt_every = 4;
    train_drive_result r;
    manta_err e = {0};
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    assert_string_equal(f.log,
                        "s0 s1 s2 p3 s3 c4:latest.ckpt R:ckpt@4 "
                        "s4 p5 c5:phase-1-a.ckpt R:ckpt@5 c5:latest.ckpt R:ckpt@5 e0@5 "
                        "s5 p6 s6 s7 c8:latest.ckpt R:ckpt@8 s8 p9 "
                        "s9 p10 c10:phase-2-b.ckpt R:ckpt@10 c10:latest.ckpt R:ckpt@10 e1@10 "
                        "R:done@10 ");
    assert_int_equal(r.done, 10);
    assert_int_equal(r.next, 10);
    assert_false(r.stopped);
    assert_int_equal(f.latest_step, 10);
}

static void test_stop_request_honoured_at_the_next_step(void **state)
{
    (void)state;
    ofa_schedule s;
    schedule(&s);
    volatile sig_atomic_t flag = 0;
    fake f = {.flag = &flag, .signal_at = 2, .fail_at = -1};
    train_task t = task_of(&f);
    train_drive_opts o;
    train_drive_opts_default(&o, &s);
    o.stop_request = &flag;
    train_drive_result r;
    manta_err e = {0};
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    /* the signal came during step 2: it ends, is checkpointed, and nothing else runs */
    assert_string_equal(f.log, "s0 s1 s2 c3:latest.ckpt R:ckpt@3 R:stopped@3(signal) ");
    assert_true(r.stopped);
    assert_true(r.by_signal);
    assert_int_equal(r.done, 3);
    assert_int_equal(r.next, 3);
}

static void test_stop_after_and_phase_end(void **state)
{
    (void)state;
    ofa_schedule s;
    schedule(&s);
    fake f = {.signal_at = -1, .fail_at = -1};
    train_task t = task_of(&f);
    train_drive_opts o;
    train_drive_opts_default(&o, &s);
    o.stop_after = 5; /* a phase's end: its checkpoints and evaluation, then the stop */
    o.log_every = 100;
    train_drive_result r;
    manta_err e = {0};
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    assert_string_equal(f.log, "s0 s1 s2 s3 s4 p5 c5:phase-1-a.ckpt R:ckpt@5 c5:latest.ckpt "
                               "R:ckpt@5 e0@5 R:stopped@5 ");
    assert_true(r.stopped);
    assert_false(r.by_signal);
    /* from step 5, two more: inside the phase, latest.ckpt alone */
    f.log[0] = 0;
    o.start = 5;
    o.stop_after = 2;
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    assert_string_equal(f.log, "s5 s6 c7:latest.ckpt R:ckpt@7 R:stopped@7 ");
    assert_int_equal(r.next, 7);
}

static void test_resume_continues_at_the_right_step(void **state)
{
    (void)state;
    ofa_schedule s;
    schedule(&s);
    fake whole = {.signal_at = -1, .fail_at = -1};
    train_task t = task_of(&whole);
    train_drive_opts o;
    train_drive_opts_default(&o, &s);
    o.ckpt_every = 0;
    train_drive_result r;
    manta_err e = {0};
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    for (long stop = 1; stop < 10; stop++) { /* a signal after every step in turn */
        volatile sig_atomic_t flag = 0;
        fake part = {.flag = &flag, .signal_at = stop - 1, .fail_at = -1};
        t = task_of(&part);
        train_drive_opts p = o;
        p.stop_request = &flag;
        assert_int_equal(train_drive(&t, &p, &r, &e), MANTA_OK);
        assert_true(r.stopped && r.by_signal);
        assert_int_equal(part.latest_step, stop);
        /* a new process: the state of latest.ckpt, from its step */
        fake again = {.state = part.latest_state, .signal_at = -1, .fail_at = -1};
        t = task_of(&again);
        p.stop_request = NULL;
        p.start = part.latest_step;
        assert_int_equal(train_drive(&t, &p, &r, &e), MANTA_OK);
        assert_false(r.stopped);
        assert_int_equal(r.done, 10 - stop);
        char first[16];
        snprintf(first, sizeof first, "s%ld ", stop);
        assert_memory_equal(again.log, first, strlen(first));
        assert_int_equal(again.latest_state, whole.latest_state);
        assert_int_equal(again.latest_step, 10);
    }
}

static void test_ranks(void **state)
{
    (void)state;
    ofa_schedule s;
    schedule(&s);
    /* rank 1: no checkpoints, no records, the evaluation; another rank's signal stops it */
    fake f = {.signal_at = -1, .fail_at = -1, .remote_signal = true};
    train_task t = task_of(&f);
    t.agree_stop = f_agree;
    train_drive_opts o;
    train_drive_opts_default(&o, &s);
    o.rank = 1;
    train_drive_result r;
    manta_err e = {0};
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    assert_string_equal(f.log, "s0 ");
    assert_true(r.stopped && r.by_signal);
}

static void test_errors(void **state)
{
    (void)state;
    ofa_schedule s;
    schedule(&s);
    fake f = {.signal_at = -1, .fail_at = 6};
    train_task t = task_of(&f);
    train_drive_opts o;
    train_drive_opts_default(&o, &s);
    train_drive_result r;
    manta_err e = {0};
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_ERR_INTERNAL);
    assert_string_equal(e.msg, "step 7 failed");
    assert_int_equal(r.fail_step, 6);
    assert_int_equal(r.done, 6);
    /* a failed checkpoint: after the step it follows */
    fake g = {.signal_at = -1, .fail_at = -1, .fail_save = true};
    t = task_of(&g);
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_ERR_IO);
    assert_string_equal(e.msg, "checkpoint phase-1-a.ckpt: disk full");
    assert_int_equal(r.fail_step, 5);
    /* nothing runs on bad options */
    fake h = {.signal_at = -1, .fail_at = -1};
    t = task_of(&h);
    o.start = 11;
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_ERR_INVALID_ARG);
    o.start = 0;
    o.log_every = 0;
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_ERR_INVALID_ARG);
    o.log_every = 1;
    t.save = NULL;
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_ERR_INVALID_ARG);
    assert_string_equal(h.log, "");
    /* the end of the schedule: nothing to run, the done record */
    t = task_of(&h);
    o.start = 10;
    assert_int_equal(train_drive(&t, &o, &r, &e), MANTA_OK);
    assert_string_equal(h.log, "R:done@10 ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_the_schedule),
        cmocka_unit_test(test_stop_request_honoured_at_the_next_step),
        cmocka_unit_test(test_stop_after_and_phase_end),
        cmocka_unit_test(test_resume_continues_at_the_right_step),
        cmocka_unit_test(test_ranks),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
