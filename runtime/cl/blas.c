#include "cl/blas.h"

#include <clblast_c.h>

static manta_status blas_fail(mcl_dev *d, CLBlastStatusCode s, const char *what, size_t m, size_t n,
                              size_t k)
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
    return manta_err_set(
        mcl_err(d), code, "%s (m=%zu n=%zu k=%zu) on '%s': CLBlast status %d%s%s%s", what, m, n, k,
        mcl_info(d)->name, (int)s, t->active ? " (with the tuned parameters of " : "",
        t->active ? t->path : "", t->active ? "; MANTA_NO_TUNING=1 runs without them)" : "");
}

/* A GEMM in the device's launch log: CLBlast's own work-items are not known here. */
static void log_gemm(mcl_dev *d, size_t m, size_t n, size_t k, size_t batch)
{
    mcl_launch_record r = {"sgemm", 0, {0, 0, 0}, {0, 0, 0}, 0, m * n * batch, {m, n, k}};
    mcl_log_launch(d, &r);
}

/* The floats a row-major operand of r rows of c columns, row stride ld, spans; batches
 * more, stride apart. */
static size_t span(size_t r, size_t c, size_t ld, size_t stride, size_t batch)
{
    return (batch - 1) * stride + (r - 1) * ld + c;
}

/* CLBlast's kernels index an operand from its buffer's start with int (offset plus
 * position): an operand reaching beyond mcl_blas_index_limit() floats (buffers over
 * 8 GiB: the activations of a large batch) is passed as a sub-buffer that starts at the
 * operand, rounded down to the device's base address alignment. *sub is that sub-buffer
 * (NULL when @p v is passed as it is), released by the caller once the GEMM is enqueued. */
static manta_status rebase(mcl_dev *d, mview v, size_t floats, mview *out, cl_mem *sub)
{
    size_t limit = mcl_blas_index_limit(d);
    *out = v;
    *sub = NULL;
    if (v.off <= limit && floats <= limit - v.off)
        return MANTA_OK;
    size_t align = mcl_info(d)->base_align / sizeof(float), origin = v.off / align * align;
    size_t rest = v.off - origin;
    if (floats > limit || rest > limit - floats)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "a GEMM operand of %zu floats exceeds CLBlast's index range of %zu",
                             floats, limit);
    cl_buffer_region r = {origin * sizeof(float), (rest + floats) * sizeof(float)};
    cl_int rc;
    *sub = clCreateSubBuffer(v.mem, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &rc);
    if (rc != CL_SUCCESS)
        return mcl_fail(d, rc, "clCreateSubBuffer (a GEMM operand beyond CLBlast's index range)");
    *out = (mview){*sub, rest};
    return MANTA_OK;
}

manta_status mcl_sgemm_batched(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                               float alpha, mview a, size_t lda, size_t stride_a, mview b,
                               size_t ldb, size_t stride_b, float beta, mview c, size_t ldc,
                               size_t stride_c, size_t batch)
{
    if (m == 0 || n == 0 || batch == 0)
        return MANTA_OK;
    size_t sa = trans_a ? span(k, m, lda, stride_a, batch) : span(m, k, lda, stride_a, batch);
    size_t sb = trans_b ? span(n, k, ldb, stride_b, batch) : span(k, n, ldb, stride_b, batch);
    cl_mem sub[3] = {NULL, NULL, NULL};
    manta_status st = k ? rebase(d, a, sa, &a, &sub[0]) : MANTA_OK;
    if (st == MANTA_OK && k)
        st = rebase(d, b, sb, &b, &sub[1]);
    if (st == MANTA_OK)
        st = rebase(d, c, span(m, n, ldc, stride_c, batch), &c, &sub[2]);
    if (st == MANTA_OK) {
        CLBlastTranspose ta = trans_a ? CLBlastTransposeYes : CLBlastTransposeNo;
        CLBlastTranspose tb = trans_b ? CLBlastTransposeYes : CLBlastTransposeNo;
        CLBlastStatusCode s;
        if (batch == 1)
            s = CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a.mem, a.off, lda,
                             b.mem, b.off, ldb, beta, c.mem, c.off, ldc, mcl_queue(d), NULL);
        else
            s = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a.mem,
                                           a.off, lda, stride_a, b.mem, b.off, ldb, stride_b, beta,
                                           c.mem, c.off, ldc, stride_c, batch, mcl_queue(d), NULL);
        log_gemm(d, m, n, k, batch);
        st = blas_fail(d, s, batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched", m, n, k);
    }
    for (int i = 0; i < 3; i++) /* the queue keeps them while its commands need them */
        if (sub[i])
            clReleaseMemObject(sub[i]);
    return st;
}

manta_status mcl_sgemm(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                       float alpha, mview a, size_t lda, mview b, size_t ldb, float beta, mview c,
                       size_t ldc)
{
    return mcl_sgemm_batched(d, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c,
                             ldc, 0, 1);
}

manta_status mcl_blas_prepare(mcl_dev *d)
{
    cl_mem mem = NULL;
    MANTA_TRY(mcl_alloc(d, 8 * sizeof(float), "CLBlast's first calls", &mem));
    mview v = {mem, 0};
    manta_status st = mcl_fill(d, v, 0.0f, 8);
    if (st == MANTA_OK)
        st = mcl_sgemm(d, false, false, 1, 1, 1, 1.0f, v, 1, mview_at(v, 1), 1, 0.0f,
                       mview_at(v, 2), 1);
    if (st == MANTA_OK)
        st = mcl_sgemm_batched(d, false, false, 1, 1, 1, 1.0f, v, 1, 1, mview_at(v, 2), 1, 1, 0.0f,
                               mview_at(v, 4), 1, 1, 2);
    if (st == MANTA_OK)
        st = mcl_finish(d);
    mcl_free(d, mem);
    return st;
}

/* True when CLBlast's SGEMM of m=n=k=x would run the indirect kernel. A
 * nonzero A offset makes the indirect kernel copy A to a temporary buffer, so
 * the temporary size is nonzero exactly when that kernel is chosen. */
static manta_status runs_indirect(mcl_dev *d, size_t x, bool *out)
{
    size_t temp = 0;
    CLBlastStatusCode s =
        CLBlastSGemmTempBufferSize(CLBlastLayoutColMajor, CLBlastTransposeNo, CLBlastTransposeNo, x,
                                   x, x, 1, x, 0, x, 0, x, mcl_queue(d), &temp);
    if (s != CLBlastSuccess)
        return blas_fail(d, s, "CLBlastSGemmTempBufferSize", x, x, x);
    *out = temp > 0;
    return MANTA_OK;
}

manta_status mcl_sgemm_direct_limit(mcl_dev *d, size_t *limit)
{
    /* CLBlast runs the direct kernel when m*n*k < T^3: find T by bisection */
    size_t lo = 1, hi = MCL_SGEMM_ALWAYS_DIRECT; /* indirect at hi, direct below lo */
    bool ind = false;
    manta_status st = runs_indirect(d, hi, &ind);
    if (st != MANTA_OK)
        return st;
    if (!ind) {
        *limit = MCL_SGEMM_ALWAYS_DIRECT;
        return MANTA_OK;
    }
    if ((st = runs_indirect(d, 1, &ind)) != MANTA_OK)
        return st;
    if (ind) {
        *limit = 1; /* 0 and 1 both send every GEMM to the indirect kernel */
        return MANTA_OK;
    }
    while (hi - lo > 1) { /* direct at lo, indirect at hi */
        size_t mid = lo + (hi - lo) / 2;
        if ((st = runs_indirect(d, mid, &ind)) != MANTA_OK)
            return st;
        if (ind)
            hi = mid;
        else
            lo = mid;
    }
    *limit = hi;
    return MANTA_OK;
}
