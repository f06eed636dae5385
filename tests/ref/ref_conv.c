#include "ref_conv.h"

int ref_conv_out(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

void ref_conv2d_forward(const nn_conv2d_shape *s, const double *x, const double *w, double *y)
{
    int ho = ref_conv_out(s->h, s->kh, s->stride_h, s->pad_h);
    int wo = ref_conv_out(s->w, s->kw, s->stride_w, s->pad_w);
    int ld = s->w_ld ? s->w_ld : s->cin * s->kh * s->kw;
    for (int n = 0; n < s->n; n++)
        for (int co = 0; co < s->cout; co++)
            for (int oy = 0; oy < ho; oy++)
                for (int ox = 0; ox < wo; ox++) {
                    double acc = 0;
                    for (int ci = 0; ci < s->cin; ci++)
                        for (int ky = 0; ky < s->kh; ky++) {
                            int iy = oy * s->stride_h - s->pad_h + ky;
                            if (iy < 0 || iy >= s->h)
                                continue;
                            for (int kx = 0; kx < s->kw; kx++) {
                                int ix = ox * s->stride_w - s->pad_w + kx;
                                if (ix < 0 || ix >= s->w)
                                    continue;
                                acc += x[((n * s->cin + ci) * s->h + iy) * s->w + ix] *
                                       w[co * ld + (ci * s->kh + ky) * s->kw + kx];
                            }
                        }
                    y[((n * s->cout + co) * ho + oy) * wo + ox] = acc;
                }
}

void ref_dw_forward(const nn_dw_shape *s, const double *x, const double *w, double *y)
{
    int ho = ref_conv_out(s->h, s->k, s->stride, s->pad);
    int wo = ref_conv_out(s->w, s->k, s->stride, s->pad);
    for (int n = 0; n < s->n; n++)
        for (int c = 0; c < s->c; c++)
            for (int oy = 0; oy < ho; oy++)
                for (int ox = 0; ox < wo; ox++) {
                    double acc = 0;
                    for (int ky = 0; ky < s->k; ky++) {
                        int iy = oy * s->stride - s->pad + ky;
                        if (iy < 0 || iy >= s->h)
                            continue;
                        for (int kx = 0; kx < s->k; kx++) {
                            int ix = ox * s->stride - s->pad + kx;
                            if (ix >= 0 && ix < s->w)
                                acc += x[((n * s->c + c) * s->h + iy) * s->w + ix] *
                                       w[(c * s->k + ky) * s->k + kx];
                        }
                    }
                    y[((n * s->c + c) * ho + oy) * wo + ox] = acc;
                }
}

void ref_dw_backward_w(const nn_dw_shape *s, const double *x, const double *dy, double *dw)
{
    int ho = ref_conv_out(s->h, s->k, s->stride, s->pad);
    int wo = ref_conv_out(s->w, s->k, s->stride, s->pad);
    for (int i = 0; i < s->c * s->k * s->k; i++)
        dw[i] = 0;
    for (int n = 0; n < s->n; n++)
        for (int c = 0; c < s->c; c++)
            for (int oy = 0; oy < ho; oy++)
                for (int ox = 0; ox < wo; ox++) {
                    double g = dy[((n * s->c + c) * ho + oy) * wo + ox];
                    for (int ky = 0; ky < s->k; ky++) {
                        int iy = oy * s->stride - s->pad + ky;
                        if (iy < 0 || iy >= s->h)
                            continue;
                        for (int kx = 0; kx < s->k; kx++) {
                            int ix = ox * s->stride - s->pad + kx;
                            if (ix >= 0 && ix < s->w)
                                dw[(c * s->k + ky) * s->k + kx] +=
                                    g * x[((n * s->c + c) * s->h + iy) * s->w + ix];
                        }
                    }
                }
}
