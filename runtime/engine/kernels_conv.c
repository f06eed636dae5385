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
#define NR8 8 /* output channels per panel of a convolution of at most 8 */
#if defined(MK_SIMD_AVX) || defined(MK_SIMD_NEON)
#define MR8 12 /* 12 (AVX: 8 lanes) or 24 (NEON: 4 lanes) accumulators */
#else
#define MR8 4
#endif
#define GEMV_MAX_PIX 16 /* 1x1 convolutions over at most this many pixels: dot products */

size_t mengine_k_conv2d_get_buffer_size_f32(const mengine_k_dims *f)
{
    if (!mengine_k_dims_ok(f))
        return 0;
    return (size_t)NR * (size_t)f->h * (size_t)f->w * (size_t)f->c * sizeof(float);
}

#if defined(MK_SIMD_AVX)
/* dst[c * ld + r] = src[r * k + c] for r, c < 8: one 8 x 8 transpose. */
static void transpose8(const float *src, size_t k, float *dst, size_t ld)
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
        _mm256_storeu_ps(dst + (size_t)i * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
        _mm256_storeu_ps(dst + (size_t)(i + 4) * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
    }
}
#endif

/* panel[i][j] = filter[co0 + j][i] for i < k (k = KH*KW*Cin), j < nrx (NR or NR8), zero for
 * channels past Cout; on AVX in 8 x 8 transposes. */
static MK_NOCLONE void pack_panel(const float *restrict filter, size_t k, int cout, int co0,
                                  int nrx, float *restrict panel)
{
    int nr = mengine_k_min(nrx, cout - co0), j0 = 0;
    if (nr < nrx)
        memset(panel, 0, k * (size_t)nrx * sizeof *panel);
#if defined(MK_SIMD_AVX)
    for (; j0 + 8 <= nr; j0 += 8) {
        const float *src = filter + (size_t)(co0 + j0) * k;
        size_t i = 0;
        for (; i + 8 <= k; i += 8)
            transpose8(src + i, k, panel + i * nrx + j0, (size_t)nrx);
        for (; i < k; i++)
            for (int j = 0; j < 8; j++)
                panel[i * nrx + j0 + j] = src[(size_t)j * k + i];
    }
#endif
    for (int j = j0; j < nr; j++) {
        const float *restrict src = filter + (size_t)(co0 + j) * k;
        for (size_t i = 0; i < k; i++)
            panel[i * nrx + j] = src[i];
    }
}

/* Where a tile reads and writes. */
typedef struct tile_args {
    int rows;          /* kernel rows summed (KH, or the rows inside the input) */
    size_t k;          /* steps per row (valid KW taps x Cin) */
    size_t a_row;      /* floats from one input row to the next */
    size_t a_pix;      /* floats from one pixel of the tile to the next */
    size_t b_row;      /* floats from one panel row to the next */
    size_t out_pix;    /* floats from one output pixel to the next (Cout, or stride x Cout) */
    int nr;            /* valid output channels of the panel */
    const float *bias; /* NR values */
    float lo, hi;      /* activation clamp */
} tile_args;

/* out[r][j] = clamp(bias[j] + sum_{kh, i} a[r*a_pix + kh*a_row + i] * b[kh*b_row + i*NRX + j]),
 * r < M, j < nr. M is MR, MR8 or 1 and NRX is NR or NR8 after inlining. */
static MK_ALWAYS_INLINE void tile(const int M, const int NRX, const tile_args *t, const float *a,
                                  const float *restrict b, float *out)
{
#if defined(MK_TILE_AVX512)
    if (NRX == NR) {
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
        return;
    }
#endif
    const int NVX = NRX / MK_VL > 0 ? NRX / MK_VL : 1;
    mengine_k_vf acc[MR8 > MR ? MR8 : MR][NV];
    for (int v = 0; v < NVX; v++) {
        const mengine_k_vf bv = mengine_k_vload(t->bias + v * MK_VL);
        for (int r = 0; r < M; r++)
            acc[r][v] = bv;
    }
    for (int kh = 0; kh < t->rows; kh++) {
        const float *restrict ak = a + kh * t->a_row;
        const float *restrict bk = b + kh * t->b_row;
        for (size_t i = 0; i < t->k; i++) {
            mengine_k_vf bv[NV];
            for (int v = 0; v < NVX; v++)
                bv[v] = mengine_k_vload(bk + i * NRX + v * MK_VL);
            for (int r = 0; r < M; r++) {
                const mengine_k_vf x = mengine_k_vset1(ak[r * t->a_pix + i]);
                for (int v = 0; v < NVX; v++)
                    acc[r][v] = mengine_k_vfma(acc[r][v], x, bv[v]);
            }
        }
    }
    const mengine_k_vf lo = mengine_k_vset1(t->lo), hi = mengine_k_vset1(t->hi);
    for (int r = 0; r < M; r++) {
        float *y = out + r * t->out_pix;
        if (t->nr == NRX) {
            for (int v = 0; v < NVX; v++)
                mengine_k_vstore(y + v * MK_VL, mengine_k_vclamp(acc[r][v], lo, hi));
        } else {
            float tmp[NR];
            for (int v = 0; v < NVX; v++)
                mengine_k_vstore(tmp + v * MK_VL, mengine_k_vclamp(acc[r][v], lo, hi));
            memcpy(y, tmp, (size_t)t->nr * sizeof *y);
        }
    }
}

static void tile_mr(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(MR, NR, t, a, b, out);
}

static void tile_1(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(1, NR, t, a, b, out);
}

static void tile_4(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(4, NR, t, a, b, out);
}

static void tile8_4(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(4, NR8, t, a, b, out);
}

static void tile8_mr(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(MR8, NR8, t, a, b, out);
}

static void tile8_1(const tile_args *t, const float *a, const float *b, float *out)
{
    tile(1, NR8, t, a, b, out);
}

/* A panel width and its micro-kernels: NR channels x MR pixels, or NR8 x MR8 for
 * convolutions of at most NR8 output channels (half the panel would be zeros). */
typedef struct panel_kind {
    int nrx, mr;
    void (*tile_mr)(const tile_args *, const float *, const float *, float *);
    void (*tile_4)(const tile_args *, const float *, const float *, float *); /* 4 pixels */
    void (*tile_1)(const tile_args *, const float *, const float *, float *);
} panel_kind;

static const panel_kind PANEL16 = {NR, MR, tile_mr, tile_4, tile_1};
static const panel_kind PANEL8 = {NR8, MR8, tile8_mr, tile8_4, tile8_1};

static const panel_kind *panel_for(int cout) { return cout <= NR8 ? &PANEL8 : &PANEL16; }

static int conv_args_ok(const mengine_k_conv_params *p, const mengine_k_dims *id, const float *in,
                        const mengine_k_dims *fd, const float *filter, const mengine_k_dims *od,
                        const float *out)
{
    return p && in && filter && out && mengine_k_dims_ok(id) && mengine_k_dims_ok(fd) &&
           mengine_k_dims_ok(od) && p->stride_h > 0 && p->stride_w > 0 && p->pad_h >= 0 &&
           p->pad_w >= 0 && mengine_k_act_ok(p->act) && od->n == id->n;
}

/* Panel @p co0 of @p nrx channels: bias (zeros past Cout, or everywhere without bias) and clamp
 * bounds. */
static void panel_args(const mengine_k_conv_params *p, const float *bias, int CO, int co0, int nrx,
                       float *bias_nr, tile_args *t)
{
    t->nr = mengine_k_min(nrx, CO - co0);
    for (int j = 0; j < NR; j++)
        bias_nr[j] = bias && j < t->nr ? bias[co0 + j] : 0.0f;
    t->bias = bias_nr;
    mengine_k_act_bounds(p->act, &t->lo, &t->hi);
}

/* A direct convolution over one packed panel: output pixel (n, oh, ow) reads input rows
 * oh*SH - PH + kh, kh < KH, and columns ow*SW - PW + kw, kw < KW (taps outside the input are
 * zeros; PH, PW may be negative), and is written at out + n*out_n + oh*out_row + ow*out_pix. */
typedef struct conv_geom {
    int N, H, W, C, KH, KW, SH, SW, PH, PW, OH, OW;
    size_t out_n, out_row, out_pix;
} conv_geom;

/* floor(a / b) for b > 0 */
static int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

static void conv_panel(const conv_geom *g, const panel_kind *pk, const float *in,
                       const float *panel, float *out, tile_args *t)
{
    const int H = g->H, W = g->W, C = g->C, KH = g->KH, KW = g->KW, SW = g->SW, MRX = pk->mr;
    const size_t kwc = (size_t)KW * C;
    /* Output columns whose whole kernel row lies inside the input: [ow_lo, ow_hi). */
    const int ow_lo = mengine_k_min(g->PW > 0 ? (g->PW + SW - 1) / SW : 0, g->OW);
    int ow_hi = W - KW + g->PW >= 0 ? floor_div(W - KW + g->PW, SW) + 1 : 0;
    ow_hi = mengine_k_max(mengine_k_min(ow_hi, g->OW), ow_lo);
    t->a_row = (size_t)W * C;
    t->a_pix = (size_t)SW * C;
    t->b_row = kwc * (size_t)pk->nrx;
    t->out_pix = g->out_pix;
    for (int n = 0; n < g->N; n++)
        for (int oh = 0; oh < g->OH; oh++) {
            const int ih0 = oh * g->SH - g->PH;
            const int kh_lo = mengine_k_max(0, -ih0), kh_hi = mengine_k_min(KH, H - ih0);
            const float *in_n = in + (size_t)n * H * W * C;
            float *out_row = out + (size_t)n * g->out_n + (size_t)oh * g->out_row;
            t->rows = mengine_k_max(kh_hi - kh_lo, 0);
            int ow = 0;
            while (ow < g->OW) {
                if (t->rows > 0 && ow > ow_lo && ow < ow_hi && ow + MRX > ow_hi &&
                    ow_hi - ow_lo >= MRX)
                    ow = ow_hi - MRX; /* the last tile of the run overlaps the one before */
                const int iw0 = ow * SW - g->PW;
                if (ow >= ow_lo && ow + MRX <= ow_hi && t->rows > 0) {
                    t->k = kwc;
                    pk->tile_mr(t, in_n + ((size_t)(ih0 + kh_lo) * W + iw0) * C,
                                panel + kh_lo * t->b_row, out_row + (size_t)ow * g->out_pix);
                    ow += MRX;
                } else if (MRX > 4 && ow >= ow_lo && ow + 4 <= ow_hi && t->rows > 0) {
                    /* a run shorter than a tile: 4 pixels at a time, not one */
                    t->k = kwc;
                    pk->tile_4(t, in_n + ((size_t)(ih0 + kh_lo) * W + iw0) * C,
                               panel + kh_lo * t->b_row, out_row + (size_t)ow * g->out_pix);
                    ow += 4;
                } else {
                    const int kw_lo = mengine_k_max(0, -iw0), kw_hi = mengine_k_min(KW, W - iw0);
                    const int rows = t->rows;
                    if (kw_hi <= kw_lo)
                        t->rows = 0;
                    t->k = (size_t)mengine_k_max(kw_hi - kw_lo, 0) * C;
                    if (t->rows)
                        pk->tile_1(t, in_n + ((size_t)(ih0 + kh_lo) * W + iw0 + kw_lo) * C,
                                   panel + ((size_t)kh_lo * KW + kw_lo) * C * pk->nrx,
                                   out_row + (size_t)ow * g->out_pix);
                    else /* no tap inside the input: bias and activation */
                        pk->tile_1(t, in, panel, out_row + (size_t)ow * g->out_pix);
                    t->rows = rows;
                    ow++;
                }
            }
        }
}

/* Cout == 1: out = clamp(bias + the dot products of the kernel rows (KW * Cin floats) with
 * the weights), no packing: vector lanes over each kernel row, the rows summed in them, the
 * lanes reduced (mengine_k_vsum8(), 8 interior pixels at once), then the row tails one value
 * at a time. A border pixel takes the same steps with zeros for the taps outside the input,
 * so its sum is the one an explicitly padded input gives, bit for bit. */
static MK_NOCLONE void cout1_border(const conv_geom *g, const float *in_n, const float *filter,
                                    int ih0, int iw0, float bias, float lo, float hi, float *y)
{
    const int W = g->W, C = g->C;
    const size_t kwc = (size_t)g->KW * C, kv = kwc / MK_VL * MK_VL;
    const int kh_lo = mengine_k_max(0, -ih0), kh_hi = mengine_k_min(g->KH, g->H - ih0);
    mengine_k_vf acc[8];
    float s[8], lane[MK_VL];
    for (int p = 0; p < 8; p++)
        acc[p] = mengine_k_vset1(0.0f);
    for (int kh = kh_lo; kh < kh_hi; kh++) {
        const float *row = in_n + (size_t)(ih0 + kh) * W * C, *w = filter + (size_t)kh * kwc;
        int iw = iw0, c = 0; /* the tap of the next lane */
        for (size_t i = 0; i < kv; i += MK_VL) {
            for (int l = 0; l < MK_VL; l++) {
                lane[l] = iw >= 0 && iw < W ? row[(size_t)iw * C + c] : 0.0f;
                if (++c == C)
                    c = 0, iw++;
            }
            acc[0] = mengine_k_vfma(acc[0], mengine_k_vload(lane), mengine_k_vload(w + i));
        }
    }
    mengine_k_vsum8(acc, s);
    for (int kh = kh_lo; kh < kh_hi && kv < kwc; kh++) {
        int iw = iw0 + (int)(kv / C), c = (int)(kv % C);
        for (size_t i = kv; i < kwc; i++) {
            if (iw >= 0 && iw < W)
                s[0] += in_n[((size_t)(ih0 + kh) * W + iw) * C + c] * filter[(size_t)kh * kwc + i];
            if (++c == C)
                c = 0, iw++;
        }
    }
    const float v = s[0] + bias;
    *y = v < lo ? lo : (v > hi ? hi : v);
}

/* NP (8 or 1) interior pixels, a_pix floats apart, rows kh_lo .. kh_hi - 1 from @p a. */
static MK_ALWAYS_INLINE void cout1_px(const int NP, const conv_geom *g, const float *a,
                                      const float *filter, int kh_lo, int kh_hi, float bias,
                                      float lo, float hi, float *y)
{
    const size_t kwc = (size_t)g->KW * g->C, kv = kwc / MK_VL * MK_VL;
    const size_t a_row = (size_t)g->W * g->C, a_pix = (size_t)g->SW * g->C;
    mengine_k_vf acc[8];
    float s[8];
    for (int p = 0; p < 8; p++)
        acc[p] = mengine_k_vset1(0.0f);
    const float *ak = a;
    for (int kh = kh_lo; kh < kh_hi; kh++, ak += a_row) {
        const float *w = filter + (size_t)kh * kwc;
        for (size_t i = 0; i < kv; i += MK_VL) {
            const mengine_k_vf wv = mengine_k_vload(w + i);
            for (int p = 0; p < NP; p++)
                acc[p] = mengine_k_vfma(acc[p], mengine_k_vload(ak + p * a_pix + i), wv);
        }
    }
    mengine_k_vsum8(acc, s);
    ak = a;
    for (int kh = kh_lo; kh < kh_hi && kv < kwc; kh++, ak += a_row)
        for (int p = 0; p < NP; p++)
            for (size_t i = kv; i < kwc; i++)
                s[p] += ak[p * a_pix + i] * filter[(size_t)kh * kwc + i];
    for (int p = 0; p < NP; p++) {
        const float v = s[p] + bias;
        y[(size_t)p * g->out_pix] = v < lo ? lo : (v > hi ? hi : v);
    }
}

static MK_NOCLONE void cout1_px1(const conv_geom *g, const float *a, const float *filter, int kh_lo,
                                 int kh_hi, float bias, float lo, float hi, float *y)
{
    cout1_px(1, g, a, filter, kh_lo, kh_hi, bias, lo, hi, y);
}

static void conv_cout1(const conv_geom *g, const float *in, const float *filter, float bias,
                       float lo, float hi, float *out)
{
    const int H = g->H, W = g->W, C = g->C, KH = g->KH, KW = g->KW, SW = g->SW;
    const int ow_lo = mengine_k_min(g->PW > 0 ? (g->PW + SW - 1) / SW : 0, g->OW);
    int ow_hi = W - KW + g->PW >= 0 ? floor_div(W - KW + g->PW, SW) + 1 : 0;
    ow_hi = mengine_k_max(mengine_k_min(ow_hi, g->OW), ow_lo);
    for (int n = 0; n < g->N; n++)
        for (int oh = 0; oh < g->OH; oh++) {
            const int ih0 = oh * g->SH - g->PH;
            const int kh_lo = mengine_k_max(0, -ih0), kh_hi = mengine_k_min(KH, H - ih0);
            const float *in_n = in + (size_t)n * H * W * C;
            float *y = out + (size_t)n * g->out_n + (size_t)oh * g->out_row;
            int ow = 0;
            while (ow < g->OW) {
                if (ow > ow_lo && ow < ow_hi && ow + 8 > ow_hi && ow_hi - ow_lo >= 8)
                    ow = ow_hi - 8; /* the last group of the run overlaps the one before */
                const int iw0 = ow * SW - g->PW;
                const float *a = in_n + ((size_t)(ih0 + kh_lo) * W + iw0) * C;
                if (ow >= ow_lo && ow + 8 <= ow_hi) {
                    cout1_px(8, g, a, filter, kh_lo, kh_hi, bias, lo, hi,
                             y + (size_t)ow * g->out_pix);
                    ow += 8;
                } else {
                    if (ow >= ow_lo && ow < ow_hi)
                        cout1_px1(g, a, filter, kh_lo, kh_hi, bias, lo, hi,
                                  y + (size_t)ow * g->out_pix);
                    else
                        cout1_border(g, in_n, filter, ih0, iw0, bias, lo, hi,
                                     y + (size_t)ow * g->out_pix);
                    ow++;
                }
            }
        }
}

mengine_status mengine_k_conv2d_f32(const mengine_k_conv_params *p, const mengine_k_dims *id,
                                    const float *in, const mengine_k_dims *fd, const float *filter,
                                    const float *bias, const mengine_k_dims *od, float *out,
                                    float *scratch)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || !scratch || fd->c != id->c ||
        od->c != fd->n)
        return MENGINE_ERR_ARG;
    const int CO = fd->n;
    const conv_geom g = {id->n,
                         id->h,
                         id->w,
                         id->c,
                         fd->h,
                         fd->w,
                         p->stride_h,
                         p->stride_w,
                         p->pad_h,
                         p->pad_w,
                         od->h,
                         od->w,
                         (size_t)od->h * od->w * CO,
                         (size_t)od->w * CO,
                         (size_t)CO};
    const size_t k = (size_t)fd->h * fd->w * id->c;
    float bias_nr[NR];
    tile_args t;
    if (CO == 1) {
        panel_args(p, bias, CO, 0, 1, bias_nr, &t);
        conv_cout1(&g, in, filter, bias_nr[0], t.lo, t.hi, out);
        return MENGINE_OK;
    }
    const panel_kind *pk = panel_for(CO);
    for (int co0 = 0; co0 < CO; co0 += pk->nrx) {
        pack_panel(filter, k, CO, co0, pk->nrx, scratch);
        panel_args(p, bias, CO, co0, pk->nrx, bias_nr, &t);
        conv_panel(&g, pk, in, scratch, out + co0, &t);
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
    int c0 = 0;
#if defined(MK_TILE_AVX512)
    /* 16 channels of Cin per step in 512-bit accumulators, folded into the 8-lane ones */
    if (C >= 16) {
        __m512 acc5[DOT_NP][8];
        for (int j = 0; j < 8; j++)
            for (int p = 0; p < NP; p++)
                acc5[p][j] = _mm512_setzero_ps();
        for (; c0 + 16 <= C; c0 += 16) {
            __m512 a5[DOT_NP];
            for (int p = 0; p < NP; p++)
                a5[p] = _mm512_loadu_ps(x + (size_t)p * C + c0);
            for (int j = 0; j < 8; j++) {
                const __m512 b5 = _mm512_loadu_ps(wr[j] + c0);
                for (int p = 0; p < NP; p++)
                    acc5[p][j] = _mm512_fmadd_ps(a5[p], b5, acc5[p][j]);
            }
        }
        for (int j = 0; j < 8; j++)
            for (int p = 0; p < NP; p++)
                acc[p][j] = _mm256_add_ps(
                    _mm512_castps512_ps256(acc5[p][j]),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc5[p][j]), 1)));
    }
#endif
    for (int c = c0; c < cv; c += MK_VL) {
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
    const panel_kind *pk = panel_for(CO);
    const size_t mr = (size_t)pk->mr;
    t.rows = 1;
    t.k = (size_t)C;
    t.a_row = 0;
    t.a_pix = (size_t)C;
    t.b_row = 0;
    t.out_pix = (size_t)CO;
    for (int co0 = 0; co0 < CO; co0 += pk->nrx) {
        pack_panel(filter, (size_t)C, CO, co0, pk->nrx, scratch);
        panel_args(p, bias, CO, co0, pk->nrx, bias_nr, &t);
        size_t pix = 0;
        for (; pix + mr <= npix; pix += mr)
            pk->tile_mr(&t, in + pix * C, scratch, out + pix * CO + co0);
        if (pix < npix && npix >= mr) /* one more tile, overlapping the one before */
            pk->tile_mr(&t, in + (npix - mr) * C, scratch, out + (npix - mr) * CO + co0);
        else
            for (; pix < npix; pix++)
                pk->tile_1(&t, in + pix * C, scratch, out + pix * CO + co0);
    }
    return MENGINE_OK;
}

/* Taps of a transpose convolution along one axis for the outputs o = ph + i * s (i >= 0):
 * kernel positions k0, k0 + s, ... < K (n of them), read at input i + base - m for the m-th
 * (exact: o + pad - k is a multiple of s for these taps and only these). */
static void tconv_taps(int ph, int s, int K, int pad, int *k0, int *n, int *base)
{
    *k0 = (ph + pad) % s;
    *n = *k0 < K ? (K - *k0 + s - 1) / s : 0;
    *base = (ph + pad - *k0) / s;
}

size_t mengine_k_transpose_conv_get_buffer_size_f32(const mengine_k_dims *f, int stride_h,
                                                    int stride_w)
{
    if (!mengine_k_dims_ok(f) || stride_h < 1 || stride_w < 1)
        return 0;
    const size_t th = (size_t)(f->h + stride_h - 1) / (size_t)stride_h,
                 tw = (size_t)(f->w + stride_w - 1) / (size_t)stride_w;
    return (size_t)NR * th * tw * (size_t)f->c * sizeof(float);
}

/* The taps of phase (kh0, kw0) packed as a convolution panel of nth x ntw taps: rows and
 * columns in increasing input order (decreasing kernel position), channels co0.. */
static MK_NOCLONE void pack_tconv_panel(const float *restrict filter, const mengine_k_dims *fd,
                                        int sh, int sw, int kh0, int nth, int kw0, int ntw, int co0,
                                        int nrx, float *restrict panel)
{
    const int CI = fd->c, nr = mengine_k_min(nrx, fd->n - co0);
    if (nr < nrx)
        memset(panel, 0, (size_t)nth * ntw * CI * nrx * sizeof *panel);
    for (int j = 0; j < nr; j++)
        for (int r = 0; r < nth; r++)
            for (int c = 0; c < ntw; c++) {
                const int kh = kh0 + (nth - 1 - r) * sh, kw = kw0 + (ntw - 1 - c) * sw;
                const float *restrict src =
                    filter + (((size_t)(co0 + j) * fd->h + kh) * fd->w + kw) * CI;
                float *restrict dst = panel + ((size_t)r * ntw + c) * CI * nrx + j;
                for (int ci = 0; ci < CI; ci++)
                    dst[(size_t)ci * nrx] = src[ci];
            }
}

/* Sub-pixel form: the outputs of one phase (oh mod stride_h, ow mod stride_w) are a stride-1
 * convolution of the input with the phase's taps (a sub-kernel of at most
 * ceil(KH / stride_h) x ceil(KW / stride_w)), written every stride_h rows and stride_w
 * columns; each phase runs on the convolution's panels and micro-kernels. */
mengine_status mengine_k_transpose_conv_f32(const mengine_k_conv_params *p,
                                            const mengine_k_dims *id, const float *in,
                                            const mengine_k_dims *fd, const float *filter,
                                            const float *bias, const mengine_k_dims *od, float *out,
                                            float *scratch)
{
    if (!conv_args_ok(p, id, in, fd, filter, od, out) || !scratch || fd->c != id->c ||
        od->c != fd->n)
        return MENGINE_ERR_ARG;
    const int CO = fd->n, SH = p->stride_h, SW = p->stride_w, OH = od->h, OW = od->w;
    const panel_kind *pk = panel_for(CO);
    float bias_nr[NR];
    tile_args t;
    for (int co0 = 0; co0 < CO; co0 += pk->nrx) {
        panel_args(p, bias, CO, co0, pk->nrx, bias_nr, &t);
        for (int py = 0; py < SH && py < OH; py++)
            for (int px = 0; px < SW && px < OW; px++) {
                int kh0, nth, bh, kw0, ntw, bw;
                tconv_taps(py, SH, fd->h, p->pad_h, &kh0, &nth, &bh);
                tconv_taps(px, SW, fd->w, p->pad_w, &kw0, &ntw, &bw);
                pack_tconv_panel(filter, fd, SH, SW, kh0, nth, kw0, ntw, co0, pk->nrx, scratch);
                const conv_geom g = {id->n,
                                     id->h,
                                     id->w,
                                     id->c,
                                     nth,
                                     ntw,
                                     1,
                                     1,
                                     nth - 1 - bh,
                                     ntw - 1 - bw,
                                     (OH - py + SH - 1) / SH,
                                     (OW - px + SW - 1) / SW,
                                     (size_t)OH * OW * CO,
                                     (size_t)SH * OW * CO,
                                     (size_t)SW * CO};
                conv_panel(&g, pk, in, scratch, out + ((size_t)py * OW + px) * CO + co0, &t);
            }
    }
    return MENGINE_OK;
}
