/* Engine internals shared by verify.c, plan.c, ops.c and engine.c: the checked
 * FlatBuffers reader, tensor and operator records, the operator registry and
 * the planner interface. Not part of the public API. */
#ifndef MANTA_ENGINE_INTERNAL_H
#define MANTA_ENGINE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/kernels.h"

/* ---- diagnostics ---- */

/* Where messages go: a caller buffer (msg may be NULL). */
typedef struct mdiag {
    char *msg;
    size_t cap;
} mdiag;

/* Write a message (printf subset: %s %d %u %zu %%) and return @p code. */
mengine_status me_diag_fail(mdiag *d, mengine_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

struct mop_ctx;
/* As me_diag_fail(), prefixed with "operator N (NAME): ". */
mengine_status me_op_fail(const struct mop_ctx *c, mengine_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- checked FlatBuffers reader ----
 * Every access checks bounds, alignment and vtable limits, so reading a field
 * the verifier did not visit is still safe. Positions are byte offsets from
 * the start of the data. */

typedef struct fbr {
    const uint8_t *base;
    uint32_t size;
    uint32_t max_depth;
    uint32_t tables_left; /* budget of tables to visit */
    mdiag *d;
} fbr;

typedef struct fb_table {
    uint32_t pos; /* table start (its soffset) */
    uint32_t vt;  /* vtable start */
    uint16_t vt_size;
    uint16_t t_size;
    uint32_t depth;
} fb_table;

typedef struct fb_vec {
    uint32_t pos; /* first element */
    uint32_t n;
} fb_vec;

static inline uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline int32_t rd_i32(const uint8_t *p)
{
    uint32_t u = rd_u32(p);
    return u <= 0x7fffffffu ? (int32_t)u : (int32_t)(u - 0x80000000u) - 0x7fffffff - 1;
}

/* Reader over @p m's data (tables budget unlimited: the model was verified). */
void me_fbr_for_model(fbr *r, const mengine_model *m, mdiag *d);
mengine_status me_fb_root(fbr *r, fb_table *t);
mengine_status me_fb_table_at(fbr *r, uint32_t pos, uint32_t depth, fb_table *t);
/* Scalars: absent fields give the default. */
mengine_status me_fb_u8(fbr *r, const fb_table *t, unsigned id, uint8_t def, uint8_t *out);
mengine_status me_fb_i8(fbr *r, const fb_table *t, unsigned id, int8_t def, int8_t *out);
mengine_status me_fb_i32(fbr *r, const fb_table *t, unsigned id, int32_t def, int32_t *out);
mengine_status me_fb_u32(fbr *r, const fb_table *t, unsigned id, uint32_t def, uint32_t *out);
mengine_status me_fb_u64(fbr *r, const fb_table *t, unsigned id, uint64_t def, uint64_t *out);
mengine_status me_fb_f32(fbr *r, const fb_table *t, unsigned id, float def, float *out);
/* Objects: *present is 0 (and the output untouched) when the field is absent. */
mengine_status me_fb_sub_table(fbr *r, const fb_table *t, unsigned id, fb_table *sub, int *present);
mengine_status me_fb_vector(fbr *r, const fb_table *t, unsigned id, uint32_t elem_size, fb_vec *v,
                            int *present);
mengine_status me_fb_string(fbr *r, const fb_table *t, unsigned id, fb_vec *s, int *present);
/* Element @p i of a vector of tables. */
mengine_status me_fb_vec_table(fbr *r, const fb_vec *v, uint32_t i, uint32_t depth, fb_table *t);
static inline int32_t fb_vec_i32(const fbr *r, const fb_vec *v, uint32_t i)
{
    return rd_i32(r->base + v->pos + 4 * i);
}

/* ---- model access ---- */

/* Field ids (upstream schema). */
enum {
    MODEL_VERSION = 0,
    MODEL_OPCODES = 1,
    MODEL_SUBGRAPHS = 2,
    MODEL_DESCRIPTION = 3,
    MODEL_BUFFERS = 4,
    MODEL_METADATA = 6,
    OPCODE_DEPRECATED = 0,
    OPCODE_CUSTOM = 1,
    OPCODE_VERSION = 2,
    OPCODE_BUILTIN = 3,
    SUBGRAPH_TENSORS = 0,
    SUBGRAPH_INPUTS = 1,
    SUBGRAPH_OUTPUTS = 2,
    SUBGRAPH_OPERATORS = 3,
    SUBGRAPH_NAME = 4,
    TENSOR_SHAPE = 0,
    TENSOR_TYPE = 1,
    TENSOR_BUFFER = 2,
    TENSOR_NAME = 3,
    TENSOR_QUANT = 4,
    TENSOR_IS_VARIABLE = 5,
    TENSOR_SPARSITY = 6,
    BUFFER_DATA = 0,
    BUFFER_OFFSET = 1,
    BUFFER_SIZE = 2,
    METADATA_NAME = 0,
    METADATA_BUFFER = 1,
    OP_OPCODE = 0,
    OP_INPUTS = 1,
    OP_OUTPUTS = 2,
    OP_OPTIONS_TYPE = 3,
    OP_OPTIONS = 4
};

/* Depth of the tables (root = 1). */
enum { DEPTH_MODEL = 1, DEPTH_SUBGRAPH = 2, DEPTH_ENTRY = 2, DEPTH_TENSOR = 3 };

/* A tensor as read from the model. */
typedef struct mtensor_info {
    uint32_t index;
    int8_t type;
    uint32_t rank;
    int32_t dims[MENGINE_MAX_DIMS];
    uint32_t count;      /* elements */
    const uint8_t *data; /* constant data, or NULL for activations */
    const char *name;    /* 0-terminated, "" when absent */
} mtensor_info;

/* Read and check tensor @p index: rank <= 4, dims >= 1, size < 2 GiB, type
 * FLOAT32/INT32, buffer index and size, alignment of constant data. */
mengine_status me_model_tensor(fbr *r, const mengine_model *m, uint32_t index, mtensor_info *ti);
/* Operator @p index: its table and its input/output vectors. */
mengine_status me_model_operator(fbr *r, const mengine_model *m, uint32_t index, fb_table *op,
                                 fb_vec *inputs, fb_vec *outputs);
/* Builtin code and version of operator code @p index. */
mengine_status me_model_opcode(fbr *r, const mengine_model *m, uint32_t index, int32_t *builtin,
                               int32_t *version);
static inline int model_offline_offset(const mengine_model *m, uint32_t t)
{
    return m->offline ? (int)rd_i32(m->data + m->offline + 4 * t) : -1;
}

/* ---- records kept in the arena ---- */

typedef struct mtensor {
    float *data;        /* activations (planned), NULL for constants */
    const float *cdata; /* data to read: constant or planned */
    int32_t dims[MENGINE_MAX_DIMS];
    uint32_t rank;
    uint32_t count;
    uint8_t type;
} mtensor;

/* Per-operator parameters computed by prepare. */
typedef union mop_params {
    mk_conv_params conv; /* CONV_2D, TRANSPOSE_CONV */
    mk_dw_params dw;
    mk_pool_params pool;
    struct {
        int32_t before[4]; /* PAD: padding before each of (n, h, w, c) */
    } pad;
    struct {
        mk_act act;
        float value; /* SOFTMAX beta, LEAKY_RELU alpha */
        int32_t axis;
    } misc;
} mop_params;

struct mop_reg;

typedef struct mnode {
    const struct mop_reg *reg;
    uint32_t inputs; /* position of the first input index in the model */
    uint32_t n_inputs;
    uint32_t output; /* output tensor index */
    uint32_t scratch_bytes;
    float *scratch;
    mop_params p;
} mnode;

/* What an operator's prepare sees. */
typedef struct mop_ctx {
    fbr *r;
    const mengine_model *m;
    uint32_t index; /* operator index, for messages */
    int32_t builtin;
    fb_table op;
    fb_vec inputs, outputs;
} mop_ctx;

/* Operator registration: prepare validates the operator against the model
 * and fills the node (parameters, scratch size); eval runs it. */
typedef struct mop_reg {
    int32_t builtin;
    int32_t max_version;
    int8_t options_type; /* BuiltinOptions union type, 0 = none */
    int8_t elementwise;  /* output may overwrite an input of the same size */
    mengine_status (*prepare)(const mop_ctx *c, mnode *node);
    mengine_status (*eval)(const mengine *e, const mnode *node);
} mop_reg;

/* The registration of @p builtin, or NULL. */
const mop_reg *me_op_find(int32_t builtin);

/* Input tensor record @p i of @p node (NULL for an absent optional input). */
static inline const mtensor *node_input(const mengine *e, const mnode *n, uint32_t i)
{
    int32_t t = rd_i32(e->model.data + n->inputs + 4 * i);
    return t < 0 ? NULL : &e->tensors[t];
}

/* ---- planner ----
 * Works in a caller area of me_plan_work_size() bytes. Use: me_plan_begin(), one
 * me_plan_scratch() per operator with scratch, me_plan_run(), then read the results
 * with me_plan_tensor_offset() / me_plan_scratch_offset() before reusing the area. */
size_t me_plan_work_size(uint32_t n_tensors, uint32_t n_ops);
mengine_status me_plan_begin(void *work, size_t work_size, const mengine_model *m, mdiag *d);
void me_plan_scratch(void *work, uint32_t op, uint32_t bytes);
mengine_status me_plan_run(void *work, mdiag *d, size_t *total);
/* Offset of tensor @p t in the activation area; -1 for constants and unused tensors. */
int64_t me_plan_tensor_offset(const void *work, uint32_t t);
int64_t me_plan_scratch_offset(const void *work, uint32_t op);

#endif
