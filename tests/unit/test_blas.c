/* mcl_sgemm and mcl_sgemm_batched against a double reference, every transpose
 * combination, operands at odd offsets inside larger buffers; and the same GEMMs with
 * CLBlast's index limit lowered (mcl_set_blas_index_limit) so that every operand lies
 * beyond it and is passed as a sub-buffer, as the activations of a buffer over 8 GiB
 * are on a GPU. */
#include <stdlib.h>
#include <string.h>

#include "cl/blas.h"
#include "common/testutil.h"

/* Offsets of A, B and C in their buffers: odd, and past the lowered limit below. */
#define OFF_A 4099
#define OFF_B 5003
#define OFF_C 6007
#define LOW_LIMIT 4096

typedef struct gemm_case {
    bool ta, tb;
    size_t m, n, k, lda, ldb, ldc, batch, sa, sb, sc;
} gemm_case;

static double *alloc_d(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

/* element (i, j) of op(X) for a row-major X with row stride ld */
static double at(const double *x, bool t, size_t i, size_t j, size_t ld)
{
    return t ? x[j * ld + i] : x[i * ld + j];
}

static void ref_gemm(const gemm_case *g, float alpha, const double *a, const double *b, float beta,
                     double *c)
{
    for (size_t q = 0; q < g->batch; q++)
        for (size_t i = 0; i < g->m; i++)
            for (size_t j = 0; j < g->n; j++) {
                double acc = 0;
                for (size_t p = 0; p < g->k; p++)
                    acc += at(a + q * g->sa, g->ta, i, p, g->lda) *
                           at(b + q * g->sb, g->tb, p, j, g->ldb);
                double *o = c + q * g->sc + i * g->ldc + j;
                *o = alpha * acc + beta * *o;
            }
}

/* Floats an operand of r x c (row stride ld) spans over the batch. */
static size_t extent(size_t r, size_t c, size_t ld, size_t stride, size_t batch)
{
    return (batch - 1) * stride + (r - 1) * ld + c;
}

/* Run @p g on the device with the index limit @p limit and compare with the reference. */
static void check(mcl_dev *d, const gemm_case *g, size_t limit, uint64_t seed)
{
    manta_rng rng;
    manta_rng_seed(&rng, 5, seed);
    size_t na = g->ta ? extent(g->k, g->m, g->lda, g->sa, g->batch)
                      : extent(g->m, g->k, g->lda, g->sa, g->batch);
    size_t nb = g->tb ? extent(g->n, g->k, g->ldb, g->sb, g->batch)
                      : extent(g->k, g->n, g->ldb, g->sb, g->batch);
    size_t nc = extent(g->m, g->n, g->ldc, g->sc, g->batch);
    double *a = alloc_d(na), *b = alloc_d(nb), *c = alloc_d(nc), *got = alloc_d(nc);
    tu_fill_uniform(&rng, a, na, -1, 1);
    tu_fill_uniform(&rng, b, nb, -1, 1);
    tu_fill_uniform(&rng, c, nc, -1, 1);
    mview va = mview_at(tu_alloc(d, OFF_A + na), OFF_A);
    mview vb = mview_at(tu_alloc(d, OFF_B + nb), OFF_B);
    mview vc = mview_at(tu_alloc(d, OFF_C + nc), OFF_C);
    tu_upload(d, va, a, na);
    tu_upload(d, vb, b, nb);
    tu_upload(d, vc, c, nc);

    mcl_set_blas_index_limit(d, limit);
    assert_int_equal(mcl_blas_index_limit(d), limit ? limit : MCL_BLAS_INDEX_LIMIT);
    TU_OK(d, mcl_sgemm_batched(d, g->ta, g->tb, g->m, g->n, g->k, 0.5f, va, g->lda, g->sa, vb,
                               g->ldb, g->sb, 2.0f, vc, g->ldc, g->sc, g->batch));
    mcl_set_blas_index_limit(d, 0);
    ref_gemm(g, 0.5f, a, b, 2.0f, c);
    tu_download(d, vc, got, nc);
    tu_assert_close(got, c, nc, 1e-5, limit ? "sgemm through sub-buffers" : "sgemm");

    tu_free(d, mview_at(va, 0)), tu_free(d, vb), tu_free(d, vc);
    free(a), free(b), free(c), free(got);
}

static const gemm_case cases[] = {
    /* ta, tb, m, n, k, lda, ldb, ldc, batch, stride a, b, c */
    {false, false, 7, 9, 13, 13, 9, 9, 1, 0, 0, 0},
    {true, false, 7, 9, 13, 7, 11, 10, 1, 0, 0, 0},
    {false, true, 5, 31, 17, 20, 17, 31, 1, 0, 0, 0},
    {true, true, 33, 3, 65, 40, 65, 3, 1, 0, 0, 0},
    /* batched, the way the split-K weight gradient runs: chunks of K side by side */
    {false, true, 4, 27, 32, 128, 128, 27, 4, 32, 32, 108},
    {false, false, 6, 5, 8, 8, 5, 5, 3, 48, 40, 30},
};

static void test_sgemm_against_reference(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(*state, &cases[i], 0, i);
}

static void test_sgemm_operands_beyond_index_limit(void **state)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check(*state, &cases[i], LOW_LIMIT, 100 + i);
}

/* One operand straddling the limit, the others below it. */
static void test_sgemm_one_operand_straddles_limit(void **state)
{
    const gemm_case g = {false, false, 16, 16, 16, 16, 16, 16, 1, 0, 0, 0};
    check(*state, &g, OFF_B + 100, 7);
}

static void test_sgemm_operand_larger_than_limit_refused(void **state)
{
    mcl_dev *d = *state;
    mview a = tu_alloc(d, 64 * 64), b = tu_alloc(d, 64 * 64), c = tu_alloc(d, 64 * 64);
    mcl_set_blas_index_limit(d, 1000);
    manta_status st = mcl_sgemm(d, false, false, 64, 64, 64, 1.0f, a, 64, b, 64, 0.0f, c, 64);
    mcl_set_blas_index_limit(d, 0);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(mcl_err(d)->msg, "exceeds CLBlast's index range"));
    tu_free(d, a), tu_free(d, b), tu_free(d, c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgemm_against_reference),
        cmocka_unit_test(test_sgemm_operands_beyond_index_limit),
        cmocka_unit_test(test_sgemm_one_operand_straddles_limit),
        cmocka_unit_test(test_sgemm_operand_larger_than_limit_refused),
    };
    return cmocka_run_group_tests(tests, tu_setup_device, tu_teardown_device);
}
