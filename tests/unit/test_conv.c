/* Dense conv2d: device forward against the double reference, device backward
 * against central finite differences of the reference (loss = sum(y * r)).
 * Every small case also checks that dw accumulates, that dx is overwritten,
 * that dx or dw can be skipped, that weight columns beyond Cin*KH*KW (w_ld)
 * are neither read nor written, and that nothing is written past the scratch
 * size the op asks for (the 1x1 path asks for none and gets an empty view).
 * All other device views sit at a non-zero offset. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/conv.h"
#include "ref/ref_conv.h"

/* Offset in floats of every device view inside its buffer. */
#define VIEW_OFF 3

typedef struct fd_ctx {
    const nn_conv2d_shape *s;
    double *x, *w, *y, *r; /* x (N, Cin, H, W); w (Cout, w_ld); y, r (N, Cout, Ho, Wo) */
    size_t ny;
} fd_ctx;

static double conv_loss(void *p)
{
    fd_ctx *c = p;
    ref_conv2d_forward(c->s, c->x, c->w, c->y);
    return tu_dot(c->y, c->r, c->ny);
}

/* Full check on a shape small enough for finite differences of every input
 * and weight. */
static void check_conv(void **state, const nn_conv2d_shape *s, uint64_t seed)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 99, seed);
    int ho = ref_conv_out(s->h, s->kh, s->stride_h, s->pad_h);
    int wo = ref_conv_out(s->w, s->kw, s->stride_w, s->pad_w);
    assert_int_equal(nn_conv2d_out_h(s), ho);
    assert_int_equal(nn_conv2d_out_w(s), wo);
    size_t kk = (size_t)s->cin * s->kh * s->kw, ld = s->w_ld ? (size_t)s->w_ld : kk;
    size_t cout = (size_t)s->cout;
    size_t nx = (size_t)s->n * s->cin * s->h * s->w, ny = (size_t)s->n * cout * ho * wo;
    size_t nw = cout * ld, nwu = cout * kk;
    assert_true(nn_conv2d_macs(s) == (double)ny * (double)kk);

    double *x = tu_doubles(nx), *w = tu_doubles(nw), *y = tu_doubles(ny), *r = tu_doubles(ny);
    size_t most = nx > ny ? nx : ny;
    most = most > nw ? most : nw;
    double *dw0 = tu_doubles(nw), *got = tu_doubles(most);
    double *fdx = tu_doubles(nx), *fdw = tu_doubles(nwu), *want_w = tu_doubles(nwu),
           *got_w = tu_doubles(nwu);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_fill_uniform(&rng, r, ny, -1, 1);
    tu_fill_weight(&rng, w, cout, kk, ld);
    tu_fill_weight(&rng, dw0, cout, kk, ld);

    size_t ns = nn_conv2d_scratch_floats(d, s);
    mview vx = tu_view_at(d, VIEW_OFF, x, nx), vw = tu_view_at(d, VIEW_OFF, w, nw),
          vy = tu_view_at(d, VIEW_OFF, NULL, ny);
    mview vdy = tu_view_at(d, VIEW_OFF, r, ny), vdx = tu_view_at(d, VIEW_OFF, NULL, nx),
          vdw = tu_view_at(d, VIEW_OFF, dw0, nw);
    mview none = {NULL, 0};
    mview scratch = ns ? tu_scratch(d, ns) : none;

    /* forward */
    TU_OK(d, nn_conv2d_forward(d, s, vx, vw, vy, scratch));
    tu_download(d, vy, got, ny);
    ref_conv2d_forward(s, x, w, y);
    tu_assert_close(got, y, ny, 1e-4, "conv2d forward");

    /* reference gradients */
    fd_ctx c = {.s = s, .x = x, .w = w, .y = y, .r = r, .ny = ny};
    tu_fd_grad(conv_loss, &c, x, nx, 1e-3, fdx);
    for (size_t co = 0; co < cout; co++)
        tu_fd_grad(conv_loss, &c, w + co * ld, kk, 1e-3, fdw + co * kk);
    tu_used_columns(dw0, cout, kk, ld, want_w);

    /* dx overwritten, dw accumulated onto its prior value */
    TU_OK(d, mcl_fill(d, vdx, 777.0f, nx));
    TU_OK(d, nn_conv2d_backward(d, s, vx, vw, vdy, vdx, vdw, scratch));
    tu_download(d, vdx, got, nx);
    tu_assert_close(got, fdx, nx, 1e-3, "conv2d dx");
    tu_download(d, vdw, got, nw);
    tu_assert_unused_nan(got, cout, kk, ld);
    tu_used_columns(got, cout, kk, ld, got_w);
    for (size_t i = 0; i < nwu; i++)
        want_w[i] += fdw[i];
    tu_assert_close(got_w, want_w, nwu, 1e-3, "conv2d dw (prior value + gradient)");

    /* dx skipped: dw accumulates a second gradient */
    TU_OK(d, nn_conv2d_backward(d, s, vx, vw, vdy, none, vdw, scratch));
    tu_download(d, vdw, got, nw);
    tu_assert_unused_nan(got, cout, kk, ld);
    tu_used_columns(got, cout, kk, ld, got_w);
    for (size_t i = 0; i < nwu; i++)
        want_w[i] += fdw[i];
    tu_assert_close(got_w, want_w, nwu, 1e-3, "conv2d dw after a second backward");

    /* dw skipped: dx alone, dw untouched */
    TU_OK(d, mcl_fill(d, vdx, -5.0f, nx));
    TU_OK(d, nn_conv2d_backward(d, s, none, vw, vdy, vdx, none, scratch));
    tu_download(d, vdx, got, nx);
    tu_assert_close(got, fdx, nx, 1e-3, "conv2d dx without dw");
    tu_download(d, vdw, got, nw);
    tu_used_columns(got, cout, kk, ld, got_w);
    tu_assert_close(got_w, want_w, nwu, 1e-3, "dw untouched when skipped");

    if (ns)
        tu_scratch_free(d, scratch, ns);
    tu_free(d, vx), tu_free(d, vw), tu_free(d, vy), tu_free(d, vdy), tu_free(d, vdx);
    tu_free(d, vdw);
    free(x), free(w), free(y), free(r), free(dw0), free(got), free(fdx), free(fdw);
    free(want_w), free(got_w);
}

/* A shape too large for a finite difference per parameter, with GEMM sizes
 * that are not multiples of any tile: forward element-wise, dx and dw by
 * central differences along random directions, <grad, dir>. */
static void check_conv_large(void **state, const nn_conv2d_shape *s, uint64_t seed, int dirs)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 7, seed);
    int ho = ref_conv_out(s->h, s->kh, s->stride_h, s->pad_h);
    int wo = ref_conv_out(s->w, s->kw, s->stride_w, s->pad_w);
    size_t nx = (size_t)s->n * s->cin * s->h * s->w, ny = (size_t)s->n * s->cout * ho * wo;
    size_t nw = (size_t)s->cout * s->cin * s->kh * s->kw;
    double *x = tu_doubles(nx), *w = tu_doubles(nw), *y = tu_doubles(ny), *r = tu_doubles(ny);
    double *x0 = tu_doubles(nx), *w0 = tu_doubles(nw), *got = tu_doubles(ny > nx ? ny : nx);
    double *gdx = tu_doubles(nx), *gdw = tu_doubles(nw), *dir = tu_doubles(nx > nw ? nx : nw);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_fill_uniform(&rng, w, nw, -1, 1);
    tu_fill_uniform(&rng, r, ny, -1, 1);
    memcpy(x0, x, nx * sizeof *x);
    memcpy(w0, w, nw * sizeof *w);

    size_t ns = nn_conv2d_scratch_floats(d, s);
    mview vx = tu_view_at(d, VIEW_OFF, x, nx), vw = tu_view_at(d, VIEW_OFF, w, nw),
          vy = tu_view_at(d, VIEW_OFF, NULL, ny);
    mview vdy = tu_view_at(d, VIEW_OFF, r, ny), vdx = tu_view_at(d, VIEW_OFF, NULL, nx),
          vdw = tu_view_at(d, VIEW_OFF, NULL, nw);
    mview scratch = tu_scratch(d, ns);
    TU_OK(d, nn_conv2d_forward(d, s, vx, vw, vy, scratch));
    tu_download(d, vy, got, ny);
    ref_conv2d_forward(s, x, w, y);
    tu_assert_close(got, y, ny, 1e-4, "conv2d forward (large)");

    TU_OK(d, mcl_fill(d, vdw, 0.0f, nw));
    TU_OK(d, nn_conv2d_backward(d, s, vx, vw, vdy, vdx, vdw, scratch));
    tu_download(d, vdx, gdx, nx);
    tu_download(d, vdw, gdw, nw);
    fd_ctx c = {.s = s, .x = x, .w = w, .y = y, .r = r, .ny = ny};
    for (int i = 0; i < dirs; i++) {
        tu_fill_uniform(&rng, dir, nx, -1, 1);
        double want = tu_fd_along(conv_loss, &c, x, x0, dir, nx, 1e-3), have = tu_dot(gdx, dir, nx);
        tu_assert_close(&have, &want, 1, 1e-3, "conv2d <dx, direction>");
        tu_fill_uniform(&rng, dir, nw, -1, 1);
        want = tu_fd_along(conv_loss, &c, w, w0, dir, nw, 1e-3), have = tu_dot(gdw, dir, nw);
        tu_assert_close(&have, &want, 1, 1e-3, "conv2d <dw, direction>");
    }
    tu_scratch_free(d, scratch, ns);
    tu_free(d, vx), tu_free(d, vw), tu_free(d, vy), tu_free(d, vdy), tu_free(d, vdx);
    tu_free(d, vdw);
    free(x), free(w), free(y), free(r), free(x0), free(w0), free(got), free(gdx), free(gdw);
    free(dir);
}

/* Shapes: n, cin, h, w, cout, kh, kw, stride_h, stride_w, pad_h, pad_w, w_ld */

static void test_conv_3x3_s1_pad1_odd_7x7(void **st)
{
    check_conv(st, &(nn_conv2d_shape){2, 3, 7, 7, 5, 3, 3, 1, 1, 1, 1, 0}, 1);
}

static void test_conv_5x5_s2_pad2_9x9(void **st)
{
    check_conv(st, &(nn_conv2d_shape){1, 5, 9, 9, 3, 5, 5, 2, 2, 2, 2, 0}, 2);
}

static void test_conv_7x7_s2_pad3_13x13_rgb(void **st)
{
    check_conv(st, &(nn_conv2d_shape){2, 3, 13, 13, 4, 7, 7, 2, 2, 3, 3, 0}, 3);
}

static void test_conv_1x3_and_3x1_nonsquare(void **st)
{
    check_conv(st, &(nn_conv2d_shape){3, 5, 9, 7, 3, 1, 3, 1, 2, 0, 1, 0}, 4);
    check_conv(st, &(nn_conv2d_shape){2, 1, 7, 9, 17, 3, 1, 2, 1, 1, 0, 0}, 5);
}

static void test_conv_pad0_and_pad2_single_channel(void **st)
{
    check_conv(st, &(nn_conv2d_shape){1, 17, 9, 9, 3, 5, 5, 1, 1, 0, 0, 0}, 6);
    check_conv(st, &(nn_conv2d_shape){1, 1, 13, 13, 1, 3, 3, 1, 1, 2, 2, 0}, 7);
}

static void test_conv_1x1_pointwise_batch4(void **st)
{
    check_conv(st, &(nn_conv2d_shape){4, 17, 7, 7, 5, 1, 1, 1, 1, 0, 0, 0}, 8);
}

/* The direct pointwise kernels: chunks of 8 columns inside an image take
 * vector loads (H*W a multiple of 8, an odd number of chunks, chunks spanning
 * two images, Cout and Cin not multiples of the 8-row and 4 x 4 blocks, a
 * weight stride); H*W = 2, 4 pack whole images into a chunk (a partial last
 * chunk), H*W = 1 runs the linear layer's kernels; dW packs channels with the
 * columns for H*W = 1, 2, 4 (a partial last vector of channels) and gathers
 * them for other H*W below 8 (fewer columns than a chunk). */
static void test_conv_1x1_pointwise_vector_and_gather(void **st)
{
    check_conv(st, &(nn_conv2d_shape){3, 5, 2, 4, 11, 1, 1, 1, 1, 0, 0, 0}, 12);
    check_conv(st, &(nn_conv2d_shape){2, 9, 4, 4, 13, 1, 1, 1, 1, 0, 0, 0}, 13);
    check_conv(st, &(nn_conv2d_shape){2, 6, 4, 2, 9, 1, 1, 1, 1, 0, 0, 11}, 14);
    check_conv(st, &(nn_conv2d_shape){5, 6, 1, 1, 10, 1, 1, 1, 1, 0, 0, 0}, 15);
    check_conv(st, &(nn_conv2d_shape){3, 7, 2, 2, 17, 1, 1, 1, 1, 0, 0, 0}, 16);
    check_conv(st, &(nn_conv2d_shape){1, 3, 1, 5, 2, 1, 1, 1, 1, 0, 0, 0}, 17);
    check_conv(st, &(nn_conv2d_shape){2, 5, 1, 2, 3, 1, 1, 1, 1, 0, 0, 0}, 18);
}

static void test_conv_1x1_stride2_takes_im2col(void **st)
{
    check_conv(st, &(nn_conv2d_shape){3, 5, 9, 9, 3, 1, 1, 2, 2, 0, 0, 0}, 9);
}

static void test_conv_elastic_w_ld_3x3_and_1x1(void **st)
{
    /* the first 3 of 5 stored input channels (w_ld 45), then 5 of 17 (w_ld 17) */
    check_conv(st, &(nn_conv2d_shape){2, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1, 45}, 10);
    check_conv(st, &(nn_conv2d_shape){3, 5, 5, 5, 3, 1, 1, 1, 1, 0, 0, 17}, 11);
}

/* Few input channels (the stem) with square 3, 5, 7 filters at stride 1 or 2
 * take the direct kernels (forward from 4 outputs per row, dW from private
 * rows): several strips and output-channel blocks, bands of rows, and a row
 * too long for the direct dW (im2col computes it). The cases above cover
 * K = 3 and 7 with 3 channels, pad 2 and a weight stride. */
static void test_conv_direct_few_input_channels(void **st)
{
    check_conv(st, &(nn_conv2d_shape){2, 2, 11, 20, 6, 5, 5, 1, 1, 2, 2, 0}, 19);
    check_conv(st, &(nn_conv2d_shape){3, 1, 16, 16, 9, 3, 3, 2, 2, 1, 1, 0}, 20);
    check_conv(st, &(nn_conv2d_shape){1, 1, 140, 9, 2, 3, 3, 1, 1, 1, 1, 0}, 21);
    check_conv(st, &(nn_conv2d_shape){1, 1, 3, 140, 2, 3, 3, 1, 1, 1, 1, 0}, 22);
    check_conv(st, &(nn_conv2d_shape){2, 4, 9, 10, 3, 5, 5, 2, 2, 2, 2, 0}, 23);
}

/* The CPU variant's 3x3 stride-1 pad-1 convolutions of more channels (the stereo decoder's):
 * forward and dx by conv3_rows (8 outputs of a row per work-item, a partial last strip),
 * dW by the direct rows kernel; one output channel (a prediction) with a weight stride,
 * several with a row too long for the direct dW (im2col computes it), one image. */
static void test_conv_3x3_rows_many_channels(void **st)
{
    check_conv(st, &(nn_conv2d_shape){3, 9, 5, 21, 1, 3, 3, 1, 1, 1, 1, 88}, 26);
    check_conv(st, &(nn_conv2d_shape){2, 12, 7, 8, 6, 3, 3, 1, 1, 1, 1, 0}, 27);
    check_conv(st, &(nn_conv2d_shape){1, 6, 3, 150, 5, 3, 3, 1, 1, 1, 1, 0}, 28);
    check_conv(st, &(nn_conv2d_shape){2, 5, 1, 3, 2, 3, 3, 1, 1, 1, 1, 50}, 29);
}

/* The GPU variant splits dW's K = N*Ho*Wo into chunks of at least 256 columns whose
 * partial sums are added up into a block of the weights (w_ld): K = 1024 in 4 chunks;
 * the large case below has K = 3174, 8 chunks and 6 columns left over. */
static void test_conv_long_k_split_wgrad_w_ld(void **st)
{
    check_conv(st, &(nn_conv2d_shape){4, 3, 16, 16, 4, 3, 3, 1, 1, 1, 1, 45}, 24);
    check_conv(st, &(nn_conv2d_shape){4, 5, 16, 16, 3, 1, 1, 1, 1, 0, 0, 17}, 25);
}

static void test_conv_3x3_larger_odd_gemm_batch6(void **st)
{
    /* GEMM (37 x 171) x (171 x 3174) */
    check_conv_large(st, &(nn_conv2d_shape){6, 19, 23, 23, 37, 3, 3, 1, 1, 1, 1, 0}, 12, 2);
}

/* Expect MANTA_ERR_INVALID_ARG from forward and backward, with a message
 * that names @p field. */
static void expect_invalid(mcl_dev *d, const nn_conv2d_shape *s, const char *field)
{
    mview v = tu_alloc(d, 16);
    manta_status st = nn_conv2d_forward(d, s, v, v, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("forward message '%s' does not name '%s'", msg, field);
    manta_err_clear(mcl_err(d));
    st = nn_conv2d_backward(d, s, v, v, v, v, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("backward message '%s' does not name '%s'", msg, field);
    tu_free(d, v);
}

static void test_conv_bad_shapes_rejected(void **st)
{
    mcl_dev *d = *st;
    const nn_conv2d_shape ok = {2, 3, 5, 5, 4, 3, 3, 1, 1, 1, 1, 0};
    nn_conv2d_shape s = ok;
    s.stride_h = 0;
    expect_invalid(d, &s, "stride_h");
    assert_true(nn_conv2d_out_h(&s) <= 0);
    s = ok, s.kh = 9; /* larger than h + 2*pad_h = 7 */
    expect_invalid(d, &s, "kh");
    assert_true(nn_conv2d_out_h(&s) <= 0);
    s = ok, s.kw = 8, s.pad_w = 0;
    expect_invalid(d, &s, "kw");
    s = ok, s.pad_w = -1;
    expect_invalid(d, &s, "pad_w");
    s = ok, s.cin = 0;
    expect_invalid(d, &s, "cin");
    s = ok, s.w_ld = 26; /* below cin*kh*kw = 27 */
    expect_invalid(d, &s, "w_ld");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_3x3_s1_pad1_odd_7x7),
        cmocka_unit_test(test_conv_5x5_s2_pad2_9x9),
        cmocka_unit_test(test_conv_7x7_s2_pad3_13x13_rgb),
        cmocka_unit_test(test_conv_1x3_and_3x1_nonsquare),
        cmocka_unit_test(test_conv_pad0_and_pad2_single_channel),
        cmocka_unit_test(test_conv_1x1_pointwise_batch4),
        cmocka_unit_test(test_conv_1x1_pointwise_vector_and_gather),
        cmocka_unit_test(test_conv_1x1_stride2_takes_im2col),
        cmocka_unit_test(test_conv_elastic_w_ld_3x3_and_1x1),
        cmocka_unit_test(test_conv_direct_few_input_channels),
        cmocka_unit_test(test_conv_3x3_rows_many_channels),
        cmocka_unit_test(test_conv_long_k_split_wgrad_w_ld),
        cmocka_unit_test(test_conv_3x3_larger_odd_gemm_batch6),
        cmocka_unit_test(test_conv_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("conv2d", tests, tu_setup_device, tu_teardown_device);
}
