#include "stereo/extract.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "elastic/extract.h"
#include "engine/engine.h"
#include "export/mbv3_graph.h"
#include "export/stereo_graph.h"
#include "stereo/net_impl.h"

/* The weight sources' context: the network and host copies of its values. */
typedef struct sx {
    const stereo_net *n;
    ofa_host_values v;
} sx;

/* The weight source of the encoder: the stem's values, or a block's (the slot's, its active
 * kernel), batch norm folded. */
static manta_status fill(void *vc, const mbv3_request *r, manta_err *err)
{
    const sx *c = vc;
    const stereo_net *n = c->n;
    if (r->layer->type == MBV3_STEM) {
        const int k = n->s.stem_kernel;
        ofa_fill_conv_bn(&c->v, r, n->stem_w, (size_t)3 * k * k, &n->stem_bn);
        return MANTA_OK;
    }
    const int idx = r->layer->slot;
    for (int i = 0; r->layer->type == MBV3_BLOCK && i < n->n_active; i++)
        if (n->active[i].idx == idx)
            return ofa_mbconv_fill(&c->v, &n->slot[idx], n->active[i].c.ki, r, err);
    return manta_err_set(err, MANTA_ERR_INTERNAL, "export: layer %s is not an active layer",
                         r->layer->where);
}

/* The weight source of the redirect and the decoder: the network's values (the redirect's
 * batch norm folded; the decoder's first rows and columns of the widest level's). */
static manta_status fill_dec(void *vc, const sgraph_request *r, manta_err *err)
{
    const sx *c = vc;
    const stereo_net *n = c->n;
    const sgraph_layer *g = r->layer;
    mbv3_request q = {.kind = XG_CONV,
                      .k = r->k,
                      .cin = r->cin,
                      .cout = r->cout,
                      .in_scale = 1.0f,
                      .weights = r->weights,
                      .n_weights = r->n_weights,
                      .bias = r->bias,
                      .n_bias = r->n_bias};
    if (g->type == SGRAPH_REDIR) {
        ofa_fill_conv_bn(&c->v, &q, n->redir_w, (size_t)n->cc, &n->redir_bn);
        return MANTA_OK;
    }
    if (g->type == SGRAPH_PRED && g->level < 0) {
        ofa_fill_conv_bn(&c->v, &q, n->pred0_w, (size_t)n->cl * 9, NULL);
        memcpy(r->bias, c->v.p + n->pred0_b, (size_t)r->cout * sizeof *r->bias);
        return MANTA_OK;
    }
    if (g->level < 0 || g->level >= n->s.n_levels)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "export: layer %s has no values", g->where);
    const stereo_level *l = &n->lev[g->level];
    switch (g->type) {
    case SGRAPH_DECONV:
        /* (cin, width, 4, 4), the first cin rows and cout columns -> OHWI (cout, 4, 4, cin) */
        for (int o = 0; o < r->cout; o++) {
            for (int t = 0; t < 16; t++)
                for (int ci = 0; ci < r->cin; ci++)
                    r->weights[((size_t)o * 16 + t) * r->cin + ci] =
                        c->v.p[l->up_w + ((size_t)ci * l->width + o) * 16 + t];
            r->bias[o] = c->v.p[l->up_b + o];
        }
        return MANTA_OK;
    case SGRAPH_CONV:
        ofa_fill_conv_bn(&c->v, &q, l->conv_w, (size_t)cat_max(l) * 9, NULL);
        memcpy(r->bias, c->v.p + l->conv_b, (size_t)r->cout * sizeof *r->bias);
        return MANTA_OK;
    case SGRAPH_PRED:
        ofa_fill_conv_bn(&c->v, &q, l->pred_w, (size_t)l->width * 9, NULL);
        memcpy(r->bias, c->v.p + l->pred_b, (size_t)r->cout * sizeof *r->bias);
        return MANTA_OK;
    default: break;
    }
    return manta_err_set(err, MANTA_ERR_INTERNAL, "export: layer %s has no values", g->where);
}

manta_status stereo_net_extract(stereo_net *n, xgraph *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (!n->have_arch)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "export: no sub-network selected");
    const stereo_space *s = &n->s;
    float *p = malloc(n->n_params * sizeof *p),
          *st = malloc((n->n_state ? n->n_state : 1) * sizeof *st);
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
        sx c = {n, {p, st}};
        const sgraph_source src = {fill, fill_dec, &c};
        ofa_arch a = n->arch;
        a.r = s->crop_h; /* the encoding's resolution is the space's crop */
        rc = sgraph_arch_graph(s, &a, n->H, n->W, &src, out, NULL, NULL, err);
    }
    free(p);
    free(st);
    return rc;
}

/* The engine's finest disparity of @p views ((2, 3, h, w)) into @p disp (h * w); *fused the
 * fused correlations. */
static manta_status engine_run(const uint8_t *data, size_t size, const float *views, int h, int w,
                               float *disp, size_t *fused, manta_err *err)
{
    mengine_model m;
    mengine e;
    char msg[256];
    if (mengine_model_load(&m, data, size, NULL, msg, sizeof msg) != MENGINE_OK)
        return manta_err_set(err, MANTA_ERR_FORMAT, "export check: %s", msg);
    const size_t ws = mengine_plan_work_size(&m), plane = (size_t)h * w;
    size_t bytes = 0;
    void *work = malloc(ws ? ws : 1);
    uint8_t *arena = NULL;
    manta_status st =
        work ? MANTA_OK : manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK && mengine_arena_size(&m, work, ws, &bytes, msg, sizeof msg) != MENGINE_OK)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: %s", msg);
    if (st == MANTA_OK && !(arena = aligned_alloc(MENGINE_ARENA_ALIGN, (bytes + 15) & ~(size_t)15)))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK && (mengine_init(&e, &m, arena, bytes) != MENGINE_OK ||
                           mengine_prepare(&e, msg, sizeof msg) != MENGINE_OK))
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: prepare: %s", msg);
    mengine_view v[3];
    if (st == MANTA_OK &&
        (mengine_input_count(&e) != 2 || mengine_output_count(&e) != 1 ||
         mengine_input(&e, 0, &v[0]) != MENGINE_OK || mengine_input(&e, 1, &v[1]) != MENGINE_OK ||
         mengine_output(&e, 0, &v[2]) != MENGINE_OK || v[0].count != 3 * plane ||
         v[1].count != 3 * plane || v[2].count != plane))
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "export check: the model's inputs and output are not two %dx%d views "
                           "and one disparity map",
                           w, h);
    for (int k = 0; k < 2 && st == MANTA_OK; k++) /* (3, h, w) planes -> NHWC */
        for (size_t i = 0; i < plane; i++)
            for (int ch = 0; ch < 3; ch++) {
                const float x = views[((size_t)k * 3 + (size_t)ch) * plane + i];
                if (v[k].type == MENGINE_INT8) { /* an int8 file: quantized with its input's */
                    const double q = x / v[k].scale;
                    const double r = (q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5)) + v[k].zero_point;
                    ((int8_t *)v[k].data)[3 * i + (size_t)ch] = (int8_t)(r < -128  ? -128
                                                                         : r > 127 ? 127
                                                                                   : r);
                } else
                    v[k].data[3 * i + (size_t)ch] = x;
            }
    if (st == MANTA_OK && mengine_invoke(&e) != MENGINE_OK)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: the engine's invocation failed");
    if (st == MANTA_OK) {
        if (v[2].type == MENGINE_INT8)
            for (size_t i = 0; i < plane; i++)
                disp[i] = v[2].scale * (float)(((const int8_t *)v[2].cdata)[i] - v[2].zero_point);
        else
            memcpy(disp, v[2].cdata, plane * sizeof *disp);
        mengine_stats es;
        mengine_get_stats(&e, &es);
        *fused = es.fused_correlations;
    }
    free(arena);
    free(work);
    return st;
}

manta_status stereo_export_check(stereo_net *n, const uint8_t *data, size_t size,
                                 const float *views, stereo_export_diff *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    const int N = n->pairs, L = n->s.n_levels;
    const size_t plane = (size_t)n->H * n->W, view = 3 * plane;
    float *host = malloc(2 * (size_t)N * view * sizeof *host);
    float *dev = malloc((size_t)N * plane * sizeof *dev), *eng = malloc(plane * sizeof *eng);
    manta_status st = host && dev && eng
                          ? MANTA_OK
                          : manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK)
        st = engine_run(data, size, views, n->H, n->W, eng, &out->fused_correlations, err);
    mcl_dev *d = n->net.d;
    manta_status ds = MANTA_OK;
    if (st == MANTA_OK) {
        for (int k = 0; k < N; k++) { /* the left views, then the right ones */
            memcpy(host + (size_t)k * view, views, view * sizeof *host);
            memcpy(host + ((size_t)N + k) * view, views + view, view * sizeof *host);
        }
        ofa_slabs sl;
        stereo_net_slabs(n, &sl);
        ds = mcl_write(d, stereo_net_input(n), host, 2 * (size_t)N * view);
        if (ds == MANTA_OK)
            ds = stereo_net_forward(n, sl.params, OFA_BN_EVAL);
        if (ds == MANTA_OK)
            ds = mcl_read(d, stereo_net_pred(n, L), dev, (size_t)N * plane);
        if (ds != MANTA_OK)
            st = manta_err_set(err, ds, "export check: %s", mcl_err(d)->msg);
    }
    if (st == MANTA_OK) {
        double num = 0, den = 0, mx = 0, sum = 0;
        for (size_t i = 0; i < plane; i++) {
            const double a = eng[i], b = dev[i];
            num += (a - b) * (a - b);
            den += b * b;
            sum += b;
            mx = fmax(mx, fabs(a - b));
        }
        out->max_abs = mx;
        out->rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
        out->mean_disp = sum / (double)plane;
    }
    free(host);
    free(dev);
    free(eng);
    return st;
}
