/* Depthwise conv2d: device forward against the double reference, device
 * backward against central finite differences of the reference
 * (loss = sum(y * r)). Every case also checks that dw accumulates onto its
 * prior value, that dx is overwritten, and that dx or dw can be skipped.
 * Shapes cover the kernels specialised for K = 3, 5, 7 and stride 1, 2, and
 * the general kernel (even K, stride 3). */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/depthwise.h"
#include "ref/ref_conv.h"

/* Offset in floats of every device view inside its buffer. */
#define VIEW_OFF 5

typedef struct fd_ctx {
    const nn_dw_shape *s;
    double *x, *w, *y, *r; /* x (N, C, H, W); w (C, K, K); y, r (N, C, Ho, Wo) */
    size_t ny;
} fd_ctx;

static double dw_loss(void *p)
{
    fd_ctx *c = p;
    ref_dw_forward(c->s, c->x, c->w, c->y);
    return tu_dot(c->y, c->r, c->ny);
}

static void check_dw(void **state, const nn_dw_shape *s, uint64_t seed)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 4321, seed);
    int ho = ref_conv_out(s->h, s->k, s->stride, s->pad);
    int wo = ref_conv_out(s->w, s->k, s->stride, s->pad);
    assert_int_equal(nn_dw_out_h(s), ho);
    assert_int_equal(nn_dw_out_w(s), wo);
    size_t kk = (size_t)s->k * s->k, planes = (size_t)s->n * s->c;
    size_t nx = planes * s->h * s->w, ny = planes * ho * wo, nw = (size_t)s->c * kk;
    assert_true(nn_dw_macs(s) == (double)ny * (double)kk);

    size_t most = nx > ny ? nx : ny; /* got holds x, y or w */
    most = most > nw ? most : nw;
    double *x = tu_doubles(nx), *w = tu_doubles(nw), *y = tu_doubles(ny), *r = tu_doubles(ny);
    double *dw_want = tu_doubles(nw), *got = tu_doubles(most), *fdx = tu_doubles(nx),
           *fdw = tu_doubles(nw);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_fill_uniform(&rng, w, nw, -1, 1);
    tu_fill_uniform(&rng, r, ny, -1, 1);
    tu_fill_uniform(&rng, dw_want, nw, -1, 1); /* prior dw */

    mview vx = tu_view_at(d, VIEW_OFF, x, nx), vw = tu_view_at(d, VIEW_OFF, w, nw),
          vy = tu_view_at(d, VIEW_OFF, NULL, ny);
    mview vdy = tu_view_at(d, VIEW_OFF, r, ny), vdx = tu_view_at(d, VIEW_OFF, NULL, nx),
          vdw = tu_view_at(d, VIEW_OFF, dw_want, nw);
    mview none = {NULL, 0};
    size_t ns = nn_dw_scratch_floats(d, s);
    mview scratch = tu_scratch(d, ns);

    TU_OK(d, nn_dw_forward(d, s, vx, vw, vy));
    tu_download(d, vy, got, ny);
    ref_dw_forward(s, x, w, y);
    tu_assert_close(got, y, ny, 1e-4, "depthwise forward");

    fd_ctx c = {s, x, w, y, r, ny};
    tu_fd_grad(dw_loss, &c, x, nx, 1e-3, fdx);
    tu_fd_grad(dw_loss, &c, w, nw, 1e-3, fdw);

    /* dx overwritten, dw accumulated onto its prior value */
    TU_OK(d, mcl_fill(d, vdx, 777.0f, nx));
    TU_OK(d, nn_dw_backward(d, s, vx, vw, vdy, vdx, vdw, scratch));
    tu_download(d, vdx, got, nx);
    tu_assert_close(got, fdx, nx, 1e-3, "depthwise dx");
    for (size_t i = 0; i < nw; i++)
        dw_want[i] += fdw[i];
    tu_download(d, vdw, got, nw);
    tu_assert_close(got, dw_want, nw, 1e-3, "depthwise dw (prior value + gradient)");

    /* dx skipped: dw accumulates a second gradient */
    TU_OK(d, nn_dw_backward(d, s, vx, vw, vdy, none, vdw, scratch));
    for (size_t i = 0; i < nw; i++)
        dw_want[i] += fdw[i];
    tu_download(d, vdw, got, nw);
    tu_assert_close(got, dw_want, nw, 1e-3, "depthwise dw after a second backward");

    /* dw skipped: dx alone, dw untouched */
    TU_OK(d, mcl_fill(d, vdx, -5.0f, nx));
    TU_OK(d, nn_dw_backward(d, s, none, vw, vdy, vdx, none, none));
    tu_download(d, vdx, got, nx);
    tu_assert_close(got, fdx, nx, 1e-3, "depthwise dx without dw");
    tu_download(d, vdw, got, nw);
    tu_assert_close(got, dw_want, nw, 1e-3, "dw untouched when skipped");

    tu_scratch_free(d, scratch, ns);
    tu_free(d, vx), tu_free(d, vw), tu_free(d, vy), tu_free(d, vdy), tu_free(d, vdx);
    tu_free(d, vdw);
    free(x), free(w), free(y), free(r), free(dw_want), free(got), free(fdx), free(fdw);
}

/* Shapes: n, c, h, w, k, stride, pad */

/* Weight gradients with many output rows per channel: the GPU variant sums ranges of
 * several rows per work-item, then the ranges per weight. Against the closed form (finite
 * differences over this many inputs would take minutes; the small cases check both). */
static void test_dw_weight_gradient_of_many_rows(void **st)
{
    mcl_dev *d = *st;
    static const nn_dw_shape shapes[] = {
        {2, 24, 64, 64, 7, 1, 3}, {4, 32, 30, 30, 5, 2, 2}, {3, 40, 20, 20, 3, 1, 1}};
    manta_rng rng;
    manta_rng_seed(&rng, 77, 1);
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const nn_dw_shape *s = &shapes[t];
        size_t nx = (size_t)s->n * s->c * s->h * s->w, nw = (size_t)s->c * s->k * s->k;
        size_t ny = (size_t)s->n * s->c * nn_dw_out_h(s) * nn_dw_out_w(s);
        double *x = malloc(nx * sizeof *x), *r = malloc(ny * sizeof *r);
        double *want = malloc(nw * sizeof *want), *got = malloc(nw * sizeof *got);
        assert_true(x && r && want && got);
        tu_fill_uniform(&rng, x, nx, -1, 1);
        tu_fill_uniform(&rng, r, ny, -1, 1);
        size_t ns = nn_dw_scratch_floats(d, s);
        mview vx = tu_alloc_from(d, x, nx), vdy = tu_alloc_from(d, r, ny);
        mview vdw = tu_alloc(d, nw), scratch = tu_scratch(d, ns), none = {NULL, 0};
        TU_OK(d, mcl_fill(d, vdw, 0.0f, nw));
        TU_OK(d, nn_dw_backward(d, s, vx, none, vdy, none, vdw, scratch));
        ref_dw_backward_w(s, x, r, want);
        tu_download(d, vdw, got, nw);
        tu_assert_close(got, want, nw, 1e-4, "depthwise dw of many rows");
        tu_scratch_free(d, scratch, ns);
        tu_free(d, vx), tu_free(d, vdy), tu_free(d, vdw);
        free(x), free(r), free(want), free(got);
    }
}

static void test_dw_k3_s1_pad1_and_pad0(void **st)
{
    check_dw(st, &(nn_dw_shape){2, 3, 9, 9, 3, 1, 1}, 1);
    check_dw(st, &(nn_dw_shape){1, 5, 7, 9, 3, 1, 0}, 2);
}

static void test_dw_k3_s2_pad1_odd_sizes(void **st)
{
    check_dw(st, &(nn_dw_shape){3, 5, 7, 7, 3, 2, 1}, 3);
    check_dw(st, &(nn_dw_shape){1, 1, 13, 11, 3, 2, 1}, 4);
}

static void test_dw_k5_s1_and_s2_pad2_17ch(void **st)
{
    check_dw(st, &(nn_dw_shape){1, 17, 9, 9, 5, 1, 2}, 5);
    check_dw(st, &(nn_dw_shape){2, 17, 7, 7, 5, 2, 2}, 6);
}

static void test_dw_k7_s1_pad3_and_rows_over_group(void **st)
{
    check_dw(st, &(nn_dw_shape){2, 3, 13, 13, 7, 1, 3}, 7);
    /* N*Ho = 135 output rows: more than the widest dw reduction group (128) */
    check_dw(st, &(nn_dw_shape){3, 2, 45, 5, 3, 1, 1}, 13);
}

static void test_dw_k7_s2_pad3_batch4(void **st)
{
    check_dw(st, &(nn_dw_shape){4, 5, 13, 13, 7, 2, 3}, 8);
}

static void test_dw_general_even_k_stride3_pad_other(void **st)
{
    check_dw(st, &(nn_dw_shape){2, 3, 11, 13, 4, 3, 1}, 9); /* even K, stride 3 */
    check_dw(st, &(nn_dw_shape){1, 5, 9, 9, 3, 1, 2}, 10);  /* pad above K/2 */
    check_dw(st, &(nn_dw_shape){3, 3, 5, 5, 1, 1, 0}, 11);  /* K = 1 */
    check_dw(st, &(nn_dw_shape){1, 2, 7, 7, 5, 3, 0}, 12);  /* K = 5, stride 3 */
}

/* Planes at least 4 outputs wide take the tiled forward and dx kernels
 * (strips of 8 outputs, bands of rows, several planes per group) and rows up
 * to 136 floats the row-staged dw kernels; these shapes cover full and
 * partial strips, several bands, partial plane groups and both strides. */
static void test_dw_tiled_stride1(void **st)
{
    check_dw(st, &(nn_dw_shape){2, 3, 16, 16, 7, 1, 3}, 20); /* 2 full strips */
    check_dw(st, &(nn_dw_shape){1, 2, 9, 12, 5, 1, 2}, 21);  /* partial strip */
    check_dw(st, &(nn_dw_shape){2, 2, 10, 10, 3, 1, 0}, 22); /* pad 0: dx pad 2 */
    check_dw(st, &(nn_dw_shape){5, 7, 8, 8, 3, 1, 1}, 23);   /* 35 planes, 16 a group */
    check_dw(st, &(nn_dw_shape){1, 1, 300, 9, 3, 1, 1}, 24); /* 2 bands of rows */
}

static void test_dw_small_planes_large_kernels(void **st)
{
    check_dw(st, &(nn_dw_shape){1, 8, 4, 4, 7, 1, 3}, 40);
    check_dw(st, &(nn_dw_shape){1, 8, 5, 5, 7, 1, 3}, 41);
    check_dw(st, &(nn_dw_shape){2, 8, 8, 4, 7, 2, 3}, 42);
    check_dw(st, &(nn_dw_shape){1, 8, 4, 8, 7, 1, 3}, 43);
    check_dw(st, &(nn_dw_shape){1, 8, 2, 8, 7, 1, 3}, 44);
    check_dw(st, &(nn_dw_shape){1, 8, 10, 10, 7, 2, 3}, 45);
    check_dw(st, &(nn_dw_shape){1, 8, 4, 4, 5, 1, 2}, 46);
}

static void test_dw_tiled_stride2(void **st)
{
    check_dw(st, &(nn_dw_shape){2, 3, 21, 19, 7, 2, 3}, 25); /* Wo 10, dx 3 strips */
    check_dw(st, &(nn_dw_shape){1, 2, 11, 9, 3, 2, 1}, 26);  /* dx tiled only */
    check_dw(st, &(nn_dw_shape){1, 2, 17, 12, 5, 2, 2}, 27);
    check_dw(st, &(nn_dw_shape){1, 2, 20, 22, 5, 2, 2}, 34);  /* Wo 11: split x rows for dw */
    check_dw(st, &(nn_dw_shape){2, 3, 32, 32, 3, 2, 1}, 28);  /* Wo 16 */
    check_dw(st, &(nn_dw_shape){1, 1, 600, 17, 3, 2, 1}, 29); /* bands, forward and dx */
}

/* dw rows too long for the row-staged kernel, and K outside {3, 5, 7} at
 * stride 1 or 2: the direct dw kernel (full, overlapping and short runs). */
static void test_dw_direct_weight_gradient(void **st)
{
    check_dw(st, &(nn_dw_shape){1, 1, 3, 150, 3, 1, 1}, 30);
    check_dw(st, &(nn_dw_shape){1, 1, 3, 150, 3, 2, 1}, 31);
    check_dw(st, &(nn_dw_shape){1, 2, 12, 20, 4, 2, 1}, 32);
    check_dw(st, &(nn_dw_shape){2, 2, 6, 19, 2, 1, 0}, 33);
}

/* Expect MANTA_ERR_INVALID_ARG from forward and backward, with a message
 * that names @p field. */
static void expect_invalid(mcl_dev *d, const nn_dw_shape *s, const char *field)
{
    mview v = tu_alloc(d, 16);
    manta_status st = nn_dw_forward(d, s, v, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("forward message '%s' does not name '%s'", msg, field);
    manta_err_clear(mcl_err(d));
    st = nn_dw_backward(d, s, v, v, v, v, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("backward message '%s' does not name '%s'", msg, field);
    tu_free(d, v);
}

static void test_dw_bad_shapes_rejected(void **st)
{
    mcl_dev *d = *st;
    const nn_dw_shape ok = {2, 3, 5, 5, 3, 1, 1};
    nn_dw_shape s = ok;
    s.stride = 0;
    expect_invalid(d, &s, "stride");
    assert_true(nn_dw_out_h(&s) <= 0);
    s = ok, s.k = 9; /* larger than h + 2*pad = 7 */
    expect_invalid(d, &s, "k = 9");
    assert_true(nn_dw_out_w(&s) <= 0);
    s = ok, s.pad = -1;
    expect_invalid(d, &s, "pad");
    s = ok, s.c = 0;
    expect_invalid(d, &s, "field c");
    s = ok, s.k = 0;
    expect_invalid(d, &s, "field k");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dw_weight_gradient_of_many_rows),
        cmocka_unit_test(test_dw_k3_s1_pad1_and_pad0),
        cmocka_unit_test(test_dw_k3_s2_pad1_odd_sizes),
        cmocka_unit_test(test_dw_k5_s1_and_s2_pad2_17ch),
        cmocka_unit_test(test_dw_k7_s1_pad3_and_rows_over_group),
        cmocka_unit_test(test_dw_k7_s2_pad3_batch4),
        cmocka_unit_test(test_dw_general_even_k_stride3_pad_other),
        cmocka_unit_test(test_dw_tiled_stride1),
        cmocka_unit_test(test_dw_tiled_stride2),
        cmocka_unit_test(test_dw_small_planes_large_kernels),
        cmocka_unit_test(test_dw_direct_weight_gradient),
        cmocka_unit_test(test_dw_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("depthwise", tests, tu_setup_device, tu_teardown_device);
}
