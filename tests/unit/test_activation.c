/* Activations: device forward against the double reference, device backward
 * against central finite differences of the reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/activation.h"
#include "ref/ref_act.h"

typedef struct fd_ctx {
    int kind;
    double slope; /* leaky ReLU */
    double *x, *y, *r;
    size_t n;
} fd_ctx;

static double act_loss(void *p)
{
    fd_ctx *c = p;
    ref_act_forward_slope(c->kind, c->slope, c->x, c->y, c->n);
    return tu_dot(c->y, c->r, c->n);
}

/* The forward and backward under test: the plain calls (a leaky ReLU's slope then
 * NN_ACT_LEAKY_SLOPE) or the _slope ones with @p slope. */
static manta_status act_fwd(mcl_dev *d, nn_act kind, bool plain, float slope, mview x, mview y,
                            size_t n)
{
    return plain ? nn_act_forward(d, kind, x, y, n) : nn_act_forward_slope(d, kind, slope, x, y, n);
}

static manta_status act_bwd(mcl_dev *d, nn_act kind, bool plain, float slope, mview x, mview dy,
                            mview dx, size_t n)
{
    return plain ? nn_act_backward(d, kind, x, dy, dx, n)
                 : nn_act_backward_slope(d, kind, slope, x, dy, dx, n);
}

/* With @p plain, the plain calls (@p slope must then be NN_ACT_LEAKY_SLOPE). */
static void check_act_slope(void **state, nn_act kind, bool plain, double slope)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 1234, (uint64_t)kind);
    size_t n = (size_t)tu_rand_int(&rng, 1, 3000); /* odd sizes included */
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *r = malloc(n * sizeof *r);
    double *got = malloc(n * sizeof *got), *fd = malloc(n * sizeof *fd);
    assert_true(x && y && r && got && fd);
    tu_fill_uniform(&rng, x, n, -8, 8);
    tu_fill_uniform(&rng, r, n, -1, 1);
    const double kinks[] = {-3, 0, 3, 6};
    tu_avoid_kinks(x, n, kinks, 4, 1e-2);

    mview vx = tu_alloc_from(d, x, n), vy = tu_alloc(d, n), vr = tu_alloc_from(d, r, n);
    mview vdx = tu_alloc(d, n);
    float fs = (float)slope;
    TU_OK(d, act_fwd(d, kind, plain, fs, vx, vy, n));
    tu_download(d, vy, got, n);
    ref_act_forward_slope((int)kind, (double)fs, x, y, n);
    tu_assert_close(got, y, n, 1e-4, space_act_name(kind));

    TU_OK(d, act_bwd(d, kind, plain, fs, vx, vr, vdx, n));
    tu_download(d, vdx, got, n);
    fd_ctx c = {(int)kind, (double)fs, x, y, r, n};
    tu_fd_grad(act_loss, &c, x, n, 1e-4, fd);
    tu_assert_close(got, fd, n, 1e-3, "activation gradient");

    /* in place: y aliases x, dx aliases dy */
    TU_OK(d, act_fwd(d, kind, plain, fs, vx, vx, n));
    tu_download(d, vx, got, n);
    tu_assert_close(got, y, n, 1e-4, "in-place forward");
    tu_upload(d, vx, x, n);
    TU_OK(d, act_bwd(d, kind, plain, fs, vx, vr, vr, n));
    tu_download(d, vr, got, n);
    tu_assert_close(got, fd, n, 1e-3, "in-place backward");

    tu_free(d, vx), tu_free(d, vy), tu_free(d, vr), tu_free(d, vdx);
    free(x), free(y), free(r), free(got), free(fd);
}

static void check_act(void **state, nn_act kind)
{
    check_act_slope(state, kind, true, NN_ACT_LEAKY_SLOPE);
}

static void test_relu(void **s) { check_act(s, NN_ACT_RELU); }
static void test_relu6(void **s) { check_act(s, NN_ACT_RELU6); }
static void test_hswish(void **s) { check_act(s, NN_ACT_HSWISH); }
static void test_hsigmoid(void **s) { check_act(s, NN_ACT_HSIGMOID); }
static void test_sigmoid(void **s) { check_act(s, NN_ACT_SIGMOID); }

/* Leaky ReLU: DispNetC's slope 0.1 through the plain calls, other slopes (steeper, zero,
 * negative) through the _slope calls; the gradient at exactly 0 is the slope (PyTorch's
 * choice), and a slope that is not finite is refused. */
static void test_leaky_relu(void **s)
{
    check_act(s, NN_ACT_LEAKY_RELU);
    check_act_slope(s, NN_ACT_LEAKY_RELU, false, 0.2);
    check_act_slope(s, NN_ACT_LEAKY_RELU, false, 0.0);
    check_act_slope(s, NN_ACT_LEAKY_RELU, false, -0.5);
    assert_string_equal(space_act_name(NN_ACT_LEAKY_RELU), "leaky-relu");

    mcl_dev *d = *s;
    const double x[3] = {0.0, -0.0, 2.0}, dy[3] = {1.0, -3.0, 1.5};
    const double want[3] = {0.25, -0.75, 1.5};
    double got[3];
    mview vx = tu_alloc_from(d, x, 3), vdy = tu_alloc_from(d, dy, 3), vdx = tu_alloc(d, 3);
    TU_OK(d, nn_act_backward_slope(d, NN_ACT_LEAKY_RELU, 0.25f, vx, vdy, vdx, 3));
    tu_download(d, vdx, got, 3);
    tu_assert_close(got, want, 3, 1e-6, "leaky ReLU gradient at 0");
    const float bad[2] = {NAN, INFINITY};
    for (int i = 0; i < 2; i++) {
        manta_status st = nn_act_forward_slope(d, NN_ACT_LEAKY_RELU, bad[i], vx, vdx, 3);
        assert_int_equal(st, MANTA_ERR_INVALID_ARG);
        const char *msg = manta_err_msg(mcl_err(d), st);
        assert_non_null(strstr(msg, "activation forward: leaky ReLU slope"));
        manta_err_clear(mcl_err(d));
        st = nn_act_backward_slope(d, NN_ACT_LEAKY_RELU, bad[i], vx, vdy, vdx, 3);
        assert_int_equal(st, MANTA_ERR_INVALID_ARG);
        msg = manta_err_msg(mcl_err(d), st);
        assert_non_null(strstr(msg, "activation backward: leaky ReLU slope"));
        manta_err_clear(mcl_err(d));
    }
    tu_free(d, vx), tu_free(d, vdy), tu_free(d, vdx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu),    cmocka_unit_test(test_relu6),
        cmocka_unit_test(test_hswish),  cmocka_unit_test(test_hsigmoid),
        cmocka_unit_test(test_sigmoid), cmocka_unit_test(test_leaky_relu),
    };
    return cmocka_run_group_tests_name("activation", tests, tu_setup_device, tu_teardown_device);
}
