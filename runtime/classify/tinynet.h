/**
 * @file tinynet.h
 * @brief A small fixed CNN, trained end to end on the device: the runtime's
 *        own check that every op, the slabs and the optimizer work together
 *        (used by `manta train` and the tests). It uses one of each op the
 *        supernet needs: dense 3x3 conv, depthwise 3x3/5x5 (stride 1 and 2),
 *        pointwise conv, batch norm, ReLU/ReLU6/h-swish/h-sigmoid, a
 *        squeeze-and-excite block, a residual add, global pooling and linear.
 *
 *   x (B, C, H, W)
 *   conv3x3 C->16 s1, BN, ReLU        dw3x3 s2, BN, h-swish
 *   conv1x1 16->32, BN, ReLU          dw5x5 s2, BN, h-swish
 *   SE (32 -> 8 -> 32, ReLU, h-sigmoid)
 *   residual: dw3x3 s1, BN, ReLU6, conv1x1 32->32, BN, + skip
 *   global average pool, linear 32 -> classes
 *
 * Memory: parameters, gradients, momentum, batch-norm state, activations and
 * their gradients each live in one slab, sized once at creation for the
 * batch size; steps create no buffers.
 */
#ifndef MANTA_CLASSIFY_TINYNET_H
#define MANTA_CLASSIFY_TINYNET_H

#include <stdbool.h>
#include <stdint.h>

#include "cl/cl.h"
#include "train/optim.h"

typedef struct tinynet_config {
    int channels;      /**< input channels (1 or 3) */
    int height, width; /**< input size, >= 8 */
    int classes;       /**< >= 2 */
    int batch;         /**< fixed batch size of every forward pass */
    float label_smoothing;
} tinynet_config;

typedef struct tinynet tinynet;

/** Create the network on @p d with weights drawn from @p seed. */
manta_status tinynet_create(mcl_dev *d, const tinynet_config *cfg, uint64_t seed, tinynet **out);
void tinynet_destroy(tinynet *t);

/** Number of trainable parameters. */
size_t tinynet_param_count(const tinynet *t);

/** Result of one training step. */
typedef struct tinynet_step_result {
    float loss;  /**< mean loss of the batch */
    int correct; /**< samples whose arg-max logit equals the label */
} tinynet_step_result;

/**
 * One SGD step on a batch: upload, forward (BN in training mode), loss,
 * backward, update. images: (batch, C, H, W) normalised floats; labels:
 * (batch) class indices. @p out may be NULL.
 */
manta_status tinynet_train_step(tinynet *t, const float *images, const float *labels,
                                const optim_sgd *opt, float lr, tinynet_step_result *out);

/**
 * Inference on one batch (BN uses running statistics): logits
 * (batch, classes) into @p logits.
 */
manta_status tinynet_predict(tinynet *t, const float *images, float *logits);

#endif
