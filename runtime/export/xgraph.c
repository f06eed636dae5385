#include "export/xgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xgraph_free(xgraph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_ops; i++) {
        free(g->ops[i].weights);
        free(g->ops[i].bias);
    }
    for (int i = 0; i < g->pre.n_labels; i++)
        free(g->pre.labels[i]);
    free(g->pre.labels);
    free(g->ops);
    free(g->tensors);
    free(g->qmin);
    free(g->qmax);
    memset(g, 0, sizeof *g);
}

/* Make room for element `count` (graphs hold a few hundred entries at most). */
static int grow(void **arr, int count, size_t elem)
{
    void *p = realloc(*arr, ((size_t)count + 1) * elem);
    if (!p)
        return -1;
    *arr = p;
    return 0;
}

int xgraph_add_tensor(xgraph *g, int rank, const int *shape, const char *name, manta_err *err)
{
    if (rank != 2 && rank != 4) {
        manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph tensor '%s': rank %d", name, rank);
        return -1;
    }
    if (grow((void **)&g->tensors, g->n_tensors, sizeof *g->tensors)) {
        manta_err_set(err, MANTA_ERR_NO_MEMORY, "graph: out of memory");
        return -1;
    }
    xg_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->rank = rank;
    memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    snprintf(t->name, sizeof t->name, "%s", name);
    return g->n_tensors++;
}

int xgraph_add_nhwc(xgraph *g, int h, int w, int c, const char *name, manta_err *err)
{
    const int shape[4] = {1, h, w, c};
    return xgraph_add_tensor(g, 4, shape, name, err);
}

int xgraph_conv_size(int in, int k, int stride) { return (in + 2 * (k / 2) - k) / stride + 1; }

int xgraph_add_op(xgraph *g, const xg_op *op, manta_err *err)
{
    int bad = op->n_ins < 0 || op->n_ins > XG_MAX_INPUTS;
    for (int k = 0; !bad && k < op->n_ins; k++)
        bad = op->ins[k] < 0 || op->ins[k] >= g->n_tensors;
    if (bad || op->in0 < 0 || op->in0 >= g->n_tensors || op->out < 0 || op->out >= g->n_tensors ||
        op->in1 >= g->n_tensors) {
        manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph op %d: tensor index out of range",
                      g->n_ops);
        return -1;
    }
    if (grow((void **)&g->ops, g->n_ops, sizeof *g->ops)) {
        manta_err_set(err, MANTA_ERR_NO_MEMORY, "graph: out of memory");
        return -1;
    }
    g->ops[g->n_ops] = *op;
    return g->n_ops++;
}

/* Append a tensor of @p shape (rank 4) named "<base><suffix>". */
static int add4(xgraph *g, const int *shape, const char *base, const char *suffix, manta_err *err)
{
    char name[XG_NAME_MAX];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    return xgraph_add_tensor(g, 4, shape, name, err);
}

int xgraph_add_correlation(xgraph *g, int left, int right, int max_disp, int stride,
                           const char *name, manta_err *err)
{
    if (!g || !name || left < 0 || left >= g->n_tensors || right < 0 || right >= g->n_tensors) {
        manta_err_set(err, MANTA_ERR_INVALID_ARG, "correlation: tensor index out of range");
        return -1;
    }
    const xg_tensor *tl = &g->tensors[left], *tr = &g->tensors[right];
    if (tl->rank != 4 || tr->rank != 4 || memcmp(tl->shape, tr->shape, sizeof tl->shape)) {
        manta_err_set(err, MANTA_ERR_INVALID_ARG,
                      "correlation '%s': left '%s' and right '%s' are not NHWC of one shape", name,
                      tl->name, tr->name);
        return -1;
    }
    if (max_disp < 0 || stride < 1 || max_disp / stride + 1 > XG_MAX_INPUTS) {
        manta_err_set(err, MANTA_ERR_INVALID_ARG,
                      "correlation '%s': max_disp %d, stride %d (at most %d displacements)", name,
                      max_disp, stride, XG_MAX_INPUTS);
        return -1;
    }
    const int D = max_disp / stride + 1, P = (D - 1) * stride;
    int feat[4], padded[4], map[4], outs[4];
    memcpy(feat, tl->shape, sizeof feat);
    memcpy(padded, feat, sizeof padded);
    padded[2] += P;
    memcpy(map, feat, sizeof map);
    map[3] = 1;
    memcpy(outs, feat, sizeof outs);
    outs[3] = D;
    xg_op cat = {.kind = XG_CONCAT, .in1 = -1, .n_ins = D};
    xg_op pad = {.kind = XG_PAD, .in0 = right, .in1 = -1, .pad = {0, 0, P, 0}};
    if ((pad.out = add4(g, padded, name, "/pad", err)) < 0 || xgraph_add_op(g, &pad, err) < 0)
        return -1;
    for (int i = 0; i < D; i++) {
        char sfx[24];
        xg_op sl = {.kind = XG_SLICE, .in0 = pad.out, .in1 = -1};
        sl.begin[2] = P - i * stride;
        memcpy(sl.size, feat, sizeof sl.size);
        snprintf(sfx, sizeof sfx, "/d%d", i);
        if ((sl.out = add4(g, feat, name, sfx, err)) < 0 || xgraph_add_op(g, &sl, err) < 0)
            return -1;
        xg_op mul = {.kind = XG_MUL, .in0 = left, .in1 = sl.out};
        snprintf(sfx, sizeof sfx, "/d%d/mul", i);
        if ((mul.out = add4(g, feat, name, sfx, err)) < 0 || xgraph_add_op(g, &mul, err) < 0)
            return -1;
        xg_op mean = {.kind = XG_MEAN_C, .in0 = mul.out, .in1 = -1};
        snprintf(sfx, sizeof sfx, "/d%d/mean", i);
        if ((mean.out = add4(g, map, name, sfx, err)) < 0 || xgraph_add_op(g, &mean, err) < 0)
            return -1;
        cat.ins[i] = mean.out;
    }
    cat.in0 = cat.ins[0];
    if ((cat.out = add4(g, outs, name, "", err)) < 0 || xgraph_add_op(g, &cat, err) < 0)
        return -1;
    return cat.out;
}
