/* The int8 kernels (runtime/engine/kernels_q8.c) one at a time against plain-C references
 * written from their definitions in real numbers (double precision): each output within
 * 1 LSB of round(real result / output scale) + zero point, and the fixed-point helpers
 * exactly on values whose answers are known. Bit-exactness with TFLite itself is checked
 * against LiteRT (tools/bench/litert_int8_compare.py, tests/integration/int8_litert.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "engine/kernels_q8_impl.h"

static uint32_t rs = 12345;
static int32_t rnd(int32_t lo, int32_t hi)
{
    rs = rs * 1664525u + 1013904223u;
    return lo + (int32_t)((rs >> 8) % (uint32_t)(hi - lo + 1));
}

static int32_t qround(double v, int32_t zp)
{
    const double r = v >= 0 ? floor(v + 0.5) : -floor(-v + 0.5);
    const double q = r + zp;
    return (int32_t)(q < -128 ? -128 : q > 127 ? 127 : q);
}

static void near(int32_t got, int32_t want, const char *what, size_t i)
{
    if (abs(got - want) > 1)
        fail_msg("%s[%zu]: %d, reference %d", what, i, got, want);
}

/* 1 where this build's vector path has the element-wise kernels (ADD, MUL, HARD_SWISH) and the
 * per-channel multipliers: every path but the DSP one (kernels_q8_dsp.c: the convolutions and
 * MEAN only, the others refused) */
static int simd_elementwise(void) { return mengine_kq_has_simd() && MK_Q8_PATH != MK_Q8_PATH_DSP; }

static void test_quantize_multiplier(void **state)
{
    (void)state;
    int32_t q, s;
    mengine_kq_quantize_multiplier(0.5, &q, &s);
    assert_int_equal(q, 1 << 30), assert_int_equal(s, 0);
    mengine_kq_quantize_multiplier(1.0, &q, &s);
    assert_int_equal(q, 1 << 30), assert_int_equal(s, 1);
    mengine_kq_quantize_multiplier(0.25, &q, &s);
    assert_int_equal(q, 1 << 30), assert_int_equal(s, -1);
    mengine_kq_quantize_multiplier(0.75, &q, &s);
    assert_int_equal(q, 3 << 29), assert_int_equal(s, 0);
    mengine_kq_quantize_multiplier(0.0, &q, &s);
    assert_int_equal(q, 0), assert_int_equal(s, 0);
    mengine_kq_quantize_multiplier(1e-20, &q, &s); /* below 2^-31: zero */
    assert_int_equal(q, 0), assert_int_equal(s, 0);
    /* gemmlowp's rounding of x * 0.5: 1.5 -> 2 but -1.5 -> -1 (its negative nudge is
     * 1 - 2^30, so a negative tie goes toward zero); x * 0.75 */
    assert_int_equal(mengine_kq_mbqm(3, 1 << 30, 0), 2);
    assert_int_equal(mengine_kq_mbqm(-3, 1 << 30, 0), -1);
    assert_int_equal(mengine_kq_mbqm(-5, 1 << 30, 0), -2);
    assert_int_equal(mengine_kq_mbqm(100, 3 << 29, 0), 75);
    assert_int_equal(mengine_kq_mbqm(100, 1 << 30, 2), 200);
    for (int i = 0; i < 2000; i++) { /* against double within 1 */
        const double m = ldexp(0.5 + rnd(0, 1 << 20) / (double)(1 << 21), rnd(-20, 4));
        const int32_t x = rnd(-1000000, 1000000);
        mengine_kq_quantize_multiplier(m, &q, &s);
        near(mengine_kq_mbqm(x, q, s), (int32_t)lround(x * m), "mbqm", (size_t)i);
    }
}

/* XNNPACK's fp32 requantization: round half to even after the float product, clamped first */
static void test_requant_fp32(void **state)
{
    (void)state;
    assert_int_equal(mengine_kq_requant_fp32(5, 0.5f, 0, -128, 127), 2);  /* 2.5 -> 2 */
    assert_int_equal(mengine_kq_requant_fp32(7, 0.5f, 0, -128, 127), 4);  /* 3.5 -> 4 */
    assert_int_equal(mengine_kq_requant_fp32(-5, 0.5f, 3, -128, 127), 1); /* -2.5 -> -2, + 3 */
    assert_int_equal(mengine_kq_requant_fp32(4003, 0.0031222f, -10, -128, 127), 2); /* 12.498 */
    assert_int_equal(mengine_kq_requant_fp32(1000000, 0.01f, 5, -128, 127), 127);
    assert_int_equal(mengine_kq_requant_fp32(-1000000, 0.01f, 5, -20, 127), -20);
    assert_int_equal(mengine_kq_requant_fp32(0, INFINITY, 7, -128, 127), -128); /* NaN product */
}

/* ADD and MUL in XNNPACK's arithmetic (the fp32 mode) against real numbers: within 1 LSB
 * (XNNPACK's own tests allow 0.6), a per-channel b included */
static void test_add_mul_xnn(void **state)
{
    (void)state;
    for (int it = 0; it < 100; it++) {
        const int add = it % 2, C = rnd(1, 20), HW = rnd(1, 12), bc = it % 4 == 1;
        const mengine_k_dims od = {1, 1, HW, C}, bd = {1, 1, bc ? 1 : HW, C};
        int8_t a[240], b[240], y[240];
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.in_zp = rnd(-128, 127), p.in2_zp = rnd(-128, 127), p.out_zp = rnd(-128, 127);
        p.act_min = -128, p.act_max = 127;
        p.in_scale = 0.001f * (float)rnd(1, 100), p.beta = 0.001f * (float)rnd(1, 100);
        p.out_scale = add ? 0.002f * (float)rnd(1, 100) : 0.0001f * (float)rnd(1, 100);
        for (int i = 0; i < HW * C; i++)
            a[i] = (int8_t)rnd(-128, 127), b[i] = (int8_t)rnd(-128, 127);
        assert_int_equal(add ? mengine_kq_add_s8_xnn(&p, &od, a, &bd, b, &od, y)
                             : mengine_kq_mul_s8_xnn(&p, &od, a, &bd, b, &od, y),
                         MENGINE_OK);
        for (int i = 0; i < HW * C; i++) {
            const double ra = p.in_scale * (double)(a[i] - p.in_zp);
            const double rb = p.beta * (double)(b[bc ? i % C : i] - p.in2_zp);
            near(y[i], qround((add ? ra + rb : ra * rb) / p.out_scale, p.out_zp),
                 add ? "add_xnn" : "mul_xnn", (size_t)i);
        }
    }
}

/* MEAN in the fp32 mode against real numbers (within 1 LSB), and exactly on a known tie */
static void test_mean_fp32(void **state)
{
    (void)state;
    for (int it = 0; it < 50; it++) {
        const int H = rnd(1, 7), W = rnd(1, 7), C = rnd(1, 9);
        int8_t x[7 * 7 * 9], y[9];
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.in_zp = rnd(-128, 127), p.out_zp = rnd(-128, 127);
        p.in_scale = 0.001f * (float)rnd(1, 100), p.out_scale = 0.001f * (float)rnd(1, 100);
        for (int i = 0; i < H * W * C; i++)
            x[i] = (int8_t)rnd(-128, 127);
        const mengine_k_dims d = {1, H, W, C};
        assert_int_equal(mengine_kq_mean_hw_s8_fp32(&p, &d, x, y), MENGINE_OK);
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int i = 0; i < H * W; i++)
                s += x[i * C + c] - p.in_zp;
            near(y[c], qround(s / (H * W) * p.in_scale / p.out_scale, p.out_zp), "mean_fp32",
                 (size_t)c);
        }
    }
    /* sum 10 over 4 pixels at equal scales: 2.5 rounds to 2 (ties to even) */
    const int8_t x[4] = {1, 2, 3, 4};
    int8_t y[1];
    mengine_kq_params p;
    memset(&p, 0, sizeof p);
    p.in_scale = p.out_scale = 0.5f;
    const mengine_k_dims d = {1, 2, 2, 1};
    assert_int_equal(mengine_kq_mean_hw_s8_fp32(&p, &d, x, y), MENGINE_OK);
    assert_int_equal(y[0], 2);
}

static void test_act_range(void **state)
{
    (void)state;
    int32_t lo, hi;
    mengine_kq_act_range(MK_ACT_NONE, 0.1f, 5, &lo, &hi);
    assert_int_equal(lo, -128), assert_int_equal(hi, 127);
    mengine_kq_act_range(MK_ACT_RELU, 0.1f, 5, &lo, &hi);
    assert_int_equal(lo, 5), assert_int_equal(hi, 127);
    mengine_kq_act_range(MK_ACT_RELU6, 0.1f, -100, &lo, &hi);
    assert_int_equal(lo, -100), assert_int_equal(hi, -40);
}

/* CONV_2D and DEPTHWISE_CONV_2D: random small shapes, per-channel scales, SAME-like padding. */
static void conv_case(int dw)
{
    const int N = 1, H = rnd(3, 7), W = rnd(3, 7), CI = rnd(1, 5), K = rnd(1, 3) * 2 - 1;
    const int M = dw ? rnd(1, 2) : 1, CO = dw ? CI * M : rnd(1, 6), S = rnd(1, 2);
    const int OH = (H + S - 1) / S, OW = (W + S - 1) / S;
    mengine_kq_params p;
    memset(&p, 0, sizeof p);
    p.stride_h = p.stride_w = S;
    p.pad_h = ((OH - 1) * S + K - H) > 0 ? ((OH - 1) * S + K - H) / 2 : 0;
    p.pad_w = ((OW - 1) * S + K - W) > 0 ? ((OW - 1) * S + K - W) / 2 : 0;
    p.multiplier = M;
    p.in_zp = rnd(-20, 20);
    p.out_zp = rnd(-20, 20);
    p.act_min = -128, p.act_max = 127;
    const float in_s = 0.05f, out_s = 0.2f;
    const size_t nx = (size_t)N * H * W * CI,
                 nw = dw ? (size_t)K * K * CO : (size_t)CO * K * K * CI;
    int8_t *x = malloc(nx), *w = malloc(nw), *y = malloc((size_t)OH * OW * CO);
    int32_t *b = malloc((size_t)CO * 4), *mult = malloc((size_t)CO * 4),
            *sh = malloc((size_t)CO * 4);
    const mengine_k_dims fdim = {dw ? 1 : CO, K, K, dw ? CO : CI};
    int32_t *wk = malloc(mengine_kq_conv_get_buffer_size(&fdim, dw));
    float *ws = malloc((size_t)CO * 4);
    assert_true(x && w && y && b && mult && sh && ws);
    for (size_t i = 0; i < nx; i++)
        x[i] = (int8_t)rnd(-128, 127);
    for (size_t i = 0; i < nw; i++)
        w[i] = (int8_t)rnd(-127, 127);
    for (int c = 0; c < CO; c++) {
        ws[c] = 0.001f * (float)rnd(1, 20);
        b[c] = rnd(-3000, 3000);
    }
    mengine_kq_channel_multipliers(in_s, (const uint8_t *)ws, (uint32_t)CO, out_s, CO, mult, sh);
    const mengine_k_dims id = {N, H, W, CI}, fd = {dw ? 1 : CO, K, K, dw ? CO : CI},
                         od = {N, OH, OW, CO};
    assert_int_equal(
        dw ? mengine_kq_depthwise_conv_s8(&p, mult, sh, NULL, wk, &id, x, &fd, w, b, &od, y)
           : mengine_kq_conv2d_s8(&p, mult, sh, NULL, wk, &id, x, &fd, w, b, &od, y),
        MENGINE_OK);
    for (int oy = 0; oy < OH; oy++)
        for (int ox = 0; ox < OW; ox++)
            for (int oc = 0; oc < CO; oc++) {
                double acc = b[oc] * (double)in_s * ws[oc]; /* real numbers */
                for (int ky = 0; ky < K; ky++)
                    for (int kx = 0; kx < K; kx++) {
                        const int iy = oy * S - p.pad_h + ky, ix = ox * S - p.pad_w + kx;
                        if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                            continue; /* padding: real 0 */
                        for (int ic = dw ? oc / M : 0; ic < (dw ? oc / M + 1 : CI); ic++) {
                            const double xv = in_s * (x[(iy * W + ix) * CI + ic] - p.in_zp);
                            const int wv = dw ? w[(ky * K + kx) * CO + oc]
                                              : w[((oc * K + ky) * K + kx) * CI + ic];
                            acc += xv * ws[oc] * wv;
                        }
                    }
                const size_t i = ((size_t)oy * OW + ox) * CO + oc;
                near(y[i], qround(acc / out_s, p.out_zp), dw ? "depthwise" : "conv", i);
            }
    free(x), free(w), free(y), free(b), free(mult), free(sh), free(ws), free(wk);
}

static void test_conv(void **state)
{
    (void)state;
    for (int i = 0; i < 40; i++)
        conv_case(0);
}

static void test_depthwise(void **state)
{
    (void)state;
    for (int i = 0; i < 40; i++)
        conv_case(1);
}

static void test_fully_connected(void **state)
{
    (void)state;
    const int R = 2, D = 37, U = 9;
    int8_t x[R * D], w[U * D], y[R * U];
    int32_t b[U];
    const float in_s = 0.03f, w_s = 0.01f, out_s = 0.1f;
    mengine_kq_params p;
    memset(&p, 0, sizeof p);
    p.in_zp = 7, p.out_zp = -3, p.act_min = -128, p.act_max = 127;
    mengine_kq_quantize_multiplier((double)(in_s * w_s) / out_s, &p.mult, &p.shift);
    for (int i = 0; i < R * D; i++)
        x[i] = (int8_t)rnd(-128, 127);
    for (int i = 0; i < U * D; i++)
        w[i] = (int8_t)rnd(-127, 127);
    for (int u = 0; u < U; u++)
        b[u] = rnd(-2000, 2000);
    assert_int_equal(mengine_kq_fully_connected_s8(&p, 0.0f, R, D, U, x, w, b, y), MENGINE_OK);
    for (int r = 0; r < R; r++)
        for (int u = 0; u < U; u++) {
            double acc = b[u] * (double)in_s * w_s;
            for (int d = 0; d < D; d++)
                acc += in_s * (x[r * D + d] - p.in_zp) * (double)w_s * w[u * D + d];
            near(y[r * U + u], qround(acc / out_s, p.out_zp), "fc", (size_t)(r * U + u));
        }
}

static void test_add_mul_broadcast(void **state)
{
    (void)state;
    enum { H = 3, W = 4, C = 5 };
    int8_t a[H * W * C], b[C], y[H * W * C];
    const float sa = 0.05f, sb = 0.02f, so = 0.07f;
    for (int i = 0; i < H * W * C; i++)
        a[i] = (int8_t)rnd(-128, 127);
    for (int i = 0; i < C; i++)
        b[i] = (int8_t)rnd(-128, 127);
    const mengine_k_dims ad = {1, H, W, C}, bd = {1, 1, 1, C}, od = {1, H, W, C};
    for (int mul = 0; mul < 2; mul++) {
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.in_zp = 3, p.in2_zp = -9, p.out_zp = 4, p.act_min = -128, p.act_max = 127;
        const double tm = 2.0 * (sa > sb ? sa : sb);
        if (mul) {
            mengine_kq_quantize_multiplier((double)sa * sb / so, &p.mult, &p.shift);
        } else {
            mengine_kq_quantize_multiplier(sa / tm, &p.mult1, &p.shift1);
            mengine_kq_quantize_multiplier(sb / tm, &p.mult2, &p.shift2);
            mengine_kq_quantize_multiplier(tm / ((1 << 20) * (double)so), &p.mult, &p.shift);
        }
        assert_int_equal(mul ? mengine_kq_mul_s8(&p, &ad, a, &bd, b, &od, y)
                             : mengine_kq_add_s8(&p, &ad, a, &bd, b, &od, y),
                         MENGINE_OK);
        for (int i = 0; i < H * W * C; i++) {
            const double ra = sa * (a[i] - p.in_zp), rb = sb * (b[i % C] - p.in2_zp);
            near(y[i], qround((mul ? ra * rb : ra + rb) / so, p.out_zp), mul ? "mul" : "add",
                 (size_t)i);
        }
    }
}

static void test_mean_pad(void **state)
{
    (void)state;
    enum { H = 5, W = 7, C = 3 };
    int8_t x[H * W * C], y[C], z[(H + 2) * (W + 1) * C];
    for (int i = 0; i < H * W * C; i++)
        x[i] = (int8_t)rnd(-128, 127);
    mengine_kq_params p;
    memset(&p, 0, sizeof p);
    p.in_zp = -5, p.out_zp = 11;
    const float si = 0.04f, so = 0.01f;
    mengine_kq_quantize_multiplier((double)si / so, &p.mult, &p.shift);
    const mengine_k_dims id = {1, H, W, C};
    assert_int_equal(mengine_kq_mean_hw_s8(&p, &id, x, y), MENGINE_OK);
    for (int c = 0; c < C; c++) {
        double s = 0;
        for (int i = 0; i < H * W; i++)
            s += si * (x[i * C + c] - p.in_zp);
        near(y[c], qround(s / (H * W) / so, p.out_zp), "mean", (size_t)c);
    }
    const int32_t before[4] = {0, 1, 0, 0};
    const mengine_k_dims od = {1, H + 2, W + 1, C};
    assert_int_equal(mengine_kq_pad_s8(&id, x, before, &od, z, -5), MENGINE_OK);
    for (int h = 0; h < H + 2; h++)
        for (int w = 0; w < W + 1; w++)
            for (int c = 0; c < C; c++) {
                const int in = h >= 1 && h <= H && w < W;
                assert_int_equal(z[(h * (W + 1) + w) * C + c],
                                 in ? x[((h - 1) * W + w) * C + c] : -5);
            }
}

static void test_hard_swish_softmax(void **state)
{
    (void)state;
    int8_t x[256], y[256];
    for (int i = 0; i < 256; i++)
        x[i] = (int8_t)(i - 128);
    mengine_kq_params p;
    memset(&p, 0, sizeof p);
    p.in_zp = -20, p.out_zp = -90;
    const float si = 0.06f, so = 0.05f;
    assert_true(mengine_kq_hard_swish_params(si, so, &p));
    assert_int_equal(mengine_kq_hard_swish_s8(&p, x, y, 256), MENGINE_OK);
    for (int i = 0; i < 256; i++) {
        const double v = si * (x[i] - p.in_zp), r = v * fmin(fmax(v + 3, 0), 6) / 6;
        near(y[i], qround(r / so, p.out_zp), "hard_swish", (size_t)i);
    }
    assert_false(mengine_kq_hard_swish_params(1.0f, 1.0f / 1024, &p)); /* TFLite refuses it */
    memset(&p, 0, sizeof p);
    p.in_scale = 0.1f, p.beta = 1.0f;
    assert_int_equal(mengine_kq_softmax_s8(&p, 2, 10, x + 100, y), MENGINE_OK);
    for (int r = 0; r < 2; r++) {
        double s = 0;
        for (int j = 0; j < 10; j++)
            s += exp(0.1 * x[100 + r * 10 + j]);
        for (int j = 0; j < 10; j++)
            near(y[r * 10 + j], qround(exp(0.1 * x[100 + r * 10 + j]) / s * 256, -128), "softmax",
                 (size_t)j);
    }
}

/* The vector paths (kernels_q8_simd.c, kernels_q8_neon.c, kernels_q8_dsp.c) against the
 * portable kernels, byte for byte, on random shapes (channel counts around the vector widths and
 * odd ones, filter lengths that are not multiples of 4, 1x1, KxK up to 9x9 and rectangular
 * filters, strides per axis, padding, batches of 2), zero points, multipliers (shifts from -31
 * to +3), clamps and biases (large ones: the int32 sums wrap the same way); the scratch past
 * mengine_kq_conv_get_buffer_size()'s bytes left untouched. Skipped, and said so, in a build
 * without vector paths. */
static void test_simd_same_bytes(void **state)
{
    (void)state;
    const int simd = mengine_kq_has_simd();
    if (!simd)
        print_message("no int8 vector path in this build: checking that the vector entry points "
                      "refuse (tests/integration/engine_native.sh compares them where built)\n");
    int fast = 0;
    for (int it = 0; it < 300; it++) {
        const int dw = it % 2, one = it % 6 == 0, big = it % 10 == 4 || it % 10 == 7;
        const int N = it % 10 == 7 ? 2 : 1;
        /* 7x7 filters, 9x9 depthwise ones (past the DSP path's 49-tap interior loop) */
        /* and 1x1 filters with padding (which the DSP path leaves to the portable kernel) */
        const int pad1 = it % 30 == 8;
        const int K = one || pad1 ? 1 : big ? (it % 20 == 17 ? 9 : 7) : rnd(1, 3) * 2 - 1;
        const int H = rnd(1, big ? 12 : 9), W = rnd(1, big ? 12 : 9), CI = rnd(1, 40);
        /* every ninth case a rectangular filter (K x 1 .. 3) and strides of its own per axis */
        const int rect = it % 9 == 4 && !pad1;
        const int KW = rect ? rnd(1, 3) : K, SW0 = rect ? rnd(1, 3) : 0;
        const int M = dw && it % 5 == 1 ? 2 : 1, CO = dw ? CI * M : rnd(1, 40);
        const int S = one ? 1 : rnd(1, 2), SW = SW0 ? SW0 : S;
        const int OH = pad1 ? (H + 1) / S + 1 : (H + S - 1) / S;
        const int OW = pad1 ? (W + 1) / SW + 1 : (W + SW - 1) / SW;
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.stride_h = S, p.stride_w = SW;
        p.pad_h = pad1 ? 1 : ((OH - 1) * S + K - H) > 0 ? ((OH - 1) * S + K - H) / 2 : 0;
        p.pad_w = pad1 ? 1 : ((OW - 1) * SW + KW - W) > 0 ? ((OW - 1) * SW + KW - W) / 2 : 0;
        p.multiplier = M;
        p.in_zp = rnd(-128, 127);
        p.out_zp = rnd(-128, 127);
        p.act_min = rnd(-128, 0), p.act_max = rnd(0, 127);
        const size_t nx = (size_t)N * H * W * CI,
                     nw = dw ? (size_t)K * KW * CO : (size_t)CO * K * KW * CI;
        const size_t ny = (size_t)N * OH * OW * CO;
        int8_t *x = malloc(nx), *w = malloc(nw), *y0 = malloc(ny), *y1 = malloc(ny);
        int32_t *b = malloc((size_t)CO * 4), *mult = malloc((size_t)CO * 4),
                *sh = malloc((size_t)CO * 4);
        const mengine_k_dims id = {N, H, W, CI}, fd = {dw ? 1 : CO, K, KW, dw ? CO : CI},
                             od = {N, OH, OW, CO};
        const size_t wkb = mengine_kq_conv_get_buffer_size(&fd, dw), guard = 64;
        int32_t *wk = malloc(wkb + guard);
        assert_true(x && w && y0 && y1 && b && mult && sh && wk);
        memset((char *)wk + wkb, 0xa5, guard);
        for (size_t i = 0; i < nx; i++)
            x[i] = (int8_t)rnd(-128, 127);
        for (size_t i = 0; i < nw; i++)
            w[i] = (int8_t)rnd(it % 7 == 3 ? -128 : -127, 127);
        for (int c = 0; c < CO; c++) {
            b[c] = it % 11 == 4 ? (int32_t)(rs * 2654435761u) : rnd(-30000, 30000);
            mult[c] = c % 9 == 8 ? 0 : rnd(1 << 30, 0x7fffffff);
            sh[c] = it % 4 == 2 ? rnd(-31, 3) : rnd(-12, 0);
        }
        const int32_t *bias = it % 8 == 5 ? NULL : b;
        float *fsc = malloc((size_t)CO * 4); /* fp32 requantization in every third case */
        assert_true(fsc);
        for (int c = 0; c < CO; c++)
            fsc[c] = c % 13 == 12 ? 1e30f : (float)rnd(1, 1 << 20) * 1e-9f;
        const float *fs = it % 3 == 2 ? fsc : NULL;
        mengine_status s0, s1;
        memset(y0, 0x55, ny);
        memset(y1, 0x55, ny);
        if (dw) {
            s1 = mengine_kq_depthwise_conv_s8_simd(&p, mult, sh, fs, wk, &id, x, &fd, w, bias, &od,
                                                   y1);
            s0 = mengine_kq_depthwise_conv_s8_ref(&p, mult, sh, fs, wk, &id, x, &fd, w, bias, &od,
                                                  y0);
        } else {
            s1 = mengine_kq_conv2d_s8_simd(&p, mult, sh, fs, wk, &id, x, &fd, w, bias, &od, y1);
            s0 = mengine_kq_conv2d_s8_ref(&p, mult, sh, fs, wk, &id, x, &fd, w, bias, &od, y0);
        }
        assert_int_equal(s0, MENGINE_OK);
        for (size_t i = 0; i < guard; i++) /* the vector kernels stay in their scratch */
            assert_int_equal(((unsigned char *)wk)[wkb + i], 0xa5);
        if (s1 == MENGINE_OK) {
            fast++;
            for (size_t i = 0; i < ny; i++)
                if (y0[i] != y1[i])
                    fail_msg("case %d (%s %dx%dx%dx%d k%dx%d s%dx%d co%d%s): y[%zu] %d, portable "
                             "%d",
                             it, dw ? "depthwise" : "conv", N, H, W, CI, K, KW, S, SW, CO,
                             fs ? " fp32" : "", i, y1[i], y0[i]);
        } else {
            assert_int_equal(s1, MENGINE_ERR_UNSUPPORTED);
            /* the only shapes without a vector path */
            assert_true(!simd || (dw && M != 1) || (MK_Q8_PATH == MK_Q8_PATH_DSP && pad1));
            for (size_t i = 0; i < ny; i++) /* nothing written */
                assert_int_equal(y1[i], 0x55);
        }
        free(x), free(w), free(y0), free(y1), free(b), free(mult), free(sh), free(wk), free(fsc);
    }
    assert_true(simd ? fast > 200 : fast == 0);
}

/* The vector ADD and MUL against the portable ones, byte for byte: same shapes and a
 * per-channel b, random zero points, multipliers and clamps. */
static void test_simd_binary_same_bytes(void **state)
{
    (void)state;
    const int simd = simd_elementwise();
    for (int it = 0; it < 200; it++) {
        const int add = it % 2, bcast = it % 3 == 1;
        const int H = rnd(1, 6), W = rnd(1, 6), C = rnd(1, 37);
        const mengine_k_dims od = {1, H, W, C}, bd = {1, bcast ? 1 : H, bcast ? 1 : W, C};
        const size_t n = (size_t)H * W * C, nb = bcast ? (size_t)C : n;
        int8_t *a = malloc(n), *b = malloc(nb), *y0 = malloc(n), *y1 = malloc(n);
        assert_true(a && b && y0 && y1);
        for (size_t i = 0; i < n; i++)
            a[i] = (int8_t)rnd(-128, 127);
        for (size_t i = 0; i < nb; i++)
            b[i] = (int8_t)rnd(-128, 127);
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.in_zp = rnd(-128, 127), p.in2_zp = rnd(-128, 127), p.out_zp = rnd(-128, 127);
        p.act_min = rnd(-128, 0), p.act_max = rnd(0, 127);
        p.mult = rnd(1 << 30, 0x7fffffff), p.shift = add ? rnd(-25, -18) : rnd(-15, -5);
        p.mult1 = rnd(1 << 30, 0x7fffffff), p.shift1 = rnd(-3, 0);
        p.mult2 = rnd(1 << 30, 0x7fffffff), p.shift2 = rnd(-3, 0);
        memset(y1, 0x55, n);
        const mengine_status s1 = mengine_kq_binary_s8_simd(&p, add, &od, a, &bd, b, &od, y1);
        if (!simd) { /* a build without vector paths: refused, nothing written */
            assert_int_equal(s1, MENGINE_ERR_UNSUPPORTED);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(y1[i], 0x55);
            free(a), free(b), free(y0), free(y1);
            continue;
        }
        assert_int_equal(s1, MENGINE_OK);
        assert_int_equal(add ? mengine_kq_add_s8_ref(&p, &od, a, &bd, b, &od, y0)
                             : mengine_kq_mul_s8_ref(&p, &od, a, &bd, b, &od, y0),
                         MENGINE_OK);
        for (size_t i = 0; i < n; i++)
            if (y0[i] != y1[i])
                fail_msg("case %d (%s): y[%zu] %d, portable %d", it, add ? "add" : "mul", i, y1[i],
                         y0[i]);
        free(a), free(b), free(y0), free(y1);
    }
}

/* The vector HARD_SWISH against the portable one, byte for byte: scales whose relu exponent
 * is positive, zero and negative, random zero points, lengths around the vector width. */
static void test_simd_hard_swish_same_bytes(void **state)
{
    (void)state;
    const int simd = simd_elementwise();
    int checked = 0;
    for (int it = 0; it < 300; it++) {
        const size_t n = (size_t)rnd(1, 700);
        int8_t *x = malloc(n), *y0 = malloc(n), *y1 = malloc(n);
        assert_true(x && y0 && y1);
        for (size_t i = 0; i < n; i++)
            x[i] = (int8_t)rnd(-128, 127);
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.in_zp = rnd(-128, 127), p.out_zp = rnd(-128, 127);
        /* input scales from 1e-4 to 4: relu exponents from -8 to +8 */
        const float si = (float)rnd(1, 40000) * 1e-4f, so = si * (float)rnd(10, 400) * 0.01f;
        if (!mengine_kq_hard_swish_params(si, so, &p)) {
            free(x), free(y0), free(y1);
            continue;
        }
        memset(y1, 0x55, n);
        const mengine_status s1 = mengine_kq_hard_swish_s8_simd(&p, x, y1, n);
        assert_int_equal(mengine_kq_hard_swish_s8_ref(&p, x, y0, n), MENGINE_OK);
        if (!simd) {
            assert_int_equal(s1, MENGINE_ERR_UNSUPPORTED);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(y1[i], 0x55);
        } else {
            assert_int_equal(s1, MENGINE_OK);
            checked++;
            for (size_t i = 0; i < n; i++)
                if (y0[i] != y1[i])
                    fail_msg("case %d (n %zu, scales %g %g, relu exp %d): y[%zu] %d, portable %d",
                             it, n, (double)si, (double)so, (int)p.hs_relu_exp, i, y1[i], y0[i]);
        }
        free(x), free(y0), free(y1);
    }
    assert_true(simd ? checked > 200 : checked == 0);
}

/* The vector MEAN and per-channel multipliers against the portable ones: random shapes,
 * zero points and multipliers; weight scales with zeros, negatives, subnormals, NaN and
 * huge values among them (the lanes the vector path hands to the portable one). */
static void test_simd_mean_multipliers_same(void **state)
{
    (void)state;
    const int simd = simd_elementwise(), simd_mean = mengine_kq_has_simd();
    for (int it = 0; it < 200; it++) {
        /* every tenth case from 1 to 1600 pixels, all of them at one extreme in one of those
         * (the DSP path's int16 partial sums over 256 pixels) */
        const int large = it % 10 == 3, extreme = it % 20 == 13;
        const int H = rnd(1, large ? 40 : 9), W = rnd(1, large ? 40 : 9);
        const int C = rnd(1, large ? 20 : 300);
        const size_t n = (size_t)H * W * C;
        int8_t *x = malloc(n), *y0 = malloc((size_t)C), *y1 = malloc((size_t)C);
        float *ws = malloc((size_t)C * 4);
        int32_t *m0 = malloc((size_t)C * 4), *s0 = malloc((size_t)C * 4),
                *m1 = malloc((size_t)C * 4), *s1 = malloc((size_t)C * 4);
        assert_true(x && y0 && y1 && ws && m0 && s0 && m1 && s1);
        const int8_t top = it % 40 == 13 ? 127 : -128;
        for (size_t i = 0; i < n; i++)
            x[i] = extreme ? top : (int8_t)rnd(-128, 127);
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.in_zp = rnd(-128, 127), p.out_zp = rnd(-128, 127);
        p.mult = rnd(1 << 30, 0x7fffffff), p.shift = rnd(-20, 3);
        const mengine_k_dims id = {1, H, W, C};
        memset(y1, 0x55, (size_t)C);
        const mengine_status st = mengine_kq_mean_hw_s8_simd(&p, &id, x, y1);
        assert_int_equal(mengine_kq_mean_hw_s8_ref(&p, &id, x, y0), MENGINE_OK);
        if (simd_mean) {
            assert_int_equal(st, MENGINE_OK);
            for (int c = 0; c < C; c++)
                if (y0[c] != y1[c])
                    fail_msg("mean case %d (%dx%dx%d): y[%d] %d, portable %d", it, H, W, C, c,
                             y1[c], y0[c]);
        } else {
            assert_int_equal(st, MENGINE_ERR_UNSUPPORTED);
        }
        static const float odd[] = {0.0f, -0.01f, 1e-40f, 1e30f, 3e38f};
        for (int c = 0; c < C; c++) {
            ws[c] = (float)rnd(1, 1 << 20) * 1e-8f * (float)(1 << rnd(0, 12));
            if (rnd(0, 40) == 0)
                ws[c] = rnd(0, 5) == 5 ? (float)NAN : odd[rnd(0, 4)];
        }
        const float in_s = (float)rnd(1, 1000) * 1e-4f, out_s = (float)rnd(1, 1000) * 1e-3f;
        mengine_kq_channel_multipliers_ref(in_s, (const uint8_t *)ws, (uint32_t)C, out_s, C, m0,
                                           s0);
        if (mengine_kq_channel_multipliers_simd(in_s, (const uint8_t *)ws, (uint32_t)C, out_s, C,
                                                m1, s1)) {
            assert_true(simd && C > 1);
            for (int c = 0; c < C; c++)
                if (m0[c] != m1[c] || s0[c] != s1[c])
                    fail_msg("multiplier case %d, scale %g: %d, %d, portable %d, %d", it,
                             (double)ws[c], m1[c], s1[c], m0[c], s0[c]);
        } else {
            assert_true(!simd || C == 1);
        }
        free(x), free(y0), free(y1), free(ws), free(m0), free(s0), free(m1), free(s1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantize_multiplier),
        cmocka_unit_test(test_act_range),
        cmocka_unit_test(test_requant_fp32),
        cmocka_unit_test(test_add_mul_xnn),
        cmocka_unit_test(test_mean_fp32),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_depthwise),
        cmocka_unit_test(test_fully_connected),
        cmocka_unit_test(test_add_mul_broadcast),
        cmocka_unit_test(test_mean_pad),
        cmocka_unit_test(test_hard_swish_softmax),
        cmocka_unit_test(test_simd_same_bytes),
        cmocka_unit_test(test_simd_binary_same_bytes),
        cmocka_unit_test(test_simd_hard_swish_same_bytes),
        cmocka_unit_test(test_simd_mean_multipliers_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
