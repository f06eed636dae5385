/* Fully connected layer: forward against the double reference, backward
 * against central finite differences, accumulation into dw and db, a weight
 * matrix with a row stride wider than `in` (unused columns hold NaN and must
 * not be read or written), optional dx and db, bad shapes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/linear.h"
#include "ref/ref_linear.h"

/* One problem: host doubles and device copies. */
typedef struct lin_case {
    nn_linear_shape s;
    int ld;            /* row stride of w and dw */
    double *x, *w, *b; /* x (N, in), w (out, ld), b (out) */
    double *r, *y;     /* loss weights and output, (N, out) */
    int use_bias;
} lin_case;

static double *zeros(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

static double *fill(manta_rng *rng, size_t n, double lo, double hi)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    tu_fill_uniform(rng, v, n, lo, hi);
    return v;
}

/* Random case; columns in..ld-1 of w are NaN. */
static lin_case case_make(manta_rng *rng, int n, int in, int out, int w_ld)
{
    lin_case k = {{n, in, out, w_ld}, w_ld ? w_ld : in, NULL, NULL, NULL, NULL, NULL, 1};
    k.x = fill(rng, (size_t)n * in, -1, 1);
    k.w = fill(rng, (size_t)out * k.ld, -1, 1);
    for (int o = 0; o < out; o++)
        for (int i = in; i < k.ld; i++)
            k.w[(size_t)o * k.ld + i] = NAN;
    k.b = fill(rng, (size_t)out, -1, 1);
    k.r = fill(rng, (size_t)n * out, -1, 1);
    k.y = zeros((size_t)n * out);
    return k;
}

static void case_free(lin_case *k) { free(k->x), free(k->w), free(k->b), free(k->r), free(k->y); }

static double lin_loss(void *p)
{
    lin_case *k = p;
    ref_linear_forward(k->s.n, k->s.in, k->s.out, k->ld, k->x, k->w, k->use_bias ? k->b : NULL,
                       k->y);
    return tu_dot(k->y, k->r, (size_t)k->s.n * k->s.out);
}

/* Gradient of lin_loss over the first `in` columns of each of `rows` rows of
 * stride ld of param (the unused columns keep their NaN in fd). */
static void fd_strided(lin_case *k, double *param, int rows, int cols, int ld, double *fd)
{
    for (int o = 0; o < rows; o++)
        tu_fd_grad(lin_loss, k, param + (size_t)o * ld, (size_t)cols, 1e-4, fd + (size_t)o * ld);
}

/* Forward and backward of one case. dw and db start from random values
 * (accumulation), dw's unused columns hold NaN that must survive; dx and db
 * may be skipped. */
static void check_case(mcl_dev *d, manta_rng *rng, lin_case *k, int with_dx, int with_db)
{
    const int n = k->s.n, in = k->s.in, out = k->s.out, ld = k->ld;
    const size_t nx = (size_t)n * in, ny = (size_t)n * out, nw = (size_t)out * ld;
    double *got = zeros(nw > nx ? nw : nx), *fd = zeros(nw > nx ? nw : nx);
    double *dw0 = fill(rng, nw, -1, 1), *db0 = fill(rng, (size_t)out, -1, 1);
    for (int o = 0; o < out; o++)
        for (int i = in; i < ld; i++)
            dw0[(size_t)o * ld + i] = NAN;
    mview vx = tu_alloc_from(d, k->x, nx), vw = tu_alloc_from(d, k->w, nw);
    mview vb = tu_alloc_from(d, k->b, (size_t)out), vy = tu_alloc(d, ny);
    mview vdy = tu_alloc_from(d, k->r, ny), vdw = tu_alloc_from(d, dw0, nw);
    mview vdx = with_dx ? tu_alloc(d, nx) : (mview){NULL, 0};
    mview vdb = with_db ? tu_alloc_from(d, db0, (size_t)out) : (mview){NULL, 0};
    mview bias = k->use_bias ? vb : (mview){NULL, 0};

    TU_OK(d, nn_linear_forward(d, &k->s, vx, vw, bias, vy));
    lin_loss(k);
    tu_download(d, vy, got, ny);
    tu_assert_close(got, k->y, ny, 1e-4, k->use_bias ? "linear forward" : "linear, no bias");

    TU_OK(d, nn_linear_backward(d, &k->s, vx, vw, vdy, vdx, vdw, vdb));
    if (with_dx) {
        tu_fd_grad(lin_loss, k, k->x, nx, 1e-4, fd);
        tu_download(d, vdx, got, nx);
        tu_assert_close(got, fd, nx, 1e-3, "dx");
    }
    fd_strided(k, k->w, out, in, ld, fd);
    tu_download(d, vdw, got, nw);
    for (int o = 0; o < out; o++)
        for (int i = 0; i < ld; i++) {
            size_t j = (size_t)o * ld + i;
            if (i >= in) {
                assert_true(isnan(got[j])); /* untouched */
                got[j] = fd[j] = 0;
            } else {
                fd[j] += dw0[j];
            }
        }
    tu_assert_close(got, fd, nw, 1e-3, "dw (accumulated)");
    if (with_db) {
        tu_fd_grad(lin_loss, k, k->b, (size_t)out, 1e-4, fd);
        for (int o = 0; o < out; o++)
            fd[o] += db0[o];
        tu_download(d, vdb, got, (size_t)out);
        tu_assert_close(got, fd, (size_t)out, 1e-3, "db (accumulated)");
    }

    tu_free(d, vx), tu_free(d, vw), tu_free(d, vb), tu_free(d, vy), tu_free(d, vdy);
    tu_free(d, vdw), tu_free(d, vdx), tu_free(d, vdb);
    free(got), free(fd), free(dw0), free(db0);
}

/* n, in, out; the last spans several 4-row and 16-column blocks of the
 * kernels, each with a partial one */
static const int SHAPES[][3] = {{1, 3, 17},  {5, 17, 3}, {4, 40, 17},
                                {3, 17, 40}, {2, 1, 1},  {9, 70, 37}};

static void test_linear_forward_and_backward(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 43, 1);
    for (size_t t = 0; t < sizeof SHAPES / sizeof SHAPES[0]; t++) {
        lin_case k = case_make(&rng, SHAPES[t][0], SHAPES[t][1], SHAPES[t][2], 0);
        check_case(d, &rng, &k, 1, 1);
        case_free(&k);
    }
}

static void test_linear_without_bias(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 43, 2);
    lin_case k = case_make(&rng, 3, 17, 40, 0);
    k.use_bias = 0;
    check_case(d, &rng, &k, 1, 0);
    case_free(&k);
}

/* Top-left block of a wider stored matrix: rows of stride 40 (and 23), of
 * which only the first `in` floats are the layer's; the rest are NaN. */
static void test_linear_strided_weights_ignore_unused_columns(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 43, 3);
    lin_case k = case_make(&rng, 4, 17, 3, 40);
    check_case(d, &rng, &k, 1, 1);
    case_free(&k);
    k = case_make(&rng, 5, 3, 17, 23);
    check_case(d, &rng, &k, 1, 1);
    case_free(&k);
}

static void test_linear_backward_skips_dx_and_db(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 43, 4);
    lin_case k = case_make(&rng, 3, 17, 5, 20);
    check_case(d, &rng, &k, 0, 0);
    case_free(&k);
}

static void expect_invalid(mcl_dev *d, manta_status st, const char *field)
{
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("message '%s' does not name '%s'", msg, field);
}

static void test_linear_rejects_bad_shapes(void **state)
{
    mcl_dev *d = *state;
    mview v = tu_alloc(d, 16);
    expect_invalid(d, nn_linear_forward(d, &(nn_linear_shape){0, 2, 2, 0}, v, v, v, v), "shape n");
    expect_invalid(d, nn_linear_forward(d, &(nn_linear_shape){2, -3, 2, 0}, v, v, v, v),
                   "shape in");
    expect_invalid(d, nn_linear_backward(d, &(nn_linear_shape){2, 2, 0, 0}, v, v, v, v, v, v),
                   "shape out");
    expect_invalid(d, nn_linear_forward(d, &(nn_linear_shape){2, 4, 2, 3}, v, v, v, v),
                   "shape w_ld");
    expect_invalid(d, nn_linear_backward(d, NULL, v, v, v, v, v, v), "shape");
    tu_free(d, v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_forward_and_backward),
        cmocka_unit_test(test_linear_without_bias),
        cmocka_unit_test(test_linear_strided_weights_ignore_unused_columns),
        cmocka_unit_test(test_linear_backward_skips_dx_and_db),
        cmocka_unit_test(test_linear_rejects_bad_shapes),
    };
    return cmocka_run_group_tests_name("linear", tests, tu_setup_device, tu_teardown_device);
}
