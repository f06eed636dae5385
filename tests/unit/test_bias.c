/* Per-channel bias: the forward add and the accumulated bias gradient against a plain-C
 * double reference, on shapes small and large enough for the GPU variant's split sums
 * (and odd rows for the CPU variant's 8-value chunks); nothing is written past the scratch
 * size the op asks for; bad shapes and missing buffers refused. All device views sit at a
 * non-zero offset. Each case runs on both kernel variants, whatever MANTA_KERNELS says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/variants.h"
#include "nn/bias.h"

#define VIEW_OFF 7

/* y (N, C, HW) += b[c] */
static void ref_bias_forward(const nn_bias_shape *s, const double *b, double *y)
{
    for (int n = 0; n < s->n; n++)
        for (int c = 0; c < s->c; c++)
            for (int i = 0; i < s->hw; i++)
                y[((size_t)n * s->c + c) * s->hw + i] += b[c];
}

/* db (C) += the sum of dy (N, C, HW) over N and HW */
static void ref_bias_backward(const nn_bias_shape *s, const double *dy, double *db)
{
    for (int c = 0; c < s->c; c++) {
        double acc = 0;
        for (int n = 0; n < s->n; n++)
            for (int i = 0; i < s->hw; i++)
                acc += dy[((size_t)n * s->c + c) * s->hw + i];
        db[c] += acc;
    }
}

static void check_bias(mcl_dev *d, const nn_bias_shape *s, uint64_t seed)
{
    manta_rng rng;
    manta_rng_seed(&rng, 17, seed);
    size_t ny = (size_t)s->n * s->c * s->hw, nc = (size_t)s->c;
    double *y = tu_doubles(ny), *b = tu_doubles(nc), *dy = tu_doubles(ny);
    double *db = tu_doubles(nc), *got = tu_doubles(ny);
    tu_fill_uniform(&rng, y, ny, -1, 1);
    tu_fill_uniform(&rng, b, nc, -1, 1);
    tu_fill_uniform(&rng, dy, ny, -1, 1);
    tu_fill_uniform(&rng, db, nc, -1, 1); /* prior gradient: accumulated onto */
    mview vy = tu_view_at(d, VIEW_OFF, y, ny), vb = tu_view_at(d, VIEW_OFF, b, nc);
    mview vdy = tu_view_at(d, VIEW_OFF, dy, ny), vdb = tu_view_at(d, VIEW_OFF, db, nc);
    size_t ns = nn_bias_channels_scratch_floats(d, s);
    mview none = {NULL, 0}, scratch = ns ? tu_scratch(d, ns) : none;

    TU_OK(d, nn_bias_channels_forward(d, s, vb, vy));
    tu_download(d, vy, got, ny);
    ref_bias_forward(s, b, y);
    tu_variant_assert_close(d, got, y, ny, 1e-6, "bias forward");

    TU_OK(d, nn_bias_channels_backward(d, s, vdy, vdb, scratch));
    tu_download(d, vdb, got, nc);
    ref_bias_backward(s, dy, db);
    tu_variant_assert_close(d, got, db, nc, 1e-5, "bias backward, accumulated");

    if (ns)
        tu_scratch_free(d, scratch, ns);
    tu_free(d, vy), tu_free(d, vb), tu_free(d, vdy), tu_free(d, vdb);
    free(y), free(b), free(dy), free(db), free(got);
}

static void test_bias_matches_reference(void **st)
{
    const nn_bias_shape s[] = {
        /* n, c, hw */
        {1, 1, 1},    /* one value */
        {3, 5, 13},   /* odd rows: a partial 8-value chunk */
        {2, 4, 64},   /* whole chunks */
        {4, 3, 4096}, /* long rows: the GPU variant splits each channel's sum */
        {2, 300, 33}, /* more channels than the GPU variant's work-groups */
        {8, 1, 4000}, /* one channel: the most ranges */
    };
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
            check_bias(v->dev[k], &s[i], 10 * (uint64_t)k + i);
    /* the split needs scratch on the GPU variant only */
    assert_int_equal(nn_bias_channels_scratch_floats(v->dev[0], &s[3]), 0);
    assert_true(nn_bias_channels_scratch_floats(v->dev[1], &s[3]) > 0);
}

static void expect_invalid(mcl_dev *d, const nn_bias_shape *s, const char *what)
{
    mview v = tu_alloc(d, 256), w = tu_alloc(d, 256);
    manta_status st = nn_bias_channels_forward(d, s, v, w);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, what) || !strstr(msg, "bias forward"))
        fail_msg("forward message '%s' does not name 'bias forward' and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
    st = nn_bias_channels_backward(d, s, v, w, w);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, what) || !strstr(msg, "bias backward"))
        fail_msg("backward message '%s' does not name 'bias backward' and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
    tu_free(d, v), tu_free(d, w);
}

static void check_bad_shapes(mcl_dev *d)
{
    const nn_bias_shape ok = {2, 3, 4};
    nn_bias_shape s = ok;
    s.n = 0;
    expect_invalid(d, &s, "field n ");
    s = ok, s.c = -1;
    expect_invalid(d, &s, "field c ");
    s = ok, s.hw = 0;
    expect_invalid(d, &s, "hw");
    s = (nn_bias_shape){65536, 65536, 2};
    expect_invalid(d, &s, "32-bit");
    expect_invalid(d, NULL, "shape");
    assert_int_equal(nn_bias_channels_scratch_floats(d, NULL), 0);
    mview none = {NULL, 0}, v = tu_alloc(d, 64);
    manta_status rc = nn_bias_channels_forward(d, &ok, none, v);
    assert_int_equal(rc, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), rc), "b has no buffer"));
    manta_err_clear(mcl_err(d));
    rc = nn_bias_channels_backward(d, &ok, v, none, none);
    assert_int_equal(rc, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), rc), "db has no buffer"));
    manta_err_clear(mcl_err(d));
    tu_free(d, v);
}

static void test_bias_bad_shapes_rejected(void **st)
{
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        check_bad_shapes(v->dev[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bias_matches_reference),
        cmocka_unit_test(test_bias_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("bias", tests, tu_setup_variants, tu_teardown_variants);
}
