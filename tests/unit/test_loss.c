/* Softmax cross-entropy losses: per-sample losses against the double
 * reference, gradients against central finite differences of
 * scale * sum(losses), beta accumulation, label smoothing, large K and
 * extreme logits, invalid labels, bad arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/loss.h"
#include "ref/ref_loss.h"

/* One loss problem on the host; all values are floats held in doubles. */
typedef struct loss_case {
    int n, k;
    int soft; /* 0: labels, 1: teacher logits */
    double smoothing;
    double scale;
    double *logits;  /* (N, K) */
    double *labels;  /* (N) class indices, when !soft */
    double *teacher; /* (N, K), when soft */
    double *losses;  /* (N) reference output */
} loss_case;

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
    for (size_t i = 0; i < n; i++)
        v[i] = (float)v[i];
    return v;
}

/* Random case with logits uniform in offset +- spread. */
static loss_case case_make(manta_rng *rng, int n, int k, int soft, double smoothing, double offset,
                           double spread)
{
    loss_case c = {n, k, soft, smoothing, 1.0 / n, NULL, NULL, NULL, NULL};
    size_t nk = (size_t)n * (size_t)k;
    c.logits = fill(rng, nk, offset - spread, offset + spread);
    c.teacher = fill(rng, nk, -3, 3);
    c.labels = zeros((size_t)n);
    for (int r = 0; r < n; r++)
        c.labels[r] = tu_rand_int(rng, 0, k - 1);
    c.losses = zeros((size_t)n);
    return c;
}

static void case_free(loss_case *c)
{
    free(c->logits), free(c->teacher), free(c->labels), free(c->losses);
}

static void ref_losses(loss_case *c)
{
    if (c->soft)
        ref_soft_xent(c->n, c->k, c->logits, c->teacher, c->losses);
    else
        ref_xent(c->n, c->k, c->smoothing, c->logits, c->labels, c->losses);
}

/* scale * sum_n loss_n, whose gradient the ops write. */
static double total_loss(void *p)
{
    loss_case *c = p;
    ref_losses(c);
    double s = 0;
    for (int r = 0; r < c->n; r++)
        s += c->losses[r];
    return c->scale * s;
}

/* Run one op on the device: losses and dlogits (dlogits holds its starting
 * values on entry, the result on return). */
static void run_op(mcl_dev *d, const loss_case *c, double *losses, double *dlogits, float beta)
{
    size_t nk = (size_t)c->n * (size_t)c->k;
    mview vz = tu_alloc_from(d, c->logits, nk), vl = tu_alloc(d, (size_t)c->n);
    mview vg = tu_alloc_from(d, dlogits, nk);
    mview vt =
        c->soft ? tu_alloc_from(d, c->teacher, nk) : tu_alloc_from(d, c->labels, (size_t)c->n);
    if (c->soft)
        TU_OK(d,
              nn_soft_xent_forward_backward(d, c->n, c->k, vz, vt, vl, vg, (float)c->scale, beta));
    else
        TU_OK(d, nn_xent_forward_backward(d, c->n, c->k, (float)c->smoothing, vz, vt, vl, vg,
                                          (float)c->scale, beta));
    tu_download(d, vl, losses, (size_t)c->n);
    tu_download(d, vg, dlogits, nk);
    tu_free(d, vz), tu_free(d, vl), tu_free(d, vg), tu_free(d, vt);
}

/* Forward and gradient (beta 0, dlogits starting as NaN: not read) of one
 * case against the reference and finite differences. */
static void check_case(mcl_dev *d, loss_case *c)
{
    size_t nk = (size_t)c->n * (size_t)c->k;
    double *got_l = malloc((size_t)c->n * sizeof *got_l), *got_g = malloc(nk * sizeof *got_g);
    double *fd = malloc(nk * sizeof *fd);
    assert_true(got_l && got_g && fd);
    for (size_t i = 0; i < nk; i++)
        got_g[i] = NAN;
    run_op(d, c, got_l, got_g, 0.0f);
    ref_losses(c);
    tu_assert_close(got_l, c->losses, (size_t)c->n, 1e-4, c->soft ? "soft loss" : "loss");
    tu_fd_grad(total_loss, c, c->logits, nk, 1e-4, fd);
    tu_assert_close(got_g, fd, nk, 1e-3, c->soft ? "soft dlogits" : "dlogits");
    free(got_l), free(got_g), free(fd);
}

static const int KS[] = {1, 2, 10, 37};

static void check_ks(void **state, int soft, double smoothing, uint64_t stream)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 44, stream);
    for (int t = 0; t < 4; t++) {
        loss_case c = case_make(&rng, tu_rand_int(&rng, 1, 5), KS[t], soft, smoothing, 0, 4);
        check_case(d, &c);
        case_free(&c);
    }
}

static void test_xent_without_smoothing(void **s) { check_ks(s, 0, 0.0, 1); }
static void test_xent_label_smoothing_0_1(void **s) { check_ks(s, 0, 0.1, 2); }
static void test_soft_xent_matches_reference(void **s) { check_ks(s, 1, 0.0, 3); }

/* K = 1000, and rows far from zero (1e4 +- 30) or widely spread (+- 80):
 * the max subtraction must keep everything finite and accurate. */
static void test_xent_large_k_and_extreme_logits(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 44, 4);
    loss_case c = case_make(&rng, 3, 1000, 0, 0.1, 0, 3);
    check_case(d, &c);
    case_free(&c);
    c = case_make(&rng, 2, 37, 0, 0.0, 1e4, 30);
    check_case(d, &c);
    case_free(&c);
    c = case_make(&rng, 2, 37, 1, 0.0, 0, 80);
    check_case(d, &c);
    case_free(&c);
}

/* A label loss (beta 0) and a distillation loss (beta 1) summed into one
 * gradient; a beta of 1 must add onto what dlogits holds. */
static void test_losses_accumulate_with_beta_one(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 44, 5);
    loss_case hard = case_make(&rng, 4, 10, 0, 0.1, 0, 4);
    loss_case soft = case_make(&rng, 4, 10, 1, 0.0, 0, 4);
    memcpy(soft.logits, hard.logits, 40 * sizeof *soft.logits);
    soft.scale = 0.7;
    double got_l[4], g[40], fd_hard[40], fd_soft[40], want[40];
    for (int i = 0; i < 40; i++)
        g[i] = NAN;
    run_op(d, &hard, got_l, g, 0.0f);
    run_op(d, &soft, got_l, g, 1.0f);
    tu_fd_grad(total_loss, &hard, hard.logits, 40, 1e-4, fd_hard);
    tu_fd_grad(total_loss, &soft, soft.logits, 40, 1e-4, fd_soft);
    for (int i = 0; i < 40; i++)
        want[i] = fd_hard[i] + fd_soft[i];
    tu_assert_close(g, want, 40, 1e-3, "summed gradient");

    /* beta other than 0 or 1 scales what was there */
    double g0[40];
    for (int i = 0; i < 40; i++)
        g[i] = g0[i] = (float)(0.25 * (i % 7) - 0.5);
    run_op(d, &hard, got_l, g, 0.5f);
    for (int i = 0; i < 40; i++)
        want[i] = 0.5 * g0[i] + fd_hard[i];
    tu_assert_close(g, want, 40, 1e-3, "beta 0.5");
    case_free(&hard), case_free(&soft);
}

/* Labels outside [0, K), fractional or NaN: NaN loss and gradient for their
 * rows, the other rows exact, nothing written past dlogits. */
static void test_xent_invalid_label_gives_nan_loss(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 44, 6);
    enum { N = 6, K = 10, GUARD = 64 };
    loss_case c = case_make(&rng, N, K, 0, 0.1, 0, 4);
    const double bad[] = {-1, K, 2.5, NAN, 1e9};
    for (int r = 0; r < 5; r++)
        c.labels[r] = bad[r];
    mview vz = tu_alloc_from(d, c.logits, N * K), vy = tu_alloc_from(d, c.labels, N);
    mview vl = tu_alloc(d, N), vg = tu_alloc(d, N * K + GUARD);
    TU_OK(d, mcl_fill(d, vg, 7.0f, N * K + GUARD));
    TU_OK(d, nn_xent_forward_backward(d, N, K, 0.1f, vz, vy, vl, vg, 1.0f, 0.0f));
    double losses[N], g[N * K + GUARD];
    tu_download(d, vl, losses, N);
    tu_download(d, vg, g, N * K + GUARD);
    for (int r = 0; r < 5; r++) {
        assert_true(isnan(losses[r]));
        for (int i = 0; i < K; i++)
            assert_true(isnan(g[r * K + i]));
    }
    for (int i = N * K; i < N * K + GUARD; i++)
        assert_true(g[i] == 7.0);
    /* the valid last row against the reference */
    ref_xent(1, K, 0.1, c.logits + (N - 1) * K, c.labels + N - 1, c.losses);
    assert_false(isnan(losses[N - 1]));
    tu_assert_close(losses + N - 1, c.losses, 1, 1e-4, "valid row beside invalid ones");
    tu_free(d, vz), tu_free(d, vy), tu_free(d, vl), tu_free(d, vg);
    case_free(&c);
}

static void expect_invalid(mcl_dev *d, manta_status st, const char *field)
{
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("message '%s' does not name '%s'", msg, field);
}

static void test_loss_rejects_bad_arguments(void **state)
{
    mcl_dev *d = *state;
    mview v = tu_alloc(d, 16);
    expect_invalid(d, nn_xent_forward_backward(d, 2, 2, -0.1f, v, v, v, v, 1, 0), "smoothing");
    expect_invalid(d, nn_xent_forward_backward(d, 2, 2, 1.0f, v, v, v, v, 1, 0), "smoothing");
    expect_invalid(d, nn_xent_forward_backward(d, 2, 2, NAN, v, v, v, v, 1, 0), "smoothing");
    expect_invalid(d, nn_xent_forward_backward(d, 0, 2, 0.0f, v, v, v, v, 1, 0), "n is 0");
    expect_invalid(d, nn_xent_forward_backward(d, 2, 0, 0.0f, v, v, v, v, 1, 0), "k is 0");
    expect_invalid(d, nn_soft_xent_forward_backward(d, -1, 2, v, v, v, v, 1, 0), "n is -1");
    expect_invalid(d, nn_soft_xent_forward_backward(d, 2, -5, v, v, v, v, 1, 0), "k is -5");
    tu_free(d, v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xent_without_smoothing),
        cmocka_unit_test(test_xent_label_smoothing_0_1),
        cmocka_unit_test(test_soft_xent_matches_reference),
        cmocka_unit_test(test_xent_large_k_and_extreme_logits),
        cmocka_unit_test(test_losses_accumulate_with_beta_one),
        cmocka_unit_test(test_xent_invalid_label_gives_nan_loss),
        cmocka_unit_test(test_loss_rejects_bad_arguments),
    };
    return cmocka_run_group_tests_name("loss", tests, tu_setup_device, tu_teardown_device);
}
