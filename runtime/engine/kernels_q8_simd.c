/* Vector paths of the int8 kernels (see kernels_q8_impl.h), chosen at build
 * time: x86 AVX2 (int16 products summed in pairs into int32 by VPMADDWD, the
 * fixed-point requantization of TFLite's reference kernels in 32- and 64-bit
 * lanes). Results are the same bytes as the portable kernels'
 * (mengine_kq_*_ref(), compared by tests/unit/test_engine_q8.c); every function
 * returns MENGINE_ERR_UNSUPPORTED where the build has no vector path or the
 * shape is not one it handles, and the caller then runs the portable kernel. */
#include <string.h>

#include "engine/kernels_q8_impl.h"

#if defined(__AVX2__) && !defined(MK_Q8_PORTABLE)
#include <immintrin.h>

/* gemmlowp's double-rounding MultiplyByQuantizedMultiplier on 8 lanes (mengine_kq_mbqm()),
 * multipliers in [0, 2^31) (QuantizeMultiplier's: the saturating case never occurs), then
 * + zero point and the clamp. */
#if defined(__GNUC__)
#define Q8_INLINE static inline __attribute__((always_inline))
#else
#define Q8_INLINE static inline
#endif

Q8_INLINE __m256i requant8(__m256i x, __m256i q, __m256i shift, __m256i zp, __m256i lo, __m256i hi)
{
    const __m256i zero = _mm256_setzero_si256();
    const __m256i left = _mm256_max_epi32(shift, zero);
    const __m256i right = _mm256_max_epi32(_mm256_sub_epi32(zero, shift), zero);
    x = _mm256_sllv_epi32(x, left);
    /* SaturatingRoundingDoublingHighMul: (x * q + nudge) / 2^31, toward zero, in 64 bits */
    const __m256i pos = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i neg = _mm256_set1_epi64x(1 - ((int64_t)1 << 30));
    const __m256i round0 = _mm256_set1_epi64x(((int64_t)1 << 31) - 1);
    __m256i pe = _mm256_mul_epi32(x, q);
    __m256i po = _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(q, 32));
    __m256i me = _mm256_cmpgt_epi64(zero, pe), mo = _mm256_cmpgt_epi64(zero, po);
    pe = _mm256_add_epi64(pe, _mm256_blendv_epi8(pos, neg, me));
    po = _mm256_add_epi64(po, _mm256_blendv_epi8(pos, neg, mo));
    pe = _mm256_add_epi64(pe, _mm256_and_si256(me, round0)); /* toward zero when negative */
    po = _mm256_add_epi64(po, _mm256_and_si256(mo, round0));
    /* the quotient fits 32 bits: a logical shift gives its low half */
    pe = _mm256_srli_epi64(pe, 31);
    po = _mm256_slli_epi64(_mm256_srli_epi64(po, 31), 32);
    __m256i h = _mm256_blend_epi32(pe, po, 0xaa);
    /* RoundingDivideByPOT(h, right) */
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
    const __m256i rem = _mm256_and_si256(h, mask);
    const __m256i thr = _mm256_sub_epi32(_mm256_srai_epi32(mask, 1), _mm256_cmpgt_epi32(zero, h));
    h = _mm256_sub_epi32(_mm256_srav_epi32(h, right), _mm256_cmpgt_epi32(rem, thr));
    h = _mm256_add_epi32(h, zp);
    return _mm256_min_epi32(_mm256_max_epi32(h, lo), hi);
}

/* XNNPACK's fp32 requantization on 8 lanes (mengine_kq_requant_fp32()): no FMA, a product
 * rounded to float as the scalar one */
Q8_INLINE __m256i requant8f(__m256i x, __m256 scale, __m256i zp, __m256i lo, __m256i hi)
{
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(x), scale);
    const __m256 vlo = _mm256_cvtepi32_ps(_mm256_sub_epi32(lo, zp));
    const __m256 vhi = _mm256_cvtepi32_ps(_mm256_sub_epi32(hi, zp));
    v = _mm256_min_ps(_mm256_max_ps(v, vlo), vhi); /* NaN: max_ps gives vlo */
    return _mm256_add_epi32(_mm256_cvtps_epi32(v), zp);
}

/* 8 lanes of float scales from @p c (n < 8: the rest 0) */
Q8_INLINE __m256 load_chf(const float *c, int32_t n)
{
    float t[8] = {0};
    memcpy(t, c, (size_t)n * sizeof *t);
    return _mm256_loadu_ps(t);
}

/* the 8 low bytes of 8 int32 lanes already in [-128, 127] */
Q8_INLINE void store8(int8_t *y, __m256i v, int32_t n)
{
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    const __m128i b = _mm_packs_epi16(w, w);
    if (n == 8) {
        _mm_storel_epi64((__m128i *)(void *)y, b);
    } else {
        int8_t t[16];
        _mm_storeu_si128((__m128i *)(void *)t, b);
        memcpy(y, t, (size_t)n);
    }
}

/* 8 lanes of per-channel values from @p c (n < 8: the rest 0) */
Q8_INLINE __m256i load_ch(const int32_t *c, int32_t n)
{
    if (n == 8)
        return _mm256_loadu_si256((const __m256i *)(const void *)c);
    int32_t t[8] = {0};
    memcpy(t, c, (size_t)n * sizeof *t);
    return _mm256_loadu_si256((const __m256i *)(const void *)t);
}

/* sums of the 8 lanes of each of a0..a7, as the 8 lanes of the result */
Q8_INLINE __m256i hsum8(const __m256i a[8])
{
    const __m256i s01 = _mm256_hadd_epi32(a[0], a[1]), s23 = _mm256_hadd_epi32(a[2], a[3]);
    const __m256i s45 = _mm256_hadd_epi32(a[4], a[5]), s67 = _mm256_hadd_epi32(a[6], a[7]);
    const __m256i t0 = _mm256_hadd_epi32(s01, s23), t1 = _mm256_hadd_epi32(s45, s67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(t0, t1, 0x20),
                            _mm256_permute2x128_si256(t0, t1, 0x31));
}

mengine_status mengine_kq_conv2d_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                         const int32_t *shift, const float *fscale, int32_t *work,
                                         const mengine_k_dims *in, const int8_t *x,
                                         const mengine_k_dims *f, const int8_t *w,
                                         const int32_t *bias, const mengine_k_dims *out, int8_t *y)
{
    const int32_t cin = in->c, kh = f->h, kw = f->w, cout = out->c;
    const int32_t klen = kh * kw * cin, kpad = (klen + 15) / 16 * 16;
    /* the patch of one output pixel, (x - zero point) as int16 in the filter's (KH, KW, Cin)
     * order, zeros for the padding and up to a multiple of 16 */
    int16_t *patch = (int16_t *)(void *)(work + (cout > 0 ? cout : 1));
    const size_t wbytes = (size_t)cout * (size_t)klen;
    const __m256i zp = _mm256_set1_epi32(p->out_zp), lo = _mm256_set1_epi32(p->act_min),
                  hi = _mm256_set1_epi32(p->act_max);
    const __m256i izp = _mm256_set1_epi16((int16_t)p->in_zp);
    for (int32_t i = klen; i < kpad; i++)
        patch[i] = 0;
    for (int32_t n = 0; n < out->n; n++)
        for (int32_t oy = 0; oy < out->h; oy++)
            for (int32_t ox = 0; ox < out->w; ox++) {
                const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
                int16_t *pp = patch;
                for (int32_t ky = 0; ky < kh; ky++)
                    for (int32_t kx = 0; kx < kw; kx++, pp += cin) {
                        const int32_t iy = y0 + ky, ix = x0 + kx;
                        if (iy < 0 || iy >= in->h || ix < 0 || ix >= in->w) {
                            memset(pp, 0, (size_t)cin * sizeof *pp);
                            continue;
                        }
                        const int8_t *xi = x + (((size_t)n * in->h + iy) * in->w + ix) * cin;
                        int32_t ic = 0;
                        for (; ic + 16 <= cin; ic += 16) {
                            const __m256i v = _mm256_cvtepi8_epi16(
                                _mm_loadu_si128((const __m128i *)(const void *)(xi + ic)));
                            _mm256_storeu_si256((__m256i *)(void *)(pp + ic),
                                                _mm256_sub_epi16(v, izp));
                        }
                        for (; ic < cin; ic++)
                            pp[ic] = (int16_t)(xi[ic] - p->in_zp);
                    }
                int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * cout;
                for (int32_t oc = 0; oc < cout; oc += 8) {
                    const int32_t nc = cout - oc < 8 ? cout - oc : 8;
                    const int8_t *row[8];
                    __m256i acc[8];
                    for (int32_t j = 0; j < 8; j++) {
                        row[j] = w + (size_t)(oc + (j < nc ? j : nc - 1)) * klen;
                        acc[j] = _mm256_setzero_si256();
                    }
                    int32_t k = 0;
                    for (; k + 16 <= klen; k += 16) {
                        const __m256i xv =
                            _mm256_loadu_si256((const __m256i *)(const void *)(patch + k));
                        for (int32_t j = 0; j < 8; j++) {
                            const __m256i wv = _mm256_cvtepi8_epi16(
                                _mm_loadu_si128((const __m128i *)(const void *)(row[j] + k)));
                            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(xv, wv));
                        }
                    }
                    if (k < klen) { /* the tail: 16 weight bytes where the buffer has them (the
                                     * patch's zeros cancel the bytes past the row) */
                        const __m256i xv =
                            _mm256_loadu_si256((const __m256i *)(const void *)(patch + k));
                        for (int32_t j = 0; j < 8; j++) {
                            const int8_t *src = row[j] + k;
                            int8_t t[16];
                            if ((size_t)(src - w) + 16 > wbytes) {
                                memset(t, 0, sizeof t);
                                memcpy(t, src, (size_t)(klen - k));
                                src = t;
                            }
                            const __m256i wv = _mm256_cvtepi8_epi16(
                                _mm_loadu_si128((const __m128i *)(const void *)src));
                            acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(xv, wv));
                        }
                    }
                    __m256i s = hsum8(acc);
                    if (bias)
                        s = _mm256_add_epi32(s, load_ch(bias + oc, nc));
                    s = fscale ? requant8f(s, load_chf(fscale + oc, nc), zp, lo, hi)
                               : requant8(s, load_ch(mult + oc, nc), load_ch(shift + oc, nc), zp,
                                          lo, hi);
                    store8(yo + oc, s, nc);
                }
            }
    return MENGINE_OK;
}

mengine_status mengine_kq_depthwise_conv_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                                 const int32_t *shift, const float *fscale,
                                                 int32_t *work, const mengine_k_dims *in,
                                                 const int8_t *x, const mengine_k_dims *f,
                                                 const int8_t *w, const int32_t *bias,
                                                 const mengine_k_dims *out, int8_t *y)
{
    (void)work;
    if (p->multiplier != 1)
        return MENGINE_ERR_UNSUPPORTED;
    const int32_t kh = f->h, kw = f->w, c = out->c;
    const __m256i zp = _mm256_set1_epi32(p->out_zp), lo = _mm256_set1_epi32(p->act_min),
                  hi = _mm256_set1_epi32(p->act_max);
    const __m256i izp = _mm256_set1_epi16((int16_t)p->in_zp);
    for (int32_t n = 0; n < out->n; n++)
        for (int32_t oy = 0; oy < out->h; oy++)
            for (int32_t ox = 0; ox < out->w; ox++) {
                const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
                int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * c;
                for (int32_t c0 = 0; c0 < c; c0 += 16) {
                    const int32_t nc = c - c0 < 16 ? c - c0 : 16;
                    __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky;
                        if (iy < 0 || iy >= in->h)
                            continue;
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx;
                            if (ix < 0 || ix >= in->w)
                                continue;
                            const int8_t *xi = x + (((size_t)n * in->h + iy) * in->w + ix) * c + c0;
                            const int8_t *wi = w + ((size_t)ky * kw + kx) * c + c0;
                            __m128i xb, wb;
                            if (nc == 16) {
                                xb = _mm_loadu_si128((const __m128i *)(const void *)xi);
                                wb = _mm_loadu_si128((const __m128i *)(const void *)wi);
                            } else {
                                int8_t tx[16] = {0}, tw[16] = {0};
                                memcpy(tx, xi, (size_t)nc);
                                memcpy(tw, wi, (size_t)nc);
                                xb = _mm_loadu_si128((const __m128i *)(const void *)tx);
                                wb = _mm_loadu_si128((const __m128i *)(const void *)tw);
                            }
                            /* |x - zp| <= 255, |w| <= 128: the product fits int16 */
                            const __m256i xv = _mm256_sub_epi16(_mm256_cvtepi8_epi16(xb), izp);
                            const __m256i pr = _mm256_mullo_epi16(xv, _mm256_cvtepi8_epi16(wb));
                            a0 = _mm256_add_epi32(
                                a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(pr)));
                            a1 = _mm256_add_epi32(
                                a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(pr, 1)));
                        }
                    }
                    const int32_t n0 = nc < 8 ? nc : 8, n1 = nc - n0;
                    if (bias)
                        a0 = _mm256_add_epi32(a0, load_ch(bias + c0, n0));
                    a0 = fscale ? requant8f(a0, load_chf(fscale + c0, n0), zp, lo, hi)
                                : requant8(a0, load_ch(mult + c0, n0), load_ch(shift + c0, n0), zp,
                                           lo, hi);
                    store8(yo + c0, a0, n0);
                    if (n1 > 0) {
                        if (bias)
                            a1 = _mm256_add_epi32(a1, load_ch(bias + c0 + 8, n1));
                        a1 = fscale ? requant8f(a1, load_chf(fscale + c0 + 8, n1), zp, lo, hi)
                                    : requant8(a1, load_ch(mult + c0 + 8, n1),
                                               load_ch(shift + c0 + 8, n1), zp, lo, hi);
                        store8(yo + c0 + 8, a1, n1);
                    }
                }
            }
    return MENGINE_OK;
}

/* 8 int8 values from @p a (n < 8: the rest 0) as int32 lanes */
Q8_INLINE __m256i load8(const int8_t *a, int32_t n)
{
    if (n == 8)
        return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)a));
    int8_t t[16] = {0};
    memcpy(t, a, (size_t)n);
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)t));
}

/* ADD (add != 0: integer_ops::Add's arithmetic) or MUL of 8 lanes */
Q8_INLINE __m256i binary8(const mengine_kq_params *p, int add, __m256i a, __m256i b)
{
    const __m256i zero = _mm256_setzero_si256();
    const __m256i wide_lo = _mm256_set1_epi32(INT32_MIN), wide_hi = _mm256_set1_epi32(INT32_MAX);
    const __m256i lo = _mm256_set1_epi32(p->act_min), hi = _mm256_set1_epi32(p->act_max);
    a = _mm256_sub_epi32(a, _mm256_set1_epi32(p->in_zp));
    b = _mm256_sub_epi32(b, _mm256_set1_epi32(p->in2_zp));
    __m256i v;
    if (add) {
        a = requant8(_mm256_slli_epi32(a, 20), _mm256_set1_epi32(p->mult1),
                     _mm256_set1_epi32(p->shift1), zero, wide_lo, wide_hi);
        b = requant8(_mm256_slli_epi32(b, 20), _mm256_set1_epi32(p->mult2),
                     _mm256_set1_epi32(p->shift2), zero, wide_lo, wide_hi);
        v = _mm256_add_epi32(a, b);
    } else {
        v = _mm256_mullo_epi32(a, b);
    }
    v = requant8(v, _mm256_set1_epi32(p->mult), _mm256_set1_epi32(p->shift), zero, wide_lo,
                 wide_hi);
    v = _mm256_add_epi32(v, _mm256_set1_epi32(p->out_zp));
    return _mm256_min_epi32(_mm256_max_epi32(v, lo), hi);
}

mengine_status mengine_kq_binary_s8_simd(const mengine_kq_params *p, int add,
                                         const mengine_k_dims *ad, const int8_t *a,
                                         const mengine_k_dims *bd, const int8_t *b,
                                         const mengine_k_dims *od, int8_t *y)
{
    const size_t total = (size_t)od->n * od->h * od->w * od->c;
    const int a_full = ad->n == od->n && ad->h == od->h && ad->w == od->w && ad->c == od->c;
    const int b_full = bd->n == od->n && bd->h == od->h && bd->w == od->w && bd->c == od->c;
    if (!a_full)
        return MENGINE_ERR_UNSUPPORTED;
    if (b_full) {
        for (size_t i = 0; i < total; i += 8) {
            const int32_t n = total - i < 8 ? (int32_t)(total - i) : 8;
            store8(y + i, binary8(p, add, load8(a + i, n), load8(b + i, n)), n);
        }
        return MENGINE_OK;
    }
    if (bd->n == 1 && bd->h == 1 && bd->w == 1 && bd->c == od->c && od->n == 1) {
        const int32_t c = od->c;
        for (size_t i = 0; i < total; i += (size_t)c) /* b along the channels */
            for (int32_t k = 0; k < c; k += 8) {
                const int32_t n = c - k < 8 ? c - k : 8;
                store8(y + i + k, binary8(p, add, load8(a + i + k, n), load8(b + k, n)), n);
            }
        return MENGINE_OK;
    }
    return MENGINE_ERR_UNSUPPORTED;
}

int mengine_kq_has_simd(void) { return 1; }

#else /* no vector path in this build */

mengine_status mengine_kq_conv2d_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                         const int32_t *shift, const float *fscale, int32_t *work,
                                         const mengine_k_dims *in, const int8_t *x,
                                         const mengine_k_dims *f, const int8_t *w,
                                         const int32_t *bias, const mengine_k_dims *out, int8_t *y)
{
    (void)p, (void)mult, (void)shift, (void)fscale, (void)work, (void)in, (void)x, (void)f, (void)w,
        (void)bias;
    (void)out, (void)y;
    return MENGINE_ERR_UNSUPPORTED;
}

mengine_status mengine_kq_depthwise_conv_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                                 const int32_t *shift, const float *fscale,
                                                 int32_t *work, const mengine_k_dims *in,
                                                 const int8_t *x, const mengine_k_dims *f,
                                                 const int8_t *w, const int32_t *bias,
                                                 const mengine_k_dims *out, int8_t *y)
{
    (void)p, (void)mult, (void)shift, (void)fscale, (void)work, (void)in, (void)x, (void)f, (void)w,
        (void)bias;
    (void)out, (void)y;
    return MENGINE_ERR_UNSUPPORTED;
}

mengine_status mengine_kq_binary_s8_simd(const mengine_kq_params *p, int add,
                                         const mengine_k_dims *ad, const int8_t *a,
                                         const mengine_k_dims *bd, const int8_t *b,
                                         const mengine_k_dims *od, int8_t *y)
{
    (void)p, (void)add, (void)ad, (void)a, (void)bd, (void)b, (void)od, (void)y;
    return MENGINE_ERR_UNSUPPORTED;
}

int mengine_kq_has_simd(void) { return 0; }

#endif
