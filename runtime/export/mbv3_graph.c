#include "export/mbv3_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layers of a sub-network ---------------------------------------------------------- */

static void from_desc(mbv3_layer *l, mbv3_layer_type type, const char *where, const ofa_layer *in,
                      const ofa_layer *out)
{
    memset(l, 0, sizeof *l);
    l->type = type;
    snprintf(l->where, sizeof l->where, "%s", where);
    l->slot = -1;
    l->in_h = in->in_h, l->in_w = in->in_w, l->in_c = in->in_c;
    l->out_h = out->out_h, l->out_w = out->out_w, l->out_c = out->out_c;
    l->kernel = type == MBV3_POOL || type == MBV3_CLASSIFIER ? 0 : in->kernel;
    l->stride = in->stride;
    l->act = in->act;
}

/* "u2.b1" of "u2.b1.expand", "first" of "first.dw". */
static void block_name(const char *layer, char *out, size_t cap)
{
    const char *dot = strrchr(layer, '.');
    size_t n = dot ? (size_t)(dot - layer) : strlen(layer);
    snprintf(out, cap, "%.*s", (int)n, layer);
}

manta_status mbv3_arch_layers(const ofa_space *s, const ofa_arch *a, mbv3_layer *out, int *n,
                              manta_err *err)
{
    *n = 0;
    ofa_desc d;
    MANTA_TRY(ofa_describe(s, a, &d, err));
    /* the active slots in network order: the blocks with an expand convolution */
    int slots[OFA_MAX_SLOTS], n_slots = 0, used = 0;
    for (int u = 0; u < s->n_units; u++)
        for (int j = 0; j < a->d[u]; j++)
            slots[n_slots++] = u * s->max_depth + j;
    const ofa_layer *L = d.layer;
    int i = 0, k = 0;
    if (d.n < 4 || L[0].kind != OFA_L_CONV)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "graph layers: unexpected description");
    from_desc(&out[k++], MBV3_STEM, "stem", &L[0], &L[0]);
    i = 1;
    /* blocks: [1x1 expand] depthwise [SE] 1x1 project */
    while (i < d.n && (L[i].kind == OFA_L_DWCONV ||
                       (L[i].kind == OFA_L_CONV && i + 1 < d.n && L[i + 1].kind == OFA_L_DWCONV))) {
        if (k >= MBV3_MAX_LAYERS - 4)
            return manta_err_set(err, MANTA_ERR_INTERNAL, "graph layers: too many blocks");
        const ofa_layer *first = &L[i], *expand = NULL, *se = NULL;
        if (L[i].kind == OFA_L_CONV)
            expand = &L[i++];
        const ofa_layer *dw = &L[i++];
        if (i < d.n && L[i].kind == OFA_L_SE)
            se = &L[i++];
        if (i >= d.n || L[i].kind != OFA_L_CONV)
            return manta_err_set(err, MANTA_ERR_INTERNAL,
                                 "graph layers: block %s has no projection", first->name);
        if (expand && used >= n_slots)
            return manta_err_set(err, MANTA_ERR_INTERNAL, "graph layers: block %s has no slot",
                                 first->name);
        const ofa_layer *proj = &L[i++];
        char where[48];
        block_name(first->name, where, sizeof where);
        mbv3_layer *l = &out[k++];
        from_desc(l, MBV3_BLOCK, where, first, proj);
        l->slot = expand ? slots[used++] : -1;
        l->mid = dw->in_c;
        l->kernel = dw->kernel;
        l->stride = dw->stride;
        l->act = dw->act;
        l->has_expand = expand != NULL;
        l->idskip = proj->residual;
        l->se = se != NULL;
        l->se_mid = se ? ofa_make_divisible(dw->out_c / 4.0, 8) : 0;
    }
    /* head: 1x1 conv, pool, [feature mix], classifier */
    static const mbv3_layer_type head_types[] = {MBV3_HEAD, MBV3_POOL, MBV3_MIX, MBV3_CLASSIFIER};
    static const ofa_layer_kind head_kinds[] = {OFA_L_CONV, OFA_L_POOL, OFA_L_CONV, OFA_L_LINEAR};
    static const char *const head_where[] = {"head", "pool", "mix", "classifier"};
    for (int h = 0; h < 4; h++) {
        if (h == 2 && s->head_mix <= 0)
            continue;
        if (i >= d.n || L[i].kind != head_kinds[h])
            return manta_err_set(err, MANTA_ERR_INTERNAL, "graph layers: unexpected head layer %d",
                                 i);
        from_desc(&out[k++], head_types[h], head_where[h], &L[i], &L[i]);
        i++;
    }
    if (i != d.n)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "graph layers: %d layers left over", d.n - i);
    if (used != n_slots)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "graph layers: %d blocks for %d slots", used,
                             n_slots);
    *n = k;
    return MANTA_OK;
}

/* ---- operators ------------------------------------------------------------------------ */

/* What the builders share. */
typedef struct bctx {
    xgraph *g;
    const mbv3_source *src;
    manta_err *err;
} bctx;

/* Append op (taking its weights) writing a new tensor of `shape`; -1 on failure. */
static int add(bctx *c, xg_op *op, int rank, const int *shape, const char *name)
{
    op->out = xgraph_add_tensor(c->g, rank, shape, name, c->err);
    if (op->out < 0 || xgraph_add_op(c->g, op, c->err) < 0) {
        free(op->weights);
        free(op->bias);
        op->weights = op->bias = NULL;
        return -1;
    }
    return op->out;
}

static int simple(bctx *c, xg_kind kind, int in0, int in1, int rank, const int *shape,
                  const char *name)
{
    xg_op op = {.kind = kind, .in0 = in0, .in1 = in1};
    return add(c, &op, rank, shape, name);
}

/* Give op its weights (cout * k * k * cin, or k * k * cout for a depthwise op) and, when
 * `bias`, a bias of cout, as zeros, and let the source fill them; -1 on failure. */
static int values(bctx *c, const mbv3_layer *l, mbv3_part part, xg_op *op, int k, int cin, int cout,
                  bool bias, float in_scale)
{
    op->n_weights = (size_t)cout * k * k * (op->kind == XG_DWCONV ? 1 : cin);
    op->n_bias = bias ? (size_t)cout : 0;
    op->weights = calloc(op->n_weights ? op->n_weights : 1, sizeof *op->weights);
    op->bias = bias ? calloc(op->n_bias ? op->n_bias : 1, sizeof *op->bias) : NULL;
    manta_status st = MANTA_OK;
    if (!op->weights || (bias && !op->bias))
        st = manta_err_set(c->err, MANTA_ERR_NO_MEMORY,
                           "sub-network graph: out of memory (%zu floats)", op->n_weights);
    else if (c->src && c->src->fill) {
        const mbv3_request r = {.layer = l,
                                .part = part,
                                .kind = op->kind,
                                .k = k,
                                .cin = cin,
                                .cout = cout,
                                .in_scale = in_scale,
                                .weights = op->weights,
                                .n_weights = op->n_weights,
                                .bias = op->bias,
                                .n_bias = op->n_bias};
        st = c->src->fill(c->src->ctx, &r, c->err);
    }
    if (st == MANTA_OK)
        return 0;
    free(op->weights);
    free(op->bias);
    op->weights = op->bias = NULL;
    return -1;
}

/* The op with its activation fused when TensorFlow Lite can, else HARD_SWISH or LEAKY_RELU
 * (slope NN_ACT_LEAKY_SLOPE) after it. */
static int emit(bctx *c, xg_op *op, nn_act act, int h, int w, int ch, const char *name)
{
    const int shape[4] = {1, h, w, ch};
    op->act = act == NN_ACT_RELU ? XG_ACT_RELU : XG_ACT_NONE;
    int t = add(c, op, 4, shape, name);
    if (t < 0 || (act != NN_ACT_HSWISH && act != NN_ACT_LEAKY_RELU))
        return t;
    char nm[XG_NAME_MAX];
    if (act == NN_ACT_LEAKY_RELU) {
        snprintf(nm, sizeof nm, "%.38s.leaky", name);
        xg_op lr = {.kind = XG_LEAKY_RELU, .in0 = t, .in1 = -1, .alpha = NN_ACT_LEAKY_SLOPE};
        return add(c, &lr, 4, shape, nm);
    }
    snprintf(nm, sizeof nm, "%.38s.hswish", name);
    return simple(c, XG_HSWISH, t, -1, 4, shape, nm);
}

/* Padding of a k x k, stride-s layer on an h x w input: SAME where it equals the training
 * padding (k/2 each side: stride 1, 1x1, or both sides odd), else an explicit PAD op of k/2
 * on every side. Returns the (possibly padded) input tensor and sets *same. */
static int pad_for(bctx *c, int in, int h, int w, int ch, int k, int stride, bool *same,
                   const char *name)
{
    *same = stride == 1 || (h % 2 == 1 && w % 2 == 1) || k == 1;
    if (*same)
        return in;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.40s.pad", name);
    xg_op pad = {.kind = XG_PAD, .in0 = in, .in1 = -1, .pad = {k / 2, k / 2, k / 2, k / 2}};
    const int shape[4] = {1, h + 2 * (k / 2), w + 2 * (k / 2), ch};
    return add(c, &pad, 4, shape, nm);
}

/* Output size of a convolution with padding k/2. */

/* A dense (XG_CONV) or depthwise (XG_DWCONV) k x k convolution with bias on an h x w input,
 * then `act`. */
static int conv(bctx *c, const mbv3_layer *l, mbv3_part part, xg_kind kind, int in, int h, int w,
                int cin, int cout, int k, int stride, float in_scale, nn_act act, const char *name)
{
    bool same;
    int x = pad_for(c, in, h, w, cin, k, stride, &same, name);
    if (x < 0)
        return -1;
    xg_op op = {
        .kind = kind, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = stride, .same = same};
    if (values(c, l, part, &op, k, cin, cout, true, in_scale) < 0)
        return -1;
    return emit(c, &op, act, xgraph_conv_size(h, k, stride), xgraph_conv_size(w, k, stride), cout,
                name);
}

/* Squeeze-and-excite reduce or expand: 1x1 on (1, 1, 1, cin) with bias (+ bias_add). */
static int se_conv(bctx *c, const mbv3_layer *l, mbv3_part part, int in, int cin, int cout,
                   xg_act act, float bias_add, const char *name)
{
    xg_op op = {.kind = XG_CONV,
                .in0 = in,
                .in1 = -1,
                .kh = 1,
                .kw = 1,
                .stride = 1,
                .same = true,
                .act = act};
    if (values(c, l, part, &op, 1, cin, cout, true, 1.0f) < 0)
        return -1;
    for (int i = 0; i < cout; i++)
        op.bias[i] += bias_add;
    const int shape[4] = {1, 1, 1, cout};
    return add(c, &op, 4, shape, name);
}

static int fc(bctx *c, const mbv3_layer *l, int in, int cin, int units, bool bias, const char *name)
{
    xg_op op = {.kind = XG_FC, .in0 = in, .in1 = -1};
    if (values(c, l, MBV3_FC, &op, 1, cin, units, bias, 1.0f) < 0)
        return -1;
    const int shape[2] = {1, units};
    return add(c, &op, 2, shape, name);
}

/* A block (the first block has no expand convolution) on input tensor x. */
static int block(bctx *c, const mbv3_layer *l, int x)
{
    char nm[XG_NAME_MAX];
    const char *w = l->where;
    int t = x;
    if (l->has_expand) {
        snprintf(nm, sizeof nm, "%.30s.expand", w);
        t = conv(c, l, MBV3_EXPAND, XG_CONV, x, l->in_h, l->in_w, l->in_c, l->mid, 1, 1, 1.0f,
                 l->act, nm);
        if (t < 0)
            return -1;
    }
    snprintf(nm, sizeof nm, "%.30s.dw", w);
    t = conv(c, l, MBV3_DW, XG_DWCONV, t, l->in_h, l->in_w, l->mid, l->mid, l->kernel, l->stride,
             1.0f, l->act, nm);
    if (t < 0)
        return -1;
    float proj_scale = 1.0f;
    if (l->se) {
        snprintf(nm, sizeof nm, "%.30s.se.pool", w);
        const int pooled[4] = {1, 1, 1, l->mid};
        int s0 = simple(c, XG_MEAN, t, -1, 4, pooled, nm);
        snprintf(nm, sizeof nm, "%.30s.se.reduce", w);
        int s1 = s0 < 0
                     ? -1
                     : se_conv(c, l, MBV3_SE_REDUCE, s0, l->mid, l->se_mid, XG_ACT_RELU, 0.0f, nm);
        snprintf(nm, sizeof nm, "%.30s.se.expand", w);
        int s2 = s1 < 0
                     ? -1
                     : se_conv(c, l, MBV3_SE_EXPAND, s1, l->se_mid, l->mid, XG_ACT_RELU6, 3.0f, nm);
        snprintf(nm, sizeof nm, "%.30s.se", w);
        const int full[4] = {1, l->out_h, l->out_w, l->mid};
        t = s2 < 0 ? -1 : simple(c, XG_MUL, t, s2, 4, full, nm);
        if (t < 0)
            return -1;
        proj_scale = 1.0f / 6.0f; /* h_sigmoid's division, moved into the projection */
    }
    snprintf(nm, sizeof nm, "%.30s.project", w);
    t = conv(c, l, MBV3_PROJECT, XG_CONV, t, l->out_h, l->out_w, l->mid, l->out_c, 1, 1, proj_scale,
             NN_ACT_NONE, nm);
    if (t < 0 || !l->idskip)
        return t;
    snprintf(nm, sizeof nm, "%.30s.add", w);
    const int shape[4] = {1, l->out_h, l->out_w, l->out_c};
    return simple(c, XG_ADD, x, t, 4, shape, nm);
}

/* RESHAPE (1, 1, 1, C) -> (1, C) when x is 4-D (the flatten after the pool). */
static int flatten(bctx *c, int x)
{
    if (c->g->tensors[x].rank == 2)
        return x;
    const int *s = c->g->tensors[x].shape;
    const int flat[2] = {1, s[1] * s[2] * s[3]};
    return simple(c, XG_RESHAPE, x, -1, 2, flat, "head.flatten");
}

int mbv3_graph_layer(xgraph *g, const mbv3_layer *l, int x, const mbv3_source *src, manta_err *err)
{
    bctx c = {g, src, err};
    if (x < 0 || x >= g->n_tensors)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "layer %s: input tensor %d out of range",
                             l->where, x),
               -1;
    switch (l->type) {
    case MBV3_STEM:
        return conv(&c, l, MBV3_CONV, XG_CONV, x, l->in_h, l->in_w, l->in_c, l->out_c, l->kernel,
                    l->stride, 1.0f, l->act, "stem");
    case MBV3_BLOCK: return block(&c, l, x);
    case MBV3_HEAD:
        return conv(&c, l, MBV3_CONV, XG_CONV, x, l->in_h, l->in_w, l->in_c, l->out_c, 1, 1, 1.0f,
                    NN_ACT_HSWISH, "head.expand");
    case MBV3_POOL: {
        const int pooled[4] = {1, 1, 1, l->in_c};
        return simple(&c, XG_MEAN, x, -1, 4, pooled, "head.pool");
    }
    case MBV3_MIX: {
        int t = flatten(&c, x);
        t = t < 0 ? -1 : fc(&c, l, t, l->in_c, l->out_c, false, "head.mix");
        const int shape[2] = {1, l->out_c};
        return t < 0 ? -1 : simple(&c, XG_HSWISH, t, -1, 2, shape, "head.mix.hswish");
    }
    case MBV3_CLASSIFIER: {
        int t = flatten(&c, x);
        t = t < 0 ? -1 : fc(&c, l, t, l->in_c, l->out_c, true, "logits");
        if (t < 0)
            return -1;
        g->logits = t;
        const int probs[2] = {1, l->out_c};
        g->output = simple(&c, XG_SOFTMAX, t, -1, 2, probs, "probabilities");
        return g->output;
    }
    }
    return manta_err_set(err, MANTA_ERR_INVALID_ARG, "layer %s: unknown layer type", l->where), -1;
}

/* ---- a whole sub-network -------------------------------------------------------------- */

static manta_status copy_pre(xgraph *g, const xg_preprocess *pre, manta_err *err)
{
    g->pre = *pre;
    g->pre.labels = NULL;
    g->pre.n_labels = 0;
    if (pre->n_labels <= 0)
        return MANTA_OK;
    g->pre.labels = calloc((size_t)pre->n_labels, sizeof *g->pre.labels);
    if (!g->pre.labels)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "sub-network graph: out of memory");
    for (int i = 0; i < pre->n_labels; i++) {
        const char *src = pre->labels[i] ? pre->labels[i] : "";
        g->pre.n_labels = i + 1;
        if (!(g->pre.labels[i] = malloc(strlen(src) + 1)))
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "sub-network graph: out of memory");
        strcpy(g->pre.labels[i], src);
    }
    return MANTA_OK;
}

manta_status mbv3_arch_graph(const ofa_space *s, const ofa_arch *a, const xg_preprocess *pre,
                             const mbv3_source *src, xgraph *out, int *first_op, int *n_layers,
                             manta_err *err)
{
    memset(out, 0, sizeof *out);
    mbv3_layer L[MBV3_MAX_LAYERS];
    int n = 0;
    MANTA_TRY(mbv3_arch_layers(s, a, L, &n, err));
    manta_status st = pre ? copy_pre(out, pre, err) : MANTA_OK;
    if (st != MANTA_OK) {
        xgraph_free(out);
        return st;
    }
    out->pre.resolution = a->r;
    out->pre.channels = s->in_channels;
    snprintf(out->description, sizeof out->description, "manta OFA sub-network of space %s",
             s->name);
    ofa_arch_to_json(s, a, out->arch_json, sizeof out->arch_json, NULL);
    bctx c = {out, src, err};
    int x = xgraph_add_nhwc(c.g, a->r, a->r, s->in_channels, "input", c.err);
    out->input = x;
    for (int i = 0; i < n && x >= 0; i++) {
        if (first_op)
            first_op[i] = out->n_ops;
        x = mbv3_graph_layer(out, &L[i], x, src, err);
    }
    if (x < 0) {
        st = err && err->code != MANTA_OK ? err->code : MANTA_ERR_INTERNAL;
        xgraph_free(out);
        return st;
    }
    if (first_op)
        first_op[n] = out->n_ops;
    if (n_layers)
        *n_layers = n;
    return MANTA_OK;
}
