/* Global average pooling, channel scaling, add and axpy: forward against the
 * double reference, backward against central finite differences, aliasing,
 * bad sizes. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/pool.h"
#include "ref/ref_pool.h"

static const int HWS[] = {1, 7, 49, 121};
/* Then fixed shapes for the two row reductions: many rows (a work-item per
 * row) and a few long rows (a work-group per row). */
static const size_t FIXED_NC[] = {70, 2}, FIXED_HW[] = {49, 1000};

static double *zeros(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    assert_non_null(v);
    return v;
}

static double *fill(manta_rng *rng, size_t n, double lo, double hi)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    tu_fill_uniform(rng, v, n, lo, hi);
    return v;
}

/* What the finite differences differentiate: sum(y * r) of a pooling or a
 * scaling of x (NC, HW) by s (NC). */
typedef struct fd_ctx {
    size_t nc, hw;
    double *x, *s, *r, *y; /* x (NC, HW), s (NC), r and y: the output's shape */
} fd_ctx;

static double pool_loss(void *p)
{
    fd_ctx *c = p;
    ref_avgpool(c->nc, c->hw, c->x, c->y);
    return tu_dot(c->y, c->r, c->nc);
}

static double scale_loss(void *p)
{
    fd_ctx *c = p;
    ref_scale(c->nc, c->hw, c->x, c->s, c->y);
    return tu_dot(c->y, c->r, c->nc * c->hw);
}

static void test_avgpool_forward_and_backward(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 42, 1);
    for (int t = 0; t < 6; t++) {
        size_t nc = t < 4 ? (size_t)tu_rand_int(&rng, 1, 5) * (size_t)tu_rand_int(&rng, 1, 19)
                          : FIXED_NC[t - 4];
        size_t hw = t < 4 ? (size_t)HWS[t] : FIXED_HW[t - 4], len = nc * hw;
        fd_ctx c = {nc, hw, fill(&rng, len, -2, 2), NULL, fill(&rng, nc, -1, 1), zeros(nc)};
        double *got = zeros(len), *fd = zeros(len);
        mview vx = tu_alloc_from(d, c.x, len), vy = tu_alloc(d, nc);
        mview vdy = tu_alloc_from(d, c.r, nc), vdx = tu_alloc(d, len);

        TU_OK(d, nn_avgpool_forward(d, nc, hw, vx, vy));
        ref_avgpool(nc, hw, c.x, c.y);
        tu_download(d, vy, got, nc);
        tu_assert_close(got, c.y, nc, 1e-4, "average pool");

        TU_OK(d, nn_avgpool_backward(d, nc, hw, vdy, vdx));
        tu_fd_grad(pool_loss, &c, c.x, len, 1e-4, fd);
        tu_download(d, vdx, got, len);
        tu_assert_close(got, fd, len, 1e-3, "average pool gradient");

        tu_free(d, vx), tu_free(d, vy), tu_free(d, vdy), tu_free(d, vdx);
        free(c.x), free(c.r), free(c.y), free(got), free(fd);
    }
}

static void test_scale_forward_and_backward(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 42, 2);
    for (int t = 0; t < 6; t++) {
        size_t nc = t < 4 ? (size_t)tu_rand_int(&rng, 1, 5) * (size_t)tu_rand_int(&rng, 1, 19)
                          : FIXED_NC[t - 4];
        size_t hw = t < 4 ? (size_t)HWS[t] : FIXED_HW[t - 4], len = nc * hw;
        fd_ctx c = {
            nc,        hw, fill(&rng, len, -2, 2), fill(&rng, nc, 0, 1), fill(&rng, len, -1, 1),
            zeros(len)};
        double *got = zeros(len), *fd = zeros(len);
        mview vx = tu_alloc_from(d, c.x, len), vs = tu_alloc_from(d, c.s, nc);
        mview vy = tu_alloc(d, len), vdy = tu_alloc_from(d, c.r, len);
        mview vdx = tu_alloc(d, len), vds = tu_alloc(d, nc);

        TU_OK(d, nn_scale_forward(d, nc, hw, vx, vs, vy));
        ref_scale(nc, hw, c.x, c.s, c.y);
        tu_download(d, vy, got, len);
        tu_assert_close(got, c.y, len, 1e-4, "channel scale");

        TU_OK(d, nn_scale_backward(d, nc, hw, vx, vs, vdy, vdx, vds));
        tu_fd_grad(scale_loss, &c, c.x, len, 1e-4, fd);
        tu_download(d, vdx, got, len);
        tu_assert_close(got, fd, len, 1e-3, "channel scale dx");
        tu_fd_grad(scale_loss, &c, c.s, nc, 1e-4, fd);
        tu_download(d, vds, got, nc);
        tu_assert_close(got, fd, nc, 1e-3, "channel scale ds");

        /* in place: y aliases x (c.y again unperturbed) */
        ref_scale(nc, hw, c.x, c.s, c.y);
        TU_OK(d, nn_scale_forward(d, nc, hw, vx, vs, vx));
        tu_download(d, vx, got, len);
        tu_assert_close(got, c.y, len, 1e-4, "in-place channel scale");

        tu_free(d, vx), tu_free(d, vs), tu_free(d, vy), tu_free(d, vdy), tu_free(d, vdx);
        tu_free(d, vds);
        free(c.x), free(c.s), free(c.r), free(c.y), free(got), free(fd);
    }
}

/* ds must be taken from dy before dx overwrites it; without dx only ds is
 * written and dy is left alone. */
static void test_scale_backward_dx_aliases_dy_or_skipped(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 42, 3);
    const size_t nc = 13, hw = 49, len = nc * hw;
    double *x = fill(&rng, len, -2, 2), *s = fill(&rng, nc, 0, 1), *dy = fill(&rng, len, -1, 1);
    double *dx = zeros(len), *ds = zeros(nc), *got = zeros(len);
    for (size_t r = 0; r < nc; r++) {
        ds[r] = 0;
        for (size_t i = 0; i < hw; i++) {
            ds[r] += (double)(float)dy[r * hw + i] * (float)x[r * hw + i];
            dx[r * hw + i] = (double)(float)dy[r * hw + i] * (float)s[r];
        }
    }
    mview vx = tu_alloc_from(d, x, len), vs = tu_alloc_from(d, s, nc);
    mview vdy = tu_alloc_from(d, dy, len), vds = tu_alloc(d, nc);
    mview none = {NULL, 0};

    TU_OK(d, nn_scale_backward(d, nc, hw, vx, vs, vdy, none, vds));
    tu_download(d, vds, got, nc);
    tu_assert_close(got, ds, nc, 1e-4, "ds without dx");
    tu_download(d, vdy, got, len);
    for (size_t i = 0; i < len; i++)
        assert_true(got[i] == (float)dy[i]);

    TU_OK(d, nn_scale_backward(d, nc, hw, vx, vs, vdy, vdy, vds));
    tu_download(d, vds, got, nc);
    tu_assert_close(got, ds, nc, 1e-4, "ds with dx over dy");
    tu_download(d, vdy, got, len);
    tu_assert_close(got, dx, len, 1e-4, "dx over dy");

    tu_free(d, vx), tu_free(d, vs), tu_free(d, vdy), tu_free(d, vds);
    free(x), free(s), free(dy), free(dx), free(ds), free(got);
}

static void test_add_and_axpy_with_aliasing(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 42, 4);
    const size_t sizes[] = {1, 7, 1001, 2999};
    for (int t = 0; t < 4; t++) {
        size_t n = sizes[t];
        double *a = fill(&rng, n, -3, 3), *b = fill(&rng, n, -3, 3), *want = zeros(n);
        double *got = zeros(n);
        double alpha = (double)(float)(-0.5 + (double)manta_rng_uniform(&rng));
        for (size_t i = 0; i < n; i++)
            want[i] = (double)(float)a[i] + (float)b[i];
        mview va = tu_alloc_from(d, a, n), vb = tu_alloc_from(d, b, n), vy = tu_alloc(d, n);

        TU_OK(d, nn_add(d, n, va, vb, vy));
        tu_download(d, vy, got, n);
        tu_assert_close(got, want, n, 1e-6, "add");
        TU_OK(d, nn_add(d, n, va, vb, va)); /* y aliases a */
        tu_download(d, va, got, n);
        tu_assert_close(got, want, n, 1e-6, "add into a");
        tu_upload(d, va, a, n);
        TU_OK(d, nn_add(d, n, va, vb, vb)); /* y aliases b */
        tu_download(d, vb, got, n);
        tu_assert_close(got, want, n, 1e-6, "add into b");

        tu_upload(d, vb, b, n);
        for (size_t i = 0; i < n; i++)
            want[i] = (double)(float)b[i] + alpha * (float)a[i];
        TU_OK(d, nn_axpy(d, n, (float)alpha, va, vb));
        tu_download(d, vb, got, n);
        tu_assert_close(got, want, n, 1e-6, "axpy");

        tu_free(d, va), tu_free(d, vb), tu_free(d, vy);
        free(a), free(b), free(want), free(got);
    }
}

static void expect_invalid(mcl_dev *d, manta_status st, const char *field)
{
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("message '%s' does not name '%s'", msg, field);
}

static void test_pool_rejects_bad_sizes(void **state)
{
    mcl_dev *d = *state;
    mview v = tu_alloc(d, 16);
    const size_t huge = (size_t)1 << 31;
    expect_invalid(d, nn_avgpool_forward(d, 4, 0, v, v), "hw is 0");
    expect_invalid(d, nn_avgpool_backward(d, 4, 0, v, v), "hw is 0");
    expect_invalid(d, nn_avgpool_forward(d, huge / 4, 8, v, v), "nc");
    expect_invalid(d, nn_scale_forward(d, 2, huge, v, v, v), "hw");
    expect_invalid(d, nn_scale_backward(d, huge, 2, v, v, v, v, v), "nc");
    expect_invalid(d, nn_add(d, huge, v, v, v), "add size n");
    expect_invalid(d, nn_axpy(d, huge, 1.0f, v, v), "axpy size n");
    /* empty tensors are not errors */
    TU_OK(d, nn_scale_forward(d, 0, 7, v, v, v));
    TU_OK(d, nn_add(d, 0, v, v, v));
    tu_free(d, v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avgpool_forward_and_backward),
        cmocka_unit_test(test_scale_forward_and_backward),
        cmocka_unit_test(test_scale_backward_dx_aliases_dy_or_skipped),
        cmocka_unit_test(test_add_and_axpy_with_aliasing),
        cmocka_unit_test(test_pool_rejects_bad_sizes),
    };
    return cmocka_run_group_tests_name("pool", tests, tu_setup_device, tu_teardown_device);
}
