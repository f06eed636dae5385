/**
 * @file depthwise.h
 * @brief Depthwise 2-D convolution (one KxK filter per channel, no bias) on
 *        the device, with kernels specialised for K = 3, 5, 7 at stride 1 or 2
 *        and a general one.
 *
 * Layouts: x (N, C, H, W), w (C, K, K), y (N, C, Ho, Wo), NCHW float32.
 * Ho = (H + 2*pad - K) / stride + 1. OFA uses pad = K/2 and stride 1 or 2.
 * Backward overwrites dx and accumulates into dw (dw += ...); the weight
 * gradient is reduced without atomics.
 * Two variants (mcl_get_variant()), equal to float rounding. CPU: tiled
 * forward and dx kernels (rows staged in local memory, 8 outputs per
 * work-item) and a weight gradient of one work-item per (channel, tap row).
 * GPU: one work-item per output (forward) or input (dx) element, and the
 * weight gradient as a two-stage reduction over ranges of the N*Ho output
 * rows, which needs device scratch (nn_dw_scratch_floats()).
 * Outputs must not overlap inputs (y with x; dx with dy or w; dw with x or dy).
 * A bad shape returns MANTA_ERR_INVALID_ARG with a message naming the field;
 * views without a buffer that the call needs are rejected the same way.
 */
#ifndef MANTA_NN_DEPTHWISE_H
#define MANTA_NN_DEPTHWISE_H

#include "cl/cl.h"

typedef struct nn_dw_shape {
    int n, c, h, w; /**< input (N, C, H, W) */
    int k;          /**< kernel size (odd or even, >= 1) */
    int stride;     /**< >= 1 */
    int pad;        /**< >= 0 */
} nn_dw_shape;

/** Output height and width; <= 0 when the shape is invalid. */
int nn_dw_out_h(const nn_dw_shape *s);
int nn_dw_out_w(const nn_dw_shape *s);
/** Multiply-accumulates of one forward pass (for FLOP counts: 2 x MACs). */
double nn_dw_macs(const nn_dw_shape *s);

/** y = depthwise_conv(x, w). */
manta_status nn_dw_forward(mcl_dev *d, const nn_dw_shape *s, mview x, mview w, mview y);

/**
 * Floats of device scratch nn_dw_backward() needs for @p s on @p d: 0 for the
 * CPU variant, at most ranges * C * K*K for the GPU one (about 2^17; the size
 * for the largest shape covers any smaller one). Nothing is
 * kept in it between calls. 0 for an invalid shape.
 */
size_t nn_dw_scratch_floats(const mcl_dev *d, const nn_dw_shape *s);

/**
 * dx = dL/dx (overwritten; skipped when dx.mem is NULL); dw += dL/dw
 * (skipped when dw.mem is NULL). x: forward input; dy: (N, C, Ho, Wo).
 * @p scratch: nn_dw_scratch_floats() floats (may be {NULL, 0} when that is 0
 * or dw.mem is NULL).
 */
manta_status nn_dw_backward(mcl_dev *d, const nn_dw_shape *s, mview x, mview w, mview dy, mview dx,
                            mview dw, mview scratch);

#endif
