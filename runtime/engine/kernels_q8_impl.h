/**
 * @file kernels_q8_impl.h
 * @brief int8 NHWC kernels of the inference engine (CMSIS-NN style names,
 *        `mengine_kq_op_s8`), with TensorFlow Lite's fixed-point arithmetic so
 *        that outputs equal its reference kernels'
 *        (tensorflow/lite/kernels/internal/reference/integer_ops/).
 *
 * Quantization: real = scale * (q - zero_point). Weights are symmetric (zero
 * point 0), per output channel for convolutions; biases int32 at
 * input_scale * weight_scale. A real multiplier M is applied as a Q31 int32
 * M0 and a shift (M = M0 * 2^(shift - 31), mengine_kq_quantize_multiplier()),
 * with gemmlowp's double rounding as TFLite's reference kernels (mengine_kq_mbqm()),
 * FULLY_CONNECTED rounding once as ruy, which TFLite runs it with
 * (mengine_kq_mbqm_single()).
 *
 * Layouts as the float kernels (kernels_impl.h). Kernels never allocate, are
 * single-threaded, and take their per-channel multipliers from the caller
 * (which computes them into the operator's scratch at run time).
 */
#ifndef MANTA_ENGINE_KERNELS_Q8_H
#define MANTA_ENGINE_KERNELS_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "engine/errors.h"
#include "engine/kernels_impl.h"

/* The vector path of the int8 kernels in this build, chosen at compile time (none with
 * MK_Q8_PORTABLE): 1 x86 AVX2 (kernels_q8_simd.c); 2 AArch64 NEON, with SDOT where the target
 * has the dot-product extension (kernels_q8_neon.c); 3 32-bit Arm with the DSP extension
 * (Cortex-M4/M7/M33, Cortex-A7 in 32-bit mode, little-endian: kernels_q8_dsp.c, SMLAD on int16
 * pairs; CONV_2D, DEPTHWISE_CONV_2D and MEAN only, its other *_simd() refuse); 0 none, every *_simd()
 * below returns MENGINE_ERR_UNSUPPORTED (the stubs at the end of kernels_q8_simd.c). Each other
 * path is one file defining every *_simd() function and mengine_kq_has_simd() under its own
 * value. MK_Q8_DSP_MODEL selects the DSP path on any machine, its instructions as plain C
 * (tests/integration/engine_dsp_model.sh: its logic checked on the build machine). */
#define MK_Q8_PATH_NONE 0
#define MK_Q8_PATH_AVX2 1
#define MK_Q8_PATH_NEON 2
#define MK_Q8_PATH_DSP 3
#if defined(MK_Q8_PORTABLE)
#define MK_Q8_PATH MK_Q8_PATH_NONE
#elif defined(MK_Q8_DSP_MODEL)
#define MK_Q8_PATH MK_Q8_PATH_DSP
#elif defined(__AVX2__)
#define MK_Q8_PATH MK_Q8_PATH_AVX2
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define MK_Q8_PATH MK_Q8_PATH_NEON
#elif !defined(__aarch64__) && defined(__ARM_FEATURE_DSP) && !defined(__ARM_BIG_ENDIAN)
#define MK_Q8_PATH MK_Q8_PATH_DSP
#else
#define MK_Q8_PATH MK_Q8_PATH_NONE
#endif

/** Parameters of the int8 operators (one struct for all, kept in the node). */
typedef struct mengine_kq_params {
    int32_t stride_h, stride_w, pad_h, pad_w; /**< convolutions */
    int32_t multiplier;                       /**< depthwise: output channels per input channel */
    int32_t in_zp, in2_zp, out_zp;            /**< zero points of the inputs and the output */
    int32_t act_min, act_max;                 /**< output clamp (fused activation) */
    int32_t mult, shift;                      /**< output requantization (FC, MUL, MEAN, ADD) */
    int32_t mult1, shift1, mult2, shift2;     /**< ADD: the inputs' rescaling */
    int32_t before[4];                        /**< PAD: padding before (n, h, w, c) */
    int16_t hs_out_mult, hs_relu_mult;        /**< HARD_SWISH: Q15 multipliers */
    int32_t hs_out_exp, hs_relu_exp;          /**< HARD_SWISH: their exponents */
    float in_scale, out_scale, beta; /**< per-channel requantization; SOFTMAX; FC: weight scale */
    uint32_t wscales;                /**< model position of the per-channel weight scales */
    uint32_t n_wscales;              /**< how many (1: per-tensor) */
    uint32_t bias;                   /**< model position of the int32 bias, 0: none */
} mengine_kq_params;

/** M = @p m as a Q31 multiplier and a shift (TFLite's QuantizeMultiplier(): frexp, round half
 *  away from zero; M0 = 2^31 becomes 2^30 with shift + 1; shift < -31 gives 0, 0). */
void mengine_kq_quantize_multiplier(double m, int32_t *q, int32_t *shift);

/** gemmlowp's SaturatingRoundingDoublingHighMul (int32). */
static inline int32_t mengine_kq_srdhm(int32_t a, int32_t b)
{
    if (a == b && a == INT32_MIN)
        return INT32_MAX;
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/** gemmlowp's RoundingDivideByPOT: x / 2^e rounded to nearest, ties away from zero. */
static inline int32_t mengine_kq_rdpot(int32_t x, int32_t e)
{
    const int32_t mask = (int32_t)(((int64_t)1 << e) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (remainder > threshold ? 1 : 0);
}

/** TFLite's MultiplyByQuantizedMultiplier, x * q * 2^(shift - 31), with gemmlowp's double
 *  rounding (RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x << left, q), right)):
 *  TFLite's reference kernels (CONV_2D, DEPTHWISE_CONV_2D, ADD, MUL, MEAN). */
static inline int32_t mengine_kq_mbqm(int32_t x, int32_t q, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0, right = shift > 0 ? 0 : -shift;
    return mengine_kq_rdpot(mengine_kq_srdhm((int32_t)((uint32_t)x << left), q), right);
}

/** The same product rounded once, half up: (x * q + 2^(30 - shift)) >> (31 - shift), @p shift
 *  in [-31, 30]: ruy's requantization, which TFLite's FULLY_CONNECTED runs (measured against
 *  ai-edge-litert 2.3's reference resolver: double rounding differs there on near-ties). */
static inline int32_t mengine_kq_mbqm_single(int32_t x, int32_t q, int32_t shift)
{
    const int32_t total = 31 - shift;
    const int64_t r = ((int64_t)x * q + ((int64_t)1 << (total - 1))) >> total;
    return (int32_t)(r < INT32_MIN ? INT32_MIN : r > INT32_MAX ? INT32_MAX : r);
}

/** Output clamp of a fused activation on a tensor of @p scale and @p zp (TFLite's
 *  CalculateActivationRangeQuantized for int8). */
void mengine_kq_act_range(mengine_k_act act, float scale, int32_t zp, int32_t *lo, int32_t *hi);

/** Per-channel multipliers of a convolution: M_c = in_scale * w_scale[c] / out_scale (in
 *  double, as TFLite's PopulateConvolutionQuantizationParams), the @p n scales read as
 *  little-endian floats at @p wscales (one scale: all channels). */
void mengine_kq_channel_multipliers(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                    float out_scale, int32_t channels, int32_t *mult,
                                    int32_t *shift);

/** The portable mengine_kq_channel_multipliers() (reference of the vector path). */
void mengine_kq_channel_multipliers_ref(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift);

/** The vector mengine_kq_channel_multipliers() (AVX2: four channels' products and quotients in
 *  double, NEON: two, frexp and the rounding on the bits; lanes outside [2^-1022, 1e300) through
 *  the portable one): the same values; 0 (nothing written) where the build has no vector path or
 *  for one scale (@p n_scales <= 1), else 1. */
int mengine_kq_channel_multipliers_simd(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift);

/** int16 rows of KH * KW * Cin (rounded up to 16) in the vector CONV_2D's scratch: AVX2, 4 patch
 *  rows (8 with AVX-512) and a panel of 16 output channels' weights (kernels_q8_simd.c); NEON,
 *  20 of them, 10 with SDOT's int8 rows (kernels_q8_neon.c); DSP, the patches of 2 output pixels
 *  (kernels_q8_dsp.c: the weights are read in place), none for 1x1 filters
 *  (MENGINE_KQ_CONV_SCRATCH_1X1 0: their input is read in place). */
#if MK_Q8_PATH == MK_Q8_PATH_DSP
#define MENGINE_KQ_CONV_SCRATCH_ROWS 2
#define MENGINE_KQ_CONV_SCRATCH_1X1 0
#else
#define MENGINE_KQ_CONV_SCRATCH_ROWS 24
#define MENGINE_KQ_CONV_SCRATCH_1X1 1
#endif

/** Scratch bytes of the int8 convolutions of filter @p filter (OHWI; depthwise @p dw:
 *  (1, KH, KW, C)): three int32 per output channel (the multipliers, the shifts, and the
 *  @p work of the kernels below: 1x1 weight sums, or a depthwise pixel's sums); in a build with
 *  vector paths (mengine_kq_has_simd()), CONV_2D also MENGINE_KQ_CONV_SCRATCH_ROWS int16 rows
 *  of KH * KW * Cin rounded up to 16 after them (AVX2: the patches of up to 8 output pixels and a
 *  packed panel of 16 output channels' weights; DSP: the patches of 2 output pixels, none for a
 *  1x1 filter). */
size_t mengine_kq_conv_get_buffer_size(const mengine_k_dims *filter, int dw);

/** XNNPACK's "fp32" requantization of one int32 accumulator: (float)acc * @p scale in float,
 *  clamped to [lo - zp, hi - zp], rounded to the nearest integer (ties to even), plus @p zp
 *  (what LiteRT's default delegate runs for CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED).
 *  @p scale: in_scale * w_scale / out_scale computed in float, in that order. */
int8_t mengine_kq_requant_fp32(int32_t acc, float scale, int32_t zp, int32_t lo, int32_t hi);

/** CONV_2D, int8 (TFLite reference integer_ops::ConvPerChannel); @p work: the scratch after
 *  the multipliers and shifts (mengine_kq_conv_get_buffer_size()). Requantization: TFLite's
 *  fixed point with @p mult and @p shift when @p fscale is NULL, else fp32
 *  (mengine_kq_requant_fp32()) with the per-channel float scales @p fscale (mult and shift
 *  unused, may be NULL). The convolutions below take the same three. */
mengine_status mengine_kq_conv2d_s8(const mengine_kq_params *p, const int32_t *mult,
                                    const int32_t *shift, const float *fscale, int32_t *work,
                                    const mengine_k_dims *in, const int8_t *x,
                                    const mengine_k_dims *f, const int8_t *w, const int32_t *bias,
                                    const mengine_k_dims *out, int8_t *y);

/** The portable C CONV_2D (the reference of the vector path; what mengine_kq_conv2d_s8() runs
 *  where the build has none). Same arguments and results. */
mengine_status mengine_kq_conv2d_s8_ref(const mengine_kq_params *p, const int32_t *mult,
                                        const int32_t *shift, const float *fscale, int32_t *work,
                                        const mengine_k_dims *in, const int8_t *x,
                                        const mengine_k_dims *f, const int8_t *w,
                                        const int32_t *bias, const mengine_k_dims *out, int8_t *y);

/** The vector CONV_2D (kernels_q8_simd.c: x86 AVX2; from 8 output pixels a GEMM over packed
 *  16-channel weight panels with the channels in the lanes, below that dot products per
 *  pixel; kernels_q8_neon.c: AArch64 NEON, the GEMM for every pixel count, SDOT on int8 where
 *  the target has the dot-product extension, else SMLAL on int16; kernels_q8_dsp.c: Arm DSP,
 *  SMLAD over the patches of 2 output pixels and 2 weight rows read in place, 1x1 filters from
 *  the input in place), the same bytes as the portable one; MENGINE_ERR_UNSUPPORTED (nothing
 *  written) where the build has no vector path (DSP: or an input zero point outside
 *  [-128, 127], or a 1x1 filter with padding). Arguments checked by the caller; @p work as
 *  mengine_kq_conv_get_buffer_size() sizes it. */
mengine_status mengine_kq_conv2d_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                         const int32_t *shift, const float *fscale, int32_t *work,
                                         const mengine_k_dims *in, const int8_t *x,
                                         const mengine_k_dims *f, const int8_t *w,
                                         const int32_t *bias, const mengine_k_dims *out, int8_t *y);

/** DEPTHWISE_CONV_2D, int8 (integer_ops::DepthwiseConvPerChannel); @p work: one int32 per
 *  output channel at least (a pixel's sums, channels innermost). */
mengine_status mengine_kq_depthwise_conv_s8(const mengine_kq_params *p, const int32_t *mult,
                                            const int32_t *shift, const float *fscale,
                                            int32_t *work, const mengine_k_dims *in,
                                            const int8_t *x, const mengine_k_dims *f,
                                            const int8_t *w, const int32_t *bias,
                                            const mengine_k_dims *out, int8_t *y);

/** The portable C DEPTHWISE_CONV_2D (reference of the vector path). */
mengine_status mengine_kq_depthwise_conv_s8_ref(const mengine_kq_params *p, const int32_t *mult,
                                                const int32_t *shift, const float *fscale,
                                                int32_t *work, const mengine_k_dims *in,
                                                const int8_t *x, const mengine_k_dims *f,
                                                const int8_t *w, const int32_t *bias,
                                                const mengine_k_dims *out, int8_t *y);

/** The vector DEPTHWISE_CONV_2D (depth multiplier 1; MENGINE_ERR_UNSUPPORTED otherwise or
 *  where the build has no vector path), the same bytes as the portable one. */
mengine_status mengine_kq_depthwise_conv_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                                 const int32_t *shift, const float *fscale,
                                                 int32_t *work, const mengine_k_dims *in,
                                                 const int8_t *x, const mengine_k_dims *f,
                                                 const int8_t *w, const int32_t *bias,
                                                 const mengine_k_dims *out, int8_t *y);

/** The portable ADD and MUL (references of the vector path). */
mengine_status mengine_kq_add_s8_ref(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y);
mengine_status mengine_kq_mul_s8_ref(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y);

/** The vector ADD (@p add 1) or MUL (0) for inputs of the output's shape, or @p b along the
 *  channels of a batch-1 output; MENGINE_ERR_UNSUPPORTED for other broadcasts or where the
 *  build has no vector path. The same bytes as the portable kernels. */
mengine_status mengine_kq_binary_s8_simd(const mengine_kq_params *p, int add,
                                         const mengine_k_dims *ad, const int8_t *a,
                                         const mengine_k_dims *bd, const int8_t *b,
                                         const mengine_k_dims *od, int8_t *y);

/** 1 where this build of the engine has vector paths for the int8 kernels (x86 AVX2, AArch64
 *  NEON; Arm DSP, for CONV_2D, DEPTHWISE_CONV_2D and MEAN only), else 0. */
int mengine_kq_has_simd(void);

/** FULLY_CONNECTED, int8, per-tensor weights: @p rows input rows of @p depth, @p units outputs
 *  each; p->mult, p->shift, applied with one rounding (mengine_kq_mbqm_single()), or with
 *  @p fscale > 0 fp32 requantization at that scale (mengine_kq_requant_fp32()). */
mengine_status mengine_kq_fully_connected_s8(const mengine_kq_params *p, float fscale, int32_t rows,
                                             int32_t depth, int32_t units, const int8_t *x,
                                             const int8_t *w, const int32_t *bias, int8_t *y);

/** ADD, int8, with right-aligned broadcasting (integer_ops::Add / BroadcastAdd4DSlow; in place). */
mengine_status mengine_kq_add_s8(const mengine_kq_params *p, const mengine_k_dims *ad,
                                 const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                 const mengine_k_dims *od, int8_t *y);

/** MUL, int8, with broadcasting (integer_ops::Mul / BroadcastMul4DSlow; in place). */
mengine_status mengine_kq_mul_s8(const mengine_kq_params *p, const mengine_k_dims *ad,
                                 const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                 const mengine_k_dims *od, int8_t *y);

/** ADD as XNNPACK's qs8 kernel computes it (the fp32 requantization mode): multipliers
 *  a_scale / out_scale and b_scale / out_scale (float) times 2^shift rounded to integers
 *  (shift = 20 - the larger one's exponent), bias + a * a_mult + b * b_mult shifted right,
 *  clamped, plus the zero point. Scales from p->in_scale (a), p->beta (b), p->out_scale;
 *  ratios outside XNNPACK's [2^-10, 2^8) run mengine_kq_add_s8(). Broadcasting as there. */
mengine_status mengine_kq_add_s8_xnn(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y);

/** MUL as XNNPACK's qs8 kernel: (a - a_zp) * (b - b_zp) requantized in fp32
 *  (mengine_kq_requant_fp32()) at a_scale * b_scale / out_scale (float; p->in_scale, p->beta,
 *  p->out_scale). */
mengine_status mengine_kq_mul_s8_xnn(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y);

/** PAD, int8: the padding is @p value (the zero point). */
mengine_status mengine_kq_pad_s8(const mengine_k_dims *in, const int8_t *x, const int32_t *before,
                                 const mengine_k_dims *out, int8_t *y, int8_t value);

/** MEAN over H and W, int8, as TFLite's reference QuantizedMeanOrSum (the count folded into
 *  the multiplier): p->in_zp, p->out_zp, p->mult, p->shift (of in_scale / out_scale); the
 *  vector path where the build has one. */
mengine_status mengine_kq_mean_hw_s8(const mengine_kq_params *p, const mengine_k_dims *in,
                                     const int8_t *x, int8_t *y);

/** The portable MEAN over H and W (reference of the vector path). */
mengine_status mengine_kq_mean_hw_s8_ref(const mengine_kq_params *p, const mengine_k_dims *in,
                                         const int8_t *x, int8_t *y);

/** The vector MEAN over H and W (AVX2: 8 channels per lane group; NEON: 16; DSP: 4 channels per
 *  32-bit load, summed in int16 pairs by SXTAB16 over up to 256 pixels at a time), the same bytes;
 *  MENGINE_ERR_UNSUPPORTED where the build has none. */
mengine_status mengine_kq_mean_hw_s8_simd(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y);

/** MEAN's multiplier and shift for @p count values (TFLite's QuantizedMeanOrSum: p->mult and
 *  p->shift with 1 / count folded in). */
void mengine_kq_mean_count_multiplier(const mengine_kq_params *p, int32_t count, int32_t *mult,
                                      int32_t *shift);

/** MEAN over H and W in fp32 requantization (the XNNPACK mode): the sum of (x - in_zp) times
 *  in_scale / (out_scale * count) in float (p->in_scale, p->out_scale), rounded to nearest even
 *  (mengine_kq_requant_fp32()). */
mengine_status mengine_kq_mean_hw_s8_fp32(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y);

/** HARD_SWISH, int8 (reference_ops::HardSwish with TFLite's HardSwishParams; in place): the
 *  vector path where the build has one, else the portable one. */
mengine_status mengine_kq_hard_swish_s8(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                        size_t n);

/** The portable HARD_SWISH (reference of the vector path). */
mengine_status mengine_kq_hard_swish_s8_ref(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                            size_t n);

/** The vector HARD_SWISH (x86 AVX2: TFLite's int16 steps on 16 lanes; NEON: on 8), the same bytes as the
 *  portable one; MENGINE_ERR_UNSUPPORTED (nothing written) where the build has no vector path
 *  or for exponents outside prepare's range. */
mengine_status mengine_kq_hard_swish_s8_simd(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                             size_t n);

/** HARD_SWISH's parameters from the input and output quantization (TFLite's
 *  HardSwishPrepare); 0 when the output multiplier's exponent is positive (refused). */
int mengine_kq_hard_swish_params(float in_scale, float out_scale, mengine_kq_params *p);

/** SOFTMAX, int8 in, int8 out at scale 1/256 and zero point -128: the probabilities
 *  computed in float from the dequantized input, rounded to nearest (within 1 LSB of
 *  TFLite's fixed-point kernels). */
mengine_status mengine_kq_softmax_s8(const mengine_kq_params *p, size_t rows, size_t cols,
                                     const int8_t *x, int8_t *y);

#endif
