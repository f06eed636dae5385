/* manta bench ops: the table of ops it measures (bench_oplist.c), shared with the running,
 * timing and printing of bench.c. Internal to tools/manta/. */
#ifndef MANTA_TOOLS_BENCH_OPS_H
#define MANTA_TOOLS_BENCH_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include "cl/cl.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/correlation.h"
#include "nn/deconv.h"
#include "nn/depthwise.h"
#include "nn/linear.h"
#include "nn/upsample.h"

/** Rows of the table (the spare last one of an array of MAX_OPS + 1 catches an overflow). */
#define MAX_OPS 96
/** Ratios printed after the table. */
#define MAX_RATIOS 4

typedef enum op_kind {
    OP_CONV,
    OP_DW,
    OP_BN,
    OP_ACT,
    OP_SCALE,
    OP_ADD,
    OP_POOL,
    OP_LINEAR,
    OP_XENT,
    OP_SGEMM,
    OP_CORR,
    OP_UPSAMPLE,
    OP_DECONV
} op_kind;

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
    size_t nc, hw; /* rows and row length for act/scale/add/pool */
    int m, n, k;   /* SGEMM */
    bool ta, tb;   /* SGEMM: A stored (K, M), B stored (N, K) */
    double flops_fwd, flops_bwd, bytes_fwd, bytes_bwd;
} bench_op;

/* A ratio printed after the table: op fwd+bwd against the fwd+bwd of the @p count rows
 * from @p first (an SGEMM row: its one GEMM). */
typedef struct bench_ratio {
    int op, first, count;
    const char *what;
} bench_ratio;

/**
 * The ops of the CPU-default supernet's largest sub-network (kernel 7, expand
 * 6) at input 32x32 and batch @p B: stem, a stride-2 first block and a
 * stride-1 block per unit, the head; SGEMM at the convolutions' GEMM shapes;
 * two stereo ops. Writes the rows to @p ops (room for MAX_OPS + 1) and the
 * ratios to @p ratio (room for MAX_RATIOS, their count to *@p nr).
 * @return the rows added; more than MAX_OPS means the table is too small
 *         (the rows past it were written over the spare last one).
 */
int bench_ops_build(bench_op *ops, int B, bench_ratio *ratio, int *nr);

/**
 * Floats the operands of @p o need (the largest of them: every view of the
 * benchmark's buffer is that long); raises *@p scratch to the op scratch it
 * needs on @p d.
 */
size_t bench_op_floats(const mcl_dev *d, const bench_op *o, size_t *scratch);

/**
 * Keep the ops (@p n of them) whose name contains @p text, with the
 * equivalent rows of their ratios, in order, and their ratios (renumbered;
 * *@p nr updated).
 * @return how many ops remain.
 */
int bench_ops_keep(bench_op *ops, int n, bench_ratio *ratio, int *nr, const char *text);

#endif
