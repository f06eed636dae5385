/* Vector paths of the int8 kernels (see kernels_q8_impl.h), chosen at build
 * time: x86 AVX2 (int16 products summed in pairs into int32 by VPMADDWD, the
 * fixed-point requantization of TFLite's reference kernels in 32- and 64-bit
 * lanes). Results are the same bytes as the portable kernels'
 * (mengine_kq_*_ref(), compared by tests/unit/test_engine_q8.c); every function
 * returns MENGINE_ERR_UNSUPPORTED where the build has no vector path or the
 * shape is not one it handles, and the caller then runs the portable kernel. */
#include <string.h>

#include "engine/kernels_q8_impl.h"

#if MK_Q8_PATH == MK_Q8_PATH_AVX2
#include <immintrin.h>

#if defined(__GNUC__)
#define Q8_INLINE static inline __attribute__((always_inline))
#else
#define Q8_INLINE static inline
#endif

/* TFLite's requantization constants of 8 channels: the Q31 multiplier (its odd lanes also in
 * the even halves), the left and right shifts, RoundingDivideByPOT's mask and half mask. */
typedef struct rq8 {
    __m256i q, qo, left, right, mask, half;
} rq8;

Q8_INLINE rq8 rq8_make(__m256i q, __m256i shift)
{
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
    rq8 c;
    c.q = q;
    c.qo = _mm256_srli_epi64(q, 32);
    c.left = _mm256_max_epi32(shift, zero);
    c.right = _mm256_max_epi32(_mm256_sub_epi32(zero, shift), zero);
    c.mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, c.right), one);
    c.half = _mm256_srai_epi32(c.mask, 1);
    return c;
}

/* gemmlowp's double-rounding MultiplyByQuantizedMultiplier on 8 lanes (mengine_kq_mbqm()),
 * multipliers in [0, 2^31) (QuantizeMultiplier's: the saturating case never occurs).
 * SaturatingRoundingDoublingHighMul's (x * q + nudge) / 2^31 toward zero, the nudge 2^30 or
 * 1 - 2^30 by the product's sign, equals floor((x * q + 2^30) / 2^31) for every product (for a
 * negative one, truncating (p + 1 - 2^30) / 2^31 is the ceiling, floor((p + 2^30) / 2^31)); the
 * quotient fits 32 bits, so a logical 64-bit shift gives its low half. */
Q8_INLINE __m256i rq8_apply(__m256i x, const rq8 *c)
{
    const __m256i r30 = _mm256_set1_epi64x((int64_t)1 << 30), zero = _mm256_setzero_si256();
    x = _mm256_sllv_epi32(x, c->left);
    __m256i pe = _mm256_add_epi64(_mm256_mul_epi32(x, c->q), r30);
    __m256i po = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), c->qo), r30);
    pe = _mm256_srli_epi64(pe, 31);
    po = _mm256_slli_epi64(po, 1);
    const __m256i h = _mm256_blend_epi32(pe, po, 0xaa);
    /* RoundingDivideByPOT(h, right): + 1 where the remainder passes half (ties away from 0) */
    const __m256i rem = _mm256_and_si256(h, c->mask);
    const __m256i thr = _mm256_sub_epi32(c->half, _mm256_cmpgt_epi32(zero, h));
    return _mm256_sub_epi32(_mm256_srav_epi32(h, c->right), _mm256_cmpgt_epi32(rem, thr));
}

/* rq8_apply(), then + zero point and the clamp */
Q8_INLINE __m256i requant8(__m256i x, const rq8 *c, __m256i zp, __m256i lo, __m256i hi)
{
    const __m256i h = _mm256_add_epi32(rq8_apply(x, c), zp);
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

/* 16 int8 from two vectors of 8 int32 lanes already in [-128, 127]: the first @p n stored */
Q8_INLINE void store16(int8_t *y, __m256i a, __m256i b, int32_t n)
{
    const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
    const __m128i v = _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    if (n == 16) {
        _mm_storeu_si128((__m128i *)(void *)y, v);
    } else if (n == 8) {
        _mm_storel_epi64((__m128i *)(void *)y, v);
    } else {
        int8_t t[16];
        _mm_storeu_si128((__m128i *)(void *)t, v);
        memcpy(y, t, (size_t)n);
    }
}

#if defined(__AVX512F__) && defined(__AVX512BW__)
/* AVX-512: 16 channels per requantization (the same arithmetic as rq8_apply() on 16 lanes,
 * the lane masks of AVX-512 for the comparisons) */
#define Q8_AVX512 1

typedef struct rq16 {
    __m512i q, qo, left, right, mask, half;
} rq16;

Q8_INLINE __m512i join16(__m256i a, __m256i b)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

Q8_INLINE __m512i rq16_apply(__m512i x, const rq16 *c)
{
    const __m512i r30 = _mm512_set1_epi64((int64_t)1 << 30), one = _mm512_set1_epi32(1);
    x = _mm512_sllv_epi32(x, c->left);
    __m512i pe = _mm512_add_epi64(_mm512_mul_epi32(x, c->q), r30);
    __m512i po = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), c->qo), r30);
    pe = _mm512_srli_epi64(pe, 31);
    po = _mm512_slli_epi64(po, 1);
    const __m512i h = _mm512_mask_blend_epi32(0xaaaa, pe, po);
    const __m512i rem = _mm512_and_si512(h, c->mask);
    const __m512i thr = _mm512_mask_add_epi32(
        c->half, _mm512_cmplt_epi32_mask(h, _mm512_setzero_si512()), c->half, one);
    const __m512i r = _mm512_srav_epi32(h, c->right);
    return _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(rem, thr), r, one);
}
#endif

/* Requantization constants of 16 channels in either mode: fixed point (c) or the float scales
 * (fs); the int32 biases (0 where none). */
typedef struct rqch {
    rq8 c[2];
    __m256 fs[2];
    __m256i bias[2];
#ifdef Q8_AVX512
    rq16 c16;
#endif
} rqch;

/* The constants of channels c0 .. c0 + n - 1 (n <= 16; the rest 0) */
Q8_INLINE void rqch_load(rqch *r, const int32_t *mult, const int32_t *shift, const float *fscale,
                         const int32_t *bias, int32_t c0, int32_t n)
{
    for (int32_t h = 0; h < 2; h++) {
        const int32_t k = n - 8 * h < 0 ? 0 : n - 8 * h > 8 ? 8 : n - 8 * h, o = c0 + 8 * h;
        r->bias[h] = bias && k ? load_ch(bias + o, k) : _mm256_setzero_si256();
        const __m256i z = _mm256_setzero_si256();
        r->fs[h] = fscale && k ? load_chf(fscale + o, k) : _mm256_setzero_ps();
        r->c[h] = rq8_make(!fscale && k ? load_ch(mult + o, k) : z,
                           !fscale && k ? load_ch(shift + o, k) : z);
    }
#ifdef Q8_AVX512
    {
        r->c16.q = join16(r->c[0].q, r->c[1].q), r->c16.qo = join16(r->c[0].qo, r->c[1].qo);
        r->c16.left = join16(r->c[0].left, r->c[1].left);
        r->c16.right = join16(r->c[0].right, r->c[1].right);
        r->c16.mask = join16(r->c[0].mask, r->c[1].mask);
        r->c16.half = join16(r->c[0].half, r->c[1].half);
    }
#endif
}

/* Requantize the int32 sums of 16 channels (@p a0: the first 8, @p a1: the next 8) in the
 * mode of @p r (fp32 where @p fp32), + zero point, clamp, and store the first @p n bytes. */
Q8_INLINE void rq_store16(const rqch *r, int fp32, __m256i a0, __m256i a1, __m256i zp, __m256i lo,
                          __m256i hi, int8_t *y, int32_t n)
{
#ifdef Q8_AVX512
    const __m512i z16 = join16(zp, zp), lo16 = join16(lo, lo), hi16 = join16(hi, hi);
    const __m512i acc = join16(a0, a1);
    __m512i h;
    if (fp32) {
        const __m512 fs = _mm512_insertf32x8(_mm512_castps256_ps512(r->fs[0]), r->fs[1], 1);
        __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), fs);
        v = _mm512_max_ps(v, _mm512_cvtepi32_ps(_mm512_sub_epi32(lo16, z16))); /* NaN: lo */
        v = _mm512_min_ps(v, _mm512_cvtepi32_ps(_mm512_sub_epi32(hi16, z16)));
        h = _mm512_add_epi32(_mm512_cvtps_epi32(v), z16);
    } else {
        h = _mm512_add_epi32(rq16_apply(acc, &r->c16), z16);
        h = _mm512_min_epi32(_mm512_max_epi32(h, lo16), hi16);
    }
    _mm_mask_storeu_epi8(y, (__mmask16)((1u << n) - 1u), _mm512_cvtepi32_epi8(h));
#else
    const __m256i s0 =
        fp32 ? requant8f(a0, r->fs[0], zp, lo, hi) : requant8(a0, &r->c[0], zp, lo, hi);
    const __m256i s1 = n <= 8 ? s0
                       : fp32 ? requant8f(a1, r->fs[1], zp, lo, hi)
                              : requant8(a1, &r->c[1], zp, lo, hi);
    store16(y, s0, s1, n);
#endif
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

/* (x - zero point) of @p n int8 as int16 into @p d */
Q8_INLINE void cvt_row(const int8_t *x, int32_t n, int32_t zp, int16_t *d)
{
    const __m256i izp = _mm256_set1_epi16((int16_t)zp);
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i v =
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(x + i)));
        _mm256_storeu_si256((__m256i *)(void *)(d + i), _mm256_sub_epi16(v, izp));
    }
    for (; i < n; i++)
        d[i] = (int16_t)(x[i] - zp);
}

/* The patch of output pixel (n, oy, ox), (x - zero point) as int16 in the filter's
 * (KH, KW, Cin) order, zeros for the padding: per filter row, the taps inside the input are
 * contiguous in it (NHWC) */
static void patch_row(const mengine_kq_params *p, const mengine_k_dims *in, const int8_t *x,
                      const mengine_k_dims *f, int32_t n, int32_t oy, int32_t ox, int16_t *pp)
{
    const int32_t cin = in->c, kw = f->w;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = x0 + kw > in->w ? in->w - x0 : kw;
    const int32_t seg = kw * cin;
    if (seg <= 16 && kx0 == 0 && kx1 == kw && y0 >= 0 && y0 + f->h <= in->h) {
        /* inside the input, short rows (a stem of few channels): element by element */
        const int8_t *xr = x + (((size_t)n * in->h + y0) * in->w + x0) * cin;
        const size_t row = (size_t)in->w * cin;
        for (int32_t ky = 0; ky < f->h; ky++, pp += seg, xr += row)
            for (int32_t j = 0; j < seg; j++)
                pp[j] = (int16_t)(xr[j] - p->in_zp);
        return;
    }
    for (int32_t ky = 0; ky < f->h; ky++, pp += (size_t)kw * cin) {
        const int32_t iy = y0 + ky;
        if (iy < 0 || iy >= in->h || kx1 <= kx0) {
            memset(pp, 0, (size_t)kw * cin * sizeof *pp);
            continue;
        }
        if (kx0 > 0)
            memset(pp, 0, (size_t)kx0 * cin * sizeof *pp);
        const int8_t *xr = x + (((size_t)n * in->h + iy) * in->w + x0 + kx0) * cin;
        cvt_row(xr, (kx1 - kx0) * cin, p->in_zp, pp + (size_t)kx0 * cin);
        if (kx1 < kw)
            memset(pp + (size_t)kx1 * cin, 0, (size_t)(kw - kx1) * cin * sizeof *pp);
    }
}

/* Output pixel position (n, oy, ox), advanced in row-major order */
typedef struct pxpos {
    int32_t n, oy, ox;
} pxpos;

Q8_INLINE void pxpos_next(pxpos *q, const mengine_k_dims *out)
{
    if (++q->ox == out->w) {
        q->ox = 0;
        if (++q->oy == out->h)
            q->oy = 0, q->n++;
    }
}

/* Scratch int16 of the vector CONV_2D after its int32 work: 4 (AVX-512: 8) patch rows and a
 * 16-channel weight panel of kpad each (kpad: the filter's KH * KW * Cin rounded up to 16;
 * at most MENGINE_KQ_CONV_SCRATCH_ROWS rows in all). */
#ifdef Q8_AVX512
#define Q8_PATCH_ROWS 8
#else
#define Q8_PATCH_ROWS 4
#endif
#define Q8_PANEL 16

/* Output channels oc0 .. oc0 + nc - 1 of the weights (the rest 0) as int16 pairs along the
 * filter taps, [ceil(klen / 2)][16][2]; @p row: klen rounded up to 2 int16 of temporary */
static void pack_panel(const int8_t *w, int32_t klen, int32_t oc0, int32_t nc, int16_t *pk,
                       int16_t *row)
{
    const int32_t pairs = (klen + 1) / 2;
    for (int32_t j = 0; j < Q8_PANEL; j++) {
        if (j < nc) {
            cvt_row(w + (size_t)(oc0 + j) * klen, klen, 0, row);
            if (klen & 1)
                row[klen] = 0;
        }
        for (int32_t k = 0; k < pairs; k++) {
            int16_t *d = pk + ((size_t)k * Q8_PANEL + j) * 2;
            if (j < nc)
                memcpy(d, row + 2 * k, 2 * sizeof *d);
            else
                d[0] = d[1] = 0;
        }
    }
}

/* two int16 as one int32 (for a broadcast) */
Q8_INLINE int32_t pair_at(const int16_t *p)
{
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 4 pixels (patch rows of @p kpad) times the 16-channel panel @p pk: one VPMADDWD per pixel,
 * 8 channels and 2 taps; the first @p np rows requantized into @p y (row stride @p ys, @p nc
 * channels) */
Q8_INLINE void gemm_tile4(const rqch *r, int fp32, const int16_t *patch, int32_t kpad,
                          const int16_t *pk, int32_t pairs, int32_t np, __m256i zp, __m256i lo,
                          __m256i hi, int8_t *y, int32_t ys, int32_t nc)
{
    __m256i a00 = r->bias[0], a01 = r->bias[1], a10 = r->bias[0], a11 = r->bias[1];
    __m256i a20 = r->bias[0], a21 = r->bias[1], a30 = r->bias[0], a31 = r->bias[1];
    const int16_t *p0 = patch, *p1 = patch + kpad, *p2 = patch + 2 * kpad, *p3 = patch + 3 * kpad;
    for (int32_t k = 0; k < pairs; k++) {
        const __m256i w0 = _mm256_loadu_si256((const __m256i *)(const void *)(pk + (size_t)k * 32));
        const __m256i w1 =
            _mm256_loadu_si256((const __m256i *)(const void *)(pk + (size_t)k * 32 + 16));
        __m256i xb = _mm256_set1_epi32(pair_at(p0 + 2 * k));
        a00 = _mm256_add_epi32(a00, _mm256_madd_epi16(xb, w0));
        a01 = _mm256_add_epi32(a01, _mm256_madd_epi16(xb, w1));
        xb = _mm256_set1_epi32(pair_at(p1 + 2 * k));
        a10 = _mm256_add_epi32(a10, _mm256_madd_epi16(xb, w0));
        a11 = _mm256_add_epi32(a11, _mm256_madd_epi16(xb, w1));
        xb = _mm256_set1_epi32(pair_at(p2 + 2 * k));
        a20 = _mm256_add_epi32(a20, _mm256_madd_epi16(xb, w0));
        a21 = _mm256_add_epi32(a21, _mm256_madd_epi16(xb, w1));
        xb = _mm256_set1_epi32(pair_at(p3 + 2 * k));
        a30 = _mm256_add_epi32(a30, _mm256_madd_epi16(xb, w0));
        a31 = _mm256_add_epi32(a31, _mm256_madd_epi16(xb, w1));
    }
    const __m256i acc[8] = {a00, a01, a10, a11, a20, a21, a30, a31};
    for (int32_t i = 0; i < np; i++)
        rq_store16(r, fp32, acc[2 * i], acc[2 * i + 1], zp, lo, hi, y + (size_t)i * ys, nc);
}

#ifdef Q8_AVX512
/* 8 pixels (patch rows of @p kpad) times the 16-channel panel @p pk: one 512-bit VPMADDWD
 * (or VPDPWSSD) per pixel and 2 taps; the first @p np rows requantized into @p y (row stride
 * @p ys, @p nc channels) */
Q8_INLINE void gemm_tile8(const rqch *r, int fp32, const int16_t *patch, int32_t kpad,
                          const int16_t *pk, int32_t pairs, int32_t np, __m256i zp, __m256i lo,
                          __m256i hi, int8_t *y, int32_t ys, int32_t nc)
{
    const __m512i b = join16(r->bias[0], r->bias[1]);
    __m512i a0 = b, a1 = b, a2 = b, a3 = b, a4 = b, a5 = b, a6 = b, a7 = b;
    for (int32_t k = 0; k < pairs; k++) {
        const __m512i wv = _mm512_loadu_si512((const void *)(pk + (size_t)k * 32));
        const int16_t *pp = patch + 2 * k;
#if defined(__AVX512VNNI__)
#define Q8_DOT(a, i) \
    a = _mm512_dpwssd_epi32(a, _mm512_set1_epi32(pair_at(pp + (size_t)(i)*kpad)), wv)
#else
#define Q8_DOT(a, i)        \
    a = _mm512_add_epi32(a, \
                         _mm512_madd_epi16(_mm512_set1_epi32(pair_at(pp + (size_t)(i)*kpad)), wv))
#endif
        Q8_DOT(a0, 0);
        Q8_DOT(a1, 1);
        Q8_DOT(a2, 2);
        Q8_DOT(a3, 3);
        Q8_DOT(a4, 4);
        Q8_DOT(a5, 5);
        Q8_DOT(a6, 6);
        Q8_DOT(a7, 7);
#undef Q8_DOT
    }
    const __m512i acc[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    for (int32_t i = 0; i < np; i++)
        rq_store16(r, fp32, _mm512_castsi512_si256(acc[i]), _mm512_extracti64x4_epi64(acc[i], 1),
                   zp, lo, hi, y + (size_t)i * ys, nc);
}
#endif

/* CONV_2D as a GEMM with the output channels in the lanes: per 16-channel panel (weights
 * packed as int16 pairs), 4 output pixels at a time, one VPMADDWD per pixel, 8 channels and
 * 2 taps (no horizontal sums); requantized from the int32 sums in the lanes. */
static void conv_gemm(const mengine_kq_params *p, const int32_t *mult, const int32_t *shift,
                      const float *fscale, int16_t *scr, const mengine_k_dims *in, const int8_t *x,
                      const mengine_k_dims *f, const int8_t *w, const int32_t *bias,
                      const mengine_k_dims *out, int8_t *y)
{
    const int32_t cin = in->c, cout = out->c, klen = f->h * f->w * cin;
    const int32_t kpad = (klen + 15) / 16 * 16, pairs = (klen + 1) / 2;
    const int32_t pixels = out->n * out->h * out->w;
    const int one = f->h == 1 && f->w == 1 && p->stride_h == 1 && p->stride_w == 1 &&
                    p->pad_h == 0 && p->pad_w == 0 && out->h == in->h && out->w == in->w;
    int16_t *patch = scr, *pk = scr + Q8_PATCH_ROWS * kpad;
    const __m256i zp = _mm256_set1_epi32(p->out_zp), lo = _mm256_set1_epi32(p->act_min),
                  hi = _mm256_set1_epi32(p->act_max);
    const int fp32 = fscale != NULL;
    for (int32_t oc0 = 0; oc0 < cout; oc0 += Q8_PANEL) {
        const int32_t nc = cout - oc0 < Q8_PANEL ? cout - oc0 : Q8_PANEL;
        pack_panel(w, klen, oc0, nc, pk, patch);
        rqch r;
        rqch_load(&r, mult, shift, fscale, bias, oc0, nc);
        pxpos q = {0, 0, 0};
        for (int32_t px0 = 0; px0 < pixels; px0 += Q8_PATCH_ROWS) {
            const int32_t np = pixels - px0 < Q8_PATCH_ROWS ? pixels - px0 : Q8_PATCH_ROWS;
            for (int32_t i = 0; i < Q8_PATCH_ROWS; i++) {
                int16_t *pp = patch + (size_t)i * kpad;
                if (i >= np) /* past the last pixel: zeros, never stored */
                    memset(pp, 0, (size_t)(2 * pairs) * sizeof *pp);
                else if (one)
                    cvt_row(x + (size_t)(px0 + i) * cin, cin, p->in_zp, pp);
                else
                    patch_row(p, in, x, f, q.n, q.oy, q.ox, pp);
                if (i < np)
                    pxpos_next(&q, out);
                if (klen & 1)
                    pp[klen] = 0; /* the odd tap's pair */
            }
#ifdef Q8_AVX512
            if (np > 4) /* a last tile of 4 pixels or fewer: the 256-bit one */
                gemm_tile8(&r, fp32, patch, kpad, pk, pairs, np, zp, lo, hi,
                           y + (size_t)px0 * cout + oc0, cout, nc);
            else
#endif
                gemm_tile4(&r, fp32, patch, kpad, pk, pairs, np, zp, lo, hi,
                           y + (size_t)px0 * cout + oc0, cout, nc);
        }
    }
}

/* Output channels per block of the dot products: 16 where AVX-512 gives 32 vector
 * registers (16 accumulators), else 8 */
#ifdef Q8_AVX512
#define Q8_DOT_OC 16
#else
#define Q8_DOT_OC 8
#endif

/* acc + the sums of the int16 pairs' products (VPMADDWD and an add, or VPDPWSSD) */
Q8_INLINE __m256i dot2(__m256i acc, __m256i a, __m256i b)
{
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

/* CONV_2D of few output pixels: per pixel and 8 (AVX-512: 16) output channels, dot products of the patch
 * with the weight rows as stored (no packing), summed across the lanes at the end. */
static void conv_dot(const mengine_kq_params *p, const int32_t *mult, const int32_t *shift,
                     const float *fscale, int16_t *patch, const mengine_k_dims *in, const int8_t *x,
                     const mengine_k_dims *f, const int8_t *w, const int32_t *bias,
                     const mengine_k_dims *out, int8_t *y)
{
    const int32_t cin = in->c, cout = out->c, klen = f->h * f->w * cin;
    const int32_t kpad = (klen + 15) / 16 * 16, pixels = out->n * out->h * out->w;
    const size_t wbytes = (size_t)cout * (size_t)klen;
    const __m256i zp = _mm256_set1_epi32(p->out_zp), lo = _mm256_set1_epi32(p->act_min),
                  hi = _mm256_set1_epi32(p->act_max);
    const int fp32 = fscale != NULL;
    for (int32_t i = klen; i < kpad; i++)
        patch[i] = 0;
    pxpos q = {0, 0, 0};
    for (int32_t px = 0; px < pixels; px++, pxpos_next(&q, out)) {
        patch_row(p, in, x, f, q.n, q.oy, q.ox, patch);
        int8_t *yo = y + (size_t)px * cout;
        for (int32_t oc = 0; oc < cout; oc += Q8_DOT_OC) {
            const int32_t nc = cout - oc < Q8_DOT_OC ? cout - oc : Q8_DOT_OC;
            const int8_t *row[Q8_DOT_OC];
            __m256i acc[Q8_DOT_OC];
            for (int32_t j = 0; j < Q8_DOT_OC; j++) {
                row[j] = w + (size_t)(oc + (j < nc ? j : nc - 1)) * klen;
                acc[j] = _mm256_setzero_si256();
            }
            int32_t k = 0;
            for (; k + 16 <= klen; k += 16) {
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(const void *)(patch + k));
                for (int32_t j = 0; j < Q8_DOT_OC; j++)
                    acc[j] = dot2(acc[j], xv,
                                  _mm256_cvtepi8_epi16(_mm_loadu_si128(
                                      (const __m128i *)(const void *)(row[j] + k))));
            }
            if (k < klen) { /* the tail: 16 weight bytes where the buffer has them (the
                             * patch's zeros cancel the bytes past the row) */
                const __m256i xv = _mm256_loadu_si256((const __m256i *)(const void *)(patch + k));
                for (int32_t j = 0; j < Q8_DOT_OC; j++) {
                    const int8_t *src = row[j] + k;
                    int8_t t[16];
                    if ((size_t)(src - w) + 16 > wbytes) {
                        memset(t, 0, sizeof t);
                        memcpy(t, src, (size_t)(klen - k));
                        src = t;
                    }
                    acc[j] = dot2(
                        acc[j], xv,
                        _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)src)));
                }
            }
            rqch r;
            rqch_load(&r, mult, shift, fscale, bias, oc, nc);
#if Q8_DOT_OC == 16
            rq_store16(&r, fp32, _mm256_add_epi32(hsum8(acc), r.bias[0]),
                       _mm256_add_epi32(hsum8(acc + 8), r.bias[1]), zp, lo, hi, yo + oc, nc);
#else
            rq_store16(&r, fp32, _mm256_add_epi32(hsum8(acc), r.bias[0]), r.bias[1], zp, lo, hi,
                       yo + oc, nc);
#endif
        }
    }
}

/* Output pixels from which the GEMM (packed panels) beats the dot products */
#define Q8_GEMM_MIN_PIXELS 8

mengine_status mengine_kq_conv2d_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                         const int32_t *shift, const float *fscale, int32_t *work,
                                         const mengine_k_dims *in, const int8_t *x,
                                         const mengine_k_dims *f, const int8_t *w,
                                         const int32_t *bias, const mengine_k_dims *out, int8_t *y)
{
    int16_t *scr = (int16_t *)(void *)(work + (out->c > 0 ? out->c : 1));
    if (out->n * out->h * out->w >= Q8_GEMM_MIN_PIXELS)
        conv_gemm(p, mult, shift, fscale, scr, in, x, f, w, bias, out, y);
    else
        conv_dot(p, mult, shift, fscale, scr, in, x, f, w, bias, out, y);
    return MENGINE_OK;
}

/* Filter taps up to which the depthwise interior runs in tap pairs */
#define Q8_DW_MAX_TAPS 64

/* 16 int8 at @p a as int16 (n < 16: the rest 0; n == 8 reads 8 bytes) */
Q8_INLINE __m256i load16w(const int8_t *a, int32_t n)
{
    if (n == 16)
        return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)a));
    if (n == 8)
        return _mm256_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)a));
    int8_t t[16] = {0};
    memcpy(t, a, (size_t)n);
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)t));
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
    const int32_t kh = f->h, kw = f->w, c = out->c, taps = kh * kw, pairs = (taps + 1) / 2;
    const __m256i zp = _mm256_set1_epi32(p->out_zp), lo = _mm256_set1_epi32(p->act_min),
                  hi = _mm256_set1_epi32(p->act_max);
    const __m256i izp = _mm256_set1_epi16((int16_t)p->in_zp), zero = _mm256_setzero_si256();
    const int fp32 = fscale != NULL;
    /* pixels whose window lies inside the input: taps in pairs (VPMADDWD over two taps of
     * 16 channels, interleaved), the zero point folded into the bias (sum of w * x minus
     * zero point times the sum of w, the same int32 arithmetic modulo 2^32) */
    const int fast = taps <= Q8_DW_MAX_TAPS;
    __m256i wp[Q8_DW_MAX_TAPS + 1];
    int32_t off[Q8_DW_MAX_TAPS + 1];
    for (int32_t t = 0; fast && t < taps; t++)
        off[t] = ((t / kw) * in->w + t % kw) * c;
    if (fast)
        off[taps] = off[taps - 1];           /* the odd tap's partner, weighted 0 */
    for (int32_t c0 = 0; c0 < c; c0 += 16) { /* 16 channels at a time, over every pixel */
        const int32_t nc = c - c0 < 16 ? c - c0 : 16;
        rqch r;
        rqch_load(&r, mult, shift, fscale, bias, c0, nc);
        __m256i ib0 = r.bias[0], ib1 = r.bias[1];
        if (fast) {
            __m256i sl = zero, sh = zero;
            const __m256i ones = _mm256_set1_epi16(1);
            for (int32_t t = 0; t < pairs; t++) {
                const __m256i w0 = load16w(w + (size_t)(2 * t) * c + c0, nc);
                const __m256i w1 =
                    2 * t + 1 < taps ? load16w(w + (size_t)(2 * t + 1) * c + c0, nc) : zero;
                wp[2 * t] = _mm256_unpacklo_epi16(w0, w1);
                wp[2 * t + 1] = _mm256_unpackhi_epi16(w0, w1);
                sl = _mm256_add_epi32(sl, _mm256_madd_epi16(wp[2 * t], ones));
                sh = _mm256_add_epi32(sh, _mm256_madd_epi16(wp[2 * t + 1], ones));
            }
            const __m256i z = _mm256_set1_epi32(p->in_zp);
            ib0 = _mm256_sub_epi32(ib0,
                                   _mm256_mullo_epi32(z, _mm256_permute2x128_si256(sl, sh, 0x20)));
            ib1 = _mm256_sub_epi32(ib1,
                                   _mm256_mullo_epi32(z, _mm256_permute2x128_si256(sl, sh, 0x31)));
        }
        for (int32_t n = 0; n < out->n; n++)
            for (int32_t oy = 0; oy < out->h; oy++)
                for (int32_t ox = 0; ox < out->w; ox++) {
                    const int32_t y0 = oy * p->stride_h - p->pad_h;
                    const int32_t x0 = ox * p->stride_w - p->pad_w;
                    int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * c + c0;
                    if (fast && y0 >= 0 && x0 >= 0 && y0 + kh <= in->h && x0 + kw <= in->w) {
                        const int8_t *xb = x + (((size_t)n * in->h + y0) * in->w + x0) * c + c0;
                        __m256i al = zero, ah = zero;
                        for (int32_t t = 0; t < pairs; t++) {
                            const __m256i x0v = load16w(xb + off[2 * t], nc);
                            const __m256i x1v = load16w(xb + off[2 * t + 1], nc);
                            /* VPMADDWD and an add: two short chains (VPDPWSSD's latency
                             * would bound them) */
                            al = _mm256_add_epi32(
                                al, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0v, x1v), wp[2 * t]));
                            ah = _mm256_add_epi32(
                                ah,
                                _mm256_madd_epi16(_mm256_unpackhi_epi16(x0v, x1v), wp[2 * t + 1]));
                        }
                        rq_store16(&r, fp32,
                                   _mm256_add_epi32(ib0, _mm256_permute2x128_si256(al, ah, 0x20)),
                                   _mm256_add_epi32(ib1, _mm256_permute2x128_si256(al, ah, 0x31)),
                                   zp, lo, hi, yo, nc);
                        continue;
                    }
                    __m256i a0 = r.bias[0], a1 = r.bias[1];
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky;
                        if (iy < 0 || iy >= in->h)
                            continue;
                        const int8_t *xr = x + ((size_t)n * in->h + iy) * in->w * c + c0;
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx;
                            if (ix < 0 || ix >= in->w)
                                continue;
                            /* |x - zp| <= 255, |w| <= 128: the product fits int16 */
                            const __m256i xv =
                                _mm256_sub_epi16(load16w(xr + (size_t)ix * c, nc), izp);
                            const __m256i pr = _mm256_mullo_epi16(
                                xv, load16w(w + ((size_t)ky * kw + kx) * c + c0, nc));
                            a0 = _mm256_add_epi32(
                                a0, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(pr)));
                            a1 = _mm256_add_epi32(
                                a1, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(pr, 1)));
                        }
                    }
                    rq_store16(&r, fp32, a0, a1, zp, lo, hi, yo, nc);
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

/* ADD's or MUL's constants: the zero points, the inputs' and the output's requantization */
typedef struct bin8 {
    rq8 c1, c2, c;
    __m256i zp1, zp2, ozp, lo, hi;
    int add;
} bin8;

/* ADD (integer_ops::Add's arithmetic) or MUL of 8 lanes */
Q8_INLINE __m256i binary8(const bin8 *k, __m256i a, __m256i b)
{
    a = _mm256_sub_epi32(a, k->zp1);
    b = _mm256_sub_epi32(b, k->zp2);
    __m256i v;
    if (k->add) {
        a = rq8_apply(_mm256_slli_epi32(a, 20), &k->c1);
        b = rq8_apply(_mm256_slli_epi32(b, 20), &k->c2);
        v = _mm256_add_epi32(a, b);
    } else {
        v = _mm256_mullo_epi32(a, b);
    }
    v = _mm256_add_epi32(rq8_apply(v, &k->c), k->ozp);
    return _mm256_min_epi32(_mm256_max_epi32(v, k->lo), k->hi);
}

#ifdef Q8_AVX512
/* binary8() on 16 lanes */
typedef struct bin16 {
    rq16 c1, c2, c;
    __m512i zp1, zp2, ozp, lo, hi;
    int add;
} bin16;

Q8_INLINE rq16 rq16_of(const rq8 *c)
{
    rq16 r;
    r.q = join16(c->q, c->q), r.qo = join16(c->qo, c->qo), r.left = join16(c->left, c->left);
    r.right = join16(c->right, c->right), r.mask = join16(c->mask, c->mask);
    r.half = join16(c->half, c->half);
    return r;
}

Q8_INLINE bin16 bin16_of(const bin8 *k)
{
    bin16 r;
    r.c1 = rq16_of(&k->c1), r.c2 = rq16_of(&k->c2), r.c = rq16_of(&k->c);
    r.zp1 = join16(k->zp1, k->zp1), r.zp2 = join16(k->zp2, k->zp2);
    r.ozp = join16(k->ozp, k->ozp), r.lo = join16(k->lo, k->lo), r.hi = join16(k->hi, k->hi);
    r.add = k->add;
    return r;
}

Q8_INLINE void binary16(const bin16 *k, const int8_t *pa, const int8_t *pb, int8_t *y)
{
    __m512i a = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)pa));
    __m512i b = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)pb));
    a = _mm512_sub_epi32(a, k->zp1);
    b = _mm512_sub_epi32(b, k->zp2);
    __m512i v;
    if (k->add)
        v = _mm512_add_epi32(rq16_apply(_mm512_slli_epi32(a, 20), &k->c1),
                             rq16_apply(_mm512_slli_epi32(b, 20), &k->c2));
    else
        v = _mm512_mullo_epi32(a, b);
    v = _mm512_add_epi32(rq16_apply(v, &k->c), k->ozp);
    v = _mm512_min_epi32(_mm512_max_epi32(v, k->lo), k->hi);
    _mm_storeu_si128((__m128i *)(void *)y, _mm512_cvtepi32_epi8(v));
}
#endif

mengine_status mengine_kq_binary_s8_simd(const mengine_kq_params *p, int add,
                                         const mengine_k_dims *ad, const int8_t *a,
                                         const mengine_k_dims *bd, const int8_t *b,
                                         const mengine_k_dims *od, int8_t *y)
{
    const size_t total = (size_t)od->n * od->h * od->w * od->c;
    const int a_full = ad->n == od->n && ad->h == od->h && ad->w == od->w && ad->c == od->c;
    const int b_full = bd->n == od->n && bd->h == od->h && bd->w == od->w && bd->c == od->c;
    const int b_chan = bd->n == 1 && bd->h == 1 && bd->w == 1 && bd->c == od->c && od->n == 1;
    if (!a_full || (!b_full && !b_chan))
        return MENGINE_ERR_UNSUPPORTED;
    bin8 k;
    k.add = add;
    k.c1 = rq8_make(_mm256_set1_epi32(p->mult1), _mm256_set1_epi32(p->shift1));
    k.c2 = rq8_make(_mm256_set1_epi32(p->mult2), _mm256_set1_epi32(p->shift2));
    k.c = rq8_make(_mm256_set1_epi32(p->mult), _mm256_set1_epi32(p->shift));
    k.zp1 = _mm256_set1_epi32(p->in_zp), k.zp2 = _mm256_set1_epi32(p->in2_zp);
    k.ozp = _mm256_set1_epi32(p->out_zp);
    k.lo = _mm256_set1_epi32(p->act_min), k.hi = _mm256_set1_epi32(p->act_max);
    if (b_full) {
        size_t i = 0;
#ifdef Q8_AVX512
        const bin16 k16 = bin16_of(&k);
        for (; i + 16 <= total; i += 16)
            binary16(&k16, a + i, b + i, y + i);
#endif
        for (; i + 16 <= total; i += 16)
            store16(y + i, binary8(&k, load8(a + i, 8), load8(b + i, 8)),
                    binary8(&k, load8(a + i + 8, 8), load8(b + i + 8, 8)), 16);
        for (; i < total; i += 8) {
            const int32_t n = total - i < 8 ? (int32_t)(total - i) : 8;
            store8(y + i, binary8(&k, load8(a + i, n), load8(b + i, n)), n);
        }
        return MENGINE_OK;
    }
    const int32_t c = od->c;
    for (size_t i = 0; i < total; i += (size_t)c) /* b along the channels */
        for (int32_t j = 0; j < c; j += 8) {
            const int32_t n = c - j < 8 ? c - j : 8;
            store8(y + i + j, binary8(&k, load8(a + i + j, n), load8(b + j, n)), n);
        }
    return MENGINE_OK;
}

mengine_status mengine_kq_mean_hw_s8_simd(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y)
{
    const int32_t count = in->h * in->w, c = in->c;
    int32_t mult, shift;
    mengine_kq_mean_count_multiplier(p, count, &mult, &shift);
    const rq8 k = rq8_make(_mm256_set1_epi32(mult), _mm256_set1_epi32(shift));
    const __m256i off = _mm256_set1_epi32((int32_t)((uint32_t)-p->in_zp * (uint32_t)count));
    const __m256i zp = _mm256_set1_epi32(p->out_zp), lo = _mm256_set1_epi32(-128),
                  hi = _mm256_set1_epi32(127);
    for (int32_t n = 0; n < in->n; n++)
        for (int32_t c0 = 0; c0 < c; c0 += 8) {
            const int32_t nc = c - c0 < 8 ? c - c0 : 8;
            const int8_t *xc = x + (size_t)n * count * c + c0;
            __m256i acc = off;
            for (int32_t i = 0; i < count; i++)
                acc = _mm256_add_epi32(acc, load8(xc + (size_t)i * c, nc));
            store8(y + (size_t)n * c + c0, requant8(acc, &k, zp, lo, hi), nc);
        }
    return MENGINE_OK;
}

int mengine_kq_channel_multipliers_simd(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift)
{
    if (n_scales <= 1)
        return 0;
    const __m256d vin = _mm256_set1_pd((double)in_scale), vout = _mm256_set1_pd((double)out_scale);
    const __m256d lo = _mm256_set1_pd(0x1p-1022), hi = _mm256_set1_pd(1e300);
    const __m256i mant = _mm256_set1_epi64x(((int64_t)1 << 52) - 1);
    const __m256i one52 = _mm256_set1_epi64x((int64_t)1 << 52);
    const __m256i r21 = _mm256_set1_epi64x((int64_t)1 << 21);
    const __m256i two31 = _mm256_set1_epi64x((int64_t)1 << 31);
    const __m256i two30 = _mm256_set1_epi64x((int64_t)1 << 30);
    const __m256i lows = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    int32_t c = 0;
#ifdef Q8_AVX512
    /* 8 channels at a time: the same steps on 512-bit lanes */
    const __m512d vin8 = _mm512_set1_pd((double)in_scale),
                  vout8 = _mm512_set1_pd((double)out_scale);
    for (; c + 8 <= channels; c += 8) {
        float ws[8];
        memcpy(ws, wscales + 4 * (size_t)c, sizeof ws); /* little-endian, as the file */
        const __m512d m =
            _mm512_div_pd(_mm512_mul_pd(vin8, _mm512_cvtps_pd(_mm256_loadu_ps(ws))), vout8);
        const __mmask8 ok = _mm512_cmp_pd_mask(m, _mm512_set1_pd(0x1p-1022), _CMP_GE_OQ) &
                            _mm512_cmp_pd_mask(m, _mm512_set1_pd(1e300), _CMP_LT_OQ);
        if (ok != 0xff) {
            mengine_kq_channel_multipliers_ref(in_scale, wscales + 4 * (size_t)c, 8, out_scale, 8,
                                               mult + c, shift + c);
            continue;
        }
        const __m512i bits = _mm512_castpd_si512(m);
        __m512i e = _mm512_sub_epi64(_mm512_srli_epi64(bits, 52), _mm512_set1_epi64(1022));
        __m512i q = _mm512_srli_epi64(
            _mm512_add_epi64(
                _mm512_or_si512(_mm512_and_si512(bits, _mm512_set1_epi64(((int64_t)1 << 52) - 1)),
                                _mm512_set1_epi64((int64_t)1 << 52)),
                _mm512_set1_epi64((int64_t)1 << 21)),
            22);
        const __mmask8 full = _mm512_cmpeq_epi64_mask(q, _mm512_set1_epi64((int64_t)1 << 31));
        q = _mm512_mask_blend_epi64(full, q, _mm512_set1_epi64((int64_t)1 << 30));
        e = _mm512_mask_add_epi64(e, full, e, _mm512_set1_epi64(1));
        __m256i q32 = _mm512_cvtepi64_epi32(q), e32 = _mm512_cvtepi64_epi32(e);
        const __m256i under = _mm256_cmpgt_epi32(_mm256_set1_epi32(-31), e32); /* 0, 0 */
        q32 = _mm256_andnot_si256(under, q32);
        e32 = _mm256_andnot_si256(under, e32);
        const __m256i over = _mm256_cmpgt_epi32(e32, _mm256_set1_epi32(30)); /* the largest */
        q32 = _mm256_blendv_epi8(q32, _mm256_set1_epi32(INT32_MAX), over);
        e32 = _mm256_blendv_epi8(e32, _mm256_set1_epi32(30), over);
        _mm256_storeu_si256((__m256i *)(void *)(mult + c), q32);
        _mm256_storeu_si256((__m256i *)(void *)(shift + c), e32);
    }
#endif
    for (; c + 4 <= channels; c += 4) {
        float ws[4];
        memcpy(ws, wscales + 4 * (size_t)c, sizeof ws); /* little-endian, as the file */
        const __m256d m =
            _mm256_div_pd(_mm256_mul_pd(vin, _mm256_cvtps_pd(_mm_loadu_ps(ws))), vout);
        /* normal, positive and below 1e300 in every lane; else the scalar path */
        const __m256d ok =
            _mm256_and_pd(_mm256_cmp_pd(m, lo, _CMP_GE_OQ), _mm256_cmp_pd(m, hi, _CMP_LT_OQ));
        if (_mm256_movemask_pd(ok) != 0xf) {
            mengine_kq_channel_multipliers_ref(in_scale, wscales + 4 * (size_t)c, 4, out_scale, 4,
                                               mult + c, shift + c);
            continue;
        }
        const __m256i bits = _mm256_castpd_si256(m);
        /* frexp: m = f * 2^e, f = (mantissa | 2^52) / 2^53; round(f * 2^31) half up (f > 0) */
        __m256i e = _mm256_sub_epi64(_mm256_srli_epi64(bits, 52), _mm256_set1_epi64x(1022));
        __m256i q = _mm256_srli_epi64(
            _mm256_add_epi64(_mm256_or_si256(_mm256_and_si256(bits, mant), one52), r21), 22);
        const __m256i full = _mm256_cmpeq_epi64(q, two31); /* 2^31: 2^30 and e + 1 */
        q = _mm256_blendv_epi8(q, two30, full);
        e = _mm256_sub_epi64(e, full);
        __m128i q32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(q, lows));
        __m128i e32 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(e, lows));
        const __m128i under = _mm_cmplt_epi32(e32, _mm_set1_epi32(-31)); /* 0, 0 */
        q32 = _mm_andnot_si128(under, q32);
        e32 = _mm_andnot_si128(under, e32);
        const __m128i over = _mm_cmpgt_epi32(e32, _mm_set1_epi32(30)); /* the largest */
        q32 = _mm_blendv_epi8(q32, _mm_set1_epi32(INT32_MAX), over);
        e32 = _mm_blendv_epi8(e32, _mm_set1_epi32(30), over);
        _mm_storeu_si128((__m128i *)(void *)(mult + c), q32);
        _mm_storeu_si128((__m128i *)(void *)(shift + c), e32);
    }
    if (c < channels)
        mengine_kq_channel_multipliers_ref(in_scale, wscales + 4 * (size_t)c,
                                           (uint32_t)(channels - c), out_scale, channels - c,
                                           mult + c, shift + c);
    return 1;
}

/* 32-bit RoundingDivideByPOT by the same @p e (0..31) in every lane */
Q8_INLINE __m256i rdpot8(__m256i x, __m128i e, __m256i mask, __m256i half)
{
    const __m256i rem = _mm256_and_si256(x, mask);
    const __m256i thr = _mm256_sub_epi32(half, _mm256_cmpgt_epi32(_mm256_setzero_si256(), x));
    return _mm256_sub_epi32(_mm256_sra_epi32(x, e), _mm256_cmpgt_epi32(rem, thr));
}

/* HARD_SWISH's constants (TFLite's HardSwishParams) */
typedef struct hs16 {
    __m256i izp, om, rm, ozp, rmask, rhalf, omask, ohalf;
    __m128i rshl, rshr, oshr;
    int32_t rexp;
} hs16;

/* 16 values of the reference HARD_SWISH (mengine_kq_hard_swish_s8_ref()'s steps in int16
 * lanes: VPMULHRSW is SaturatingRoundingDoublingHighMul when no operand is -2^15, which
 * neither multiplier, a Q15 in [2^14, 2^15), is) */
Q8_INLINE __m128i hswish16(const hs16 *k, __m128i xb)
{
    const __m256i v = _mm256_sub_epi16(_mm256_cvtepi8_epi16(xb), k->izp);
    const __m256i hires = _mm256_slli_epi16(v, 7); /* |v| <= 255: fits */
    const __m256i pre_out = _mm256_mulhrs_epi16(hires, k->om);
    __m256i r = hires;
    if (k->rexp > 0) { /* saturating left shift by rexp - 1 (at most 16: the same saturation) */
        const __m256i l =
            _mm256_sll_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(r)), k->rshl);
        const __m256i h =
            _mm256_sll_epi32(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(r, 1)), k->rshl);
        r = _mm256_permute4x64_epi64(_mm256_packs_epi32(l, h), 0xd8);
    }
    r = _mm256_mulhrs_epi16(r, k->rm);
    if (k->rexp > 0)
        r = _mm256_adds_epi16(r, r);
    if (k->rexp < 0) {
        const __m256i l =
            rdpot8(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(r)), k->rshr, k->rmask, k->rhalf);
        const __m256i h = rdpot8(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(r, 1)), k->rshr,
                                 k->rmask, k->rhalf);
        r = _mm256_permute4x64_epi64(_mm256_packs_epi32(l, h), 0xd8);
    }
    /* (r + 2^15) >> 1 in [0, 2^15) */
    r = _mm256_srli_epi16(_mm256_xor_si256(r, _mm256_set1_epi16(INT16_MIN)), 1);
    /* r * pre_out / 2^15 toward zero, in 32 bits (lanes 0-3 and 8-11, then 4-7 and 12-15) */
    const __m256i pl = _mm256_mullo_epi16(r, pre_out), ph = _mm256_mulhi_epi16(r, pre_out);
    __m256i q0 = _mm256_unpacklo_epi16(pl, ph), q1 = _mm256_unpackhi_epi16(pl, ph);
    const __m256i tz = _mm256_set1_epi32(0x7fff);
    q0 = _mm256_srai_epi32(_mm256_add_epi32(q0, _mm256_and_si256(_mm256_srai_epi32(q0, 31), tz)),
                           15);
    q1 = _mm256_srai_epi32(_mm256_add_epi32(q1, _mm256_and_si256(_mm256_srai_epi32(q1, 31), tz)),
                           15);
    q0 = _mm256_add_epi32(rdpot8(q0, k->oshr, k->omask, k->ohalf), k->ozp);
    q1 = _mm256_add_epi32(rdpot8(q1, k->oshr, k->omask, k->ohalf), k->ozp);
    const __m256i o = _mm256_packs_epi32(q0, q1); /* back in order, saturated */
    return _mm_packs_epi16(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
}

mengine_status mengine_kq_hard_swish_s8_simd(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                             size_t n)
{
    hs16 k;
    const int32_t re = p->hs_relu_exp, oe = -p->hs_out_exp; /* oe >= 0: prepare's check */
    if (oe < 0 || oe > 31 || re < -31)
        return MENGINE_ERR_UNSUPPORTED;
    k.izp = _mm256_set1_epi16((int16_t)p->in_zp);
    k.om = _mm256_set1_epi16(p->hs_out_mult);
    k.rm = _mm256_set1_epi16(p->hs_relu_mult);
    k.ozp = _mm256_set1_epi32(p->out_zp);
    k.rexp = re;
    k.rshl = _mm_cvtsi32_si128(re > 17 ? 16 : re > 0 ? re - 1 : 0);
    k.rshr = _mm_cvtsi32_si128(re < 0 ? -re : 0);
    const int32_t rm = re < 0 ? (int32_t)(((int64_t)1 << -re) - 1) : 0;
    const int32_t om = (int32_t)(((int64_t)1 << oe) - 1);
    k.rmask = _mm256_set1_epi32(rm), k.rhalf = _mm256_set1_epi32(rm >> 1);
    k.omask = _mm256_set1_epi32(om), k.ohalf = _mm256_set1_epi32(om >> 1);
    k.oshr = _mm_cvtsi32_si128(oe);
    size_t i = 0;
#if defined(Q8_AVX512) && defined(__AVX512VBMI__)
    if (n >= 512) { /* a function of the byte: its 256 values, looked up 64 bytes at a time */
        int8_t lut[256];
        for (int v = 0; v < 256; v += 16) { /* lut[b] = f((int8_t)b) */
            int8_t in16[16];
            for (int j = 0; j < 16; j++)
                in16[j] = (int8_t)(uint8_t)(v + j);
            _mm_storeu_si128((__m128i *)(void *)(lut + v),
                             hswish16(&k, _mm_loadu_si128((const __m128i *)(const void *)in16)));
        }
        const __m512i t0 = _mm512_loadu_si512((const void *)lut);
        const __m512i t1 = _mm512_loadu_si512((const void *)(lut + 64));
        const __m512i t2 = _mm512_loadu_si512((const void *)(lut + 128));
        const __m512i t3 = _mm512_loadu_si512((const void *)(lut + 192));
        for (; i < n; i += 64) {
            const __mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
            const __m512i u = _mm512_maskz_loadu_epi8(m, x + i);
            const __m512i r0 = _mm512_permutex2var_epi8(t0, u, t1); /* bytes 0..127 */
            const __m512i r1 = _mm512_permutex2var_epi8(t2, u, t3); /* bytes 128..255 */
            _mm512_mask_storeu_epi8(y + i, m,
                                    _mm512_mask_blend_epi8(_mm512_movepi8_mask(u), r0, r1));
        }
        return MENGINE_OK;
    }
#endif
    for (; i + 16 <= n; i += 16)
        _mm_storeu_si128((__m128i *)(void *)(y + i),
                         hswish16(&k, _mm_loadu_si128((const __m128i *)(const void *)(x + i))));
    if (i < n) {
        int8_t t[16] = {0};
        memcpy(t, x + i, n - i);
        _mm_storeu_si128((__m128i *)(void *)t,
                         hswish16(&k, _mm_loadu_si128((const __m128i *)(const void *)t)));
        memcpy(y + i, t, n - i);
    }
    return MENGINE_OK;
}

int mengine_kq_has_simd(void) { return 1; }

#elif MK_Q8_PATH == MK_Q8_PATH_NONE /* no vector path in this build */

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

mengine_status mengine_kq_hard_swish_s8_simd(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                             size_t n)
{
    (void)p, (void)x, (void)y, (void)n;
    return MENGINE_ERR_UNSUPPORTED;
}

mengine_status mengine_kq_mean_hw_s8_simd(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y)
{
    (void)p, (void)in, (void)x, (void)y;
    return MENGINE_ERR_UNSUPPORTED;
}

int mengine_kq_channel_multipliers_simd(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift)
{
    (void)in_scale, (void)wscales, (void)n_scales, (void)out_scale, (void)channels, (void)mult,
        (void)shift;
    return 0;
}

int mengine_kq_has_simd(void) { return 0; }

#endif
