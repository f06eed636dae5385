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

int xgraph_add_op(xgraph *g, const xg_op *op, manta_err *err)
{
    if (op->in0 < 0 || op->in0 >= g->n_tensors || op->out < 0 || op->out >= g->n_tensors ||
        op->in1 >= g->n_tensors) {
        manta_err_set(err, MANTA_ERR_INVALID_ARG, "graph op %d: tensor index out of range", g->n_ops);
        return -1;
    }
    if (grow((void **)&g->ops, g->n_ops, sizeof *g->ops)) {
        manta_err_set(err, MANTA_ERR_NO_MEMORY, "graph: out of memory");
        return -1;
    }
    g->ops[g->n_ops] = *op;
    return g->n_ops++;
}
