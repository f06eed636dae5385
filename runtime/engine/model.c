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

/* QuantizationParameters field ids (upstream schema). */
enum { QUANT_SCALE = 2, QUANT_ZERO_POINT = 3, QUANT_DETAILS_TYPE = 4, QUANT_DIM = 6 };

static float q_scale_at(const fbr *r, uint32_t pos, uint32_t i)
{
    const uint32_t bits = rd_u32(r->base + pos + 4 * i);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The quantization of @p ti (table @p q, or NULL when absent), checked as model_impl.h says. */
static mengine_status mengine_model_quant(fbr *r, mtensor_info *ti, const fb_table *q)
{
    fb_vec sv, zv;
    int has_s = 0, has_z = 0;
    uint8_t details = 0;
    int32_t dim = 0;
    ti->n_q = ti->q_scales = 0;
    ti->q_dim = 0;
    ti->scale = 0.0f;
    ti->zero_point = 0;
    mengine_status st = MENGINE_OK;
    if (q) {
        st = mengine_fb_vector(r, q, QUANT_SCALE, 4, &sv, &has_s);
        if (st == MENGINE_OK)
            st = mengine_fb_vector(r, q, QUANT_ZERO_POINT, 8, &zv, &has_z);
        if (st == MENGINE_OK)
            st = mengine_fb_u8(r, q, QUANT_DETAILS_TYPE, 0, &details);
        if (st == MENGINE_OK)
            st = mengine_fb_i32(r, q, QUANT_DIM, 0, &dim);
        if (st != MENGINE_OK)
            return st;
    }
    if (ti->type == MENGINE_FLOAT32 || !has_s || sv.n == 0) { /* float: min/max ignored */
        if (ti->type == MENGINE_INT8)
            return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                     "tensor %u '%s': INT8 without quantization scale", ti->index,
                                     ti->name);
        return MENGINE_OK;
    }
    if (details != 0)
        return mengine_diag_fail(r->d, MENGINE_ERR_UNSUPPORTED,
                                 "tensor %u '%s': quantization details (custom) unsupported",
                                 ti->index, ti->name);
    if (!has_z || zv.n != sv.n)
        return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                 "tensor %u '%s': quantization zero_point has %u values for %u "
                                 "scales",
                                 ti->index, ti->name, has_z ? zv.n : 0, sv.n);
    if (sv.n > 1 && (dim < 0 || (uint32_t)dim >= ti->rank || (uint32_t)ti->dims[dim] != sv.n))
        return mengine_diag_fail(r->d, MENGINE_ERR_SHAPE,
                                 "tensor %u '%s': quantization scale has %u values, "
                                 "quantized_dimension %d has %d",
                                 ti->index, ti->name, sv.n, (int)dim,
                                 dim >= 0 && (uint32_t)dim < ti->rank ? ti->dims[dim] : 0);
    if (sv.n > 1 && !ti->data)
        return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                 "tensor %u '%s': per-channel quantization of an activation",
                                 ti->index, ti->name);
    for (uint32_t i = 0; i < sv.n; i++) {
        const float s = q_scale_at(r, sv.pos, i);
        const uint32_t lo = rd_u32(r->base + zv.pos + 8 * i),
                       hi = rd_u32(r->base + zv.pos + 8 * i + 4);
        const int64_t z = (int64_t)((uint64_t)hi << 32 | lo);
        if (!(s > 0.0f) || !(s <= 3.402823466e38f))
            return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                     "tensor %u '%s': quantization scale[%u] is %s (must be > 0 "
                                     "and finite)",
                                     ti->index, ti->name, i,
                                     s != s     ? "NaN"
                                     : s > 0.0f ? "infinite"
                                                : "zero or negative");
        const int sym = ti->type == MENGINE_INT32 || sv.n > 1;
        if (sym ? z != 0 : (z < -128 || z > 127))
            return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                     "tensor %u '%s': quantization zero_point[%u] = %d (%s)",
                                     ti->index, ti->name, i,
                                     (int)(z < -2147483647  ? -2147483647
                                           : z > 2147483647 ? 2147483647
                                                            : z),
                                     sym ? "must be 0" : "-128 to 127");
        if (i == 0) {
            ti->scale = s;
            ti->zero_point = (int32_t)z;
        }
    }
    ti->n_q = sv.n;
    ti->q_scales = sv.pos;
    ti->q_dim = sv.n > 1 ? dim : 0;
    return MENGINE_OK;
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
        st = mengine_fb_sub_table(r, &t, TENSOR_QUANT, &sub, &has);
    if (st != MENGINE_OK)
        return st;
    if (ti->type != MENGINE_FLOAT32 && ti->type != MENGINE_INT32 && ti->type != MENGINE_INT8)
        return mengine_diag_fail(r->d, MENGINE_ERR_TYPE,
                                 "tensor %u '%s': type %d unsupported (FLOAT32, INT8, or INT32 for "
                                 "constant shapes and biases)",
                                 index, ti->name, ti->type);
    const int has_q = has;
    fb_table quant = {0, 0, 0, 0, 0};
    if (has_q)
        quant = sub;
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
            const uint32_t esize = ti->type == MENGINE_INT8 ? 1u : 4u;
            if (data.n != ti->count * esize)
                return mengine_diag_fail(
                    r->d, MENGINE_ERR_BUFFER_SIZE,
                    "tensor %u '%s': buffer %u holds %u bytes, the shape needs %u", index, ti->name,
                    buffer, data.n, ti->count * esize);
            ti->data = r->base + data.pos;
            if ((size_t)ti->data % 4)
                return mengine_diag_fail(
                    r->d, MENGINE_ERR_ALIGNMENT,
                    "tensor %u '%s': constant data at byte %u is not 4-byte aligned in memory",
                    index, ti->name, data.pos);
        }
    }
    st = mengine_model_quant(r, ti, has_q ? &quant : NULL);
    if (st != MENGINE_OK)
        return st;
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
