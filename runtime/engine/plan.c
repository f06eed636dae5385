/* Activation memory planner.
 *
 * Time: t = 0 is before the first operator (model inputs are written then),
 * operator i runs at t = i + 1, and model outputs stay alive until
 * t = n_ops + 1. A buffer is alive from the operator that writes it to the
 * last operator that reads it; two buffers alive at a common t must not
 * overlap.
 *
 * Buffers: one per group of tensors that share memory, plus one per operator
 * scratch (alive only at its operator). A RESHAPE output joins its input's
 * group; the output of an element-wise operator joins the group of an input
 * with the same element count when nothing reads that group later and it is
 * not a model input or output (the kernels read element i before writing it).
 * With an offline plan, two tensors share only when both have the same offset
 * in it (or neither has one): a plan written from this planner's own result
 * (as the exporter does) then reproduces that result exactly.
 *
 * Placement, as TFLM's greedy planner: buffers from the offline plan first,
 * at their offsets; then the others by decreasing size (ties: earlier first,
 * then lower index), each at the lowest offset where it does not overlap any
 * placed buffer alive at the same time. The placed buffers are kept in a list
 * sorted by offset, so finding the first gap is one walk of that list.
 *
 * Everything lives in the caller's work area: no allocation, O(n^2) time. */
#include <string.h>

#include "engine/plan_impl.h"

enum { F_INPUT = 1, F_OUTPUT = 2, F_OFFLINE = 4 };

typedef struct pitem {
    uint32_t bytes; /* exact size; 0 = nothing to place */
    uint32_t offset;
    int32_t first, last;
    int32_t parent; /* group leader (itself when leader) */
    int32_t next;   /* next placed buffer by offset, -1 at the end */
    uint32_t count; /* elements (tensors) */
    uint32_t flags;
} pitem;

typedef struct phead {
    uint32_t n_tensors, n_ops, n_items;
    uint32_t total;
} phead;

static phead *head(void *work) { return work; }
static pitem *items(void *work) { return (pitem *)((uint8_t *)work + sizeof(phead)); }
static const pitem *citems(const void *work)
{
    return (const pitem *)((const uint8_t *)work + sizeof(phead));
}
static int32_t *order(void *work) { return (int32_t *)(items(work) + head(work)->n_items); }

static uint64_t rounded(uint32_t bytes)
{
    return ((uint64_t)bytes + MENGINE_ARENA_ALIGN - 1) & ~(uint64_t)(MENGINE_ARENA_ALIGN - 1);
}

static int32_t find(const pitem *it, int32_t i)
{
    while (it[i].parent != i)
        i = it[i].parent;
    return i;
}

size_t mengine_plan_work_bytes(uint32_t n_tensors, uint32_t n_ops)
{
    return sizeof(phead) + ((size_t)n_tensors + n_ops) * (sizeof(pitem) + sizeof(int32_t));
}

size_t mengine_plan_work_size(const mengine_model *m)
{
    return m && m->data ? mengine_plan_work_bytes(m->n_tensors, m->n_ops) : 0;
}

/* Tensor @p o takes the memory of group @p leader. */
static void join(pitem *it, int32_t leader, int32_t o)
{
    it[o].parent = leader;
    it[leader].first = it[o].first < it[leader].first ? it[o].first : it[leader].first;
    it[leader].last = it[o].last > it[leader].last ? it[o].last : it[leader].last;
    it[leader].flags |= it[o].flags & F_OUTPUT;
}

void mengine_plan_op(void *work, const mengine_model *m, uint32_t op, const mnode *node)
{
    pitem *it = items(work);
    const int32_t o = (int32_t)node->output;
    it[head(work)->n_tensors + op].bytes = node->scratch_bytes;
    if (node->reg->share == MOP_SHARE_ELIDED) { /* inside a fused pattern: never materialised */
        it[o].bytes = 0;
        return;
    }
    if (node->reg->share == MOP_SHARE_NONE || it[o].bytes == 0)
        return;
    /* Share buffers: RESHAPE outputs and in-place element-wise operators. */
    for (uint32_t k = 0; k < node->n_inputs; k++) {
        const int32_t x = rd_i32(m->data + node->inputs + 4 * k);
        if (x < 0 || it[x].bytes == 0 || it[x].count != it[o].count)
            continue;
        const int32_t leader = find(it, x);
        /* Offline tensors share only where the plan puts them at the same offset. */
        if ((it[o].flags & F_OFFLINE) != (it[leader].flags & F_OFFLINE) ||
            ((it[o].flags & F_OFFLINE) && it[o].offset != it[leader].offset))
            continue;
        if (node->reg->share == MOP_SHARE_ALIAS ||
            (!(it[leader].flags & (F_INPUT | F_OUTPUT)) && it[leader].last == (int32_t)op + 1)) {
            join(it, leader, o);
            break;
        }
    }
}

void mengine_plan_extend(void *work, uint32_t t, uint32_t op)
{
    pitem *it = items(work);
    const int32_t leader = find(it, (int32_t)t), now = (int32_t)op + 1;
    if (it[leader].last < now)
        it[leader].last = now;
}

int mengine_plan_local(const void *work, uint32_t t, uint32_t op)
{
    const pitem *it = citems(work);
    return t < ((const phead *)work)->n_tensors && it[t].bytes &&
           !(it[t].flags & (F_INPUT | F_OUTPUT)) && it[t].last <= (int32_t)op + 1;
}

int mengine_plan_written_after(const void *work, uint32_t t, uint32_t op)
{
    const pitem *it = citems(work);
    const phead *h = work;
    return t < h->n_tensors && it[t].first >= (int32_t)op + 1 && it[t].first <= (int32_t)h->n_ops;
}

mengine_status mengine_plan_begin(void *work, size_t work_size, const mengine_model *m, mdiag *d)
{
    if (!work || (size_t)work % 4)
        return mengine_diag_fail(d, MENGINE_ERR_ARG,
                                 "planner work area is NULL or not 4-byte aligned");
    if (work_size < mengine_plan_work_bytes(m->n_tensors, m->n_ops))
        return mengine_diag_fail(d, MENGINE_ERR_ARENA, "planner work area of %zu bytes, %zu needed",
                                 work_size, mengine_plan_work_bytes(m->n_tensors, m->n_ops));
    phead *h = head(work);
    h->n_tensors = m->n_tensors;
    h->n_ops = m->n_ops;
    h->n_items = m->n_tensors + m->n_ops;
    h->total = 0;
    pitem *it = items(work);
    const int32_t end = (int32_t)m->n_ops + 1;
    fbr r;
    mengine_fbr_for_model(&r, m, d);
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        mtensor_info ti;
        mengine_status st = mengine_model_tensor(&r, m, t, &ti);
        if (st != MENGINE_OK)
            return st;
        memset(&it[t], 0, sizeof it[t]);
        it[t].bytes = ti.data ? 0 : ti.count * (ti.type == MENGINE_INT8 ? 1u : 4u);
        it[t].count = ti.count;
        it[t].first = end + 1; /* not written yet */
        it[t].last = -1;
        it[t].parent = (int32_t)t;
        const int off = model_offline_offset(m, t);
        if (off >= 0 && it[t].bytes) {
            it[t].flags |= F_OFFLINE;
            it[t].offset = (uint32_t)off;
        }
    }
    for (uint32_t i = 0; i < m->n_ops; i++) {
        pitem *s = &it[m->n_tensors + i];
        memset(s, 0, sizeof *s);
        s->first = s->last = (int32_t)i + 1;
        s->parent = (int32_t)(m->n_tensors + i);
    }
    const fb_vec ins = {m->inputs, m->n_inputs}, outs = {m->outputs, m->n_outputs};
    for (uint32_t k = 0; k < ins.n; k++) {
        pitem *p = &it[fb_vec_i32(&r, &ins, k)];
        p->first = 0;
        p->flags |= F_INPUT;
    }
    for (uint32_t k = 0; k < outs.n; k++) {
        pitem *p = &it[fb_vec_i32(&r, &outs, k)];
        p->last = end;
        p->flags |= F_OUTPUT;
    }
    for (uint32_t i = 0; i < m->n_ops; i++) {
        fb_table op;
        fb_vec in, out;
        mengine_status st = mengine_model_operator(&r, m, i, &op, &in, &out);
        if (st != MENGINE_OK)
            return st;
        const int32_t now = (int32_t)i + 1;
        for (uint32_t k = 0; k < in.n; k++) {
            const int32_t x = fb_vec_i32(&r, &in, k);
            if (x >= 0 && it[x].last < now)
                it[x].last = now;
        }
        pitem *o = &it[fb_vec_i32(&r, &out, 0)];
        o->first = now;
        if (o->last < now)
            o->last = now;
    }
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        if (it[t].first > end) /* never written: nothing to plan */
            it[t].bytes = 0;
        else if (it[t].last < it[t].first) /* a model input nothing reads */
            it[t].last = it[t].first;
    }
    return MENGINE_OK;
}

static int live_together(const pitem *a, const pitem *b)
{
    return a->first <= b->last && b->first <= a->last;
}

/* Insert item @p i into the offset-sorted list starting at *list. */
static void insert(pitem *it, int32_t *list, int32_t i)
{
    int32_t *at = list;
    while (*at >= 0 && it[*at].offset <= it[i].offset)
        at = &it[*at].next;
    it[i].next = *at;
    *at = i;
}

/* a before b in placement order: larger first, then earlier, then lower index. */
static int before(const pitem *it, int32_t a, int32_t b)
{
    if (it[a].bytes != it[b].bytes)
        return it[a].bytes > it[b].bytes;
    if (it[a].first != it[b].first)
        return it[a].first < it[b].first;
    return a < b;
}

mengine_status mengine_plan_run(void *work, mdiag *d, size_t *total)
{
    const phead *h = head(work);
    pitem *it = items(work);
    int32_t *ord = order(work);
    int32_t list = -1;
    uint32_t n = 0;
    uint64_t end = 0;
    /* Offline buffers first, at their offsets; they must not collide. */
    for (uint32_t i = 0; i < h->n_items; i++) {
        if (!it[i].bytes || it[i].parent != (int32_t)i)
            continue;
        if (!(it[i].flags & F_OFFLINE)) {
            ord[n++] = (int32_t)i;
            continue;
        }
        for (int32_t j = list; j >= 0; j = it[j].next)
            if (live_together(&it[i], &it[j]) &&
                it[j].offset < it[i].offset + rounded(it[i].bytes) &&
                it[i].offset < it[j].offset + rounded(it[j].bytes))
                return mengine_diag_fail(
                    d, MENGINE_ERR_PLAN,
                    "OfflineMemoryAllocation: tensors %u and %u overlap while both are live",
                    (unsigned)j, i);
        insert(it, &list, (int32_t)i);
    }
    /* Insertion sort: n is at most the number of tensors plus operators. */
    for (uint32_t i = 1; i < n; i++) {
        const int32_t v = ord[i];
        uint32_t j = i;
        for (; j > 0 && before(it, v, ord[j - 1]); j--)
            ord[j] = ord[j - 1];
        ord[j] = v;
    }
    for (uint32_t k = 0; k < n; k++) {
        pitem *b = &it[ord[k]];
        const uint64_t size = rounded(b->bytes);
        uint64_t at = 0;
        for (int32_t j = list; j >= 0; j = it[j].next) {
            if (!live_together(b, &it[j]))
                continue;
            if (it[j].offset >= at + size)
                break;
            if (it[j].offset + rounded(it[j].bytes) > at)
                at = it[j].offset + rounded(it[j].bytes);
        }
        if (at > 0x7fffffffu)
            return mengine_diag_fail(d, MENGINE_ERR_LIMIT, "activations exceed 2 GiB");
        b->offset = (uint32_t)at;
        insert(it, &list, ord[k]);
    }
    for (int32_t j = list; j >= 0; j = it[j].next)
        if (it[j].offset + rounded(it[j].bytes) > end)
            end = it[j].offset + rounded(it[j].bytes);
    if (end > 0x7fffffffu)
        return mengine_diag_fail(d, MENGINE_ERR_LIMIT, "activations exceed 2 GiB");
    head(work)->total = (uint32_t)end;
    *total = (size_t)end;
    return MENGINE_OK;
}

int64_t mengine_plan_tensor_offset(const void *work, uint32_t t)
{
    const pitem *it = citems(work);
    const int32_t leader = find(it, (int32_t)t);
    return it[t].bytes && it[leader].bytes ? (int64_t)it[leader].offset : -1;
}

int64_t mengine_plan_scratch_offset(const void *work, uint32_t op)
{
    const phead *h = work;
    const pitem *s = &citems(work)[h->n_tensors + op];
    return s->bytes ? (int64_t)s->offset : -1;
}
