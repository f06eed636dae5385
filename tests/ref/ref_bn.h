/* Plain-C double-precision reference for batch normalisation (PyTorch
 * semantics). Tensors are (N, C, HW); per-channel vectors are (C). */
#ifndef MANTA_TESTS_REF_BN_H
#define MANTA_TESTS_REF_BN_H

/** Per-channel mean and biased variance. x (N, C, HW); mean, var (C). */
void ref_bn_stats(int n, int c, int hw, const double *x, double *mean, double *var);

/**
 * Training forward with the batch statistics. x, y (N, C, HW); gamma, beta,
 * save_mean, save_invstd (C). running_mean and running_var (C) move by
 * momentum towards the mean and the unbiased variance; when running_mean is
 * NULL they are left alone (and save_* may be NULL too).
 */
void ref_bn_forward_train(int n, int c, int hw, double momentum, double eps, const double *x,
                          const double *gamma, const double *beta, double *running_mean,
                          double *running_var, double *y, double *save_mean, double *save_invstd);

/** Eval forward. x, y (N, C, HW); gamma, beta, running_mean, running_var (C). */
void ref_bn_forward_eval(int n, int c, int hw, double eps, const double *x, const double *gamma,
                         const double *beta, const double *running_mean, const double *running_var,
                         double *y);

/**
 * Backward of the training forward, in closed form (checked against finite
 * differences by the small cases of test_batchnorm): dx (N, C, HW); dgamma,
 * dbeta (C) overwritten with sum dy * xhat and sum dy.
 */
void ref_bn_backward(int n, int c, int hw, double eps, const double *x, const double *gamma,
                     const double *dy, double *dx, double *dgamma, double *dbeta);

#endif
