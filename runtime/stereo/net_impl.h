/* The stereo network's fields, for the code that reads its parameters by layer beside
 * net.c: the extraction into an export graph (stereo/extract.c). Not a public interface. */
#ifndef MANTA_STEREO_NET_INTERNAL_H
#define MANTA_STEREO_NET_INTERNAL_H

#include "elastic/mbconv.h"
#include "stereo/net.h"

/* One active MBConv slot: its index and its configuration. */
typedef struct stereo_slot {
    int idx;
    ofa_mbconv_cfg c;
} stereo_slot;

/* A decoder level: it takes 1/2^(L-i) to an h x w output (1/2^(L-i-1)), width channels
 * at most, aw in the active sub-network. */
typedef struct stereo_level {
    int cin;      /* channels of its input (the deconvolution's), at most */
    int width;    /* dec_width[i] */
    int skip_c;   /* channels of the skip */
    int h, w;     /* output size */
    int acin, aw; /* the active sub-network's input channels and width (set_arch) */
    /* parameters: deconv (cin, width, 4, 4) + (width), 3x3 conv (width, cat_max, 3, 3) +
     * (width), 3x3 prediction (1, width, 3, 3) + (1); the active sub-network uses the
     * first acin rows and aw columns of the deconvolution, the first aw rows and
     * cat_c inputs of the 3x3 conv, the first aw inputs of the prediction */
    size_t up_w, up_b, conv_w, conv_b, pred_w, pred_b;
    /* activations: deconv output and its activation (N, aw, h, w), the coarser
     * prediction upsampled (N, 1, h, w), the concatenation (N, cat_c, h, w), the 3x3 conv
     * and its activation (N, aw, h, w); the prediction is stereo_net.pred[i + 1]; planned
     * for the widest */
    size_t up, up_act, upp, cat, conv, conv_act;
    size_t in;   /* the deconvolution's input: level i-1's conv_act, or the last unit's output */
    size_t skip; /* the skip: the left path's last tensor at the output scale (set_arch) */
} stereo_level;

struct stereo_net {
    ofa_net net; /* device, batch (2N on the shared part, N elsewhere), slabs, BN mode */
    stereo_space s;
    int pairs;          /* N */
    int H, W;           /* the input size of the passes (stereo_net_set_size()) */
    int plan_h, plan_w; /* the largest: what the activations are planned for */
    size_t n_params, n_decay, n_state;
    /* geometry (at H x W) */
    int h1, w1;     /* after the stem */
    int cc, hc, wc; /* the correlation's input: channels and size */
    int dcorr;      /* correlation channels */
    int cl, hl, wl; /* the last unit's output */
    /* parameters */
    size_t stem_w, redir_w, pred0_w, pred0_b;
    ofa_bn stem_bn, redir_bn;
    ofa_mbconv slot[OFA_MAX_SLOTS];
    stereo_level lev[STEREO_MAX_LEVELS];
    /* activations */
    size_t x0, stem_conv, stem_bn_t, stem_act;            /* (2N, ...) */
    size_t corr, redir_conv, redir_bn_t, redir_act, ccat; /* (N, ...) at the correlation's scale */
    size_t pred[STEREO_MAX_PREDS];                        /* (N, 1, h_p, w_p) */
    size_t gpred[STEREO_MAX_PREDS]; /* total gradient of prediction p (the finest: pred[L]) */
    size_t gtmp; /* gradient from a second consumer, added after the first one's backward */
    /* the active sub-network */
    bool have_arch;
    int n_active, n_shared; /* active slots; the first n_shared run on both views */
    stereo_slot active[OFA_MAX_SLOTS];
    ofa_arch arch;     /* the active sub-network, configured again by a new size */
    size_t shared_out; /* the last shared tensor (2N, cc, hc, wc), the correlation's input */
    size_t last_out;   /* the last unit's output (N, cl, hl, wl) */
};

/* Channels of the concatenation [skip, upsampled prediction, deconv]: the widest, the
 * active. */
static inline int cat_max(const stereo_level *l) { return l->skip_c + 1 + l->width; }
static inline int cat_c(const stereo_level *l) { return l->skip_c + 1 + l->aw; }

#endif
