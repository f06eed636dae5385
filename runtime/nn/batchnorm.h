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
 * The statistics are reduced by one work-group per channel, in two passes
 * over values shifted by the channel's first value, so inputs far from zero
 * keep their precision. Every call returns MANTA_ERR_INVALID_ARG, naming the
 * field, for a NULL shape or a size below 1, and eps must be positive.
 */
#ifndef MANTA_NN_BATCHNORM_H
#define MANTA_NN_BATCHNORM_H

#include "cl/cl.h"

typedef struct nn_bn_shape {
    int n, c, hw; /**< (N, C, H*W) */
} nn_bn_shape;

/** Per-channel batch mean and biased variance of x: mean, var (C). */
manta_status nn_bn_stats(mcl_dev *d, const nn_bn_shape *s, mview x, mview mean, mview var);

/**
 * Training forward. Writes y, updates running_mean/running_var in place,
 * and saves mean and 1/sqrt(var+eps) per channel in save_mean/save_invstd (C)
 * for the backward pass. y may alias x. Needs n * hw > 1 (the unbiased
 * variance) and momentum in [0, 1]; MANTA_ERR_INVALID_ARG otherwise.
 * x, y (N, C, HW); gamma, beta, running_*, save_* (C).
 */
manta_status nn_bn_forward_train(mcl_dev *d, const nn_bn_shape *s, float momentum, float eps,
                                 mview x, mview gamma, mview beta, mview running_mean,
                                 mview running_var, mview y, mview save_mean, mview save_invstd);

/** Inference forward with the running statistics. y may alias x.
 *  x, y (N, C, HW); gamma, beta, running_* (C). */
manta_status nn_bn_forward_eval(mcl_dev *d, const nn_bn_shape *s, float eps, mview x, mview gamma,
                                mview beta, mview running_mean, mview running_var, mview y);

/**
 * Backward of the training forward. x is the forward input; save_* come from
 * nn_bn_forward_train(). dx overwritten (may alias dy); dgamma, dbeta +=.
 * x, dy, dx (N, C, HW); gamma, save_*, dgamma, dbeta (C).
 */
manta_status nn_bn_backward(mcl_dev *d, const nn_bn_shape *s, mview x, mview gamma,
                            mview save_mean, mview save_invstd, mview dy, mview dx, mview dgamma,
                            mview dbeta);

#endif
