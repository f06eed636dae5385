#include "xgrand.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Builder state: the first error sticks, later calls do nothing and return -1. */
typedef struct xb {
    xgraph *g;
    manta_rng *rng;
    manta_err *err;
    manta_status st;
} xb;

static int rnd(xb *b, int lo, int hi)
{
    return lo + (int)manta_rng_below(b->rng, (uint32_t)(hi - lo + 1));
}

static int tensor(xb *b, int rank, int n, int h, int w, int c, const char *name)
{
    if (b->st != MANTA_OK)
        return -1;
    const int s4[4] = {n, h, w, c}, s2[2] = {n, c};
    const int t = xgraph_add_tensor(b->g, rank, rank == 4 ? s4 : s2, name, b->err);
    if (t < 0)
        b->st = b->err ? b->err->code : MANTA_ERR_INVALID_ARG;
    return t;
}

static const xg_tensor *T(xb *b, int t) { return &b->g->tensors[t]; }

static float *rand_array(xb *b, size_t n, double scale)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        b->st = manta_err_set(b->err, MANTA_ERR_NO_MEMORY, "xgrand: out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(scale * (2.0 * manta_rng_uniform(b->rng) - 1.0));
    return p;
}

static int add_op(xb *b, xg_op *op)
{
    if (b->st != MANTA_OK || xgraph_add_op(b->g, op, b->err) < 0) {
        if (b->st == MANTA_OK)
            b->st = MANTA_ERR_INVALID_ARG;
        free(op->weights);
        free(op->bias);
        return -1;
    }
    return op->out;
}

static xg_act rand_act(xb *b)
{
    static const xg_act acts[3] = {XG_ACT_NONE, XG_ACT_RELU, XG_ACT_RELU6};
    return acts[rnd(b, 0, 2)];
}

static int out_size(int in, int k, int s, bool same)
{
    return same ? (in + s - 1) / s : (in - k + s) / s;
}

/* Convolution (depthwise when dw) with random weights; bias when with_bias. */
static int conv(xb *b, int in, const char *name, int cout, int k, int stride, bool same, xg_act act,
                bool with_bias, bool dw)
{
    if (b->st != MANTA_OK)
        return -1;
    const xg_tensor *ti = T(b, in);
    const int cin = ti->shape[3], oh = out_size(ti->shape[1], k, stride, same),
              ow = out_size(ti->shape[2], k, stride, same);
    if (dw)
        cout = cin;
    const int out = tensor(b, 4, ti->shape[0], oh, ow, cout, name);
    xg_op op = {0};
    op.kind = dw ? XG_DWCONV : XG_CONV;
    op.in0 = in;
    op.in1 = -1;
    op.out = out;
    op.kh = op.kw = k;
    op.stride = stride;
    op.same = same;
    op.act = act;
    op.n_weights = (size_t)k * k * (size_t)cout * (size_t)(dw ? 1 : cin);
    op.weights = rand_array(b, op.n_weights, sqrt(6.0 / ((double)k * k * (dw ? 1 : cin))));
    if (with_bias) {
        op.n_bias = (size_t)cout;
        op.bias = rand_array(b, op.n_bias, 0.1);
    }
    return add_op(b, &op);
}

static int simple(xb *b, xg_kind kind, int in0, int in1, const char *name, int rank, int n, int h,
                  int w, int c, xg_act act)
{
    if (b->st != MANTA_OK)
        return -1;
    xg_op op = {0};
    op.kind = kind;
    op.in0 = in0;
    op.in1 = in1;
    op.out = tensor(b, rank, n, h, w, c, name);
    op.act = act;
    return add_op(b, &op);
}

static int pad(xb *b, int in, const char *name, int top, int bottom, int left, int right)
{
    if (b->st != MANTA_OK)
        return -1;
    const xg_tensor *ti = T(b, in);
    xg_op op = {0};
    op.kind = XG_PAD;
    op.in0 = in;
    op.in1 = -1;
    op.out = tensor(b, 4, ti->shape[0], ti->shape[1] + top + bottom, ti->shape[2] + left + right,
                    ti->shape[3], name);
    op.pad[0] = top, op.pad[1] = bottom, op.pad[2] = left, op.pad[3] = right;
    return add_op(b, &op);
}

static int fc(xb *b, int in, const char *name, int units, xg_act act, bool with_bias)
{
    if (b->st != MANTA_OK)
        return -1;
    const xg_tensor *ti = T(b, in);
    const int depth = ti->shape[1];
    xg_op op = {0};
    op.kind = XG_FC;
    op.in0 = in;
    op.in1 = -1;
    op.out = tensor(b, 2, ti->shape[0], 0, 0, units, name);
    op.act = act;
    op.n_weights = (size_t)units * depth;
    op.weights = rand_array(b, op.n_weights, sqrt(3.0 / (double)depth));
    if (with_bias) {
        op.n_bias = (size_t)units;
        op.bias = rand_array(b, op.n_bias, 0.2);
    }
    return add_op(b, &op);
}

static manta_status set_pre(xgraph *g, int resolution, int channels, int classes,
                            const char *const *names, manta_err *err)
{
    g->pre.resolution = resolution;
    g->pre.channels = channels;
    g->pre.labels = calloc((size_t)classes, sizeof *g->pre.labels);
    if (!g->pre.labels)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "xgrand: out of memory");
    g->pre.n_labels = classes;
    for (int i = 0; i < classes; i++) {
        char buf[32];
        if (!names)
            snprintf(buf, sizeof buf, "class%d", i);
        g->pre.labels[i] = strdup(names ? names[i] : buf);
        if (!g->pre.labels[i])
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "xgrand: out of memory");
    }
    return MANTA_OK;
}

static manta_status build_random(xgraph *g, manta_rng *rng, const xgr_opts *o, manta_err *err)
{
    xgr_opts d = {0};
    if (o)
        d = *o;
    memset(g, 0, sizeof *g);
    xb b = {g, rng, err, MANTA_OK};
    const int R = d.resolution ? d.resolution : rnd(&b, 5, 19);
    const int C = d.channels ? d.channels : (rnd(&b, 0, 1) ? 3 : 1);
    const int K = d.classes ? d.classes : rnd(&b, 2, 12);
    const int W = d.width ? d.width : rnd(&b, 3, 12);

    g->input = tensor(&b, 4, 1, R, R, C, "input");
    /* stem: stride 2, kernel 1/3/5, SAME or VALID */
    const int ks = 1 + 2 * rnd(&b, 0, 2);
    const bool stem_same = ks > R || rnd(&b, 0, 1);
    int x =
        conv(&b, g->input, "stem", W, ks, 2, stem_same, rand_act(&b), rnd(&b, 0, 3) != 0, false);

    /* block a: expand, explicit PAD + VALID depthwise stride 2, hswish, SE, project */
    const int E = W * rnd(&b, 2, 3), kd = 3 + 2 * rnd(&b, 0, 2);
    int e = conv(&b, x, "a.expand", E, 1, 1, false, XG_ACT_RELU6, true, false);
    int pt = rnd(&b, 0, kd - 1), pb = rnd(&b, 0, kd - 1), pl = rnd(&b, 0, kd - 1),
        pr = rnd(&b, 0, kd - 1);
    if (b.st == MANTA_OK) {
        const xg_tensor *te = T(&b, e);
        if (te->shape[1] + pt + pb < kd)
            pb = kd - te->shape[1] - pt;
        if (te->shape[2] + pl + pr < kd)
            pr = kd - te->shape[2] - pl;
    }
    int p = pad(&b, e, "a.pad", pt, pb, pl, pr);
    int dwa = conv(&b, p, "a.dw", 0, kd, 2, false, rand_act(&b), rnd(&b, 0, 1), true);
    int hs = b.st ? -1
                  : simple(&b, XG_HSWISH, dwa, -1, "a.hswish", 4, 1, T(&b, dwa)->shape[1],
                           T(&b, dwa)->shape[2], E, XG_ACT_NONE);
    int sp = b.st ? -1 : simple(&b, XG_MEAN, hs, -1, "a.se.pool", 4, 1, 1, 1, E, XG_ACT_NONE);
    int sr =
        conv(&b, sp, "a.se.reduce", E / 4 > 0 ? E / 4 : 1, 1, 1, true, XG_ACT_RELU, true, false);
    int se = conv(&b, sr, "a.se.expand", E, 1, 1, true, XG_ACT_RELU6, true, false);
    int sm = b.st ? -1
                  : simple(&b, XG_MUL, hs, se, "a.se.mul", 4, 1, T(&b, hs)->shape[1],
                           T(&b, hs)->shape[2], E, rnd(&b, 0, 3) ? XG_ACT_NONE : XG_ACT_RELU);
    x = conv(&b, sm, "a.project", W, 1, 1, rnd(&b, 0, 1), XG_ACT_NONE, true, false);

    /* block b: stride-1 residual */
    e = conv(&b, x, "b.expand", W * 2, 1, 1, true, XG_ACT_RELU, rnd(&b, 0, 1), false);
    int dwb = conv(&b, e, "b.dw", 0, 3 + 2 * rnd(&b, 0, 2), 1, true, rand_act(&b), false, true);
    hs = b.st ? -1
              : simple(&b, XG_HSWISH, dwb, -1, "b.hswish", 4, 1, T(&b, dwb)->shape[1],
                       T(&b, dwb)->shape[2], W * 2, XG_ACT_NONE);
    int pj = conv(&b, hs, "b.project", W, 1, 1, true, XG_ACT_NONE, true, false);
    x = b.st ? -1
             : simple(&b, XG_ADD, x, pj, "b.add", 4, 1, T(&b, x)->shape[1], T(&b, x)->shape[2], W,
                      rnd(&b, 0, 3) ? XG_ACT_NONE : XG_ACT_RELU6);

    /* block c: stride-2 depthwise, SAME or VALID */
    if (b.st == MANTA_OK) {
        const bool same = T(&b, x)->shape[1] < 3 || T(&b, x)->shape[2] < 3 || rnd(&b, 0, 1);
        x = conv(&b, x, "c.dw", 0, 3, 2, same, rand_act(&b), true, true);
    }

    /* head */
    const int F = W * 2;
    x = conv(&b, x, "head", F, 1, 1, false, XG_ACT_RELU6, true, false);
    const bool keep = rnd(&b, 0, 3) != 0;
    x = simple(&b, XG_MEAN, x, -1, "pool", keep ? 4 : 2, 1, 1, 1, F, XG_ACT_NONE);
    x = simple(&b, XG_RESHAPE, x, -1, "flatten", 2, 1, 0, 0, F, XG_ACT_NONE);
    g->logits = fc(&b, x, "logits", K, XG_ACT_NONE, rnd(&b, 0, 2) != 0);
    g->output = simple(&b, XG_SOFTMAX, g->logits, -1, "probs", 2, 1, 0, 0, K, XG_ACT_NONE);
    if (b.st != MANTA_OK) {
        xgraph_free(g);
        return b.st;
    }
    snprintf(g->description, sizeof g->description, "random test network %dx%dx%d, %d classes", R,
             R, C, K);
    snprintf(g->arch_json, sizeof g->arch_json, "{\"ks\":[%d,%d],\"e\":[%d],\"d\":[2],\"r\":%d}",
             ks, kd, E / W, R);
    static const float m3[3] = {0.485f, 0.456f, 0.406f}, s3[3] = {0.229f, 0.224f, 0.225f};
    for (int c = 0; c < C; c++) {
        g->pre.mean[c] = C == 3 ? m3[c] : 0.5f;
        g->pre.std[c] = C == 3 ? s3[c] : 0.25f;
    }
    manta_status st = set_pre(g, R, C, K, NULL, err);
    if (st != MANTA_OK)
        xgraph_free(g);
    return st;
}

/* Largest change of the logits between two random inputs. */
static double sensitivity(const xgraph *g, manta_rng *rng, manta_err *err)
{
    const xg_tensor *ti = &g->tensors[g->input], *tl = &g->tensors[g->logits];
    const size_t n = (size_t)ti->shape[1] * ti->shape[2] * ti->shape[3], k = (size_t)tl->shape[1];
    float *x = malloc(n * sizeof *x), *y0 = malloc(k * sizeof *y0), *y1 = malloc(k * sizeof *y1);
    double d = -1;
    if (x && y0 && y1) {
        for (size_t i = 0; i < n; i++)
            x[i] = 2.0f * manta_rng_uniform(rng) - 1.0f;
        manta_status st = xgraph_reference(g, x, y0, err);
        for (size_t i = 0; i < n; i++)
            x[i] = 2.0f * manta_rng_uniform(rng) - 1.0f;
        if (st == MANTA_OK && xgraph_reference(g, x, y1, err) == MANTA_OK) {
            d = 0;
            for (size_t i = 0; i < k; i++)
                d = fmax(d, fabs((double)y0[i] - y1[i]));
        }
    }
    free(x), free(y0), free(y1);
    return d;
}

manta_status xgr_random(xgraph *g, manta_rng *rng, const xgr_opts *o, manta_err *err)
{
    /* Rebuild networks whose output does not depend on the input (a layer of
     * ReLUs that are all off), so that comparisons on them mean something. */
    for (int attempt = 0; attempt < 50; attempt++) {
        manta_status st = build_random(g, rng, o, err);
        if (st != MANTA_OK)
            return st;
        if (sensitivity(g, rng, err) > 1e-3)
            return MANTA_OK;
        xgraph_free(g);
    }
    return manta_err_set(err, MANTA_ERR_INTERNAL, "xgrand: no live network in 50 attempts");
}

manta_status xgr_color_classifier(xgraph *g, int resolution, manta_err *err)
{
    static const char *const names[3] = {"red", "green", "blue"};
    memset(g, 0, sizeof *g);
    manta_rng rng;
    manta_rng_seed(&rng, 1, 1);
    xb b = {g, &rng, err, MANTA_OK};
    const int R = resolution;
    g->input = tensor(&b, 4, 1, R, R, 3, "input");
    xg_op op = {0};
    op.kind = XG_CONV;
    op.in0 = g->input;
    op.in1 = -1;
    op.out = tensor(&b, 4, 1, R, R, 3, "identity");
    op.kh = op.kw = op.stride = 1;
    op.same = true;
    op.act = XG_ACT_RELU;
    op.n_weights = 9;
    op.weights = calloc(9, sizeof(float));
    if (op.weights)
        op.weights[0] = op.weights[4] = op.weights[8] = 1.0f;
    int x = add_op(&b, &op);
    x = simple(&b, XG_MEAN, x, -1, "pool", 4, 1, 1, 1, 3, XG_ACT_NONE);
    x = simple(&b, XG_RESHAPE, x, -1, "flatten", 2, 1, 0, 0, 3, XG_ACT_NONE);
    memset(&op, 0, sizeof op);
    op.kind = XG_FC;
    op.in0 = x;
    op.in1 = -1;
    op.out = g->logits = tensor(&b, 2, 1, 0, 0, 3, "logits");
    op.n_weights = 9;
    op.weights = calloc(9, sizeof(float));
    op.n_bias = 3;
    op.bias = calloc(3, sizeof(float));
    if (op.weights)
        op.weights[0] = op.weights[4] = op.weights[8] = 8.0f;
    add_op(&b, &op);
    g->output = simple(&b, XG_SOFTMAX, g->logits, -1, "probs", 2, 1, 0, 0, 3, XG_ACT_NONE);
    if (b.st == MANTA_OK && (!g->ops[0].weights || !g->ops[3].weights || !g->ops[3].bias))
        b.st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "xgrand: out of memory");
    if (b.st == MANTA_OK)
        b.st = set_pre(g, R, 3, 3, names, err);
    if (b.st != MANTA_OK) {
        xgraph_free(g);
        return b.st;
    }
    for (int c = 0; c < 3; c++)
        g->pre.std[c] = 1.0f;
    snprintf(g->description, sizeof g->description, "colour classifier %dx%d", R, R);
    return MANTA_OK;
}

/* ---- stereo ---- */

static int leaky(xb *b, int in, const char *name)
{
    if (b->st != MANTA_OK)
        return -1;
    const xg_tensor *t = T(b, in);
    xg_op op = {0};
    op.kind = XG_LEAKY_RELU;
    op.in0 = in;
    op.in1 = -1;
    op.alpha = 0.1f;
    op.out = tensor(b, 4, t->shape[0], t->shape[1], t->shape[2], t->shape[3], name);
    return add_op(b, &op);
}

static int concat(xb *b, int n, const int *ins, const char *name)
{
    if (b->st != MANTA_OK)
        return -1;
    xg_op op = {0};
    int c = 0;
    for (int i = 0; i < n; i++)
        c += T(b, ins[i])->shape[3];
    const xg_tensor *t = T(b, ins[0]);
    op.kind = XG_CONCAT;
    op.in0 = ins[0];
    op.in1 = -1;
    op.n_ins = n;
    memcpy(op.ins, ins, (size_t)n * sizeof *ins);
    op.out = tensor(b, 4, t->shape[0], t->shape[1], t->shape[2], c, name);
    return add_op(b, &op);
}

static manta_status build_stereo(xgraph *g, manta_rng *rng, const xgr_stereo_opts *o,
                                 manta_err *err)
{
    xgr_stereo_opts d = {0};
    if (o)
        d = *o;
    memset(g, 0, sizeof *g);
    xb b = {g, rng, err, MANTA_OK};
    const int H = d.height ? d.height : 2 * rnd(&b, 2, 7);
    const int W = d.width ? d.width : 2 * rnd(&b, 2, 7);
    const int F = d.features ? d.features : rnd(&b, 2, 9);
    const int MD = d.max_disp ? d.max_disp : rnd(&b, 1, 7);
    const int CS = d.corr_stride ? d.corr_stride : rnd(&b, 1, 2);
    const int left = tensor(&b, 4, 1, H, W, 3, "left"), right = tensor(&b, 4, 1, H, W, 3, "right");
    /* the encoder, shared: the right view's convolution is a copy of the left one's */
    const int fl = conv(&b, left, "enc.left", F, 3, 2, true, XG_ACT_NONE, true, false);
    int fr = -1;
    if (b.st == MANTA_OK) {
        xg_op op = g->ops[g->n_ops - 1];
        op.in0 = right;
        op.out = tensor(&b, 4, 1, T(&b, fl)->shape[1], T(&b, fl)->shape[2], F, "enc.right");
        op.weights = malloc(op.n_weights * sizeof *op.weights);
        op.bias = malloc(op.n_bias * sizeof *op.bias);
        if (!op.weights || !op.bias) {
            free(op.weights), free(op.bias);
            b.st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "xgrand: out of memory");
        } else {
            memcpy(op.weights, g->ops[g->n_ops - 1].weights, op.n_weights * sizeof *op.weights);
            memcpy(op.bias, g->ops[g->n_ops - 1].bias, op.n_bias * sizeof *op.bias);
            fr = add_op(&b, &op);
        }
    }
    const int al = leaky(&b, fl, "enc.left.act"), ar = leaky(&b, fr, "enc.right.act");
    int corr = -1;
    if (b.st == MANTA_OK && (corr = xgraph_add_correlation(g, al, ar, MD, CS, "corr", err)) < 0)
        b.st = err ? err->code : MANTA_ERR_INVALID_ARG;
    const int redir =
        leaky(&b, conv(&b, al, "redir", rnd(&b, 1, 4), 1, 1, true, XG_ACT_NONE, true, false),
              "redir.act");
    const int cat0[2] = {corr, redir};
    const int ccat = concat(&b, 2, cat0, "corr.cat");
    const int C1 = rnd(&b, 2, 8);
    const int c1 =
        leaky(&b, conv(&b, ccat, "conv1", C1, 3, 1, true, XG_ACT_NONE, true, false), "conv1.act");
    const int pr0 = conv(&b, c1, "pred0", 1, 3, 1, true, XG_ACT_NONE, true, false);
    /* the decoder level: transposed convolution to H x W */
    int up = -1;
    if (b.st == MANTA_OK) {
        const bool k4 = rnd(&b, 0, 1);
        const int C2 = rnd(&b, 1, 6), k = k4 ? 4 : 2;
        xg_op op = {0};
        op.kind = XG_TCONV;
        op.in0 = c1;
        op.in1 = -1;
        op.kh = op.kw = k;
        op.stride = 2;
        op.same = k4;
        op.out = tensor(&b, 4, 1, H, W, C2, "up");
        op.n_weights = (size_t)C2 * k * k * C1;
        op.weights = rand_array(&b, op.n_weights, sqrt(6.0 / ((double)C1 * k * k / 4)));
        if (k4) {
            op.n_bias = (size_t)C2;
            op.bias = rand_array(&b, op.n_bias, 0.1);
        }
        up = add_op(&b, &op);
    }
    const int upa = leaky(&b, up, "up.act");
    int upp = -1, sl = -1;
    if (b.st == MANTA_OK) {
        xg_op op = {0};
        op.kind = XG_RESIZE;
        op.in0 = pr0;
        op.in1 = -1;
        op.out = tensor(&b, 4, 1, H, W, 1, "pred0.up");
        upp = add_op(&b, &op);
    }
    if (b.st == MANTA_OK) {
        xg_op op = {0};
        op.kind = XG_SLICE;
        op.in0 = left;
        op.in1 = -1;
        const int size[4] = {1, H, W, 1};
        memcpy(op.size, size, sizeof size);
        op.out = tensor(&b, 4, 1, H, W, 1, "left.c0");
        sl = add_op(&b, &op);
    }
    const int cat1[3] = {upa, upp, sl};
    const int ucat = concat(&b, 3, cat1, "up.cat");
    const int pr1 = conv(&b, ucat, "pred1", 1, 3, 1, true, XG_ACT_NONE, true, false);
    if (b.st != MANTA_OK) {
        xgraph_free(g);
        return b.st;
    }
    g->n_inputs = 2;
    g->inputs[0] = left;
    g->inputs[1] = right;
    g->n_outputs = 2;
    g->outputs[0] = pr0;
    g->outputs[1] = pr1;
    g->input = g->logits = g->output = -1;
    snprintf(g->description, sizeof g->description,
             "random stereo network %dx%d, %d features, max_disp %d stride %d", H, W, F, MD, CS);
    return MANTA_OK;
}

manta_status xgr_stereo(xgraph *g, manta_rng *rng, const xgr_stereo_opts *o, manta_err *err)
{
    return build_stereo(g, rng, o, err);
}
