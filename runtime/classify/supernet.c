#include "classify/supernet.h"
#include "classify/supernet_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "nn/activation.h"
#include "nn/conv.h"
#include "nn/depthwise.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/pool.h"

const ofa_space *ofa_supernet_space(const ofa_supernet *n) { return &n->s; }
int ofa_supernet_batch(const ofa_supernet *n) { return n->net.batch; }

void ofa_supernet_slabs(const ofa_supernet *n, ofa_slabs *o)
{
    ofa_net_slabs(&n->net, n->n_params, n->n_decay, n->n_state, o);
}

static mview A(const ofa_supernet *n, size_t off) { return ofa_net_a(&n->net, off); }
static mview G(const ofa_supernet *n, size_t off) { return ofa_net_ga(&n->net, off); }
static mview DP(const ofa_supernet *n, size_t off) { return ofa_net_gp(&n->net, off); }
/* Parameters of the current forward (the own slab or a teacher copy). */
static mview PW(const ofa_supernet *n, size_t off) { return ofa_net_p(&n->net, off); }
/* The op scratch, shared by every layer (no op keeps data in it between calls). */
static mview SCR(const ofa_supernet *n) { return ofa_net_scratch(&n->net); }

mview ofa_supernet_input(const ofa_supernet *n) { return A(n, n->x0); }
mview ofa_supernet_logits(const ofa_supernet *n) { return A(n, n->logits); }
mview ofa_supernet_dlogits(const ofa_supernet *n) { return G(n, n->logits); }

/* ---- layout ------------------------------------------------------------------------ */

/* Decayed parameters: every weight matrix (stem, first block, the slots' weights, head,
 * classifier). */
static manta_status plan_weights(ofa_supernet *n, mlayout *pl)
{
    const ofa_space *s = &n->s;
    const int r = s->res[s->n_res - 1];
    int h = ofa_out_size(r, s->stem_kernel, r <= s->stem_stride1_max_res ? 1 : 2);
    n->stem_w =
        mlayout_add(pl, (size_t)s->stem_width * s->in_channels * s->stem_kernel * s->stem_kernel);
    n->first_dw = mlayout_add(pl, (size_t)s->stem_width * 9);
    n->first_p = mlayout_add(pl, (size_t)s->first_width * s->stem_width);
    int c = s->first_width;
    for (int u = 0; u < s->n_units; u++)
        for (int j = 0; j < s->max_depth; j++) {
            ofa_mbconv_spec sp =
                ofa_mbconv_unit_spec(&s->unit[u], j, c, s->e[s->n_e - 1], s->n_ks, s->ks, h, h);
            MANTA_TRY(ofa_mbconv_plan_weights(&n->slot[u * s->max_depth + j], &sp, pl,
                                              mcl_err(n->net.d)));
            c = sp.width;
            h = ofa_out_size(h, 1, sp.stride);
        }
    n->head_w = mlayout_add(pl, (size_t)s->head_expand * c);
    int feat = s->head_expand;
    if (s->head_mix > 0) {
        n->mix_w = mlayout_add(pl, (size_t)s->head_mix * s->head_expand);
        feat = s->head_mix;
    }
    n->cls_w = mlayout_add(pl, (size_t)s->classes * feat);
    return MANTA_OK;
}

/* Every batch norm of the supernet with its (largest) channel count. */
static void collect_bns(ofa_supernet *n)
{
    const ofa_space *s = &n->s;
    ofa_bn_list *l = &n->net.bns;
    l->n = 0;
    ofa_bn_list_add(l, &n->stem_bn, s->stem_width);
    ofa_bn_list_add(l, &n->first_dbn, s->stem_width);
    ofa_bn_list_add(l, &n->first_pbn, s->first_width);
    for (int i = 0; i < ofa_slots(s); i++)
        ofa_bn_list_add_mbconv(l, &n->slot[i]);
    ofa_bn_list_add(l, &n->head_bn, s->head_expand);
}

/* Plan parameters (decayed first), state and activations for the largest
 * network at the largest resolution, and the op scratch. */
static manta_status plan(void *net_, mlayout *pl, mlayout *sl, mlayout *al, size_t *scratch)
{
    ofa_supernet *n = net_;
    const ofa_space *s = &n->s;
    ofa_net *net = &n->net;
    const size_t B = (size_t)net->batch;
    MANTA_TRY(plan_weights(n, pl));
    n->n_decay = pl->total;
    /* not decayed: batch norm and biases */
    ofa_bn_plan(&n->stem_bn, s->stem_width, pl, sl);
    ofa_bn_plan(&n->first_dbn, s->stem_width, pl, sl);
    ofa_bn_plan(&n->first_pbn, s->first_width, pl, sl);
    for (int i = 0; i < ofa_slots(s); i++)
        ofa_mbconv_plan_bn(&n->slot[i], pl, sl);
    ofa_bn_plan(&n->head_bn, s->head_expand, pl, sl);
    n->cls_b = mlayout_add(pl, (size_t)s->classes);
    n->n_params = pl->total;
    n->n_state = sl->total;

    /* activations at the largest resolution and widths */
    const int r = s->res[s->n_res - 1];
    const int sstride = r <= s->stem_stride1_max_res ? 1 : 2;
    int h = ofa_out_size(r, s->stem_kernel, sstride);
    n->x0 = mlayout_add(al, B * s->in_channels * r * r);
    size_t st = B * s->stem_width * h * h;
    n->stem_conv = mlayout_add(al, st);
    n->stem_bn_t = ofa_net_act_in_plan(al, s->stem_act, st);
    n->stem_act = mlayout_add(al, st);
    n->f_dconv = mlayout_add(al, st);
    n->f_dbn = ofa_net_act_in_plan(al, s->first_act, st);
    n->f_dact = mlayout_add(al, st);
    size_t fo = B * s->first_width * h * h;
    n->f_pconv = mlayout_add(al, fo);
    n->f_pbn = mlayout_add(al, fo);
    n->f_out = mlayout_add(al, fo);
    nn_conv2d_shape cs = {net->batch,
                          s->in_channels,
                          r,
                          r,
                          s->stem_width,
                          s->stem_kernel,
                          s->stem_kernel,
                          sstride,
                          sstride,
                          s->stem_kernel / 2,
                          s->stem_kernel / 2,
                          0};
    *scratch = 0;
    ofa_net_need_conv(net, scratch, &cs);
    ofa_net_need_bn(net, scratch, s->stem_width, h * h);
    ofa_net_need_bn(net, scratch, s->first_width, h * h);
    ofa_net_need_dw(net, scratch, s->stem_width, h, h, 3, 1);
    for (int i = 0; i < ofa_slots(s); i++) {
        ofa_mbconv_plan_acts(net, &n->slot[i], al, scratch);
        h = ofa_out_size(h, 1, n->slot[i].stride);
    }
    const int c = n->slot[ofa_slots(s) - 1].width;
    size_t hd = B * s->head_expand * h * h;
    n->h_conv = mlayout_add(al, hd);
    n->h_bn = mlayout_add(al, hd);
    n->h_act = mlayout_add(al, hd);
    n->h_pool = mlayout_add(al, B * s->head_expand);
    nn_conv2d_shape hs = ofa_net_pw_shape(net, c, h, h, s->head_expand, 0);
    ofa_net_need_conv(net, scratch, &hs);
    ofa_net_need_bn(net, scratch, s->head_expand, h * h);
    if (s->head_mix > 0) {
        n->m_lin = mlayout_add(al, B * s->head_mix);
        n->m_act = mlayout_add(al, B * s->head_mix);
    }
    n->drop = mlayout_add(al, B * (size_t)(s->head_mix > 0 ? s->head_mix : s->head_expand));
    n->logits = mlayout_add(al, B * s->classes);
    collect_bns(n);
    ofa_net_plan_stats(&n->net, al, ofa_bn_list_widest(&n->net.bns));
    return MANTA_OK;
}

/* ---- creation ------------------------------------------------------------------------ */

/* Uniform weights of a layer with @p fan_in inputs per output: the bound
 * 1/sqrt(fan_in) of PyTorch's default initialisation of Conv2d and Linear. */
static void fill_fan_in(manta_rng *r, float *w, size_t count, int fan_in)
{
    manta_rng_fill_uniform(r, w, count, 1.0f / sqrtf((float)fan_in));
}

/* PyTorch's default initialisation of convolutions and linear layers
 * (uniform in +-1/sqrt(fan_in), fan_in = in_channels / groups * k * k),
 * biases 0, BN gamma 1 and beta 0, running variance 1, kernel matrices the
 * identity. OFA's "he_fout" (normal, std sqrt(2 / (k*k*out))) makes the
 * projection convolutions 6x larger and trains much more slowly over short
 * schedules: 234 steps of the largest sub-network at 28 px reached 72.7%
 * validation top-1 with it and 82% with this one (docs/ofa.md). The batch norms are
 * ofa_net_write_init()'s. */
static void init_values(const void *net, manta_rng *r, float *p)
{
    const ofa_supernet *n = net;
    const ofa_space *s = &n->s;
    const int ks = s->stem_kernel;
    fill_fan_in(r, p + n->stem_w, (size_t)s->stem_width * s->in_channels * ks * ks,
                s->in_channels * ks * ks);
    fill_fan_in(r, p + n->first_dw, (size_t)s->stem_width * 9, 9);
    fill_fan_in(r, p + n->first_p, (size_t)s->first_width * s->stem_width, s->stem_width);
    int c = s->first_width;
    for (int i = 0; i < ofa_slots(s); i++) {
        ofa_mbconv_init_weights(&n->slot[i], r, p);
        c = n->slot[i].width;
    }
    fill_fan_in(r, p + n->head_w, (size_t)s->head_expand * c, c);
    int feat = s->head_expand;
    if (s->head_mix > 0) {
        fill_fan_in(r, p + n->mix_w, (size_t)s->head_mix * s->head_expand, s->head_expand);
        feat = s->head_mix;
    }
    manta_rng_fill_uniform(r, p + n->cls_w, (size_t)s->classes * feat, 1.0f / sqrtf((float)feat));
}

void ofa_supernet_destroy(ofa_supernet *n)
{
    if (!n)
        return;
    ofa_net_free(&n->net);
    free(n);
}

manta_status ofa_supernet_create(mcl_dev *d, const ofa_space *space, int batch, uint64_t seed,
                                 ofa_supernet **out)
{
    *out = NULL;
    if (batch < 1 || space->n_ks < 1 || space->n_ks > OFA_MBCONV_MAX_KS || space->n_units < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "supernet: batch %d or space '%s' out of range", batch, space->name);
    ofa_supernet *n = calloc(1, sizeof *n);
    if (!n)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "supernet: out of host memory");
    static const ofa_net_recipe recipe = {plan,
                                          init_values,
                                          0x5eed,
                                          "supernet parameters",
                                          "supernet gradients",
                                          "supernet momentum",
                                          "supernet"};
    n->s = *space;
    manta_status st = ofa_net_create(&n->net, d, batch, &recipe, n, seed);
    if (st != MANTA_OK)
        ofa_supernet_destroy(n);
    *out = st == MANTA_OK ? n : NULL;
    return st;
}

/* ---- the active sub-network -------------------------------------------------------- */

manta_status ofa_supernet_set_arch(ofa_supernet *n, const ofa_arch *a)
{
    const ofa_space *s = &n->s;
    manta_err *err = mcl_err(n->net.d);
    MANTA_TRY(ofa_arch_validate(s, a, err));
    const int stem_stride = a->r <= s->stem_stride1_max_res ? 1 : 2;
    const int hs = ofa_out_size(a->r, s->stem_kernel, stem_stride);
    const bool first_residual = s->stem_width == s->first_width;
    size_t cur = first_residual ? n->f_out : n->f_pbn;
    int h = hs, c = s->first_width, n_active = 0;
    slot_a active[OFA_MAX_SLOTS];
    for (int u = 0; u < s->n_units; u++)
        for (int j = 0; j < a->d[u]; j++) {
            const int idx = u * s->max_depth + j;
            const ofa_mbconv *p = &n->slot[idx];
            slot_a *x = &active[n_active++];
            x->idx = idx;
            MANTA_TRY(ofa_mbconv_configure_arch(p, a, idx, h, h, cur, &x->c, err));
            cur = x->c.out;
            h = x->c.ho;
            c = p->width;
        }
    n->arch = *a;
    n->h0 = a->r;
    n->stem_stride = stem_stride;
    n->hs = hs;
    n->first_residual = first_residual;
    n->n_active = n_active;
    memcpy(n->active, active, (size_t)n_active * sizeof *active);
    n->head_in = cur;
    n->last_c = c;
    n->last_h = h;
    n->have_arch = true;
    return MANTA_OK;
}

/* ---- forward ------------------------------------------------------------------------- */

static manta_status bn_fwd(ofa_supernet *n, const ofa_bn *b, int c, int hw, size_t x, size_t y)
{
    return ofa_net_bn_forward(&n->net, b, c, hw, x, y);
}

static manta_status bn_bwd(ofa_supernet *n, const ofa_bn *b, int c, int hw, size_t x, size_t dy,
                           size_t dx)
{
    return ofa_net_bn_backward(&n->net, b, c, hw, x, dy, dx);
}

static manta_status act_fwd(ofa_supernet *n, nn_act a, size_t len, size_t x, size_t y)
{
    return ofa_net_act_forward(&n->net, a, len, x, y);
}

/* dx = dy * a'(x); dy is the gradient of the activation's output y, whose offset it shares:
 * read where the gradient is a function of it (ofa_net_act_backward_xy(); x need not be kept). */
static manta_status act_bwd(ofa_supernet *n, nn_act a, size_t len, size_t x, size_t dy, size_t dx)
{
    return ofa_net_act_backward_xy(&n->net, a, len, x, dy, dy, dx);
}

/* The 1x1 convolution on square (h, h) maps of the classification network. */
static nn_conv2d_shape pw_shape(const ofa_supernet *n, int cin, int h, int cout, int w_ld)
{
    return ofa_net_pw_shape(&n->net, cin, h, h, cout, w_ld);
}

manta_status ofa_supernet_recal_begin(ofa_supernet *n, long total_images)
{
    return ofa_net_recal_begin(&n->net, total_images);
}

manta_status ofa_supernet_forward(ofa_supernet *n, mview params, ofa_bn_mode bn)
{
    if (!n->have_arch)
        return manta_err_set(mcl_err(n->net.d), MANTA_ERR_INVALID_ARG,
                             "supernet: forward before an architecture was set");
    mcl_dev *d = n->net.d;
    const ofa_space *s = &n->s;
    const size_t B = (size_t)n->net.batch;
    n->net.fwd_params = params;
    n->net.fwd_bn = bn;
    const int k = s->stem_kernel, hs = n->hs;
    const size_t shw = (size_t)hs * hs;
    nn_conv2d_shape stem = {
        n->net.batch,   s->in_channels, n->h0, n->h0, s->stem_width, k, k, n->stem_stride,
        n->stem_stride, k / 2,          k / 2, 0};
    MANTA_TRY(
        nn_conv2d_forward(d, &stem, A(n, n->x0), PW(n, n->stem_w), A(n, n->stem_conv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &n->stem_bn, s->stem_width, (int)shw, n->stem_conv, n->stem_bn_t));
    MANTA_TRY(act_fwd(n, s->stem_act, B * s->stem_width * shw, n->stem_bn_t, n->stem_act));
    nn_dw_shape fdw = {n->net.batch, s->stem_width, hs, hs, 3, 1, 1};
    MANTA_TRY(nn_dw_forward(d, &fdw, A(n, n->stem_act), PW(n, n->first_dw), A(n, n->f_dconv)));
    MANTA_TRY(bn_fwd(n, &n->first_dbn, s->stem_width, (int)shw, n->f_dconv, n->f_dbn));
    MANTA_TRY(act_fwd(n, s->first_act, B * s->stem_width * shw, n->f_dbn, n->f_dact));
    nn_conv2d_shape fp = pw_shape(n, s->stem_width, hs, s->first_width, 0);
    MANTA_TRY(
        nn_conv2d_forward(d, &fp, A(n, n->f_dact), PW(n, n->first_p), A(n, n->f_pconv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &n->first_pbn, s->first_width, (int)shw, n->f_pconv, n->f_pbn));
    if (n->first_residual)
        MANTA_TRY(
            nn_add(d, B * s->first_width * shw, A(n, n->stem_act), A(n, n->f_pbn), A(n, n->f_out)));
    for (int i = 0; i < n->n_active; i++)
        MANTA_TRY(ofa_mbconv_forward(&n->net, &n->slot[n->active[i].idx], &n->active[i].c));
    const size_t hhw = (size_t)n->last_h * n->last_h;
    nn_conv2d_shape hd = pw_shape(n, n->last_c, n->last_h, s->head_expand, 0);
    MANTA_TRY(
        nn_conv2d_forward(d, &hd, A(n, n->head_in), PW(n, n->head_w), A(n, n->h_conv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &n->head_bn, s->head_expand, (int)hhw, n->h_conv, n->h_bn));
    MANTA_TRY(act_fwd(n, NN_ACT_HSWISH, B * s->head_expand * hhw, n->h_bn, n->h_act));
    MANTA_TRY(nn_avgpool_forward(d, B * s->head_expand, hhw, A(n, n->h_act), A(n, n->h_pool)));
    size_t feat = n->h_pool;
    int feat_c = s->head_expand;
    mview none = {NULL, 0};
    if (s->head_mix > 0) {
        nn_linear_shape m = {n->net.batch, s->head_expand, s->head_mix, 0};
        MANTA_TRY(nn_linear_forward(d, &m, A(n, n->h_pool), PW(n, n->mix_w), none, A(n, n->m_lin)));
        MANTA_TRY(act_fwd(n, NN_ACT_HSWISH, B * s->head_mix, n->m_lin, n->m_act));
        feat = n->m_act;
        feat_c = s->head_mix;
    }
    n->fwd_dropout = bn == OFA_BN_TRAIN && s->dropout > 0;
    if (n->fwd_dropout) {
        n->drop_off = (uint32_t)((size_t)n->first_sample * (size_t)feat_c);
        MANTA_TRY(nn_dropout_forward_at(d, B * (size_t)feat_c, n->drop_off, s->dropout,
                                        n->dropout_seed, A(n, feat), A(n, n->drop)));
        feat = n->drop;
    }
    nn_linear_shape cls = {n->net.batch, feat_c, s->classes, 0};
    return nn_linear_forward(d, &cls, A(n, feat), PW(n, n->cls_w), PW(n, n->cls_b),
                             A(n, n->logits));
}

void ofa_supernet_set_dropout_seed(ofa_supernet *n, uint64_t seed) { n->dropout_seed = seed; }

void ofa_supernet_set_bn_sync(ofa_supernet *n, ofa_bn_sync_fn fn, void *ctx)
{
    ofa_net_set_bn_sync(&n->net, fn, ctx);
}

int ofa_supernet_bn_max_channels(const ofa_supernet *n) { return n->net.widest; }

void ofa_supernet_set_shard(ofa_supernet *n, long first) { n->first_sample = first; }

/* ---- backward ------------------------------------------------------------------------- */

void ofa_supernet_set_grad_ready(ofa_supernet *n, ofa_grad_ready_fn fn, void *ctx)
{
    n->grad_ready = fn;
    n->grad_ready_ctx = ctx;
}

int ofa_supernet_grad_bounds(const ofa_supernet *n, size_t *bounds, int cap)
{
    const int slots = ofa_slots(&n->s);
    int k = 0;
#define PUT(v)               \
    do {                     \
        if (k < cap)         \
            bounds[k] = (v); \
        k++;                 \
    } while (0)
    PUT(n->stem_w);
    PUT(n->first_dw);
    PUT(n->first_p);
    for (int i = 0; i < slots; i++)
        PUT(n->slot[i].e_w);
    PUT(n->head_w);
#undef PUT
    return k;
}

/* Tell the progress hook that the decayed gradients from @p from on are final. */
static manta_status grad_ready(ofa_supernet *n, size_t from)
{
    return n->grad_ready ? n->grad_ready(n->grad_ready_ctx, from) : MANTA_OK;
}

manta_status ofa_supernet_backward(ofa_supernet *n)
{
    const ofa_net *net = &n->net;
    if (!n->have_arch || net->fwd_params.mem != net->params.mem || net->fwd_bn == OFA_BN_EVAL ||
        net->fwd_bn == OFA_BN_RECAL)
        return manta_err_set(mcl_err(n->net.d), MANTA_ERR_INVALID_ARG,
                             "supernet: backward needs a training forward on the own parameters");
    mcl_dev *d = n->net.d;
    const ofa_space *s = &n->s;
    const size_t B = (size_t)n->net.batch;
    mview none = {NULL, 0};
    size_t feat = s->head_mix > 0 ? n->m_act : n->h_pool;
    int feat_c = s->head_mix > 0 ? s->head_mix : s->head_expand;
    size_t cls_in = n->fwd_dropout ? n->drop : feat;
    nn_linear_shape cls = {n->net.batch, feat_c, s->classes, 0};
    MANTA_TRY(nn_linear_backward(d, &cls, A(n, cls_in), PW(n, n->cls_w), G(n, n->logits),
                                 G(n, cls_in), DP(n, n->cls_w), DP(n, n->cls_b)));
    if (n->fwd_dropout)
        MANTA_TRY(nn_dropout_backward_at(d, B * (size_t)feat_c, n->drop_off, s->dropout,
                                         n->dropout_seed, G(n, n->drop), G(n, feat)));
    if (s->head_mix > 0) {
        nn_linear_shape m = {n->net.batch, s->head_expand, s->head_mix, 0};
        MANTA_TRY(act_bwd(n, NN_ACT_HSWISH, B * s->head_mix, n->m_lin, n->m_act, n->m_lin));
        MANTA_TRY(nn_linear_backward(d, &m, A(n, n->h_pool), PW(n, n->mix_w), G(n, n->m_lin),
                                     G(n, n->h_pool), DP(n, n->mix_w), none));
    }
    const size_t hhw = (size_t)n->last_h * n->last_h;
    MANTA_TRY(nn_avgpool_backward(d, B * s->head_expand, hhw, G(n, n->h_pool), G(n, n->h_act)));
    MANTA_TRY(act_bwd(n, NN_ACT_HSWISH, B * s->head_expand * hhw, n->h_bn, n->h_act, n->h_bn));
    MANTA_TRY(bn_bwd(n, &n->head_bn, s->head_expand, (int)hhw, n->h_conv, n->h_bn, n->h_conv));
    nn_conv2d_shape hd = pw_shape(n, n->last_c, n->last_h, s->head_expand, 0);
    MANTA_TRY(nn_conv2d_backward(d, &hd, A(n, n->head_in), PW(n, n->head_w), G(n, n->h_conv),
                                 G(n, n->head_in), DP(n, n->head_w), SCR(n)));
    MANTA_TRY(grad_ready(n, n->head_w));
    for (int i = n->n_active - 1; i >= 0; i--) {
        MANTA_TRY(ofa_mbconv_backward(&n->net, &n->slot[n->active[i].idx], &n->active[i].c));
        MANTA_TRY(grad_ready(n, n->slot[n->active[i].idx].e_w));
    }
    const int k = s->stem_kernel, hs = n->hs;
    const size_t shw = (size_t)hs * hs;
    size_t g_first = n->first_residual ? n->f_out : n->f_pbn;
    MANTA_TRY(bn_bwd(n, &n->first_pbn, s->first_width, (int)shw, n->f_pconv, g_first, n->f_pconv));
    nn_conv2d_shape fp = pw_shape(n, s->stem_width, hs, s->first_width, 0);
    MANTA_TRY(nn_conv2d_backward(d, &fp, A(n, n->f_dact), PW(n, n->first_p), G(n, n->f_pconv),
                                 G(n, n->f_dact), DP(n, n->first_p), SCR(n)));
    MANTA_TRY(grad_ready(n, n->first_p));
    MANTA_TRY(act_bwd(n, s->first_act, B * s->stem_width * shw, n->f_dbn, n->f_dact, n->f_dbn));
    MANTA_TRY(bn_bwd(n, &n->first_dbn, s->stem_width, (int)shw, n->f_dconv, n->f_dbn, n->f_dconv));
    nn_dw_shape fdw = {n->net.batch, s->stem_width, hs, hs, 3, 1, 1};
    MANTA_TRY(nn_dw_backward(d, &fdw, A(n, n->stem_act), PW(n, n->first_dw), G(n, n->f_dconv),
                             G(n, n->stem_act), DP(n, n->first_dw), SCR(n)));
    MANTA_TRY(grad_ready(n, n->first_dw));
    if (n->first_residual)
        MANTA_TRY(nn_axpy(d, B * s->first_width * shw, 1.0f, G(n, n->f_out), G(n, n->stem_act)));
    MANTA_TRY(
        act_bwd(n, s->stem_act, B * s->stem_width * shw, n->stem_bn_t, n->stem_act, n->stem_bn_t));
    MANTA_TRY(
        bn_bwd(n, &n->stem_bn, s->stem_width, (int)shw, n->stem_conv, n->stem_bn_t, n->stem_conv));
    nn_conv2d_shape stem = {
        n->net.batch,   s->in_channels, n->h0, n->h0, s->stem_width, k, k, n->stem_stride,
        n->stem_stride, k / 2,          k / 2, 0};
    MANTA_TRY(nn_conv2d_backward(d, &stem, A(n, n->x0), PW(n, n->stem_w), G(n, n->stem_conv), none,
                                 DP(n, n->stem_w), SCR(n)));
    return grad_ready(n, 0);
}

/* ---- elastic width: channel re-organisation ----------------------------------------- */

manta_status ofa_supernet_reorder_width(ofa_supernet *n, int keep_groups)
{
    const ofa_space *s = &n->s;
    return ofa_net_reorder_width(&n->net, n->slot, ofa_slots(s), s->e, s->n_e, keep_groups);
}
