/**
 * @file batchnorm.h
 * @brief Batch normalisation over (N, H, W) per channel, on the device.
 *
 * Layout: x, y (N, C, HW). Parameters gamma, beta and the running statistics
 * are (C) views; a layer using the first C channels of wider stored tensors
 * (elastic width) simply passes the same views with a smaller C.
 * Training: y = gamma * (x - mean) / sqrt(var + eps) + beta with the batch's
 * mean and biased variance; running_mean/var move by `momentum` towards the
 * batch mean and the *unbiased* batch variance (PyTorch semantics, OFA's
 * momentum 0.1, eps 1e-5). Eval uses the running statistics.
 * Backward overwrites dx and accumulates into dgamma and dbeta.
 *
 * Two variants (mcl_get_variant()), equal to float rounding. CPU: the
 * statistics are reduced by one work-group per channel, in two passes over
 * values shifted by the channel's first value. GPU: each channel's N*HW values
 * are cut into ranges reduced by one work-group each (two passes around the
 * range's mean), then combined per channel (Chan et al.), and the output is
 * written by one work-item per 8 values; the backward likewise. Either way
 * inputs far from zero keep their precision. The GPU variant needs device
 * scratch (nn_bn_scratch_floats()); the CPU variant none.
 * Every call returns MANTA_ERR_INVALID_ARG, naming the field, for a NULL
 * shape or a size below 1, a scratch view without a buffer where one is
 * needed, and eps must be positive.
 */
#ifndef MANTA_NN_BATCHNORM_H
#define MANTA_NN_BATCHNORM_H

#include "cl/cl.h"

typedef struct nn_bn_shape {
    int n, c, hw; /**< (N, C, H*W) */
} nn_bn_shape;

/**
 * Floats of device scratch that nn_bn_stats(), nn_bn_forward_train(),
 * nn_bn_backward() and nn_bn_backward_reduce() need for @p s on @p d (0 for
 * the CPU variant, 2 * C * (ranges + 1) for the GPU one, ranges growing with
 * N*HW: the size for the largest shape covers any smaller one). The same
 * scratch serves every call and every layer: nothing is kept in it between
 * calls. 0 for an invalid shape.
 */
size_t nn_bn_scratch_floats(const mcl_dev *d, const nn_bn_shape *s);

/** Per-channel batch mean and biased variance of x: mean, var (C). */
manta_status nn_bn_stats(mcl_dev *d, const nn_bn_shape *s, mview x, mview mean, mview var,
                         mview scratch);

/**
 * Training forward. Writes y, updates running_mean/running_var in place,
 * and saves mean and 1/sqrt(var+eps) per channel in save_mean/save_invstd (C)
 * for the backward pass. y may alias x. Needs n * hw > 1 (the unbiased
 * variance) and momentum in [0, 1]; MANTA_ERR_INVALID_ARG otherwise.
 * x, y (N, C, HW); gamma, beta, running_*, save_* (C).
 */
manta_status nn_bn_forward_train(mcl_dev *d, const nn_bn_shape *s, float momentum, float eps,
                                 mview x, mview gamma, mview beta, mview running_mean,
                                 mview running_var, mview y, mview save_mean, mview save_invstd,
                                 mview scratch);

/** Inference forward with the running statistics. y may alias x.
 *  x, y (N, C, HW); gamma, beta, running_* (C). */
manta_status nn_bn_forward_eval(mcl_dev *d, const nn_bn_shape *s, float eps, mview x, mview gamma,
                                mview beta, mview running_mean, mview running_var, mview y);

/**
 * Backward of the training forward. x is the forward input; save_* come from
 * nn_bn_forward_train(). dx overwritten (may alias dy); dgamma, dbeta +=.
 * x, dy, dx (N, C, HW); gamma, save_*, dgamma, dbeta (C).
 */
manta_status nn_bn_backward(mcl_dev *d, const nn_bn_shape *s, mview x, mview gamma, mview save_mean,
                            mview save_invstd, mview dy, mview dx, mview dgamma, mview dbeta,
                            mview scratch);

/* ---- synchronised batch norm ---------------------------------------------------------
 * Batch statistics over several replicas (devices, processes), each holding a shard of the
 * batch. Forward: nn_bn_stats() on every replica; the caller combines the per-replica mean
 * and biased variance into those of all M values and writes them to `stats`;
 * nn_bn_sync_finish() saves them (and moves the running statistics); nn_bn_forward_apply()
 * normalises. Backward: nn_bn_backward_reduce() gives this replica's sums and accumulates
 * dgamma/dbeta; the caller sums `sums` over the replicas; nn_bn_backward_apply() computes dx.
 * The result equals nn_bn_forward_train()/nn_bn_backward() on the whole batch up to
 * rounding, and dgamma/dbeta summed over the replicas equal the whole batch's. */

/**
 * Save combined statistics for the backward pass and (momentum > 0) move the running
 * statistics: stats (2, C) = combined mean then biased variance over @p m_total values per
 * channel (m_total > 1); running_* (C) move by @p momentum towards the mean and the unbiased
 * variance; save_mean = mean, save_invstd = 1 / sqrt(var + eps) (C).
 */
manta_status nn_bn_sync_finish(mcl_dev *d, int c, long m_total, float momentum, float eps,
                               mview stats, mview running_mean, mview running_var, mview save_mean,
                               mview save_invstd);

/** y = gamma * (x - save_mean) * save_invstd + beta. x, y (N, C, HW), y may alias x;
 *  gamma, beta, save_* (C). */
manta_status nn_bn_forward_apply(mcl_dev *d, const nn_bn_shape *s, mview x, mview gamma, mview beta,
                                 mview save_mean, mview save_invstd, mview y);

/**
 * This replica's share of the backward: sums (2, C) = per channel sum of dy, then sum of
 * dy * xhat, xhat = (x - save_mean) * save_invstd; dbeta += sum dy, dgamma += sum dy * xhat.
 * x, dy (N, C, HW); save_*, dgamma, dbeta (C).
 */
manta_status nn_bn_backward_reduce(mcl_dev *d, const nn_bn_shape *s, mview x, mview save_mean,
                                   mview save_invstd, mview dy, mview sums, mview dgamma,
                                   mview dbeta, mview scratch);

/**
 * dx = gamma * invstd * (dy - S_dy / M - xhat * S_dyxhat / M) with sums (2, C) holding the
 * totals S over all replicas and @p m_total = M values per channel. dx may alias dy.
 * x, dy, dx (N, C, HW); gamma, save_* (C).
 */
manta_status nn_bn_backward_apply(mcl_dev *d, const nn_bn_shape *s, long m_total, mview x,
                                  mview gamma, mview save_mean, mview save_invstd, mview dy,
                                  mview dx, mview sums);

#endif
