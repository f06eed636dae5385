/**
 * @file blas.h
 * @brief CLBlast SGEMM on ::mview operands, row-major, on a device's queue.
 *
 * C(m,n) = alpha * op(A) * op(B) + beta * C, where op(A) is (m,k) and op(B)
 * is (k,n); ld* are row strides in floats. Errors name CLBlast's status (and
 * the tuning file when the device runs tuned parameters).
 *
 * CLBlast's kernels run with the parameters of the device's tuning file when
 * mcl_open() found one (`manta tune`, cl/tune.h; mcl_get_tuning() tells),
 * else with CLBlast's built-in defaults. Results agree either way to float
 * rounding.
 */
#ifndef MANTA_CL_BLAS_H
#define MANTA_CL_BLAS_H

#include "cl/cl.h"

/** C = alpha * op(A) * op(B) + beta * C on @p d's queue (see above). */
manta_status mcl_sgemm(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                       float alpha, mview a, size_t lda, mview b, size_t ldb, float beta, mview c,
                       size_t ldc);

/**
 * @p batch independent GEMMs; operand i starts @p stride_* floats after
 * operand i-1 (a stride of 0 reuses one matrix, e.g. shared weights).
 */
manta_status mcl_sgemm_batched(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n, size_t k,
                               float alpha, mview a, size_t lda, size_t stride_a, mview b,
                               size_t ldb, size_t stride_b, float beta, mview c, size_t ldc,
                               size_t stride_c, size_t batch);

/**
 * Run CLBlast's two routines once on @p d (a 1x1x1 SGEMM and a batched one, then wait):
 * CLBlast builds a routine's tables and program for a device on its first call, and two
 * threads doing so at once race inside CLBlast (ASan: heap-use-after-free in
 * clblast::Database). Call it for every device, on one thread, before several threads use
 * CLBlast (train/dp.h does). @return the first failure (device memory, CLBlast's status).
 */
manta_status mcl_blas_prepare(mcl_dev *d);

/** mcl_sgemm_direct_limit() when every size runs the direct kernel. */
#define MCL_SGEMM_ALWAYS_DIRECT ((size_t)65536)

/**
 * CLBlast's choice between its two SGEMM kernels on @p d, as it stands now
 * (CLBlast's default or a tuning file's): the direct kernel when
 * m*n*k < limit^3, else the indirect one (operands copied, padded or
 * transposed into temporary buffers first). Probed through CLBlast's
 * temporary-buffer query; launches nothing. *limit is MCL_SGEMM_ALWAYS_DIRECT
 * when sizes up to that run direct, 1 when all run indirect.
 */
manta_status mcl_sgemm_direct_limit(mcl_dev *d, size_t *limit);

#endif
