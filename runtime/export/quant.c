/* int8 calibration (see quant.h): per-tensor ranges from the float reference. */
#include "export/quant.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_BINS 4096

static size_t tensor_count(const xg_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->shape[i];
    return n;
}

manta_status xgraph_calibrate(xgraph *g, const float *images, int n, xg_calib method, double pct,
                              manta_err *err)
{
    if (!g || !images || n < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "calibration: no images");
    if (method == XG_CALIB_PERCENTILE && !(pct > 50.0 && pct <= 100.0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "calibration: percentile %g (50 < p <= 100)", pct);
    MANTA_TRY(xgraph_validate(g, err));
    const int nt = g->n_tensors, n_in = g->n_inputs > 0 ? g->n_inputs : 1;
    size_t in_count = 0, in_off[XG_MAX_IO];
    for (int k = 0; k < n_in; k++) { /* a sample: every model input, one after the other */
        in_off[k] = in_count;
        in_count += tensor_count(&g->tensors[g->n_inputs > 0 ? g->inputs[k] : g->input]);
    }
    int *want = malloc((size_t)nt * sizeof *want);
    float **vals = calloc((size_t)nt, sizeof *vals);
    float *lo = malloc((size_t)nt * sizeof *lo), *hi = malloc((size_t)nt * sizeof *hi);
    uint32_t *hist =
        method == XG_CALIB_PERCENTILE ? calloc((size_t)nt * N_BINS, sizeof *hist) : NULL;
    manta_status st = want && vals && lo && hi && (hist || method != XG_CALIB_PERCENTILE)
                          ? MANTA_OK
                          : manta_err_set(err, MANTA_ERR_NO_MEMORY, "calibration: out of memory");
    for (int t = 0; st == MANTA_OK && t < nt; t++) {
        want[t] = t;
        lo[t] = INFINITY;
        hi[t] = -INFINITY;
        if (!(vals[t] = malloc(tensor_count(&g->tensors[t]) * sizeof **vals)))
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "calibration: out of memory");
    }
    const int passes = method == XG_CALIB_PERCENTILE ? 2 : 1;
    for (int pass = 0; pass < passes && st == MANTA_OK; pass++)
        for (int i = 0; i < n && st == MANTA_OK; i++) {
            const float *x[XG_MAX_IO];
            for (int k = 0; k < n_in; k++)
                x[k] = images + (size_t)i * in_count + in_off[k];
            st = xgraph_reference_tensors(g, x, nt, want, vals, err);
            for (int t = 0; st == MANTA_OK && t < nt; t++) {
                const size_t c = tensor_count(&g->tensors[t]);
                const float *v = vals[t];
                if (pass == 0) {
                    for (size_t k = 0; k < c; k++) {
                        lo[t] = v[k] < lo[t] ? v[k] : lo[t];
                        hi[t] = v[k] > hi[t] ? v[k] : hi[t];
                    }
                    continue;
                }
                const double w = hi[t] > lo[t] ? (double)(hi[t] - lo[t]) : 1.0;
                uint32_t *h = hist + (size_t)t * N_BINS;
                for (size_t k = 0; k < c; k++) {
                    long b = (long)((v[k] - lo[t]) / w * N_BINS);
                    h[b < 0 ? 0 : b >= N_BINS ? N_BINS - 1 : b]++;
                }
            }
        }
    if (st == MANTA_OK && method == XG_CALIB_PERCENTILE)
        for (int t = 0; t < nt; t++) { /* clip both tails at the percentile */
            const uint32_t *h = hist + (size_t)t * N_BINS;
            const double total = (double)tensor_count(&g->tensors[t]) * n;
            const double tail = total * (100.0 - pct) / 100.0, w = (double)(hi[t] - lo[t]);
            double acc = 0;
            int a = 0, b = N_BINS - 1;
            while (a < N_BINS - 1 && acc + h[a] <= tail)
                acc += h[a++];
            acc = 0;
            while (b > a && acc + h[b] <= tail)
                acc += h[b--];
            const float nlo = (float)(lo[t] + w * a / N_BINS);
            const float nhi = (float)(lo[t] + w * (b + 1) / N_BINS);
            lo[t] = nlo;
            hi[t] = nhi > nlo ? nhi : nlo;
        }
    if (st == MANTA_OK) {
        free(g->qmin);
        free(g->qmax);
        g->qmin = lo;
        g->qmax = hi;
        lo = hi = NULL;
    }
    for (int t = 0; vals && t < nt; t++)
        free(vals[t]);
    free(vals);
    free(want);
    free(lo);
    free(hi);
    free(hist);
    return st;
}

/* Insert an XG_REQUANT of tensor @p src (output: a new tensor of its shape named
 * "<name>/q<k>") before operator @p pos. Returns the new tensor or -1. */
static int insert_requant(xgraph *g, int pos, int src, int k, manta_err *err)
{
    const xg_tensor *t = &g->tensors[src];
    char name[XG_NAME_MAX + 16]; /* "<40 chars>/q<k>", k < XG_MAX_INPUTS: fits XG_NAME_MAX */
    snprintf(name, sizeof name, "%.*s/q%d", XG_NAME_MAX - 8, t->name, k);
    const int shape[4] = {t->shape[0], t->shape[1], t->shape[2], t->shape[3]};
    const int nt = xgraph_add_tensor(g, t->rank, shape, name, err);
    if (nt < 0)
        return -1;
    const xg_op op = {.kind = XG_REQUANT, .in0 = src, .in1 = -1, .out = nt};
    if (xgraph_add_op(g, &op, err) < 0)
        return -1;
    memmove(&g->ops[pos + 1], &g->ops[pos], (size_t)(g->n_ops - 1 - pos) * sizeof *g->ops);
    g->ops[pos] = op;
    return nt;
}

/* How many operators read tensor @p t (a model output counts as a reader). */
static int readers(const xgraph *g, int t)
{
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *op = &g->ops[i];
        if (op->kind == XG_CONCAT) {
            for (int k = 0; k < op->n_ins; k++)
                n += op->ins[k] == t;
        } else
            n += (op->in0 == t) + (op->in1 == t);
    }
    for (int k = 0; k < g->n_outputs; k++)
        n += g->outputs[k] == t;
    return n + (g->n_inputs == 0 && (t == g->logits || t == g->output));
}

/* The operator writing tensor @p t, or -1 (a model input). */
static int writer(const xgraph *g, int t)
{
    for (int i = 0; i < g->n_ops; i++)
        if (g->ops[i].out == t)
            return i;
    return -1;
}

manta_status xgraph_quant_prepare(xgraph *g, manta_err *err)
{
    if (!g || g->qmin || g->qmax)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "int8 export: the graph is calibrated already");
    for (int i = 0; i < g->n_ops; i++) {
        if (g->ops[i].kind != XG_CONCAT)
            continue;
        for (int k = 0; k < g->ops[i].n_ins; k++) {
            const int t = g->ops[i].ins[k], w = writer(g, t);
            const xg_kind wk = w >= 0 ? g->ops[w].kind : XG_PAD;
            const int requantizes = wk == XG_CONV || wk == XG_DWCONV || wk == XG_TCONV ||
                                    wk == XG_LEAKY_RELU || wk == XG_MEAN_C || wk == XG_MEAN ||
                                    wk == XG_MUL || wk == XG_ADD || wk == XG_REQUANT;
            if (w >= 0 && requantizes && readers(g, t) == 1)
                continue;
            const int q = insert_requant(g, i, t, k, err);
            if (q < 0)
                return err ? err->code : MANTA_ERR_NO_MEMORY;
            i++; /* the concatenation moved one on */
            g->ops[i].ins[k] = q;
            if (k == 0)
                g->ops[i].in0 = q;
        }
    }
    return xgraph_validate(g, err);
}

manta_status xgraph_quant_shared(xgraph *g, manta_err *err)
{
    if (!g || !g->qmin || !g->qmax)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "int8 export: no calibrated ranges");
    /* the correlation's MULs: one range (the fused int8 kernel's one quantization) */
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *cat = &g->ops[i];
        int ok = cat->kind == XG_CONCAT, muls[XG_MAX_INPUTS];
        for (int k = 0; ok && k < cat->n_ins; k++) {
            const int m = writer(g, cat->ins[k]);
            const int p = m >= 0 && g->ops[m].kind == XG_MEAN_C ? writer(g, g->ops[m].in0) : -1;
            ok = p >= 0 && g->ops[p].kind == XG_MUL;
            muls[k] = ok ? g->ops[p].out : -1;
        }
        if (!ok)
            continue;
        float lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < cat->n_ins; k++)
            lo = fminf(lo, g->qmin[muls[k]]), hi = fmaxf(hi, g->qmax[muls[k]]);
        for (int k = 0; k < cat->n_ins; k++)
            g->qmin[muls[k]] = lo, g->qmax[muls[k]] = hi;
    }
    /* every CONCATENATION's inputs: its output's range */
    for (int i = 0; i < g->n_ops; i++) {
        const xg_op *op = &g->ops[i];
        for (int k = 0; op->kind == XG_CONCAT && k < op->n_ins; k++) {
            const int t = op->ins[k], w = writer(g, t);
            if (w < 0 || readers(g, t) != 1)
                return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                     "int8 export: input '%s' of the concatenation '%s' is read "
                                     "elsewhere (xgraph_quant_prepare() first)",
                                     g->tensors[t].name, g->tensors[op->out].name);
            g->qmin[t] = g->qmin[op->out];
            g->qmax[t] = g->qmax[op->out];
        }
    }
    return MANTA_OK;
}
