/* The int8 vector path of 32-bit Arm cores with the DSP extension (see kernels_q8_impl.h,
 * MK_Q8_PATH_DSP: Cortex-M4/M7/M33, Cortex-A7 in 32-bit mode), in CMSIS-NN's manner: int8
 * values widened to pairs of int16 in one 32-bit register (SXTB16, SXTAB16 with the input
 * offset) and multiplied and summed two at a time into int32 (SMLAD, whose sum wraps modulo
 * 2^32 as the portable kernels' does). CONV_2D (1x1 and larger), DEPTHWISE_CONV_2D (depth
 * multiplier 1) and MEAN over H and W; the requantization is the portable kernels' scalar
 * arithmetic, value by value.
 * Results are the same bytes as the portable kernels' (mengine_kq_*_ref(), compared by
 * tests/unit/test_engine_q8.c under qemu-arm); the other *_simd() entry points refuse
 * (MENGINE_ERR_UNSUPPORTED, nothing written) and the caller runs the portable kernel. */
#include <string.h>

#include "engine/kernels_q8_impl.h"

#if MK_Q8_PATH == MK_Q8_PATH_DSP
/* the ACLE intrinsics where the compiler has them, unless MK_Q8_DSP_MODEL asks for the plain C */
#if defined(__ARM_FEATURE_SIMD32) && !defined(MK_Q8_DSP_MODEL)
#define Q8_ACLE 1
#include <arm_acle.h>
#endif

#if defined(__GNUC__)
#define Q8_INLINE static inline __attribute__((always_inline))
#else
#define Q8_INLINE static inline
#endif

/* ---- the DSP instructions (ACLE intrinsics; plain C of the same results where the compiler
 * has none) ---- */

/* SXTB16: bytes 0 and 2 of @p x sign-extended into the low and high int16 halves */
Q8_INLINE uint32_t sxtb16(uint32_t x)
{
#ifdef Q8_ACLE
    return (uint32_t)__sxtb16((int8x4_t)x);
#else
    return (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)x |
           (uint32_t)(uint16_t)(int16_t)(int8_t)(uint8_t)(x >> 16) << 16;
#endif
}

/* SXTAB16: @p a's two int16 halves plus bytes 0 and 2 of @p x sign-extended (modulo 2^16) */
Q8_INLINE uint32_t sxtab16(uint32_t a, uint32_t x)
{
#ifdef Q8_ACLE
    return (uint32_t)__sxtab16((int16x2_t)a, (int8x4_t)x);
#else
    const uint32_t e = sxtb16(x);
    return ((a + e) & 0xffffu) | (((a >> 16) + (e >> 16)) << 16);
#endif
}

/* SMLAD: @p acc + lo(a) * lo(b) + hi(a) * hi(b) (int16 halves), modulo 2^32 */
Q8_INLINE int32_t smlad(uint32_t a, uint32_t b, int32_t acc)
{
#ifdef Q8_ACLE
    return __smlad((int16x2_t)a, (int16x2_t)b, acc);
#else
    const int32_t lo = (int32_t)(int16_t)(uint16_t)a * (int32_t)(int16_t)(uint16_t)b;
    const int32_t hi =
        (int32_t)(int16_t)(uint16_t)(a >> 16) * (int32_t)(int16_t)(uint16_t)(b >> 16);
    return (int32_t)((uint32_t)acc + (uint32_t)lo + (uint32_t)hi);
#endif
}

/* ROR #8 (bytes 1 and 3 of @p x where SXTB16 reads) */
Q8_INLINE uint32_t ror8(uint32_t x) { return x >> 8 | x << 24; }

/* SXTB16 and SXTAB16 of @p x rotated by 8 (bytes 1 and 3), and PKHBT / PKHTB: the instructions'
 * rotate and shift operands, which GCC does not fold from the C forms, in inline assembly where
 * the ACLE intrinsics are used (GCC and Clang); the C forms elsewhere */
#if defined(Q8_ACLE) && defined(__GNUC__)
#define Q8_ASM 1
#endif

Q8_INLINE uint32_t sxtb16_r8(uint32_t x)
{
#ifdef Q8_ASM
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
#else
    return sxtb16(ror8(x));
#endif
}

Q8_INLINE uint32_t sxtab16_r8(uint32_t a, uint32_t x)
{
#ifdef Q8_ASM
    uint32_t r;
    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
    return r;
#else
    return sxtab16(a, ror8(x));
#endif
}

/* 4 bytes at @p p, any alignment (LDR) */
Q8_INLINE uint32_t ld4(const void *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

Q8_INLINE void st4(void *p, uint32_t v) { memcpy(p, &v, sizeof v); }

/* PKHBT / PKHTB: the low halves of @p a and @p b, and their high halves, as one pair each */
Q8_INLINE uint32_t pk_lo(uint32_t a, uint32_t b)
{
#ifdef Q8_ASM
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(a), "r"(b));
    return r;
#else
    return (a & 0xffffu) | b << 16;
#endif
}

Q8_INLINE uint32_t pk_hi(uint32_t a, uint32_t b)
{
#ifdef Q8_ASM
    uint32_t r;
    __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(r) : "r"(b), "r"(a));
    return r;
#else
    return a >> 16 | (b & 0xffff0000u);
#endif
}

/* ---- requantization: the portable kernels' arithmetic ---- */

static int32_t wadd(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }

/* output channel @p c of accumulator @p acc: fixed point (mult, shift) or, with @p fscale, fp32 */
static int8_t rq(const mengine_kq_params *p, int32_t acc, const int32_t *mult, const int32_t *shift,
                 const float *fscale, int32_t c)
{
    if (fscale)
        return mengine_kq_requant_fp32(acc, fscale[c], p->out_zp, p->act_min, p->act_max);
    const int32_t v = wadd(mengine_kq_mbqm(acc, mult[c], shift[c]), p->out_zp);
    return (int8_t)(v < p->act_min ? p->act_min : v > p->act_max ? p->act_max : v);
}

/* ---- CONV_2D ----
 * The patch of an output pixel: its KH * KW * Cin taps in the filter's order as int16
 * x - zero point (0 for the padding), each group of 4 taps below klen4 (klen rounded down to 4)
 * stored as (t0, t2, t1, t3): the two int16 pairs SXTB16 makes of 4 weight bytes (bytes 0 and 2,
 * then 1 and 3), so that SMLAD multiplies matching taps; the last klen - klen4 taps in order. */

/* position in the patch of tap @p i */
Q8_INLINE int32_t slot(int32_t i, int32_t klen4)
{
    return i < klen4 ? (i & ~3) | (i & 1) << 1 | (i >> 1 & 1) : i;
}

/* taps i0 .. i0 + n - 1 of the patch @p pp: (x - zero point) of the @p n int8 at @p x; whole
 * groups of 4 from one 32-bit load (two SXTAB16 with the offset pair @p off2) */
static void put_taps(int16_t *pp, int32_t i0, const int8_t *x, int32_t n, int32_t zp, uint32_t off2,
                     int32_t klen4)
{
    int32_t i = i0, j = 0;
    for (; j < n && (i & 3) != 0; i++, j++)
        pp[slot(i, klen4)] = (int16_t)(x[j] - zp);
    for (; j + 4 <= n && i + 4 <= klen4; i += 4, j += 4) {
        const uint32_t v = ld4(x + j);
        st4(pp + i, sxtab16(off2, v));
        st4(pp + i + 2, sxtab16_r8(off2, v));
    }
    for (; j < n; i++, j++)
        pp[slot(i, klen4)] = (int16_t)(x[j] - zp);
}

/* taps i0 .. i0 + n - 1 of the patch @p pp: zeros (padding) */
static void zero_taps(int16_t *pp, int32_t i0, int32_t n, int32_t klen4)
{
    int32_t i = i0;
    const int32_t end = i0 + n;
    for (; i < end && (i & 3) != 0; i++)
        pp[slot(i, klen4)] = 0;
    const int32_t whole = (end - i) & ~3; /* whole groups: their 4 slots are their 4 taps */
    if (whole > 0) {
        memset(pp + i, 0, (size_t)whole * sizeof *pp);
        i += whole;
    }
    for (; i < end; i++)
        pp[slot(i, klen4)] = 0;
}

/* The patch of output pixel (n, oy, ox): per filter row, the taps inside the input are
 * contiguous in it (NHWC) */
static void patch_row(const mengine_kq_params *p, const mengine_k_dims *in, const int8_t *x,
                      const mengine_k_dims *f, int32_t n, int32_t oy, int32_t ox, uint32_t off2,
                      int32_t klen4, int16_t *pp)
{
    const int32_t cin = in->c, kw = f->w, seg = kw * cin;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = x0 + kw > in->w ? in->w - x0 : kw;
    for (int32_t ky = 0; ky < f->h; ky++) {
        const int32_t iy = y0 + ky, base = ky * seg;
        if (iy < 0 || iy >= in->h || kx1 <= kx0) {
            zero_taps(pp, base, seg, klen4);
            continue;
        }
        if (kx0 > 0)
            zero_taps(pp, base, kx0 * cin, klen4);
        const int8_t *xr = x + (((size_t)n * in->h + iy) * in->w + x0 + kx0) * cin;
        put_taps(pp, base + kx0 * cin, xr, (kx1 - kx0) * cin, p->in_zp, off2, klen4);
        if (kx1 < kw)
            zero_taps(pp, base + kx1 * cin, (kw - kx1) * cin, klen4);
    }
}

/* 2 pixels (patches @p p0, @p p1) times 2 output channels (weight rows @p w0, @p w1 as stored,
 * klen int8 each): per 4 taps one 32-bit load per channel widened by SXTB16 (bytes 0 and 2, and
 * of the rotated word 1 and 3), two per pixel from the patch, 8 SMLAD. Sums in @p acc (as given:
 * the biases) as [pixel 0: ch 0, ch 1, pixel 1: ch 0, ch 1]. */
static void mm_2x2(const int16_t *p0, const int16_t *p1, const int8_t *w0, const int8_t *w1,
                   int32_t klen, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const int32_t klen4 = klen & ~3;
    for (int32_t k = 0; k < klen4; k += 4) {
        const uint32_t wa = ld4(w0 + k), wb = ld4(w1 + k);
        const uint32_t wa02 = sxtb16(wa), wa13 = sxtb16_r8(wa);
        const uint32_t wb02 = sxtb16(wb), wb13 = sxtb16_r8(wb);
        const uint32_t x02 = ld4(p0 + k), x13 = ld4(p0 + k + 2);
        a00 = smlad(x02, wa02, a00);
        a00 = smlad(x13, wa13, a00);
        a01 = smlad(x02, wb02, a01);
        a01 = smlad(x13, wb13, a01);
        const uint32_t y02 = ld4(p1 + k), y13 = ld4(p1 + k + 2);
        a10 = smlad(y02, wa02, a10);
        a10 = smlad(y13, wa13, a10);
        a11 = smlad(y02, wb02, a11);
        a11 = smlad(y13, wb13, a11);
    }
    for (int32_t k = klen4; k < klen; k++) { /* the last taps, in order */
        a00 = wadd(a00, (int32_t)p0[k] * w0[k]);
        a01 = wadd(a01, (int32_t)p0[k] * w1[k]);
        a10 = wadd(a10, (int32_t)p1[k] * w0[k]);
        a11 = wadd(a11, (int32_t)p1[k] * w1[k]);
    }
    acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
}

/* The same 2 x 2 tile reading the int8 input rows @p x0, @p x1 in place (1x1 filters: the
 * patch is the input pixel): per 4 taps one 32-bit load per pixel widened with the offset
 * @p off2 by SXTAB16 into the weights' order (bytes 0 and 2, then 1 and 3). */
static void mm_2x2_x8(const int8_t *x0, const int8_t *x1, const int8_t *w0, const int8_t *w1,
                      int32_t klen, int32_t zp, uint32_t off2, int32_t acc[4])
{
    int32_t a00 = acc[0], a01 = acc[1], a10 = acc[2], a11 = acc[3];
    const int32_t klen4 = klen & ~3;
    for (int32_t k = 0; k < klen4; k += 4) {
        const uint32_t wa = ld4(w0 + k), wb = ld4(w1 + k);
        const uint32_t wa02 = sxtb16(wa), wa13 = sxtb16_r8(wa);
        const uint32_t wb02 = sxtb16(wb), wb13 = sxtb16_r8(wb);
        const uint32_t u = ld4(x0 + k), v = ld4(x1 + k);
        const uint32_t x02 = sxtab16(off2, u), x13 = sxtab16_r8(off2, u);
        a00 = smlad(x02, wa02, a00);
        a00 = smlad(x13, wa13, a00);
        a01 = smlad(x02, wb02, a01);
        a01 = smlad(x13, wb13, a01);
        const uint32_t y02 = sxtab16(off2, v), y13 = sxtab16_r8(off2, v);
        a10 = smlad(y02, wa02, a10);
        a10 = smlad(y13, wa13, a10);
        a11 = smlad(y02, wb02, a11);
        a11 = smlad(y13, wb13, a11);
    }
    for (int32_t k = klen4; k < klen; k++) {
        a00 = wadd(a00, (x0[k] - zp) * w0[k]);
        a01 = wadd(a01, (x0[k] - zp) * w1[k]);
        a10 = wadd(a10, (x1[k] - zp) * w0[k]);
        a11 = wadd(a11, (x1[k] - zp) * w1[k]);
    }
    acc[0] = a00, acc[1] = a01, acc[2] = a10, acc[3] = a11;
}

mengine_status mengine_kq_conv2d_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                         const int32_t *shift, const float *fscale, int32_t *work,
                                         const mengine_k_dims *in, const int8_t *x,
                                         const mengine_k_dims *f, const int8_t *w,
                                         const int32_t *bias, const mengine_k_dims *out, int8_t *y)
{
    /* x - zero point in int16 halves: zero points of int8 tensors only */
    if (p->in_zp < -128 || p->in_zp > 127)
        return MENGINE_ERR_UNSUPPORTED;
    const int32_t cin = in->c, cout = out->c, klen = f->h * f->w * cin, klen4 = klen & ~3;
    const int32_t kpad = (klen + 15) / 16 * 16, pixels = out->n * out->h * out->w;
    /* 1x1 filters: the input read in place, no scratch (mengine_kq_conv_get_buffer_size()
     * reserves none for them); with padding (which SAME never gives a 1x1 filter, nor the
     * folding of a PAD) or outputs past the input's reach (the int8 TRANSPOSE_CONV's phase
     * rows can have them) the portable kernel */
    const int one = f->h == 1 && f->w == 1;
    if (one && (p->pad_h != 0 || p->pad_w != 0 || (int64_t)(out->h - 1) * p->stride_h >= in->h ||
                (int64_t)(out->w - 1) * p->stride_w >= in->w))
        return MENGINE_ERR_UNSUPPORTED;
    const uint32_t off2 = (uint32_t)(uint16_t)(int16_t)-p->in_zp * 0x10001u;
    int16_t *pa = one ? NULL : (int16_t *)(void *)(work + (cout > 0 ? cout : 1));
    int16_t *pb = one ? NULL : pa + kpad;
    int32_t n = 0, oy = 0, ox = 0; /* the next output pixel, row-major */
    for (int32_t px = 0; px < pixels; px += 2) {
        const int two = px + 1 < pixels;
        int16_t *rows[2] = {pa, pb};
        const int8_t *xs[2] = {NULL, NULL};
        for (int32_t i = 0; i < 1 + two; i++) {
            if (one)
                xs[i] =
                    x + (((size_t)n * in->h + oy * p->stride_h) * in->w + ox * p->stride_w) * cin;
            else
                patch_row(p, in, x, f, n, oy, ox, off2, klen4, rows[i]);
            if (++ox == out->w) {
                ox = 0;
                if (++oy == out->h)
                    oy = 0, n++;
            }
        }
        /* a last odd pixel: its patch twice, stored once */
        const int16_t *p1 = two ? pb : pa;
        const int8_t *x1 = two ? xs[1] : xs[0];
        int8_t *y0 = y + (size_t)px * cout, *y1 = y0 + cout;
        for (int32_t oc = 0; oc < cout; oc += 2) {
            const int pair = oc + 1 < cout;
            const int32_t oc1 = pair ? oc + 1 : oc;
            const int32_t b0 = bias ? bias[oc] : 0, b1 = bias ? bias[oc1] : 0;
            int32_t acc[4] = {b0, b1, b0, b1};
            const int8_t *w0 = w + (size_t)oc * klen, *w1 = w + (size_t)oc1 * klen;
            if (one)
                mm_2x2_x8(xs[0], x1, w0, w1, klen, p->in_zp, off2, acc);
            else
                mm_2x2(pa, p1, w0, w1, klen, acc);
            y0[oc] = rq(p, acc[0], mult, shift, fscale, oc);
            if (pair)
                y0[oc1] = rq(p, acc[1], mult, shift, fscale, oc1);
            if (two) {
                y1[oc] = rq(p, acc[2], mult, shift, fscale, oc);
                if (pair)
                    y1[oc1] = rq(p, acc[3], mult, shift, fscale, oc1);
            }
        }
    }
    return MENGINE_OK;
}

/* ---- DEPTHWISE_CONV_2D ---- */

/* Filter taps up to which the window's interior runs in tap pairs (7x7) */
#define Q8_DW_MAX_TAPS 49
#define Q8_DW_PAIRS ((Q8_DW_MAX_TAPS + 1) / 2)

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
    const int32_t izp = p->in_zp;
    /* windows inside the input, 4 channels at a time: per pair of taps (t, u), the 4 channels'
     * input bytes of each widened with the offset (SXTAB16: channels 0 and 2, then 1 and 3),
     * regrouped per channel as (t, u) (PKHBT, PKHTB) and SMLAD with the channel's (w_t, w_u);
     * an odd last tap's partner reads the same bytes with weight 0. Elsewhere (the border, the
     * last c % 4 channels, larger filters) the portable arithmetic, tap by tap. */
    const int fast = taps <= Q8_DW_MAX_TAPS && izp >= -128 && izp <= 127;
    const uint32_t off2 = (uint32_t)(uint16_t)(int16_t)-izp * 0x10001u;
    int32_t off[Q8_DW_MAX_TAPS + 1];
    uint32_t wp[Q8_DW_PAIRS][4]; /* per tap pair: channels 0, 2, 1, 3 as (w_t, w_u) */
    for (int32_t t = 0; fast && t < taps; t++)
        off[t] = ((t / kw) * in->w + t % kw) * c;
    if (fast)
        off[taps] = off[taps - 1];
    for (int32_t c0 = 0; c0 < c; c0 += 4) {
        const int32_t nc = c - c0 < 4 ? c - c0 : 4;
        const int quad = fast && nc == 4;
        for (int32_t j = 0; quad && j < pairs; j++) {
            const uint32_t wt = ld4(w + (size_t)(2 * j) * c + c0);
            const uint32_t wu = 2 * j + 1 < taps ? ld4(w + (size_t)(2 * j + 1) * c + c0) : 0;
            const uint32_t t02 = sxtb16(wt), t13 = sxtb16_r8(wt);
            const uint32_t u02 = sxtb16(wu), u13 = sxtb16_r8(wu);
            wp[j][0] = pk_lo(t02, u02), wp[j][1] = pk_hi(t02, u02);
            wp[j][2] = pk_lo(t13, u13), wp[j][3] = pk_hi(t13, u13);
        }
        const int32_t b0 = bias ? bias[c0] : 0;
        const int32_t b1 = nc > 1 && bias ? bias[c0 + 1] : 0;
        const int32_t b2 = nc > 2 && bias ? bias[c0 + 2] : 0;
        const int32_t b3 = nc > 3 && bias ? bias[c0 + 3] : 0;
        for (int32_t n = 0; n < out->n; n++)
            for (int32_t oy = 0; oy < out->h; oy++)
                for (int32_t ox = 0; ox < out->w; ox++) {
                    const int32_t y0 = oy * p->stride_h - p->pad_h;
                    const int32_t x0 = ox * p->stride_w - p->pad_w;
                    int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * c + c0;
                    if (quad && y0 >= 0 && x0 >= 0 && y0 + kh <= in->h && x0 + kw <= in->w) {
                        const int8_t *xb = x + (((size_t)n * in->h + y0) * in->w + x0) * c + c0;
                        int32_t s0 = b0, s1 = b1, s2 = b2, s3 = b3;
                        for (int32_t j = 0; j < pairs; j++) {
                            const uint32_t vt = ld4(xb + off[2 * j]), vu = ld4(xb + off[2 * j + 1]);
                            const uint32_t t02 = sxtab16(off2, vt), t13 = sxtab16_r8(off2, vt);
                            const uint32_t u02 = sxtab16(off2, vu), u13 = sxtab16_r8(off2, vu);
                            s0 = smlad(pk_lo(t02, u02), wp[j][0], s0);
                            s2 = smlad(pk_hi(t02, u02), wp[j][1], s2);
                            s1 = smlad(pk_lo(t13, u13), wp[j][2], s1);
                            s3 = smlad(pk_hi(t13, u13), wp[j][3], s3);
                        }
                        yo[0] = rq(p, s0, mult, shift, fscale, c0);
                        yo[1] = rq(p, s1, mult, shift, fscale, c0 + 1);
                        yo[2] = rq(p, s2, mult, shift, fscale, c0 + 2);
                        yo[3] = rq(p, s3, mult, shift, fscale, c0 + 3);
                        continue;
                    }
                    for (int32_t k = 0; k < nc; k++) {
                        const int32_t ch = c0 + k;
                        int32_t acc = bias ? bias[ch] : 0;
                        for (int32_t ky = 0; ky < kh; ky++) {
                            const int32_t iy = y0 + ky;
                            if (iy < 0 || iy >= in->h)
                                continue;
                            for (int32_t kx = 0; kx < kw; kx++) {
                                const int32_t ix = x0 + kx;
                                if (ix < 0 || ix >= in->w)
                                    continue;
                                const int32_t xv =
                                    x[(((size_t)n * in->h + iy) * in->w + ix) * c + ch];
                                const int32_t wv = w[((size_t)ky * kw + kx) * c + ch];
                                acc = wadd(acc, (int32_t)((uint32_t)wv * (uint32_t)(xv - izp)));
                            }
                        }
                        yo[k] = rq(p, acc, mult, shift, fscale, ch);
                    }
                }
    }
    return MENGINE_OK;
}

/* ---- the operators this path leaves to the portable kernels ---- */

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

/* ---- MEAN over H and W ---- */

/* Pixels summed in int16 halves before they join the int32 sums: 256 int8 values stay within
 * [-32768, 32512] */
#define Q8_MEAN_CHUNK 256

mengine_status mengine_kq_mean_hw_s8_simd(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y)
{
    const int32_t count = in->h * in->w, c = in->c;
    int32_t mult, shift;
    mengine_kq_mean_count_multiplier(p, count, &mult, &shift);
    const int32_t off = (int32_t)((uint32_t)-p->in_zp * (uint32_t)count);
    for (int32_t n = 0; n < in->n; n++) {
        const int8_t *xn = x + (size_t)n * count * c;
        int8_t *yn = y + (size_t)n * c;
        int32_t c0 = 0;
        /* 4 channels at a time: per pixel one 32-bit load, SXTAB16 into two int16 pairs of
         * sums (channels 0 and 2, 1 and 3) */
        for (; c0 + 4 <= c; c0 += 4) {
            int32_t s[4] = {off, off, off, off};
            for (int32_t i0 = 0; i0 < count; i0 += Q8_MEAN_CHUNK) {
                const int32_t i1 = count - i0 < Q8_MEAN_CHUNK ? count : i0 + Q8_MEAN_CHUNK;
                uint32_t s02 = 0, s13 = 0;
                for (int32_t i = i0; i < i1; i++) {
                    const uint32_t v = ld4(xn + (size_t)i * c + c0);
                    s02 = sxtab16(s02, v);
                    s13 = sxtab16_r8(s13, v);
                }
                s[0] = wadd(s[0], (int16_t)(uint16_t)s02);
                s[2] = wadd(s[2], (int16_t)(uint16_t)(s02 >> 16));
                s[1] = wadd(s[1], (int16_t)(uint16_t)s13);
                s[3] = wadd(s[3], (int16_t)(uint16_t)(s13 >> 16));
            }
            for (int32_t k = 0; k < 4; k++) {
                const int32_t v = wadd(mengine_kq_mbqm(s[k], mult, shift), p->out_zp);
                yn[c0 + k] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
            }
        }
        for (; c0 < c; c0++) { /* the last c % 4 channels */
            int32_t acc = off;
            for (int32_t i = 0; i < count; i++)
                acc = wadd(acc, xn[(size_t)i * c + c0]);
            const int32_t v = wadd(mengine_kq_mbqm(acc, mult, shift), p->out_zp);
            yn[c0] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
        }
    }
    return MENGINE_OK;
}

int mengine_kq_channel_multipliers_simd(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift)
{
    (void)in_scale, (void)wscales, (void)n_scales, (void)out_scale, (void)channels, (void)mult,
        (void)shift;
    return 0;
}

int mengine_kq_has_simd(void) { return 1; }

#endif
