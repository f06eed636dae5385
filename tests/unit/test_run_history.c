/* A training run's history from its metrics.jsonl (core/run_history.h): classification and
 * stereo records with malformed lines, per-rank records, the sampled sub-networks' sizes and a
 * resume; files written before the records' schema version (tests/data/records/) and every
 * prefix of a file; missing files. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/run_history.h"

static const char classif[] =
    "{\"step\":1,\"steps\":6,\"phase\":\"full\",\"phase_index\":0,\"loss\":2.3,\"batch_top1\":0.1,"
    "\"r\":24,\"lr\":0.02,\"images_per_s\":100.5,\"data_wait\":0,\"step_ms\":10,\"eta_s\":5,"
    "\"subnets\":{\"n\":1,\"macs_mean\":17500000,\"macs_min\":17500000,\"macs_max\":17500000,"
    "\"params_mean\":1800000,\"params_min\":1800000,\"params_max\":1800000},"
    "\"ranks\":[{\"rank\":1,\"device\":\"gpu1\",\"images_per_s\":50},"
    "{\"rank\":0,\"device\":\"gpu0\",\"images_per_s\":50.5,\"step_ms\":9.5},"
    "{\"rank\":2,\"images_per_s\":49,\"compute_s\":0.008,\"data_wait_s\":0.001,"
    "\"allreduce_wait_s\":null}]}\n"
    "not json at all\n"
    "\n"
    "{\"step\":3,\"steps\":6,\"phase\":\"full\",\"phase_index\":0,\"loss\":2.1,\"batch_top1\":0.2,"
    "\"lr\":0.01,\"images_per_s\":110}\n"
    "{\"eval\":\"val\",\"phase\":\"full\",\"step\":3,\"max_top1\":0.25,\"min_top1\":0.125}\n"
    "{\"sync_check\":3,\"replicas\":2,\"hash\":\"ab\"}\n"
    "[1,2,3]\n"
    "{\"step\":6,\"steps\":6,\"phase\":\"kernel\",\"phase_index\":1,\"loss\":1.9,"
    "\"batch_top1\":0.3,\"lr\":0.005,\"images_per_s\":90,\"subnets\":{\"macs_mean\":1}}\n"
    "{\"step\":5,\"steps\":6,\"phase\":\"kernel\",\"phase_index\":1,\"loss\":1.8,"
    "\"batch_top1\":0.35,\"lr\":0.006,\"images_per_s\":95,\"subnets\":{\"n\":2,"
    "\"macs_mean\":8000000,\"macs_min\":6000000,\"macs_max\":9000000,\"params_mean\":1000000,"
    "\"params_min\":800000,\"params_max\":1200000}}\n" /* resumed: replaces step 6 */
    "{\"step\":6,\"steps\":6,\"phase\":\"kernel\",\"phase_index\":1,\"loss\":1.7,"
    "\"batch_top1\":0.4,\"lr\":0.004,\"images_per_s\":96,\"subnets\":{\"macs_mean\":7000000,"
    "\"macs_min\":-1,\"macs_max\":8000000}}\n"
    "{\"eval\":\"val\",\"phase\":\"kernel\",\"step\":6,\"max_top1\":0.5,\"min_top1\":0.375}\n"
    "{\"step\":7,\"phase\":\"ker"; /* a run in progress: a partly written line */

static void test_training_classification(void **state)
{
    (void)state;
    manta_run_history t = {0};
    manta_err err;
    assert_int_equal(manta_run_history_parse(classif, strlen(classif), "m.jsonl", &t, &err),
                     MANTA_OK);
    assert_false(t.stereo);
    assert_int_equal(t.malformed, 3);
    assert_int_equal(t.first_malformed, 2);
    assert_int_equal(t.lines, 11); /* non-empty lines */
    assert_int_equal(t.loss.n, 4); /* 1, 3, 5, 6 */
    assert_true(t.loss.step[2] == 5 && t.loss.step[3] == 6);
    assert_true(t.loss.v[3] == 1.7 && t.metric.v[3] == 0.4 && t.lr.v[3] == 0.004);
    assert_true(t.rate.v[0] == 100.5);
    assert_int_equal(t.steps, 6);
    assert_int_equal(t.n_phases, 2);
    assert_string_equal(t.phases[0].name, "full");
    assert_string_equal(t.phases[1].name, "kernel");
    assert_int_equal(t.phases[0].last_step, 3);
    assert_int_equal(t.phases[1].last_step, 6);
    assert_true(t.phases[0].has_val && t.phases[0].val_largest == 0.25 &&
                t.phases[0].val_smallest == 0.125 && t.phases[0].val_step == 3);
    assert_true(t.phases[1].has_val && t.phases[1].val_largest == 0.5);
    /* ranks, sorted by rank; a missing step_ms is NaN */
    assert_int_equal(t.n_ranks, 3);
    assert_int_equal(t.ranks[0].rank, 0);
    assert_string_equal(t.ranks[0].device, "gpu0");
    assert_true(t.ranks[0].ips.n == 1 && t.ranks[0].ips.v[0] == 50.5);
    assert_true(t.ranks[0].step_ms.v[0] == 9.5 && isnan(t.ranks[0].wait_ms.v[0]));
    assert_string_equal(t.ranks[1].device, "gpu1");
    assert_true(isnan(t.ranks[1].step_ms.v[0]));
    /* the monitor's split: compute, data wait, allreduce wait (seconds; null = not known) */
    assert_int_equal(t.ranks[2].rank, 2);
    assert_string_equal(t.ranks[2].device, "");
    assert_true(fabs(t.ranks[2].step_ms.v[0] - 9) < 1e-9 &&
                fabs(t.ranks[2].wait_ms.v[0] - 1) < 1e-9);
    /* the sampled sub-networks' sizes: points where a record has them (not step 3; the first
     * step 6 replaced; a negative member left out) */
    assert_int_equal(t.macs[0].n, 3);
    assert_true(t.macs[0].step[0] == 1 && t.macs[0].step[1] == 5 && t.macs[0].step[2] == 6);
    assert_true(t.macs[0].v[0] == 17.5e6 && t.macs[0].v[1] == 8e6 && t.macs[0].v[2] == 7e6);
    assert_int_equal(t.macs[1].n, 2);
    assert_true(t.macs[1].v[1] == 6e6);
    assert_int_equal(t.macs[2].n, 3);
    assert_true(t.macs[2].v[2] == 8e6);
    assert_int_equal(t.params[0].n, 2);
    assert_true(t.params[0].v[1] == 1e6 && t.params[1].v[1] == 8e5 && t.params[2].v[1] == 1.2e6);
    manta_run_history_free(&t);
    assert_null(t.loss.v);
    manta_run_history_free(&t); /* twice is fine */
}

static const char stereo[] =
    "{\"event\":\"step\",\"step\":1,\"phase\":1,\"loss\":1.2,\"kd_loss\":0,\"epe\":1.25,"
    "\"round\":1,\"lr\":0.02,\"pairs_per_s\":9.2}\n"
    "{\"event\":\"step\",\"step\":2,\"phase\":1,\"loss\":1.1,\"kd_loss\":0,\"epe\":1.5,"
    "\"round\":1,\"lr\":0.01,\"pairs_per_s\":190}\n"
    "{\"event\":\"phase_end\",\"phase\":1,\"name\":\"full\",\"step\":2,"
    "\"largest\":{\"epe\":1.6,\"bad3\":11,\"d1\":11,\"epe_noc\":1.6},"
    "\"smallest\":{\"epe\":1.7,\"bad3\":12,\"d1\":12,\"epe_noc\":1.7}}\n"
    "{\"event\":\"step\",\"step\":3,\"phase\":2,\"loss\":1.0,\"epe\":1.0,\"lr\":0.01,"
    "\"pairs_per_s\":100}\n"
    "{\"event\":\"future_thing\",\"step\":3,\"loss\":9}\n";

static void test_training_stereo(void **state)
{
    (void)state;
    manta_run_history t = {0};
    assert_int_equal(manta_run_history_parse(stereo, strlen(stereo), "s.jsonl", &t, NULL),
                     MANTA_OK);
    assert_true(t.stereo);
    assert_int_equal(t.malformed, 0);
    assert_int_equal(t.loss.n, 3);
    assert_true(t.metric.v[1] == 1.5 && t.rate.v[1] == 190);
    assert_int_equal(t.n_phases, 2);
    assert_string_equal(t.phases[0].name, "full");
    assert_string_equal(t.phases[1].name, "phase 2"); /* not named yet */
    assert_true(t.phases[0].has_val && t.phases[0].val_largest == 1.6 &&
                t.phases[0].val_smallest == 1.7);
    assert_false(t.phases[1].has_val);
    assert_int_equal(t.n_ranks, 0);
    assert_int_equal(t.macs[0].n, 0); /* stereo records have no "subnets" */
    manta_run_history_free(&t);
}

static void test_training_missing_and_empty(void **state)
{
    (void)state;
    manta_run_history t = {0};
    manta_err err;
    assert_int_equal(manta_run_history_load("/nonexistent/run/metrics.jsonl", &t, &err),
                     MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/run/metrics.jsonl"));
    assert_int_equal(manta_run_history_load("/", &t, &err), MANTA_ERR_IO); /* a folder */
    assert_int_equal(manta_run_history_parse("", 0, "e", &t, &err), MANTA_OK);
    assert_int_equal(t.loss.n, 0);
    assert_int_equal(t.lines, 0);
    manta_run_history_free(&t);
}

/* Files written before the schema version: the phases named and numbered from 0 alike for
 * both tasks (stereo's phases were counted from 1 then). */
static void test_v0_files(void **state)
{
    (void)state;
    static const char *const names[6] = {"full",    "kernel",   "depth-1",
                                         "depth-2", "expand-1", "expand-2"};
    manta_err err;
    manta_run_history t = {0};
    assert_int_equal(manta_run_history_load("tests/data/records/v0_stereo.jsonl", &t, &err),
                     MANTA_OK);
    assert_true(t.stereo);
    assert_int_equal(t.malformed, 0);
    assert_int_equal(t.loss.n, 12);
    assert_int_equal(t.n_phases, 6);
    for (int i = 0; i < 6; i++) {
        assert_string_equal(t.phases[i].name, names[i]);
        assert_true(t.phases[i].has_val && t.phases[i].val_step == 3 * (i + 1));
        assert_int_equal(t.phases[i].last_step, 3 * (i + 1));
    }
    assert_true(t.phase.v[2] == 1 && t.phase.step[2] == 4); /* step 4: "phase":2 */
    assert_true(t.metric.v[0] == 0.99431);
    assert_int_equal(t.n_ranks, 1);
    manta_run_history_free(&t);
    assert_int_equal(manta_run_history_load("tests/data/records/v0_classification.jsonl", &t, &err),
                     MANTA_OK);
    assert_false(t.stereo);
    assert_int_equal(t.loss.n, 8);
    assert_int_equal(t.steps, 18);
    assert_int_equal(t.n_phases, 6);
    for (int i = 0; i < 6; i++) {
        assert_string_equal(t.phases[i].name, names[i]);
        assert_true(t.phases[i].has_val && t.phases[i].val_step == 3 * (i + 1));
    }
    assert_true(t.phases[1].val_largest == 0.235);
    assert_int_equal(t.macs[0].n, 8);
    manta_run_history_free(&t);
    assert_int_equal(
        manta_run_history_load("tests/data/records/v0_two_ranks_error.jsonl", &t, &err), MANTA_OK);
    assert_int_equal(t.n_ranks, 2);
    assert_string_equal(t.ranks[1].device, "");
    assert_int_equal(t.ranks[1].ips.n, 3);
    manta_run_history_free(&t);
}

/* Every prefix of a file (a run cut short) reads. */
static void test_prefixes(void **state)
{
    (void)state;
    const char *texts[] = {classif, stereo};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        size_t n = strlen(texts[k]);
        for (size_t len = 0; len <= n; len++) {
            char *p = malloc(len + 1);
            assert_non_null(p);
            memcpy(p, texts[k], len);
            p[len] = '\0';
            manta_run_history t = {0};
            manta_err err;
            assert_int_equal(manta_run_history_parse(p, len, "p", &t, &err), MANTA_OK);
            manta_run_history_free(&t);
            free(p);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_training_classification),
        cmocka_unit_test(test_training_stereo),
        cmocka_unit_test(test_training_missing_and_empty),
        cmocka_unit_test(test_v0_files),
        cmocka_unit_test(test_prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
