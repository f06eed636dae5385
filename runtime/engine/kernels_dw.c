/* Depthwise convolution: a general kernel (any size, stride, multiplier) and
 * one specialised for 3x3 / 5x5 / 7x7 kernels with stride 1 or 2 and
 * multiplier 1, where the kernel size and stride are compile-time constants
 * in the interior of the image. */
#include "engine/kernels_util.h"

/* One output pixel of the general kernel, taps clipped to the image. */
static void dw_pixel(const mk_dw_params *p, const mk_dims *id, const float *restrict in_n,
                     const mk_dims *fd, const float *restrict filter, const float *restrict bias,
                     int oh, int ow, float *restrict y)
{
    const int W = id->w, C = id->c, M = p->multiplier, CO = fd->c, KW = fd->w;
    const int ih0 = oh * p->stride_h - p->pad_h, iw0 = ow * p->stride_w - p->pad_w;
    const int kh_lo = mk_max(0, -ih0), kh_hi = mk_min(fd->h, id->h - ih0);
    const int kw_lo = mk_max(0, -iw0), kw_hi = mk_min(KW, W - iw0);
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
    mk_act_f32(y, (size_t)CO, p->act);
}

static int dw_args_ok(const mk_dw_params *p, const mk_dims *id, const float *in, const mk_dims *fd,
                      const float *filter, const mk_dims *od, const float *out)
{
    return p && in && filter && out && mk_dims_ok(id) && mk_dims_ok(fd) && mk_dims_ok(od) &&
           p->stride_h > 0 && p->stride_w > 0 && p->pad_h >= 0 && p->pad_w >= 0 &&
           p->multiplier > 0 && mk_act_ok(p->act) && fd->n == 1 && fd->c == id->c * p->multiplier &&
           od->c == fd->c && od->n == id->n;
}

mengine_status mk_depthwise_conv_f32(const mk_dw_params *p, const mk_dims *id, const float *in,
                                     const mk_dims *fd, const float *filter, const float *bias,
                                     const mk_dims *od, float *out)
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

int mk_depthwise_conv_fast_ok(const mk_dw_params *p, const mk_dims *fd)
{
    return p && fd && p->multiplier == 1 && fd->h == fd->w &&
           (fd->h == 3 || fd->h == 5 || fd->h == 7) && p->stride_h == p->stride_w &&
           (p->stride_h == 1 || p->stride_h == 2);
}

/* Interior output pixel: every tap inside the image. K is a constant after
 * inlining, so the taps of a kernel row unroll and each row is one pass over
 * the channels, the contiguous dimension the compiler vectorises. */
static MK_ALWAYS_INLINE void dw_interior(const int K, const float *restrict in_n, int W, int C,
                                         const float *restrict filter, const float *restrict bias,
                                         int ih0, int iw0, float *restrict y, mk_act act)
{
    for (int kh = 0; kh < K; kh++) {
        const float *restrict x = in_n + ((size_t)(ih0 + kh) * W + iw0) * C;
        const float *restrict w = filter + (size_t)kh * K * C;
        for (int c = 0; c < C; c++) {
            float acc = kh ? y[c] : (bias ? bias[c] : 0.0f);
            for (int kw = 0; kw < K; kw++)
                acc += x[kw * C + c] * w[kw * C + c];
            y[c] = acc;
        }
    }
    mk_act_f32(y, (size_t)C, act);
}

static MK_ALWAYS_INLINE void dw_fast(const int K, const int S, const mk_dw_params *p,
                                     const mk_dims *id, const float *in, const mk_dims *fd,
                                     const float *filter, const float *bias, const mk_dims *od,
                                     float *out)
{
    const int H = id->h, W = id->w, C = id->c;
    for (int n = 0; n < id->n; n++) {
        const float *in_n = in + (size_t)n * H * W * C;
        for (int oh = 0; oh < od->h; oh++) {
            const int ih0 = oh * S - p->pad_h;
            const int row_inside = ih0 >= 0 && ih0 + K <= H;
            for (int ow = 0; ow < od->w; ow++) {
                const int iw0 = ow * S - p->pad_w;
                float *y = out + (((size_t)n * od->h + oh) * od->w + ow) * C;
                if (row_inside && iw0 >= 0 && iw0 + K <= W)
                    dw_interior(K, in_n, W, C, filter, bias, ih0, iw0, y, p->act);
                else
                    dw_pixel(p, id, in_n, fd, filter, bias, oh, ow, y);
            }
        }
    }
}

mengine_status mk_depthwise_conv_fast_f32(const mk_dw_params *p, const mk_dims *id, const float *in,
                                          const mk_dims *fd, const float *filter, const float *bias,
                                          const mk_dims *od, float *out)
{
    if (!dw_args_ok(p, id, in, fd, filter, od, out) || !mk_depthwise_conv_fast_ok(p, fd))
        return MENGINE_ERR_ARG;
    switch (fd->h * 10 + p->stride_h) {
    case 31: dw_fast(3, 1, p, id, in, fd, filter, bias, od, out); break;
    case 32: dw_fast(3, 2, p, id, in, fd, filter, bias, od, out); break;
    case 51: dw_fast(5, 1, p, id, in, fd, filter, bias, od, out); break;
    case 52: dw_fast(5, 2, p, id, in, fd, filter, bias, od, out); break;
    case 71: dw_fast(7, 1, p, id, in, fd, filter, bias, od, out); break;
    default: dw_fast(7, 2, p, id, in, fd, filter, bias, od, out); break;
    }
    return MENGINE_OK;
}
