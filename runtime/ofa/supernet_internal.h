/* Internal layout of the supernet, shared by the files of runtime/ofa/ that
 * need its tensors (supernet.c, extract.c). Not a public interface. */
#ifndef MANTA_OFA_SUPERNET_INTERNAL_H
#define MANTA_OFA_SUPERNET_INTERNAL_H

#include "cl/slab.h"
#include "ofa/supernet.h"

#define BN_MOMENTUM 0.1f
#define BN_EPS 1e-5f
#define KMAX_SLOTS 4 /* kernel sizes: matrices between consecutive sizes */

/* A batch norm: parameter offsets (gamma, beta) and state offsets. */
typedef struct bn_p {
    size_t gamma, beta, rmean, rvar, smean, sinv;
} bn_p;

/* Activation tensors of one MBConv slot (offsets into the activation slab;
 * each has a gradient at the same offset of the gradient slab). */
typedef struct slot_t {
    size_t e_conv, e_bn, e_act, d_conv, d_bn, d_act;
    size_t se_pool, se_r, se_relu, se_e, se_hsig, se_out;
    size_t p_conv, p_bn, out;
    size_t kw[KMAX_SLOTS]; /* transformed depthwise kernels, one per smaller size */
} slot_t;

/* Parameters of one MBConv slot, at its largest width. */
typedef struct slot_p {
    int in_c, mid_max, se_max, width, stride;
    nn_act act;
    bool se;
    size_t e_w, dw_w, se_r_w, se_r_b, se_e_w, se_e_b, p_w;
    size_t kmat[KMAX_SLOTS]; /* kmat[i]: ks[i+1] -> ks[i] matrix */
    bn_p e_bn, d_bn, p_bn;
    slot_t t;
} slot_p;

/* The active configuration of one slot. */
typedef struct slot_a {
    int idx;           /* slot index */
    int mid, se, k, ki; /* ki: index of k in space->ks */
    int h, w, ho, wo;  /* input and output spatial size */
    bool residual;
    size_t in;         /* activation offset of the block input */
} slot_a;

struct ofa_supernet {
    mcl_dev *d;
    ofa_space s;
    int batch;
    /* parameters */
    size_t stem_w, first_dw, first_p, head_w, mix_w, cls_w, cls_b;
    bn_p stem_bn, first_dbn, first_pbn, head_bn;
    slot_p slot[OFA_MAX_SLOTS];
    size_t n_params, n_decay, n_state;
    /* activations */
    size_t x0, stem_conv, stem_bn_t, stem_act, f_dconv, f_dbn, f_dact, f_pconv, f_pbn, f_out;
    size_t h_conv, h_bn, h_act, h_pool, m_lin, m_act, drop, logits, tmp;
    mslab params, grads, mom, state, acts, dacts, scratch;
    /* active sub-network */
    ofa_arch arch;
    bool have_arch;
    int stem_stride, h0, hs; /* input size, size after the stem */
    int n_active;
    slot_a active[OFA_MAX_SLOTS];
    int last_c, last_h;
    size_t head_in; /* activation offset of the head's input */
    bool first_residual;
    mview fwd_params; /* parameters of the last forward */
    ofa_bn_mode fwd_bn;
    float recal_weight; /* batch / total images of a re-calibration */
    uint64_t dropout_seed;
    bool fwd_dropout;   /* the last forward applied dropout */
    size_t stats_tmp;   /* (2, widest channel count) batch mean and variance */
    int widest;         /* widest channel count of a batch norm */
    ofa_bn_sync_fn bn_sync; /* synchronised batch norm across replicas, or NULL */
    void *bn_sync_ctx;
    ofa_grad_ready_fn grad_ready; /* progress of the backward, or NULL */
    void *grad_ready_ctx;
    float *sync_host;   /* (2, widest) host copy of the statistics being synchronised */
    uint32_t drop_off;  /* dropout mask offset: first sample of this shard * features */
    long first_sample;  /* first sample of this replica's shard in the global batch */
};

/** Output size of a convolution with padding k/2. */
static inline int ofa_out_size(int in, int k, int stride) { return (in + 2 * (k / 2) - k) / stride + 1; }

#endif
