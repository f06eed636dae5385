/**
 * @file mbconv.h
 * @brief Elastic MBConv units for the device networks of runtime/ (the OFA
 *        classification supernet, the stereo-depth supernet): a small network
 *        context a network embeds, its batch-norm and activation helpers, and
 *        one MBConv slot planned at its largest width and input size and run at
 *        any smaller configuration. Internal to runtime/ (layers above nn/).
 *
 * One slot (OFA's MBConv, see space/ofa_space.h):
 *   1x1 expand in_c -> mid, BN, act;
 *   kxk depthwise (pad k/2, the slot's stride), BN, act;
 *   squeeze-and-excite when planned: pool, 1x1 mid -> se + bias, ReLU,
 *     1x1 se -> mid + bias, h-sigmoid, scale;
 *   1x1 project mid -> width, BN; identity skip when asked (stride 1, in_c == width).
 * Elastic kernel: one depthwise weight at the largest kernel size; a smaller
 * size is made from its centre through the slot's learned matrices, chained
 * from size to size (elastic/elastic.h). Elastic width: the first mid expanded
 * channels (and first se SE units) of the stored tensors, through the ops'
 * weight row strides. Elastic depth is the network's: it runs its first d slots.
 * Inputs need not be square: every shape uses the height and the width separately.
 *
 * Tensors are offsets (in floats) into the context's slabs: parameters,
 * gradients (same layout), batch-norm state, activations and activation
 * gradients (same layout, each slab placing it by its plan: ofa_net_a(), ofa_net_ga()); NCHW
 * activations with the context's batch.
 *
 * Use: set ofa_net.d and .batch; plan every slot's decayed weights
 * (ofa_mbconv_plan_weights(), in the network's order), then its batch norms
 * and biases (ofa_mbconv_plan_bn()), then its activations and op scratch
 * (ofa_mbconv_plan_acts()); list the network's batch norms (ofa_net.bns) and plan the
 * statistics buffer (ofa_net_plan_stats()); create the slabs (ofa_net_alloc()); write
 * initial values (ofa_net_write_init(): ofa_mbconv_init_weights(), the batch norms').
 * ofa_net_create() does the last three for a network. Per sub-network:
 * ofa_mbconv_configure() (or ofa_mbconv_configure_arch()) each active slot. Per pass:
 * set ofa_net.fwd_params and .fwd_bn, ofa_mbconv_forward() slot after slot, then
 * ofa_mbconv_backward() in the reverse order. Nothing allocates after ofa_net_alloc() (but
 * ofa_net_reorder_width(), OFA's width re-organisation at the start of an expand phase,
 * which works on host copies of the slabs).
 */
#ifndef MANTA_ELASTIC_MBCONV_H
#define MANTA_ELASTIC_MBCONV_H

#include <stdbool.h>
#include <stddef.h>

#include "cl/slab.h"
#include "core/rng.h"
#include "elastic/types.h"
#include "nn/activation.h"
#include "nn/conv.h"
#include "space/ofa_space.h"

/** Batch-norm momentum and epsilon of every network (OFA's, PyTorch's semantics). */
#define OFA_BN_MOMENTUM 0.1f
#define OFA_BN_EPS 1e-5f
/** Most elastic kernel sizes of one slot (matrices between consecutive sizes: one fewer). */
#define OFA_MBCONV_MAX_KS 4

/* ---- the network context --------------------------------------------------------------- */

/** A batch norm: parameter offsets (gamma, beta: (c)) and state offsets (running mean and
 *  variance, saved mean and 1/sqrt(var + eps): (c)). */
typedef struct ofa_bn {
    size_t gamma, beta, rmean, rvar, smean, sinv;
} ofa_bn;

/** Most batch norms of one network: a few of its own and three per MBConv slot. */
#define OFA_NET_MAX_BNS (4 + 3 * OFA_MAX_SLOTS)
/** Every batch norm of a network with its (largest) channel count, in the network's order. */
typedef struct ofa_bn_list {
    const ofa_bn *bn[OFA_NET_MAX_BNS];
    int c[OFA_NET_MAX_BNS];
    int n;
} ofa_bn_list;

/**
 * Where activation gradients live. Most activations of an MBConv slot (every one but its
 * output) are read and written by no backward but the slot's own, so their gradients
 * are needed only while it runs: the slots' internal ranges share one region at the
 * start of the gradient slab, as large as the largest range. Every other activation's
 * gradient follows that region in the activations' order (ofa_net_ga() maps an
 * activation's offset to its gradient's).
 */
typedef struct ofa_grad_plan {
    int n;                            /**< internal ranges */
    size_t lo[OFA_MAX_SLOTS];         /**< first activation offset of range i, ascending */
    size_t hi[OFA_MAX_SLOTS];         /**< one past range i's last float (at most lo[i + 1]) */
    size_t before[OFA_MAX_SLOTS + 1]; /**< floats in the ranges before range i */
    size_t shared;                    /**< the shared region: the largest range */
} ofa_grad_plan;

/**
 * What the helpers below need from the network that hosts them. The network owns
 * it (embedded by value) and its slabs; ofa_net_alloc() creates them and
 * ofa_net_free() releases them. Fields are read and set directly.
 */
typedef struct ofa_net {
    mcl_dev *d;         /**< the device (not owned) */
    int batch;          /**< N of every activation */
    mslab params;       /**< parameters (n_params) */
    mslab grads;        /**< parameter gradients, the parameters' layout; backward accumulates */
    mslab state;        /**< batch-norm running and saved statistics */
    mslab acts;         /**< activations */
    mslab dacts;        /**< activation gradients, laid out by gplan */
    mslab scratch;      /**< op scratch shared by every layer (no op keeps data in it) */
    mslab mom;          /**< the optimizer's momentum, the parameters' layout (when asked for) */
    mview fwd_params;   /**< parameters of the current / last forward (the own slab or a copy) */
    ofa_bn_mode fwd_bn; /**< batch-norm mode of the current / last forward */
    float recal_weight; /**< batch / images of a re-calibration (ofa_net_recal_begin()) */
    ofa_bn_sync_fn bn_sync; /**< synchronised batch norm across replicas, or NULL */
    void *bn_sync_ctx;      /**< its context */
    float *sync_host;    /**< (2, widest) host copy of the statistics being synchronised; owned */
    double *recal_sum;   /**< a pooled re-calibration's sums (ofa_net_recal_begin_pooled()):
                        *  per channel of every batch norm of bns, in its order, the sum of
                        *  recal_weight times the batch mean, variance and squared mean;
                        *  owned, NULL otherwise */
    size_t stats_tmp;    /**< activation offset of (2, widest) batch statistics */
    int widest;          /**< largest channel count of any batch norm of the network */
    ofa_bn_list bns;     /**< every batch norm of the network (it fills the list when it plans):
                       *  initialised by ofa_net_write_init(), re-calibrated by
                       *  ofa_net_recal_begin() */
    ofa_grad_plan gplan; /**< the gradient slab's layout (zeroed before planning; filled by
                          *  ofa_mbconv_plan_acts()) */
    bool keep_acts;      /**< set before ofa_net_create(): every activation keeps its own place
                          *  for the whole step (no apack; for comparisons and tests) */
    mlayout_pack apack;  /**< the activation slab's plan by lifetime (ofa_net_create() of a
                          *  training network; empty: the layout's offsets) */
    bool forward_only;   /**< set before ofa_net_alloc(): forward passes only, so the parameter
                        *  and activation gradient slabs are one float each, there is no
                        *  momentum (ofa_mbconv_backward() must not run), and the slots'
                        *  internal activations share one region (ofa_net_a()) */
} ofa_net;

/** The activation at offset @p off (planned offsets: those mlayout gave). A network for
 *  forward passes only lays its activations out as the gradients are (ofa_grad_plan): a
 *  slot's internal tensors are read by nothing after its forward, so every slot's share one
 *  region, and a view of an internal tensor is valid only until the next slot runs. A
 *  training network made by ofa_net_create() places them by lifetime (n->apack, planned by
 *  mlayout_pack_plan() from the lifetimes its plan gave: mlayout_add_temp() and the
 *  others): a tensor reserved with mlayout_add_temp() is valid only during its phase of the
 *  forward pass, one reserved with mlayout_add_unused() never. */
mview ofa_net_a(const ofa_net *n, size_t off);
/** The gradient of the activation at offset @p off (see ofa_grad_plan): within a slot's
 *  internal range, the shared region; elsewhere, its own place. */
mview ofa_net_ga(const ofa_net *n, size_t off);
/** The offsets @p act_cuts (ascending activation offsets) where the gradient slab may be split
 *  (ofa_grad_plan): the end of the shared region and each offset outside the slots'
 *  internal ranges, mapped; into @p out (room for @p n_cuts + 1). @return their count. */
size_t ofa_net_grad_cuts(const ofa_net *n, const size_t *act_cuts, size_t n_cuts, size_t *out);
/** Floats of the gradient slab for activations of @p acts floats planned with n->gplan. */
size_t ofa_net_grad_floats(const ofa_net *n, size_t acts);
/** Mark the activations [@p lo, @p hi), planned after every range marked before, as a
 *  slot's internal range (ofa_grad_plan). An empty range, one that begins before the last
 *  marked one ends, or one past OFA_MAX_SLOTS ranges is not marked: those gradients keep
 *  places of their own. */
void ofa_net_plan_internal(ofa_net *n, size_t lo, size_t hi);
/** Parameter view at @p off in the forward's parameters (ofa_net.fwd_params). */
static inline mview ofa_net_p(const ofa_net *n, size_t off) { return mview_at(n->fwd_params, off); }
/** Parameter-gradient view at @p off. */
static inline mview ofa_net_gp(const ofa_net *n, size_t off) { return mslab_view(&n->grads, off); }
/** Batch-norm state view at @p off. */
static inline mview ofa_net_s(const ofa_net *n, size_t off) { return mslab_view(&n->state, off); }
/** The shared op scratch. */
static inline mview ofa_net_scratch(const ofa_net *n) { return mslab_view(&n->scratch, 0); }

/** The 1x1 stride-1 unpadded convolution shape (n->batch, cin, h, w) -> cout, weight
 *  rows of @p w_ld floats (0: cin). */
nn_conv2d_shape ofa_net_pw_shape(const ofa_net *n, int cin, int h, int w, int cout, int w_ld);

/** Raise *scratch to the op scratch of a convolution of shape @p c on n->d. */
void ofa_net_need_conv(const ofa_net *n, size_t *scratch, const nn_conv2d_shape *c);
/** Raise *scratch to the op scratch of a batch norm of @p c channels over @p hw values. */
void ofa_net_need_bn(const ofa_net *n, size_t *scratch, int c, int hw);
/** Raise *scratch to the op scratch of a depthwise convolution on (batch, c, h, w), kernel
 *  k, pad k/2. */
void ofa_net_need_dw(const ofa_net *n, size_t *scratch, int c, int h, int w, int k, int stride);

/** Reserve the (2, @p widest) statistics buffer of synchronised and re-calibrating batch
 *  norms in @p al; sets n->stats_tmp and n->widest. @p widest: the network's largest
 *  batch-norm channel count. */
void ofa_net_plan_stats(ofa_net *n, mlayout *al, int widest);

/** The slab sizes of ofa_net_alloc() (floats) and the slabs' names (static strings, for
 *  messages). */
typedef struct ofa_net_sizes {
    size_t params, state, acts, scratch;
    const char *params_name, *grads_name;
    const char *mom_name;   /**< the momentum slab's name, or NULL: no momentum slab */
    const char *who;        /**< the network, for ofa_net_write_init()'s messages */
    const size_t *act_cuts; /**< where the activations may be split across buffers (the
                             *  offsets of their tensors, ascending: mlayout.cuts), or NULL:
                             *  the activation slabs are one buffer each */
    size_t n_act_cuts;
} ofa_net_sizes;

/**
 * Create the slabs of @p n (zeroed; a zero size gets one float), the host buffer of
 * synchronised batch norm (after ofa_net_plan_stats()) and, with sz->mom_name, the
 * momentum slab; with n->forward_only, the gradient slabs get one float and there is no
 * momentum slab. On error what was created stays in @p n for ofa_net_free().
 * @return the device's error (message in mcl_err(n->d)), MANTA_ERR_NO_MEMORY.
 */
manta_status ofa_net_alloc(ofa_net *n, const ofa_net_sizes *sz);
/** Release what ofa_net_alloc() created (partly created, or nothing, too). */
void ofa_net_free(ofa_net *n);

/** Writes a network's initial weights into a zeroed host copy of the parameter slab,
 *  drawing from @p r; @p net is the network. */
typedef void (*ofa_net_init_fn)(const void *net, manta_rng *r, float *params);
/**
 * Initial values: zeroed host buffers of sz->params and sz->state floats; @p init's weights
 * (from an rng seeded with @p seed and @p stream); every batch norm of n->bns as
 * ofa_bn_init_values(); then written to the parameter and state slabs.
 * @return MANTA_ERR_NO_MEMORY ("<sz->who>: out of host memory"), the device's error.
 */
manta_status ofa_net_write_init(ofa_net *n, const ofa_net_sizes *sz, ofa_net_init_fn init,
                                const void *net, uint64_t seed, uint64_t stream);
/** Plans a network hosting a context: parameters in @p pl (decayed first), state in @p sl,
 *  activations in @p al (ofa_net_plan_stats() included) and *scratch (0 on entry). */
typedef manta_status (*ofa_net_plan_fn)(void *net, mlayout *pl, mlayout *sl, mlayout *al,
                                        size_t *scratch);
/** How ofa_net_create() makes a network: its plan (which fills n->bns), its initial
 *  weights and their rng stream, and the names of its slabs (as ofa_net_sizes'). */
typedef struct ofa_net_recipe {
    ofa_net_plan_fn plan;
    ofa_net_init_fn init;
    uint64_t stream;
    const char *params_name, *grads_name, *mom_name, *who;
} ofa_net_recipe;
/**
 * The creation every network shares: set n->d and n->batch, plan (@p r->plan on @p net),
 * create the slabs (ofa_net_alloc()) and write the initial values (ofa_net_write_init()
 * with @p seed). On error the network is destroyed by its caller (ofa_net_free()).
 * @return the plan's, ofa_net_alloc()'s or ofa_net_write_init()'s error.
 */
manta_status ofa_net_create(ofa_net *n, mcl_dev *d, int batch, const ofa_net_recipe *r, void *net,
                            uint64_t seed);
/** A network's device memory as ofa_net_alloc() would create it (ofa_net_plan_memory()). */
typedef struct ofa_net_mem {
    size_t params, grads, mom, state; /**< floats of those slabs (1: a slab not needed) */
    size_t acts, dacts, scratch;      /**< floats of the activations, their gradients, scratch */
    size_t unit;              /**< floats of the largest part no split divides: a tensor of the
                            *  activations or their gradients (the slots' shared gradient
                            *  region is one), or a whole slab of the others; the device's
                            *  largest allocation must hold it (mslab_create_split()) */
    const char *unit_what;    /**< the slab it belongs to ("activations", "op scratch", ...) */
    size_t act_unit;          /**< floats of the largest part of the activations and their
                            *  gradients alone */
    unsigned long long bytes; /**< every slab's bytes, in all */
} ofa_net_mem;
/**
 * Plan the network of @p r on @p net for batches of @p batch on @p d as ofa_net_create()
 * does, without creating anything on the device: the slabs' sizes and the largest part that
 * must fit one buffer, into @p out (n->forward_only as set). The device is read for the op
 * scratch (its kernel variant, its largest allocation: nn_conv2d_chunk()).
 * @return the plan's error; MANTA_ERR_NO_MEMORY.
 */
manta_status ofa_net_plan_memory(ofa_net *n, mcl_dev *d, int batch, const ofa_net_recipe *r,
                                 void *net, ofa_net_mem *out);
/** Whether memory of @p bytes in all, whose largest indivisible part is @p unit_bytes, fits a
 *  device of @p global_mem bytes (CL_DEVICE_GLOBAL_MEM_SIZE) and largest allocation
 *  @p max_alloc: bytes within 95% of global_mem (room for the queue, CLBlast and the
 *  driver) and unit_bytes within max_alloc. */
bool ofa_net_mem_fits(unsigned long long bytes, unsigned long long unit_bytes,
                      unsigned long long global_mem, unsigned long long max_alloc);
/** Plans the memory of batch @p batch (e.g. ofa_net_plan_memory() and what a trainer adds):
 *  *bytes in all, *unit_bytes the largest part that must fit one buffer, *unit_what its
 *  name. */
typedef manta_status (*ofa_net_mem_plan_fn)(void *ctx, int batch, unsigned long long *bytes,
                                            unsigned long long *unit_bytes, const char **unit_what);
/**
 * The largest batch in [1, @p max_batch] whose plan fits (ofa_net_mem_fits()), memory growing
 * with the batch (a binary search); 0 when batch 1 does not fit, with batch 1's plan in
 * *@p bytes, *@p unit_bytes and *@p unit_what (for the message); else the chosen batch's.
 * @return the plan's error.
 */
manta_status ofa_net_pick_batch(ofa_net_mem_plan_fn plan, void *ctx, int max_batch,
                                unsigned long long global_mem, unsigned long long max_alloc,
                                int *batch, unsigned long long *bytes,
                                unsigned long long *unit_bytes, const char **unit_what);
/** The slabs of a network hosting @p n (see ofa_slabs), with its parameter counts. */
void ofa_net_slabs(const ofa_net *n, size_t n_params, size_t n_decay, size_t n_state,
                   ofa_slabs *out);
/** Set (or, with a NULL @p fn, clear) synchronised batch norm (ofa_supernet_set_bn_sync()). */
static inline void ofa_net_set_bn_sync(ofa_net *n, ofa_bn_sync_fn fn, void *ctx)
{
    n->bn_sync = fn;
    n->bn_sync_ctx = ctx;
}

/* ---- batch norm and activations --------------------------------------------------------- */

/** Reserve a batch norm of @p c channels: gamma, beta in @p pl, the statistics in @p sl. */
void ofa_bn_plan(ofa_bn *b, int c, mlayout *pl, mlayout *sl);
/** Initial values into host copies of the slabs: gamma 1, running variance 1 (beta and
 *  running mean stay as they are: zero in a fresh buffer). */
void ofa_bn_init_values(const ofa_bn *b, int c, float *params, float *state);

/** Append @p b of @p c channels to @p l. */
void ofa_bn_list_add(ofa_bn_list *l, const ofa_bn *b, int c);
/** The largest channel count of @p l (1 at least): ofa_net_plan_stats()'s @p widest. */
int ofa_bn_list_widest(const ofa_bn_list *l);
/** ofa_bn_init_values() of every batch norm of @p l. */
void ofa_bn_list_init_values(const ofa_bn_list *l, float *params, float *state);

/**
 * Batch norm forward of the first @p c channels, x (batch, c, hw) -> y (activation
 * offsets), in n->fwd_bn's mode with n->fwd_params: TRAIN (batch statistics, running ones
 * moved by OFA_BN_MOMENTUM), BATCH_ONLY (batch statistics, running ones untouched), EVAL
 * (running statistics), RECAL (batch statistics; n->recal_weight times their mean and
 * biased variance added to the running ones). With n->bn_sync set, TRAIN and BATCH_ONLY
 * statistics are those over every replica (a host round trip through n->sync_host).
 * Needs c <= n->widest. @return the op's or the callback's error.
 */
manta_status ofa_net_bn_forward(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t y);
/**
 * Backward of a TRAIN or BATCH_ONLY forward: dx overwritten (may be dy), dgamma and dbeta
 * accumulated in the gradient slab; x is the forward input (activation offsets). With
 * n->bn_sync set, the sums are exchanged as in the forward.
 */
manta_status ofa_net_bn_backward(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t dy,
                                 size_t dx);
/**
 * Start a re-calibration over @p total_images images (see ofa_supernet_recal_begin()):
 * sets n->recal_weight (n->batch / total_images) and zeroes the running mean and variance
 * of every batch norm of n->bns.
 * @return MANTA_ERR_INVALID_ARG when total_images is below one batch; the device's error.
 */
manta_status ofa_net_recal_begin(ofa_net *n, long total_images);
/**
 * Start a pooled re-calibration over @p total_images images: each RECAL forward adds its
 * batch statistics to host sums (a read-back per batch norm) and leaves the running ones as
 * they are; ofa_net_recal_end() then sets every running mean to the mean of the batch means
 * and every running variance to that of all the images' values around it (the mean of the
 * batch variances plus the variance of the batch means: the law of total variance). The
 * mean of the batch variances alone (ofa_net_recal_begin()) misses the spread between
 * batches, much of the variance with batches of one image. The forwards normalise with the
 * batch's statistics, as a RECAL forward does. @return MANTA_ERR_INVALID_ARG when
 * total_images is below one batch; MANTA_ERR_NO_MEMORY.
 */
manta_status ofa_net_recal_begin_pooled(ofa_net *n, long total_images);
/** Finish a pooled re-calibration (see above; nothing to do after ofa_net_recal_begin()).
 *  @return the device's error; MANTA_ERR_NO_MEMORY. */
manta_status ofa_net_recal_end(ofa_net *n);

/** y = a(x) over @p len floats (activation offsets; y may be x). */
manta_status ofa_net_act_forward(ofa_net *n, nn_act a, size_t len, size_t x, size_t y);
/** dx = dy * a'(x) over @p len floats; x is the forward input (activation offset), dy and
 *  dx activation-gradient offsets (dx may be dy). */
manta_status ofa_net_act_backward(ofa_net *n, nn_act a, size_t len, size_t x, size_t dy, size_t dx);
/** As ofa_net_act_backward(), reading the forward output @p y instead of its input @p x where
 *  the two give the same gradient (nn_act_grad_from_output()): the same values, so that x
 *  need not be kept for the backward (plan it with ofa_net_act_in_plan()). */
manta_status ofa_net_act_backward_xy(ofa_net *n, nn_act a, size_t len, size_t x, size_t y,
                                     size_t dy, size_t dx);
/** Reserve the input of activation @p a (n floats) in @p al: with mlayout_add_temp() where
 *  its backward reads the output (ofa_net_act_backward_xy()), else mlayout_add(). */
size_t ofa_net_act_in_plan(mlayout *al, nn_act a, size_t n);

/* ---- the MBConv slot ----------------------------------------------------------------------- */

/** What a slot is planned for: its largest configuration. */
typedef struct ofa_mbconv_spec {
    int in_c, width; /**< input and output channels */
    int mid_max;     /**< largest expanded channel count */
    int stride;      /**< depthwise stride (1 or 2) */
    nn_act act;      /**< activation after the expand and the depthwise convolutions */
    bool se;         /**< squeeze-and-excite, make_divisible(mid_max / 4, 8) units at most */
    int n_ks;        /**< 1 .. OFA_MBCONV_MAX_KS kernel sizes */
    int ks[OFA_MBCONV_MAX_KS]; /**< odd, ascending; the last is the stored one */
    int h, w;                  /**< largest input height and width */
} ofa_mbconv_spec;

/** Activation offsets of one slot (their gradients: ofa_net_ga()). */
typedef struct ofa_mbconv_acts {
    size_t e_conv, e_bn, e_act;    /**< (N, mid, h, w) */
    size_t d_conv, d_bn, d_act;    /**< (N, mid, ho, wo) */
    size_t se_pool, se_r, se_relu; /**< (N, mid), (N, se), (N, se) */
    size_t se_e, se_hsig, se_out;  /**< (N, mid), (N, mid), (N, mid, ho, wo) */
    size_t p_conv, p_bn, out;      /**< (N, width, ho, wo); out: after the skip (p_bn in a
                                    *  slot without one) */
    size_t kw[OFA_MBCONV_MAX_KS];  /**< (mid, ks[i], ks[i]) transformed kernels, i < n_ks - 1 */
} ofa_mbconv_acts;

/** A planned slot: its spec and the offsets of its tensors. */
typedef struct ofa_mbconv {
    int in_c, width, mid_max, se_max, stride;
    nn_act act;
    bool se;
    int n_ks, ks[OFA_MBCONV_MAX_KS];
    int h, w; /**< largest input size */
    /** parameters: expand (mid_max, in_c), depthwise (mid_max, K, K) at the largest kernel
     *  K, SE reduce (se_max, mid_max) + (se_max), SE expand (mid_max, se_max) + (mid_max),
     *  project (width, mid_max); kmat[i] (ks[i]^2, ks[i]^2) makes ks[i] from ks[i+1] */
    size_t e_w, dw_w, se_r_w, se_r_b, se_e_w, se_e_b, p_w;
    size_t kmat[OFA_MBCONV_MAX_KS];
    ofa_bn e_bn, d_bn, p_bn; /**< (mid_max), (mid_max), (width) channels */
    ofa_mbconv_acts t;
} ofa_mbconv;

/**
 * Validate @p sp, copy it into @p u and reserve the decayed parameters in @p pl, in this
 * order: expand, depthwise, kernel matrices, SE reduce and SE expand weights (with SE),
 * projection. A network plans every slot's weights before any batch norm (decayed
 * tensors first).
 * @return MANTA_ERR_INVALID_ARG naming the field (message in @p err).
 */
manta_status ofa_mbconv_plan_weights(ofa_mbconv *u, const ofa_mbconv_spec *sp, mlayout *pl,
                                     manta_err *err);
/** Reserve the non-decayed parameters and the state: the expand, depthwise and projection
 *  batch norms, then the SE biases (with SE). */
void ofa_mbconv_plan_bn(ofa_mbconv *u, mlayout *pl, mlayout *sl);
/** Start a phase of @p al (mlayout_phase()), reserve the activations for (n->batch,
 *  mid_max, h, w), mark all but the output's (p_bn and, in a slot with an identity skip,
 *  out) as the slot's internal range (ofa_net_plan_internal()) and raise *scratch to what
 *  the slot's ops need at that size (which covers every smaller configuration). The
 *  backward reads every tensor but these, which live only in the slot's forward
 *  (mlayout_add_temp()): the batch norms' outputs before an activation whose gradient is
 *  read from its output (ReLU: e_bn, d_bn), the SE ReLU's input and, in a slot with an
 *  identity skip, p_bn (such a slot then runs with the skip: ofa_mbconv_forward()). */
void ofa_mbconv_plan_acts(ofa_net *n, ofa_mbconv *u, mlayout *al, size_t *scratch);
/** The batch norms of the slot and their channel counts (3 of them). */
int ofa_mbconv_bns(const ofa_mbconv *u, const ofa_bn **bns, int *channels);
/** Append the slot's batch norms (ofa_mbconv_bns()) to @p l. */
void ofa_bn_list_add_mbconv(ofa_bn_list *l, const ofa_mbconv *u);
/** The largest channel count of the slot's batch norms. */
int ofa_mbconv_bn_channels(const ofa_mbconv *u);
/**
 * Initial weights into @p params (a host copy of the parameter slab), drawn from @p r in
 * the order of ofa_mbconv_plan_weights(): uniform in +-1/sqrt(fan_in) (PyTorch's default
 * for convolutions and linear layers), kernel matrices the identity. Biases stay zero;
 * the batch norms are ofa_bn_init_values()'s.
 */
void ofa_mbconv_init_weights(const ofa_mbconv *u, manta_rng *r, float *params);

/** The active configuration of a slot: set the inputs, then ofa_mbconv_configure(). */
typedef struct ofa_mbconv_cfg {
    int ki;        /**< index of the kernel size in the spec's ks */
    int mid;       /**< expanded channels, 1 .. mid_max */
    int se;        /**< SE units, 1 .. se_max (ignored without SE) */
    int h, w;      /**< input size, 1 .. the planned h, w */
    bool residual; /**< identity skip: needs stride 1 and in_c == width */
    size_t in;     /**< activation offset of the input (N, in_c, h, w) */
    /* set by ofa_mbconv_configure() */
    int k, stride; /**< kernel size ks[ki]; the planned stride */
    int ho, wo;    /**< output size */
    size_t out;    /**< activation offset of the output (N, width, ho, wo) */
} ofa_mbconv_cfg;

/** OFA's SE units for @p mid expanded channels: make_divisible(mid / 4, 8). */
int ofa_mbconv_se_units(int mid);

/**
 * Check @p c against @p u and fill its derived fields.
 * @return MANTA_ERR_INVALID_ARG naming the field (message in @p err).
 */
manta_status ofa_mbconv_configure(const ofa_mbconv *u, ofa_mbconv_cfg *c, manta_err *err);

/**
 * The largest configuration of block @p j of a unit (OFA's: the unit's stride on its first
 * block, stride 1 after; mid_max make_divisible(in_c * e_max, 8)) on an (in_c, h, w) input,
 * with kernel sizes ks[0 .. n_ks).
 */
ofa_mbconv_spec ofa_mbconv_unit_spec(const ofa_unit_spec *unit, int j, int in_c, int e_max,
                                     int n_ks, const int *ks, int h, int w);
/**
 * Configure @p u as slot @p idx of sub-network @p a (OFA's: mid make_divisible(in_c *
 * a->e[idx], 8), ofa_mbconv_se_units(), kernel a->ks[idx], the identity skip wherever the
 * slot allows it) on an h x w input at activation @p in, then ofa_mbconv_configure().
 * @return MANTA_ERR_INVALID_ARG naming the field (message in @p err).
 */
manta_status ofa_mbconv_configure_arch(const ofa_mbconv *u, const ofa_arch *a, int idx, int h,
                                       int w, size_t in, ofa_mbconv_cfg *c, manta_err *err);

/**
 * Forward of @p u at @p c (configured) from activation c->in to c->out, with n->fwd_params
 * in n->fwd_bn's mode; a smaller kernel is transformed from the stored one first.
 * @return MANTA_ERR_INVALID_ARG for a slot able to have the identity skip configured
 *         without it on a network whose activations are planned by lifetime (n->apack:
 *         its p_bn is not kept); the ops' errors.
 */
manta_status ofa_mbconv_forward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c);
/**
 * Backward of the last ofa_mbconv_forward() of @p u at @p c (a TRAIN or BATCH_ONLY forward
 * on the own parameters), from the gradient at c->out: the input gradient at c->in is
 * overwritten (a network whose input feeds other layers too adds their gradients
 * afterwards); parameter gradients accumulate in the gradient slab, those of a smaller
 * kernel through the kernel matrices into the stored kernel and the matrices.
 */
manta_status ofa_mbconv_backward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c);

/* ---- elastic width: channel re-organisation ------------------------------------------------ */

/**
 * OFA's elastic-width re-organisation of the @p n_slots slots @p slots of the network
 * hosting @p n (the implementation of ofa_supernet_reorder_width() and of the stereo
 * network's): in every slot, the expanded channels are sorted by the L1 norm of the
 * projection weights that read them (descending; ties keep the lower index first) and
 * every tensor that depends on them is permuted alike: expand weights and batch norm,
 * depthwise weights (the stored largest kernel) and batch norm, SE reduce inputs and SE
 * expand outputs with their bias, projection inputs; the SE hidden units are then sorted
 * likewise by the L1 norm of the SE expand weights that read them (reduce outputs and
 * bias, expand inputs). The kernel matrices are shared by the channels and stay.
 * @p e, @p n_e: the network's expand ratios, ascending (those ofa_mbconv_configure_arch()
 * is given). With @p keep_groups > 0, channels are only sorted inside the groups delimited
 * by make_divisible(in_c * e[n_e - 1 - g], 8) for g = keep_groups .. 1, so the nesting of
 * an earlier width phase is kept (OFA's expand_ratio_stage). A sub-network that runs the
 * slots at their full width (the largest network) computes the same function before and
 * after, up to float rounding. The parameter and batch-norm state slabs change in place
 * (read to the host, permuted, written back; blocking); gradients and momentum are not
 * permuted: callers start a new phase with zero momentum.
 * @return MANTA_ERR_INVALID_ARG when keep_groups is not in [0, n_e) (message in
 *         mcl_err(n->d)); MANTA_ERR_NO_MEMORY; the device's error.
 */
manta_status ofa_net_reorder_width(ofa_net *n, const ofa_mbconv *slots, int n_slots, const int *e,
                                   int n_e, int keep_groups);

#endif
