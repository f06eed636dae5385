/* The latency profiler's methods (profile/measure.h) on a tiny space with few
 * runs: how many runs each item gets over the passes and the progress it
 * reports, layer times that add up to their network's, a complete table from
 * both methods with its layers CSV, the overhead fitted as a median, the
 * validation's figures and CSV (each line's arch reads back), one sub-network's
 * arena and file size against the exporter's, the int8 table (its dtype kept apart from
 * float models, int8 inputs, the int8 export's sizes), and the host CPU's name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/testutil.h"

#include "export/quant.h"
#include "export/tflite.h"
#include "profile/measure.h"
#include "profile/synth.h"

/* Two resolutions, two kernels, two expand ratios, depths 1-2, two units: 41 keys. */
static const char TINY[] =
    "{\"format\": \"manta-ofa-space\", \"version\": 1, \"name\": \"tiny\", \"input_channels\": 1,"
    " \"classes\": 4, \"resolutions\": [16, 20], \"kernel_sizes\": [3, 5],"
    " \"expand_ratios\": [2, 3], \"depths\": [1, 2],"
    " \"stem\": {\"width\": 8, \"kernel\": 3, \"stride1_max_res\": 64, \"act\": \"h-swish\"},"
    " \"first_block\": {\"width\": 8, \"act\": \"relu\"},"
    " \"units\": [{\"width\": 8, \"stride\": 2, \"act\": \"relu\", \"se\": false},"
    " {\"width\": 16, \"stride\": 2, \"act\": \"h-swish\", \"se\": true}],"
    " \"head\": {\"expand\": 32, \"mix\": 0, \"dropout\": 0.1}}";

static int setup(void **state)
{
    static ofa_space s;
    manta_err e;
    if (ofa_space_parse(TINY, &s, &e) != MANTA_OK) {
        fprintf(stderr, "tiny space: %s\n", e.msg);
        return -1;
    }
    *state = &s;
    return 0;
}

/* A few runs per model, no time minimum. */
static lat_measure_opts fast(int runs, int passes)
{
    return (lat_measure_opts){
        {.warmup = 1, .min_runs = runs, .max_runs = 1000}, passes, NULL, NULL, false};
}

/* fast() for the int8 models. */
static lat_measure_opts fast8(int runs, int passes)
{
    lat_measure_opts o = fast(runs, passes);
    o.int8 = true;
    return o;
}

typedef struct seen {
    size_t calls, last_done, total;
    bool ordered, ended;
} seen;

static void on_progress(void *ctx, size_t done, size_t total, const char *what)
{
    seen *s = ctx;
    if (s->calls > 0 && done <= s->last_done)
        s->ordered = false;
    s->calls++;
    s->last_done = done;
    s->total = total;
    s->ended = done == total && what && !what[0];
}

/* @p got is @p want and the message holds @p needle. */
static void expect_err(manta_status got, manta_status want, const manta_err *e, const char *needle)
{
    assert_int_equal(got, want);
    if (!strstr(e->msg, needle))
        fail_msg("'%s' not in '%s'", needle, e->msg);
}

static size_t count_lines(const char *text)
{
    size_t n = 0;
    for (; text && *text; text++)
        n += *text == '\n';
    return n;
}

static void test_measure_runs_passes_and_layers(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_layer *keys = NULL;
    size_t nk = 0;
    TU_OK_ERR(lat_enumerate(s, &keys, &nk, &e));
    lat_item *it = calloc(3, sizeof *it);
    assert_non_null(it);
    it[0].layer = &keys[nk / 2];
    it[0].seed = 1;
    ofa_arch_max(s, 0, &it[1].arch);
    it[1].layers = true;
    it[1].seed = 2;
    ofa_arch_min(s, 0, &it[2].arch);
    it[2].seed = 3;
    seen p = {.ordered = true};
    lat_measure_opts o = fast(5, 2);
    o.progress = on_progress;
    o.progress_ctx = &p;
    TU_OK_ERR(lat_measure(s, it, 3, &o, &e));
    /* each pass times ceil(5 / 2) runs of every item */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(it[i].n, 6);
        assert_int_equal(it[i].st.count, 6);
        assert_true(it[i].st.p10_ms >= 0 && it[i].st.p10_ms <= it[i].st.median_ms);
    }
    /* one call before each of the 6 visits and one at the end */
    assert_int_equal(p.calls, 7);
    assert_int_equal(p.total, 6);
    assert_true(p.ordered && p.ended);
    /* a network's layer times add up to its run: layer j is operators [bound[j], bound[j+1]);
     * the runs' times are sorted by the statistics, the layer times are in run order */
    lat_layer L[LAT_MAX_ARCH_LAYERS];
    int m = 0;
    TU_OK_ERR(lat_arch_layers(s, &it[1].arch, L, &m, &e));
    assert_int_equal(it[1].nl, m);
    assert_int_equal(it[1].bound[0], 0);
    assert_null(it[0].seg);
    double sums[6];
    for (size_t r = 0; r < it[1].n; r++) {
        sums[r] = 0;
        for (int j = 0; j < m; j++)
            sums[r] += it[1].seg[r * (size_t)m + (size_t)j];
    }
    for (size_t r = 0; r < it[1].n; r++) {
        assert_true(r == 0 || it[1].ms[r - 1] <= it[1].ms[r]);
        size_t match = 0;
        for (size_t q = 0; q < it[1].n; q++)
            match += fabs(sums[q] - it[1].ms[r]) <= 1e-9 * it[1].ms[r];
        assert_true(match >= 1);
    }
    lat_items_free(it, 3);
    free(keys);
}

static void test_measure_refuses_no_passes(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_item it = {.seed = 1};
    ofa_arch_min(s, 0, &it.arch);
    lat_measure_opts o = fast(1, 0);
    assert_int_equal(lat_measure(s, &it, 1, &o, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "passes"));
}

/* A complete table of the tiny space by @p method; returns the layers CSV (free). */
static char *profile_tiny(const ofa_space *s, lat_method method, lat_table *t,
                          lat_profile_report *rep)
{
    manta_err e;
    manta_strbuf csv = {0};
    const lat_profile_opts o = {method, 1, 3, fast(2, 1), method == LAT_METHOD_NET ? &csv : NULL};
    TU_OK_ERR(lat_table_init(t, s, &e));
    TU_OK_ERR(lat_profile(s, &o, t, rep, &e));
    TU_OK_ERR(lat_table_check_complete(t, &e));
    lat_layer *keys = NULL;
    size_t nk = 0;
    TU_OK_ERR(lat_enumerate(s, &keys, &nk, &e));
    assert_int_equal(rep->keys, nk);
    assert_int_equal(t->n, nk);
    for (size_t k = 0; k < nk; k++) { /* in enumeration order */
        assert_string_equal(t->entry[k].key, keys[k].key);
        assert_true(t->entry[k].st.count >= 1);
    }
    free(keys);
    assert_int_equal(rep->calib, 3);
    assert_true(t->overhead_ms >= 0);
    assert_true(t->overhead_ms == (rep->overhead_median_ms > 0 ? rep->overhead_median_ms : 0));
    assert_false(csv.oom);
    return csv.p;
}

static void test_profile_in_networks(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_table t;
    lat_profile_report rep;
    char *csv = profile_tiny(s, LAT_METHOD_NET, &t, &rep);
    assert_true(rep.networks > 0);
    assert_true(rep.clock_ms > 0 && rep.clock_ms < 1);
    /* the sub-networks of lat_cover_archs() hold every key once at least; the CSV has a
     * line per keyed layer of each of them */
    ofa_arch *archs = NULL;
    size_t na = 0;
    TU_OK_ERR(lat_cover_archs(s, 1, 0xc04e5, &archs, &na, &e));
    assert_int_equal(rep.networks, na);
    size_t layers = 0;
    for (size_t i = 0; i < na; i++) {
        lat_layer L[LAT_MAX_ARCH_LAYERS];
        int m = 0;
        TU_OK_ERR(lat_arch_layers(s, &archs[i], L, &m, &e));
        layers += (size_t)m;
    }
    free(archs);
    assert_non_null(csv);
    assert_int_equal(
        strncmp(csv, "network,layer,where,p10_ms,median_ms,table_p10_ms,runs,key\n", 59), 0);
    assert_int_equal(count_lines(csv), layers + 1);
    free(csv);
    lat_table_free(&t);
}

static void test_profile_one_layer_models(void **state)
{
    const ofa_space *s = *state;
    lat_table t;
    lat_profile_report rep;
    char *csv = profile_tiny(s, LAT_METHOD_LAYER, &t, &rep);
    assert_null(csv);
    assert_int_equal(rep.networks, 0);
    assert_true(rep.clock_ms == 0);
    for (size_t k = 0; k < t.n; k++)
        assert_true(t.entry[k].st.p10_ms >= 0 && t.entry[k].st.count >= 2);
    lat_table_free(&t);
}

static void test_profile_refuses_bad_options(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_table t;
    lat_profile_report rep;
    TU_OK_ERR(lat_table_init(&t, s, &e));
    const lat_profile_opts o = {LAT_METHOD_NET, 0, 1, fast(1, 1), NULL};
    assert_int_equal(lat_profile(s, &o, &t, &rep, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(t.n, 0);
    lat_table_free(&t);
}

static void test_overhead_is_the_median_excess(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_table t;
    TU_OK_ERR(lat_table_init(&t, s, &e));
    lat_layer *keys = NULL;
    size_t nk = 0;
    TU_OK_ERR(lat_enumerate(s, &keys, &nk, &e));
    for (size_t k = 0; k < nk; k++) {
        const lat_stats st = {0.02, 0.02, 0, 1, 0.01 * (double)(k % 7 + 1)};
        TU_OK_ERR(lat_table_set(&t, keys[k].key, &st, &e));
    }
    free(keys);
    lat_item cal[3];
    memset(cal, 0, sizeof cal);
    const double excess[3] = {0.05, -0.01, 0.02};
    manta_rng rng;
    manta_rng_seed(&rng, 9, 1);
    for (int i = 0; i < 3; i++) {
        double sum;
        ofa_arch_sample(s, &rng, &cal[i].arch);
        TU_OK_ERR(lat_predict(&t, &cal[i].arch, &sum, &e));
        cal[i].st.p10_ms = sum + excess[i];
    }
    double median;
    TU_OK_ERR(lat_fit_overhead(&t, cal, 3, &median, &e));
    assert_true(median > 0.02 - 1e-12 && median < 0.02 + 1e-12);
    assert_true(t.overhead_ms == median);
    cal[0].st.p10_ms -= 0.1; /* excesses -0.05, -0.01, 0.02: median negative, overhead 0 */
    cal[2].st.p10_ms -= 0.05;
    t.overhead_ms = 0;
    TU_OK_ERR(lat_fit_overhead(&t, cal, 3, &median, &e));
    assert_true(median < 0);
    assert_true(t.overhead_ms == 0);
    TU_OK_ERR(lat_fit_overhead(&t, cal, 0, &median, &e));
    assert_true(median == 0 && t.overhead_ms == 0);
    lat_table_free(&t);
}

static void test_validate_figures_and_csv(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_table t;
    lat_profile_report rep;
    free(profile_tiny(s, LAT_METHOD_NET, &t, &rep));
    lat_agreement ag;
    manta_strbuf csv = {0};
    const lat_measure_opts o = fast(2, 1);
    TU_OK_ERR(lat_validate(s, &t, 4, 7, &o, &ag, &csv, &e));
    assert_int_equal(ag.n, 4);
    assert_true(ag.within >= 0 && ag.within <= 1 && ag.rmse >= 0);
    assert_int_equal(count_lines(csv.p), 5);
    assert_int_equal(strncmp(csv.p,
                             "index,predicted_ms,measured_ms,measured_median_ms,error_pct,"
                             "arch\n",
                             65),
                     0);
    /* each line: 0-based index, the prediction of its arch, then the arch quoted (RFC 4180) */
    const char *line = strchr(csv.p, '\n') + 1;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(atoi(line), i);
        const char *q = strchr(line, '"');
        assert_non_null(q);
        char json[1024];
        size_t k = 0;
        for (q++; *q && !(q[0] == '"' && q[1] != '"') && k + 1 < sizeof json; q++) {
            if (q[0] == '"')
                q++; /* a doubled quote */
            json[k++] = *q;
        }
        json[k] = '\0';
        ofa_arch a;
        TU_OK_ERR(ofa_arch_parse(s, json, &a, &e));
        double pred, field;
        TU_OK_ERR(lat_predict(&t, &a, &pred, &e));
        assert_int_equal(sscanf(strchr(line, ',') + 1, "%lf", &field), 1);
        assert_true(field > pred - 1e-6 && field < pred + 1e-6);
        line = strchr(line, '\n') + 1;
    }
    manta_strbuf_free(&csv);
    assert_int_equal(lat_validate(s, &t, 1, 7, &o, &ag, NULL, &e), MANTA_ERR_INVALID_ARG);
    lat_table_free(&t);
}

static void test_one_arch_sizes_are_the_exporters(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    ofa_arch a;
    ofa_arch_max(s, 0, &a);
    lat_stats st;
    size_t arena = 0, file = 0;
    const lat_measure_opts o = fast(3, 1);
    TU_OK_ERR(lat_measure_arch(s, &a, &o, &st, &arena, &file, &e));
    assert_int_equal(st.count, 3);
    xgraph g;
    const synth_opts so = {0, true};
    TU_OK_ERR(prof_synth_arch_graph(s, &a, NULL, &so, &g, &e));
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report rep;
    TU_OK_ERR(tflite_write(&g, &data, &size, &rep, &e));
    assert_int_equal(arena, rep.arena_bytes);
    assert_int_equal(file, rep.file_bytes);
    free(data);
    xgraph_free(&g);
    a.r = 12; /* not a resolution of the space */
    assert_int_not_equal(lat_measure_arch(s, &a, &o, &st, &arena, &file, &e), MANTA_OK);
}

/* The int8 table: every key timed in int8 models (the input of each is int8), the table
 * says so, and neither a profile nor a validation mixes an int8 table with float models or
 * a float table with int8 models. */
static void test_int8_table_and_validation(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    lat_table t;
    lat_profile_report rep;
    TU_OK_ERR(lat_table_init(&t, s, &e));
    const lat_profile_opts f = {LAT_METHOD_NET, 1, 2, fast(2, 1), NULL};
    lat_profile_opts o = f;
    o.m = fast8(2, 1);
    /* a float32 table is not profiled with int8 models, nor the reverse */
    expect_err(lat_profile(s, &o, &t, &rep, &e), MANTA_ERR_INVALID_ARG, &e,
               "a float32 latency table (\"dtype\": \"float32\"), int8 models measured");
    assert_int_equal(t.n, 0);
    t.dtype = LAT_DTYPE_INT8;
    expect_err(lat_profile(s, &f, &t, &rep, &e), MANTA_ERR_INVALID_ARG, &e,
               "an int8 latency table (\"dtype\": \"int8\"), float32 models measured");
    TU_OK_ERR(lat_profile(s, &o, &t, &rep, &e));
    TU_OK_ERR(lat_table_check_complete(&t, &e));
    char *json = NULL;
    TU_OK_ERR(lat_table_to_json(&t, &json, &e));
    assert_non_null(strstr(json, "\"dtype\":\t\"int8\""));
    free(json);
    lat_agreement ag;
    manta_strbuf csv = {0};
    TU_OK_ERR(lat_validate(s, &t, 3, 5, &o.m, &ag, &csv, &e));
    assert_int_equal(ag.n, 3);
    assert_int_equal(count_lines(csv.p), 4);
    manta_strbuf_free(&csv);
    expect_err(lat_validate(s, &t, 3, 5, &f.m, &ag, NULL, &e), MANTA_ERR_INVALID_ARG, &e,
               "an int8 latency table");
    lat_table_free(&t);
    /* an item's int8 model: int8 input, filled with values of [-1, 1) quantized */
    lat_layer *keys = NULL;
    size_t nk = 0;
    TU_OK_ERR(lat_enumerate(s, &keys, &nk, &e));
    lat_item it;
    memset(&it, 0, sizeof it);
    it.layer = &keys[3];
    it.seed = 9;
    it.int8 = true;
    pt_model m;
    TU_OK_ERR(lat_item_open(s, &it, &m, &e));
    mengine_view in;
    assert_int_equal(mengine_input(&m.e, 0, &in), MENGINE_OK);
    assert_int_equal(in.type, MENGINE_INT8);
    assert_true(in.scale > 0);
    const int8_t *q = (const int8_t *)(const void *)in.data;
    int lo = 127, hi = -128;
    for (size_t i = 0; i < in.count; i++) {
        const float x = in.scale * (float)(q[i] - in.zero_point);
        assert_true(x >= -1.0f - in.scale && x <= 1.0f + in.scale);
        lo = q[i] < lo ? q[i] : lo;
        hi = q[i] > hi ? q[i] : hi;
    }
    assert_true(hi - lo > 128); /* the range calibrated on such inputs: most of int8 used */
    pt_close(&m);
    free(keys);
}

/* One sub-network's int8 arena and file size are those of the int8 export of its graph
 * (calibrated ranges change values, not sizes), smaller than the float ones. */
static void test_int8_arch_sizes_are_the_int8_exporters(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    ofa_arch a;
    ofa_arch_max(s, 0, &a);
    lat_stats st;
    size_t arena = 0, file = 0, arena_f = 0, file_f = 0;
    const lat_measure_opts o = fast8(2, 1), f = fast(2, 1);
    TU_OK_ERR(lat_measure_arch(s, &a, &o, &st, &arena, &file, &e));
    TU_OK_ERR(lat_measure_arch(s, &a, &f, &st, &arena_f, &file_f, &e));
    xgraph g;
    const synth_opts so = {0, true};
    TU_OK_ERR(prof_synth_arch_graph(s, &a, NULL, &so, &g, &e));
    const xg_tensor *x = &g.tensors[g.input];
    const size_t n = (size_t)x->shape[0] * x->shape[1] * x->shape[2] * x->shape[3];
    float *img = malloc(2 * n * sizeof *img);
    assert_non_null(img);
    for (size_t i = 0; i < 2 * n; i++)
        img[i] = (float)(i % 7) / 7.0f - 0.5f;
    TU_OK_ERR(xgraph_calibrate(&g, img, 2, XG_CALIB_MINMAX, 0, &e));
    free(img);
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report rep;
    TU_OK_ERR(tflite_write(&g, &data, &size, &rep, &e));
    assert_int_equal(arena, rep.arena_bytes);
    assert_int_equal(file, rep.file_bytes);
    assert_true(file < file_f && arena < arena_f);
    free(data);
    xgraph_free(&g);
}

static void test_host_cpu(void **state)
{
    (void)state;
    char cpu[LAT_META_MAX];
    lat_host_cpu(cpu, sizeof cpu);
    assert_true(cpu[0] != '\0');
#if defined(__linux__)
    assert_non_null(strstr(cpu, "logical CPU"));
#endif
    char small[8];
    lat_host_cpu(small, sizeof small);
    assert_true(strlen(small) < sizeof small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_measure_runs_passes_and_layers),
        cmocka_unit_test(test_measure_refuses_no_passes),
        cmocka_unit_test(test_profile_in_networks),
        cmocka_unit_test(test_profile_one_layer_models),
        cmocka_unit_test(test_profile_refuses_bad_options),
        cmocka_unit_test(test_overhead_is_the_median_excess),
        cmocka_unit_test(test_validate_figures_and_csv),
        cmocka_unit_test(test_one_arch_sizes_are_the_exporters),
        cmocka_unit_test(test_int8_table_and_validation),
        cmocka_unit_test(test_int8_arch_sizes_are_the_int8_exporters),
        cmocka_unit_test(test_host_cpu),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
