/**
 * @file kernels_q8_stereo_impl.h
 * @brief int8 NHWC kernels of the stereo operators (TRANSPOSE_CONV, LEAKY_RELU,
 *        RESIZE_BILINEAR, MEAN over the channels, QUANTIZE int8 -> int8, SLICE,
 *        CONCATENATION) and the fused int8 correlation, with TensorFlow Lite's
 *        reference arithmetic (tensorflow/lite/kernels/internal/reference/) so that
 *        outputs equal its reference kernels'. Quantization and requantization as
 *        kernels_q8_impl.h (real = scale * (q - zero_point); a real multiplier as a Q31
 *        int32 and a shift, applied with mengine_kq_mbqm()). Kernels never allocate and
 *        are single-threaded. Not part of the public API.
 */
#ifndef MANTA_ENGINE_KERNELS_Q8_STEREO_H
#define MANTA_ENGINE_KERNELS_Q8_STEREO_H

#include <stddef.h>
#include <stdint.h>

#include "engine/kernels_q8_impl.h"

/** Scratch bytes of the int8 TRANSPOSE_CONV of filter @p filter (OHWI) into @p out at strides
 *  @p stride_h, @p stride_w: two int32 per output channel (the multipliers and the shifts),
 *  then the @p work of mengine_kq_transpose_conv_s8(): the larger of what its sub-pixel form
 *  needs (a phase's stride-1 filter, Cout x ceil(KH / SH) x ceil(KW / SW) x Cin int8; one
 *  output row of a phase, ceil(OW / SW) x Cout int8; mengine_kq_conv_get_buffer_size() of that
 *  filter) and what mengine_kq_transpose_conv_s8_ref() needs (one int32 per output channel and
 *  one int16 per input channel rounded up to 8). 0 for invalid dimensions. */
size_t mengine_kq_transpose_conv_get_buffer_size(const mengine_k_dims *filter,
                                                 const mengine_k_dims *out, int32_t stride_h,
                                                 int32_t stride_w);

/** TRANSPOSE_CONV, int8 (integer_ops::TransposeConv): input @p x (N, H, W, Cin), weights
 *  @p w OHWI (Cout, KH, KW, Cin) symmetric per output channel, @p bias (Cout) int32 or NULL,
 *  output @p y (N, OH, OW, Cout). Each output value is the sum over the input pixels and
 *  taps that reach it of (x - p->in_zp) * w, plus the bias, requantized with the channel's
 *  @p mult and @p shift, plus p->out_zp, clamped to [p->act_min, p->act_max]. Strides and
 *  padding before from p->stride_h/w and p->pad_h/w (output pixel o is reached by input i
 *  and tap k where o = i * stride - pad + k). Sub-pixel form: the outputs of one phase
 *  (oy mod SH, ox mod SW) are a stride-1 convolution of the input with that phase's taps,
 *  run row by row through mengine_kq_conv2d_s8() (and so its vector paths) and written every
 *  SH rows and SW columns; the int32 sums are exact, so the bytes are those of
 *  mengine_kq_transpose_conv_s8_ref(), which runs instead where a phase's padding would be
 *  negative (a padding of at least a stride). @p work: the scratch after the multipliers and
 *  shifts (mengine_kq_transpose_conv_get_buffer_size()). */
mengine_status mengine_kq_transpose_conv_s8(const mengine_kq_params *p, const int32_t *mult,
                                            const int32_t *shift, int32_t *work,
                                            const mengine_k_dims *in, const int8_t *x,
                                            const mengine_k_dims *f, const int8_t *w,
                                            const int32_t *bias, const mengine_k_dims *out,
                                            int8_t *y);

/** mengine_kq_transpose_conv_s8() computed output pixel by output pixel with the taps of its
 *  phase, in plain loops (the reference the sub-pixel form is tested against). */
mengine_status mengine_kq_transpose_conv_s8_ref(const mengine_kq_params *p, const int32_t *mult,
                                                const int32_t *shift, int32_t *work,
                                                const mengine_k_dims *in, const int8_t *x,
                                                const mengine_k_dims *f, const int8_t *w,
                                                const int32_t *bias, const mengine_k_dims *out,
                                                int8_t *y);

/** LEAKY_RELU, int8 (reference_ops::QuantizeLeakyRelu): v = x - p->in_zp; v >= 0:
 *  p->out_zp + mbqm(v, p->mult, p->shift) (in_scale / out_scale), else
 *  p->out_zp + mbqm(v, p->mult1, p->shift1) (in_scale * alpha / out_scale); clamped to
 *  int8. @p n values; in place allowed. */
mengine_status mengine_kq_leaky_relu_s8(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                        size_t n);

/** RESIZE_BILINEAR, int8 (reference_ops::ResizeBilinearInteger): scales in 10-bit fixed
 *  point ((in << 10) + out / 2) / out, @p half_pixel centres or not (align_corners is not
 *  supported: the caller refuses it), 20-bit products rounded half away from zero. The
 *  output has the input's quantization. */
mengine_status mengine_kq_resize_bilinear_s8(const mengine_k_dims *in, const int8_t *x,
                                             int half_pixel, const mengine_k_dims *out, int8_t *y);

/** MEAN over the last axis, int8 (TFLite's reference QuantizedMeanOrSum: the count folded
 *  into the multiplier as mengine_kq_mean_hw_s8() does): @p rows rows of @p cols values;
 *  p->in_zp, p->out_zp, p->mult and p->shift of in_scale / out_scale. */
mengine_status mengine_kq_mean_c_s8(const mengine_kq_params *p, size_t rows, int32_t cols,
                                    const int8_t *x, int8_t *y);

/** The multiplier and shift QuantizedMeanOrSum applies to a sum of @p count values, from
 *  @p mult and @p shift of in_scale / out_scale. */
void mengine_kq_mean_multiplier(int32_t mult, int32_t shift, int32_t count, int32_t *out_mult,
                                int32_t *out_shift);

/** QUANTIZE of an int8 tensor into another int8 quantization (reference_ops::Requantize):
 *  p->out_zp + mbqm(x - p->in_zp, p->mult, p->shift), clamped to int8; @p n values. */
mengine_status mengine_kq_requantize_s8(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                        size_t n);

/** SLICE / STRIDED_SLICE of int8 values: as mengine_k_slice_f32() on bytes. */
mengine_status mengine_kq_slice_s8(const mengine_k_dims *in, const int8_t *x, const int32_t *begin,
                                   const int32_t *stride, const mengine_k_dims *out, int8_t *y);

/** Fused int8 correlation parameters (the PAD / SLICE / MUL / MEAN / CONCATENATION pattern
 *  of fuse_impl.h with one quantization for every displacement's MUL and MEAN). */
typedef struct mengine_kq_corr_params {
    int32_t offset, step;        /**< as ::mengine_k_corr_params */
    int32_t l_zp, r_zp;          /**< zero points of the left and right features (and the PAD) */
    int32_t mul_mult, mul_shift; /**< MUL: l_scale * r_scale / mul_scale */
    int32_t mul_zp, mul_min, mul_max; /**< MUL output: zero point, clamp */
    int32_t mean_mult, mean_shift;    /**< MEAN: mengine_kq_mean_multiplier() of C values */
    int32_t out_zp;                   /**< the means' and the concatenation's zero point */
} mengine_kq_corr_params;

/** The fused int8 correlation: for every left pixel and displacement k, the MUL of each
 *  channel with the right features at column x + offset + k * step (the PAD's zero point
 *  r_zp outside them) requantized and clamped as TFLite's int8 MUL, then the mean over the
 *  channels of those int8 values requantized as its int8 MEAN: the bytes the unfused
 *  operators write. Dims as mengine_k_correlation_f32(). */
mengine_status mengine_kq_correlation_s8(const mengine_kq_corr_params *p, const mengine_k_dims *ld,
                                         const int8_t *l, const mengine_k_dims *rd, const int8_t *r,
                                         const mengine_k_dims *od, int8_t *out);

#endif
