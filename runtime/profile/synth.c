#include "profile/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "export/mbv3_graph.h"
#include "export/stereo_graph.h"

/* Random values (synth_opts): weights uniform in +-sqrt(3 / fan-in), biases in +-0.1, drawn
 * in graph order from one stream. */
static manta_status random_fill(void *ctx, const mbv3_request *r, manta_err *err)
{
    (void)err;
    manta_rng *rng = ctx;
    const int fan_in = r->kind == XG_DWCONV ? r->k * r->k : r->k * r->k * r->cin;
    manta_rng_fill_uniform(rng, r->weights, r->n_weights, sqrtf(3.0f / (float)fan_in));
    if (r->bias)
        manta_rng_fill_uniform(rng, r->bias, r->n_bias, 0.1f);
    return MANTA_OK;
}

/* The source of @p o: random values from @p rng (seeded here with @p stream), or zeros. */
static mbv3_source source(const synth_opts *o, manta_rng *rng, uint64_t stream)
{
    manta_rng_seed(rng, o->seed, stream);
    return (mbv3_source){o->zeros ? NULL : random_fill, rng};
}

/* A keyed layer as the graph builder's layer. */
static void graph_layer(const lat_layer *k, mbv3_layer *l)
{
    static const mbv3_layer_type types[] = {
        [LAT_STEM] = MBV3_STEM, [LAT_MBCONV] = MBV3_BLOCK, [LAT_HEAD] = MBV3_HEAD,
        [LAT_POOL] = MBV3_POOL, [LAT_MIX] = MBV3_MIX,      [LAT_LOGITS] = MBV3_CLASSIFIER};
    *l = (mbv3_layer){.type = types[k->type],
                      .slot = -1,
                      .in_h = k->in_h,
                      .in_w = k->in_w,
                      .in_c = k->in_c,
                      .out_h = k->out_h,
                      .out_w = k->out_w,
                      .out_c = k->out_c,
                      .mid = k->mid,
                      .kernel = k->kernel,
                      .stride = k->stride,
                      .has_expand = k->has_expand,
                      .idskip = k->idskip,
                      .se = k->se,
                      .se_mid = k->se_mid,
                      .act = k->act};
    snprintf(l->where, sizeof l->where, "%s", k->where);
}

manta_status prof_synth_arch_graph(const ofa_space *s, const ofa_arch *a, const xg_preprocess *pre,
                                   const synth_opts *o, xgraph *out, manta_err *err)
{
    return prof_synth_arch_graph_layers(s, a, pre, o, out, NULL, NULL, err);
}

manta_status prof_synth_arch_graph_layers(const ofa_space *s, const ofa_arch *a,
                                          const xg_preprocess *pre, const synth_opts *o,
                                          xgraph *out, int *first_op, int *n_layers, manta_err *err)
{
    manta_rng rng;
    const mbv3_source src = source(o, &rng, 0x5e7a);
    return mbv3_arch_graph(s, a, pre, &src, out, first_op, n_layers, err);
}

static manta_status failed(xgraph *g, manta_err *err)
{
    manta_status st = err && err->code != MANTA_OK ? err->code : MANTA_ERR_INTERNAL;
    xgraph_free(g);
    return st;
}

static int reshape(xgraph *g, int x, const int *flat, const char *name, manta_err *err)
{
    xg_op op = {.kind = XG_RESHAPE, .in0 = x, .in1 = -1};
    op.out = xgraph_add_tensor(g, 2, flat, name, err);
    if (op.out < 0 || xgraph_add_op(g, &op, err) < 0)
        return -1;
    return op.out;
}

/* RESHAPE x to (1, N) as the logits, then again as the output. */
static int tail(xgraph *g, int x, manta_err *err)
{
    const xg_tensor *t = &g->tensors[x];
    int n = 1;
    for (int i = 1; i < t->rank; i++)
        n *= t->shape[i];
    const int flat[2] = {1, n};
    int lg = x;
    if (t->rank != 2 && (lg = reshape(g, x, flat, "flat", err)) < 0)
        return -1;
    int y = reshape(g, lg, flat, "out", err);
    if (y < 0)
        return -1;
    g->logits = lg;
    g->output = y;
    return y;
}

static int input(xgraph *g, int h, int w, int c, manta_err *err)
{
    const int shape[4] = {1, h, w, c};
    return g->input = xgraph_add_tensor(g, 4, shape, "input", err);
}

manta_status prof_synth_layer_graph(const ofa_space *s, const lat_layer *l, const synth_opts *o,
                                    xgraph *out, manta_err *err)
{
    (void)s;
    memset(out, 0, sizeof *out);
    if ((unsigned)l->type > LAT_LOGITS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "layer '%s': unknown layer type", l->key);
    manta_rng rng;
    const mbv3_source src = source(o, &rng, 0x5e7b);
    mbv3_layer gl;
    graph_layer(l, &gl);
    snprintf(out->description, sizeof out->description, "manta latency probe: %.100s", l->key);
    int x = l->type == LAT_LOGITS || l->type == LAT_MIX
                ? input(out, 1, 1, l->in_c, err)
                : input(out, l->in_h, l->in_w, l->in_c, err);
    if (x >= 0)
        x = mbv3_graph_layer(out, &gl, x, &src, err);
    if (x >= 0 && l->type != LAT_LOGITS)
        x = tail(out, x, err);
    if (x < 0)
        return failed(out, err);
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

manta_status prof_synth_empty_graph(int h, int w, int c, xgraph *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    int x = input(out, h, w, c, err);
    if (x < 0 || tail(out, x, err) < 0)
        return failed(out, err);
    return MANTA_OK;
}

/* ---- stereo --------------------------------------------------------------------------- */

/* The stream of a layer's values: its name without the right view's "r.", and the part. */
static uint64_t name_stream(const char *where, int part)
{
    if (!strncmp(where, "r.", 2))
        where += 2;
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)where; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h ^ (uint64_t)part;
}

typedef struct stereo_fill_ctx {
    uint64_t seed;
} stereo_fill_ctx;

static manta_status stereo_enc_fill(void *ctx, const mbv3_request *r, manta_err *err)
{
    const stereo_fill_ctx *c = ctx;
    manta_rng rng;
    manta_rng_seed(&rng, c->seed, name_stream(r->layer->where, (int)r->part));
    return random_fill(&rng, r, err);
}

static manta_status stereo_dec_fill(void *ctx, const sgraph_request *r, manta_err *err)
{
    (void)err;
    const stereo_fill_ctx *c = ctx;
    manta_rng rng;
    manta_rng_seed(&rng, c->seed, name_stream(r->layer->where, 100));
    manta_rng_fill_uniform(&rng, r->weights, r->n_weights,
                           sqrtf(3.0f / (float)(r->k * r->k * r->cin)));
    manta_rng_fill_uniform(&rng, r->bias, r->n_bias, 0.1f);
    return MANTA_OK;
}

manta_status prof_synth_stereo_graph(const stereo_space *s, const ofa_arch *a, const synth_opts *o,
                                     xgraph *out, int *first_op, int *n, manta_err *err)
{
    stereo_fill_ctx c = {o->seed};
    const sgraph_source src = {o->zeros ? NULL : stereo_enc_fill, o->zeros ? NULL : stereo_dec_fill,
                               &c};
    return sgraph_arch_graph(s, a, s->crop_h, s->crop_w, &src, out, first_op, n, err);
}

/* A keyed stereo layer as the builder's layer (-1: not a stereo graph layer). */
static int to_sgraph(const lat_layer *k, sgraph_layer *l)
{
    static const int types[] = {[LAT_STEM] = SGRAPH_STEM,
                                [LAT_MBCONV] = SGRAPH_BLOCK,
                                [LAT_HEAD] = -1,
                                [LAT_POOL] = -1,
                                [LAT_MIX] = -1,
                                [LAT_LOGITS] = -1,
                                [LAT_CORR] = SGRAPH_CORR,
                                [LAT_REDIR] = SGRAPH_REDIR,
                                [LAT_CONCAT] = SGRAPH_CONCAT,
                                [LAT_DECONV] = SGRAPH_DECONV,
                                [LAT_RESIZE] = SGRAPH_UPSAMPLE,
                                [LAT_DEC_CONV] = SGRAPH_CONV,
                                [LAT_PRED] = SGRAPH_PRED};
    if ((unsigned)k->type > LAT_PRED || types[k->type] < 0 || k->n_in < 1 || k->n_in > 3)
        return -1;
    memset(l, 0, sizeof *l);
    l->type = (sgraph_type)types[k->type];
    snprintf(l->where, sizeof l->where, "%s", k->where);
    l->level = -1;
    l->in_h = k->in_h, l->in_w = k->in_w, l->in_c = k->in_c;
    l->out_h = k->out_h, l->out_w = k->out_w, l->out_c = k->out_c;
    l->n_in = k->n_in;
    for (int i = 0; i < k->n_in; i++)
        l->in_cs[i] = k->in_cs[i];
    l->kernel = k->kernel;
    l->corr_stride = k->corr_stride;
    l->corr_disp = (k->out_c - 1) * k->corr_stride;
    if (k->type == LAT_STEM || k->type == LAT_MBCONV)
        graph_layer(k, &l->enc);
    return 0;
}

manta_status prof_synth_stereo_layer_graph(const lat_layer *l, const synth_opts *o, xgraph *out,
                                           manta_err *err)
{
    memset(out, 0, sizeof *out);
    sgraph_layer g;
    if (to_sgraph(l, &g) < 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "layer '%s': not a stereo layer", l->key);
    snprintf(out->description, sizeof out->description, "manta latency probe: %.100s", l->key);
    stereo_fill_ctx c = {o->seed};
    const sgraph_source src = {o->zeros ? NULL : stereo_enc_fill, o->zeros ? NULL : stereo_dec_fill,
                               &c};
    int in[3], x = 0;
    for (int i = 0; i < g.n_in && x >= 0; i++) {
        const int c_i = g.type == SGRAPH_CORR ? g.in_c : g.in_cs[i];
        const int shape[4] = {1, g.in_h, g.in_w, c_i};
        char nm[16];
        snprintf(nm, sizeof nm, "input%d", i);
        x = in[i] = xgraph_add_tensor(out, 4, shape, nm, err);
        out->inputs[i] = x;
    }
    out->n_inputs = g.n_in;
    if (x >= 0)
        x = sgraph_layer_ops(out, &g, in, &src, err);
    if (x < 0)
        return failed(out, err);
    out->n_outputs = 1;
    out->outputs[0] = x;
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
