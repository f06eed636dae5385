#include "stereo/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "nn/activation.h"
#include "nn/bias.h"
#include "nn/concat.h"
#include "nn/conv.h"
#include "nn/correlation.h"
#include "nn/deconv.h"
#include "nn/depthwise.h"
#include "nn/pool.h"
#include "nn/upsample.h"
#include "elastic/mbconv.h"
#include "elastic/reorder.h"
#include "stereo/net_impl.h"

/* Scale of the initial weights of the prediction convolutions (after PyTorch's bound), so
 * that the first disparities are near 0. */
#define PRED_INIT_SCALE 0.1f

/* Short names for the context's views. */
#define A(n, off) ofa_net_a(&(n)->net, off)
#define G(n, off) ofa_net_ga(&(n)->net, off)
#define PW(n, off) ofa_net_p(&(n)->net, off)
#define DP(n, off) ofa_net_gp(&(n)->net, off)
#define SCR(n) ofa_net_scratch(&(n)->net)

const stereo_space *stereo_net_space(const stereo_net *n) { return &n->s; }
int stereo_net_batch(const stereo_net *n) { return n->pairs; }

size_t stereo_net_act_floats(const stereo_net *n)
{
    return n->net.acts.floats + n->net.scratch.floats;
}

void stereo_net_slabs(const stereo_net *n, ofa_slabs *o)
{
    ofa_net_slabs(&n->net, n->n_params, n->n_decay, n->n_state, o);
}

mview stereo_net_input(const stereo_net *n) { return A(n, n->x0); }

/* Height and width of prediction p. */
static int pred_h(const stereo_net *n, int p) { return n->H >> (n->s.n_levels - p); }
static int pred_w(const stereo_net *n, int p) { return n->W >> (n->s.n_levels - p); }
static size_t pred_size(const stereo_net *n, int p)
{
    return (size_t)n->pairs * (size_t)pred_h(n, p) * (size_t)pred_w(n, p);
}

mview stereo_net_pred(const stereo_net *n, int p) { return A(n, n->pred[p]); }
mview stereo_net_dpred(const stereo_net *n, int p) { return G(n, n->pred[p]); }

/* ---- op shapes (shared by the passes and stereo_net_layers()) ------------------------- */

static nn_conv2d_shape stem_shape(const stereo_net *n, int batch)
{
    const int k = n->s.stem_kernel;
    return (nn_conv2d_shape){batch, 3, n->H, n->W, n->s.stem_width, k, k, 2, 2, k / 2, k / 2, 0};
}

static nn_corr_shape corr_shape(const stereo_net *n, int batch)
{
    return (nn_corr_shape){batch, n->cc, n->hc, n->wc, n->s.corr_max_disp, n->s.corr_stride};
}

static nn_conv2d_shape redir_shape(const stereo_net *n, int batch)
{
    return (nn_conv2d_shape){batch, n->cc, n->hc, n->wc, n->s.redir_width, 1, 1, 1, 1, 0, 0, 0};
}

/* A 3x3 stride-1 convolution with padding 1. */
static nn_conv2d_shape conv3(int batch, int cin, int h, int w, int cout)
{
    return (nn_conv2d_shape){batch, cin, h, w, cout, 3, 3, 1, 1, 1, 1, 0};
}

static nn_conv2d_shape pred0_shape(const stereo_net *n, int batch)
{
    return conv3(batch, n->cl, n->hl, n->wl, 1);
}

static nn_deconv2d_shape up_shape(const stereo_level *l, int batch)
{
    return (nn_deconv2d_shape){batch, l->acin, l->h / 2, l->w / 2, l->aw, 4,
                               4,     2,       2,        1,        1,     l->width * 16};
}

static nn_upsample_shape upp_shape(const stereo_level *l, int batch)
{
    return (nn_upsample_shape){batch, 1, l->h / 2, l->w / 2, 2};
}

static nn_conv2d_shape lconv_shape(const stereo_level *l, int batch)
{
    nn_conv2d_shape c = conv3(batch, cat_c(l), l->h, l->w, l->aw);
    c.w_ld = cat_max(l) * 9;
    return c;
}

static nn_conv2d_shape lpred_shape(const stereo_level *l, int batch)
{
    nn_conv2d_shape c = conv3(batch, l->aw, l->h, l->w, 1);
    c.w_ld = l->width * 9;
    return c;
}

/* ---- layout ------------------------------------------------------------------------------ */

/* Sizes along the left path and the decoder's levels at H x W, channels from the space. */
static void geometry(stereo_net *n)
{
    const stereo_space *s = &n->s;
    const int L = s->n_levels;
    int skip_c[STEREO_MAX_LEVELS + 1] = {3}; /* the left image at full resolution */
    int h = (n->H - 1) / 2 + 1, w = (n->W - 1) / 2 + 1, c = s->stem_width, k = 1;
    n->h1 = h, n->w1 = w;
    n->dcorr = stereo_corr_channels(s);
    skip_c[k] = c;
    for (int u = 0; u < s->n_units; u++) {
        if (u == s->corr_after_unit) {
            n->cc = c, n->hc = h, n->wc = w;
            c = n->dcorr + s->redir_width;
            skip_c[k] = c;
        }
        h = (h - 1) / s->unit[u].stride + 1;
        w = (w - 1) / s->unit[u].stride + 1;
        c = s->unit[u].width;
        k += s->unit[u].stride == 2;
        skip_c[k] = c;
    }
    n->cl = c, n->hl = h, n->wl = w;
    int cin = c;
    for (int i = 0; i < L; i++) {
        stereo_level *l = &n->lev[i];
        l->cin = cin;
        l->width = s->dec_width[i];
        l->skip_c = skip_c[L - 1 - i];
        l->h = n->H >> (L - 1 - i);
        l->w = n->W >> (L - 1 - i);
        l->acin = l->cin, l->aw = l->width; /* the plan's: the widest */
        cin = l->width;
    }
}

/* The largest configuration of every slot (all of them: a space's largest depth). */
static void slot_specs(const stereo_net *n, ofa_mbconv_spec *specs)
{
    const stereo_space *s = &n->s;
    int h = n->h1, w = n->w1, c = s->stem_width;
    for (int u = 0; u < s->n_units; u++) {
        if (u == s->corr_after_unit)
            c = n->dcorr + s->redir_width;
        for (int j = 0; j < s->max_depth; j++) {
            ofa_mbconv_spec *sp = &specs[u * s->max_depth + j];
            *sp = ofa_mbconv_unit_spec(&s->unit[u], j, c, s->e[s->n_e - 1], s->n_ks, s->ks, h, w);
            c = sp->width;
            h = (h - 1) / sp->stride + 1;
            w = (w - 1) / sp->stride + 1;
        }
    }
}

static int n_slots(const stereo_space *s) { return s->n_units * s->max_depth; }

/* Decayed parameters: stem, every slot's weights, redirect, the decoder's convolutions and
 * transposed convolutions (in the order they run). */
static manta_status plan_weights(stereo_net *n, mlayout *pl)
{
    const stereo_space *s = &n->s;
    const int k = s->stem_kernel;
    n->stem_w = mlayout_add(pl, (size_t)s->stem_width * 3 * k * k);
    ofa_mbconv_spec specs[OFA_MAX_SLOTS];
    slot_specs(n, specs);
    for (int i = 0; i < n_slots(s); i++)
        MANTA_TRY(ofa_mbconv_plan_weights(&n->slot[i], &specs[i], pl, mcl_err(n->net.d)));
    n->redir_w = mlayout_add(pl, (size_t)s->redir_width * n->cc);
    n->pred0_w = mlayout_add(pl, (size_t)n->cl * 9);
    for (int i = 0; i < s->n_levels; i++) {
        stereo_level *l = &n->lev[i];
        l->up_w = mlayout_add(pl, (size_t)l->cin * l->width * 16);
        l->conv_w = mlayout_add(pl, (size_t)l->width * cat_max(l) * 9);
        l->pred_w = mlayout_add(pl, (size_t)l->width * 9);
    }
    return MANTA_OK;
}

/* Not decayed: batch norms (stem, slots, redirect), then the decoder's biases. */
static void plan_bn_bias(stereo_net *n, mlayout *pl, mlayout *sl)
{
    const stereo_space *s = &n->s;
    ofa_bn_plan(&n->stem_bn, s->stem_width, pl, sl);
    for (int i = 0; i < n_slots(s); i++)
        ofa_mbconv_plan_bn(&n->slot[i], pl, sl);
    ofa_bn_plan(&n->redir_bn, s->redir_width, pl, sl);
    n->pred0_b = mlayout_add(pl, 1);
    for (int i = 0; i < s->n_levels; i++) {
        stereo_level *l = &n->lev[i];
        l->up_b = mlayout_add(pl, (size_t)l->width);
        l->conv_b = mlayout_add(pl, (size_t)l->width);
        l->pred_b = mlayout_add(pl, 1);
    }
}

/* Every batch norm with its channel count. */
static void collect_bns(stereo_net *n)
{
    ofa_bn_list *l = &n->net.bns;
    l->n = 0;
    ofa_bn_list_add(l, &n->stem_bn, n->s.stem_width);
    for (int i = 0; i < n_slots(&n->s); i++)
        ofa_bn_list_add_mbconv(l, &n->slot[i]);
    ofa_bn_list_add(l, &n->redir_bn, n->s.redir_width);
}

/* Raise *scratch to what a convolution with a bias (its backward) needs. */
static void need_conv_bias(const stereo_net *n, size_t *scratch, const nn_conv2d_shape *c)
{
    ofa_net_need_conv(&n->net, scratch, c);
    nn_bias_shape b = {c->n, c->cout, nn_conv2d_out_h(c) * nn_conv2d_out_w(c)};
    size_t f = nn_bias_channels_scratch_floats(n->net.d, &b);
    *scratch = f > *scratch ? f : *scratch;
}

/* The activations of the decoder (batch N) and their op scratch. */
static void plan_decoder_acts(stereo_net *n, mlayout *al, size_t *scratch)
{
    const stereo_space *s = &n->s;
    const size_t N = (size_t)n->pairs;
    const int L = s->n_levels;
    size_t tmp = N * n->cc * n->hc * n->wc; /* the redirect's input gradient */
    mlayout_phase(al);
    n->pred[0] = mlayout_add(al, pred_size(n, 0));
    nn_conv2d_shape p0 = pred0_shape(n, n->pairs);
    need_conv_bias(n, scratch, &p0);
    for (int i = 0; i < L; i++) {
        stereo_level *l = &n->lev[i];
        const size_t hw = (size_t)l->h * l->w, out = N * l->width * hw;
        l->in = i > 0 ? n->lev[i - 1].conv_act : 0; /* level 0: set_arch */
        mlayout_phase(al); /* up_act and upp live in the concatenation's copy */
        l->up = mlayout_add(al, out);
        l->up_act = mlayout_add_temp(al, out);
        l->upp = mlayout_add_temp(al, N * hw);
        l->cat = mlayout_add(al, N * cat_max(l) * hw);
        l->conv = ofa_net_act_in_plan(al, NN_ACT_LEAKY_RELU, out);
        l->conv_act = mlayout_add(al, out);
        n->pred[i + 1] = mlayout_add(al, N * hw);
        size_t in = N * l->cin * hw / 4;
        tmp = in > tmp ? in : tmp;
        nn_deconv2d_shape up = up_shape(l, n->pairs);
        size_t f = nn_deconv2d_scratch_floats(n->net.d, &up);
        *scratch = f > *scratch ? f : *scratch;
        nn_conv2d_shape c = lconv_shape(l, n->pairs), p = lpred_shape(l, n->pairs);
        need_conv_bias(n, scratch, &c);
        need_conv_bias(n, scratch, &p);
    }
    for (int p = 0; p < L; p++) /* gradients only */
        n->gpred[p] = mlayout_add_unused(al, pred_size(n, p));
    n->gpred[L] = n->pred[L];
    n->gtmp = mlayout_add_unused(al, tmp);
}

/* Plan parameters (decayed first), state and activations (the largest sub-network), and
 * the op scratch. The shared part is planned for 2N images, the rest for N. */
static manta_status plan(void *net_, mlayout *pl, mlayout *sl, mlayout *al, size_t *scratch)
{
    stereo_net *n = net_;
    const stereo_space *s = &n->s;
    ofa_net *net = &n->net;
    geometry(n);
    MANTA_TRY(plan_weights(n, pl));
    n->n_decay = pl->total;
    plan_bn_bias(n, pl, sl);
    n->n_params = pl->total;
    n->n_state = sl->total;

    *scratch = 0;
    net->batch = 2 * n->pairs;
    const size_t B2 = (size_t)net->batch, st = B2 * s->stem_width * n->h1 * n->w1;
    n->x0 = mlayout_add(al, B2 * 3 * n->H * n->W);
    mlayout_phase(al);
    n->stem_conv = mlayout_add(al, st);
    n->stem_bn_t = ofa_net_act_in_plan(al, s->stem_act, st);
    n->stem_act = mlayout_add(al, st);
    nn_conv2d_shape stem = stem_shape(n, net->batch);
    ofa_net_need_conv(net, scratch, &stem);
    ofa_net_need_bn(net, scratch, s->stem_width, n->h1 * n->w1);
    const int first_after = s->corr_after_unit * s->max_depth;
    for (int i = 0; i < first_after; i++)
        ofa_mbconv_plan_acts(net, &n->slot[i], al, scratch);

    net->batch = n->pairs;
    const size_t N = (size_t)n->pairs, hwc = (size_t)n->hc * n->wc;
    mlayout_phase(al); /* corr and redir_act live in the concatenation's copy */
    n->corr = mlayout_add_temp(al, N * n->dcorr * hwc);
    n->redir_conv = mlayout_add(al, N * s->redir_width * hwc);
    n->redir_bn_t = mlayout_add(al, N * s->redir_width * hwc);
    n->redir_act = mlayout_add_temp(al, N * s->redir_width * hwc);
    n->ccat = mlayout_add(al, N * (n->dcorr + s->redir_width) * hwc);
    nn_conv2d_shape redir = redir_shape(n, net->batch);
    ofa_net_need_conv(net, scratch, &redir);
    ofa_net_need_bn(net, scratch, s->redir_width, (int)hwc);
    for (int i = first_after; i < n_slots(s); i++)
        ofa_mbconv_plan_acts(net, &n->slot[i], al, scratch);
    plan_decoder_acts(n, al, scratch);

    collect_bns(n);
    ofa_net_plan_stats(net, al, ofa_bn_list_widest(&net->bns));
    return MANTA_OK;
}

/* ---- creation ------------------------------------------------------------------------------ */

/* Uniform in +-scale/sqrt(fan_in) (PyTorch's bound for convolutions, times @p scale). */
static void fill_fan_in(manta_rng *r, float *w, size_t count, int fan_in, float scale)
{
    manta_rng_fill_uniform(r, w, count, scale / sqrtf((float)fan_in));
}

/* Initial values: convolutions uniform in +-1/sqrt(fan_in) (as ofa_mbconv_init_weights());
 * a k4 s2 transposed convolution's fan-in is the products each output sums, cin * 4; the
 * predictions' weights 0.1 times that, so that the first disparities are near 0; biases
 * 0; batch norms as ofa_bn_init_values() (ofa_net_write_init()). */
static void init_values(const void *net, manta_rng *r, float *p)
{
    const stereo_net *n = net;
    const stereo_space *s = &n->s;
    const int k = s->stem_kernel;
    fill_fan_in(r, p + n->stem_w, (size_t)s->stem_width * 3 * k * k, 3 * k * k, 1.0f);
    for (int i = 0; i < n_slots(s); i++)
        ofa_mbconv_init_weights(&n->slot[i], r, p);
    fill_fan_in(r, p + n->redir_w, (size_t)s->redir_width * n->cc, n->cc, 1.0f);
    fill_fan_in(r, p + n->pred0_w, (size_t)n->cl * 9, n->cl * 9, PRED_INIT_SCALE);
    for (int i = 0; i < s->n_levels; i++) {
        const stereo_level *l = &n->lev[i];
        fill_fan_in(r, p + l->up_w, (size_t)l->cin * l->width * 16, l->cin * 4, 1.0f);
        fill_fan_in(r, p + l->conv_w, (size_t)l->width * cat_max(l) * 9, cat_max(l) * 9, 1.0f);
        fill_fan_in(r, p + l->pred_w, (size_t)l->width * 9, l->width * 9, PRED_INIT_SCALE);
    }
}

static const ofa_net_recipe recipe = {plan,
                                      init_values,
                                      0x57e7,
                                      "stereo net parameters",
                                      "stereo net gradients",
                                      "stereo net momentum",
                                      "stereo net"};

/* Check the arguments of a network; a zeroed network of @p space and @p batch pairs, not
 * planned yet, into *@p out. */
static manta_status prepare(mcl_dev *d, const stereo_space *space, int batch, bool forward_only,
                            stereo_net **out)
{
    *out = NULL;
    manta_err *err = mcl_err(d);
    if (batch < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "stereo net: batch %d is below 1", batch);
    manta_err verr;
    if (stereo_space_validate(space, &verr) != MANTA_OK)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "stereo net: %s", verr.msg);
    if (space->n_ks > OFA_MBCONV_MAX_KS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo net: space '%s' has %d kernel sizes, at most %d", space->name,
                             space->n_ks, OFA_MBCONV_MAX_KS);
    stereo_net *n = calloc(1, sizeof *n);
    if (!n)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "stereo net: out of host memory");
    n->s = *space;
    n->pairs = batch; /* the plan sets the context's batch (2N on the shared part, N elsewhere) */
    n->net.forward_only = forward_only;
    stereo_space_plan_size(space, &n->plan_h, &n->plan_w);
    n->H = n->plan_h, n->W = n->plan_w; /* planned for the largest */
    *out = n;
    return MANTA_OK;
}

manta_status stereo_net_plan_memory(mcl_dev *d, const stereo_space *space, int batch,
                                    bool forward_only, ofa_net_mem *out)
{
    memset(out, 0, sizeof *out);
    stereo_net *n;
    MANTA_TRY(prepare(d, space, batch, forward_only, &n));
    manta_status st = ofa_net_plan_memory(&n->net, d, batch, &recipe, n, out);
    free(n);
    return st;
}

static manta_status create(mcl_dev *d, const stereo_space *space, int batch, uint64_t seed,
                           bool forward_only, bool keep_acts, stereo_net **out)
{
    stereo_net *n;
    MANTA_TRY(prepare(d, space, batch, forward_only, &n));
    *out = NULL;
    n->net.keep_acts = keep_acts;
    manta_status st = ofa_net_create(&n->net, d, batch, &recipe, n, seed);
    if (st == MANTA_OK)
        st = stereo_net_set_size(n, space->crop_h, space->crop_w);
    if (st != MANTA_OK)
        stereo_net_destroy(n);
    *out = st == MANTA_OK ? n : NULL;
    return st;
}

manta_status stereo_net_create(mcl_dev *d, const stereo_space *space, int batch, uint64_t seed,
                               stereo_net **out)
{
    return create(d, space, batch, seed, false, false, out);
}

manta_status stereo_net_create_unplanned(mcl_dev *d, const stereo_space *space, int batch,
                                         uint64_t seed, stereo_net **out)
{
    return create(d, space, batch, seed, false, true, out);
}

const mlayout_pack *stereo_net_act_plan(const stereo_net *n) { return &n->net.apack; }

manta_status stereo_net_create_forward_only(mcl_dev *d, const stereo_space *space, int batch,
                                            uint64_t seed, stereo_net **out)
{
    return create(d, space, batch, seed, true, false, out);
}

manta_status stereo_net_set_size(stereo_net *n, int h, int w)
{
    if (h == n->H && w == n->W)
        return MANTA_OK;
    stereo_space s = n->s;
    s.crop_h = h, s.crop_w = w, s.n_crops = 0;
    manta_err verr = {0};
    if (h > n->plan_h || w > n->plan_w || stereo_space_validate(&s, &verr) != MANTA_OK)
        return manta_err_set(mcl_err(n->net.d), MANTA_ERR_INVALID_ARG,
                             "stereo net: size %dx%d is not one the network can run (planned "
                             "for %dx%d at most%s%s)",
                             w, h, n->plan_w, n->plan_h, verr.msg[0] ? "; " : "", verr.msg);
    n->H = h, n->W = w;
    geometry(n);
    return n->have_arch ? stereo_net_set_arch(n, &n->arch) : MANTA_OK;
}

void stereo_net_size(const stereo_net *n, int *h, int *w) { *h = n->H, *w = n->W; }

void stereo_net_destroy(stereo_net *n)
{
    if (!n)
        return;
    ofa_net_free(&n->net);
    free(n);
}

/* ---- elastic width: channel re-organisation -------------------------------------------- */

/* Re-organise decoder level @p i in the host copy @p p of the parameters: the
 * deconvolution's output channels by the L1 norm of the 3x3 conv weights reading them, the
 * 3x3 conv's output channels by that of the prediction's and the next deconvolution's
 * weights reading them, each sorted inside the groups ending at @p bounds[0..nb); imp,
 * perm: the level's width entries; tmp: the largest matrix it moves. */
static void reorder_level(const stereo_net *n, int i, float *p, const int *bounds, int nb,
                          ofa_importance *imp, int *perm, float *tmp)
{
    const stereo_level *l = &n->lev[i];
    const stereo_level *next = i + 1 < n->s.n_levels ? &n->lev[i + 1] : NULL;
    const int W = l->width, C = cat_max(l), up0 = l->skip_c + 1; /* the deconv's inputs */
    for (int c = 0; c < W; c++) {
        double l1 = 0;
        for (int o = 0; o < W; o++)
            for (int t = 0; t < 9; t++)
                l1 += fabsf(p[l->conv_w + ((size_t)o * C + up0 + c) * 9 + t]);
        imp[c] = (ofa_importance){l1, c};
    }
    ofa_sort_groups(imp, W, bounds, nb, perm);
    ofa_permute_cols(p + l->up_w, l->cin, W * 16, W, 16, perm, tmp);
    ofa_permute_rows(p + l->up_b, W, 1, perm, tmp);
    ofa_permute_cols(p + l->conv_w + (size_t)up0 * 9, W, C * 9, W, 9, perm, tmp);
    for (int c = 0; c < W; c++) {
        double l1 = 0;
        for (int t = 0; t < 9; t++)
            l1 += fabsf(p[l->pred_w + (size_t)c * 9 + t]);
        for (size_t t = 0; next && t < (size_t)next->width * 16; t++)
            l1 += fabsf(p[next->up_w + (size_t)c * next->width * 16 + t]);
        imp[c] = (ofa_importance){l1, c};
    }
    ofa_sort_groups(imp, W, bounds, nb, perm);
    ofa_permute_rows(p + l->conv_w, W, C * 9, perm, tmp);
    ofa_permute_rows(p + l->conv_b, W, 1, perm, tmp);
    ofa_permute_cols(p + l->pred_w, 1, W * 9, W, 9, perm, tmp);
    if (next)
        ofa_permute_rows(p + next->up_w, W, next->width * 16, perm, tmp);
}

/* The decoder's part of the re-organisation: its widths grouped by the kept ratios. */
static manta_status reorder_decoder(stereo_net *n, int keep_groups)
{
    const stereo_space *s = &n->s;
    size_t need = 1, widest = 1;
    for (int i = 0; i < s->n_levels; i++) {
        const stereo_level *l = &n->lev[i];
        size_t conv = (size_t)l->width * cat_max(l) * 9, up = (size_t)l->cin * l->width * 16;
        need = conv > need ? conv : need;
        need = up > need ? up : need;
        widest = (size_t)l->width > widest ? (size_t)l->width : widest;
    }
    const size_t n_params = n->net.params.floats;
    float *p = malloc(n_params * sizeof *p), *tmp = malloc(need * sizeof *tmp);
    ofa_importance *imp = malloc(widest * sizeof *imp);
    int *perm = malloc(widest * sizeof *perm);
    manta_status rc = p && tmp && imp && perm
                          ? mcl_read(n->net.d, mslab_view(&n->net.params, 0), p, n_params)
                          : manta_err_set(mcl_err(n->net.d), MANTA_ERR_NO_MEMORY,
                                          "width re-organisation: out of memory");
    for (int i = 0; i < s->n_levels && rc == MANTA_OK; i++) {
        int bounds[OFA_MAX_CHOICES], nb = 0;
        for (int g = keep_groups; g >= 1; g--)
            if (s->n_dec_ratios - 1 - g >= 0)
                bounds[nb++] = stereo_dec_width(s, i, s->n_dec_ratios - 1 - g);
        reorder_level(n, i, p, bounds, nb, imp, perm, tmp);
    }
    if (rc == MANTA_OK)
        rc = mcl_write(n->net.d, mslab_view(&n->net.params, 0), p, n_params);
    free(p), free(tmp), free(imp), free(perm);
    return rc;
}

manta_status stereo_net_reorder_width(stereo_net *n, int keep_groups)
{
    const stereo_space *s = &n->s;
    MANTA_TRY(ofa_net_reorder_width(&n->net, n->slot, n_slots(s), s->e, s->n_e, keep_groups));
    return reorder_decoder(n, keep_groups);
}

/* ---- the active sub-network ------------------------------------------------------------- */

manta_status stereo_net_set_arch(stereo_net *n, const ofa_arch *a)
{
    const stereo_space *s = &n->s;
    manta_err *err = mcl_err(n->net.d);
    MANTA_TRY(stereo_arch_validate(s, a, err));
    size_t skip[STEREO_MAX_LEVELS + 1] = {n->x0}; /* the left path's last tensor per scale */
    size_t cur = n->stem_act, shared_out = 0;
    int h = n->h1, w = n->w1, k = 1, n_active = 0, n_shared = 0;
    stereo_slot active[OFA_MAX_SLOTS];
    skip[k] = cur;
    for (int u = 0; u < s->n_units; u++) {
        if (u == s->corr_after_unit) {
            n_shared = n_active;
            shared_out = cur;
            cur = n->ccat;
            skip[k] = cur;
        }
        for (int j = 0; j < a->d[u]; j++) {
            const int idx = u * s->max_depth + j;
            const ofa_mbconv *p = &n->slot[idx];
            stereo_slot *x = &active[n_active++];
            x->idx = idx;
            MANTA_TRY(ofa_mbconv_configure_arch(p, a, idx, h, w, cur, &x->c, err));
            cur = x->c.out;
            h = x->c.ho, w = x->c.wo;
        }
        k += s->unit[u].stride == 2;
        skip[k] = cur;
    }
    const int L = s->n_levels;
    for (int i = 0; i < L; i++) {
        n->lev[i].skip = skip[L - 1 - i];
        n->lev[i].aw = a->dw[i];
        n->lev[i].acin = i > 0 ? a->dw[i - 1] : n->lev[i].cin;
    }
    n->lev[0].in = cur;
    n->n_active = n_active;
    n->n_shared = n_shared;
    memcpy(n->active, active, (size_t)n_active * sizeof *active);
    n->shared_out = shared_out;
    n->last_out = cur;
    n->arch = *a;
    n->have_arch = true;
    return MANTA_OK;
}

/* ---- forward -------------------------------------------------------------------------------- */

/* y = conv(x) + bias (activation offsets x, y; parameter offsets w, b). */
static manta_status conv_bias_fwd(stereo_net *n, const nn_conv2d_shape *c, size_t x, size_t w,
                                  size_t b, size_t y)
{
    mcl_dev *d = n->net.d;
    nn_bias_shape bs = {c->n, c->cout, nn_conv2d_out_h(c) * nn_conv2d_out_w(c)};
    MANTA_TRY(nn_conv2d_forward(d, c, A(n, x), PW(n, w), A(n, y), SCR(n)));
    return nn_bias_channels_forward(d, &bs, PW(n, b), A(n, y));
}

/* Backward of conv_bias_fwd(): db and dw accumulated, the gradient at dx overwritten (dy,
 * dx: activation-gradient offsets). */
static manta_status conv_bias_bwd(stereo_net *n, const nn_conv2d_shape *c, size_t x, size_t w,
                                  size_t b, size_t dy, size_t dx)
{
    mcl_dev *d = n->net.d;
    nn_bias_shape bs = {c->n, c->cout, nn_conv2d_out_h(c) * nn_conv2d_out_w(c)};
    MANTA_TRY(nn_bias_channels_backward(d, &bs, G(n, dy), DP(n, b), SCR(n)));
    return nn_conv2d_backward(d, c, A(n, x), PW(n, w), G(n, dy), G(n, dx), DP(n, w), SCR(n));
}

/* Stem and the shared units on 2N images, the correlation and the redirect of their
 * output, the other units on N. */
static manta_status encoder_forward(stereo_net *n)
{
    mcl_dev *d = n->net.d;
    const stereo_space *s = &n->s;
    const int N = n->pairs;
    n->net.batch = 2 * N;
    const size_t shw = (size_t)n->h1 * n->w1, hwc = (size_t)n->hc * n->wc;
    nn_conv2d_shape stem = stem_shape(n, 2 * N);
    MANTA_TRY(
        nn_conv2d_forward(d, &stem, A(n, n->x0), PW(n, n->stem_w), A(n, n->stem_conv), SCR(n)));
    MANTA_TRY(ofa_net_bn_forward(&n->net, &n->stem_bn, s->stem_width, (int)shw, n->stem_conv,
                                 n->stem_bn_t));
    MANTA_TRY(ofa_net_act_forward(&n->net, s->stem_act, 2 * N * s->stem_width * shw, n->stem_bn_t,
                                  n->stem_act));
    for (int i = 0; i < n->n_shared; i++)
        MANTA_TRY(ofa_mbconv_forward(&n->net, &n->slot[n->active[i].idx], &n->active[i].c));

    n->net.batch = N;
    const size_t half = (size_t)N * n->cc * hwc; /* the right view's offset */
    nn_corr_shape cs = corr_shape(n, N);
    MANTA_TRY(
        nn_corr_forward(d, &cs, A(n, n->shared_out), A(n, n->shared_out + half), A(n, n->corr)));
    nn_conv2d_shape rs = redir_shape(n, N);
    const int R = s->redir_width;
    MANTA_TRY(nn_conv2d_forward(d, &rs, A(n, n->shared_out), PW(n, n->redir_w), A(n, n->redir_conv),
                                SCR(n)));
    MANTA_TRY(ofa_net_bn_forward(&n->net, &n->redir_bn, R, (int)hwc, n->redir_conv, n->redir_bn_t));
    MANTA_TRY(ofa_net_act_forward(&n->net, NN_ACT_LEAKY_RELU, (size_t)N * R * hwc, n->redir_bn_t,
                                  n->redir_act));
    nn_concat_shape c0 = {N, n->dcorr, (int)hwc, n->dcorr + R, 0};
    nn_concat_shape c1 = {N, R, (int)hwc, n->dcorr + R, n->dcorr};
    MANTA_TRY(nn_concat_forward(d, &c0, A(n, n->corr), A(n, n->ccat)));
    MANTA_TRY(nn_concat_forward(d, &c1, A(n, n->redir_act), A(n, n->ccat)));
    for (int i = n->n_shared; i < n->n_active; i++)
        MANTA_TRY(ofa_mbconv_forward(&n->net, &n->slot[n->active[i].idx], &n->active[i].c));
    return MANTA_OK;
}

/* The three parts of level @p l's concatenation: [skip, upsampled prediction, upconv]. */
static void level_parts(const stereo_level *l, int batch, nn_concat_shape part[3])
{
    const int hw = l->h * l->w, c = cat_c(l);
    part[0] = (nn_concat_shape){batch, l->skip_c, hw, c, 0};
    part[1] = (nn_concat_shape){batch, 1, hw, c, l->skip_c};
    part[2] = (nn_concat_shape){batch, l->aw, hw, c, l->skip_c + 1};
}

/* Level @p i: from the coarser level (or the last unit) to prediction i + 1. */
static manta_status level_forward(stereo_net *n, int i)
{
    mcl_dev *d = n->net.d;
    const stereo_level *l = &n->lev[i];
    const int N = n->pairs;
    const size_t out = (size_t)N * l->aw * l->h * l->w;
    nn_deconv2d_shape up = up_shape(l, N);
    MANTA_TRY(nn_deconv2d_forward(d, &up, A(n, l->in), PW(n, l->up_w), PW(n, l->up_b), A(n, l->up),
                                  SCR(n)));
    MANTA_TRY(ofa_net_act_forward(&n->net, NN_ACT_LEAKY_RELU, out, l->up, l->up_act));
    nn_upsample_shape us = upp_shape(l, N);
    MANTA_TRY(nn_upsample_forward(d, &us, 1.0f, A(n, n->pred[i]), A(n, l->upp)));
    nn_concat_shape part[3];
    level_parts(l, N, part);
    MANTA_TRY(nn_concat_forward(d, &part[0], A(n, l->skip), A(n, l->cat)));
    MANTA_TRY(nn_concat_forward(d, &part[1], A(n, l->upp), A(n, l->cat)));
    MANTA_TRY(nn_concat_forward(d, &part[2], A(n, l->up_act), A(n, l->cat)));
    nn_conv2d_shape c = lconv_shape(l, N), p = lpred_shape(l, N);
    MANTA_TRY(conv_bias_fwd(n, &c, l->cat, l->conv_w, l->conv_b, l->conv));
    MANTA_TRY(ofa_net_act_forward(&n->net, NN_ACT_LEAKY_RELU, out, l->conv, l->conv_act));
    return conv_bias_fwd(n, &p, l->conv_act, l->pred_w, l->pred_b, n->pred[i + 1]);
}

manta_status stereo_net_forward(stereo_net *n, mview params, ofa_bn_mode bn)
{
    if (!n->have_arch)
        return manta_err_set(mcl_err(n->net.d), MANTA_ERR_INVALID_ARG,
                             "stereo net: forward before an architecture was set");
    n->net.fwd_params = params;
    n->net.fwd_bn = bn;
    MANTA_TRY(encoder_forward(n));
    nn_conv2d_shape p0 = pred0_shape(n, n->pairs);
    MANTA_TRY(conv_bias_fwd(n, &p0, n->last_out, n->pred0_w, n->pred0_b, n->pred[0]));
    for (int i = 0; i < n->s.n_levels; i++)
        MANTA_TRY(level_forward(n, i));
    for (int p = 0; p < stereo_preds(&n->s) && !n->net.forward_only; p++)
        MANTA_TRY(mcl_fill(n->net.d, G(n, n->pred[p]), 0.0f, pred_size(n, p)));
    return MANTA_OK;
}

manta_status stereo_net_recal_begin(stereo_net *n, long total_pairs)
{
    n->net.batch = n->pairs; /* the weight: N pairs of a forward over total_pairs */
    return ofa_net_recal_begin(&n->net, total_pairs);
}

manta_status stereo_net_recal_begin_pooled(stereo_net *n, long total_pairs)
{
    n->net.batch = n->pairs;
    return ofa_net_recal_begin_pooled(&n->net, total_pairs);
}

manta_status stereo_net_recal_end(stereo_net *n) { return ofa_net_recal_end(&n->net); }

void stereo_net_set_bn_sync(stereo_net *n, ofa_bn_sync_fn fn, void *ctx)
{
    ofa_net_set_bn_sync(&n->net, fn, ctx);
}

int stereo_net_bn_max_channels(const stereo_net *n) { return n->net.widest; }

/* ---- backward ------------------------------------------------------------------------------ */

/* Level @p i backward, from the total gradient of prediction i + 1 (gpred[i + 1]; that of
 * level i + 1's deconvolution input is in gtmp). Leaves the total gradient of prediction i
 * in gpred[i], its input's deconvolution gradient in gtmp, and the skip's gradient in the
 * concatenation's gradient (added by the encoder's backward). */
static manta_status level_backward(stereo_net *n, int i)
{
    mcl_dev *d = n->net.d;
    const stereo_level *l = &n->lev[i];
    const int N = n->pairs;
    const size_t out = (size_t)N * l->aw * l->h * l->w;
    nn_conv2d_shape c = lconv_shape(l, N), p = lpred_shape(l, N);
    MANTA_TRY(
        conv_bias_bwd(n, &p, l->conv_act, l->pred_w, l->pred_b, n->gpred[i + 1], l->conv_act));
    if (i + 1 < n->s.n_levels) /* conv_act also fed level i + 1's deconvolution */
        MANTA_TRY(nn_axpy(d, out, 1.0f, G(n, n->gtmp), G(n, l->conv_act)));
    MANTA_TRY(ofa_net_act_backward_xy(&n->net, NN_ACT_LEAKY_RELU, out, l->conv, l->conv_act,
                                      l->conv_act, l->conv));
    MANTA_TRY(conv_bias_bwd(n, &c, l->cat, l->conv_w, l->conv_b, l->conv, l->cat));
    nn_concat_shape part[3];
    level_parts(l, N, part);
    MANTA_TRY(nn_concat_backward(d, &part[1], G(n, l->cat), G(n, l->upp), false));
    MANTA_TRY(nn_concat_backward(d, &part[2], G(n, l->cat), G(n, l->up_act), false));
    nn_upsample_shape us = upp_shape(l, N);
    MANTA_TRY(nn_upsample_backward(d, &us, 1.0f, G(n, l->upp), G(n, n->gpred[i])));
    MANTA_TRY(nn_axpy(d, pred_size(n, i), 1.0f, G(n, n->pred[i]), G(n, n->gpred[i])));
    MANTA_TRY(ofa_net_act_backward(&n->net, NN_ACT_LEAKY_RELU, out, l->up, l->up_act, l->up));
    nn_deconv2d_shape up = up_shape(l, N);
    return nn_deconv2d_backward(d, &up, A(n, l->in), PW(n, l->up_w), G(n, l->up), G(n, n->gtmp),
                                DP(n, l->up_w), DP(n, l->up_b), SCR(n));
}

/* The decoder's backward: every level, then the coarsest prediction; leaves the gradient
 * of the last unit's output. */
static manta_status decoder_backward(stereo_net *n)
{
    for (int i = n->s.n_levels - 1; i >= 0; i--)
        MANTA_TRY(level_backward(n, i));
    nn_conv2d_shape p0 = pred0_shape(n, n->pairs);
    MANTA_TRY(conv_bias_bwd(n, &p0, n->last_out, n->pred0_w, n->pred0_b, n->gpred[0], n->last_out));
    const size_t len = (size_t)n->pairs * n->cl * n->hl * n->wl;
    return nn_axpy(n->net.d, len, 1.0f, G(n, n->gtmp), G(n, n->last_out));
}

/* After the backward of the consumer that overwrote the gradient of @p t (a slot's input):
 * add the gradient of every decoder level whose skip @p t is (the left half). */
static manta_status add_skip_grads(stereo_net *n, size_t t)
{
    for (int i = 0; i < n->s.n_levels; i++) {
        const stereo_level *l = &n->lev[i];
        if (l->skip != t || t == n->x0)
            continue;
        nn_concat_shape part[3];
        level_parts(l, n->pairs, part);
        MANTA_TRY(nn_concat_backward(n->net.d, &part[0], G(n, l->cat), G(n, t), true));
    }
    return MANTA_OK;
}

/* Backward of active slots [from, to) in reverse order, each followed by its input's skip
 * gradients. */
static manta_status slots_backward(stereo_net *n, int from, int to)
{
    for (int i = to - 1; i >= from; i--) {
        MANTA_TRY(ofa_mbconv_backward(&n->net, &n->slot[n->active[i].idx], &n->active[i].c));
        MANTA_TRY(add_skip_grads(n, n->active[i].c.in));
    }
    return MANTA_OK;
}

/* From the gradient of the [correlation, redirect] concatenation into that of the last
 * shared tensor (both halves). */
static manta_status corr_backward(stereo_net *n)
{
    mcl_dev *d = n->net.d;
    const stereo_space *s = &n->s;
    const int N = n->pairs, R = s->redir_width;
    const size_t hwc = (size_t)n->hc * n->wc, half = (size_t)N * n->cc * hwc;
    nn_concat_shape c0 = {N, n->dcorr, (int)hwc, n->dcorr + R, 0};
    nn_concat_shape c1 = {N, R, (int)hwc, n->dcorr + R, n->dcorr};
    MANTA_TRY(nn_concat_backward(d, &c0, G(n, n->ccat), G(n, n->corr), false));
    MANTA_TRY(nn_concat_backward(d, &c1, G(n, n->ccat), G(n, n->redir_act), false));
    MANTA_TRY(ofa_net_act_backward(&n->net, NN_ACT_LEAKY_RELU, (size_t)N * R * hwc, n->redir_bn_t,
                                   n->redir_act, n->redir_bn_t));
    MANTA_TRY(ofa_net_bn_backward(&n->net, &n->redir_bn, R, (int)hwc, n->redir_conv, n->redir_bn_t,
                                  n->redir_conv));
    nn_corr_shape cs = corr_shape(n, N);
    MANTA_TRY(nn_corr_backward(d, &cs, A(n, n->shared_out), A(n, n->shared_out + half),
                               G(n, n->corr), G(n, n->shared_out), G(n, n->shared_out + half)));
    nn_conv2d_shape rs = redir_shape(n, N);
    MANTA_TRY(nn_conv2d_backward(d, &rs, A(n, n->shared_out), PW(n, n->redir_w),
                                 G(n, n->redir_conv), G(n, n->gtmp), DP(n, n->redir_w), SCR(n)));
    return nn_axpy(d, half, 1.0f, G(n, n->gtmp), G(n, n->shared_out));
}

manta_status stereo_net_backward(stereo_net *n)
{
    ofa_net *net = &n->net;
    if (net->forward_only)
        return manta_err_set(mcl_err(net->d), MANTA_ERR_INVALID_ARG,
                             "stereo net: backward on a network made for forward passes only");
    if (!n->have_arch || net->fwd_params.mem != net->params.mem || net->fwd_bn == OFA_BN_EVAL ||
        net->fwd_bn == OFA_BN_RECAL)
        return manta_err_set(mcl_err(net->d), MANTA_ERR_INVALID_ARG,
                             "stereo net: backward needs a training forward on the own "
                             "parameters");
    const stereo_space *s = &n->s;
    const int N = n->pairs;
    net->batch = N;
    MANTA_TRY(decoder_backward(n));
    MANTA_TRY(slots_backward(n, n->n_shared, n->n_active));
    MANTA_TRY(corr_backward(n));
    net->batch = 2 * N;
    MANTA_TRY(slots_backward(n, 0, n->n_shared));
    const size_t shw = (size_t)n->h1 * n->w1;
    MANTA_TRY(ofa_net_act_backward_xy(net, s->stem_act, 2 * (size_t)N * s->stem_width * shw,
                                      n->stem_bn_t, n->stem_act, n->stem_act, n->stem_bn_t));
    MANTA_TRY(ofa_net_bn_backward(net, &n->stem_bn, s->stem_width, (int)shw, n->stem_conv,
                                  n->stem_bn_t, n->stem_conv));
    nn_conv2d_shape stem = stem_shape(n, 2 * N);
    MANTA_TRY(nn_conv2d_backward(net->d, &stem, A(n, n->x0), PW(n, n->stem_w), G(n, n->stem_conv),
                                 (mview){NULL, 0}, DP(n, n->stem_w), SCR(n)));
    net->batch = N;
    return MANTA_OK;
}

/* ---- the layers as they run ---------------------------------------------------------------- */

/* Append @p l to @p d. */
static void put(stereo_desc *d, const stereo_layer *l)
{
    d->layer[d->n++] = *l;
    d->macs += l->macs;
    d->params += l->params;
}

/* A layer of @p kind named @p name (other fields zero). */
static stereo_layer layer(const char *name, stereo_layer_kind kind)
{
    stereo_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.kind = kind;
    l.act = NN_ACT_NONE;
    l.views = 1;
    return l;
}

/* A convolution from its op shape (batch 1), @p views views. */
static stereo_layer conv_layer(const char *name, const nn_conv2d_shape *c, bool bn, bool bias,
                               nn_act act, int views)
{
    stereo_layer l = layer(name, STEREO_L_CONV);
    l.in_h = c->h, l.in_w = c->w, l.in_c = c->cin;
    l.out_h = nn_conv2d_out_h(c), l.out_w = nn_conv2d_out_w(c), l.out_c = c->cout;
    l.kernel = c->kh, l.stride = c->stride_h;
    l.bn = bn, l.bias = bias, l.act = act, l.views = views;
    l.macs = nn_conv2d_macs(c) * views;
    l.params =
        (long)c->cout * c->cin * c->kh * c->kw + (bias ? c->cout : 0) + (bn ? 2L * c->cout : 0);
    return l;
}

/* A layer of @p kind that keeps the channels, from (h, w, c) to (oh, ow, c). */
static stereo_layer plain_layer(const char *name, stereo_layer_kind kind, int h, int w, int c,
                                int oh, int ow, int stride)
{
    stereo_layer l = layer(name, kind);
    l.in_h = h, l.in_w = w, l.in_c = c;
    l.out_h = oh, l.out_w = ow, l.out_c = c;
    l.kernel = 1, l.stride = stride;
    return l;
}

/* The layers of active slot @p x (views 2 on the shared part). */
static void slot_layers(const stereo_net *n, const stereo_slot *x, stereo_desc *d)
{
    const ofa_mbconv *p = &n->slot[x->idx];
    const ofa_mbconv_cfg *c = &x->c;
    const int u = x->idx / n->s.max_depth + 1, j = x->idx % n->s.max_depth + 1;
    const int views = u <= n->s.corr_after_unit ? 2 : 1;
    char name[48];
    nn_conv2d_shape e = {1, p->in_c, c->h, c->w, c->mid, 1, 1, 1, 1, 0, 0, 0};
    snprintf(name, sizeof name, "u%d.b%d.expand", u, j);
    stereo_layer l = conv_layer(name, &e, true, false, p->act, views);
    put(d, &l);
    nn_dw_shape dw = {1, c->mid, c->h, c->w, c->k, c->stride, c->k / 2};
    snprintf(name, sizeof name, "u%d.b%d.dw", u, j);
    l = layer(name, STEREO_L_DWCONV);
    l.in_h = c->h, l.in_w = c->w, l.in_c = c->mid;
    l.out_h = nn_dw_out_h(&dw), l.out_w = nn_dw_out_w(&dw), l.out_c = c->mid;
    l.kernel = c->k, l.stride = c->stride, l.bn = true, l.act = p->act, l.views = views;
    l.macs = nn_dw_macs(&dw) * views;
    l.params = (long)c->mid * c->k * c->k + 2L * c->mid;
    put(d, &l);
    if (p->se) {
        snprintf(name, sizeof name, "u%d.b%d.se", u, j);
        l = plain_layer(name, STEREO_L_SE, c->ho, c->wo, c->mid, c->ho, c->wo, 1);
        l.act = NN_ACT_HSIGMOID, l.views = views;
        l.macs = 2.0 * c->mid * c->se * views;
        l.params = 2L * c->mid * c->se + c->se + c->mid;
        put(d, &l);
    }
    nn_conv2d_shape pr = {1, c->mid, c->ho, c->wo, p->width, 1, 1, 1, 1, 0, 0, 0};
    snprintf(name, sizeof name, "u%d.b%d.project", u, j);
    l = conv_layer(name, &pr, true, false, NN_ACT_NONE, views);
    l.residual = c->residual;
    put(d, &l);
}

/* The correlation, the redirect and their concatenation. */
static void corr_layers(const stereo_net *n, stereo_desc *d)
{
    nn_corr_shape cs = corr_shape(n, 1);
    stereo_layer l = layer("corr", STEREO_L_CORR);
    l.in_h = n->hc, l.in_w = n->wc, l.in_c = n->cc;
    l.out_h = n->hc, l.out_w = n->wc, l.out_c = nn_corr_out_c(&cs);
    l.kernel = 1, l.stride = n->s.corr_stride;
    l.macs = nn_corr_macs(&cs);
    put(d, &l);
    nn_conv2d_shape rs = redir_shape(n, 1);
    l = conv_layer("redir", &rs, true, false, NN_ACT_LEAKY_RELU, 1);
    put(d, &l);
    const int c = n->dcorr + n->s.redir_width;
    l = plain_layer("corr.concat", STEREO_L_CONCAT, n->hc, n->wc, c, n->hc, n->wc, 1);
    put(d, &l);
}

/* The layers of decoder level @p i. */
static void level_layers(const stereo_net *n, int i, stereo_desc *d)
{
    const stereo_level *lv = &n->lev[i];
    const int k = n->s.n_levels - 1 - i; /* its output scale 1/2^k */
    char name[48];
    nn_deconv2d_shape up = up_shape(lv, 1);
    snprintf(name, sizeof name, "d%d.deconv", k);
    stereo_layer l = layer(name, STEREO_L_DECONV);
    l.in_h = up.h, l.in_w = up.w, l.in_c = up.cin;
    l.out_h = nn_deconv2d_out_h(&up), l.out_w = nn_deconv2d_out_w(&up), l.out_c = up.cout;
    l.kernel = up.kh, l.stride = up.stride_h, l.bias = true, l.act = NN_ACT_LEAKY_RELU;
    l.macs = nn_deconv2d_macs(&up);
    l.params = (long)up.cin * up.cout * up.kh * up.kw + up.cout;
    put(d, &l);
    nn_upsample_shape us = upp_shape(lv, 1);
    snprintf(name, sizeof name, "d%d.upsample", k);
    l = plain_layer(name, STEREO_L_UPSAMPLE, us.h, us.w, us.c, nn_upsample_out_h(&us),
                    nn_upsample_out_w(&us), us.factor);
    put(d, &l);
    snprintf(name, sizeof name, "d%d.concat", k);
    l = plain_layer(name, STEREO_L_CONCAT, lv->h, lv->w, cat_c(lv), lv->h, lv->w, 1);
    put(d, &l);
    nn_conv2d_shape c = lconv_shape(lv, 1), p = lpred_shape(lv, 1);
    snprintf(name, sizeof name, "d%d.conv", k);
    l = conv_layer(name, &c, false, true, NN_ACT_LEAKY_RELU, 1);
    put(d, &l);
    snprintf(name, sizeof name, "d%d.pred", k);
    l = conv_layer(name, &p, false, true, NN_ACT_NONE, 1);
    put(d, &l);
}

manta_status stereo_net_layers(const stereo_net *n, stereo_desc *out)
{
    memset(out, 0, sizeof *out);
    if (!n->have_arch)
        return manta_err_set(mcl_err(n->net.d), MANTA_ERR_INVALID_ARG,
                             "stereo net: layers asked before an architecture was set");
    nn_conv2d_shape stem = stem_shape(n, 1);
    stereo_layer l = conv_layer("stem", &stem, true, false, n->s.stem_act, 2);
    put(out, &l);
    for (int i = 0; i < n->n_shared; i++)
        slot_layers(n, &n->active[i], out);
    corr_layers(n, out);
    for (int i = n->n_shared; i < n->n_active; i++)
        slot_layers(n, &n->active[i], out);
    char name[48];
    snprintf(name, sizeof name, "d%d.pred", n->s.n_levels);
    nn_conv2d_shape p0 = pred0_shape(n, 1);
    l = conv_layer(name, &p0, false, true, NN_ACT_NONE, 1);
    put(out, &l);
    for (int i = 0; i < n->s.n_levels; i++)
        level_layers(n, i, out);
    return MANTA_OK;
}
