/* AArch64 NEON path of the int8 kernels (see kernels_q8_impl.h; MK_Q8_PATH_NEON): CONV_2D as
 * a GEMM over packed weight panels, with SDOT (four int8 products summed into each int32
 * lane) where the compiler targets the dot-product extension (__ARM_FEATURE_DOTPROD), else
 * int16 products accumulated by SMLAL / SMLAL2; DEPTHWISE_CONV_2D, ADD, MUL, MEAN over H and
 * W, HARD_SWISH and the per-channel multipliers; TFLite's requantization with SQRDMULH and a
 * rounding shift. Results are the same bytes as the portable kernels' (mengine_kq_*_ref(),
 * compared by tests/unit/test_engine_q8.c). */
#include <string.h>

#include "engine/kernels_q8_impl.h"

#if MK_Q8_PATH == MK_Q8_PATH_NEON
#include <arm_neon.h>

#if defined(__GNUC__)
#define Q8_INLINE static inline __attribute__((always_inline))
#else
#define Q8_INLINE static inline
#endif

/* ---- requantization ---- */

/* TFLite's requantization constants of 4 channels: the Q31 multiplier, the left shift and
 * minus the right shift (min(shift, 0)). */
typedef struct rq4 {
    int32x4_t q, left, nright;
} rq4;

Q8_INLINE rq4 rq4_make(int32x4_t q, int32x4_t shift)
{
    rq4 c;
    c.q = q;
    c.left = vmaxq_s32(shift, vdupq_n_s32(0));
    c.nright = vminq_s32(shift, vdupq_n_s32(0));
    return c;
}

/* gemmlowp's double-rounding MultiplyByQuantizedMultiplier on 4 lanes (mengine_kq_mbqm()):
 * the left shift wraps as the scalar one's; SQRDMULH is SaturatingRoundingDoublingHighMul
 * exactly (round half up of x * q / 2^31, which the scalar nudge-and-truncate equals, and the
 * one saturating case INT32_MIN * INT32_MIN); RoundingDivideByPOT rounds ties away from zero
 * where SRSHL rounds them up, so negative lanes are first lowered by one (saturating) where
 * the shift is not 0, as gemmlowp's NEON code does. */
Q8_INLINE int32x4_t rq4_apply(int32x4_t x, const rq4 *c)
{
    const int32x4_t h = vqrdmulhq_s32(vshlq_s32(x, c->left), c->q);
    const int32x4_t fix = vshrq_n_s32(vandq_s32(h, c->nright), 31);
    return vrshlq_s32(vqaddq_s32(h, fix), c->nright);
}

/* Requantization constants of 16 channels in either mode: fixed point (c) or the float scales
 * (fs); the int32 biases (0 where none). */
typedef struct rqch {
    rq4 c[4];
    float32x4_t fs[4];
    int32x4_t bias[4];
} rqch;

/* 4 int32 from @p c (n < 4: the rest 0) */
Q8_INLINE int32x4_t load_ch(const int32_t *c, int32_t n)
{
    if (n >= 4)
        return vld1q_s32(c);
    int32_t t[4] = {0, 0, 0, 0};
    memcpy(t, c, (size_t)n * sizeof *t);
    return vld1q_s32(t);
}

/* 4 floats from @p c (n < 4: the rest 0) */
Q8_INLINE float32x4_t load_chf(const float *c, int32_t n)
{
    if (n >= 4)
        return vld1q_f32(c);
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(t, c, (size_t)n * sizeof *t);
    return vld1q_f32(t);
}

/* The constants of channels c0 .. c0 + n - 1 (n <= 16; the rest 0) */
static void rqch_load(rqch *r, const int32_t *mult, const int32_t *shift, const float *fscale,
                      const int32_t *bias, int32_t c0, int32_t n)
{
    const int32x4_t z = vdupq_n_s32(0);
    for (int32_t h = 0; h < 4; h++) {
        const int32_t k = n - 4 * h < 0 ? 0 : n - 4 * h > 4 ? 4 : n - 4 * h, o = c0 + 4 * h;
        r->bias[h] = bias && k ? load_ch(bias + o, k) : z;
        r->fs[h] = fscale && k ? load_chf(fscale + o, k) : vdupq_n_f32(0.0f);
        r->c[h] = rq4_make(!fscale && k ? load_ch(mult + o, k) : z,
                           !fscale && k ? load_ch(shift + o, k) : z);
    }
}

/* The output's zero point and clamp, as int32 and (for the fp32 mode) as the float bounds of
 * the scaled value. */
typedef struct outq {
    int32x4_t zp, lo, hi;
    float32x4_t flo, fhi;
} outq;

static outq outq_make(int32_t zp, int32_t lo, int32_t hi)
{
    outq o;
    o.zp = vdupq_n_s32(zp), o.lo = vdupq_n_s32(lo), o.hi = vdupq_n_s32(hi);
    o.flo = vdupq_n_f32((float)(lo - zp)), o.fhi = vdupq_n_f32((float)(hi - zp));
    return o;
}

/* fixed point: rq4_apply(), + zero point (wrapping), clamp */
Q8_INLINE int32x4_t requant4(int32x4_t x, const rq4 *c, const outq *o)
{
    return vminq_s32(vmaxq_s32(vaddq_s32(rq4_apply(x, c), o->zp), o->lo), o->hi);
}

/* XNNPACK's fp32 requantization on 4 lanes (mengine_kq_requant_fp32()): the product rounded to
 * float (no FMA), FMAXNM's lower bound also for NaN, FCVTNS's ties to even */
Q8_INLINE int32x4_t requant4f(int32x4_t x, float32x4_t scale, const outq *o)
{
    float32x4_t v = vmulq_f32(vcvtq_f32_s32(x), scale);
    v = vminq_f32(vmaxnmq_f32(v, o->flo), o->fhi);
    return vaddq_s32(vcvtnq_s32_f32(v), o->zp);
}

/* 16 int8 from four vectors of 4 int32 lanes already in [-128, 127]: the first @p n stored */
Q8_INLINE void store16(int8_t *y, int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d, int32_t n)
{
    const int16x8_t ab = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
    const int16x8_t cd = vcombine_s16(vmovn_s32(c), vmovn_s32(d));
    const int8x16_t v = vcombine_s8(vmovn_s16(ab), vmovn_s16(cd));
    if (n == 16) {
        vst1q_s8(y, v);
    } else {
        int8_t t[16];
        vst1q_s8(t, v);
        memcpy(y, t, (size_t)n);
    }
}

/* Requantize the int32 sums of 16 channels @p a in the mode of @p r (fp32 where @p fp32),
 * + zero point, clamp, and store the first @p n bytes. */
Q8_INLINE void rq_store16(const rqch *r, int fp32, const int32x4_t a[4], const outq *o, int8_t *y,
                          int32_t n)
{
    int32x4_t s[4];
    for (int32_t h = 0; h < 4; h++)
        s[h] = fp32 ? requant4f(a[h], r->fs[h], o) : requant4(a[h], &r->c[h], o);
    store16(y, s[0], s[1], s[2], s[3], n);
}

/* ---- CONV_2D ---- */

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

/* Output channels per weight panel and output pixels per tile of the GEMM */
#define Q8_PANEL 16
#define Q8_TILE 4

#if defined(__ARM_FEATURE_DOTPROD)
/* SDOT: the patches as the input's int8 values (the zero point subtracted afterwards as
 * zero point times the channel's weight sum, folded into the bias: the same int32 arithmetic
 * modulo 2^32), the padding as the zero point's byte (so that it adds nothing once the
 * correction is made); panels of 16 channels x 4 taps per 64 bytes. Scratch: 4 patch rows of
 * kpad bytes and a panel of 16 * kpad bytes (10 of the MENGINE_KQ_CONV_SCRATCH_ROWS int16
 * rows). */

/* The patch of output pixel (n, oy, ox) in the filter's (KH, KW, Cin) order, int8, the
 * padding as @p zp: per filter row, the taps inside the input are contiguous in it (NHWC) */
static void patch_row(const mengine_kq_params *p, const mengine_k_dims *in, const int8_t *x,
                      const mengine_k_dims *f, int32_t n, int32_t oy, int32_t ox, int8_t *pp)
{
    const int32_t cin = in->c, kw = f->w, seg = kw * cin;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = x0 + kw > in->w ? in->w - x0 : kw;
    const int zp = p->in_zp;
    for (int32_t ky = 0; ky < f->h; ky++, pp += seg) {
        const int32_t iy = y0 + ky;
        if (iy < 0 || iy >= in->h || kx1 <= kx0) {
            memset(pp, zp, (size_t)seg);
            continue;
        }
        if (kx0 > 0)
            memset(pp, zp, (size_t)kx0 * cin);
        const int8_t *xr = x + (((size_t)n * in->h + iy) * in->w + x0 + kx0) * cin;
        memcpy(pp + (size_t)kx0 * cin, xr, (size_t)(kx1 - kx0) * cin);
        if (kx1 < kw)
            memset(pp + (size_t)kx1 * cin, zp, (size_t)(kw - kx1) * cin);
    }
}

/* Output channels oc0 .. oc0 + nc - 1 of the weights (the rest 0) as [kpad / 4][16][4] int8,
 * taps past klen 0; @p corr: each channel's bias minus the input zero point times its weight
 * sum (wrapping) */
static void pack_panel(const int8_t *w, int32_t klen, int32_t kpad, int32_t oc0, int32_t nc,
                       int32_t zp, const int32_t *bias, int8_t *pk, int32_t corr[Q8_PANEL])
{
    memset(pk, 0, (size_t)kpad * Q8_PANEL);
    for (int32_t j = 0; j < Q8_PANEL; j++) {
        uint32_t s = 0;
        if (j < nc) {
            const int8_t *wr = w + (size_t)(oc0 + j) * klen;
            for (int32_t k = 0; k < klen; k++) {
                pk[(size_t)(k / 4) * 64 + j * 4 + k % 4] = wr[k];
                s += (uint32_t)(int32_t)wr[k];
            }
        }
        const uint32_t b = j < nc && bias ? (uint32_t)bias[oc0 + j] : 0u;
        corr[j] = (int32_t)(b - (uint32_t)zp * s);
    }
}

#define Q8_PATCH_T int8_t

/* 4 pixels (patch rows of @p kpad bytes) times the panel: per 4 taps and pixel, four SDOTs
 * (4 channels each) with the pixel's 4 taps broadcast from one lane */
static void gemm_tile(const rqch *r, int fp32, const int8_t *patch, int32_t kpad, const int8_t *pk,
                      int32_t np, const outq *o, int8_t *y, int32_t ys, int32_t nc)
{
    /* named accumulators (an array indexed by the pixel after the loop would be kept in memory
     * through it) */
    int32x4_t a00 = r->bias[0], a01 = r->bias[1], a02 = r->bias[2], a03 = r->bias[3];
    int32x4_t a10 = a00, a11 = a01, a12 = a02, a13 = a03, a20 = a00, a21 = a01, a22 = a02;
    int32x4_t a23 = a03, a30 = a00, a31 = a01, a32 = a02, a33 = a03;
    const int8_t *p0 = patch, *p1 = patch + kpad, *p2 = patch + 2 * kpad, *p3 = patch + 3 * kpad;
    for (int32_t k = 0; k < kpad; k += 16) {
        const int8x16_t x0 = vld1q_s8(p0 + k), x1 = vld1q_s8(p1 + k), x2 = vld1q_s8(p2 + k),
                        x3 = vld1q_s8(p3 + k);
        const int8_t *wk = pk + (size_t)k * Q8_PANEL;
#define Q8_SDOT(i, xv, g)                              \
    do {                                               \
        a##i##0 = vdotq_laneq_s32(a##i##0, w0, xv, g); \
        a##i##1 = vdotq_laneq_s32(a##i##1, w1, xv, g); \
        a##i##2 = vdotq_laneq_s32(a##i##2, w2, xv, g); \
        a##i##3 = vdotq_laneq_s32(a##i##3, w3, xv, g); \
    } while (0)
#define Q8_SDOT4(g)                                                                           \
    do {                                                                                      \
        const int8x16_t w0 = vld1q_s8(wk + 64 * (g)), w1 = vld1q_s8(wk + 64 * (g) + 16),      \
                        w2 = vld1q_s8(wk + 64 * (g) + 32), w3 = vld1q_s8(wk + 64 * (g) + 48); \
        Q8_SDOT(0, x0, g);                                                                    \
        Q8_SDOT(1, x1, g);                                                                    \
        Q8_SDOT(2, x2, g);                                                                    \
        Q8_SDOT(3, x3, g);                                                                    \
    } while (0)
        Q8_SDOT4(0);
        Q8_SDOT4(1);
        Q8_SDOT4(2);
        Q8_SDOT4(3);
#undef Q8_SDOT4
#undef Q8_SDOT
    }
    const int32x4_t acc[Q8_TILE][4] = {
        {a00, a01, a02, a03}, {a10, a11, a12, a13}, {a20, a21, a22, a23}, {a30, a31, a32, a33}};
    for (int32_t i = 0; i < np; i++)
        rq_store16(r, fp32, acc[i], o, y + (size_t)i * ys, nc);
}

#else /* SMLAL / SMLAL2 */
/* int16 products: the patches as int16 x - zero point (0 for the padding), panels of
 * [kpad][16] int16. Scratch: 4 patch rows and a panel of 16 rows of kpad int16 (20 of the
 * MENGINE_KQ_CONV_SCRATCH_ROWS). */

/* (x - zero point) of @p n int8 as int16 into @p d */
static void cvt_row(const int8_t *x, int32_t n, int32_t zp, int16_t *d)
{
    const int16x8_t izp = vdupq_n_s16((int16_t)zp);
    int32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const int8x16_t v = vld1q_s8(x + i);
        vst1q_s16(d + i, vsubq_s16(vmovl_s8(vget_low_s8(v)), izp));
        vst1q_s16(d + i + 8, vsubq_s16(vmovl_high_s8(v), izp));
    }
    for (; i + 8 <= n; i += 8)
        vst1q_s16(d + i, vsubq_s16(vmovl_s8(vld1_s8(x + i)), izp));
    for (; i < n; i++)
        d[i] = (int16_t)(x[i] - zp);
}

/* The patch of output pixel (n, oy, ox), (x - zero point) as int16 in the filter's
 * (KH, KW, Cin) order, zeros for the padding */
static void patch_row(const mengine_kq_params *p, const mengine_k_dims *in, const int8_t *x,
                      const mengine_k_dims *f, int32_t n, int32_t oy, int32_t ox, int16_t *pp)
{
    const int32_t cin = in->c, kw = f->w, seg = kw * cin;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t kx0 = x0 < 0 ? -x0 : 0, kx1 = x0 + kw > in->w ? in->w - x0 : kw;
    for (int32_t ky = 0; ky < f->h; ky++, pp += seg) {
        const int32_t iy = y0 + ky;
        if (iy < 0 || iy >= in->h || kx1 <= kx0) {
            memset(pp, 0, (size_t)seg * sizeof *pp);
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

/* Output channels oc0 .. oc0 + nc - 1 of the weights (the rest 0) as [kpad][16] int16, taps
 * past klen 0; @p corr: the biases (0 where none) */
static void pack_panel(const int8_t *w, int32_t klen, int32_t kpad, int32_t oc0, int32_t nc,
                       int32_t zp, const int32_t *bias, int16_t *pk, int32_t corr[Q8_PANEL])
{
    (void)zp;
    memset(pk, 0, (size_t)kpad * Q8_PANEL * sizeof *pk);
    for (int32_t j = 0; j < nc; j++) {
        const int8_t *wr = w + (size_t)(oc0 + j) * klen;
        for (int32_t k = 0; k < klen; k++)
            pk[(size_t)k * Q8_PANEL + j] = wr[k];
    }
    for (int32_t j = 0; j < Q8_PANEL; j++)
        corr[j] = j < nc && bias ? bias[oc0 + j] : 0;
}

#define Q8_PATCH_T int16_t

/* 4 pixels (patch rows of @p kpad int16) times the panel: per tap and pixel, four SMLAL /
 * SMLAL2 (4 channels each) by the pixel's value in a lane of its 8 loaded taps */
static void gemm_tile(const rqch *r, int fp32, const int16_t *patch, int32_t kpad,
                      const int16_t *pk, int32_t np, const outq *o, int8_t *y, int32_t ys,
                      int32_t nc)
{
    /* named accumulators, as in the SDOT tile */
    int32x4_t a00 = r->bias[0], a01 = r->bias[1], a02 = r->bias[2], a03 = r->bias[3];
    int32x4_t a10 = a00, a11 = a01, a12 = a02, a13 = a03, a20 = a00, a21 = a01, a22 = a02;
    int32x4_t a23 = a03, a30 = a00, a31 = a01, a32 = a02, a33 = a03;
    const int16_t *p0 = patch, *p1 = patch + kpad, *p2 = patch + 2 * kpad, *p3 = patch + 3 * kpad;
    for (int32_t k = 0; k < kpad; k += 8) {
        const int16x8_t x0 = vld1q_s16(p0 + k), x1 = vld1q_s16(p1 + k), x2 = vld1q_s16(p2 + k),
                        x3 = vld1q_s16(p3 + k);
        const int16_t *wk = pk + (size_t)k * Q8_PANEL;
#define Q8_MLAL(i, xv, t)                                            \
    do {                                                             \
        a##i##0 = vmlal_laneq_s16(a##i##0, vget_low_s16(w0), xv, t); \
        a##i##1 = vmlal_high_laneq_s16(a##i##1, w0, xv, t);          \
        a##i##2 = vmlal_laneq_s16(a##i##2, vget_low_s16(w1), xv, t); \
        a##i##3 = vmlal_high_laneq_s16(a##i##3, w1, xv, t);          \
    } while (0)
#define Q8_TAP(t)                                                                         \
    do {                                                                                  \
        const int16x8_t w0 = vld1q_s16(wk + 16 * (t)), w1 = vld1q_s16(wk + 16 * (t) + 8); \
        Q8_MLAL(0, x0, t);                                                                \
        Q8_MLAL(1, x1, t);                                                                \
        Q8_MLAL(2, x2, t);                                                                \
        Q8_MLAL(3, x3, t);                                                                \
    } while (0)
        Q8_TAP(0);
        Q8_TAP(1);
        Q8_TAP(2);
        Q8_TAP(3);
        Q8_TAP(4);
        Q8_TAP(5);
        Q8_TAP(6);
        Q8_TAP(7);
#undef Q8_TAP
#undef Q8_MLAL
    }
    const int32x4_t acc[Q8_TILE][4] = {
        {a00, a01, a02, a03}, {a10, a11, a12, a13}, {a20, a21, a22, a23}, {a30, a31, a32, a33}};
    for (int32_t i = 0; i < np; i++)
        rq_store16(r, fp32, acc[i], o, y + (size_t)i * ys, nc);
}
#endif

mengine_status mengine_kq_conv2d_s8_simd(const mengine_kq_params *p, const int32_t *mult,
                                         const int32_t *shift, const float *fscale, int32_t *work,
                                         const mengine_k_dims *in, const int8_t *x,
                                         const mengine_k_dims *f, const int8_t *w,
                                         const int32_t *bias, const mengine_k_dims *out, int8_t *y)
{
    /* the scratch after the int32 work (mengine_kq_conv_get_buffer_size()) */
    Q8_PATCH_T *patch = (Q8_PATCH_T *)(void *)(work + (out->c > 0 ? out->c : 1));
    const int32_t cin = in->c, cout = out->c, klen = f->h * f->w * cin;
    const int32_t kpad = (klen + 15) / 16 * 16;
    const int32_t pixels = out->n * out->h * out->w;
    const int one = f->h == 1 && f->w == 1 && p->stride_h == 1 && p->stride_w == 1 &&
                    p->pad_h == 0 && p->pad_w == 0 && out->h == in->h && out->w == in->w;
    Q8_PATCH_T *pk = patch + (size_t)Q8_TILE * kpad;
    const outq o = outq_make(p->out_zp, p->act_min, p->act_max);
    const int fp32 = fscale != NULL;
    /* taps past klen and rows past the last pixel: defined values, never stored */
    memset(patch, 0, (size_t)Q8_TILE * kpad * sizeof *patch);
    for (int32_t oc0 = 0; oc0 < cout; oc0 += Q8_PANEL) {
        const int32_t nc = cout - oc0 < Q8_PANEL ? cout - oc0 : Q8_PANEL;
        int32_t corr[Q8_PANEL];
        pack_panel(w, klen, kpad, oc0, nc, p->in_zp, bias, pk, corr);
        rqch r;
        rqch_load(&r, mult, shift, fscale, NULL, oc0, nc);
        for (int32_t h = 0; h < 4; h++)
            r.bias[h] = vld1q_s32(corr + 4 * h);
        pxpos q = {0, 0, 0};
        for (int32_t px0 = 0; px0 < pixels; px0 += Q8_TILE) {
            const int32_t np = pixels - px0 < Q8_TILE ? pixels - px0 : Q8_TILE;
            for (int32_t i = 0; i < np; i++, pxpos_next(&q, out)) {
                Q8_PATCH_T *pp = patch + (size_t)i * kpad;
                if (one)
#if defined(__ARM_FEATURE_DOTPROD)
                    memcpy(pp, x + (size_t)(px0 + i) * cin, (size_t)cin);
#else
                    cvt_row(x + (size_t)(px0 + i) * cin, cin, p->in_zp, pp);
#endif
                else
                    patch_row(p, in, x, f, q.n, q.oy, q.ox, pp);
            }
            gemm_tile(&r, fp32, patch, kpad, pk, np, &o, y + (size_t)px0 * cout + oc0, cout, nc);
        }
    }
    return MENGINE_OK;
}

/* ---- DEPTHWISE_CONV_2D ---- */

/* 16 int8 at @p a (n < 16: the rest 0) */
Q8_INLINE int8x16_t load16(const int8_t *a, int32_t n)
{
    if (n == 16)
        return vld1q_s8(a);
    int8_t t[16] = {0};
    memcpy(t, a, (size_t)n);
    return vld1q_s8(t);
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
    const outq o = outq_make(p->out_zp, p->act_min, p->act_max);
    const int16x8_t izp = vdupq_n_s16((int16_t)p->in_zp);
    const int fp32 = fscale != NULL;
    /* 16 channels at a time over every pixel; per tap inside the input, (x - zero point) and
     * the weights as int16 (|x - zp| <= 255, |w| <= 128), SMLAL / SMLAL2 into 4 int32 lanes */
    for (int32_t c0 = 0; c0 < c; c0 += 16) {
        const int32_t nc = c - c0 < 16 ? c - c0 : 16;
        rqch r;
        rqch_load(&r, mult, shift, fscale, bias, c0, nc);
        for (int32_t n = 0; n < out->n; n++)
            for (int32_t oy = 0; oy < out->h; oy++)
                for (int32_t ox = 0; ox < out->w; ox++) {
                    const int32_t y0 = oy * p->stride_h - p->pad_h;
                    const int32_t x0 = ox * p->stride_w - p->pad_w;
                    int32x4_t a[4] = {r.bias[0], r.bias[1], r.bias[2], r.bias[3]};
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky;
                        if (iy < 0 || iy >= in->h)
                            continue;
                        const int8_t *xr = x + ((size_t)n * in->h + iy) * in->w * c + c0;
                        const int8_t *wr = w + (size_t)ky * kw * c + c0;
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx;
                            if (ix < 0 || ix >= in->w)
                                continue;
                            const int8x16_t xv = load16(xr + (size_t)ix * c, nc);
                            const int8x16_t wv = load16(wr + (size_t)kx * c, nc);
                            const int16x8_t xl = vsubq_s16(vmovl_s8(vget_low_s8(xv)), izp);
                            const int16x8_t xh = vsubq_s16(vmovl_high_s8(xv), izp);
                            const int16x8_t wl = vmovl_s8(vget_low_s8(wv)), wh = vmovl_high_s8(wv);
                            a[0] = vmlal_s16(a[0], vget_low_s16(xl), vget_low_s16(wl));
                            a[1] = vmlal_high_s16(a[1], xl, wl);
                            a[2] = vmlal_s16(a[2], vget_low_s16(xh), vget_low_s16(wh));
                            a[3] = vmlal_high_s16(a[3], xh, wh);
                        }
                    }
                    rq_store16(&r, fp32, a, &o,
                               y + (((size_t)n * out->h + oy) * out->w + ox) * c + c0, nc);
                }
    }
    return MENGINE_OK;
}

/* ---- ADD, MUL ---- */

/* ADD's or MUL's constants: the zero points, the inputs' and the output's requantization */
typedef struct bin4 {
    rq4 c1, c2, c;
    int32x4_t zp1, zp2;
    outq o;
    int add;
} bin4;

/* ADD (integer_ops::Add's arithmetic: inputs shifted left by 20, each rescaled, summed,
 * rescaled) or MUL of 4 lanes */
Q8_INLINE int32x4_t binary4(const bin4 *k, int32x4_t a, int32x4_t b)
{
    a = vsubq_s32(a, k->zp1);
    b = vsubq_s32(b, k->zp2);
    int32x4_t v;
    if (k->add)
        v = vaddq_s32(rq4_apply(vshlq_n_s32(a, 20), &k->c1), rq4_apply(vshlq_n_s32(b, 20), &k->c2));
    else
        v = vmulq_s32(a, b);
    return requant4(v, &k->c, &k->o);
}

/* 16 results of binary4() for the int8 at @p a and @p b (n < 16: the rest computed on 0 and
 * not stored) */
Q8_INLINE void binary16(const bin4 *k, const int8_t *a, const int8_t *b, int8_t *y, int32_t n)
{
    const int8x16_t av = load16(a, n), bv = load16(b, n);
    const int16x8_t al = vmovl_s8(vget_low_s8(av)), ah = vmovl_high_s8(av);
    const int16x8_t bl = vmovl_s8(vget_low_s8(bv)), bh = vmovl_high_s8(bv);
    store16(y, binary4(k, vmovl_s16(vget_low_s16(al)), vmovl_s16(vget_low_s16(bl))),
            binary4(k, vmovl_high_s16(al), vmovl_high_s16(bl)),
            binary4(k, vmovl_s16(vget_low_s16(ah)), vmovl_s16(vget_low_s16(bh))),
            binary4(k, vmovl_high_s16(ah), vmovl_high_s16(bh)), n);
}

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
    bin4 k;
    k.add = add;
    k.c1 = rq4_make(vdupq_n_s32(p->mult1), vdupq_n_s32(p->shift1));
    k.c2 = rq4_make(vdupq_n_s32(p->mult2), vdupq_n_s32(p->shift2));
    k.c = rq4_make(vdupq_n_s32(p->mult), vdupq_n_s32(p->shift));
    k.zp1 = vdupq_n_s32(p->in_zp), k.zp2 = vdupq_n_s32(p->in2_zp);
    k.o = outq_make(p->out_zp, p->act_min, p->act_max);
    if (b_full) {
        for (size_t i = 0; i < total; i += 16)
            binary16(&k, a + i, b + i, y + i, total - i < 16 ? (int32_t)(total - i) : 16);
        return MENGINE_OK;
    }
    const int32_t c = od->c;
    for (size_t i = 0; i < total; i += (size_t)c) /* b along the channels */
        for (int32_t j = 0; j < c; j += 16)
            binary16(&k, a + i + j, b + j, y + i + j, c - j < 16 ? c - j : 16);
    return MENGINE_OK;
}

/* ---- MEAN over H and W ---- */

mengine_status mengine_kq_mean_hw_s8_simd(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y)
{
    const int32_t count = in->h * in->w, c = in->c;
    int32_t mult, shift;
    mengine_kq_mean_count_multiplier(p, count, &mult, &shift);
    const rq4 k = rq4_make(vdupq_n_s32(mult), vdupq_n_s32(shift));
    const outq o = outq_make(p->out_zp, -128, 127);
    /* the sum of x - in_zp as the sum of x plus -in_zp * count (wrapping as the scalar one) */
    const int32x4_t off = vdupq_n_s32((int32_t)((uint32_t)-p->in_zp * (uint32_t)count));
    for (int32_t n = 0; n < in->n; n++)
        for (int32_t c0 = 0; c0 < c; c0 += 16) {
            const int32_t nc = c - c0 < 16 ? c - c0 : 16;
            const int8_t *xc = x + (size_t)n * count * c + c0;
            int32x4_t a0 = off, a1 = off, a2 = off, a3 = off;
            for (int32_t i = 0; i < count; i++) {
                const int8x16_t v = load16(xc + (size_t)i * c, nc);
                const int16x8_t l = vmovl_s8(vget_low_s8(v)), h = vmovl_high_s8(v);
                a0 = vaddw_s16(a0, vget_low_s16(l));
                a1 = vaddw_high_s16(a1, l);
                a2 = vaddw_s16(a2, vget_low_s16(h));
                a3 = vaddw_high_s16(a3, h);
            }
            store16(y + (size_t)n * c + c0, requant4(a0, &k, &o), requant4(a1, &k, &o),
                    requant4(a2, &k, &o), requant4(a3, &k, &o), nc);
        }
    return MENGINE_OK;
}

/* ---- per-channel multipliers ---- */

int mengine_kq_channel_multipliers_simd(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift)
{
    if (n_scales <= 1)
        return 0;
    const float64x2_t vin = vdupq_n_f64((double)in_scale), vout = vdupq_n_f64((double)out_scale);
    const float64x2_t lo = vdupq_n_f64(0x1p-1022), hi = vdupq_n_f64(1e300);
    const uint64x2_t mant = vdupq_n_u64(((uint64_t)1 << 52) - 1);
    const uint64x2_t one52 = vdupq_n_u64((uint64_t)1 << 52);
    const uint64x2_t r21 = vdupq_n_u64((uint64_t)1 << 21);
    const uint64x2_t two31 = vdupq_n_u64((uint64_t)1 << 31);
    const uint64x2_t two30 = vdupq_n_u64((uint64_t)1 << 30);
    int32_t c = 0;
    for (; c + 2 <= channels; c += 2) {
        float ws[2];
        memcpy(ws, wscales + 4 * (size_t)c, sizeof ws); /* little-endian, as the file */
        const float64x2_t m = vdivq_f64(vmulq_f64(vin, vcvt_f64_f32(vld1_f32(ws))), vout);
        /* normal, positive and below 1e300 in both lanes; else the scalar path */
        const uint64x2_t ok = vandq_u64(vcgeq_f64(m, lo), vcltq_f64(m, hi));
        if (vgetq_lane_u64(ok, 0) == 0 || vgetq_lane_u64(ok, 1) == 0) {
            mengine_kq_channel_multipliers_ref(in_scale, wscales + 4 * (size_t)c, 2, out_scale, 2,
                                               mult + c, shift + c);
            continue;
        }
        const uint64x2_t bits = vreinterpretq_u64_f64(m);
        /* frexp: m = f * 2^e, f = (mantissa | 2^52) / 2^53; round(f * 2^31) half up (f > 0) */
        int64x2_t e = vsubq_s64(vreinterpretq_s64_u64(vshrq_n_u64(bits, 52)), vdupq_n_s64(1022));
        uint64x2_t q = vshrq_n_u64(vaddq_u64(vorrq_u64(vandq_u64(bits, mant), one52), r21), 22);
        const uint64x2_t full = vceqq_u64(q, two31); /* 2^31: 2^30 and e + 1 */
        q = vbslq_u64(full, two30, q);
        e = vsubq_s64(e, vreinterpretq_s64_u64(full));
        int32x2_t q32 = vmovn_s64(vreinterpretq_s64_u64(q)), e32 = vmovn_s64(e);
        const uint32x2_t under = vclt_s32(e32, vdup_n_s32(-31)); /* 0, 0 */
        q32 = vbsl_s32(under, vdup_n_s32(0), q32);
        e32 = vbsl_s32(under, vdup_n_s32(0), e32);
        const uint32x2_t over = vcgt_s32(e32, vdup_n_s32(30)); /* the largest */
        q32 = vbsl_s32(over, vdup_n_s32(INT32_MAX), q32);
        e32 = vbsl_s32(over, vdup_n_s32(30), e32);
        vst1_s32(mult + c, q32);
        vst1_s32(shift + c, e32);
    }
    if (c < channels)
        mengine_kq_channel_multipliers_ref(in_scale, wscales + 4 * (size_t)c,
                                           (uint32_t)(channels - c), out_scale, channels - c,
                                           mult + c, shift + c);
    return 1;
}

/* ---- HARD_SWISH ---- */

/* 32-bit RoundingDivideByPOT by -@p nright (0..31) in every lane (as rq4_apply()'s) */
Q8_INLINE int32x4_t rdpot4(int32x4_t x, int32x4_t nright)
{
    const int32x4_t fix = vshrq_n_s32(vandq_s32(x, nright), 31);
    return vrshlq_s32(vqaddq_s32(x, fix), nright);
}

/* HARD_SWISH's constants (TFLite's HardSwishParams) */
typedef struct hs16 {
    int16x8_t izp, om, rm, rshl;
    int32x4_t rshr, oshr, ozp;
    int32_t rexp;
} hs16;

/* 8 values of the reference HARD_SWISH (mengine_kq_hard_swish_s8_ref()'s steps in int16
 * lanes: SQRDMULH is its SaturatingRoundingDoublingHighMul, SQSHL its saturating shift),
 * as int32 lanes before the clamp */
Q8_INLINE void hswish8(const hs16 *k, int16x8_t xv, int32x4_t *lo, int32x4_t *hi)
{
    const int16x8_t hires = vshlq_n_s16(vsubq_s16(xv, k->izp), 7); /* |v| <= 255: fits */
    const int16x8_t pre_out = vqrdmulhq_s16(hires, k->om);
    int16x8_t r = hires;
    if (k->rexp > 0)
        r = vqshlq_s16(r, k->rshl);
    r = vqrdmulhq_s16(r, k->rm);
    if (k->rexp > 0)
        r = vqaddq_s16(r, r);
    if (k->rexp < 0)
        r = vcombine_s16(vmovn_s32(rdpot4(vmovl_s16(vget_low_s16(r)), k->rshr)),
                         vmovn_s32(rdpot4(vmovl_high_s16(r), k->rshr)));
    /* (r + 2^15) >> 1 in [0, 2^15) */
    r = vreinterpretq_s16_u16(
        vshrq_n_u16(veorq_u16(vreinterpretq_u16_s16(r), vdupq_n_u16(0x8000)), 1));
    /* r * pre_out / 2^15 toward zero, in 32 bits */
    int32x4_t q0 = vmull_s16(vget_low_s16(r), vget_low_s16(pre_out));
    int32x4_t q1 = vmull_high_s16(r, pre_out);
    const int32x4_t tz = vdupq_n_s32(0x7fff);
    q0 = vshrq_n_s32(vaddq_s32(q0, vandq_s32(vshrq_n_s32(q0, 31), tz)), 15);
    q1 = vshrq_n_s32(vaddq_s32(q1, vandq_s32(vshrq_n_s32(q1, 31), tz)), 15);
    *lo = vaddq_s32(rdpot4(q0, k->oshr), k->ozp);
    *hi = vaddq_s32(rdpot4(q1, k->oshr), k->ozp);
}

/* 16 values, saturated to int8 */
Q8_INLINE int8x16_t hswish16(const hs16 *k, int8x16_t xb)
{
    int32x4_t a, b, c, d;
    hswish8(k, vmovl_s8(vget_low_s8(xb)), &a, &b);
    hswish8(k, vmovl_high_s8(xb), &c, &d);
    const int16x8_t l = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
    const int16x8_t h = vcombine_s16(vqmovn_s32(c), vqmovn_s32(d));
    return vcombine_s8(vqmovn_s16(l), vqmovn_s16(h));
}

mengine_status mengine_kq_hard_swish_s8_simd(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                             size_t n)
{
    hs16 k;
    const int32_t re = p->hs_relu_exp, oe = -p->hs_out_exp; /* oe >= 0: prepare's check */
    if (oe < 0 || oe > 31 || re < -31)
        return MENGINE_ERR_UNSUPPORTED;
    k.izp = vdupq_n_s16((int16_t)p->in_zp);
    k.om = vdupq_n_s16(p->hs_out_mult);
    k.rm = vdupq_n_s16(p->hs_relu_mult);
    k.ozp = vdupq_n_s32(p->out_zp);
    k.rexp = re;
    /* a shift by 16 or more saturates every non-zero int16 as one by 16 does */
    k.rshl = vdupq_n_s16((int16_t)(re > 17 ? 16 : re > 0 ? re - 1 : 0));
    k.rshr = vdupq_n_s32(re < 0 ? re : 0);
    k.oshr = vdupq_n_s32(-oe);
    size_t i = 0;
    if (n >= 512) { /* a function of the byte: its 256 values, looked up 16 bytes at a time */
        int8_t lut[256];
        for (int v = 0; v < 256; v += 16) { /* lut[b] = f((int8_t)b) */
            int8_t in16[16];
            for (int j = 0; j < 16; j++)
                in16[j] = (int8_t)(uint8_t)(v + j);
            vst1q_s8(lut + v, hswish16(&k, vld1q_s8(in16)));
        }
        int8x16x4_t t[4];
        for (int j = 0; j < 4; j++)
            t[j] = vld1q_s8_x4(lut + 64 * j);
        const uint8x16_t c64 = vdupq_n_u8(64);
        for (; i + 16 <= n; i += 16) {
            /* TBL gives 0 for an index past its 64 bytes: the four tables' results ORed */
            uint8x16_t u = vreinterpretq_u8_s8(vld1q_s8(x + i));
            int8x16_t r = vqtbl4q_s8(t[0], u);
            u = vsubq_u8(u, c64);
            r = vorrq_s8(r, vqtbl4q_s8(t[1], u));
            u = vsubq_u8(u, c64);
            r = vorrq_s8(r, vqtbl4q_s8(t[2], u));
            u = vsubq_u8(u, c64);
            r = vorrq_s8(r, vqtbl4q_s8(t[3], u));
            vst1q_s8(y + i, r);
        }
    }
    for (; i + 16 <= n; i += 16)
        vst1q_s8(y + i, hswish16(&k, vld1q_s8(x + i)));
    if (i < n) {
        int8_t t[16] = {0};
        memcpy(t, x + i, n - i);
        vst1q_s8(t, hswish16(&k, vld1q_s8(t)));
        memcpy(y + i, t, n - i);
    }
    return MENGINE_OK;
}

int mengine_kq_has_simd(void) { return 1; }

#endif
