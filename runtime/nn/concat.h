/**
 * @file concat.h
 * @brief Concatenation along channels (the stereo decoder's U-Net joins of
 *        [skip, up-convolution, up-sampled prediction]) as a copy into, and a
 *        gradient out of, a channel slice of the joined tensor.
 *
 * Layouts: src (N, C, HW) and dst (N, C_total, HW), NCHW float32; the slice is
 * channels [c_offset, c_offset + C) of dst. A join of k tensors is k forward
 * calls with offsets 0, C1, C1 + C2, ...; its backward is k backward calls.
 *
 * Why a copy: the ops of runtime/nn/ take an mview (buffer and offset) and write
 * their output as one dense (N, C, H, W) block, image b at b * C*HW. Inside
 * dst, image b of the slice starts at (b * C_total + c_offset) * HW, so for
 * N > 1 the slice is not one block and no producer can write there without a
 * batch stride, which no op takes. For N = 1 it is one block: a producer may
 * then write straight into mview_at(dst, c_offset * HW) (and a consumer read
 * the gradient from there), and the copy can be skipped.
 *
 * A bad shape returns MANTA_ERR_INVALID_ARG with a message naming the op and
 * the field. src must not overlap the slice.
 */
#ifndef MANTA_NN_CONCAT_H
#define MANTA_NN_CONCAT_H

#include <stdbool.h>

#include "cl/cl.h"

typedef struct nn_concat_shape {
    int n;        /**< images, >= 1 */
    int c;        /**< channels of the part, >= 1 */
    int hw;       /**< values per channel (H*W), >= 1 */
    int c_total;  /**< channels of the joined tensor, >= c_offset + c */
    int c_offset; /**< first channel of the part in the joined tensor, >= 0 */
} nn_concat_shape;

/** dst[:, c_offset : c_offset + C] = src. The other channels of dst are not touched.
 *  src: (N, C, HW); dst: (N, C_total, HW). */
manta_status nn_concat_forward(mcl_dev *d, const nn_concat_shape *s, mview src, mview dst);

/**
 * The part's gradient: dsrc = ddst[:, c_offset : c_offset + C], or dsrc += that slice
 * when @p accumulate (a tensor that also feeds other ops, such as a U-Net skip).
 * ddst: (N, C_total, HW); dsrc: (N, C, HW).
 */
manta_status nn_concat_backward(mcl_dev *d, const nn_concat_shape *s, mview ddst, mview dsrc,
                                bool accumulate);

#endif
