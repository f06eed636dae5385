/* Plain-C double-precision references for the softmax cross-entropy losses. */
#ifndef MANTA_TESTS_REF_LOSS_H
#define MANTA_TESTS_REF_LOSS_H

/**
 * Per-row loss -sum_k t_k log softmax(z)_k with t = (1 - smoothing) *
 * onehot(label) + smoothing / K. logits (N, K); labels, losses (N).
 */
void ref_xent(int n, int k, double smoothing, const double *logits, const double *labels,
              double *losses);
/** Per-row loss with t = softmax(teacher). logits, teacher (N, K); losses (N). */
void ref_soft_xent(int n, int k, const double *logits, const double *teacher, double *losses);

#endif
