#include "classify/tinynet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "core/rng.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/depthwise.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/pool.h"
#include "elastic/mbconv.h"

#define BN_MOMENTUM 0.1f
#define BN_EPS 1e-5f

typedef struct conv_l {
    nn_conv2d_shape s;
    size_t w;
} conv_l;
typedef struct dw_l {
    nn_dw_shape s;
    size_t w;
} dw_l;
typedef struct fc_l {
    nn_linear_shape s;
    size_t w, b;
} fc_l;
/* o: gamma, beta: parameter offsets; the rest: offsets in the state slab. */
typedef struct bn_l {
    nn_bn_shape s;
    ofa_bn o;
} bn_l;

/* Activation tensors, in forward order. Each has a gradient of the same size. */
enum {
    X0, /* (B, C, H, W) input */
    C1,
    B1,
    A1, /* conv3x3, BN, ReLU      (B, 16, H, W) */
    C2,
    B2,
    A2, /* dw3x3 s2, BN, h-swish  (B, 16, H2, W2) */
    C3,
    B3,
    A3, /* pw 16->32, BN, ReLU    (B, 32, H2, W2) */
    C4,
    B4,
    A4, /* dw5x5 s2, BN, h-swish  (B, 32, H4, W4) */
    S0,
    S1,
    S2,
    S3,
    S4, /* SE: pool, fc, ReLU, fc, h-sigmoid (B, 8|32) */
    SE, /* A4 * S4                (B, 32, H4, W4) */
    C5,
    B5,
    A5, /* dw3x3 s1, BN, ReLU6 */
    C6,
    B6,     /* pw 32->32, BN */
    RES,    /* SE + B6 */
    POOL,   /* (B, 32) */
    LOGITS, /* (B, classes) */
    TMP,    /* (B, 32, H4, W4): SE pooling gradient */
    LABELS,
    LOSSES, /* (B) */
    N_TENSORS
};

struct tinynet {
    mcl_dev *d;
    tinynet_config cfg;
    conv_l c1, c3, c6;
    dw_l c2, c4, c5;
    bn_l b1, b2, b3, b4, b5, b6;
    fc_l se_r, se_e, fc;
    size_t n_params, n_decay;
    size_t act_off[N_TENSORS], act_len[N_TENSORS];
    mslab params, grads, mom, state, acts, dacts, scratch;
    float *host_logits; /* (B, classes) */
};

size_t tinynet_param_count(const tinynet *t) { return t->n_params; }

/* Views of tensor i in the activation and activation-gradient slabs. */
static mview A(const tinynet *t, int i) { return mslab_view(&t->acts, t->act_off[i]); }
static mview G(const tinynet *t, int i) { return mslab_view(&t->dacts, t->act_off[i]); }
static mview P(const tinynet *t, size_t off) { return mslab_view(&t->params, off); }
static mview DP(const tinynet *t, size_t off) { return mslab_view(&t->grads, off); }
static mview S(const tinynet *t, size_t off) { return mslab_view(&t->state, off); }

static void bn_init(bn_l *b, int n, int c, int hw, mlayout *params, mlayout *state)
{
    b->s = (nn_bn_shape){n, c, hw};
    ofa_bn_plan(&b->o, c, params, state);
}

/* Initial values: Kaiming normal (fan-out) for convolutions, uniform for
 * linear layers, BN gamma 1 / beta 0 / running variance 1. */
static manta_status init_values(tinynet *t, uint64_t seed)
{
    float *p = calloc(t->params.floats, sizeof *p);
    float *s = calloc(t->state.floats, sizeof *s);
    if (!p || !s) {
        free(p);
        free(s);
        return manta_err_set(mcl_err(t->d), MANTA_ERR_NO_MEMORY, "tinynet: out of host memory");
    }
    manta_rng r;
    manta_rng_seed(&r, seed, 1);
    const conv_l *convs[] = {&t->c1, &t->c3, &t->c6};
    for (int i = 0; i < 3; i++) {
        const nn_conv2d_shape *cs = &convs[i]->s;
        size_t n = (size_t)cs->cout * cs->cin * cs->kh * cs->kw;
        manta_rng_fill_normal(&r, p + convs[i]->w, n,
                              sqrtf(2.0f / (float)(cs->cout * cs->kh * cs->kw)));
    }
    const dw_l *dws[] = {&t->c2, &t->c4, &t->c5};
    for (int i = 0; i < 3; i++) {
        const nn_dw_shape *ds = &dws[i]->s;
        size_t n = (size_t)ds->c * ds->k * ds->k;
        manta_rng_fill_normal(&r, p + dws[i]->w, n, sqrtf(2.0f / (float)(ds->k * ds->k)));
    }
    const fc_l *fcs[] = {&t->se_r, &t->se_e, &t->fc};
    for (int i = 0; i < 3; i++)
        manta_rng_fill_uniform(&r, p + fcs[i]->w, (size_t)fcs[i]->s.out * fcs[i]->s.in,
                               1.0f / sqrtf((float)fcs[i]->s.in));
    const bn_l *bns[] = {&t->b1, &t->b2, &t->b3, &t->b4, &t->b5, &t->b6};
    for (int i = 0; i < 6; i++)
        ofa_bn_init_values(&bns[i]->o, bns[i]->s.c, p, s);
    manta_status st = mcl_write(t->d, P(t, 0), p, t->params.floats);
    if (st == MANTA_OK)
        st = mcl_write(t->d, S(t, 0), s, t->state.floats);
    free(p);
    free(s);
    return st;
}

void tinynet_destroy(tinynet *t)
{
    if (!t)
        return;
    mslab *slabs[] = {&t->params, &t->grads, &t->mom, &t->state, &t->acts, &t->dacts, &t->scratch};
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        mslab_destroy(t->d, slabs[i]);
    free(t->host_logits);
    free(t);
}

manta_status tinynet_create(mcl_dev *d, const tinynet_config *cfg, uint64_t seed, tinynet **out)
{
    *out = NULL;
    if (cfg->channels < 1 || cfg->height < 8 || cfg->width < 8 || cfg->classes < 2 ||
        cfg->batch < 1 || cfg->label_smoothing < 0 || cfg->label_smoothing >= 1)
        return manta_err_set(
            mcl_err(d), MANTA_ERR_INVALID_ARG,
            "tinynet: bad configuration (channels %d, %dx%d, classes %d, batch %d)", cfg->channels,
            cfg->height, cfg->width, cfg->classes, cfg->batch);
    tinynet *t = calloc(1, sizeof *t);
    if (!t)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "tinynet: out of host memory");
    t->d = d;
    t->cfg = *cfg;
    const int B = cfg->batch, H = cfg->height, W = cfg->width, K = cfg->classes;

    /* shapes */
    t->c1.s = (nn_conv2d_shape){B, cfg->channels, H, W, 16, 3, 3, 1, 1, 1, 1, 0};
    t->c2.s = (nn_dw_shape){B, 16, H, W, 3, 2, 1};
    const int H2 = nn_dw_out_h(&t->c2.s), W2 = nn_dw_out_w(&t->c2.s);
    t->c3.s = (nn_conv2d_shape){B, 16, H2, W2, 32, 1, 1, 1, 1, 0, 0, 0};
    t->c4.s = (nn_dw_shape){B, 32, H2, W2, 5, 2, 2};
    const int H4 = nn_dw_out_h(&t->c4.s), W4 = nn_dw_out_w(&t->c4.s);
    t->se_r.s = (nn_linear_shape){B, 32, 8, 0};
    t->se_e.s = (nn_linear_shape){B, 8, 32, 0};
    t->c5.s = (nn_dw_shape){B, 32, H4, W4, 3, 1, 1};
    t->c6.s = (nn_conv2d_shape){B, 32, H4, W4, 32, 1, 1, 1, 1, 0, 0, 0};
    t->fc.s = (nn_linear_shape){B, 32, K, 0};

    /* parameters: decayed weights first, then BN parameters and biases */
    mlayout pl = {0}, sl = {0};
    t->c1.w = mlayout_add(&pl, (size_t)16 * cfg->channels * 9);
    t->c2.w = mlayout_add(&pl, 16 * 9);
    t->c3.w = mlayout_add(&pl, 32 * 16);
    t->c4.w = mlayout_add(&pl, 32 * 25);
    t->se_r.w = mlayout_add(&pl, 8 * 32);
    t->se_e.w = mlayout_add(&pl, 32 * 8);
    t->c5.w = mlayout_add(&pl, 32 * 9);
    t->c6.w = mlayout_add(&pl, 32 * 32);
    t->fc.w = mlayout_add(&pl, (size_t)K * 32);
    t->n_decay = pl.total;
    bn_init(&t->b1, B, 16, H * W, &pl, &sl);
    bn_init(&t->b2, B, 16, H2 * W2, &pl, &sl);
    bn_init(&t->b3, B, 32, H2 * W2, &pl, &sl);
    bn_init(&t->b4, B, 32, H4 * W4, &pl, &sl);
    bn_init(&t->b5, B, 32, H4 * W4, &pl, &sl);
    bn_init(&t->b6, B, 32, H4 * W4, &pl, &sl);
    t->se_r.b = mlayout_add(&pl, 8);
    t->se_e.b = mlayout_add(&pl, 32);
    t->fc.b = mlayout_add(&pl, (size_t)K);
    t->n_params = pl.total;

    /* activations, planned once for this batch size */
    const size_t big = (size_t)B * 16 * H * W, mid = (size_t)B * 16 * H2 * W2;
    const size_t wide = (size_t)B * 32 * H2 * W2, small = (size_t)B * 32 * H4 * W4;
    const size_t len[N_TENSORS] = {
        [X0] = (size_t)B * cfg->channels * H * W,
        [C1] = big,
        [B1] = big,
        [A1] = big,
        [C2] = mid,
        [B2] = mid,
        [A2] = mid,
        [C3] = wide,
        [B3] = wide,
        [A3] = wide,
        [C4] = small,
        [B4] = small,
        [A4] = small,
        [S0] = (size_t)B * 32,
        [S1] = (size_t)B * 8,
        [S2] = (size_t)B * 8,
        [S3] = (size_t)B * 32,
        [S4] = (size_t)B * 32,
        [SE] = small,
        [C5] = small,
        [B5] = small,
        [A5] = small,
        [C6] = small,
        [B6] = small,
        [RES] = small,
        [POOL] = (size_t)B * 32,
        [LOGITS] = (size_t)B * K,
        [TMP] = small,
        [LABELS] = (size_t)B,
        [LOSSES] = (size_t)B,
    };
    mlayout al = {0};
    for (int i = 0; i < N_TENSORS; i++) {
        t->act_len[i] = len[i];
        t->act_off[i] = mlayout_add(&al, len[i]);
    }
    /* one op scratch for every layer: the largest any of them needs */
    size_t need[] = {
        nn_conv2d_scratch_floats(d, &t->c1.s), nn_conv2d_scratch_floats(d, &t->c3.s),
        nn_conv2d_scratch_floats(d, &t->c6.s), nn_dw_scratch_floats(d, &t->c2.s),
        nn_dw_scratch_floats(d, &t->c4.s),     nn_dw_scratch_floats(d, &t->c5.s),
        nn_bn_scratch_floats(d, &t->b1.s),     nn_bn_scratch_floats(d, &t->b2.s),
        nn_bn_scratch_floats(d, &t->b3.s),     nn_bn_scratch_floats(d, &t->b4.s),
        nn_bn_scratch_floats(d, &t->b5.s),     nn_bn_scratch_floats(d, &t->b6.s),
    };
    size_t scratch = 1;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        scratch = need[i] > scratch ? need[i] : scratch;

    manta_status st = mslab_create(d, &t->params, pl.total, "parameters");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->grads, pl.total, "gradients");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->mom, pl.total, "momentum");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->state, sl.total, "batch-norm state");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->acts, al.total, "activations");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->dacts, al.total, "activation gradients");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->scratch, scratch, "op scratch");
    if (st == MANTA_OK && !(t->host_logits = malloc((size_t)B * K * sizeof(float))))
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "tinynet: out of host memory");
    if (st == MANTA_OK)
        st = init_values(t, seed);
    if (st != MANTA_OK) {
        tinynet_destroy(t);
        return st;
    }
    *out = t;
    return MANTA_OK;
}

/* ---- forward / backward ------------------------------------------------------ */

static manta_status bn_fwd(tinynet *t, const bn_l *b, int x, int y, bool train)
{
    if (train)
        return nn_bn_forward_train(t->d, &b->s, BN_MOMENTUM, BN_EPS, A(t, x), P(t, b->o.gamma),
                                   P(t, b->o.beta), S(t, b->o.rmean), S(t, b->o.rvar), A(t, y),
                                   S(t, b->o.smean), S(t, b->o.sinv), mslab_view(&t->scratch, 0));
    return nn_bn_forward_eval(t->d, &b->s, BN_EPS, A(t, x), P(t, b->o.gamma), P(t, b->o.beta),
                              S(t, b->o.rmean), S(t, b->o.rvar), A(t, y));
}

static manta_status bn_bwd(tinynet *t, const bn_l *b, int x, int y)
{
    return nn_bn_backward(t->d, &b->s, A(t, x), P(t, b->o.gamma), S(t, b->o.smean), S(t, b->o.sinv),
                          G(t, y), G(t, x), DP(t, b->o.gamma), DP(t, b->o.beta),
                          mslab_view(&t->scratch, 0));
}

static manta_status act_fwd(tinynet *t, nn_act a, int x, int y)
{
    return nn_act_forward(t->d, a, A(t, x), A(t, y), t->act_len[x]);
}

static manta_status act_bwd(tinynet *t, nn_act a, int x, int y)
{
    return nn_act_backward(t->d, a, A(t, x), G(t, y), G(t, x), t->act_len[x]);
}

/* The BN and activation after a convolution: y = BN(x), z = act(y). */
static manta_status bn_act_fwd(tinynet *t, const bn_l *b, nn_act a, int x, int y, int z, bool train)
{
    MANTA_TRY(bn_fwd(t, b, x, y, train));
    return act_fwd(t, a, y, z);
}

/* Gradients back through bn_act_fwd(): G(z) to G(x). */
static manta_status act_bn_bwd(tinynet *t, const bn_l *b, nn_act a, int x, int y, int z)
{
    MANTA_TRY(act_bwd(t, a, y, z));
    return bn_bwd(t, b, x, y);
}

static manta_status forward(tinynet *t, bool train)
{
    mcl_dev *d = t->d;
    mview scr = mslab_view(&t->scratch, 0);
    MANTA_TRY(nn_conv2d_forward(d, &t->c1.s, A(t, X0), P(t, t->c1.w), A(t, C1), scr));
    MANTA_TRY(bn_act_fwd(t, &t->b1, NN_ACT_RELU, C1, B1, A1, train));
    MANTA_TRY(nn_dw_forward(d, &t->c2.s, A(t, A1), P(t, t->c2.w), A(t, C2)));
    MANTA_TRY(bn_act_fwd(t, &t->b2, NN_ACT_HSWISH, C2, B2, A2, train));
    MANTA_TRY(nn_conv2d_forward(d, &t->c3.s, A(t, A2), P(t, t->c3.w), A(t, C3), scr));
    MANTA_TRY(bn_act_fwd(t, &t->b3, NN_ACT_RELU, C3, B3, A3, train));
    MANTA_TRY(nn_dw_forward(d, &t->c4.s, A(t, A3), P(t, t->c4.w), A(t, C4)));
    MANTA_TRY(bn_act_fwd(t, &t->b4, NN_ACT_HSWISH, C4, B4, A4, train));
    /* squeeze-and-excite */
    const size_t nc = (size_t)t->cfg.batch * 32, hw = t->act_len[A4] / nc;
    MANTA_TRY(nn_avgpool_forward(d, nc, hw, A(t, A4), A(t, S0)));
    MANTA_TRY(
        nn_linear_forward(d, &t->se_r.s, A(t, S0), P(t, t->se_r.w), P(t, t->se_r.b), A(t, S1)));
    MANTA_TRY(act_fwd(t, NN_ACT_RELU, S1, S2));
    MANTA_TRY(
        nn_linear_forward(d, &t->se_e.s, A(t, S2), P(t, t->se_e.w), P(t, t->se_e.b), A(t, S3)));
    MANTA_TRY(act_fwd(t, NN_ACT_HSIGMOID, S3, S4));
    MANTA_TRY(nn_scale_forward(d, nc, hw, A(t, A4), A(t, S4), A(t, SE)));
    /* residual block */
    MANTA_TRY(nn_dw_forward(d, &t->c5.s, A(t, SE), P(t, t->c5.w), A(t, C5)));
    MANTA_TRY(bn_act_fwd(t, &t->b5, NN_ACT_RELU6, C5, B5, A5, train));
    MANTA_TRY(nn_conv2d_forward(d, &t->c6.s, A(t, A5), P(t, t->c6.w), A(t, C6), scr));
    MANTA_TRY(bn_fwd(t, &t->b6, C6, B6, train));
    MANTA_TRY(nn_add(d, t->act_len[RES], A(t, SE), A(t, B6), A(t, RES)));
    /* head */
    MANTA_TRY(nn_avgpool_forward(d, nc, hw, A(t, RES), A(t, POOL)));
    return nn_linear_forward(d, &t->fc.s, A(t, POOL), P(t, t->fc.w), P(t, t->fc.b), A(t, LOGITS));
}

/* Gradients of everything from G(LOGITS) back to the first layer's weights. */
static manta_status backward(tinynet *t)
{
    mcl_dev *d = t->d;
    mview scr = mslab_view(&t->scratch, 0), none = {NULL, 0};
    const size_t nc = (size_t)t->cfg.batch * 32, hw = t->act_len[A4] / nc;
    MANTA_TRY(nn_linear_backward(d, &t->fc.s, A(t, POOL), P(t, t->fc.w), G(t, LOGITS), G(t, POOL),
                                 DP(t, t->fc.w), DP(t, t->fc.b)));
    MANTA_TRY(nn_avgpool_backward(d, nc, hw, G(t, POOL), G(t, RES)));
    /* RES = SE + B6: both inputs receive G(RES); B6's gradient is read in place */
    MANTA_TRY(nn_bn_backward(d, &t->b6.s, A(t, C6), P(t, t->b6.o.gamma), S(t, t->b6.o.smean),
                             S(t, t->b6.o.sinv), G(t, RES), G(t, C6), DP(t, t->b6.o.gamma),
                             DP(t, t->b6.o.beta), scr));
    MANTA_TRY(nn_conv2d_backward(d, &t->c6.s, A(t, A5), P(t, t->c6.w), G(t, C6), G(t, A5),
                                 DP(t, t->c6.w), scr));
    MANTA_TRY(act_bn_bwd(t, &t->b5, NN_ACT_RELU6, C5, B5, A5));
    MANTA_TRY(nn_dw_backward(d, &t->c5.s, A(t, SE), P(t, t->c5.w), G(t, C5), G(t, SE),
                             DP(t, t->c5.w), scr));
    MANTA_TRY(nn_axpy(d, t->act_len[SE], 1.0f, G(t, RES), G(t, SE)));
    /* squeeze-and-excite: SE = A4 * S4 */
    MANTA_TRY(nn_scale_backward(d, nc, hw, A(t, A4), A(t, S4), G(t, SE), G(t, A4), G(t, S4)));
    MANTA_TRY(act_bwd(t, NN_ACT_HSIGMOID, S3, S4));
    MANTA_TRY(nn_linear_backward(d, &t->se_e.s, A(t, S2), P(t, t->se_e.w), G(t, S3), G(t, S2),
                                 DP(t, t->se_e.w), DP(t, t->se_e.b)));
    MANTA_TRY(act_bwd(t, NN_ACT_RELU, S1, S2));
    MANTA_TRY(nn_linear_backward(d, &t->se_r.s, A(t, S0), P(t, t->se_r.w), G(t, S1), G(t, S0),
                                 DP(t, t->se_r.w), DP(t, t->se_r.b)));
    MANTA_TRY(nn_avgpool_backward(d, nc, hw, G(t, S0), G(t, TMP)));
    MANTA_TRY(nn_axpy(d, t->act_len[A4], 1.0f, G(t, TMP), G(t, A4)));
    /* trunk */
    MANTA_TRY(act_bn_bwd(t, &t->b4, NN_ACT_HSWISH, C4, B4, A4));
    MANTA_TRY(nn_dw_backward(d, &t->c4.s, A(t, A3), P(t, t->c4.w), G(t, C4), G(t, A3),
                             DP(t, t->c4.w), scr));
    MANTA_TRY(act_bn_bwd(t, &t->b3, NN_ACT_RELU, C3, B3, A3));
    MANTA_TRY(nn_conv2d_backward(d, &t->c3.s, A(t, A2), P(t, t->c3.w), G(t, C3), G(t, A2),
                                 DP(t, t->c3.w), scr));
    MANTA_TRY(act_bn_bwd(t, &t->b2, NN_ACT_HSWISH, C2, B2, A2));
    MANTA_TRY(nn_dw_backward(d, &t->c2.s, A(t, A1), P(t, t->c2.w), G(t, C2), G(t, A1),
                             DP(t, t->c2.w), scr));
    MANTA_TRY(act_bn_bwd(t, &t->b1, NN_ACT_RELU, C1, B1, A1));
    return nn_conv2d_backward(d, &t->c1.s, A(t, X0), P(t, t->c1.w), G(t, C1), none, DP(t, t->c1.w),
                              scr);
}

static manta_status upload_batch(tinynet *t, const float *images)
{
    return mcl_write(t->d, A(t, X0), images, t->act_len[X0]);
}

static int count_correct(const tinynet *t, const float *labels)
{
    int correct = 0, K = t->cfg.classes;
    for (int b = 0; b < t->cfg.batch; b++) {
        const float *row = t->host_logits + (size_t)b * K;
        int best = 0;
        for (int k = 1; k < K; k++)
            if (row[k] > row[best])
                best = k;
        correct += best == (int)labels[b];
    }
    return correct;
}

manta_status tinynet_train_step(tinynet *t, const float *images, const float *labels,
                                const optim_sgd *opt, float lr, tinynet_step_result *out)
{
    mcl_dev *d = t->d;
    const int B = t->cfg.batch, K = t->cfg.classes;
    MANTA_TRY(upload_batch(t, images));
    MANTA_TRY(mcl_write(d, A(t, LABELS), labels, (size_t)B));
    MANTA_TRY(mcl_fill(d, DP(t, 0), 0.0f, t->n_params));
    MANTA_TRY(forward(t, true));
    MANTA_TRY(nn_xent_forward_backward(d, B, K, t->cfg.label_smoothing, A(t, LOGITS), A(t, LABELS),
                                       A(t, LOSSES), G(t, LOGITS), 1.0f / (float)B, 0.0f));
    MANTA_TRY(backward(t));
    MANTA_TRY(optim_sgd_step(d, opt, lr, 1.0f, P(t, 0), DP(t, 0), mslab_view(&t->mom, 0),
                             t->n_decay, t->n_params));
    if (out) {
        float losses[1024];
        float sum = 0;
        for (int b0 = 0; b0 < B; b0 += 1024) {
            int n = B - b0 < 1024 ? B - b0 : 1024;
            MANTA_TRY(mcl_read(d, mview_at(A(t, LOSSES), (size_t)b0), losses, (size_t)n));
            for (int i = 0; i < n; i++)
                sum += losses[i];
        }
        MANTA_TRY(mcl_read(d, A(t, LOGITS), t->host_logits, (size_t)B * K));
        out->loss = sum / (float)B;
        out->correct = count_correct(t, labels);
    }
    return mcl_finish(d);
}

manta_status tinynet_predict(tinynet *t, const float *images, float *logits)
{
    MANTA_TRY(upload_batch(t, images));
    MANTA_TRY(forward(t, false));
    return mcl_read(t->d, A(t, LOGITS), logits, (size_t)t->cfg.batch * t->cfg.classes);
}
