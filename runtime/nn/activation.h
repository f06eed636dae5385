/**
 * @file activation.h
 * @brief Element-wise activations on the device: ReLU, ReLU6, h-swish,
 *        h-sigmoid, sigmoid (OFA / MobileNetV3 definitions) and leaky ReLU (the
 *        stereo networks').
 *
 * h_swish(x) = x * relu6(x + 3) / 6, h_sigmoid(x) = relu6(x + 3) / 6,
 * leaky_relu(x) = x for x > 0, slope * x otherwise (gradient 1 for x > 0, slope
 * otherwise, x = 0 included, as PyTorch's).
 * Tensors are flat float32 views of @p n elements (any layout). The enum nn_act,
 * NN_ACT_LEAKY_SLOPE and space_act_name() are the search space's (space/act.h).
 */
#ifndef MANTA_NN_ACTIVATION_H
#define MANTA_NN_ACTIVATION_H

#include "cl/cl.h"
#include "space/act.h"

/**
 * Whether nn_act_backward() gives the same gradient from the forward output y = f(x) as
 * from its input x, bit for bit: ReLU, ReLU6 and the leaky ReLU of NN_ACT_LEAKY_SLOPE, whose
 * derivative depends only on the sign (and, for ReLU6, the bounds) that y shares with x.
 */
bool nn_act_grad_from_output(nn_act a);

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
manta_status nn_act_forward_slope(mcl_dev *d, nn_act a, float slope, mview x, mview y, size_t n);

/** nn_act_backward() with the negative slope of NN_ACT_LEAKY_RELU given (see
 *  nn_act_forward_slope()). */
manta_status nn_act_backward_slope(mcl_dev *d, nn_act a, float slope, mview x, mview dy, mview dx,
                                   size_t n);

#endif
