#include "ref_deconv.h"

int ref_deconv_out(int in, int k, int stride, int pad) { return (in - 1) * stride - 2 * pad + k; }

void ref_deconv2d_forward(const nn_deconv2d_shape *s, const double *x, const double *w,
                          const double *b, double *y)
{
    int ho = ref_deconv_out(s->h, s->kh, s->stride_h, s->pad_h);
    int wo = ref_deconv_out(s->w, s->kw, s->stride_w, s->pad_w);
    int ld = s->w_ld ? s->w_ld : s->cout * s->kh * s->kw;
    for (int n = 0; n < s->n; n++)
        for (int co = 0; co < s->cout; co++)
            for (int i = 0; i < ho * wo; i++)
                y[(n * s->cout + co) * ho * wo + i] = b ? b[co] : 0;
    /* every input value scatters into a KH x KW window of the (uncropped) output */
    for (int n = 0; n < s->n; n++)
        for (int ci = 0; ci < s->cin; ci++)
            for (int iy = 0; iy < s->h; iy++)
                for (int ix = 0; ix < s->w; ix++) {
                    double v = x[((n * s->cin + ci) * s->h + iy) * s->w + ix];
                    for (int co = 0; co < s->cout; co++)
                        for (int ky = 0; ky < s->kh; ky++) {
                            int oy = iy * s->stride_h - s->pad_h + ky;
                            if (oy < 0 || oy >= ho)
                                continue;
                            for (int kx = 0; kx < s->kw; kx++) {
                                int ox = ix * s->stride_w - s->pad_w + kx;
                                if (ox >= 0 && ox < wo)
                                    y[((n * s->cout + co) * ho + oy) * wo + ox] +=
                                        v * w[ci * ld + (co * s->kh + ky) * s->kw + kx];
                            }
                        }
                }
}
