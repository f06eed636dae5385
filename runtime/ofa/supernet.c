#include "ofa/supernet.h"
#include "ofa/supernet_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/conv.h"
#include "nn/depthwise.h"
#include "nn/dropout.h"
#include "nn/linear.h"
#include "nn/pool.h"
#include "ofa/elastic.h"

const ofa_space *ofa_supernet_space(const ofa_supernet *n) { return &n->s; }
int ofa_supernet_batch(const ofa_supernet *n) { return n->batch; }

void ofa_supernet_slabs(const ofa_supernet *n, ofa_slabs *o)
{
    o->params = mslab_view(&n->params, 0);
    o->grads = mslab_view(&n->grads, 0);
    o->momentum = mslab_view(&n->mom, 0);
    o->state = mslab_view(&n->state, 0);
    o->n_params = n->n_params;
    o->n_decay = n->n_decay;
    o->n_state = n->n_state;
}

static mview A(const ofa_supernet *n, size_t off) { return mslab_view(&n->acts, off); }
static mview G(const ofa_supernet *n, size_t off) { return mslab_view(&n->dacts, off); }
static mview DP(const ofa_supernet *n, size_t off) { return mslab_view(&n->grads, off); }
static mview S(const ofa_supernet *n, size_t off) { return mslab_view(&n->state, off); }
/* The op scratch, shared by every layer (no op keeps data in it between calls). */
static mview SCR(const ofa_supernet *n) { return mslab_view(&n->scratch, 0); }

mview ofa_supernet_input(const ofa_supernet *n) { return A(n, n->x0); }
mview ofa_supernet_logits(const ofa_supernet *n) { return A(n, n->logits); }
mview ofa_supernet_dlogits(const ofa_supernet *n) { return G(n, n->logits); }

/* ---- layout ------------------------------------------------------------------------ */

static void bn_layout(bn_p *b, int c, mlayout *pl, mlayout *sl)
{
    b->gamma = mlayout_add(pl, (size_t)c);
    b->beta = mlayout_add(pl, (size_t)c);
    b->rmean = mlayout_add(sl, (size_t)c);
    b->rvar = mlayout_add(sl, (size_t)c);
    b->smean = mlayout_add(sl, (size_t)c);
    b->sinv = mlayout_add(sl, (size_t)c);
}

/* Raise *scratch to what an op at its largest shape needs (the ops' sizes grow with every
 * dimension, so the largest shape covers the smaller sub-networks). */
static void need(size_t *scratch, size_t floats)
{
    if (floats > *scratch)
        *scratch = floats;
}

static void need_conv(const ofa_supernet *n, size_t *scratch, const nn_conv2d_shape *c)
{
    need(scratch, nn_conv2d_scratch_floats(n->d, c));
}

static void need_bn(const ofa_supernet *n, size_t *scratch, int c, int hw)
{
    nn_bn_shape b = {n->batch, c, hw};
    need(scratch, nn_bn_scratch_floats(n->d, &b));
}

static void need_dw(const ofa_supernet *n, size_t *scratch, int c, int h, int k, int stride)
{
    nn_dw_shape w = {n->batch, c, h, h, k, stride, k / 2};
    need(scratch, nn_dw_scratch_floats(n->d, &w));
}

/* Plan parameters (decayed first), state and activations for the largest
 * network at the largest resolution, and the op scratch. */
static void plan(ofa_supernet *n, mlayout *pl, mlayout *sl, mlayout *al, size_t *scratch)
{
    const ofa_space *s = &n->s;
    const size_t B = (size_t)n->batch;
    const int kmax = s->ks[s->n_ks - 1];
    /* decayed: every weight matrix */
    n->stem_w = mlayout_add(pl, (size_t)s->stem_width * s->in_channels * s->stem_kernel * s->stem_kernel);
    n->first_dw = mlayout_add(pl, (size_t)s->stem_width * 9);
    n->first_p = mlayout_add(pl, (size_t)s->first_width * s->stem_width);
    int c = s->first_width;
    for (int u = 0; u < s->n_units; u++)
        for (int j = 0; j < s->max_depth; j++) {
            slot_p *p = &n->slot[u * s->max_depth + j];
            p->in_c = c;
            p->width = s->unit[u].width;
            p->stride = j == 0 ? s->unit[u].stride : 1;
            p->act = s->unit[u].act;
            p->se = s->unit[u].se;
            p->mid_max = ofa_make_divisible((double)c * s->e[s->n_e - 1], 8);
            p->se_max = ofa_make_divisible(p->mid_max / 4.0, 8);
            p->e_w = mlayout_add(pl, (size_t)p->mid_max * c);
            p->dw_w = mlayout_add(pl, (size_t)p->mid_max * kmax * kmax);
            for (int i = 0; i + 1 < s->n_ks; i++)
                p->kmat[i] = mlayout_add(pl, (size_t)s->ks[i] * s->ks[i] * s->ks[i] * s->ks[i]);
            if (p->se) {
                p->se_r_w = mlayout_add(pl, (size_t)p->se_max * p->mid_max);
                p->se_e_w = mlayout_add(pl, (size_t)p->mid_max * p->se_max);
            }
            p->p_w = mlayout_add(pl, (size_t)p->width * p->mid_max);
            c = p->width;
        }
    n->head_w = mlayout_add(pl, (size_t)s->head_expand * c);
    int feat = s->head_expand;
    if (s->head_mix > 0) {
        n->mix_w = mlayout_add(pl, (size_t)s->head_mix * s->head_expand);
        feat = s->head_mix;
    }
    n->cls_w = mlayout_add(pl, (size_t)s->classes * feat);
    n->n_decay = pl->total;
    /* not decayed: batch norm and biases */
    bn_layout(&n->stem_bn, s->stem_width, pl, sl);
    bn_layout(&n->first_dbn, s->stem_width, pl, sl);
    bn_layout(&n->first_pbn, s->first_width, pl, sl);
    for (int i = 0; i < ofa_slots(s); i++) {
        slot_p *p = &n->slot[i];
        bn_layout(&p->e_bn, p->mid_max, pl, sl);
        bn_layout(&p->d_bn, p->mid_max, pl, sl);
        bn_layout(&p->p_bn, p->width, pl, sl);
        if (p->se) {
            p->se_r_b = mlayout_add(pl, (size_t)p->se_max);
            p->se_e_b = mlayout_add(pl, (size_t)p->mid_max);
        }
    }
    bn_layout(&n->head_bn, s->head_expand, pl, sl);
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
    n->stem_bn_t = mlayout_add(al, st);
    n->stem_act = mlayout_add(al, st);
    n->f_dconv = mlayout_add(al, st);
    n->f_dbn = mlayout_add(al, st);
    n->f_dact = mlayout_add(al, st);
    size_t fo = B * s->first_width * h * h;
    n->f_pconv = mlayout_add(al, fo);
    n->f_pbn = mlayout_add(al, fo);
    n->f_out = mlayout_add(al, fo);
    nn_conv2d_shape cs = {n->batch, s->in_channels, r, r, s->stem_width, s->stem_kernel,
                          s->stem_kernel, sstride, sstride, s->stem_kernel / 2, s->stem_kernel / 2, 0};
    *scratch = 0;
    need_conv(n, scratch, &cs);
    need_bn(n, scratch, s->stem_width, h * h);
    need_bn(n, scratch, s->first_width, h * h);
    need_dw(n, scratch, s->stem_width, h, 3, 1);
    size_t spare = 0;
    for (int i = 0; i < ofa_slots(s); i++) {
        slot_p *p = &n->slot[i];
        slot_t *t = &p->t;
        int ho = ofa_out_size(h, 1, p->stride); /* same for every odd kernel size */
        size_t in_mid = B * p->mid_max * h * h, out_mid = B * p->mid_max * ho * ho;
        size_t out_w = B * p->width * ho * ho;
        spare = spare > out_mid ? spare : out_mid;
        t->e_conv = mlayout_add(al, in_mid);
        t->e_bn = mlayout_add(al, in_mid);
        t->e_act = mlayout_add(al, in_mid);
        for (int k = 0; k + 1 < s->n_ks; k++)
            t->kw[k] = mlayout_add(al, (size_t)p->mid_max * s->ks[k] * s->ks[k]);
        t->d_conv = mlayout_add(al, out_mid);
        t->d_bn = mlayout_add(al, out_mid);
        t->d_act = mlayout_add(al, out_mid);
        if (p->se) {
            t->se_pool = mlayout_add(al, B * p->mid_max);
            t->se_r = mlayout_add(al, B * p->se_max);
            t->se_relu = mlayout_add(al, B * p->se_max);
            t->se_e = mlayout_add(al, B * p->mid_max);
            t->se_hsig = mlayout_add(al, B * p->mid_max);
            t->se_out = mlayout_add(al, out_mid);
        }
        t->p_conv = mlayout_add(al, out_w);
        t->p_bn = mlayout_add(al, out_w);
        t->out = mlayout_add(al, out_w);
        nn_conv2d_shape e = {n->batch, p->in_c, h, h, p->mid_max, 1, 1, 1, 1, 0, 0, 0};
        nn_conv2d_shape pr = {n->batch, p->mid_max, ho, ho, p->width, 1, 1, 1, 1, 0, 0, 0};
        need_conv(n, scratch, &e);
        need_conv(n, scratch, &pr);
        need_bn(n, scratch, p->mid_max, h * h);
        need_bn(n, scratch, p->width, ho * ho);
        need_dw(n, scratch, p->mid_max, h, kmax, p->stride);
        h = ho;
    }
    c = n->slot[ofa_slots(s) - 1].width;
    size_t hd = B * s->head_expand * h * h;
    n->h_conv = mlayout_add(al, hd);
    n->h_bn = mlayout_add(al, hd);
    n->h_act = mlayout_add(al, hd);
    n->h_pool = mlayout_add(al, B * s->head_expand);
    nn_conv2d_shape hs = {n->batch, c, h, h, s->head_expand, 1, 1, 1, 1, 0, 0, 0};
    need_conv(n, scratch, &hs);
    need_bn(n, scratch, s->head_expand, h * h);
    if (s->head_mix > 0) {
        n->m_lin = mlayout_add(al, B * s->head_mix);
        n->m_act = mlayout_add(al, B * s->head_mix);
    }
    n->drop = mlayout_add(al, B * (size_t)(s->head_mix > 0 ? s->head_mix : s->head_expand));
    n->logits = mlayout_add(al, B * s->classes);
    n->tmp = mlayout_add(al, spare); /* SE pooling gradients */
    int widest = s->head_expand > s->stem_width ? s->head_expand : s->stem_width;
    for (int i = 0; i < ofa_slots(s); i++)
        widest = n->slot[i].mid_max > widest ? n->slot[i].mid_max : widest;
    n->stats_tmp = mlayout_add(al, 2 * (size_t)widest);
    n->widest = widest;
}

/* ---- creation ------------------------------------------------------------------------ */

/* Every batch norm of the supernet with its (largest) channel count. */
#define MAX_BNS (3 + 3 * OFA_MAX_SLOTS + 1)
static int collect_bns(const ofa_supernet *n, const bn_p **bns, int *widths)
{
    const ofa_space *s = &n->s;
    int nb = 0;
    bns[nb] = &n->stem_bn, widths[nb++] = s->stem_width;
    bns[nb] = &n->first_dbn, widths[nb++] = s->stem_width;
    bns[nb] = &n->first_pbn, widths[nb++] = s->first_width;
    for (int i = 0; i < ofa_slots(s); i++) {
        const slot_p *q = &n->slot[i];
        bns[nb] = &q->e_bn, widths[nb++] = q->mid_max;
        bns[nb] = &q->d_bn, widths[nb++] = q->mid_max;
        bns[nb] = &q->p_bn, widths[nb++] = q->width;
    }
    bns[nb] = &n->head_bn, widths[nb++] = s->head_expand;
    return nb;
}

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
 * validation top-1 with it and 82% with this one (docs/ofa.md). */
static manta_status init_values(ofa_supernet *n, uint64_t seed)
{
    const ofa_space *s = &n->s;
    float *p = calloc(n->n_params ? n->n_params : 1, sizeof *p);
    float *st = calloc(n->n_state ? n->n_state : 1, sizeof *st);
    if (!p || !st) {
        free(p);
        free(st);
        return manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY, "supernet: out of host memory");
    }
    manta_rng r;
    manta_rng_seed(&r, seed, 0x5eed);
    const int kmax = s->ks[s->n_ks - 1], ks = s->stem_kernel;
    fill_fan_in(&r, p + n->stem_w, (size_t)s->stem_width * s->in_channels * ks * ks,
                s->in_channels * ks * ks);
    fill_fan_in(&r, p + n->first_dw, (size_t)s->stem_width * 9, 9);
    fill_fan_in(&r, p + n->first_p, (size_t)s->first_width * s->stem_width, s->stem_width);
    int c = s->first_width;
    for (int i = 0; i < ofa_slots(s); i++) {
        const slot_p *q = &n->slot[i];
        fill_fan_in(&r, p + q->e_w, (size_t)q->mid_max * q->in_c, q->in_c);
        fill_fan_in(&r, p + q->dw_w, (size_t)q->mid_max * kmax * kmax, kmax * kmax);
        for (int k = 0; k + 1 < s->n_ks; k++) {
            int kk = s->ks[k] * s->ks[k];
            for (int d = 0; d < kk; d++)
                p[q->kmat[k] + (size_t)d * kk + d] = 1.0f;
        }
        if (q->se) {
            fill_fan_in(&r, p + q->se_r_w, (size_t)q->se_max * q->mid_max, q->mid_max);
            fill_fan_in(&r, p + q->se_e_w, (size_t)q->mid_max * q->se_max, q->se_max);
        }
        fill_fan_in(&r, p + q->p_w, (size_t)q->width * q->mid_max, q->mid_max);
        c = q->width;
    }
    fill_fan_in(&r, p + n->head_w, (size_t)s->head_expand * c, c);
    int feat = s->head_expand;
    if (s->head_mix > 0) {
        fill_fan_in(&r, p + n->mix_w, (size_t)s->head_mix * s->head_expand, s->head_expand);
        feat = s->head_mix;
    }
    manta_rng_fill_uniform(&r, p + n->cls_w, (size_t)s->classes * feat, 1.0f / sqrtf((float)feat));
    /* batch norms: gamma 1, running variance 1 */
    const bn_p *bns[MAX_BNS];
    int widths[MAX_BNS], nb = collect_bns(n, bns, widths);
    for (int b = 0; b < nb; b++)
        for (int k = 0; k < widths[b]; k++) {
            p[bns[b]->gamma + (size_t)k] = 1.0f;
            st[bns[b]->rvar + (size_t)k] = 1.0f;
        }
    manta_status rc = mcl_write(n->d, mslab_view(&n->params, 0), p, n->n_params);
    if (rc == MANTA_OK)
        rc = mcl_write(n->d, S(n, 0), st, n->n_state);
    free(p);
    free(st);
    return rc;
}

void ofa_supernet_destroy(ofa_supernet *n)
{
    if (!n)
        return;
    mslab *slabs[] = {&n->params, &n->grads, &n->mom, &n->state, &n->acts, &n->dacts, &n->scratch};
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        mslab_destroy(n->d, slabs[i]);
    free(n->sync_host);
    free(n);
}

manta_status ofa_supernet_create(mcl_dev *d, const ofa_space *space, int batch, uint64_t seed,
                                 ofa_supernet **out)
{
    *out = NULL;
    if (batch < 1 || space->n_ks < 1 || space->n_ks > KMAX_SLOTS || space->n_units < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "supernet: batch %d or space '%s' out of range", batch, space->name);
    ofa_supernet *n = calloc(1, sizeof *n);
    if (!n)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "supernet: out of host memory");
    n->d = d;
    n->s = *space;
    n->batch = batch;
    mlayout pl = {0}, sl = {0}, al = {0};
    size_t scratch = 0;
    plan(n, &pl, &sl, &al, &scratch);
    manta_status st = mslab_create(d, &n->params, pl.total, "supernet parameters");
    if (st == MANTA_OK)
        st = mslab_create(d, &n->grads, pl.total, "supernet gradients");
    if (st == MANTA_OK)
        st = mslab_create(d, &n->mom, pl.total, "supernet momentum");
    if (st == MANTA_OK)
        st = mslab_create(d, &n->state, sl.total, "batch-norm statistics");
    if (st == MANTA_OK)
        st = mslab_create(d, &n->acts, al.total, "activations");
    if (st == MANTA_OK)
        st = mslab_create(d, &n->dacts, al.total, "activation gradients");
    if (st == MANTA_OK)
        st = mslab_create(d, &n->scratch, scratch ? scratch : 1, "op scratch");
    if (st == MANTA_OK)
        st = init_values(n, seed);
    if (st == MANTA_OK && !(n->sync_host = malloc(2 * (size_t)n->widest * sizeof(float))))
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "supernet: out of host memory");
    if (st != MANTA_OK) {
        ofa_supernet_destroy(n);
        return st;
    }
    *out = n;
    return MANTA_OK;
}

/* ---- the active sub-network -------------------------------------------------------- */

manta_status ofa_supernet_set_arch(ofa_supernet *n, const ofa_arch *a)
{
    const ofa_space *s = &n->s;
    MANTA_TRY(ofa_arch_validate(s, a, mcl_err(n->d)));
    n->arch = *a;
    n->h0 = a->r;
    n->stem_stride = a->r <= s->stem_stride1_max_res ? 1 : 2;
    n->hs = ofa_out_size(a->r, s->stem_kernel, n->stem_stride);
    n->first_residual = s->stem_width == s->first_width;
    size_t cur = n->first_residual ? n->f_out : n->f_pbn;
    int h = n->hs, c = s->first_width;
    n->n_active = 0;
    for (int u = 0; u < s->n_units; u++)
        for (int j = 0; j < a->d[u]; j++) {
            int idx = u * s->max_depth + j;
            const slot_p *p = &n->slot[idx];
            slot_a *x = &n->active[n->n_active++];
            x->idx = idx;
            x->mid = ofa_make_divisible((double)p->in_c * a->e[idx], 8);
            x->se = ofa_make_divisible(x->mid / 4.0, 8);
            x->k = a->ks[idx];
            for (x->ki = 0; s->ks[x->ki] != x->k; x->ki++)
                ;
            x->h = x->w = h;
            x->ho = x->wo = ofa_out_size(h, x->k, p->stride);
            x->residual = p->stride == 1 && p->in_c == p->width;
            x->in = cur;
            cur = x->residual ? p->t.out : p->t.p_bn;
            h = x->ho;
            c = p->width;
        }
    n->head_in = cur;
    n->last_c = c;
    n->last_h = h;
    n->have_arch = true;
    return MANTA_OK;
}

/* ---- forward ------------------------------------------------------------------------- */

static mview PW(const ofa_supernet *n, size_t off) { return mview_at(n->fwd_params, off); }

/* Synchronised batch-norm forward: local statistics, combined over the replicas by the
 * callback, then saved and applied. */
static manta_status bn_fwd_sync(ofa_supernet *n, const bn_p *b, int c, int hw, size_t x, size_t y)
{
    nn_bn_shape sh = {n->batch, c, hw};
    mview stats = A(n, n->stats_tmp);
    MANTA_TRY(nn_bn_stats(n->d, &sh, A(n, x), stats, A(n, n->stats_tmp + (size_t)c), SCR(n)));
    MANTA_TRY(mcl_read(n->d, stats, n->sync_host, 2 * (size_t)c));
    long m_total = 0;
    MANTA_TRY(n->bn_sync(n->bn_sync_ctx, OFA_BN_SYNC_STATS, n->sync_host, c,
                         (long)n->batch * hw, &m_total, mcl_err(n->d)));
    MANTA_TRY(mcl_write(n->d, stats, n->sync_host, 2 * (size_t)c));
    float momentum = n->fwd_bn == OFA_BN_TRAIN ? BN_MOMENTUM : 0.0f;
    MANTA_TRY(nn_bn_sync_finish(n->d, c, m_total, momentum, BN_EPS, stats, S(n, b->rmean),
                                S(n, b->rvar), S(n, b->smean), S(n, b->sinv)));
    return nn_bn_forward_apply(n->d, &sh, A(n, x), PW(n, b->gamma), PW(n, b->beta),
                               S(n, b->smean), S(n, b->sinv), A(n, y));
}

static manta_status bn_fwd(ofa_supernet *n, const bn_p *b, int c, int hw, size_t x, size_t y)
{
    nn_bn_shape sh = {n->batch, c, hw};
    if (n->bn_sync && (n->fwd_bn == OFA_BN_TRAIN || n->fwd_bn == OFA_BN_BATCH_ONLY))
        return bn_fwd_sync(n, b, c, hw, x, y);
    if (n->fwd_bn == OFA_BN_EVAL)
        return nn_bn_forward_eval(n->d, &sh, BN_EPS, A(n, x), PW(n, b->gamma), PW(n, b->beta),
                                  S(n, b->rmean), S(n, b->rvar), A(n, y));
    float momentum = n->fwd_bn == OFA_BN_TRAIN ? BN_MOMENTUM : 0.0f;
    MANTA_TRY(nn_bn_forward_train(n->d, &sh, momentum, BN_EPS, A(n, x), PW(n, b->gamma), PW(n, b->beta),
                            S(n, b->rmean), S(n, b->rvar), A(n, y), S(n, b->smean),
                            S(n, b->sinv), SCR(n)));
    if (n->fwd_bn != OFA_BN_RECAL)
        return MANTA_OK;
    mview mean = A(n, n->stats_tmp), var = A(n, n->stats_tmp + (size_t)c);
    MANTA_TRY(nn_bn_stats(n->d, &sh, A(n, x), mean, var, SCR(n)));
    MANTA_TRY(nn_axpy(n->d, (size_t)c, n->recal_weight, mean, S(n, b->rmean)));
    return nn_axpy(n->d, (size_t)c, n->recal_weight, var, S(n, b->rvar));
}

manta_status ofa_supernet_recal_begin(ofa_supernet *n, long total_images)
{
    if (total_images < n->batch)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "BN re-calibration over %ld images: fewer than one batch of %d",
                             total_images, n->batch);
    n->recal_weight = (float)n->batch / (float)total_images;
    /* running statistics are interleaved with the saved ones: zero them per layer */
    const bn_p *bns[MAX_BNS];
    int widths[MAX_BNS], nb = collect_bns(n, bns, widths);
    for (int i = 0; i < nb; i++) {
        MANTA_TRY(mcl_fill(n->d, S(n, bns[i]->rmean), 0.0f, (size_t)widths[i]));
        MANTA_TRY(mcl_fill(n->d, S(n, bns[i]->rvar), 0.0f, (size_t)widths[i]));
    }
    return MANTA_OK;
}

static manta_status bn_bwd(ofa_supernet *n, const bn_p *b, int c, int hw, size_t x, size_t dy,
                           size_t dx)
{
    nn_bn_shape sh = {n->batch, c, hw};
    if (n->bn_sync) {
        mview sums = A(n, n->stats_tmp);
        MANTA_TRY(nn_bn_backward_reduce(n->d, &sh, A(n, x), S(n, b->smean), S(n, b->sinv), G(n, dy),
                                        sums, DP(n, b->gamma), DP(n, b->beta), SCR(n)));
        MANTA_TRY(mcl_read(n->d, sums, n->sync_host, 2 * (size_t)c));
        long m_total = 0;
        MANTA_TRY(n->bn_sync(n->bn_sync_ctx, OFA_BN_SYNC_GRADS, n->sync_host, c,
                             (long)n->batch * hw, &m_total, mcl_err(n->d)));
        MANTA_TRY(mcl_write(n->d, sums, n->sync_host, 2 * (size_t)c));
        return nn_bn_backward_apply(n->d, &sh, m_total, A(n, x), PW(n, b->gamma), S(n, b->smean),
                                    S(n, b->sinv), G(n, dy), G(n, dx), sums);
    }
    return nn_bn_backward(n->d, &sh, A(n, x), PW(n, b->gamma), S(n, b->smean), S(n, b->sinv),
                          G(n, dy), G(n, dx), DP(n, b->gamma), DP(n, b->beta), SCR(n));
}

static manta_status act_fwd(ofa_supernet *n, nn_act a, size_t len, size_t x, size_t y)
{
    return nn_act_forward(n->d, a, A(n, x), A(n, y), len);
}

static manta_status act_bwd(ofa_supernet *n, nn_act a, size_t len, size_t x, size_t dy, size_t dx)
{
    return nn_act_backward(n->d, a, A(n, x), G(n, dy), G(n, dx), len);
}

static nn_conv2d_shape pw_shape(const ofa_supernet *n, int cin, int h, int cout, int w_ld)
{
    nn_conv2d_shape c = {n->batch, cin, h, h, cout, 1, 1, 1, 1, 0, 0, w_ld};
    return c;
}

/* The depthwise kernel of an active slot: the stored largest one, or the
 * transformed smaller one (computed in the forward pass). */
static mview dw_weights(const ofa_supernet *n, const slot_a *a)
{
    const slot_p *p = &n->slot[a->idx];
    return a->ki == n->s.n_ks - 1 ? PW(n, p->dw_w) : A(n, p->t.kw[a->ki]);
}

static size_t proj_input(const slot_p *p) { return p->se ? p->t.se_out : p->t.d_act; }

static manta_status slot_forward(ofa_supernet *n, const slot_a *a)
{
    mcl_dev *d = n->d;
    const ofa_space *s = &n->s;
    const slot_p *p = &n->slot[a->idx];
    const slot_t *t = &p->t;
    const size_t B = (size_t)n->batch, hw = (size_t)a->h * a->w, ohw = (size_t)a->ho * a->wo;
    nn_conv2d_shape e = pw_shape(n, p->in_c, a->h, a->mid, 0);
    MANTA_TRY(nn_conv2d_forward(d, &e, A(n, a->in), PW(n, p->e_w), A(n, t->e_conv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &p->e_bn, a->mid, (int)hw, t->e_conv, t->e_bn));
    MANTA_TRY(act_fwd(n, p->act, B * a->mid * hw, t->e_bn, t->e_act));
    for (int i = s->n_ks - 2; i >= a->ki; i--) /* elastic kernel: K -> ... -> k */
        MANTA_TRY(ofa_ktrans_forward(d, a->mid, s->ks[i + 1], s->ks[i],
                               i == s->n_ks - 2 ? PW(n, p->dw_w) : A(n, t->kw[i + 1]),
                               PW(n, p->kmat[i]), A(n, t->kw[i])));
    nn_dw_shape dw = {n->batch, a->mid, a->h, a->w, a->k, p->stride, a->k / 2};
    MANTA_TRY(nn_dw_forward(d, &dw, A(n, t->e_act), dw_weights(n, a), A(n, t->d_conv)));
    MANTA_TRY(bn_fwd(n, &p->d_bn, a->mid, (int)ohw, t->d_conv, t->d_bn));
    MANTA_TRY(act_fwd(n, p->act, B * a->mid * ohw, t->d_bn, t->d_act));
    if (p->se) {
        nn_linear_shape r = {n->batch, a->mid, a->se, p->mid_max};
        nn_linear_shape e2 = {n->batch, a->se, a->mid, p->se_max};
        MANTA_TRY(nn_avgpool_forward(d, B * a->mid, ohw, A(n, t->d_act), A(n, t->se_pool)));
        MANTA_TRY(nn_linear_forward(d, &r, A(n, t->se_pool), PW(n, p->se_r_w), PW(n, p->se_r_b),
                              A(n, t->se_r)));
        MANTA_TRY(act_fwd(n, NN_ACT_RELU, B * a->se, t->se_r, t->se_relu));
        MANTA_TRY(nn_linear_forward(d, &e2, A(n, t->se_relu), PW(n, p->se_e_w), PW(n, p->se_e_b),
                              A(n, t->se_e)));
        MANTA_TRY(act_fwd(n, NN_ACT_HSIGMOID, B * a->mid, t->se_e, t->se_hsig));
        MANTA_TRY(nn_scale_forward(d, B * a->mid, ohw, A(n, t->d_act), A(n, t->se_hsig),
                             A(n, t->se_out)));
    }
    nn_conv2d_shape pr = pw_shape(n, a->mid, a->ho, p->width, p->mid_max);
    MANTA_TRY(nn_conv2d_forward(d, &pr, A(n, proj_input(p)), PW(n, p->p_w), A(n, t->p_conv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &p->p_bn, p->width, (int)ohw, t->p_conv, t->p_bn));
    if (a->residual)
        MANTA_TRY(nn_add(d, B * p->width * ohw, A(n, a->in), A(n, t->p_bn), A(n, t->out)));
    return MANTA_OK;
}

manta_status ofa_supernet_forward(ofa_supernet *n, mview params, ofa_bn_mode bn)
{
    if (!n->have_arch)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "supernet: forward before an architecture was set");
    mcl_dev *d = n->d;
    const ofa_space *s = &n->s;
    const size_t B = (size_t)n->batch;
    n->fwd_params = params;
    n->fwd_bn = bn;
    const int k = s->stem_kernel, hs = n->hs;
    const size_t shw = (size_t)hs * hs;
    nn_conv2d_shape stem = {n->batch, s->in_channels, n->h0, n->h0, s->stem_width, k, k,
                            n->stem_stride, n->stem_stride, k / 2, k / 2, 0};
    MANTA_TRY(nn_conv2d_forward(d, &stem, A(n, n->x0), PW(n, n->stem_w), A(n, n->stem_conv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &n->stem_bn, s->stem_width, (int)shw, n->stem_conv, n->stem_bn_t));
    MANTA_TRY(act_fwd(n, s->stem_act, B * s->stem_width * shw, n->stem_bn_t, n->stem_act));
    nn_dw_shape fdw = {n->batch, s->stem_width, hs, hs, 3, 1, 1};
    MANTA_TRY(nn_dw_forward(d, &fdw, A(n, n->stem_act), PW(n, n->first_dw), A(n, n->f_dconv)));
    MANTA_TRY(bn_fwd(n, &n->first_dbn, s->stem_width, (int)shw, n->f_dconv, n->f_dbn));
    MANTA_TRY(act_fwd(n, s->first_act, B * s->stem_width * shw, n->f_dbn, n->f_dact));
    nn_conv2d_shape fp = pw_shape(n, s->stem_width, hs, s->first_width, 0);
    MANTA_TRY(nn_conv2d_forward(d, &fp, A(n, n->f_dact), PW(n, n->first_p), A(n, n->f_pconv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &n->first_pbn, s->first_width, (int)shw, n->f_pconv, n->f_pbn));
    if (n->first_residual)
        MANTA_TRY(nn_add(d, B * s->first_width * shw, A(n, n->stem_act), A(n, n->f_pbn), A(n, n->f_out)));
    for (int i = 0; i < n->n_active; i++)
        MANTA_TRY(slot_forward(n, &n->active[i]));
    const size_t hhw = (size_t)n->last_h * n->last_h;
    nn_conv2d_shape hd = pw_shape(n, n->last_c, n->last_h, s->head_expand, 0);
    MANTA_TRY(nn_conv2d_forward(d, &hd, A(n, n->head_in), PW(n, n->head_w), A(n, n->h_conv), SCR(n)));
    MANTA_TRY(bn_fwd(n, &n->head_bn, s->head_expand, (int)hhw, n->h_conv, n->h_bn));
    MANTA_TRY(act_fwd(n, NN_ACT_HSWISH, B * s->head_expand * hhw, n->h_bn, n->h_act));
    MANTA_TRY(nn_avgpool_forward(d, B * s->head_expand, hhw, A(n, n->h_act), A(n, n->h_pool)));
    size_t feat = n->h_pool;
    int feat_c = s->head_expand;
    mview none = {NULL, 0};
    if (s->head_mix > 0) {
        nn_linear_shape m = {n->batch, s->head_expand, s->head_mix, 0};
        MANTA_TRY(nn_linear_forward(d, &m, A(n, n->h_pool), PW(n, n->mix_w), none, A(n, n->m_lin)));
        MANTA_TRY(act_fwd(n, NN_ACT_HSWISH, B * s->head_mix, n->m_lin, n->m_act));
        feat = n->m_act;
        feat_c = s->head_mix;
    }
    n->fwd_dropout = bn == OFA_BN_TRAIN && s->dropout > 0;
    if (n->fwd_dropout) {
        n->drop_off = (uint32_t)((size_t)n->first_sample * (size_t)feat_c);
        MANTA_TRY(nn_dropout_forward_at(d, B * (size_t)feat_c, n->drop_off, s->dropout, n->dropout_seed, A(n, feat),
                               A(n, n->drop)));
        feat = n->drop;
    }
    nn_linear_shape cls = {n->batch, feat_c, s->classes, 0};
    return nn_linear_forward(d, &cls, A(n, feat), PW(n, n->cls_w), PW(n, n->cls_b),
                             A(n, n->logits));
}

void ofa_supernet_set_dropout_seed(ofa_supernet *n, uint64_t seed) { n->dropout_seed = seed; }

void ofa_supernet_set_bn_sync(ofa_supernet *n, ofa_bn_sync_fn fn, void *ctx)
{
    n->bn_sync = fn;
    n->bn_sync_ctx = ctx;
}

int ofa_supernet_bn_max_channels(const ofa_supernet *n) { return n->widest; }

void ofa_supernet_set_shard(ofa_supernet *n, long first) { n->first_sample = first; }

/* ---- backward ------------------------------------------------------------------------- */

static manta_status slot_backward(ofa_supernet *n, const slot_a *a)
{
    mcl_dev *d = n->d;
    const ofa_space *s = &n->s;
    const slot_p *p = &n->slot[a->idx];
    const slot_t *t = &p->t;
    const size_t B = (size_t)n->batch, hw = (size_t)a->h * a->w, ohw = (size_t)a->ho * a->wo;
    size_t g_out = a->residual ? t->out : t->p_bn;
    MANTA_TRY(bn_bwd(n, &p->p_bn, p->width, (int)ohw, t->p_conv, g_out, t->p_conv));
    nn_conv2d_shape pr = pw_shape(n, a->mid, a->ho, p->width, p->mid_max);
    MANTA_TRY(nn_conv2d_backward(d, &pr, A(n, proj_input(p)), PW(n, p->p_w), G(n, t->p_conv),
                           G(n, proj_input(p)), DP(n, p->p_w), SCR(n)));
    if (p->se) {
        nn_linear_shape r = {n->batch, a->mid, a->se, p->mid_max};
        nn_linear_shape e2 = {n->batch, a->se, a->mid, p->se_max};
        MANTA_TRY(nn_scale_backward(d, B * a->mid, ohw, A(n, t->d_act), A(n, t->se_hsig),
                              G(n, t->se_out), G(n, t->d_act), G(n, t->se_hsig)));
        MANTA_TRY(act_bwd(n, NN_ACT_HSIGMOID, B * a->mid, t->se_e, t->se_hsig, t->se_e));
        MANTA_TRY(nn_linear_backward(d, &e2, A(n, t->se_relu), PW(n, p->se_e_w), G(n, t->se_e),
                               G(n, t->se_relu), DP(n, p->se_e_w), DP(n, p->se_e_b)));
        MANTA_TRY(act_bwd(n, NN_ACT_RELU, B * a->se, t->se_r, t->se_relu, t->se_r));
        MANTA_TRY(nn_linear_backward(d, &r, A(n, t->se_pool), PW(n, p->se_r_w), G(n, t->se_r),
                               G(n, t->se_pool), DP(n, p->se_r_w), DP(n, p->se_r_b)));
        MANTA_TRY(nn_avgpool_backward(d, B * a->mid, ohw, G(n, t->se_pool), G(n, n->tmp)));
        MANTA_TRY(nn_axpy(d, B * a->mid * ohw, 1.0f, G(n, n->tmp), G(n, t->d_act)));
    }
    MANTA_TRY(act_bwd(n, p->act, B * a->mid * ohw, t->d_bn, t->d_act, t->d_bn));
    MANTA_TRY(bn_bwd(n, &p->d_bn, a->mid, (int)ohw, t->d_conv, t->d_bn, t->d_conv));
    /* depthwise: weight gradient into the largest kernel directly, or into the
     * transformed kernel's gradient and back through the matrices */
    const bool smaller = a->ki < s->n_ks - 1;
    mview dw_grad = smaller ? G(n, t->kw[a->ki]) : DP(n, p->dw_w);
    if (smaller)
        MANTA_TRY(mcl_fill(d, dw_grad, 0.0f, (size_t)a->mid * a->k * a->k));
    nn_dw_shape dw = {n->batch, a->mid, a->h, a->w, a->k, p->stride, a->k / 2};
    MANTA_TRY(nn_dw_backward(d, &dw, A(n, t->e_act), dw_weights(n, a), G(n, t->d_conv),
                       G(n, t->e_act), dw_grad, SCR(n)));
    for (int i = a->ki; i <= s->n_ks - 2; i++) {
        bool top = i == s->n_ks - 2;
        int big = s->ks[i + 1];
        mview src = top ? PW(n, p->dw_w) : A(n, t->kw[i + 1]);
        mview dsrc = top ? DP(n, p->dw_w) : G(n, t->kw[i + 1]);
        if (!top)
            MANTA_TRY(mcl_fill(d, dsrc, 0.0f, (size_t)a->mid * big * big));
        MANTA_TRY(ofa_ktrans_backward(d, a->mid, big, s->ks[i], src, PW(n, p->kmat[i]),
                                G(n, t->kw[i]), dsrc, DP(n, p->kmat[i])));
    }
    MANTA_TRY(act_bwd(n, p->act, B * a->mid * hw, t->e_bn, t->e_act, t->e_bn));
    MANTA_TRY(bn_bwd(n, &p->e_bn, a->mid, (int)hw, t->e_conv, t->e_bn, t->e_conv));
    nn_conv2d_shape e = pw_shape(n, p->in_c, a->h, a->mid, 0);
    MANTA_TRY(nn_conv2d_backward(d, &e, A(n, a->in), PW(n, p->e_w), G(n, t->e_conv), G(n, a->in),
                           DP(n, p->e_w), SCR(n)));
    if (a->residual)
        MANTA_TRY(nn_axpy(d, B * p->width * hw, 1.0f, G(n, t->out), G(n, a->in)));
    return MANTA_OK;
}

void ofa_supernet_set_grad_ready(ofa_supernet *n, ofa_grad_ready_fn fn, void *ctx)
{
    n->grad_ready = fn;
    n->grad_ready_ctx = ctx;
}

int ofa_supernet_grad_bounds(const ofa_supernet *n, size_t *bounds, int cap)
{
    const int slots = ofa_slots(&n->s);
    int k = 0;
#define PUT(v) do { if (k < cap) bounds[k] = (v); k++; } while (0)
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
    if (!n->have_arch || n->fwd_params.mem != n->params.mem || n->fwd_bn == OFA_BN_EVAL ||
        n->fwd_bn == OFA_BN_RECAL)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "supernet: backward needs a training forward on the own parameters");
    mcl_dev *d = n->d;
    const ofa_space *s = &n->s;
    const size_t B = (size_t)n->batch;
    mview none = {NULL, 0};
    size_t feat = s->head_mix > 0 ? n->m_act : n->h_pool;
    int feat_c = s->head_mix > 0 ? s->head_mix : s->head_expand;
    size_t cls_in = n->fwd_dropout ? n->drop : feat;
    nn_linear_shape cls = {n->batch, feat_c, s->classes, 0};
    MANTA_TRY(nn_linear_backward(d, &cls, A(n, cls_in), PW(n, n->cls_w), G(n, n->logits), G(n, cls_in),
                           DP(n, n->cls_w), DP(n, n->cls_b)));
    if (n->fwd_dropout)
        MANTA_TRY(nn_dropout_backward_at(d, B * (size_t)feat_c, n->drop_off, s->dropout, n->dropout_seed, G(n, n->drop),
                                G(n, feat)));
    if (s->head_mix > 0) {
        nn_linear_shape m = {n->batch, s->head_expand, s->head_mix, 0};
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
        MANTA_TRY(slot_backward(n, &n->active[i]));
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
    nn_dw_shape fdw = {n->batch, s->stem_width, hs, hs, 3, 1, 1};
    MANTA_TRY(nn_dw_backward(d, &fdw, A(n, n->stem_act), PW(n, n->first_dw), G(n, n->f_dconv),
                       G(n, n->stem_act), DP(n, n->first_dw), SCR(n)));
    MANTA_TRY(grad_ready(n, n->first_dw));
    if (n->first_residual)
        MANTA_TRY(nn_axpy(d, B * s->first_width * shw, 1.0f, G(n, n->f_out), G(n, n->stem_act)));
    MANTA_TRY(act_bwd(n, s->stem_act, B * s->stem_width * shw, n->stem_bn_t, n->stem_act, n->stem_bn_t));
    MANTA_TRY(bn_bwd(n, &n->stem_bn, s->stem_width, (int)shw, n->stem_conv, n->stem_bn_t, n->stem_conv));
    nn_conv2d_shape stem = {n->batch, s->in_channels, n->h0, n->h0, s->stem_width, k, k,
                            n->stem_stride, n->stem_stride, k / 2, k / 2, 0};
    MANTA_TRY(nn_conv2d_backward(d, &stem, A(n, n->x0), PW(n, n->stem_w), G(n, n->stem_conv), none,
                                 DP(n, n->stem_w), SCR(n)));
    return grad_ready(n, 0);
}

/* ---- elastic width: channel re-organisation ----------------------------------------- */

typedef struct importance {
    double value;
    int index;
} importance;

static int by_importance(const void *a, const void *b)
{
    const importance *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? 1 : -1; /* descending */
    return x->index - y->index;              /* stable */
}

/* Sort imp[lo..hi) groups; perm[new] = old. */
static void sort_groups(importance *imp, int n, const int *bounds, int n_bounds, int *perm)
{
    int lo = 0;
    for (int g = 0; g <= n_bounds; g++) {
        int hi = g < n_bounds ? bounds[g] : n;
        if (hi > n)
            hi = n;
        if (hi > lo)
            qsort(imp + lo, (size_t)(hi - lo), sizeof *imp, by_importance);
        lo = hi > lo ? hi : lo;
    }
    for (int i = 0; i < n; i++)
        perm[i] = imp[i].index;
}

/* Permute `count` rows of `row` floats starting at base: new row i = old row perm[i]. */
static void permute_rows(float *base, int count, int row, const int *perm, float *tmp)
{
    memcpy(tmp, base, (size_t)count * row * sizeof *tmp);
    for (int i = 0; i < count; i++)
        memcpy(base + (size_t)i * row, tmp + (size_t)perm[i] * row, (size_t)row * sizeof *tmp);
}

/* Permute `count` columns of a (rows, ld) matrix: new column i = old column perm[i]. */
static void permute_cols(float *base, int rows, int ld, int count, const int *perm, float *tmp)
{
    for (int r = 0; r < rows; r++) {
        float *row = base + (size_t)r * ld;
        memcpy(tmp, row, (size_t)count * sizeof *tmp);
        for (int i = 0; i < count; i++)
            row[i] = tmp[perm[i]];
    }
}

static void permute_bn(float *p, float *st, const bn_p *b, const int *perm, int c, float *tmp)
{
    permute_rows(p + b->gamma, c, 1, perm, tmp);
    permute_rows(p + b->beta, c, 1, perm, tmp);
    permute_rows(st + b->rmean, c, 1, perm, tmp);
    permute_rows(st + b->rvar, c, 1, perm, tmp);
}

manta_status ofa_supernet_reorder_width(ofa_supernet *n, int keep_groups)
{
    const ofa_space *s = &n->s;
    if (keep_groups < 0 || keep_groups >= s->n_e)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "width re-organisation: %d kept groups with %d expand ratios",
                             keep_groups, s->n_e);
    const int kmax = s->ks[s->n_ks - 1];
    size_t need = 1, widest = 1; /* largest block moved at once; most channels */
    for (int i = 0; i < ofa_slots(s); i++) {
        const slot_p *q = &n->slot[i];
        int cols = q->in_c > kmax * kmax ? q->in_c : kmax * kmax;
        cols = cols > q->se_max ? cols : q->se_max;
        need = need > (size_t)q->mid_max * cols ? need : (size_t)q->mid_max * cols;
        widest = widest > (size_t)q->mid_max ? widest : (size_t)q->mid_max;
    }
    float *p = malloc(n->n_params * sizeof *p), *st = malloc(n->n_state * sizeof *st);
    float *tmp = malloc(need * sizeof *tmp);
    importance *imp = malloc(widest * sizeof *imp);
    int *perm = malloc(widest * sizeof *perm);
    manta_status rc = MANTA_OK;
    if (!p || !st || !tmp || !imp || !perm) {
        rc = manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY, "width re-organisation: out of memory");
        goto out;
    }
    if ((rc = mcl_read(n->d, mslab_view(&n->params, 0), p, n->n_params)) != MANTA_OK ||
        (rc = mcl_read(n->d, S(n, 0), st, n->n_state)) != MANTA_OK)
        goto out;
    for (int i = 0; i < ofa_slots(s); i++) {
        const slot_p *q = &n->slot[i];
        const int M = q->mid_max;
        /* group bounds: widths of the kept expand ratios below the largest, ascending */
        int bounds[OFA_MAX_CHOICES], nb = 0;
        for (int g = keep_groups; g >= 1; g--)
            bounds[nb++] = ofa_make_divisible((double)q->in_c * s->e[s->n_e - 1 - g], 8);
        for (int c = 0; c < M; c++) {
            double l1 = 0;
            for (int o = 0; o < q->width; o++)
                l1 += fabsf(p[q->p_w + (size_t)o * M + c]);
            imp[c] = (importance){l1, c};
        }
        sort_groups(imp, M, bounds, nb, perm);
        permute_rows(p + q->e_w, M, q->in_c, perm, tmp);
        permute_bn(p, st, &q->e_bn, perm, M, tmp);
        permute_rows(p + q->dw_w, M, kmax * kmax, perm, tmp);
        permute_bn(p, st, &q->d_bn, perm, M, tmp);
        permute_cols(p + q->p_w, q->width, M, M, perm, tmp);
        if (q->se) {
            permute_cols(p + q->se_r_w, q->se_max, M, M, perm, tmp);
            permute_rows(p + q->se_e_w, M, q->se_max, perm, tmp);
            permute_rows(p + q->se_e_b, M, 1, perm, tmp);
            /* SE hidden units by the L1 norm of the SE expand weights reading them */
            for (int h = 0; h < q->se_max; h++) {
                double l1 = 0;
                for (int c = 0; c < M; c++)
                    l1 += fabsf(p[q->se_e_w + (size_t)c * q->se_max + h]);
                imp[h] = (importance){l1, h};
            }
            sort_groups(imp, q->se_max, NULL, 0, perm);
            permute_rows(p + q->se_r_w, q->se_max, M, perm, tmp);
            permute_rows(p + q->se_r_b, q->se_max, 1, perm, tmp);
            permute_cols(p + q->se_e_w, M, q->se_max, q->se_max, perm, tmp);
        }
    }
    if ((rc = mcl_write(n->d, mslab_view(&n->params, 0), p, n->n_params)) == MANTA_OK)
        rc = mcl_write(n->d, S(n, 0), st, n->n_state);
out:
    free(p), free(st), free(tmp), free(imp), free(perm);
    return rc;
}
