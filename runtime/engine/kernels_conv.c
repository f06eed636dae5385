/* Convolutions: direct 2-D convolution, 1x1 convolution as a blocked GEMM, and
 * transpose convolution.
 *
 * Both forward kernels first pack MK_CONV_NR output channels of the OHWI
 * weights into a panel laid out [KH][KW][Cin][NR] (zero columns past Cout),
 * so that the inner loop of the micro-kernel is NR independent multiply-adds
 * over contiguous floats, and the MR x NR accumulators stay in vector
 * registers. Input rows along KW are contiguous in NHWC, so one
 * micro-kernel call covers a whole kernel row (K = KW * Cin). */
#include <string.h>

#include "engine/kernels_util.h"

#define NR MK_CONV_NR /* 8: the vector micro-kernels hold it in two vectors of 4 */
#define MR 4          /* output pixels per register block */
#define PB 64         /* pixels per cache block of the 1x1 kernel */

size_t mk_conv2d_get_buffer_size_f32(const mk_dims *f)
{
    if (!mk_dims_ok(f))
        return 0;
    return (size_t)NR * (size_t)f->h * (size_t)f->w * (size_t)f->c * sizeof(float);
}

/* panel[i][j] = filter[co0 + j][i] for i < k (k = KH*KW*Cin), zero for channels past Cout. */
static void pack_panel(const float *restrict filter, size_t k, int cout, int co0,
                       float *restrict panel)
{
    int nr = mk_min(NR, cout - co0);
    if (nr < NR)
        memset(panel, 0, k * NR * sizeof *panel);
    for (int j = 0; j < nr; j++) {
        const float *restrict src = filter + (size_t)(co0 + j) * k;
        for (size_t i = 0; i < k; i++)
            panel[i * NR + j] = src[i];
    }
}

#if MK_VECTOR_EXT

/* NR = 8 output channels = two vectors of 4. */
typedef float mk_v4 __attribute__((vector_size(16)));

static inline mk_v4 load4(const float *p)
{
    mk_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* acc[r][j] += sum_i a_r[i] * b[i][j], r < MR, j < NR */
static void ukernel_4xnr(size_t k, const float *restrict a0, const float *restrict a1,
                         const float *restrict a2, const float *restrict a3,
                         const float *restrict b, float *restrict acc)
{
    mk_v4 c[MR][2];
    memcpy(c, acc, sizeof c);
    for (size_t i = 0; i < k; i++) {
        const mk_v4 b0 = load4(b + i * NR), b1 = load4(b + i * NR + 4);
        const float x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i];
        c[0][0] += x0 * b0;
        c[0][1] += x0 * b1;
        c[1][0] += x1 * b0;
        c[1][1] += x1 * b1;
        c[2][0] += x2 * b0;
        c[2][1] += x2 * b1;
        c[3][0] += x3 * b0;
        c[3][1] += x3 * b1;
    }
    memcpy(acc, c, sizeof c);
}

/* acc[j] += sum_i a[i] * b[i][j] */
static void ukernel_1xnr(size_t k, const float *restrict a, const float *restrict b,
                         float *restrict acc)
{
    mk_v4 c0 = load4(acc), c1 = load4(acc + 4);
    for (size_t i = 0; i < k; i++) {
        c0 += a[i] * load4(b + i * NR);
        c1 += a[i] * load4(b + i * NR + 4);
    }
    memcpy(acc, &c0, sizeof c0);
    memcpy(acc + 4, &c1, sizeof c1);
}

#else

/* acc[r][j] += sum_i a_r[i] * b[i][j], r < MR, j < NR */
static void ukernel_4xnr(size_t k, const float *restrict a0, const float *restrict a1,
                         const float *restrict a2, const float *restrict a3,
                         const float *restrict b, float *restrict acc)
{
    for (size_t i = 0; i < k; i++) {
        const float *restrict bi = b + i * NR;
        const float x0 = a0[i], x1 = a1[i], x2 = a2[i], x3 = a3[i];
        for (int j = 0; j < NR; j++) {
            acc[j] += x0 * bi[j];
            acc[NR + j] += x1 * bi[j];
            acc[2 * NR + j] += x2 * bi[j];
            acc[3 * NR + j] += x3 * bi[j];
        }
    }
}

/* acc[j] += sum_i a[i] * b[i][j] */
static void ukernel_1xnr(size_t k, const float *restrict a, const float *restrict b,
                         float *restrict acc)
{
    for (size_t i = 0; i < k; i++)
        for (int j = 0; j < NR; j++)
            acc[j] += a[i] * b[i * NR + j];
}

#endif

/* out[j] = act(acc[j] + bias[j]) for the nr valid channels. */
static void store_nr(float *restrict out, const float *restrict acc, const float *restrict bias,
                     int nr, mk_act act)
{
    for (int j = 0; j < nr; j++)
        out[j] = mk_act1(acc[j] + bias[j], act);
}

static int conv_args_ok(const mk_conv_params *p, const mk_dims *id, const float *in,
                        const mk_dims *fd, const float *filter, const mk_dims *od, const float *out)
{
    return p && in && filter && out && mk_dims_ok(id) && mk_dims_ok(fd) && mk_dims_ok(od) &&
           p->stride_h > 0 && p->stride_w > 0 && p->pad_h >= 0 && p->pad_w >= 0 &&
           mk_act_ok(p->act) && od->n == id->n;
}

mengine_status mk_conv2d_f32(const mk_conv_params *p, const mk_dims *id, const float *in,
                             const mk_dims *fd, const float *filter, const float *bias,
                             const mk_dims *od, float *out, float *scratch)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || !scratch || fd->c != id->c ||
        od->c != fd->n)
        return MENGINE_ERR_ARG;
    const int H = id->h, W = id->w, C = id->c, KH = fd->h, KW = fd->w, CO = fd->n;
    const int OH = od->h, OW = od->w, SH = p->stride_h, SW = p->stride_w;
    const int PH = p->pad_h, PW = p->pad_w;
    const size_t k = (size_t)KH * KW * C, kwc = (size_t)KW * C;
    /* Output columns whose whole kernel row lies inside the input: [ow_lo, ow_hi). */
    int ow_lo = mk_min((PW + SW - 1) / SW, OW);
    int ow_hi = W - KW + PW >= 0 ? (W - KW + PW) / SW + 1 : 0;
    ow_hi = mk_max(mk_min(ow_hi, OW), ow_lo);
    float bias_nr[NR];

    for (int co0 = 0; co0 < CO; co0 += NR) {
        const int nr = mk_min(NR, CO - co0);
        pack_panel(filter, k, CO, co0, scratch);
        for (int j = 0; j < NR; j++)
            bias_nr[j] = bias && j < nr ? bias[co0 + j] : 0.0f;
        for (int n = 0; n < id->n; n++)
            for (int oh = 0; oh < OH; oh++) {
                const int ih0 = oh * SH - PH;
                const int kh_lo = mk_max(0, -ih0), kh_hi = mk_min(KH, H - ih0);
                const float *in_n = in + (size_t)n * H * W * C;
                float *out_row = out + (((size_t)n * OH + oh) * OW) * CO + co0;
                int ow = 0;
                while (ow < OW) {
                    if (ow >= ow_lo && ow + MR <= ow_hi) {
                        float acc[MR * NR] = {0};
                        const int iw0 = ow * SW - PW;
                        for (int kh = kh_lo; kh < kh_hi; kh++) {
                            const float *row = in_n + ((size_t)(ih0 + kh) * W + iw0) * C;
                            ukernel_4xnr(kwc, row, row + (size_t)SW * C, row + (size_t)2 * SW * C,
                                         row + (size_t)3 * SW * C, scratch + kh * kwc * NR, acc);
                        }
                        for (int r = 0; r < MR; r++)
                            store_nr(out_row + (size_t)(ow + r) * CO, acc + r * NR, bias_nr, nr,
                                     p->act);
                        ow += MR;
                    } else {
                        float acc[NR] = {0};
                        const int iw0 = ow * SW - PW;
                        const int kw_lo = mk_max(0, -iw0), kw_hi = mk_min(KW, W - iw0);
                        if (kw_hi > kw_lo)
                            for (int kh = kh_lo; kh < kh_hi; kh++)
                                ukernel_1xnr((size_t)(kw_hi - kw_lo) * C,
                                             in_n + ((size_t)(ih0 + kh) * W + iw0 + kw_lo) * C,
                                             scratch + ((size_t)kh * KW + kw_lo) * C * NR, acc);
                        store_nr(out_row + (size_t)ow * CO, acc, bias_nr, nr, p->act);
                        ow++;
                    }
                }
            }
    }
    return MENGINE_OK;
}

/* First input element of output pixel @p pix (flattened n, oh, ow) of a 1x1 convolution. */
static const float *pixel_1x1(const float *in, const mk_dims *id, const mk_dims *od, int SH, int SW,
                              size_t pix)
{
    size_t ow = pix % (size_t)od->w, t = pix / (size_t)od->w;
    size_t oh = t % (size_t)od->h, n = t / (size_t)od->h;
    return in + ((n * id->h + oh * SH) * id->w + ow * SW) * id->c;
}

mengine_status mk_conv2d_1x1_f32(const mk_conv_params *p, const mk_dims *id, const float *in,
                                 const mk_dims *fd, const float *filter, const float *bias,
                                 const mk_dims *od, float *out, float *scratch)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || !scratch || fd->c != id->c ||
        od->c != fd->n || fd->h != 1 || fd->w != 1 || p->pad_h != 0 || p->pad_w != 0 ||
        (od->h - 1) * p->stride_h >= id->h || (od->w - 1) * p->stride_w >= id->w)
        return MENGINE_ERR_ARG;
    const int C = id->c, CO = fd->n, SH = p->stride_h, SW = p->stride_w;
    const size_t npix = (size_t)od->n * od->h * od->w;
    const int dense = SH == 1 && SW == 1 && od->h == id->h && od->w == id->w;
    float bias_nr[NR];

    /* Blocks of PB pixels stay in cache while every panel of output channels
     * passes over them; a panel is repacked once per block (1/PB of the work). */
    for (size_t pix0 = 0; pix0 < npix; pix0 += PB) {
        const size_t pix_end = pix0 + PB < npix ? pix0 + PB : npix;
        for (int co0 = 0; co0 < CO; co0 += NR) {
            const int nr = mk_min(NR, CO - co0);
            pack_panel(filter, (size_t)C, CO, co0, scratch);
            for (int j = 0; j < NR; j++)
                bias_nr[j] = bias && j < nr ? bias[co0 + j] : 0.0f;
            size_t pix = pix0;
            for (; pix + MR <= pix_end; pix += MR) {
                const float *a[MR];
                for (int r = 0; r < MR; r++)
                    a[r] = dense ? in + (pix + r) * C : pixel_1x1(in, id, od, SH, SW, pix + r);
                float acc[MR * NR] = {0};
                ukernel_4xnr((size_t)C, a[0], a[1], a[2], a[3], scratch, acc);
                for (int r = 0; r < MR; r++)
                    store_nr(out + (pix + r) * CO + co0, acc + r * NR, bias_nr, nr, p->act);
            }
            for (; pix < pix_end; pix++) {
                float acc[NR] = {0};
                ukernel_1xnr((size_t)C, dense ? in + pix * C : pixel_1x1(in, id, od, SH, SW, pix),
                             scratch, acc);
                store_nr(out + pix * CO + co0, acc, bias_nr, nr, p->act);
            }
        }
    }
    return MENGINE_OK;
}

mengine_status mk_transpose_conv_f32(const mk_conv_params *p, const mk_dims *id, const float *in,
                                     const mk_dims *fd, const float *filter, const float *bias,
                                     const mk_dims *od, float *out)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || fd->c != id->c || od->c != fd->n)
        return MENGINE_ERR_ARG;
    const int H = id->h, W = id->w, CI = id->c, KH = fd->h, KW = fd->w, CO = fd->n;
    const int OH = od->h, OW = od->w;
    const size_t npix = (size_t)od->n * OH * OW;
    for (size_t pix = 0; pix < npix; pix++)
        for (int co = 0; co < CO; co++)
            out[pix * CO + co] = bias ? bias[co] : 0.0f;
    /* Scatter: input pixel (ih, iw) adds W[:, kh, kw, :] . x into output (ih*s + kh - pad, ...). */
    for (int n = 0; n < id->n; n++)
        for (int ih = 0; ih < H; ih++)
            for (int iw = 0; iw < W; iw++) {
                const float *x = in + (((size_t)n * H + ih) * W + iw) * CI;
                for (int kh = 0; kh < KH; kh++) {
                    const int oh = ih * p->stride_h + kh - p->pad_h;
                    if (oh < 0 || oh >= OH)
                        continue;
                    for (int kw = 0; kw < KW; kw++) {
                        const int ow = iw * p->stride_w + kw - p->pad_w;
                        if (ow < 0 || ow >= OW)
                            continue;
                        float *y = out + (((size_t)n * OH + oh) * OW + ow) * CO;
                        const float *wk = filter + ((size_t)kh * KW + kw) * CI;
                        for (int co = 0; co < CO; co++)
                            y[co] += mk_dot(x, wk + (size_t)co * KH * KW * CI, (size_t)CI);
                    }
                }
            }
    mk_act_f32(out, npix * CO, p->act);
    return MENGINE_OK;
}
