/**
 * @file net.h
 * @brief The stereo depth supernet on one device (the network of space/stereo_space.h): every
 *        weight of its largest sub-network, and forward / backward passes through any
 *        sub-network (elastic kernel, expand ratio and depth of the encoder units, elastic
 *        width of the decoder levels), from a
 *        disparity prediction at every scale to the gradients of the multi-scale loss (which
 *        the caller computes, e.g. with nn/disp_loss.h, into stereo_net_dpred()).
 *
 * Layout of a pass, for a batch of N pairs of H x W (the space's crop, or the size set by
 * stereo_net_set_size()):
 *   input (2N, 3, H, W): the N left images, then the N right images;
 *   stem and units 1..corr_after_unit on all 2N images (shared weights: the left and the
 *   right view go through the same layers as one batch of 2N, so batch norm sees both);
 *   correlation of the left and right halves, concatenated with the redirect (1x1 conv,
 *   BN, LeakyReLU 0.1) of the left half; the other units on N; the coarsest prediction
 *   (3x3 conv + bias); per decoder level, coarse to fine: transposed conv k4 s2 p1 + bias
 *   + LeakyReLU, concatenation [skip, the coarser prediction upsampled x2, upconv],
 *   3x3 conv + bias + LeakyReLU, 3x3 conv + bias to the level's prediction; the level's
 *   width is the sub-network's dw[i], its layers using the first channels of the widest
 *   one's weights. Every
 *   prediction is a disparity in full-resolution pixels; prediction p = 0 (coarsest) ..
 *   stereo_preds() - 1 (full resolution) has (N, 1, H >> (L - p), W >> (L - p)) values,
 *   L the space's n_levels.
 *
 * Memory as classify/supernet.h: parameter, gradient and momentum slabs of one layout (decayed
 * weights first, then batch norms and biases), a state slab (batch-norm statistics), and
 * activations planned once for the largest sub-network at the largest size of the space's
 * crops (stereo_space_plan_size()); nothing is allocated after creation. A training
 * network's activations are placed by lifetime (ofa_net_a()): those the backward reads
 * live from their layer's forward to the end of the step; those it does not (the batch
 * norms' outputs before a ReLU or leaky ReLU, whose gradient is read from the output; the
 * correlation, the redirect's and each level's transposed convolution's activations and the
 * upsampled prediction, which live on in their concatenation's copy; a slot's output
 * before its identity skip) only during their layer's forward, and later layers' tensors
 * reuse their memory; the places of gradients without an activation (the predictions'
 * total gradients, the second consumer's gradient) hold no activation memory.
 *
 * Parameter order: decayed: the stem, every slot's weights (ofa_mbconv_plan_weights(), unit
 * by unit, block by block, the slots of the correlation's units reading its D + redir_width
 * channels), the redirect, the coarsest prediction, then per level the transposed
 * convolution (Cin, width, 4, 4), the 3x3 conv and the 3x3 prediction; not decayed: the
 * batch norms (stem, slots with their SE biases, redirect), then the decoder's biases.
 * Initial values: convolutions uniform in +-1/sqrt(fan_in) (PyTorch's bound, as the MBConv
 * slots; a k4 s2 transposed convolution's fan-in is the Cin * 4 products each output sums),
 * the predictions' weights 0.1 times that (the first disparities near 0), biases 0, batch
 * norms as ofa_bn_init_values().
 *
 * Backward: a tensor read by several layers (a unit output that is also a decoder skip, the
 * last shared tensor read by the correlation and the redirect, a level's 3x3 conv output read
 * by its prediction and the next transposed convolution, a prediction read by the loss and
 * the next level's upsampling) gets the sum of their gradients. The prediction gradients
 * the caller fills are read, not changed.
 */
#ifndef MANTA_STEREO_NET_H
#define MANTA_STEREO_NET_H

#include <stdint.h>

#include "cl/cl.h"
#include "elastic/mbconv.h"
#include "elastic/types.h"
#include "space/stereo_space.h"

typedef struct stereo_net stereo_net;

/** As ofa_supernet_create() (classify/supernet.h), for the network of @p space and batches of
 *  @p batch pairs at the space's crop. @return MANTA_ERR_INVALID_ARG for a bad space or
 *  batch; the device's errors (one buffer too large for the device names it). */
manta_status stereo_net_create(mcl_dev *d, const stereo_space *space, int batch, uint64_t seed,
                               stereo_net **out);
/** As stereo_net_create(), for forward passes only (evaluation, inference at other sizes):
 *  no parameter gradients, activation gradients or momentum on the device (about half the
 *  memory of a training network), so stereo_net_backward() refuses and the gradient views
 *  (stereo_net_dpred(), the slabs' grads and momentum) must not be used. */
manta_status stereo_net_create_forward_only(mcl_dev *d, const stereo_space *space, int batch,
                                            uint64_t seed, stereo_net **out);
/** As stereo_net_create(), with every activation in a place of its own for the whole step,
 *  as before they were planned by lifetime (about a third more activation memory): the same
 *  results, for comparisons and tests. */
manta_status stereo_net_create_unplanned(mcl_dev *d, const stereo_space *space, int batch,
                                         uint64_t seed, stereo_net **out);
/** The plan of the activation slab by lifetime (elastic/mbconv.h, ofa_net.apack; empty: one
 *  place per activation, a forward-only or unplanned network), for checks. Owned by @p n. */
const mlayout_pack *stereo_net_act_plan(const stereo_net *n);
/**
 * Run the passes at @p h x @p w from now on: any size the space accepts as its crop (sides
 * multiples of 2^n_levels, wider than max_disp) up to the largest height and width of the
 * space's crop and training crops (stereo_space_plan_size(): what the activations were
 * planned for). A network starts at the space's crop. Tensors keep their offsets and hold
 * (.., h', w') values at the new size (the input (2N, 3, h, w), prediction p
 * (N, 1, h >> (L - p), w >> (L - p))); the active sub-network is configured again for it.
 * Parameters and batch-norm statistics do not depend on the size.
 * @return MANTA_ERR_INVALID_ARG naming the size and the limit; the size is then unchanged.
 */
manta_status stereo_net_set_size(stereo_net *n, int h, int w);
/**
 * The device memory stereo_net_create() (@p forward_only: stereo_net_create_forward_only())
 * would create for @p space and batches of @p batch pairs on @p d, planned without creating
 * anything (ofa_net_plan_memory()): the slabs' floats, their bytes, and the largest part that
 * must fit one buffer (the activations and their gradients are split across buffers of the
 * device's largest allocation at their tensors; the op scratch is bounded by
 * nn_scratch_cap()). @return as stereo_net_create() before it allocates.
 */
manta_status stereo_net_plan_memory(mcl_dev *d, const stereo_space *space, int batch,
                                    bool forward_only, ofa_net_mem *out);
/** Floats of the device buffers that grow with the batch (activations and op scratch). */
size_t stereo_net_act_floats(const stereo_net *n);
/** The size of the passes (stereo_net_set_size()). */
void stereo_net_size(const stereo_net *n, int *h, int *w);

/** Release @p n and its device buffers (NULL is allowed). */
void stereo_net_destroy(stereo_net *n);

/** The space the network was created for (a copy it owns). */
const stereo_space *stereo_net_space(const stereo_net *n);
/** Pairs per batch, N (the input holds 2N images). */
int stereo_net_batch(const stereo_net *n);

/** The slabs, as ofa_supernet_slabs(). */
void stereo_net_slabs(const stereo_net *n, ofa_slabs *out);

/** Make @p a (the units' genes, stereo_arch_validate()) the active sub-network.
 *  @return MANTA_ERR_INVALID_ARG naming the gene that is not one of the space's choices;
 *  the active sub-network is then unchanged. */
manta_status stereo_net_set_arch(stereo_net *n, const ofa_arch *a);

/** The input tensor (2N, 3, H, W): left images then right images, values in [0, 1]. */
mview stereo_net_input(const stereo_net *n);

/** Prediction @p p (0 <= p < stereo_preds()) of the last forward:
 *  (N, 1, H >> (L - p), W >> (L - p)). */
mview stereo_net_pred(const stereo_net *n, int p);
/** The gradient of prediction @p p, which the caller fills (or the loss does) before
 *  stereo_net_backward(); stereo_net_forward() zeroes every prediction's gradient. */
mview stereo_net_dpred(const stereo_net *n, int p);

/**
 * Forward the active sub-network on the input tensor, with @p params (the own parameters,
 * or a slab of the same layout: a frozen teacher) and batch norm in mode @p bn. Zeroes the
 * prediction gradients (a training network's).
 */
manta_status stereo_net_forward(stereo_net *n, mview params, ofa_bn_mode bn);

/** Backward of the last forward (a TRAIN or BATCH_ONLY forward on the own parameters)
 *  from the prediction gradients; parameter gradients accumulate in the gradient slab.
 *  @return MANTA_ERR_INVALID_ARG on a forward-only network. */
manta_status stereo_net_backward(stereo_net *n);

/**
 * The layers of the active sub-network as the passes run them, for one image pair, in the
 * format and order of stereo_describe(): names, kinds, shapes, kernel, stride, batch norm,
 * bias, activation, residual, views, and the MACs and parameters of the op shapes the passes
 * use (nn_conv2d_macs(), nn_dw_macs(), nn_deconv2d_macs(), nn_corr_macs()), totals included.
 * The network is the one stereo_describe() describes when the two agree layer for layer.
 * @return MANTA_ERR_INVALID_ARG before an architecture was set.
 */
manta_status stereo_net_layers(const stereo_net *n, stereo_desc *out);

/** Start a batch-norm re-calibration over @p total_pairs pairs (ofa_supernet_recal_begin()):
 *  every running mean and variance zeroed, then each OFA_BN_RECAL forward adds
 *  batch / total_pairs times its batch statistics (the shared layers' over both views). */
manta_status stereo_net_recal_begin(stereo_net *n, long total_pairs);
/** As stereo_net_recal_begin(), pooled (ofa_net_recal_begin_pooled(): the variance of all the
 *  pairs' values, not the mean of the batches' variances), finished by stereo_net_recal_end(). */
manta_status stereo_net_recal_begin_pooled(stereo_net *n, long total_pairs);

/** Finish a re-calibration (ofa_net_recal_end()). */
manta_status stereo_net_recal_end(stereo_net *n);

/**
 * OFA's elastic-width re-organisation of the encoder's MBConv slots (every slot of every
 * unit, the shared ones and those after the correlation), at the start of an expand-ratio
 * phase: ofa_supernet_reorder_width()'s, with the same implementation
 * (ofa_net_reorder_width(), elastic/mbconv.h) and the space's expand ratios; then the same for
 * the decoder's levels: the transposed convolution's output channels sorted by the L1
 * norm of the 3x3 conv weights that read them, the 3x3 conv's by that of the prediction's
 * and the next transposed convolution's, inside groups bounded by the widths of the
 * @p keep_groups largest ratios below 1 (the channels narrower sub-networks use stay in
 * front). Channels move only between a layer and the layers that read them, so the largest
 * sub-network predicts the same disparities before and after (up to float rounding).
 * Parameters and batch-norm statistics change in place; momentum is not permuted.
 * @return MANTA_ERR_INVALID_ARG when @p keep_groups is not in [0, the space's n_e);
 *         MANTA_ERR_NO_MEMORY; the device's error.
 */
manta_status stereo_net_reorder_width(stereo_net *n, int keep_groups);

/** Use synchronised batch norm across replicas (ofa_supernet_set_bn_sync()). */
void stereo_net_set_bn_sync(stereo_net *n, ofa_bn_sync_fn fn, void *ctx);
/** The largest channel count of any batch norm (bounds the c of ofa_bn_sync_fn). */
int stereo_net_bn_max_channels(const stereo_net *n);

#endif
