/**
 * @file dropout.h
 * @brief Inverted dropout on the device with a counter-based mask: element i
 *        is kept when hash(seed, i) >= p * 2^32, then scaled by 1 / (1 - p).
 *        The mask is a pure function of (seed, i), so the backward pass (and
 *        every worker of a distributed run) recomputes it instead of storing it.
 */
#ifndef MANTA_NN_DROPOUT_H
#define MANTA_NN_DROPOUT_H

#include <stdint.h>

#include "cl/cl.h"

/** Whether element @p i is kept for @p seed and drop probability @p p (host copy of the rule). */
int nn_dropout_keep(uint64_t seed, uint32_t i, float p);

/** y = x * keep(seed, i) / (1 - p) over n floats; y may alias x. p in [0, 1). */
manta_status nn_dropout_forward(mcl_dev *d, size_t n, float p, uint64_t seed, mview x, mview y);

/** dx = dy * keep(seed, i) / (1 - p) (the same mask); dx may alias dy. */
manta_status nn_dropout_backward(mcl_dev *d, size_t n, float p, uint64_t seed, mview dy, mview dx);

/**
 * Dropout of a shard: element i of x uses the mask of index @p off + i, so a tensor split
 * into contiguous shards over several devices gets the mask the whole tensor would get.
 * nn_dropout_forward() is the case off = 0.
 */
manta_status nn_dropout_forward_at(mcl_dev *d, size_t n, uint32_t off, float p, uint64_t seed,
                                   mview x, mview y);

/** Backward of nn_dropout_forward_at() (the same mask). */
manta_status nn_dropout_backward_at(mcl_dev *d, size_t n, uint32_t off, float p, uint64_t seed,
                                    mview dy, mview dx);

#endif
