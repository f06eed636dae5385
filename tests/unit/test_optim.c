/* SGD with (Nesterov) momentum and weight decay against a plain-C reference,
 * and the warm-up + cosine learning-rate schedule. */
#include <math.h>
#include <stdlib.h>

#include "common/testutil.h"
#include "train/optim.h"

/* Reference: PyTorch's SGD update in double. */
static void ref_sgd(const optim_sgd *o, double lr, double scale, double *p, const double *g,
                    double *m, size_t n_decay, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double gi = scale * g[i] + (i < n_decay ? o->weight_decay * p[i] : 0.0);
        m[i] = o->momentum * m[i] + gi;
        p[i] -= lr * (o->nesterov ? gi + o->momentum * m[i] : m[i]);
    }
}

static void check_sgd(void **state, bool nesterov)
{
    mcl_dev *d = *state;
    manta_rng r;
    manta_rng_seed(&r, 7, nesterov);
    const size_t n = 1037, n_decay = 611;
    double *p = malloc(n * sizeof *p), *g = malloc(n * sizeof *g), *m = calloc(n, sizeof *m);
    double *got = malloc(n * sizeof *got);
    assert_true(p && g && m && got);
    tu_fill_uniform(&r, p, n, -1, 1);
    mview vp = tu_alloc_from(d, p, n), vg = tu_alloc(d, n), vm = tu_alloc_from(d, m, n);
    optim_sgd o = {0.9f, 0.01f, nesterov};
    for (int step = 0; step < 4; step++) {
        tu_fill_uniform(&r, g, n, -1, 1);
        tu_upload(d, vg, g, n);
        TU_OK(d, optim_sgd_step(d, &o, 0.05f, 0.5f, vp, vg, vm, n_decay, n));
        ref_sgd(&o, 0.05, 0.5, p, g, m, n_decay, n);
    }
    tu_download(d, vp, got, n);
    tu_assert_close(got, p, n, 1e-5, "parameters");
    tu_download(d, vm, got, n);
    tu_assert_close(got, m, n, 1e-5, "momentum");
    tu_free(d, vp), tu_free(d, vg), tu_free(d, vm);
    free(p), free(g), free(m), free(got);
}

static void test_sgd_nesterov_matches_reference(void **s) { check_sgd(s, true); }
static void test_sgd_plain_momentum_matches_reference(void **s) { check_sgd(s, false); }

/* With zero gradients only decayed parameters move. */
static void test_weight_decay_skips_tail(void **state)
{
    mcl_dev *d = *state;
    const size_t n = 40, n_decay = 24;
    double p[40], z[40] = {0}, got[40];
    for (size_t i = 0; i < n; i++)
        p[i] = 1.0;
    mview vp = tu_alloc_from(d, p, n), vg = tu_alloc_from(d, z, n), vm = tu_alloc_from(d, z, n);
    optim_sgd o = {0.9f, 0.1f, true};
    TU_OK(d, optim_sgd_step(d, &o, 1.0f, 1.0f, vp, vg, vm, n_decay, n));
    tu_download(d, vp, got, n);
    for (size_t i = 0; i < n; i++)
        assert_true(i < n_decay ? got[i] < 0.9 : got[i] == 1.0);
    assert_int_equal(optim_sgd_step(d, &o, 1.0f, 1.0f, vp, vg, vm, n + 1, n),
                     MANTA_ERR_INVALID_ARG);
    tu_free(d, vp), tu_free(d, vg), tu_free(d, vm);
}

static void test_lr_warmup_then_cosine(void **state)
{
    (void)state;
    lr_schedule s = {0.4f, 10, 110};
    assert_float_equal(train_lr_at(&s, 0), 0.04f, 1e-7);
    assert_float_equal(train_lr_at(&s, 9), 0.4f, 1e-7);
    assert_float_equal(train_lr_at(&s, 10), 0.4f, 1e-7); /* cosine starts at the peak */
    assert_float_equal(train_lr_at(&s, 60), 0.2f, 1e-6); /* half way: half the peak */
    assert_true(train_lr_at(&s, 109) > 0 && train_lr_at(&s, 109) < 1e-3f);
    assert_float_equal(train_lr_at(&s, 110), 0.0f, 0);
    for (long i = 11; i < 110; i++)
        assert_true(train_lr_at(&s, i) <= train_lr_at(&s, i - 1)); /* monotone decay */
    lr_schedule nw = {1.0f, 0, 4};
    assert_float_equal(train_lr_at(&nw, 0), 1.0f, 1e-7);
    assert_float_equal(train_lr_at(&nw, 2), 0.5f, 1e-6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd_nesterov_matches_reference),
        cmocka_unit_test(test_sgd_plain_momentum_matches_reference),
        cmocka_unit_test(test_weight_decay_skips_tail),
        cmocka_unit_test(test_lr_warmup_then_cosine),
    };
    return cmocka_run_group_tests_name("optimizer", tests, tu_setup_device, tu_teardown_device);
}
