/* int8 kernels of the stereo operators (see kernels_q8_stereo_impl.h): plain C loops
 * with TensorFlow Lite's reference arithmetic. */
#include <string.h>

#include "engine/kernels_q8_stereo_impl.h"
#include "engine/kernels_util_impl.h"

/* int32 sums wrap (as the other int8 kernels': no undefined behaviour on hostile files) */
static int32_t wadd(int32_t a, int32_t b) { return (int32_t)((uint32_t)a + (uint32_t)b); }
static int32_t wmul(int32_t a, int32_t b) { return (int32_t)((uint32_t)a * (uint32_t)b); }

static int8_t clamp8(int32_t v, int32_t lo, int32_t hi)
{
    return (int8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* Taps of a transpose convolution along one axis for the outputs o = ph + i * s (i >= 0):
 * kernel positions k0, k0 + s, ... < K (n of them), the m-th read at input i + base - m. */
static void tconv_taps(int32_t ph, int32_t s, int32_t K, int32_t pad, int32_t *k0, int32_t *n,
                       int32_t *base)
{
    *k0 = (ph + pad) % s;
    *n = *k0 < K ? (K - *k0 + s - 1) / s : 0;
    *base = (ph + pad - *k0) / s;
}

/* The sub-pixel form's parts of the scratch after the multipliers and shifts, in bytes:
 * a phase's filter (Cout, ceil(KH / SH), ceil(KW / SW), Cin), one output row of a phase
 * (ceil(OW / SW), Cout) and the work of mengine_kq_conv2d_s8() on that filter. */
typedef struct tconv_parts {
    size_t filter, row, conv;
} tconv_parts;

static tconv_parts tconv_sizes(const mengine_k_dims *f, const mengine_k_dims *out, int32_t sh,
                               int32_t sw)
{
    const mengine_k_dims sub = {f->n, (f->h + sh - 1) / sh, (f->w + sw - 1) / sw, f->c};
    tconv_parts t;
    t.filter = ((size_t)sub.n * (size_t)sub.h * (size_t)sub.w * (size_t)sub.c + 3) / 4 * 4;
    t.row = ((size_t)((out->w + sw - 1) / sw) * (size_t)f->n + 3) / 4 * 4;
    t.conv = mengine_kq_conv_get_buffer_size(&sub, 0);
    return t;
}

size_t mengine_kq_transpose_conv_get_buffer_size(const mengine_k_dims *filter,
                                                 const mengine_k_dims *out, int32_t stride_h,
                                                 int32_t stride_w)
{
    if (!filter || !out || filter->n < 1 || filter->h < 1 || filter->w < 1 || filter->c < 1 ||
        out->w < 1 || stride_h < 1 || stride_w < 1)
        return 0;
    const size_t co = (size_t)filter->n, ci = ((size_t)filter->c + 7) / 8 * 8;
    const size_t ref = co * sizeof(int32_t) + ci * sizeof(int16_t);
    const tconv_parts t = tconv_sizes(filter, out, stride_h, stride_w);
    const size_t sub = t.filter + t.row + t.conv;
    return 2 * co * sizeof(int32_t) + (ref > sub ? ref : sub);
}

/* Output row @p oy of image @p n where no tap reaches it: the bias alone, requantized. */
static void bias_only(const mengine_kq_params *p, const int32_t *mult, const int32_t *shift,
                      const int32_t *bias, int32_t CO, int8_t *yo)
{
    for (int32_t co = 0; co < CO; co++) {
        const int32_t r =
            wadd(mengine_kq_mbqm(bias ? bias[co] : 0, mult[co], shift[co]), p->out_zp);
        yo[co] = clamp8(r, p->act_min, p->act_max);
    }
}

mengine_status mengine_kq_transpose_conv_s8(const mengine_kq_params *p, const int32_t *mult,
                                            const int32_t *shift, int32_t *work,
                                            const mengine_k_dims *in, const int8_t *x,
                                            const mengine_k_dims *f, const int8_t *w,
                                            const int32_t *bias, const mengine_k_dims *out,
                                            int8_t *y)
{
    if (!p || !mult || !shift || !work || !in || !x || !f || !w || !out || !y ||
        !mengine_k_dims_ok(in) || !mengine_k_dims_ok(f) || !mengine_k_dims_ok(out) ||
        f->c != in->c || f->n != out->c || out->n != in->n || p->stride_h < 1 || p->stride_w < 1 ||
        p->pad_h < 0 || p->pad_w < 0)
        return MENGINE_ERR_ARG;
    const int32_t SH = p->stride_h, SW = p->stride_w, KH = f->h, KW = f->w, CI = in->c;
    const int32_t CO = out->c, OH = out->h, OW = out->w;
    /* the phases' padding (taps - 1 - base) must not be negative: else the pixel loop */
    int negative = 0;
    for (int32_t ph = 0; ph < SH || ph < SW; ph++) {
        int32_t k0, nh, bh0, nw, bw0;
        tconv_taps(ph % SH, SH, KH, p->pad_h, &k0, &nh, &bh0);
        tconv_taps(ph % SW, SW, KW, p->pad_w, &k0, &nw, &bw0);
        negative |= (nh > 0 && nh - 1 - bh0 < 0) || (nw > 0 && nw - 1 - bw0 < 0);
    }
    if (negative)
        return mengine_kq_transpose_conv_s8_ref(p, mult, shift, work, in, x, f, w, bias, out, y);
    const tconv_parts t = tconv_sizes(f, out, SH, SW);
    int8_t *sf = (int8_t *)(void *)work, *row = sf + t.filter;
    int32_t *cwork = (int32_t *)(void *)(row + t.row);
    const size_t wtap = (size_t)KW * CI, wco = (size_t)KH * wtap, xrow = (size_t)in->w * CI;
    mengine_kq_params q = *p;
    q.stride_h = q.stride_w = 1;
    for (int32_t py = 0; py < SH && py < OH; py++)
        for (int32_t px = 0; px < SW && px < OW; px++) {
            int32_t kh0, nth, bh, kw0, ntw, bw;
            tconv_taps(py, SH, KH, p->pad_h, &kh0, &nth, &bh);
            tconv_taps(px, SW, KW, p->pad_w, &kw0, &ntw, &bw);
            const int32_t OHp = (OH - py + SH - 1) / SH, OWp = (OW - px + SW - 1) / SW;
            /* the phase's taps as a stride-1 filter, rows and columns in increasing input order */
            for (int32_t co = 0; co < CO && nth > 0 && ntw > 0; co++)
                for (int32_t r = 0; r < nth; r++)
                    for (int32_t c = 0; c < ntw; c++)
                        memcpy(sf + (((size_t)co * nth + r) * ntw + c) * CI,
                               w + (size_t)co * wco + (size_t)(kh0 + (nth - 1 - r) * SH) * wtap +
                                   (size_t)(kw0 + (ntw - 1 - c) * SW) * CI,
                               (size_t)CI);
            const mengine_k_dims sd = {CO, nth, ntw, CI}, rd = {1, 1, OWp, CO};
            q.pad_w = ntw - 1 - bw;
            for (int32_t n = 0; n < out->n; n++)
                for (int32_t i = 0; i < OHp; i++) {
                    int8_t *yo = y + (((size_t)n * OH + py + (size_t)i * SH) * OW + px) * CO;
                    /* input rows r0 .. r0 + nth - 1, those inside the input as the view */
                    const int32_t r0 = i - (nth - 1 - bh);
                    const int32_t s0 = r0 > 0 ? r0 : 0;
                    const int32_t s1 = r0 + nth < in->h ? r0 + nth : in->h;
                    if (nth == 0 || ntw == 0 || s1 <= s0) {
                        for (int32_t j = 0; j < OWp; j++)
                            bias_only(p, mult, shift, bias, CO, yo + (size_t)j * SW * CO);
                        continue;
                    }
                    const mengine_k_dims vd = {1, s1 - s0, in->w, CI};
                    q.pad_h = s0 - r0;
                    const mengine_status st = mengine_kq_conv2d_s8(
                        &q, mult, shift, NULL, cwork, &vd,
                        x + ((size_t)n * in->h + (size_t)s0) * xrow, &sd, sf, bias, &rd, row);
                    if (st != MENGINE_OK)
                        return st;
                    for (int32_t j = 0; j < OWp; j++)
                        memcpy(yo + (size_t)j * SW * CO, row + (size_t)j * CO, (size_t)CO);
                }
        }
    return MENGINE_OK;
}

mengine_status mengine_kq_transpose_conv_s8_ref(const mengine_kq_params *p, const int32_t *mult,
                                                const int32_t *shift, int32_t *work,
                                                const mengine_k_dims *in, const int8_t *x,
                                                const mengine_k_dims *f, const int8_t *w,
                                                const int32_t *bias, const mengine_k_dims *out,
                                                int8_t *y)
{
    if (!p || !mult || !shift || !work || !in || !x || !f || !w || !out || !y ||
        !mengine_k_dims_ok(in) || !mengine_k_dims_ok(f) || !mengine_k_dims_ok(out) ||
        f->c != in->c || f->n != out->c || out->n != in->n || p->stride_h < 1 || p->stride_w < 1 ||
        p->pad_h < 0 || p->pad_w < 0)
        return MENGINE_ERR_ARG;
    const int32_t sh = p->stride_h, sw = p->stride_w, KH = f->h, KW = f->w, CI = in->c;
    const int32_t CO = out->c;
    const size_t wtap = (size_t)KW * CI, wco = (size_t)KH * wtap;
    uint32_t *acc = (uint32_t *)work;             /* (CO) sums, wrapping as wadd() does */
    int16_t *xs = (int16_t *)(void *)(work + CO); /* (CI) x - in_zp of one input pixel */
    for (int32_t n = 0; n < out->n; n++)
        for (int32_t oy = 0; oy < out->h; oy++) {
            /* the taps reaching row oy: ky = (oy + pad) mod stride, then every stride-th */
            const int32_t ty0 = oy + p->pad_h, ky0 = ty0 % sh;
            for (int32_t ox = 0; ox < out->w; ox++) {
                const int32_t tx0 = ox + p->pad_w, kx0 = tx0 % sw;
                for (int32_t co = 0; co < CO; co++)
                    acc[co] = bias ? (uint32_t)bias[co] : 0u;
                for (int32_t ky = ky0; ky < KH && ky <= ty0; ky += sh) {
                    const int32_t iy = (ty0 - ky) / sh;
                    if (iy >= in->h)
                        continue;
                    const int8_t *xr = x + ((size_t)n * in->h + iy) * in->w * CI;
                    for (int32_t kx = kx0; kx < KW && kx <= tx0; kx += sw) {
                        const int32_t ix = (tx0 - kx) / sw;
                        if (ix >= in->w)
                            continue;
                        const int8_t *xi = xr + (size_t)ix * CI;
                        for (int32_t ci = 0; ci < CI; ci++)
                            xs[ci] = (int16_t)(xi[ci] - p->in_zp);
                        const int8_t *wk = w + (size_t)ky * wtap + (size_t)kx * CI;
                        for (int32_t co = 0; co < CO; co++) {
                            const int8_t *wc = wk + (size_t)co * wco;
                            uint32_t s = 0;
                            for (int32_t ci = 0; ci < CI; ci++)
                                s += (uint32_t)((int32_t)xs[ci] * wc[ci]);
                            acc[co] += s;
                        }
                    }
                }
                int8_t *yo = y + (((size_t)n * out->h + oy) * out->w + ox) * CO;
                for (int32_t co = 0; co < CO; co++) {
                    const int32_t r =
                        wadd(mengine_kq_mbqm((int32_t)acc[co], mult[co], shift[co]), p->out_zp);
                    yo[co] = clamp8(r, p->act_min, p->act_max);
                }
            }
        }
    return MENGINE_OK;
}

mengine_status mengine_kq_leaky_relu_s8(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                        size_t n)
{
    if (!p || (n && (!x || !y)))
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        const int32_t v = x[i] - p->in_zp;
        const int32_t r = v >= 0 ? mengine_kq_mbqm(v, p->mult, p->shift)
                                 : mengine_kq_mbqm(v, p->mult1, p->shift1);
        y[i] = clamp8(wadd(r, p->out_zp), -128, 127);
    }
    return MENGINE_OK;
}

/* TFLite's ComputeInterpolationValuesInteger. */
static void interp(int32_t v, int32_t scale_10, int half, int32_t size, int32_t *scaled,
                   int32_t *lo, int32_t *hi)
{
    *scaled = half ? v * scale_10 + scale_10 / 2 - (1 << 9) : v * scale_10;
    const int32_t a = *scaled / (1 << 10), b = (*scaled + (1 << 10) - 1) / (1 << 10);
    *lo = a > 0 ? a : 0;
    *hi = b < size - 1 ? b : size - 1;
}

mengine_status mengine_kq_resize_bilinear_s8(const mengine_k_dims *in, const int8_t *x,
                                             int half_pixel, const mengine_k_dims *out, int8_t *y)
{
    if (!in || !x || !out || !y || !mengine_k_dims_ok(in) || !mengine_k_dims_ok(out) ||
        out->n != in->n || out->c != in->c || in->h > (1 << 20) || in->w > (1 << 20) ||
        out->h > (1 << 20) || out->w > (1 << 20))
        return MENGINE_ERR_ARG;
    const int32_t hs = (int32_t)((((int64_t)in->h << 10) + out->h / 2) / out->h);
    const int32_t ws = (int32_t)((((int64_t)in->w << 10) + out->w / 2) / out->w);
    const size_t C = (size_t)in->c;
    for (int32_t n = 0; n < out->n; n++)
        for (int32_t oy = 0; oy < out->h; oy++) {
            int32_t iy, y0, y1;
            interp(oy, hs, half_pixel, in->h, &iy, &y0, &y1);
            const int64_t dy = iy - (y0 << 10);
            for (int32_t ox = 0; ox < out->w; ox++) {
                int32_t ix, x0, x1;
                interp(ox, ws, half_pixel, in->w, &ix, &x0, &x1);
                const int64_t dx = ix - (x0 << 10);
                const int8_t *r0 = x + ((size_t)n * in->h + (size_t)y0) * in->w * C;
                const int8_t *r1 = x + ((size_t)n * in->h + (size_t)y1) * in->w * C;
                int8_t *o = y + (((size_t)n * out->h + oy) * out->w + ox) * C;
                for (size_t c = 0; c < C; c++) {
                    const int64_t v = (int64_t)r0[(size_t)x0 * C + c] * (1024 - dy) * (1024 - dx) +
                                      (int64_t)r1[(size_t)x0 * C + c] * dy * (1024 - dx) +
                                      (int64_t)r0[(size_t)x1 * C + c] * (1024 - dy) * dx +
                                      (int64_t)r1[(size_t)x1 * C + c] * dy * dx;
                    const int64_t round = v > 0 ? (1 << 19) : -(1 << 19);
                    const int64_t q = (v + round) / (1 << 20);
                    o[c] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
                }
            }
        }
    return MENGINE_OK;
}

void mengine_kq_mean_multiplier(int32_t mult, int32_t shift, int32_t count, int32_t *out_mult,
                                int32_t *out_shift)
{
    int32_t sh = 0;
    if (count < 1)
        count = 1;
    while (sh < 62 && ((int64_t)1 << (sh + 1)) <= count)
        sh++;
    sh = sh < 32 ? sh : 32;
    sh = sh < 31 + shift ? sh : 31 + shift;
    *out_mult = (int32_t)(((int64_t)mult << sh) / count);
    *out_shift = shift - sh;
}

mengine_status mengine_kq_mean_c_s8(const mengine_kq_params *p, size_t rows, int32_t cols,
                                    const int8_t *x, int8_t *y)
{
    if (!p || cols < 1 || (rows && (!x || !y)))
        return MENGINE_ERR_ARG;
    int32_t mult, shift;
    mengine_kq_mean_multiplier(p->mult, p->shift, cols, &mult, &shift);
    for (size_t r = 0; r < rows; r++) {
        const int8_t *row = x + r * (size_t)cols;
        int32_t acc = wmul(-p->in_zp, cols);
        for (int32_t c = 0; c < cols; c++)
            acc = wadd(acc, row[c]);
        y[r] = clamp8(wadd(mengine_kq_mbqm(acc, mult, shift), p->out_zp), -128, 127);
    }
    return MENGINE_OK;
}

mengine_status mengine_kq_requantize_s8(const mengine_kq_params *p, const int8_t *x, int8_t *y,
                                        size_t n)
{
    if (!p || (n && (!x || !y)))
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        y[i] =
            clamp8(wadd(mengine_kq_mbqm(x[i] - p->in_zp, p->mult, p->shift), p->out_zp), -128, 127);
    return MENGINE_OK;
}

mengine_status mengine_kq_slice_s8(const mengine_k_dims *id, const int8_t *in, const int32_t *begin,
                                   const int32_t *stride, const mengine_k_dims *od, int8_t *out)
{
    return mengine_k_slice_bytes(id, in, begin, stride, od, out, 1);
}

mengine_status mengine_kq_correlation_s8(const mengine_kq_corr_params *p, const mengine_k_dims *ld,
                                         const int8_t *l, const mengine_k_dims *rd, const int8_t *r,
                                         const mengine_k_dims *od, int8_t *out)
{
    if (!p || !ld || !l || !rd || !r || !od || !out || !mengine_k_dims_ok(ld) ||
        !mengine_k_dims_ok(rd) || !mengine_k_dims_ok(od) || rd->n != ld->n || rd->h != ld->h ||
        rd->c != ld->c || od->n != ld->n || od->h != ld->h || od->w != ld->w)
        return MENGINE_ERR_ARG;
    const int32_t C = ld->c, D = od->c, W = ld->w, WR = rd->w;
    /* outside the right features every channel reads the PAD's zero point: the product is 0 */
    const int32_t m0 = clamp8(wadd(mengine_kq_mbqm(0, p->mul_mult, p->mul_shift), p->mul_zp),
                              p->mul_min, p->mul_max);
    const int32_t pad_sum = wmul(m0 - p->mul_zp, C);
    for (int32_t n = 0; n < ld->n; n++)
        for (int32_t yy = 0; yy < ld->h; yy++) {
            const size_t row = (size_t)n * ld->h + (size_t)yy;
            const int8_t *lrow = l + row * (size_t)W * C, *rrow = r + row * (size_t)WR * C;
            int8_t *orow = out + row * (size_t)W * D;
            for (int32_t x = 0; x < W; x++) {
                const int8_t *px = lrow + (size_t)x * C;
                for (int32_t k = 0; k < D; k++) {
                    const int64_t xr = (int64_t)x + p->offset + (int64_t)k * p->step;
                    int32_t acc = pad_sum;
                    if (xr >= 0 && xr < WR) {
                        const int8_t *pr = rrow + (size_t)xr * C;
                        acc = 0;
                        for (int32_t c = 0; c < C; c++) {
                            const int32_t prod = (px[c] - p->l_zp) * (pr[c] - p->r_zp);
                            const int32_t m = clamp8(
                                wadd(mengine_kq_mbqm(prod, p->mul_mult, p->mul_shift), p->mul_zp),
                                p->mul_min, p->mul_max);
                            acc = wadd(acc, m - p->mul_zp);
                        }
                    }
                    orow[(size_t)x * D + k] =
                        clamp8(wadd(mengine_kq_mbqm(acc, p->mean_mult, p->mean_shift), p->out_zp),
                               -128, 127);
                }
            }
        }
    return MENGINE_OK;
}
