/**
 * @file disp_loss.h
 * @brief Masked disparity loss of one scale (L1 or smooth L1), its gradient and the
 *        end-point error, reduced on the device.
 *
 * pred, gt, dpred: (N, 1, H, W) float32, the disparity predicted at one scale and the
 * ground truth resampled to that scale, in the same units. A pixel is valid when its ground
 * truth is finite and > 0 and, when params.max_disp > 0, at most max_disp: a data loader
 * marks occluded or unknown pixels with 0, NaN or infinity (no mask buffer). With e =
 * pred - gt and M the valid pixels:
 *
 *   loss  = weight * (1/|M|) * sum_M l(e),  l(e) = |e| (L1), or (smooth L1, beta 1)
 *           0.5 e^2 for |e| < 1, |e| - 0.5 otherwise;
 *   EPE   = (1/|M|) * sum_M |e| (not weighted);
 *   dpred = beta * dpred + d loss / d pred  (weight * l'(e) / |M| on M, 0 elsewhere;
 *           l'(0) = 0 for L1, as PyTorch's sign).
 *
 * With no valid pixel, loss, EPE and the gradient are 0. The result view holds 3 floats:
 * [0] loss, [1] EPE, [2] |M| (a float: exact below 2^24 pixels). For a multi-scale loss call
 * this once per scale with that scale's weight, each into its own result (or its own slot
 * of one buffer) and its own dpred; beta = 1 adds the gradient onto what dpred holds (a
 * gradient already propagated into that prediction), beta = 0 overwrites without reading.
 * A NaN prediction at a valid pixel makes the loss NaN (it is not masked).
 *
 * Reduction in two stages, no host loop and no atomics: groups of work-items write partial
 * sums (loss, |e|, count) into @p scratch, one work-group adds them into the result; a
 * third pass writes the gradient, reading |M| from the result on the device. CPU variant: a
 * few work-items, each over a contiguous range in float8; GPU variant: work-groups of up to
 * 128 strided over the pixels, wg_sum() within a group.
 *
 * A bad shape (n, h, w below 1, sizes beyond the kernels' 32-bit indices), an unknown kind,
 * a non-finite or negative weight or max_disp, or a non-finite beta returns
 * MANTA_ERR_INVALID_ARG naming the op and the field; a view the call needs without a buffer
 * is refused the same way. result and dpred must not overlap pred, gt or scratch.
 */
#ifndef MANTA_NN_DISP_LOSS_H
#define MANTA_NN_DISP_LOSS_H

#include "cl/cl.h"

typedef enum nn_disp_loss_kind {
    NN_DISP_LOSS_L1 = 0,       /**< |e| */
    NN_DISP_LOSS_SMOOTH_L1 = 1 /**< Huber with beta 1: 0.5 e^2 below 1, |e| - 0.5 above */
} nn_disp_loss_kind;

typedef struct nn_disp_loss_shape {
    int n, h, w; /**< pred and gt (N, 1, H, W), each >= 1 */
} nn_disp_loss_shape;

typedef struct nn_disp_loss_params {
    nn_disp_loss_kind kind;
    float weight;   /**< this scale's weight, finite, >= 0 */
    float max_disp; /**< > 0: ground truth above it is invalid too; 0: no upper bound */
    float beta;     /**< dpred = beta * dpred + gradient; 0 writes without reading dpred */
} nn_disp_loss_params;

/** Floats in the result view: loss, EPE, valid count. */
#define NN_DISP_LOSS_RESULT 3

/**
 * Floats of device scratch nn_disp_loss() needs for @p s on @p d (3 per partial sum: at most
 * 3 * 512); it grows with the pixel count, so the size for the largest scale covers the
 * smaller ones. Nothing is kept in it between calls. 0 for an invalid shape.
 */
size_t nn_disp_loss_scratch_floats(const mcl_dev *d, const nn_disp_loss_shape *s);

/**
 * result (3) = [loss, EPE, valid count] of pred against gt; dpred updated as above (skipped,
 * forward only, when dpred.mem is NULL: evaluation). @p scratch holds
 * nn_disp_loss_scratch_floats() floats.
 */
manta_status nn_disp_loss(mcl_dev *d, const nn_disp_loss_shape *s, const nn_disp_loss_params *p,
                          mview pred, mview gt, mview result, mview dpred, mview scratch);

#endif
