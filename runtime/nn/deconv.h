/**
 * @file deconv.h
 * @brief Transposed 2-D convolution ("deconvolution", PyTorch's ConvTranspose2d with
 *        groups = 1, dilation 1, output_padding 0) on the device, with an optional bias:
 *        the up-sampling layers of the stereo decoder (k4 s2 p1 doubles H and W exactly).
 *
 * Layouts: x (N, Cin, H, W), y (N, Cout, Ho, Wo), NCHW float32.
 * Weights w: Cin rows of Cout*KH*KW floats ([ci][co][ky][kx], PyTorch's
 * (Cin, Cout, KH, KW)); row ci starts at w + ci * w_ld, so a layer can use the first
 * Cout output channels of a wider stored weight (elastic width) by giving
 * w_ld = stored Cout*KH*KW. w_ld == 0 means Cout*KH*KW. Bias b: (Cout), may be absent.
 *
 *   y[b, co, oy, ox] = bias[co] + sum over ci, ky, kx with oy = iy*stride_h - pad_h + ky,
 *                      ox = ix*stride_w - pad_w + kx of x[b, ci, iy, ix] * w[ci, co, ky, kx]
 *   Ho = (H - 1) * stride_h - 2*pad_h + KH (likewise Wo).
 *
 * The transposed convolution is the adjoint of the convolution (conv.h) of a
 * (N, Cout, Ho, Wo) input by the same weights seen as Cin rows of Cout*KH*KW with the
 * same stride and padding, whose output is (N, Cin, H, W): its forward is that
 * convolution's dx, its dx that convolution's forward.
 *
 * Two variants (mcl_get_variant()), equal to float rounding:
 *  - GPU: forward = GEMM W^T x (per image, written in the column layout) then col2im;
 *    dx = im2col of dy then GEMM W col; dW = GEMM over K = N*H*W, split along K into
 *    chunks (partial sums reduced by a second kernel) so that the GPU has enough
 *    work-groups; the bias and db those of nn/bias.h (db a two-stage reduction). The
 *    column kernels are the convolution's (cl_kernels/conv.cl), the rest
 *    cl_kernels/deconv.cl.
 *  - CPU: for k4 s2 p1, direct kernels (forward: each output gathers its 2 x 2 taps per
 *    input channel; dx: the 4 x 4 stride-2 convolution of dy; dW: one work-item per output
 *    channel and pair of input channels summing their 16 taps over N*H*W; db nn/bias.h's
 *    one work-item per channel), no scratch; every other shape takes the GEMM path above
 *    with dW as one GEMM.
 *
 * Backward overwrites dx and *accumulates* into dw and db (dw += ..., db += ...), so
 * gradients of several passes add up until the optimizer step.
 * Outputs must not overlap inputs or the scratch. A bad shape returns
 * MANTA_ERR_INVALID_ARG with a message naming the op and the field; views without a
 * buffer that the call needs are rejected the same way.
 */
#ifndef MANTA_NN_DECONV_H
#define MANTA_NN_DECONV_H

#include "cl/cl.h"

typedef struct nn_deconv2d_shape {
    int n, cin, h, w;       /**< input (N, Cin, H, W) */
    int cout, kh, kw;       /**< output channels, kernel size (>= 1) */
    int stride_h, stride_w; /**< >= 1 */
    int pad_h, pad_w;       /**< >= 0: cropped from each side of the full output */
    int w_ld;               /**< weight row stride in floats; 0 = Cout*KH*KW */
} nn_deconv2d_shape;

/** Output height and width, (H - 1) * stride - 2 * pad + K; <= 0 when the shape is
 *  invalid (a field out of range, or the padding crops the whole output). */
int nn_deconv2d_out_h(const nn_deconv2d_shape *s);
int nn_deconv2d_out_w(const nn_deconv2d_shape *s);

/** Multiply-accumulates of one forward pass, N*Cin*H*W*Cout*KH*KW including the taps
 *  that fall into the cropped border (for FLOP counts: 2 x MACs). */
double nn_deconv2d_macs(const nn_deconv2d_shape *s);

/**
 * Floats of device scratch that forward and backward need for @p s on @p d (the caller
 * provides it; the same scratch serves both and may be shared by all layers of a
 * network, as none keeps data in it between calls):
 *  - 0 for the CPU variant's k4 s2 p1 path, which may then be given an empty view
 *    {NULL, 0};
 *  - otherwise Cout*KH*KW * N*H*W (the column matrix), plus Cin * N*H*W when N > 1
 *    (x in the (Cin, N*H*W) layout of the weight-gradient GEMM), plus the partial sums
 *    of the GPU variant's split weight and bias gradients.
 * 0 also for an invalid shape.
 */
size_t nn_deconv2d_scratch_floats(const mcl_dev *d, const nn_deconv2d_shape *s);

/**
 * y = deconv(x, w) + b (y overwritten).
 * @p b: (Cout) bias, or {NULL, 0} for none.
 * @p scratch: nn_deconv2d_scratch_floats() floats ({NULL, 0} when that is 0).
 * @return MANTA_ERR_INVALID_ARG (message names the op and the field) for a bad shape or
 *         a missing buffer.
 */
manta_status nn_deconv2d_forward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w, mview b,
                                 mview y, mview scratch);

/**
 * dx = dL/dx (N, Cin, H, W) (overwritten; skipped when dx.mem is NULL),
 * dw += dL/dw (skipped when dw.mem is NULL; dw uses the same w_ld as w),
 * db += dL/db (Cout) (skipped when db.mem is NULL).
 * x is the forward input (needed for dw only), w the weights (needed for dx only),
 * dy (N, Cout, Ho, Wo) the output gradient.
 */
manta_status nn_deconv2d_backward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w,
                                  mview dy, mview dx, mview dw, mview db, mview scratch);

#endif
