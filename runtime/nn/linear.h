/**
 * @file linear.h
 * @brief Fully connected layer y = x W^T + b on the device: direct kernels
 *        (CPU variant) or CLBlast SGEMM (GPU variant, mcl_get_variant()).
 *
 * x (N, in), y (N, out). W holds `out` rows; row o starts at w + o * w_ld and
 * its first `in` floats are used (w_ld == 0 means in), so a layer can use a
 * top-left block of a larger stored matrix (elastic width, SE layers).
 * b (out) is optional (b.mem NULL: no bias).
 * Backward overwrites dx and accumulates into dw and db; dw has W's layout
 * (row stride w_ld) and only the first `in` floats of its rows are touched.
 * n, in and out must be positive and w_ld 0 or at least in; otherwise
 * MANTA_ERR_INVALID_ARG names the field.
 */
#ifndef MANTA_NN_LINEAR_H
#define MANTA_NN_LINEAR_H

#include "cl/cl.h"

typedef struct nn_linear_shape {
    int n, in, out;
    int w_ld; /**< row stride of W in floats; 0 = in */
} nn_linear_shape;

/** x (N, in), w (out, w_ld), b (out) or none, y (N, out) overwritten. */
manta_status nn_linear_forward(mcl_dev *d, const nn_linear_shape *s, mview x, mview w, mview b,
                               mview y);

/** dx (overwritten; skipped when dx.mem NULL), dw += dy^T x, db += sum_n dy
 *  (skipped when db.mem NULL). x (N, in), w, dw (out, w_ld), dy (N, out),
 *  dx (N, in), db (out). */
manta_status nn_linear_backward(mcl_dev *d, const nn_linear_shape *s, mview x, mview w, mview dy,
                                mview dx, mview dw, mview db);

#endif
