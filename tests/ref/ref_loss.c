#include "ref_loss.h"

#include <math.h>
#include <stddef.h>

/* log sum_k exp(z_k) of one row of k values, with the maximum taken out. */
static double logsumexp(int k, const double *z)
{
    double m = z[0], s = 0;
    for (int i = 1; i < k; i++)
        m = z[i] > m ? z[i] : m;
    for (int i = 0; i < k; i++)
        s += exp(z[i] - m);
    return m + log(s);
}

void ref_xent(int n, int k, double smoothing, const double *logits, const double *labels,
              double *losses)
{
    for (int r = 0; r < n; r++) {
        const double *z = logits + (size_t)r * k;
        double lse = logsumexp(k, z), l = 0;
        for (int i = 0; i < k; i++) {
            double t = smoothing / k + (i == (int)labels[r] ? 1 - smoothing : 0);
            l += t * (lse - z[i]);
        }
        losses[r] = l;
    }
}

void ref_soft_xent(int n, int k, const double *logits, const double *teacher, double *losses)
{
    for (int r = 0; r < n; r++) {
        const double *z = logits + (size_t)r * k, *zt = teacher + (size_t)r * k;
        double lse = logsumexp(k, z), lt = logsumexp(k, zt), l = 0;
        for (int i = 0; i < k; i++)
            l += exp(zt[i] - lt) * (lse - z[i]);
        losses[r] = l;
    }
}
