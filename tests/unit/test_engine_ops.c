/* Engine operators one at a time: a single-operator model built in memory,
 * verified, planned and run, against the double-precision references on
 * random shapes (odd sizes included); plus the kernel variants directly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "common/tflbuild.h"
#include "engine/kernels_impl.h"
#include "ref/ref_engine.h"

#define RTOL 1e-5

static float *fa(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

static double *da(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

/* Run a model with one input and one output; compare with @p want. */
static void run_check(const tb_model *m, const float *x, size_t nx, const double *want, size_t ny,
                      const char *what)
{
    tb_run r;
    double *got = da(ny);
    tb_run_open(&r, m);
    tb_run_input(&r, 0, x, nx);
    tb_run_invoke(&r);
    tb_run_output(&r, 0, got, ny);
    tu_assert_close(got, want, ny, RTOL, what);
    tb_run_close(&r);
    free(got);
}

/* ---- CONV_2D ---- */

static void conv_case(manta_rng *rng, int n, int h, int w, int ci, int co, int kh, int kw, int sh,
                      int sw, int pad, int act)
{
    const int oh = re_out_size(h, kh, sh, pad), ow = re_out_size(w, kw, sw, pad);
    const size_t nin = (size_t)n * h * w * ci, nw = (size_t)co * kh * kw * ci;
    const size_t nout = (size_t)n * oh * ow * co;
    float *x = fa(nin), *wt = fa(nw), *b = fa((size_t)co);
    double *xd = da(nin), *wd = da(nw), *bd = da((size_t)co), *want = da(nout);
    tb_rand(rng, x, xd, nin, -1, 1);
    tb_rand(rng, wt, wd, nw, -1, 1);
    tb_rand(rng, b, bd, (size_t)co, -1, 1);
    re_conv2d(xd, n, h, w, ci, wd, co, kh, kw, bd, sh, sw, pad, act, want);

    tb_model m;
    tb_init(&m);
    const int32_t din[4] = {n, h, w, ci}, dw[4] = {co, kh, kw, ci}, db[1] = {co};
    const int32_t dout[4] = {n, oh, ow, co};
    int32_t ins[3];
    ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
    ins[1] = tb_tensor_f32(&m, "w", 4, dw, wt);
    ins[2] = tb_tensor_f32(&m, "b", 1, db, b);
    int32_t out = tb_tensor_f32(&m, "out", 4, dout, NULL);
    tb_opts o = {.type = 1, .padding = pad, .stride_w = sw, .stride_h = sh, .act = act};
    tb_op_add(&m, MENGINE_OP_CONV_2D, 1, 3, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, x, nin, want, nout, "conv2d");
    tb_release(&m);
    free(x), free(wt), free(b), free(xd), free(wd), free(bd), free(want);
}

static void test_conv2d_random(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 11, 1);
    for (int i = 0; i < 14; i++) {
        const int kh = 1 + 2 * tu_rand_int(&rng, 0, 2), kw = i % 3 ? kh : tu_rand_int(&rng, 1, 4);
        const int s = tu_rand_int(&rng, 1, 2), pad = tu_rand_int(&rng, 0, 1);
        const int h = tu_rand_int(&rng, kh, 13), w = tu_rand_int(&rng, kw, 13);
        conv_case(&rng, tu_rand_int(&rng, 1, 2), h, w, tu_rand_int(&rng, 1, 11),
                  tu_rand_int(&rng, 1, 19), kh, kw, s, tu_rand_int(&rng, 1, 3), pad,
                  tu_rand_int(&rng, 0, 3));
    }
    /* the stem of a mobile network: 3 channels, 3x3 stride 2, SAME, RELU6 */
    conv_case(&rng, 1, 17, 16, 3, 16, 3, 3, 2, 2, 0, 3);
}

static void test_conv2d_1x1(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 12, 1);
    conv_case(&rng, 1, 7, 9, 24, 37, 1, 1, 1, 1, 0, 0); /* dense GEMM, Cout tail */
    conv_case(&rng, 2, 5, 5, 17, 8, 1, 1, 1, 1, 1, 3);
    conv_case(&rng, 1, 9, 8, 13, 21, 1, 1, 2, 2, 0, 1); /* strided 1x1 */
    conv_case(&rng, 1, 1, 1, 40, 10, 1, 1, 1, 1, 0, 0); /* SE-like 1x1 on one pixel */
    /* dot-product path (at most 16 pixels): odd Cin (vector tail), odd Cout (channel
     * tail), odd pixel counts (single-pixel blocks), Cin below one vector, every act */
    conv_case(&rng, 1, 3, 3, 19, 13, 1, 1, 1, 1, 0, 1);
    conv_case(&rng, 1, 1, 1, 7, 5, 1, 1, 1, 1, 0, 3);
    conv_case(&rng, 2, 2, 2, 33, 70, 1, 1, 1, 1, 0, 2);
    conv_case(&rng, 1, 1, 3, 16, 9, 1, 1, 1, 1, 0, 0);
    conv_case(&rng, 1, 4, 4, 96, 24, 1, 1, 1, 1, 0, 3);
    conv_case(&rng, 1, 1, 17, 11, 37, 1, 1, 1, 1, 0, 1); /* 17 pixels: the packed GEMM */
}

/* The register-blocked direct kernel: rows wide enough for full tiles of pixels next
 * to border pixels, odd Cin and Cout, strides 1 and 2, SAME and VALID, every act. */
static void test_conv2d_tiles(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 14, 1);
    conv_case(&rng, 1, 5, 23, 3, 19, 3, 3, 1, 1, 0, 3); /* SAME */
    conv_case(&rng, 1, 7, 29, 1, 16, 3, 3, 2, 2, 0, 1);
    conv_case(&rng, 2, 4, 17, 5, 33, 5, 5, 1, 1, 0, 2);
    conv_case(&rng, 1, 6, 31, 9, 7, 3, 5, 2, 1, 1, 0); /* VALID */
    conv_case(&rng, 1, 3, 3, 2, 17, 7, 7, 1, 1, 0, 3); /* every pixel at the border */
    /* at most 8 output channels: the 8-channel panel; one: dot products, 8 pixels at once */
    conv_case(&rng, 1, 5, 37, 8, 8, 3, 3, 1, 1, 0, 3);
    conv_case(&rng, 2, 4, 30, 5, 6, 3, 3, 2, 2, 1, 1);
    conv_case(&rng, 1, 6, 40, 12, 1, 3, 3, 1, 1, 0, 0);
    conv_case(&rng, 1, 5, 29, 5, 1, 3, 3, 1, 1, 1, 3); /* Cin x KW not a multiple of a vector */
    conv_case(&rng, 1, 7, 33, 3, 1, 5, 3, 2, 2, 1, 0);
    conv_case(&rng, 1, 9, 14, 24, 3, 1, 1, 1, 1, 0, 2); /* 1x1, 3 channels */
    conv_case(&rng, 1, 4, 8, 32, 1, 3, 3, 1, 1, 0, 0);  /* one channel, rows shorter than 8 */
    conv_case(&rng, 2, 5, 9, 13, 24, 3, 3, 1, 1, 0, 1); /* runs of 4 to 11 pixels */
    conv_case(&rng, 1, 6, 7, 6, 5, 3, 3, 1, 1, 1, 0);
}

/* ---- DEPTHWISE_CONV_2D ---- */

static void dw_case(manta_rng *rng, int n, int h, int w, int ci, int mult, int kh, int kw, int sh,
                    int sw, int pad, int act, int dm_option)
{
    const int co = ci * mult;
    const int oh = re_out_size(h, kh, sh, pad), ow = re_out_size(w, kw, sw, pad);
    const size_t nin = (size_t)n * h * w * ci, nw = (size_t)kh * kw * co;
    const size_t nout = (size_t)n * oh * ow * co;
    float *x = fa(nin), *wt = fa(nw), *b = fa((size_t)co);
    double *xd = da(nin), *wd = da(nw), *bd = da((size_t)co), *want = da(nout);
    tb_rand(rng, x, xd, nin, -1, 1);
    tb_rand(rng, wt, wd, nw, -1, 1);
    tb_rand(rng, b, bd, (size_t)co, -1, 1);
    re_depthwise(xd, n, h, w, ci, wd, mult, kh, kw, bd, sh, sw, pad, act, want);

    tb_model m;
    tb_init(&m);
    const int32_t din[4] = {n, h, w, ci}, dw[4] = {1, kh, kw, co}, db[1] = {co};
    const int32_t dout[4] = {n, oh, ow, co};
    int32_t ins[3];
    ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
    ins[1] = tb_tensor_f32(&m, "w", 4, dw, wt);
    ins[2] = tb_tensor_f32(&m, "b", 1, db, b);
    int32_t out = tb_tensor_f32(&m, "out", 4, dout, NULL);
    tb_opts o = {.type = 2,
                 .padding = pad,
                 .stride_w = sw,
                 .stride_h = sh,
                 .act = act,
                 .depth_multiplier = dm_option ? mult : 0};
    tb_op_add(&m, MENGINE_OP_DEPTHWISE_CONV_2D, 1, 3, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, x, nin, want, nout, "depthwise");
    tb_release(&m);
    free(x), free(wt), free(b), free(xd), free(wd), free(bd), free(want);
}

static void test_depthwise_fast_variants(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 13, 1);
    for (int k = 3; k <= 7; k += 2)
        for (int s = 1; s <= 2; s++)
            for (int pad = 0; pad <= 1; pad++) {
                const int c = tu_rand_int(&rng, 1, 40); /* below and above the 16-channel block */
                dw_case(&rng, 1, tu_rand_int(&rng, k, 15), tu_rand_int(&rng, k, 15), c, 1, k, k, s,
                        s, pad, tu_rand_int(&rng, 0, 3), 1);
            }
    /* channel blocks of 4 vectors, 1 vector and single lanes; images smaller than the
     * kernel (every pixel at the border); SAME padding on odd sizes */
    const int chans[4] = {43, 1, 9, 64};
    for (int k = 3; k <= 7; k += 2)
        for (int s = 1; s <= 2; s++)
            for (int i = 0; i < 4; i++) {
                const int hw = i == 1 ? k + 4 : tu_rand_int(&rng, 1, k);
                dw_case(&rng, 1, hw, i == 3 ? hw + 1 : hw, chans[i], 1, k, k, s, s, 0, i, 1);
            }
    /* interior runs (weights held over a row) of 1, 2, 3 and 6 pixels between border
     * pixels, with a channel tail past the last vector and batches of 2 */
    for (int k = 3; k <= 7; k += 2)
        for (int s = 1; s <= 2; s++)
            for (int run = 1; run <= 6; run += run == 3 ? 3 : 1) {
                const int w = k + (run - 1) * s + 2 * (k / 2), c = 3 + 4 * run;
                dw_case(&rng, 2, k + 1, w, c, 1, k, k, s, s, 0, run % 4, 1);
                dw_case(&rng, 1, k, w - 2 * (k / 2), c, 1, k, k, s, s, 1, 3, 1); /* VALID */
            }
}

static void test_depthwise_general(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 14, 1);
    dw_case(&rng, 1, 9, 8, 5, 2, 3, 3, 1, 1, 0, 0, 1);  /* multiplier 2 */
    dw_case(&rng, 2, 7, 11, 6, 1, 3, 5, 2, 1, 0, 3, 0); /* non-square, unequal strides */
    dw_case(&rng, 1, 6, 6, 4, 3, 2, 2, 2, 2, 1, 1, 0);  /* even kernel */
    dw_case(&rng, 1, 4, 5, 3, 1, 9, 9, 1, 1, 0, 0, 1);  /* kernel larger than the image */
}

/* ---- TRANSPOSE_CONV ---- */

static void tconv_case(manta_rng *rng, int n, int oh, int ow, int ci, int co, int kh, int kw,
                       int sh, int sw, int pad, int act, int with_bias)
{
    const int h = re_out_size(oh, kh, sh, pad), w = re_out_size(ow, kw, sw, pad);
    const size_t nin = (size_t)n * h * w * ci, nw = (size_t)co * kh * kw * ci;
    const size_t nout = (size_t)n * oh * ow * co;
    float *x = fa(nin), *wt = fa(nw), *b = fa((size_t)co);
    double *xd = da(nin), *wd = da(nw), *bd = da((size_t)co), *want = da(nout);
    tb_rand(rng, x, xd, nin, -1, 1);
    tb_rand(rng, wt, wd, nw, -1, 1);
    tb_rand(rng, b, bd, (size_t)co, -1, 1);
    re_transpose_conv(xd, n, h, w, ci, wd, co, kh, kw, with_bias ? bd : NULL, sh, sw, pad, oh, ow,
                      act, want);

    tb_model m;
    tb_init(&m);
    const int32_t din[4] = {n, h, w, ci}, dw[4] = {co, kh, kw, ci}, db[1] = {co};
    const int32_t dout[4] = {n, oh, ow, co};
    int32_t ins[4];
    ins[0] = tb_tensor_i32(&m, "shape", 4, dout);
    ins[1] = tb_tensor_f32(&m, "w", 4, dw, wt);
    ins[2] = tb_tensor_f32(&m, "in", 4, din, NULL);
    ins[3] = with_bias ? tb_tensor_f32(&m, "b", 1, db, b) : -1;
    int32_t out = tb_tensor_f32(&m, "out", 4, dout, NULL);
    tb_opts o = {.type = 49, .padding = pad, .stride_w = sw, .stride_h = sh, .act = act};
    tb_op_add(&m, MENGINE_OP_TRANSPOSE_CONV, with_bias ? 3 : 1, with_bias ? 4 : 3, ins, out, &o);
    tb_io(&m, 1, &ins[2], 1, &out);
    run_check(&m, x, nin, want, nout, "transpose conv");
    tb_release(&m);
    free(x), free(wt), free(b), free(xd), free(wd), free(bd), free(want);
}

static void test_transpose_conv(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 15, 1);
    tconv_case(&rng, 1, 8, 8, 4, 3, 3, 3, 2, 2, 0, 0, 1);
    tconv_case(&rng, 1, 7, 9, 5, 6, 3, 3, 2, 2, 0, 3, 0); /* odd output: asymmetric padding */
    tconv_case(&rng, 2, 9, 6, 3, 2, 2, 2, 2, 2, 1, 1, 1);
    tconv_case(&rng, 1, 5, 5, 7, 4, 4, 3, 1, 1, 0, 0, 1);
    tconv_case(&rng, 1, 11, 10, 2, 3, 5, 5, 3, 2, 1, 0, 1);
    /* the stereo decoder's upsampling (3x3, stride 2, SAME) over wide rows: every phase's
     * tiles, the 8- and 16-channel panels and two panels */
    tconv_case(&rng, 1, 16, 40, 12, 8, 3, 3, 2, 2, 0, 0, 1);
    tconv_case(&rng, 1, 12, 34, 24, 16, 3, 3, 2, 2, 0, 1, 1);
    tconv_case(&rng, 1, 10, 30, 9, 1, 3, 3, 2, 2, 0, 0, 1);
    tconv_case(&rng, 1, 9, 36, 6, 20, 4, 4, 2, 2, 1, 3, 0);
    tconv_case(&rng, 1, 8, 8, 3, 5, 1, 1, 2, 2, 0, 0, 1);   /* phases without a tap: the bias */
    tconv_case(&rng, 1, 4, 8, 96, 32, 3, 3, 2, 2, 0, 0, 1); /* the decoder's first: 2x4 in */
}

/* ---- AVERAGE_POOL_2D, MEAN ---- */

static void test_avg_pool(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 16, 1);
    for (int i = 0; i < 6; i++) {
        const int n = tu_rand_int(&rng, 1, 2), c = tu_rand_int(&rng, 1, 21);
        const int fh = tu_rand_int(&rng, 1, 4), fw = tu_rand_int(&rng, 1, 4);
        const int h = tu_rand_int(&rng, fh, 12), w = tu_rand_int(&rng, fw, 12);
        const int sh = tu_rand_int(&rng, 1, 3), sw = tu_rand_int(&rng, 1, 3);
        const int pad = i % 2, act = i % 4 == 3 ? 3 : 0;
        const int oh = re_out_size(h, fh, sh, pad), ow = re_out_size(w, fw, sw, pad);
        const size_t nin = (size_t)n * h * w * c, nout = (size_t)n * oh * ow * c;
        float *x = fa(nin);
        double *xd = da(nin), *want = da(nout);
        tb_rand(&rng, x, xd, nin, -2, 8);
        re_avg_pool(xd, n, h, w, c, fh, fw, sh, sw, pad, act, want);
        tb_model m;
        tb_init(&m);
        const int32_t din[4] = {n, h, w, c}, dout[4] = {n, oh, ow, c};
        int32_t in = tb_tensor_f32(&m, "in", 4, din, NULL),
                out = tb_tensor_f32(&m, "out", 4, dout, NULL);
        tb_opts o = {.type = 5,
                     .padding = pad,
                     .stride_w = sw,
                     .stride_h = sh,
                     .filter_w = fw,
                     .filter_h = fh,
                     .act = act};
        tb_op_add(&m, MENGINE_OP_AVERAGE_POOL_2D, 1, 1, &in, out, &o);
        tb_io(&m, 1, &in, 1, &out);
        run_check(&m, x, nin, want, nout, "average pool");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

static void test_mean_hw(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 17, 1);
    for (int keep = 0; keep <= 1; keep++) {
        const int n = 2, h = tu_rand_int(&rng, 1, 15), w = tu_rand_int(&rng, 1, 15);
        const int c = tu_rand_int(&rng, 1, 33);
        const size_t nin = (size_t)n * h * w * c, nout = (size_t)n * c;
        float *x = fa(nin);
        double *xd = da(nin), *want = da(nout);
        tb_rand(&rng, x, xd, nin, -1, 1);
        re_mean_hw(xd, n, h, w, c, want);
        tb_model m;
        tb_init(&m);
        const int32_t din[4] = {n, h, w, c}, dk[4] = {n, 1, 1, c}, dflat[2] = {n, c};
        const int32_t axes[2] = {keep ? 2 : -3, keep ? 1 : 2}; /* any order, negative allowed */
        int32_t ins[2];
        ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
        ins[1] = tb_tensor_i32(&m, "axes", 2, axes);
        int32_t out =
            keep ? tb_tensor_f32(&m, "out", 4, dk, NULL) : tb_tensor_f32(&m, "out", 2, dflat, NULL);
        tb_opts o = {.type = 27, .keep_dims = keep};
        tb_op_add(&m, MENGINE_OP_MEAN, 1, 2, ins, out, &o);
        tb_io(&m, 1, ins, 1, &out);
        run_check(&m, x, nin, want, nout, "mean");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

/* LEAKY_RELU's kernel (vectors and the scalar tail, in place too) against x >= 0 ? x : a x,
 * bit for bit: slopes below, at and above 1, zero and negative; NaN, infinities, zeros. */
static void test_leaky_relu_kernel(void **state)
{
    (void)state;
    const float alphas[5] = {0.1f, 0.0f, -0.5f, 1.0f, 2.5f};
    enum { N = 37 };
    float x[N], y[N], z[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)(i - 18) * 0.37f;
    x[3] = NAN, x[4] = INFINITY, x[5] = -INFINITY, x[6] = 0.0f, x[7] = -0.0f, x[35] = NAN;
    for (int a = 0; a < 5; a++) {
        assert_int_equal(mengine_k_leaky_relu_f32(x, y, N, alphas[a]), MENGINE_OK);
        memcpy(z, x, sizeof z);
        assert_int_equal(mengine_k_leaky_relu_f32(z, z, N, alphas[a]), MENGINE_OK);
        for (int i = 0; i < N; i++) {
            const float want = x[i] >= 0.0f ? x[i] : alphas[a] * x[i];
            if (isnan(want)) {
                assert_true(isnan(y[i]) && isnan(z[i]));
                continue;
            }
            if (memcmp(&y[i], &want, sizeof want) || memcmp(&z[i], &want, sizeof want))
                fail_msg("alpha %g, x %g: %g / %g, want %g", alphas[a], x[i], y[i], z[i], want);
        }
    }
}

static void test_mean_channels(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 18, 1);
    for (int i = 0; i < 6; i++) {
        const int keep = i % 2, n = tu_rand_int(&rng, 1, 2), h = tu_rand_int(&rng, 1, 9);
        const int w = tu_rand_int(&rng, 1, 9), c = tu_rand_int(&rng, 1, 37);
        const size_t nin = (size_t)n * h * w * c, nout = (size_t)n * h * w;
        float *x = fa(nin);
        double *xd = da(nin), *want = da(nout);
        tb_rand(&rng, x, xd, nin, -1, 1);
        for (size_t p = 0; p < nout; p++) {
            double sum = 0;
            for (int k = 0; k < c; k++)
                sum += xd[p * c + k];
            want[p] = sum / c;
        }
        tb_model m;
        tb_init(&m);
        const int32_t din[4] = {n, h, w, c}, dk[4] = {n, h, w, 1}, axes[1] = {i < 2 ? 3 : -1};
        int32_t ins[2];
        ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
        ins[1] = tb_tensor_i32(&m, "axes", 1, axes);
        int32_t out = tb_tensor_f32(&m, "out", keep ? 4 : 3, dk, NULL);
        tb_opts o = {.type = 27, .keep_dims = keep};
        tb_op_add(&m, MENGINE_OP_MEAN, 1, 2, ins, out, &o);
        tb_io(&m, 1, ins, 1, &out);
        run_check(&m, x, nin, want, nout, "mean over channels");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

/* ---- SLICE, STRIDED_SLICE, RESIZE_BILINEAR ---- */

/* want = in[begin + i * stride] for every index i of @p od (rank @p rank). */
static void ref_slice(const double *x, int rank, const int *id, const int *begin, const int *stride,
                      const int *od, double *want)
{
    int d4[4] = {1, 1, 1, 1}, b4[4] = {0, 0, 0, 0}, s4[4] = {1, 1, 1, 1}, o4[4] = {1, 1, 1, 1};
    for (int i = 0; i < rank; i++) {
        d4[4 - rank + i] = id[i], b4[4 - rank + i] = begin[i];
        s4[4 - rank + i] = stride[i], o4[4 - rank + i] = od[i];
    }
    size_t k = 0;
    for (int a = 0; a < o4[0]; a++)
        for (int b = 0; b < o4[1]; b++)
            for (int c = 0; c < o4[2]; c++)
                for (int d = 0; d < o4[3]; d++) {
                    const int i0 = b4[0] + a * s4[0], i1 = b4[1] + b * s4[1];
                    const int i2 = b4[2] + c * s4[2], i3 = b4[3] + d * s4[3];
                    want[k++] = x[(((size_t)i0 * d4[1] + i1) * d4[2] + i2) * d4[3] + i3];
                }
}

static void test_slice(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 1);
    for (int t = 0; t < 16; t++) {
        const int rank = 1 + t % 4;
        int id[4], begin[4], size[4], one[4] = {1, 1, 1, 1};
        int32_t b32[4], s32[4], d32[4], o32[4];
        size_t nin = 1, nout = 1;
        for (int i = 0; i < rank; i++) {
            id[i] = tu_rand_int(&rng, 1, 9);
            begin[i] = tu_rand_int(&rng, 0, id[i] - 1);
            size[i] = tu_rand_int(&rng, 1, id[i] - begin[i]);
            b32[i] = begin[i], d32[i] = id[i], o32[i] = size[i];
            s32[i] = t % 3 == 0 && size[i] == id[i] - begin[i] ? -1 : size[i]; /* -1: to the end */
            nin *= (size_t)id[i], nout *= (size_t)size[i];
        }
        float *x = fa(nin);
        double *xd = da(nin), *want = da(nout);
        tb_rand(&rng, x, xd, nin, -1, 1);
        ref_slice(xd, rank, id, begin, one, size, want);
        tb_model m;
        tb_init(&m);
        int32_t ins[3];
        ins[0] = tb_tensor_f32(&m, "in", rank, d32, NULL);
        ins[1] = tb_tensor_i32(&m, "begin", rank, b32);
        ins[2] = tb_tensor_i32(&m, "size", rank, s32);
        int32_t out = tb_tensor_f32(&m, "out", rank, o32, NULL);
        tb_opts o = {.type = t % 2 ? 48 : 0};
        tb_op_add(&m, MENGINE_OP_SLICE, 1, 3, ins, out, &o);
        tb_io(&m, 1, ins, 1, &out);
        run_check(&m, x, nin, want, nout, "slice");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

static void test_strided_slice(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 42, 1);
    for (int t = 0; t < 20; t++) {
        const int rank = 1 + t % 4;
        int id[4], begin[4], stride[4], od[4], keep[4];
        int32_t b32[4], e32[4], s32[4], d32[4], o32[4];
        int bm = 0, em = 0, sm = 0, orank = 0;
        size_t nin = 1, nout = 1;
        for (int i = 0; i < rank; i++) {
            id[i] = tu_rand_int(&rng, 1, 9);
            begin[i] = tu_rand_int(&rng, 0, id[i] - 1);
            int end = tu_rand_int(&rng, begin[i] + 1, id[i]);
            stride[i] = tu_rand_int(&rng, 1, 3);
            const int mode = tu_rand_int(&rng, 0, 5);
            if (mode == 0) { /* begin_mask: from 0 */
                bm |= 1 << i;
                b32[i] = 99;
                begin[i] = 0;
            } else {
                b32[i] = mode == 1 ? begin[i] - id[i] : begin[i]; /* negative begin */
            }
            if (mode == 2) { /* end_mask: to the end */
                em |= 1 << i;
                e32[i] = 0;
                end = id[i];
            } else {
                e32[i] = mode == 3 && end < id[i] ? end - id[i] : end; /* negative end */
            }
            keep[i] = !(mode == 4 && rank > 1 && !sm);
            if (!keep[i]) { /* shrink_axis: the one index begin */
                sm |= 1 << i;
                end = begin[i] + 1;
            }
            od[i] = (end - begin[i] + stride[i] - 1) / stride[i];
            s32[i] = stride[i], d32[i] = id[i];
            if (keep[i])
                o32[orank++] = od[i];
            nin *= (size_t)id[i], nout *= (size_t)od[i];
        }
        float *x = fa(nin);
        double *xd = da(nin), *want = da(nout);
        tb_rand(&rng, x, xd, nin, -1, 1);
        ref_slice(xd, rank, id, begin, stride, od, want);
        tb_model m;
        tb_init(&m);
        int32_t ins[4];
        ins[0] = tb_tensor_f32(&m, "in", rank, d32, NULL);
        ins[1] = tb_tensor_i32(&m, "begin", rank, b32);
        ins[2] = tb_tensor_i32(&m, "end", rank, e32);
        ins[3] = tb_tensor_i32(&m, "strides", rank, s32);
        int32_t out = tb_tensor_f32(&m, "out", orank, o32, NULL);
        tb_opts o = {.type = 32, .begin_mask = bm, .end_mask = em, .shrink_axis_mask = sm};
        tb_op_add(&m, MENGINE_OP_STRIDED_SLICE, 1, 4, ins, out, &o);
        tb_io(&m, 1, ins, 1, &out);
        run_check(&m, x, nin, want, nout, "strided slice");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

/* TFLite's RESIZE_BILINEAR in double, written from its definition. */
static void ref_resize(const double *x, int n, int h, int w, int c, int oh, int ow, int align,
                       int half, double *y)
{
    const double sh = align && oh > 1 ? (double)(h - 1) / (oh - 1) : (double)h / oh;
    const double sw = align && ow > 1 ? (double)(w - 1) / (ow - 1) : (double)w / ow;
    for (int b = 0; b < n; b++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                const double vy = half ? (oy + 0.5) * sh - 0.5 : oy * sh;
                const double vx = half ? (ox + 0.5) * sw - 0.5 : ox * sw;
                const int y0 = (int)fmax(floor(vy), 0), y1 = (int)fmin(ceil(vy), h - 1);
                const int x0 = (int)fmax(floor(vx), 0), x1 = (int)fmin(ceil(vx), w - 1);
                const double fy = vy - y0, fx = vx - x0;
                for (int k = 0; k < c; k++) {
#define AT(yy, xx) x[(((size_t)b * h + (yy)) * w + (xx)) * c + k]
                    y[(((size_t)b * oh + oy) * ow + ox) * c + k] =
                        AT(y0, x0) * (1 - fy) * (1 - fx) + AT(y1, x0) * fy * (1 - fx) +
                        AT(y0, x1) * (1 - fy) * fx + AT(y1, x1) * fy * fx;
#undef AT
                }
            }
}

static void test_resize_bilinear(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 43, 1);
    for (int t = 0; t < 12; t++) {
        const int mode = t % 3; /* half-pixel centres, align corners, neither */
        const int n = tu_rand_int(&rng, 1, 2), h = tu_rand_int(&rng, 1, 7);
        const int w = tu_rand_int(&rng, 1, 7), c = tu_rand_int(&rng, 1, 5);
        const int f = t < 6 ? 2 : 1, oh = f > 1 ? 2 * h : tu_rand_int(&rng, 1, 13);
        const int ow = f > 1 ? 2 * w : tu_rand_int(&rng, 1, 13);
        const size_t nin = (size_t)n * h * w * c, nout = (size_t)n * oh * ow * c;
        float *x = fa(nin);
        double *xd = da(nin), *want = da(nout);
        tb_rand(&rng, x, xd, nin, -1, 1);
        ref_resize(xd, n, h, w, c, oh, ow, mode == 1, mode == 0, want);
        tb_model m;
        tb_init(&m);
        const int32_t din[4] = {n, h, w, c}, dout[4] = {n, oh, ow, c}, size[2] = {oh, ow};
        int32_t ins[2];
        ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
        ins[1] = tb_tensor_i32(&m, "size", 2, size);
        int32_t out = tb_tensor_f32(&m, "out", 4, dout, NULL);
        tb_opts o = {.type = 15, .align_corners = mode == 1, .half_pixel_centers = mode == 0};
        tb_op_add(&m, MENGINE_OP_RESIZE_BILINEAR, mode == 0 ? 3 : 1, 2, ins, out, &o);
        tb_io(&m, 1, ins, 1, &out);
        run_check(&m, x, nin, want, nout, "resize bilinear");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

/* The stereo decoder's upsampling (runtime/nn/upsample.h: PyTorch's bilinear with
 * align_corners=False) is RESIZE_BILINEAR with half_pixel_centers: the training
 * side's formula, src = max(0, (o + 0.5) / f - 0.5), i1 = min(i0 + 1, n - 1). */
static void test_resize_matches_training_upsample(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 44, 1);
    const int h = 5, w = 7, c = 3, f = 2, oh = h * f, ow = w * f;
    const size_t nin = (size_t)h * w * c, nout = (size_t)oh * ow * c;
    float *x = fa(nin);
    double *xd = da(nin), *want = da(nout);
    tb_rand(&rng, x, xd, nin, -1, 1);
    for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
            const double sy = fmax(0.0, (oy + 0.5) / f - 0.5), sx = fmax(0.0, (ox + 0.5) / f - 0.5);
            const int y0 = (int)sy, x0 = (int)sx, y1 = y0 + 1 < h ? y0 + 1 : h - 1;
            const int x1 = x0 + 1 < w ? x0 + 1 : w - 1;
            const double ly = sy - y0, lx = sx - x0;
            for (int k = 0; k < c; k++)
                want[((size_t)oy * ow + ox) * c + k] =
                    (1 - ly) * ((1 - lx) * xd[((size_t)y0 * w + x0) * c + k] +
                                lx * xd[((size_t)y0 * w + x1) * c + k]) +
                    ly * ((1 - lx) * xd[((size_t)y1 * w + x0) * c + k] +
                          lx * xd[((size_t)y1 * w + x1) * c + k]);
        }
    tb_model m;
    tb_init(&m);
    const int32_t din[4] = {1, h, w, c}, dout[4] = {1, oh, ow, c}, size[2] = {oh, ow};
    int32_t ins[2];
    ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
    ins[1] = tb_tensor_i32(&m, "size", 2, size);
    int32_t out = tb_tensor_f32(&m, "out", 4, dout, NULL);
    tb_opts o = {.type = 15, .half_pixel_centers = 1};
    tb_op_add(&m, MENGINE_OP_RESIZE_BILINEAR, 3, 2, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, x, nin, want, nout, "upsample x2");
    tb_release(&m);
    free(x), free(xd), free(want);
}

/* ---- the correlation pattern: fused and generic ---- */

enum corr_variant {
    CORR_FUSABLE,     /* the exporter's form */
    CORR_STRIDED,     /* STRIDED_SLICE instead of SLICE: fused too */
    CORR_UNORDERED,   /* displacements not in arithmetic order: generic */
    CORR_MUL_RELU,    /* a fused activation on the MULs: generic */
    CORR_MEAN_OUTPUT, /* a per-displacement map is a model output: generic */
    CORR_N
};

/* Left (N, H, W, C) and right (N, H, W, C) features, displacements d_k = k * s
 * (k < D): PAD the right by P = (D - 1) * s on the left of W, SLICE at
 * begin_k = P - d_k, MUL, MEAN over C, CONCATENATION. */
static void corr_case(manta_rng *rng, int n, int h, int w, int c, int D, int s, int variant,
                      int use_fused_op)
{
    const int P = (D - 1) * s;
    const size_t nf = (size_t)n * h * w * c, nout = (size_t)n * h * w * D;
    int begins[16];
    for (int k = 0; k < D; k++)
        begins[k] = P - k * s;
    if (variant == CORR_UNORDERED && D > 2) {
        const int t = begins[0];
        begins[0] = begins[2], begins[2] = t;
    }
    float *l = fa(nf), *r = fa(nf);
    double *ld = da(nf), *rd = da(nf), *want = da(nout), *got = da(nout);
    tb_rand(rng, l, ld, nf, -1, 1);
    tb_rand(rng, r, rd, nf, -1, 1);
    for (int b = 0; b < n; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int k = 0; k < D; k++) {
                    const int xr = x + begins[k] - P;
                    double sum = 0;
                    for (int ch = 0; ch < c && xr >= 0 && xr < w; ch++) {
                        const double p = ld[(((size_t)b * h + y) * w + x) * c + ch] *
                                         rd[(((size_t)b * h + y) * w + xr) * c + ch];
                        sum += variant == CORR_MUL_RELU && p < 0 ? 0 : p;
                    }
                    want[(((size_t)b * h + y) * w + x) * D + k] = sum / c;
                }
    tb_model m;
    tb_init(&m);
    const int32_t df[4] = {n, h, w, c}, dp[4] = {n, h, w + P, c}, dm[4] = {n, h, w, 1};
    const int32_t dout[4] = {n, h, w, D}, axes[1] = {3};
    const int32_t pads[8] = {0, 0, 0, 0, P, 0, 0, 0}, pad_shape[2] = {4, 2};
    int32_t io[2], means[16];
    io[0] = tb_tensor_f32(&m, "left", 4, df, NULL);
    io[1] = tb_tensor_f32(&m, "right", 4, df, NULL);
    const int32_t tpads =
        tb_tensor_buf(&m, "paddings", 2, 2, pad_shape, (uint32_t)tb_buffer_add(&m, pads, 32));
    const int32_t taxes = tb_tensor_i32(&m, "axes", 1, axes);
    const int32_t padded = tb_tensor_f32(&m, "padded", 4, dp, NULL);
    const int32_t pin[2] = {io[1], tpads};
    tb_op_add(&m, MENGINE_OP_PAD, 1, 2, pin, padded, NULL);
    for (int k = 0; k < D; k++) {
        const int32_t begin[4] = {0, 0, begins[k], 0}, size[4] = {n, h, w, c};
        const int32_t end[4] = {n, h, begins[k] + w, c}, ones[4] = {1, 1, 1, 1};
        const int strided = variant == CORR_STRIDED;
        int32_t sin[4] = {padded, tb_tensor_i32(&m, "begin", 4, begin),
                          tb_tensor_i32(&m, strided ? "end" : "size", 4, strided ? end : size),
                          strided ? tb_tensor_i32(&m, "strides", 4, ones) : -1};
        const int32_t sl = tb_tensor_f32(&m, "slice", 4, df, NULL);
        tb_op_add(&m, strided ? MENGINE_OP_STRIDED_SLICE : MENGINE_OP_SLICE, 1, strided ? 4 : 3,
                  sin, sl, NULL);
        const int32_t min[2] = {k % 2 ? sl : io[0], k % 2 ? io[0] : sl}; /* either order */
        const int32_t mul = tb_tensor_f32(&m, "mul", 4, df, NULL);
        const tb_opts mo = {.type = 21, .act = variant == CORR_MUL_RELU};
        tb_op_add(&m, MENGINE_OP_MUL, 1, 2, min, mul, &mo);
        const int32_t ein[2] = {mul, taxes};
        means[k] = tb_tensor_f32(&m, "mean", 4, dm, NULL);
        const tb_opts eo = {.type = 27, .keep_dims = 1};
        tb_op_add(&m, MENGINE_OP_MEAN, 1, 2, ein, means[k], &eo);
    }
    const int32_t out = tb_tensor_f32(&m, "corr", 4, dout, NULL);
    const tb_opts co = {.type = 10, .axis = D % 2 ? 3 : -1};
    tb_op_add(&m, MENGINE_OP_CONCATENATION, 1, D, means, out, &co);
    const int32_t outs[2] = {out, means[0]};
    tb_io(&m, 2, io, variant == CORR_MEAN_OUTPUT ? 2 : 1, outs);

    /* every operator but the fused one: the generic run */
    const mengine_op *generic[64];
    size_t n_generic = 0;
    for (size_t i = 0; i < mengine_all_ops.n_ops; i++)
        if (mengine_all_ops.ops[i] != &mengine_op_correlation)
            generic[n_generic++] = mengine_all_ops.ops[i];
    const mengine_op_resolver gen = {generic, n_generic};
    tb_run run;
    tb_run_open_ops(&run, &m, use_fused_op ? &mengine_all_ops : &gen);
    tb_run_input(&run, 0, l, nf);
    tb_run_input(&run, 1, r, nf);
    tb_run_invoke(&run);
    tb_run_output(&run, 0, got, nout);
    tu_assert_close(got, want, nout, RTOL, "correlation");
    mengine_stats st;
    mengine_view v;
    assert_int_equal(mengine_get_stats(&run.e, &st), MENGINE_OK);
    const int fused = use_fused_op && variant <= CORR_STRIDED;
    assert_int_equal(st.fused_correlations, (size_t)fused);
    assert_int_equal(st.fused_ops, fused ? (size_t)(3 * D + 2) : 0);
    /* fused: no memory for the padded features (nor any per-displacement map) */
    assert_int_equal(mengine_tensor(&run.e, (size_t)padded, &v), MENGINE_OK);
    assert_true(fused ? v.data == NULL : v.data != NULL);
    assert_int_equal(mengine_tensor(&run.e, (size_t)means[D - 1], &v), MENGINE_OK);
    assert_true(fused ? v.data == NULL : v.data != NULL);
    tb_run_close(&run);
    tb_release(&m);
    free(l), free(r), free(ld), free(rd), free(want), free(got);
}

static void test_correlation_pattern(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 45, 1);
    for (int variant = 0; variant < CORR_N; variant++)
        for (int fused = 0; fused <= 1; fused++) {
            const int D = tu_rand_int(&rng, 3, 9), s = tu_rand_int(&rng, 1, 2);
            corr_case(&rng, tu_rand_int(&rng, 1, 2), tu_rand_int(&rng, 1, 5),
                      tu_rand_int(&rng, 1, 13), tu_rand_int(&rng, 1, 19), D, s, variant, fused);
        }
    /* one displacement; channels a multiple of the vector width and not */
    corr_case(&rng, 1, 2, 3, 4, 1, 1, CORR_FUSABLE, 1);
    corr_case(&rng, 1, 3, 17, 16, 9, 1, CORR_FUSABLE, 1);
    corr_case(&rng, 1, 3, 6, 33, 4, 2, CORR_FUSABLE, 1);
}

/* ---- FULLY_CONNECTED, SOFTMAX ---- */

static void fc_case(manta_rng *rng, int batches, int depth, int units, int with_bias, int keep,
                    int act)
{
    const size_t nin = (size_t)batches * depth, nw = (size_t)units * depth;
    const size_t nout = (size_t)batches * units;
    float *x = fa(nin), *wt = fa(nw), *b = fa((size_t)units);
    double *xd = da(nin), *wd = da(nw), *bd = da((size_t)units), *want = da(nout);
    tb_rand(rng, x, xd, nin, -1, 1);
    tb_rand(rng, wt, wd, nw, -1, 1);
    tb_rand(rng, b, bd, (size_t)units, -1, 1);
    re_fully_connected(xd, batches, depth, wd, units, with_bias ? bd : NULL, act, want);
    tb_model m;
    tb_init(&m);
    const int32_t din3[3] = {batches, 1, depth}, din2[2] = {batches, depth};
    const int32_t dw[2] = {units, depth}, db[1] = {units};
    const int32_t dout3[3] = {batches, 1, units}, dout2[2] = {batches, units};
    int32_t ins[3];
    ins[0] = keep ? tb_tensor_f32(&m, "in", 3, din3, NULL) : tb_tensor_f32(&m, "in", 2, din2, NULL);
    ins[1] = tb_tensor_f32(&m, "w", 2, dw, wt);
    ins[2] = with_bias ? tb_tensor_f32(&m, "b", 1, db, b) : -1;
    int32_t out =
        keep ? tb_tensor_f32(&m, "out", 3, dout3, NULL) : tb_tensor_f32(&m, "out", 2, dout2, NULL);
    tb_opts o = {.type = 8, .act = act, .keep_dims = keep};
    tb_op_add(&m, MENGINE_OP_FULLY_CONNECTED, with_bias ? 1 : 6, with_bias ? 3 : 2, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, x, nin, want, nout, "fully connected");
    tb_release(&m);
    free(x), free(wt), free(b), free(xd), free(wd), free(bd), free(want);
}

static void test_fully_connected(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 18, 1);
    fc_case(&rng, 1, 37, 10, 1, 0, 0);
    fc_case(&rng, 3, 8, 5, 0, 0, 1);
    fc_case(&rng, 2, 100, 17, 1, 1, 3);
    fc_case(&rng, 1, 1, 1, 1, 0, 2);
}

static void test_softmax(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 19, 1);
    const float betas[2] = {1.0f, 0.5f};
    for (int i = 0; i < 2; i++) {
        const int rows = tu_rand_int(&rng, 1, 4), cols = tu_rand_int(&rng, 1, 1001);
        const size_t n = (size_t)rows * cols;
        float *x = fa(n);
        double *xd = da(n), *want = da(n);
        tb_rand(&rng, x, xd, n, -10, 10);
        re_softmax(xd, rows, cols, betas[i], want);
        tb_model m;
        tb_init(&m);
        const int32_t d[2] = {rows, cols};
        int32_t in = tb_tensor_f32(&m, "in", 2, d, NULL),
                out = tb_tensor_f32(&m, "out", 2, d, NULL);
        tb_opts o = {.type = 9, .beta = betas[i]};
        tb_op_add(&m, MENGINE_OP_SOFTMAX, 1, 1, &in, out, &o);
        tb_io(&m, 1, &in, 1, &out);
        run_check(&m, x, n, want, n, "softmax");
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

/* ---- ADD, MUL with broadcasting ---- */

static void binary_case(manta_rng *rng, int builtin, const int *ad, const int *bd, int act)
{
    int od[4];
    size_t na = 1, nb = 1, no = 1;
    for (int k = 0; k < 4; k++) {
        od[k] = ad[k] > bd[k] ? ad[k] : bd[k];
        na *= (size_t)ad[k], nb *= (size_t)bd[k], no *= (size_t)od[k];
    }
    float *a = fa(na), *b = fa(nb);
    double *ad_ = da(na), *bd_ = da(nb), *want = da(no);
    tb_rand(rng, a, ad_, na, -3, 3);
    tb_rand(rng, b, bd_, nb, -3, 3);
    re_binary(builtin == MENGINE_OP_MUL, ad_, ad, bd_, bd, od, act, want);
    tb_model m;
    tb_init(&m);
    const int32_t da4[4] = {ad[0], ad[1], ad[2], ad[3]}, db4[4] = {bd[0], bd[1], bd[2], bd[3]};
    const int32_t do4[4] = {od[0], od[1], od[2], od[3]};
    int32_t ins[2];
    ins[0] = tb_tensor_f32(&m, "a", 4, da4, NULL);
    ins[1] = tb_tensor_f32(&m, "b", 4, db4, b); /* constant second operand */
    int32_t out = tb_tensor_f32(&m, "out", 4, do4, NULL);
    tb_opts o = {.type = builtin == MENGINE_OP_ADD ? 11 : 21, .act = act};
    tb_op_add(&m, builtin, 1, 2, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, a, na, want, no, builtin == MENGINE_OP_ADD ? "add" : "mul");
    tb_release(&m);
    free(a), free(b), free(ad_), free(bd_), free(want);
}

static void test_add_broadcast(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 20, 1);
    const int same[4] = {2, 5, 7, 9}, chan[4] = {2, 1, 1, 9}, one[4] = {1, 1, 1, 1};
    const int row[4] = {1, 1, 7, 1}, big[4] = {1, 5, 7, 9};
    binary_case(&rng, MENGINE_OP_ADD, same, same, 0);
    binary_case(&rng, MENGINE_OP_ADD, same, chan, 1);
    binary_case(&rng, MENGINE_OP_ADD, same, one, 3);
    binary_case(&rng, MENGINE_OP_ADD, chan, row, 2); /* both operands broadcast */
    binary_case(&rng, MENGINE_OP_ADD, one, big, 0);
}

static void test_mul_broadcast_se(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 21, 1);
    const int x[4] = {2, 6, 5, 19}, se[4] = {2, 1, 1, 19}, same[4] = {1, 3, 3, 33};
    binary_case(&rng, MENGINE_OP_MUL, x, se, 0);
    binary_case(&rng, MENGINE_OP_MUL, se, x, 3);
    binary_case(&rng, MENGINE_OP_MUL, same, same, 1);
}

/* ---- RELU, RELU6, HARD_SWISH, LOGISTIC, LEAKY_RELU ---- */

static void test_unary_ops(void **state)
{
    (void)state;
    static const int builtins[5] = {MENGINE_OP_RELU, MENGINE_OP_RELU6, MENGINE_OP_HARD_SWISH,
                                    MENGINE_OP_LOGISTIC, MENGINE_OP_LEAKY_RELU};
    manta_rng rng;
    manta_rng_seed(&rng, 22, 1);
    for (int k = 0; k < 5; k++) {
        const int32_t d[3] = {tu_rand_int(&rng, 1, 9), tu_rand_int(&rng, 1, 9),
                              tu_rand_int(&rng, 1, 31)};
        const size_t n = (size_t)d[0] * d[1] * d[2];
        const float alpha = 0.2f;
        float *x = fa(n);
        double *xd = da(n), *want = da(n);
        tb_rand(&rng, x, xd, n, -9, 9);
        for (size_t i = 0; i < n; i++)
            want[i] = re_unary(k, xd[i], alpha);
        tb_model m;
        tb_init(&m);
        int32_t in = tb_tensor_f32(&m, "in", 3, d, NULL),
                out = tb_tensor_f32(&m, "out", 3, d, NULL);
        tb_opts o = {.type = k == 4 ? 75 : k == 2 ? 91 : 0, .alpha = alpha};
        tb_op_add(&m, builtins[k], 1, 1, &in, out, &o);
        tb_io(&m, 1, &in, 1, &out);
        run_check(&m, x, n, want, n, mengine_op_name(builtins[k]));
        tb_release(&m);
        free(x), free(xd), free(want);
    }
}

/* ---- CONCATENATION, RESHAPE ---- */

static void concat_case(manta_rng *rng, int axis_option, int axis, int act)
{
    const int n_in = 3;
    int dims[3][4];
    const int base[4] = {2, 3, 4, 5};
    float *x[3];
    double *xd[3];
    size_t total = 0;
    tb_model m;
    tb_init(&m);
    int32_t ins[3], od[4];
    memcpy(od, base, sizeof od);
    od[axis] = 0;
    for (int i = 0; i < n_in; i++) {
        memcpy(dims[i], base, sizeof base);
        dims[i][axis] = tu_rand_int(rng, 1, 6);
        od[axis] += dims[i][axis];
        const size_t cnt = (size_t)dims[i][0] * dims[i][1] * dims[i][2] * dims[i][3];
        x[i] = fa(cnt);
        xd[i] = da(cnt);
        tb_rand(rng, x[i], xd[i], cnt, -8, 8);
        const int32_t d32[4] = {dims[i][0], dims[i][1], dims[i][2], dims[i][3]};
        /* input 0 comes from the model input, the others are constants */
        ins[i] = tb_tensor_f32(&m, "part", 4, d32, i ? x[i] : NULL);
        total += cnt;
    }
    double *want = da(total);
    const double *srcs[3] = {xd[0], xd[1], xd[2]};
    const int *dptr[3] = {dims[0], dims[1], dims[2]};
    re_concat(n_in, srcs, dptr, 4, axis, want);
    for (size_t i = 0; i < total; i++)
        want[i] = re_act(act, want[i]);
    int32_t out = tb_tensor_f32(&m, "out", 4, od, NULL);
    tb_opts o = {.type = 10, .axis = axis_option, .act = act};
    tb_op_add(&m, MENGINE_OP_CONCATENATION, 1, n_in, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, x[0], (size_t)dims[0][0] * dims[0][1] * dims[0][2] * dims[0][3], want, total,
              "concatenation");
    tb_release(&m);
    for (int i = 0; i < n_in; i++)
        free(x[i]), free(xd[i]);
    free(want);
}

static void test_concat(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 23, 1);
    concat_case(&rng, 3, 3, 0);  /* channels */
    concat_case(&rng, -1, 3, 3); /* channels, negative axis, RELU6 */
    concat_case(&rng, 1, 1, 0);  /* rows */
    concat_case(&rng, 0, 0, 1);  /* batch */
}

static void test_reshape(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 24, 1);
    const int32_t d_in[4] = {1, 3, 4, 5}, d_out[2] = {3, 20}, shape[2] = {-1, 20};
    float x[60], c[60];
    double xd[60], cd[60], want[60];
    tb_rand(&rng, x, xd, 60, -1, 1);
    tb_rand(&rng, c, cd, 60, -1, 1);
    /* activation -> reshape -> relu: the reshape shares its input's memory */
    tb_model m;
    tb_init(&m);
    int32_t ins[2];
    ins[0] = tb_tensor_f32(&m, "in", 4, d_in, NULL);
    ins[1] = tb_tensor_i32(&m, "shape", 2, shape);
    int32_t mid = tb_tensor_f32(&m, "mid", 2, d_out, NULL),
            out = tb_tensor_f32(&m, "out", 2, d_out, NULL);
    tb_opts o = {.type = 17};
    tb_op_add(&m, MENGINE_OP_RESHAPE, 1, 2, ins, mid, &o);
    tb_op_add(&m, MENGINE_OP_RELU, 1, 1, &mid, out, NULL);
    tb_io(&m, 1, ins, 1, &out);
    for (int i = 0; i < 60; i++)
        want[i] = re_unary(0, xd[i], 0);
    run_check(&m, x, 60, want, 60, "reshape then relu");
    tb_release(&m);
    /* constant -> reshape (copied) -> add with the input */
    tb_init(&m);
    ins[0] = tb_tensor_f32(&m, "const", 4, d_in, c);
    int32_t rs = tb_tensor_f32(&m, "rs", 2, d_out, NULL),
            in2 = tb_tensor_f32(&m, "in", 2, d_out, NULL);
    out = tb_tensor_f32(&m, "out", 2, d_out, NULL);
    tb_op_add(&m, MENGINE_OP_RESHAPE, 1, 1, ins, rs, NULL);
    const int32_t add_in[2] = {in2, rs};
    tb_op_add(&m, MENGINE_OP_ADD, 1, 2, add_in, out, NULL);
    tb_io(&m, 1, &in2, 1, &out);
    for (int i = 0; i < 60; i++)
        want[i] = xd[i] + cd[i];
    run_check(&m, x, 60, want, 60, "constant reshape then add");
    tb_release(&m);
}

/* ---- PAD ---- */

static void pad_case(manta_rng *rng, int rank, const int *dims, const int *pads)
{
    int32_t din[4], dout[4], pv[8];
    size_t nin = 1, nout = 1;
    for (int k = 0; k < rank; k++) {
        din[k] = dims[k];
        dout[k] = dims[k] + pads[2 * k] + pads[2 * k + 1];
        pv[2 * k] = pads[2 * k], pv[2 * k + 1] = pads[2 * k + 1];
        nin *= (size_t)din[k];
        nout *= (size_t)dout[k];
    }
    float *x = fa(nin);
    double *xd = da(nin), *want = da(nout);
    tb_rand(rng, x, xd, nin, -1, 1);
    re_pad(xd, rank, dims, pads, want);
    tb_model m;
    tb_init(&m);
    const int32_t dp[2] = {rank, 2};
    int32_t ins[2];
    ins[0] = tb_tensor_f32(&m, "in", rank, din, NULL);
    ins[1] = tb_tensor_buf(&m, "paddings", 2, 2, dp,
                           (uint32_t)tb_buffer_add(&m, pv, (size_t)rank * 2 * sizeof *pv));
    int32_t out = tb_tensor_f32(&m, "out", rank, dout, NULL);
    tb_opts o = {.type = 22};
    tb_op_add(&m, MENGINE_OP_PAD, 1, 2, ins, out, &o);
    tb_io(&m, 1, ins, 1, &out);
    run_check(&m, x, nin, want, nout, "pad");
    tb_release(&m);
    free(x), free(xd), free(want);
}

static void test_pad(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 27, 1);
    const int d4[4] = {1, 7, 5, 3}, p_hw[8] = {0, 0, 1, 2, 0, 1, 0, 0};
    pad_case(&rng, 4, d4, p_hw); /* the exporter's stride-2 padding: more after */
    const int p_all[8] = {1, 0, 2, 3, 3, 0, 1, 2};
    pad_case(&rng, 4, d4, p_all); /* every dim, channels too */
    const int p_none[8] = {0};
    pad_case(&rng, 4, d4, p_none);
    for (int i = 0; i < 4; i++) {
        const int d[4] = {tu_rand_int(&rng, 1, 3), tu_rand_int(&rng, 1, 9), tu_rand_int(&rng, 1, 9),
                          tu_rand_int(&rng, 1, 17)};
        int p[8];
        for (int k = 0; k < 8; k++)
            p[k] = k < 2 ? 0 : tu_rand_int(&rng, 0, 3);
        pad_case(&rng, 4, d, p);
    }
    const int d2[2] = {3, 5}, p2[4] = {1, 0, 2, 2};
    pad_case(&rng, 2, d2, p2); /* rank 2 */
}

/* PAD (spatial zeros) then DEPTHWISE_CONV_2D, as the exporter writes stride-2 blocks;
 * @p pad_out: the padded tensor is also a model output. */
static void pad_dw_case(manta_rng *rng, int h, int w, int c, int k, int s, const int pv4[4],
                        int dw_pad, int act, int pad_out)
{
    const int ph = h + pv4[0] + pv4[1], pw = w + pv4[2] + pv4[3];
    const int oh = re_out_size(ph, k, s, dw_pad), ow = re_out_size(pw, k, s, dw_pad);
    const size_t nin = (size_t)h * w * c, npad = (size_t)ph * pw * c, nw = (size_t)k * k * c;
    const size_t nout = (size_t)oh * ow * c;
    float *x = fa(nin), *wt = fa(nw), *b = fa((size_t)c);
    double *xd = da(nin), *wd = da(nw), *bd = da((size_t)c), *padded = da(npad), *want = da(nout),
           *got = da(nout > npad ? nout : npad);
    tb_rand(rng, x, xd, nin, -1, 1);
    tb_rand(rng, wt, wd, nw, -1, 1);
    tb_rand(rng, b, bd, (size_t)c, -1, 1);
    const int dims[4] = {1, h, w, c}, pads[8] = {0, 0, pv4[0], pv4[1], pv4[2], pv4[3], 0, 0};
    re_pad(xd, 4, dims, pads, padded);
    re_depthwise(padded, 1, ph, pw, c, wd, 1, k, k, bd, s, s, dw_pad, act, want);

    tb_model m;
    tb_init(&m);
    const int32_t din[4] = {1, h, w, c}, dpad[4] = {1, ph, pw, c}, dwd[4] = {1, k, k, c};
    const int32_t db[1] = {c}, dout[4] = {1, oh, ow, c}, dp[2] = {4, 2};
    int32_t pv[8];
    for (int i = 0; i < 8; i++)
        pv[i] = pads[i];
    int32_t pin[2], dins[3], outs[2];
    pin[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
    pin[1] = tb_tensor_buf(&m, "paddings", 2, 2, dp, (uint32_t)tb_buffer_add(&m, pv, sizeof pv));
    dins[0] = tb_tensor_f32(&m, "padded", 4, dpad, NULL);
    dins[1] = tb_tensor_f32(&m, "w", 4, dwd, wt);
    dins[2] = tb_tensor_f32(&m, "b", 1, db, b);
    outs[0] = tb_tensor_f32(&m, "out", 4, dout, NULL);
    outs[1] = dins[0];
    tb_opts po = {.type = 22};
    tb_op_add(&m, MENGINE_OP_PAD, 1, 2, pin, dins[0], &po);
    tb_opts o = {.type = 2, .padding = dw_pad, .stride_w = s, .stride_h = s, .act = act};
    tb_op_add(&m, MENGINE_OP_DEPTHWISE_CONV_2D, 1, 3, dins, outs[0], &o);
    tb_io(&m, 1, pin, pad_out ? 2 : 1, outs);
    tb_run r;
    tb_run_open(&r, &m);
    tb_run_input(&r, 0, x, nin);
    tb_run_invoke(&r);
    tb_run_output(&r, 0, got, nout);
    tu_assert_close(got, want, nout, RTOL, "pad + depthwise");
    if (pad_out) {
        tb_run_output(&r, 1, got, npad);
        tu_assert_close(got, padded, npad, RTOL, "pad + depthwise: the padded tensor");
    }
    tb_run_close(&r);
    tb_release(&m);
    free(x), free(wt), free(b), free(xd), free(wd), free(bd), free(padded), free(want), free(got);
}

static void test_pad_then_depthwise(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 28, 1);
    const int p11[4] = {1, 1, 1, 1}, p12[4] = {0, 1, 1, 2}, p23[4] = {2, 3, 1, 0};
    pad_dw_case(&rng, 24, 24, 48, 3, 2, p11, 1, 0, 0); /* the exporter's stride-2 block */
    pad_dw_case(&rng, 7, 9, 19, 5, 2, p12, 1, 3, 0);
    pad_dw_case(&rng, 6, 5, 11, 3, 1, p23, 0, 1, 0); /* and SAME padding of its own */
    pad_dw_case(&rng, 9, 8, 5, 7, 2, p23, 1, 2, 0);  /* general kernel sizes: 7x7 */
    pad_dw_case(&rng, 8, 8, 16, 3, 2, p11, 1, 3, 1); /* padded tensor also an output */
}

/* ---- kernel variants called directly ---- */

static void test_kernel_dw_fast_matches_general(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 25, 1);
    for (int k = 3; k <= 7; k += 2)
        for (int s = 1; s <= 2; s++) {
            const mengine_k_dims id = {1, tu_rand_int(&rng, 1, 14), tu_rand_int(&rng, 1, 14),
                                       tu_rand_int(&rng, 1, 35)};
            const mengine_k_dims fd = {1, k, k, id.c};
            const int oh = re_out_size(id.h, k, s, 0), ow = re_out_size(id.w, k, s, 0);
            const mengine_k_dims od = {1, oh, ow, id.c};
            const mengine_k_dw_params p = {
                s, s, re_pad_before(id.h, k, s, 0), re_pad_before(id.w, k, s, 0), 1, MK_ACT_RELU6};
            const size_t nin = (size_t)id.h * id.w * id.c, nw = (size_t)k * k * id.c,
                         nout = (size_t)oh * ow * id.c;
            float *x = fa(nin), *w = fa(nw), *b = fa((size_t)id.c), *y1 = fa(nout), *y2 = fa(nout);
            double *t = da(nin > nw ? nin : nw), *g1 = da(nout), *g2 = da(nout);
            tb_rand(&rng, x, t, nin, -1, 1);
            tb_rand(&rng, w, t, nw, -1, 1);
            tb_rand(&rng, b, t, (size_t)id.c, -1, 1);
            assert_true(mengine_k_depthwise_conv_fast_ok(&p, &fd));
            assert_int_equal(mengine_k_depthwise_conv_fast_f32(&p, &id, x, &fd, w, b, &od, y1),
                             MENGINE_OK);
            assert_int_equal(mengine_k_depthwise_conv_f32(&p, &id, x, &fd, w, b, &od, y2),
                             MENGINE_OK);
            for (size_t i = 0; i < nout; i++)
                g1[i] = y1[i], g2[i] = y2[i];
            tu_assert_close(g1, g2, nout, RTOL, "fast depthwise vs general");
            free(x), free(w), free(b), free(y1), free(y2), free(t), free(g1), free(g2);
        }
}

static void test_kernel_conv_1x1_matches_general(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 26, 1);
    const mengine_k_dims id = {2, 5, 7, 19}, fd = {13, 1, 1, 19}, od = {2, 5, 7, 13};
    const mengine_k_conv_params p = {1, 1, 0, 0, MK_ACT_NONE};
    const size_t nin = 2 * 5 * 7 * 19, nw = 13 * 19, nout = 2 * 5 * 7 * 13;
    float *x = fa(nin), *w = fa(nw), *y1 = fa(nout), *y2 = fa(nout);
    float *scratch = fa(mengine_k_conv2d_get_buffer_size_f32(&fd) / sizeof(float));
    double *t = da(nin), *g1 = da(nout), *g2 = da(nout);
    tb_rand(&rng, x, t, nin, -1, 1);
    tb_rand(&rng, w, t, nw, -1, 1);
    assert_int_equal(mengine_k_conv2d_1x1_f32(&p, &id, x, &fd, w, NULL, &od, y1, scratch),
                     MENGINE_OK);
    assert_int_equal(mengine_k_conv2d_f32(&p, &id, x, &fd, w, NULL, &od, y2, scratch), MENGINE_OK);
    for (size_t i = 0; i < nout; i++)
        g1[i] = y1[i], g2[i] = y2[i];
    tu_assert_close(g1, g2, nout, RTOL, "1x1 GEMM vs direct");
    free(x), free(w), free(y1), free(y2), free(scratch), free(t), free(g1), free(g2);
}

/* ADD, MUL and the activations in place (out == an input), on lengths around the
 * vector width, against the same kernels writing to another buffer. */
static void test_kernel_elementwise_in_place(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 27, 1);
    static const int lens[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 37};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        const int c = lens[k];
        const size_t n = (size_t)2 * 3 * c;
        const mengine_k_dims d = {1, 2, 3, c}, se = {1, 1, 1, c};
        float *a = fa(n), *b = fa(n), *s = fa((size_t)c), *y1 = fa(n), *y2 = fa(n);
        double *t = da(n), *g1 = da(n), *g2 = da(n);
        tb_rand(&rng, a, t, n, -8, 8);
        tb_rand(&rng, b, t, n, -8, 8);
        tb_rand(&rng, s, t, (size_t)c, -2, 2);
        for (int op = 0; op < 6; op++) {
            const mengine_k_act act = (mengine_k_act)(op % 4);
            memcpy(y2, a, n * sizeof *a);
            switch (op) {
            case 0:
                assert_int_equal(mengine_k_add_f32(&d, a, &d, b, &d, y1, act), MENGINE_OK);
                assert_int_equal(mengine_k_add_f32(&d, y2, &d, b, &d, y2, act), MENGINE_OK);
                break;
            case 1:
                assert_int_equal(mengine_k_mul_f32(&d, a, &se, s, &d, y1, act), MENGINE_OK);
                assert_int_equal(mengine_k_mul_f32(&d, y2, &se, s, &d, y2, act), MENGINE_OK);
                break;
            case 2:
                assert_int_equal(mengine_k_hard_swish_f32(a, y1, n), MENGINE_OK);
                assert_int_equal(mengine_k_hard_swish_f32(y2, y2, n), MENGINE_OK);
                for (size_t i = 0; i < n; i++) {
                    const double x = a[i], r = x + 3 < 0 ? 0 : (x + 3 > 6 ? 6 : x + 3);
                    assert_true(fabs(y1[i] - x * r / 6) <= 1e-5 * (1 + fabs(x * r / 6)));
                }
                break;
            case 3:
                assert_int_equal(mengine_k_relu6_f32(a, y1, n), MENGINE_OK);
                assert_int_equal(mengine_k_relu6_f32(y2, y2, n), MENGINE_OK);
                for (size_t i = 0; i < n; i++)
                    assert_true(y1[i] == (a[i] < 0 ? 0.0f : (a[i] > 6 ? 6.0f : a[i])));
                break;
            case 4:
                assert_int_equal(mengine_k_relu_f32(a, y1, n), MENGINE_OK);
                assert_int_equal(mengine_k_relu_f32(y2, y2, n), MENGINE_OK);
                break;
            default:
                memcpy(y1, a, n * sizeof *a);
                mengine_k_act_f32(y1, n, MK_ACT_RELU_N1_TO_1);
                mengine_k_act_f32(y2, n, MK_ACT_RELU_N1_TO_1);
                for (size_t i = 0; i < n; i++)
                    assert_true(y1[i] >= -1.0f && y1[i] <= 1.0f);
                break;
            }
            for (size_t i = 0; i < n; i++)
                g1[i] = y1[i], g2[i] = y2[i];
            tu_assert_close(g2, g1, n, 0, "in place vs out of place");
        }
        free(a), free(b), free(s), free(y1), free(y2), free(t), free(g1), free(g2);
    }
}

static void test_kernel_args_rejected(void **state)
{
    (void)state;
    float buf[64] = {0};
    const mengine_k_dims d = {1, 2, 2, 2}, f = {2, 1, 1, 2}, bad = {1, 0, 2, 2}, f3 = {1, 3, 3, 2};
    const mengine_k_conv_params p = {1, 1, 0, 0, MK_ACT_NONE}, p0 = {0, 1, 0, 0, MK_ACT_NONE};
    const mengine_k_dw_params dwp = {1, 1, 1, 1, 1, MK_ACT_NONE},
                              dw2 = {1, 1, 1, 1, 2, MK_ACT_NONE};
    assert_int_equal(mengine_k_conv2d_f32(&p, &d, NULL, &f, buf, NULL, &d, buf, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_conv2d_f32(&p0, &d, buf, &f, buf, NULL, &d, buf, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_conv2d_f32(&p, &bad, buf, &f, buf, NULL, &d, buf, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_conv2d_1x1_f32(&p, &d, buf, &f3, buf, NULL, &d, buf, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_depthwise_conv_fast_f32(&dw2, &d, buf, &f3, buf, NULL, &d, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_depthwise_conv_f32(&dwp, &d, buf, &f, buf, NULL, &d, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_add_f32(&d, buf, &f, buf, &d, buf, MK_ACT_NONE), MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_fully_connected_f32(MK_ACT_NONE, 1, 0, 1, buf, buf, NULL, buf),
                     MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_softmax_f32(1, 0, 1.0f, buf, buf), MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_relu_f32(NULL, buf, 4), MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_concat_part_f32(buf, 1, 8, buf + 8, 4, 0), MENGINE_ERR_ARG);
    assert_int_equal(mengine_k_conv2d_get_buffer_size_f32(&bad), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv2d_random),
        cmocka_unit_test(test_conv2d_1x1),
        cmocka_unit_test(test_conv2d_tiles),
        cmocka_unit_test(test_depthwise_fast_variants),
        cmocka_unit_test(test_depthwise_general),
        cmocka_unit_test(test_transpose_conv),
        cmocka_unit_test(test_avg_pool),
        cmocka_unit_test(test_mean_hw),
        cmocka_unit_test(test_mean_channels),
        cmocka_unit_test(test_leaky_relu_kernel),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_strided_slice),
        cmocka_unit_test(test_resize_bilinear),
        cmocka_unit_test(test_resize_matches_training_upsample),
        cmocka_unit_test(test_correlation_pattern),
        cmocka_unit_test(test_fully_connected),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_add_broadcast),
        cmocka_unit_test(test_mul_broadcast_se),
        cmocka_unit_test(test_unary_ops),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_pad),
        cmocka_unit_test(test_pad_then_depthwise),
        cmocka_unit_test(test_kernel_dw_fast_matches_general),
        cmocka_unit_test(test_kernel_conv_1x1_matches_general),
        cmocka_unit_test(test_kernel_elementwise_in_place),
        cmocka_unit_test(test_kernel_args_rejected),
    };
    return cmocka_run_group_tests_name("engine ops", tests, NULL, NULL);
}
