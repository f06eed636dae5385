/* Inverted dropout: the device mask equals the host rule, the kept fraction
 * is near 1 - p, backward applies the same mask (it is linear, so it equals
 * the finite-difference gradient exactly), and bad probabilities are refused. */
#include <math.h>
#include <stdlib.h>

#include "common/testutil.h"
#include "nn/dropout.h"

static void test_dropout_forward_backward(void **state)
{
    mcl_dev *d = *state;
    const size_t n = 100003;
    const float p = 0.3f;
    const uint64_t seed = 0x123456789abcULL;
    double *x = malloc(n * sizeof *x), *got = malloc(n * sizeof *got),
           *want = malloc(n * sizeof *want);
    assert_true(x && got && want);
    manta_rng r;
    manta_rng_seed(&r, 1, 1);
    tu_fill_uniform(&r, x, n, -2, 2);
    mview vx = tu_alloc_from(d, x, n), vy = tu_alloc(d, n);
    TU_OK(d, nn_dropout_forward(d, n, p, seed, vx, vy));
    tu_download(d, vy, got, n);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int k = nn_dropout_keep(seed, (uint32_t)i, p);
        kept += (size_t)k;
        want[i] = k ? x[i] / (1.0 - p) : 0.0;
    }
    tu_assert_close(got, want, n, 1e-6, "dropout forward");
    double frac = (double)kept / (double)n;
    assert_true(fabs(frac - 0.7) < 0.01);
    /* backward: the same mask on the gradient, in place */
    TU_OK(d, nn_dropout_backward(d, n, p, seed, vx, vx));
    tu_download(d, vx, got, n);
    tu_assert_close(got, want, n, 1e-6, "dropout backward");
    /* another seed gives another mask */
    size_t same = 0;
    for (size_t i = 0; i < 1000; i++)
        same += (size_t)(nn_dropout_keep(seed, (uint32_t)i, p) ==
                         nn_dropout_keep(seed + 1, (uint32_t)i, p));
    assert_true(same < 800);
    assert_int_equal(nn_dropout_forward(d, n, 1.0f, seed, vx, vy), MANTA_ERR_INVALID_ARG);
    assert_int_equal(nn_dropout_forward(d, n, -0.1f, seed, vx, vy), MANTA_ERR_INVALID_ARG);
    /* p = 0 is the identity */
    tu_upload(d, vx, x, n);
    TU_OK(d, nn_dropout_forward(d, n, 0.0f, seed, vx, vy));
    tu_download(d, vy, got, n);
    tu_assert_close(got, x, n, 1e-7, "p = 0");
    tu_free(d, vx), tu_free(d, vy);
    free(x), free(got), free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dropout_forward_backward)};
    return cmocka_run_group_tests_name("dropout", tests, tu_setup_device, tu_teardown_device);
}
