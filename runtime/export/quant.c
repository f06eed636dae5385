/* int8 calibration (see quant.h): per-tensor ranges from the float reference. */
#include "export/quant.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define N_BINS 4096

static size_t tensor_count(const xg_tensor *t)
{
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (size_t)t->shape[i];
    return n;
}

manta_status xgraph_calibrate(xgraph *g, const float *images, int n, xg_calib method, double pct,
                              manta_err *err)
{
    if (!g || !images || n < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "calibration: no images");
    if (method == XG_CALIB_PERCENTILE && !(pct > 50.0 && pct <= 100.0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "calibration: percentile %g (50 < p <= 100)", pct);
    MANTA_TRY(xgraph_validate(g, err));
    if (g->n_inputs > 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "calibration: classification graphs only (one input)");
    const int nt = g->n_tensors;
    const size_t in_count = tensor_count(&g->tensors[g->input]);
    int *want = malloc((size_t)nt * sizeof *want);
    float **vals = calloc((size_t)nt, sizeof *vals);
    float *lo = malloc((size_t)nt * sizeof *lo), *hi = malloc((size_t)nt * sizeof *hi);
    uint32_t *hist =
        method == XG_CALIB_PERCENTILE ? calloc((size_t)nt * N_BINS, sizeof *hist) : NULL;
    manta_status st = want && vals && lo && hi && (hist || method != XG_CALIB_PERCENTILE)
                          ? MANTA_OK
                          : manta_err_set(err, MANTA_ERR_NO_MEMORY, "calibration: out of memory");
    for (int t = 0; st == MANTA_OK && t < nt; t++) {
        want[t] = t;
        lo[t] = INFINITY;
        hi[t] = -INFINITY;
        if (!(vals[t] = malloc(tensor_count(&g->tensors[t]) * sizeof **vals)))
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "calibration: out of memory");
    }
    const int passes = method == XG_CALIB_PERCENTILE ? 2 : 1;
    for (int pass = 0; pass < passes && st == MANTA_OK; pass++)
        for (int i = 0; i < n && st == MANTA_OK; i++) {
            const float *x = images + (size_t)i * in_count;
            st = xgraph_reference_tensors(g, &x, nt, want, vals, err);
            for (int t = 0; st == MANTA_OK && t < nt; t++) {
                const size_t c = tensor_count(&g->tensors[t]);
                const float *v = vals[t];
                if (pass == 0) {
                    for (size_t k = 0; k < c; k++) {
                        lo[t] = v[k] < lo[t] ? v[k] : lo[t];
                        hi[t] = v[k] > hi[t] ? v[k] : hi[t];
                    }
                    continue;
                }
                const double w = hi[t] > lo[t] ? (double)(hi[t] - lo[t]) : 1.0;
                uint32_t *h = hist + (size_t)t * N_BINS;
                for (size_t k = 0; k < c; k++) {
                    long b = (long)((v[k] - lo[t]) / w * N_BINS);
                    h[b < 0 ? 0 : b >= N_BINS ? N_BINS - 1 : b]++;
                }
            }
        }
    if (st == MANTA_OK && method == XG_CALIB_PERCENTILE)
        for (int t = 0; t < nt; t++) { /* clip both tails at the percentile */
            const uint32_t *h = hist + (size_t)t * N_BINS;
            const double total = (double)tensor_count(&g->tensors[t]) * n;
            const double tail = total * (100.0 - pct) / 100.0, w = (double)(hi[t] - lo[t]);
            double acc = 0;
            int a = 0, b = N_BINS - 1;
            while (a < N_BINS - 1 && acc + h[a] <= tail)
                acc += h[a++];
            acc = 0;
            while (b > a && acc + h[b] <= tail)
                acc += h[b--];
            const float nlo = (float)(lo[t] + w * a / N_BINS);
            const float nhi = (float)(lo[t] + w * (b + 1) / N_BINS);
            lo[t] = nlo;
            hi[t] = nhi > nlo ? nhi : nlo;
        }
    if (st == MANTA_OK) {
        free(g->qmin);
        free(g->qmax);
        g->qmin = lo;
        g->qmax = hi;
        lo = hi = NULL;
    }
    for (int t = 0; vals && t < nt; t++)
        free(vals[t]);
    free(vals);
    free(want);
    free(lo);
    free(hi);
    free(hist);
    return st;
}
