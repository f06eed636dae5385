/* Plain-C double-precision reference for the transposed convolution. Same layouts and
 * shape struct as runtime/nn/deconv.h; the output size is recomputed here, independently
 * of the library, and the output is scattered from the inputs (the definition), not
 * gathered as the device kernels do. */
#ifndef MANTA_TESTS_REF_DECONV_H
#define MANTA_TESTS_REF_DECONV_H

#include "nn/deconv.h"

/** Output size of a transposed convolution along one axis: (in - 1) * stride - 2*pad + k. */
int ref_deconv_out(int in, int k, int stride, int pad);

/** y = deconv(x, w) + b. x: (N, Cin, H, W); w: Cin rows of Cout*KH*KW, row stride
 *  s->w_ld (0: Cout*KH*KW); b: (Cout) or NULL; y: (N, Cout, Ho, Wo), overwritten. */
void ref_deconv2d_forward(const nn_deconv2d_shape *s, const double *x, const double *w,
                          const double *b, double *y);

#endif
