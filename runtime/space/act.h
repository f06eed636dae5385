/**
 * @file act.h
 * @brief The activations a search space names (host only, no OpenCL): the
 *        enum that specs, layer descriptions, the graph builder and the device
 *        op launchers (nn/activation.h) share, and their names.
 *
 * relu(x) = max(0, x), relu6(x) = min(max(0, x), 6), h_swish(x) = x * relu6(x + 3) / 6,
 * h_sigmoid(x) = relu6(x + 3) / 6, sigmoid(x) = 1 / (1 + e^-x), leaky_relu(x) = x for
 * x > 0, slope * x otherwise (OFA / MobileNetV3 definitions; the stereo networks' leaky
 * ReLU, slope NN_ACT_LEAKY_SLOPE unless a caller gives one).
 */
#ifndef MANTA_SPACE_ACT_H
#define MANTA_SPACE_ACT_H

typedef enum nn_act {
    NN_ACT_NONE = 0,
    NN_ACT_RELU = 1,
    NN_ACT_RELU6 = 2,
    NN_ACT_HSWISH = 3,
    NN_ACT_HSIGMOID = 4,
    NN_ACT_SIGMOID = 5,
    NN_ACT_LEAKY_RELU = 6 /**< negative slope: NN_ACT_LEAKY_SLOPE, or the caller's */
} nn_act;

/** The negative slope of NN_ACT_LEAKY_RELU unless a caller gives one: DispNetC's
 *  and FlowNetC's 0.1. */
#define NN_ACT_LEAKY_SLOPE 0.1f

/** Name of an activation ("relu", "h-swish", "leaky-relu", ...; "?" for a value
 *  outside the enum). */
const char *space_act_name(nn_act a);

#endif
