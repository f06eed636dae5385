/**
 * @file supernet.h
 * @brief The OFA supernet on one device: every weight of the largest network
 *        of a search space, and forward / backward passes through any of its
 *        sub-networks (elastic kernel, width, depth and resolution).
 *
 * Weights are shared as OFA shares them: a sub-network uses the first `mid`
 * expanded channels of each block (elastic width), the centre of each 7x7
 * depthwise kernel transformed by the block's learned matrices (elastic
 * kernel), the first d blocks of each unit (elastic depth), at any listed
 * resolution. Layer structure: space/ofa_space.h.
 *
 * Memory: parameters, gradients and momentum are slabs of equal layout
 * (decayed tensors first: convolution and linear weights and the kernel
 * matrices; then batch-norm gammas/betas and biases). Batch-norm running
 * statistics live in a state slab. Activations and their gradients are
 * planned once for the largest sub-network at the largest resolution and the
 * batch size given at creation; every sub-network runs inside that plan, so
 * no buffer is created after creation.
 */
#ifndef MANTA_CLASSIFY_SUPERNET_H
#define MANTA_CLASSIFY_SUPERNET_H

#include <stdbool.h>
#include <stdint.h>

#include "cl/cl.h"
#include "elastic/types.h"
#include "space/ofa_space.h"

typedef struct ofa_supernet ofa_supernet;

/** Create the supernet of @p space on @p d for batches of @p batch images,
 *  weights drawn from @p seed (OFA's initialisation). */
manta_status ofa_supernet_create(mcl_dev *d, const ofa_space *space, int batch, uint64_t seed,
                                 ofa_supernet **out);
void ofa_supernet_destroy(ofa_supernet *n);

const ofa_space *ofa_supernet_space(const ofa_supernet *n);
int ofa_supernet_batch(const ofa_supernet *n);

/** The slabs (elastic/types.h). */
void ofa_supernet_slabs(const ofa_supernet *n, ofa_slabs *out);

/** Make @p a the active sub-network (validated against the space). */
manta_status ofa_supernet_set_arch(ofa_supernet *n, const ofa_arch *a);

/** The input tensor of the active sub-network: (batch, C, r, r). */
mview ofa_supernet_input(const ofa_supernet *n);
/** Logits (batch, classes) of the last forward pass, and their gradient,
 *  which the caller fills before ofa_supernet_backward(). */
mview ofa_supernet_logits(const ofa_supernet *n);
mview ofa_supernet_dlogits(const ofa_supernet *n);

/**
 * Start OFA's batch-norm re-calibration of the active sub-network over
 * @p total_images images: every running mean and variance is zeroed, and each
 * later forward in OFA_BN_RECAL mode adds batch / total_images times its
 * batch mean and biased batch variance, so after total_images images the
 * running statistics are the sample-weighted averages. Callers that want the
 * supernet's statistics back save and restore the state slab around it.
 */
manta_status ofa_supernet_recal_begin(ofa_supernet *n, long total_images);

/**
 * Forward the active sub-network on the input tensor. @p params: the
 * supernet's own parameters, or another slab of the same layout (a frozen
 * teacher copy); backward is only valid after a forward on the own slab.
 */
manta_status ofa_supernet_forward(ofa_supernet *n, mview params, ofa_bn_mode bn);

/** Seed of the dropout mask before the classifier (applied in OFA_BN_TRAIN
 *  forwards when the space's dropout is above 0); set it per sub-network pass. */
void ofa_supernet_set_dropout_seed(ofa_supernet *n, uint64_t seed);

/**
 * Use synchronised batch norm in the OFA_BN_TRAIN and OFA_BN_BATCH_ONLY forwards (and their
 * backward): batch statistics over all replicas through @p fn. NULL turns it off (the
 * default: statistics of this device's batch alone, no host round trip).
 */
void ofa_supernet_set_bn_sync(ofa_supernet *n, ofa_bn_sync_fn fn, void *ctx);

/** The largest channel count of any batch norm (bounds the c of ofa_bn_sync_fn). */
int ofa_supernet_bn_max_channels(const ofa_supernet *n);

/** This replica's shard starts at sample @p first of the global batch (default 0): the
 *  dropout mask of its samples is that of the same samples in the whole batch. */
void ofa_supernet_set_shard(ofa_supernet *n, long first);

/**
 * Report the progress of every later backward to @p fn (ofa_grad_ready_fn, elastic/types.h;
 * NULL turns it off, the default): called after the classifier and head, after every active
 * MBConv slot, after each of the two stem blocks and last with from = 0; every value is one
 * of the offsets of ofa_supernet_grad_bounds().
 */
void ofa_supernet_set_grad_ready(ofa_supernet *n, ofa_grad_ready_fn fn, void *ctx);

/**
 * The offsets at which ofa_grad_ready_fn may be called, ascending, starting with 0 (the
 * block boundaries of the decayed parameters: stem, first block, every slot of the
 * supernet, head). Writes at most @p cap of them. @return how many there are.
 */
int ofa_supernet_grad_bounds(const ofa_supernet *n, size_t *bounds, int cap);

/** Backward of the last forward from ofa_supernet_dlogits(); parameter
 *  gradients accumulate into the gradient slab. */
manta_status ofa_supernet_backward(ofa_supernet *n);

#endif

/**
 * OFA's elastic-width re-organisation, at the start of a width phase: in
 * every block, sort the expanded channels by the L1 norm of the projection
 * weights that read them (descending) and permute every tensor that depends
 * on them (expand weights and BN, depthwise weights and BN, SE, projection
 * inputs); SE hidden units are sorted likewise by the L1 norm of the SE
 * expand weights. With @p keep_groups > 0, channels are only sorted inside the
 * groups delimited by the widths of the @p keep_groups largest expand ratios
 * below the maximum, so the nesting of an earlier width phase is kept (OFA's
 * expand_ratio_stage). The full network computes the same function before and
 * after. Momentum is not permuted: a new phase starts with zero momentum.
 * The stereo network re-organises its encoder with the same implementation
 * (ofa_net_reorder_width(), elastic/mbconv.h).
 */
manta_status ofa_supernet_reorder_width(ofa_supernet *n, int keep_groups);
