/* OFA's elastic kernel transform against a plain-C reference and finite
 * differences, for 7 -> 5, 5 -> 3 and an odd channel count. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "elastic/elastic.h"

static void ref_ktrans(int c, int K, int k, const double *w, const double *m, double *wk)
{
    int kk = k * k, off = K / 2 - k / 2;
    for (int ch = 0; ch < c; ch++)
        for (int i = 0; i < kk; i++) {
            double s = 0;
            for (int j = 0; j < kk; j++)
                s += w[ch * K * K + (off + j / k) * K + off + j % k] * m[i * kk + j];
            wk[ch * kk + i] = s;
        }
}

typedef struct fd_ctx {
    int c, K, k;
    double *w, *m, *wk, *r;
} fd_ctx;

static double loss(void *p)
{
    fd_ctx *x = p;
    ref_ktrans(x->c, x->K, x->k, x->w, x->m, x->wk);
    return tu_dot(x->wk, x->r, (size_t)x->c * x->k * x->k);
}

static void check(void **state, int c, int K, int k)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, (uint64_t)(c * 100 + K * 10 + k), 0);
    size_t nw = (size_t)c * K * K, nk = (size_t)c * k * k, nm = (size_t)k * k * k * k;
    double *w = malloc(nw * sizeof *w), *m = malloc(nm * sizeof *m), *wk = malloc(nk * sizeof *wk);
    double *r = malloc(nk * sizeof *r), *got = malloc((nw > nm ? nw : nm) * sizeof *got);
    double *fdw = malloc(nw * sizeof *fdw), *fdm = malloc(nm * sizeof *fdm);
    double *dw0 = malloc(nw * sizeof *dw0), *dm0 = malloc(nm * sizeof *dm0);
    assert_true(w && m && wk && r && got && fdw && fdm && dw0 && dm0);
    tu_fill_uniform(&rng, w, nw, -1, 1);
    tu_fill_uniform(&rng, m, nm, -0.5, 0.5);
    tu_fill_uniform(&rng, r, nk, -1, 1);
    tu_fill_uniform(&rng, dw0, nw, -1, 1); /* gradients accumulate onto these */
    tu_fill_uniform(&rng, dm0, nm, -1, 1);
    mview vw = tu_alloc_from(d, w, nw), vm = tu_alloc_from(d, m, nm), vwk = tu_alloc(d, nk);
    mview vr = tu_alloc_from(d, r, nk), vdw = tu_alloc_from(d, dw0, nw),
          vdm = tu_alloc_from(d, dm0, nm);

    TU_OK(d, ofa_ktrans_forward(d, c, K, k, vw, vm, vwk));
    tu_download(d, vwk, got, nk);
    ref_ktrans(c, K, k, w, m, wk);
    tu_assert_close(got, wk, nk, 1e-4, "transformed kernel");

    TU_OK(d, ofa_ktrans_backward(d, c, K, k, vw, vm, vr, vdw, vdm));
    fd_ctx x = {c, K, k, w, m, wk, r};
    tu_fd_grad(loss, &x, w, nw, 1e-4, fdw);
    tu_fd_grad(loss, &x, m, nm, 1e-4, fdm);
    for (size_t i = 0; i < nw; i++)
        fdw[i] += dw0[i];
    for (size_t i = 0; i < nm; i++)
        fdm[i] += dm0[i];
    tu_download(d, vdw, got, nw);
    tu_assert_close(got, fdw, nw, 1e-3, "weight gradient (accumulated)");
    tu_download(d, vdm, got, nm);
    tu_assert_close(got, fdm, nm, 1e-3, "matrix gradient (accumulated)");
    tu_free(d, vw), tu_free(d, vm), tu_free(d, vwk), tu_free(d, vr), tu_free(d, vdw),
        tu_free(d, vdm);
    free(w), free(m), free(wk), free(r), free(got), free(fdw), free(fdm), free(dw0), free(dm0);
}

static void test_ktrans_7_to_5(void **s) { check(s, 6, 7, 5); }
static void test_ktrans_5_to_3_odd_channels(void **s) { check(s, 13, 5, 3); }
static void test_ktrans_7_to_3_direct(void **s) { check(s, 3, 7, 3); }

/* With M = identity the transform is the plain centre crop. */
static void test_ktrans_identity_is_centre_crop(void **state)
{
    mcl_dev *d = *state;
    double w[2 * 49], m[625] = {0}, got[50];
    for (int i = 0; i < 98; i++)
        w[i] = i;
    for (int i = 0; i < 25; i++)
        m[i * 25 + i] = 1;
    mview vw = tu_alloc_from(d, w, 98), vm = tu_alloc_from(d, m, 625), vk = tu_alloc(d, 50);
    TU_OK(d, ofa_ktrans_forward(d, 2, 7, 5, vw, vm, vk));
    tu_download(d, vk, got, 50);
    assert_true(got[0] == 8 && got[4] == 12 && got[24] == 40 && got[25] == 57);
    assert_int_equal(ofa_ktrans_forward(d, 2, 5, 7, vw, vm, vk), MANTA_ERR_INVALID_ARG);
    assert_int_equal(ofa_ktrans_forward(d, 2, 7, 4, vw, vm, vk), MANTA_ERR_INVALID_ARG);
    tu_free(d, vw), tu_free(d, vm), tu_free(d, vk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ktrans_7_to_5),
        cmocka_unit_test(test_ktrans_5_to_3_odd_channels),
        cmocka_unit_test(test_ktrans_7_to_3_direct),
        cmocka_unit_test(test_ktrans_identity_is_centre_crop),
    };
    return cmocka_run_group_tests_name("elastic kernel", tests, tu_setup_device,
                                       tu_teardown_device);
}
