#include "testutil_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

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

/* tu_fd_along(): the loss at param = base + t * dir. */
typedef struct fd_along_ctx {
    tu_loss_fn loss;
    void *ctx;
    double *param;
    const double *base, *dir;
    size_t n;
    double t;
} fd_along_ctx;

static double fd_along_loss(void *p)
{
    fd_along_ctx *a = p;
    for (size_t i = 0; i < a->n; i++)
        a->param[i] = a->base[i] + a->t * a->dir[i];
    return a->loss(a->ctx);
}

double tu_fd_along(tu_loss_fn loss, void *ctx, double *param, const double *base, const double *dir,
                   size_t n, double eps)
{
    fd_along_ctx a = {loss, ctx, param, base, dir, n, 0};
    double g;
    tu_fd_grad(fd_along_loss, &a, &a.t, 1, eps, &g);
    memcpy(param, base, n * sizeof *param);
    return g;
}

double *tu_doubles(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

double tu_dot(const double *y, const double *r, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += y[i] * r[i];
    return s;
}

int tu_tmpdir_make(tu_tmpdir *t, const char *tag)
{
    const int n = snprintf(t->path, sizeof t->path, "/tmp/manta-%s-XXXXXX", tag);
    if (n < 0 || (size_t)n >= sizeof t->path || !mkdtemp(t->path)) {
        t->path[0] = '\0';
        return -1;
    }
    return 0;
}

int tu_tmpdir_remove(tu_tmpdir *t)
{
    if (t->path[0])
        manta_file_remove_tree(t->path);
    t->path[0] = '\0';
    return 0;
}

char *tu_tmpdir_path(const tu_tmpdir *t, const char *name, char *out, size_t cap)
{
    const int n = snprintf(out, cap, "%s/%s", t->path, name);
    if (n < 0 || (size_t)n >= cap)
        fail_msg("path %s/%s does not fit in %zu bytes", t->path, name, cap);
    return out;
}

void tu_fill_weight(manta_rng *rng, double *w, size_t rows, size_t kk, size_t ld)
{
    for (size_t r = 0; r < rows; r++) {
        tu_fill_uniform(rng, w + r * ld, kk, -1, 1);
        for (size_t j = kk; j < ld; j++)
            w[r * ld + j] = NAN;
    }
}

void tu_used_columns(const double *w, size_t rows, size_t kk, size_t ld, double *out)
{
    for (size_t r = 0; r < rows; r++)
        memcpy(out + r * kk, w + r * ld, kk * sizeof *out);
}

void tu_assert_unused_nan(const double *w, size_t rows, size_t kk, size_t ld)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = kk; j < ld; j++)
            if (!isnan(w[r * ld + j]))
                fail_msg("weight column %zu of row %zu (beyond the %zu used) written", j, r, kk);
}
