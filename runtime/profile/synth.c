#include "profile/synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "export/mbv3_graph.h"

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
