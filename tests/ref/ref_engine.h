/* Plain-C double-precision references for the inference engine's operators:
 * straightforward loops, written from the TFLite definitions, independent of
 * the kernels. Layouts NHWC; conv weights OHWI; depthwise [1, KH, KW, C*M];
 * transpose conv weights [Cout, KH, KW, Cin]. act: 0 none, 1 relu,
 * 2 relu_n1_to_1, 3 relu6. padding: 0 SAME, 1 VALID. */
#ifndef MANTA_TESTS_REF_ENGINE_H
#define MANTA_TESTS_REF_ENGINE_H

#include <stddef.h>

/** TFLite output size of a window (SAME: ceil(in/s); VALID: ceil((in-k+1)/s)). */
int re_out_size(int in, int k, int s, int padding);
/** Padding before: half of max(0, (out-1)*s + k - in), the odd one after. */
int re_pad_before(int in, int k, int s, int padding);
/** Fused activation of one value. */
double re_act(int act, double x);

/** out (n, oh, ow, co) */
void re_conv2d(const double *in, int n, int h, int w, int ci, const double *wt, int co, int kh,
               int kw, const double *bias, int sh, int sw, int padding, int act, double *out);
/** out (n, oh, ow, ci*m) */
void re_depthwise(const double *in, int n, int h, int w, int ci, const double *wt, int m, int kh,
                  int kw, const double *bias, int sh, int sw, int padding, int act, double *out);
/** out (n, oh, ow, co); input (n, h, w, ci) with h, w = re_out_size(oh / ow, ...). */
void re_transpose_conv(const double *in, int n, int h, int w, int ci, const double *wt, int co,
                       int kh, int kw, const double *bias, int sh, int sw, int padding, int oh,
                       int ow, int act, double *out);
/** Average over the in-bounds part of each window. */
void re_avg_pool(const double *in, int n, int h, int w, int c, int fh, int fw, int sh, int sw,
                 int padding, int act, double *out);
/** out (n, c) */
void re_mean_hw(const double *in, int n, int h, int w, int c, double *out);
/** out (batches, units); bias may be NULL. */
void re_fully_connected(const double *in, int batches, int depth, const double *wt, int units,
                        const double *bias, int act, double *out);
void re_softmax(const double *in, int rows, int cols, double beta, double *out);
/** op 0 add, 1 mul; dims are 4-D (n, h, w, c), each input dim equal to the output's or 1. */
void re_binary(int op, const double *a, const int *ad, const double *b, const int *bd,
               const int *od, int act, double *out);
/** kind: 0 relu, 1 relu6, 2 hard swish, 3 logistic, 4 leaky relu (alpha). */
double re_unary(int kind, double x, double alpha);
/** Concatenate n inputs of rank r along axis. */
void re_concat(int n_in, const double *const *in, const int *const *dims, int rank, int axis,
               double *out);
/** Zero padding (PAD): @p paddings (rank, 2) before/after per dim; out has the padded dims. */
void re_pad(const double *in, int rank, const int *dims, const int *paddings, double *out);

#endif
