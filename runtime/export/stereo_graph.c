#include "export/stereo_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layers of a sub-network ---------------------------------------------------------- */

/* Output size of a convolution with padding k/2. */

/* A new layer at out[*n] of @p type named @p where, reading @p n_in layers @p src. */
static sgraph_layer *push(sgraph_layer *out, int *n, sgraph_type type, const char *where, int n_in,
                          const int *src, const sgraph_layer *all)
{
    sgraph_layer *l = &out[(*n)++];
    memset(l, 0, sizeof *l);
    l->type = type;
    snprintf(l->where, sizeof l->where, "%s", where);
    l->level = -1;
    l->n_in = n_in;
    for (int i = 0; i < n_in; i++) {
        l->src[i] = src[i];
        const sgraph_layer *p = src[i] >= 0 ? &all[src[i]] : NULL;
        l->in_cs[i] = p ? p->out_c : 3;
        l->in_c += l->in_cs[i];
    }
    return l;
}

/* Input size of a layer reading layer @p src (or an image of h x w). */
static void in_size(sgraph_layer *l, const sgraph_layer *all, int src, int h, int w)
{
    l->in_h = src >= 0 ? all[src].out_h : h;
    l->in_w = src >= 0 ? all[src].out_w : w;
}

static void enc_copy(sgraph_layer *l)
{
    l->in_h = l->enc.in_h, l->in_w = l->enc.in_w, l->in_c = l->enc.in_c;
    l->out_h = l->enc.out_h, l->out_w = l->enc.out_w, l->out_c = l->enc.out_c;
    l->kernel = l->enc.kernel;
}

/* The stem of view @p view. */
static void stem(const stereo_space *s, int h, int w, int view, sgraph_layer *out, int *n)
{
    const int src = view ? SGRAPH_SRC_RIGHT : SGRAPH_SRC_LEFT;
    sgraph_layer *l = push(out, n, SGRAPH_STEM, view ? "r.stem" : "stem", 1, &src, out);
    l->view = view;
    mbv3_layer *e = &l->enc;
    e->type = MBV3_STEM;
    snprintf(e->where, sizeof e->where, "%s", l->where);
    e->slot = -1;
    e->in_h = h, e->in_w = w, e->in_c = 3;
    e->out_h = xgraph_conv_size(h, s->stem_kernel, 2),
    e->out_w = xgraph_conv_size(w, s->stem_kernel, 2);
    e->out_c = s->stem_width;
    e->kernel = s->stem_kernel, e->stride = 2, e->act = s->stem_act;
    enc_copy(l);
}

/* Block @p j of unit @p u on view @p view, reading layer @p src. */
static void block(const stereo_space *s, const ofa_arch *a, int u, int j, int view, int src,
                  sgraph_layer *out, int *n)
{
    const ofa_unit_spec *us = &s->unit[u];
    const int slot = u * s->max_depth + j, k = a->ks[slot];
    char where[48];
    snprintf(where, sizeof where, "%su%d.b%d", view ? "r." : "", u + 1, j + 1);
    sgraph_layer *l = push(out, n, SGRAPH_BLOCK, where, 1, &src, out);
    l->view = view;
    const sgraph_layer *p = &out[src];
    mbv3_layer *e = &l->enc;
    e->type = MBV3_BLOCK;
    snprintf(e->where, sizeof e->where, "%s", where);
    e->slot = slot;
    e->in_h = p->out_h, e->in_w = p->out_w, e->in_c = p->out_c;
    e->stride = j == 0 ? us->stride : 1;
    e->out_h = xgraph_conv_size(e->in_h, k, e->stride),
    e->out_w = xgraph_conv_size(e->in_w, k, e->stride);
    e->out_c = us->width;
    e->mid = ofa_make_divisible((double)e->in_c * a->e[slot], 8);
    e->kernel = k;
    e->has_expand = true;
    e->idskip = e->stride == 1 && e->in_c == us->width;
    e->se = us->se;
    e->se_mid = us->se ? ofa_make_divisible(e->mid / 4.0, 8) : 0;
    e->act = us->act;
    enc_copy(l);
}

/* A 3x3 convolution (SGRAPH_CONV or SGRAPH_PRED) of layer @p src at level @p level. */
static void conv3(sgraph_type type, const char *where, int level, int src, int cout,
                  sgraph_layer *out, int *n)
{
    sgraph_layer *l = push(out, n, type, where, 1, &src, out);
    l->level = level;
    in_size(l, out, src, 0, 0);
    l->out_h = l->in_h, l->out_w = l->in_w, l->out_c = cout;
    l->kernel = 3;
}

manta_status sgraph_arch_layers(const stereo_space *s, const ofa_arch *a, int h, int w,
                                sgraph_layer *out, int *n, manta_err *err)
{
    *n = 0;
    MANTA_TRY(stereo_arch_validate(s, a, err));
    const int L = s->n_levels, f = 1 << L;
    if (h <= 0 || w <= 0 || h % f || w % f)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo graph: size %dx%d is not a multiple of %d", w, h, f);
    int m = 0, skip[STEREO_MAX_LEVELS + 1];
    char nm[48];
    skip[0] = SGRAPH_SRC_LEFT;
    stem(s, h, w, 0, out, &m);
    stem(s, h, w, 1, out, &m);
    int x = 0, xr = 1, k = 1;
    skip[k] = x;
    for (int u = 0; u < s->n_units; u++) {
        if (u == s->corr_after_unit) {
            const int two[2] = {x, xr};
            sgraph_layer *l = push(out, &m, SGRAPH_CORR, "corr", 2, two, out);
            in_size(l, out, x, 0, 0);
            l->in_c = l->in_cs[0];
            l->out_h = l->in_h, l->out_w = l->in_w, l->out_c = stereo_corr_channels(s);
            l->kernel = 1, l->corr_disp = s->corr_max_disp, l->corr_stride = s->corr_stride;
            const int corr = m - 1;
            l = push(out, &m, SGRAPH_REDIR, "redir", 1, &x, out);
            in_size(l, out, x, 0, 0);
            l->out_h = l->in_h, l->out_w = l->in_w, l->out_c = s->redir_width, l->kernel = 1;
            const int cat[2] = {corr, m - 1};
            l = push(out, &m, SGRAPH_CONCAT, "corr.concat", 2, cat, out);
            in_size(l, out, corr, 0, 0);
            l->out_h = l->in_h, l->out_w = l->in_w, l->out_c = l->in_c;
            x = m - 1;
            skip[k] = x;
        }
        for (int j = 0; j < a->d[u]; j++) {
            block(s, a, u, j, 0, x, out, &m);
            x = m - 1;
            if (u < s->corr_after_unit) {
                block(s, a, u, j, 1, xr, out, &m);
                xr = m - 1;
            }
        }
        k += s->unit[u].stride == 2;
        skip[k] = x;
    }
    snprintf(nm, sizeof nm, "d%d.pred", L);
    conv3(SGRAPH_PRED, nm, -1, x, 1, out, &m);
    int pred = m - 1, in = x;
    for (int i = 0; i < L; i++) {
        const int kk = L - 1 - i, dw = a->dw[i];
        snprintf(nm, sizeof nm, "d%d.deconv", kk);
        sgraph_layer *l = push(out, &m, SGRAPH_DECONV, nm, 1, &in, out);
        l->level = i;
        in_size(l, out, in, 0, 0);
        l->out_h = 2 * l->in_h, l->out_w = 2 * l->in_w, l->out_c = dw, l->kernel = 4;
        const int up = m - 1;
        snprintf(nm, sizeof nm, "d%d.upsample", kk);
        l = push(out, &m, SGRAPH_UPSAMPLE, nm, 1, &pred, out);
        l->level = i;
        in_size(l, out, pred, 0, 0);
        l->out_h = 2 * l->in_h, l->out_w = 2 * l->in_w, l->out_c = 1;
        const int cat[3] = {skip[kk], m - 1, up};
        snprintf(nm, sizeof nm, "d%d.concat", kk);
        l = push(out, &m, SGRAPH_CONCAT, nm, 3, cat, out);
        l->level = i;
        l->in_h = l->out_h = out[up].out_h, l->in_w = l->out_w = out[up].out_w;
        l->out_c = l->in_c;
        snprintf(nm, sizeof nm, "d%d.conv", kk);
        conv3(SGRAPH_CONV, nm, i, m - 1, dw, out, &m);
        in = m - 1;
        snprintf(nm, sizeof nm, "d%d.pred", kk);
        conv3(SGRAPH_PRED, nm, i, in, 1, out, &m);
        pred = m - 1;
    }
    *n = m;
    return MANTA_OK;
}

/* ---- operators ------------------------------------------------------------------------ */

/* What the builders share. */
typedef struct sctx {
    xgraph *g;
    const sgraph_source *src;
    manta_err *err;
} sctx;

/* Append @p op writing a new tensor (1, h, w, ch) named @p name; its weights and bias are
 * freed on failure. */
static int add(sctx *c, xg_op *op, int h, int w, int ch, const char *name)
{
    op->out = xgraph_add_nhwc(c->g, h, w, ch, name, c->err);
    if (op->out < 0 || xgraph_add_op(c->g, op, c->err) < 0) {
        free(op->weights);
        free(op->bias);
        op->weights = op->bias = NULL;
        return -1;
    }
    return op->out;
}

static int leaky(sctx *c, int x, const char *name)
{
    const xg_tensor *t = &c->g->tensors[x];
    xg_op op = {.kind = XG_LEAKY_RELU, .in0 = x, .in1 = -1, .alpha = NN_ACT_LEAKY_SLOPE};
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.38s.leaky", name);
    return add(c, &op, t->shape[1], t->shape[2], t->shape[3], nm);
}

/* Weights (cout, k, k, cin) and a bias of cout, zeros, filled by the source; -1 on failure. */
static int values(sctx *c, const sgraph_layer *l, xg_op *op, int k, int cin, int cout)
{
    op->n_weights = (size_t)cout * k * k * cin;
    op->n_bias = (size_t)cout;
    op->weights = calloc(op->n_weights, sizeof *op->weights);
    op->bias = calloc(op->n_bias, sizeof *op->bias);
    manta_status st = MANTA_OK;
    if (!op->weights || !op->bias)
        st = manta_err_set(c->err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    else if (c->src && c->src->fill) {
        const sgraph_request r = {.layer = l,
                                  .kind = op->kind,
                                  .k = k,
                                  .cin = cin,
                                  .cout = cout,
                                  .weights = op->weights,
                                  .n_weights = op->n_weights,
                                  .bias = op->bias,
                                  .n_bias = op->n_bias};
        st = c->src->fill(c->src->ctx, &r, c->err);
    }
    if (st == MANTA_OK)
        return 0;
    free(op->weights), free(op->bias);
    op->weights = op->bias = NULL;
    return -1;
}

/* A stride-1 k x k convolution (SAME) with bias of @p x to l->out_c, then a leaky ReLU when
 * @p act. */
static int conv_s1(sctx *c, const sgraph_layer *l, int x, bool act)
{
    const int k = l->kernel;
    xg_op op = {.kind = XG_CONV, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = 1, .same = true};
    if (values(c, l, &op, k, l->in_c, l->out_c) < 0)
        return -1;
    int y = add(c, &op, l->out_h, l->out_w, l->out_c, l->where);
    return y >= 0 && act ? leaky(c, y, l->where) : y;
}

int sgraph_layer_ops(xgraph *g, const sgraph_layer *l, const int *in, const sgraph_source *src,
                     manta_err *err)
{
    sctx c = {g, src, err};
    for (int i = 0; i < l->n_in; i++)
        if (in[i] < 0 || in[i] >= g->n_tensors)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "layer %s: input tensor %d out of range", l->where, in[i]),
                   -1;
    switch (l->type) {
    case SGRAPH_STEM:
    case SGRAPH_BLOCK: {
        const mbv3_source ms = {src ? src->encoder : NULL, src ? src->ctx : NULL};
        return mbv3_graph_layer(g, &l->enc, in[0], &ms, err);
    }
    case SGRAPH_CORR:
        return xgraph_add_correlation(g, in[0], in[1], l->corr_disp, l->corr_stride, l->where, err);
    case SGRAPH_REDIR:
    case SGRAPH_CONV: return conv_s1(&c, l, in[0], true);
    case SGRAPH_PRED: return conv_s1(&c, l, in[0], false);
    case SGRAPH_CONCAT: {
        xg_op cat = {.kind = XG_CONCAT, .in0 = in[0], .in1 = -1, .n_ins = l->n_in};
        for (int i = 0; i < l->n_in; i++)
            cat.ins[i] = in[i];
        return add(&c, &cat, l->out_h, l->out_w, l->out_c, l->where);
    }
    case SGRAPH_DECONV: {
        xg_op up = {
            .kind = XG_TCONV, .in0 = in[0], .in1 = -1, .kh = 4, .kw = 4, .stride = 2, .same = true};
        if (values(&c, l, &up, 4, l->in_c, l->out_c) < 0)
            return -1;
        int x = add(&c, &up, l->out_h, l->out_w, l->out_c, l->where);
        return x < 0 ? -1 : leaky(&c, x, l->where);
    }
    case SGRAPH_UPSAMPLE: {
        xg_op rs = {.kind = XG_RESIZE, .in0 = in[0], .in1 = -1};
        return add(&c, &rs, l->out_h, l->out_w, l->out_c, l->where);
    }
    }
    return manta_err_set(err, MANTA_ERR_INVALID_ARG, "layer %s: unknown layer type", l->where), -1;
}

/* ---- a whole sub-network -------------------------------------------------------------- */

manta_status sgraph_arch_graph(const stereo_space *s, const ofa_arch *a, int h, int w,
                               const sgraph_source *src, xgraph *out, int *first_op, int *n_layers,
                               manta_err *err)
{
    memset(out, 0, sizeof *out);
    sgraph_layer *L = malloc(SGRAPH_MAX_LAYERS * sizeof *L);
    int *t = malloc(SGRAPH_MAX_LAYERS * sizeof *t);
    int n = 0;
    manta_status st = L && t ? sgraph_arch_layers(s, a, h, w, L, &n, err)
                             : manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    if (st != MANTA_OK) {
        free(L), free(t);
        return st;
    }
    out->share_weights = true;
    out->pre.channels = 3;
    for (int i = 0; i < 3; i++)
        out->pre.mean[i] = 0.0f, out->pre.std[i] = 1.0f;
    snprintf(out->pre.task, sizeof out->pre.task, "stereo");
    snprintf(out->pre.space, sizeof out->pre.space, "%s", s->name);
    out->pre.disp_scale = 1.0f;
    out->pre.max_disp = (float)s->max_disp;
    snprintf(out->description, sizeof out->description, "manta stereo sub-network of space %s",
             s->name);
    stereo_arch_to_json(s, a, out->arch_json, sizeof out->arch_json, NULL);
    sctx c = {out, src, err};
    int left = xgraph_add_nhwc(c.g, h, w, 3, "left", c.err);
    int right = left < 0 ? -1 : xgraph_add_nhwc(c.g, h, w, 3, "right", c.err);
    int y = right;
    if (right >= 0) {
        out->n_inputs = 2;
        out->inputs[0] = left, out->inputs[1] = right;
    }
    for (int i = 0; i < n && y >= 0; i++) {
        int in[3];
        for (int j = 0; j < L[i].n_in; j++)
            in[j] = L[i].src[j] == SGRAPH_SRC_LEFT    ? left
                    : L[i].src[j] == SGRAPH_SRC_RIGHT ? right
                                                      : t[L[i].src[j]];
        if (first_op)
            first_op[i] = out->n_ops;
        y = t[i] = sgraph_layer_ops(out, &L[i], in, src, err);
    }
    free(L), free(t);
    if (y < 0) {
        st = err && err->code != MANTA_OK ? err->code : MANTA_ERR_INTERNAL;
        xgraph_free(out);
        return st;
    }
    out->n_outputs = 1;
    out->outputs[0] = y;
    if (first_op)
        first_op[n] = out->n_ops;
    if (n_layers)
        *n_layers = n;
    return MANTA_OK;
}
