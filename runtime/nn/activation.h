/**
 * @file activation.h
 * @brief Element-wise activations on the device: ReLU, ReLU6, h-swish,
 *        h-sigmoid, sigmoid (OFA / MobileNetV3 definitions) and leaky ReLU (the
 *        stereo networks').
 *
 * h_swish(x) = x * relu6(x + 3) / 6, h_sigmoid(x) = relu6(x + 3) / 6,
 * leaky_relu(x) = x for x > 0, slope * x otherwise (gradient 1 for x > 0, slope
 * otherwise, x = 0 included, as PyTorch's).
 * Tensors are flat float32 views of @p n elements (any layout).
 */
#ifndef MANTA_NN_ACTIVATION_H
#define MANTA_NN_ACTIVATION_H

#include "cl/cl.h"

typedef enum nn_act {
    NN_ACT_NONE = 0,
    NN_ACT_RELU = 1,
    NN_ACT_RELU6 = 2,
    NN_ACT_HSWISH = 3,
    NN_ACT_HSIGMOID = 4,
    NN_ACT_SIGMOID = 5,
    NN_ACT_LEAKY_RELU = 6 /**< negative slope: NN_ACT_LEAKY_SLOPE, or the _slope calls' */
} nn_act;

/** The negative slope of NN_ACT_LEAKY_RELU in nn_act_forward() and
 *  nn_act_backward(): DispNetC's and FlowNetC's 0.1. */
#define NN_ACT_LEAKY_SLOPE 0.1f

/** Name of an activation ("relu", "h-swish", "leaky-relu", ...). */
const char *nn_act_name(nn_act a);

/** y = f(x). @p y may be the same view as @p x. x, y: (n) */
manta_status nn_act_forward(mcl_dev *d, nn_act a, mview x, mview y, size_t n);

/**
 * dx = dy * f'(x), where x is the forward *input*. Overwrites dx; @p dx may
 * be the same view as @p dy. x, dy, dx: (n)
 */
manta_status nn_act_backward(mcl_dev *d, nn_act a, mview x, mview dy, mview dx, size_t n);

/**
 * nn_act_forward() with the negative slope of NN_ACT_LEAKY_RELU given (any
 * finite value; the other activations ignore it).
 * @return MANTA_ERR_INVALID_ARG naming the slope when it is not finite.
 */
manta_status nn_act_forward_slope(mcl_dev *d, nn_act a, float slope, mview x, mview y,
                                  size_t n);

/** nn_act_backward() with the negative slope of NN_ACT_LEAKY_RELU given (see
 *  nn_act_forward_slope()). */
manta_status nn_act_backward_slope(mcl_dev *d, nn_act a, float slope, mview x, mview dy,
                                   mview dx, size_t n);

#endif
