/* The disparity map's resize (data_disp_resize()) against a separable plain-C reference, and
 * its colour map's ends. */
#include <math.h>
#include <stdlib.h>

#include "common/testutil.h"
#include "data/disp_color.h"

/* Weights of one axis: output o of @p out reads lo[o] and hi[o] with weight 1 - f[o], f[o]. */
static void ref_axis(int in, int out, int *lo, int *hi, double *f)
{
    for (int o = 0; o < out; o++) {
        double c = (o + 0.5) * (double)in / (double)out - 0.5;
        if (c < 0)
            c = 0;
        lo[o] = (int)floor(c);
        hi[o] = lo[o] + 1 < in ? lo[o] + 1 : in - 1;
        f[o] = c - lo[o];
    }
}

/* Rows first, then columns: the reference of an (ih, iw) plane resized to (oh, ow). */
static void ref_resize_plane(const float *in, int ih, int iw, double *out, int oh, int ow,
                             double scale)
{
    int *ylo = malloc(sizeof(int) * oh), *yhi = malloc(sizeof(int) * oh);
    int *xlo = malloc(sizeof(int) * ow), *xhi = malloc(sizeof(int) * ow);
    double *fy = malloc(sizeof(double) * oh), *fx = malloc(sizeof(double) * ow);
    double *rows = malloc(sizeof(double) * (size_t)oh * iw);
    assert_true(ylo && yhi && xlo && xhi && fy && fx && rows);
    ref_axis(ih, oh, ylo, yhi, fy);
    ref_axis(iw, ow, xlo, xhi, fx);
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < iw; x++)
            rows[(size_t)y * iw + x] =
                in[(size_t)ylo[y] * iw + x] * (1 - fy[y]) + in[(size_t)yhi[y] * iw + x] * fy[y];
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++)
            out[(size_t)y * ow + x] = scale * (rows[(size_t)y * iw + xlo[x]] * (1 - fx[x]) +
                                               rows[(size_t)y * iw + xhi[x]] * fx[x]);
    free(ylo), free(yhi), free(xlo), free(xhi), free(fy), free(fx), free(rows);
}

static void check_resize(int ih, int iw, int oh, int ow, float scale)
{
    float *in = malloc(sizeof(float) * (size_t)ih * iw);
    float *got = malloc(sizeof(float) * (size_t)oh * ow);
    double *want = malloc(sizeof(double) * (size_t)oh * ow);
    assert_true(in && got && want);
    manta_rng r;
    manta_rng_seed(&r, (uint64_t)(ih * 1000 + iw), 3);
    for (int i = 0; i < ih * iw; i++)
        in[i] = 40.0f * (float)manta_rng_u32(&r) / 4294967296.0f;
    data_disp_resize(in, ih, iw, got, oh, ow, scale);
    ref_resize_plane(in, ih, iw, want, oh, ow, scale);
    for (int i = 0; i < oh * ow; i++)
        if (fabs(got[i] - want[i]) > 1e-4 * (1 + fabs(want[i])))
            fail_msg("%dx%d -> %dx%d: value %d is %.6f, reference %.6f", ih, iw, oh, ow, i,
                     (double)got[i], want[i]);
    free(in), free(got), free(want);
}

static void test_resize_matches_reference(void **state)
{
    (void)state;
    check_resize(8, 8, 8, 8, 1.0f);     /* the identity */
    check_resize(16, 32, 32, 64, 2.0f); /* enlarged twice, disparities doubled */
    check_resize(33, 45, 13, 17, 0.5f); /* shrunk, sizes of no common factor */
    check_resize(1, 5, 3, 9, 1.0f);     /* one row */
}

static void test_resize_identity_exact(void **state)
{
    (void)state;
    float in[12], out[12];
    for (int i = 0; i < 12; i++)
        in[i] = (float)i * 1.25f;
    data_disp_resize(in, 3, 4, out, 3, 4, 1.0f);
    for (int i = 0; i < 12; i++)
        assert_float_equal(out[i], in[i], 0.0f);
}

static void test_colorize_ends(void **state)
{
    (void)state;
    const float d[4] = {0.0f, 32.0f, -5.0f, NAN};
    uint8_t rgb[12];
    data_disp_colorize(d, 4, 32.0f, rgb);
    assert_true(rgb[2] > rgb[0] && rgb[2] > rgb[1]); /* 0: blue */
    assert_true(rgb[3] > rgb[4] && rgb[3] > rgb[5]); /* the largest: red */
    assert_memory_equal(rgb + 6, rgb, 3);            /* below 0: clamped to 0's */
    assert_int_equal(rgb[9] | rgb[10] | rgb[11], 0); /* not a number: black */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_matches_reference),
        cmocka_unit_test(test_resize_identity_exact),
        cmocka_unit_test(test_colorize_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
