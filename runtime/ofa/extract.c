#include "ofa/extract.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ofa/supernet_internal.h"

/* What the extraction reads: host copies of the parameters and statistics. */
typedef struct ctx {
    const ofa_supernet *n;
    const float *p, *st;
    xgraph *g;
    manta_err *err;
} ctx;

static float *alloc_floats(ctx *c, size_t n)
{
    float *p = calloc(n ? n : 1, sizeof *p);
    if (!p)
        manta_err_set(c->err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    return p;
}

static int tensor4(ctx *c, int h, int w, int ch, const char *name)
{
    const int shape[4] = {1, h, w, ch};
    return xgraph_add_tensor(c->g, 4, shape, name, c->err);
}

/* Per-channel BN scale (gamma / sqrt(var + eps)) and shift (beta - mean * scale). */
static void bn_fold(const ctx *c, const bn_p *b, int ch, float *scale, float *shift)
{
    for (int i = 0; i < ch; i++) {
        float s = c->p[b->gamma + (size_t)i] / sqrtf(c->st[b->rvar + (size_t)i] + BN_EPS);
        scale[i] = s;
        shift[i] = c->p[b->beta + (size_t)i] - c->st[b->rmean + (size_t)i] * s;
    }
}

static xg_act fused(nn_act a) { return a == NN_ACT_RELU ? XG_ACT_RELU : XG_ACT_NONE; }

/* Append `op` and, when the activation cannot be fused, an HARD_SWISH after it.
 * Returns the tensor index of the final output, -1 on failure. */
static int emit(ctx *c, xg_op *op, nn_act act, int h, int w, int ch, const char *name)
{
    op->out = tensor4(c, h, w, ch, name);
    op->act = fused(act);
    if (op->out < 0 || xgraph_add_op(c->g, op, c->err) < 0) {
        free(op->weights);
        free(op->bias);
        return -1;
    }
    if (act != NN_ACT_HSWISH)
        return op->out;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.38s.hswish", name);
    xg_op hs = {.kind = XG_HSWISH, .in0 = op->out, .in1 = -1};
    hs.out = tensor4(c, h, w, ch, nm);
    if (hs.out < 0 || xgraph_add_op(c->g, &hs, c->err) < 0)
        return -1;
    return hs.out;
}

/* Padding of a k x k, stride-s layer on an h x h input: SAME where it equals
 * the training padding (k/2 each side), else an explicit PAD op. Returns the
 * (possibly padded) input tensor and sets *same. */
static int pad_for(ctx *c, int in, int h, int ch, int k, int stride, bool *same, const char *name)
{
    *same = stride == 1 || h % 2 == 1 || k == 1;
    if (*same)
        return in;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "%.40s.pad", name);
    xg_op pad = {.kind = XG_PAD, .in0 = in, .in1 = -1, .pad = {k / 2, k / 2, k / 2, k / 2}};
    pad.out = tensor4(c, h + 2 * (k / 2), h + 2 * (k / 2), ch, nm);
    if (pad.out < 0 || xgraph_add_op(c->g, &pad, c->err) < 0)
        return -1;
    return pad.out;
}

/* A dense convolution of `cout` rows of stride `ld` from weights at `w_off`
 * (NCHW [o][i][ky][kx]), scaled per input by `in_scale` (NULL: 1), followed by
 * batch norm `bn` (NULL: bias 0) and `act`. */
static int conv(ctx *c, int in, int h, int cin, int cout, int k, int stride, size_t w_off,
                size_t ld, float in_scale, const bn_p *bn, nn_act act, const char *name)
{
    bool same;
    int x = pad_for(c, in, h, cin, k, stride, &same, name);
    if (x < 0)
        return -1;
    xg_op op = {.kind = XG_CONV, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = stride,
                .same = same};
    op.n_weights = (size_t)cout * k * k * cin;
    op.n_bias = (size_t)cout;
    op.weights = alloc_floats(c, op.n_weights);
    op.bias = alloc_floats(c, op.n_bias);
    float *scale = alloc_floats(c, (size_t)cout), *shift = alloc_floats(c, (size_t)cout);
    if (!op.weights || !op.bias || !scale || !shift) {
        free(op.weights), free(op.bias), free(scale), free(shift);
        return -1;
    }
    for (int o = 0; o < cout; o++)
        scale[o] = 1.0f;
    if (bn)
        bn_fold(c, bn, cout, scale, shift);
    for (int o = 0; o < cout; o++) {
        for (int i = 0; i < cin; i++)
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++)
                    op.weights[(((size_t)o * k + ky) * k + kx) * cin + i] =
                        c->p[w_off + (size_t)o * ld + ((size_t)i * k + ky) * k + kx] * scale[o] *
                        in_scale;
        op.bias[o] = shift[o];
    }
    free(scale), free(shift);
    int ho = ofa_out_size(h, k, stride);
    return emit(c, &op, act, ho, ho, cout, name);
}

/* Depthwise k x k over `ch` channels with weights `w` (C, k, k) on the host. */
static int dwconv(ctx *c, int in, int h, int ch, int k, int stride, const float *w, const bn_p *bn,
                  nn_act act, const char *name)
{
    bool same;
    int x = pad_for(c, in, h, ch, k, stride, &same, name);
    if (x < 0)
        return -1;
    xg_op op = {.kind = XG_DWCONV, .in0 = x, .in1 = -1, .kh = k, .kw = k, .stride = stride,
                .same = same};
    op.n_weights = (size_t)k * k * ch;
    op.n_bias = (size_t)ch;
    op.weights = alloc_floats(c, op.n_weights);
    op.bias = alloc_floats(c, op.n_bias);
    float *scale = alloc_floats(c, (size_t)ch), *shift = alloc_floats(c, (size_t)ch);
    if (!op.weights || !op.bias || !scale || !shift) {
        free(op.weights), free(op.bias), free(scale), free(shift);
        return -1;
    }
    bn_fold(c, bn, ch, scale, shift);
    for (int i = 0; i < ch; i++) {
        for (int t = 0; t < k * k; t++)
            op.weights[(size_t)t * ch + i] = w[(size_t)i * k * k + t] * scale[i];
        op.bias[i] = shift[i];
    }
    free(scale), free(shift);
    int ho = ofa_out_size(h, k, stride);
    return emit(c, &op, act, ho, ho, ch, name);
}

/* The active depthwise kernel of a slot: the stored largest one, or its
 * transformed centre (OFA's chain K -> ... -> k), for `ch` channels. */
static float *active_kernel(ctx *c, const slot_p *p, int ki, int ch)
{
    const ofa_space *s = &c->n->s;
    const int kmax = s->ks[s->n_ks - 1];
    float *cur = alloc_floats(c, (size_t)ch * kmax * kmax);
    if (!cur)
        return NULL;
    memcpy(cur, c->p + p->dw_w, (size_t)ch * kmax * kmax * sizeof *cur);
    for (int i = s->n_ks - 2; i >= ki; i--) {
        const int big = s->ks[i + 1], k = s->ks[i], kk = k * k, off = big / 2 - k / 2;
        const float *m = c->p + p->kmat[i];
        float *next = alloc_floats(c, (size_t)ch * kk);
        if (!next) {
            free(cur);
            return NULL;
        }
        for (int q = 0; q < ch; q++)
            for (int a = 0; a < kk; a++) {
                float sum = 0;
                for (int b = 0; b < kk; b++)
                    sum += cur[(size_t)q * big * big + (size_t)(off + b / k) * big + off + b % k] *
                           m[a * kk + b];
                next[(size_t)q * kk + a] = sum;
            }
        free(cur);
        cur = next;
    }
    return cur;
}

/* SE reduce or expand as a 1x1 convolution on (1,1,1,cin) with bias. */
static int se_conv(ctx *c, int in, int cin, int cout, size_t w, size_t ld, size_t b, float bias_add,
                   xg_act act, const char *name)
{
    xg_op op = {.kind = XG_CONV, .in0 = in, .in1 = -1, .kh = 1, .kw = 1, .stride = 1, .same = true,
                .act = act};
    op.n_weights = (size_t)cout * cin;
    op.n_bias = (size_t)cout;
    op.weights = alloc_floats(c, op.n_weights);
    op.bias = alloc_floats(c, op.n_bias);
    if (!op.weights || !op.bias) {
        free(op.weights), free(op.bias);
        return -1;
    }
    for (int o = 0; o < cout; o++) {
        for (int i = 0; i < cin; i++)
            op.weights[(size_t)o * cin + i] = c->p[w + (size_t)o * ld + (size_t)i];
        op.bias[o] = c->p[b + (size_t)o] + bias_add;
    }
    op.out = tensor4(c, 1, 1, cout, name);
    if (op.out < 0 || xgraph_add_op(c->g, &op, c->err) < 0) {
        free(op.weights), free(op.bias);
        return -1;
    }
    return op.out;
}

static int simple(ctx *c, xg_kind kind, int in0, int in1, int rank, const int *shape,
                  const char *name)
{
    xg_op op = {.kind = kind, .in0 = in0, .in1 = in1};
    op.out = xgraph_add_tensor(c->g, rank, shape, name, c->err);
    if (op.out < 0 || xgraph_add_op(c->g, &op, c->err) < 0)
        return -1;
    return op.out;
}

static int block(ctx *c, const slot_a *a, int x)
{
    const ofa_supernet *n = c->n;
    const slot_p *p = &n->slot[a->idx];
    const int u = a->idx / n->s.max_depth + 1, j = a->idx % n->s.max_depth + 1;
    char nm[XG_NAME_MAX];
    snprintf(nm, sizeof nm, "u%d.b%d.expand", u, j);
    int t = conv(c, x, a->h, p->in_c, a->mid, 1, 1, p->e_w, (size_t)p->in_c, 1.0f, &p->e_bn, p->act, nm);
    float *kw = t < 0 ? NULL : active_kernel(c, p, a->ki, a->mid);
    if (!kw)
        return -1;
    snprintf(nm, sizeof nm, "u%d.b%d.dw", u, j);
    t = dwconv(c, t, a->h, a->mid, a->k, p->stride, kw, &p->d_bn, p->act, nm);
    free(kw);
    if (t < 0)
        return -1;
    float proj_scale = 1.0f;
    if (p->se) {
        snprintf(nm, sizeof nm, "u%d.b%d.se.pool", u, j);
        const int pooled[4] = {1, 1, 1, a->mid};
        int s0 = simple(c, XG_MEAN, t, -1, 4, pooled, nm);
        snprintf(nm, sizeof nm, "u%d.b%d.se.reduce", u, j);
        int s1 = s0 < 0 ? -1 : se_conv(c, s0, a->mid, a->se, p->se_r_w, (size_t)p->mid_max, p->se_r_b, 0.0f, XG_ACT_RELU, nm);
        snprintf(nm, sizeof nm, "u%d.b%d.se.expand", u, j);
        int s2 = s1 < 0 ? -1 : se_conv(c, s1, a->se, a->mid, p->se_e_w, (size_t)p->se_max, p->se_e_b, 3.0f, XG_ACT_RELU6, nm);
        snprintf(nm, sizeof nm, "u%d.b%d.se", u, j);
        const int full[4] = {1, a->ho, a->wo, a->mid};
        t = s2 < 0 ? -1 : simple(c, XG_MUL, t, s2, 4, full, nm);
        proj_scale = 1.0f / 6.0f; /* h_sigmoid's division, moved into the projection */
        if (t < 0)
            return -1;
    }
    snprintf(nm, sizeof nm, "u%d.b%d.project", u, j);
    t = conv(c, t, a->ho, a->mid, p->width, 1, 1, p->p_w, (size_t)p->mid_max, proj_scale, &p->p_bn,
             NN_ACT_NONE, nm);
    if (t < 0 || !a->residual)
        return t;
    snprintf(nm, sizeof nm, "u%d.b%d.add", u, j);
    const int shape[4] = {1, a->ho, a->wo, p->width};
    return simple(c, XG_ADD, x, t, 4, shape, nm);
}

static int build(ctx *c)
{
    const ofa_supernet *n = c->n;
    const ofa_space *s = &n->s;
    const int r = n->h0;
    int x = tensor4(c, r, r, s->in_channels, "input");
    if (x < 0)
        return -1;
    c->g->input = x;
    int t = conv(c, x, r, s->in_channels, s->stem_width, s->stem_kernel, n->stem_stride, n->stem_w,
                 (size_t)s->in_channels * s->stem_kernel * s->stem_kernel, 1.0f, &n->stem_bn,
                 s->stem_act, "stem");
    if (t < 0)
        return -1;
    float *fk = alloc_floats(c, (size_t)s->stem_width * 9);
    if (!fk)
        return -1;
    memcpy(fk, c->p + n->first_dw, (size_t)s->stem_width * 9 * sizeof *fk);
    int f = dwconv(c, t, n->hs, s->stem_width, 3, 1, fk, &n->first_dbn, s->first_act, "first.dw");
    free(fk);
    f = f < 0 ? -1 : conv(c, f, n->hs, s->stem_width, s->first_width, 1, 1, n->first_p,
                          (size_t)s->stem_width, 1.0f, &n->first_pbn, NN_ACT_NONE, "first.project");
    if (f >= 0 && n->first_residual) {
        const int shape[4] = {1, n->hs, n->hs, s->first_width};
        f = simple(c, XG_ADD, t, f, 4, shape, "first.add");
    }
    for (int i = 0; i < n->n_active && f >= 0; i++)
        f = block(c, &n->active[i], f);
    if (f < 0)
        return -1;
    t = conv(c, f, n->last_h, n->last_c, s->head_expand, 1, 1, n->head_w, (size_t)n->last_c, 1.0f,
             &n->head_bn, NN_ACT_HSWISH, "head.expand");
    const int pooled[4] = {1, 1, 1, s->head_expand}, flat[2] = {1, s->head_expand};
    t = t < 0 ? -1 : simple(c, XG_MEAN, t, -1, 4, pooled, "head.pool");
    t = t < 0 ? -1 : simple(c, XG_RESHAPE, t, -1, 2, flat, "head.flatten");
    if (t < 0)
        return -1;
    int feat = s->head_expand;
    size_t fc_w = n->cls_w;
    for (int layer = s->head_mix > 0 ? 0 : 1; layer < 2; layer++) {
        const int units = layer == 0 ? s->head_mix : s->classes;
        xg_op op = {.kind = XG_FC, .in0 = t, .in1 = -1};
        op.n_weights = (size_t)units * feat;
        op.weights = alloc_floats(c, op.n_weights);
        if (!op.weights)
            return -1;
        memcpy(op.weights, c->p + (layer == 0 ? n->mix_w : fc_w), op.n_weights * sizeof(float));
        if (layer == 1) {
            op.n_bias = (size_t)units;
            if (!(op.bias = alloc_floats(c, op.n_bias))) {
                free(op.weights);
                return -1;
            }
            memcpy(op.bias, c->p + n->cls_b, op.n_bias * sizeof(float));
        }
        const int shape[2] = {1, units};
        op.out = xgraph_add_tensor(c->g, 2, shape, layer == 0 ? "head.mix" : "logits", c->err);
        if (op.out < 0 || xgraph_add_op(c->g, &op, c->err) < 0) {
            free(op.weights), free(op.bias);
            return -1;
        }
        t = op.out;
        if (layer == 0 && (t = simple(c, XG_HSWISH, t, -1, 2, shape, "head.mix.hswish")) < 0)
            return -1;
        feat = units;
    }
    c->g->logits = t;
    const int probs[2] = {1, s->classes};
    c->g->output = simple(c, XG_SOFTMAX, t, -1, 2, probs, "probabilities");
    return c->g->output;
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
    if (rc == MANTA_OK && (rc = mcl_read(n->d, mslab_view(&n->params, 0), p, n->n_params)) != MANTA_OK)
        manta_err_set(err, rc, "%s", mcl_err(n->d)->msg);
    if (rc == MANTA_OK && (rc = mcl_read(n->d, mslab_view(&n->state, 0), st, n->n_state)) != MANTA_OK)
        manta_err_set(err, rc, "%s", mcl_err(n->d)->msg);
    if (rc == MANTA_OK) {
        ctx c = {n, p, st, out, err};
        out->pre = *pre;
        out->pre.resolution = n->h0;
        out->pre.channels = n->s.in_channels;
        out->pre.labels = NULL;
        out->pre.n_labels = 0;
        if (pre->n_labels > 0) {
            out->pre.labels = calloc((size_t)pre->n_labels, sizeof *out->pre.labels);
            if (!out->pre.labels)
                rc = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
            for (int i = 0; i < pre->n_labels && rc == MANTA_OK; i++) {
                out->pre.labels[i] = malloc(strlen(pre->labels[i]) + 1);
                if (!out->pre.labels[i])
                    rc = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
                else
                    strcpy(out->pre.labels[i], pre->labels[i]);
                out->pre.n_labels = i + 1;
            }
        }
        if (rc == MANTA_OK) {
            snprintf(out->description, sizeof out->description, "manta OFA sub-network of space %s",
                     n->s.name);
            ofa_arch_to_json(&n->s, &n->arch, out->arch_json, sizeof out->arch_json, NULL);
            if (build(&c) < 0)
                rc = err && err->code != MANTA_OK ? err->code : MANTA_ERR_INTERNAL;
        }
    }
    free(p);
    free(st);
    if (rc != MANTA_OK)
        xgraph_free(out);
    return rc;
}
