/**
 * @file builtins.h
 * @brief The TensorFlow Lite builtin operator codes the inference engine
 *        implements, and their names. Included by engine.h.
 */
#ifndef MANTA_ENGINE_BUILTINS_H
#define MANTA_ENGINE_BUILTINS_H

#include <stdint.h>

/** TFLite builtin operator codes the engine implements. */
enum mengine_builtin {
    MENGINE_OP_ADD = 0,
    MENGINE_OP_AVERAGE_POOL_2D = 1,
    MENGINE_OP_CONCATENATION = 2,
    MENGINE_OP_CONV_2D = 3,
    MENGINE_OP_DEPTHWISE_CONV_2D = 4,
    MENGINE_OP_FULLY_CONNECTED = 9,
    MENGINE_OP_LOGISTIC = 14,
    MENGINE_OP_MUL = 18,
    MENGINE_OP_RELU = 19,
    MENGINE_OP_RELU6 = 21,
    MENGINE_OP_RESHAPE = 22,
    MENGINE_OP_RESIZE_BILINEAR = 23,
    MENGINE_OP_SOFTMAX = 25,
    MENGINE_OP_PAD = 34,
    MENGINE_OP_MEAN = 40,
    MENGINE_OP_STRIDED_SLICE = 45,
    MENGINE_OP_SLICE = 65,
    MENGINE_OP_TRANSPOSE_CONV = 67,
    MENGINE_OP_LEAKY_RELU = 98,
    MENGINE_OP_QUANTIZE = 114, /**< int8 -> int8 requantization only */
    MENGINE_OP_HARD_SWISH = 117
};

/**
 * Code of the engine's fused correlation (::mengine_op_correlation): not a
 * TFLite builtin (negative, so no file can name it). A model whose operators
 * form the correlation pattern of the stereo export (PAD, then per
 * displacement SLICE, MUL, MEAN over channels, then one CONCATENATION; see
 * engine.h) runs that pattern as one kernel when the operator table lists it.
 */
#define MENGINE_FUSED_CORRELATION (-2)

/** Code of the fused int8 correlation (::mengine_op_correlation_int8): the same pattern
 *  with INT8 tensors, the MULs of one quantization and the MEANs of another. */
#define MENGINE_FUSED_CORRELATION_INT8 (-5)

/** Name of a builtin operator code ("CONV_2D"), or "UNKNOWN". Never NULL. */
const char *mengine_op_name(int32_t builtin);

#endif
