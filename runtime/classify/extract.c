#include "classify/extract.h"

#include <stdlib.h>
#include <string.h>

#include "elastic/extract.h"
#include "export/mbv3_graph.h"
#include "classify/supernet_impl.h"

/* The weight source of an extraction: host copies of the parameters and statistics. */
typedef struct ctx {
    const ofa_supernet *n;
    ofa_host_values v;
} ctx;

/* The active configuration of slot `idx`, or NULL when the slot is not active. */
static const slot_a *active_slot(const ofa_supernet *n, int idx)
{
    for (int i = 0; i < n->n_active; i++)
        if (n->active[i].idx == idx)
            return &n->active[i];
    return NULL;
}

/* Whether layer `l` is what the supernet runs for its active sub-network, so that every
 * parameter read for it lies inside the supernet's tensors. */
static bool runs(const ofa_supernet *n, const mbv3_layer *l)
{
    const ofa_space *s = &n->s;
    switch (l->type) {
    case MBV3_STEM:
        return l->in_h == n->h0 && l->in_c == s->in_channels && l->out_c == s->stem_width &&
               l->kernel == s->stem_kernel && l->stride == n->stem_stride && l->out_h == n->hs;
    case MBV3_BLOCK: {
        if (l->slot < 0)
            return !l->has_expand && !l->se && l->in_h == n->hs && l->in_c == s->stem_width &&
                   l->mid == s->stem_width && l->out_c == s->first_width && l->kernel == 3 &&
                   l->idskip == n->first_residual;
        const slot_a *x = l->slot < OFA_MAX_SLOTS ? active_slot(n, l->slot) : NULL;
        const ofa_mbconv *p = x ? &n->slot[x->idx] : NULL;
        const ofa_mbconv_cfg *a = x ? &x->c : NULL;
        return p && l->has_expand && l->in_h == a->h && l->in_h == a->w && l->out_h == a->ho &&
               l->in_c == p->in_c && l->mid == a->mid && l->out_c == p->width &&
               l->kernel == a->k && l->stride == p->stride && l->se == p->se &&
               (!p->se || l->se_mid == a->se) && l->idskip == a->residual;
    }
    case MBV3_HEAD:
        return l->in_h == n->last_h && l->in_c == n->last_c && l->out_c == s->head_expand;
    case MBV3_MIX: return l->in_c == s->head_expand && l->out_c == s->head_mix;
    case MBV3_CLASSIFIER:
        return l->in_c == (s->head_mix > 0 ? s->head_mix : s->head_expand) &&
               l->out_c == s->classes;
    case MBV3_POOL: break;
    }
    return false;
}

/* The operators of a block: the first block's depthwise and projection, or a slot's. */
static manta_status fill_block(const ctx *c, const mbv3_request *r, manta_err *err)
{
    const ofa_supernet *n = c->n;
    const mbv3_layer *l = r->layer;
    if (l->slot < 0 && r->part == MBV3_DW) {
        ofa_fill_dwconv_bn(&c->v, r, c->v.p + n->first_dw, &n->first_dbn);
        return MANTA_OK;
    }
    if (l->slot < 0 && r->part == MBV3_PROJECT) {
        ofa_fill_conv_bn(&c->v, r, n->first_p, (size_t)n->s.stem_width, &n->first_pbn);
        return MANTA_OK;
    }
    if (l->slot < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "export: block %s has no operator %d",
                             l->where, (int)r->part);
    return ofa_mbconv_fill(&c->v, &n->slot[l->slot], active_slot(n, l->slot)->c.ki, r, err);
}

/* The weight source: each operator's values from the supernet's parameters, batch norm
 * folded, the active kernel baked, channels sliced. */
static manta_status fill(void *vc, const mbv3_request *r, manta_err *err)
{
    const ctx *c = vc;
    const ofa_supernet *n = c->n;
    const ofa_space *s = &n->s;
    const mbv3_layer *l = r->layer;
    if (!runs(n, l))
        return manta_err_set(err, MANTA_ERR_INTERNAL,
                             "export: layer %s is not the supernet's active sub-network", l->where);
    switch (l->type) {
    case MBV3_STEM:
        ofa_fill_conv_bn(&c->v, r, n->stem_w,
                         (size_t)s->in_channels * s->stem_kernel * s->stem_kernel, &n->stem_bn);
        return MANTA_OK;
    case MBV3_BLOCK: return fill_block(c, r, err);
    case MBV3_HEAD:
        ofa_fill_conv_bn(&c->v, r, n->head_w, (size_t)n->last_c, &n->head_bn);
        return MANTA_OK;
    case MBV3_MIX:
        memcpy(r->weights, c->v.p + n->mix_w, r->n_weights * sizeof *r->weights);
        return MANTA_OK;
    case MBV3_CLASSIFIER:
        memcpy(r->weights, c->v.p + n->cls_w, r->n_weights * sizeof *r->weights);
        memcpy(r->bias, c->v.p + n->cls_b, r->n_bias * sizeof *r->bias);
        return MANTA_OK;
    case MBV3_POOL: break;
    }
    return manta_err_set(err, MANTA_ERR_INTERNAL, "export: layer %s has no weights", l->where);
}

manta_status ofa_supernet_extract(ofa_supernet *n, const xg_preprocess *pre, xgraph *out,
                                  manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (!n->have_arch)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "export: no sub-network selected");
    float *p = malloc(n->n_params * sizeof *p), *st = malloc(n->n_state * sizeof *st);
    manta_status rc = MANTA_OK;
    if (!p || !st)
        rc = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    mcl_dev *d = n->net.d;
    const mview pv = mslab_view(&n->net.params, 0), sv = mslab_view(&n->net.state, 0);
    if (rc == MANTA_OK && (rc = mcl_read(d, pv, p, n->n_params)) != MANTA_OK)
        manta_err_set(err, rc, "%s", mcl_err(d)->msg);
    if (rc == MANTA_OK && (rc = mcl_read(d, sv, st, n->n_state)) != MANTA_OK)
        manta_err_set(err, rc, "%s", mcl_err(d)->msg);
    if (rc == MANTA_OK) {
        ctx c = {n, {p, st}};
        const mbv3_source src = {fill, &c};
        rc = mbv3_arch_graph(&n->s, &n->arch, pre, &src, out, NULL, NULL, err);
    }
    free(p);
    free(st);
    return rc;
}
