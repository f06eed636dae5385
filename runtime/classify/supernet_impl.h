/* Internal layout of the supernet, shared by the files of runtime/classify/ that
 * need its tensors (supernet.c, extract.c). Not a public interface. */
#ifndef MANTA_CLASSIFY_SUPERNET_INTERNAL_H
#define MANTA_CLASSIFY_SUPERNET_INTERNAL_H

#include "cl/slab.h"
#include "elastic/mbconv.h"
#include "classify/supernet.h"

/* One active MBConv slot: its index in the supernet and its configuration. */
typedef struct slot_a {
    int idx;
    ofa_mbconv_cfg c;
} slot_a;

struct ofa_supernet {
    ofa_net net; /* device, batch, slabs (momentum too), forward mode, BN sync */
    ofa_space s;
    /* parameters */
    size_t stem_w, first_dw, first_p, head_w, mix_w, cls_w, cls_b;
    ofa_bn stem_bn, first_dbn, first_pbn, head_bn;
    ofa_mbconv slot[OFA_MAX_SLOTS];
    size_t n_params, n_decay, n_state;
    /* activations */
    size_t x0, stem_conv, stem_bn_t, stem_act, f_dconv, f_dbn, f_dact, f_pconv, f_pbn, f_out;
    size_t h_conv, h_bn, h_act, h_pool, m_lin, m_act, drop, logits;
    /* active sub-network */
    ofa_arch arch;
    bool have_arch;
    int stem_stride, h0, hs; /* input size, size after the stem */
    int n_active;
    slot_a active[OFA_MAX_SLOTS];
    int last_c, last_h;
    size_t head_in; /* activation offset of the head's input */
    bool first_residual;
    uint64_t dropout_seed;
    bool fwd_dropout;             /* the last forward applied dropout */
    ofa_grad_ready_fn grad_ready; /* progress of the backward, or NULL */
    void *grad_ready_ctx;
    uint32_t drop_off; /* dropout mask offset: first sample of this shard * features */
    long first_sample; /* first sample of this replica's shard in the global batch */
};

/** Output size of a convolution with padding k/2. */
static inline int ofa_out_size(int in, int k, int stride)
{
    return (in + 2 * (k / 2) - k) / stride + 1;
}

#endif
