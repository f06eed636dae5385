/* Activations: device forward against the double reference, device backward
 * against central finite differences of the reference. */
#include <stdlib.h>

#include "common/testutil.h"
#include "nn/activation.h"
#include "ref/ref_act.h"

typedef struct fd_ctx {
    int kind;
    double *x, *y, *r;
    size_t n;
} fd_ctx;

static double act_loss(void *p)
{
    fd_ctx *c = p;
    ref_act_forward(c->kind, c->x, c->y, c->n);
    return tu_dot(c->y, c->r, c->n);
}

static void check_act(void **state, nn_act kind)
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
    TU_OK(d, nn_act_forward(d, kind, vx, vy, n));
    tu_download(d, vy, got, n);
    ref_act_forward((int)kind, x, y, n);
    tu_assert_close(got, y, n, 1e-4, nn_act_name(kind));

    TU_OK(d, nn_act_backward(d, kind, vx, vr, vdx, n));
    tu_download(d, vdx, got, n);
    fd_ctx c = {(int)kind, x, y, r, n};
    tu_fd_grad(act_loss, &c, x, n, 1e-4, fd);
    tu_assert_close(got, fd, n, 1e-3, "activation gradient");

    /* in place: y aliases x, dx aliases dy */
    TU_OK(d, nn_act_forward(d, kind, vx, vx, n));
    tu_download(d, vx, got, n);
    tu_assert_close(got, y, n, 1e-4, "in-place forward");
    tu_upload(d, vx, x, n);
    TU_OK(d, nn_act_backward(d, kind, vx, vr, vr, n));
    tu_download(d, vr, got, n);
    tu_assert_close(got, fd, n, 1e-3, "in-place backward");

    tu_free(d, vx), tu_free(d, vy), tu_free(d, vr), tu_free(d, vdx);
    free(x), free(y), free(r), free(got), free(fd);
}

static void test_relu(void **s) { check_act(s, NN_ACT_RELU); }
static void test_relu6(void **s) { check_act(s, NN_ACT_RELU6); }
static void test_hswish(void **s) { check_act(s, NN_ACT_HSWISH); }
static void test_hsigmoid(void **s) { check_act(s, NN_ACT_HSIGMOID); }
static void test_sigmoid(void **s) { check_act(s, NN_ACT_SIGMOID); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu),      cmocka_unit_test(test_relu6),
        cmocka_unit_test(test_hswish),    cmocka_unit_test(test_hsigmoid),
        cmocka_unit_test(test_sigmoid),
    };
    return cmocka_run_group_tests_name("activation", tests, tu_setup_device, tu_teardown_device);
}
