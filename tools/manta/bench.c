/* manta bench ops: throughput of every training op, forward and backward, at
 * the layer shapes of the CPU-default supernet, and CLBlast SGEMM at the
 * convolutions' GEMM shapes; and the dispatch of manta bench (train:
 * bench_train.c). Not a test: it only measures and prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_ops.h"
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

static manta_status run_op(bench_ctx *c, const bench_op *o, int backward)
{
    mcl_dev *d = c->d;
    switch (o->kind) {
    case OP_CONV:
        return backward
                   ? nn_conv2d_backward(d, &o->conv, c->x, c->w, c->dy, c->dx, c->dw, c->scratch)
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
        return backward
                   ? nn_deconv2d_backward(d, &o->de, c->x, c->w, c->dy, c->dx, c->dw,
                                          (mview){NULL, 0}, c->scratch)
                   : nn_deconv2d_forward(d, &o->de, c->x, c->w, (mview){NULL, 0}, c->y, c->scratch);
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
        fprintf(f, ",\"gemm\":[%zu,%zu,%zu],\"outputs\":%zu}", r->gemm[0], r->gemm[1], r->gemm[2],
                r->outputs);
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
            printf("%-22s %9.3f ms / %-27s %9.3f ms = %5.2f\n", ops[q->op].name, ms[q->op], q->what,
                   eq, x);
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
        {.name = "batch",
         .kind = OPT_INT,
         .dest = &batch,
         .lo = 1,
         .hi = 1024,
         .metavar = "N",
         .help = "batch size (default 64)"},
        {.name = "seconds",
         .kind = OPT_DOUBLE,
         .dest = &c.min_seconds,
         .lo = 0,
         .hi = 100,
         .metavar = "S",
         .help = "time spent per op and direction, in (0, 100) (default 0.5)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "only",
         .kind = OPT_STRING,
         .dest = &only,
         .metavar = "TEXT",
         .help = "time only the ops whose name contains TEXT (e.g. corr, deconv)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta bench ops",
        "[--batch N] [--seconds S] [--device SPEC] [--only TEXT] [--json]",
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
        defs,
        0,
        0};
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
    mcl_launch_log lf = {recs, BENCH_LOG_CAP, 0, 0},
                   lb = {recs + BENCH_LOG_CAP, BENCH_LOG_CAP, 0, 0};
    bench_ratio ratio[MAX_RATIOS];
    int nr = 0;
    if (!ops || !ms || !recs) {
        free(ops);
        free(ms);
        free(recs);
        return 1;
    }
    int n = bench_ops_build(ops, batch, ratio, &nr);
    if (n > MAX_OPS) { /* a row was added without raising MAX_OPS */
        fprintf(stderr, "manta bench ops: internal error: %d rows, MAX_OPS is %d\n", n, MAX_OPS);
        n = 0;
    }
    if (only && (n = bench_ops_keep(ops, n, ratio, &nr, only)) == 0)
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
        size_t m = bench_op_floats(c.d, &ops[i], &scratch);
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
                   di->name, mcl_variant_name(mcl_get_variant(c.d)), batch, "op", "shape", "fwd ms",
                   "GFLOP/s", "GB/s", "bwd ms", "GFLOP/s", "GB/s");
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
        "manta bench",
        "ops|train|allreduce [OPTIONS]",
        "  ops        throughput of every training op, forward and backward, and of SGEMM\n"
        "  train      training images/s (stereo: pairs/s) of one sub-network\n"
        "  memory     a stereo training step's planned device memory per batch\n"
        "  allreduce  the ring-allreduce between local ranks\n\n"
        "'manta bench ops --help' (train, allreduce) describes a benchmark's options.\n",
        defs,
        1,
        1};
    int first;
    opt_result r = opt_parse(&cmd, argc < 2 ? argc : 2, argv, &first); /* the benchmark's name */
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!strcmp(argv[1], "ops"))
        return bench_ops(argc - 1, argv + 1);
    if (!strcmp(argv[1], "train"))
        return bench_train(argc - 1, argv + 1);
    if (!strcmp(argv[1], "memory"))
        return bench_memory(argc - 1, argv + 1);
    if (!strcmp(argv[1], "allreduce"))
        return cmd_bench_allreduce(argc, argv);
    fprintf(stderr,
            "manta bench: unknown benchmark '%s' (available: ops, train, memory, allreduce)\n",
            argv[1]);
    return 2;
}
