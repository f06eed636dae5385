/* Names of the builtin operator codes (builtins.h). In a file of their own:
 * the string literals of one file share a section, so beside
 * mengine_status_str() they would keep its strings in every image. */
#include "engine/builtins.h"

const char *mengine_op_name(int32_t builtin)
{
    switch (builtin) {
    case MENGINE_OP_ADD: return "ADD";
    case MENGINE_OP_AVERAGE_POOL_2D: return "AVERAGE_POOL_2D";
    case MENGINE_OP_CONCATENATION: return "CONCATENATION";
    case MENGINE_OP_CONV_2D: return "CONV_2D";
    case MENGINE_OP_DEPTHWISE_CONV_2D: return "DEPTHWISE_CONV_2D";
    case MENGINE_OP_FULLY_CONNECTED: return "FULLY_CONNECTED";
    case MENGINE_OP_LOGISTIC: return "LOGISTIC";
    case MENGINE_OP_MUL: return "MUL";
    case MENGINE_OP_RELU: return "RELU";
    case MENGINE_OP_RELU6: return "RELU6";
    case MENGINE_OP_RESHAPE: return "RESHAPE";
    case MENGINE_OP_RESIZE_BILINEAR: return "RESIZE_BILINEAR";
    case MENGINE_OP_SOFTMAX: return "SOFTMAX";
    case MENGINE_OP_PAD: return "PAD";
    case MENGINE_OP_MEAN: return "MEAN";
    case MENGINE_OP_STRIDED_SLICE: return "STRIDED_SLICE";
    case MENGINE_OP_SLICE: return "SLICE";
    case MENGINE_OP_TRANSPOSE_CONV: return "TRANSPOSE_CONV";
    case MENGINE_OP_LEAKY_RELU: return "LEAKY_RELU";
    case MENGINE_OP_HARD_SWISH: return "HARD_SWISH";
    case MENGINE_OP_QUANTIZE: return "QUANTIZE";
    case MENGINE_FUSED_CORRELATION: return "FUSED_CORRELATION";
    case MENGINE_FUSED_CORRELATION_INT8: return "FUSED_CORRELATION_INT8";
    default: return "UNKNOWN";
    }
}
