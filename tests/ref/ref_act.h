/* Plain-C double-precision references for the element-wise activations. */
#ifndef MANTA_TESTS_REF_ACT_H
#define MANTA_TESTS_REF_ACT_H

#include <stddef.h>

/** kind: the nn_act values (0 none, 1 relu, 2 relu6, 3 h-swish, 4 h-sigmoid, 5 sigmoid,
 *  6 leaky ReLU with negative slope 0.1). */
double ref_act(int kind, double x);
void ref_act_forward(int kind, const double *x, double *y, size_t n);

/** The same with the leaky ReLU's negative slope @p slope (ignored by the others). */
double ref_act_slope(int kind, double slope, double x);
void ref_act_forward_slope(int kind, double slope, const double *x, double *y, size_t n);

#endif
