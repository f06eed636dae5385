/* int8 export end to end: random mobile-style graphs (every operator the classification
 * export writes) calibrated on random images, written int8, verified and run in the engine:
 * the dequantized logits near the float reference, the fixed output quantization, and the
 * verifier refusing broken quantization parameters (a zero, negative, NaN or infinite scale,
 * a zero point out of range, a per-channel vector of the wrong length, a bias scale that is
 * not input_scale x weight_scale), naming the tensor and the field. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "common/xgrand.h"
#include "engine/engine.h"
#include "export/quant.h"
#include "export/tflite.h"

static size_t count_of(const xg_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->shape[i];
    return n;
}

/* A calibrated int8 model of a random graph (the graph stays in @p g). */
static uint8_t *int8_model(xgraph *g, manta_rng *rng, int res, xg_calib how, size_t *size)
{
    manta_err err;
    const xgr_opts o = {res, 0, 0, 0};
    assert_int_equal(xgr_random(g, rng, &o, &err), MANTA_OK);
    const size_t nin = count_of(&g->tensors[g->input]);
    enum { N = 16 };
    float *imgs = malloc(N * nin * sizeof *imgs);
    assert_non_null(imgs);
    for (size_t i = 0; i < N * nin; i++)
        imgs[i] = 2.0f * manta_rng_uniform(rng) - 1.0f;
    if (xgraph_calibrate(g, imgs, N, how, 99.9, &err) != MANTA_OK)
        fail_msg("calibrate: %s", err.msg);
    free(imgs);
    uint8_t *model = NULL;
    if (tflite_write(g, &model, size, NULL, &err) != MANTA_OK)
        fail_msg("write: %s", err.msg);
    return model;
}

static void test_int8_matches_reference(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 808, 1);
    for (int i = 0; i < 6; i++) {
        xgraph g;
        size_t size;
        uint8_t *model =
            int8_model(&g, &rng, 7 + i, i % 2 ? XG_CALIB_PERCENTILE : XG_CALIB_MINMAX, &size);
        double dl = 0, dp = 0;
        manta_err err;
        if (tflite_check(&g, model, size, 5, &dl, &dp, &err) != MANTA_OK)
            fail_msg("check: %s", err.msg);
        /* logits of random small networks span a few units: int8 keeps them within a
         * fraction of their range; probabilities within a few 1/256 steps */
        double span = 0;
        for (int t = 0; t < g.n_tensors; t++)
            if (t == g.logits)
                span = g.qmax[t] - g.qmin[t];
        print_message("# graph %d: logit span %.3g, max diff %.3g, prob diff %.3g\n", i, span, dl,
                      dp);
        assert_true(dl <= 0.25 * span + 0.05);
        assert_true(dp >= 0 && dp <= 0.15);
        /* the file: int8 input and output, SOFTMAX at 1/256 and -128 */
        mengine_model m;
        char msg[256];
        assert_int_equal(mengine_model_load(&m, model, size, NULL, msg, sizeof msg), MENGINE_OK);
        /* every PAD before a (non-1x1) convolution folds into it, as in float32 files (the
         * outputs above come from the folded run: tflite_check() runs the engine) */
        int pads = 0;
        for (int k = 0; k + 1 < g.n_ops; k++)
            pads += g.ops[k].kind == XG_PAD && g.ops[k + 1].in0 == g.ops[k].out &&
                    (g.ops[k + 1].kind == XG_DWCONV ||
                     (g.ops[k + 1].kind == XG_CONV && g.ops[k + 1].kh * g.ops[k + 1].kw > 1));
        static _Alignas(16) uint8_t arena[1 << 21];
        mengine e;
        mengine_stats st;
        assert_int_equal(mengine_init(&e, &m, arena, sizeof arena), MENGINE_OK);
        assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_OK);
        assert_int_equal(mengine_get_stats(&e, &st), MENGINE_OK);
        assert_int_equal((int)st.folded_pads, pads);
        print_message("# graph %d: %d PADs folded\n", i, pads);
        free(model);
        xgraph_free(&g);
    }
}

/* Position of the 4 bytes of float @p f in the file (the first), or -1. */
static long find_float(const uint8_t *p, size_t n, float f)
{
    for (size_t i = 0; i + 4 <= n; i += 4)
        if (!memcmp(p + i, &f, 4))
            return (long)i;
    return -1;
}

static void expect_refused(const uint8_t *model, size_t size, const char *what, const char *word)
{
    mengine_model m;
    char msg[256];
    const mengine_status st = mengine_model_load(&m, model, size, NULL, msg, sizeof msg);
    if (st == MENGINE_OK)
        fail_msg("%s: accepted", what);
    if (!strstr(msg, word))
        fail_msg("%s: message \"%s\" does not name %s", what, msg, word);
    print_message("# %s: %s\n", what, msg);
}

static void test_verifier_refuses_bad_quantization(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 909, 1);
    xgraph g;
    size_t size;
    uint8_t *model = int8_model(&g, &rng, 9, XG_CALIB_MINMAX, &size);
    uint8_t *bad = aligned_alloc(16, (size + 15) & ~(size_t)15);
    assert_non_null(bad);
    mengine_model m;
    mengine e;
    mengine_view in;
    char msg[256];
    static _Alignas(16) uint8_t work[1 << 16], arena[1 << 20];
    size_t need;
    assert_int_equal(mengine_model_load(&m, model, size, NULL, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(mengine_arena_size(&m, work, sizeof work, &need, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(mengine_init(&e, &m, arena, need), MENGINE_OK);
    assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(mengine_input(&e, 0, &in), MENGINE_OK);
    assert_int_equal(in.type, MENGINE_INT8);
    const long ps = find_float(model, size, in.scale); /* the input's scale vector */
    assert_true(ps > 12);
    static const float bad_scales[4] = {0.0f, -1.0f, NAN, INFINITY};
    for (int k = 0; k < 4; k++) {
        memcpy(bad, model, size);
        memcpy(bad + ps, &bad_scales[k], 4);
        expect_refused(bad, size, "bad scale", "scale[0]");
    }
    /* its zero point: the int64 vector written just before the scale vector */
    long pz = -1;
    for (long i = ps - 8; i >= ps - 40 && i >= 0; i -= 4) {
        int64_t z;
        memcpy(&z, model + i, 8);
        uint32_t n1;
        memcpy(&n1, model + i - 4, 4);
        if (z == in.zero_point && n1 == 1) {
            pz = i;
            break;
        }
    }
    assert_true(pz > 0);
    memcpy(bad, model, size);
    const int64_t z = 200;
    memcpy(bad + pz, &z, 8);
    expect_refused(bad, size, "zero point", "zero_point[0]");
    /* a per-channel weight scale vector one short: the first CONV's */
    const xg_op *conv = NULL;
    for (int i = 0; i < g.n_ops && !conv; i++)
        conv = g.ops[i].kind == XG_CONV && g.tensors[g.ops[i].out].shape[3] > 1 ? &g.ops[i] : NULL;
    assert_non_null(conv);
    float wmax = 0; /* channel 0's scale: max |w| / 127 over its weights */
    const size_t per = conv->n_weights / (size_t)g.tensors[conv->out].shape[3];
    for (size_t i = 0; i < per; i++)
        wmax = fmaxf(wmax, fabsf(conv->weights[i]));
    const long pw = find_float(model, size, wmax / 127.0f);
    assert_true(pw > 4);
    memcpy(bad, model, size);
    uint32_t cnt;
    memcpy(&cnt, bad + pw - 4, 4);
    cnt--;
    memcpy(bad + pw - 4, &cnt, 4);
    expect_refused(bad, size, "per-channel length", "scales");
    /* the bias scale: channel 0's, input_scale x weight_scale, doubled */
    float in_scale = 0;
    for (int t = 0; t < g.n_tensors; t++) /* the conv's input scale as the writer set it */
        if (t == conv->in0) {
            mengine_view v;
            assert_int_equal(mengine_tensor(&e, (size_t)t, &v), MENGINE_OK);
            in_scale = v.scale;
        }
    const float bs = in_scale * (wmax / 127.0f);
    long pb = -1;
    for (size_t i = (size_t)pw + 4; i + 4 <= size; i += 4) /* after the weights' (a later vector) */
        if (!memcmp(model + i, &bs, 4) && (pb = (long)i) >= 0)
            break;
    if (pb < 0)
        pb = find_float(model, size, bs);
    assert_true(pb > 0);
    memcpy(bad, model, size);
    const float bs2 = 2 * bs;
    memcpy(bad + pb, &bs2, 4);
    expect_refused(bad, size, "bias scale", "bias");
    free(bad);
    free(model);
    xgraph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int8_matches_reference),
        cmocka_unit_test(test_verifier_refuses_bad_quantization),
    };
    return cmocka_run_group_tests_name("int8 export", tests, NULL, NULL);
}
