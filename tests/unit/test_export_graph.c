/* Export graphs: xgraph_reference() against the independent operator
 * references (tests/ref) on single-op graphs, then written as .tflite and run
 * by the engine against xgraph_reference() on random networks that use every
 * xg_kind (SAME / VALID / explicit PAD, strides 1 and 2, odd sizes); and the
 * graph checks of xgraph_validate(). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "common/tflbuild.h"
#include "common/xgrand.h"
#include "engine/engine.h"
#include "export/tflite.h"
#include "ref/ref_engine.h"

#define RTOL 1e-5

static size_t count_of(const xg_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->shape[i];
    return n;
}

/* ---- the reference on single ops, against tests/ref ---- */

/* input -> op -> logits (as the graph's logits after a RESHAPE to (1, n)) -> softmax */
typedef struct one_op {
    xgraph g;
    float *x;
    double *xd;
    size_t nx;
} one_op;

static void one_op_start(one_op *o, manta_rng *rng, int h, int w, int c)
{
    manta_err err;
    memset(o, 0, sizeof *o);
    const int s[4] = {1, h, w, c};
    o->g.input = xgraph_add_tensor(&o->g, 4, s, "input", &err);
    assert_int_equal(o->g.input, 0);
    o->nx = (size_t)h * w * c;
    o->x = malloc(o->nx * sizeof *o->x);
    o->xd = malloc(o->nx * sizeof *o->xd);
    assert_true(o->x && o->xd);
    tb_rand(rng, o->x, o->xd, o->nx, -1, 1);
}

/* Finish a graph whose last tensor is 4-D: flatten, softmax; evaluate; compare. */
static void one_op_check(one_op *o, const double *want, const char *what)
{
    manta_err err;
    xgraph *g = &o->g;
    const int last = g->n_tensors - 1;
    const size_t n = count_of(&g->tensors[last]);
    const int s2[2] = {1, (int)n};
    g->logits = xgraph_add_tensor(g, 2, s2, "logits", &err);
    g->output = xgraph_add_tensor(g, 2, s2, "probs", &err);
    xg_op r = {.kind = XG_RESHAPE, .in0 = last, .in1 = -1, .out = g->logits};
    xg_op sm = {.kind = XG_SOFTMAX, .in0 = g->logits, .in1 = -1, .out = g->output};
    assert_true(xgraph_add_op(g, &r, &err) >= 0 && xgraph_add_op(g, &sm, &err) >= 0);
    float *got = malloc(n * sizeof *got);
    double *gd = malloc(n * sizeof *gd);
    assert_true(got && gd);
    manta_status st = xgraph_reference(g, o->x, got, &err);
    if (st != MANTA_OK)
        fail_msg("%s: %s", what, err.msg);
    for (size_t i = 0; i < n; i++)
        gd[i] = got[i];
    tu_assert_close(gd, want, n, 1e-6, what);
    free(got), free(gd), free(o->x), free(o->xd);
    xgraph_free(g);
}

static float *copy_weights(manta_rng *rng, size_t n, double **d)
{
    float *f = malloc(n * sizeof *f);
    *d = malloc(n * sizeof **d);
    assert_true(f && *d);
    tb_rand(rng, f, *d, n, -1, 1);
    return f;
}

static void conv_case(manta_rng *rng, int h, int w, int ci, int co, int k, int s, int same, int act,
                      int dw)
{
    one_op o;
    manta_err err;
    one_op_start(&o, rng, h, w, ci);
    const int pad = same ? 0 : 1;
    const int oh = re_out_size(h, k, s, pad), ow = re_out_size(w, k, s, pad);
    if (dw)
        co = ci;
    const int so[4] = {1, oh, ow, co};
    const int out = xgraph_add_tensor(&o.g, 4, so, "out", &err);
    double *wd, *bd;
    xg_op op = {.kind = dw ? XG_DWCONV : XG_CONV,
                .in0 = 0,
                .in1 = -1,
                .out = out,
                .kh = k,
                .kw = k,
                .stride = s,
                .same = same,
                .act = (xg_act)act};
    op.n_weights = (size_t)k * k * co * (dw ? 1 : ci);
    op.weights = copy_weights(rng, op.n_weights, &wd);
    op.n_bias = (size_t)co;
    op.bias = copy_weights(rng, op.n_bias, &bd);
    assert_true(xgraph_add_op(&o.g, &op, &err) >= 0);
    double *want = malloc((size_t)oh * ow * co * sizeof *want);
    assert_non_null(want);
    if (dw)
        re_depthwise(o.xd, 1, h, w, ci, wd, 1, k, k, bd, s, s, pad, act, want);
    else
        re_conv2d(o.xd, 1, h, w, ci, wd, co, k, k, bd, s, s, pad, act, want);
    one_op_check(&o, want, dw ? "reference depthwise" : "reference conv");
    free(want), free(wd), free(bd);
}

static void test_reference_conv_padding(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 101, 1);
    for (int dw = 0; dw <= 1; dw++)
        for (int same = 0; same <= 1; same++)
            for (int s = 1; s <= 2; s++)
                for (int k = 1; k <= 5; k += 2) {
                    const int h = tu_rand_int(&rng, k, 11), w = tu_rand_int(&rng, k, 11);
                    conv_case(&rng, h, w, tu_rand_int(&rng, 1, 5), tu_rand_int(&rng, 1, 6), k, s,
                              same, (int)(manta_rng_below(&rng, 2) ? XG_ACT_RELU6 : XG_ACT_NONE),
                              dw);
                }
    conv_case(&rng, 8, 8, 3, 4, 3, 2, 1, 0, 0); /* even size, SAME: the odd pixel after */
    conv_case(&rng, 7, 9, 2, 2, 7, 2, 1, 1, 1); /* kernel larger than the stride's reach */
}

static void test_reference_pad_mul_mean(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 102, 1);
    manta_err err;
    /* PAD */
    {
        one_op o;
        one_op_start(&o, &rng, 5, 4, 3);
        const int p[4] = {1, 2, 0, 3}, so[4] = {1, 8, 7, 3};
        const int out = xgraph_add_tensor(&o.g, 4, so, "pad", &err);
        xg_op op = {.kind = XG_PAD, .in0 = 0, .in1 = -1, .out = out, .pad = {1, 2, 0, 3}};
        assert_true(xgraph_add_op(&o.g, &op, &err) >= 0);
        const int dims[4] = {1, 5, 4, 3}, pads[8] = {0, 0, p[0], p[1], p[2], p[3], 0, 0};
        double want[8 * 7 * 3];
        re_pad(o.xd, 4, dims, pads, want);
        one_op_check(&o, want, "reference pad");
    }
    /* MEAN (keep dims) then MUL: x * mean(x) per channel, then HSWISH */
    {
        one_op o;
        one_op_start(&o, &rng, 3, 5, 4);
        const int sm[4] = {1, 1, 1, 4}, sx[4] = {1, 3, 5, 4};
        const int m = xgraph_add_tensor(&o.g, 4, sm, "mean", &err);
        const int y = xgraph_add_tensor(&o.g, 4, sx, "mul", &err);
        const int z = xgraph_add_tensor(&o.g, 4, sx, "hswish", &err);
        xg_op a = {.kind = XG_MEAN, .in0 = 0, .in1 = -1, .out = m};
        xg_op b = {.kind = XG_MUL, .in0 = 0, .in1 = m, .out = y};
        xg_op c = {.kind = XG_HSWISH, .in0 = y, .in1 = -1, .out = z};
        assert_true(xgraph_add_op(&o.g, &a, &err) >= 0 && xgraph_add_op(&o.g, &b, &err) >= 0 &&
                    xgraph_add_op(&o.g, &c, &err) >= 0);
        double mean[4], prod[60], want[60];
        const int ad[4] = {1, 3, 5, 4}, bd[4] = {1, 1, 1, 4};
        re_mean_hw(o.xd, 1, 3, 5, 4, mean);
        re_binary(1, o.xd, ad, mean, bd, ad, 0, prod);
        for (int i = 0; i < 60; i++)
            want[i] = re_unary(2, prod[i], 0);
        one_op_check(&o, want, "reference mean, mul, hswish");
    }
}

/* ---- engine against the reference on random networks ---- */

/* Write @p g, run it with the engine on a random input, compare the logits
 * (read by index) and the probabilities with the reference. */
static void engine_vs_reference(xgraph *g, manta_rng *rng, const char *what)
{
    manta_err err;
    uint8_t *model;
    size_t size;
    tflite_report rep;
    manta_status st = tflite_write(g, &model, &size, &rep, &err);
    if (st != MANTA_OK)
        fail_msg("%s: write: %s", what, err.msg);
    mengine_model m;
    mengine e;
    char msg[256];
    if (mengine_model_load(&m, model, size, NULL, msg, sizeof msg) != MENGINE_OK)
        fail_msg("%s: load: %s", what, msg);
    void *arena = aligned_alloc(16, (rep.arena_bytes + 15) & ~(size_t)15);
    assert_non_null(arena);
    assert_int_equal(mengine_init(&e, &m, arena, rep.arena_bytes), MENGINE_OK);
    if (mengine_prepare(&e, msg, sizeof msg) != MENGINE_OK)
        fail_msg("%s: prepare: %s", what, msg);
    const xg_tensor *ti = &g->tensors[g->input], *tl = &g->tensors[g->logits];
    const size_t nx = count_of(ti), nk = count_of(tl);
    float *x = malloc(nx * sizeof *x), *ref = malloc(nk * sizeof *ref);
    double *got = malloc(nk * sizeof *got), *want = malloc(nk * sizeof *want);
    assert_true(x && ref && got && want);
    for (size_t i = 0; i < nx; i++)
        x[i] = 2.0f * manta_rng_uniform(rng) - 1.0f;
    mengine_view vin, vl, vo;
    assert_int_equal(mengine_input(&e, 0, &vin), MENGINE_OK);
    assert_int_equal(vin.count, nx);
    memcpy(vin.data, x, nx * sizeof *x);
    assert_int_equal(mengine_invoke(&e), MENGINE_OK);
    assert_int_equal(xgraph_reference(g, x, ref, &err), MANTA_OK);
    assert_int_equal(mengine_tensor(&e, (size_t)g->logits, &vl), MENGINE_OK);
    assert_int_equal(vl.count, nk);
    for (size_t i = 0; i < nk; i++)
        got[i] = vl.cdata[i], want[i] = ref[i];
    tu_assert_close(got, want, nk, RTOL, what);
    /* probabilities: the model output, against the softmax of the reference logits */
    double mx = want[0], sum = 0;
    for (size_t i = 1; i < nk; i++)
        mx = want[i] > mx ? want[i] : mx;
    for (size_t i = 0; i < nk; i++)
        sum += (want[i] = exp(want[i] - mx));
    assert_int_equal(mengine_output(&e, 0, &vo), MENGINE_OK);
    for (size_t i = 0; i < nk; i++)
        got[i] = vo.cdata[i], want[i] /= sum;
    tu_assert_close(got, want, nk, RTOL, what);
    double dl, dp;
    assert_int_equal(tflite_check(g, model, size, 5, &dl, &dp, &err), MANTA_OK);
    assert_true(dl < 1e-4 && dp < 1e-5);
    free(x), free(ref), free(got), free(want), free(arena), free(model);
}

static void test_engine_matches_reference_random(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 103, 1);
    int kinds[XG_SOFTMAX + 1] = {0}, same = 0, valid = 0, stride1 = 0, stride2 = 0, odd = 0;
    for (int i = 0; i < 24; i++) {
        xgraph g;
        manta_err err;
        char what[64];
        if (xgr_random(&g, &rng, NULL, &err) != MANTA_OK)
            fail_msg("xgr_random: %s", err.msg);
        for (int k = 0; k < g.n_ops; k++) {
            const xg_op *op = &g.ops[k];
            kinds[op->kind]++;
            if (op->kind == XG_CONV || op->kind == XG_DWCONV) {
                same += op->same, valid += !op->same;
                stride1 += op->stride == 1, stride2 += op->stride == 2;
                odd += g.tensors[op->in0].shape[1] % 2;
            }
        }
        snprintf(what, sizeof what, "random network %d (%dx%d)", i, g.tensors[g.input].shape[1],
                 g.tensors[g.input].shape[2]);
        engine_vs_reference(&g, &rng, what);
        xgraph_free(&g);
    }
    for (int k = 0; k <= XG_SOFTMAX; k++)
        if (!kinds[k])
            fail_msg("xg_kind %d never used", k);
    assert_true(same && valid && stride1 && stride2 && odd);
}

static void test_engine_matches_reference_sizes(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 104, 1);
    const xgr_opts cases[] = {
        {5, 1, 2, 3}, {6, 3, 10, 4}, {17, 3, 7, 8}, {32, 3, 12, 16}, {9, 1, 3, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        xgraph g;
        manta_err err;
        if (xgr_random(&g, &rng, &cases[i], &err) != MANTA_OK)
            fail_msg("xgr_random: %s", err.msg);
        engine_vs_reference(&g, &rng, "sized network");
        xgraph_free(&g);
    }
}

/* ---- validation ---- */

static void expect_invalid(xgraph *g, const char *in_msg)
{
    manta_err err;
    float x[1024], y[64];
    memset(x, 0, sizeof x);
    manta_status st = xgraph_validate(g, &err);
    if (st != MANTA_ERR_INVALID_ARG)
        fail_msg("expected a rejection mentioning '%s', got %s", in_msg, manta_status_str(st));
    if (!strstr(err.msg, in_msg))
        fail_msg("message '%s' does not mention '%s'", err.msg, in_msg);
    assert_int_equal(xgraph_reference(g, x, y, &err), MANTA_ERR_INVALID_ARG);
    uint8_t *model = NULL;
    size_t size;
    assert_int_equal(tflite_write(g, &model, &size, NULL, &err), MANTA_ERR_INVALID_ARG);
    assert_null(model);
}

static void color(xgraph *g)
{
    manta_err err;
    if (xgr_color_classifier(g, 6, &err) != MANTA_OK)
        fail_msg("%s", err.msg);
}

static void test_validate_rejects(void **state)
{
    (void)state;
    xgraph g;
    color(&g);
    g.ops[0].n_weights = 8;
    expect_invalid(&g, "graph op 0 (CONV, output 'identity'): 8 weights, expected 9");
    xgraph_free(&g);
    color(&g);
    g.ops[3].n_bias = 2;
    expect_invalid(&g, "2 bias values");
    xgraph_free(&g);
    color(&g);
    g.ops[1].in0 = 2; /* the mean reads its own output */
    expect_invalid(&g, "before any op writes it");
    xgraph_free(&g);
    color(&g);
    g.ops[2].out = 2; /* reshape writes the mean's output again */
    expect_invalid(&g, "second time");
    xgraph_free(&g);
    color(&g);
    g.ops[0].stride = 2; /* output shape no longer follows */
    expect_invalid(&g, "expected (1, 3, 3, 3)");
    xgraph_free(&g);
    color(&g);
    g.ops[1].act = XG_ACT_RELU; /* MEAN cannot fuse */
    expect_invalid(&g, "cannot fuse");
    xgraph_free(&g);
    color(&g);
    g.ops[0].act = (xg_act)2; /* RELU_N1_TO_1 */
    expect_invalid(&g, "activation 2");
    xgraph_free(&g);
    color(&g);
    g.tensors[1].shape[2] = 0;
    expect_invalid(&g, "dim 2 is 0");
    xgraph_free(&g);
    color(&g);
    g.pre.n_labels = 2;
    expect_invalid(&g, "2 labels for 3 classes");
    g.pre.n_labels = 3;
    g.logits = g.output;
    expect_invalid(&g, "distinct");
    xgraph_free(&g);
    color(&g);
    g.ops[3].kind = XG_HSWISH; /* an op with weights that takes none */
    expect_invalid(&g, "weights or bias");
    xgraph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_conv_padding),
        cmocka_unit_test(test_reference_pad_mul_mean),
        cmocka_unit_test(test_engine_matches_reference_random),
        cmocka_unit_test(test_engine_matches_reference_sizes),
        cmocka_unit_test(test_validate_rejects),
    };
    return cmocka_run_group_tests_name("export graph", tests, NULL, NULL);
}
