/* Plain-C double-precision references for dense and depthwise convolution.
 * Same layouts and shape structs as runtime/nn/conv.h and depthwise.h; the
 * output sizes are recomputed here, independently of the library. */
#ifndef MANTA_TESTS_REF_CONV_H
#define MANTA_TESTS_REF_CONV_H

#include "nn/conv.h"
#include "nn/depthwise.h"

/** Output size of a convolution along one axis (in + 2*pad - k) / stride + 1. */
int ref_conv_out(int in, int k, int stride, int pad);

/** y = conv(x, w). x: (N, Cin, H, W); w: Cout rows of Cin*KH*KW, row stride
 *  s->w_ld (0: Cin*KH*KW); y: (N, Cout, Ho, Wo). */
void ref_conv2d_forward(const nn_conv2d_shape *s, const double *x, const double *w, double *y);

/** y = depthwise_conv(x, w). x: (N, C, H, W); w: (C, K, K); y: (N, C, Ho, Wo). */
void ref_dw_forward(const nn_dw_shape *s, const double *x, const double *w, double *y);

/** dw = d/dw of sum(dy * depthwise_conv(x, w)) (overwritten), the weight gradient: the
 *  loss is linear in w, so this closed form is exact. dy: (N, C, Ho, Wo); dw: (C, K, K). */
void ref_dw_backward_w(const nn_dw_shape *s, const double *x, const double *dy, double *dw);

#endif
