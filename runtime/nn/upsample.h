/**
 * @file upsample.h
 * @brief Bilinear upsampling by an integer factor, forward and backward, on the device.
 *
 * Layouts, NCHW float32: x, dx (N, C, H, W); y, dy (N, C, f*H, f*W), f = factor.
 * Semantics of PyTorch's F.interpolate(x, scale_factor=f, mode='bilinear',
 * align_corners=False): output o of an axis of n inputs reads the source coordinate
 *   src = max(0, (o + 0.5) / f - 0.5),  i0 = floor(src),  i1 = min(i0 + 1, n - 1),
 *   lambda = src - i0,  value = (1 - lambda) * in[i0] + lambda * in[i1],
 * separably along H and W. The kernels compute src exactly in integers
 * (num = 2*o + 1 - f, i0 = num / (2f), lambda = (num mod 2f) / (2f)), so the forward and the
 * backward agree on every weight. factor 1 copies.
 *
 * The result is multiplied by @p scale: y = scale * upsample(x), and the backward gives the
 * gradient of that (dx = scale * upsample^T(dy)). Pass 1 for feature maps and for
 * disparities kept in full-resolution pixels at every scale. A disparity predicted in
 * pixels of its own (coarse) map is upsampled with scale = factor, so that it counts pixels
 * of the finer map: that multiply is the caller's choice and costs nothing extra here.
 *
 * The backward is a gather (each dx value sums the dy values whose bilinear weights reach
 * it): no atomics, no scratch; dx is overwritten.
 *
 * Two variants (mcl_get_variant()), equal to float rounding. CPU: a work-item per output
 * row (forward) or input row (backward), looping along the row. GPU: a work-item per
 * output (forward) or input (backward) value.
 *
 * A bad shape (a field below 1, sizes beyond the kernels' 32-bit indices) or a non-finite
 * scale returns MANTA_ERR_INVALID_ARG with a message naming the op and the field; a view
 * without a buffer is refused the same way. y must not overlap x, nor dx dy.
 */
#ifndef MANTA_NN_UPSAMPLE_H
#define MANTA_NN_UPSAMPLE_H

#include "cl/cl.h"

typedef struct nn_upsample_shape {
    int n, c, h, w; /**< input (N, C, H, W), each >= 1 */
    int factor;     /**< integer upsampling factor f >= 1 (2 for a decoder level) */
} nn_upsample_shape;

/** Output height f*H and width f*W; 0 when the shape is invalid or they exceed INT_MAX. */
int nn_upsample_out_h(const nn_upsample_shape *s);
int nn_upsample_out_w(const nn_upsample_shape *s);

/** y (N, C, fH, fW) = scale * upsample(x (N, C, H, W)); y overwritten. */
manta_status nn_upsample_forward(mcl_dev *d, const nn_upsample_shape *s, float scale, mview x,
                                 mview y);

/** dx (N, C, H, W) = d(sum(dy * y)) / dx for y = scale * upsample(x); overwritten. */
manta_status nn_upsample_backward(mcl_dev *d, const nn_upsample_shape *s, float scale, mview dy,
                                  mview dx);

#endif
