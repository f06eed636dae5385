/* Fused patterns: operator sequences the engine runs as one kernel. Depends
 * on ops_impl.h and plan_impl.h. Not part of the public API.
 *
 * The correlation of the stereo export (export/xgraph.h,
 * xgraph_add_correlation()), operators first .. last in this order, nothing
 * else between them:
 *   PAD      R (N, H, WR, C) -> T, zeros along W only: P before, any after;
 *   per displacement k = 0 .. D-1:
 *     SLICE  T -> S_k (N, H, W, C), begin (0, 0, b_k, 0), every stride 1
 *            (or STRIDED_SLICE with strides 1 and no shrunk axis);
 *     MUL    L, S_k -> M_k (either order), L (N, H, W, C) the same tensor for
 *            every k and written before the pattern, no fused activation;
 *     MEAN   M_k over axis 3 -> E_k (N, H, W, 1), keep_dims;
 *   CONCATENATION E_0 .. E_{D-1} along axis 3 -> out (N, H, W, D), no activation;
 * with b_k = b_0 + k * step, and T, S_k, M_k, E_k read by no other operator
 * and not model inputs or outputs. Then
 *   out[n][y][x][k] = mean_c L[n][y][x][c] * R[n][y][x + b_0 - P + k*step][c]
 * (0 outside R): mengine_k_correlation_f32() with offset b_0 - P, run at the
 * CONCATENATION; the other operators of the pattern are elided and their
 * outputs get no memory. An int8 pattern (INT8 tensors) is the same sequence
 * with every MUL of one quantization and every MEAN of one (what the int8
 * exporter writes, export/quant.h); it runs as mengine_kq_correlation_s8()
 * (::mengine_op_correlation_int8), the bytes the operators would write. */
#ifndef MANTA_ENGINE_FUSE_H
#define MANTA_ENGINE_FUSE_H

#include <stdint.h>

#include "engine/plan_impl.h"

/* Whether operators @p first .. *last of the verified model @p m form the
 * correlation pattern (@p first being a PAD); on a match, *last receives the
 * CONCATENATION's index and @p node the fused kernel's parameters
 * (p.corr, or p.corr8 for an int8 pattern). @p work is the planner's area after mengine_plan_begin(), read for the
 * tensors' readers. Runs the pattern's operators' prepare into a temporary
 * node; writes no message. */
int mengine_fuse_correlation(const mengine_model *m, const void *work, uint32_t first,
                             uint32_t *last, mnode *node);

/* PAD folded into the convolution that follows (as XNNPACK does): operator
 * @p first, prepared into @p pad, is a PAD of zeros along H and W only
 * (float32, rank 4) whose output T is read by operator first + 1 alone, a
 * CONV_2D with a kernel larger than 1x1 or a DEPTHWISE_CONV_2D taking T as
 * its input (input 0) and nothing else; T is not a model output, and the
 * model's offline plan, if any, gives T no offset (a plan written without
 * the fold keeps it unfolded). On a match *src receives the PAD's input X:
 * the convolution then reads X with the PAD's rows and columns added to its
 * own padding (zeros either way, so the outputs are the same bit for bit; for
 * an int8 PAD, whose padding is its zero point, the int8 convolution's padding
 * is the same value),
 * the PAD runs as ::mengine_op_pad_folded, T gets no memory and X stays alive
 * until the convolution. Writes no message. */
int mengine_fuse_pad(const mengine_model *m, const void *work, uint32_t first, const mnode *pad,
                     int32_t *src);

/* The rows and columns before of prepared PAD node @p pad (float32 or int8: an int8 PAD pads
 * with its zero point, which an int8 convolution's padding stands for as well). */
void mengine_fuse_pad_before(const mnode *pad, int32_t *h, int32_t *w);

/* Add @p h rows and @p w columns of padding to prepared convolution node @p conv (CONV_2D or
 * DEPTHWISE_CONV_2D, @p builtin; float32 or int8). */
void mengine_fuse_pad_into(mnode *conv, int32_t builtin, int32_t h, int32_t w);

/* A folded PAD (mengine_fuse_pad()): eval does nothing; not in any operator table. */
extern const struct mengine_op mengine_op_pad_folded;

#endif
