#include "profile/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

/* What the builders share. */
typedef struct bctx {
    xgraph *g;
    const synth_opts *o;
    manta_rng rng;
    manta_err *err;
} bctx;

static float *weights(bctx *c, size_t n, int fan_in)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p) {
        manta_err_set(c->err, MANTA_ERR_NO_MEMORY, "synthetic graph: out of memory (%zu floats)",
                      n);
        return NULL;
    }
    if (!c->o->zeros)
        manta_rng_fill_uniform(&c->rng, p, n, fan_in > 0 ? sqrtf(3.0f / (float)fan_in) : 0.1f);
    return p;
}

static int tensor4(bctx *c, int h, int w, int ch, const char *name)
{
    const int shape[4] = {1, h, w, ch};
    return xgraph_add_tensor(c->g, 4, shape, name, c->err);
}

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

/* As extract.c: the op with its activation fused when TFLite can, else HARD_SWISH after it. */
static int emit(bctx *c, xg_op *op, nn_act act, int h, int w, int ch, const char *name)
{
    const int shape[4] = {1, h, w, ch};
    op->act = act == NN_ACT_RELU ? XG_ACT_RELU : XG_ACT_NONE;
    int t = add(c, op, 4, shape, name);
    if (t < 0 || act != NN_ACT_HSWISH)
        return t;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.38s.hswish", name);
    return simple(c, XG_HSWISH, t, -1, 4, shape, nm);
}

/* SAME where it equals the training padding, else an explicit PAD of k/2 (extract.c). */
static int pad_for(bctx *c, int in, int h, int ch, int k, int stride, bool *same, const char *name)
{
    *same = stride == 1 || h % 2 == 1 || k == 1;
    if (*same)
        return in;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.40s.pad", name);
    xg_op pad = {.kind = XG_PAD, .in0 = in, .in1 = -1, .pad = {k / 2, k / 2, k / 2, k / 2}};
    const int shape[4] = {1, h + 2 * (k / 2), h + 2 * (k / 2), ch};
    return add(c, &pad, 4, shape, nm);
}

static int out_size(int in, int k, int stride) { return (in + 2 * (k / 2) - k) / stride + 1; }

static int conv(bctx *c, int in, int h, int cin, int cout, int k, int stride, nn_act act,
                const char *name)
{
    bool same;
    int x = pad_for(c, in, h, cin, k, stride, &same, name);
    if (x < 0)
        return -1;
    xg_op op = {.kind = XG_CONV, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = stride,
                .same = same};
    op.n_weights = (size_t)cout * k * k * cin;
    op.n_bias = (size_t)cout;
    op.weights = weights(c, op.n_weights, k * k * cin);
    op.bias = op.weights ? weights(c, op.n_bias, 0) : NULL;
    if (!op.bias) {
        free(op.weights);
        return -1;
    }
    const int ho = out_size(h, k, stride);
    return emit(c, &op, act, ho, ho, cout, name);
}

static int dwconv(bctx *c, int in, int h, int ch, int k, int stride, nn_act act, const char *name)
{
    bool same;
    int x = pad_for(c, in, h, ch, k, stride, &same, name);
    if (x < 0)
        return -1;
    xg_op op = {.kind = XG_DWCONV, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = stride,
                .same = same};
    op.n_weights = (size_t)k * k * ch;
    op.n_bias = (size_t)ch;
    op.weights = weights(c, op.n_weights, k * k);
    op.bias = op.weights ? weights(c, op.n_bias, 0) : NULL;
    if (!op.bias) {
        free(op.weights);
        return -1;
    }
    const int ho = out_size(h, k, stride);
    return emit(c, &op, act, ho, ho, ch, name);
}

/* Squeeze-and-excite reduce or expand: 1x1 on (1, 1, 1, cin) with bias. */
static int se_conv(bctx *c, int in, int cin, int cout, xg_act act, float bias_add,
                   const char *name)
{
    xg_op op = {.kind = XG_CONV, .in0 = in, .in1 = -1, .kh = 1, .kw = 1, .stride = 1, .same = true,
                .act = act};
    op.n_weights = (size_t)cout * cin;
    op.n_bias = (size_t)cout;
    op.weights = weights(c, op.n_weights, cin);
    op.bias = op.weights ? weights(c, op.n_bias, 0) : NULL;
    if (!op.bias) {
        free(op.weights);
        return -1;
    }
    for (int i = 0; i < cout; i++)
        op.bias[i] += bias_add;
    const int shape[4] = {1, 1, 1, cout};
    return add(c, &op, 4, shape, name);
}

static int fc(bctx *c, int in, int cin, int units, bool bias, const char *name)
{
    xg_op op = {.kind = XG_FC, .in0 = in, .in1 = -1};
    op.n_weights = (size_t)units * cin;
    op.weights = weights(c, op.n_weights, cin);
    if (!op.weights)
        return -1;
    if (bias) {
        op.n_bias = (size_t)units;
        if (!(op.bias = weights(c, op.n_bias, 0))) {
            free(op.weights);
            return -1;
        }
    }
    const int shape[2] = {1, units};
    return add(c, &op, 2, shape, name);
}

/* An MBConv block (or the first block: no expand convolution) from input tensor x. */
static int block(bctx *c, const lat_layer *l, int x)
{
    char nm[XG_NAME_MAX];
    const char *w = l->where;
    int t = x;
    if (l->has_expand) {
        snprintf(nm, sizeof nm, "%.30s.expand", w);
        t = conv(c, x, l->in_h, l->in_c, l->mid, 1, 1, l->act, nm);
        if (t < 0)
            return -1;
    }
    snprintf(nm, sizeof nm, "%.30s.dw", w);
    t = dwconv(c, t, l->in_h, l->mid, l->kernel, l->stride, l->act, nm);
    if (t < 0)
        return -1;
    if (l->se) {
        snprintf(nm, sizeof nm, "%.30s.se.pool", w);
        const int pooled[4] = {1, 1, 1, l->mid};
        int s0 = simple(c, XG_MEAN, t, -1, 4, pooled, nm);
        snprintf(nm, sizeof nm, "%.30s.se.reduce", w);
        int s1 = s0 < 0 ? -1 : se_conv(c, s0, l->mid, l->se_mid, XG_ACT_RELU, 0.0f, nm);
        snprintf(nm, sizeof nm, "%.30s.se.expand", w);
        int s2 = s1 < 0 ? -1 : se_conv(c, s1, l->se_mid, l->mid, XG_ACT_RELU6, 3.0f, nm);
        snprintf(nm, sizeof nm, "%.30s.se", w);
        const int full[4] = {1, l->out_h, l->out_w, l->mid};
        t = s2 < 0 ? -1 : simple(c, XG_MUL, t, s2, 4, full, nm);
        if (t < 0)
            return -1;
    }
    snprintf(nm, sizeof nm, "%.30s.project", w);
    t = conv(c, t, l->out_h, l->mid, l->out_c, 1, 1, NN_ACT_NONE, nm);
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

/* The operators of keyed layer l on input tensor x; returns its output tensor. For the
 * classifier the graph's logits and output are set. */
static int layer(bctx *c, const ofa_space *s, const lat_layer *l, int x)
{
    switch (l->type) {
    case LAT_STEM:
        return conv(c, x, l->in_h, l->in_c, l->out_c, l->kernel, l->stride, l->act, "stem");
    case LAT_MBCONV:
        return block(c, l, x);
    case LAT_HEAD:
        return conv(c, x, l->in_h, l->in_c, l->out_c, 1, 1, NN_ACT_HSWISH, "head.expand");
    case LAT_POOL: {
        const int pooled[4] = {1, 1, 1, l->in_c};
        return simple(c, XG_MEAN, x, -1, 4, pooled, "head.pool");
    }
    case LAT_MIX: {
        int t = flatten(c, x);
        t = t < 0 ? -1 : fc(c, t, l->in_c, l->out_c, false, "head.mix");
        const int shape[2] = {1, l->out_c};
        return t < 0 ? -1 : simple(c, XG_HSWISH, t, -1, 2, shape, "head.mix.hswish");
    }
    case LAT_LOGITS: {
        int t = flatten(c, x);
        t = t < 0 ? -1 : fc(c, t, l->in_c, s->classes, true, "logits");
        if (t < 0)
            return -1;
        c->g->logits = t;
        const int probs[2] = {1, s->classes};
        c->g->output = simple(c, XG_SOFTMAX, t, -1, 2, probs, "probabilities");
        return c->g->output;
    }
    }
    return manta_err_set(c->err, MANTA_ERR_INVALID_ARG, "synthetic graph: unknown layer type"),
           -1;
}

static manta_status failed(bctx *c)
{
    manta_status st = c->err && c->err->code != MANTA_OK ? c->err->code : MANTA_ERR_INTERNAL;
    xgraph_free(c->g);
    return st;
}

static manta_status copy_pre(xgraph *g, const xg_preprocess *pre, manta_err *err)
{
    g->pre = *pre;
    g->pre.labels = NULL;
    g->pre.n_labels = 0;
    if (pre->n_labels <= 0)
        return MANTA_OK;
    g->pre.labels = calloc((size_t)pre->n_labels, sizeof *g->pre.labels);
    if (!g->pre.labels)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "synthetic graph: out of memory");
    for (int i = 0; i < pre->n_labels; i++) {
        const char *src = pre->labels[i] ? pre->labels[i] : "";
        g->pre.n_labels = i + 1;
        if (!(g->pre.labels[i] = malloc(strlen(src) + 1)))
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "synthetic graph: out of memory");
        strcpy(g->pre.labels[i], src);
    }
    return MANTA_OK;
}

manta_status synth_arch_graph(const ofa_space *s, const ofa_arch *a, const xg_preprocess *pre,
                              const synth_opts *o, xgraph *out, manta_err *err)
{
    return synth_arch_graph_layers(s, a, pre, o, out, NULL, NULL, err);
}

manta_status synth_arch_graph_layers(const ofa_space *s, const ofa_arch *a,
                                     const xg_preprocess *pre, const synth_opts *o, xgraph *out,
                                     int *first_op, int *n_layers, manta_err *err)
{
    memset(out, 0, sizeof *out);
    lat_layer *L = malloc(LAT_MAX_ARCH_LAYERS * sizeof *L);
    if (!L)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "synthetic graph: out of memory");
    int n = 0;
    manta_status st = lat_arch_layers(s, a, L, &n, err);
    if (st != MANTA_OK) {
        free(L);
        return st;
    }
    bctx c = {out, o, {0, 0}, err};
    manta_rng_seed(&c.rng, o->seed, 0x5e7a);
    if (pre && (st = copy_pre(out, pre, err)) != MANTA_OK) {
        free(L);
        xgraph_free(out);
        return st;
    }
    out->pre.resolution = a->r;
    out->pre.channels = s->in_channels;
    snprintf(out->description, sizeof out->description, "manta OFA sub-network of space %s",
             s->name);
    ofa_arch_to_json(s, a, out->arch_json, sizeof out->arch_json, NULL);
    int x = tensor4(&c, a->r, a->r, s->in_channels, "input");
    out->input = x;
    for (int i = 0; i < n && x >= 0; i++) {
        if (first_op)
            first_op[i] = out->n_ops;
        x = layer(&c, s, &L[i], x);
    }
    free(L);
    if (x < 0)
        return failed(&c);
    if (first_op)
        first_op[n] = out->n_ops;
    if (n_layers)
        *n_layers = n;
    return MANTA_OK;
}

/* RESHAPE x to (1, N) as the logits, then again as the output. */
static int tail(bctx *c, int x)
{
    const xg_tensor *t = &c->g->tensors[x];
    int n = 1;
    for (int i = 1; i < t->rank; i++)
        n *= t->shape[i];
    const int flat[2] = {1, n};
    int lg = x;
    if (t->rank != 2 && (lg = simple(c, XG_RESHAPE, x, -1, 2, flat, "flat")) < 0)
        return -1;
    int y = simple(c, XG_RESHAPE, lg, -1, 2, flat, "out");
    if (y < 0)
        return -1;
    c->g->logits = lg;
    c->g->output = y;
    return y;
}

manta_status synth_layer_graph(const ofa_space *s, const lat_layer *l, const synth_opts *o,
                               xgraph *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    bctx c = {out, o, {0, 0}, err};
    manta_rng_seed(&c.rng, o->seed, 0x5e7b);
    snprintf(out->description, sizeof out->description, "manta latency probe: %.100s", l->key);
    int x = l->type == LAT_LOGITS || l->type == LAT_MIX
                ? tensor4(&c, 1, 1, l->in_c, "input")
                : tensor4(&c, l->in_h, l->in_w, l->in_c, "input");
    out->input = x;
    if (x >= 0)
        x = layer(&c, s, l, x);
    if (x >= 0 && l->type != LAT_LOGITS)
        x = tail(&c, x);
    if (x < 0)
        return failed(&c);
    manta_status st = xgraph_validate(out, err);
    if (st != MANTA_OK) {
        char why[MANTA_ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        manta_err_set(err, MANTA_ERR_INVALID_ARG, "layer '%s': %s", l->key, why);
        xgraph_free(out);
        return MANTA_ERR_INVALID_ARG;
    }
    return MANTA_OK;
}

manta_status synth_empty_graph(int h, int w, int c, xgraph *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    const synth_opts o = {0, true};
    bctx b = {out, &o, {0, 0}, err};
    int x = tensor4(&b, h, w, c, "input");
    out->input = x;
    if (x < 0 || tail(&b, x) < 0)
        return failed(&b);
    return MANTA_OK;
}
