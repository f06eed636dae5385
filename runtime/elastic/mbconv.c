#include "elastic/mbconv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/batchnorm.h"
#include "nn/depthwise.h"
#include "nn/linear.h"
#include "nn/pool.h"
#include "elastic/elastic.h"
#include "elastic/reorder.h"
#include "space/ofa_space.h"

/* Short names for the context's views. */
#define A(n, off) ofa_net_a(n, off)
#define G(n, off) ofa_net_ga(n, off)
#define PW(n, off) ofa_net_p(n, off)
#define DP(n, off) ofa_net_gp(n, off)
#define S(n, off) ofa_net_s(n, off)
#define SCR(n) ofa_net_scratch(n)

/* ---- the network context --------------------------------------------------------------- */

nn_conv2d_shape ofa_net_pw_shape(const ofa_net *n, int cin, int h, int w, int cout, int w_ld)
{
    nn_conv2d_shape c = {n->batch, cin, h, w, cout, 1, 1, 1, 1, 0, 0, w_ld};
    return c;
}

static void need(size_t *scratch, size_t floats)
{
    if (floats > *scratch)
        *scratch = floats;
}

void ofa_net_need_conv(const ofa_net *n, size_t *scratch, const nn_conv2d_shape *c)
{
    need(scratch, nn_conv2d_scratch_floats(n->d, c));
}

void ofa_net_need_bn(const ofa_net *n, size_t *scratch, int c, int hw)
{
    nn_bn_shape b = {n->batch, c, hw};
    need(scratch, nn_bn_scratch_floats(n->d, &b));
}

void ofa_net_need_dw(const ofa_net *n, size_t *scratch, int c, int h, int w, int k, int stride)
{
    nn_dw_shape s = {n->batch, c, h, w, k, stride, k / 2};
    need(scratch, nn_dw_scratch_floats(n->d, &s));
}

void ofa_net_plan_stats(ofa_net *n, mlayout *al, int widest)
{
    n->stats_tmp = mlayout_add_always(al, 2 * (size_t)widest);
    n->widest = widest;
}

void ofa_net_plan_internal(ofa_net *n, size_t lo, size_t hi)
{
    ofa_grad_plan *g = &n->gplan;
    if (g->n == OFA_MAX_SLOTS || hi <= lo || (g->n > 0 && lo < g->hi[g->n - 1]))
        return;
    g->lo[g->n] = lo, g->hi[g->n] = hi;
    g->before[g->n + 1] = g->before[g->n] + (hi - lo);
    g->shared = hi - lo > g->shared ? hi - lo : g->shared;
    g->n++;
}

/* Where the tensor at activation offset @p off lives in a slab laid out by @p g. */
static size_t planned_offset(const ofa_grad_plan *g, size_t off)
{
    int lo = 0, hi = g->n; /* the first range that ends after off */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (g->hi[mid] <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < g->n && off >= g->lo[lo])
        return off - g->lo[lo];
    return g->shared + off - g->before[lo];
}

mview ofa_net_a(const ofa_net *n, size_t off)
{
    if (n->forward_only)
        return mslab_view(&n->acts, planned_offset(&n->gplan, off));
    return mslab_view(&n->acts, mlayout_pack_map(&n->apack, off));
}

mview ofa_net_ga(const ofa_net *n, size_t off)
{
    return mslab_view(&n->dacts, planned_offset(&n->gplan, off));
}

size_t ofa_net_grad_floats(const ofa_net *n, size_t acts)
{
    return n->gplan.shared + acts - n->gplan.before[n->gplan.n];
}

size_t ofa_net_grad_cuts(const ofa_net *n, const size_t *act_cuts, size_t n_cuts, size_t *out)
{
    const ofa_grad_plan *g = &n->gplan;
    size_t m = 0;
    if (g->shared)
        out[m++] = g->shared;
    int r = 0;
    for (size_t i = 0; i < n_cuts; i++) {
        size_t c = act_cuts[i];
        while (r < g->n && g->hi[r] <= c)
            r++;
        if (r < g->n && c >= g->lo[r])
            continue; /* inside a slot's internal range: the shared region stays whole */
        size_t o = g->shared + c - g->before[r];
        if (!m || o > out[m - 1])
            out[m++] = o;
    }
    return m;
}

/* A slab of the activations' layout (@p mapped: through the gradient plan) split across
 * buffers of the device's largest allocation at the tensors' offsets. */
static manta_status create_act_slab(ofa_net *n, mslab *s, size_t floats, const ofa_net_sizes *sz,
                                    bool mapped, const char *name)
{
    if (!mapped && n->apack.n)
        return mslab_create_split(n->d, s, floats, n->apack.cuts, n->apack.n_cuts, 0, name);
    if (!sz->act_cuts || floats <= mcl_piece_floats(n->d))
        return mslab_create(n->d, s, floats, name);
    if (!mapped)
        return mslab_create_split(n->d, s, floats, sz->act_cuts, sz->n_act_cuts, 0, name);
    size_t *cuts = malloc((sz->n_act_cuts + 1) * sizeof *cuts);
    if (!cuts)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY, "%s: out of host memory", name);
    size_t m = ofa_net_grad_cuts(n, sz->act_cuts, sz->n_act_cuts, cuts);
    manta_status st = mslab_create_split(n->d, s, floats, cuts, m, 0, name);
    free(cuts);
    return st;
}

manta_status ofa_net_alloc(ofa_net *n, const ofa_net_sizes *sz)
{
    const size_t grads = sz->params && !n->forward_only ? sz->params : 1;
    const size_t dacts = sz->acts && !n->forward_only ? ofa_net_grad_floats(n, sz->acts) : 1;
    MANTA_TRY(mslab_create(n->d, &n->params, sz->params ? sz->params : 1, sz->params_name));
    MANTA_TRY(mslab_create(n->d, &n->grads, grads, sz->grads_name));
    MANTA_TRY(mslab_create(n->d, &n->state, sz->state ? sz->state : 1, "batch-norm statistics"));
    const size_t acts = !sz->acts         ? 1
                        : n->forward_only ? ofa_net_grad_floats(n, sz->acts)
                        : n->apack.n      ? n->apack.total
                                          : sz->acts;
    MANTA_TRY(create_act_slab(n, &n->acts, acts, sz, n->forward_only, "activations"));
    if (n->forward_only)
        MANTA_TRY(mslab_create(n->d, &n->dacts, dacts, "activation gradients"));
    else
        MANTA_TRY(create_act_slab(n, &n->dacts, dacts, sz, true, "activation gradients"));
    MANTA_TRY(mslab_create(n->d, &n->scratch, sz->scratch ? sz->scratch : 1, "op scratch"));
    n->sync_host = malloc(2 * (size_t)(n->widest > 0 ? n->widest : 1) * sizeof(float));
    if (!n->sync_host)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY, "%s: out of host memory",
                             sz->params_name);
    if (sz->mom_name && !n->forward_only)
        MANTA_TRY(mslab_create(n->d, &n->mom, sz->params, sz->mom_name));
    return MANTA_OK;
}

void ofa_net_free(ofa_net *n)
{
    mslab *slabs[] = {&n->mom, &n->params, &n->grads, &n->state, &n->acts, &n->dacts, &n->scratch};
    for (size_t i = 0; i < sizeof slabs / sizeof slabs[0]; i++)
        mslab_destroy(n->d, slabs[i]);
    free(n->sync_host);
    n->sync_host = NULL;
    free(n->recal_sum);
    n->recal_sum = NULL;
    mlayout_pack_free(&n->apack);
}

manta_status ofa_net_write_init(ofa_net *n, const ofa_net_sizes *sz, ofa_net_init_fn init,
                                const void *net, uint64_t seed, uint64_t stream)
{
    float *p = calloc(sz->params ? sz->params : 1, sizeof *p);
    float *st = calloc(sz->state ? sz->state : 1, sizeof *st);
    manta_status rc = MANTA_OK;
    if (!p || !st)
        rc = manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY, "%s: out of host memory", sz->who);
    if (rc == MANTA_OK) {
        manta_rng r;
        manta_rng_seed(&r, seed, stream);
        init(net, &r, p);
        ofa_bn_list_init_values(&n->bns, p, st);
        rc = mcl_write(n->d, mslab_view(&n->params, 0), p, sz->params);
    }
    if (rc == MANTA_OK)
        rc = mcl_write(n->d, S(n, 0), st, sz->state);
    free(p);
    free(st);
    return rc;
}

/* Plan the activations of @p al by lifetime into @p p where their lifetimes were kept (a
 * training network's); @p p stays empty otherwise. */
static manta_status plan_lives(ofa_net *n, const mlayout *al, const char *who, mlayout_pack *p)
{
    *p = (mlayout_pack){0};
    if (!al->lives || !al->n_cuts)
        return MANTA_OK;
    if (mlayout_pack_plan(al, p) != MANTA_OK)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY,
                             "%s: out of host memory planning the activations", who);
    return MANTA_OK;
}

manta_status ofa_net_create(ofa_net *n, mcl_dev *d, int batch, const ofa_net_recipe *r, void *net,
                            uint64_t seed)
{
    n->d = d;
    n->batch = batch;
    n->gplan = (ofa_grad_plan){0};
    mlayout_pack_free(&n->apack);
    mlayout pl = {0}, sl = {0}, al = {0};
    al.record = true;
    al.lives = !n->forward_only && !n->keep_acts;
    size_t scratch = 0;
    manta_status st = r->plan(net, &pl, &sl, &al, &scratch);
    if (st == MANTA_OK)
        st = plan_lives(n, &al, r->who, &n->apack);
    const ofa_net_sizes sz = {pl.total,    sl.total,       al.total,
                              scratch,     r->params_name, r->grads_name,
                              r->mom_name, r->who,         al.cuts_lost ? NULL : al.cuts,
                              al.n_cuts};
    if (st == MANTA_OK)
        st = ofa_net_alloc(n, &sz);
    mlayout_free(&al);
    if (st != MANTA_OK)
        return st;
    return ofa_net_write_init(n, &sz, r->init, net, seed, r->stream);
}

/* The longest distance between consecutive cuts of a slab of @p floats (0 and @p floats
 * are cuts too). */
static size_t longest_part(size_t floats, const size_t *cuts, size_t n_cuts)
{
    size_t prev = 0, longest = 0;
    for (size_t i = 0; i <= n_cuts; i++) {
        size_t c = i < n_cuts ? cuts[i] : floats;
        if (c > floats)
            c = floats;
        if (c >= prev) {
            longest = c - prev > longest ? c - prev : longest;
            prev = c;
        }
    }
    return longest;
}

manta_status ofa_net_plan_memory(ofa_net *n, mcl_dev *d, int batch, const ofa_net_recipe *r,
                                 void *net, ofa_net_mem *out)
{
    memset(out, 0, sizeof *out);
    n->d = d;
    n->batch = batch;
    n->gplan = (ofa_grad_plan){0};
    mlayout pl = {0}, sl = {0}, al = {0};
    al.record = true;
    al.lives = !n->forward_only && !n->keep_acts;
    size_t scratch = 0;
    mlayout_pack pk = {0};
    manta_status st = r->plan(net, &pl, &sl, &al, &scratch);
    if (st == MANTA_OK)
        st = plan_lives(n, &al, r->who, &pk);
    size_t *gcuts = NULL;
    if (st == MANTA_OK && (al.cuts_lost || !(gcuts = malloc((al.n_cuts + 1) * sizeof *gcuts))))
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "%s: out of host memory", r->who);
    if (st == MANTA_OK) {
        const bool fo = n->forward_only;
        const size_t ng = ofa_net_grad_cuts(n, al.cuts, al.n_cuts, gcuts);
        out->params = pl.total ? pl.total : 1;
        out->grads = pl.total && !fo ? pl.total : 1;
        out->mom = r->mom_name && !fo ? pl.total : 0;
        out->state = sl.total ? sl.total : 1;
        out->acts = !al.total ? 1
                    : fo      ? ofa_net_grad_floats(n, al.total)
                    : pk.n    ? pk.total
                              : al.total;
        out->dacts = al.total && !fo ? ofa_net_grad_floats(n, al.total) : 1;
        out->scratch = scratch ? scratch : 1;
        const size_t whole[] = {out->params,
                                out->grads,
                                out->mom,
                                out->state,
                                out->scratch,
                                longest_part(out->acts,
                                             fo     ? gcuts
                                             : pk.n ? pk.cuts
                                                    : al.cuts,
                                             fo     ? ng
                                             : pk.n ? pk.n_cuts
                                                    : al.n_cuts),
                                fo ? out->dacts : longest_part(out->dacts, gcuts, ng)};
        const char *names[] = {r->params_name,          r->grads_name, r->mom_name,
                               "batch-norm statistics", "op scratch",  "activations",
                               "activation gradients"};
        for (int i = 0; i < 7; i++)
            if (whole[i] > out->unit)
                out->unit = whole[i], out->unit_what = names[i];
        out->act_unit = whole[5] > whole[6] ? whole[5] : whole[6];
        out->bytes = (unsigned long long)(out->params + out->grads + out->mom + out->state +
                                          out->acts + out->dacts + out->scratch) *
                     sizeof(float);
    }
    free(gcuts);
    mlayout_pack_free(&pk);
    mlayout_free(&al);
    return st;
}

bool ofa_net_mem_fits(unsigned long long bytes, unsigned long long unit_bytes,
                      unsigned long long global_mem, unsigned long long max_alloc)
{
    return bytes <= global_mem / 20 * 19 && unit_bytes <= max_alloc;
}

manta_status ofa_net_pick_batch(ofa_net_mem_plan_fn plan, void *ctx, int max_batch,
                                unsigned long long global_mem, unsigned long long max_alloc,
                                int *batch, unsigned long long *bytes,
                                unsigned long long *unit_bytes, const char **unit_what)
{
    *batch = 0;
    MANTA_TRY(plan(ctx, 1, bytes, unit_bytes, unit_what));
    if (!ofa_net_mem_fits(*bytes, *unit_bytes, global_mem, max_alloc))
        return MANTA_OK;
    int lo = 1, hi = max_batch > 1 ? max_batch : 1; /* lo fits; the answer is in [lo, hi] */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        unsigned long long b, u;
        const char *w;
        MANTA_TRY(plan(ctx, mid, &b, &u, &w));
        if (ofa_net_mem_fits(b, u, global_mem, max_alloc))
            lo = mid;
        else
            hi = mid - 1;
    }
    *batch = lo;
    return plan(ctx, lo, bytes, unit_bytes, unit_what);
}

void ofa_net_slabs(const ofa_net *n, size_t n_params, size_t n_decay, size_t n_state, ofa_slabs *o)
{
    o->params = mslab_view(&n->params, 0);
    o->grads = mslab_view(&n->grads, 0);
    o->momentum = mslab_view(&n->mom, 0);
    o->state = mslab_view(&n->state, 0);
    o->n_params = n_params;
    o->n_decay = n_decay;
    o->n_state = n_state;
}

/* ---- batch norm and activations --------------------------------------------------------- */

void ofa_bn_plan(ofa_bn *b, int c, mlayout *pl, mlayout *sl)
{
    b->gamma = mlayout_add(pl, (size_t)c);
    b->beta = mlayout_add(pl, (size_t)c);
    b->rmean = mlayout_add(sl, (size_t)c);
    b->rvar = mlayout_add(sl, (size_t)c);
    b->smean = mlayout_add(sl, (size_t)c);
    b->sinv = mlayout_add(sl, (size_t)c);
}

void ofa_bn_init_values(const ofa_bn *b, int c, float *params, float *state)
{
    for (int k = 0; k < c; k++) {
        params[b->gamma + (size_t)k] = 1.0f;
        state[b->rvar + (size_t)k] = 1.0f;
    }
}

void ofa_bn_list_add(ofa_bn_list *l, const ofa_bn *b, int c)
{
    l->bn[l->n] = b;
    l->c[l->n++] = c;
}

int ofa_bn_list_widest(const ofa_bn_list *l)
{
    int widest = 1;
    for (int i = 0; i < l->n; i++)
        widest = l->c[i] > widest ? l->c[i] : widest;
    return widest;
}

void ofa_bn_list_init_values(const ofa_bn_list *l, float *params, float *state)
{
    for (int i = 0; i < l->n; i++)
        ofa_bn_init_values(l->bn[i], l->c[i], params, state);
}

/* Synchronised batch-norm forward: local statistics, combined over the replicas by the
 * callback, then saved and applied. */
static manta_status bn_fwd_sync(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t y)
{
    nn_bn_shape sh = {n->batch, c, hw};
    mview stats = A(n, n->stats_tmp);
    MANTA_TRY(nn_bn_stats(n->d, &sh, A(n, x), stats, A(n, n->stats_tmp + (size_t)c), SCR(n)));
    MANTA_TRY(mcl_read(n->d, stats, n->sync_host, 2 * (size_t)c));
    long m_total = 0;
    MANTA_TRY(n->bn_sync(n->bn_sync_ctx, OFA_BN_SYNC_STATS, n->sync_host, c, (long)n->batch * hw,
                         &m_total, mcl_err(n->d)));
    MANTA_TRY(mcl_write(n->d, stats, n->sync_host, 2 * (size_t)c));
    float momentum = n->fwd_bn == OFA_BN_TRAIN ? OFA_BN_MOMENTUM : 0.0f;
    MANTA_TRY(nn_bn_sync_finish(n->d, c, m_total, momentum, OFA_BN_EPS, stats, S(n, b->rmean),
                                S(n, b->rvar), S(n, b->smean), S(n, b->sinv)));
    return nn_bn_forward_apply(n->d, &sh, A(n, x), PW(n, b->gamma), PW(n, b->beta), S(n, b->smean),
                               S(n, b->sinv), A(n, y));
}

static manta_status bn_fwd_pooled(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t y);

manta_status ofa_net_bn_forward(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t y)
{
    nn_bn_shape sh = {n->batch, c, hw};
    if (n->bn_sync && (n->fwd_bn == OFA_BN_TRAIN || n->fwd_bn == OFA_BN_BATCH_ONLY))
        return bn_fwd_sync(n, b, c, hw, x, y);
    if (n->fwd_bn == OFA_BN_RECAL && n->recal_sum)
        return bn_fwd_pooled(n, b, c, hw, x, y);
    if (n->fwd_bn == OFA_BN_EVAL)
        return nn_bn_forward_eval(n->d, &sh, OFA_BN_EPS, A(n, x), PW(n, b->gamma), PW(n, b->beta),
                                  S(n, b->rmean), S(n, b->rvar), A(n, y));
    float momentum = n->fwd_bn == OFA_BN_TRAIN ? OFA_BN_MOMENTUM : 0.0f;
    MANTA_TRY(nn_bn_forward_train(n->d, &sh, momentum, OFA_BN_EPS, A(n, x), PW(n, b->gamma),
                                  PW(n, b->beta), S(n, b->rmean), S(n, b->rvar), A(n, y),
                                  S(n, b->smean), S(n, b->sinv), SCR(n)));
    if (n->fwd_bn != OFA_BN_RECAL)
        return MANTA_OK;
    mview mean = A(n, n->stats_tmp), var = A(n, n->stats_tmp + (size_t)c);
    MANTA_TRY(nn_bn_stats(n->d, &sh, A(n, x), mean, var, SCR(n)));
    MANTA_TRY(nn_axpy(n->d, (size_t)c, n->recal_weight, mean, S(n, b->rmean)));
    return nn_axpy(n->d, (size_t)c, n->recal_weight, var, S(n, b->rvar));
}

/* A pooled re-calibration's forward of @p b: normalised with the batch's statistics, its
 * input's batch mean and variance added to the host sums. */
static manta_status bn_fwd_pooled(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t y)
{
    nn_bn_shape sh = {n->batch, c, hw};
    size_t at = 0; /* this batch norm's channels in the sums */
    int i = 0;
    while (i < n->bns.n && n->bns.bn[i] != b)
        at += (size_t)n->bns.c[i++];
    if (i == n->bns.n || c > n->bns.c[i])
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INTERNAL,
                             "pooled BN re-calibration: a batch norm not in the network's list");
    MANTA_TRY(nn_bn_forward_train(n->d, &sh, 0.0f, OFA_BN_EPS, A(n, x), PW(n, b->gamma),
                                  PW(n, b->beta), S(n, b->rmean), S(n, b->rvar), A(n, y),
                                  S(n, b->smean), S(n, b->sinv), SCR(n)));
    mview mean = A(n, n->stats_tmp), var = A(n, n->stats_tmp + (size_t)c);
    MANTA_TRY(nn_bn_stats(n->d, &sh, A(n, x), mean, var, SCR(n)));
    MANTA_TRY(mcl_read(n->d, mean, n->sync_host, 2 * (size_t)c)); /* mean, then var */
    double *sum = n->recal_sum + 3 * at;
    for (int k = 0; k < c; k++) {
        const double m = n->sync_host[k], v = n->sync_host[c + k], w = n->recal_weight;
        sum[3 * k] += w * m, sum[3 * k + 1] += w * v, sum[3 * k + 2] += w * m * m;
    }
    return MANTA_OK;
}

manta_status ofa_net_bn_backward(ofa_net *n, const ofa_bn *b, int c, int hw, size_t x, size_t dy,
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

manta_status ofa_net_recal_begin(ofa_net *n, long total_images)
{
    const ofa_bn_list *bns = &n->bns;
    if (total_images < n->batch)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "BN re-calibration over %ld images: fewer than one batch of %d",
                             total_images, n->batch);
    n->recal_weight = (float)n->batch / (float)total_images;
    /* running statistics are interleaved with the saved ones: zero them per layer */
    for (int i = 0; i < bns->n; i++) {
        MANTA_TRY(mcl_fill(n->d, S(n, bns->bn[i]->rmean), 0.0f, (size_t)bns->c[i]));
        MANTA_TRY(mcl_fill(n->d, S(n, bns->bn[i]->rvar), 0.0f, (size_t)bns->c[i]));
    }
    return MANTA_OK;
}

/* Channels of every batch norm of n->bns. */
static size_t bn_channels(const ofa_net *n)
{
    size_t t = 0;
    for (int i = 0; i < n->bns.n; i++)
        t += (size_t)n->bns.c[i];
    return t;
}

manta_status ofa_net_recal_begin_pooled(ofa_net *n, long total_images)
{
    if (total_images < n->batch)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "BN re-calibration over %ld images: fewer than one batch of %d",
                             total_images, n->batch);
    free(n->recal_sum);
    n->recal_sum = calloc(3 * bn_channels(n) + 1, sizeof *n->recal_sum);
    if (!n->recal_sum)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY,
                             "BN re-calibration: out of host memory");
    n->recal_weight = (float)n->batch / (float)total_images;
    return MANTA_OK;
}

manta_status ofa_net_recal_end(ofa_net *n)
{
    if (!n->recal_sum)
        return MANTA_OK;
    manta_status st = MANTA_OK;
    float *m = malloc(2 * (size_t)(n->widest > 0 ? n->widest : 1) * sizeof *m);
    if (!m)
        st = manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY,
                           "BN re-calibration: out of host memory");
    size_t at = 0;
    for (int i = 0; i < n->bns.n && st == MANTA_OK; i++) {
        const ofa_bn *b = n->bns.bn[i];
        const size_t c = (size_t)n->bns.c[i];
        float *v = m + c;
        for (size_t k = 0; k < c; k++) { /* E[mean], E[var] + E[mean^2] - E[mean]^2 */
            const double *sum = n->recal_sum + 3 * (at + k), spread = sum[2] - sum[0] * sum[0];
            m[k] = (float)sum[0];
            v[k] = (float)(sum[1] + (spread > 0.0 ? spread : 0.0));
        }
        st = mcl_write(n->d, S(n, b->rmean), m, c);
        if (st == MANTA_OK)
            st = mcl_write(n->d, S(n, b->rvar), v, c);
        at += c;
    }
    free(m);
    free(n->recal_sum);
    n->recal_sum = NULL;
    return st;
}

manta_status ofa_net_act_forward(ofa_net *n, nn_act a, size_t len, size_t x, size_t y)
{
    return nn_act_forward(n->d, a, A(n, x), A(n, y), len);
}

manta_status ofa_net_act_backward(ofa_net *n, nn_act a, size_t len, size_t x, size_t dy, size_t dx)
{
    return nn_act_backward(n->d, a, A(n, x), G(n, dy), G(n, dx), len);
}

manta_status ofa_net_act_backward_xy(ofa_net *n, nn_act a, size_t len, size_t x, size_t y,
                                     size_t dy, size_t dx)
{
    return ofa_net_act_backward(n, a, len, nn_act_grad_from_output(a) ? y : x, dy, dx);
}

size_t ofa_net_act_in_plan(mlayout *al, nn_act a, size_t n)
{
    return nn_act_grad_from_output(a) ? mlayout_add_temp(al, n) : mlayout_add(al, n);
}

/* ---- planning ----------------------------------------------------------------------------- */

static manta_status check_spec(const ofa_mbconv_spec *sp, manta_err *err)
{
    const char *bad = NULL;
    if (sp->in_c < 1)
        bad = "in_c";
    else if (sp->width < 1)
        bad = "width";
    else if (sp->mid_max < 1)
        bad = "mid_max";
    else if (sp->stride < 1)
        bad = "stride";
    else if (sp->h < 1)
        bad = "h";
    else if (sp->w < 1)
        bad = "w";
    else if (sp->n_ks < 1 || sp->n_ks > OFA_MBCONV_MAX_KS)
        bad = "n_ks";
    for (int i = 0; !bad && i < sp->n_ks; i++)
        if (sp->ks[i] < 1 || sp->ks[i] % 2 == 0 || (i > 0 && sp->ks[i] <= sp->ks[i - 1]))
            bad = "ks";
    if (bad)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "MBConv slot: %s out of range (in %d, width %d, mid %d, stride %d, "
                             "%d kernel sizes, input %dx%d)",
                             bad, sp->in_c, sp->width, sp->mid_max, sp->stride, sp->n_ks, sp->h,
                             sp->w);
    return MANTA_OK;
}

manta_status ofa_mbconv_plan_weights(ofa_mbconv *u, const ofa_mbconv_spec *sp, mlayout *pl,
                                     manta_err *err)
{
    MANTA_TRY(check_spec(sp, err));
    *u = (ofa_mbconv){0};
    u->in_c = sp->in_c;
    u->width = sp->width;
    u->mid_max = sp->mid_max;
    u->se_max = ofa_mbconv_se_units(sp->mid_max);
    u->stride = sp->stride;
    u->act = sp->act;
    u->se = sp->se;
    u->n_ks = sp->n_ks;
    for (int i = 0; i < sp->n_ks; i++)
        u->ks[i] = sp->ks[i];
    u->h = sp->h;
    u->w = sp->w;
    const int kmax = u->ks[u->n_ks - 1];
    u->e_w = mlayout_add(pl, (size_t)u->mid_max * u->in_c);
    u->dw_w = mlayout_add(pl, (size_t)u->mid_max * kmax * kmax);
    for (int i = 0; i + 1 < u->n_ks; i++)
        u->kmat[i] = mlayout_add(pl, (size_t)u->ks[i] * u->ks[i] * u->ks[i] * u->ks[i]);
    if (u->se) {
        u->se_r_w = mlayout_add(pl, (size_t)u->se_max * u->mid_max);
        u->se_e_w = mlayout_add(pl, (size_t)u->mid_max * u->se_max);
    }
    u->p_w = mlayout_add(pl, (size_t)u->width * u->mid_max);
    return MANTA_OK;
}

void ofa_mbconv_plan_bn(ofa_mbconv *u, mlayout *pl, mlayout *sl)
{
    ofa_bn_plan(&u->e_bn, u->mid_max, pl, sl);
    ofa_bn_plan(&u->d_bn, u->mid_max, pl, sl);
    ofa_bn_plan(&u->p_bn, u->width, pl, sl);
    if (u->se) {
        u->se_r_b = mlayout_add(pl, (size_t)u->se_max);
        u->se_e_b = mlayout_add(pl, (size_t)u->mid_max);
    }
}

/* Output size of the slot's depthwise convolution (pad k/2: the same for every odd k). */
static int out_size(int in, int stride) { return (in - 1) / stride + 1; }

void ofa_mbconv_plan_acts(ofa_net *n, ofa_mbconv *u, mlayout *al, size_t *scratch)
{
    ofa_mbconv_acts *t = &u->t;
    const size_t B = (size_t)n->batch;
    const int ho = out_size(u->h, u->stride), wo = out_size(u->w, u->stride);
    const size_t in_mid = B * u->mid_max * u->h * u->w, out_mid = B * u->mid_max * ho * wo;
    const size_t out_w = B * u->width * ho * wo, first = al->total;
    const bool skip = u->stride == 1 && u->in_c == u->width;
    mlayout_phase(al);
    t->e_conv = mlayout_add(al, in_mid);
    t->e_bn = ofa_net_act_in_plan(al, u->act, in_mid);
    t->e_act = mlayout_add(al, in_mid);
    for (int k = 0; k + 1 < u->n_ks; k++)
        t->kw[k] = mlayout_add(al, (size_t)u->mid_max * u->ks[k] * u->ks[k]);
    t->d_conv = mlayout_add(al, out_mid);
    t->d_bn = ofa_net_act_in_plan(al, u->act, out_mid);
    t->d_act = mlayout_add(al, out_mid);
    if (u->se) {
        t->se_pool = mlayout_add(al, B * u->mid_max);
        t->se_r = ofa_net_act_in_plan(al, NN_ACT_RELU, B * u->se_max);
        t->se_relu = mlayout_add(al, B * u->se_max);
        t->se_e = mlayout_add(al, B * u->mid_max);
        t->se_hsig = mlayout_add(al, B * u->mid_max);
        t->se_out = mlayout_add(al, out_mid);
    }
    t->p_conv = mlayout_add(al, out_w);
    ofa_net_plan_internal(n, first, al->total);
    t->p_bn = skip ? mlayout_add_temp(al, out_w) : mlayout_add(al, out_w);
    t->out = skip ? mlayout_add(al, out_w) : t->p_bn;
    nn_conv2d_shape e = ofa_net_pw_shape(n, u->in_c, u->h, u->w, u->mid_max, 0);
    nn_conv2d_shape pr = ofa_net_pw_shape(n, u->mid_max, ho, wo, u->width, 0);
    ofa_net_need_conv(n, scratch, &e);
    ofa_net_need_conv(n, scratch, &pr);
    ofa_net_need_bn(n, scratch, u->mid_max, u->h * u->w);
    ofa_net_need_bn(n, scratch, u->width, ho * wo);
    ofa_net_need_dw(n, scratch, u->mid_max, u->h, u->w, u->ks[u->n_ks - 1], u->stride);
}

int ofa_mbconv_bns(const ofa_mbconv *u, const ofa_bn **bns, int *channels)
{
    bns[0] = &u->e_bn, channels[0] = u->mid_max;
    bns[1] = &u->d_bn, channels[1] = u->mid_max;
    bns[2] = &u->p_bn, channels[2] = u->width;
    return 3;
}

void ofa_bn_list_add_mbconv(ofa_bn_list *l, const ofa_mbconv *u)
{
    l->n += ofa_mbconv_bns(u, l->bn + l->n, l->c + l->n);
}

int ofa_mbconv_bn_channels(const ofa_mbconv *u)
{
    return u->mid_max > u->width ? u->mid_max : u->width;
}

/* Uniform weights of a layer with @p fan_in inputs per output (PyTorch's bound). */
static void fill_fan_in(manta_rng *r, float *w, size_t count, int fan_in)
{
    manta_rng_fill_uniform(r, w, count, 1.0f / sqrtf((float)fan_in));
}

void ofa_mbconv_init_weights(const ofa_mbconv *u, manta_rng *r, float *p)
{
    const int kmax = u->ks[u->n_ks - 1];
    fill_fan_in(r, p + u->e_w, (size_t)u->mid_max * u->in_c, u->in_c);
    fill_fan_in(r, p + u->dw_w, (size_t)u->mid_max * kmax * kmax, kmax * kmax);
    for (int k = 0; k + 1 < u->n_ks; k++) {
        int kk = u->ks[k] * u->ks[k];
        for (int d = 0; d < kk; d++)
            p[u->kmat[k] + (size_t)d * kk + d] = 1.0f;
    }
    if (u->se) {
        fill_fan_in(r, p + u->se_r_w, (size_t)u->se_max * u->mid_max, u->mid_max);
        fill_fan_in(r, p + u->se_e_w, (size_t)u->mid_max * u->se_max, u->se_max);
    }
    fill_fan_in(r, p + u->p_w, (size_t)u->width * u->mid_max, u->mid_max);
}

/* ---- the active configuration -------------------------------------------------------------- */

int ofa_mbconv_se_units(int mid) { return ofa_make_divisible(mid / 4.0, 8); }

manta_status ofa_mbconv_configure(const ofa_mbconv *u, ofa_mbconv_cfg *c, manta_err *err)
{
    const char *bad = NULL;
    if (c->ki < 0 || c->ki >= u->n_ks)
        bad = "kernel index";
    else if (c->mid < 1 || c->mid > u->mid_max)
        bad = "mid";
    else if (u->se && (c->se < 1 || c->se > u->se_max))
        bad = "se";
    else if (c->h < 1 || c->h > u->h)
        bad = "h";
    else if (c->w < 1 || c->w > u->w)
        bad = "w";
    else if (c->residual && (u->stride != 1 || u->in_c != u->width))
        bad = "residual";
    if (bad)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "MBConv slot: %s out of range (kernel %d of %d, mid %d of %d, se %d "
                             "of %d, input %dx%d of %dx%d, residual %d)",
                             bad, c->ki, u->n_ks, c->mid, u->mid_max, c->se, u->se_max, c->h, c->w,
                             u->h, u->w, (int)c->residual);
    c->k = u->ks[c->ki];
    c->stride = u->stride;
    c->ho = out_size(c->h, u->stride);
    c->wo = out_size(c->w, u->stride);
    c->out = c->residual ? u->t.out : u->t.p_bn;
    return MANTA_OK;
}

ofa_mbconv_spec ofa_mbconv_unit_spec(const ofa_unit_spec *unit, int j, int in_c, int e_max,
                                     int n_ks, const int *ks, int h, int w)
{
    ofa_mbconv_spec sp = {.in_c = in_c,
                          .width = unit->width,
                          .mid_max = ofa_make_divisible((double)in_c * e_max, 8),
                          .stride = j == 0 ? unit->stride : 1,
                          .act = unit->act,
                          .se = unit->se,
                          .n_ks = n_ks,
                          .h = h,
                          .w = w};
    for (int k = 0; k < n_ks; k++)
        sp.ks[k] = ks[k];
    return sp;
}

manta_status ofa_mbconv_configure_arch(const ofa_mbconv *u, const ofa_arch *a, int idx, int h,
                                       int w, size_t in, ofa_mbconv_cfg *c, manta_err *err)
{
    *c = (ofa_mbconv_cfg){.mid = ofa_make_divisible((double)u->in_c * a->e[idx], 8),
                          .h = h,
                          .w = w,
                          .residual = u->stride == 1 && u->in_c == u->width,
                          .in = in};
    c->se = ofa_mbconv_se_units(c->mid);
    for (c->ki = 0; c->ki < u->n_ks && u->ks[c->ki] != a->ks[idx]; c->ki++)
        ;
    return ofa_mbconv_configure(u, c, err);
}

/* ---- forward and backward ------------------------------------------------------------------- */

/* The depthwise kernel of the configuration: the stored largest one, or the transformed
 * smaller one (computed in the forward pass). */
static mview dw_weights(const ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    return c->ki == u->n_ks - 1 ? PW(n, u->dw_w) : A(n, u->t.kw[c->ki]);
}

static size_t proj_input(const ofa_mbconv *u) { return u->se ? u->t.se_out : u->t.d_act; }

/* The squeeze-and-excite layers at a configuration: the batch's mid channels (ch) of ohw
 * values each, the batch's SE units (units), the reduce (mid -> se, weight rows of mid_max)
 * and expand (se -> mid, weight rows of se_max) linear layers. */
typedef struct se_dims {
    size_t ch, ohw, units;
    nn_linear_shape r, e;
} se_dims;

static se_dims se_dims_at(const ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    const size_t B = (size_t)n->batch;
    return (se_dims){B * c->mid, (size_t)c->ho * c->wo, B * c->se,
                     (nn_linear_shape){n->batch, c->mid, c->se, u->mid_max},
                     (nn_linear_shape){n->batch, c->se, c->mid, u->se_max}};
}

/* Squeeze-and-excite forward: d_act (N, mid, ho*wo) -> se_out. */
static manta_status se_forward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    const ofa_mbconv_acts *t = &u->t;
    const se_dims g = se_dims_at(n, u, c);
    MANTA_TRY(nn_avgpool_forward(n->d, g.ch, g.ohw, A(n, t->d_act), A(n, t->se_pool)));
    MANTA_TRY(nn_linear_forward(n->d, &g.r, A(n, t->se_pool), PW(n, u->se_r_w), PW(n, u->se_r_b),
                                A(n, t->se_r)));
    MANTA_TRY(ofa_net_act_forward(n, NN_ACT_RELU, g.units, t->se_r, t->se_relu));
    MANTA_TRY(nn_linear_forward(n->d, &g.e, A(n, t->se_relu), PW(n, u->se_e_w), PW(n, u->se_e_b),
                                A(n, t->se_e)));
    MANTA_TRY(ofa_net_act_forward(n, NN_ACT_HSIGMOID, g.ch, t->se_e, t->se_hsig));
    return nn_scale_forward(n->d, g.ch, g.ohw, A(n, t->d_act), A(n, t->se_hsig), A(n, t->se_out));
}

manta_status ofa_mbconv_forward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    mcl_dev *d = n->d;
    const ofa_mbconv_acts *t = &u->t;
    const size_t B = (size_t)n->batch, hw = (size_t)c->h * c->w, ohw = (size_t)c->ho * c->wo;
    if (n->apack.n && !c->residual && t->out != t->p_bn)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "MBConv slot: configured without its identity skip, whose output "
                             "the network's activation plan does not keep");
    nn_conv2d_shape e = ofa_net_pw_shape(n, u->in_c, c->h, c->w, c->mid, 0);
    MANTA_TRY(nn_conv2d_forward(d, &e, A(n, c->in), PW(n, u->e_w), A(n, t->e_conv), SCR(n)));
    MANTA_TRY(ofa_net_bn_forward(n, &u->e_bn, c->mid, (int)hw, t->e_conv, t->e_bn));
    MANTA_TRY(ofa_net_act_forward(n, u->act, B * c->mid * hw, t->e_bn, t->e_act));
    for (int i = u->n_ks - 2; i >= c->ki; i--) /* elastic kernel: K -> ... -> k */
        MANTA_TRY(ofa_ktrans_forward(d, c->mid, u->ks[i + 1], u->ks[i],
                                     i == u->n_ks - 2 ? PW(n, u->dw_w) : A(n, t->kw[i + 1]),
                                     PW(n, u->kmat[i]), A(n, t->kw[i])));
    nn_dw_shape dw = {n->batch, c->mid, c->h, c->w, c->k, u->stride, c->k / 2};
    MANTA_TRY(nn_dw_forward(d, &dw, A(n, t->e_act), dw_weights(n, u, c), A(n, t->d_conv)));
    MANTA_TRY(ofa_net_bn_forward(n, &u->d_bn, c->mid, (int)ohw, t->d_conv, t->d_bn));
    MANTA_TRY(ofa_net_act_forward(n, u->act, B * c->mid * ohw, t->d_bn, t->d_act));
    if (u->se)
        MANTA_TRY(se_forward(n, u, c));
    nn_conv2d_shape pr = ofa_net_pw_shape(n, c->mid, c->ho, c->wo, u->width, u->mid_max);
    MANTA_TRY(
        nn_conv2d_forward(d, &pr, A(n, proj_input(u)), PW(n, u->p_w), A(n, t->p_conv), SCR(n)));
    MANTA_TRY(ofa_net_bn_forward(n, &u->p_bn, u->width, (int)ohw, t->p_conv, t->p_bn));
    if (c->residual)
        MANTA_TRY(nn_add(d, B * u->width * ohw, A(n, c->in), A(n, t->p_bn), A(n, t->out)));
    return MANTA_OK;
}

/* Squeeze-and-excite backward: from the gradient at se_out into the gradient at d_act
 * (overwritten) and the SE parameters' gradients. The pooling gradient passes through
 * se_out's gradient, free once the scale's backward has read it. */
static manta_status se_backward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    mcl_dev *d = n->d;
    const ofa_mbconv_acts *t = &u->t;
    const se_dims g = se_dims_at(n, u, c);
    MANTA_TRY(nn_scale_backward(d, g.ch, g.ohw, A(n, t->d_act), A(n, t->se_hsig), G(n, t->se_out),
                                G(n, t->d_act), G(n, t->se_hsig)));
    MANTA_TRY(ofa_net_act_backward(n, NN_ACT_HSIGMOID, g.ch, t->se_e, t->se_hsig, t->se_e));
    MANTA_TRY(nn_linear_backward(d, &g.e, A(n, t->se_relu), PW(n, u->se_e_w), G(n, t->se_e),
                                 G(n, t->se_relu), DP(n, u->se_e_w), DP(n, u->se_e_b)));
    MANTA_TRY(
        ofa_net_act_backward_xy(n, NN_ACT_RELU, g.units, t->se_r, t->se_relu, t->se_relu, t->se_r));
    MANTA_TRY(nn_linear_backward(d, &g.r, A(n, t->se_pool), PW(n, u->se_r_w), G(n, t->se_r),
                                 G(n, t->se_pool), DP(n, u->se_r_w), DP(n, u->se_r_b)));
    MANTA_TRY(nn_avgpool_backward(d, g.ch, g.ohw, G(n, t->se_pool), G(n, t->se_out)));
    return nn_axpy(d, g.ch * g.ohw, 1.0f, G(n, t->se_out), G(n, t->d_act));
}

/* Depthwise backward: the input gradient into e_act's, the weight gradient into the
 * stored kernel directly, or into the transformed kernel's gradient and back through the
 * matrices (K <- ... <- k) into the stored kernel and the matrices. */
static manta_status dw_backward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    mcl_dev *d = n->d;
    const ofa_mbconv_acts *t = &u->t;
    const bool smaller = c->ki < u->n_ks - 1;
    mview dw_grad = smaller ? G(n, t->kw[c->ki]) : DP(n, u->dw_w);
    if (smaller)
        MANTA_TRY(mcl_fill(d, dw_grad, 0.0f, (size_t)c->mid * c->k * c->k));
    nn_dw_shape dw = {n->batch, c->mid, c->h, c->w, c->k, u->stride, c->k / 2};
    MANTA_TRY(nn_dw_backward(d, &dw, A(n, t->e_act), dw_weights(n, u, c), G(n, t->d_conv),
                             G(n, t->e_act), dw_grad, SCR(n)));
    for (int i = c->ki; i <= u->n_ks - 2; i++) {
        bool top = i == u->n_ks - 2;
        int big = u->ks[i + 1];
        mview src = top ? PW(n, u->dw_w) : A(n, t->kw[i + 1]);
        mview dsrc = top ? DP(n, u->dw_w) : G(n, t->kw[i + 1]);
        if (!top)
            MANTA_TRY(mcl_fill(d, dsrc, 0.0f, (size_t)c->mid * big * big));
        MANTA_TRY(ofa_ktrans_backward(d, c->mid, big, u->ks[i], src, PW(n, u->kmat[i]),
                                      G(n, t->kw[i]), dsrc, DP(n, u->kmat[i])));
    }
    return MANTA_OK;
}

manta_status ofa_mbconv_backward(ofa_net *n, const ofa_mbconv *u, const ofa_mbconv_cfg *c)
{
    mcl_dev *d = n->d;
    const ofa_mbconv_acts *t = &u->t;
    const size_t B = (size_t)n->batch, hw = (size_t)c->h * c->w, ohw = (size_t)c->ho * c->wo;
    MANTA_TRY(ofa_net_bn_backward(n, &u->p_bn, u->width, (int)ohw, t->p_conv, c->out, t->p_conv));
    nn_conv2d_shape pr = ofa_net_pw_shape(n, c->mid, c->ho, c->wo, u->width, u->mid_max);
    MANTA_TRY(nn_conv2d_backward(d, &pr, A(n, proj_input(u)), PW(n, u->p_w), G(n, t->p_conv),
                                 G(n, proj_input(u)), DP(n, u->p_w), SCR(n)));
    if (u->se)
        MANTA_TRY(se_backward(n, u, c));
    MANTA_TRY(
        ofa_net_act_backward_xy(n, u->act, B * c->mid * ohw, t->d_bn, t->d_act, t->d_act, t->d_bn));
    MANTA_TRY(ofa_net_bn_backward(n, &u->d_bn, c->mid, (int)ohw, t->d_conv, t->d_bn, t->d_conv));
    MANTA_TRY(dw_backward(n, u, c));
    MANTA_TRY(
        ofa_net_act_backward_xy(n, u->act, B * c->mid * hw, t->e_bn, t->e_act, t->e_act, t->e_bn));
    MANTA_TRY(ofa_net_bn_backward(n, &u->e_bn, c->mid, (int)hw, t->e_conv, t->e_bn, t->e_conv));
    nn_conv2d_shape e = ofa_net_pw_shape(n, u->in_c, c->h, c->w, c->mid, 0);
    MANTA_TRY(nn_conv2d_backward(d, &e, A(n, c->in), PW(n, u->e_w), G(n, t->e_conv), G(n, c->in),
                                 DP(n, u->e_w), SCR(n)));
    if (c->residual)
        MANTA_TRY(nn_axpy(d, B * u->width * hw, 1.0f, G(n, t->out), G(n, c->in)));
    return MANTA_OK;
}

/* ---- elastic width: channel re-organisation ------------------------------------------------ */

/* Permute the channels of a batch norm: gamma, beta (params @p p), running statistics
 * (state @p st). */
static void permute_bn(float *p, float *st, const ofa_bn *b, const int *perm, int c, float *tmp)
{
    ofa_permute_rows(p + b->gamma, c, 1, perm, tmp);
    ofa_permute_rows(p + b->beta, c, 1, perm, tmp);
    ofa_permute_rows(st + b->rmean, c, 1, perm, tmp);
    ofa_permute_rows(st + b->rvar, c, 1, perm, tmp);
}

/* Re-organise slot @p q in the host copies @p p (parameters) and @p st (state); @p bounds:
 * the nb group bounds of its expanded channels; imp, perm: its mid_max entries at least;
 * tmp: the largest block it moves. */
static void reorder_slot(const ofa_mbconv *q, float *p, float *st, const int *bounds, int nb,
                         ofa_importance *imp, int *perm, float *tmp)
{
    const int M = q->mid_max, K = q->ks[q->n_ks - 1];
    for (int c = 0; c < M; c++) {
        double l1 = 0;
        for (int o = 0; o < q->width; o++)
            l1 += fabsf(p[q->p_w + (size_t)o * M + c]);
        imp[c] = (ofa_importance){l1, c};
    }
    ofa_sort_groups(imp, M, bounds, nb, perm);
    ofa_permute_rows(p + q->e_w, M, q->in_c, perm, tmp);
    permute_bn(p, st, &q->e_bn, perm, M, tmp);
    ofa_permute_rows(p + q->dw_w, M, K * K, perm, tmp);
    permute_bn(p, st, &q->d_bn, perm, M, tmp);
    ofa_permute_cols(p + q->p_w, q->width, M, M, 1, perm, tmp);
    if (!q->se)
        return;
    ofa_permute_cols(p + q->se_r_w, q->se_max, M, M, 1, perm, tmp);
    ofa_permute_rows(p + q->se_e_w, M, q->se_max, perm, tmp);
    ofa_permute_rows(p + q->se_e_b, M, 1, perm, tmp);
    /* SE hidden units by the L1 norm of the SE expand weights reading them */
    for (int h = 0; h < q->se_max; h++) {
        double l1 = 0;
        for (int c = 0; c < M; c++)
            l1 += fabsf(p[q->se_e_w + (size_t)c * q->se_max + h]);
        imp[h] = (ofa_importance){l1, h};
    }
    ofa_sort_groups(imp, q->se_max, NULL, 0, perm);
    ofa_permute_rows(p + q->se_r_w, q->se_max, M, perm, tmp);
    ofa_permute_rows(p + q->se_r_b, q->se_max, 1, perm, tmp);
    ofa_permute_cols(p + q->se_e_w, M, q->se_max, q->se_max, 1, perm, tmp);
}

manta_status ofa_net_reorder_width(ofa_net *n, const ofa_mbconv *slots, int n_slots, const int *e,
                                   int n_e, int keep_groups)
{
    if (keep_groups < 0 || keep_groups >= n_e || keep_groups >= OFA_MAX_CHOICES)
        return manta_err_set(mcl_err(n->d), MANTA_ERR_INVALID_ARG,
                             "width re-organisation: %d kept groups with %d expand ratios",
                             keep_groups, n_e);
    size_t need = 1, widest = 1; /* largest block moved at once; most channels */
    for (int i = 0; i < n_slots; i++) {
        const ofa_mbconv *q = &slots[i];
        const int K = q->ks[q->n_ks - 1];
        int cols = q->in_c > K * K ? q->in_c : K * K;
        cols = cols > q->se_max ? cols : q->se_max;
        need = need > (size_t)q->mid_max * cols ? need : (size_t)q->mid_max * cols;
        widest = widest > (size_t)q->mid_max ? widest : (size_t)q->mid_max;
    }
    const size_t n_params = n->params.floats, n_state = n->state.floats;
    float *p = malloc(n_params * sizeof *p), *st = malloc(n_state * sizeof *st);
    float *tmp = malloc(need * sizeof *tmp);
    ofa_importance *imp = malloc(widest * sizeof *imp);
    int *perm = malloc(widest * sizeof *perm);
    manta_status rc = MANTA_OK;
    if (!p || !st || !tmp || !imp || !perm) {
        rc = manta_err_set(mcl_err(n->d), MANTA_ERR_NO_MEMORY,
                           "width re-organisation: out of memory");
        goto out;
    }
    if ((rc = mcl_read(n->d, mslab_view(&n->params, 0), p, n_params)) != MANTA_OK ||
        (rc = mcl_read(n->d, S(n, 0), st, n_state)) != MANTA_OK)
        goto out;
    for (int i = 0; i < n_slots; i++) {
        const ofa_mbconv *q = &slots[i];
        /* group bounds: widths of the kept expand ratios below the largest, ascending */
        int bounds[OFA_MAX_CHOICES], nb = 0;
        for (int g = keep_groups; g >= 1; g--)
            bounds[nb++] = ofa_make_divisible((double)q->in_c * e[n_e - 1 - g], 8);
        reorder_slot(q, p, st, bounds, nb, imp, perm, tmp);
    }
    if ((rc = mcl_write(n->d, mslab_view(&n->params, 0), p, n_params)) == MANTA_OK)
        rc = mcl_write(n->d, S(n, 0), st, n_state);
out:
    free(p), free(st), free(tmp), free(imp), free(perm);
    return rc;
}
