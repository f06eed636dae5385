/* manta report's part of the library (runtime/report/): the axes' ticks (ticks.h: tick
 * choice, tick labels), the readers (results.h: search.json, front.csv, the latency
 * validation CSV and summary) and the inputs of a folder (inputs.h: found, read, skipped
 * when missing, errors). A run's metrics.jsonl: test_run_history.c; the figures and the
 * page drawn from them: test_plot.c. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "core/fileio.h"
#include "report/inputs.h"
#include "report/results.h"
#include "report/ticks.h"

/* ---- ticks ---- */

static void test_nice_number(void **state)
{
    (void)state;
    assert_true(rep_nice_number(1, false) == 1);
    assert_true(rep_nice_number(1.2, false) == 2);
    assert_true(rep_nice_number(3, false) == 5);
    assert_true(rep_nice_number(7, false) == 10);
    assert_true(fabs(rep_nice_number(0.031, false) - 0.05) < 1e-15);
    assert_true(rep_nice_number(1.4, true) == 1);
    assert_true(rep_nice_number(2.9, true) == 2);
    assert_true(rep_nice_number(6.9, true) == 5);
    assert_true(rep_nice_number(8, true) == 10);
    assert_true(rep_nice_number(0, true) == 0);
    assert_true(rep_nice_number(-3, true) == 0);
    assert_true(rep_nice_number(NAN, false) == 0);
}

/* Every tick a multiple of a 1-2-5 step, rising by it, covering [lo, hi]. */
static void check_ticks(double lo, double hi, int target)
{
    plot_ticks t;
    assert_true(rep_nice_ticks(lo, hi, target, &t));
    assert_in_range(t.n, 2, PLOT_MAX_TICKS);
    double m = t.step / pow(10, floor(log10(t.step)));
    assert_true(fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9);
    double a = fmin(lo, hi), b = fmax(lo, hi);
    assert_true(t.lo <= a + 1e-12 * fabs(a) && t.hi >= b - 1e-12 * fabs(b));
    assert_true(t.v[0] == t.lo && t.v[t.n - 1] == t.hi);
    for (int i = 0; i < t.n; i++) {
        double q = t.v[i] / t.step;
        assert_true(fabs(q - round(q)) < 1e-6);
        if (i > 0)
            assert_true(fabs(t.v[i] - t.v[i - 1] - t.step) < 1e-9 * t.step + 1e-14 * fabs(t.v[i]));
    }
}

static void test_nice_ticks(void **state)
{
    (void)state;
    plot_ticks t;
    assert_true(rep_nice_ticks(0, 1, 6, &t));
    assert_true(t.lo == 0 && t.hi == 1 && t.n == 6 && fabs(t.step - 0.2) < 1e-12);
    assert_int_equal(t.decimals, 1);
    assert_true(rep_nice_ticks(0.13, 0.87, 5, &t)); /* rounded out to the step */
    assert_true(t.lo == 0 && fabs(t.hi - 1) < 1e-12 && fabs(t.step - 0.2) < 1e-12);
    assert_true(rep_nice_ticks(0, 18, 7, &t)); /* steps of a short run */
    assert_true(t.lo == 0 && t.hi == 20 && t.step == 5 && t.decimals == 0);
    assert_true(rep_nice_ticks(20, 0, 7, &t)); /* either order */
    assert_true(t.lo == 0 && t.hi == 20);
    assert_true(rep_nice_ticks(0.0005, 0.0203, 5, &t)); /* a learning rate */
    assert_true(fabs(t.step - 0.005) < 1e-15 && t.decimals == 3);
    assert_true(rep_nice_ticks(-3.2, 7.9, 6, &t));
    assert_true(t.v[0] < 0 && t.hi >= 7.9);
    for (int i = 0; i < t.n; i++)
        assert_false(signbit(t.v[i]) && t.v[i] == 0); /* no -0 */
    /* an empty range is widened around the value */
    assert_true(rep_nice_ticks(3, 3, 5, &t));
    assert_true(t.lo < 3 && t.hi > 3);
    assert_true(rep_nice_ticks(0, 0, 5, &t));
    assert_true(t.lo <= -1 && t.hi >= 1);
    assert_true(rep_nice_ticks(1e-300, 1e-300, 5, &t));
    assert_true(t.lo < 1e-300 && t.hi > 1e-300);
    /* not finite: refused, untouched */
    t.n = 77;
    assert_false(rep_nice_ticks(NAN, 1, 5, &t));
    assert_false(rep_nice_ticks(0, INFINITY, 5, &t));
    assert_int_equal(t.n, 77);
    /* many ranges and targets (also out of range targets) */
    const double r[][2] = {{0, 1},     {0.001, 0.0013},  {-5, 5},        {1e6, 3.7e7}, {99, 101},
                           {-0.02, 0}, {2.5, 2.5000001}, {0.179, 0.629}, {13.5, 21},   {1, 1e9}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        for (int target = 0; target <= 40; target += 4)
            check_ticks(r[i][0], r[i][1], target);
}

static void test_format_tick(void **state)
{
    (void)state;
    plot_ticks t;
    char b[64];
    assert_true(rep_nice_ticks(-1, 1, 5, &t));
    rep_format_tick(0.5, &t, b, sizeof b);
    assert_string_equal(b, "0.5");
    rep_format_tick(-0.0, &t, b, sizeof b);
    assert_string_equal(b, "0.0");
    rep_format_tick(-1e-17, &t, b, sizeof b); /* rounding residue of a zero tick */
    assert_string_equal(b, "0.0");
    rep_format_tick(-0.5, &t, b, sizeof b);
    assert_string_equal(b, "-0.5");
    assert_true(rep_nice_ticks(0, 1500, 4, &t));
    rep_format_tick(1000, &t, b, sizeof b);
    assert_string_equal(b, "1000");
    rep_format_tick(2e7, &t, b, sizeof b);
    assert_string_equal(b, "2e+07");
    assert_true(rep_nice_ticks(0, 0.0003, 4, &t));
    rep_format_tick(0.0002, &t, b, sizeof b);
    assert_string_equal(b, "0.0002");
}

/* ---- CSV ---- */

static void test_csv_split(void **state)
{
    (void)state;
    char line[] = "1,0.25,\"{\"\"ks\"\":[3,5],\"\"d\"\":[2]}\",,last\r\n";
    char *f[8];
    assert_int_equal(rep_csv_split(line, f, 8), 5);
    assert_string_equal(f[0], "1");
    assert_string_equal(f[1], "0.25");
    assert_string_equal(f[2], "{\"ks\":[3,5],\"d\":[2]}");
    assert_string_equal(f[3], "");
    assert_string_equal(f[4], "last");
    char open[] = "1,\"not closed,2\n";
    assert_int_equal(rep_csv_split(open, f, 8), -1);
    char many[] = "a,b,c,d";
    assert_int_equal(rep_csv_split(many, f, 2), 2);
    assert_string_equal(f[1], "b");
}

/* ---- search ---- */

static const char search_json[] =
    "{\"format\":\"manta-search\",\"version\":1,\"space\":\"cpu-default\",\"device\":\"vm\","
    "\"budget\":{\"max_latency_ms\":0.629},\"rerank\":{\"uniform_added\":1,\"chosen\":2,"
    "\"candidates\":[{\"arch\":{\"ks\":[7,3],\"e\":[3,3],\"d\":[3,4],\"r\":[24]},"
    "\"predicted_top1\":0.19,\"validation_top1\":0.13,\"predicted_latency_ms\":0.36},"
    "{\"arch\":{\"ks\":[3,5],\"e\":[3,4],\"d\":[3,4],\"r\":[32]},\"predicted_top1\":0.18,"
    "\"validation_top1\":0.21,\"predicted_latency_ms\":0.57},"
    "{\"arch\":{\"ks\":[3,3],\"e\":[3,3],\"d\":[3,3],\"r\":[24]},\"predicted_top1\":0.17,"
    "\"validation_top1\":0.145,\"predicted_latency_ms\":0.24}]},"
    "\"best\":{\"arch\":{\"ks\":[3,5],\"e\":[3,4],\"d\":[3,4],\"r\":[32]},"
    "\"predicted_top1\":0.18,\"predicted_latency_ms\":0.57,\"macs\":6849472,"
    "\"arena_bytes\":499232,\"file_bytes\":2906336},\"evaluated\":2100,\"rejected\":49}";

static void test_search(void **state)
{
    (void)state;
    rep_search s = {0};
    manta_err err;
    assert_int_equal(rep_search_parse(search_json, "search.json", &s, &err), MANTA_OK);
    assert_string_equal(s.space, "cpu-default");
    assert_true(s.budget_ms == 0.629);
    assert_int_equal(s.n_cand, 3);
    assert_int_equal(s.chosen, 1);
    assert_true(s.has_best && s.best.latency_ms == 0.57 && s.best.val_top1 == 0.21);
    assert_false(s.best.uniform);
    assert_false(s.cand[0].uniform);
    assert_true(s.cand[2].uniform);
    assert_true(s.best_macs == 6849472 && s.best_file_bytes == 2906336);
    assert_int_equal(s.evaluated, 2100);
    assert_non_null(strstr(s.best_arch, "\"ks\":[3,5]"));

    const char front[] =
        "rank,top1,latency_ms,macs,arena_bytes,flash_bytes,best,arch\n"
        "1,0.168,0.179,2159712,255152,1193888,0,\"{\"\"ks\"\":[3,3],\"\"e\"\":[3,3],"
        "\"\"d\"\":[2,2],\"\"r\"\":[24]}\"\n"
        "2,0.170,0.199,2382720,258448,1781440,0,\"{\"\"ks\"\":[3,5],\"\"e\"\":[3,3],"
        "\"\"d\"\":[2,2],\"\"r\"\":[24]}\"\n\n";
    assert_int_equal(rep_front_parse(front, "front.csv", &s, &err), MANTA_OK);
    assert_int_equal(s.n_front, 2);
    assert_true(s.front[0].uniform && !s.front[1].uniform);
    assert_true(s.front[1].latency_ms == 0.199 && s.front[1].predicted_top1 == 0.170);
    assert_true(isnan(s.front[0].val_top1));
    rep_search_free(&s);

    /* malformed inputs: one line naming the file and the problem */
    assert_int_equal(rep_search_parse("{\"format\":", "x/search.json", &s, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "x/search.json: not JSON"));
    rep_search_free(&s);
    assert_int_equal(rep_search_parse("{\"format\":\"other\"}", "o.json", &s, &err),
                     MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "manta-search"));
    rep_search_free(&s);
    assert_int_equal(
        rep_search_parse("{\"format\":\"manta-search\",\"best\":{}}", "b.json", &s, &err),
        MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "b.json: \"best\" lacks"));
    rep_search_free(&s);
    assert_int_equal(rep_front_parse("rank,top1\n1,0.1\n", "f.csv", &s, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "f.csv: line 1"));
    assert_int_equal(rep_front_parse("top1,latency_ms\n0.1,0.2\n0.1,abc\n", "f.csv", &s, &err),
                     MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "f.csv: line 3"));
    rep_search_free(&s);
}

/* A stereo search: EPE in px (above 1, where top-1 is refused), its re-rank's held-out EPE. */
static void test_search_stereo(void **state)
{
    (void)state;
    const char json[] =
        "{\"format\":\"manta-search\",\"version\":1,\"task\":\"stereo\",\"space\":\"stereo-cpu\","
        "\"rerank\":{\"chosen\":1,\"candidates\":[{\"arch\":{\"ks\":[3,5],\"e\":[3,4],"
        "\"d\":[3,4],\"r\":[64],\"dw\":[8,4]},\"predicted_epe\":4.6,\"heldout_epe\":4.75,"
        "\"predicted_latency_ms\":9.5}]},\"best\":{\"arch\":{\"ks\":[3,5],\"e\":[3,4],"
        "\"d\":[3,4],\"r\":[64],\"dw\":[8,4]},\"predicted_epe\":4.6,"
        "\"predicted_latency_ms\":9.5}}";
    rep_search s = {0};
    manta_err err;
    assert_int_equal(rep_search_parse(json, "search.json", &s, &err), MANTA_OK);
    assert_true(s.stereo);
    assert_true(s.best.predicted_top1 == 4.6 && s.best.val_top1 == 4.75);
    assert_int_equal(s.n_cand, 1);
    rep_search_free(&s);
    const char front[] = "rank,epe,latency_ms,macs,arena_bytes,flash_bytes,best,arch\n"
                         "1,4.9,7.8,1,2,3,0,\"{}\"\n2,4.6,9.5,1,2,3,1,\"{}\"\n";
    assert_int_equal(rep_front_parse(front, "front.csv", &s, &err), MANTA_OK);
    assert_true(s.stereo && s.n_front == 2 && s.front[1].predicted_top1 == 4.6);
    rep_search_free(&s);
    /* a stereo best without its EPE */
    assert_int_equal(
        rep_search_parse("{\"format\":\"manta-search\",\"task\":\"stereo\","
                         "\"best\":{\"predicted_top1\":0.5,\"predicted_latency_ms\":1}}",
                         "b.json", &s, &err),
        MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "predicted_epe"));
    rep_search_free(&s);
}

/* ---- latency validation ---- */

static void test_latency(void **state)
{
    (void)state;
    rep_latency l = {0};
    manta_err err;
    const char profile[] = "index,predicted_ms,measured_ms,measured_median_ms,error_pct,arch\n"
                           "0,0.48,1.29,1.57,-62.7,\"{\"\"ks\"\":[7,3]}\"\n"
                           "1,0.59,1.04,1.58,-43.4,\"{\"\"ks\"\":[5,3]}\"\n";
    assert_int_equal(rep_latency_parse_csv(profile, "v.csv", &l, &err), MANTA_OK);
    assert_int_equal(l.n, 2);
    assert_true(l.pred[1] == 0.59 && l.meas[1] == 1.04);
    const char summary[] = "{\"device\":\"vm\",\"validation\":{\"networks\":2,"
                           "\"mean_abs_pct\":53.08,\"within_10pct\":0,\"kendall_tau\":-1}}";
    assert_int_equal(rep_latency_parse_summary(summary, "v.json", &l, &err), MANTA_OK);
    assert_true(l.has_summary && l.mean_abs_pct == 53.08 && l.kendall_tau == -1);
    assert_string_equal(l.device, "vm");
    rep_latency_free(&l);
    /* manta profile's CSV: median_ms; rows without a prediction left out */
    const char gpu[] = "index,median_ms,mean_ms,runs,predicted_ms,arch\n"
                       "0,2.5,2.6,10,2.4,\"{}\"\n1,3.0,3.1,10,0.000000,\"{}\"\n";
    assert_int_equal(rep_latency_parse_csv(gpu, "g.csv", &l, &err), MANTA_OK);
    assert_int_equal(l.n, 1);
    assert_true(l.pred[0] == 2.4 && l.meas[0] == 2.5);
    rep_latency_free(&l);
    assert_int_equal(rep_latency_parse_csv("a,b\n1,2\n", "h.csv", &l, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "h.csv: line 1"));
    assert_int_equal(
        rep_latency_parse_csv("predicted_ms,measured_ms\n1,2\nx,3\n", "n.csv", &l, &err),
        MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "n.csv: line 3"));
    rep_latency_free(&l);
    assert_int_equal(rep_latency_parse_summary("{\"device\":\"vm\"}", "s.json", &l, &err),
                     MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "s.json: no \"validation\""));
    assert_int_equal(rep_latency_parse_summary("nope", "s.json", &l, &err), MANTA_ERR_FORMAT);
    rep_latency_free(&l);
}

/* Every prefix of each reader's good input (a file cut short) reads or fails cleanly. */
static void test_prefixes(void **state)
{
    (void)state;
    const char front[] = "rank,top1,latency_ms,arch\n1,0.168,0.179,\"{\"\"ks\"\":[3,3]}\"\n";
    const char lat[] = "index,predicted_ms,measured_ms\n0,0.48,1.29\n1,0.59,1.04\n";
    const char *texts[] = {search_json, front, lat};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        size_t n = strlen(texts[k]);
        for (size_t len = 0; len <= n; len++) {
            char *p = malloc(len + 1);
            assert_non_null(p);
            memcpy(p, texts[k], len);
            p[len] = '\0';
            rep_search s = {0};
            rep_latency l = {0};
            manta_err err;
            manta_status st = rep_search_parse(p, "p", &s, &err);
            assert_true(st == MANTA_OK || st == MANTA_ERR_FORMAT);
            st = rep_front_parse(p, "p", &s, &err);
            assert_true(st == MANTA_OK || st == MANTA_ERR_FORMAT);
            st = rep_latency_parse_csv(p, "p", &l, &err);
            assert_true(st == MANTA_OK || st == MANTA_ERR_FORMAT);
            st = rep_latency_parse_summary(p, "p", &l, &err);
            assert_true(st == MANTA_OK || st == MANTA_ERR_FORMAT);
            rep_search_free(&s);
            rep_latency_free(&l);
            free(p);
        }
    }
}

/* ---- the inputs of a folder ---- */

/* A demo folder (tests/data/report/demo: supernet/metrics.jsonl with a cut last line,
 * search/search.json and front.csv, validate.csv and .json, test.json, bench.json). */
static void test_inputs_demo(void **state)
{
    (void)state;
    rep_inputs *in = malloc(sizeof *in);
    assert_non_null(in);
    const rep_input_opts o = {.run = "tests/data/report/demo"};
    manta_err err;
    assert_int_equal(rep_inputs_load(&o, in, &err), MANTA_OK);
    assert_true(in->have_metrics && in->have_train && in->have_search && in->have_front &&
                in->have_lat);
    assert_string_equal(in->metrics_path, "tests/data/report/demo/supernet/metrics.jsonl");
    assert_string_equal(in->search_path, "tests/data/report/demo/search/search.json");
    assert_string_equal(in->front_path, "tests/data/report/demo/search/front.csv");
    assert_string_equal(in->lat_path, "tests/data/report/demo/validate.csv");
    assert_string_equal(in->lat_summary_path, "tests/data/report/demo/validate.json");
    assert_int_equal(in->train.malformed, 1); /* the cut last line */
    assert_true(in->train.loss.n > 0 && in->train.n_ranks == 2);
    assert_true(in->search.n_front > 0 && in->lat.n == 2);
    assert_true(isfinite(in->test_top1) && isfinite(in->bench_p10) && isfinite(in->bench_med));
    assert_int_equal(in->n_skipped, 0);
    rep_inputs_free(in);
    /* the same inputs named one by one: a folder for --search, the summary for --latency */
    const rep_input_opts named = {.metrics = "tests/data/report/demo/supernet/metrics.jsonl",
                                  .search = "tests/data/report/demo/search",
                                  .latency = "tests/data/report/demo/validate.json"};
    assert_int_equal(rep_inputs_load(&named, in, &err), MANTA_OK);
    assert_true(in->have_train && in->have_front && in->have_lat);
    assert_string_equal(in->lat_path, "tests/data/report/demo/validate.csv");
    assert_true(isnan(in->test_top1)); /* no folder: no test.json */
    rep_inputs_free(in);
    free(in);
}

/* Missing inputs are skipped with a line each; a folder with nothing, a path that is not a
 * folder and a malformed search.json are errors naming them. */
static void test_inputs_missing(void **state)
{
    (void)state;
    char dir[] = "/tmp/manta_test_report_XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    rep_inputs *in = malloc(sizeof *in);
    assert_non_null(in);
    manta_err err;
    const rep_input_opts empty = {.run = dir};
    assert_int_equal(rep_inputs_load(&empty, in, &err), MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "nothing to report"));
    assert_int_equal(in->n_skipped, 3);
    rep_inputs_free(in);
    const rep_input_opts lat = {.run = dir, .latency = "tests/data/report/demo/validate.csv"};
    assert_int_equal(rep_inputs_load(&lat, in, &err), MANTA_OK);
    assert_true(in->have_lat && !in->have_train && !in->have_search);
    assert_int_equal(in->n_skipped, 2);
    assert_non_null(strstr(in->skipped[0], "no metrics.jsonl"));
    assert_non_null(strstr(in->skipped[1], "no search.json"));
    rep_inputs_free(in);
    snprintf(path, sizeof path, "%s/search.json", dir);
    assert_int_equal(manta_file_write_atomic(path, "{\"format\":", 10, &err), MANTA_OK);
    assert_int_equal(rep_inputs_load(&empty, in, &err), MANTA_ERR_FORMAT);
    assert_non_null(strstr(err.msg, path));
    rep_inputs_free(in);
    const rep_input_opts file = {.run = path};
    assert_int_equal(rep_inputs_load(&file, in, &err), MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, "not a folder"));
    rep_inputs_free(in);
    const rep_input_opts none = {0};
    assert_int_equal(rep_inputs_load(&none, in, &err), MANTA_ERR_INVALID_ARG);
    rep_inputs_free(in);
    free(in);
    manta_file_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nice_number), cmocka_unit_test(test_nice_ticks),
        cmocka_unit_test(test_format_tick), cmocka_unit_test(test_csv_split),
        cmocka_unit_test(test_search),      cmocka_unit_test(test_search_stereo),
        cmocka_unit_test(test_latency),     cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_inputs_demo), cmocka_unit_test(test_inputs_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
