/**
 * @file loss.h
 * @brief Softmax cross-entropy losses, fused forward and backward.
 *
 * logits (N, K). Labels are class indices stored as floats (exact below 2^24).
 * Each call writes the per-sample loss (N) and the gradient of
 * `scale * sum_n loss_n` with respect to the logits:
 *   dlogits = beta * dlogits + scale * (softmax(logits) - target),
 * so the label loss (beta = 0) and a distillation term (beta = 1) can be
 * summed into one gradient. Use scale = 1/N for a batch mean. With beta = 0
 * dlogits is only written (it may hold garbage). n and k must be positive
 * (MANTA_ERR_INVALID_ARG otherwise). One work-group reduces each row.
 * logits, dlogits, teacher_logits (N, K); labels, losses (N).
 */
#ifndef MANTA_NN_LOSS_H
#define MANTA_NN_LOSS_H

#include "cl/cl.h"

/**
 * Cross-entropy with label smoothing: target = (1 - eps) * onehot(label) +
 * eps / K. loss_n = -sum_k target_k * log softmax(logits_n)_k.
 * Labels live on the device and are not checked by the host: a label that is
 * not an integer in [0, K) (or NaN) is never used as an index; its row gets a
 * NaN loss and NaN gradients, so the error shows in the loss.
 * @return MANTA_ERR_INVALID_ARG for smoothing outside [0, 1).
 */
manta_status nn_xent_forward_backward(mcl_dev *d, int n, int k, float smoothing, mview logits,
                                      mview labels, mview losses, mview dlogits, float scale,
                                      float beta);

/**
 * Soft-target cross-entropy (distillation): target = softmax(teacher_logits),
 * loss_n = -sum_k target_k * log softmax(logits_n)_k.
 */
manta_status nn_soft_xent_forward_backward(mcl_dev *d, int n, int k, mview logits,
                                           mview teacher_logits, mview losses, mview dlogits,
                                           float scale, float beta);

#endif
