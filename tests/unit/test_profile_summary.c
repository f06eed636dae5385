/* The board profiler's bookkeeping (profile/summary.h): table metadata, the
 * sub-network a spec names, progress lines, the results as JSON members and
 * text files written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "profile/summary.h"

static void test_format_secs_and_progress(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(prof_format_secs(b, sizeof b, 41.6), "42s");
    assert_string_equal(prof_format_secs(b, sizeof b, 187.2), "3m07s");
    assert_int_equal(prof_progress_line(b, sizeof b, "p", 5, 20, 10.0, NULL, false), 25);
    assert_string_equal(b, "p:  25% (5/20), 10s elapsed, ETA 30s");
    char line[256];
    assert_int_equal(prof_progress_line(line, sizeof line, "v", 10, 20, 1.0, "k", true), 50);
    assert_string_equal(line,
                        "v [===============>              ]  50% 10/20  1s elapsed, ETA 1s  k");
}

static void test_table_name_and_json(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_table t;
    manta_err e;
    TU_OK_ERR(lat_table_init(&t, &s, &e));
    TU_OK_ERR(lat_table_name(&t, "board\"1", PT_CPU, "cc -O2", &e));
    assert_string_equal(t.device, "board\"1 (manta engine, 1 thread, thread CPU time)");
    assert_string_equal(t.cflags, "cc -O2");
    char cpu[LAT_META_MAX];
    lat_host_cpu(cpu, sizeof cpu);
    assert_string_equal(t.cpu, cpu);
    assert_int_equal(strlen(t.date), 20);
    assert_int_equal(t.date[19], 'Z');
    TU_OK_ERR(lat_table_check_host(&t, "x.json", &e));
    snprintf(t.cpu, sizeof t.cpu, "other");
    assert_int_equal(lat_table_check_host(&t, "x.json", &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "x.json was measured on another device: CPU 'other'"));

    lat_results r = {.space = s.name,
                     .clock = PT_WALL,
                     .table = "t.json",
                     .validated = true,
                     .seed = 7,
                     .validate_s = 2.5};
    r.ag.n = 4, r.ag.within = 0.96, r.ag.kendall_tau = 0.95;
    assert_true(lat_agreement_meets_targets(&r.ag));
    manta_strbuf b = {0};
    TU_OK_ERR(lat_results_json(&b, &r, &t, &e));
    assert_true(strncmp(b.p, "\"space\":\"", 9) == 0);
    assert_non_null(
        strstr(b.p, ",\"clock\":\"wall\",\"table\":\"t.json\",\"device\":\"board\\\"1 "));
    assert_null(strstr(b.p, "\"keys\""));
    assert_non_null(strstr(b.p, ",\"validation\":{\"networks\":4,\"seed\":7,\"seconds\":2.500,"));
    assert_non_null(strstr(b.p, "\"meets_targets\":true}"));
    manta_strbuf_free(&b);
    r.ag.kendall_tau = 0.5;
    assert_false(lat_agreement_meets_targets(&r.ag));
    r = (lat_results){
        .space = "s", .table = "u", .profiled = true, .method = "net", .profile_s = 1};
    TU_OK_ERR(lat_results_json(&b, &r, &t, &e));
    assert_non_null(strstr(b.p, ",\"keys\":0,\"method\":\"net\",\"profile_seconds\":1.000,"));
    assert_null(strstr(b.p, "validation"));
    manta_strbuf_free(&b);
    const lat_stats st = {.median_ms = 2, .mean_ms = 2.5, .count = 9, .p10_ms = 2};
    TU_OK_ERR(lat_arch_json(&b, "{}", 3, &st, 10, 20, &e));
    assert_string_equal(b.p, "\"arch\":{},\"predicted_ms\":3.000000,\"measured_ms\":2.000000,"
                             "\"median_ms\":2.000000,\"mean_ms\":2.500000,\"runs\":9,"
                             "\"error_pct\":50.000,\"arena_bytes\":10,\"file_bytes\":20");
    manta_strbuf_free(&b);
    lat_table_free(&t);
}

static void test_space_arch_and_write(void **state)
{
    (void)state;
    ofa_space sp, want;
    stereo_space ss;
    bool stereo = true;
    manta_err e;
    TU_OK_ERR(prof_space_load("cpu-default", &sp, &ss, &stereo, &e));
    assert_false(stereo);
    ofa_arch a, m;
    TU_OK_ERR(lat_arch_resolve(&sp, NULL, "max", &a, &e));
    ofa_arch_max(&sp, 0, &m);
    assert_memory_equal(&a, &m, sizeof a);
    char enc[1024];
    ofa_arch_min(&sp, 0, &m);
    ofa_arch_to_json(&sp, &m, enc, sizeof enc, NULL);
    TU_OK_ERR(lat_arch_resolve(&sp, NULL, enc, &a, &e));
    ofa_arch_to_json(&sp, &a, enc + 512, 512, NULL);
    assert_string_equal(enc, enc + 512);
    assert_int_not_equal(lat_arch_resolve(&sp, NULL, "/nonexistent/arch.json", &a, &e), MANTA_OK);
    TU_OK_ERR(prof_space_load("stereo-cpu", &sp, &ss, &stereo, &e));
    assert_true(stereo);
    TU_OK_ERR(lat_arch_resolve(&sp, &ss, "min", &a, &e));
    stereo_arch_min(&ss, &m);
    assert_memory_equal(&a, &m, sizeof a);
    ofa_space_cpu_default(&want);
    lat_layer *keys = NULL;
    size_t n = 0;
    TU_OK_ERR(lat_enumerate_space(&want, NULL, &keys, &n, &e));
    assert_true(n > 0);
    free(keys);

    tu_tmpdir dir;
    assert_int_equal(tu_tmpdir_make(&dir, "summary"), 0);
    char path[1100];
    tu_tmpdir_path(&dir, "out.csv", path, sizeof path);
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "a,b\n");
    TU_OK_ERR(prof_write_text(path, &b, &e));
    char *text = NULL;
    TU_OK_ERR(manta_file_read(path, 100, &text, NULL, &e));
    assert_string_equal(text, "a,b\n");
    free(text);
    tu_tmpdir_path(&dir, "no/such/out.csv", path, sizeof path);
    assert_int_equal(prof_write_text(path, &b, &e), MANTA_ERR_IO);
    assert_non_null(strstr(e.msg, "cannot write"));
    manta_strbuf_free(&b);
    assert_int_equal(tu_tmpdir_remove(&dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_secs_and_progress),
        cmocka_unit_test(test_table_name_and_json),
        cmocka_unit_test(test_space_arch_and_write),
    };
    return cmocka_run_group_tests_name("profile summary", tests, NULL, NULL);
}
