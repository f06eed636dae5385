/**
 * @file optim.h
 * @brief SGD with (Nesterov) momentum over parameter slabs, and the learning
 *        rate schedule (linear warm-up, then cosine), as OFA trains.
 *
 * Parameters, gradients and momentum are three views of equal length n. The
 * first n_decay floats receive weight decay; the rest (batch-norm gammas and
 * betas, biases) do not, so models lay out decayed tensors first.
 * Gradients of several forward/backward passes accumulate in the gradient
 * slab (ops add into it); one step then applies them, scaled by grad_scale.
 */
#ifndef MANTA_TRAIN_OPTIM_H
#define MANTA_TRAIN_OPTIM_H

#include <stdbool.h>

#include "cl/cl.h"

typedef struct optim_sgd {
    float momentum;     /**< 0.9 in OFA */
    float weight_decay; /**< 3e-5 in OFA (applied to the first n_decay floats) */
    bool nesterov;      /**< true in OFA */
} optim_sgd;

/**
 * One update, PyTorch's SGD semantics:
 *   g = grad_scale * grad + wd * p   (wd only for i < n_decay)
 *   m = momentum * m + g
 *   p -= lr * (nesterov ? g + momentum * m : m)
 * params, grads, mom: (n). Gradients are left as they are (zero them with
 * mcl_fill before the next accumulation).
 */
manta_status optim_sgd_step(mcl_dev *d, const optim_sgd *o, float lr, float grad_scale,
                            mview params, mview grads, mview mom, size_t n_decay, size_t n);

/** Learning-rate schedule: linear warm-up from base/warmup to base over
 *  warmup_steps, then cosine decay to zero at total_steps. */
typedef struct lr_schedule {
    float base_lr;
    long warmup_steps;
    long total_steps;
} lr_schedule;

/** Learning rate of step @p step (0-based); 0 past total_steps. */
float train_lr_at(const lr_schedule *s, long step);

#endif
