#include "cl/blas.h"

#include <clblast_c.h>

static manta_status blas_fail(mcl_dev *d, CLBlastStatusCode s, const char *what, size_t m,
                              size_t n, size_t k)
{
    if (s == CLBlastSuccess)
        return MANTA_OK;
    if (s < 0 && s > -100) /* an OpenCL status passed through */
        return mcl_fail(d, (cl_int)s, what);
    manta_status code = MANTA_ERR_BLAS;
    if (s == CLBlastInsufficientMemoryTemp || s == CLBlastInsufficientMemoryA ||
        s == CLBlastInsufficientMemoryB || s == CLBlastInsufficientMemoryC)
        code = MANTA_ERR_INVALID_ARG; /* operand smaller than its shape: a caller bug */
    const mcl_tuning *t = mcl_get_tuning(d);
    return manta_err_set(mcl_err(d), code, "%s (m=%zu n=%zu k=%zu) on '%s': CLBlast status %d%s%s%s",
                         what, m, n, k, mcl_info(d)->name, (int)s,
                         t->active ? " (with the tuned parameters of " : "",
                         t->active ? t->path : "",
                         t->active ? "; MANTA_NO_TUNING=1 runs without them)" : "");
}

manta_status mcl_sgemm(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                       float alpha, mview a, size_t lda, mview b, size_t ldb, float beta, mview c,
                       size_t ldc)
{
    if (m == 0 || n == 0)
        return MANTA_OK;
    CLBlastStatusCode s = CLBlastSgemm(
        CLBlastLayoutRowMajor, trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a.mem, a.off, lda,
        b.mem, b.off, ldb, beta, c.mem, c.off, ldc, mcl_queue(d), NULL);
    return blas_fail(d, s, "CLBlastSgemm", m, n, k);
}

manta_status mcl_sgemm_batched(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n,
                               size_t k, float alpha, mview a, size_t lda, size_t stride_a,
                               mview b, size_t ldb, size_t stride_b, float beta, mview c,
                               size_t ldc, size_t stride_c, size_t batch)
{
    if (m == 0 || n == 0 || batch == 0)
        return MANTA_OK;
    if (batch == 1)
        return mcl_sgemm(d, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    CLBlastStatusCode s = CLBlastSgemmStridedBatched(
        CLBlastLayoutRowMajor, trans_a ? CLBlastTransposeYes : CLBlastTransposeNo,
        trans_b ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, alpha, a.mem, a.off, lda,
        stride_a, b.mem, b.off, ldb, stride_b, beta, c.mem, c.off, ldc, stride_c, batch,
        mcl_queue(d), NULL);
    return blas_fail(d, s, "CLBlastSgemmStridedBatched", m, n, k);
}
