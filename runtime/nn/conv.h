/**
 * @file conv.h
 * @brief Dense 2-D convolution (groups = 1, no bias) on the device, through
 *        im2col and CLBlast SGEMM; on CPU devices 1x1 stride-1 unpadded
 *        convolutions and the stem take direct paths. Depthwise convolution is
 *        in depthwise.h.
 *
 * Layouts: x (N, Cin, H, W), y (N, Cout, Ho, Wo), NCHW float32.
 * Weights w: Cout rows of Cin*KH*KW floats ([co][ci][ky][kx]); row co starts
 * at w + co * w_ld, so a layer can use the first Cin input channels of a wider
 * stored weight (elastic width) by giving w_ld = stored Cin*KH*KW. w_ld == 0
 * means Cin*KH*KW.
 * Ho = (H + 2*pad_h - KH) / stride_h + 1 (likewise Wo).
 * Backward overwrites dx and *accumulates* into dw (dw += ...), so gradients
 * of several passes add up until the optimizer step.
 * Outputs must not overlap inputs or the scratch. A bad shape returns
 * MANTA_ERR_INVALID_ARG with a message naming the field; views without a
 * buffer that the call needs are rejected the same way.
 */
#ifndef MANTA_NN_CONV_H
#define MANTA_NN_CONV_H

#include "cl/cl.h"

typedef struct nn_conv2d_shape {
    int n, cin, h, w;       /**< input (N, Cin, H, W) */
    int cout, kh, kw;       /**< output channels, kernel size */
    int stride_h, stride_w; /**< >= 1 */
    int pad_h, pad_w;       /**< zero padding, >= 0 */
    int w_ld;               /**< weight row stride in floats; 0 = Cin*KH*KW */
} nn_conv2d_shape;

/** Output height and width; <= 0 when the shape is invalid. */
int nn_conv2d_out_h(const nn_conv2d_shape *s);
int nn_conv2d_out_w(const nn_conv2d_shape *s);

/** Multiply-accumulates of one forward pass (for FLOP counts: 2 x MACs). */
double nn_conv2d_macs(const nn_conv2d_shape *s);

/**
 * Floats of device scratch that forward and backward need for @p s on @p d
 * (the caller provides it; the same scratch serves both and may be shared by
 * all layers of a network, as none keeps data in it between calls):
 * (Cin*KH*KW + Cout) * N*Ho*Wo for the im2col path (Cin*KH*KW * Ho*Wo when
 * N = 1), and 0 for the CPU variant's 1x1 stride-1 unpadded path, which may
 * then be given an empty view {NULL, 0}. The GPU variant (mcl_get_variant())
 * runs every convolution on the im2col path, as GEMMs over K = N*Ho*Wo.
 * 0 also for an invalid shape.
 */
size_t nn_conv2d_scratch_floats(const mcl_dev *d, const nn_conv2d_shape *s);

/** The most floats of op scratch one layer asks for (1 GiB): a layer whose whole batch would
 *  need more runs in chunks of images (nn_conv2d_chunk()), and so does one whose scratch
 *  would exceed the device's largest buffer (mcl_piece_floats()). */
#define NN_SCRATCH_CAP ((size_t)1 << 28)
/** The scratch bound on @p d: NN_SCRATCH_CAP, at most the device's largest buffer. */
size_t nn_scratch_cap(const mcl_dev *d);
/**
 * Images per chunk of the im2col path for @p s on @p d: N when the whole batch's scratch fits
 * nn_scratch_cap(), else the most images whose scratch does (at least 1). Forward and
 * backward then run the chunks one after the other (dW accumulating over them: the same
 * values up to float rounding), and nn_conv2d_scratch_floats() is the cap (or one image's,
 * when that is more): room for a chunk, and for the whole batch of any narrower shape that
 * the same scratch serves later.
 */
int nn_conv2d_chunk(const mcl_dev *d, const nn_conv2d_shape *s);

/**
 * y = conv(x, w).
 * @return MANTA_ERR_INVALID_ARG (message names the field) for a bad shape.
 */
manta_status nn_conv2d_forward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview y,
                               mview scratch);

/**
 * dx = dL/dx (overwritten; skipped when dx.mem is NULL),
 * dw += dL/dw (skipped when dw.mem is NULL; dw uses the same w_ld as w).
 * x is the forward input, dy (N, Cout, Ho, Wo) the output gradient.
 */
manta_status nn_conv2d_backward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview dy,
                                mview dx, mview dw, mview scratch);

#endif
