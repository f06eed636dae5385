#include "ref/stereo_ref.h"

#include <math.h>
#include <string.h>

int ref_corr_disps(const nn_corr_shape *s) { return s->max_disp / s->stride + 1; }

/* Index of (b, ch, y, x) in a (N, ch_count, H, W) tensor. */
static size_t at4(int b, int ch, int y, int x, int chs, int h, int w)
{
    return (((size_t)b * chs + ch) * h + y) * w + x;
}

void ref_corr_forward(const nn_corr_shape *s, const double *fl, const double *fr, double *out)
{
    int nd = ref_corr_disps(s);
    for (int b = 0; b < s->n; b++)
        for (int i = 0; i < nd; i++)
            for (int y = 0; y < s->h; y++)
                for (int x = 0; x < s->w; x++) {
                    int xr = x - i * s->stride;
                    double acc = 0;
                    if (xr >= 0)
                        for (int c = 0; c < s->c; c++)
                            acc += fl[at4(b, c, y, x, s->c, s->h, s->w)] *
                                   fr[at4(b, c, y, xr, s->c, s->h, s->w)];
                    out[at4(b, i, y, x, nd, s->h, s->w)] = acc / s->c;
                }
}

void ref_corr_backward(const nn_corr_shape *s, const double *fl, const double *fr,
                       const double *dout, double *dfl, double *dfr)
{
    size_t nf = (size_t)s->n * s->c * s->h * s->w;
    int nd = ref_corr_disps(s);
    if (dfl)
        memset(dfl, 0, nf * sizeof *dfl);
    if (dfr)
        memset(dfr, 0, nf * sizeof *dfr);
    /* scatter form: each product fl[x] * fr[x - d] / C of the forward */
    for (int b = 0; b < s->n; b++)
        for (int i = 0; i < nd; i++)
            for (int y = 0; y < s->h; y++)
                for (int x = i * s->stride; x < s->w; x++) {
                    int xr = x - i * s->stride;
                    double g = dout[at4(b, i, y, x, nd, s->h, s->w)] / s->c;
                    for (int c = 0; c < s->c; c++) {
                        size_t l = at4(b, c, y, x, s->c, s->h, s->w);
                        size_t r = at4(b, c, y, xr, s->c, s->h, s->w);
                        if (dfl)
                            dfl[l] += g * fr[r];
                        if (dfr)
                            dfr[r] += g * fl[l];
                    }
                }
}

/* Source taps of output o along an axis of n inputs, factor f (PyTorch's
 * area_pixel_compute_source_index for align_corners=False, then the bilinear pair). */
static void src_taps(int o, int n, int f, int *i0, int *i1, double *lam)
{
    double src = (o + 0.5) / f - 0.5;
    if (src < 0)
        src = 0;
    *i0 = (int)floor(src);
    if (*i0 > n - 1)
        *i0 = n - 1;
    *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
    *lam = src - *i0;
}

/* Apply the upsampling (transpose = 0) or its transpose (transpose = 1) to one plane. */
static void upsample_plane(const nn_upsample_shape *s, double scale, const double *in, double *out,
                           int transpose)
{
    int f = s->factor, oh = s->h * f, ow = s->w * f;
    for (int oy = 0; oy < oh; oy++) {
        int y0, y1;
        double ly;
        src_taps(oy, s->h, f, &y0, &y1, &ly);
        for (int ox = 0; ox < ow; ox++) {
            int x0, x1;
            double lx;
            src_taps(ox, s->w, f, &x0, &x1, &lx);
            const int ys[2] = {y0, y1}, xs[2] = {x0, x1};
            const double wy[2] = {1 - ly, ly}, wx[2] = {1 - lx, lx};
            for (int a = 0; a < 2; a++)
                for (int b = 0; b < 2; b++) {
                    double wgt = scale * wy[a] * wx[b];
                    size_t src = (size_t)ys[a] * s->w + xs[b], dst = (size_t)oy * ow + ox;
                    if (transpose)
                        out[src] += wgt * in[dst];
                    else
                        out[dst] += wgt * in[src];
                }
        }
    }
}

void ref_upsample_forward(const nn_upsample_shape *s, double scale, const double *x, double *y)
{
    size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w;
    size_t out = in * (size_t)s->factor * (size_t)s->factor;
    memset(y, 0, planes * out * sizeof *y);
    for (size_t p = 0; p < planes; p++)
        upsample_plane(s, scale, x + p * in, y + p * out, 0);
}

void ref_upsample_backward(const nn_upsample_shape *s, double scale, const double *dy, double *dx)
{
    size_t planes = (size_t)s->n * s->c, in = (size_t)s->h * s->w;
    size_t out = in * (size_t)s->factor * (size_t)s->factor;
    memset(dx, 0, planes * in * sizeof *dx);
    for (size_t p = 0; p < planes; p++)
        upsample_plane(s, scale, dy + p * out, dx + p * in, 1);
}

int ref_disp_valid(double g, double max_disp)
{
    return isfinite(g) && g > 0 && (max_disp <= 0 || g <= max_disp);
}

void ref_disp_loss(nn_disp_loss_kind kind, double weight, double max_disp, size_t n,
                   const double *pred, const double *gt, double *loss, double *epe, double *count)
{
    double sl = 0, se = 0, cnt = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ref_disp_valid(gt[i], max_disp))
            continue;
        double e = pred[i] - gt[i], ae = fabs(e);
        sl += kind == NN_DISP_LOSS_L1 ? ae : (ae < 1 ? 0.5 * e * e : ae - 0.5);
        se += ae;
        cnt += 1;
    }
    *loss = cnt > 0 ? weight * sl / cnt : 0;
    *epe = cnt > 0 ? se / cnt : 0;
    *count = cnt;
}
