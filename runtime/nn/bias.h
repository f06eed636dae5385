/**
 * @file bias.h
 * @brief Per-channel bias of a convolution-like output on the device: the forward add and
 *        the bias gradient (a sum over the batch and the pixels). The transposed
 *        convolution (deconv.h) and the stereo decoder's convolutions (which have a bias
 *        where conv.h has none) use it.
 *
 * Layouts, NCHW float32: y, dy (N, C, HW); b, db (C).
 *
 *   forward:  y[n, c, i] += b[c]                       (y updated in place)
 *   backward: db[c] += sum over n, i of dy[n, c, i]     (db accumulated)
 *
 * Two variants (mcl_get_variant()), equal to float rounding:
 *  - CPU: forward a work-item per 8 values of one (n, c) row (float8); backward one
 *    work-item per channel summing its N*HW values, straight into db; no scratch.
 *  - GPU: forward a work-item per value; backward about 256 work-groups in all, each
 *    summing (wg_sum()) a range of at least 1024 values of one channel, the partial sums
 *    of a channel's ranges written to the scratch and added into db by a second kernel
 *    (nn_wgrad_reduce()); one range per channel (no scratch) when N*HW is short.
 *
 * A bad shape (a field below 1, sizes beyond the kernels' 32-bit indices) returns
 * MANTA_ERR_INVALID_ARG with a message naming the op and the field; a view the call needs
 * without a buffer is refused the same way. db must not overlap dy or the scratch.
 */
#ifndef MANTA_NN_BIAS_H
#define MANTA_NN_BIAS_H

#include "cl/cl.h"

typedef struct nn_bias_shape {
    int n;  /**< images, >= 1 */
    int c;  /**< channels, >= 1 */
    int hw; /**< values per channel and image (H*W), >= 1 */
} nn_bias_shape;

/**
 * Floats of device scratch nn_bias_channels_backward() needs for @p s on @p d: the GPU
 * variant's partial sums (ranges * C) when it splits the channels' sums, else 0 (then the
 * scratch may be {NULL, 0}). The forward needs none. 0 also for an invalid shape.
 */
size_t nn_bias_channels_scratch_floats(const mcl_dev *d, const nn_bias_shape *s);

/** y (N, C, HW) += b[c] (in place). @return MANTA_ERR_INVALID_ARG for a bad shape or a
 *  missing buffer (the message names the op and the field). */
manta_status nn_bias_channels_forward(mcl_dev *d, const nn_bias_shape *s, mview b, mview y);

/**
 * db (C) += the sum of dy (N, C, HW) over N and HW.
 * @p scratch: nn_bias_channels_scratch_floats() floats ({NULL, 0} when that is 0).
 */
manta_status nn_bias_channels_backward(mcl_dev *d, const nn_bias_shape *s, mview dy, mview db,
                                       mview scratch);

#endif
