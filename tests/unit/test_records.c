/* The run records of metrics.jsonl (core/records.h): every kind written and read back with
 * every field compared; non-finite numbers; unknown kinds and members; and files in the
 * format written before the schema version (tests/data/records/v0_*.jsonl: real runs of
 * manta train, classification and stereo, smoke schedule, one stopped by SIGINT, one by
 * --stop-after, one of two ranks ended by an error) still read, with the lines whose format
 * did not change written again byte for byte. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/fileio.h"
#include "core/records.h"

/* Write @p in, read it back into @p out (zeroed by the caller); the line has no newline. */
static void round_trip(const manta_rec *in, manta_rec *out, char **line)
{
    manta_strbuf b = {0};
    manta_err err;
    assert_int_equal(manta_rec_json(in, &b, &err), MANTA_OK);
    assert_false(b.oom);
    assert_null(strchr(b.p, '\n'));
    assert_int_equal(manta_rec_parse(b.p, b.n, out, &err), MANTA_OK);
    assert_int_equal(out->kind, in->kind);
    *line = b.p; /* the caller frees it */
}

static void test_job(void **state)
{
    (void)state;
    manta_rec in = {.kind = MANTA_REC_JOB}, out = {0};
    manta_rec_job *j = &in.job;
    *j = (manta_rec_job){.schema = MANTA_REC_SCHEMA,
                         .time = 1795944362.048,
                         .task = "classification",
                         .space = "cpu-default",
                         .schedule = "smoke",
                         .data = "fashion-mnist",
                         .steps = 18,
                         .start_step = 3,
                         .batch = 16,
                         .world_size = 2,
                         .devices_per_rank = 2,
                         .replicas = 4,
                         .mode = "subnet",
                         .host = "node \"1\"",
                         .n_devices = 2,
                         .n_phases = 2};
    snprintf(j->devices[0], sizeof j->devices[0], "pthread-skylake");
    snprintf(j->devices[1], sizeof j->devices[1], "NVIDIA H200\\x");
    j->device_bytes[0] = 123456789012ULL;
    j->device_bytes[1] = 7;
    j->phases[0] = (manta_rec_phase){"full", 3, 1, 0.0075, false};
    j->phases[1] = (manta_rec_phase){"kernel", 30, 2, 0.0025, true};
    char *line;
    round_trip(&in, &out, &line);
    assert_non_null(strstr(line, "{\"event\":\"job\",\"schema\":1,\"time\":1795944362.048,"));
    const manta_rec_job *o = &out.job;
    assert_int_equal(o->schema, MANTA_REC_SCHEMA);
    assert_true(o->time == j->time);
    assert_string_equal(o->task, j->task);
    assert_string_equal(o->space, j->space);
    assert_string_equal(o->schedule, j->schedule);
    assert_string_equal(o->data, j->data);
    assert_int_equal(o->steps, 18);
    assert_int_equal(o->start_step, 3);
    assert_int_equal(o->batch, 16);
    assert_int_equal(o->world_size, 2);
    assert_int_equal(o->devices_per_rank, 2);
    assert_int_equal(o->replicas, 4);
    assert_string_equal(o->mode, "subnet");
    assert_string_equal(o->host, j->host);
    assert_int_equal(o->n_devices, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(o->devices[i], j->devices[i]);
        assert_true(o->device_bytes[i] == j->device_bytes[i]);
    }
    assert_int_equal(o->n_phases, 2);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(o->phases[i].name, j->phases[i].name);
        assert_int_equal(o->phases[i].steps, j->phases[i].steps);
        assert_int_equal(o->phases[i].subnets, j->phases[i].subnets);
        assert_true(o->phases[i].lr == j->phases[i].lr);
        assert_int_equal(o->phases[i].distill, j->phases[i].distill);
    }
    free(line);
    manta_rec_free(&out);
}

static const manta_rec_rank RANKS[2] = {
    {0, "pthread-skylake", "vm", 81.68, 0.092875, 0.0, 0.000162, 46379882583.0, 1795944511.085,
     12.5},
    {1, "", "", 84.66, 0.092594, 0.25, 0.000385, NAN, NAN, NAN},
};

static void check_ranks(const manta_rec_rank *got, int n)
{
    assert_int_equal(n, 2);
    for (int i = 0; i < 2; i++) {
        const manta_rec_rank *a = &got[i], *b = &RANKS[i];
        assert_int_equal(a->rank, b->rank);
        assert_string_equal(a->device, b->device);
        assert_string_equal(a->host, b->host);
        assert_true(a->images_per_s == b->images_per_s);
        assert_true(a->compute_s == b->compute_s);
        assert_true(a->data_wait_s == b->data_wait_s);
        assert_true(a->allreduce_wait_s == b->allreduce_wait_s);
        assert_true(a->ring_bytes_per_s == b->ring_bytes_per_s ||
                    (isnan(a->ring_bytes_per_s) && isnan(b->ring_bytes_per_s)));
        assert_true(a->heartbeat == b->heartbeat || (isnan(a->heartbeat) && isnan(b->heartbeat)));
        assert_true(a->step_ms == b->step_ms || (isnan(a->step_ms) && isnan(b->step_ms)));
    }
}

static void test_progress(void **state)
{
    (void)state;
    manta_rec in = {.kind = MANTA_REC_PROGRESS}, out = {0};
    in.progress =
        (manta_rec_progress){.step = 9,
                             .steps = 18,
                             .phase = "depth-1",
                             .phase_index = 2,
                             .loss = 4.70692,
                             .batch_top1 = 0.0625,
                             .r = 24,
                             .lr = 0.000156,
                             .images_per_s = 9.7,
                             .data_wait = 0.0012,
                             .step_ms = 261.4,
                             .eta_s = 17,
                             .time = 1795944371.598,
                             .subnets = {6, 10007291, 7980000, 12000001, 800001, 556986, 1128594},
                             .ranks = RANKS,
                             .n_ranks = 2};
    char *line;
    round_trip(&in, &out, &line);
    const manta_rec_progress *a = &out.progress, *b = &in.progress;
    assert_int_equal(a->step, b->step);
    assert_int_equal(a->steps, b->steps);
    assert_string_equal(a->phase, b->phase);
    assert_int_equal(a->phase_index, b->phase_index);
    assert_true(a->loss == b->loss);
    assert_true(a->batch_top1 == b->batch_top1);
    assert_int_equal(a->r, b->r);
    assert_true(a->lr == b->lr);
    assert_true(a->images_per_s == b->images_per_s);
    assert_true(a->data_wait == b->data_wait);
    assert_true(a->step_ms == b->step_ms);
    assert_true(a->eta_s == b->eta_s);
    assert_true(a->time == b->time);
    assert_memory_equal(&a->subnets, &b->subnets, sizeof a->subnets);
    check_ranks(a->ranks, a->n_ranks);
    assert_non_null(strstr(line, ",\"device\":null,\"host\":null,"));
    assert_non_null(strstr(line, ",\"ring_bytes_per_s\":null,\"heartbeat\":null}"));
    assert_non_null(strstr(line, ",\"heartbeat\":1795944511.085,\"step_ms\":12.5}"));
    free(line);
    /* without time, sub-networks and ranks: those members are left out (the --json line) */
    in.progress.time = NAN;
    in.progress.subnets.n = 0;
    in.progress.n_ranks = 0;
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"step\":9,\"steps\":18,\"phase\":\"depth-1\",\"phase_index\":2,"
                              "\"loss\":4.70692,\"batch_top1\":0.0625,\"r\":24,\"lr\":0.000156,"
                              "\"images_per_s\":9.7,\"data_wait\":0.0012,\"step_ms\":261.4,"
                              "\"eta_s\":17}");
    assert_true(isnan(out.progress.time));
    assert_int_equal(out.progress.subnets.n, 0);
    assert_int_equal(out.progress.n_ranks, 0);
    assert_null(out.progress.ranks);
    free(line);
    manta_rec_free(&out);
}

static void test_step(void **state)
{
    (void)state;
    manta_rec in = {.kind = MANTA_REC_STEP}, out = {0};
    in.step = (manta_rec_step){.step = 4,
                               .phase = "kernel",
                               .phase_index = 1,
                               .loss = 1.408476,
                               .kd_loss = 0.000223,
                               .epe = 1.38868,
                               .round = 2,
                               .lr = 0.01,
                               .pairs_per_s = 45.235,
                               .time = 1795944401.042,
                               .ranks = RANKS,
                               .n_ranks = 2};
    char *line;
    round_trip(&in, &out, &line);
    const manta_rec_step *a = &out.step, *b = &in.step;
    assert_non_null(strstr(line, "{\"event\":\"step\",\"step\":4,\"phase\":\"kernel\","
                                 "\"phase_index\":1,\"loss\":1.408476,"));
    assert_int_equal(a->step, b->step);
    assert_string_equal(a->phase, b->phase);
    assert_int_equal(a->phase_index, b->phase_index);
    assert_true(a->loss == b->loss);
    assert_true(a->kd_loss == b->kd_loss);
    assert_true(a->epe == b->epe);
    assert_int_equal(a->round, b->round);
    assert_true(a->lr == b->lr);
    assert_true(a->pairs_per_s == b->pairs_per_s);
    assert_true(a->time == b->time);
    check_ranks(a->ranks, a->n_ranks);
    free(line);
    manta_rec_free(&out);
}

static void test_eval_and_phase_end(void **state)
{
    (void)state;
    manta_rec in = {.kind = MANTA_REC_EVAL}, out = {0};
    in.eval = (manta_rec_eval){"expand-1", 4, 15, 0.16, 0.1650};
    char *line;
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"eval\":\"val\",\"phase\":\"expand-1\",\"phase_index\":4,"
                              "\"step\":15,\"max_top1\":0.1600,\"min_top1\":0.1650}");
    assert_string_equal(out.eval.phase, "expand-1");
    assert_int_equal(out.eval.phase_index, 4);
    assert_int_equal(out.eval.step, 15);
    assert_true(out.eval.max_top1 == 0.16);
    assert_true(out.eval.min_top1 == 0.165);
    free(line);
    manta_rec_free(&out);

    in = (manta_rec){.kind = MANTA_REC_PHASE_END};
    in.phase_end = (manta_rec_phase_end){
        "depth-2", 3, 12, {1.58098, 11.2305, 10.5, 1.45441}, {1.58422, 12.25, 11.0, 1.45774}};
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"event\":\"phase_end\",\"phase\":\"depth-2\",\"phase_index\":3,"
                              "\"name\":\"depth-2\",\"step\":12,\"largest\":{\"epe\":1.58098,"
                              "\"bad3\":11.2305,\"d1\":10.5000,\"epe_noc\":1.45441},\"smallest\":"
                              "{\"epe\":1.58422,\"bad3\":12.2500,\"d1\":11.0000,\"epe_noc\":"
                              "1.45774}}");
    const manta_rec_phase_end *a = &out.phase_end, *b = &in.phase_end;
    assert_string_equal(a->phase, b->phase);
    assert_int_equal(a->phase_index, b->phase_index);
    assert_int_equal(a->step, b->step);
    assert_memory_equal(&a->largest, &b->largest, sizeof a->largest);
    assert_memory_equal(&a->smallest, &b->smallest, sizeof a->smallest);
    free(line);
    manta_rec_free(&out);
}

static void test_events(void **state)
{
    (void)state;
    manta_rec in = {.kind = MANTA_REC_CHECKPOINT}, out = {0};
    in.checkpoint = (manta_rec_checkpoint){1795944362.478, 3, "phase-1-full.ckpt"};
    char *line;
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"event\":\"checkpoint\",\"time\":1795944362.478,\"step\":3,"
                              "\"path\":\"phase-1-full.ckpt\"}");
    assert_true(out.checkpoint.time == in.checkpoint.time);
    assert_int_equal(out.checkpoint.step, 3);
    assert_string_equal(out.checkpoint.path, in.checkpoint.path);
    free(line);

    in = (manta_rec){.kind = MANTA_REC_ERROR};
    in.error = (manta_rec_error){1795944511.143, 3, 1, "vm", ""};
    snprintf(in.error.message, sizeof in.error.message,
             "rank 1 (127.0.0.1:33551) closed the connection \"quoted\"\n\t\\ end");
    round_trip(&in, &out, &line);
    assert_true(out.error.time == in.error.time);
    assert_int_equal(out.error.step, 3);
    assert_int_equal(out.error.rank, 1);
    assert_string_equal(out.error.host, "vm");
    assert_string_equal(out.error.message, in.error.message);
    free(line);

    in = (manta_rec){.kind = MANTA_REC_STOPPED};
    in.stopped = (manta_rec_stopped){1795944514.006, 6, true};
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"event\":\"stopped\",\"time\":1795944514.006,\"step\":6,"
                              "\"signal\":true}");
    assert_true(out.stopped.time == in.stopped.time);
    assert_int_equal(out.stopped.step, 6);
    assert_true(out.stopped.signal);
    free(line);

    in = (manta_rec){.kind = MANTA_REC_DONE};
    in.done = (manta_rec_done){1795944392.125, 18, 30.1};
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"event\":\"done\",\"time\":1795944392.125,\"step\":18,"
                              "\"seconds\":30.1}");
    assert_true(out.done.time == in.done.time);
    assert_int_equal(out.done.step, 18);
    assert_true(out.done.seconds == 30.1);
    free(line);

    in = (manta_rec){.kind = MANTA_REC_MEMBERSHIP};
    in.membership = (manta_rec_membership){.time = 1795944400.5,
                                           .generation = 3,
                                           .world = 4,
                                           .was = 3,
                                           .step = 7,
                                           .state_bytes = 22700560};
    snprintf(in.membership.cause, sizeof in.membership.cause, "join");
    round_trip(&in, &out, &line);
    assert_string_equal(line, "{\"event\":\"membership\",\"time\":1795944400.500,\"generation\":3,"
                              "\"world\":4,\"was\":3,\"step\":7,\"cause\":\"join\","
                              "\"state_bytes\":22700560}");
    assert_int_equal(out.membership.generation, 3);
    assert_int_equal(out.membership.world, 4);
    assert_int_equal(out.membership.was, 3);
    assert_int_equal(out.membership.step, 7);
    assert_string_equal(out.membership.cause, "join");
    assert_true(out.membership.state_bytes == 22700560);
    assert_string_equal(manta_rec_kind_name(MANTA_REC_MEMBERSHIP), "membership");
    free(line);
    manta_rec_free(&out);
}

/* Non-finite numbers: written as JSON strings, read back; bare printf tokens read too. */
static void test_non_finite(void **state)
{
    (void)state;
    manta_rec in = {.kind = MANTA_REC_PROGRESS}, out = {0};
    in.progress = (manta_rec_progress){.step = 2,
                                       .steps = 4,
                                       .phase = "full",
                                       .loss = NAN,
                                       .batch_top1 = INFINITY,
                                       .lr = -INFINITY,
                                       .time = NAN};
    char *line;
    round_trip(&in, &out, &line);
    assert_non_null(strstr(line, "\"loss\":\"NaN\",\"batch_top1\":\"Infinity\","));
    assert_non_null(strstr(line, "\"lr\":\"-Infinity\""));
    assert_true(isnan(out.progress.loss));
    assert_true(isinf(out.progress.batch_top1) && out.progress.batch_top1 > 0);
    assert_true(isinf(out.progress.lr) && out.progress.lr < 0);
    free(line);
    const char old[] = "{\"step\":3,\"phase\":\"full\",\"phase_index\":0,\"loss\":-nan,"
                       "\"batch_top1\":inf,\"lr\":nan}";
    manta_err err;
    assert_int_equal(manta_rec_parse(old, sizeof old - 1, &out, &err), MANTA_OK);
    assert_int_equal(out.kind, MANTA_REC_PROGRESS);
    assert_true(isnan(out.progress.loss) && isinf(out.progress.batch_top1));
    manta_rec_free(&out);
}

static void test_unknown_and_malformed(void **state)
{
    (void)state;
    manta_rec r = {0};
    manta_err err;
    const char *const unknown[] = {
        "{\"event\":\"launch\",\"time\":1}", "{\"eval\":\"test\",\"top1\":0.5}",
        "{\"sync_check\":10,\"hash\":\"ab\"}", "{\"step\":3,\"steps\":4}", /* no loss */
        "{\"event\":\"step\",\"loss\":1}"};                                /* no step */
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_int_equal(manta_rec_parse(unknown[i], strlen(unknown[i]), &r, &err), MANTA_OK);
        assert_int_equal(r.kind, MANTA_REC_UNKNOWN);
    }
    /* unknown members and members of other types are ignored */
    const char extra[] = "  {\"event\":\"done\",\"future\":{\"a\":[1,2]},\"time\":\"soon\","
                         "\"step\":18,\"seconds\":2.5}\r\n";
    assert_int_equal(manta_rec_parse(extra, sizeof extra - 1, &r, &err), MANTA_OK);
    assert_int_equal(r.kind, MANTA_REC_DONE);
    assert_int_equal(r.done.step, 18);
    assert_true(isnan(r.done.time));
    assert_true(r.done.seconds == 2.5);
    const char *const bad[] = {"", "   ", "[1,2]", "{\"event\":\"done\"", "\"done\"", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(manta_rec_parse(bad[i], strlen(bad[i]), &r, &err), MANTA_ERR_FORMAT);
        assert_int_equal(r.kind, MANTA_REC_UNKNOWN);
    }
    const char nul[] = "{\"event\":\"done\"}\0x";
    assert_int_equal(manta_rec_parse(nul, sizeof nul - 1, &r, &err), MANTA_ERR_FORMAT);
    /* a kind without a writer */
    manta_strbuf b = {0};
    assert_int_equal(manta_rec_json(&r, &b, &err), MANTA_ERR_INVALID_ARG);
    assert_null(b.p);
    assert_string_equal(manta_rec_kind_name(MANTA_REC_PHASE_END), "phase_end");
    assert_string_equal(manta_rec_kind_name((manta_rec_kind)99), "unknown");
}

/* manta_rec_write(): the line and a newline, flushed. */
static void test_write_file(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    manta_rec r = {.kind = MANTA_REC_STOPPED};
    r.stopped = (manta_rec_stopped){12.5, 4, false};
    manta_err err;
    assert_int_equal(manta_rec_write(f, &r, &err), MANTA_OK);
    r = (manta_rec){.kind = MANTA_REC_UNKNOWN};
    assert_int_equal(manta_rec_write(f, &r, &err), MANTA_ERR_INVALID_ARG);
    rewind(f);
    char buf[128] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_string_equal(buf,
                        "{\"event\":\"stopped\",\"time\":12.500,\"step\":4,\"signal\":false}\n");
    assert_int_equal(n, strlen(buf));
}

/* ---- files written before the schema version ---- */

typedef struct file_counts {
    int kinds[MANTA_REC_DONE + 1];
    int same_bytes; /* lines written again byte for byte */
} file_counts;

/* Read every line of @p path; lines of the kinds whose format did not change are written
 * again and compared byte for byte. @p last receives the last record (the caller frees it). */
static void read_file(const char *path, file_counts *c, manta_rec *last)
{
    char *text = NULL;
    size_t len = 0;
    manta_err err;
    assert_int_equal(manta_file_read(path, 1 << 20, &text, &len, &err), MANTA_OK);
    memset(c, 0, sizeof *c);
    size_t at = 0;
    while (at < len) {
        const char *line = text + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        manta_rec_free(last);
        if (manta_rec_parse(line, n, last, &err) != MANTA_OK)
            fail_msg("%s: %s", path, err.msg);
        assert_int_not_equal(last->kind, MANTA_REC_UNKNOWN);
        c->kinds[last->kind]++;
        manta_rec_kind k = last->kind;
        if (k == MANTA_REC_PROGRESS || k == MANTA_REC_CHECKPOINT || k == MANTA_REC_ERROR ||
            k == MANTA_REC_STOPPED || k == MANTA_REC_DONE) {
            manta_strbuf b = {0};
            assert_int_equal(manta_rec_json(last, &b, &err), MANTA_OK);
            if (b.n != n || memcmp(b.p, line, n) != 0)
                fail_msg("%s: written again differently:\n%.*s\n%s", path, (int)n, line, b.p);
            c->same_bytes++;
            manta_strbuf_free(&b);
        }
    }
    free(text);
}

static void test_v0_classification(void **state)
{
    (void)state;
    file_counts c;
    manta_rec r = {0};
    read_file("tests/data/records/v0_classification.jsonl", &c, &r);
    assert_int_equal(c.kinds[MANTA_REC_JOB], 1);
    assert_int_equal(c.kinds[MANTA_REC_PROGRESS], 8);
    assert_int_equal(c.kinds[MANTA_REC_EVAL], 6);
    assert_int_equal(c.kinds[MANTA_REC_CHECKPOINT], 12);
    assert_int_equal(c.kinds[MANTA_REC_DONE], 1);
    assert_int_equal(c.same_bytes, 8 + 12 + 1);
    assert_int_equal(r.kind, MANTA_REC_DONE);
    assert_int_equal(r.done.step, 18);
    assert_true(r.done.seconds == 30.1);
    /* the job record of schema 0, and an evaluation naming its phase without an index */
    const char job[] = "{\"event\":\"job\",\"time\":1795944362.048,\"task\":\"classification\","
                       "\"space\":\"cpu-default\",\"schedule\":\"smoke\",\"data\":"
                       "\"fashion-mnist\",\"steps\":18,\"start_step\":0,\"batch\":16,"
                       "\"world_size\":1,\"devices_per_rank\":1,\"replicas\":1,\"mode\":\"data\","
                       "\"host\":\"vm\",\"devices\":[\"cpu\"],\"device_bytes\":[1000],"
                       "\"phases\":[{\"name\":\"full\",\"steps\":3,\"subnets\":1,\"lr\":0.0075,"
                       "\"distill\":false}]}";
    manta_err err;
    assert_int_equal(manta_rec_parse(job, sizeof job - 1, &r, &err), MANTA_OK);
    assert_int_equal(r.kind, MANTA_REC_JOB);
    assert_int_equal(r.job.schema, 0);
    assert_int_equal(r.job.steps, 18);
    assert_int_equal(r.job.n_phases, 1);
    assert_true(r.job.phases[0].lr == 0.0075);
    assert_true(r.job.device_bytes[0] == 1000);
    const char ev[] = "{\"eval\":\"val\",\"phase\":\"kernel\",\"step\":6,\"max_top1\":0.2350,"
                      "\"min_top1\":0.1150}";
    assert_int_equal(manta_rec_parse(ev, sizeof ev - 1, &r, &err), MANTA_OK);
    assert_int_equal(r.kind, MANTA_REC_EVAL);
    assert_string_equal(r.eval.phase, "kernel");
    assert_int_equal(r.eval.phase_index, -1);
    assert_true(r.eval.max_top1 == 0.235);
    manta_rec_free(&r);

    read_file("tests/data/records/v0_classification_sigint.jsonl", &c, &r);
    assert_int_equal(r.kind, MANTA_REC_STOPPED);
    assert_true(r.stopped.signal);
    assert_int_equal(r.stopped.step, 6);
    manta_rec_free(&r);
}

static void test_v0_stereo(void **state)
{
    (void)state;
    file_counts c;
    manta_rec r = {0};
    read_file("tests/data/records/v0_stereo.jsonl", &c, &r);
    assert_int_equal(c.kinds[MANTA_REC_JOB], 1);
    assert_int_equal(c.kinds[MANTA_REC_STEP], 12);
    assert_int_equal(c.kinds[MANTA_REC_PHASE_END], 6);
    assert_int_equal(c.kinds[MANTA_REC_CHECKPOINT], 12);
    assert_int_equal(c.kinds[MANTA_REC_DONE], 1);
    /* the phase counted from 1 becomes the index from 0; the phase end's name its phase */
    const char step[] = "{\"event\":\"step\",\"step\":4,\"phase\":2,\"loss\":1.408476,\"kd_loss\":"
                        "0.000223,\"epe\":1.38868,\"round\":1,\"lr\":0.010000,\"pairs_per_s\":"
                        "45.235,\"time\":1795944401.042}";
    manta_err err;
    assert_int_equal(manta_rec_parse(step, sizeof step - 1, &r, &err), MANTA_OK);
    assert_int_equal(r.kind, MANTA_REC_STEP);
    assert_int_equal(r.step.phase_index, 1);
    assert_string_equal(r.step.phase, "");
    assert_int_equal(r.step.round, 1);
    assert_true(r.step.epe == 1.38868);
    assert_int_equal(r.step.n_ranks, 0);
    const char end[] = "{\"event\":\"phase_end\",\"phase\":4,\"name\":\"depth-2\",\"step\":12,"
                       "\"largest\":{\"epe\":1.58098,\"bad3\":11.2305,\"d1\":11.2305,\"epe_noc\":"
                       "1.45441},\"smallest\":{\"epe\":1.58422,\"bad3\":11.2305,\"d1\":11.2305,"
                       "\"epe_noc\":1.45774}}";
    assert_int_equal(manta_rec_parse(end, sizeof end - 1, &r, &err), MANTA_OK);
    assert_int_equal(r.kind, MANTA_REC_PHASE_END);
    assert_int_equal(r.phase_end.phase_index, 3);
    assert_string_equal(r.phase_end.phase, "depth-2");
    assert_int_equal(r.phase_end.step, 12);
    assert_true(r.phase_end.smallest.epe_noc == 1.45774);
    manta_rec_free(&r);

    /* --stop-after: this file ends at the checkpoint (schema 0 wrote no stopped record) */
    read_file("tests/data/records/v0_stereo_stop_after.jsonl", &c, &r);
    assert_int_equal(r.kind, MANTA_REC_CHECKPOINT);
    assert_int_equal(c.kinds[MANTA_REC_STOPPED], 0);
    manta_rec_free(&r);
}

static void test_v0_two_ranks(void **state)
{
    (void)state;
    file_counts c;
    manta_rec r = {0};
    read_file("tests/data/records/v0_two_ranks_error.jsonl", &c, &r);
    assert_int_equal(c.kinds[MANTA_REC_PROGRESS], 3);
    assert_int_equal(r.kind, MANTA_REC_ERROR);
    assert_int_equal(r.error.rank, 1);
    assert_int_equal(r.error.step, 3);
    assert_non_null(strstr(r.error.message, "rank 1 (127.0.0.1:"));
    manta_rec_free(&r);
    /* the progress records: two ranks, rank 1's device and host null */
    char *text = NULL;
    size_t len = 0;
    manta_err err;
    assert_int_equal(
        manta_file_read("tests/data/records/v0_two_ranks_error.jsonl", 1 << 20, &text, &len, &err),
        MANTA_OK);
    const char *line = strstr(text, "{\"step\":3,");
    assert_non_null(line);
    assert_int_equal(manta_rec_parse(line, (size_t)(strchr(line, '\n') - line), &r, &err),
                     MANTA_OK);
    assert_int_equal(r.kind, MANTA_REC_PROGRESS);
    assert_int_equal(r.progress.n_ranks, 2);
    assert_int_equal(r.progress.ranks[1].rank, 1);
    assert_string_equal(r.progress.ranks[1].device, "");
    assert_string_equal(r.progress.ranks[1].host, "");
    assert_string_not_equal(r.progress.ranks[0].device, "");
    assert_true(r.progress.ranks[1].ring_bytes_per_s > 0);
    assert_true(r.progress.ranks[0].heartbeat == r.progress.ranks[1].heartbeat);
    manta_rec_free(&r);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_eval_and_phase_end),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_unknown_and_malformed),
        cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_v0_classification),
        cmocka_unit_test(test_v0_stereo),
        cmocka_unit_test(test_v0_two_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
