/* Plain-C double-precision references for pooling and channel scaling.
 * Rows: the NC rows of HW values of a (N, C, HW) tensor. */
#ifndef MANTA_TESTS_REF_POOL_H
#define MANTA_TESTS_REF_POOL_H

#include <stddef.h>

/** y[r] = mean of x[r, :]. x (NC, HW), y (NC). */
void ref_avgpool(size_t nc, size_t hw, const double *x, double *y);
/** y[r, i] = x[r, i] * s[r]. x, y (NC, HW), s (NC). */
void ref_scale(size_t nc, size_t hw, const double *x, const double *s, double *y);

#endif
