/* manta bench ops: the table of ops it measures (bench_ops.h): the CPU-default supernet's
 * largest sub-network, SGEMM at its GEMM shapes, the stereo ops; the operands' sizes. */
#include <stdio.h>
#include <string.h>

#include "bench_ops.h"
#include "nn/activation.h"
#include "nn/pool.h"

/* The next row of @p ops (MAX_OPS + 1 of them): past MAX_OPS, the spare last one, and the
 * count goes on, so that the caller sees the table was too small. */
static bench_op *new_op(bench_op *ops, int *n, op_kind kind, const char *name)
{
    bench_op *o = &ops[*n < MAX_OPS ? *n : MAX_OPS];
    (*n)++;
    memset(o, 0, sizeof *o);
    o->kind = kind;
    snprintf(o->name, sizeof o->name, "%s", name);
    return o;
}

/* CLBlast SGEMM alone, C (m, n) = op(A) op(B) with op(A) (m, k), op(B) (k, n); A stored
 * (k, m) when @p ta, B stored (n, k) when @p tb. */
static void add_sgemm(bench_op *ops, int *n, const char *name, int m, int gn, int k, bool ta,
                      bool tb)
{
    bench_op *g = new_op(ops, n, OP_SGEMM, name);
    g->m = m, g->n = gn, g->k = k, g->ta = ta, g->tb = tb;
    snprintf(g->shape, sizeof g->shape, "m%d n%d k%d%s%s", m, gn, k, ta ? " A^T" : "",
             tb ? " B^T" : "");
    g->flops_fwd = 2.0 * m * gn * k;
    g->bytes_fwd = 4.0 * ((double)m * k + (double)k * gn + (double)m * gn);
}

/* The three GEMMs of a convolution's training step over P = batch x output pixels, K =
 * Cin x KH x KW: forward Y (Cout, P) = W (Cout, K) X (K, P); dX (K, P) = W^T dY;
 * dW (Cout, K) = dY X^T. Rows named "sgemm (@p what fwd|dX|dW)". */
static void add_conv_gemms(bench_op *ops, int *n, const char *what, int cout, int p, int k)
{
    char nm[48];
    snprintf(nm, sizeof nm, "sgemm (%s fwd)", what);
    add_sgemm(ops, n, nm, cout, p, k, false, false);
    snprintf(nm, sizeof nm, "sgemm (%s dX)", what);
    add_sgemm(ops, n, nm, k, p, cout, true, false);
    snprintf(nm, sizeof nm, "sgemm (%s dW)", what);
    add_sgemm(ops, n, nm, cout, k, p, false, true);
}

/* A dense convolution and CLBlast SGEMM at its GEMM shape. */
static void add_conv(bench_op *ops, int *n, int B, const char *name, int ci, int co, int hw, int k,
                     int s)
{
    bench_op *o = new_op(ops, n, OP_CONV, name);
    o->conv = (nn_conv2d_shape){B, ci, hw, hw, co, k, k, s, s, k / 2, k / 2, 0};
    snprintf(o->shape, sizeof o->shape, "%dx%d %d->%d k%d s%d", hw, hw, ci, co, k, s);
    double macs = nn_conv2d_macs(&o->conv);
    int ho = nn_conv2d_out_h(&o->conv);
    o->flops_fwd = 2 * macs, o->flops_bwd = 4 * macs;
    o->bytes_fwd = 4.0 * B * ((double)ci * hw * hw + (double)co * ho * ho);
    o->bytes_bwd = 2 * o->bytes_fwd;
    char gname[48];
    snprintf(gname, sizeof gname, "sgemm (%.30s)", name);
    add_sgemm(ops, n, gname, co, B * ho * ho, ci * k * k, false, false);
}

static void add_dw(bench_op *ops, int *n, int B, const char *name, int c, int hw, int k, int s)
{
    bench_op *o = new_op(ops, n, OP_DW, name);
    o->dw = (nn_dw_shape){B, c, hw, hw, k, s, k / 2};
    snprintf(o->shape, sizeof o->shape, "%dx%d c%d", hw, hw, c);
    int ho = nn_dw_out_h(&o->dw);
    o->flops_fwd = 2 * nn_dw_macs(&o->dw), o->flops_bwd = 4 * nn_dw_macs(&o->dw);
    o->bytes_fwd = 4.0 * B * c * ((double)hw * hw + (double)ho * ho);
    o->bytes_bwd = 2 * o->bytes_fwd;
}

/* A row-wise or element-wise op over rows x len floats, with nominal FLOP and
 * float-traffic counts per element. */
static void add_elem(bench_op *ops, int *n, op_kind kind, const char *name, size_t rows, size_t len,
                     double ff, double fb, double bf, double bb)
{
    bench_op *o = new_op(ops, n, kind, name);
    o->nc = rows, o->hw = len;
    snprintf(o->shape, sizeof o->shape, "%zu x %zu", rows, len);
    double e = (double)rows * len;
    o->flops_fwd = ff * e, o->flops_bwd = fb * e;
    o->bytes_fwd = bf * 4 * e, o->bytes_bwd = bb * 4 * e;
}

/* Two ops of the stereo task, at DispNetC's settings on 96x192 crops: the correlation of
 * 64-channel features at 1/4 resolution (24x48, max_disp 40: 41 displacements) and the x2
 * upsampling of a 48x96 disparity map (scaled by 2 into pixels of the finer map); and a
 * decoder step. Each of the correlation and the transposed convolution is followed by its
 * equivalent im2col + GEMM cost, and a ratio of fwd+bwd times is added to @p ratio:
 * - the correlation has the MACs of a 1x1 convolution with C inputs and D = max_disp + 1
 *   outputs over the same batch x H x W pixels (out[d] = sum_c L[c] R[c] shifted by d: the
 *   shifted R in the weights' place): its three GEMMs, forward M = D, N = batch*H*W, K = C,
 *   and the dX and dW GEMMs (standing for dL and dR);
 * - the transposed convolution is the adjoint of a convolution with the same MACs, run by
 *   nn_conv2d (im2col + GEMM for k4 s2 on either variant), and its three GEMMs alone. */
static void add_stereo(bench_op *ops, int *n, int B, bench_ratio *ratio, int *nr)
{
    bench_op *o = new_op(ops, n, OP_CORR, "stereo correlation");
    o->corr = (nn_corr_shape){B, 64, 24, 48, 40, 1};
    snprintf(o->shape, sizeof o->shape, "24x48 c64 d0..40");
    double macs = nn_corr_macs(&o->corr), in = (double)B * 64 * 24 * 48;
    int nd = nn_corr_out_c(&o->corr);
    double out = (double)B * nd * 24 * 48;
    o->flops_fwd = 2 * macs, o->flops_bwd = 4 * macs;
    o->bytes_fwd = 4.0 * (2 * in + out), o->bytes_bwd = 4.0 * (4 * in + out);
    ratio[(*nr)++] = (bench_ratio){*n - 1, *n, 3, "1x1-conv GEMMs"};
    add_conv_gemms(ops, n, "corr as 1x1", nd, B * 24 * 48, 64);
    /* a decoder step: k4 s2 p1 transposed convolution 64 -> 32 channels, 16x32 -> 32x64,
     * and the convolution it is the adjoint of (im2col + GEMM: the same MACs) */
    int de = *n;
    o = new_op(ops, n, OP_DECONV, "decoder deconv k4 s2");
    o->de = (nn_deconv2d_shape){B, 64, 16, 32, 32, 4, 4, 2, 2, 1, 1, 0};
    snprintf(o->shape, sizeof o->shape, "16x32 64->32 k4 s2");
    double dmacs = (double)B * 64 * 16 * 32 * 32 * 16;
    o->flops_fwd = 2 * dmacs, o->flops_bwd = 4 * dmacs;
    o->bytes_fwd = 4.0 * B * (64 + 4 * 32) * 16 * 32, o->bytes_bwd = 2 * o->bytes_fwd;
    ratio[(*nr)++] = (bench_ratio){de, *n, 1, "adjoint conv (im2col+GEMM)"};
    o = new_op(ops, n, OP_CONV, "its adjoint conv k4 s2");
    o->conv = (nn_conv2d_shape){B, 32, 32, 64, 64, 4, 4, 2, 2, 1, 1, 0};
    snprintf(o->shape, sizeof o->shape, "32x64 32->64 k4 s2");
    o->flops_fwd = 2 * dmacs, o->flops_bwd = 4 * dmacs;
    o->bytes_fwd = ops[de].bytes_fwd, o->bytes_bwd = ops[de].bytes_bwd;
    ratio[(*nr)++] = (bench_ratio){de, *n, 3, "its GEMMs alone"};
    add_conv_gemms(ops, n, "adjoint conv", 64, B * 16 * 32, 32 * 4 * 4);
    o = new_op(ops, n, OP_UPSAMPLE, "disparity upsample x2");
    o->up = (nn_upsample_shape){B, 1, 48, 96, 2};
    snprintf(o->shape, sizeof o->shape, "48x96 -> 96x192");
    double small = (double)B * 48 * 96;
    o->flops_fwd = o->flops_bwd = 8 * 4 * small; /* 4 taps, a multiply-add each, per output */
    o->bytes_fwd = o->bytes_bwd = 4.0 * 5 * small;
}

int bench_ops_build(bench_op *ops, int B, bench_ratio *ratio, int *nr)
{
    static const int widths[5] = {16, 24, 40, 64, 96};
    int n = 0, res = 32, cin = 16;
    char nm[32];
    add_conv(ops, &n, B, "stem conv", 1, 16, 32, 3, 1);
    for (int u = 1; u <= 5; u++) {
        int w = widths[u - 1], mid1 = cin * 6, mid = w * 6, out = res / 2;
        size_t rows = (size_t)B * mid, len = (size_t)out * out;
        snprintf(nm, sizeof nm, "u%d expand 1x1 (first)", u);
        add_conv(ops, &n, B, nm, cin, mid1, res, 1, 1);
        snprintf(nm, sizeof nm, "u%d dw k7 s2", u);
        add_dw(ops, &n, B, nm, mid1, res, 7, 2);
        snprintf(nm, sizeof nm, "u%d expand 1x1", u);
        add_conv(ops, &n, B, nm, w, mid, out, 1, 1);
        snprintf(nm, sizeof nm, "u%d dw k7 s1", u);
        add_dw(ops, &n, B, nm, mid, out, 7, 1);
        snprintf(nm, sizeof nm, "u%d batch norm", u);
        bench_op *o = new_op(ops, &n, OP_BN, nm);
        o->bn = (nn_bn_shape){B, mid, out * out};
        snprintf(o->shape, sizeof o->shape, "%dx%d c%d", out, out, mid);
        double e = (double)rows * len;
        o->flops_fwd = 7 * e, o->flops_bwd = 9 * e, o->bytes_fwd = 12 * e, o->bytes_bwd = 20 * e;
        snprintf(nm, sizeof nm, "u%d h-swish", u);
        add_elem(ops, &n, OP_ACT, nm, rows, len, 4, 5, 2, 3);
        snprintf(nm, sizeof nm, "u%d SE pool", u);
        add_elem(ops, &n, OP_POOL, nm, rows, len, 1, 1, 1, 1);
        snprintf(nm, sizeof nm, "u%d SE scale", u);
        add_elem(ops, &n, OP_SCALE, nm, rows, len, 1, 3, 2, 4);
        snprintf(nm, sizeof nm, "u%d project 1x1", u);
        add_conv(ops, &n, B, nm, mid, w, out, 1, 1);
        snprintf(nm, sizeof nm, "u%d residual add", u);
        add_elem(ops, &n, OP_ADD, nm, (size_t)B * w, len, 1, 1, 3, 3);
        res = out;
        cin = w;
    }
    add_conv(ops, &n, B, "head 1x1", 96, 384, 1, 1, 1);
    add_elem(ops, &n, OP_POOL, "global pool", (size_t)B * 384, 1, 1, 1, 1, 1);
    bench_op *o = new_op(ops, &n, OP_LINEAR, "classifier");
    o->fc = (nn_linear_shape){B, 384, 10, 0};
    snprintf(o->shape, sizeof o->shape, "%d x 384 -> 10", B);
    o->flops_fwd = 2.0 * B * 384 * 10, o->flops_bwd = 4.0 * B * 384 * 10;
    o->bytes_fwd = 4.0 * (B * 384 + 3840 + B * 10), o->bytes_bwd = 2 * o->bytes_fwd;
    add_elem(ops, &n, OP_XENT, "softmax xent (fwd+bwd)", (size_t)B, 10, 8, 0, 2, 0);
    add_stereo(ops, &n, B, ratio, nr);
    return n;
}

/* Floats of the largest operand of a convolution-like op: input (n, cin, hw), output
 * (n, cout, ohw), weights cin * cout * kk. */
static size_t conv_operands(int n, int cin, int hw, int cout, int ohw, int kk)
{
    size_t in = (size_t)n * cin * hw, out = (size_t)n * cout * ohw, w = (size_t)cin * cout * kk;
    size_t m = in > out ? in : out;
    return m > w ? m : w;
}

size_t bench_op_floats(const mcl_dev *d, const bench_op *o, size_t *scratch)
{
    size_t m = 0, s = 0;
    switch (o->kind) {
    case OP_CONV: {
        const nn_conv2d_shape *c = &o->conv;
        s = nn_conv2d_scratch_floats(d, c);
        m = conv_operands(c->n, c->cin, c->h * c->w, c->cout,
                          nn_conv2d_out_h(c) * nn_conv2d_out_w(c), c->kh * c->kw);
        break;
    }
    case OP_DW:
        m = (size_t)o->dw.n * o->dw.c * o->dw.h * o->dw.w;
        s = nn_dw_scratch_floats(d, &o->dw);
        break;
    case OP_BN:
        m = (size_t)o->bn.n * o->bn.c * o->bn.hw;
        s = nn_bn_scratch_floats(d, &o->bn);
        break;
    case OP_LINEAR:
        m = (size_t)o->fc.n * o->fc.in + (size_t)o->fc.in * o->fc.out + o->fc.out;
        break;
    case OP_CORR: {
        size_t in = (size_t)o->corr.n * o->corr.c * o->corr.h * o->corr.w;
        size_t out = (size_t)o->corr.n * nn_corr_out_c(&o->corr) * o->corr.h * o->corr.w;
        m = in > out ? in : out;
        break;
    }
    case OP_DECONV: {
        const nn_deconv2d_shape *c = &o->de;
        s = nn_deconv2d_scratch_floats(d, c);
        m = conv_operands(c->n, c->cin, c->h * c->w, c->cout,
                          nn_deconv2d_out_h(c) * nn_deconv2d_out_w(c), c->kh * c->kw);
        break;
    }
    case OP_UPSAMPLE:
        m = (size_t)o->up.n * o->up.c * nn_upsample_out_h(&o->up) * nn_upsample_out_w(&o->up);
        break;
    case OP_SGEMM:
        m = (size_t)o->k * o->n;
        m = m > (size_t)o->m * o->n ? m : (size_t)o->m * o->n;
        m = m > (size_t)o->m * o->k ? m : (size_t)o->m * o->k;
        break;
    default: m = o->nc * o->hw;
    }
    *scratch = s > *scratch ? s : *scratch;
    return m;
}

int bench_ops_keep(bench_op *ops, int n, bench_ratio *ratio, int *nr, const char *text)
{
    int at[MAX_OPS], kept = 0, kr = 0; /* new index of op i, or -1 */
    for (int i = 0; i < n; i++)
        at[i] = strstr(ops[i].name, text) ? 0 : -1;
    for (int r = 0; r < *nr; r++)
        for (int i = 0; at[ratio[r].op] == 0 && i < ratio[r].count; i++)
            at[ratio[r].first + i] = 0;
    for (int i = 0; i < n; i++)
        if (at[i] == 0) {
            at[i] = kept;
            ops[kept++] = ops[i];
        }
    for (int r = 0; r < *nr; r++) /* the rows of a kept ratio stay adjacent */
        if (at[ratio[r].op] >= 0)
            ratio[kr++] =
                (bench_ratio){at[ratio[r].op], at[ratio[r].first], ratio[r].count, ratio[r].what};
    *nr = kr;
    return kept;
}
