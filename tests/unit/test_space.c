/* The OFA search space: shipped specs equal the built-ins, the architecture
 * encoding round-trips, bad specs and architectures are refused with the
 * field named, and per-layer shapes, MACs and parameters are right. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "space/ofa_space.h"

static void test_make_divisible_matches_ofa(void **state)
{
    (void)state;
    assert_int_equal(ofa_make_divisible(16 * 6, 8), 96);
    assert_int_equal(ofa_make_divisible(24 * 3, 8), 72);
    assert_int_equal(ofa_make_divisible(40 * 4 / 4.0, 8), 40);
    assert_int_equal(ofa_make_divisible(3, 8), 8);         /* never below the divisor */
    assert_int_equal(ofa_make_divisible(72 / 4.0, 8), 24); /* 18 -> 16 < 0.9*18, so +8 */
    assert_int_equal(ofa_make_divisible(100, 8), 104);
}

static void test_shipped_specs_equal_builtins(void **state)
{
    (void)state;
    const char *files[] = {"models/ofa_cpu_default.json", "models/ofa_mbv3_w10.json"};
    void (*builtin[])(ofa_space *) = {ofa_space_cpu_default, ofa_space_mbv3_w10};
    for (int i = 0; i < 2; i++) {
        ofa_space a, b;
        manta_err e;
        if (ofa_space_load(files[i], &a, &e) != MANTA_OK)
            fail_msg("%s", e.msg);
        builtin[i](&b);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

static void test_space_json_round_trip(void **state)
{
    (void)state;
    void (*builtin[])(ofa_space *) = {ofa_space_cpu_default, ofa_space_mbv3_w10};
    for (int i = 0; i < 2; i++) {
        ofa_space a, b;
        builtin[i](&a);
        char *text = NULL;
        manta_err e;
        assert_int_equal(ofa_space_to_json(&a, &text, &e), MANTA_OK);
        if (ofa_space_parse(text, &b, &e) != MANTA_OK)
            fail_msg("%s", e.msg);
        free(text);
        assert_memory_equal(&a, &b, sizeof a);
    }
}

static void expect_bad_spec(const char *from, const char *to, const char *needle)
{
    ofa_space s;
    manta_err e;
    FILE *f = fopen("models/ofa_cpu_default.json", "rb");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strstr(buf, from);
    assert_non_null(p);
    char out[4200];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(p - buf), buf, to, p + strlen(from));
    manta_err_clear(&e);
    assert_int_equal(ofa_space_parse(out, &s, &e), MANTA_ERR_FORMAT);
    if (!strstr(e.msg, needle))
        fail_msg("message '%s' lacks '%s'", e.msg, needle);
}

static void test_bad_specs_name_the_field(void **state)
{
    (void)state;
    expect_bad_spec("\"kernel_sizes\": [3, 5, 7]", "\"kernel_sizes\": [3, 4, 7]", "not odd");
    expect_bad_spec("\"depths\": [2, 3, 4]", "\"depths\": [4, 3]", "depths");
    expect_bad_spec("\"input_channels\": 1", "\"input_channels\": 2", "input_channels");
    expect_bad_spec("\"stride\": 2, \"act\": \"relu\", \"se\": true",
                    "\"stride\": 3, \"act\": \"relu\", \"se\": true", "units[1]");
    expect_bad_spec("\"act\": \"h-swish\", \"se\": false", "\"act\": \"gelu\", \"se\": false",
                    "units[2]");
    expect_bad_spec("\"version\": 1", "\"version\": 2", "version");
    expect_bad_spec("\"expand\": 384", "\"expand\": -1", "space.head");
    expect_bad_spec("\"manta-ofa-space\"", "\"other\"", "format");
    ofa_space s;
    manta_err e;
    assert_int_equal(ofa_space_parse("{\"format\":", &s, &e), MANTA_ERR_FORMAT);
    assert_int_equal(ofa_space_load("/nonexistent.json", &s, &e), MANTA_ERR_IO);
    assert_non_null(strstr(e.msg, "/nonexistent.json"));
}

static void test_arch_json_round_trip(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    manta_rng r;
    manta_rng_seed(&r, 99, 0);
    for (int i = 0; i < 50; i++) {
        ofa_arch a, b;
        ofa_arch_sample(&s, &r, &a);
        assert_int_equal(ofa_arch_validate(&s, &a, NULL), MANTA_OK);
        char buf[1024];
        manta_err e;
        assert_int_equal(ofa_arch_to_json(&s, &a, buf, sizeof buf, &e), MANTA_OK);
        if (ofa_arch_parse(&s, buf, &b, &e) != MANTA_OK)
            fail_msg("%s: %s", buf, e.msg);
        assert_memory_equal(&a, &b, sizeof a);
    }
    char small[16];
    ofa_arch a;
    ofa_arch_max(&s, 0, &a);
    assert_int_equal(ofa_arch_to_json(&s, &a, small, sizeof small, NULL), MANTA_ERR_INVALID_ARG);
}

static void test_same_blocks_ignores_skipped_slots_and_resolution(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a, b;
    ofa_arch_uniform(&s, 5, 4, 2, 28, &a);
    b = a;
    assert_true(ofa_arch_same_blocks(&s, &a, &b));
    b.r = 32; /* another input size of the same network */
    assert_true(ofa_arch_same_blocks(&s, &a, &b));
    b.ks[2] = 7; /* slot 2: unit 0's third block, skipped at depth 2 */
    b.e[3] = 6;
    assert_true(ofa_arch_same_blocks(&s, &a, &b));
    b.ks[1] = 3; /* unit 0's second block, used */
    assert_false(ofa_arch_same_blocks(&s, &a, &b));
    b = a;
    b.e[s.max_depth] = 6; /* unit 1's first block */
    assert_false(ofa_arch_same_blocks(&s, &a, &b));
    b = a;
    b.d[4] = 3; /* a deeper last unit: its third block is used now */
    assert_false(ofa_arch_same_blocks(&s, &a, &b));
    assert_false(ofa_arch_same_blocks(&s, &b, &a));
    /* random pairs: same blocks exactly when every used gene agrees */
    manta_rng r;
    manta_rng_seed(&r, 7, 0);
    int same = 0;
    for (int n = 0; n < 2000; n++) {
        ofa_arch_sample(&s, &r, &a);
        b = a;
        int i = (int)manta_rng_below(&r, (uint32_t)ofa_slots(&s)), u = i / s.max_depth;
        b.ks[i] = s.ks[manta_rng_below(&r, (uint32_t)s.n_ks)];
        bool used = i % s.max_depth < a.d[u];
        assert_int_equal(ofa_arch_same_blocks(&s, &a, &b), !used || b.ks[i] == a.ks[i]);
        same += ofa_arch_same_blocks(&s, &a, &b);
    }
    assert_true(same > 0 && same < 2000);
}

/* Share of slots of @p a whose kernel is the smallest of the space. */
static double small_kernel_share(const ofa_space *s, const ofa_arch *a)
{
    int n = 0;
    for (int i = 0; i < ofa_slots(s); i++)
        n += a->ks[i] == s->ks[0];
    return (double)n / ofa_slots(s);
}

static void test_mixed_sampling_spans_the_corners(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    manta_rng r;
    enum { N = 3000 };
    long kcount[OFA_MAX_CHOICES] = {0}, dcount[OFA_MAX_CHOICES] = {0};
    int corner_mixed = 0, corner_uniform = 0;
    manta_rng_seed(&r, 5, 1);
    for (int n = 0; n < N; n++) {
        ofa_arch a;
        ofa_arch_sample_mixed(&s, &r, &a);
        assert_int_equal(ofa_arch_validate(&s, &a, NULL), MANTA_OK);
        for (int i = 0; i < ofa_slots(&s); i++)
            for (int c = 0; c < s.n_ks; c++)
                kcount[c] += a.ks[i] == s.ks[c];
        for (int u = 0; u < s.n_units; u++)
            for (int c = 0; c < s.n_d; c++)
                dcount[c] += a.d[u] == s.d[c];
        corner_mixed += small_kernel_share(&s, &a) >= 0.8;
    }
    /* every choice as likely as under uniform sampling, over many draws */
    for (int c = 0; c < s.n_ks; c++) {
        double share = (double)kcount[c] / ((double)N * ofa_slots(&s));
        if (fabs(share - 1.0 / s.n_ks) > 0.03)
            fail_msg("kernel %d: share %.3f, expected %.3f", s.ks[c], share, 1.0 / s.n_ks);
    }
    for (int c = 0; c < s.n_d; c++) {
        double share = (double)dcount[c] / ((double)N * s.n_units);
        if (fabs(share - 1.0 / s.n_d) > 0.03)
            fail_msg("depth %d: share %.3f, expected %.3f", s.d[c], share, 1.0 / s.n_d);
    }
    /* single sub-networks reach the corners: >= 80% of slots at 3x3 comes in
     * about 6% of mixed draws (w ~ Beta(1, 2), then binomial), 2.5e-5 of uniform ones */
    manta_rng_seed(&r, 5, 2);
    for (int n = 0; n < N; n++) {
        ofa_arch a;
        ofa_arch_sample(&s, &r, &a);
        corner_uniform += small_kernel_share(&s, &a) >= 0.8;
    }
    if (corner_mixed < N / 50 || corner_uniform > 2)
        fail_msg("sub-networks with >= 80%% 3x3 kernels: %d mixed, %d uniform of %d", corner_mixed,
                 corner_uniform, N);
    /* seeded: the same sequence again */
    ofa_arch a, b;
    manta_rng r2;
    manta_rng_seed(&r, 8, 0);
    manta_rng_seed(&r2, 8, 0);
    ofa_arch_sample_mixed(&s, &r, &a);
    ofa_arch_sample_mixed(&s, &r2, &b);
    assert_memory_equal(&a, &b, sizeof a);
}

static void test_arch_outside_space_is_refused(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    manta_err e;
    const char *ok_r =
        "{\"ks\":[7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7],"
        "\"e\":[6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6],\"d\":[4,4,4,4,4],\"r\":32}";
    assert_int_equal(ofa_arch_parse(&s, ok_r, &a, &e), MANTA_OK);
    assert_int_equal(a.r, 32);
    const char *bad_k =
        "{\"ks\":[7,7,7,7,7,7,7,7,7,9,7,7,7,7,7,7,7,7,7,7],"
        "\"e\":[6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6],\"d\":[4,4,4,4,4],\"r\":[32]}";
    assert_int_equal(ofa_arch_parse(&s, bad_k, &a, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "ks[9] = 9"));
    const char *bad_r =
        "{\"ks\":[7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7],"
        "\"e\":[6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6],\"d\":[4,4,4,4,4],\"r\":[224]}";
    assert_int_equal(ofa_arch_parse(&s, bad_r, &a, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "resolution 224"));
    const char *short_d =
        "{\"ks\":[7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7,7],"
        "\"e\":[6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6,6],\"d\":[4,4,4,4],\"r\":32}";
    assert_int_equal(ofa_arch_parse(&s, short_d, &a, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "\"d\""));
    assert_int_equal(ofa_arch_parse(&s, "[1,2]", &a, &e), MANTA_ERR_INVALID_ARG);
}

/* Hand-computed figures for the smallest CPU-default sub-network at 24x24. */
static void test_describe_smallest_cpu_subnet(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    ofa_arch_min(&s, 0, &a);
    ofa_desc d;
    manta_err e;
    assert_int_equal(ofa_describe(&s, &a, &d, &e), MANTA_OK);
    /* stem, first dw + project, 5 units x 2 blocks x (expand, dw, [se], project), head 3 */
    int se_blocks = 2 * 3; /* units 2, 4, 5 have SE */
    assert_int_equal(d.n, 3 + 5 * 2 * 3 + se_blocks + 3);
    const ofa_layer *stem = &d.layer[0];
    assert_int_equal(stem->stride, 1); /* 24 <= 64 */
    assert_int_equal(stem->out_h, 24);
    assert_true(stem->macs == 24.0 * 24 * 16 * 9);
    assert_int_equal(stem->params, 16 * 9 + 32);
    /* u1.b1: 16 -> mid 48 (e3) -> 16, stride 2: 24 -> 12, no residual */
    const ofa_layer *ex = &d.layer[3], *dw = &d.layer[4], *pj = &d.layer[5];
    assert_string_equal(ex->name, "u1.b1.expand");
    assert_int_equal(ex->out_c, 48);
    assert_int_equal(dw->out_h, 12);
    assert_int_equal(dw->kernel, 3);
    assert_true(dw->macs == 12.0 * 12 * 48 * 9);
    assert_false(pj->residual);
    assert_true(d.layer[8].residual); /* u1.b2.project: stride 1, 16 -> 16 */
    /* final spatial size 1x1 after five stride-2 units: 24,12,6,3,2,1 */
    const ofa_layer *cls = &d.layer[d.n - 1];
    assert_string_equal(cls->name, "classifier");
    assert_int_equal(cls->in_c, 384);
    assert_int_equal(d.layer[d.n - 3].in_h, 1);
    assert_true(cls->params == 384 * 10 + 10);
    double sum = 0;
    for (int i = 0; i < d.n; i++)
        sum += d.layer[i].macs;
    assert_true(sum == d.macs);
}

static void test_describe_orders_max_above_min(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_mbv3_w10(&s);
    ofa_arch mx, mn;
    ofa_arch_max(&s, 224, &mx);
    ofa_arch_min(&s, 224, &mn);
    ofa_desc a, b;
    assert_int_equal(ofa_describe(&s, &mx, &a, NULL), MANTA_OK);
    assert_int_equal(ofa_describe(&s, &mn, &b, NULL), MANTA_OK);
    assert_true(a.macs > 3 * b.macs);
    assert_true(a.params > b.params);
    assert_int_equal(a.layer[a.n - 2].in_c, 960); /* head: 960 -> mix 1280 -> classes */
    assert_int_equal(a.layer[a.n - 1].in_c, 1280);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_make_divisible_matches_ofa),
        cmocka_unit_test(test_mixed_sampling_spans_the_corners),
        cmocka_unit_test(test_shipped_specs_equal_builtins),
        cmocka_unit_test(test_space_json_round_trip),
        cmocka_unit_test(test_bad_specs_name_the_field),
        cmocka_unit_test(test_arch_json_round_trip),
        cmocka_unit_test(test_same_blocks_ignores_skipped_slots_and_resolution),
        cmocka_unit_test(test_arch_outside_space_is_refused),
        cmocka_unit_test(test_describe_smallest_cpu_subnet),
        cmocka_unit_test(test_describe_orders_max_above_min),
    };
    return cmocka_run_group_tests_name("ofa search space", tests, NULL, NULL);
}
