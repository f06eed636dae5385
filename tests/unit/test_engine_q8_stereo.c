/* The int8 kernels of the stereo operators (runtime/engine/kernels_q8_stereo.c) one at a
 * time against plain-C references written from their definitions in real numbers (double
 * precision): each output within 1 LSB of round(real result / output scale) + zero point;
 * SLICE and the fused correlation exactly (the latter against the unfused int8 MUL and MEAN
 * kernels, byte for byte). Bit-exactness with TFLite itself is checked against LiteRT
 * (tools/bench/litert_stereo_int8_compare.py, tests/integration/stereo_int8_litert.sh). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "engine/kernels_q8_stereo_impl.h"

static uint32_t rs = 2028;
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

static int8_t *bytes(size_t n)
{
    int8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (int8_t)rnd(-128, 127);
    return p;
}

/* TRANSPOSE_CONV: the scatter form of its definition (each input pixel times each tap added
 * at o = i * stride - pad + k), in real numbers. */
static void tconv_case(int K, int S)
{
    const int H = rnd(1, 5), W = rnd(1, 6), CI = rnd(1, 9), CO = rnd(1, 7);
    const int OH = H * S, OW = W * S;
    const int ph = ((H - 1) * S + K - OH) > 0 ? ((H - 1) * S + K - OH) / 2 : 0;
    const int pw = ((W - 1) * S + K - OW) > 0 ? ((W - 1) * S + K - OW) / 2 : 0;
    mengine_kq_params p;
    memset(&p, 0, sizeof p);
    p.stride_h = p.stride_w = S, p.pad_h = ph, p.pad_w = pw;
    p.in_zp = rnd(-30, 30), p.out_zp = rnd(-30, 30), p.act_min = -128, p.act_max = 127;
    const float in_s = 0.03f, out_s = 0.25f;
    int8_t *x = bytes((size_t)H * W * CI), *w = bytes((size_t)CO * K * K * CI);
    int8_t *y = malloc((size_t)OH * OW * CO);
    int32_t *b = malloc((size_t)CO * 4), *mult = malloc((size_t)CO * 4),
            *sh = malloc((size_t)CO * 4);
    float *ws = malloc((size_t)CO * 4);
    double *ref = calloc((size_t)OH * OW * CO, sizeof *ref);
    assert_true(y && b && mult && sh && ws && ref);
    for (int c = 0; c < CO; c++) {
        ws[c] = 0.001f * (float)rnd(1, 12);
        b[c] = rnd(-4000, 4000);
    }
    for (size_t i = 0; i < (size_t)CO * K * K * CI; i++)
        w[i] = (int8_t)(w[i] == -128 ? -127 : w[i]);
    mengine_kq_channel_multipliers(in_s, (const uint8_t *)ws, (uint32_t)CO, out_s, CO, mult, sh);
    for (size_t i = 0; i < (size_t)OH * OW; i++)
        for (int c = 0; c < CO; c++)
            ref[i * CO + c] = b[c] * (double)in_s * ws[c];
    for (int iy = 0; iy < H; iy++)
        for (int ix = 0; ix < W; ix++)
            for (int ky = 0; ky < K; ky++)
                for (int kx = 0; kx < K; kx++) {
                    const int oy = iy * S - ph + ky, ox = ix * S - pw + kx;
                    if (oy < 0 || oy >= OH || ox < 0 || ox >= OW)
                        continue;
                    for (int co = 0; co < CO; co++)
                        for (int ci = 0; ci < CI; ci++)
                            ref[((size_t)oy * OW + ox) * CO + co] +=
                                in_s * (x[((size_t)iy * W + ix) * CI + ci] - p.in_zp) * ws[co] *
                                w[(((size_t)co * K + ky) * K + kx) * CI + ci];
                }
    const mengine_k_dims id = {1, H, W, CI}, fd = {CO, K, K, CI}, od = {1, OH, OW, CO};
    int32_t *work = malloc(mengine_kq_transpose_conv_get_buffer_size(&fd, &od, S, S));
    assert_non_null(work);
    assert_int_equal(mengine_kq_transpose_conv_s8(&p, mult, sh, work, &id, x, &fd, w, b, &od, y),
                     MENGINE_OK);
    free(work);
    for (size_t i = 0; i < (size_t)OH * OW * CO; i++)
        near(y[i], qround(ref[i] / out_s, p.out_zp), "transpose conv", i);
    free(x), free(w), free(y), free(b), free(mult), free(sh), free(ws), free(ref);
}

static void test_transpose_conv(void **state)
{
    (void)state;
    for (int i = 0; i < 6; i++) {
        tconv_case(4, 2); /* the stereo decoder's: k4 s2 SAME */
        tconv_case(3, 2);
        tconv_case(3, 1);
    }
}

/* The sub-pixel form (mengine_kq_transpose_conv_s8(), through mengine_kq_conv2d_s8() and its
 * vector paths) byte for byte against the pixel-by-pixel loop: kernels 1-5, strides 1-3 per
 * axis, paddings 0 to beyond a stride (the loop runs then), a kernel smaller than its stride
 * (outputs no tap reaches: the bias alone), 1-2 images, channel counts across the vector
 * paths' blocks (16 output channels, 16 taps), output sizes past the input's reach. */
static void test_transpose_conv_subpixel(void **state)
{
    (void)state;
    for (int it = 0; it < 160; it++) {
        const int KH = rnd(1, 5), KW = rnd(1, 5), SH = rnd(1, 3), SW = rnd(1, 3);
        const int N = rnd(1, 2), H = rnd(1, 7), W = rnd(1, 9), CI = rnd(1, 40), CO = rnd(1, 35);
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        p.stride_h = SH, p.stride_w = SW, p.pad_h = rnd(0, KH), p.pad_w = rnd(0, KW);
        p.in_zp = rnd(-40, 40), p.out_zp = rnd(-40, 40);
        p.act_min = rnd(-128, -100), p.act_max = rnd(90, 127);
        const int OH = (H - 1) * SH + KH - 2 * p.pad_h + rnd(0, 2);
        const int OW = (W - 1) * SW + KW - 2 * p.pad_w + rnd(0, 2);
        if (OH < 1 || OW < 1)
            continue;
        const mengine_k_dims id = {N, H, W, CI}, fd = {CO, KH, KW, CI}, od = {N, OH, OW, CO};
        int8_t *x = bytes((size_t)N * H * W * CI), *w = bytes((size_t)CO * KH * KW * CI);
        int8_t *y = malloc((size_t)N * OH * OW * CO), *want = malloc((size_t)N * OH * OW * CO);
        int32_t *b = malloc((size_t)CO * 4), *mult = malloc((size_t)CO * 4);
        int32_t *sh = malloc((size_t)CO * 4);
        float *ws = malloc((size_t)CO * 4);
        const size_t bytes_work = mengine_kq_transpose_conv_get_buffer_size(&fd, &od, SH, SW);
        int32_t *work = malloc(bytes_work);
        assert_true(y && want && b && mult && sh && ws && work && bytes_work > 0);
        for (int c = 0; c < CO; c++) {
            ws[c] = 0.0005f * (float)rnd(1, 20);
            b[c] = rnd(-20000, 20000);
        }
        mengine_kq_channel_multipliers(0.02f, (const uint8_t *)ws, (uint32_t)CO, 0.3f, CO, mult,
                                       sh);
        const int32_t *bias = rnd(0, 3) ? b : NULL;
        memset(y, 0x55, (size_t)N * OH * OW * CO);
        assert_int_equal(
            mengine_kq_transpose_conv_s8_ref(&p, mult, sh, work, &id, x, &fd, w, bias, &od, want),
            MENGINE_OK);
        assert_int_equal(
            mengine_kq_transpose_conv_s8(&p, mult, sh, work, &id, x, &fd, w, bias, &od, y),
            MENGINE_OK);
        for (size_t i = 0; i < (size_t)N * OH * OW * CO; i++)
            if (y[i] != want[i])
                fail_msg("case %d (k %dx%d s %dx%d pad %d,%d %dx%dx%dx%d -> %dx%dx%d): [%zu] %d, "
                         "loop %d",
                         it, KH, KW, SH, SW, p.pad_h, p.pad_w, N, H, W, CI, OH, OW, CO, i, y[i],
                         want[i]);
        free(x), free(w), free(y), free(want), free(b), free(mult), free(sh), free(ws), free(work);
    }
}

static void test_leaky_relu(void **state)
{
    (void)state;
    const float alphas[3] = {0.1f, 0.25f, -0.5f};
    for (int k = 0; k < 3; k++) {
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        const double in_s = 0.02 * rnd(1, 10), out_s = 0.03 * rnd(1, 10);
        p.in_zp = rnd(-50, 50), p.out_zp = rnd(-50, 50);
        mengine_kq_quantize_multiplier(in_s / out_s, &p.mult, &p.shift);
        const double am = in_s * alphas[k] / out_s;
        mengine_kq_quantize_multiplier(fabs(am), &p.mult1, &p.shift1);
        p.mult1 = am < 0 ? -p.mult1 : p.mult1;
        int8_t x[256], y[256];
        for (int i = 0; i < 256; i++)
            x[i] = (int8_t)(i - 128);
        assert_int_equal(mengine_kq_leaky_relu_s8(&p, x, y, 256), MENGINE_OK);
        for (int i = 0; i < 256; i++) {
            const double v = in_s * (x[i] - p.in_zp);
            near(y[i], qround((v >= 0 ? v : alphas[k] * v) / out_s, p.out_zp), "leaky", (size_t)i);
        }
    }
}

static void test_resize_bilinear(void **state)
{
    (void)state;
    for (int k = 0; k < 8; k++) {
        const int H = rnd(1, 6), W = rnd(1, 7), C = rnd(1, 5), f = rnd(1, 3);
        const int OH = H * f + rnd(0, 1), OW = W * f + rnd(0, 2), half = k % 2 == 0;
        int8_t *x = bytes((size_t)H * W * C), *y = malloc((size_t)OH * OW * C);
        assert_non_null(y);
        const mengine_k_dims id = {1, H, W, C}, od = {1, OH, OW, C};
        assert_int_equal(mengine_kq_resize_bilinear_s8(&id, x, half, &od, y), MENGINE_OK);
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                /* in real numbers (the quantization is the input's), at TFLite's int8 source
                 * coordinates: the size ratio in 10-bit fixed point, ((in << 10) + out / 2) /
                 * out (exact for the stereo graphs' x2) */
                const int hs = ((H << 10) + OH / 2) / OH, wsc = ((W << 10) + OW / 2) / OW;
                const double sy = (half ? oy * hs + hs / 2 - 512 : oy * hs) / 1024.0;
                const double sx = (half ? ox * wsc + wsc / 2 - 512 : ox * wsc) / 1024.0;
                const int y0 = sy > 0 ? (int)floor(sy) : 0, x0 = sx > 0 ? (int)floor(sx) : 0;
                const int y1 = (int)ceil(sy) < H - 1 ? (int)ceil(sy) : H - 1;
                const int x1 = (int)ceil(sx) < W - 1 ? (int)ceil(sx) : W - 1;
                const double fy = sy - y0, fx = sx - x0;
                for (int c = 0; c < C; c++) {
                    const double v = x[((size_t)y0 * W + x0) * C + c] * (1 - fy) * (1 - fx) +
                                     x[((size_t)y1 * W + x0) * C + c] * fy * (1 - fx) +
                                     x[((size_t)y0 * W + x1) * C + c] * (1 - fy) * fx +
                                     x[((size_t)y1 * W + x1) * C + c] * fy * fx;
                    const size_t i = ((size_t)oy * OW + ox) * C + c;
                    near(y[i], qround(v, 0), "resize", i);
                }
            }
        free(x), free(y);
    }
}

static void test_mean_c_requantize(void **state)
{
    (void)state;
    for (int k = 0; k < 6; k++) {
        const int rows = rnd(1, 40), C = rnd(1, 70);
        mengine_kq_params p;
        memset(&p, 0, sizeof p);
        const double in_s = 0.01 * rnd(1, 20), out_s = 0.005 * rnd(1, 20);
        p.in_zp = rnd(-60, 60), p.out_zp = rnd(-60, 60);
        mengine_kq_quantize_multiplier(in_s / out_s, &p.mult, &p.shift);
        int8_t *x = bytes((size_t)rows * C), *y = malloc((size_t)rows * C);
        assert_non_null(y);
        assert_int_equal(mengine_kq_mean_c_s8(&p, (size_t)rows, C, x, y), MENGINE_OK);
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int c = 0; c < C; c++)
                s += in_s * (x[(size_t)r * C + c] - p.in_zp);
            near(y[r], qround(s / C / out_s, p.out_zp), "mean over C", (size_t)r);
        }
        assert_int_equal(mengine_kq_requantize_s8(&p, x, y, (size_t)rows * C), MENGINE_OK);
        for (size_t i = 0; i < (size_t)rows * C; i++)
            near(y[i], qround(in_s * (x[i] - p.in_zp) / out_s, p.out_zp), "requantize", i);
        free(x), free(y);
    }
}

static void test_slice(void **state)
{
    (void)state;
    const int H = 3, W = 7, C = 5;
    int8_t *x = bytes((size_t)H * W * C), y[3 * 4 * 2];
    const int32_t begin[4] = {0, 0, 2, 1}, stride[4] = {1, 1, 1, 2};
    const mengine_k_dims id = {1, H, W, C}, od = {1, 3, 4, 2};
    assert_int_equal(mengine_kq_slice_s8(&id, x, begin, stride, &od, y), MENGINE_OK);
    for (int h = 0; h < 3; h++)
        for (int w = 0; w < 4; w++)
            for (int c = 0; c < 2; c++)
                assert_int_equal(y[(h * 4 + w) * 2 + c],
                                 x[((size_t)h * W + w + 2) * C + 1 + 2 * c]);
    const int32_t bad[4] = {0, 0, 4, 0}, one[4] = {1, 1, 1, 1};
    assert_int_equal(mengine_kq_slice_s8(&id, x, bad, one, &od, y), MENGINE_ERR_ARG);
    free(x);
}

/* The fused correlation equals the unfused int8 operators: per displacement the right
 * features shifted (the PAD's zero point outside), MUL (mengine_kq_mul_s8()), MEAN over the
 * channels (mengine_kq_mean_c_s8()), byte for byte. */
static void test_correlation(void **state)
{
    (void)state;
    for (int t = 0; t < 6; t++) {
        const int H = rnd(1, 4), W = rnd(1, 12), C = rnd(1, 40), D = rnd(1, 9), step = rnd(1, 2);
        mengine_kq_corr_params k;
        mengine_kq_params mul, mean;
        memset(&k, 0, sizeof k), memset(&mul, 0, sizeof mul), memset(&mean, 0, sizeof mean);
        k.offset = 0, k.step = -step, k.l_zp = rnd(-40, 40), k.r_zp = rnd(-40, 40);
        mengine_kq_quantize_multiplier(0.002 * rnd(1, 30), &k.mul_mult, &k.mul_shift);
        k.mul_zp = rnd(-40, 40), k.mul_min = -128, k.mul_max = 127, k.out_zp = rnd(-40, 40);
        mean.in_zp = k.mul_zp, mean.out_zp = k.out_zp;
        mengine_kq_quantize_multiplier(0.1 * rnd(1, 30), &mean.mult, &mean.shift);
        mengine_kq_mean_multiplier(mean.mult, mean.shift, C, &k.mean_mult, &k.mean_shift);
        mul.in_zp = k.l_zp, mul.in2_zp = k.r_zp, mul.out_zp = k.mul_zp;
        mul.mult = k.mul_mult, mul.shift = k.mul_shift, mul.act_min = -128, mul.act_max = 127;
        const size_t n = (size_t)H * W * C;
        int8_t *l = bytes(n), *r = bytes(n), *s = malloc(n), *m = malloc(n);
        int8_t *fused = malloc((size_t)H * W * D), *e = malloc((size_t)H * W);
        assert_true(s && m && fused && e);
        const mengine_k_dims ld = {1, H, W, C}, od = {1, H, W, D};
        assert_int_equal(mengine_kq_correlation_s8(&k, &ld, l, &ld, r, &od, fused), MENGINE_OK);
        for (int d = 0; d < D; d++) {
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int c = 0; c < C; c++) {
                        const int xr = x - d * step;
                        s[((size_t)y * W + x) * C + c] =
                            xr < 0 ? (int8_t)k.r_zp : r[((size_t)y * W + xr) * C + c];
                    }
            assert_int_equal(mengine_kq_mul_s8(&mul, &ld, l, &ld, s, &ld, m), MENGINE_OK);
            assert_int_equal(mengine_kq_mean_c_s8(&mean, (size_t)H * W, C, m, e), MENGINE_OK);
            for (size_t p = 0; p < (size_t)H * W; p++)
                if (fused[p * D + d] != e[p])
                    fail_msg("correlation: pixel %zu displacement %d: fused %d, unfused %d", p, d,
                             fused[p * D + d], e[p]);
        }
        free(l), free(r), free(s), free(m), free(fused), free(e);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transpose_conv),    cmocka_unit_test(test_transpose_conv_subpixel),
        cmocka_unit_test(test_leaky_relu),        cmocka_unit_test(test_resize_bilinear),
        cmocka_unit_test(test_mean_c_requantize), cmocka_unit_test(test_slice),
        cmocka_unit_test(test_correlation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
