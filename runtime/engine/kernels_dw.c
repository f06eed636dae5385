/* Depthwise convolution: a general kernel (any size, stride, multiplier) and
 * one specialised for 3x3 / 5x5 / 7x7 kernels with stride 1 or 2 and
 * multiplier 1. In the specialised one, the interior of each output row (the
 * pixels whose taps all lie inside the input) runs one vector of channels at a
 * time with its K*K weight vectors loaded once for the run (held in registers
 * where there are enough), two pixels per step, the kernel size a compile-time
 * constant; border pixels clip their taps at run time. */
#include "engine/kernels_simd_impl.h"

/* One output pixel of the general kernel, taps clipped to the image. */
static void dw_pixel(const mengine_k_dw_params *p, const mengine_k_dims *id,
                     const float *restrict in_n, const mengine_k_dims *fd,
                     const float *restrict filter, const float *restrict bias, int oh, int ow,
                     float *restrict y)
{
    const int W = id->w, C = id->c, M = p->multiplier, CO = fd->c, KW = fd->w;
    const int ih0 = oh * p->stride_h - p->pad_h, iw0 = ow * p->stride_w - p->pad_w;
    const int kh_lo = mengine_k_max(0, -ih0), kh_hi = mengine_k_min(fd->h, id->h - ih0);
    const int kw_lo = mengine_k_max(0, -iw0), kw_hi = mengine_k_min(KW, W - iw0);
    for (int c = 0; c < CO; c++)
        y[c] = bias ? bias[c] : 0.0f;
    for (int kh = kh_lo; kh < kh_hi; kh++)
        for (int kw = kw_lo; kw < kw_hi; kw++) {
            const float *restrict x = in_n + ((size_t)(ih0 + kh) * W + iw0 + kw) * C;
            const float *restrict w = filter + ((size_t)kh * KW + kw) * CO;
            if (M == 1) {
                for (int c = 0; c < CO; c++)
                    y[c] += x[c] * w[c];
            } else {
                for (int ic = 0; ic < C; ic++)
                    for (int m = 0; m < M; m++)
                        y[ic * M + m] += x[ic] * w[ic * M + m];
            }
        }
    mengine_k_act_f32(y, (size_t)CO, p->act);
}

static int dw_args_ok(const mengine_k_dw_params *p, const mengine_k_dims *id, const float *in,
                      const mengine_k_dims *fd, const float *filter, const mengine_k_dims *od,
                      const float *out)
{
    return p && in && filter && out && mengine_k_dims_ok(id) && mengine_k_dims_ok(fd) &&
           mengine_k_dims_ok(od) && p->stride_h > 0 && p->stride_w > 0 && p->pad_h >= 0 &&
           p->pad_w >= 0 && p->multiplier > 0 && mengine_k_act_ok(p->act) && fd->n == 1 &&
           fd->c == id->c * p->multiplier && od->c == fd->c && od->n == id->n;
}

mengine_status mengine_k_depthwise_conv_f32(const mengine_k_dw_params *p, const mengine_k_dims *id,
                                            const float *in, const mengine_k_dims *fd,
                                            const float *filter, const float *bias,
                                            const mengine_k_dims *od, float *out)
{
    if (!dw_args_ok(p, id, in, fd, filter, od, out))
        return MENGINE_ERR_ARG;
    for (int n = 0; n < id->n; n++) {
        const float *in_n = in + (size_t)n * id->h * id->w * id->c;
        for (int oh = 0; oh < od->h; oh++)
            for (int ow = 0; ow < od->w; ow++)
                dw_pixel(p, id, in_n, fd, filter, bias, oh, ow,
                         out + (((size_t)n * od->h + oh) * od->w + ow) * od->c);
    }
    return MENGINE_OK;
}

int mengine_k_depthwise_conv_fast_ok(const mengine_k_dw_params *p, const mengine_k_dims *fd)
{
    return p && fd && p->multiplier == 1 && fd->h == fd->w &&
           (fd->h == 3 || fd->h == 5 || fd->h == 7) && p->stride_h == p->stride_w &&
           (p->stride_h == 1 || p->stride_h == 2);
}

/* NB vectors of channels [c, c + NB * MK_VL) of one output pixel, over the taps
 * inside the input (rows x cols from x, kernel row stride K * C in w), bias
 * first and the clamp before the store. K is a constant after inlining. */
static MK_ALWAYS_INLINE void dw_vectors(const int NB, const int K, int rows, int cols, int W, int C,
                                        const float *restrict x, const float *restrict w,
                                        const float *restrict bias, mengine_k_vf lo,
                                        mengine_k_vf hi, float *restrict y)
{
    mengine_k_vf acc[4];
    for (int v = 0; v < NB; v++)
        acc[v] = bias ? mengine_k_vload(bias + v * MK_VL) : mengine_k_vset1(0.0f);
    for (int kh = 0; kh < rows; kh++) {
        const float *restrict xr = x + (size_t)kh * W * C;
        const float *restrict wr = w + (size_t)kh * K * C;
        for (int kw = 0; kw < cols; kw++)
            for (int v = 0; v < NB; v++)
                acc[v] = mengine_k_vfma(acc[v], mengine_k_vload(xr + (size_t)kw * C + v * MK_VL),
                                        mengine_k_vload(wr + (size_t)kw * C + v * MK_VL));
    }
    for (int v = 0; v < NB; v++)
        mengine_k_vstore(y + v * MK_VL, mengine_k_vclamp(acc[v], lo, hi));
}

/* One output pixel, every channel, taps clipped to the input (K at run time: the
 * border pixels): blocks of 4 vectors, then 1 vector, then single lanes. */
static MK_NOCLONE void dw_border(int K, int rows, int cols, int W, int C, const float *x,
                                 const float *w, const float *bias, mengine_k_act act, float *y)
{
    float lo_s, hi_s;
    mengine_k_act_bounds(act, &lo_s, &hi_s);
    const mengine_k_vf lo = mengine_k_vset1(lo_s), hi = mengine_k_vset1(hi_s);
    int c = 0;
    for (; c + 4 * MK_VL <= C; c += 4 * MK_VL)
        dw_vectors(4, K, rows, cols, W, C, x + c, w + c, bias ? bias + c : NULL, lo, hi, y + c);
    for (; c + MK_VL <= C; c += MK_VL)
        dw_vectors(1, K, rows, cols, W, C, x + c, w + c, bias ? bias + c : NULL, lo, hi, y + c);
    for (; c < C; c++) {
        float acc = bias ? bias[c] : 0.0f;
        for (int kh = 0; kh < rows; kh++)
            for (int kw = 0; kw < cols; kw++)
                acc += x[((size_t)kh * W + kw) * C + c] * w[((size_t)kh * K + kw) * C + c];
        y[c] = acc < lo_s ? lo_s : (acc > hi_s ? hi_s : acc);
    }
}

/* Channels [c0, C) of @p npix interior pixels, one lane at a time. */
static MK_NOCLONE void dw_tail(int K, int S, int W, int C, int c0, int npix, const float *x,
                               const float *w, const float *bias, float lo, float hi, float *y)
{
    const size_t dx = (size_t)S * C, row = (size_t)W * C;
    for (int i = 0; i < npix; i++)
        for (int c = c0; c < C; c++) {
            float acc = bias ? bias[c] : 0.0f;
            for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++)
                    acc += x[i * dx + kh * row + (size_t)kw * C + c] *
                           w[((size_t)kh * K + kw) * C + c];
            y[(size_t)i * C + c] = acc < lo ? lo : (acc > hi ? hi : acc);
        }
}

/* The interior of an output row: @p npix >= 2 pixels whose K x K taps all lie inside
 * the input, the first reading from @p x, each next one S * C floats further. One
 * vector of channels at a time, its K * K weight vectors loaded once for the whole run
 * and held in registers (K a constant after inlining), two pixels per step. */
static MK_ALWAYS_INLINE void dw_interior(const int K, int S, int W, int C, int npix, const float *x,
                                         const float *w, const float *bias, mengine_k_act act,
                                         float *y)
{
    float lo_s, hi_s;
    mengine_k_act_bounds(act, &lo_s, &hi_s);
    const mengine_k_vf lo = mengine_k_vset1(lo_s), hi = mengine_k_vset1(hi_s);
    const size_t dx = (size_t)S * C, row = (size_t)W * C;
    int c = 0;
#if defined(MK_SIMD_AVX) && defined(__AVX512F__)
    /* 16 channels at a time in 512-bit vectors: the same arithmetic, lane for lane */
    const __m512 lo5 = _mm512_set1_ps(lo_s), hi5 = _mm512_set1_ps(hi_s);
    for (; c + 16 <= C; c += 16) {
        __m512 wv[7 * 7];
        for (int t = 0; t < K * K; t++)
            wv[t] = _mm512_loadu_ps(w + (size_t)t * C + c);
        const __m512 b = bias ? _mm512_loadu_ps(bias + c) : _mm512_setzero_ps();
        for (int i = 0; i < npix; i += 2) {
            if (i + 2 > npix)
                i = npix - 2;
            const float *xp = x + c + (size_t)i * dx;
            float *yp = y + c + (size_t)i * C;
            __m512 a0 = b, a1 = b;
            for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++) {
                    const float *xt = xp + kh * row + (size_t)kw * C;
                    a0 = _mm512_fmadd_ps(_mm512_loadu_ps(xt), wv[kh * K + kw], a0);
                    a1 = _mm512_fmadd_ps(_mm512_loadu_ps(xt + dx), wv[kh * K + kw], a1);
                }
            _mm512_storeu_ps(yp, _mm512_min_ps(hi5, _mm512_max_ps(lo5, a0)));
            _mm512_storeu_ps(yp + C, _mm512_min_ps(hi5, _mm512_max_ps(lo5, a1)));
        }
    }
#endif
    for (; c + MK_VL <= C; c += MK_VL) {
        mengine_k_vf wv[7 * 7];
        for (int t = 0; t < K * K; t++)
            wv[t] = mengine_k_vload(w + (size_t)t * C + c);
        const mengine_k_vf b = bias ? mengine_k_vload(bias + c) : mengine_k_vset1(0.0f);
        /* pairs of pixels; an odd run ends with the last two (the one before recomputed) */
        for (int i = 0; i < npix; i += 2) {
            if (i + 2 > npix)
                i = npix - 2;
            const float *xp = x + c + (size_t)i * dx;
            float *yp = y + c + (size_t)i * C;
            mengine_k_vf a0 = b, a1 = b;
            for (int kh = 0; kh < K; kh++)
                for (int kw = 0; kw < K; kw++) {
                    const float *xt = xp + kh * row + (size_t)kw * C;
                    a0 = mengine_k_vfma(a0, mengine_k_vload(xt), wv[kh * K + kw]);
                    a1 = mengine_k_vfma(a1, mengine_k_vload(xt + dx), wv[kh * K + kw]);
                }
            mengine_k_vstore(yp, mengine_k_vclamp(a0, lo, hi));
            mengine_k_vstore(yp + C, mengine_k_vclamp(a1, lo, hi));
        }
    }
    if (c < C) /* channels past the last whole vector */
        dw_tail(K, S, W, C, c, npix, x, w, bias, lo_s, hi_s, y);
}

/* Kernel K x K (a constant after inlining: the taps of an interior pixel unroll). */
static MK_ALWAYS_INLINE void dw_fast(const int K, const mengine_k_dw_params *p,
                                     const mengine_k_dims *id, const float *in, const float *filter,
                                     const float *bias, const mengine_k_dims *od, float *out)
{
    const int H = id->h, W = id->w, C = id->c, S = p->stride_h, OW = od->w, PW = p->pad_w;
    /* Output columns whose whole kernel row lies inside the input: [ow_lo, ow_hi). */
    const int ow_lo = mengine_k_min((PW + S - 1) / S, OW);
    int ow_hi = W - K + PW >= 0 ? (W - K + PW) / S + 1 : 0;
    ow_hi = mengine_k_max(mengine_k_min(ow_hi, OW), ow_lo);
    for (int n = 0; n < id->n; n++) {
        const float *in_n = in + (size_t)n * H * W * C;
        for (int oh = 0; oh < od->h; oh++) {
            const int ih0 = oh * S - p->pad_h;
            const int kh_lo = mengine_k_max(0, -ih0), kh_hi = mengine_k_min(K, H - ih0);
            const int rows = mengine_k_max(kh_hi - kh_lo, 0);
            float *y_row = out + ((size_t)n * od->h + oh) * OW * C;
            for (int ow = 0; ow < OW; ow++) {
                if (rows == K && ow == ow_lo && ow_hi - ow_lo >= 2) {
                    dw_interior(K, S, W, C, ow_hi - ow_lo,
                                in_n + ((size_t)ih0 * W + ow * S - PW) * C, filter, bias, p->act,
                                y_row + (size_t)ow * C);
                    ow = ow_hi - 1;
                    continue;
                }
                const int iw0 = ow * S - PW;
                const int kw_lo = mengine_k_max(0, -iw0), kw_hi = mengine_k_min(K, W - iw0);
                const int cols = mengine_k_max(kw_hi - kw_lo, 0);
                float *y = y_row + (size_t)ow * C;
                if (rows && cols)
                    dw_border(K, rows, cols, W, C,
                              in_n + ((size_t)(ih0 + kh_lo) * W + iw0 + kw_lo) * C,
                              filter + ((size_t)kh_lo * K + kw_lo) * C, bias, p->act, y);
                else /* no tap inside the input */
                    dw_border(K, 0, 0, W, C, in_n, filter, bias, p->act, y);
            }
        }
    }
}

mengine_status mengine_k_depthwise_conv_fast_f32(const mengine_k_dw_params *p,
                                                 const mengine_k_dims *id, const float *in,
                                                 const mengine_k_dims *fd, const float *filter,
                                                 const float *bias, const mengine_k_dims *od,
                                                 float *out)
{
    if (!dw_args_ok(p, id, in, fd, filter, od, out) || !mengine_k_depthwise_conv_fast_ok(p, fd))
        return MENGINE_ERR_ARG;
    switch (fd->h) {
    case 3: dw_fast(3, p, id, in, filter, bias, od, out); break;
    case 5: dw_fast(5, p, id, in, filter, bias, od, out); break;
    default: dw_fast(7, p, id, in, filter, bias, od, out); break;
    }
    return MENGINE_OK;
}
