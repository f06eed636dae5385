#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

mcl_dev *tu_open_device(void)
{
    static const char *const none = NULL;
    mcl_device_list *list = malloc(sizeof *list);
    assert_non_null(list);
    manta_err err;
    manta_err_clear(&err);
    manta_status st = mcl_enumerate(list, &err);
    if (st != MANTA_OK)
        fail_msg("enumerate: %s", err.msg);
    size_t idx = 0;
    st = mcl_select(list, none, &idx, &err);
    if (st != MANTA_OK)
        fail_msg("select: %s", err.msg);
    mcl_dev *d = NULL;
    st = mcl_open(&list->dev[idx], NULL, &d, &err);
    free(list);
    if (st != MANTA_OK)
        fail_msg("open: %s", err.msg);
    return d;
}

int tu_setup_device(void **state)
{
    *state = tu_open_device();
    return *state ? 0 : -1;
}

int tu_teardown_device(void **state)
{
    mcl_close(*state);
    return 0;
}

mview tu_alloc(mcl_dev *d, size_t n)
{
    mview v = {NULL, 0};
    TU_OK(d, mcl_alloc(d, (n ? n : 1) * sizeof(float), "test tensor", &v.mem));
    return v;
}

void tu_free(mcl_dev *d, mview v) { mcl_free(d, v.mem); }

void tu_upload(mcl_dev *d, mview dst, const double *src, size_t n)
{
    float *tmp = malloc((n ? n : 1) * sizeof *tmp);
    assert_non_null(tmp);
    for (size_t i = 0; i < n; i++)
        tmp[i] = (float)src[i];
    TU_OK(d, mcl_write(d, dst, tmp, n));
    free(tmp);
}

void tu_download(mcl_dev *d, mview src, double *dst, size_t n)
{
    float *tmp = malloc((n ? n : 1) * sizeof *tmp);
    assert_non_null(tmp);
    TU_OK(d, mcl_read(d, src, tmp, n));
    for (size_t i = 0; i < n; i++)
        dst[i] = tmp[i];
    free(tmp);
}

mview tu_alloc_from(mcl_dev *d, const double *src, size_t n)
{
    mview v = tu_alloc(d, n);
    tu_upload(d, v, src, n);
    return v;
}

void tu_fill_uniform(manta_rng *r, double *x, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (double)manta_rng_uniform(r);
}

void tu_avoid_kinks(double *x, size_t n, const double *kinks, size_t n_kinks, double margin)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < n_kinks; k++)
            if (fabs(x[i] - kinks[k]) < margin)
                x[i] = kinks[k] + (x[i] >= kinks[k] ? margin : -margin);
}

int tu_rand_int(manta_rng *r, int lo, int hi)
{
    return lo + (int)manta_rng_below(r, (uint32_t)(hi - lo + 1));
}

double tu_assert_close(const double *got, const double *want, size_t n, double rtol,
                       const char *what)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += want[i] * want[i];
    double rms = n ? sqrt(ss / (double)n) : 0.0;
    double worst = 0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double allow = rtol * (fabs(want[i]) + rms) + 1e-30;
        double ratio = fabs(got[i] - want[i]) / allow;
        if (!(ratio <= worst)) { /* also catches NaN */
            worst = ratio;
            wi = i;
        }
    }
    if (!(worst < 1.0))
        fail_msg("%s: element %zu of %zu: got %.9g want %.9g (rtol %g, rms %g)", what, wi, n,
                 got[wi], want[wi], rtol, rms);
    return worst;
}

void tu_fd_grad(tu_loss_fn loss, void *ctx, double *param, size_t n, double eps, double *grad)
{
    for (size_t i = 0; i < n; i++) {
        double keep = param[i];
        param[i] = keep + eps;
        double lp = loss(ctx);
        param[i] = keep - eps;
        double lm = loss(ctx);
        param[i] = keep;
        grad[i] = (lp - lm) / (2 * eps);
    }
}

double tu_dot(const double *y, const double *r, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += y[i] * r[i];
    return s;
}
