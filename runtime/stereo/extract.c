#include "stereo/extract.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "elastic/extract.h"
#include "engine/engine.h"
#include "export/mbv3_graph.h"
#include "stereo/net_impl.h"

/* What the builders share: the graph, the network and host copies of its values. */
typedef struct sx {
    xgraph *g;
    const stereo_net *n;
    ofa_host_values v;
    manta_err *err;
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

static int tensor4(sx *c, int h, int w, int ch, const char *name)
{
    const int shape[4] = {1, h, w, ch};
    return xgraph_add_tensor(c->g, 4, shape, name, c->err);
}

/* Append @p op writing a new tensor (1, h, w, ch) named @p name; its weights and bias are
 * freed on failure. */
static int add(sx *c, xg_op *op, int h, int w, int ch, const char *name)
{
    op->out = tensor4(c, h, w, ch, name);
    if (op->out < 0 || xgraph_add_op(c->g, op, c->err) < 0) {
        free(op->weights);
        free(op->bias);
        return -1;
    }
    return op->out;
}

static int leaky(sx *c, int x, const char *name)
{
    const xg_tensor *t = &c->g->tensors[x];
    xg_op op = {.kind = XG_LEAKY_RELU, .in0 = x, .in1 = -1, .alpha = NN_ACT_LEAKY_SLOPE};
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.38s.leaky", name);
    return add(c, &op, t->shape[1], t->shape[2], t->shape[3], nm);
}

/* Weights (cout, k, k, cin) and a bias of cout, zeros; -1 when out of memory. */
static int alloc_values(sx *c, xg_op *op, int k, int cin, int cout)
{
    op->n_weights = (size_t)cout * k * k * cin;
    op->n_bias = (size_t)cout;
    op->weights = calloc(op->n_weights, sizeof *op->weights);
    op->bias = calloc(op->n_bias, sizeof *op->bias);
    if (op->weights && op->bias)
        return 0;
    free(op->weights), free(op->bias);
    op->weights = op->bias = NULL;
    manta_err_set(c->err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    return -1;
}

/* A stride-1 k x k convolution (SAME) with bias of @p x: weights NCHW at @p w_off, rows of
 * @p ld floats (the first cout rows and cin columns), batch norm @p bn folded (NULL: the bias
 * at @p b_off), then @p act (NN_ACT_NONE or NN_ACT_LEAKY_RELU). */
static int conv_s1(sx *c, int x, int k, int cout, size_t w_off, size_t ld, const ofa_bn *bn,
                   size_t b_off, nn_act act, const char *name)
{
    const xg_tensor *t = &c->g->tensors[x];
    const int h = t->shape[1], w = t->shape[2], cin = t->shape[3];
    xg_op op = {.kind = XG_CONV, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = 1, .same = true};
    if (alloc_values(c, &op, k, cin, cout) < 0)
        return -1;
    const mbv3_request r = {.kind = XG_CONV,
                            .k = k,
                            .cin = cin,
                            .cout = cout,
                            .in_scale = 1.0f,
                            .weights = op.weights,
                            .n_weights = op.n_weights,
                            .bias = op.bias,
                            .n_bias = op.n_bias};
    ofa_fill_conv_bn(&c->v, &r, w_off, ld, bn);
    if (!bn)
        memcpy(op.bias, c->v.p + b_off, (size_t)cout * sizeof *op.bias);
    int y = add(c, &op, h, w, cout, name);
    return y >= 0 && act == NN_ACT_LEAKY_RELU ? leaky(c, y, name) : y;
}

/* The stem of one view (@p prefix "" or "r.") as the graph builder's layer. */
static mbv3_layer stem_layer(const stereo_net *n, const char *prefix)
{
    mbv3_layer l;
    memset(&l, 0, sizeof l);
    l.type = MBV3_STEM;
    snprintf(l.where, sizeof l.where, "%sstem", prefix);
    l.slot = -1;
    l.in_h = n->H, l.in_w = n->W, l.in_c = 3;
    l.out_h = n->h1, l.out_w = n->w1, l.out_c = n->s.stem_width;
    l.kernel = n->s.stem_kernel, l.stride = 2, l.act = n->s.stem_act;
    return l;
}

/* Active slot @p a on one view (@p prefix "" or "r.") as the graph builder's block. */
static mbv3_layer block_layer(const stereo_net *n, const stereo_slot *a, const char *prefix)
{
    const ofa_mbconv *p = &n->slot[a->idx];
    const int u = a->idx / n->s.max_depth, j = a->idx % n->s.max_depth;
    mbv3_layer l;
    memset(&l, 0, sizeof l);
    l.type = MBV3_BLOCK;
    snprintf(l.where, sizeof l.where, "%su%d.b%d", prefix, u + 1, j + 1);
    l.slot = a->idx;
    l.in_h = a->c.h, l.in_w = a->c.w, l.in_c = p->in_c;
    l.out_h = a->c.ho, l.out_w = a->c.wo, l.out_c = p->width;
    l.mid = a->c.mid, l.kernel = a->c.k, l.stride = a->c.stride;
    l.has_expand = true, l.idskip = a->c.residual, l.se = p->se;
    l.se_mid = p->se ? a->c.se : 0;
    l.act = p->act;
    return l;
}

/* The correlation of the views' last shared tensors, the redirect of the left one and their
 * concatenation. */
static int corr_part(sx *c, int left, int right)
{
    const stereo_net *n = c->n;
    const stereo_space *s = &n->s;
    int corr =
        xgraph_add_correlation(c->g, left, right, s->corr_max_disp, s->corr_stride, "corr", c->err);
    int redir = corr < 0 ? -1
                         : conv_s1(c, left, 1, s->redir_width, n->redir_w, (size_t)n->cc,
                                   &n->redir_bn, 0, NN_ACT_LEAKY_RELU, "redir");
    if (redir < 0)
        return -1;
    xg_op cat = {.kind = XG_CONCAT, .in0 = corr, .in1 = -1, .n_ins = 2, .ins = {corr, redir}};
    return add(c, &cat, n->hc, n->wc, n->dcorr + s->redir_width, "corr.concat");
}

/* Decoder level @p i from @p in (the coarser level's 3x3 conv, or the last unit's output),
 * the coarser prediction @p pred and the skip @p skip; *conv gets the level's 3x3 conv
 * output. Returns the level's prediction. */
static int level(sx *c, int i, int in, int pred, int skip, int *conv)
{
    const stereo_net *n = c->n;
    const stereo_level *l = &n->lev[i];
    const int k = n->s.n_levels - 1 - i, aw = l->aw, acin = l->acin;
    char nm[XG_NAME_MAX];
    xg_op up = {
        .kind = XG_TCONV, .in0 = in, .in1 = -1, .kh = 4, .kw = 4, .stride = 2, .same = true};
    if (alloc_values(c, &up, 4, acin, aw) < 0)
        return -1;
    /* (cin, width, 4, 4), the first acin rows and aw columns -> OHWI (aw, 4, 4, acin) */
    for (int o = 0; o < aw; o++) {
        for (int t = 0; t < 16; t++)
            for (int ci = 0; ci < acin; ci++)
                up.weights[((size_t)o * 16 + t) * acin + ci] =
                    c->v.p[l->up_w + ((size_t)ci * l->width + o) * 16 + t];
        up.bias[o] = c->v.p[l->up_b + o];
    }
    snprintf(nm, sizeof nm, "d%d.deconv", k);
    int x = add(c, &up, l->h, l->w, aw, nm);
    x = x < 0 ? -1 : leaky(c, x, nm);
    snprintf(nm, sizeof nm, "d%d.upsample", k);
    xg_op rs = {.kind = XG_RESIZE, .in0 = pred, .in1 = -1};
    int u = x < 0 ? -1 : add(c, &rs, l->h, l->w, 1, nm);
    snprintf(nm, sizeof nm, "d%d.concat", k);
    xg_op cat = {.kind = XG_CONCAT, .in0 = skip, .in1 = -1, .n_ins = 3, .ins = {skip, u, x}};
    int y = u < 0 ? -1 : add(c, &cat, l->h, l->w, cat_c(l), nm);
    snprintf(nm, sizeof nm, "d%d.conv", k);
    y = y < 0 ? -1
              : conv_s1(c, y, 3, aw, l->conv_w, (size_t)cat_max(l) * 9, NULL, l->conv_b,
                        NN_ACT_LEAKY_RELU, nm);
    *conv = y;
    snprintf(nm, sizeof nm, "d%d.pred", k);
    return y < 0 ? -1
                 : conv_s1(c, y, 3, 1, l->pred_w, (size_t)l->width * 9, NULL, l->pred_b,
                           NN_ACT_NONE, nm);
}

/* The whole graph into c->g (see the file comment). */
static int build(sx *c)
{
    const stereo_net *n = c->n;
    const stereo_space *s = &n->s;
    const mbv3_source src = {fill, c};
    const int L = s->n_levels;
    int skip[STEREO_MAX_LEVELS + 1];
    int left = tensor4(c, n->H, n->W, 3, "left");
    int right = left < 0 ? -1 : tensor4(c, n->H, n->W, 3, "right");
    if (right < 0)
        return -1;
    c->g->n_inputs = 2;
    c->g->inputs[0] = left, c->g->inputs[1] = right;
    skip[0] = left;
    mbv3_layer sl = stem_layer(n, ""), sr = stem_layer(n, "r.");
    int x = mbv3_graph_layer(c->g, &sl, left, &src, c->err);
    int xr = x < 0 ? -1 : mbv3_graph_layer(c->g, &sr, right, &src, c->err);
    int k = 1, next = 0;
    skip[k] = x;
    for (int u = 0; u < s->n_units && xr >= 0 && x >= 0; u++) {
        if (u == s->corr_after_unit) {
            x = corr_part(c, x, xr);
            skip[k] = x;
        }
        for (; next < n->n_active && n->active[next].idx / s->max_depth == u && x >= 0; next++) {
            mbv3_layer bl = block_layer(n, &n->active[next], "");
            x = mbv3_graph_layer(c->g, &bl, x, &src, c->err);
            if (next < n->n_shared && x >= 0) {
                mbv3_layer br = block_layer(n, &n->active[next], "r.");
                xr = mbv3_graph_layer(c->g, &br, xr, &src, c->err);
            }
        }
        k += s->unit[u].stride == 2;
        skip[k] = x;
    }
    if (x < 0 || xr < 0)
        return -1;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "d%d.pred", L);
    int pred =
        conv_s1(c, x, 3, 1, n->pred0_w, (size_t)n->cl * 9, NULL, n->pred0_b, NN_ACT_NONE, nm);
    int in = x;
    for (int i = 0; i < L && pred >= 0; i++)
        pred = level(c, i, in, pred, skip[L - 1 - i], &in);
    if (pred < 0)
        return -1;
    c->g->n_outputs = 1;
    c->g->outputs[0] = pred;
    return pred;
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
        sx c = {out, n, {p, st}, err};
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
        ofa_arch a = n->arch;
        a.r = s->crop_h; /* the encoding's resolution is the space's crop */
        stereo_arch_to_json(s, &a, out->arch_json, sizeof out->arch_json, NULL);
        if (build(&c) < 0) {
            rc = err && err->code != MANTA_OK ? err->code : MANTA_ERR_INTERNAL;
            xgraph_free(out);
        }
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
            for (int ch = 0; ch < 3; ch++)
                v[k].data[3 * i + (size_t)ch] = views[((size_t)k * 3 + (size_t)ch) * plane + i];
    if (st == MANTA_OK && mengine_invoke(&e) != MENGINE_OK)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: the engine's invocation failed");
    if (st == MANTA_OK) {
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
