/* int8 kernels (see kernels_q8_impl.h): plain C loops with TensorFlow Lite's
 * fixed-point arithmetic, written from its reference kernels' definitions. */
#include <string.h>

#include "engine/kernels_q8_impl.h"

#include <math.h> /* expf only (the engine's one libm call) */

/* ---- fixed point ---- */

/* frexp for finite m > 0: m = f * 2^e, f in [0.5, 1) (no libm). */
static double frexp_pos(double m, int32_t *e)
{
    uint64_t bits;
    int32_t adj = 0;
    memcpy(&bits, &m, sizeof bits);
    if (((bits >> 52) & 0x7ff) == 0) { /* subnormal: scale into the normal range */
        m *= 18014398509481984.0;      /* 2^54 */
        adj = -54;
        memcpy(&bits, &m, sizeof bits);
    }
    *e = (int32_t)((bits >> 52) & 0x7ff) - 1022 + adj;
    bits = (bits & ~((uint64_t)0x7ff << 52)) | ((uint64_t)1022 << 52);
    memcpy(&m, &bits, sizeof m);
    return m;
}

/* round half away from zero of a value whose magnitude fits int64 */
static int64_t round_away(double x) { return x >= 0 ? (int64_t)(x + 0.5) : -(int64_t)(-x + 0.5); }

void mengine_kq_quantize_multiplier(double m, int32_t *q, int32_t *shift)
{
    if (!(m > 0.0) || !(m < 1e300)) {
        *q = 0;
        *shift = 0;
        return;
    }
    int32_t e;
    const double f = frexp_pos(m, &e);
    int64_t fixed = round_away(f * 2147483648.0);
    if (fixed == ((int64_t)1 << 31)) {
        fixed /= 2;
        e++;
    }
    if (e < -31) {
        e = 0;
        fixed = 0;
    }
    if (e > 30) { /* TFLite: the largest representable */
        e = 30;
        fixed = ((int64_t)1 << 31) - 1;
    }
    *q = (int32_t)fixed;
    *shift = e;
}

void mengine_kq_act_range(mengine_k_act act, float scale, int32_t zp, int32_t *lo, int32_t *hi)
{
    int32_t a = -128, b = 127;
    if (act == MK_ACT_RELU || act == MK_ACT_RELU6 || act == MK_ACT_RELU_N1_TO_1) {
        const float low = act == MK_ACT_RELU_N1_TO_1 ? -1.0f : 0.0f;
        const double r = (double)(low / scale);
        const int32_t q = r < -1e9 ? -128 : zp + (int32_t)round_away(r);
        a = q > a ? q : a;
    }
    if (act == MK_ACT_RELU6 || act == MK_ACT_RELU_N1_TO_1) {
        const float high = act == MK_ACT_RELU6 ? 6.0f : 1.0f;
        const double r = (double)(high / scale);
        const int32_t q = r > 1e9 ? 127 : zp + (int32_t)round_away(r);
        b = q < b ? q : b;
    }
    *lo = a;
    *hi = b;
}

static float f32_at(const uint8_t *p, uint32_t i)
{
    const uint8_t *b = p + 4 * i;
    const uint32_t u =
        (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void mengine_kq_channel_multipliers(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                    float out_scale, int32_t channels, int32_t *mult,
                                    int32_t *shift)
{
    if (!mengine_kq_channel_multipliers_simd(in_scale, wscales, n_scales, out_scale, channels, mult,
                                             shift))
        mengine_kq_channel_multipliers_ref(in_scale, wscales, n_scales, out_scale, channels, mult,
                                           shift);
}

void mengine_kq_channel_multipliers_ref(float in_scale, const uint8_t *wscales, uint32_t n_scales,
                                        float out_scale, int32_t channels, int32_t *mult,
                                        int32_t *shift)
{
    for (int32_t c = 0; c < channels; c++) {
        const double ws = (double)f32_at(wscales, n_scales > 1 ? (uint32_t)c : 0);
        mengine_kq_quantize_multiplier((double)in_scale * ws / (double)out_scale, &mult[c],
                                       &shift[c]);
    }
}

size_t mengine_kq_conv_get_buffer_size(const mengine_k_dims *filter, int dw)
{
    const size_t c = (size_t)(dw ? filter->c : filter->n);
    /* the vector CONV_2D's patch rows and weight panel (kernels_q8_simd.c, kernels_q8_dsp.c);
     * none in the portable kernels */
    const size_t kpad = ((size_t)filter->h * filter->w * filter->c + 15) / 16 * 16;
    const int rows = !dw && mengine_kq_has_simd() &&
                     (MENGINE_KQ_CONV_SCRATCH_1X1 || (size_t)filter->h * filter->w > 1);
    const size_t vec = rows ? kpad * MENGINE_KQ_CONV_SCRATCH_ROWS : 0;
    return (c ? c : 1) * 3 * sizeof(int32_t) + vec * sizeof(int16_t);
}

/* int32 sums wrap (two's complement) instead of overflowing: a valid model never gets near
 * 2^31, a hostile one (a bias of INT32_MIN) must not reach undefined behaviour */
static int32_t wadd(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static int32_t wmul(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }

static int8_t clamp8(int32_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* ---- convolutions ---- */

int8_t mengine_kq_requant_fp32(int32_t acc, float scale, int32_t zp, int32_t lo, int32_t hi)
{
    float v = (float)acc * scale;
    const float vlo = (float)(lo - zp), vhi = (float)(hi - zp);
    v = v >= vlo ? v : vlo; /* NaN (an infinite scale times 0) too */
    v = v <= vhi ? v : vhi;
    v = (v + 12582912.0f) - 12582912.0f; /* 1.5 * 2^23: to the nearest integer, ties to even */
    return (int8_t)((int32_t)v + zp);
}

/* output channel @p c of accumulator @p acc: fixed point (mult, shift) or, with @p fscale, fp32 */
static int8_t rq(const mengine_kq_params *p, int32_t acc, const int32_t *mult, const int32_t *shift,
                 const float *fscale, int32_t c)
{
    if (fscale)
        return mengine_kq_requant_fp32(acc, fscale[c], p->out_zp, p->act_min, p->act_max);
    return clamp8(wadd(mengine_kq_mbqm(acc, mult[c], shift[c]), p->out_zp), p->act_min, p->act_max);
}

mengine_status mengine_kq_conv2d_s8_ref(const mengine_kq_params *p, const int32_t *mult,
                                        const int32_t *shift, const float *fscale, int32_t *work,
                                        const mengine_k_dims *in, const int8_t *x,
                                        const mengine_k_dims *f, const int8_t *w,
                                        const int32_t *bias, const mengine_k_dims *out, int8_t *y)
{
    if (!p || ((!mult || !shift) && !fscale) || !work || !x || !w || !y || p->stride_h < 1 ||
        p->stride_w < 1)
        return MENGINE_ERR_ARG;
    const int32_t cin = in->c, kh = f->h, kw = f->w, cout = out->c;
    const int32_t in_off = -p->in_zp;
    if (kh == 1 && kw == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_h == 0 &&
        p->pad_w == 0 && out->h == in->h && out->w == in->w) {
        /* 1x1: sum w * (x - zp) = sum w * x - zp * sum w, the weight sums once per call
         * (in @p work), the inner loop a plain int8 dot product */
        int32_t *wsum = work;
        for (int32_t oc = 0; oc < cout; oc++) {
            int32_t t = 0;
            for (int32_t ic = 0; ic < cin; ic++)
                t = wadd(t, w[(size_t)oc * cin + ic]);
            wsum[oc] = wadd(bias ? bias[oc] : 0, wmul(in_off, t));
        }
        const size_t pixels = (size_t)out->n * out->h * out->w;
        for (size_t px = 0; px < pixels; px++) {
            const int8_t *xi = x + px * cin;
            int8_t *yo = y + px * cout;
            for (int32_t oc = 0; oc < cout; oc++) {
                const int8_t *wi = w + (size_t)oc * cin;
                int32_t acc = 0;
                for (int32_t ic = 0; ic < cin; ic++)
                    acc = wadd(acc, (int32_t)wi[ic] * (int32_t)xi[ic]);
                yo[oc] = rq(p, wadd(acc, wsum[oc]), mult, shift, fscale, oc);
            }
        }
        return MENGINE_OK;
    }
    for (int32_t n = 0; n < out->n; n++)
        for (int32_t oy = 0; oy < out->h; oy++)
            for (int32_t ox = 0; ox < out->w; ox++) {
                const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
                int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * cout;
                for (int32_t oc = 0; oc < cout; oc++) {
                    int32_t acc = 0;
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky;
                        if (iy < 0 || iy >= in->h)
                            continue;
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx;
                            if (ix < 0 || ix >= in->w)
                                continue;
                            const int8_t *xi = x + (((size_t)n * in->h + iy) * in->w + ix) * cin;
                            const int8_t *wi = w + (((size_t)oc * kh + ky) * kw + kx) * cin;
                            for (int32_t ic = 0; ic < cin; ic++)
                                acc = wadd(acc, (int32_t)wi[ic] * ((int32_t)xi[ic] + in_off));
                        }
                    }
                    if (bias)
                        acc = wadd(acc, bias[oc]);
                    yo[oc] = rq(p, acc, mult, shift, fscale, oc);
                }
            }
    return MENGINE_OK;
}

mengine_status mengine_kq_depthwise_conv_s8_ref(const mengine_kq_params *p, const int32_t *mult,
                                                const int32_t *shift, const float *fscale,
                                                int32_t *work, const mengine_k_dims *in,
                                                const int8_t *x, const mengine_k_dims *f,
                                                const int8_t *w, const int32_t *bias,
                                                const mengine_k_dims *out, int8_t *y)
{
    if (!p || ((!mult || !shift) && !fscale) || !work || !x || !w || !y || p->stride_h < 1 ||
        p->stride_w < 1 || p->multiplier < 1)
        return MENGINE_ERR_ARG;
    const int32_t cin = in->c, kh = f->h, kw = f->w, cout = out->c, dm = p->multiplier;
    const int32_t in_off = -p->in_zp;
    if (dm == 1) { /* channels innermost: int32 sums of one output pixel in the scratch */
        int32_t *acc = work;
        for (int32_t n = 0; n < out->n; n++)
            for (int32_t oy = 0; oy < out->h; oy++)
                for (int32_t ox = 0; ox < out->w; ox++) {
                    const int32_t y0 = oy * p->stride_h - p->pad_h;
                    const int32_t x0 = ox * p->stride_w - p->pad_w;
                    for (int32_t c = 0; c < cout; c++)
                        acc[c] = bias ? bias[c] : 0;
                    for (int32_t ky = 0; ky < kh; ky++) {
                        const int32_t iy = y0 + ky;
                        if (iy < 0 || iy >= in->h)
                            continue;
                        for (int32_t kx = 0; kx < kw; kx++) {
                            const int32_t ix = x0 + kx;
                            if (ix < 0 || ix >= in->w)
                                continue;
                            const int8_t *xi = x + (((size_t)n * in->h + iy) * in->w + ix) * cin;
                            const int8_t *wi = w + ((size_t)ky * kw + kx) * cout;
                            for (int32_t c = 0; c < cout; c++)
                                acc[c] = wadd(acc[c], (int32_t)wi[c] * ((int32_t)xi[c] + in_off));
                        }
                    }
                    int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * cout;
                    for (int32_t c = 0; c < cout; c++)
                        yo[c] = rq(p, acc[c], mult, shift, fscale, c);
                }
        return MENGINE_OK;
    }
    for (int32_t n = 0; n < out->n; n++)
        for (int32_t oy = 0; oy < out->h; oy++)
            for (int32_t ox = 0; ox < out->w; ox++) {
                const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
                int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * cout;
                for (int32_t ic = 0; ic < cin; ic++)
                    for (int32_t m = 0; m < dm; m++) {
                        const int32_t oc = ic * dm + m;
                        int32_t acc = 0;
                        for (int32_t ky = 0; ky < kh; ky++) {
                            const int32_t iy = y0 + ky;
                            if (iy < 0 || iy >= in->h)
                                continue;
                            for (int32_t kx = 0; kx < kw; kx++) {
                                const int32_t ix = x0 + kx;
                                if (ix < 0 || ix >= in->w)
                                    continue;
                                const int32_t xv =
                                    x[(((size_t)n * in->h + iy) * in->w + ix) * cin + ic];
                                const int32_t wv = w[((size_t)ky * kw + kx) * cout + oc];
                                acc = wadd(acc, wv * (xv + in_off));
                            }
                        }
                        if (bias)
                            acc = wadd(acc, bias[oc]);
                        yo[oc] = rq(p, acc, mult, shift, fscale, oc);
                    }
            }
    return MENGINE_OK;
}

mengine_status mengine_kq_conv2d_s8(const mengine_kq_params *p, const int32_t *mult,
                                    const int32_t *shift, const float *fscale, int32_t *work,
                                    const mengine_k_dims *in, const int8_t *x,
                                    const mengine_k_dims *f, const int8_t *w, const int32_t *bias,
                                    const mengine_k_dims *out, int8_t *y)
{
    if (!p || ((!mult || !shift) && !fscale) || !work || !x || !w || !y || p->stride_h < 1 ||
        p->stride_w < 1)
        return MENGINE_ERR_ARG;
    const mengine_status st =
        mengine_kq_conv2d_s8_simd(p, mult, shift, fscale, work, in, x, f, w, bias, out, y);
    return st != MENGINE_ERR_UNSUPPORTED
               ? st
               : mengine_kq_conv2d_s8_ref(p, mult, shift, fscale, work, in, x, f, w, bias, out, y);
}

mengine_status mengine_kq_depthwise_conv_s8(const mengine_kq_params *p, const int32_t *mult,
                                            const int32_t *shift, const float *fscale,
                                            int32_t *work, const mengine_k_dims *in,
                                            const int8_t *x, const mengine_k_dims *f,
                                            const int8_t *w, const int32_t *bias,
                                            const mengine_k_dims *out, int8_t *y)
{
    if (!p || ((!mult || !shift) && !fscale) || !work || !x || !w || !y || p->stride_h < 1 ||
        p->stride_w < 1 || p->multiplier < 1)
        return MENGINE_ERR_ARG;
    const mengine_status st =
        mengine_kq_depthwise_conv_s8_simd(p, mult, shift, fscale, work, in, x, f, w, bias, out, y);
    return st != MENGINE_ERR_UNSUPPORTED
               ? st
               : mengine_kq_depthwise_conv_s8_ref(p, mult, shift, fscale, work, in, x, f, w, bias,
                                                  out, y);
}

mengine_status mengine_kq_fully_connected_s8(const mengine_kq_params *p, float fscale, int32_t rows,
                                             int32_t depth, int32_t units, const int8_t *x,
                                             const int8_t *w, const int32_t *bias, int8_t *y)
{
    if (!p || !x || !w || !y || rows < 1 || depth < 1 || units < 1)
        return MENGINE_ERR_ARG;
    const int32_t in_off = -p->in_zp;
    for (int32_t r = 0; r < rows; r++)
        for (int32_t u = 0; u < units; u++) {
            const int8_t *xr = x + (size_t)r * depth, *wu = w + (size_t)u * depth;
            int32_t acc = 0;
            for (int32_t d = 0; d < depth; d++)
                acc = wadd(acc, (int32_t)wu[d] * ((int32_t)xr[d] + in_off));
            if (bias)
                acc = wadd(acc, bias[u]);
            if (fscale > 0.0f) {
                y[(size_t)r * units + u] =
                    mengine_kq_requant_fp32(acc, fscale, p->out_zp, p->act_min, p->act_max);
                continue;
            }
            acc = wadd(mengine_kq_mbqm_single(acc, p->mult, p->shift), p->out_zp);
            y[(size_t)r * units + u] = clamp8(acc, p->act_min, p->act_max);
        }
    return MENGINE_OK;
}

/* ---- element-wise ---- */

/* Index of output element (n, h, w, c) in an input of dims @p d broadcast to it. */
static size_t bidx(const mengine_k_dims *d, int32_t n, int32_t h, int32_t w, int32_t c)
{
    return (((size_t)(d->n == 1 ? 0 : n) * d->h + (d->h == 1 ? 0 : h)) * d->w +
            (d->w == 1 ? 0 : w)) *
               d->c +
           (d->c == 1 ? 0 : c);
}

static int32_t add_one(const mengine_kq_params *p, int32_t a, int32_t b)
{
    const int32_t sa = (a - p->in_zp) * (1 << 20), sb = (b - p->in2_zp) * (1 << 20);
    const int32_t ra = mengine_kq_mbqm(sa, p->mult1, p->shift1);
    const int32_t rb = mengine_kq_mbqm(sb, p->mult2, p->shift2);
    return wadd(mengine_kq_mbqm(ra + rb, p->mult, p->shift), p->out_zp);
}

static int32_t mul_one(const mengine_kq_params *p, int32_t a, int32_t b)
{
    return wadd(mengine_kq_mbqm((a - p->in_zp) * (b - p->in2_zp), p->mult, p->shift), p->out_zp);
}

static mengine_status binary_s8(const mengine_kq_params *p, const mengine_k_dims *ad,
                                const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                const mengine_k_dims *od, int8_t *y,
                                int32_t (*f)(const mengine_kq_params *, int32_t, int32_t))
{
    if (!p || !a || !b || !y)
        return MENGINE_ERR_ARG;
    const size_t total = (size_t)od->n * od->h * od->w * od->c;
    const int a_full = ad->n == od->n && ad->h == od->h && ad->w == od->w && ad->c == od->c;
    const int b_full = bd->n == od->n && bd->h == od->h && bd->w == od->w && bd->c == od->c;
    if (a_full && b_full) { /* same shapes */
        for (size_t i = 0; i < total; i++)
            y[i] = clamp8(f(p, a[i], b[i]), p->act_min, p->act_max);
        return MENGINE_OK;
    }
    if (a_full && bd->n == 1 && bd->h == 1 && bd->w == 1 && bd->c == od->c && od->n == 1) {
        for (size_t i = 0; i < total;
             i += (size_t)od->c) /* b along the channels (squeeze-excite) */
            for (int32_t c = 0; c < od->c; c++)
                y[i + c] = clamp8(f(p, a[i + c], b[c]), p->act_min, p->act_max);
        return MENGINE_OK;
    }
    size_t i = 0;
    for (int32_t n = 0; n < od->n; n++)
        for (int32_t h = 0; h < od->h; h++)
            for (int32_t w = 0; w < od->w; w++)
                for (int32_t c = 0; c < od->c; c++, i++) {
                    const int32_t v = f(p, a[bidx(ad, n, h, w, c)], b[bidx(bd, n, h, w, c)]);
                    y[i] = clamp8(v, p->act_min, p->act_max);
                }
    return MENGINE_OK;
}

mengine_status mengine_kq_add_s8_ref(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y)
{
    return binary_s8(p, ad, a, bd, b, od, y, add_one);
}

mengine_status mengine_kq_mul_s8_ref(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y)
{
    return binary_s8(p, ad, a, bd, b, od, y, mul_one);
}

mengine_status mengine_kq_add_s8(const mengine_kq_params *p, const mengine_k_dims *ad,
                                 const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                 const mengine_k_dims *od, int8_t *y)
{
    if (!p || !a || !b || !y)
        return MENGINE_ERR_ARG;
    const mengine_status st = mengine_kq_binary_s8_simd(p, 1, ad, a, bd, b, od, y);
    return st != MENGINE_ERR_UNSUPPORTED ? st : binary_s8(p, ad, a, bd, b, od, y, add_one);
}

mengine_status mengine_kq_mul_s8(const mengine_kq_params *p, const mengine_k_dims *ad,
                                 const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                 const mengine_k_dims *od, int8_t *y)
{
    if (!p || !a || !b || !y)
        return MENGINE_ERR_ARG;
    const mengine_status st = mengine_kq_binary_s8_simd(p, 0, ad, a, bd, b, od, y);
    return st != MENGINE_ERR_UNSUPPORTED ? st : binary_s8(p, ad, a, bd, b, od, y, mul_one);
}

/* XNNPACK's qs8 ADD: bias + a * a_mult + b * b_mult, an arithmetic shift right (the
 * multipliers and the bias in the params' mult1, mult2, mult and shift) */
static int32_t add_xnn_one(const mengine_kq_params *p, int32_t a, int32_t b)
{
    const int32_t acc = wadd(wadd(p->mult, wmul(a, p->mult1)), wmul(b, p->mult2));
    const int32_t q = acc < 0 ? -(int32_t)((~(uint32_t)acc) >> p->shift) - 1 : acc >> p->shift;
    return wadd(q, p->out_zp);
}

static int32_t round_even_small(float v) /* |v| < 2^22 */
{
    return (int32_t)((v + 12582912.0f) - 12582912.0f);
}

mengine_status mengine_kq_add_s8_xnn(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y)
{
    if (!p || !a || !b || !y)
        return MENGINE_ERR_ARG;
    const float as = p->in_scale / p->out_scale, bs = p->beta / p->out_scale;
    const float mx = as > bs ? as : bs;
    /* XNNPACK's range (its delegate leaves other ADDs to TFLite's kernel) */
    if (!(as >= 0x1.0p-10f && bs >= 0x1.0p-10f && mx < 0x1.0p+8f))
        return mengine_kq_add_s8(p, ad, a, bd, b, od, y);
    uint32_t bits;
    memcpy(&bits, &mx, sizeof bits);
    const int32_t shift = 20 - ((int32_t)(bits >> 23) - 127); /* in [12, 30] */
    const float two_shift = (float)((int32_t)1 << shift);
    mengine_kq_params q = *p;
    q.mult1 = round_even_small(as * two_shift); /* exact: a power of two */
    q.mult2 = round_even_small(bs * two_shift);
    q.mult = ((int32_t)1 << (shift - 1)) - q.mult1 * p->in_zp - q.mult2 * p->in2_zp;
    q.shift = shift;
    return binary_s8(&q, ad, a, bd, b, od, y, add_xnn_one);
}

/* XNNPACK's qs8 MUL: the product of the offsets times a_scale * b_scale / out_scale in float */
static int32_t mul_xnn_one(const mengine_kq_params *p, int32_t a, int32_t b)
{
    return mengine_kq_requant_fp32((a - p->in_zp) * (b - p->in2_zp), p->in_scale, p->out_zp,
                                   p->act_min, p->act_max);
}

mengine_status mengine_kq_mul_s8_xnn(const mengine_kq_params *p, const mengine_k_dims *ad,
                                     const int8_t *a, const mengine_k_dims *bd, const int8_t *b,
                                     const mengine_k_dims *od, int8_t *y)
{
    if (!p || !a || !b || !y)
        return MENGINE_ERR_ARG;
    mengine_kq_params q = *p;
    q.in_scale = p->in_scale * p->beta / p->out_scale;
    return binary_s8(&q, ad, a, bd, b, od, y, mul_xnn_one);
}

/* ---- data movement, reductions, activations ---- */

mengine_status mengine_kq_pad_s8(const mengine_k_dims *in, const int8_t *x, const int32_t *before,
                                 const mengine_k_dims *out, int8_t *y, int8_t value)
{
    if (!in || !x || !before || !out || !y)
        return MENGINE_ERR_ARG;
    memset(y, (unsigned char)value, (size_t)out->n * out->h * out->w * out->c);
    for (int32_t n = 0; n < in->n; n++)
        for (int32_t h = 0; h < in->h; h++)
            for (int32_t w = 0; w < in->w; w++) {
                const int8_t *src = x + (((size_t)n * in->h + h) * in->w + w) * in->c;
                int8_t *dst =
                    y +
                    (((size_t)(n + before[0]) * out->h + h + before[1]) * out->w + w + before[2]) *
                        out->c +
                    before[3];
                memcpy(dst, src, (size_t)in->c);
            }
    return MENGINE_OK;
}

void mengine_kq_mean_count_multiplier(const mengine_kq_params *p, int32_t count, int32_t *mult,
                                      int32_t *shift)
{
    /* TFLite's QuantizedMeanOrSum: 1 / count folded into the multiplier, shifted left by
     * floor(log2(count)) (at most 32 and 31 + shift) before the division */
    int32_t sh = 0;
    while (sh < 62 && ((int64_t)1 << (sh + 1)) <= count)
        sh++;
    sh = sh < 32 ? sh : 32;
    sh = sh < 31 + p->shift ? sh : 31 + p->shift;
    *mult = (int32_t)(((int64_t)p->mult << sh) / count);
    *shift = p->shift - sh;
}

mengine_status mengine_kq_mean_hw_s8_ref(const mengine_kq_params *p, const mengine_k_dims *in,
                                         const int8_t *x, int8_t *y)
{
    if (!p || !in || !x || !y)
        return MENGINE_ERR_ARG;
    const int32_t count = in->h * in->w;
    int32_t mult, shift;
    mengine_kq_mean_count_multiplier(p, count, &mult, &shift);
    for (int32_t n = 0; n < in->n; n++)
        for (int32_t c = 0; c < in->c; c++) {
            int32_t acc = 0;
            for (int32_t i = 0; i < count; i++)
                acc = wadd(acc, x[((size_t)n * count + i) * in->c + c]);
            acc = wadd(acc, wmul(-p->in_zp, count));
            acc = wadd(mengine_kq_mbqm(acc, mult, shift), p->out_zp);
            y[(size_t)n * in->c + c] = clamp8(acc, -128, 127);
        }
    return MENGINE_OK;
}

mengine_status mengine_kq_mean_hw_s8(const mengine_kq_params *p, const mengine_k_dims *in,
                                     const int8_t *x, int8_t *y)
{
    if (!p || !in || !x || !y || in->h * in->w < 1)
        return MENGINE_ERR_ARG;
    const mengine_status st = mengine_kq_mean_hw_s8_simd(p, in, x, y);
    return st != MENGINE_ERR_UNSUPPORTED ? st : mengine_kq_mean_hw_s8_ref(p, in, x, y);
}

mengine_status mengine_kq_mean_hw_s8_fp32(const mengine_kq_params *p, const mengine_k_dims *in,
                                          const int8_t *x, int8_t *y)
{
    if (!p || !in || !x || !y)
        return MENGINE_ERR_ARG;
    const int32_t count = in->h * in->w;
    const float scale = p->in_scale / (p->out_scale * (float)count);
    for (int32_t n = 0; n < in->n; n++)
        for (int32_t c = 0; c < in->c; c++) {
            int32_t acc = wmul(-p->in_zp, count);
            for (int32_t i = 0; i < count; i++)
                acc = wadd(acc, x[((size_t)n * count + i) * in->c + c]);
            y[(size_t)n * in->c + c] = mengine_kq_requant_fp32(acc, scale, p->out_zp, -128, 127);
        }
    return MENGINE_OK;
}

/* int16 fixed point of the reference HARD_SWISH */
static int16_t srdhm16(int16_t a, int16_t b)
{
    if (a == b && a == INT16_MIN)
        return INT16_MAX;
    const int32_t ab = (int32_t)a * (int32_t)b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15));
}

static int16_t sdhm16(int16_t a, int16_t b) /* rounding toward zero (SQDMULH) */
{
    if (a == b && a == INT16_MIN)
        return INT16_MAX;
    return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

static int16_t sat_lshift16(int16_t v, int32_t amount)
{
    const int64_t r = (int64_t)v * ((int64_t)1 << amount);
    return (int16_t)(r < -32768 ? -32768 : r > 32767 ? 32767 : r);
}

static int16_t q15_of(int32_t q31) /* TFLite's DownScaleInt32ToInt16Multiplier */
{
    if (q31 >= INT32_MAX - (1 << 15))
        return INT16_MAX;
    return (int16_t)((q31 + (1 << 15)) >> 16);
}

int mengine_kq_hard_swish_params(float in_scale, float out_scale, mengine_kq_params *p)
{
    const float hires = (1.0f / 128.0f) * in_scale;
    const float reluish_scale = 3.0f / 32768.0f;
    const float out_mult = hires / out_scale, relu_mult = hires / reluish_scale;
    int32_t q, e;
    mengine_kq_quantize_multiplier((double)out_mult, &q, &e);
    p->hs_out_mult = q15_of(q);
    p->hs_out_exp = e;
    mengine_kq_quantize_multiplier((double)relu_mult, &q, &e);
    p->hs_relu_mult = q15_of(q);
    p->hs_relu_exp = e;
    return p->hs_out_exp <= 0;
}

static int8_t hard_swish_one(const mengine_kq_params *p, int8_t xv)
{
    {
        const int16_t v = (int16_t)(xv - p->in_zp);
        const int16_t hires = (int16_t)(v * (1 << 7));
        const int16_t pre_out = srdhm16(hires, p->hs_out_mult);
        int16_t r = hires;
        if (p->hs_relu_exp > 0)
            r = sat_lshift16(r, p->hs_relu_exp - 1);
        r = srdhm16(r, p->hs_relu_mult);
        if (p->hs_relu_exp > 0)
            r = sat_lshift16(r, 1);
        if (p->hs_relu_exp < 0)
            r = (int16_t)mengine_kq_rdpot(r, -p->hs_relu_exp);
        r = (int16_t)((r + (1 << 15)) >> 1);
        const int16_t pre = sdhm16(r, pre_out);
        const int32_t o = mengine_kq_rdpot(pre, -p->hs_out_exp) + p->out_zp;
        return clamp8(o, -128, 127);
    }
}

mengine_status mengine_kq_hard_swish_s8_ref(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                            size_t n)
{
    if (!p || !x || !y)
        return MENGINE_ERR_ARG;
    if (n < 512) {
        for (size_t i = 0; i < n; i++)
            y[i] = hard_swish_one(p, x[i]);
        return MENGINE_OK;
    }
    int8_t lut[256]; /* a function of the input byte alone: a table of its 256 values */
    for (int v = -128; v < 128; v++)
        lut[v + 128] = hard_swish_one(p, (int8_t)v);
    for (size_t i = 0; i < n; i++)
        y[i] = lut[x[i] + 128];
    return MENGINE_OK;
}

mengine_status mengine_kq_hard_swish_s8(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                        size_t n)
{
    if (!p || !x || !y)
        return MENGINE_ERR_ARG;
    const mengine_status st = mengine_kq_hard_swish_s8_simd(p, x, y, n);
    return st != MENGINE_ERR_UNSUPPORTED ? st : mengine_kq_hard_swish_s8_ref(p, x, y, n);
}

mengine_status mengine_kq_softmax_s8(const mengine_kq_params *p, size_t rows, size_t cols,
                                     const int8_t *x, int8_t *y)
{
    if (!p || !x || !y || cols == 0)
        return MENGINE_ERR_ARG;
    const float k = p->beta * p->in_scale;
    for (size_t r = 0; r < rows; r++) {
        const int8_t *xr = x + r * cols;
        int8_t *yr = y + r * cols;
        int32_t mx = xr[0];
        for (size_t j = 1; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        float sum = 0.0f;
        for (size_t j = 0; j < cols; j++)
            sum += expf(k * (float)(xr[j] - mx));
        for (size_t j = 0; j < cols; j++) {
            const float v = expf(k * (float)(xr[j] - mx)) / sum * 256.0f + 0.5f;
            const int32_t q = v >= 256.0f ? 256 : v >= 0.0f ? (int32_t)v : 0; /* NaN: 0 */
            yr[j] = clamp8(q - 128, -128, 127);
        }
    }
    return MENGINE_OK;
}
