/**
 * @file activation.h
 * @brief Element-wise activations on the device: ReLU, ReLU6, h-swish,
 *        h-sigmoid, sigmoid (OFA / MobileNetV3 definitions).
 *
 * h_swish(x) = x * relu6(x + 3) / 6, h_sigmoid(x) = relu6(x + 3) / 6.
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
    NN_ACT_SIGMOID = 5
} nn_act;

/** Name of an activation ("relu", "h-swish", ...). */
const char *nn_act_name(nn_act a);

/** y = f(x). @p y may be the same view as @p x. x, y: (n) */
manta_status nn_act_forward(mcl_dev *d, nn_act a, mview x, mview y, size_t n);

/**
 * dx = dy * f'(x), where x is the forward *input*. Overwrites dx; @p dx may
 * be the same view as @p dy. x, dy, dx: (n)
 */
manta_status nn_act_backward(mcl_dev *d, nn_act a, mview x, mview dy, mview dx, size_t n);

#endif
