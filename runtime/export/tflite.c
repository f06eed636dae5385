/* The .tflite writer: an xgraph becomes tensors, buffers, operators and
 * metadata built back to front with the FlatBuffers builder; the engine then
 * plans the written file and the plan is patched into its metadata buffer. */
#include "export/tflite.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/le.h"
#include "core/rng.h"
#include "core/strbuf.h"
#include "engine/engine.h"
#include "export/flatbuf.h"

enum { T_FLOAT32 = 0, T_INT32 = 2, T_INT8 = 9 };
enum { PAD_SAME = 0, PAD_VALID = 1 };
/* BuiltinOptions union types. */
enum {
    OPT_NONE = 0,
    OPT_CONV = 1,
    OPT_DW = 2,
    OPT_FC = 8,
    OPT_SOFTMAX = 9,
    OPT_CONCAT = 10,
    OPT_ADD = 11,
    OPT_RESIZE = 15,
    OPT_RESHAPE = 17,
    OPT_MUL = 21,
    OPT_PAD = 22,
    OPT_REDUCER = 27,
    OPT_SLICE = 48,
    OPT_TCONV = 49,
    OPT_LEAKY = 75
};

#define NAME_MAX_LEN (XG_NAME_MAX + 16)
#define MAX_CODES 32 /* distinct (builtin, version) pairs: 11 at most today */

/* A constant tensor: its data belongs to the graph or to its op record. */
typedef struct wconst {
    const void *data;
    size_t bytes;
    int type;
    int rank;
    int32_t dims[4];
    char name[NAME_MAX_LEN];
    int n_q;             /* int8 export: quantization scales (0: none), zero points 0 */
    const float *qscale; /* (n_q), owned by the op record */
    int qdim;            /* quantized dimension of a per-channel vector */
} wconst;

/* One operator as written. */
typedef struct wop {
    const xg_op *src;
    int32_t builtin, version;
    int32_t in[XG_MAX_INPUTS];
    int n_in;
    int options;      /* union type */
    int keep_dims;    /* MEAN: output (N, 1, 1, C) */
    int n_shape;      /* RESHAPE: output rank */
    int32_t ints[8];  /* paddings, axes, shape, size, or begin and size */
    float *zero_bias; /* owned: a bias the graph does not have */
    int8_t *qw;       /* int8 export: owned quantized weights, */
    int32_t *qb;      /* bias, */
    float *wsc, *bsc; /* and their scales */
} wop;

typedef struct wmodel {
    const xgraph *g;
    wop *ops;
    wconst *c; /* tensor g->n_tensors + i, buffer 1 + i */
    int n_c;
    int32_t codes[MAX_CODES][2]; /* (builtin, version) */
    int n_codes;
    char *json; /* manta_preprocess */
    size_t json_len;
    size_t weights_bytes;
    int int8;      /* g->qmin set: a fully int8 file */
    float *ascale; /* int8: (n_tensors) scale and zero point of the graph's tensors */
    int32_t *azp;
    int max_q; /* longest scale vector */
} wmodel;

static void wmodel_free(wmodel *w)
{
    if (w->ops)
        for (int i = 0; i < w->g->n_ops; i++)
            free(w->ops[i].zero_bias), free(w->ops[i].qw), free(w->ops[i].qb), free(w->ops[i].wsc),
                free(w->ops[i].bsc);
    free(w->ops);
    free(w->ascale);
    free(w->azp);
    free(w->c);
    free(w->json);
    memset(w, 0, sizeof *w);
}

/* Index of an operator code already registered, or -1. */
static int code_find(const wmodel *w, int32_t builtin, int32_t version)
{
    for (int i = 0; i < w->n_codes; i++)
        if (w->codes[i][0] == builtin && w->codes[i][1] == version)
            return i;
    return -1;
}

/* Index of an operator code, registered if new; -1 when the table is full. */
static int code_index(wmodel *w, int32_t builtin, int32_t version)
{
    const int i = code_find(w, builtin, version);
    if (i >= 0)
        return i;
    if (w->n_codes == MAX_CODES)
        return -1;
    w->codes[w->n_codes][0] = builtin;
    w->codes[w->n_codes][1] = version;
    return w->n_codes++;
}

/* An earlier float32 constant of the same shape and values as @p c, or -1. */
static int32_t same_const(const wmodel *w, const wconst *c)
{
    for (int i = 0; i < w->n_c; i++) {
        const wconst *o = &w->c[i];
        if (o->type == c->type && o->rank == c->rank && o->bytes == c->bytes &&
            !memcmp(o->dims, c->dims, sizeof o->dims) && !memcmp(o->data, c->data, c->bytes))
            return (int32_t)(w->g->n_tensors + i);
    }
    return -1;
}

/* Add a constant tensor (or, with g->share_weights, find an equal float32 one); returns its
 * tensor index. */
static int32_t add_const(wmodel *w, const char *owner, const char *what, int type, int rank,
                         const int32_t *dims, const void *data)
{
    wconst *c = &w->c[w->n_c];
    size_t count = 1;
    memset(c, 0, sizeof *c);
    c->type = type;
    c->rank = rank;
    for (int i = 0; i < rank; i++) {
        c->dims[i] = dims[i];
        count *= (size_t)dims[i];
    }
    c->data = data;
    c->bytes = count * (type == T_INT8 ? 1 : 4);
    const int32_t shared = w->g->share_weights && type == T_FLOAT32 ? same_const(w, c) : -1;
    if (shared >= 0)
        return shared;
    snprintf(c->name, sizeof c->name, "%s/%s", owner, what);
    w->weights_bytes += c->bytes;
    return (int32_t)(w->g->n_tensors + w->n_c++);
}

/* add_const() of a quantized constant: @p n_q scales along dimension @p qdim, zero points 0. */
static int32_t add_qconst(wmodel *w, const char *owner, const char *what, int type, int rank,
                          const int32_t *dims, const void *data, const float *scales, int n_q,
                          int qdim)
{
    if (w->g->share_weights && type == T_INT8) { /* weights of both views: stored once */
        size_t count = 1;
        for (int i = 0; i < rank; i++)
            count *= (size_t)dims[i];
        for (int i = 0; i < w->n_c; i++) {
            const wconst *o = &w->c[i];
            int same = o->type == type && o->rank == rank && o->bytes == count && o->n_q == n_q &&
                       !memcmp(o->data, data, count) &&
                       !memcmp(o->qscale, scales, (size_t)n_q * sizeof *scales) && o->qdim == qdim;
            for (int k = 0; same && k < rank; k++)
                same = o->dims[k] == dims[k];
            if (same)
                return (int32_t)(w->g->n_tensors + i);
        }
    }
    const int32_t t = add_const(w, owner, what, type, rank, dims, data);
    wconst *c = &w->c[t - w->g->n_tensors];
    c->n_q = n_q;
    c->qscale = scales;
    c->qdim = qdim;
    w->max_q = n_q > w->max_q ? n_q : w->max_q;
    return t;
}

static double round_half_away(double x) { return x >= 0 ? floor(x + 0.5) : -floor(-x + 0.5); }

/* int8 export of an operator's weights (@p n values, @p n_ch output channels; the channel of
 * value i is i % n_ch when @p ch_last (depthwise), else i / (n / n_ch)): symmetric int8 per
 * channel (one scale when !@p per_channel), scale max|w| / 127; the bias (NULL: none) as int32
 * at in_scale * weight scale. Into o->qw, o->wsc, o->qb, o->bsc. */
static manta_status quant_op(wop *o, const float *wts, size_t n, int n_ch, int ch_last,
                             int per_channel, float in_scale, const float *bias, manta_err *err)
{
    const int n_sc = per_channel ? n_ch : 1;
    const size_t per = n / (size_t)n_ch;
    o->qw = malloc(n ? n : 1);
    o->wsc = calloc((size_t)n_ch, sizeof *o->wsc);
    if (bias) {
        o->qb = malloc((size_t)n_ch * sizeof *o->qb);
        o->bsc = malloc((size_t)n_ch * sizeof *o->bsc);
    }
    if (!o->qw || !o->wsc || (bias && (!o->qb || !o->bsc)))
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    for (size_t i = 0; i < n; i++) {
        const int c = !per_channel ? 0 : ch_last ? (int)(i % (size_t)n_ch) : (int)(i / per);
        o->wsc[c] = fmaxf(o->wsc[c], fabsf(wts[i]));
    }
    for (int c = 0; c < n_sc; c++)
        o->wsc[c] = o->wsc[c] > 0.0f ? o->wsc[c] / 127.0f : 1.0f;
    for (size_t i = 0; i < n; i++) {
        const int c = !per_channel ? 0 : ch_last ? (int)(i % (size_t)n_ch) : (int)(i / per);
        const double q = round_half_away((double)wts[i] / (double)o->wsc[c]);
        o->qw[i] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
    }
    for (int c = 0; bias && c < n_sc; c++)
        o->bsc[c] = in_scale * o->wsc[c]; /* the float product TFLite checks against */
    for (int c = 0; bias && c < n_ch; c++) {
        const double q = round_half_away((double)bias[c] / (double)o->bsc[per_channel ? c : 0]);
        o->qb[c] = (int32_t)(q > 2147483647.0    ? 2147483647.0
                             : q < -2147483647.0 ? -2147483647.0
                                                 : q);
    }
    return MANTA_OK;
}

/* The second input of @p o: the @p n int32 values o->ints, a constant named owner/what. */
static void int_operand(wmodel *w, wop *o, const char *owner, const char *what, int32_t n)
{
    o->in[1] = add_const(w, owner, what, T_INT32, 1, &n, o->ints);
    o->n_in = 2;
}

/* Scale and zero point of a calibrated range (widened to hold 0): 256 levels over it. */
static void range_params(float lo, float hi, float *scale, int32_t *zp)
{
    lo = fminf(lo, 0.0f);
    hi = fmaxf(hi, 0.0f);
    if (!(hi - lo > 1e-6f)) /* a constant-zero tensor */
        hi = lo + 1e-6f;
    const float s = (hi - lo) / 255.0f;
    const double z = round_half_away(-128.0 - (double)lo / (double)s);
    *scale = s;
    *zp = (int32_t)(z < -128 ? -128 : z > 127 ? 127 : z);
}

/* int8 export: every graph tensor's scale and zero point from its calibrated range, with
 * TFLite's constraints: SOFTMAX out 1/256 and -128, PAD and RESHAPE out as their input,
 * HARD_SWISH out above input_scale / 128; operators without int8 support refused. */
static manta_status quant_acts(wmodel *w, manta_err *err)
{
    const xgraph *g = w->g;
    w->ascale = malloc((size_t)g->n_tensors * sizeof *w->ascale);
    w->azp = malloc((size_t)g->n_tensors * sizeof *w->azp);
    if (!w->ascale || !w->azp)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    w->max_q = 1;
    for (int t = 0; t < g->n_tensors; t++) {
        if (!isfinite(g->qmin[t]) || !isfinite(g->qmax[t]) || g->qmin[t] > g->qmax[t])
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "int8 export: tensor '%s' has no calibrated range",
                                 g->tensors[t].name);
        range_params(g->qmin[t], g->qmax[t], &w->ascale[t], &w->azp[t]);
    }
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *op = &g->ops[i];
        switch (op->kind) {
        case XG_SOFTMAX:
            w->ascale[op->out] = 1.0f / 256.0f;
            w->azp[op->out] = -128;
            break;
        case XG_PAD:
        case XG_RESHAPE:
        case XG_SLICE:
        case XG_RESIZE:
            w->ascale[op->out] = w->ascale[op->in0];
            w->azp[op->out] = w->azp[op->in0];
            break;
        case XG_HSWISH:
            if (w->ascale[op->out] * 128.0f < w->ascale[op->in0] * 1.001f)
                w->ascale[op->out] = w->ascale[op->in0] / 127.0f;
            break;
        case XG_CONV:
        case XG_DWCONV:
        case XG_FC:
        case XG_ADD:
        case XG_MUL:
        case XG_MEAN:
        case XG_TCONV:
        case XG_LEAKY_RELU:
        case XG_MEAN_C:
        case XG_REQUANT:
        case XG_CONCAT: break;
        }
    }
    for (int i = 0; i < g->n_ops; i++) /* TFLite's int8 CONCATENATION does not requantize */
        for (int k = 0; g->ops[i].kind == XG_CONCAT && k < g->ops[i].n_ins; k++) {
            const int t = g->ops[i].ins[k], o = g->ops[i].out;
            if (w->ascale[t] != w->ascale[o] || w->azp[t] != w->azp[o])
                return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                     "int8 export: input '%s' of the concatenation '%s' has "
                                     "another scale or zero point (xgraph_quant_shared())",
                                     g->tensors[t].name, g->tensors[o].name);
        }
    return MANTA_OK;
}

/* Fill the operator records and the constants. */
static manta_status plan_ops(wmodel *w, manta_err *err)
{
    const xgraph *g = w->g;
    const size_t n_ops = g->n_ops > 0 ? (size_t)g->n_ops : 1;
    w->ops = calloc(n_ops, sizeof *w->ops);
    w->c = calloc(n_ops * 3, sizeof *w->c);
    if (!w->ops || !w->c)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *op = &g->ops[i];
        wop *o = &w->ops[i];
        const xg_tensor *ti = &g->tensors[op->in0], *to = &g->tensors[op->out];
        const char *name = to->name;
        o->src = op;
        o->version = 1;
        o->in[0] = op->in0;
        o->n_in = 1;
        switch (op->kind) {
        case XG_CONV:
        case XG_DWCONV: {
            const int dw = op->kind == XG_DWCONV;
            const int32_t cout = to->shape[3];
            const int32_t wd[4] = {dw ? 1 : cout, op->kh, op->kw, dw ? cout : ti->shape[3]};
            const float *bias = op->bias;
            if (!bias) {
                o->zero_bias = calloc((size_t)cout, sizeof *o->zero_bias);
                if (!o->zero_bias)
                    return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
                bias = o->zero_bias;
            }
            o->builtin = dw ? MENGINE_OP_DEPTHWISE_CONV_2D : MENGINE_OP_CONV_2D;
            o->options = dw ? OPT_DW : OPT_CONV;
            o->n_in = 3;
            if (w->int8) { /* per-channel weights along Cout (OHWI) or C (depthwise) */
                MANTA_TRY(quant_op(o, op->weights, op->n_weights, cout, dw, 1, w->ascale[op->in0],
                                   bias, err));
                o->version = 3;
                o->in[1] =
                    add_qconst(w, name, "weights", T_INT8, 4, wd, o->qw, o->wsc, cout, dw ? 3 : 0);
                o->in[2] = add_qconst(w, name, "bias", T_INT32, 1, &cout, o->qb, o->bsc, cout, 0);
                break;
            }
            o->in[1] = add_const(w, name, "weights", T_FLOAT32, 4, wd, op->weights);
            o->in[2] = add_const(w, name, "bias", T_FLOAT32, 1, &cout, bias);
            break;
        }
        case XG_PAD: {
            const int32_t pd[2] = {4, 2};
            const int32_t p[8] = {0, 0, op->pad[0], op->pad[1], op->pad[2], op->pad[3], 0, 0};
            memcpy(o->ints, p, sizeof p);
            o->builtin = MENGINE_OP_PAD;
            o->options = OPT_PAD;
            o->in[1] = add_const(w, name, "paddings", T_INT32, 2, pd, o->ints);
            o->n_in = 2;
            break;
        }
        case XG_ADD:
        case XG_MUL:
            o->builtin = op->kind == XG_ADD ? MENGINE_OP_ADD : MENGINE_OP_MUL;
            o->options = op->kind == XG_ADD ? OPT_ADD : OPT_MUL;
            o->in[1] = op->in1;
            o->n_in = 2;
            break;
        case XG_HSWISH: o->builtin = MENGINE_OP_HARD_SWISH; break;
        case XG_MEAN: /* over H and W */
            o->ints[0] = 1;
            o->ints[1] = 2;
            o->keep_dims = to->rank == 4;
            o->builtin = MENGINE_OP_MEAN;
            o->options = OPT_REDUCER;
            int_operand(w, o, name, "axes", 2);
            break;
        case XG_RESHAPE:
            memcpy(o->ints, to->shape, (size_t)to->rank * sizeof *o->ints);
            o->n_shape = to->rank;
            o->builtin = MENGINE_OP_RESHAPE;
            o->options = OPT_RESHAPE;
            int_operand(w, o, name, "shape", to->rank);
            break;
        case XG_FC: {
            const int32_t units = to->shape[1];
            const int32_t wd[2] = {units, (int32_t)(op->n_weights / (size_t)units)};
            o->builtin = MENGINE_OP_FULLY_CONNECTED;
            o->options = OPT_FC;
            o->n_in = 2;
            if (w->int8) { /* per-tensor weights (TFLite's spec for FULLY_CONNECTED) */
                MANTA_TRY(quant_op(o, op->weights, op->n_weights, units, 0, 0, w->ascale[op->in0],
                                   op->bias, err));
                o->in[1] = add_qconst(w, name, "weights", T_INT8, 2, wd, o->qw, o->wsc, 1, 0);
                o->version = op->bias ? 4 : 6;
                if (op->bias)
                    o->in[o->n_in++] =
                        add_qconst(w, name, "bias", T_INT32, 1, &units, o->qb, o->bsc, 1, 0);
                break;
            }
            o->in[1] = add_const(w, name, "weights", T_FLOAT32, 2, wd, op->weights);
            if (op->bias)
                o->in[o->n_in++] = add_const(w, name, "bias", T_FLOAT32, 1, &units, op->bias);
            else
                o->version = 6; /* TFLite's version for a fully connected op without bias */
            break;
        }
        case XG_SOFTMAX:
            o->builtin = MENGINE_OP_SOFTMAX;
            o->options = OPT_SOFTMAX;
            break;
        case XG_TCONV: { /* inputs (output_shape, weights, input, bias?) */
            const int32_t cout = to->shape[3], four = 4;
            const int32_t wd[4] = {cout, op->kh, op->kw, ti->shape[3]};
            memcpy(o->ints, to->shape, 4 * sizeof *o->ints);
            o->builtin = MENGINE_OP_TRANSPOSE_CONV;
            o->options = OPT_TCONV;
            o->in[0] = add_const(w, name, "output_shape", T_INT32, 1, &four, o->ints);
            o->in[2] = op->in0;
            o->n_in = 3;
            if (w->int8) { /* per-channel weights along Cout, the bias at in_scale x w_scale */
                MANTA_TRY(quant_op(o, op->weights, op->n_weights, cout, 0, 1, w->ascale[op->in0],
                                   op->bias, err));
                o->in[1] = add_qconst(w, name, "weights", T_INT8, 4, wd, o->qw, o->wsc, cout, 0);
                if (op->bias)
                    o->in[o->n_in++] =
                        add_qconst(w, name, "bias", T_INT32, 1, &cout, o->qb, o->bsc, cout, 0);
                o->version = 3;
                break;
            }
            o->in[1] = add_const(w, name, "weights", T_FLOAT32, 4, wd, op->weights);
            if (op->bias) { /* the bias input exists from version 3 */
                o->in[o->n_in++] = add_const(w, name, "bias", T_FLOAT32, 1, &cout, op->bias);
                o->version = 3;
            }
            break;
        }
        case XG_CONCAT:
            memcpy(o->in, op->ins, (size_t)op->n_ins * sizeof *o->in);
            o->n_in = op->n_ins;
            o->builtin = MENGINE_OP_CONCATENATION;
            o->options = OPT_CONCAT;
            break;
        case XG_LEAKY_RELU:
            o->builtin = MENGINE_OP_LEAKY_RELU;
            o->options = OPT_LEAKY;
            break;
        case XG_MEAN_C: /* over the channels, dims kept: (N, H, W, 1) */
            o->ints[0] = 3;
            o->keep_dims = 1;
            o->builtin = MENGINE_OP_MEAN;
            o->options = OPT_REDUCER;
            int_operand(w, o, name, "axes", 1);
            break;
        case XG_SLICE: {
            const int32_t four = 4;
            memcpy(o->ints, op->begin, 4 * sizeof *o->ints);
            memcpy(o->ints + 4, op->size, 4 * sizeof *o->ints);
            o->builtin = MENGINE_OP_SLICE;
            o->options = OPT_SLICE;
            o->in[1] = add_const(w, name, "begin", T_INT32, 1, &four, o->ints);
            o->in[2] = add_const(w, name, "size", T_INT32, 1, &four, o->ints + 4);
            o->n_in = 3;
            break;
        }
        case XG_REQUANT: /* int8 -> int8 */
            if (!w->int8)
                return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                     "export: a requantization ('%s') in a float32 graph", name);
            o->builtin = MENGINE_OP_QUANTIZE;
            break;
        case XG_RESIZE: /* half-pixel centres: version 3 */
            o->ints[0] = to->shape[1];
            o->ints[1] = to->shape[2];
            o->builtin = MENGINE_OP_RESIZE_BILINEAR;
            o->options = OPT_RESIZE;
            o->version = 3;
            int_operand(w, o, name, "size", 2);
            break;
        }
    }
    for (int i = 0; w->int8 && i < g->n_ops; i++) {
        const int32_t b = w->ops[i].builtin;
        if (b == MENGINE_OP_ADD || b == MENGINE_OP_MUL || b == MENGINE_OP_PAD ||
            b == MENGINE_OP_MEAN || b == MENGINE_OP_SOFTMAX || b == MENGINE_OP_CONCATENATION ||
            b == MENGINE_OP_SLICE)
            w->ops[i].version = 2; /* TFLite's versions for int8 */
    }
    for (int i = 0; i < g->n_ops; i++)
        if (code_index(w, w->ops[i].builtin, w->ops[i].version) < 0)
            return manta_err_set(err, MANTA_ERR_INTERNAL, "export: too many operator codes");
    return MANTA_OK;
}

/* root[key] = the @p n tensor indices @p idx; 0 when out of memory. */
static int add_indices(cJSON *root, const char *key, const int *idx, int n)
{
    cJSON *a = cJSON_CreateIntArray(idx, n);
    if (!a)
        return 0;
    if (!cJSON_AddItemToObject(root, key, a)) {
        cJSON_Delete(a);
        return 0;
    }
    return 1;
}

/* The manta_preprocess JSON. A graph of several inputs (stereo) has "height"
 * and "width" instead of "resolution", and "input_tensors" and
 * "output_tensors" instead of the input, logits and output tensors. */
static manta_status make_json(wmodel *w, manta_err *err)
{
    const xgraph *g = w->g;
    const int multi = g->n_inputs > 0;
    const xg_tensor *in = &g->tensors[multi ? g->inputs[0] : g->input];
    const int C = in->shape[3];
    const xg_preprocess *p = &g->pre;
    int unset = 1;
    for (int c = 0; c < C && c < 3; c++)
        unset &= p->mean[c] == 0.0f && p->std[c] == 0.0f;
    if (C > 3 && !unset)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "export: preprocessing for %d channels (1 or 3 supported)", C);
    for (int c = 0; c < C && !unset; c++)
        if (!(p->std[c] > 0.0f) || !isfinite(p->mean[c]) || !isfinite(p->std[c]))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "export: preprocessing std[%d] = %g (must be positive)", c,
                                 (double)p->std[c]);
    cJSON *root = cJSON_CreateObject(), *mean = cJSON_CreateArray(), *std = cJSON_CreateArray();
    cJSON *labels = cJSON_CreateArray();
    int ok = root && mean && std && labels;
    for (int c = 0; ok && c < C; c++) {
        ok &= cJSON_AddItemToArray(mean, cJSON_CreateNumber(unset ? 0.0 : p->mean[c]));
        ok &= cJSON_AddItemToArray(std, cJSON_CreateNumber(unset ? 1.0 : p->std[c]));
    }
    for (int i = 0; ok && i < p->n_labels; i++)
        ok &= cJSON_AddItemToArray(labels, cJSON_CreateString(p->labels[i] ? p->labels[i] : ""));
    cJSON *arch = g->arch_json[0] ? cJSON_Parse(g->arch_json) : cJSON_CreateNull();
    if (!arch && g->arch_json[0])
        arch = cJSON_CreateString(g->arch_json);
    ok = ok && arch && cJSON_AddNumberToObject(root, "version", 1);
    if (multi)
        ok = ok && cJSON_AddNumberToObject(root, "height", in->shape[1]) &&
             cJSON_AddNumberToObject(root, "width", in->shape[2]);
    else
        ok = ok && cJSON_AddNumberToObject(root, "resolution", in->shape[1]);
    ok = ok && cJSON_AddNumberToObject(root, "channels", C);
    ok = ok && cJSON_AddItemToObject(root, "mean", mean);
    if (ok)
        mean = NULL;
    ok = ok && cJSON_AddItemToObject(root, "std", std);
    if (ok)
        std = NULL;
    ok = ok && cJSON_AddItemToObject(root, "labels", labels);
    if (ok)
        labels = NULL;
    if (multi)
        ok = ok && add_indices(root, "input_tensors", g->inputs, g->n_inputs) &&
             add_indices(root, "output_tensors", g->outputs, g->n_outputs);
    if (p->task[0])
        ok = ok && cJSON_AddStringToObject(root, "task", p->task);
    if (p->space[0])
        ok = ok && cJSON_AddStringToObject(root, "space", p->space);
    if (p->disp_scale > 0.0f)
        ok = ok && cJSON_AddNumberToObject(root, "disparity_scale", p->disp_scale);
    if (p->max_disp > 0.0f)
        ok = ok && cJSON_AddNumberToObject(root, "max_disp", p->max_disp);
    else
        ok = ok && cJSON_AddNumberToObject(root, "input_tensor", g->input) &&
             cJSON_AddNumberToObject(root, "logits_tensor", g->logits) &&
             cJSON_AddNumberToObject(root, "output_tensor", g->output);
    ok = ok && cJSON_AddItemToObject(root, "arch", arch);
    if (ok)
        arch = NULL;
    w->json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    cJSON_Delete(mean);
    cJSON_Delete(std);
    cJSON_Delete(labels);
    cJSON_Delete(arch);
    if (!w->json)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory for the metadata");
    w->json_len = strlen(w->json);
    return MANTA_OK;
}

/* ---- serialisation ---- */

#define FB(call)                \
    do {                        \
        if ((call) != MANTA_OK) \
            goto fail;          \
    } while (0)

static mfb_ref options(mfb_builder *b, const wop *o)
{
    const xg_op *op = o->src;
    mfb_ref r = 0, shape = 0;
    if (o->options == OPT_NONE)
        return 0;
    if (o->options == OPT_RESHAPE)
        FB(mfb_create_vector(b, o->ints, (size_t)o->n_shape, 4, 4, &shape));
    FB(mfb_start_table(b));
    switch (o->options) {
    case OPT_CONV:
        FB(mfb_add_i8(b, 0, op->same ? PAD_SAME : PAD_VALID, 0));
        FB(mfb_add_i32(b, 1, op->stride, 0));
        FB(mfb_add_i32(b, 2, op->stride, 0));
        FB(mfb_add_i8(b, 3, (int8_t)op->act, 0));
        break;
    case OPT_DW:
        FB(mfb_add_i8(b, 0, op->same ? PAD_SAME : PAD_VALID, 0));
        FB(mfb_add_i32(b, 1, op->stride, 0));
        FB(mfb_add_i32(b, 2, op->stride, 0));
        FB(mfb_add_i32(b, 3, 1, 0)); /* depth_multiplier */
        FB(mfb_add_i8(b, 4, (int8_t)op->act, 0));
        break;
    case OPT_FC: FB(mfb_add_i8(b, 0, (int8_t)op->act, 0)); break;
    case OPT_SOFTMAX: FB(mfb_add_f32(b, 0, 1.0f, 0.0f)); break;
    case OPT_ADD:
    case OPT_MUL: FB(mfb_add_i8(b, 0, (int8_t)op->act, 0)); break;
    case OPT_REDUCER: FB(mfb_add_bool(b, 0, o->keep_dims, 0)); break;
    case OPT_RESHAPE: FB(mfb_add_ref(b, 0, shape)); break;
    case OPT_TCONV:
        FB(mfb_add_i8(b, 0, op->same ? PAD_SAME : PAD_VALID, 0));
        FB(mfb_add_i32(b, 1, op->stride, 0));
        FB(mfb_add_i32(b, 2, op->stride, 0));
        break;
    case OPT_CONCAT: FB(mfb_add_i32(b, 0, 3, 0)); break; /* the channels */
    case OPT_LEAKY: FB(mfb_add_f32(b, 0, op->alpha, 0.0f)); break;
    case OPT_RESIZE: FB(mfb_add_bool(b, 3, 1, 0)); break; /* half_pixel_centers */
    default: break;                                       /* PadOptions, SliceOptions: empty */
    }
    FB(mfb_end_table(b, &r));
    return r;
fail:
    return 0;
}

/* Add the objects @p refs as the fields @p first .. @p first + @p n - 1 of the
 * open table, in that order (0: the field is absent). */
static manta_status add_refs(mfb_builder *b, unsigned first, const mfb_ref *refs, unsigned n)
{
    manta_status st = MANTA_OK;
    for (unsigned i = 0; i < n && st == MANTA_OK; i++)
        st = mfb_add_ref(b, first + i, refs[i]);
    return st;
}

/* Build the whole file; *offline_ref receives the plan vector. */
static manta_status serialise(const wmodel *w, mfb_builder *b, mfb_ref *offline_ref, manta_err *err)
{
    const xgraph *g = w->g;
    const int n_t = g->n_tensors + w->n_c, n_buf = 1 + w->n_c + 2;
    int n_refs = n_t > n_buf ? n_t : n_buf;
    n_refs = n_refs > g->n_ops ? n_refs : g->n_ops;
    mfb_ref *refs = calloc((size_t)n_refs + 16, sizeof *refs);
    mfb_ref *data = calloc((size_t)w->n_c + 1, sizeof *data);
    int32_t *plan = malloc((size_t)(3 + n_t) * sizeof *plan);
    int64_t *zeros = calloc((size_t)w->max_q + 1, sizeof *zeros);
    mfb_ref v, v_in, v_out, name, v_t, v_op, v_sg, sg, v_codes, v_bufs, v_meta, root, desc;
    mfb_ref meta[2], json_data = 0, plan_data = 0;
    if (!refs || !plan || !data || !zeros) {
        free(refs);
        free(data);
        free(plan);
        free(zeros);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    }
    FB(mfb_init(b, 4096 + w->weights_bytes + w->json_len));
    /* Buffers: constant data first (the bulk of the file), then the metadata. */
    for (int i = 0; i < w->n_c; i++)
        FB(mfb_create_vector(b, w->c[i].data, w->c[i].bytes, 1, 16, &data[i]));
    plan[0] = 1;
    plan[1] = 1;
    plan[2] = n_t;
    for (int t = 0; t < n_t; t++)
        plan[3 + t] = -1;
    FB(mfb_create_vector(b, plan, (size_t)(3 + n_t) * 4, 1, 16, &plan_data));
    FB(mfb_create_vector(b, w->json, w->json_len, 1, 16, &json_data));
    for (int i = 0; i < n_buf; i++) {
        const mfb_ref d = i == 0            ? 0
                          : i <= w->n_c     ? data[i - 1]
                          : i == w->n_c + 1 ? plan_data
                                            : json_data;
        FB(mfb_start_table(b));
        FB(mfb_add_ref(b, 0, d));
        FB(mfb_end_table(b, &refs[i]));
    }
    FB(mfb_create_ref_vector(b, refs, (size_t)n_buf, &v_bufs));
    /* Tensors: the graph's, then the constants. */
    int zv_len[64], n_zv = 0;
    mfb_ref zv_ref[64];
    for (int t = 0; t < n_t; t++) {
        const int is_c = t >= g->n_tensors;
        const wconst *c = is_c ? &w->c[t - g->n_tensors] : NULL;
        const xg_tensor *x = is_c ? NULL : &g->tensors[t];
        const char *nm = is_c ? c->name : x->name;
        mfb_ref quant = 0, vs, vz;
        const int n_q = is_c ? c->n_q : w->int8;
        if (n_q > 0) { /* QuantizationParameters: scale 2, zero_point 3, quantized_dimension 6 */
            const int64_t zp = is_c ? 0 : w->azp[t];
            for (int k = 0; k < n_q; k++)
                zeros[k] = k == 0 ? zp : 0;
            FB(mfb_create_vector(b, is_c ? c->qscale : &w->ascale[t], (size_t)n_q, 4, 4, &vs));
            /* a constant's zero points are all 0: one vector per length, shared by every
             * constant of that many channels (FlatBuffers objects may be referenced twice) */
            int z = 0;
            while (is_c && z < n_zv && zv_len[z] != n_q)
                z++;
            if (is_c && z < n_zv) {
                vz = zv_ref[z];
            } else {
                FB(mfb_create_vector(b, zeros, (size_t)n_q, 8, 8, &vz));
                if (is_c && n_zv < (int)(sizeof zv_len / sizeof zv_len[0])) {
                    zv_len[n_zv] = n_q;
                    zv_ref[n_zv++] = vz;
                }
            }
            FB(mfb_start_table(b));
            FB(mfb_add_ref(b, 2, vs));
            FB(mfb_add_ref(b, 3, vz));
            FB(mfb_add_i32(b, 6, is_c ? c->qdim : 0, 0));
            FB(mfb_end_table(b, &quant));
        }
        FB(mfb_create_vector(b, is_c ? (const void *)c->dims : (const void *)x->shape,
                             (size_t)(is_c ? c->rank : x->rank), 4, 4, &v));
        FB(mfb_create_string(b, nm, strlen(nm), &name));
        FB(mfb_start_table(b));
        FB(mfb_add_ref(b, 0, v));
        FB(mfb_add_i8(b, 1, (int8_t)(is_c ? c->type : w->int8 ? T_INT8 : T_FLOAT32), 0));
        FB(mfb_add_u32(b, 2, is_c ? (uint32_t)(t - g->n_tensors + 1) : 0, 0));
        FB(mfb_add_ref(b, 3, name));
        if (quant)
            FB(mfb_add_ref(b, 4, quant));
        FB(mfb_end_table(b, &refs[t]));
    }
    FB(mfb_create_ref_vector(b, refs, (size_t)n_t, &v_t));
    /* Operators. */
    for (int i = 0; i < g->n_ops; i++) {
        const wop *o = &w->ops[i];
        const int32_t out = o->src->out;
        const mfb_ref opt = options(b, o);
        if (o->options != OPT_NONE && !opt)
            goto fail;
        FB(mfb_create_vector(b, o->in, (size_t)o->n_in, 4, 4, &v_in));
        FB(mfb_create_vector(b, &out, 1, 4, 4, &v_out));
        FB(mfb_start_table(b));
        FB(mfb_add_u32(b, 0, (uint32_t)code_find(w, o->builtin, o->version), 0));
        FB(mfb_add_ref(b, 1, v_in));
        FB(mfb_add_ref(b, 2, v_out));
        FB(mfb_add_u8(b, 3, (uint8_t)o->options, 0));
        FB(mfb_add_ref(b, 4, opt));
        FB(mfb_end_table(b, &refs[i]));
    }
    FB(mfb_create_ref_vector(b, refs, (size_t)g->n_ops, &v_op));
    if (g->n_inputs > 0) {
        FB(mfb_create_vector(b, g->inputs, (size_t)g->n_inputs, 4, 4, &v_in));
        FB(mfb_create_vector(b, g->outputs, (size_t)g->n_outputs, 4, 4, &v_out));
    } else {
        FB(mfb_create_vector(b, &g->input, 1, 4, 4, &v_in));
        FB(mfb_create_vector(b, &g->output, 1, 4, 4, &v_out));
    }
    FB(mfb_create_string(b, "main", 4, &name));
    FB(mfb_start_table(b)); /* SubGraph: tensors, inputs, outputs, operators, name */
    FB(add_refs(b, 0, (const mfb_ref[]){v_t, v_in, v_out, v_op, name}, 5));
    FB(mfb_end_table(b, &sg));
    FB(mfb_create_ref_vector(b, &sg, 1, &v_sg));
    for (int i = 0; i < w->n_codes; i++) {
        const int32_t code = w->codes[i][0];
        const int8_t dep = (int8_t)(code < 127 ? code : 127);
        /* Written even when equal to the schema defaults (ADD is 0, version 1), so that
         * every reader sees both codes and the version explicitly: the "default" given
         * to the builder is a value the field never equals. */
        FB(mfb_start_table(b));
        FB(mfb_add_i8(b, 0, dep, (int8_t)(dep ^ 1)));
        FB(mfb_add_i32(b, 2, w->codes[i][1], w->codes[i][1] ^ 1));
        FB(mfb_add_i32(b, 3, code, code ^ 1));
        FB(mfb_end_table(b, &refs[i]));
    }
    FB(mfb_create_ref_vector(b, refs, (size_t)w->n_codes, &v_codes));
    static const char *const meta_name[2] = {TFLITE_META_OFFLINE, TFLITE_META_PREPROCESS};
    for (int i = 0; i < 2; i++) {
        FB(mfb_create_string(b, meta_name[i], strlen(meta_name[i]), &name));
        FB(mfb_start_table(b));
        FB(mfb_add_ref(b, 0, name));
        FB(mfb_add_u32(b, 1, (uint32_t)(w->n_c + 1 + i), 0));
        FB(mfb_end_table(b, &meta[i]));
    }
    FB(mfb_create_ref_vector(b, meta, 2, &v_meta));
    const char *d = g->description[0] ? g->description : "manta export";
    FB(mfb_create_string(b, d, strnlen(d, sizeof g->description), &desc));
    /* Model: version 3, operator codes, subgraphs, description, buffers, (no metadata_buffer),
     * metadata. */
    FB(mfb_start_table(b));
    FB(mfb_add_u32(b, 0, 3, 0));
    FB(add_refs(b, 1, (const mfb_ref[]){v_codes, v_sg, desc, v_bufs, 0, v_meta}, 6));
    FB(mfb_end_table(b, &root));
    FB(mfb_finish(b, root, "TFL3"));
    free(refs);
    free(data);
    free(plan);
    free(zeros);
    *offline_ref = plan_data;
    return MANTA_OK;
fail:
    free(refs);
    free(data);
    free(plan);
    free(zeros);
    return manta_err_set(
        err, b->status == MANTA_ERR_NO_MEMORY ? MANTA_ERR_NO_MEMORY : MANTA_ERR_INTERNAL,
        "export: FlatBuffers builder: %s", mfb_error(b));
}

/* ---- planning with the engine ---- */

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Load @p model with the engine, plan it, and read each tensor's offset in the
 * activation area (-1: constant or never stored). */
static manta_status engine_plan(const uint8_t *model, size_t size, int n_t, int32_t *offsets,
                                size_t *arena_bytes, size_t *act_bytes, size_t *fused,
                                manta_err *err)
{
    mengine_model m;
    mengine e;
    mengine_stats s;
    char msg[256];
    mengine_status est = mengine_model_load(&m, model, size, NULL, msg, sizeof msg);
    if (est != MENGINE_OK)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "export: the engine rejects the written model (%s): %s",
                             mengine_status_str(est), msg);
    const size_t ws = mengine_plan_work_size(&m);
    void *work = malloc(ws ? ws : 1);
    if (!work)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
    est = mengine_arena_size(&m, work, ws, arena_bytes, msg, sizeof msg);
    free(work);
    if (est != MENGINE_OK)
        return manta_err_set(err, MANTA_ERR_FORMAT, "export: the engine cannot plan the model: %s",
                             msg);
    uint8_t *arena = aligned_alloc(MENGINE_ARENA_ALIGN, round16(*arena_bytes));
    if (!arena)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory for an arena of %zu",
                             *arena_bytes);
    manta_status st = MANTA_OK;
    est = mengine_init(&e, &m, arena, *arena_bytes);
    if (est == MENGINE_OK)
        est = mengine_prepare(&e, msg, sizeof msg);
    if (est == MENGINE_OK)
        est = mengine_get_stats(&e, &s);
    if (est != MENGINE_OK || (int)m.n_tensors != n_t)
        st = manta_err_set(err, MANTA_ERR_INTERNAL, "export: engine prepare failed: %s", msg);
    for (int t = 0; st == MANTA_OK && t < n_t; t++) {
        mengine_view v;
        if (mengine_tensor(&e, (size_t)t, &v) != MENGINE_OK) {
            st = manta_err_set(err, MANTA_ERR_INTERNAL, "export: no view of tensor %d", t);
            break;
        }
        offsets[t] = v.data ? (int32_t)((uint8_t *)v.data - (arena + s.records_bytes)) : -1;
    }
    if (st == MANTA_OK) {
        *act_bytes = s.activation_bytes;
        *fused = s.fused_correlations;
    }
    free(arena);
    return st;
}

manta_status tflite_write(const xgraph *g, uint8_t **out, size_t *out_size, tflite_report *rep,
                          manta_err *err)
{
    if (!out || !out_size)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "export: NULL output");
    *out = NULL;
    *out_size = 0;
    MANTA_TRY(xgraph_validate(g, err));
    wmodel w;
    mfb_builder b;
    mfb_ref plan_ref = 0;
    memset(&w, 0, sizeof w);
    memset(&b, 0, sizeof b);
    w.g = g;
    w.int8 = g->qmin && g->qmax;
    uint8_t *model = NULL;
    int32_t *off = NULL, *off2 = NULL;
    size_t size = 0, arena1 = 0, arena2 = 0, act = 0, fused = 0;
    manta_status st = w.int8 ? quant_acts(&w, err) : MANTA_OK;
    if (st == MANTA_OK)
        st = plan_ops(&w, err);
    if (st == MANTA_OK)
        st = make_json(&w, err);
    if (st == MANTA_OK)
        st = serialise(&w, &b, &plan_ref, err);
    const int n_t = g->n_tensors + w.n_c;
    if (st == MANTA_OK) {
        const uint8_t *data = mfb_data(&b, &size);
        model = aligned_alloc(16, round16(size));
        off = malloc((size_t)n_t * sizeof *off);
        off2 = malloc((size_t)n_t * sizeof *off2);
        if (!model || !off || !off2) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
        } else {
            memset(model + size, 0, round16(size) - size);
            memcpy(model, data, size);
        }
    }
    mfb_free(&b);
    /* Plan the file as written (every offset -1), then patch the plan in place. */
    if (st == MANTA_OK)
        st = engine_plan(model, size, n_t, off, &arena1, &act, &fused, err);
    if (st == MANTA_OK) {
        uint8_t *p = model + size - plan_ref + 4;
        if (manta_le_get32(p) != 1 || manta_le_get32(p + 4) != 1 ||
            manta_le_get32(p + 8) != (uint32_t)n_t)
            st = manta_err_set(err, MANTA_ERR_INTERNAL, "export: plan buffer not found");
        for (int t = 0; st == MANTA_OK && t < n_t; t++)
            manta_le_put32(p + 12 + 4 * t, (uint32_t)off[t]);
    }
    if (st == MANTA_OK)
        st = engine_plan(model, size, n_t, off2, &arena2, &act, &fused, err);
    for (int t = 0; st == MANTA_OK && t < n_t; t++)
        if (off[t] != off2[t])
            st = manta_err_set(err, MANTA_ERR_INTERNAL,
                               "export: tensor %d planned at %d, the engine put it at %d", t,
                               (int)off[t], (int)off2[t]);
    if (st == MANTA_OK && rep) {
        memset(rep, 0, sizeof *rep);
        rep->file_bytes = size;
        rep->arena_bytes = arena2;
        rep->activation_bytes = act;
        rep->weights_bytes = w.weights_bytes;
        rep->n_ops = g->n_ops;
        rep->n_tensors = n_t;
        rep->input_tensor = g->n_inputs > 0 ? g->inputs[0] : g->input;
        rep->logits_tensor = g->n_inputs > 0 ? -1 : g->logits;
        rep->output_tensor = g->n_inputs > 0 ? g->outputs[0] : g->output;
        rep->fused_correlations = fused;
    }
    free(off);
    free(off2);
    wmodel_free(&w);
    if (st != MANTA_OK) {
        free(model);
        return st;
    }
    *out = model;
    *out_size = size;
    return MANTA_OK;
}

/* ---- files ---- */

manta_status tflite_write_c_array(const uint8_t *data, size_t size, size_t arena_bytes, int int8,
                                  const char *dir, manta_err *err)
{
    if (!data || !size || !dir)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "c array: no data or directory");
    char path_h[4096], path_c[4096];
    if (snprintf(path_h, sizeof path_h, "%s/model.h", dir) >= (int)sizeof path_h ||
        snprintf(path_c, sizeof path_c, "%s/model.c", dir) >= (int)sizeof path_c)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: path too long", dir);
    manta_strbuf h = {0}, c = {0};
    manta_strbuf_printf(
        &h,
        "/* Generated by manta export: a TensorFlow Lite model for boards without a file\n"
        " * system. Run it with the manta engine (runtime/engine/engine.h):\n"
        " *   static uint8_t arena[MODEL_ARENA_SIZE] (16-byte aligned);\n"
        " *   mengine_model_load(&m, model_data, MODEL_DATA_SIZE, NULL, msg, sizeof msg);\n"
        " *   mengine_init(&e, &m, arena, MODEL_ARENA_SIZE); mengine_prepare(&e, ...);\n"
        " * MODEL_ARENA_SIZE is exact for the engine as built on the exporting host\n"
        " * (64-bit); a 32-bit build has smaller records and needs at most this, but\n"
        " * for the int8 path of Arm's DSP extension, whose int8 CONV_2D above 1x1 has\n"
        " * 2 patch rows of scratch more (docs/export.md); mengine_prepare() says so. */\n"
        "#ifndef MANTA_MODEL_H\n#define MANTA_MODEL_H\n\n"
        "/** Bytes of the model. */\n#define MODEL_DATA_SIZE %zuu\n\n"
        "/** Arena bytes mengine_prepare() needs for this model. */\n"
        "#define MODEL_ARENA_SIZE %zuu\n\n"
        "%s"
        "/** The .tflite file, 16-byte aligned. */\n"
        "extern const unsigned char model_data[MODEL_DATA_SIZE];\n\n#endif\n",
        size, arena_bytes,
        int8 ? "/** A fully int8 model (manta export --int8): a program may name only the int8\n"
               " *  operators (mengine_model_load_ops()) and link no float32 kernel. */\n"
               "#define MODEL_INT8 1\n\n"
             : "");
    manta_strbuf_printf(
        &c,
        "/* Generated by manta export. Do not edit. */\n#include \"model.h\"\n\n"
        "#if defined(__GNUC__) || defined(__clang__)\n"
        "#define MODEL_ALIGN_PRE\n#define MODEL_ALIGN_POST __attribute__((aligned(16)))\n"
        "#elif defined(_MSC_VER)\n"
        "#define MODEL_ALIGN_PRE __declspec(align(16))\n#define MODEL_ALIGN_POST\n"
        "#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L\n"
        "#define MODEL_ALIGN_PRE _Alignas(16)\n#define MODEL_ALIGN_POST\n"
        "#else\n#error \"model.c: this compiler cannot align the model to 16 bytes\"\n#endif\n\n"
        "MODEL_ALIGN_PRE const unsigned char model_data[MODEL_DATA_SIZE] MODEL_ALIGN_POST = {\n");
    for (size_t i = 0; i < size && !c.oom; i += 16) {
        manta_strbuf_printf(&c, "   ");
        for (size_t k = i; k < i + 16 && k < size; k++)
            manta_strbuf_printf(&c, " 0x%02x,", data[k]);
        manta_strbuf_printf(&c, "\n");
    }
    manta_strbuf_printf(&c, "};\n");
    manta_status st = MANTA_OK;
    if (h.oom || c.oom)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "c array: out of memory");
    if (st == MANTA_OK)
        st = manta_file_write_atomic(path_h, h.p, h.n, err);
    if (st == MANTA_OK)
        st = manta_file_write_atomic(path_c, c.p, c.n, err);
    manta_strbuf_free(&h);
    manta_strbuf_free(&c);
    return st;
}

manta_status tflite_write_file(const xgraph *g, const char *path, const char *c_array_dir,
                               tflite_report *rep, manta_err *err)
{
    if (!path)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "export: no output path");
    uint8_t *data;
    size_t size;
    tflite_report r;
    MANTA_TRY(tflite_write(g, &data, &size, &r, err));
    manta_status st = manta_file_write_atomic(path, data, size, err);
    if (st == MANTA_OK && c_array_dir)
        st = tflite_write_c_array(data, size, r.arena_bytes, g->qmin && g->qmax, c_array_dir, err);
    free(data);
    if (st == MANTA_OK && rep)
        *rep = r;
    return st;
}

/* ---- check against the reference ---- */

/* tflite_check() of a graph with several inputs: every model output against
 * the reference. */
static manta_status check_multi(const xgraph *g, const uint8_t *data, size_t size, uint64_t seed,
                                double *max_diff, manta_err *err)
{
    mengine_model m;
    mengine e;
    char msg[256];
    if (mengine_model_load(&m, data, size, NULL, msg, sizeof msg) != MENGINE_OK)
        return manta_err_set(err, MANTA_ERR_FORMAT, "export check: %s", msg);
    size_t arena_bytes = 0;
    const size_t ws = mengine_plan_work_size(&m);
    void *work = malloc(ws ? ws : 1);
    float *in[XG_MAX_IO] = {0}, *ref[XG_MAX_IO] = {0};
    uint8_t *arena = NULL;
    manta_status st =
        work ? MANTA_OK : manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK &&
        mengine_arena_size(&m, work, ws, &arena_bytes, msg, sizeof msg) != MENGINE_OK)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: %s", msg);
    if (st == MANTA_OK && !(arena = aligned_alloc(MENGINE_ARENA_ALIGN, round16(arena_bytes))))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK && (mengine_init(&e, &m, arena, arena_bytes) != MENGINE_OK ||
                           mengine_prepare(&e, msg, sizeof msg) != MENGINE_OK))
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: prepare: %s", msg);
    if (st == MANTA_OK && (mengine_input_count(&e) != (size_t)g->n_inputs ||
                           mengine_output_count(&e) != (size_t)g->n_outputs))
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "export check: the model's inputs or outputs do not match the graph");
    manta_rng rng;
    manta_rng_seed(&rng, seed, 7);
    for (int k = 0; st == MANTA_OK && k < g->n_inputs + g->n_outputs; k++) {
        const int is_in = k < g->n_inputs, i = is_in ? k : k - g->n_inputs;
        mengine_view v;
        if ((is_in ? mengine_input(&e, (size_t)i, &v) : mengine_output(&e, (size_t)i, &v)) !=
                MENGINE_OK ||
            (int)v.index != (is_in ? g->inputs[i] : g->outputs[i])) {
            st =
                manta_err_set(err, MANTA_ERR_FORMAT, "export check: model %s %d is not the graph's",
                              is_in ? "input" : "output", i);
            break;
        }
        float **p = is_in ? &in[i] : &ref[i];
        if (!(*p = malloc(v.count * sizeof **p))) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
            break;
        }
        for (size_t j = 0; is_in && j < v.count; j++)
            v.data[j] = in[i][j] = 2.0f * manta_rng_uniform(&rng) - 1.0f;
    }
    if (st == MANTA_OK && mengine_invoke(&e) != MENGINE_OK)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: invoke failed");
    if (st == MANTA_OK)
        st = xgraph_reference_tensors(g, (const float *const *)in, g->n_outputs, g->outputs, ref,
                                      err);
    double d = 0;
    for (int i = 0; st == MANTA_OK && i < g->n_outputs; i++) {
        mengine_view v;
        mengine_output(&e, (size_t)i, &v);
        for (size_t j = 0; j < v.count; j++)
            d = fmax(d, fabs((double)v.cdata[j] - ref[i][j]));
    }
    if (st == MANTA_OK)
        *max_diff = d;
    for (int i = 0; i < XG_MAX_IO; i++)
        free(in[i]), free(ref[i]);
    free(arena);
    free(work);
    return st;
}

manta_status tflite_check(const xgraph *g, const uint8_t *data, size_t size, uint64_t seed,
                          double *max_logit_diff, double *max_prob_diff, manta_err *err)
{
    if (!data || !max_logit_diff || !max_prob_diff)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "export check: NULL argument");
    MANTA_TRY(xgraph_validate(g, err));
    if (g->n_inputs > 0) {
        *max_prob_diff = -1.0;
        return check_multi(g, data, size, seed, max_logit_diff, err);
    }
    const xg_tensor *ti = &g->tensors[g->input], *tl = &g->tensors[g->logits];
    const size_t n_in = (size_t)ti->shape[0] * ti->shape[1] * ti->shape[2] * ti->shape[3];
    const size_t n_out = (size_t)tl->shape[0] * tl->shape[1];
    mengine_model m;
    mengine e;
    char msg[256];
    mengine_status est = mengine_model_load(&m, data, size, NULL, msg, sizeof msg);
    if (est != MENGINE_OK)
        return manta_err_set(err, MANTA_ERR_FORMAT, "export check: %s", msg);
    size_t arena_bytes = 0;
    const size_t ws = mengine_plan_work_size(&m);
    void *work = malloc(ws ? ws : 1);
    float *x = malloc(n_in * sizeof *x), *ref = malloc(n_out * sizeof *ref);
    uint8_t *arena = NULL;
    manta_status st = MANTA_OK;
    if (!work || !x || !ref)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK &&
        mengine_arena_size(&m, work, ws, &arena_bytes, msg, sizeof msg) != MENGINE_OK)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: %s", msg);
    if (st == MANTA_OK && !(arena = aligned_alloc(MENGINE_ARENA_ALIGN, round16(arena_bytes))))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "export check: out of memory");
    if (st == MANTA_OK && (mengine_init(&e, &m, arena, arena_bytes) != MENGINE_OK ||
                           mengine_prepare(&e, msg, sizeof msg) != MENGINE_OK))
        st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: prepare: %s", msg);
    mengine_view vin, vl, vo;
    if (st == MANTA_OK &&
        (mengine_input(&e, 0, &vin) != MENGINE_OK || vin.count != n_in ||
         mengine_tensor(&e, (size_t)g->logits, &vl) != MENGINE_OK || vl.count != n_out ||
         mengine_output(&e, 0, &vo) != MENGINE_OK || vo.count != n_out))
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "export check: the model's input, logits or output do not match the "
                           "graph");
    if (st == MANTA_OK) {
        manta_rng rng;
        manta_rng_seed(&rng, seed, 7);
        for (size_t i = 0; i < n_in; i++)
            x[i] = 2.0f * manta_rng_uniform(&rng) - 1.0f;
        if (vin.type == MENGINE_INT8) /* quantized, and the reference sees what it holds */
            for (size_t i = 0; i < n_in; i++) {
                const double q = round_half_away((double)x[i] / vin.scale) + vin.zero_point;
                ((int8_t *)vin.data)[i] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
                x[i] = vin.scale * (float)(((int8_t *)vin.data)[i] - vin.zero_point);
            }
        else
            memcpy(vin.data, x, n_in * sizeof *x);
        if (mengine_invoke(&e) != MENGINE_OK)
            st = manta_err_set(err, MANTA_ERR_FORMAT, "export check: invoke failed");
    }
    if (st == MANTA_OK)
        st = xgraph_reference(g, x, ref, err);
    /* The output is checked as the softmax of the logits when that is what the graph says. */
    int softmax_out = 0;
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].out == g->output)
            softmax_out = g->ops[i].kind == XG_SOFTMAX && g->ops[i].in0 == g->logits;
    if (st == MANTA_OK) {
        /* Probabilities: softmax of the reference logits, row by row. */
        const int rows = tl->shape[0], cols = tl->shape[1];
        double dl = 0, dp = 0;
        for (int r = 0; r < rows; r++) {
            const float *lr = ref + (size_t)r * cols;
            double mx = lr[0], sum = 0;
            for (int k = 1; k < cols; k++)
                mx = lr[k] > mx ? lr[k] : mx;
            for (int k = 0; k < cols; k++)
                sum += exp(lr[k] - mx);
            for (int k = 0; k < cols; k++) {
                const size_t i = (size_t)r * cols + k;
                const double p = exp(lr[k] - mx) / sum;
                const int q8 = vl.type == MENGINE_INT8;
                const int8_t *ql = (const int8_t *)vl.cdata, *qo = (const int8_t *)vo.cdata;
                const double l = q8 ? (double)vl.scale * (ql[i] - vl.zero_point) : vl.cdata[i];
                const double o = q8 ? (double)vo.scale * (qo[i] - vo.zero_point) : vo.cdata[i];
                dl = fmax(dl, fabs(l - lr[k]));
                dp = fmax(dp, fabs(o - p));
            }
        }
        *max_logit_diff = dl;
        *max_prob_diff = softmax_out ? dp : -1.0;
    }
    free(arena);
    free(work);
    free(x);
    free(ref);
    return st;
}
