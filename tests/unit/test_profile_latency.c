/* Latency tables: OFA-style layer keys of known sub-networks (hand-checked),
 * the enumeration of every key a space produces, statistics, JSON round trip,
 * strict rejection on load (and loading version 1 tables), float32 and int8
 * tables kept apart by their "dtype", prediction as a sum of lower
 * deciles, and the sub-networks that cover every key for in-network profiling. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "profile/latency_table.h"

static tu_tmpdir dir; /* the group's temporary folder */

static void expect_err(manta_status got, manta_status want, const manta_err *e, const char *needle)
{
    if (got != want)
        fail_msg("status %s, expected %s (%s)", manta_status_str(got), manta_status_str(want),
                 e->msg);
    if (!strstr(e->msg, needle))
        fail_msg("message '%s' lacks '%s'", e->msg, needle);
}

static void test_keys_of_smallest_cpu_subnet(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    ofa_arch_min(&s, 24, &a);
    lat_layer l[LAT_MAX_ARCH_LAYERS];
    int n;
    manta_err e;
    TU_OK_ERR(lat_arch_layers(&s, &a, l, &n, &e));
    static const char *const want[] = {
        "Conv-input:24x24x1-output:24x24x16",
        "expanded_conv-input:24x24x16-output:24x24x16-expand:16-kernel:3-stride:1-idskip:1-se:0-hs:"
        "0",
        "expanded_conv-input:24x24x16-output:12x12x16-expand:48-kernel:3-stride:2-idskip:0-se:0-hs:"
        "0",
        "expanded_conv-input:12x12x16-output:12x12x16-expand:48-kernel:3-stride:1-idskip:1-se:0-hs:"
        "0",
        "expanded_conv-input:12x12x16-output:6x6x24-expand:48-kernel:3-stride:2-idskip:0-se:1-hs:0",
        "expanded_conv-input:6x6x24-output:6x6x24-expand:72-kernel:3-stride:1-idskip:1-se:1-hs:0",
        "expanded_conv-input:6x6x24-output:3x3x40-expand:72-kernel:3-stride:2-idskip:0-se:0-hs:1",
        "expanded_conv-input:3x3x40-output:3x3x40-expand:120-kernel:3-stride:1-idskip:1-se:0-hs:1",
        "expanded_conv-input:3x3x40-output:2x2x64-expand:120-kernel:3-stride:2-idskip:0-se:1-hs:1",
        "expanded_conv-input:2x2x64-output:2x2x64-expand:192-kernel:3-stride:1-idskip:1-se:1-hs:1",
        "expanded_conv-input:2x2x64-output:1x1x96-expand:192-kernel:3-stride:2-idskip:0-se:1-hs:1",
        "expanded_conv-input:1x1x96-output:1x1x96-expand:288-kernel:3-stride:1-idskip:1-se:1-hs:1",
        "Conv_1-input:1x1x96-output:1x1x384",
        "AvgPool2D-input:1x1x384-output:1x1x384",
        "Logits-input:1x1x384-output:10",
    };
    static const char *const where[] = {"stem",  "first", "u1.b1", "u1.b2", "u2.b1",
                                        "u2.b2", "u3.b1", "u3.b2", "u4.b1", "u4.b2",
                                        "u5.b1", "u5.b2", "head",  "pool",  "classifier"};
    assert_int_equal(n, 15);
    for (int i = 0; i < n; i++) {
        assert_string_equal(l[i].key, want[i]);
        assert_string_equal(l[i].where, where[i]);
    }
    /* parameters a profiler builds the layer from */
    assert_int_equal(l[1].has_expand, 0);
    assert_int_equal(l[4].has_expand, 1);
    assert_int_equal(l[4].se, 1);
    assert_int_equal(l[4].se_mid, 16); /* make_divisible(48 / 4, 8) */
    assert_int_equal(l[4].act, NN_ACT_RELU);
    assert_int_equal(l[0].kernel, 3);
    assert_int_equal(l[0].stride, 1);
    assert_int_equal(l[14].type, LAT_LOGITS);
}

static void test_keys_of_mixed_cpu_subnet(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    ofa_arch_min(&s, 28, &a);
    a.d[1] = 3;  /* unit 2 runs three blocks */
    a.ks[4] = 5; /* u2.b1 */
    a.e[4] = 4;
    a.ks[6] = 7; /* u2.b3 */
    a.e[6] = 6;
    a.ks[7] = 7; /* u2.b4: skipped, no key */
    lat_layer l[LAT_MAX_ARCH_LAYERS];
    int n;
    manta_err e;
    TU_OK_ERR(lat_arch_layers(&s, &a, l, &n, &e));
    assert_int_equal(n, 16);
    assert_string_equal(l[4].where, "u2.b1");
    assert_string_equal(l[4].key, "expanded_conv-input:14x14x16-output:7x7x24-expand:64-kernel:5-"
                                  "stride:2-idskip:0-se:1-hs:0");
    assert_string_equal(l[6].where, "u2.b3");
    assert_string_equal(
        l[6].key,
        "expanded_conv-input:7x7x24-output:7x7x24-expand:144-kernel:7-stride:1-idskip:1-se:1-hs:0");
    assert_string_equal(l[7].where, "u3.b1");
    assert_string_equal(l[7].key, "expanded_conv-input:7x7x24-output:4x4x40-expand:72-kernel:3-"
                                  "stride:2-idskip:0-se:0-hs:1");
}

static void test_keys_of_largest_mbv3_subnet(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_mbv3_w10(&s);
    ofa_arch a;
    ofa_arch_max(&s, 224, &a);
    lat_layer l[LAT_MAX_ARCH_LAYERS];
    int n;
    manta_err e;
    TU_OK_ERR(lat_arch_layers(&s, &a, l, &n, &e));
    assert_int_equal(n, 2 + 20 + 4);
    assert_string_equal(l[0].key, "Conv-input:224x224x3-output:112x112x16");
    assert_string_equal(l[1].key, "expanded_conv-input:112x112x16-output:112x112x16-expand:16-"
                                  "kernel:3-stride:1-idskip:1-se:0-hs:0");
    assert_string_equal(l[2].key, "expanded_conv-input:112x112x16-output:56x56x24-expand:96-"
                                  "kernel:7-stride:2-idskip:0-se:0-hs:0");
    /* unit 4 keeps the resolution (stride 1) but changes the width: no skip */
    assert_string_equal(l[14].key, "expanded_conv-input:14x14x80-output:14x14x112-expand:480-"
                                   "kernel:7-stride:1-idskip:0-se:1-hs:1");
    assert_string_equal(l[21].key, "expanded_conv-input:7x7x160-output:7x7x160-expand:960-"
                                   "kernel:7-stride:1-idskip:1-se:1-hs:1");
    assert_string_equal(l[22].key, "Conv_1-input:7x7x160-output:7x7x960");
    assert_string_equal(l[23].key, "AvgPool2D-input:7x7x960-output:1x1x960");
    assert_string_equal(l[24].key, "Conv_2-input:1x1x960-output:1x1x1280");
    assert_string_equal(l[25].key, "Logits-input:1x1x1280-output:1000");
    assert_int_equal(l[24].type, LAT_MIX);
    assert_int_equal(l[21].se_mid, 240);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void assert_distinct(const lat_layer *l, size_t n)
{
    /* sort pointers to the keys and compare neighbours */
    const char **k = malloc(n * sizeof *k);
    assert_non_null(k);
    for (size_t i = 0; i < n; i++)
        k[i] = l[i].key;
    qsort(k, n, sizeof *k, cmp_str);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(k[i - 1], k[i]))
            fail_msg("key listed twice: %s", k[i]);
    free((void *)k);
}

static bool listed(const lat_layer *l, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(l[i].key, key))
            return true;
    return false;
}

static void test_enumeration_of_cpu_default(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_layer *all;
    size_t n;
    manta_err e;
    TU_OK_ERR(lat_enumerate(&s, &all, &n, &e));
    /* By hand, at 24/28/32 px: stem 3 + first block 3; a unit's first block has 9 (k, e)
     * keys per distinct input size, its other blocks 9 per distinct output size:
     * unit 1: in 24/28/32, out 12/14/16; unit 2: in 12/14/16, out 6/7/8; unit 3: in 6/7/8,
     * out 3/4/4; unit 4: in 3/4/4, out 2/2/2; unit 5: in 2/2/2, out 1/1/1; then the head
     * conv, pool and classifier, on 1x1 at every resolution: 1 + 1 + 1. */
    assert_int_equal(n, 3 + 3 + 9 * (3 + 3 + 3 + 3 + 3 + 2 + 2 + 1 + 1 + 1) + 3);
    assert_distinct(all, n);
    assert_int_equal(all[0].r, 24);
    assert_string_equal(all[0].key, "Conv-input:24x24x1-output:24x24x16");
    /* every sampled sub-network's keys are listed */
    manta_rng rng;
    manta_rng_seed(&rng, 7, 1);
    for (int t = 0; t < 300; t++) {
        ofa_arch a;
        ofa_arch_sample(&s, &rng, &a);
        lat_layer l[LAT_MAX_ARCH_LAYERS];
        int m;
        TU_OK_ERR(lat_arch_layers(&s, &a, l, &m, &e));
        for (int i = 0; i < m; i++)
            if (!listed(all, n, l[i].key))
                fail_msg("sampled key missing from the enumeration: %s", l[i].key);
    }
    free(all);
}

static void test_enumeration_of_mbv3(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_mbv3_w10(&s);
    lat_layer *all;
    size_t n;
    manta_err e;
    TU_OK_ERR(lat_enumerate(&s, &all, &n, &e));
    assert_distinct(all, n);
    /* one classifier and one feature mix for all 25 resolutions, 18 keys per unit and input size */
    size_t logits = 0, mix = 0, blocks = 0;
    for (size_t i = 0; i < n; i++) {
        logits += all[i].type == LAT_LOGITS;
        mix += all[i].type == LAT_MIX;
        blocks += all[i].type == LAT_MBCONV && all[i].has_expand;
    }
    assert_int_equal(logits, 1);
    assert_int_equal(mix, 1);
    assert_int_equal(blocks % 9, 0);
    assert_true(n < 25 * (2 + 90 + 4));
    manta_rng rng;
    manta_rng_seed(&rng, 8, 1);
    for (int t = 0; t < 100; t++) {
        ofa_arch a;
        ofa_arch_sample(&s, &rng, &a);
        lat_layer l[LAT_MAX_ARCH_LAYERS];
        int m;
        TU_OK_ERR(lat_arch_layers(&s, &a, l, &m, &e));
        for (int i = 0; i < m; i++)
            if (!listed(all, n, l[i].key))
                fail_msg("sampled key missing from the enumeration: %s", l[i].key);
    }
    free(all);
}

static void test_stats_from_samples(void **state)
{
    (void)state;
    double odd[] = {3, 1, 2}, even[] = {4, 1, 3, 2};
    lat_stats st;
    manta_err e;
    TU_OK_ERR(lat_stats_from_samples(odd, 3, &st, &e));
    assert_true(st.median_ms == 2 && st.mean_ms == 2 && st.count == 3);
    assert_true(fabs(st.p10_ms - 1.2) < 1e-12); /* rank 0.1 * 2 between 1 and 2 */
    assert_true(st.variance_ms2 > 2.0 / 3 - 1e-12 && st.variance_ms2 < 2.0 / 3 + 1e-12);
    TU_OK_ERR(lat_stats_from_samples(even, 4, &st, &e));
    assert_true(st.median_ms == 2.5 && st.mean_ms == 2.5 && st.variance_ms2 == 1.25);
    assert_true(fabs(st.p10_ms - 1.3) < 1e-12);
    double one[] = {7}, many[101];
    TU_OK_ERR(lat_stats_from_samples(one, 1, &st, &e));
    assert_true(st.p10_ms == 7 && st.median_ms == 7);
    for (int i = 0; i < 101; i++)
        many[i] = 100 - i; /* 0..100: the decile is 10, whatever the order */
    TU_OK_ERR(lat_stats_from_samples(many, 101, &st, &e));
    assert_true(st.p10_ms == 10 && st.median_ms == 50);
    double bad[] = {1, -1};
    expect_err(lat_stats_from_samples(bad, 2, &st, &e), MANTA_ERR_INVALID_ARG, &e, "sample 1");
    expect_err(lat_stats_from_samples(bad, 0, &st, &e), MANTA_ERR_INVALID_ARG, &e, "no samples");
}

/* A complete table of space s: median of a key = 0.001 * (key length) + 0.01 * kernel. */
static void fill_table(lat_table *t, const ofa_space *s)
{
    manta_err e;
    TU_OK_ERR(lat_table_init(t, s, &e));
    TU_OK_ERR(lat_table_set_meta(t, "test-board", "Cortex-A53 @ 1.2 GHz",
                                 "gcc -O3 -mcpu=cortex-a53", "2025-01-31T12:00:00Z", &e));
    t->overhead_ms = 0.25;
    lat_layer *all;
    size_t n;
    TU_OK_ERR(lat_enumerate(s, &all, &n, &e));
    for (size_t i = 0; i < n; i++) {
        const double med = 0.001 * (double)strlen(all[i].key) + 0.01 * all[i].kernel;
        lat_stats st = {med, 0.002 * (double)strlen(all[i].key), 1e-6 * (double)i, 10 + (long)i,
                        0.75 * med};
        TU_OK_ERR(lat_table_set(t, all[i].key, &st, &e));
    }
    assert_int_equal(t->n, n);
    free(all);
}

static void test_table_round_trip_and_prediction(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_table t, u;
    fill_table(&t, &s);
    manta_err e;
    TU_OK_ERR(lat_table_check_complete(&t, &e));
    char path[128];
    tu_tmpdir_path(&dir, "cpu.json", path, sizeof path);
    TU_OK_ERR(lat_table_save(&t, path, &e));
    TU_OK_ERR(lat_table_load(path, &s, &u, &e));
    assert_int_equal(u.n, t.n);
    assert_string_equal(u.device, "test-board");
    assert_string_equal(u.cpu, t.cpu);
    assert_string_equal(u.cflags, t.cflags);
    assert_string_equal(u.date, t.date);
    assert_string_equal(u.space_hash, t.space_hash);
    assert_true(u.overhead_ms == t.overhead_ms);
    for (size_t i = 0; i < t.n; i++) {
        const lat_entry *x = lat_table_find(&u, t.entry[i].key);
        assert_non_null(x);
        assert_memory_equal(&x->st, &t.entry[i].st, sizeof x->st);
    }
    /* prediction = sum of the lower deciles of the keys + overhead */
    manta_rng rng;
    manta_rng_seed(&rng, 3, 3);
    for (int k = 0; k < 20; k++) {
        ofa_arch a;
        ofa_arch_sample(&s, &rng, &a);
        lat_layer l[LAT_MAX_ARCH_LAYERS];
        int n;
        TU_OK_ERR(lat_arch_layers(&s, &a, l, &n, &e));
        double want = t.overhead_ms, got, got2;
        for (int i = 0; i < n; i++)
            want += lat_table_find(&t, l[i].key)->st.p10_ms;
        TU_OK_ERR(lat_predict(&t, &a, &got, &e));
        TU_OK_ERR(lat_predict(&u, &a, &got2, &e));
        assert_true(got == want && got2 == want);
    }
    lat_table_free(&t);
    lat_table_free(&u);
}

static void test_missing_key_is_named(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_table t, part;
    fill_table(&t, &s);
    manta_err e;
    TU_OK_ERR(lat_table_init(&part, &s, &e));
    TU_OK_ERR(lat_table_set_meta(&part, "board-x", NULL, NULL, NULL, &e));
    const char *drop = "expanded_conv-input:12x12x16-output:6x6x24-expand:48-kernel:3-stride:2-"
                       "idskip:0-se:1-hs:0";
    for (size_t i = 0; i < t.n; i++)
        if (strcmp(t.entry[i].key, drop) != 0)
            TU_OK_ERR(lat_table_set(&part, t.entry[i].key, &t.entry[i].st, &e));
    ofa_arch a;
    ofa_arch_min(&s, 24, &a);
    double ms;
    expect_err(lat_predict(&part, &a, &ms, &e), MANTA_ERR_INVALID_ARG, &e, drop);
    assert_non_null(strstr(e.msg, "u2.b1"));
    assert_non_null(strstr(e.msg, "board-x"));
    expect_err(lat_table_check_complete(&part, &e), MANTA_ERR_FORMAT, &e, "lacks 1 of 207");
    /* an architecture of another space */
    a.r = 224;
    expect_err(lat_predict(&part, &a, &ms, &e), MANTA_ERR_INVALID_ARG, &e, "resolution 224");
    lat_table_free(&t);
    lat_table_free(&part);
}

/* The saved JSON of a complete cpu-default table, with @from replaced by @to. */
static char *edited_json(const char *from, const char *to)
{
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_table t;
    fill_table(&t, &s);
    char *text;
    manta_err e;
    TU_OK_ERR(lat_table_to_json(&t, &text, &e));
    lat_table_free(&t);
    char *p = strstr(text, from);
    if (!p)
        fail_msg("'%s' not in the table JSON", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(p - text), text, to, p + strlen(from));
    free(text);
    return out;
}

static void expect_refused(const char *from, const char *to, const char *needle)
{
    ofa_space s;
    ofa_space_cpu_default(&s);
    char *json = edited_json(from, to);
    lat_table t;
    manta_err e;
    manta_err_clear(&e);
    expect_err(lat_table_parse(json, "t.json", &s, &t, &e), MANTA_ERR_FORMAT, &e, needle);
    assert_non_null(strstr(e.msg, "t.json"));
    assert_null(t.entry);
    free(json);
}

static void test_load_refuses_bad_tables(void **state)
{
    (void)state;
    expect_refused("\"device\":", "\"devise\":", "missing \"device\"");
    expect_refused("\"date\":", "\"data\":", "missing \"date\"");
    expect_refused("\"overhead_ms\":", "\"overhead\":", "\"overhead_ms\" missing");
    expect_refused("\"format\":\t\"manta-latency-table\"", "\"format\":\t\"other\"", "other");
    expect_refused("\"version\":\t2", "\"version\":\t3", "version 3");
    expect_refused("\"p10_ms\":", "\"p1_ms\":", "\"p10_ms\" missing");
    expect_refused("\"p10_ms\":\t0", "\"p10_ms\":\t-1", ">= 0");
    expect_refused("\"median_ms\":", "\"med\":", "\"median_ms\" missing");
    expect_refused("\"count\":\t10\n", "\"count\":\t0.5\n", "\"count\" must be an integer");
    expect_refused("\"variance_ms2\":\t0,", "\"variance_ms2\":\t-1,", ">= 0");
    expect_refused("\"Conv-input:24x24x1-", "\"Conv-input:25x24x1-", "not a layer of space");
    expect_refused("\"layers\":", "\"layer\":", "missing \"layers\"");
    expect_refused("\"overhead_ms\":", "]", "not valid JSON");
    expect_refused("\"overhead_ms\":", "\"overhead_ms\": 1, \"x\": {\"y\"", "not valid JSON");
    /* another spec under the same name */
    expect_refused("\"hash\":\t\"fnv1a64:", "\"hash\":\t\"fnv1a64:0", "differs");
}

/* A version 1 table (no p10_ms) still loads; its medians stand in for the deciles. */
static void test_load_version_1(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    char *json = edited_json("\"version\":\t2", "\"version\":\t1");
    /* drop every "p10_ms" line */
    char *w = json;
    for (char *r = json; *r;) {
        char *eol = strchr(r, '\n');
        size_t len = eol ? (size_t)(eol - r + 1) : strlen(r);
        if (!strstr(r, "\"p10_ms\"") || strstr(r, "\"p10_ms\"") >= r + len) {
            memmove(w, r, len);
            w += len;
        }
        r += len;
    }
    *w = 0;
    assert_null(strstr(json, "p10_ms"));
    lat_table t, ref;
    manta_err e;
    TU_OK_ERR(lat_table_parse(json, "v1.json", &s, &t, &e));
    fill_table(&ref, &s);
    assert_int_equal(t.n, ref.n);
    for (size_t i = 0; i < t.n; i++)
        assert_true(t.entry[i].st.p10_ms == t.entry[i].st.median_ms);
    ofa_arch a;
    ofa_arch_max(&s, 28, &a);
    lat_layer l[LAT_MAX_ARCH_LAYERS];
    int n;
    TU_OK_ERR(lat_arch_layers(&s, &a, l, &n, &e));
    double want = ref.overhead_ms, got;
    for (int i = 0; i < n; i++)
        want += lat_table_find(&ref, l[i].key)->st.median_ms;
    TU_OK_ERR(lat_predict(&t, &a, &got, &e));
    assert_true(fabs(got - want) < 1e-12);
    lat_table_free(&t);
    lat_table_free(&ref);
    free(json);
}

/* "dtype": float32 by default and when absent, int8 refused where float32 is wanted (and
 * the reverse), accepted when asked for, a value of neither refused. */
static void test_dtype_float_and_int8_apart(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_table t;
    manta_err e;
    char *f32 = edited_json("\"dtype\":\t\"float32\"", "\"dtype\":\t\"float32\"");
    TU_OK_ERR(lat_table_parse(f32, "f.json", &s, &t, &e));
    assert_int_equal(t.dtype, LAT_DTYPE_F32);
    lat_table_free(&t);
    expect_err(lat_table_parse_dtype(f32, "f.json", &s, LAT_DTYPE_INT8, &t, &e), MANTA_ERR_FORMAT,
               &e,
               "f.json: a float32 latency table (\"dtype\": \"float32\"), an int8 one is needed");
    free(f32);
    /* a table written before the field: float32 */
    char *old = edited_json("\"dtype\":\t\"float32\",", "");
    assert_null(strstr(old, "dtype"));
    TU_OK_ERR(lat_table_parse(old, "old.json", &s, &t, &e));
    assert_int_equal(t.dtype, LAT_DTYPE_F32);
    lat_table_free(&t);
    free(old);
    char *q8 = edited_json("\"dtype\":\t\"float32\"", "\"dtype\":\t\"int8\"");
    expect_err(lat_table_parse(q8, "q.json", &s, &t, &e), MANTA_ERR_FORMAT, &e,
               "q.json: an int8 latency table (\"dtype\": \"int8\"), a float32 one is needed");
    assert_null(t.entry);
    TU_OK_ERR(lat_table_parse_dtype(q8, "q.json", &s, LAT_DTYPE_INT8, &t, &e));
    assert_int_equal(t.dtype, LAT_DTYPE_INT8);
    /* written back as int8, loaded from a file */
    char path[128];
    tu_tmpdir_path(&dir, "q8.json", path, sizeof path);
    TU_OK_ERR(lat_table_save(&t, path, &e));
    lat_table_free(&t);
    expect_err(lat_table_load(path, &s, &t, &e), MANTA_ERR_FORMAT, &e, "an int8 latency table");
    TU_OK_ERR(lat_table_load_dtype(path, &s, LAT_DTYPE_ANY, &t, &e));
    assert_int_equal(t.dtype, LAT_DTYPE_INT8);
    lat_table_free(&t);
    TU_OK_ERR(lat_table_load_dtype(path, &s, LAT_DTYPE_INT8, &t, &e));
    lat_table_free(&t);
    free(q8);
    expect_refused("\"dtype\":\t\"float32\"", "\"dtype\":\t\"int16\"",
                   "\"dtype\" must be \"float32\" or \"int8\"");
    expect_refused("\"dtype\":\t\"float32\"", "\"dtype\":\t8", "\"dtype\" must be");
    assert_string_equal(lat_dtype_name(LAT_DTYPE_INT8), "int8");
    assert_string_equal(lat_dtype_name(LAT_DTYPE_F32), "float32");
}

/* Sub-networks that hold every key of the space at least `cover` times, reproducibly. */
static void test_cover_archs(void **state)
{
    (void)state;
    ofa_space spaces[2];
    ofa_space_cpu_default(&spaces[0]);
    ofa_space_mbv3_w10(&spaces[1]);
    manta_err e;
    for (int k = 0; k < 2; k++) {
        const ofa_space *s = &spaces[k];
        const int cover = k == 0 ? 3 : 1;
        lat_layer *keys;
        size_t nk;
        TU_OK_ERR(lat_enumerate(s, &keys, &nk, &e));
        lat_table t;
        TU_OK_ERR(lat_table_init(&t, s, &e));
        for (size_t i = 0; i < nk; i++) {
            lat_stats z = {0, 0, 0, 1, 0};
            TU_OK_ERR(lat_table_set(&t, keys[i].key, &z, &e));
        }
        ofa_arch *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        TU_OK_ERR(lat_cover_archs(s, cover, 42, &a, &na, &e));
        TU_OK_ERR(lat_cover_archs(s, cover, 42, &b, &nb, &e));
        assert_int_equal(na, nb);
        assert_memory_equal(a, b, na * sizeof *a);
        /* far fewer networks than keys x cover: each network holds many keys */
        assert_true(na >= 1 && na < nk * (size_t)cover / 2);
        for (size_t i = 0; i < na; i++) {
            TU_OK_ERR(ofa_arch_validate(s, &a[i], &e));
            lat_layer l[LAT_MAX_ARCH_LAYERS];
            int n;
            TU_OK_ERR(lat_arch_layers(s, &a[i], l, &n, &e));
            for (int j = 0; j < n; j++) {
                lat_entry *x = (lat_entry *)lat_table_find(&t, l[j].key);
                assert_non_null(x);
                x->st.count++;
            }
        }
        for (size_t i = 0; i < t.n; i++)
            if (t.entry[i].st.count < 1 + cover)
                fail_msg("%s: key '%s' in %ld networks, want >= %d", s->name, t.entry[i].key,
                         t.entry[i].st.count - 1, cover);
        free(a);
        free(b);
        free(keys);
        lat_table_free(&t);
    }
    ofa_arch *a = NULL;
    size_t na = 0;
    expect_err(lat_cover_archs(&spaces[0], 0, 1, &a, &na, &e), MANTA_ERR_INVALID_ARG, &e,
               "networks per key");
    assert_null(a);
}

static void test_load_refuses_other_space(void **state)
{
    (void)state;
    ofa_space s, m;
    ofa_space_cpu_default(&s);
    ofa_space_mbv3_w10(&m);
    lat_table t, u;
    fill_table(&t, &s);
    char path[128];
    tu_tmpdir_path(&dir, "other.json", path, sizeof path);
    manta_err e;
    TU_OK_ERR(lat_table_save(&t, path, &e));
    expect_err(lat_table_load(path, &m, &u, &e), MANTA_ERR_FORMAT, &e,
               "made for space 'cpu-default'");
    assert_non_null(strstr(e.msg, "mbv3-w1.0"));
    /* same name, one field changed: the hash tells them apart */
    ofa_space s2 = s;
    s2.head_expand = 512;
    expect_err(lat_table_load(path, &s2, &u, &e), MANTA_ERR_FORMAT, &e, "differs");
    tu_tmpdir_path(&dir, "absent.json", path, sizeof path);
    expect_err(lat_table_load(path, &s, &u, &e), MANTA_ERR_IO, &e, "absent.json");
    lat_table_free(&t);
}

static void test_set_rejects_bad_input(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_table t;
    manta_err e;
    TU_OK_ERR(lat_table_init(&t, &s, &e));
    lat_stats st = {1, 1, 0, 0, 1};
    expect_err(lat_table_set(&t, "Conv-x", &st, &e), MANTA_ERR_INVALID_ARG, &e, "count");
    st.count = 1;
    expect_err(lat_table_set(&t, "", &st, &e), MANTA_ERR_INVALID_ARG, &e, "key");
    TU_OK_ERR(lat_table_set(&t, "Conv-x", &st, &e));
    st.median_ms = 2;
    TU_OK_ERR(lat_table_set(&t, "Conv-x", &st, &e)); /* replaces */
    assert_int_equal(t.n, 1);
    assert_true(lat_table_find(&t, "Conv-x")->st.median_ms == 2);
    assert_null(lat_table_find(&t, "Conv-y"));
    char longer[LAT_META_MAX + 1];
    memset(longer, 'x', sizeof longer - 1);
    longer[LAT_META_MAX] = '\0';
    expect_err(lat_table_set_meta(&t, NULL, longer, NULL, NULL, &e), MANTA_ERR_INVALID_ARG, &e,
               "\"cpu\"");
    lat_table_free(&t);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(&dir, "lat");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_of_smallest_cpu_subnet),
        cmocka_unit_test(test_keys_of_mixed_cpu_subnet),
        cmocka_unit_test(test_keys_of_largest_mbv3_subnet),
        cmocka_unit_test(test_enumeration_of_cpu_default),
        cmocka_unit_test(test_enumeration_of_mbv3),
        cmocka_unit_test(test_stats_from_samples),
        cmocka_unit_test(test_table_round_trip_and_prediction),
        cmocka_unit_test(test_missing_key_is_named),
        cmocka_unit_test(test_load_refuses_bad_tables),
        cmocka_unit_test(test_load_refuses_other_space),
        cmocka_unit_test(test_load_version_1),
        cmocka_unit_test(test_dtype_float_and_int8_apart),
        cmocka_unit_test(test_cover_archs),
        cmocka_unit_test(test_set_rejects_bad_input),
    };
    return cmocka_run_group_tests_name("latency tables", tests, setup, teardown);
}
