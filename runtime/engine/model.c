/* Model access (see model_impl.h): the TensorFlow Lite records the engine reads,
 * each checked as it is read, and metadata lookup. */
#include <string.h>

#include "engine/model_impl.h"

#define MAX_ELEMENTS 0x1fffffffu /* float tensors stay below 2 GiB */

void mengine_fbr_for_model(fbr *r, const mengine_model *m, mdiag *d)
{
    mengine_fb_init(r, m->data, m->size, m->max_depth, 0xffffffffu, d);
}

mengine_status mengine_model_root(fbr *r, fb_table *model)
{
    if (r->size >= 8 && memcmp(r->base + 4, "TFL3", 4) != 0)
        return mengine_diag_fail(r->d, MENGINE_ERR_IDENTIFIER,
                                 "file identifier is not \"TFL3\": not a TensorFlow Lite model");
    return mengine_fb_root(r, model);
}

mengine_status mengine_model_opcode(fbr *r, const mengine_model *m, uint32_t index,
                                    int32_t *builtin, int32_t *version)
{
    if (index >= m->n_opcodes)
        return mengine_diag_fail(r->d, MENGINE_ERR_OPCODE_INDEX,
                                 "operator code %u does not exist (the model has %u)", index,
                                 m->n_opcodes);
    const fb_vec v = {m->opcodes, m->n_opcodes};
    fb_table t;
    fb_vec custom;
    int8_t dep;
    int32_t code;
    int has_custom;
    mengine_status st = mengine_fb_vec_table(r, &v, index, DEPTH_ENTRY, &t);
    if (st == MENGINE_OK)
        st = mengine_fb_i8(r, &t, OPCODE_DEPRECATED, 0, &dep);
    if (st == MENGINE_OK)
        st = mengine_fb_string(r, &t, OPCODE_CUSTOM, &custom, &has_custom);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(r, &t, OPCODE_VERSION, 1, version);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(r, &t, OPCODE_BUILTIN, 0, &code);
    if (st == MENGINE_OK)
        *builtin = code > dep ? code : dep;
    return st;
}

mengine_status mengine_model_tensor(fbr *r, const mengine_model *m, uint32_t index,
                                    mtensor_info *ti)
{
    if (index >= m->n_tensors)
        return mengine_diag_fail(r->d, MENGINE_ERR_TENSOR_INDEX,
                                 "tensor %u does not exist (the subgraph has %u)", index,
                                 m->n_tensors);
    const fb_vec tv = {m->tensors, m->n_tensors};
    fb_table t, sub;
    fb_vec shape, name;
    int has, has_name;
    uint32_t buffer;
    uint8_t variable;
    mengine_status st = mengine_fb_vec_table(r, &tv, index, DEPTH_TENSOR, &t);
    if (st == MENGINE_OK)
        st = mengine_fb_string(r, &t, TENSOR_NAME, &name, &has_name);
    if (st != MENGINE_OK)
        return st;
    ti->index = index;
    ti->name = has_name ? (const char *)r->base + name.pos : "";
    ti->data = NULL;
    st = mengine_fb_vector(r, &t, TENSOR_SHAPE, 4, &shape, &has);
    if (st != MENGINE_OK)
        return st;
    ti->rank = has ? shape.n : 0;
    if (ti->rank > MENGINE_MAX_DIMS)
        return mengine_diag_fail(r->d, MENGINE_ERR_SHAPE, "tensor %u '%s': rank %u (at most %u)",
                                 index, ti->name, ti->rank, (unsigned)MENGINE_MAX_DIMS);
    ti->count = 1;
    for (uint32_t i = 0; i < ti->rank; i++) {
        ti->dims[i] = fb_vec_i32(r, &shape, i);
        if (ti->dims[i] < 1)
            return mengine_diag_fail(r->d, MENGINE_ERR_SHAPE, "tensor %u '%s': dimension %u is %d",
                                     index, ti->name, i, ti->dims[i]);
        if (ti->count > MAX_ELEMENTS / (uint32_t)ti->dims[i])
            return mengine_diag_fail(r->d, MENGINE_ERR_SHAPE, "tensor %u '%s': larger than 2 GiB",
                                     index, ti->name);
        ti->count *= (uint32_t)ti->dims[i];
    }
    st = mengine_fb_i8(r, &t, TENSOR_TYPE, 0, &ti->type);
    if (st == MENGINE_OK)
        st = mengine_fb_u32(r, &t, TENSOR_BUFFER, 0, &buffer);
    if (st == MENGINE_OK)
        st = mengine_fb_u8(r, &t, TENSOR_IS_VARIABLE, 0, &variable);
    if (st == MENGINE_OK)
        st = mengine_fb_sub_table(r, &t, TENSOR_QUANT, &sub, &has); /* structure only: unused */
    if (st != MENGINE_OK)
        return st;
    if (ti->type != MENGINE_FLOAT32 && ti->type != MENGINE_INT32)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_TYPE,
            "tensor %u '%s': type %d unsupported (FLOAT32, or INT32 for constant shapes)", index,
            ti->name, ti->type);
    if (variable)
        return mengine_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                                 "tensor %u '%s': variable tensors unsupported", index, ti->name);
    st = mengine_fb_sub_table(r, &t, TENSOR_SPARSITY, &sub, &has);
    if (st != MENGINE_OK)
        return st;
    if (has)
        return mengine_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                                 "tensor %u '%s': sparse tensors unsupported", index, ti->name);
    if (buffer >= m->n_buffers)
        return mengine_diag_fail(r->d, MENGINE_ERR_BUFFER_INDEX,
                                 "tensor %u '%s': buffer %u does not exist (the model has %u)",
                                 index, ti->name, buffer, m->n_buffers);
    if (buffer != 0) {
        const fb_vec bv = {m->buffers, m->n_buffers};
        fb_table bt;
        fb_vec data;
        st = mengine_fb_vec_table(r, &bv, buffer, DEPTH_ENTRY, &bt);
        if (st == MENGINE_OK)
            st = mengine_fb_vector(r, &bt, BUFFER_DATA, 1, &data, &has);
        if (st != MENGINE_OK)
            return st;
        if (has && data.n > 0) {
            if (data.n != ti->count * 4u)
                return mengine_diag_fail(
                    r->d, MENGINE_ERR_BUFFER_SIZE,
                    "tensor %u '%s': buffer %u holds %u bytes, the shape needs %u", index, ti->name,
                    buffer, data.n, ti->count * 4u);
            ti->data = r->base + data.pos;
            if ((size_t)ti->data % 4)
                return mengine_diag_fail(
                    r->d, MENGINE_ERR_ALIGNMENT,
                    "tensor %u '%s': constant data at byte %u is not 4-byte aligned in memory",
                    index, ti->name, data.pos);
        }
    }
    if (ti->type == MENGINE_INT32 && !ti->data)
        return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                 "tensor %u '%s': INT32 is only supported for constant tensors",
                                 index, ti->name);
    return MENGINE_OK;
}

mengine_status mengine_model_operator(fbr *r, const mengine_model *m, uint32_t index, fb_table *op,
                                      fb_vec *inputs, fb_vec *outputs)
{
    const fb_vec ov = {m->operators, m->n_ops};
    int has_in, has_out;
    mengine_status st = mengine_fb_vec_table(r, &ov, index, DEPTH_TENSOR, op);
    if (st == MENGINE_OK)
        st = mengine_fb_vector(r, op, OP_INPUTS, 4, inputs, &has_in);
    if (st == MENGINE_OK)
        st = mengine_fb_vector(r, op, OP_OUTPUTS, 4, outputs, &has_out);
    if (st == MENGINE_OK && (!has_in || !has_out))
        return mengine_diag_fail(r->d, MENGINE_ERR_GRAPH, "operator %u has no %s vector", index,
                                 has_in ? "outputs" : "inputs");
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
    mengine_fbr_for_model(&r, m, &d);
    mengine_status st = mengine_model_root(&r, &model);
    if (st == MENGINE_OK)
        st = mengine_fb_vector(&r, &model, MODEL_METADATA, 4, &mv, &has);
    if (st != MENGINE_OK || !has)
        return st;
    const fb_vec bv = {m->buffers, m->n_buffers};
    for (uint32_t i = 0; i < mv.n; i++) {
        fb_table mt, bt;
        fb_vec s, bytes;
        int has_name, has_data;
        uint32_t buffer;
        st = mengine_fb_vec_table(&r, &mv, i, DEPTH_ENTRY, &mt);
        if (st == MENGINE_OK)
            st = mengine_fb_string(&r, &mt, METADATA_NAME, &s, &has_name);
        if (st == MENGINE_OK)
            st = mengine_fb_u32(&r, &mt, METADATA_BUFFER, 0, &buffer);
        if (st != MENGINE_OK)
            return st;
        if (!has_name || !name_is(r.base + s.pos, s.n, name) || buffer >= m->n_buffers)
            continue;
        st = mengine_fb_vec_table(&r, &bv, buffer, DEPTH_ENTRY, &bt);
        if (st == MENGINE_OK)
            st = mengine_fb_vector(&r, &bt, BUFFER_DATA, 1, &bytes, &has_data);
        if (st == MENGINE_OK && has_data && bytes.n) {
            *data = r.base + bytes.pos;
            *size = bytes.n;
        }
        return st;
    }
    return MENGINE_OK;
}
