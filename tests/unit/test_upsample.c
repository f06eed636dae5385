/* Bilinear upsampling by an integer factor (align_corners=False): the device forward
 * against the double reference and against values PyTorch's F.interpolate gives, the
 * backward (a gather) against central finite differences of the reference (loss =
 * sum(y * r)) and against its closed-form transpose; odd sizes, factors 1 to 4, a scale
 * (disparity units), bad shapes. Every case runs the CPU and the GPU kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "common/variants.h"
#include "nn/upsample.h"
#include "ref/stereo_ref.h"

/* Offset in floats of every device view inside its buffer. */
#define VIEW_OFF 7

typedef struct fd_ctx {
    const nn_upsample_shape *s;
    double scale;
    double *x, *y, *r; /* x (N, C, H, W); y, r (N, C, fH, fW) */
    size_t ny;
} fd_ctx;

static double up_loss(void *p)
{
    fd_ctx *c = p;
    ref_upsample_forward(c->s, c->scale, c->x, c->y);
    return tu_dot(c->y, c->r, c->ny);
}

static void close_to(mcl_dev *d, const double *got, const double *want, size_t n, double rtol,
                     const char *what, const nn_upsample_shape *s, double scale)
{
    char msg[160];
    snprintf(msg, sizeof msg, "upsample %s (%s kernels, n%d c%d h%d w%d factor %d scale %g)", what,
             tu_variant_name(d), s->n, s->c, s->h, s->w, s->factor, scale);
    tu_assert_close(got, want, n, rtol, msg);
}

static void check_up(mcl_dev *d, const nn_upsample_shape *s, double scale, uint64_t seed, bool fd)
{
    manta_rng rng;
    manta_rng_seed(&rng, 99, seed);
    assert_int_equal(nn_upsample_out_h(s), s->h * s->factor);
    assert_int_equal(nn_upsample_out_w(s), s->w * s->factor);
    size_t nx = (size_t)s->n * s->c * s->h * s->w;
    size_t ny = nx * (size_t)s->factor * (size_t)s->factor;
    double *x = tu_doubles(nx), *y = tu_doubles(ny), *r = tu_doubles(ny), *got = tu_doubles(ny);
    double *gx = tu_doubles(nx);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_fill_uniform(&rng, r, ny, -1, 1);
    mview vx = tu_view_at(d, VIEW_OFF, x, nx), vy = tu_view_at(d, VIEW_OFF, NULL, ny),
          vr = tu_view_at(d, VIEW_OFF, r, ny);
    mview vdx = tu_view_at(d, VIEW_OFF, NULL, nx);

    TU_OK(d, mcl_fill(d, vy, 321.0f, ny));
    TU_OK(d, nn_upsample_forward(d, s, (float)scale, vx, vy));
    tu_download(d, vy, got, ny);
    ref_upsample_forward(s, scale, x, y);
    close_to(d, got, y, ny, 1e-5, "forward", s, scale);

    ref_upsample_backward(s, scale, r, gx);
    if (fd) {
        fd_ctx c = {s, scale, x, y, r, ny};
        double *fdx = tu_doubles(nx);
        tu_fd_grad(up_loss, &c, x, nx, 1e-3, fdx);
        close_to(d, gx, fdx, nx, 1e-6, "reference transpose", s, scale);
        free(fdx);
    }
    TU_OK(d, mcl_fill(d, vdx, 999.0f, nx)); /* overwritten */
    TU_OK(d, nn_upsample_backward(d, s, (float)scale, vr, vdx));
    tu_download(d, vdx, got, nx);
    close_to(d, got, gx, nx, fd ? 1e-4 : 1e-5, "dx", s, scale);

    tu_free(d, vx), tu_free(d, vy), tu_free(d, vr), tu_free(d, vdx);
    free(x), free(y), free(r), free(got), free(gx);
}

static void check_all(void **state, const nn_upsample_shape *shapes, size_t n, double scale,
                      bool fd)
{
    tu_variant_devs *v = *state;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (size_t i = 0; i < n; i++)
            check_up(v->dev[k], &shapes[i], scale, 10 * i + (size_t)k, fd);
}

/* Shapes: n, c, h, w, factor */

static void test_up_x2_odd_sizes(void **st)
{
    static const nn_upsample_shape shapes[] = {
        {2, 3, 5, 7, 2}, {1, 1, 1, 1, 2}, {1, 2, 1, 6, 2}, {3, 1, 9, 2, 2}};
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], 1.0, true);
}

static void test_up_other_factors(void **st)
{
    static const nn_upsample_shape shapes[] = {
        {1, 2, 4, 3, 3}, {2, 1, 3, 5, 4}, {1, 2, 3, 5, 1}, {1, 1, 2, 2, 5}};
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], 1.0, true);
}

/* A disparity in pixels of its coarse map, upsampled into pixels of the finer one. */
static void test_up_scaled_for_disparity(void **st)
{
    static const nn_upsample_shape shapes[] = {{2, 1, 6, 11, 2}, {1, 1, 5, 4, 4}};
    check_all(st, shapes, 1, 2.0, true);
    check_all(st, shapes + 1, 1, 4.0, true);
    check_all(st, shapes, 1, -0.5, true);
}

/* Planes of a decoder level: against the closed-form transpose. */
static void test_up_larger_planes(void **st)
{
    static const nn_upsample_shape shapes[] = {{2, 8, 24, 40, 2}, {1, 3, 17, 33, 3}};
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], 1.0, false);
}

/* F.interpolate(torch.tensor([[[[1., 2.], [3., 4.]]]]), scale_factor=2, mode='bilinear',
 * align_corners=False), and a 1x3 row at factor 3 (source coordinates -1/3, 0, 1/3, ...). */
static void test_up_matches_pytorch_values(void **st)
{
    static const double want2[16] = {1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5,
                                     2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0};
    static const double x2[4] = {1, 2, 3, 4};
    static const double x3[3] = {0, 3, 6};
    /* columns: src = (o + 0.5)/3 - 0.5 clamped at 0: 0, 0, 1/3, 2/3, 1, 4/3, 5/3, 2, 2 */
    static const double want3[9] = {0, 0, 1, 2, 3, 4, 5, 6, 6};
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++) {
        mcl_dev *d = v->dev[k];
        double got[27];
        nn_upsample_shape s2 = {1, 1, 2, 2, 2}, s3 = {1, 1, 1, 3, 3};
        mview vx = tu_alloc_from(d, x2, 4), vy = tu_alloc(d, 27);
        TU_OK(d, nn_upsample_forward(d, &s2, 1.0f, vx, vy));
        tu_download(d, vy, got, 16);
        close_to(d, got, want2, 16, 1e-6, "PyTorch 2x2 x2", &s2, 1.0);
        tu_free(d, vx);
        vx = tu_alloc_from(d, x3, 3);
        TU_OK(d, nn_upsample_forward(d, &s3, 1.0f, vx, vy));
        tu_download(d, vy, got, 27);
        for (int row = 0; row < 3; row++) /* the single input row repeats */
            close_to(d, got + 9 * row, want3, 9, 1e-6, "PyTorch 1x3 x3", &s3, 1.0);
        tu_free(d, vx), tu_free(d, vy);
    }
}

static void expect_invalid(mcl_dev *d, const nn_upsample_shape *s, float scale, const char *what)
{
    mview m = tu_alloc(d, 16);
    manta_status st = nn_upsample_forward(d, s, scale, m, m);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, "upsample forward") || !strstr(msg, what))
        fail_msg("forward message '%s' does not name the op and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
    st = nn_upsample_backward(d, s, scale, m, m);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, "upsample backward") || !strstr(msg, what))
        fail_msg("backward message '%s' does not name the op and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
    tu_free(d, m);
}

static void test_up_bad_shapes_rejected(void **st)
{
    tu_variant_devs *v = *st;
    mcl_dev *d = v->dev[1];
    const nn_upsample_shape ok = {1, 2, 3, 3, 2};
    nn_upsample_shape s = ok;
    s.factor = 0;
    expect_invalid(d, &s, 1.0f, "field factor");
    assert_int_equal(nn_upsample_out_h(&s), 0);
    s = ok, s.h = 0;
    expect_invalid(d, &s, 1.0f, "field h");
    s = ok, s.c = -1;
    expect_invalid(d, &s, 1.0f, "field c");
    s = ok, s.w = 1 << 20, s.factor = 1 << 12;
    expect_invalid(d, &s, 1.0f, "output width factor*w");
    assert_int_equal(nn_upsample_out_w(&s), 0);
    expect_invalid(d, &ok, NAN, "scale");
    expect_invalid(d, &ok, INFINITY, "scale");
    expect_invalid(d, NULL, 1.0f, "shape is NULL");
    mview m = tu_alloc(d, 64), none = {NULL, 0};
    assert_int_equal(nn_upsample_forward(d, &ok, 1.0f, m, none), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "y has no buffer"));
    assert_int_equal(nn_upsample_backward(d, &ok, 1.0f, none, m), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "dy has no buffer"));
    manta_err_clear(mcl_err(d));
    tu_free(d, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_up_x2_odd_sizes),
        cmocka_unit_test(test_up_other_factors),
        cmocka_unit_test(test_up_scaled_for_disparity),
        cmocka_unit_test(test_up_larger_planes),
        cmocka_unit_test(test_up_matches_pytorch_values),
        cmocka_unit_test(test_up_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("upsample", tests, tu_setup_variants, tu_teardown_variants);
}
