#include "space/act.h"

const char *space_act_name(nn_act a)
{
    switch (a) {
    case NN_ACT_NONE: return "none";
    case NN_ACT_RELU: return "relu";
    case NN_ACT_RELU6: return "relu6";
    case NN_ACT_HSWISH: return "h-swish";
    case NN_ACT_HSIGMOID: return "h-sigmoid";
    case NN_ACT_SIGMOID: return "sigmoid";
    case NN_ACT_LEAKY_RELU: return "leaky-relu";
    }
    return "?";
}
