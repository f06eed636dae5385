/* Operators: the tensor and operator records kept in the arena, what an
 * operator's prepare sees, the registrations ({prepare, eval} per builtin,
 * TFLM style) and their one set-up, used by the verifier and the interpreter
 * alike. Depends on model_impl.h, fbread_impl.h, diag_impl.h and kernels_impl.h. Not part of the
 * public API. */
#ifndef MANTA_ENGINE_OPS_H
#define MANTA_ENGINE_OPS_H

#include <stdint.h>

#include "engine/kernels_impl.h"
#include "engine/kernels_q8_impl.h"
#include "engine/kernels_q8_stereo_impl.h"
#include "engine/model_impl.h"

/* ---- records kept in the arena ---- */

typedef struct mtensor {
    float *data;        /* activations (planned), NULL for constants */
    const float *cdata; /* data to read: constant or planned */
    int32_t dims[MENGINE_MAX_DIMS];
    uint32_t rank;
    uint32_t count;
    uint8_t type;
    float scale; /* INT8: quantization (per-tensor, or channel 0's) */
    int32_t zero_point;
} mtensor;

/* Per-operator parameters computed by prepare. */
typedef union mop_params {
    mengine_k_conv_params conv; /* CONV_2D, TRANSPOSE_CONV */
    mengine_k_dw_params dw;
    mengine_k_pool_params pool;
    struct {
        int32_t before[4]; /* PAD: padding before each of (n, h, w, c) */
    } pad;
    struct {
        mengine_k_act act;
        float value;  /* SOFTMAX beta, LEAKY_RELU alpha */
        int32_t axis; /* CONCATENATION; MEAN: 0 over H and W, 3 over C; RESIZE_BILINEAR: flags */
    } misc;
    struct {
        int32_t begin[4]; /* SLICE, STRIDED_SLICE: first index along (n, h, w, c) */
        int16_t stride[4];
    } slice;
    struct {
        uint32_t left, right; /* fused correlation: tensor indices of the features */
        mengine_k_corr_params k;
    } corr;
    mengine_kq_params q8; /* the int8 operators (ops_q8.c) */
    struct {
        uint32_t left, right; /* fused int8 correlation: tensor indices of the features */
        mengine_kq_corr_params k;
    } corr8;
} mop_params;

typedef struct mnode {
    const struct mengine_op *reg;
    uint32_t inputs; /* position of the first input index in the model */
    uint32_t n_inputs;
    uint32_t output; /* output tensor index */
    uint32_t scratch_bytes;
    float *scratch;
    mop_params p;
} mnode;

/* ---- registrations ---- */

/* What an operator's prepare sees. */
typedef struct mop_ctx {
    fbr *r;
    const mengine_model *m;
    uint32_t index; /* operator index, for messages */
    int32_t builtin;
    const struct mengine_op *reg;
    fb_table op;
    fb_vec inputs, outputs;
} mop_ctx;

/* How the planner may let an operator's output share memory with an input. */
enum mop_share {
    MOP_SHARE_NONE = 0,
    MOP_SHARE_ALIAS = 1,   /* same bytes (RESHAPE): always the input's buffer */
    MOP_SHARE_INPLACE = 2, /* element-wise: over an input of the same size read last here */
    MOP_SHARE_ELIDED = 3   /* inside a fused pattern: its output is never materialised */
};

/* Added to a registration's builtin code: it runs the operators of that code whose
 * output is INT8 (ops_q8.c); without it, the float32 ones. */
#define MOP_INT8 0x10000

/* Operator registration (public name ::mengine_op): prepare validates the
 * operator against the model and fills the node (parameters, scratch size),
 * without allocating; eval runs it on the records and never allocates. */
struct mengine_op {
    int32_t builtin;
    int32_t max_version;
    int8_t options_type; /* BuiltinOptions union type, 0 = none */
    int8_t share;        /* enum mop_share */
    mengine_status (*prepare)(const mop_ctx *c, struct mnode *node);
    mengine_status (*eval)(const mengine *e, const struct mnode *node);
};
typedef struct mengine_op mop_reg;

/* The operators of a fused pattern but its last: eval does nothing (the
 * pattern's kernel runs at its last operator) and the planner gives their
 * outputs no memory. Not in any operator table. */
extern const struct mengine_op mengine_op_elided;

/* The one set-up of operator @p index's context: its table, inputs and
 * outputs, operator code, builtin and version, and its registration in
 * m->ops. Fails with the verifier's message when the opcode index is out of
 * range, the operator is not in the table (MENGINE_ERR_UNSUPPORTED_OP), its
 * version is not supported, or it has more than MENGINE_MAX_OP_INPUTS inputs
 * or not exactly one output. */
mengine_status mengine_op_bind(fbr *r, const mengine_model *m, uint32_t index, mop_ctx *c);
/* Prepare the bound operator @p c into @p node: its options must be of the
 * registration's union type; the node is cleared, given its registration,
 * inputs and output, and the registration's prepare fills the rest. The only
 * place prepare is called from. */
mengine_status mengine_op_prepare(const mop_ctx *c, mnode *node);
/* As mengine_diag_fail() into c->r->d, prefixed with "operator N (NAME): ". */
mengine_status mengine_op_fail(const mop_ctx *c, mengine_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The float32 registrations' prepare (inputs, options, shapes; INT8 and INT32 biases where the
 * registration is an int8 one), for the int8 registrations to call directly: CONV_2D,
 * DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD and MUL, PAD, RESHAPE, MEAN, the element-wise
 * activations (HARD_SWISH), SOFTMAX. */
mengine_status mengine_opf_conv_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_dw_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_fc_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_binary_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_pad_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_reshape_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_mean_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_unary_prepare(const mop_ctx *c, mnode *node);
mengine_status mengine_opf_softmax_prepare(const mop_ctx *c, mnode *node);

/* Input tensor record @p i of @p node (NULL for an absent optional input). */
static inline const mtensor *node_input(const mengine *e, const mnode *n, uint32_t i)
{
    int32_t t = rd_i32(e->model.data + n->inputs + 4 * i);
    return t < 0 ? NULL : &e->tensors[t];
}

#endif
