/* The plain C99 convolution micro-kernels, used where the compiler has no GNU
 * vector extensions (MK_VECTOR_EXT=0): kernels_conv.c is compiled into this
 * test under other names and checked against the double-precision reference,
 * so that both variants are tested on every build. */
#define MK_VECTOR_EXT 0
#define mengine_k_conv2d_f32 portable_conv2d_f32
#define mengine_k_conv2d_1x1_f32 portable_conv2d_1x1_f32
#define mengine_k_conv2d_get_buffer_size_f32 portable_conv2d_get_buffer_size_f32
#define mengine_k_transpose_conv_f32 portable_transpose_conv_f32
#define mengine_k_transpose_conv_get_buffer_size_f32 portable_transpose_conv_get_buffer_size_f32
#define mengine_k_gemm_nt_f32 portable_gemm_nt_f32
#include "engine/kernels_conv.c"

#include <stdlib.h>

#include "common/testutil_host.h"
#include "common/tflbuild.h"
#include "ref/ref_engine.h"

static void conv_case(manta_rng *rng, int h, int w, int ci, int co, int k, int s, int pad)
{
    const int oh = re_out_size(h, k, s, pad), ow = re_out_size(w, k, s, pad);
    const size_t nin = (size_t)h * w * ci, nw = (size_t)co * k * k * ci,
                 nout = (size_t)oh * ow * co;
    const mengine_k_dims id = {1, h, w, ci}, fd = {co, k, k, ci}, od = {1, oh, ow, co};
    const mengine_k_conv_params p = {s, s, re_pad_before(h, k, s, pad), re_pad_before(w, k, s, pad),
                                     MK_ACT_RELU6};
    float *x = malloc(nin * sizeof *x), *wt = malloc(nw * sizeof *wt),
          *b = malloc((size_t)co * sizeof *b);
    float *y = malloc(nout * sizeof *y),
          *scratch = malloc(portable_conv2d_get_buffer_size_f32(&fd));
    double *xd = malloc(nin * sizeof *xd), *wd = malloc(nw * sizeof *wd),
           *bd = malloc((size_t)co * sizeof *bd);
    double *want = malloc(nout * sizeof *want), *got = malloc(nout * sizeof *got);
    assert_true(x && wt && b && y && scratch && xd && wd && bd && want && got);
    tb_rand(rng, x, xd, nin, -1, 1);
    tb_rand(rng, wt, wd, nw, -1, 1);
    tb_rand(rng, b, bd, (size_t)co, -1, 1);
    re_conv2d(xd, 1, h, w, ci, wd, co, k, k, bd, s, s, pad, 3, want);
    if (k == 1 && p.pad_h == 0 && p.pad_w == 0)
        assert_int_equal(portable_conv2d_1x1_f32(&p, &id, x, &fd, wt, b, &od, y, scratch),
                         MENGINE_OK);
    else
        assert_int_equal(portable_conv2d_f32(&p, &id, x, &fd, wt, b, &od, y, scratch), MENGINE_OK);
    for (size_t i = 0; i < nout; i++)
        got[i] = y[i];
    tu_assert_close(got, want, nout, 1e-5, "portable conv2d");
    free(x), free(wt), free(b), free(y), free(scratch), free(xd), free(wd), free(bd), free(want),
        free(got);
}

static void test_portable_conv2d(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 51, 1);
    conv_case(&rng, 9, 11, 5, 13, 3, 1, 0);
    conv_case(&rng, 10, 7, 3, 8, 5, 2, 0);
    conv_case(&rng, 6, 6, 7, 9, 3, 2, 1);
}

static void test_portable_conv2d_1x1(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 52, 1);
    conv_case(&rng, 9, 10, 21, 19, 1, 1, 0);
    conv_case(&rng, 7, 9, 6, 5, 1, 2, 1);
    conv_case(&rng, 3, 3, 19, 13, 1, 1, 0); /* 9 pixels: dot products, Cin and Cout tails */
    conv_case(&rng, 1, 1, 40, 8, 1, 1, 0);
}

static void test_portable_conv2d_narrow(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 53, 1);
    conv_case(&rng, 6, 30, 7, 8, 3, 1, 0); /* the 8-channel panel */
    conv_case(&rng, 5, 29, 5, 1, 3, 1, 0); /* one channel: dot products */
    conv_case(&rng, 7, 26, 4, 1, 3, 2, 1);
}

/* Transpose convolution (3x3, stride 2, SAME, as the stereo decoder's) against the reference. */
static void test_portable_transpose_conv(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 54, 1);
    const int cos[3] = {1, 8, 19};
    for (int i = 0; i < 3; i++) {
        const int h = 5, w = 13, ci = 6, co = cos[i], k = 3, s = 2, oh = 10, ow = 26;
        const size_t nin = (size_t)h * w * ci, nw = (size_t)co * k * k * ci,
                     nout = (size_t)oh * ow * co;
        const mengine_k_dims id = {1, h, w, ci}, fd = {co, k, k, ci}, od = {1, oh, ow, co};
        const mengine_k_conv_params p = {s, s, 0, 0, MK_ACT_NONE};
        float *x = malloc(nin * sizeof *x), *wt = malloc(nw * sizeof *wt),
              *b = malloc((size_t)co * sizeof *b), *y = malloc(nout * sizeof *y),
              *scratch = malloc(portable_transpose_conv_get_buffer_size_f32(&fd, s, s));
        double *xd = malloc(nin * sizeof *xd), *wd = malloc(nw * sizeof *wd),
               *bd = malloc((size_t)co * sizeof *bd), *want = malloc(nout * sizeof *want),
               *got = malloc(nout * sizeof *got);
        assert_true(x && wt && b && y && scratch && xd && wd && bd && want && got);
        tb_rand(&rng, x, xd, nin, -1, 1);
        tb_rand(&rng, wt, wd, nw, -1, 1);
        tb_rand(&rng, b, bd, (size_t)co, -1, 1);
        assert_int_equal(re_out_size(oh, k, s, 0), h);
        re_transpose_conv(xd, 1, h, w, ci, wd, co, k, k, bd, s, s, 0, oh, ow, 0, want);
        assert_int_equal(portable_transpose_conv_f32(&p, &id, x, &fd, wt, b, &od, y, scratch),
                         MENGINE_OK);
        for (size_t j = 0; j < nout; j++)
            got[j] = y[j];
        tu_assert_close(got, want, nout, 1e-5, "portable transpose conv");
        free(x), free(wt), free(b), free(y), free(scratch), free(xd), free(wd), free(bd),
            free(want), free(got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portable_conv2d),
        cmocka_unit_test(test_portable_conv2d_1x1),
        cmocka_unit_test(test_portable_conv2d_narrow),
        cmocka_unit_test(test_portable_transpose_conv),
    };
    return cmocka_run_group_tests_name("engine portable kernels", tests, NULL, NULL);
}
