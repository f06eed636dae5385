/* The training monitor (runtime/monitor/): the metrics.jsonl reader and the run's model
 * (malformed, cut and over-long lines, bare nan/inf, a line fed in pieces, a file that grows
 * while read and one written anew, the bounded record store), the JSON answers read back
 * with cJSON (the sampled sub-networks' sizes among them), the Prometheus text parsed back
 * line by line, the alerts (NaN, growing loss, slow and dead ranks, stall), --on-alert's
 * detached command. The HTTP server is test_monitor_server.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/testutil.h"
#include "core/clock.h"
#include "core/rng.h"
#include "monitor/alerts.h"
#include "monitor/answers.h"
#include "monitor/model.h"
#include "monitor/notify.h"
#include "monitor/prometheus.h"

static tu_tmpdir dir;

static int setup(void **state)
{
    (void)state;
    unsetenv("MANTA_MONITOR_TOKEN"); /* the tests set their tokens themselves */
    return tu_tmpdir_make(&dir, "monitor");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

static const char JOB[] =
    "{\"event\":\"job\",\"time\":1000,\"task\":\"classification\",\"space\":\"cpu-default\","
    "\"schedule\":\"smoke\",\"steps\":40,\"world_size\":2,\"phases\":[{\"name\":\"full\","
    "\"steps\":20,\"subnets\":1},{\"name\":\"kernel\",\"steps\":20,\"subnets\":2}]}\n";

static mon_model *new_model(const mon_alert_opts *ao)
{
    mon_model *m = NULL;
    manta_err err;
    assert_int_equal(mon_model_create("run-a", ao, &m, &err), MANTA_OK);
    assert_non_null(m);
    return m;
}

static void feed_str(mon_model *m, const char *s) { mon_model_feed(m, s, strlen(s), 1000); }

/* A progress line of step @p step, phase @p phase (0-based), loss @p loss (text). */
static void feed_progress(mon_model *m, long step, int phase, const char *loss, const char *ranks)
{
    char line[1024];
    snprintf(line, sizeof line,
             "{\"step\":%ld,\"steps\":40,\"phase\":\"%s\",\"phase_index\":%d,\"loss\":%s,"
             "\"batch_top1\":0.5,\"lr\":0.01,\"images_per_s\":100,\"data_wait\":0.01,"
             "\"step_ms\":20,\"eta_s\":5,\"time\":1000%s%s}\n",
             step, phase ? "kernel" : "full", phase, loss, ranks ? ",\"ranks\":" : "",
             ranks ? ranks : "");
    feed_str(m, line);
}

/* The text of @p fn's answer on @p m, parsed. */
static cJSON *run_json(const mon_model *m, double now)
{
    manta_strbuf b = {0};
    mon_model_run_json(m, now, &b);
    assert_false(b.oom);
    cJSON *o = cJSON_Parse(b.p);
    if (!o)
        fail_msg("not JSON: %s", b.p);
    manta_strbuf_free(&b);
    return o;
}

static void test_lines_and_state(void **state)
{
    (void)state;
    mon_model *m = new_model(NULL);
    feed_str(m, JOB);
    feed_progress(m, 5, 0, "2.5", NULL);
    static const char bad[] = "not json\n{\"step\":6,\"loss\":\n\n   \n[1,2]\n{\"a\":1}\0x\n";
    mon_model_feed(m, bad, sizeof bad - 1, 1000);
    assert_int_equal(mon_model_malformed(m), 4); /* text, cut object, array, embedded NUL */
    assert_int_equal(mon_model_last_seq(m), 2);
    feed_progress(m, 10, 0, "nan", NULL); /* printf's NaN */
    feed_str(
        m, "{\"eval\":\"val\",\"phase\":\"full\",\"step\":20,\"max_top1\":0.8,\"min_top1\":0.7}\n");
    feed_str(m, "{\"event\":\"checkpoint\",\"step\":20,\"path\":\"phase-1-full.ckpt\"}\n");
    feed_progress(m, 25, 1, "-inf", NULL);
    assert_int_equal(mon_model_last_seq(m), 6);
    cJSON *o = run_json(m, 1001);
    assert_string_equal(cJSON_GetObjectItem(o, "state")->valuestring, "running");
    assert_string_equal(cJSON_GetObjectItem(o, "space")->valuestring, "cpu-default");
    assert_int_equal(cJSON_GetObjectItem(o, "step")->valueint, 25);
    assert_int_equal(cJSON_GetObjectItem(o, "steps")->valueint, 40);
    const cJSON *ph = cJSON_GetObjectItem(o, "phase");
    assert_int_equal(cJSON_GetObjectItem(ph, "index")->valueint, 1);
    assert_int_equal(cJSON_GetObjectItem(ph, "count")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(ph, "subnets")->valueint, 2);
    assert_string_equal(cJSON_GetObjectItem(ph, "name")->valuestring, "kernel");
    const cJSON *last = cJSON_GetObjectItem(o, "last");
    assert_string_equal(cJSON_GetObjectItem(last, "loss")->valuestring, "-Infinity");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "checkpoints"), "count")->valueint,
                     1);
    const cJSON *val = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "validation"), 0);
    assert_non_null(val);
    assert_string_equal(cJSON_GetObjectItem(val, "metric")->valuestring, "top1");
    assert_true(fabs(cJSON_GetObjectItem(val, "largest")->valuedouble - 0.8) < 1e-9);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "records"), "malformed")->valueint,
                     4);
    cJSON_Delete(o);
    /* the stored lines are valid JSON even where the file had nan */
    manta_strbuf b = {0};
    mon_model_records_json(m, 0, 100, &b);
    cJSON *r = cJSON_Parse(b.p);
    assert_non_null(r);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "records")), 6);
    assert_int_equal(cJSON_GetObjectItem(r, "next")->valueint, 6);
    const cJSON *nan_rec = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "records"), 2);
    assert_string_equal(cJSON_GetObjectItem(nan_rec, "loss")->valuestring, "NaN");
    cJSON_Delete(r);
    manta_strbuf_free(&b);
    mon_model_records_json(m, 4, 1, &b); /* one record after 4 */
    r = cJSON_Parse(b.p);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "records")), 1);
    assert_int_equal(cJSON_GetObjectItem(r, "first")->valueint, 5);
    assert_int_equal(cJSON_GetObjectItem(r, "next")->valueint, 5);
    cJSON_Delete(r);
    manta_strbuf_free(&b);
    mon_model_records_json(m, 99, 10, &b); /* past the end: nothing, next stays in range */
    r = cJSON_Parse(b.p);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "records")), 0);
    assert_int_equal(cJSON_GetObjectItem(r, "next")->valueint, 6);
    cJSON_Delete(r);
    manta_strbuf_free(&b);
    /* the end records */
    feed_str(m, "{\"event\":\"done\",\"step\":40}\n");
    assert_true(mon_model_finished(m));
    o = run_json(m, 5000);
    assert_string_equal(cJSON_GetObjectItem(o, "state")->valuestring, "done");
    cJSON_Delete(o);
    /* a run stopped by an error, then resumed into the same file: running again */
    feed_str(m, "{\"event\":\"error\",\"step\":30,\"message\":\"x\"}\n");
    assert_true(mon_model_finished(m));
    feed_str(m, JOB);
    feed_progress(m, 31, 1, "1.0", NULL);
    o = run_json(m, 1000);
    assert_string_equal(cJSON_GetObjectItem(o, "state")->valuestring, "running");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "error")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "alerts")), 0);
    cJSON_Delete(o);
    mon_model_free(m);
}

/* The same text fed whole, byte by byte, and in random pieces gives the same model. */
static void test_pieces(void **state)
{
    (void)state;
    char text[4096];
    int n = snprintf(text, sizeof text, "%s%s%s%s", JOB,
                     "{\"step\":1,\"phase_index\":0,\"phase\":\"full\",\"loss\":1.5}\n",
                     "garbage line\n",
                     "{\"step\":2,\"phase_index\":0,\"phase\":\"full\",\"loss\":1.25}\n");
    mon_model *a = new_model(NULL), *b = new_model(NULL), *c = new_model(NULL);
    mon_model_feed(a, text, (size_t)n, 1);
    for (int i = 0; i < n; i++)
        mon_model_feed(b, text + i, 1, 1);
    manta_rng rng;
    manta_rng_seed(&rng, 7, 1);
    for (int i = 0; i < n;) {
        int k = 1 + (int)(manta_rng_u32(&rng) % 37);
        if (k > n - i)
            k = n - i;
        mon_model_feed(c, text + i, (size_t)k, 1);
        i += k;
    }
    manta_strbuf ta = {0}, tb = {0}, tc = {0};
    mon_model_records_json(a, 0, 100, &ta);
    mon_model_records_json(b, 0, 100, &tb);
    mon_model_records_json(c, 0, 100, &tc);
    assert_string_equal(ta.p, tb.p);
    assert_string_equal(ta.p, tc.p);
    assert_int_equal(mon_model_last_seq(a), 3);
    assert_int_equal(mon_model_malformed(b), 1);
    assert_int_equal(mon_model_malformed(c), 1);
    /* a cut line waits for its end */
    mon_model_feed(a, "{\"step\":3,", 10, 1);
    assert_int_equal(mon_model_last_seq(a), 3);
    mon_model_feed(a, "\"loss\":1}\n", 10, 1);
    assert_int_equal(mon_model_last_seq(a), 4);
    /* a line longer than MON_LINE_MAX is skipped up to its newline, the next one read */
    char *big = malloc(MON_LINE_MAX + 100);
    assert_non_null(big);
    memset(big, 'x', MON_LINE_MAX + 99);
    big[0] = '{';
    for (int piece = 0; piece < 3; piece++)
        mon_model_feed(a, big, MON_LINE_MAX + 99, 1);
    feed_str(a, "\n{\"step\":4,\"loss\":1}\n");
    assert_int_equal(mon_model_malformed(a), 2);
    assert_int_equal(mon_model_last_seq(a), 5);
    free(big);
    manta_strbuf_free(&ta);
    manta_strbuf_free(&tb);
    manta_strbuf_free(&tc);
    mon_model_free(a);
    mon_model_free(b);
    mon_model_free(c);
}

/* The store keeps the last MON_MAX_RECORDS; sequence numbers go on. */
static void test_bounded(void **state)
{
    (void)state;
    mon_model *m = new_model(NULL);
    for (int i = 1; i <= MON_MAX_RECORDS + 5; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "{\"step\":%d,\"loss\":1}\n", i);
        mon_model_feed(m, line, (size_t)n, 1);
    }
    assert_int_equal(mon_model_last_seq(m), MON_MAX_RECORDS + 5);
    manta_strbuf b = {0};
    mon_model_records_json(m, 0, 2, &b);
    cJSON *r = cJSON_Parse(b.p);
    assert_int_equal(cJSON_GetObjectItem(r, "first")->valueint, 6);
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "records"), 0);
    assert_int_equal(cJSON_GetObjectItem(first, "step")->valueint, 6);
    cJSON_Delete(r);
    manta_strbuf_free(&b);
    mon_model_free(m);
}

static void append_file(const char *path, const char *mode, const char *text)
{
    FILE *f = fopen(path, mode);
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A file read while it grows (a line cut between two reads), then written anew. */
static void test_tail(void **state)
{
    (void)state;
    char path[512];
    tu_tmpdir_path(&dir, "metrics.jsonl", path, sizeof path);
    mon_model *m = new_model(NULL);
    manta_err err;
    assert_int_equal(mon_model_tail(m, path, &err), MANTA_OK); /* not there yet */
    assert_int_equal(mon_model_last_seq(m), 0);
    append_file(path, "w", JOB);
    append_file(path, "a", "{\"step\":1,\"phase_index\":0,\"phase\":\"full\",\"lo");
    assert_int_equal(mon_model_tail(m, path, &err), MANTA_OK);
    assert_int_equal(mon_model_last_seq(m), 1);
    append_file(path, "a", "ss\":2.0}\n{\"step\":2,\"loss\":1.9}\n");
    assert_int_equal(mon_model_tail(m, path, &err), MANTA_OK);
    assert_int_equal(mon_model_last_seq(m), 3);
    assert_int_equal(mon_model_malformed(m), 0);
    assert_int_equal(mon_model_tail(m, path, &err), MANTA_OK); /* nothing new */
    assert_int_equal(mon_model_last_seq(m), 3);
    /* a new run writes the file anew (shorter): the model starts over, numbers go on */
    append_file(path, "w", "{\"step\":1,\"loss\":3}\n");
    assert_int_equal(mon_model_tail(m, path, &err), MANTA_OK);
    assert_int_equal(mon_model_last_seq(m), 4);
    cJSON *o = run_json(m, manta_wall_time());
    const cJSON *rec = cJSON_GetObjectItem(o, "records");
    assert_int_equal(cJSON_GetObjectItem(rec, "first")->valueint, 4);
    assert_int_equal(cJSON_GetObjectItem(rec, "generation")->valueint, 1);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "space")));
    assert_true(cJSON_GetObjectItem(o, "age_s")->valuedouble < 60);
    cJSON_Delete(o);
    mon_model_free(m);
}

static bool has_alert(const mon_model *m, double now, const char *kind, int rank)
{
    mon_alert a[MON_MAX_ALERTS];
    int n = mon_model_alerts(m, now, a);
    for (int i = 0; i < n; i++)
        if (!strcmp(a[i].kind, kind) && a[i].rank == rank)
            return true;
    return false;
}

static void test_alerts(void **state)
{
    (void)state;
    mon_alert_opts ao;
    mon_alert_opts_default(&ao);
    ao.grow = 3;
    ao.slow_pct = 20;
    ao.stall_s = 30;
    ao.rank_timeout_s = 10;
    mon_model *m = new_model(&ao);
    feed_str(m, JOB);
    /* loss grows 3 times in a row within a phase: alert; a drop ends it */
    feed_progress(m, 1, 0, "2.0", NULL);
    feed_progress(m, 2, 0, "2.1", NULL);
    feed_progress(m, 3, 0, "2.2", NULL);
    assert_false(has_alert(m, 1000, "loss_growing", -1));
    feed_progress(m, 4, 0, "2.3", NULL);
    assert_true(has_alert(m, 1000, "loss_growing", -1));
    feed_progress(m, 5, 0, "2.0", NULL);
    assert_false(has_alert(m, 1000, "loss_growing", -1));
    /* a new phase starts the count again (its loss may start higher) */
    feed_progress(m, 6, 0, "2.1", NULL);
    feed_progress(m, 7, 0, "2.2", NULL);
    feed_progress(m, 21, 1, "2.5", NULL);
    feed_progress(m, 22, 1, "2.6", NULL);
    assert_false(has_alert(m, 1000, "loss_growing", -1));
    /* ranks: 3 ranks, one 30 % below the median */
    feed_progress(m, 23, 1, "2.0",
                  "[{\"rank\":0,\"device\":\"a\",\"images_per_s\":100,\"heartbeat\":1000},"
                  "{\"rank\":1,\"device\":\"b\",\"images_per_s\":98,\"heartbeat\":1000},"
                  "{\"rank\":2,\"device\":\"c\",\"images_per_s\":70,\"heartbeat\":1000}]");
    assert_true(has_alert(m, 1001, "rank_slow", 2));
    assert_false(has_alert(m, 1001, "rank_slow", 1));
    assert_false(has_alert(m, 1001, "rank_dead", 0));
    /* heartbeats older than the rank timeout: dead ranks */
    assert_true(has_alert(m, 1011, "rank_dead", 0));
    manta_strbuf b = {0};
    mon_model_ranks_json(m, 1011, &b);
    cJSON *rk = cJSON_Parse(b.p);
    manta_strbuf_free(&b);
    const cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(rk, "ranks"), 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r0, "dead")));
    assert_string_equal(cJSON_GetObjectItem(r0, "device")->valuestring, "a");
    cJSON_Delete(rk);
    /* stalled: no activity for stall_s while not finished */
    assert_false(has_alert(m, 1000 + 29, "stalled", -1));
    assert_true(has_alert(m, 1000 + 31, "stalled", -1));
    /* NaN */
    assert_false(has_alert(m, 1000, "loss_nan", -1));
    feed_progress(m, 24, 1, "nan", NULL);
    assert_true(has_alert(m, 1000, "loss_nan", -1));
    /* an error record naming rank 1: that rank is dead with the error; the job is over */
    feed_str(m, "{\"event\":\"error\",\"step\":24,\"rank\":1,\"message\":\"rank 1 (10.0.0.2:29500) "
                "closed the connection\"}\n");
    assert_true(has_alert(m, 1000, "error", 1));
    assert_false(has_alert(m, 2000, "stalled", -1));
    mon_model_ranks_json(m, 1000, &b);
    rk = cJSON_Parse(b.p);
    manta_strbuf_free(&b);
    const cJSON *r1 = cJSON_GetArrayItem(cJSON_GetObjectItem(rk, "ranks"), 1);
    assert_int_equal(cJSON_GetObjectItem(r1, "rank")->valueint, 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r1, "dead")));
    assert_non_null(strstr(cJSON_GetObjectItem(r1, "error")->valuestring, "closed"));
    cJSON_Delete(rk);
    cJSON *o = run_json(m, 1000);
    assert_string_equal(cJSON_GetObjectItem(o, "state")->valuestring, "failed");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "rank")->valueint, 1);
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(o, "alerts")) >= 2);
    cJSON_Delete(o);
    mon_model_free(m);
    /* bad thresholds */
    manta_err err;
    mon_model *bad = NULL;
    ao.slow_pct = 0;
    assert_int_equal(mon_model_create("x", &ao, &bad, &err), MANTA_ERR_INVALID_ARG);
    assert_null(bad);
}

/* Stereo records: pairs/s, EPE, phase_end validation. */
static void test_stereo(void **state)
{
    (void)state;
    mon_model *m = new_model(NULL);
    feed_str(m,
             "{\"event\":\"step\",\"step\":10,\"phase\":1,\"loss\":0.9,\"kd_loss\":0,\"epe\":2.5,"
             "\"round\":1,\"lr\":0.02,\"pairs_per_s\":12.5}\n"
             "{\"event\":\"phase_end\",\"phase\":1,\"name\":\"full\",\"step\":10,\"largest\":{"
             "\"epe\":1.5,\"bad3\":0.1,\"d1\":0.1,\"epe_noc\":1.4},\"smallest\":{\"epe\":1.9,"
             "\"bad3\":0.2,\"d1\":0.2,\"epe_noc\":1.8}}\n");
    cJSON *o = run_json(m, 1000);
    assert_string_equal(cJSON_GetObjectItem(o, "task")->valuestring, "stereo");
    const cJSON *last = cJSON_GetObjectItem(o, "last");
    assert_true(fabs(cJSON_GetObjectItem(last, "images_per_s")->valuedouble - 12.5) < 1e-9);
    assert_true(fabs(cJSON_GetObjectItem(last, "epe")->valuedouble - 2.5) < 1e-9);
    const cJSON *val = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "validation"), 0);
    assert_string_equal(cJSON_GetObjectItem(val, "metric")->valuestring, "epe");
    assert_true(fabs(cJSON_GetObjectItem(val, "smallest")->valuedouble - 1.9) < 1e-9);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "phase"), "index")->valueint, 0);
    cJSON_Delete(o);
    mon_model_free(m);
}

/* The sizes of the sampled sub-networks on progress records ("subnets"): /api/run's
 * last.subnets and the Prometheus series; a record without them (or with a bad member)
 * shows them as unknown. */
static void test_subnets(void **state)
{
    (void)state;
    mon_model *m = new_model(NULL);
    feed_str(m, JOB);
    feed_str(m, "{\"step\":20,\"steps\":40,\"phase\":\"kernel\",\"phase_index\":1,\"loss\":2,"
                "\"lr\":0.01,\"time\":1000,\"subnets\":{\"n\":8,\"macs_mean\":5250000,"
                "\"macs_min\":3100000,\"macs_max\":7400000,\"params_mean\":190000.5,"
                "\"params_min\":150000,\"params_max\":\"x\"}}\n");
    cJSON *o = run_json(m, 1001);
    const cJSON *sub = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "last"), "subnets");
    assert_true(cJSON_IsObject(sub));
    assert_int_equal(cJSON_GetObjectItem(sub, "n")->valueint, 8);
    assert_true(fabs(cJSON_GetObjectItem(sub, "macs_mean")->valuedouble - 5250000) < 1e-6);
    assert_true(fabs(cJSON_GetObjectItem(sub, "macs_min")->valuedouble - 3100000) < 1e-6);
    assert_true(fabs(cJSON_GetObjectItem(sub, "macs_max")->valuedouble - 7400000) < 1e-6);
    assert_true(fabs(cJSON_GetObjectItem(sub, "params_mean")->valuedouble - 190000.5) < 1e-6);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(sub, "params_max"))); /* not a number */
    cJSON_Delete(o);
    const mon_model *ms[1] = {m};
    manta_strbuf t = {0};
    mon_prometheus(ms, 1, 1001, &t);
    assert_false(t.oom);
    assert_non_null(strstr(t.p, "# TYPE manta_train_subnet_macs gauge\n"));
    assert_non_null(
        strstr(t.p, "\nmanta_train_subnet_macs{run=\"run-a\",stat=\"mean\"} 5250000\n"));
    assert_non_null(strstr(t.p, "\nmanta_train_subnet_macs{run=\"run-a\",stat=\"max\"} 7400000\n"));
    assert_non_null(
        strstr(t.p, "\nmanta_train_subnet_parameters{run=\"run-a\",stat=\"min\"} 150000\n"));
    assert_null(strstr(t.p, "manta_train_subnet_parameters{run=\"run-a\",stat=\"max\"}"));
    manta_strbuf_free(&t);
    /* the next report without them (an older trainer, a stereo run): unknown again */
    feed_progress(m, 25, 1, "1.5", NULL);
    o = run_json(m, 1001);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "last"), "subnets")));
    cJSON_Delete(o);
    mon_prometheus(ms, 1, 1001, &t);
    assert_null(strstr(t.p, "manta_train_subnet_macs{"));
    manta_strbuf_free(&t);
    /* a negative size is no size */
    feed_str(m, "{\"step\":26,\"phase_index\":1,\"loss\":1,\"subnets\":{\"macs_mean\":-1}}\n");
    o = run_json(m, 1001);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "last"), "subnets")));
    cJSON_Delete(o);
    mon_model_free(m);
}

/* Prometheus text 0.0.4: every line a comment (# HELP / # TYPE, once per name, TYPE before
 * its samples) or `name{label="value",...} value` with a known name; the expected series. */
static void test_prometheus(void **state)
{
    (void)state;
    mon_model *a = new_model(NULL), *b = NULL;
    manta_err err;
    assert_int_equal(mon_model_create("run \"b\"\\x", NULL, &b, &err), MANTA_OK);
    feed_str(a, JOB);
    feed_progress(
        a, 5, 0, "2.5",
        "[{\"rank\":0,\"device\":\"pthread-cpu\",\"images_per_s\":50,\"compute_s\":0.02,"
        "\"data_wait_s\":0.001,\"heartbeat\":1000},{\"rank\":1,\"device\":\"gpu \\\"x\\\"\","
        "\"images_per_s\":49,\"heartbeat\":1000}]");
    feed_str(
        a, "{\"eval\":\"val\",\"phase\":\"full\",\"step\":20,\"max_top1\":0.8,\"min_top1\":0.7}\n");
    feed_progress(b, 1, 0, "nan", NULL);
    /* an elastic run: its first ring, then a rank died, then one joined */
    feed_str(b, "{\"event\":\"membership\",\"time\":1000.1,\"generation\":1,\"world\":4,\"was\":0,"
                "\"step\":0,\"cause\":\"start\",\"state_bytes\":0}\n"
                "{\"event\":\"membership\",\"time\":1000.2,\"generation\":2,\"world\":3,\"was\":4,"
                "\"step\":3,\"cause\":\"failure\",\"state_bytes\":0}\n"
                "{\"event\":\"membership\",\"time\":1000.3,\"generation\":3,\"world\":4,\"was\":3,"
                "\"step\":5,\"cause\":\"join\",\"state_bytes\":1000}\n");
    const mon_model *ms[2] = {a, b};
    manta_strbuf t = {0};
    mon_prometheus(ms, 2, 1001, &t);
    assert_false(t.oom);
    char typed[64][80];
    int n_typed = 0, samples = 0;
    bool seen_ips_rank1 = false, seen_step = false, seen_val = false, seen_nan = false;
    bool seen_changes = false, seen_world = false;
    char *save = NULL;
    for (char *line = strtok_r(t.p, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[80];
        if (!strncmp(line, "# HELP ", 7))
            continue;
        if (!strncmp(line, "# TYPE ", 7)) {
            char type[16];
            assert_int_equal(sscanf(line + 7, "%79s %15s", name, type), 2);
            assert_true(!strcmp(type, "gauge") || !strcmp(type, "counter"));
            if (!strcmp(type, "counter"))
                assert_non_null(strstr(name, "_total"));
            for (int i = 0; i < n_typed; i++)
                assert_string_not_equal(typed[i], name); /* once per name */
            assert_true(n_typed < 64);
            snprintf(typed[n_typed++], sizeof typed[0], "%s", name);
            continue;
        }
        /* a sample: name, then {labels}, then a value */
        size_t k = strspn(line, "abcdefghijklmnopqrstuvwxyz_0123456789");
        assert_true(k > 0 && k < sizeof name);
        memcpy(name, line, k);
        name[k] = 0;
        assert_string_equal(name, typed[n_typed - 1]); /* under its TYPE */
        const char *p = line + k;
        assert_int_equal(*p, '{');
        p++;
        while (*p != '}') { /* label="value" with \\ \" \n escapes */
            size_t lk = strspn(p, "abcdefghijklmnopqrstuvwxyz_");
            assert_true(lk > 0);
            p += lk;
            assert_int_equal(p[0], '=');
            assert_int_equal(p[1], '"');
            p += 2;
            while (*p != '"') {
                assert_int_not_equal(*p, 0);
                if (*p == '\\') {
                    assert_non_null(strchr("\\\"n", p[1]));
                    p++;
                }
                p++;
            }
            p++;
            if (*p == ',')
                p++;
        }
        p++;
        assert_int_equal(*p, ' ');
        p++;
        char *end;
        double v = strtod(p, &end);
        if (!strcmp(p, "NaN"))
            seen_nan = true;
        else
            assert_true(*end == 0 && (isfinite(v) || !strcmp(p, "+Inf") || !strcmp(p, "-Inf")));
        samples++;
        if (!strcmp(name, "manta_train_images_per_second") && strstr(line, "rank=\"1\"") &&
            strstr(line, "device=\"gpu \\\"x\\\"\""))
            seen_ips_rank1 = true;
        if (!strcmp(name, "manta_train_step") && strstr(line, "run=\"run-a\"") && v == 5)
            seen_step = true;
        if (!strcmp(name, "manta_train_validation_top1_ratio") &&
            strstr(line, "subnet=\"smallest\"") && fabs(v - 0.7) < 1e-9)
            seen_val = true;
        if (!strcmp(name, "manta_train_membership_changes_total") && v == 2)
            seen_changes = !strstr(line, "run=\"run-a\""); /* 0 for run a */
        if (!strcmp(name, "manta_train_world_size") && v == 4 && !strstr(line, "run=\"run-a\""))
            seen_world = true;
    }
    assert_true(seen_changes);
    assert_true(seen_world);
    cJSON *o = run_json(b, 1001); /* the run API says the same */
    const cJSON *mb = cJSON_GetObjectItem(o, "membership");
    assert_int_equal(cJSON_GetObjectItem(mb, "changes")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(mb, "world")->valueint, 4);
    cJSON_Delete(o);
    assert_true(seen_ips_rank1);
    assert_true(seen_step);
    assert_true(seen_val);
    assert_true(seen_nan); /* run b's loss */
    assert_true(samples > 20);
    manta_strbuf_free(&t);
    mon_model_free(a);
    mon_model_free(b);
}

/* --on-alert: the command gets the text on its standard input; the call does not wait. */
static void test_notify(void **state)
{
    (void)state;
    char out[512], cmd[1800];
    tu_tmpdir_path(&dir, "alert.json", out, sizeof out);
    snprintf(cmd, sizeof cmd, "cat > '%s.tmp' && mv '%s.tmp' '%s'", out, out, out);
    manta_err err;
    const char text[] = "{\"alert\":{\"kind\":\"loss_nan\"}}\n";
    double t0 = manta_now();
    assert_int_equal(mon_notify(cmd, text, sizeof text - 1, &err), MANTA_OK);
    char slow[64];
    snprintf(slow, sizeof slow, "exec sleep 5 >/dev/null 2>&1");
    assert_int_equal(mon_notify(slow, "", 0, &err), MANTA_OK);
    assert_true(manta_now() - t0 < 2); /* did not wait for sleep 5 */
    char got[128] = {0};
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(out, "r");
        if (f) {
            size_t n = fread(got, 1, sizeof got - 1, f);
            got[n] = 0;
            fclose(f);
            break;
        }
        manta_sleep(0.02);
    }
    assert_string_equal(got, text);
    unlink(out);
    assert_int_equal(mon_notify("", "x", 1, &err), MANTA_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_and_state), cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_bounded),         cmocka_unit_test(test_tail),
        cmocka_unit_test(test_alerts),          cmocka_unit_test(test_stereo),
        cmocka_unit_test(test_subnets),         cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_notify),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
