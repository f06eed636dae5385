/* Checking and evaluating an export graph on the host.
 *
 * xgraph_validate() states every rule the .tflite writer and the reference
 * rely on, so that neither reads past a weight array or an activation.
 * xgraph_reference() is deliberately plain: one double array per tensor,
 * straightforward loops written from the TensorFlow Lite definitions, no
 * sharing with the engine's kernels. */
#include "export/xgraph.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XG_MAX_ELEMENTS 0x1fffffff /* as the engine: float tensors below 2 GiB */
#define XG_MAX_WINDOW 65536

static const char *kind_name(xg_kind k)
{
    switch (k) {
    case XG_CONV: return "CONV";
    case XG_DWCONV: return "DWCONV";
    case XG_PAD: return "PAD";
    case XG_ADD: return "ADD";
    case XG_MUL: return "MUL";
    case XG_HSWISH: return "HSWISH";
    case XG_MEAN: return "MEAN";
    case XG_RESHAPE: return "RESHAPE";
    case XG_FC: return "FC";
    case XG_SOFTMAX: return "SOFTMAX";
    case XG_TCONV: return "TCONV";
    case XG_CONCAT: return "CONCAT";
    case XG_LEAKY_RELU: return "LEAKY_RELU";
    case XG_MEAN_C: return "MEAN_C";
    case XG_SLICE: return "SLICE";
    case XG_RESIZE: return "RESIZE";
    case XG_REQUANT: return "REQUANT";
    }
    return "UNKNOWN";
}

static size_t tcount(const xg_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->shape[i];
    return n;
}

/* TFLite's output size of a window: SAME ceil(in / s), VALID ceil((in - k + 1) / s). */
static int window_out(int in, int k, int s, bool same)
{
    return same ? (in + s - 1) / s : (in - k + s) / s;
}

/* Padding before a SAME window: half of the total, the odd pixel after. */
static int pad_before(int in, int k, int s, int out, bool same)
{
    if (!same)
        return 0;
    const int total = (out - 1) * s + k - in;
    return total > 0 ? total / 2 : 0;
}

/* ---- validation ---- */

typedef struct vctx {
    const xgraph *g;
    int op;
    manta_err *err;
} vctx;

#define OPFAIL(c, ...) op_fail((c), __VA_ARGS__)

/* "graph op N (KIND, output 'name'): what" */
static manta_status op_fail(const vctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static manta_status op_fail(const vctx *c, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const xg_op *op = &c->g->ops[c->op];
    const char *out = op->out >= 0 && op->out < c->g->n_tensors ? c->g->tensors[op->out].name : "?";
    return manta_err_set(c->err, MANTA_ERR_INVALID_ARG, "graph op %d (%s, output '%s'): %s", c->op,
                         kind_name(op->kind), out, what);
}

static bool same_shape(const xg_tensor *a, const xg_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return false;
    return true;
}

static manta_status need_rank(const vctx *c, const xg_tensor *t, int rank, const char *what)
{
    return t->rank == rank
               ? MANTA_OK
               : OPFAIL(c, "%s '%s' has rank %d, expected %d", what, t->name, t->rank, rank);
}

static manta_status need_weights(const vctx *c, const xg_op *op, size_t n, const char *layout)
{
    if (op->n_weights != n || !op->weights)
        return OPFAIL(c, "%zu weights, expected %zu (%s)", op->n_weights, n, layout);
    return MANTA_OK;
}

static manta_status need_bias(const vctx *c, const xg_op *op, size_t n)
{
    if (op->bias && op->n_bias != n)
        return OPFAIL(c, "%zu bias values, expected %zu", op->n_bias, n);
    if (!op->bias && op->n_bias)
        return OPFAIL(c, "n_bias %zu without a bias array", op->n_bias);
    return MANTA_OK;
}

static manta_status check_window(const vctx *c, const xg_op *op, const xg_tensor *in,
                                 const xg_tensor *out, int cout)
{
    if (op->kh < 1 || op->kw < 1 || op->stride < 1 || op->kh > XG_MAX_WINDOW ||
        op->kw > XG_MAX_WINDOW || op->stride > XG_MAX_WINDOW)
        return OPFAIL(c, "kernel %dx%d stride %d out of range", op->kh, op->kw, op->stride);
    const int oh = window_out(in->shape[1], op->kh, op->stride, op->same);
    const int ow = window_out(in->shape[2], op->kw, op->stride, op->same);
    if (oh < 1 || ow < 1)
        return OPFAIL(c, "kernel %dx%d larger than the input %dx%d (VALID)", op->kh, op->kw,
                      in->shape[1], in->shape[2]);
    if (out->shape[0] != in->shape[0] || out->shape[1] != oh || out->shape[2] != ow ||
        out->shape[3] != cout)
        return OPFAIL(c, "output (%d, %d, %d, %d), expected (%d, %d, %d, %d) (%s, stride %d)",
                      out->shape[0], out->shape[1], out->shape[2], out->shape[3], in->shape[0], oh,
                      ow, cout, op->same ? "SAME" : "VALID", op->stride);
    return MANTA_OK;
}

static manta_status validate_op(const vctx *c)
{
    const xgraph *g = c->g;
    const xg_op *op = &g->ops[c->op];
    const xg_tensor *in = &g->tensors[op->in0], *out = &g->tensors[op->out];
    const xg_tensor *in1 = op->in1 >= 0 ? &g->tensors[op->in1] : NULL;
    const bool fusable = op->kind == XG_CONV || op->kind == XG_DWCONV || op->kind == XG_FC ||
                         op->kind == XG_ADD || op->kind == XG_MUL;
    if (op->act != XG_ACT_NONE && op->act != XG_ACT_RELU && op->act != XG_ACT_RELU6)
        return OPFAIL(c, "activation %d unsupported (NONE 0, RELU 1, RELU6 3)", (int)op->act);
    if (op->act != XG_ACT_NONE && !fusable)
        return OPFAIL(c, "a fused activation on an op that cannot fuse one");
    if ((op->kind == XG_ADD || op->kind == XG_MUL) != (in1 != NULL))
        return OPFAIL(c, in1 ? "second input given to a one-input op" : "second input missing");
    if (op->kind != XG_CONV && op->kind != XG_DWCONV && op->kind != XG_FC && op->kind != XG_TCONV &&
        (op->weights || op->n_weights || op->bias || op->n_bias))
        return OPFAIL(c, "weights or bias on an op that has none");
    if (op->kind != XG_CONCAT && op->n_ins)
        return OPFAIL(c, "an input list on an op other than CONCAT");
    manta_status st = MANTA_OK;
    switch (op->kind) {
    case XG_CONV: {
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")) ||
            (st = check_window(c, op, in, out, out->shape[3])))
            return st;
        const size_t cout = (size_t)out->shape[3];
        if ((st = need_weights(c, op, cout * op->kh * op->kw * (size_t)in->shape[3],
                               "OHWI (Cout, KH, KW, Cin)")))
            return st;
        return need_bias(c, op, cout);
    }
    case XG_DWCONV: {
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")) ||
            (st = check_window(c, op, in, out, in->shape[3])))
            return st;
        const size_t ch = (size_t)in->shape[3];
        if ((st = need_weights(c, op, ch * op->kh * op->kw, "(1, KH, KW, C)")))
            return st;
        return need_bias(c, op, ch);
    }
    case XG_PAD:
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")))
            return st;
        for (int i = 0; i < 4; i++)
            if (op->pad[i] < 0 || op->pad[i] > XG_MAX_WINDOW)
                return OPFAIL(c, "padding %d out of range", op->pad[i]);
        if (out->shape[0] != in->shape[0] || out->shape[3] != in->shape[3] ||
            out->shape[1] != in->shape[1] + op->pad[0] + op->pad[1] ||
            out->shape[2] != in->shape[2] + op->pad[2] + op->pad[3])
            return OPFAIL(c, "output (%d, %d, %d, %d) is not the input padded by (%d, %d, %d, %d)",
                          out->shape[0], out->shape[1], out->shape[2], out->shape[3], op->pad[0],
                          op->pad[1], op->pad[2], op->pad[3]);
        return MANTA_OK;
    case XG_ADD:
        if (!same_shape(in, out) || !same_shape(in1, out))
            return OPFAIL(c, "inputs '%s', '%s' and the output differ in shape", in->name,
                          in1->name);
        return MANTA_OK;
    case XG_MUL:
        if (!same_shape(in, out))
            return OPFAIL(c, "input '%s' and the output differ in shape", in->name);
        if (in1->rank != out->rank)
            return OPFAIL(c, "scale '%s' has rank %d, the output %d", in1->name, in1->rank,
                          out->rank);
        for (int i = 0; i < out->rank; i++)
            if (in1->shape[i] != out->shape[i] && in1->shape[i] != 1)
                return OPFAIL(c, "scale '%s' does not broadcast to the output (dim %d)", in1->name,
                              i);
        return MANTA_OK;
    case XG_HSWISH:
        return same_shape(in, out) ? MANTA_OK : OPFAIL(c, "input and output differ in shape");
    case XG_MEAN:
        if ((st = need_rank(c, in, 4, "input")))
            return st;
        if (out->rank == 4 && out->shape[0] == in->shape[0] && out->shape[1] == 1 &&
            out->shape[2] == 1 && out->shape[3] == in->shape[3])
            return MANTA_OK;
        if (out->rank == 2 && out->shape[0] == in->shape[0] && out->shape[1] == in->shape[3])
            return MANTA_OK;
        return OPFAIL(c, "output is not (N, 1, 1, C) or (N, C) of the input");
    case XG_RESHAPE:
        return tcount(in) == tcount(out)
                   ? MANTA_OK
                   : OPFAIL(c, "%zu values in, %zu out", tcount(in), tcount(out));
    case XG_FC: {
        if ((st = need_rank(c, out, 2, "output")))
            return st;
        const size_t batches = (size_t)out->shape[0], units = (size_t)out->shape[1];
        if (tcount(in) % batches || in->shape[0] != out->shape[0])
            return OPFAIL(c, "input '%s' does not hold %zu rows", in->name, batches);
        const size_t depth = tcount(in) / batches;
        if ((st = need_weights(c, op, units * depth, "(units, in)")))
            return st;
        return need_bias(c, op, units);
    }
    case XG_SOFTMAX:
        if ((st = need_rank(c, in, 2, "input")))
            return st;
        return same_shape(in, out) ? MANTA_OK : OPFAIL(c, "input and output differ in shape");
    case XG_TCONV: {
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")))
            return st;
        /* the convolution with these parameters maps out to in */
        if (op->kh < 1 || op->kw < 1 || op->stride < 1 || op->kh > XG_MAX_WINDOW ||
            op->kw > XG_MAX_WINDOW || op->stride > XG_MAX_WINDOW)
            return OPFAIL(c, "kernel %dx%d stride %d out of range", op->kh, op->kw, op->stride);
        const int ih = window_out(out->shape[1], op->kh, op->stride, op->same);
        const int iw = window_out(out->shape[2], op->kw, op->stride, op->same);
        if (in->shape[0] != out->shape[0] || ih != in->shape[1] || iw != in->shape[2])
            return OPFAIL(c,
                          "output (%d, %d, %d, %d) does not come from the input's %dx%d with "
                          "kernel %dx%d, stride %d, %s (it gives %dx%d)",
                          out->shape[0], out->shape[1], out->shape[2], out->shape[3], in->shape[1],
                          in->shape[2], op->kh, op->kw, op->stride, op->same ? "SAME" : "VALID", ih,
                          iw);
        const size_t cout = (size_t)out->shape[3];
        if ((st = need_weights(c, op, cout * op->kh * op->kw * (size_t)in->shape[3],
                               "OHWI (Cout, KH, KW, Cin)")))
            return st;
        return need_bias(c, op, cout);
    }
    case XG_CONCAT: {
        if ((st = need_rank(c, out, 4, "output")))
            return st;
        if (op->n_ins < 1 || op->n_ins > XG_MAX_INPUTS || op->ins[0] != op->in0)
            return OPFAIL(c, "%d inputs (1 to %d, in0 the first)", op->n_ins, XG_MAX_INPUTS);
        long sum = 0;
        for (int k = 0; k < op->n_ins; k++) {
            const xg_tensor *t = &g->tensors[op->ins[k]];
            if (t->rank != 4 || t->shape[0] != out->shape[0] || t->shape[1] != out->shape[1] ||
                t->shape[2] != out->shape[2])
                return OPFAIL(c, "input %d '%s' differs from the output outside the channels", k,
                              t->name);
            sum += t->shape[3];
        }
        return sum == out->shape[3]
                   ? MANTA_OK
                   : OPFAIL(c, "inputs have %ld channels, the output %d", sum, out->shape[3]);
    }
    case XG_REQUANT:
        return same_shape(in, out) ? MANTA_OK : OPFAIL(c, "input and output differ in shape");
    case XG_LEAKY_RELU:
        if (!isfinite(op->alpha))
            return OPFAIL(c, "alpha is not finite");
        return same_shape(in, out) ? MANTA_OK : OPFAIL(c, "input and output differ in shape");
    case XG_MEAN_C:
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")))
            return st;
        if (out->shape[0] != in->shape[0] || out->shape[1] != in->shape[1] ||
            out->shape[2] != in->shape[2] || out->shape[3] != 1)
            return OPFAIL(c, "output is not (N, H, W, 1) of the input");
        return MANTA_OK;
    case XG_SLICE:
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")))
            return st;
        for (int k = 0; k < 4; k++) {
            if (op->begin[k] < 0 || op->size[k] < 1 || op->begin[k] >= in->shape[k] ||
                op->size[k] > in->shape[k] - op->begin[k])
                return OPFAIL(c, "begin[%d] %d, size[%d] %d run past dim %d of '%s' (%d)", k,
                              op->begin[k], k, op->size[k], k, in->name, in->shape[k]);
            if (out->shape[k] != op->size[k])
                return OPFAIL(c, "output dim %d is %d, the slice's size %d", k, out->shape[k],
                              op->size[k]);
        }
        return MANTA_OK;
    case XG_RESIZE:
        if ((st = need_rank(c, in, 4, "input")) || (st = need_rank(c, out, 4, "output")))
            return st;
        if (out->shape[0] != in->shape[0] || out->shape[3] != in->shape[3])
            return OPFAIL(c, "output (%d, ..., %d) differs from the input in N or C", out->shape[0],
                          out->shape[3]);
        return MANTA_OK;
    }
    return OPFAIL(c, "unknown kind %d", (int)op->kind);
}

manta_status xgraph_validate(const xgraph *g, manta_err *err)
{
    if (!g || !g->tensors || !g->ops || g->n_tensors < 2 || g->n_ops < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: no tensors or no ops");
    for (int i = 0; i < g->n_tensors; i++) {
        const xg_tensor *t = &g->tensors[i];
        if (t->rank != 2 && t->rank != 4)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph tensor %d '%s': rank %d", i,
                                 t->name, t->rank);
        size_t n = 1;
        for (int k = 0; k < t->rank; k++) {
            if (t->shape[k] < 1 || n > XG_MAX_ELEMENTS / (size_t)t->shape[k])
                return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                     "graph tensor %d '%s': dim %d is %d (or the tensor is too "
                                     "large)",
                                     i, t->name, k, t->shape[k]);
            n *= (size_t)t->shape[k];
        }
    }
    const int multi = g->n_inputs > 0;
    if (multi) {
        if (g->n_inputs > XG_MAX_IO || g->n_outputs < 1 || g->n_outputs > XG_MAX_IO)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "graph: %d inputs and %d outputs (1 to %d each)", g->n_inputs,
                                 g->n_outputs, XG_MAX_IO);
        for (int k = 0; k < g->n_inputs + g->n_outputs; k++) {
            const int in = k < g->n_inputs, t = in ? g->inputs[k] : g->outputs[k - g->n_inputs];
            if (t < 0 || t >= g->n_tensors)
                return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: %s tensor %d out of range",
                                     in ? "input" : "output", t);
            if (in && g->tensors[t].rank != 4)
                return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: input '%s' is not NHWC",
                                     g->tensors[t].name);
            for (int j = 0; j < k; j++)
                if ((j < g->n_inputs ? g->inputs[j] : g->outputs[j - g->n_inputs]) == t)
                    return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                         "graph: tensor '%s' listed twice as an input or output",
                                         g->tensors[t].name);
        }
    } else {
        const int idx[3] = {g->input, g->logits, g->output};
        static const char *const what[3] = {"input", "logits", "output"};
        for (int k = 0; k < 3; k++)
            if (idx[k] < 0 || idx[k] >= g->n_tensors)
                return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: %s tensor %d out of range",
                                     what[k], idx[k]);
        if (g->tensors[g->input].rank != 4)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: input '%s' is not NHWC",
                                 g->tensors[g->input].name);
        if (g->tensors[g->logits].rank != 2 ||
            !same_shape(&g->tensors[g->logits], &g->tensors[g->output]) || g->logits == g->output)
            return manta_err_set(
                err, MANTA_ERR_INVALID_ARG,
                "graph: logits '%s' and output '%s' must be distinct (N, K) tensors",
                g->tensors[g->logits].name, g->tensors[g->output].name);
    }
    unsigned char *written = calloc((size_t)g->n_tensors, 1);
    if (!written)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "graph: out of memory");
    if (multi)
        for (int k = 0; k < g->n_inputs; k++)
            written[g->inputs[k]] = 1;
    else
        written[g->input] = 1;
    manta_status st = MANTA_OK;
    for (int i = 0; i < g->n_ops && st == MANTA_OK; i++) {
        const xg_op *op = &g->ops[i];
        const vctx c = {g, i, err};
        int unread = -1; /* an input read before any op writes it */
        if (op->in0 < 0 || op->in0 >= g->n_tensors || op->out < 0 || op->out >= g->n_tensors ||
            op->in1 < -1 || op->in1 >= g->n_tensors || op->n_ins < 0 || op->n_ins > XG_MAX_INPUTS) {
            st = OPFAIL(&c, "tensor index out of range");
            break;
        }
        for (int k = 0; k < op->n_ins && st == MANTA_OK; k++)
            if (op->ins[k] < 0 || op->ins[k] >= g->n_tensors)
                st = OPFAIL(&c, "input %d: tensor index out of range", k);
            else if (!written[op->ins[k]] && unread < 0)
                unread = op->ins[k];
        if (st != MANTA_OK)
            break;
        if (unread >= 0)
            st = OPFAIL(&c, "reads '%s' before any op writes it", g->tensors[unread].name);
        else if (!written[op->in0] || (op->in1 >= 0 && !written[op->in1]))
            st = OPFAIL(&c, "reads '%s' before any op writes it",
                        g->tensors[written[op->in0] ? op->in1 : op->in0].name);
        else if (written[op->out])
            st = OPFAIL(&c, "writes '%s' a second time", g->tensors[op->out].name);
        else
            st = validate_op(&c);
        if (st == MANTA_OK)
            written[op->out] = 1;
    }
    for (int k = 0; multi && st == MANTA_OK && k < g->n_outputs; k++)
        if (!written[g->outputs[k]])
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: no op writes the output '%s'",
                               g->tensors[g->outputs[k]].name);
    for (int k = 0; multi && st == MANTA_OK && k < g->n_inputs; k++)
        if (g->pre.channels && g->tensors[g->inputs[k]].shape[3] != g->pre.channels)
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                               "graph: input '%s' has %d channels, the preprocessing says %d",
                               g->tensors[g->inputs[k]].name, g->tensors[g->inputs[k]].shape[3],
                               g->pre.channels);
    if (!multi && st == MANTA_OK && (!written[g->logits] || !written[g->output]))
        st = manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: no op writes the %s tensor '%s'",
                           written[g->logits] ? "output" : "logits",
                           g->tensors[written[g->logits] ? g->output : g->logits].name);
    if (!multi && st == MANTA_OK) {
        const xg_tensor *in = &g->tensors[g->input];
        if (g->pre.resolution &&
            (in->shape[1] != g->pre.resolution || in->shape[2] != g->pre.resolution))
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                               "graph: input '%s' is %dx%d, the preprocessing says %d", in->name,
                               in->shape[1], in->shape[2], g->pre.resolution);
        else if (g->pre.channels && in->shape[3] != g->pre.channels)
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                               "graph: input '%s' has %d channels, the preprocessing says %d",
                               in->name, in->shape[3], g->pre.channels);
        else if (g->pre.n_labels && g->pre.n_labels != g->tensors[g->logits].shape[1])
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph: %d labels for %d classes",
                               g->pre.n_labels, g->tensors[g->logits].shape[1]);
    }
    free(written);
    return st;
}

/* ---- reference ---- */

static double act(xg_act a, double v)
{
    switch (a) {
    case XG_ACT_RELU: return v < 0 ? 0 : v;
    case XG_ACT_RELU6: return v < 0 ? 0 : (v > 6 ? 6 : v);
    case XG_ACT_NONE: break;
    }
    return v;
}

/* out (N, OH, OW, Cout); weights OHWI (Cout, KH, KW, Cin), or (1, KH, KW, C) when depthwise. */
static void ref_conv(const xg_op *op, const xg_tensor *ti, const double *x, const xg_tensor *to,
                     double *y, bool depthwise)
{
    const int N = ti->shape[0], H = ti->shape[1], W = ti->shape[2], CI = ti->shape[3];
    const int OH = to->shape[1], OW = to->shape[2], CO = to->shape[3];
    const int s = op->stride, KH = op->kh, KW = op->kw;
    const int pt = pad_before(H, KH, s, OH, op->same), pl = pad_before(W, KW, s, OW, op->same);
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++)
                for (int co = 0; co < CO; co++) {
                    double sum = op->bias ? op->bias[co] : 0.0;
                    for (int kh = 0; kh < KH; kh++) {
                        const int ih = oh * s - pt + kh;
                        if (ih < 0 || ih >= H)
                            continue;
                        for (int kw = 0; kw < KW; kw++) {
                            const int iw = ow * s - pl + kw;
                            if (iw < 0 || iw >= W)
                                continue;
                            const double *px = x + (((size_t)n * H + ih) * W + iw) * CI;
                            if (depthwise) {
                                sum += px[co] * op->weights[((size_t)kh * KW + kw) * CO + co];
                            } else {
                                const float *pw =
                                    op->weights + (((size_t)co * KH + kh) * KW + kw) * CI;
                                for (int ci = 0; ci < CI; ci++)
                                    sum += px[ci] * pw[ci];
                            }
                        }
                    }
                    y[(((size_t)n * OH + oh) * OW + ow) * CO + co] = act(op->act, sum);
                }
}

static void ref_pad(const xg_op *op, const xg_tensor *ti, const double *x, const xg_tensor *to,
                    double *y)
{
    const int N = ti->shape[0], H = ti->shape[1], W = ti->shape[2], C = ti->shape[3];
    const int OH = to->shape[1], OW = to->shape[2];
    for (size_t i = 0; i < tcount(to); i++)
        y[i] = 0.0;
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++)
                for (int c = 0; c < C; c++)
                    y[(((size_t)n * OH + h + op->pad[0]) * OW + w + op->pad[2]) * C + c] =
                        x[(((size_t)n * H + h) * W + w) * C + c];
}

/* out = act(a * b) with b broadcast along its dims of size 1 (same rank as out). */
static void ref_mul(const xg_op *op, const xg_tensor *to, const double *a, const xg_tensor *tb,
                    const double *b, double *y)
{
    const size_t n = tcount(to);
    for (size_t i = 0; i < n; i++) {
        size_t rest = i, bi = 0, stride = 1;
        for (int k = to->rank - 1; k >= 0; k--) {
            const size_t idx = rest % (size_t)to->shape[k];
            rest /= (size_t)to->shape[k];
            if (tb->shape[k] != 1)
                bi += idx * stride;
            stride *= (size_t)tb->shape[k];
        }
        y[i] = act(op->act, a[i] * b[bi]);
    }
}

static void ref_mean(const xg_tensor *ti, const double *x, double *y)
{
    const int N = ti->shape[0], HW = ti->shape[1] * ti->shape[2], C = ti->shape[3];
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double s = 0;
            for (int i = 0; i < HW; i++)
                s += x[((size_t)n * HW + i) * C + c];
            y[(size_t)n * C + c] = s / HW;
        }
}

static void ref_fc(const xg_op *op, const xg_tensor *to, const double *x, double *y)
{
    const size_t batches = (size_t)to->shape[0], units = (size_t)to->shape[1];
    const size_t depth = op->n_weights / units;
    for (size_t b = 0; b < batches; b++)
        for (size_t u = 0; u < units; u++) {
            double s = op->bias ? op->bias[u] : 0.0;
            for (size_t i = 0; i < depth; i++)
                s += x[b * depth + i] * op->weights[u * depth + i];
            y[b * units + u] = act(op->act, s);
        }
}

static void ref_softmax(const xg_tensor *t, const double *x, double *y)
{
    const int rows = t->shape[0], cols = t->shape[1];
    for (int r = 0; r < rows; r++) {
        const double *px = x + (size_t)r * cols;
        double *py = y + (size_t)r * cols, mx = px[0], sum = 0;
        for (int c = 1; c < cols; c++)
            mx = px[c] > mx ? px[c] : mx;
        for (int c = 0; c < cols; c++)
            sum += (py[c] = exp(px[c] - mx));
        for (int c = 0; c < cols; c++)
            py[c] /= sum;
    }
}

/* out (N, OH, OW, Cout) = sum over the input pixels and taps landing on each
 * output pixel, oh = ih * s - pad_top + kh (TFLite's TRANSPOSE_CONV, padding
 * from the convolution that maps out to in); weights OHWI. */
static void ref_tconv(const xg_op *op, const xg_tensor *ti, const double *x, const xg_tensor *to,
                      double *y)
{
    const int N = ti->shape[0], H = ti->shape[1], W = ti->shape[2], CI = ti->shape[3];
    const int OH = to->shape[1], OW = to->shape[2], CO = to->shape[3];
    const int s = op->stride, KH = op->kh, KW = op->kw;
    const int pt = pad_before(OH, KH, s, H, op->same), pl = pad_before(OW, KW, s, W, op->same);
    for (size_t i = 0; i < tcount(to); i++)
        y[i] = op->bias ? op->bias[i % (size_t)CO] : 0.0;
    for (int n = 0; n < N; n++)
        for (int ih = 0; ih < H; ih++)
            for (int iw = 0; iw < W; iw++)
                for (int kh = 0; kh < KH; kh++) {
                    const int oh = ih * s - pt + kh;
                    if (oh < 0 || oh >= OH)
                        continue;
                    for (int kw = 0; kw < KW; kw++) {
                        const int ow = iw * s - pl + kw;
                        if (ow < 0 || ow >= OW)
                            continue;
                        const double *px = x + (((size_t)n * H + ih) * W + iw) * CI;
                        double *py = y + (((size_t)n * OH + oh) * OW + ow) * CO;
                        for (int co = 0; co < CO; co++) {
                            const float *pw = op->weights + (((size_t)co * KH + kh) * KW + kw) * CI;
                            for (int ci = 0; ci < CI; ci++)
                                py[co] += px[ci] * pw[ci];
                        }
                    }
                }
}

static void ref_concat(const xgraph *g, const xg_op *op, double *const *v, const xg_tensor *to,
                       double *y)
{
    const size_t pixels = tcount(to) / (size_t)to->shape[3];
    size_t off = 0;
    for (int k = 0; k < op->n_ins; k++) {
        const size_t c = (size_t)g->tensors[op->ins[k]].shape[3];
        const double *x = v[op->ins[k]];
        for (size_t p = 0; p < pixels; p++)
            for (size_t i = 0; i < c; i++)
                y[p * (size_t)to->shape[3] + off + i] = x[p * c + i];
        off += c;
    }
}

static void ref_slice(const xg_op *op, const xg_tensor *ti, const double *x, const xg_tensor *to,
                      double *y)
{
    const int *d = ti->shape, *b = op->begin;
    size_t k = 0;
    for (int n = 0; n < to->shape[0]; n++)
        for (int h = 0; h < to->shape[1]; h++)
            for (int w = 0; w < to->shape[2]; w++)
                for (int c = 0; c < to->shape[3]; c++)
                    y[k++] =
                        x[(((size_t)(b[0] + n) * d[1] + (b[1] + h)) * d[2] + (b[2] + w)) * d[3] +
                          (b[3] + c)];
}

/* Source of output index o of an axis resized from n to m, half-pixel centres. */
static void resize_src(int o, int n, int m, int *i0, int *i1, double *frac)
{
    double src = (o + 0.5) * n / m - 0.5;
    src = src < 0 ? 0 : src;
    *i0 = (int)floor(src);
    *i1 = *i0 + 1 < n ? *i0 + 1 : n - 1;
    *frac = src - *i0;
}

static void ref_resize(const xg_tensor *ti, const double *x, const xg_tensor *to, double *y)
{
    const int N = ti->shape[0], H = ti->shape[1], W = ti->shape[2], C = ti->shape[3];
    const int OH = to->shape[1], OW = to->shape[2];
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < OH; oh++) {
            int y0, y1, x0, x1;
            double fy, fx;
            resize_src(oh, H, OH, &y0, &y1, &fy);
            for (int ow = 0; ow < OW; ow++) {
                resize_src(ow, W, OW, &x0, &x1, &fx);
                for (int c = 0; c < C; c++) {
#define AT(yy, xx) x[(((size_t)n * H + (yy)) * W + (xx)) * C + c]
                    y[(((size_t)n * OH + oh) * OW + ow) * C + c] =
                        (1 - fy) * ((1 - fx) * AT(y0, x0) + fx * AT(y0, x1)) +
                        fy * ((1 - fx) * AT(y1, x0) + fx * AT(y1, x1));
#undef AT
                }
            }
        }
}

/* Every tensor's value (v[t], NULL for tensors nothing writes). */
static manta_status evaluate(const xgraph *g, const float *const *inputs, double **v,
                             manta_err *err)
{
    const int n_in = g->n_inputs > 0 ? g->n_inputs : 1;
    for (int k = 0; k < n_in; k++) {
        const int t = g->n_inputs > 0 ? g->inputs[k] : g->input;
        const size_t n = tcount(&g->tensors[t]);
        if (!inputs[k])
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph reference: input %d is NULL",
                                 k);
        v[t] = malloc(n * sizeof **v);
        if (!v[t])
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "graph reference: out of memory");
        for (size_t i = 0; i < n; i++)
            v[t][i] = inputs[k][i];
    }
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *op = &g->ops[i];
        const xg_tensor *ti = &g->tensors[op->in0], *to = &g->tensors[op->out];
        const double *x = v[op->in0];
        const size_t n = tcount(to);
        double *y = malloc(n * sizeof *y);
        if (!y)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                 "graph reference: out of memory for '%s' (%zu values)", to->name,
                                 n);
        v[op->out] = y;
        switch (op->kind) {
        case XG_CONV: ref_conv(op, ti, x, to, y, false); break;
        case XG_DWCONV: ref_conv(op, ti, x, to, y, true); break;
        case XG_PAD: ref_pad(op, ti, x, to, y); break;
        case XG_ADD:
            for (size_t k = 0; k < n; k++)
                y[k] = act(op->act, x[k] + v[op->in1][k]);
            break;
        case XG_MUL: ref_mul(op, to, x, &g->tensors[op->in1], v[op->in1], y); break;
        case XG_HSWISH:
            for (size_t k = 0; k < n; k++) {
                const double r = x[k] + 3.0;
                y[k] = x[k] * (r < 0 ? 0 : (r > 6 ? 6 : r)) / 6.0;
            }
            break;
        case XG_MEAN: ref_mean(ti, x, y); break;
        case XG_RESHAPE:
        case XG_REQUANT: memcpy(y, x, n * sizeof *y); break;
        case XG_FC: ref_fc(op, to, x, y); break;
        case XG_SOFTMAX: ref_softmax(ti, x, y); break;
        case XG_TCONV: ref_tconv(op, ti, x, to, y); break;
        case XG_CONCAT: ref_concat(g, op, v, to, y); break;
        case XG_LEAKY_RELU:
            for (size_t k = 0; k < n; k++)
                y[k] = x[k] >= 0 ? x[k] : (double)op->alpha * x[k];
            break;
        case XG_MEAN_C: {
            const size_t C = (size_t)ti->shape[3];
            for (size_t p = 0; p < n; p++) {
                double sum = 0;
                for (size_t c = 0; c < C; c++)
                    sum += x[p * C + c];
                y[p] = sum / (double)C;
            }
            break;
        }
        case XG_SLICE: ref_slice(op, ti, x, to, y); break;
        case XG_RESIZE: ref_resize(ti, x, to, y); break;
        }
    }
    return MANTA_OK;
}

manta_status xgraph_reference_tensors(const xgraph *g, const float *const *inputs, int n_want,
                                      const int *want, float *const *values, manta_err *err)
{
    if (!inputs || (n_want > 0 && (!want || !values)))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph reference: NULL argument");
    MANTA_TRY(xgraph_validate(g, err));
    for (int k = 0; k < n_want; k++)
        if (want[k] < 0 || want[k] >= g->n_tensors || !values[k])
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "graph reference: wanted tensor %d out of range or no array",
                                 want[k]);
    double **v = calloc((size_t)g->n_tensors, sizeof *v);
    if (!v)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "graph reference: out of memory");
    manta_status st = evaluate(g, inputs, v, err);
    for (int k = 0; st == MANTA_OK && k < n_want; k++) {
        const double *x = v[want[k]];
        if (!x) {
            st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                               "graph reference: tensor %d '%s' is computed by no op", want[k],
                               g->tensors[want[k]].name);
            break;
        }
        for (size_t i = 0; i < tcount(&g->tensors[want[k]]); i++)
            values[k][i] = (float)x[i];
    }
    for (int i = 0; i < g->n_tensors; i++)
        free(v[i]);
    free(v);
    return st;
}

manta_status xgraph_reference(const xgraph *g, const float *input, float *logits, manta_err *err)
{
    if (!input || !logits)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph reference: NULL input or logits");
    if (g && g->n_inputs > 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "graph reference: a graph of %d inputs (xgraph_reference_tensors())",
                             g->n_inputs);
    const int want = g ? g->logits : 0;
    return xgraph_reference_tensors(g, &input, 1, &want, &logits, err);
}
