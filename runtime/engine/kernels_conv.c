/* Convolutions: direct 2-D convolution, 1x1 convolution as a blocked GEMM, and
 * transpose convolution.
 *
 * The forward kernels pack NR output channels of the OHWI weights into a
 * panel laid out [KH][KW][Cin][NR] (zero columns past Cout), once per panel
 * per call, then run every output pixel over it: a micro-kernel keeps MR
 * pixels x NR channels of accumulators in vector registers (NR / MK_VL
 * vectors per pixel), starting from the bias, and adds one broadcast input
 * value times one panel row per step. Input rows along KW are contiguous in
 * NHWC, so a kernel row is one run of K = KW * Cin steps; the KH rows are
 * summed in registers and the fused activation is applied before the only
 * store. 1x1 convolutions over few pixels (the late, small layers) skip the
 * packing, which would cost as much as the arithmetic: dot products over the
 * contiguous Cin of input pixel and weight row, 1 or 2 pixels x 8 channels of
 * vector accumulators, the 8 sums of a pixel reduced at once into one vector
 * (AVX) or two (NEON, SSE) for the bias and the clamp. The fully connected
 * layer uses the same code (mengine_k_gemm_nt_f32()). Built for AVX-512 (-march=
 * native on such a CPU), the micro-kernel holds a pixel's 16 channels in one
 * 512-bit vector and 12 pixels per tile; the panel layout is the same, so
 * scratch and arena sizes do not depend on the instruction set. */
#include "engine/kernels_simd_impl.h"

#define NR MK_CONV_NR   /* 16 output channels per panel */
#define NV (NR / MK_VL) /* vectors per pixel of a tile */
#if defined(MK_SIMD_AVX) && defined(__AVX512F__) && MK_CONV_NR == 16
#define MK_TILE_AVX512 1 /* one 512-bit vector per pixel of a tile (tile() below) */
#define MR 12            /* 12 accumulators and 13 loads per step: FMA- and load-bound alike */
#elif defined(MK_SIMD_AVX) || defined(MK_SIMD_NEON)
#define MR 6 /* 12 (AVX: 16 registers) or 24 (NEON: 32) accumulators */
#elif MK_VL == 4
#define MR 2 /* SSE: 8 accumulators of 16 registers */
#else
#define MR 2
#endif
#define GEMV_MAX_PIX 16 /* 1x1 convolutions over at most this many pixels: dot products */

size_t mengine_k_conv2d_get_buffer_size_f32(const mengine_k_dims *f)
{
    if (!mengine_k_dims_ok(f))
        return 0;
    return (size_t)NR * (size_t)f->h * (size_t)f->w * (size_t)f->c * sizeof(float);
}

#if defined(MK_SIMD_AVX)
/* dst[c * NR + r] = src[r * k + c] for r, c < 8: one 8 x 8 transpose. */
static void transpose8(const float *src, size_t k, float *dst)
{
    __m256 r[8], t[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(src + (size_t)i * k);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + (size_t)i * NR, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(i + 4) * NR, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}
#endif

/* panel[i][j] = filter[co0 + j][i] for i < k (k = KH*KW*Cin), zero for channels past Cout;
 * on AVX in 8 x 8 transposes. */
static MK_NOCLONE void pack_panel(const float *restrict filter, size_t k, int cout, int co0,
                                  float *restrict panel)
{
    int nr = mengine_k_min(NR, cout - co0), j0 = 0;
    if (nr < NR)
        memset(panel, 0, k * NR * sizeof *panel);
#if defined(MK_SIMD_AVX)
    for (; j0 + 8 <= nr; j0 += 8) {
        const float *src = filter + (size_t)(co0 + j0) * k;
        size_t i = 0;
        for (; i + 8 <= k; i += 8)
            transpose8(src + i, k, panel + i * NR + j0);
        for (; i < k; i++)
            for (int j = 0; j < 8; j++)
                panel[i * NR + j0 + j] = src[(size_t)j * k + i];
    }
#endif
    for (int j = j0; j < nr; j++) {
        const float *restrict src = filter + (size_t)(co0 + j) * k;
        for (size_t i = 0; i < k; i++)
            panel[i * NR + j] = src[i];
    }
}

/* Where a tile reads and writes. */
typedef struct tile_args {
    int rows;          /* kernel rows summed (KH, or the rows inside the input) */
    size_t k;          /* steps per row (valid KW taps x Cin) */
    size_t a_row;      /* floats from one input row to the next */
    size_t a_pix;      /* floats from one pixel of the tile to the next */
    size_t b_row;      /* floats from one panel row to the next */
    size_t out_pix;    /* floats from one output pixel to the next (Cout) */
    int nr;            /* valid output channels of the panel */
    const float *bias; /* NR values */
    float lo, hi;      /* activation clamp */
} tile_args;

/* out[r][j] = clamp(bias[j] + sum_{kh, i} a[r*a_pix + kh*a_row + i] * b[kh*b_row + i*NR + j]),
 * r < M, j < nr. M is MR or 1 after inlining. */
static MK_ALWAYS_INLINE void tile(const int M, const tile_args *t, const float *a,
                                  const float *restrict b, float *out)
{
#if defined(MK_TILE_AVX512)
    /* the panel's NR = 16 channels are one vector: the same arithmetic, lane for lane */
    __m512 acc5[MR];
    const __m512 bias5 = _mm512_loadu_ps(t->bias);
    for (int r = 0; r < M; r++)
        acc5[r] = bias5;
    for (int kh = 0; kh < t->rows; kh++) {
        const float *restrict ak = a + kh * t->a_row;
        const float *restrict bk = b + kh * t->b_row;
        for (size_t i = 0; i < t->k; i++) {
            const __m512 bv = _mm512_loadu_ps(bk + i * NR);
            for (int r = 0; r < M; r++)
                acc5[r] = _mm512_fmadd_ps(_mm512_set1_ps(ak[r * t->a_pix + i]), bv, acc5[r]);
        }
    }
    const __m512 lo5 = _mm512_set1_ps(t->lo), hi5 = _mm512_set1_ps(t->hi);
    const __mmask16 keep = (__mmask16)((1u << t->nr) - 1u);
    for (int r = 0; r < M; r++)
        _mm512_mask_storeu_ps(out + r * t->out_pix, keep,
                              _mm512_min_ps(hi5, _mm512_max_ps(lo5, acc5[r])));
#else
    mengine_k_vf acc[MR][NV];
    for (int v = 0; v < NV; v++) {
        const mengine_k_vf bv = mengine_k_vload(t->bias + v * MK_VL);
        for (int r = 0; r < M; r++)
            acc[r][v] = bv;
    }
    for (int kh = 0; kh < t->rows; kh++) {
        const float *restrict ak = a + kh * t->a_row;
        const float *restrict bk = b + kh * t->b_row;
        for (size_t i = 0; i < t->k; i++) {
            mengine_k_vf bv[NV];
            for (int v = 0; v < NV; v++)
                bv[v] = mengine_k_vload(bk + i * NR + v * MK_VL);
            for (int r = 0; r < M; r++) {
                const mengine_k_vf x = mengine_k_vset1(ak[r * t->a_pix + i]);
                for (int v = 0; v < NV; v++)
                    acc[r][v] = mengine_k_vfma(acc[r][v], x, bv[v]);
            }
        }
    }
    const mengine_k_vf lo = mengine_k_vset1(t->lo), hi = mengine_k_vset1(t->hi);
    for (int r = 0; r < M; r++) {
        float *y = out + r * t->out_pix;
        if (t->nr == NR) {
            for (int v = 0; v < NV; v++)
                mengine_k_vstore(y + v * MK_VL, mengine_k_vclamp(acc[r][v], lo, hi));
        } else {
            float tmp[NR];
            for (int v = 0; v < NV; v++)
                mengine_k_vstore(tmp + v * MK_VL, mengine_k_vclamp(acc[r][v], lo, hi));
            memcpy(y, tmp, (size_t)t->nr * sizeof *y);
        }
    }
#endif
}

static void tile_mr(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(MR, t, a, b, out);
}

static void tile_1(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(1, t, a, b, out);
}

static int conv_args_ok(const mengine_k_conv_params *p, const mengine_k_dims *id, const float *in,
                        const mengine_k_dims *fd, const float *filter, const mengine_k_dims *od,
                        const float *out)
{
    return p && in && filter && out && mengine_k_dims_ok(id) && mengine_k_dims_ok(fd) &&
           mengine_k_dims_ok(od) && p->stride_h > 0 && p->stride_w > 0 && p->pad_h >= 0 &&
           p->pad_w >= 0 && mengine_k_act_ok(p->act) && od->n == id->n;
}

/* Panel @p co0: bias (zeros past Cout, or everywhere without bias) and clamp bounds. */
static void panel_args(const mengine_k_conv_params *p, const float *bias, int CO, int co0,
                       float *bias_nr, tile_args *t)
{
    t->nr = mengine_k_min(NR, CO - co0);
    for (int j = 0; j < NR; j++)
        bias_nr[j] = bias && j < t->nr ? bias[co0 + j] : 0.0f;
    t->bias = bias_nr;
    mengine_k_act_bounds(p->act, &t->lo, &t->hi);
}

mengine_status mengine_k_conv2d_f32(const mengine_k_conv_params *p, const mengine_k_dims *id,
                                    const float *in, const mengine_k_dims *fd, const float *filter,
                                    const float *bias, const mengine_k_dims *od, float *out,
                                    float *scratch)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || !scratch || fd->c != id->c ||
        od->c != fd->n)
        return MENGINE_ERR_ARG;
    const int H = id->h, W = id->w, C = id->c, KH = fd->h, KW = fd->w, CO = fd->n;
    const int OH = od->h, OW = od->w, SH = p->stride_h, SW = p->stride_w;
    const int PH = p->pad_h, PW = p->pad_w;
    const size_t k = (size_t)KH * KW * C, kwc = (size_t)KW * C;
    /* Output columns whose whole kernel row lies inside the input: [ow_lo, ow_hi). */
    int ow_lo = mengine_k_min((PW + SW - 1) / SW, OW);
    int ow_hi = W - KW + PW >= 0 ? (W - KW + PW) / SW + 1 : 0;
    ow_hi = mengine_k_max(mengine_k_min(ow_hi, OW), ow_lo);
    float bias_nr[NR];
    tile_args t;
    t.a_row = (size_t)W * C;
    t.a_pix = (size_t)SW * C;
    t.b_row = kwc * NR;
    t.out_pix = (size_t)CO;

    for (int co0 = 0; co0 < CO; co0 += NR) {
        pack_panel(filter, k, CO, co0, scratch);
        panel_args(p, bias, CO, co0, bias_nr, &t);
        for (int n = 0; n < id->n; n++)
            for (int oh = 0; oh < OH; oh++) {
                const int ih0 = oh * SH - PH;
                const int kh_lo = mengine_k_max(0, -ih0), kh_hi = mengine_k_min(KH, H - ih0);
                const float *in_n = in + (size_t)n * H * W * C;
                float *out_row = out + (((size_t)n * OH + oh) * OW) * CO + co0;
                t.rows = mengine_k_max(kh_hi - kh_lo, 0);
                int ow = 0;
                while (ow < OW) {
                    if (t.rows > 0 && ow > ow_lo && ow < ow_hi && ow + MR > ow_hi &&
                        ow_hi - ow_lo >= MR)
                        ow = ow_hi - MR; /* the last tile of the run overlaps the one before */
                    const int iw0 = ow * SW - PW;
                    if (ow >= ow_lo && ow + MR <= ow_hi && t.rows > 0) {
                        t.k = kwc;
                        tile_mr(&t, in_n + ((size_t)(ih0 + kh_lo) * W + iw0) * C,
                                scratch + kh_lo * kwc * NR, out_row + (size_t)ow * CO);
                        ow += MR;
                    } else {
                        const int kw_lo = mengine_k_max(0, -iw0),
                                  kw_hi = mengine_k_min(KW, W - iw0);
                        const int rows = t.rows;
                        if (kw_hi <= kw_lo)
                            t.rows = 0;
                        t.k = (size_t)mengine_k_max(kw_hi - kw_lo, 0) * C;
                        if (t.rows)
                            tile_1(&t, in_n + ((size_t)(ih0 + kh_lo) * W + iw0 + kw_lo) * C,
                                   scratch + ((size_t)kh_lo * KW + kw_lo) * C * NR,
                                   out_row + (size_t)ow * CO);
                        else /* no tap inside the input: bias and activation */
                            tile_1(&t, in, scratch, out_row + (size_t)ow * CO);
                        t.rows = rows;
                        ow++;
                    }
                }
            }
    }
    return MENGINE_OK;
}

#if (defined(MK_SIMD_AVX) && defined(__AVX512VL__)) || \
    (defined(MK_SIMD_NEON) && defined(__aarch64__))
#define DOT_NP 2 /* 32 vector registers: 2 pixels x 8 channels of accumulators */
#else
#define DOT_NP 1
#endif

/* NP pixels x 8 output channels: y[p*y_pix + j] = clamp(b8[j] + x[p] . w[j]) for j < nc,
 * w[j] = w + j*C (rows past nc repeat the last one and are not stored). One vector
 * accumulator per pixel and channel over the contiguous Cin, the 8 sums of a pixel
 * reduced together, then the bias and the clamp as vectors. */
static MK_ALWAYS_INLINE void dot_px8(const int NP, int C, int nc, const float *restrict x,
                                     const float *restrict w, const float *b8, mengine_k_vf lo,
                                     mengine_k_vf hi, float *restrict y, size_t y_pix)
{
    const int cv = C / MK_VL * MK_VL;
    const float *wr[8];
    mengine_k_vf acc[DOT_NP][8];
    for (int j = 0; j < 8; j++) {
        wr[j] = w + (size_t)(j < nc ? j : nc - 1) * C;
        for (int p = 0; p < NP; p++)
            acc[p][j] = mengine_k_vset1(0.0f);
    }
    for (int c = 0; c < cv; c += MK_VL) {
        mengine_k_vf a[DOT_NP];
        for (int p = 0; p < NP; p++)
            a[p] = mengine_k_vload(x + (size_t)p * C + c);
        for (int j = 0; j < 8; j++) {
            const mengine_k_vf b = mengine_k_vload(wr[j] + c);
            for (int p = 0; p < NP; p++)
                acc[p][j] = mengine_k_vfma(acc[p][j], a[p], b);
        }
    }
    for (int p = 0; p < NP; p++) {
        float s[8], *yp = y + (size_t)p * y_pix;
        const float *xp = x + (size_t)p * C;
        mengine_k_vsum8(acc[p], s);
        for (int c = cv; c < C; c++)
            for (int j = 0; j < 8; j++)
                s[j] += xp[c] * wr[j][c];
        for (int v = 0; v < 8; v += MK_VL)
            mengine_k_vstore(
                nc == 8 ? yp + v : s + v,
                mengine_k_vclamp(mengine_k_vload(s + v) + mengine_k_vload(b8 + v), lo, hi));
        if (nc < 8)
            memcpy(yp, s, (size_t)nc * sizeof *s);
    }
}

void mengine_k_gemm_nt_f32(size_t npix, int C, int CO, const float *in, const float *w,
                           const float *bias, float lo_s, float hi_s, float *out)
{
    const mengine_k_vf lo = mengine_k_vset1(lo_s), hi = mengine_k_vset1(hi_s);
    for (int co0 = 0; co0 < CO; co0 += 8) {
        const int nc = mengine_k_min(8, CO - co0);
        float b8[8];
        for (int j = 0; j < 8; j++)
            b8[j] = bias && j < nc ? bias[co0 + j] : 0.0f;
        const float *wb = w + (size_t)co0 * C;
        size_t p = 0;
        for (; p + DOT_NP <= npix; p += DOT_NP)
            dot_px8(DOT_NP, C, nc, in + p * C, wb, b8, lo, hi, out + p * CO + co0, (size_t)CO);
        for (; p < npix; p++)
            dot_px8(1, C, nc, in + p * C, wb, b8, lo, hi, out + p * CO + co0, (size_t)CO);
    }
}

mengine_status mengine_k_conv2d_1x1_f32(const mengine_k_conv_params *p, const mengine_k_dims *id,
                                        const float *in, const mengine_k_dims *fd,
                                        const float *filter, const float *bias,
                                        const mengine_k_dims *od, float *out, float *scratch)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || !scratch || fd->c != id->c ||
        od->c != fd->n || fd->h != 1 || fd->w != 1 || p->pad_h != 0 || p->pad_w != 0 ||
        (od->h - 1) * p->stride_h >= id->h || (od->w - 1) * p->stride_w >= id->w)
        return MENGINE_ERR_ARG;
    const int C = id->c, CO = fd->n;
    const size_t npix = (size_t)od->n * od->h * od->w;
    const int dense = p->stride_h == 1 && p->stride_w == 1 && od->h == id->h && od->w == id->w;
    if (!dense) /* strided: the direct kernel, rows of pixels SW * Cin apart */
        return mengine_k_conv2d_f32(p, id, in, fd, filter, bias, od, out, scratch);
    float bias_nr[NR];
    tile_args t;
    if (npix <= GEMV_MAX_PIX) {
        mengine_k_act_bounds(p->act, &t.lo, &t.hi);
        mengine_k_gemm_nt_f32(npix, C, CO, in, filter, bias, t.lo, t.hi, out);
        return MENGINE_OK;
    }
    t.rows = 1;
    t.k = (size_t)C;
    t.a_row = 0;
    t.a_pix = (size_t)C;
    t.b_row = 0;
    t.out_pix = (size_t)CO;
    for (int co0 = 0; co0 < CO; co0 += NR) {
        pack_panel(filter, (size_t)C, CO, co0, scratch);
        panel_args(p, bias, CO, co0, bias_nr, &t);
        size_t pix = 0;
        for (; pix + MR <= npix; pix += MR)
            tile_mr(&t, in + pix * C, scratch, out + pix * CO + co0);
        if (pix < npix && npix >= MR) /* one more tile, overlapping the one before */
            tile_mr(&t, in + (npix - MR) * C, scratch, out + (npix - MR) * CO + co0);
        else
            for (; pix < npix; pix++)
                tile_1(&t, in + pix * C, scratch, out + pix * CO + co0);
    }
    return MENGINE_OK;
}

mengine_status mengine_k_transpose_conv_f32(const mengine_k_conv_params *p,
                                            const mengine_k_dims *id, const float *in,
                                            const mengine_k_dims *fd, const float *filter,
                                            const float *bias, const mengine_k_dims *od, float *out)
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
                        for (int co = 0; co < CO; co++) {
                            const float *wc = wk + (size_t)co * KH * KW * CI;
                            float acc = 0.0f;
                            for (int ci = 0; ci < CI; ci++)
                                acc += x[ci] * wc[ci];
                            y[co] += acc;
                        }
                    }
                }
            }
    mengine_k_act_f32(out, npix * CO, p->act);
    return MENGINE_OK;
}
