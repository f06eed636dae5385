/* The interpreter: init binds a model and an arena, prepare runs every
 * operator's prepare and the planner and points the tensor records at their
 * memory, invoke runs the operators' eval in order. */
#include <string.h>

#include "engine/fuse_impl.h"

enum { STATE_NONE = 0, STATE_INIT = 0x4d454931, STATE_PREPARED = 0x4d455032 };

static size_t align_up(size_t v)
{
    return (v + MENGINE_ARENA_ALIGN - 1) & ~(size_t)(MENGINE_ARENA_ALIGN - 1);
}

static size_t tensor_records(const mengine_model *m)
{
    return align_up(m->n_tensors * sizeof(mtensor));
}
static size_t records_size(const mengine_model *m)
{
    return tensor_records(m) + align_up(m->n_ops * sizeof(mnode));
}

/* The fused kernel's registration in the model's operator table, or NULL. */
static const mengine_op *fused_reg(const mengine_model *m, int32_t code)
{
    for (size_t i = 0; i < m->ops->n_ops; i++)
        if (m->ops->ops[i] && m->ops->ops[i]->builtin == code)
            return m->ops->ops[i];
    return NULL;
}

/* Run every operator's prepare into @p nodes (or a temporary node when NULL),
 * hand each prepared operator to the planner in @p work and plan. Operators
 * forming a fused pattern (fuse_impl.h) whose kernel is in the operator table are
 * prepared as usual, then all but the last elided and the last given the
 * fused kernel; *fused counts the patterns, *fused_ops their operators. */
static mengine_status prepare_and_plan(const mengine_model *m, mnode *nodes, void *work,
                                       size_t work_size, size_t *total, size_t *fused,
                                       size_t *fused_ops, size_t *folded, mdiag *d)
{
    fbr r;
    mengine_fbr_for_model(&r, m, d);
    const mengine_op *corr = fused_reg(m, MENGINE_FUSED_CORRELATION);
    const mengine_op *corr8 = fused_reg(m, MENGINE_FUSED_CORRELATION_INT8), *kernel = NULL;
    mnode pattern;
    uint32_t pattern_end = 0, in_pattern = 0;
    int32_t fold_src = -1, fold_h = 0, fold_w = 0; /* a PAD folded into the next operator */
    *fused = *fused_ops = *folded = 0;
    mengine_status st = mengine_plan_begin(work, work_size, m, d);
    for (uint32_t i = 0; i < m->n_ops && st == MENGINE_OK; i++) {
        mnode tmp, *node = nodes ? &nodes[i] : &tmp;
        mop_ctx c;
        st = mengine_op_bind(&r, m, i, &c);
        if (st == MENGINE_OK)
            st = mengine_op_prepare(&c, node);
        if (st != MENGINE_OK)
            break;
        if (!in_pattern && c.builtin == MENGINE_OP_PAD &&
            (kernel = c.reg->builtin & MOP_INT8 ? corr8 : corr) != NULL &&
            mengine_fuse_correlation(m, work, i, &pattern_end, &pattern)) {
            in_pattern = 1;
            ++*fused;
        } else if (!in_pattern && c.builtin == MENGINE_OP_PAD &&
                   mengine_fuse_pad(m, work, i, node, &fold_src)) {
            mengine_fuse_pad_before(node, &fold_h, &fold_w);
            node->reg = &mengine_op_pad_folded;
            ++*folded;
        } else if (fold_src >= 0) { /* the convolution the PAD before folds into */
            mengine_fuse_pad_into(node, c.builtin, fold_h, fold_w);
            mengine_plan_extend(work, (uint32_t)fold_src, i);
            fold_src = -1;
        }
        if (in_pattern) {
            ++*fused_ops;
            if (i < pattern_end) {
                node->reg = &mengine_op_elided;
            } else {
                node->reg = kernel;
                node->p = pattern.p;
                mengine_plan_extend(work, node->p.corr.left, i);
                mengine_plan_extend(work, node->p.corr.right, i);
                in_pattern = 0;
            }
        }
        mengine_plan_op(work, m, i, node);
    }
    return st == MENGINE_OK ? mengine_plan_run(work, d, total) : st;
}

mengine_status mengine_arena_size(const mengine_model *m, void *work, size_t work_size,
                                  size_t *arena_size, char *msg, size_t msg_cap)
{
    mdiag d = {msg, msg_cap};
    size_t total, fused, fused_ops, folded;
    if (msg && msg_cap)
        msg[0] = '\0';
    if (!m || !m->data || !arena_size)
        return mengine_diag_fail(&d, MENGINE_ERR_ARG, "model not loaded or no result pointer");
    mengine_status st =
        prepare_and_plan(m, NULL, work, work_size, &total, &fused, &fused_ops, &folded, &d);
    if (st != MENGINE_OK)
        return st;
    const size_t need_work = mengine_plan_work_bytes(m->n_tensors, m->n_ops);
    *arena_size = records_size(m) + (total > need_work ? total : need_work);
    return MENGINE_OK;
}

mengine_status mengine_init(mengine *e, const mengine_model *m, void *arena, size_t arena_size)
{
    if (!e)
        return MENGINE_ERR_ARG;
    memset(e, 0, sizeof *e);
    if (!m || !m->data || !arena || (size_t)arena % MENGINE_ARENA_ALIGN)
        return MENGINE_ERR_ARG;
    e->model = *m;
    e->arena = arena;
    e->arena_size = arena_size;
    e->state = STATE_INIT;
    return MENGINE_OK;
}

mengine_status mengine_prepare(mengine *e, char *msg, size_t msg_cap)
{
    mdiag d = {msg, msg_cap};
    if (msg && msg_cap)
        msg[0] = '\0';
    if (!e || (e->state != STATE_INIT && e->state != STATE_PREPARED))
        return mengine_diag_fail(&d, MENGINE_ERR_STATE, "mengine_prepare() before mengine_init()");
    const mengine_model *m = &e->model;
    const size_t records = records_size(m),
                 work_size = mengine_plan_work_bytes(m->n_tensors, m->n_ops);
    e->state = STATE_INIT;
    if (records + work_size > e->arena_size)
        return mengine_diag_fail(
            &d, MENGINE_ERR_ARENA,
            "arena of %zu bytes: records and planner work need %zu (see mengine_arena_size())",
            e->arena_size, records + work_size);
    e->tensors = (mtensor *)(void *)e->arena;
    e->nodes = (mnode *)(void *)(e->arena + tensor_records(m));
    e->act = e->arena + records;
    void *work = e->act;
    size_t total, fused, fused_ops, folded;
    mengine_status st =
        prepare_and_plan(m, e->nodes, work, work_size, &total, &fused, &fused_ops, &folded, &d);
    if (st != MENGINE_OK)
        return st;
    const size_t used = records + (total > work_size ? total : work_size);
    if (used > e->arena_size)
        return mengine_diag_fail(&d, MENGINE_ERR_ARENA,
                                 "arena of %zu bytes is too small: the model needs %zu",
                                 e->arena_size, used);
    /* Point the records at their memory before the activations overwrite the work area. */
    fbr r;
    mengine_fbr_for_model(&r, m, &d);
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        mtensor_info ti;
        st = mengine_model_tensor(&r, m, t, &ti);
        if (st != MENGINE_OK)
            return st;
        mtensor *rec = &e->tensors[t];
        const int64_t off = mengine_plan_tensor_offset(work, t);
        memcpy(rec->dims, ti.dims, sizeof rec->dims);
        rec->rank = ti.rank;
        rec->count = ti.count;
        rec->type = (uint8_t)ti.type;
        rec->data = off >= 0 ? (float *)(void *)(e->act + off) : NULL;
        rec->cdata = ti.data
                         ? (ti.type != MENGINE_INT32 ? (const float *)(const void *)ti.data : NULL)
                         : rec->data;
        rec->scale = ti.scale;
        rec->zero_point = ti.zero_point;
    }
    for (uint32_t i = 0; i < m->n_ops; i++) {
        const int64_t off = mengine_plan_scratch_offset(work, i);
        e->nodes[i].scratch = off >= 0 ? (float *)(void *)(e->act + off) : NULL;
    }
    /* A folded PAD's output stands for its input: the convolution reads that. */
    for (uint32_t i = 0; i < m->n_ops; i++)
        if (e->nodes[i].reg == &mengine_op_pad_folded) {
            mtensor *t = &e->tensors[e->nodes[i].output];
            const mtensor *x = node_input(e, &e->nodes[i], 0);
            if (!x) /* the fold takes PADs with an input only */
                return MENGINE_ERR_GRAPH;
            memcpy(t->dims, x->dims, sizeof t->dims);
            t->rank = x->rank, t->count = x->count, t->cdata = x->cdata, t->data = NULL;
        }
    e->stats.arena_used = used;
    e->stats.records_bytes = records;
    e->stats.activation_bytes = total;
    e->stats.work_bytes = work_size;
    e->stats.fused_correlations = fused;
    e->stats.fused_ops = fused_ops;
    e->stats.folded_pads = folded;
    e->state = STATE_PREPARED;
    return MENGINE_OK;
}

mengine_status mengine_set_requant(mengine *e, mengine_requant mode)
{
    if (!e || (mode != MENGINE_REQUANT_REF && mode != MENGINE_REQUANT_FP32))
        return MENGINE_ERR_ARG;
    e->requant = (uint32_t)mode;
    return MENGINE_OK;
}

mengine_status mengine_invoke(mengine *e)
{
    if (!e || e->state != STATE_PREPARED)
        return MENGINE_ERR_STATE;
    for (uint32_t i = 0; i < e->model.n_ops; i++) {
        const mnode *n = &e->nodes[i];
        mengine_status st = n->reg->eval(e, n);
        if (st != MENGINE_OK)
            return st;
    }
    return MENGINE_OK;
}

mengine_status mengine_invoke_observed(mengine *e, mengine_op_observer fn, void *ctx)
{
    if (!e || e->state != STATE_PREPARED)
        return MENGINE_ERR_STATE;
    if (!fn)
        return MENGINE_ERR_ARG;
    for (uint32_t i = 0; i < e->model.n_ops; i++) {
        const mnode *n = &e->nodes[i];
        fn(ctx, i);
        mengine_status st = n->reg->eval(e, n);
        if (st != MENGINE_OK)
            return st;
    }
    fn(ctx, e->model.n_ops);
    return MENGINE_OK;
}

size_t mengine_op_count(const mengine *e)
{
    return e && e->state != STATE_NONE ? e->model.n_ops : 0;
}

size_t mengine_input_count(const mengine *e)
{
    return e && e->state != STATE_NONE ? e->model.n_inputs : 0;
}
size_t mengine_output_count(const mengine *e)
{
    return e && e->state != STATE_NONE ? e->model.n_outputs : 0;
}

mengine_status mengine_tensor(const mengine *e, size_t tensor_index, mengine_view *v)
{
    if (!e || !v)
        return MENGINE_ERR_ARG;
    if (e->state != STATE_PREPARED)
        return MENGINE_ERR_STATE;
    if (tensor_index >= e->model.n_tensors)
        return MENGINE_ERR_ARG;
    const mtensor *t = &e->tensors[tensor_index];
    memset(v, 0, sizeof *v);
    v->data = t->data;
    /* a folded PAD's output (reading its input in the arena) has no memory of its own */
    const uintptr_t c = (uintptr_t)t->cdata, lo = (uintptr_t)e->act,
                    hi = (uintptr_t)(e->arena + e->arena_size);
    v->cdata = !t->data && c >= lo && c < hi ? NULL : t->cdata;
    memcpy(v->dims, t->dims, sizeof v->dims);
    v->rank = t->rank;
    v->type = t->type;
    v->count = t->count;
    v->index = (uint32_t)tensor_index;
    v->scale = t->scale;
    v->zero_point = t->zero_point;
    return MENGINE_OK;
}

/* View of entry @p i of the int32 vector at @p pos with @p n entries. */
static mengine_status io_view(const mengine *e, uint32_t pos, uint32_t n, size_t i, mengine_view *v)
{
    if (!e || !v)
        return MENGINE_ERR_ARG;
    if (e->state != STATE_PREPARED)
        return MENGINE_ERR_STATE;
    if (i >= n)
        return MENGINE_ERR_ARG;
    return mengine_tensor(e, (size_t)rd_i32(e->model.data + pos + 4 * i), v);
}

mengine_status mengine_input(const mengine *e, size_t i, mengine_view *v)
{
    return e ? io_view(e, e->model.inputs, e->model.n_inputs, i, v) : MENGINE_ERR_ARG;
}

mengine_status mengine_output(const mengine *e, size_t i, mengine_view *v)
{
    return e ? io_view(e, e->model.outputs, e->model.n_outputs, i, v) : MENGINE_ERR_ARG;
}

mengine_status mengine_get_stats(const mengine *e, mengine_stats *s)
{
    if (!e || !s)
        return MENGINE_ERR_ARG;
    if (e->state != STATE_PREPARED)
        return MENGINE_ERR_STATE;
    *s = e->stats;
    return MENGINE_OK;
}
