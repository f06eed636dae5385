/**
 * @file pool.h
 * @brief Global average pooling, per-channel scaling (squeeze-and-excite),
 *        residual add and axpy, on the device.
 *
 * "nc" is N*C rows of "hw" = H*W values each: x (N, C, H, W) seen as (NC, HW).
 * Zero sizes are empty tensors (nothing is done), except that average pooling
 * needs hw >= 1; sizes beyond the kernels' int range, and hw 0 for pooling,
 * return MANTA_ERR_INVALID_ARG.
 */
#ifndef MANTA_NN_POOL_H
#define MANTA_NN_POOL_H

#include "cl/cl.h"

/** y[r] = mean of x[r, :]. x (NC, HW), y (NC). */
manta_status nn_avgpool_forward(mcl_dev *d, size_t nc, size_t hw, mview x, mview y);
/** dx[r, i] = dy[r] / hw (overwrites dx). dy (NC), dx (NC, HW). */
manta_status nn_avgpool_backward(mcl_dev *d, size_t nc, size_t hw, mview dy, mview dx);

/** y[r, i] = x[r, i] * s[r]. x, y (NC, HW), s (NC). y may alias x. */
manta_status nn_scale_forward(mcl_dev *d, size_t nc, size_t hw, mview x, mview s, mview y);
/**
 * dx = dy * s (overwritten; skipped when dx.mem is NULL; may alias dy),
 * ds[r] = sum_i dy[r, i] * x[r, i] (overwritten). x is the forward input.
 */
manta_status nn_scale_backward(mcl_dev *d, size_t nc, size_t hw, mview x, mview s, mview dy,
                               mview dx, mview ds);

/** y = a + b over n floats; y may alias a or b. */
manta_status nn_add(mcl_dev *d, size_t n, mview a, mview b, mview y);
/** y += alpha * x over n floats (residual backward, gradient sums). */
manta_status nn_axpy(mcl_dev *d, size_t n, float alpha, mview x, mview y);

#endif
