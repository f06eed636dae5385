/**
 * @file testutil_host.h
 * @brief The host half of the unit tests' helpers (no OpenCL: the engine tests,
 *        also cross-built for boards, include only this): host arrays, random
 *        fills, tolerant comparison, central finite differences in double
 *        precision, and temporary folders. testutil.h adds the test device.
 */
#ifndef MANTA_TESTS_TESTUTIL_HOST_H
#define MANTA_TESTS_TESTUTIL_HOST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "core/rng.h"
#include "core/status.h"

/** A host array of @p n doubles (at least one; freed with free()); fails the test when
 *  it cannot be allocated. */
double *tu_doubles(size_t n);

/** Fill with uniform values in [lo, hi). */
void tu_fill_uniform(manta_rng *r, double *x, size_t n, double lo, double hi);
/** Move values that sit within @p margin of a kink (listed in @p kinks) away
 *  from it, so finite differences do not straddle a non-differentiable point. */
void tu_avoid_kinks(double *x, size_t n, const double *kinks, size_t n_kinks, double margin);
/** Random shape size in [lo, hi]. */
int tu_rand_int(manta_rng *r, int lo, int hi);

/**
 * Assert |got - want| <= rtol * (|want| + rms(want)) element-wise; on failure
 * print the worst element and fail the current test. Returns the worst ratio
 * of error to allowance (< 1 passes).
 */
double tu_assert_close(const double *got, const double *want, size_t n, double rtol,
                       const char *what);

/** The loss a finite-difference check differentiates: recomputes the
 *  reference forward from its current inputs and returns a scalar. */
typedef double (*tu_loss_fn)(void *ctx);

/**
 * Central differences of @p loss with respect to each of the @p n values of
 * @p param (perturbed in place by +-eps, then restored): grad[i].
 */
void tu_fd_grad(tu_loss_fn loss, void *ctx, double *param, size_t n, double eps, double *grad);

/**
 * The directional derivative d/dt loss(param + t * dir) at t = 0, by central differences
 * in t with step @p eps, for shapes too large for a difference per value: @p param (n
 * values, read by @p loss) is set to @p base + t * dir for each evaluation, and left equal
 * to @p base on return. Compare with tu_dot(gradient, dir, n).
 */
double tu_fd_along(tu_loss_fn loss, void *ctx, double *param, const double *base, const double *dir,
                   size_t n, double eps);

/** Weights stored with a row stride (elastic layers' w_ld): @p rows rows of @p kk used
 *  values, row r at w + r * ld. tu_fill_weight() draws the used values uniformly in
 *  [-1, 1] and sets the unused ones to NaN (garbage an op must not read);
 *  tu_used_columns() copies the used part to @p out ((rows, kk)); tu_assert_unused_nan()
 *  fails the test when an unused value is not NaN any more (an op wrote it). */
void tu_fill_weight(manta_rng *rng, double *w, size_t rows, size_t kk, size_t ld);
void tu_used_columns(const double *w, size_t rows, size_t kk, size_t ld, double *out);
void tu_assert_unused_nan(const double *w, size_t rows, size_t kk, size_t ld);

/** sum_i y[i] * r[i]: projects an output onto fixed random weights. */
double tu_dot(const double *y, const double *r, size_t n);

/** A temporary folder, /tmp/manta-<tag>-XXXXXX: a test group's (made in its
 *  setup, removed in its teardown) or one test's. */
typedef struct tu_tmpdir {
    char path[64]; /**< the folder, without a trailing slash */
} tu_tmpdir;

/** Create a fresh temporary folder named after @p tag (a short word).
 *  @return 0, or -1 when it cannot be created (a cmocka setup's value). */
int tu_tmpdir_make(tu_tmpdir *t, const char *tag);
/** Remove the folder and everything in it (manta_file_remove_tree()).
 *  @return 0 (a cmocka teardown's value). */
int tu_tmpdir_remove(tu_tmpdir *t);
/** "<folder>/<name>" in @p out of @p cap bytes; fails the test when it does
 *  not fit. @return out. */
char *tu_tmpdir_path(const tu_tmpdir *t, const char *name, char *out, size_t cap);

/** Fail the test with the message of the manta_err named e in scope when @p expr is not
 *  MANTA_OK (for calls that report into a caller's error record). */
#define TU_OK_ERR(expr)                                       \
    do {                                                      \
        manta_status st_ = (expr);                            \
        if (st_ != MANTA_OK)                                  \
            fail_msg("%s:%d: %s", __FILE__, __LINE__, e.msg); \
    } while (0)

#endif
