/* Plain-C double-precision reference for the fully connected layer. */
#ifndef MANTA_TESTS_REF_LINEAR_H
#define MANTA_TESTS_REF_LINEAR_H

/**
 * y = x W^T + b. x (N, in), w (out, ld) of which the first `in` columns are
 * used, b (out) or NULL, y (N, out).
 */
void ref_linear_forward(int n, int in, int out, int ld, const double *x, const double *w,
                        const double *b, double *y);

#endif
