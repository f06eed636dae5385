/* Model access: the TensorFlow Lite schema (field ids) over the checked
 * FlatBuffers reader, and the tensor, operator and operator-code records of a
 * model as mengine_model_load() indexed it. Depends on fbread_impl.h and diag_impl.h.
 * Not part of the public API. */
#ifndef MANTA_ENGINE_MODEL_H
#define MANTA_ENGINE_MODEL_H

#include <stdint.h>

#include "engine/fbread_impl.h"

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
    /* quantization (checked by mengine_model_tensor()): n_q scales (0: none) at model
     * position q_scales (floats), zero points all in range, per-channel along q_dim */
    uint32_t n_q, q_scales;
    int32_t q_dim;
    float scale;        /* scale 0 (0 when n_q == 0) */
    int32_t zero_point; /* zero point 0 */
} mtensor_info;

/* Reader over @p m's data (tables budget unlimited: the model was verified). */
void mengine_fbr_for_model(fbr *r, const mengine_model *m, mdiag *d);
/* The Model table: the file identifier must be "TFL3"
 * (MENGINE_ERR_IDENTIFIER), then as mengine_fb_root(). */
mengine_status mengine_model_root(fbr *r, fb_table *model);
/* Read and check tensor @p index: rank <= 4, dims >= 1, size < 2 GiB, type
 * FLOAT32/INT32/INT8, buffer index and size, alignment of constant data; its
 * quantization: INT8 tensors must have one (per-tensor for activations), every
 * scale > 0 and finite, zero points in range (0 for per-channel and INT32),
 * per-channel vectors as long as the quantized dimension. */
mengine_status mengine_model_tensor(fbr *r, const mengine_model *m, uint32_t index,
                                    mtensor_info *ti);
/* Operator @p index: its table and its input/output vectors. */
mengine_status mengine_model_operator(fbr *r, const mengine_model *m, uint32_t index, fb_table *op,
                                      fb_vec *inputs, fb_vec *outputs);
/* Builtin code and version of operator code @p index. */
mengine_status mengine_model_opcode(fbr *r, const mengine_model *m, uint32_t index,
                                    int32_t *builtin, int32_t *version);
/* Offset of tensor @p t in the verified offline plan, or -1 (none, or a constant). */
static inline int model_offline_offset(const mengine_model *m, uint32_t t)
{
    return m->offline ? (int)rd_i32(m->data + m->offline + 4 * t) : -1;
}

#endif
