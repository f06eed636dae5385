/* The checked FlatBuffers reader and the model verifier.
 *
 * Structure: every access goes through me_fb_*(), which checks the object it
 * touches (alignment, bounds, vtable, terminator, length) before reading, so
 * nothing outside [base, base + size) is ever read. The verifier walks every
 * object the engine uses once at load time, to report errors early and with
 * their specific code; later reads of the same objects cannot fail.
 *
 * Meaning: indices between objects, types, shapes, buffer sizes, operators
 * (each registered operator's prepare is run as a dry run), the order in which
 * tensors are written and read, model inputs/outputs, the offline plan. */
#include <string.h>

#include "engine/internal.h"

#define MAX_OFFSET 0x7fffffffu
#define MAX_ELEMENTS 0x1fffffffu /* float tensors stay below 2 GiB */

static const char OFFLINE_NAME[] = "OfflineMemoryAllocation";

/* ---- reader ---- */

void me_fbr_for_model(fbr *r, const mengine_model *m, mdiag *d)
{
    r->base = m->data;
    r->size = m->size;
    r->max_depth = m->max_depth;
    r->tables_left = 0xffffffffu;
    r->d = d;
}

mengine_status me_fb_table_at(fbr *r, uint32_t pos, uint32_t depth, fb_table *t)
{
    if (depth > r->max_depth)
        return me_diag_fail(r->d, MENGINE_ERR_DEPTH,
                            "table at byte %u is nested %u deep (limit %u)", pos, depth,
                            r->max_depth);
    if (r->tables_left == 0)
        return me_diag_fail(r->d, MENGINE_ERR_LIMIT, "more tables than the verifier's limit");
    r->tables_left--;
    if (pos % 4)
        return me_diag_fail(r->d, MENGINE_ERR_ALIGNMENT, "table at byte %u is not 4-byte aligned",
                            pos);
    if ((uint64_t)pos + 4 > r->size)
        return me_diag_fail(r->d, MENGINE_ERR_OFFSET, "table at byte %u lies outside the data",
                            pos);
    const int64_t vt = (int64_t)pos - rd_i32(r->base + pos);
    if (vt < 0 || vt + 4 > (int64_t)r->size)
        return me_diag_fail(r->d, MENGINE_ERR_VTABLE,
                            "vtable of the table at byte %u lies outside the data", pos);
    if (vt % 2)
        return me_diag_fail(r->d, MENGINE_ERR_VTABLE,
                            "vtable of the table at byte %u is not 2-byte aligned", pos);
    const uint16_t vt_size = rd_u16(r->base + vt), t_size = rd_u16(r->base + vt + 2);
    if (vt_size < 4 || vt_size % 2 || vt + vt_size > (int64_t)r->size)
        return me_diag_fail(
            r->d, MENGINE_ERR_VTABLE,
            "vtable of the table at byte %u: size %u is odd, below 4 or past the end", pos,
            (unsigned)vt_size);
    if (t_size < 4)
        return me_diag_fail(r->d, MENGINE_ERR_VTABLE, "table at byte %u: table size %u below 4",
                            pos, (unsigned)t_size);
    if ((uint64_t)pos + t_size > r->size)
        return me_diag_fail(r->d, MENGINE_ERR_TRUNCATED,
                            "table at byte %u (%u bytes) runs past the end of the data (%u bytes)",
                            pos, (unsigned)t_size, r->size);
    t->pos = pos;
    t->vt = (uint32_t)vt;
    t->vt_size = vt_size;
    t->t_size = t_size;
    t->depth = depth;
    return MENGINE_OK;
}

mengine_status me_fb_root(fbr *r, fb_table *t)
{
    if (r->size < 8)
        return me_diag_fail(r->d, MENGINE_ERR_TRUNCATED,
                            "%u bytes: shorter than the 8-byte FlatBuffers header", r->size);
    if (memcmp(r->base + 4, "TFL3", 4) != 0)
        return me_diag_fail(r->d, MENGINE_ERR_IDENTIFIER,
                            "file identifier is not \"TFL3\": not a TensorFlow Lite model");
    const uint32_t root = rd_u32(r->base);
    if (root == 0 || root > MAX_OFFSET || (uint64_t)root + 4 > r->size)
        return me_diag_fail(r->d, MENGINE_ERR_OFFSET,
                            "root offset %u points outside the data (%u bytes)", root, r->size);
    return me_fb_table_at(r, root, DEPTH_MODEL, t);
}

/* Position of field @p id (0 when absent), checked to lie inside the table and be aligned. */
static mengine_status field(fbr *r, const fb_table *t, unsigned id, uint32_t size, uint32_t *pos)
{
    const uint32_t slot = 4 + 2 * id;
    *pos = 0;
    if (slot + 2 > t->vt_size)
        return MENGINE_OK;
    const uint16_t fo = rd_u16(r->base + t->vt + slot);
    if (fo == 0)
        return MENGINE_OK;
    if (fo < 4 || (uint32_t)fo + size > t->t_size)
        return me_diag_fail(r->d, MENGINE_ERR_VTABLE,
                            "field %u of the table at byte %u lies outside the table", id, t->pos);
    if ((t->pos + fo) % size)
        return me_diag_fail(r->d, MENGINE_ERR_ALIGNMENT,
                            "field %u of the table at byte %u is not %u-byte aligned", id, t->pos,
                            size);
    *pos = t->pos + fo;
    return MENGINE_OK;
}

mengine_status me_fb_u8(fbr *r, const fb_table *t, unsigned id, uint8_t def, uint8_t *out)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 1, &p);
    if (st == MENGINE_OK)
        *out = p ? r->base[p] : def;
    return st;
}

mengine_status me_fb_i8(fbr *r, const fb_table *t, unsigned id, int8_t def, int8_t *out)
{
    uint8_t u;
    mengine_status st = me_fb_u8(r, t, id, (uint8_t)def, &u);
    if (st == MENGINE_OK)
        *out = (int8_t)(u < 128 ? u : u - 256);
    return st;
}

mengine_status me_fb_u32(fbr *r, const fb_table *t, unsigned id, uint32_t def, uint32_t *out)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 4, &p);
    if (st == MENGINE_OK)
        *out = p ? rd_u32(r->base + p) : def;
    return st;
}

mengine_status me_fb_i32(fbr *r, const fb_table *t, unsigned id, int32_t def, int32_t *out)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 4, &p);
    if (st == MENGINE_OK)
        *out = p ? rd_i32(r->base + p) : def;
    return st;
}

mengine_status me_fb_u64(fbr *r, const fb_table *t, unsigned id, uint64_t def, uint64_t *out)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 8, &p);
    if (st == MENGINE_OK)
        *out = p ? rd_u32(r->base + p) | (uint64_t)rd_u32(r->base + p + 4) << 32 : def;
    return st;
}

mengine_status me_fb_f32(fbr *r, const fb_table *t, unsigned id, float def, float *out)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 4, &p);
    if (st == MENGINE_OK) {
        if (p) {
            const uint32_t bits = rd_u32(r->base + p);
            memcpy(out, &bits, sizeof *out);
        } else {
            *out = def;
        }
    }
    return st;
}

/* Target of the offset stored at @p at (a field or a vector element). */
static mengine_status follow(fbr *r, uint32_t at, uint32_t *target)
{
    const uint32_t off = rd_u32(r->base + at);
    if (off == 0 || off > MAX_OFFSET || (uint64_t)at + off + 4 > r->size)
        return me_diag_fail(r->d, MENGINE_ERR_OFFSET,
                            "offset %u at byte %u is zero or points outside the data (%u bytes)",
                            off, at, r->size);
    *target = at + off;
    return MENGINE_OK;
}

static mengine_status ref(fbr *r, const fb_table *t, unsigned id, uint32_t *target, int *present)
{
    uint32_t p;
    mengine_status st = field(r, t, id, 4, &p);
    *present = 0;
    if (st != MENGINE_OK || !p)
        return st;
    st = follow(r, p, target);
    *present = st == MENGINE_OK;
    return st;
}

mengine_status me_fb_sub_table(fbr *r, const fb_table *t, unsigned id, fb_table *sub, int *present)
{
    uint32_t target = 0;
    mengine_status st = ref(r, t, id, &target, present);
    if (st != MENGINE_OK || !*present)
        return st;
    return me_fb_table_at(r, target, t->depth + 1, sub);
}

mengine_status me_fb_vector(fbr *r, const fb_table *t, unsigned id, uint32_t elem_size, fb_vec *v,
                            int *present)
{
    uint32_t target = 0;
    mengine_status st = ref(r, t, id, &target, present);
    if (st != MENGINE_OK || !*present)
        return st;
    *present = 0;
    if (target % 4)
        return me_diag_fail(
            r->d, MENGINE_ERR_ALIGNMENT,
            "vector at byte %u (field %u of the table at byte %u) is not 4-byte aligned", target,
            id, t->pos);
    const uint32_t n = rd_u32(r->base + target);
    if ((uint64_t)n * elem_size > (uint64_t)r->size - target - 4)
        return me_diag_fail(
            r->d, MENGINE_ERR_VECTOR,
            "vector at byte %u: %u elements of %u bytes run past the end of the data", target, n,
            elem_size);
    v->pos = target + 4;
    v->n = n;
    *present = 1;
    return MENGINE_OK;
}

mengine_status me_fb_string(fbr *r, const fb_table *t, unsigned id, fb_vec *s, int *present)
{
    mengine_status st = me_fb_vector(r, t, id, 1, s, present);
    if (st != MENGINE_OK || !*present)
        return st;
    if ((uint64_t)s->pos + s->n >= r->size || r->base[s->pos + s->n] != 0) {
        *present = 0;
        return me_diag_fail(
            r->d, MENGINE_ERR_STRING,
            "string at byte %u (field %u of the table at byte %u) has no 0 terminator", s->pos - 4,
            id, t->pos);
    }
    return MENGINE_OK;
}

mengine_status me_fb_vec_table(fbr *r, const fb_vec *v, uint32_t i, uint32_t depth, fb_table *t)
{
    uint32_t target = 0;
    mengine_status st = follow(r, v->pos + 4 * i, &target);
    return st == MENGINE_OK ? me_fb_table_at(r, target, depth, t) : st;
}

/* ---- model access ---- */

mengine_status me_model_opcode(fbr *r, const mengine_model *m, uint32_t index, int32_t *builtin,
                               int32_t *version)
{
    if (index >= m->n_opcodes)
        return me_diag_fail(r->d, MENGINE_ERR_OPCODE_INDEX,
                            "operator code %u does not exist (the model has %u)", index,
                            m->n_opcodes);
    const fb_vec v = {m->opcodes, m->n_opcodes};
    fb_table t;
    fb_vec custom;
    int8_t dep;
    int32_t code;
    int has_custom;
    mengine_status st = me_fb_vec_table(r, &v, index, DEPTH_ENTRY, &t);
    if (st == MENGINE_OK)
        st = me_fb_i8(r, &t, OPCODE_DEPRECATED, 0, &dep);
    if (st == MENGINE_OK)
        st = me_fb_string(r, &t, OPCODE_CUSTOM, &custom, &has_custom);
    if (st == MENGINE_OK)
        st = me_fb_i32(r, &t, OPCODE_VERSION, 1, version);
    if (st == MENGINE_OK)
        st = me_fb_i32(r, &t, OPCODE_BUILTIN, 0, &code);
    if (st == MENGINE_OK)
        *builtin = code > dep ? code : dep;
    return st;
}

mengine_status me_model_tensor(fbr *r, const mengine_model *m, uint32_t index, mtensor_info *ti)
{
    if (index >= m->n_tensors)
        return me_diag_fail(r->d, MENGINE_ERR_TENSOR_INDEX,
                            "tensor %u does not exist (the subgraph has %u)", index, m->n_tensors);
    const fb_vec tv = {m->tensors, m->n_tensors};
    fb_table t, sub;
    fb_vec shape, name;
    int has, has_name;
    uint32_t buffer;
    uint8_t variable;
    mengine_status st = me_fb_vec_table(r, &tv, index, DEPTH_TENSOR, &t);
    if (st == MENGINE_OK)
        st = me_fb_string(r, &t, TENSOR_NAME, &name, &has_name);
    if (st != MENGINE_OK)
        return st;
    ti->index = index;
    ti->name = has_name ? (const char *)r->base + name.pos : "";
    ti->data = NULL;
    st = me_fb_vector(r, &t, TENSOR_SHAPE, 4, &shape, &has);
    if (st != MENGINE_OK)
        return st;
    ti->rank = has ? shape.n : 0;
    if (ti->rank > MENGINE_MAX_DIMS)
        return me_diag_fail(r->d, MENGINE_ERR_SHAPE, "tensor %u '%s': rank %u (at most %u)", index,
                            ti->name, ti->rank, (unsigned)MENGINE_MAX_DIMS);
    ti->count = 1;
    for (uint32_t i = 0; i < ti->rank; i++) {
        ti->dims[i] = fb_vec_i32(r, &shape, i);
        if (ti->dims[i] < 1)
            return me_diag_fail(r->d, MENGINE_ERR_SHAPE, "tensor %u '%s': dimension %u is %d",
                                index, ti->name, i, ti->dims[i]);
        if (ti->count > MAX_ELEMENTS / (uint32_t)ti->dims[i])
            return me_diag_fail(r->d, MENGINE_ERR_SHAPE, "tensor %u '%s': larger than 2 GiB", index,
                                ti->name);
        ti->count *= (uint32_t)ti->dims[i];
    }
    st = me_fb_i8(r, &t, TENSOR_TYPE, 0, &ti->type);
    if (st == MENGINE_OK)
        st = me_fb_u32(r, &t, TENSOR_BUFFER, 0, &buffer);
    if (st == MENGINE_OK)
        st = me_fb_u8(r, &t, TENSOR_IS_VARIABLE, 0, &variable);
    if (st == MENGINE_OK)
        st = me_fb_sub_table(r, &t, TENSOR_QUANT, &sub, &has); /* structure only: unused */
    if (st != MENGINE_OK)
        return st;
    if (ti->type != MENGINE_FLOAT32 && ti->type != MENGINE_INT32)
        return me_diag_fail(
            r->d, MENGINE_ERR_TYPE,
            "tensor %u '%s': type %d unsupported (FLOAT32, or INT32 for constant shapes)", index,
            ti->name, ti->type);
    if (variable)
        return me_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                            "tensor %u '%s': variable tensors unsupported", index, ti->name);
    st = me_fb_sub_table(r, &t, TENSOR_SPARSITY, &sub, &has);
    if (st != MENGINE_OK)
        return st;
    if (has)
        return me_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                            "tensor %u '%s': sparse tensors unsupported", index, ti->name);
    if (buffer >= m->n_buffers)
        return me_diag_fail(r->d, MENGINE_ERR_BUFFER_INDEX,
                            "tensor %u '%s': buffer %u does not exist (the model has %u)", index,
                            ti->name, buffer, m->n_buffers);
    if (buffer != 0) {
        const fb_vec bv = {m->buffers, m->n_buffers};
        fb_table bt;
        fb_vec data;
        st = me_fb_vec_table(r, &bv, buffer, DEPTH_ENTRY, &bt);
        if (st == MENGINE_OK)
            st = me_fb_vector(r, &bt, BUFFER_DATA, 1, &data, &has);
        if (st != MENGINE_OK)
            return st;
        if (has && data.n > 0) {
            if (data.n != ti->count * 4u)
                return me_diag_fail(r->d, MENGINE_ERR_BUFFER_SIZE,
                                    "tensor %u '%s': buffer %u holds %u bytes, the shape needs %u",
                                    index, ti->name, buffer, data.n, ti->count * 4u);
            ti->data = r->base + data.pos;
            if ((size_t)ti->data % 4)
                return me_diag_fail(
                    r->d, MENGINE_ERR_ALIGNMENT,
                    "tensor %u '%s': constant data at byte %u is not 4-byte aligned in memory",
                    index, ti->name, data.pos);
        }
    }
    if (ti->type == MENGINE_INT32 && !ti->data)
        return me_diag_fail(r->d, MENGINE_ERR_TYPE,
                            "tensor %u '%s': INT32 is only supported for constant tensors", index,
                            ti->name);
    return MENGINE_OK;
}

mengine_status me_model_operator(fbr *r, const mengine_model *m, uint32_t index, fb_table *op,
                                 fb_vec *inputs, fb_vec *outputs)
{
    const fb_vec ov = {m->operators, m->n_ops};
    int has_in, has_out;
    mengine_status st = me_fb_vec_table(r, &ov, index, DEPTH_TENSOR, op);
    if (st == MENGINE_OK)
        st = me_fb_vector(r, op, OP_INPUTS, 4, inputs, &has_in);
    if (st == MENGINE_OK)
        st = me_fb_vector(r, op, OP_OUTPUTS, 4, outputs, &has_out);
    if (st == MENGINE_OK && (!has_in || !has_out))
        return me_diag_fail(r->d, MENGINE_ERR_GRAPH, "operator %u has no %s vector", index,
                            has_in ? "outputs" : "inputs");
    return st;
}

/* ---- verifier ---- */

static int index_in(const fbr *r, const fb_vec *v, int32_t t)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (fb_vec_i32(r, v, i) == t)
            return 1;
    return 0;
}

static mengine_status verify_buffers(fbr *r, const mengine_model *m)
{
    const fb_vec bv = {m->buffers, m->n_buffers};
    for (uint32_t i = 0; i < m->n_buffers; i++) {
        fb_table bt;
        fb_vec data;
        int has;
        uint64_t offset, size;
        mengine_status st = me_fb_vec_table(r, &bv, i, DEPTH_ENTRY, &bt);
        if (st == MENGINE_OK)
            st = me_fb_vector(r, &bt, BUFFER_DATA, 1, &data, &has);
        if (st == MENGINE_OK)
            st = me_fb_u64(r, &bt, BUFFER_OFFSET, 0, &offset);
        if (st == MENGINE_OK)
            st = me_fb_u64(r, &bt, BUFFER_SIZE, 0, &size);
        if (st != MENGINE_OK)
            return st;
        if (offset > 1)
            return me_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                                "buffer %u: data stored outside the FlatBuffer is unsupported", i);
        if (i == 0 && has && data.n)
            return me_diag_fail(r->d, MENGINE_ERR_BUFFER_SIZE,
                                "buffer 0 must be the empty sentinel, it holds %u bytes", data.n);
    }
    return MENGINE_OK;
}

/* Metadata entries; finds the offline plan's buffer (or n_buffers when absent). */
static mengine_status verify_metadata(fbr *r, const mengine_model *m, const fb_table *model,
                                      uint32_t *offline_buffer)
{
    fb_vec mv;
    int has;
    *offline_buffer = m->n_buffers;
    mengine_status st = me_fb_vector(r, model, MODEL_METADATA, 4, &mv, &has);
    if (st != MENGINE_OK || !has)
        return st;
    for (uint32_t i = 0; i < mv.n; i++) {
        fb_table mt;
        fb_vec name;
        int has_name;
        uint32_t buffer;
        st = me_fb_vec_table(r, &mv, i, DEPTH_ENTRY, &mt);
        if (st == MENGINE_OK)
            st = me_fb_string(r, &mt, METADATA_NAME, &name, &has_name);
        if (st == MENGINE_OK)
            st = me_fb_u32(r, &mt, METADATA_BUFFER, 0, &buffer);
        if (st != MENGINE_OK)
            return st;
        if (buffer >= m->n_buffers)
            return me_diag_fail(r->d, MENGINE_ERR_BUFFER_INDEX,
                                "metadata %u: buffer %u does not exist (the model has %u)", i,
                                buffer, m->n_buffers);
        if (has_name && name.n == sizeof OFFLINE_NAME - 1 &&
            memcmp(r->base + name.pos, OFFLINE_NAME, name.n) == 0)
            *offline_buffer = buffer;
    }
    return MENGINE_OK;
}

/* "OfflineMemoryAllocation": int32 [version 1, subgraphs 1, n tensors, n offsets]. */
static mengine_status verify_offline(fbr *r, mengine_model *m, uint32_t buffer)
{
    const fb_vec bv = {m->buffers, m->n_buffers};
    fb_table bt;
    fb_vec data;
    int has;
    mengine_status st = me_fb_vec_table(r, &bv, buffer, DEPTH_ENTRY, &bt);
    if (st == MENGINE_OK)
        st = me_fb_vector(r, &bt, BUFFER_DATA, 1, &data, &has);
    if (st != MENGINE_OK)
        return st;
    const uint32_t want = 4 * (3 + m->n_tensors);
    if (!has || data.n != want)
        return me_diag_fail(
            r->d, MENGINE_ERR_PLAN,
            "OfflineMemoryAllocation (buffer %u): %u bytes, expected %u for %u tensors", buffer,
            has ? data.n : 0, want, m->n_tensors);
    if (data.pos % 4)
        return me_diag_fail(r->d, MENGINE_ERR_ALIGNMENT,
                            "OfflineMemoryAllocation (buffer %u) is not 4-byte aligned", buffer);
    const uint8_t *p = r->base + data.pos;
    if (rd_i32(p) != 1 || rd_i32(p + 4) != 1 || rd_u32(p + 8) != m->n_tensors)
        return me_diag_fail(r->d, MENGINE_ERR_PLAN,
                            "OfflineMemoryAllocation: header [%d, %d, %d], expected [1, 1, %u]",
                            (int)rd_i32(p), (int)rd_i32(p + 4), (int)rd_i32(p + 8), m->n_tensors);
    for (uint32_t t = 0; t < m->n_tensors; t++) {
        const int32_t off = rd_i32(p + 12 + 4 * t);
        if (off < -1 || (off >= 0 && off % 4))
            return me_diag_fail(
                r->d, MENGINE_ERR_PLAN,
                "OfflineMemoryAllocation: tensor %u has offset %d (want -1 or a multiple of 4)", t,
                (int)off);
    }
    m->offline = data.pos + 12;
    return MENGINE_OK;
}

/* Model inputs: activations, float32, listed once; outputs likewise and not inputs. */
static mengine_status verify_io(fbr *r, const mengine_model *m)
{
    const fb_vec io[2] = {{m->inputs, m->n_inputs}, {m->outputs, m->n_outputs}};
    for (int k = 0; k < 2; k++) {
        const char *what = k ? "output" : "input";
        if (io[k].n == 0)
            return me_diag_fail(r->d, MENGINE_ERR_GRAPH, "the subgraph has no %ss", what);
        if (io[k].n > m->n_tensors) /* some tensor is listed twice; also bounds the checks below */
            return me_diag_fail(r->d, MENGINE_ERR_GRAPH, "%u model %ss for %u tensors", io[k].n,
                                what, m->n_tensors);
        for (uint32_t i = 0; i < io[k].n; i++) {
            const int32_t t = fb_vec_i32(r, &io[k], i);
            mtensor_info ti;
            if (t < 0 || (uint32_t)t >= m->n_tensors)
                return me_diag_fail(r->d, MENGINE_ERR_TENSOR_INDEX,
                                    "model %s %u: tensor %d does not exist (the subgraph has %u)",
                                    what, i, (int)t, m->n_tensors);
            mengine_status st = me_model_tensor(r, m, (uint32_t)t, &ti);
            if (st != MENGINE_OK)
                return st;
            if (ti.type != MENGINE_FLOAT32)
                return me_diag_fail(r->d, MENGINE_ERR_TYPE,
                                    "model %s %u (tensor %d '%s') is not FLOAT32", what, i, (int)t,
                                    ti.name);
            if (ti.data)
                return me_diag_fail(r->d, MENGINE_ERR_GRAPH,
                                    "model %s %u (tensor %d '%s') is a constant", what, i, (int)t,
                                    ti.name);
            for (uint32_t j = 0; j < i; j++)
                if (fb_vec_i32(r, &io[k], j) == t)
                    return me_diag_fail(r->d, MENGINE_ERR_GRAPH,
                                        "tensor %d is listed twice as a model %s", (int)t, what);
            if (k == 1 && index_in(r, &io[0], t))
                return me_diag_fail(r->d, MENGINE_ERR_GRAPH,
                                    "tensor %d is both a model input and output", (int)t);
        }
    }
    return MENGINE_OK;
}

/* Output index of operator @p j (checked when @p j was verified; re-reads do not
 * count against the table budget). */
static int32_t op_output(const fbr *r, const mengine_model *m, uint32_t j)
{
    fbr rr = *r;
    fb_table op;
    fb_vec in, out;
    rr.tables_left = 0xffffffffu;
    if (me_model_operator(&rr, m, j, &op, &in, &out) != MENGINE_OK || out.n < 1)
        return -1;
    return fb_vec_i32(&rr, &out, 0);
}

static mengine_status verify_operator(fbr *r, const mengine_model *m, uint32_t i)
{
    mop_ctx c;
    uint32_t opcode;
    int32_t version;
    c.r = r;
    c.m = m;
    c.index = i;
    mengine_status st = me_model_operator(r, m, i, &c.op, &c.inputs, &c.outputs);
    if (st == MENGINE_OK)
        st = me_fb_u32(r, &c.op, OP_OPCODE, 0, &opcode);
    if (st != MENGINE_OK)
        return st;
    if (opcode >= m->n_opcodes)
        return me_diag_fail(r->d, MENGINE_ERR_OPCODE_INDEX,
                            "operator %u: opcode index %u out of range (the model has %u codes)", i,
                            opcode, m->n_opcodes);
    st = me_model_opcode(r, m, opcode, &c.builtin, &version);
    if (st != MENGINE_OK)
        return st;
    const mop_reg *reg = me_op_find(c.builtin);
    if (!reg)
        return me_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED_OP,
                            "operator %u: %s (builtin code %d) is not supported", i,
                            mengine_op_name(c.builtin), (int)c.builtin);
    if (version < 1 || version > reg->max_version)
        return me_op_fail(&c, MENGINE_ERR_OP_VERSION, "version %d unsupported (1 to %d)",
                          (int)version, (int)reg->max_version);
    if (c.inputs.n > MENGINE_MAX_OP_INPUTS)
        return me_op_fail(&c, MENGINE_ERR_LIMIT, "%u inputs (at most %u)", c.inputs.n,
                          (unsigned)MENGINE_MAX_OP_INPUTS);
    if (c.outputs.n != 1)
        return me_op_fail(&c, MENGINE_ERR_GRAPH, "%u outputs, expected 1", c.outputs.n);

    const fb_vec ins = {m->inputs, m->n_inputs};
    const int32_t out = fb_vec_i32(r, &c.outputs, 0);
    mtensor_info ti;
    if (out < 0 || (uint32_t)out >= m->n_tensors)
        return me_op_fail(&c, MENGINE_ERR_TENSOR_INDEX,
                          "output tensor %d does not exist (the subgraph has %u)", (int)out,
                          m->n_tensors);
    st = me_model_tensor(r, m, (uint32_t)out, &ti);
    if (st != MENGINE_OK)
        return st;
    if (ti.data || index_in(r, &ins, out))
        return me_op_fail(&c, MENGINE_ERR_GRAPH, "writes tensor %d '%s', a %s", (int)out, ti.name,
                          ti.data ? "constant" : "model input");
    for (uint32_t j = 0; j < i; j++)
        if (op_output(r, m, j) == out)
            return me_op_fail(&c, MENGINE_ERR_GRAPH,
                              "writes tensor %d '%s', already written by operator %u", (int)out,
                              ti.name, j);
    for (uint32_t k = 0; k < c.inputs.n; k++) {
        const int32_t t = fb_vec_i32(r, &c.inputs, k);
        if (t == -1)
            continue;
        if (t < 0 || (uint32_t)t >= m->n_tensors)
            return me_op_fail(&c, MENGINE_ERR_TENSOR_INDEX,
                              "input %u: tensor %d does not exist (the subgraph has %u)", k, (int)t,
                              m->n_tensors);
        st = me_model_tensor(r, m, (uint32_t)t, &ti);
        if (st != MENGINE_OK)
            return st;
        if (ti.data || index_in(r, &ins, t))
            continue;
        uint32_t j = 0;
        while (j < i && op_output(r, m, j) != t)
            j++;
        if (j == i)
            return me_op_fail(&c, MENGINE_ERR_GRAPH,
                              "input %u reads tensor %d '%s' before any operator writes it", k,
                              (int)t, ti.name);
    }
    uint8_t options_type;
    st = me_fb_u8(r, &c.op, OP_OPTIONS_TYPE, 0, &options_type);
    if (st != MENGINE_OK)
        return st;
    if (options_type != 0 && options_type != (uint8_t)reg->options_type)
        return me_op_fail(&c, MENGINE_ERR_OPTIONS, "options of union type %u, expected %d",
                          (unsigned)options_type, (int)reg->options_type);
    mnode node;
    memset(&node, 0, sizeof node);
    return reg->prepare(&c, &node);
}

mengine_status mengine_model_load(mengine_model *m, const void *data, size_t size,
                                  const mengine_verify_opts *opts, char *msg, size_t msg_cap)
{
    mdiag d = {msg, msg_cap};
    const uint16_t probe = 1;
    if (msg && msg_cap)
        msg[0] = '\0';
    if (!m || !data)
        return me_diag_fail(&d, MENGINE_ERR_ARG, "model or data is NULL");
    memset(m, 0, sizeof *m);
    if ((size_t)data % 4)
        return me_diag_fail(&d, MENGINE_ERR_ARG,
                            "model data is not 4-byte aligned in memory (load it 16-byte aligned)");
    if (size > MAX_OFFSET)
        return me_diag_fail(&d, MENGINE_ERR_LIMIT, "model of %zu bytes: FlatBuffers stop at 2 GiB",
                            size);
    if (*(const uint8_t *)&probe != 1)
        return me_diag_fail(&d, MENGINE_ERR_UNSUPPORTED, "big-endian hosts are not supported");

    fbr r;
    r.base = data;
    r.size = (uint32_t)size;
    r.max_depth = opts && opts->max_depth ? opts->max_depth : MENGINE_DEFAULT_MAX_DEPTH;
    r.tables_left = opts && opts->max_tables ? opts->max_tables : MENGINE_DEFAULT_MAX_TABLES;
    r.d = &d;
    m->data = data;
    m->size = (uint32_t)size;
    m->max_depth = r.max_depth;

    fb_table model, sg;
    fb_vec v, s;
    uint32_t version, offline_buffer;
    int has_codes, has_buffers, has_sg, has, has_t, has_i, has_o, has_ops;
    mengine_status st = me_fb_root(&r, &model);
    if (st == MENGINE_OK)
        st = me_fb_u32(&r, &model, MODEL_VERSION, 0, &version);
    if (st != MENGINE_OK)
        return st;
    if (version != 3)
        return me_diag_fail(&d, MENGINE_ERR_VERSION, "schema version %u, expected 3", version);
    st = me_fb_vector(&r, &model, MODEL_OPCODES, 4, &v, &has_codes);
    if (st != MENGINE_OK)
        return st;
    m->opcodes = v.pos;
    m->n_opcodes = has_codes ? v.n : 0;
    st = me_fb_vector(&r, &model, MODEL_BUFFERS, 4, &v, &has_buffers);
    if (st != MENGINE_OK)
        return st;
    m->buffers = v.pos;
    m->n_buffers = has_buffers ? v.n : 0;
    st = me_fb_vector(&r, &model, MODEL_SUBGRAPHS, 4, &v, &has_sg);
    if (st == MENGINE_OK)
        st = me_fb_string(&r, &model, MODEL_DESCRIPTION, &s, &has);
    if (st != MENGINE_OK)
        return st;
    if (!has_codes || !has_buffers || !has_sg)
        return me_diag_fail(&d, MENGINE_ERR_SUBGRAPH, "the model has no %s vector",
                            !has_codes     ? "operator_codes"
                            : !has_buffers ? "buffers"
                                           : "subgraphs");
    if (v.n != 1)
        return me_diag_fail(&d, MENGINE_ERR_SUBGRAPH, "%u subgraphs (exactly 1 supported)", v.n);
    for (uint32_t i = 0; i < m->n_opcodes && st == MENGINE_OK; i++) {
        int32_t code, ver;
        st = me_model_opcode(&r, m, i, &code, &ver);
    }
    if (st == MENGINE_OK)
        st = verify_buffers(&r, m);
    if (st == MENGINE_OK)
        st = verify_metadata(&r, m, &model, &offline_buffer);
    if (st == MENGINE_OK)
        st = me_fb_vec_table(&r, &v, 0, DEPTH_SUBGRAPH, &sg);
    if (st == MENGINE_OK)
        st = me_fb_vector(&r, &sg, SUBGRAPH_TENSORS, 4, &v, &has_t);
    if (st != MENGINE_OK)
        return st;
    m->tensors = v.pos;
    m->n_tensors = has_t ? v.n : 0;
    st = me_fb_vector(&r, &sg, SUBGRAPH_INPUTS, 4, &v, &has_i);
    if (st != MENGINE_OK)
        return st;
    m->inputs = v.pos;
    m->n_inputs = has_i ? v.n : 0;
    st = me_fb_vector(&r, &sg, SUBGRAPH_OUTPUTS, 4, &v, &has_o);
    if (st != MENGINE_OK)
        return st;
    m->outputs = v.pos;
    m->n_outputs = has_o ? v.n : 0;
    st = me_fb_vector(&r, &sg, SUBGRAPH_OPERATORS, 4, &v, &has_ops);
    if (st == MENGINE_OK)
        st = me_fb_string(&r, &sg, SUBGRAPH_NAME, &s, &has);
    if (st != MENGINE_OK)
        return st;
    m->operators = v.pos;
    m->n_ops = has_ops ? v.n : 0;
    if (!has_t || !has_i || !has_o || !has_ops || m->n_ops == 0)
        return me_diag_fail(&d, MENGINE_ERR_SUBGRAPH, "the subgraph has no %s",
                            !has_t   ? "tensors vector"
                            : !has_i ? "inputs vector"
                            : !has_o ? "outputs vector"
                                     : "operators");
    if (m->n_tensors > MENGINE_MAX_TENSORS || m->n_ops > MENGINE_MAX_OPS)
        return me_diag_fail(
            &d, MENGINE_ERR_LIMIT, "%u tensors and %u operators (this build handles %u and %u)",
            m->n_tensors, m->n_ops, (unsigned)MENGINE_MAX_TENSORS, (unsigned)MENGINE_MAX_OPS);
    for (uint32_t t = 0; t < m->n_tensors && st == MENGINE_OK; t++) {
        mtensor_info ti;
        st = me_model_tensor(&r, m, t, &ti);
    }
    if (st == MENGINE_OK)
        st = verify_io(&r, m);
    for (uint32_t i = 0; i < m->n_ops && st == MENGINE_OK; i++)
        st = verify_operator(&r, m, i);
    if (st == MENGINE_OK && offline_buffer < m->n_buffers)
        st = verify_offline(&r, m, offline_buffer);
    if (st != MENGINE_OK)
        m->data = NULL; /* not loaded */
    return st;
}

/* The @p n bytes at @p p spell @p name exactly (no strlen: the engine calls
 * nothing beyond memcpy, memmove, memset, memcmp and expf). */
static int name_is(const uint8_t *p, uint32_t n, const char *name)
{
    for (uint32_t i = 0; i < n; i++)
        if (name[i] == '\0' || (uint8_t)name[i] != p[i])
            return 0;
    return name[n] == '\0';
}

mengine_status mengine_model_metadata(const mengine_model *m, const char *name,
                                      const uint8_t **data, size_t *size)
{
    if (data)
        *data = NULL;
    if (size)
        *size = 0;
    if (!m || !m->data || !name || !data || !size)
        return MENGINE_ERR_ARG;
    mdiag d = {NULL, 0};
    fbr r;
    fb_table model;
    fb_vec mv;
    int has;
    me_fbr_for_model(&r, m, &d);
    mengine_status st = me_fb_root(&r, &model);
    if (st == MENGINE_OK)
        st = me_fb_vector(&r, &model, MODEL_METADATA, 4, &mv, &has);
    if (st != MENGINE_OK || !has)
        return st;
    const fb_vec bv = {m->buffers, m->n_buffers};
    for (uint32_t i = 0; i < mv.n; i++) {
        fb_table mt, bt;
        fb_vec s, bytes;
        int has_name, has_data;
        uint32_t buffer;
        st = me_fb_vec_table(&r, &mv, i, DEPTH_ENTRY, &mt);
        if (st == MENGINE_OK)
            st = me_fb_string(&r, &mt, METADATA_NAME, &s, &has_name);
        if (st == MENGINE_OK)
            st = me_fb_u32(&r, &mt, METADATA_BUFFER, 0, &buffer);
        if (st != MENGINE_OK)
            return st;
        if (!has_name || !name_is(r.base + s.pos, s.n, name) || buffer >= m->n_buffers)
            continue;
        st = me_fb_vec_table(&r, &bv, buffer, DEPTH_ENTRY, &bt);
        if (st == MENGINE_OK)
            st = me_fb_vector(&r, &bt, BUFFER_DATA, 1, &bytes, &has_data);
        if (st == MENGINE_OK && has_data && bytes.n) {
            *data = r.base + bytes.pos;
            *size = bytes.n;
        }
        return st;
    }
    return MENGINE_OK;
}
