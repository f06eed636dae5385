/**
 * @file correlation.h
 * @brief 1-D horizontal correlation of left and right stereo features (DispNetC's
 *        Correlation1D, kernel 1), forward and backward, on the device.
 *
 * Layouts, NCHW float32: fl, fr, dfl, dfr (N, C, H, W); out, dout (N, D, H, W) with
 * D = nn_corr_out_c() = max_disp / stride + 1 (integer division) displacements
 * d_i = i * stride, i = 0 .. D-1:
 *
 *   out[b, i, y, x] = (1/C) * sum_c fl[b, c, y, x] * fr[b, c, y, x - d_i]
 *
 * One-sided, as DispNetC on rectified pairs: a point at column x of the left view sits at
 * x - d (d >= 0) in the right view. fr is zero outside the image, so out is 0 where
 * x - d_i < 0. The mean over channels (1/C) is DispNetC's normalisation (its kernel-1
 * correlation divides by kernel area * C = C). DispNetC at 1/4 resolution uses
 * max_disp 40, stride 1: D = 41.
 *
 * Backward (both overwritten; either skipped when its view has no buffer):
 *   dfl[b, c, y, x] = (1/C) * sum_i dout[b, i, y, x] * fr[b, c, y, x - d_i]
 *   dfr[b, c, y, x] = (1/C) * sum_i dout[b, i, y, x + d_i] * fl[b, c, y, x + d_i]
 * The left features usually feed another layer as well (DispNetC's conv_redir): add the
 * gradients with nn_axpy(). fl and fr may be views into one buffer (a siamese encoder run
 * on the left and right images as one batch of 2N); outputs must not overlap inputs.
 *
 * Two variants (mcl_get_variant()), equal to float rounding. CPU: a work-item per 8
 * columns and 4 displacements (forward) or 4 channels (backward), float8 loops over the
 * channels or displacements. GPU: one work-item per output (forward, groups of up to 64
 * columns x 4 displacements of a row) or input value (backward), looping over the channels
 * or displacements. No scratch, no local memory.
 *
 * A bad shape (a field below its minimum, sizes beyond the kernels' 32-bit indices)
 * returns MANTA_ERR_INVALID_ARG with a message naming the op and the field; a view that
 * the call needs without a buffer is refused the same way.
 */
#ifndef MANTA_NN_CORRELATION_H
#define MANTA_NN_CORRELATION_H

#include "cl/cl.h"

typedef struct nn_corr_shape {
    int n, c, h, w; /**< features fl and fr: (N, C, H, W), each >= 1 */
    int max_disp;   /**< largest displacement in columns of the feature map, >= 0 */
    int stride;     /**< displacement step, >= 1 (max_disp need not be a multiple) */
} nn_corr_shape;

/** Output channels D = max_disp / stride + 1; 0 when max_disp < 0 or stride < 1. */
int nn_corr_out_c(const nn_corr_shape *s);

/** Multiply-accumulates of one forward pass that meet the image (pairs with
 *  x - d_i >= 0), for FLOP counts (2 x MACs); 0 for an invalid shape. */
double nn_corr_macs(const nn_corr_shape *s);

/** out (N, D, H, W) = correlation of fl and fr (N, C, H, W); out overwritten. */
manta_status nn_corr_forward(mcl_dev *d, const nn_corr_shape *s, mview fl, mview fr, mview out);

/**
 * dfl, dfr (N, C, H, W) = gradients of the loss w.r.t. fl and fr, given dout (N, D, H, W).
 * dfl needs fr, dfr needs fl (the other may be {NULL, 0}). dfl and dfr are overwritten;
 * a view without a buffer is skipped.
 */
manta_status nn_corr_backward(mcl_dev *d, const nn_corr_shape *s, mview fl, mview fr, mview dout,
                              mview dfl, mview dfr);

#endif
