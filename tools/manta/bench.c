/* manta bench ops: throughput of every training op, forward and backward, at
 * the layer shapes of the CPU-default supernet, and CLBlast SGEMM at the
 * convolutions' GEMM shapes; and the dispatch of manta bench (train:
 * bench_train.c). Not a test: it only measures and prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cl/blas.h"
#include "cl/slab.h"
#include "cmd.h"
#include "common/opts.h"
#include "core/rng.h"
#include "core/stats.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/correlation.h"
#include "nn/deconv.h"
#include "nn/depthwise.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/pool.h"
#include "nn/upsample.h"

/* One buffer for every operand; views into it by role. */
typedef struct bench_ctx {
    mcl_dev *d;
    mslab mem;
    mview x, y, w, dy, dx, dw, scratch, aux;
    double min_seconds;
    int json;
    int rows;
} bench_ctx;

typedef enum op_kind { OP_CONV, OP_DW, OP_BN, OP_ACT, OP_SCALE, OP_ADD, OP_POOL, OP_LINEAR,
                       OP_XENT, OP_SGEMM, OP_CORR, OP_UPSAMPLE, OP_DECONV } op_kind;

typedef struct bench_op {
    op_kind kind;
    char name[48];
    char shape[64];
    nn_conv2d_shape conv;
    nn_dw_shape dw;
    nn_bn_shape bn;
    nn_linear_shape fc;
    nn_corr_shape corr;
    nn_upsample_shape up;
    nn_deconv2d_shape de;
    size_t nc, hw;      /* rows and row length for act/scale/add/pool */
    int m, n, k;        /* SGEMM */
    bool ta, tb;        /* SGEMM: A stored (K, M), B stored (N, K) */
    double flops_fwd, flops_bwd, bytes_fwd, bytes_bwd;
} bench_op;

static manta_status run_op(bench_ctx *c, const bench_op *o, int backward)
{
    mcl_dev *d = c->d;
    switch (o->kind) {
    case OP_CONV:
        return backward ? nn_conv2d_backward(d, &o->conv, c->x, c->w, c->dy, c->dx, c->dw, c->scratch)
                        : nn_conv2d_forward(d, &o->conv, c->x, c->w, c->y, c->scratch);
    case OP_DW:
        return backward ? nn_dw_backward(d, &o->dw, c->x, c->w, c->dy, c->dx, c->dw, c->scratch)
                        : nn_dw_forward(d, &o->dw, c->x, c->w, c->y);
    case OP_BN: {
        size_t C = (size_t)o->bn.c;
        mview g = c->w, b = mview_at(c->w, C), rm = mview_at(c->aux, 0), rv = mview_at(c->aux, C);
        mview sm = mview_at(c->aux, 2 * C), si = mview_at(c->aux, 3 * C);
        return backward ? nn_bn_backward(d, &o->bn, c->x, g, sm, si, c->dy, c->dx, c->dw,
                                         mview_at(c->dw, C), c->scratch)
                        : nn_bn_forward_train(d, &o->bn, 0.1f, 1e-5f, c->x, g, b, rm, rv, c->y, sm,
                                              si, c->scratch);
    }
    case OP_ACT:
        return backward ? nn_act_backward(d, NN_ACT_HSWISH, c->x, c->dy, c->dx, o->nc * o->hw)
                        : nn_act_forward(d, NN_ACT_HSWISH, c->x, c->y, o->nc * o->hw);
    case OP_SCALE:
        return backward ? nn_scale_backward(d, o->nc, o->hw, c->x, c->aux, c->dy, c->dx, c->dw)
                        : nn_scale_forward(d, o->nc, o->hw, c->x, c->aux, c->y);
    case OP_ADD:
        return backward ? nn_axpy(d, o->nc * o->hw, 1.0f, c->dy, c->dx)
                        : nn_add(d, o->nc * o->hw, c->x, c->dy, c->y);
    case OP_POOL:
        return backward ? nn_avgpool_backward(d, o->nc, o->hw, c->dy, c->dx)
                        : nn_avgpool_forward(d, o->nc, o->hw, c->x, c->y);
    case OP_LINEAR:
        return backward ? nn_linear_backward(d, &o->fc, c->x, c->w, c->dy, c->dx, c->dw,
                                             mview_at(c->dw, (size_t)o->fc.out * o->fc.in))
                        : nn_linear_forward(d, &o->fc, c->x, c->w,
                                            mview_at(c->w, (size_t)o->fc.out * o->fc.in), c->y);
    case OP_XENT:
        return nn_xent_forward_backward(d, (int)o->nc, (int)o->hw, 0.1f, c->x, c->aux, c->y, c->dx,
                                        1.0f / (float)o->nc, 0.0f);
    case OP_CORR: /* fl = x, fr = w */
        return backward ? nn_corr_backward(d, &o->corr, c->x, c->w, c->dy, c->dx, c->dw)
                        : nn_corr_forward(d, &o->corr, c->x, c->w, c->y);
    case OP_UPSAMPLE:
        return backward ? nn_upsample_backward(d, &o->up, 2.0f, c->dy, c->dx)
                        : nn_upsample_forward(d, &o->up, 2.0f, c->x, c->y);
    case OP_DECONV: /* no bias */
        return backward ? nn_deconv2d_backward(d, &o->de, c->x, c->w, c->dy, c->dx, c->dw,
                                               (mview){NULL, 0}, c->scratch)
                        : nn_deconv2d_forward(d, &o->de, c->x, c->w, (mview){NULL, 0}, c->y,
                                              c->scratch);
    case OP_SGEMM: /* y (M, N) = op(w) op(x), row-major */
        return mcl_sgemm(d, o->ta, o->tb, (size_t)o->m, (size_t)o->n, (size_t)o->k, 1.0f, c->w,
                         (size_t)(o->ta ? o->m : o->k), c->x, (size_t)(o->tb ? o->k : o->n), 0.0f,
                         c->y, (size_t)o->n);
    }
    return MANTA_ERR_INTERNAL;
}

void bench_print_launch(FILE *f, const mcl_launch_record *r)
{
    fprintf(f, "{\"kernel\":\"%s\"", r->kernel);
    if (r->dims == 0) {
        fprintf(f, ",\"gemm\":[%zu,%zu,%zu],\"outputs\":%zu}", r->gemm[0], r->gemm[1],
                r->gemm[2], r->outputs);
        return;
    }
    fprintf(f, ",\"global\":[");
    for (unsigned k = 0; k < r->dims; k++)
        fprintf(f, "%s%zu", k ? "," : "", r->global[k]);
    fprintf(f, "],\"local\":[");
    for (unsigned k = 0; k < r->dims; k++)
        fprintf(f, "%s%zu", k ? "," : "", r->local[k]);
    fprintf(f, "],\"items\":%zu,\"outputs\":%zu}", r->items, r->outputs);
}

/* The records of @p log as a JSON array. */
static void print_launches(FILE *f, const mcl_launch_log *log)
{
    fputc('[', f);
    for (size_t i = 0; i < log->count; i++) {
        if (i)
            fputc(',', f);
        bench_print_launch(f, &log->rec[i]);
    }
    fputc(']', f);
}

/* Median seconds per call over 5 timed windows, after a warm-up call. */
static manta_status time_op(bench_ctx *c, const bench_op *o, int backward, double *sec)
{
    manta_status st = run_op(c, o, backward);
    if (st == MANTA_OK)
        st = mcl_finish(c->d);
    if (st != MANTA_OK)
        return st;
    double t0 = cmd_now();
    int reps = 0;
    do { /* calibrate: calls per window */
        st = run_op(c, o, backward);
        reps++;
        if (st == MANTA_OK && (reps & 3) == 0)
            st = mcl_finish(c->d);
    } while (st == MANTA_OK && cmd_now() - t0 < c->min_seconds / 5 && reps < 10000);
    if (st != MANTA_OK || (st = mcl_finish(c->d)) != MANTA_OK)
        return st;
    double w[5];
    for (int i = 0; i < 5; i++) {
        double t = cmd_now();
        for (int r = 0; r < reps && st == MANTA_OK; r++)
            st = run_op(c, o, backward);
        if (st == MANTA_OK)
            st = mcl_finish(c->d);
        w[i] = (cmd_now() - t) / reps;
    }
    *sec = manta_sort_median(w, 5);
    return st;
}

static void report(bench_ctx *c, const bench_op *o, double tf, double tb, int has_bwd,
                   const mcl_launch_log *lf, const mcl_launch_log *lb)
{
    double gf = o->flops_fwd / tf * 1e-9, gb = has_bwd ? o->flops_bwd / tb * 1e-9 : 0;
    double bwf = o->bytes_fwd / tf * 1e-9, bwb = has_bwd ? o->bytes_bwd / tb * 1e-9 : 0;
    if (c->json) {
        printf("%s{\"op\":\"%s\",\"shape\":\"%s\",\"fwd_ms\":%.4f,\"fwd_gflops\":%.3f,"
               "\"fwd_gbs\":%.3f",
               c->rows++ ? ",\n " : "", o->name, o->shape, tf * 1e3, gf, bwf);
        if (has_bwd)
            printf(",\"bwd_ms\":%.4f,\"bwd_gflops\":%.3f,\"bwd_gbs\":%.3f", tb * 1e3, gb, bwb);
        printf(",\"fwd_launches\":");
        print_launches(stdout, lf);
        if (has_bwd) {
            printf(",\"bwd_launches\":");
            print_launches(stdout, lb);
        }
        printf("}");
    } else {
        printf("%-22s %-30s %9.3f %8.2f %7.2f", o->name, o->shape, tf * 1e3, gf, bwf);
        if (has_bwd)
            printf(" %9.3f %8.2f %7.2f\n", tb * 1e3, gb, bwb);
        else
            printf(" %9s %8s %7s\n", "-", "-", "-");
    }
    fflush(stdout);
}

#define MAX_OPS 96
#define MAX_RATIOS 4

/* A ratio printed after the table: op fwd+bwd against the fwd+bwd of the @p count rows
 * from @p first (an SGEMM row: its one GEMM). */
typedef struct bench_ratio {
    int op, first, count;
    const char *what;
} bench_ratio;

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
static void add_conv(bench_op *ops, int *n, int B, const char *name, int ci, int co, int hw,
                     int k, int s)
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
static void add_elem(bench_op *ops, int *n, op_kind kind, const char *name, size_t rows,
                     size_t len, double ff, double fb, double bf, double bb)
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

/* The ops of the CPU-default supernet's largest sub-network (kernel 7, expand
 * 6) at input 32x32: stem, a stride-2 first block and a stride-1 block per
 * unit, the head; plus SGEMM at the convolutions' GEMM shapes. */
static int build_ops(bench_op *ops, int B, bench_ratio *ratio, int *nr)
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

/* Floats the operands of @p o need; raises *scratch to the op scratch it needs on @p d. */
static size_t op_floats(const mcl_dev *d, const bench_op *o, size_t *scratch)
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
    default:
        m = o->nc * o->hw;
    }
    *scratch = s > *scratch ? s : *scratch;
    return m;
}

/* Keeps the ops whose name contains @p text, with the equivalent rows of their ratios, in
 * order, and their ratios (renumbered); returns how many ops remain. */
static int keep_only(bench_op *ops, int n, bench_ratio *ratio, int *nr, const char *text)
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
            ratio[kr++] = (bench_ratio){at[ratio[r].op], at[ratio[r].first], ratio[r].count,
                                        ratio[r].what};
    *nr = kr;
    return kept;
}

/* The ratios after the table (text) or the "ratios" array closing "ops" (JSON). */
static void print_ratios(const bench_ctx *c, const bench_op *ops, const double *ms,
                         const bench_ratio *ratio, int nr)
{
    if (c->json)
        printf("],\"ratios\":[");
    else
        printf("\nfwd+bwd against the equivalent im2col + GEMM rows:\n");
    for (int r = 0; r < nr; r++) {
        const bench_ratio *q = &ratio[r];
        double eq = 0;
        for (int i = q->first; i < q->first + q->count; i++)
            eq += ms[i];
        double x = eq > 0 ? ms[q->op] / eq : 0;
        if (c->json) {
            printf("%s{\"op\":\"%s\",\"op_ms\":%.4f,\"equivalent\":\"%s\",\"rows\":[",
                   r ? ",\n " : "", ops[q->op].name, ms[q->op], q->what);
            for (int i = q->first; i < q->first + q->count; i++)
                printf("%s\"%s\"", i > q->first ? "," : "", ops[i].name);
            printf("],\"equivalent_ms\":%.4f,\"ratio\":%.3f}", eq, x);
        } else {
            printf("%-22s %9.3f ms / %-27s %9.3f ms = %5.2f\n", ops[q->op].name, ms[q->op],
                   q->what, eq, x);
        }
    }
    if (c->json)
        printf("]");
    fflush(stdout);
}

static int bench_ops(int argc, char **argv)
{
    bench_ctx c;
    memset(&c, 0, sizeof c);
    c.min_seconds = 0.5;
    int batch = 64;
    bool json = false;
    const char *device = NULL, *only = NULL;
    const opt_def defs[] = {
        {.name = "batch", .kind = OPT_INT, .dest = &batch, .lo = 1, .hi = 1024, .metavar = "N",
         .help = "batch size (default 64)"},
        {.name = "seconds", .kind = OPT_DOUBLE, .dest = &c.min_seconds, .lo = 0, .hi = 100,
         .metavar = "S", .help = "time spent per op and direction, in (0, 100) (default 0.5)"},
        {.name = "device", .kind = OPT_STRING, .dest = &device, .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "only", .kind = OPT_STRING, .dest = &only, .metavar = "TEXT",
         .help = "time only the ops whose name contains TEXT (e.g. corr, deconv)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta bench ops", "[--batch N] [--seconds S] [--device SPEC] [--only TEXT] [--json]",
        "Times every training op forward and backward at the layer shapes of the\n"
        "CPU-default supernet's largest sub-network (widths 16,24,40,64,96, kernel 7,\n"
        "expand 6, input 32x32), CLBlast SGEMM at the convolutions' GEMM shapes, and\n"
        "the stereo ops (DispNetC, 96x192 crops): correlation, a decoder's transposed\n"
        "convolution and disparity upsampling. Prints the median time per call of 5\n"
        "windows, GFLOP/s and GB/s (nominal FLOP and byte counts; see\n"
        "docs/benchmarks.md); then the correlation's and the transposed convolution's\n"
        "fwd+bwd time over that of their equivalent im2col + GEMM rows (the GEMMs of a\n"
        "1x1 convolution with the correlation's MACs; the adjoint convolution, and its\n"
        "GEMMs alone).\n",
        defs, 0, 0};
    int first;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK)
        return pr == OPT_HELP ? 0 : 2;
    if (!(c.min_seconds > 0 && c.min_seconds < 100)) {
        fprintf(stderr, "manta bench ops: --seconds needs a number in (0, 100), got '%g'\n",
                c.min_seconds);
        return 2;
    }
    c.json = json;
    bench_op *ops = calloc(MAX_OPS + 1, sizeof *ops);
    double *ms = calloc(MAX_OPS, sizeof *ms); /* fwd + bwd per op, milliseconds */
    mcl_launch_record *recs = calloc(2 * BENCH_LOG_CAP, sizeof *recs);
    mcl_launch_log lf = {recs, BENCH_LOG_CAP, 0, 0}, lb = {recs + BENCH_LOG_CAP, BENCH_LOG_CAP, 0, 0};
    bench_ratio ratio[MAX_RATIOS];
    int nr = 0;
    if (!ops || !ms || !recs) {
        free(ops);
        free(ms);
        free(recs);
        return 1;
    }
    int n = build_ops(ops, batch, ratio, &nr);
    if (n > MAX_OPS) { /* a row was added without raising MAX_OPS */
        fprintf(stderr, "manta bench ops: internal error: %d rows, MAX_OPS is %d\n", n, MAX_OPS);
        n = 0;
    }
    if (only && (n = keep_only(ops, n, ratio, &nr, only)) == 0)
        fprintf(stderr, "manta bench ops: --only '%s' matches no op\n", only);
    c.d = n > 0 ? cmd_open_device("bench ops", device) : NULL;
    if (!c.d) {
        free(ops);
        free(ms);
        free(recs);
        return n == 0 ? 2 : 1;
    }
    size_t big = 0, scratch = 1;
    for (int i = 0; i < n; i++) {
        size_t m = op_floats(c.d, &ops[i], &scratch);
        big = m > big ? m : big;
    }
    mlayout l = {0};
    size_t ox = mlayout_add(&l, big), oy = mlayout_add(&l, big), ow = mlayout_add(&l, big);
    size_t ody = mlayout_add(&l, big), odx = mlayout_add(&l, big), odw = mlayout_add(&l, big);
    size_t os = mlayout_add(&l, scratch), oa = mlayout_add(&l, big);
    int rc = 1;
    manta_status st = mslab_create(c.d, &c.mem, l.total, "benchmark operands");
    if (st == MANTA_OK) {
        /* small random values everywhere (labels: valid class 0..9 after flooring) */
        float *h = malloc(l.total * sizeof *h);
        if (!h) {
            st = MANTA_ERR_NO_MEMORY;
        } else {
            manta_rng r;
            manta_rng_seed(&r, 1, 1);
            for (size_t i = 0; i < l.total; i++)
                h[i] = manta_rng_uniform(&r);
            for (size_t i = 0; i < big; i++)
                h[oa + i] = (float)(i % 10);
            st = mcl_write(c.d, mslab_view(&c.mem, 0), h, l.total);
            free(h);
        }
    }
    c.x = mslab_view(&c.mem, ox), c.y = mslab_view(&c.mem, oy), c.w = mslab_view(&c.mem, ow);
    c.dy = mslab_view(&c.mem, ody), c.dx = mslab_view(&c.mem, odx), c.dw = mslab_view(&c.mem, odw);
    c.scratch = mslab_view(&c.mem, os), c.aux = mslab_view(&c.mem, oa);
    const mcl_device_info *di = mcl_info(c.d);
    if (st == MANTA_OK) {
        if (c.json) {
            printf("{");
            cmd_json_provenance(stdout, c.d);
            printf(",\"kernels\":\"%s\",\"batch\":%d,\"ops\":[",
                   mcl_variant_name(mcl_get_variant(c.d)), batch);
        } else {
            printf("device: %s (%s kernels), batch %d\n%-22s %-30s %9s %8s %7s %9s %8s %7s\n",
                   di->name, mcl_variant_name(mcl_get_variant(c.d)), batch, "op", "shape",
                   "fwd ms", "GFLOP/s", "GB/s", "bwd ms", "GFLOP/s", "GB/s");
        }
        for (int i = 0; i < n && st == MANTA_OK; i++) {
            int has_bwd = ops[i].kind != OP_SGEMM && ops[i].kind != OP_XENT;
            double tf = 0, tb = 0;
            st = time_op(&c, &ops[i], 0, &tf);
            if (st == MANTA_OK && has_bwd)
                st = time_op(&c, &ops[i], 1, &tb);
            /* the launches of one more call of each direction */
            lf.count = lf.dropped = lb.count = lb.dropped = 0;
            mcl_set_launch_log(c.d, &lf);
            if (st == MANTA_OK)
                st = run_op(&c, &ops[i], 0);
            mcl_set_launch_log(c.d, &lb);
            if (st == MANTA_OK && has_bwd)
                st = run_op(&c, &ops[i], 1);
            mcl_set_launch_log(c.d, NULL);
            if (st == MANTA_OK)
                st = mcl_finish(c.d);
            if (st == MANTA_OK)
                report(&c, &ops[i], tf, tb, has_bwd, &lf, &lb);
            ms[i] = (tf + tb) * 1e3;
        }
        if (st == MANTA_OK)
            print_ratios(&c, ops, ms, ratio, nr);
        if (c.json && st == MANTA_OK)
            printf("}\n");
    }
    if (st != MANTA_OK)
        cmd_error("bench ops", st, mcl_err(c.d));
    else
        rc = 0;
    mslab_destroy(c.d, &c.mem);
    mcl_close(c.d);
    free(ops);
    free(ms);
    free(recs);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    const opt_def defs[] = {{.name = NULL}};
    const opt_cmd cmd = {
        "manta bench", "ops|train|allreduce [OPTIONS]",
        "  ops        throughput of every training op, forward and backward, and of SGEMM\n"
        "  train      training images/s of one sub-network\n"
        "  allreduce  the ring-allreduce between local ranks\n\n"
        "'manta bench ops --help' (train, allreduce) describes a benchmark's options.\n",
        defs, 1, 1};
    int first;
    opt_result r = opt_parse(&cmd, argc < 2 ? argc : 2, argv, &first); /* the benchmark's name */
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!strcmp(argv[1], "ops"))
        return bench_ops(argc - 1, argv + 1);
    if (!strcmp(argv[1], "train"))
        return bench_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "allreduce"))
        return cmd_bench_allreduce(argc, argv);
    fprintf(stderr, "manta bench: unknown benchmark '%s' (available: ops, train, allreduce)\n", argv[1]);
    return 2;
}
