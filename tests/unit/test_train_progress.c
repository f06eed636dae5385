/* Progress of a training run (classify/progress.h): the work left across phases,
 * the window's means, images/s, the share waiting for data, the time left at
 * the rate so far (also after a resume), the window starting afresh after a
 * report, and the metrics.jsonl line. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "classify/progress.h"

/* Three phases of 3, 5 and 2 steps whose steps weigh 1, 2 and 4. */
static void three_phases(ofa_schedule *s, double *work)
{
    static const char *const names[] = {"full", "kernel", "depth-1"};
    static const long steps[] = {3, 5, 2};
    memset(s, 0, sizeof *s);
    s->n_phases = 3;
    for (int p = 0; p < 3; p++) {
        strcpy(s->phase[p].name, names[p]);
        s->phase[p].steps = steps[p];
        work[p] = p == 0 ? 1 : p == 1 ? 2 : 4;
    }
}

static ofa_step_result step(int phase, float loss, int correct)
{
    return (ofa_step_result){.phase = phase,
                             .r = 24 + 4 * phase,
                             .loss = loss,
                             .correct = correct,
                             .predictions = 16,
                             .lr = 0.125f};
}

static void test_work_left(void **state)
{
    (void)state;
    ofa_schedule s;
    double work[3];
    three_phases(&s, work);
    static const double want[] = {21, 20, 19, 18, 16, 14, 12, 10, 8, 4, 0, 0};
    for (long i = 0; i < 12; i++)
        assert_true(ofa_work_left(&s, work, i) == want[i]);
}

static void test_reports(void **state)
{
    (void)state;
    ofa_schedule s;
    double work[3];
    three_phases(&s, work);
    train_progress p;
    ofa_progress_start(&p, &s, work, 0, 16, 100.0);
    ofa_step_result r[3] = {step(0, 2.0f, 4), step(0, 1.0f, 8), step(0, 1.5f, 12)};
    for (int i = 0; i < 3; i++)
        ofa_progress_add(&p, &r[i], 0.25, 0.5);
    train_report rep;
    ofa_progress_report(&p, &r[2], 3, 103.0, &rep);
    assert_int_equal(rep.step, 3);
    assert_int_equal(rep.steps, 10);
    assert_int_equal(rep.phase, 0);
    assert_string_equal(rep.phase_name, "full");
    assert_true(rep.loss == 1.5);
    assert_true(rep.batch_top1 == 24.0 / 48.0);
    assert_int_equal(rep.r, 24);
    assert_true(rep.lr == 0.125f);
    assert_true(rep.images_per_s == 16.0); /* 3 steps of 16 images in 3 s */
    assert_true(rep.data_wait == 0.25);    /* 0.75 s of 3 s */
    assert_true(fabs(rep.step_ms - 500) < 1e-9);
    assert_true(rep.eta_s == 18.0); /* work 3 took 3 s, 18 is left */
    /* a new window: two steps of the second phase in 4 s */
    ofa_step_result q[2] = {step(1, 3.0f, 16), step(1, 1.0f, 0)};
    ofa_progress_add(&p, &q[0], 0, 1.0);
    ofa_progress_add(&p, &q[1], 2, 3.0);
    ofa_progress_report(&p, &q[1], 5, 107.0, &rep);
    assert_string_equal(rep.phase_name, "kernel");
    assert_int_equal(rep.r, 28);
    assert_true(rep.loss == 2.0);
    assert_true(rep.batch_top1 == 0.5);
    assert_true(rep.images_per_s == 8.0);
    assert_true(rep.data_wait == 0.5);
    assert_true(rep.step_ms == 2000.0);
    assert_true(rep.eta_s == 14.0); /* work 7 took 7 s, 14 is left */
}

/* After a resume at step 4, the rate counts only this invocation's work. */
static void test_resumed(void **state)
{
    (void)state;
    ofa_schedule s;
    double work[3];
    three_phases(&s, work);
    train_progress p;
    ofa_progress_start(&p, &s, work, 4, 8, 50.0);
    ofa_step_result r = step(1, 1.0f, 1);
    ofa_progress_add(&p, &r, 0, 1);
    ofa_progress_add(&p, &r, 0, 1);
    train_report rep;
    ofa_progress_report(&p, &r, 6, 52.0, &rep);
    assert_true(rep.eta_s == 6.0); /* work 4 took 2 s, 12 is left */
    assert_true(rep.images_per_s == 8.0);
}

static void test_metrics_line(void **state)
{
    (void)state;
    const train_report rep = {.step = 120,
                              .steps = 4000,
                              .phase = 1,
                              .phase_name = "kernel",
                              .loss = 1.234567,
                              .batch_top1 = 0.56789,
                              .r = 28,
                              .lr = 0.0125f,
                              .images_per_s = 321.06,
                              .data_wait = 0.01234,
                              .step_ms = 49.87,
                              .eta_s = 3600.4};
    char line[512];
    int n = ofa_report_json(&rep, line, sizeof line);
    assert_string_equal(line, "{\"step\":120,\"steps\":4000,\"phase\":\"kernel\",\"phase_index\":1,"
                              "\"loss\":1.23457,\"batch_top1\":0.5679,\"r\":28,\"lr\":0.012500,"
                              "\"images_per_s\":321.1,\"data_wait\":0.0123,\"step_ms\":49.9,"
                              "\"eta_s\":3600}");
    assert_int_equal(n, (int)strlen(line));
    char small[16];
    assert_int_equal(ofa_report_json(&rep, small, sizeof small), n); /* cut, length told */
    assert_int_equal(strlen(small), sizeof small - 1);
}

/* The sizes of the sub-networks a step trained: each one drawn as the trainer draws it, its
 * MACs and parameters those ofa_describe() gives; min <= mean <= max; take starts again. */
static void test_subnet_sizes(void **state)
{
    (void)state;
    ofa_space sp;
    ofa_schedule sched;
    manta_err err = {0};
    ofa_space_cpu_default(&sp);
    assert_int_equal(ofa_schedule_preset(&sp, "quick", 64, 100, &sched, &err), MANTA_OK);
    const int ph = sched.n_phases - 1, k_n = sched.phase[ph].subnets;
    assert_true(k_n >= 2);
    ofa_subnet_sizes z;
    ofa_progress_subnets_start(&z, 11);
    double macs_sum = 0, macs_min = INFINITY, macs_max = 0;
    for (long step = 40; step < 43; step++) {
        ofa_progress_subnets_add(&z, &sp, &sched, step, ph, 28);
        for (int k = 0; k < k_n; k++) { /* drawn here as the trainer draws them */
            ofa_arch a;
            static ofa_desc d;
            ofa_sample_subnet(&sp, &sched.phase[ph], 11, step, k, 28, &a);
            assert_int_equal(ofa_describe(&sp, &a, &d, &err), MANTA_OK);
            macs_sum += d.macs;
            macs_min = d.macs < macs_min ? d.macs : macs_min;
            macs_max = d.macs > macs_max ? d.macs : macs_max;
        }
    }
    ofa_progress_subnets_add(&z, &sp, &sched, 43, sched.n_phases, 28); /* no such phase */
    manta_rec_subnets out;
    ofa_progress_subnets_take(&z, &out);
    assert_int_equal(out.n, 3 * k_n);
    assert_true(fabs(out.macs_mean - macs_sum / (3 * k_n)) <= 1e-9 * macs_sum);
    assert_true(out.macs_min == macs_min && out.macs_max == macs_max);
    assert_true(out.params_min <= out.params_mean && out.params_mean <= out.params_max);
    assert_true(macs_min < macs_max); /* the draws differ */
    ofa_progress_subnets_take(&z, &out);
    assert_int_equal(out.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_work_left),    cmocka_unit_test(test_reports),
        cmocka_unit_test(test_resumed),      cmocka_unit_test(test_metrics_line),
        cmocka_unit_test(test_subnet_sizes),
    };
    return cmocka_run_group_tests_name("training progress", tests, NULL, NULL);
}
