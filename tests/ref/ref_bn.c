#include "ref_bn.h"

#include <math.h>
#include <stddef.h>

/* Mean and biased variance of channel ch, in two passes. x (N, C, HW). */
static void channel_stats(int n, int c, int hw, int ch, const double *x, double *mean, double *var)
{
    double m = (double)n * hw, s = 0, q = 0;
    for (int b = 0; b < n; b++)
        for (int i = 0; i < hw; i++)
            s += x[((size_t)b * c + ch) * hw + i];
    double mu = s / m;
    for (int b = 0; b < n; b++)
        for (int i = 0; i < hw; i++) {
            double t = x[((size_t)b * c + ch) * hw + i] - mu;
            q += t * t;
        }
    *mean = mu;
    *var = q / m;
}

void ref_bn_stats(int n, int c, int hw, const double *x, double *mean, double *var)
{
    for (int ch = 0; ch < c; ch++)
        channel_stats(n, c, hw, ch, x, &mean[ch], &var[ch]);
}

void ref_bn_forward_train(int n, int c, int hw, double momentum, double eps, const double *x,
                          const double *gamma, const double *beta, double *running_mean,
                          double *running_var, double *y, double *save_mean, double *save_invstd)
{
    double m = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double mu, var;
        channel_stats(n, c, hw, ch, x, &mu, &var);
        double invstd = 1 / sqrt(var + eps);
        for (int b = 0; b < n; b++)
            for (int i = 0; i < hw; i++) {
                size_t j = ((size_t)b * c + ch) * hw + i;
                y[j] = (x[j] - mu) * invstd * gamma[ch] + beta[ch];
            }
        if (running_mean) {
            running_mean[ch] = (1 - momentum) * running_mean[ch] + momentum * mu;
            running_var[ch] = (1 - momentum) * running_var[ch] + momentum * var * m / (m - 1);
            save_mean[ch] = mu;
            save_invstd[ch] = invstd;
        }
    }
}

void ref_bn_forward_eval(int n, int c, int hw, double eps, const double *x, const double *gamma,
                         const double *beta, const double *running_mean, const double *running_var,
                         double *y)
{
    for (int b = 0; b < n; b++)
        for (int ch = 0; ch < c; ch++) {
            double g = gamma[ch] / sqrt(running_var[ch] + eps);
            for (int i = 0; i < hw; i++) {
                size_t j = ((size_t)b * c + ch) * hw + i;
                y[j] = (x[j] - running_mean[ch]) * g + beta[ch];
            }
        }
}

void ref_bn_backward(int n, int c, int hw, double eps, const double *x, const double *gamma,
                     const double *dy, double *dx, double *dgamma, double *dbeta)
{
    double m = (double)n * hw;
    for (int ch = 0; ch < c; ch++) {
        double mu, var, s_dy = 0, s_dyxh = 0;
        channel_stats(n, c, hw, ch, x, &mu, &var);
        double invstd = 1 / sqrt(var + eps);
        for (int b = 0; b < n; b++)
            for (int i = 0; i < hw; i++) {
                size_t j = ((size_t)b * c + ch) * hw + i;
                s_dy += dy[j];
                s_dyxh += dy[j] * (x[j] - mu) * invstd;
            }
        for (int b = 0; b < n; b++)
            for (int i = 0; i < hw; i++) {
                size_t j = ((size_t)b * c + ch) * hw + i;
                double xh = (x[j] - mu) * invstd;
                dx[j] = gamma[ch] * invstd * (dy[j] - s_dy / m - xh * s_dyxh / m);
            }
        dgamma[ch] = s_dyxh;
        dbeta[ch] = s_dy;
    }
}
