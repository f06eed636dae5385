/**
 * @file kernels_impl.h
 * @brief float32 NHWC kernels of the inference engine (CMSIS-NN style:
 *        `mengine_k_op_variant_f32`, parameters in small const structs, caller
 *        buffers, a `_get_buffer_size` query where scratch is needed).
 *
 * Layouts: activations NHWC, row-major. Convolution weights OHWI
 * [Cout, KH, KW, Cin]; depthwise weights [1, KH, KW, Cin*M] with output channel
 * oc = ic*M + m; fully connected weights [units, in]; transpose convolution
 * weights [Cout, KH, KW, Cin]. Bias pointers may be NULL (zero bias).
 *
 * Padding: pad_h / pad_w are the rows / columns of zeros before the first
 * input row / column (TFLite's "before" padding); the padding after follows
 * from the output size.
 *
 * Aliasing: kernels marked "in place" accept out == an input of the same size
 * (element i is read before it is written); other buffers must not overlap.
 * All kernels are single-threaded and never allocate.
 *
 * Errors: MENGINE_ERR_ARG for NULL buffers, non-positive sizes or parameters
 * that do not match the shapes. Kernels do not check buffer lengths: the
 * caller guarantees them from the dims.
 */
#ifndef MANTA_ENGINE_KERNELS_H
#define MANTA_ENGINE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/errors.h"

/** Output channels per packed weight panel of the convolution kernels. */
#define MK_CONV_NR 16

/** Fused activation, with TFLite's ActivationFunctionType values. */
typedef enum mengine_k_act {
    MK_ACT_NONE = 0,
    MK_ACT_RELU = 1,         /**< max(x, 0) */
    MK_ACT_RELU_N1_TO_1 = 2, /**< min(max(x, -1), 1) */
    MK_ACT_RELU6 = 3         /**< min(max(x, 0), 6) */
} mengine_k_act;

/** A 4-D shape (N, H, W, C); lower-rank tensors use 1 for the leading dims. */
typedef struct mengine_k_dims {
    int32_t n, h, w, c;
} mengine_k_dims;

/** Convolution and transpose convolution parameters. */
typedef struct mengine_k_conv_params {
    int32_t stride_h, stride_w; /**< >= 1 */
    int32_t pad_h, pad_w;       /**< >= 0 */
    mengine_k_act act;
} mengine_k_conv_params;

/** Depthwise convolution parameters. */
typedef struct mengine_k_dw_params {
    int32_t stride_h, stride_w; /**< >= 1 */
    int32_t pad_h, pad_w;       /**< >= 0 */
    int32_t multiplier;         /**< output channels per input channel, >= 1 */
    mengine_k_act act;
} mengine_k_dw_params;

/** Pooling parameters. */
typedef struct mengine_k_pool_params {
    int32_t stride_h, stride_w; /**< >= 1 */
    int32_t pad_h, pad_w;       /**< >= 0 */
    int32_t filter_h, filter_w; /**< >= 1 */
    mengine_k_act act;
} mengine_k_pool_params;

/** Apply @p act to @p n values in place. */
void mengine_k_act_f32(float *x, size_t n, mengine_k_act act);

/** Scratch bytes mengine_k_conv2d_f32() and mengine_k_conv2d_1x1_f32() need: one packed panel of
 *  MK_CONV_NR output channels, MK_CONV_NR * KH * KW * Cin floats. */
size_t mengine_k_conv2d_get_buffer_size_f32(const mengine_k_dims *filter_dims);

/**
 * 2-D convolution, direct, with weights packed MK_CONV_NR output channels at a
 * time into @p scratch (once per panel per call) and a register block of up to 6
 * output pixels x MK_CONV_NR channels (the bias and the activation applied in
 * registers).
 * @param in_dims     (N, H, W, Cin)
 * @param filter_dims (Cout, KH, KW, Cin), OHWI
 * @param bias        (Cout) or NULL
 * @param out_dims    (N, OH, OW, Cout)
 * @param scratch     mengine_k_conv2d_get_buffer_size_f32() bytes, float-aligned, not overlapping anything
 */
mengine_status mengine_k_conv2d_f32(const mengine_k_conv_params *p, const mengine_k_dims *in_dims,
                                    const float *in, const mengine_k_dims *filter_dims,
                                    const float *filter, const float *bias,
                                    const mengine_k_dims *out_dims, float *out, float *scratch);

/**
 * 1x1 convolution as a blocked GEMM over all N*OH*OW pixels; over at most 16
 * pixels, dot products on the unpacked weights, 8 output channels at a time
 * (no use of @p scratch); strided, the direct kernel.
 * Preconditions: KH == KW == 1, pad_h == pad_w == 0. Same arguments as mengine_k_conv2d_f32().
 */
mengine_status mengine_k_conv2d_1x1_f32(const mengine_k_conv_params *p,
                                        const mengine_k_dims *in_dims, const float *in,
                                        const mengine_k_dims *filter_dims, const float *filter,
                                        const float *bias, const mengine_k_dims *out_dims,
                                        float *out, float *scratch);

/**
 * Depthwise convolution, any kernel size, stride and multiplier.
 * @param filter_dims (1, KH, KW, Cin*M)
 * @param out_dims    (N, OH, OW, Cin*M)
 */
mengine_status mengine_k_depthwise_conv_f32(const mengine_k_dw_params *p,
                                            const mengine_k_dims *in_dims, const float *in,
                                            const mengine_k_dims *filter_dims, const float *filter,
                                            const float *bias, const mengine_k_dims *out_dims,
                                            float *out);

/** Whether mengine_k_depthwise_conv_fast_f32() handles these parameters: multiplier 1,
 *  square 3x3, 5x5 or 7x7 kernel, equal strides 1 or 2. */
int mengine_k_depthwise_conv_fast_ok(const mengine_k_dw_params *p,
                                     const mengine_k_dims *filter_dims);

/**
 * Depthwise convolution specialised for kernel 3/5/7 and stride 1/2 with
 * multiplier 1 (mengine_k_depthwise_conv_fast_ok()); MENGINE_ERR_ARG otherwise.
 * Interior pixels of a row: one vector of channels at a time with its K*K
 * weight vectors loaded once per row, the kernel size a compile-time constant;
 * border pixels: channel blocks with the taps clipped.
 * Same arguments as mengine_k_depthwise_conv_f32().
 */
mengine_status mengine_k_depthwise_conv_fast_f32(const mengine_k_dw_params *p,
                                                 const mengine_k_dims *in_dims, const float *in,
                                                 const mengine_k_dims *filter_dims,
                                                 const float *filter, const float *bias,
                                                 const mengine_k_dims *out_dims, float *out);

/**
 * Transpose convolution (gradient of conv2d with respect to its input), run as
 * stride_h x stride_w stride-1 convolutions of the input (one per output phase, each
 * with the taps that reach it) on the convolution's packed panels and micro-kernels.
 * @param in_dims     (N, H, W, Cin)
 * @param filter_dims (Cout, KH, KW, Cin)
 * @param out_dims    (N, OH, OW, Cout); output pixel oh = ih*stride_h + kh - pad_h.
 * @param scratch     mengine_k_transpose_conv_get_buffer_size_f32() bytes, float-aligned,
 *                    not overlapping anything
 */
mengine_status mengine_k_transpose_conv_f32(const mengine_k_conv_params *p,
                                            const mengine_k_dims *in_dims, const float *in,
                                            const mengine_k_dims *filter_dims, const float *filter,
                                            const float *bias, const mengine_k_dims *out_dims,
                                            float *out, float *scratch);

/** Scratch bytes mengine_k_transpose_conv_f32() needs: one packed panel of one phase's taps,
 *  MK_CONV_NR * ceil(KH / stride_h) * ceil(KW / stride_w) * Cin floats (0: bad arguments). */
size_t mengine_k_transpose_conv_get_buffer_size_f32(const mengine_k_dims *filter_dims, int stride_h,
                                                    int stride_w);

/**
 * Average pooling; each output divides by the number of input pixels inside
 * the window (padding excluded), as TFLite does.
 */
mengine_status mengine_k_avg_pool_f32(const mengine_k_pool_params *p, const mengine_k_dims *in_dims,
                                      const float *in, const mengine_k_dims *out_dims, float *out);

/** Mean over H and W: (N, H, W, C) -> (N, C). */
mengine_status mengine_k_mean_hw_f32(const mengine_k_dims *in_dims, const float *in, float *out);

/** Mean over the channels (TFLite MEAN over the last axis): in (pixels, channels),
 *  out (pixels); out[p] = sum_c in[p][c] / channels. */
mengine_status mengine_k_mean_c_f32(size_t pixels, size_t channels, const float *in, float *out);

/**
 * Fully connected: out[b][u] = act(sum_i in[b][i] * w[u][i] + bias[u]).
 * @param in (batches, in_depth); w (units, in_depth); bias (units) or NULL; out (batches, units).
 */
mengine_status mengine_k_fully_connected_f32(mengine_k_act act, size_t batches, size_t in_depth,
                                             size_t units, const float *in, const float *w,
                                             const float *bias, float *out);

/** Softmax over the last dim: out = exp(beta*(x - max)) / sum. In place allowed. */
mengine_status mengine_k_softmax_f32(size_t rows, size_t cols, float beta, const float *in,
                                     float *out);

/**
 * out = act(a + b) with broadcasting: each dim of a and b equals the output's or is 1.
 * In place: out may equal whichever of a, b has the output's shape.
 */
mengine_status mengine_k_add_f32(const mengine_k_dims *a_dims, const float *a,
                                 const mengine_k_dims *b_dims, const float *b,
                                 const mengine_k_dims *out_dims, float *out, mengine_k_act act);
/** out = act(a * b) with broadcasting (SE: (N,H,W,C) * (N,1,1,C)); as mengine_k_add_f32(). */
mengine_status mengine_k_mul_f32(const mengine_k_dims *a_dims, const float *a,
                                 const mengine_k_dims *b_dims, const float *b,
                                 const mengine_k_dims *out_dims, float *out, mengine_k_act act);

/** max(x, 0); in place. */
mengine_status mengine_k_relu_f32(const float *in, float *out, size_t n);
/** min(max(x, 0), 6); in place. */
mengine_status mengine_k_relu6_f32(const float *in, float *out, size_t n);
/** x * relu6(x + 3) / 6; in place. */
mengine_status mengine_k_hard_swish_f32(const float *in, float *out, size_t n);
/** 1 / (1 + exp(-x)); in place. */
mengine_status mengine_k_logistic_f32(const float *in, float *out, size_t n);
/** x >= 0 ? x : alpha * x; in place. */
mengine_status mengine_k_leaky_relu_f32(const float *in, float *out, size_t n, float alpha);

/**
 * Zero padding: out[n][h][w][c] = in[n - b0][h - b1][w - b2][c - b3] where
 * that lies inside the input, 0 elsewhere (TFLite PAD with constant 0).
 * @param before   (4) elements of padding before each dim (n, h, w, c), >= 0;
 *                 each output dim is at least the input dim plus its @p before
 *                 (the rest is padding after).
 * @param out      must not overlap @p in.
 */
mengine_status mengine_k_pad_f32(const mengine_k_dims *in_dims, const float *in,
                                 const int32_t before[4], const mengine_k_dims *out_dims,
                                 float *out);

/**
 * Copy one input of a concatenation into its slot of the output:
 * for o < outer: out[o*out_chunk + offset .. + in_chunk) = in[o*in_chunk .. + in_chunk).
 * @param in_chunk  elements of this input per outer index (its axis dim x inner size)
 * @param out_chunk elements of the output per outer index
 * @param offset    elements before this input inside each output chunk
 */
mengine_status mengine_k_concat_part_f32(const float *in, size_t outer, size_t in_chunk, float *out,
                                         size_t out_chunk, size_t offset);

/**
 * Strided slice: out[n][h][w][c] = in[b0 + n*s0][b1 + h*s1][b2 + w*s2][b3 + c*s3]
 * (TFLite SLICE with every stride 1, STRIDED_SLICE with positive strides).
 * @param begin  (4) first index along (n, h, w, c), >= 0
 * @param stride (4) steps, >= 1; every index read must lie inside @p in_dims
 * @param out    must not overlap @p in.
 */
mengine_status mengine_k_slice_f32(const mengine_k_dims *in_dims, const float *in,
                                   const int32_t begin[4], const int32_t stride[4],
                                   const mengine_k_dims *out_dims, float *out);

/** mengine_k_slice_f32() of elements of @p elem bytes (float32, int8). */
mengine_status mengine_k_slice_bytes(const mengine_k_dims *in_dims, const void *in,
                                     const int32_t begin[4], const int32_t stride[4],
                                     const mengine_k_dims *out_dims, void *out, size_t elem);

/**
 * Bilinear resize of H and W as TFLite's RESIZE_BILINEAR (reference kernel):
 * scale = in / out, or (in - 1) / (out - 1) with @p align_corners (out > 1);
 * source v = (o + 0.5) * scale - 0.5 with @p half_pixel_centers, else o * scale;
 * i0 = max(floor(v), 0), i1 = min(ceil(v), in - 1), weight of i1 v - i0;
 * separable along H and W. With half_pixel_centers and no align_corners this is
 * PyTorch's bilinear interpolation with align_corners=False.
 * @param in_dims (N, H, W, C); @p out_dims (N, OH, OW, C).
 * @return MENGINE_ERR_ARG also when both flags are set (TFLite refuses that).
 */
mengine_status mengine_k_resize_bilinear_f32(const mengine_k_dims *in_dims, const float *in,
                                             int align_corners, int half_pixel_centers,
                                             const mengine_k_dims *out_dims, float *out);

/** Fused correlation parameters: displacement k reads the right column x + offset + k*step. */
typedef struct mengine_k_corr_params {
    int32_t offset; /**< right column of displacement 0 minus the left column */
    int32_t step;   /**< change of that column per displacement */
} mengine_k_corr_params;

/**
 * 1-D horizontal correlation (the stereo network's cost volume):
 * out[n][y][x][k] = (1/C) * sum_c l[n][y][x][c] * r[n][y][x + offset + k*step][c],
 * 0 where that column lies outside r. With offset = -d0 and step = -s this is
 * DispNetC's correlation for displacements d0, d0 + s, ... (right features zero
 * outside the image).
 * @param l_dims   (N, H, W, C) left features
 * @param r_dims   (N, H, WR, C) right features
 * @param out_dims (N, H, W, D), one channel per displacement
 */
mengine_status mengine_k_correlation_f32(const mengine_k_corr_params *p,
                                         const mengine_k_dims *l_dims, const float *l,
                                         const mengine_k_dims *r_dims, const float *r,
                                         const mengine_k_dims *out_dims, float *out);

#endif
