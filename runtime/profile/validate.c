#include "profile/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"

double lat_median(const double *v, size_t n)
{
    if (n == 0)
        return 0;
    double *c = malloc(n * sizeof *c);
    if (!c) { /* out of memory: a slow selection in place of a sort */
        double best = v[0];
        for (size_t i = 0; i < n; i++) {
            size_t below = 0, equal = 0;
            for (size_t j = 0; j < n; j++)
                below += v[j] < v[i], equal += v[j] == v[i];
            if (below <= (n - 1) / 2 && below + equal > (n - 1) / 2)
                best = v[i];
        }
        return best;
    }
    memcpy(c, v, n * sizeof *c);
    const double m = manta_sort_median(c, n);
    free(c);
    return m;
}

static int sign(double x) { return (x > 0) - (x < 0); }

manta_status lat_agreement_compute(const double *pred, const double *meas, size_t n, double tol,
                                   lat_agreement *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (n < 2)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "latency agreement: %zu values (at least 2 needed)", n);
    if (!(tol >= 0) || !isfinite(tol))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "latency agreement: tolerance %g", tol);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(pred[i]))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "latency agreement: prediction %zu is not finite", i);
        if (!isfinite(meas[i]) || !(meas[i] > 0))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "latency agreement: measurement %zu is %g (must be positive)", i,
                                 meas[i]);
    }
    double sum_abs = 0, sum_signed = 0, sum_sq = 0;
    size_t within = 0;
    for (size_t i = 0; i < n; i++) {
        double d = pred[i] - meas[i], rel = d / meas[i];
        sum_abs += fabs(rel);
        sum_signed += rel;
        sum_sq += d * d;
        within += fabs(rel) <= tol;
        out->max_abs_pct = fmax(out->max_abs_pct, 100 * fabs(rel));
        out->max_abs = fmax(out->max_abs, fabs(d));
    }
    /* tau-b = (C - D) / sqrt((P - Tx) (P - Ty)): P pairs, Tx / Ty pairs tied in one ranking */
    double conc = 0, disc = 0, tie_p = 0, tie_m = 0, pairs = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            int a = sign(pred[i] - pred[j]), b = sign(meas[i] - meas[j]);
            pairs += 1;
            tie_p += a == 0;
            tie_m += b == 0;
            if (a && b)
                *(a == b ? &conc : &disc) += 1;
        }
    double den = sqrt((pairs - tie_p) * (pairs - tie_m));
    out->n = n;
    out->tol = tol;
    out->mean_abs_pct = 100 * sum_abs / (double)n;
    out->mean_pct = 100 * sum_signed / (double)n;
    out->within = (double)within / (double)n;
    out->rmse = sqrt(sum_sq / (double)n);
    out->kendall_tau = den > 0 ? (conc - disc) / den : 0;
    return MANTA_OK;
}
