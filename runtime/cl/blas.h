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
manta_status mcl_sgemm_batched(mcl_dev *d, bool trans_a, bool trans_b, size_t m, size_t n,
                               size_t k, float alpha, mview a, size_t lda, size_t stride_a,
                               mview b, size_t ldb, size_t stride_b, float beta, mview c,
                               size_t ldc, size_t stride_c, size_t batch);

#endif
