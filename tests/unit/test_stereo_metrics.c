/* Stereo metrics (EPE, bad-t, D1 over all and non-occluded pixels), the ground-truth
 * pyramid and the colour maps, on small pairs whose figures are worked out by hand. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "data/stereo_metrics.h"

/* A 2x4 pair: gt disparities and masks given, views unused. */
static void make_pair(stereo_pair *p, const float *disp, const uint8_t *mask, bool has_noc)
{
    manta_err e = {0};
    TU_OK_ERR(stereo_pair_alloc(p, 2, 4, &e));
    memcpy(p->disp, disp, 8 * sizeof *disp);
    memcpy(p->mask, mask, 8);
    p->has_noc = has_noc;
}

enum { V = STEREO_VALID, VN = STEREO_VALID | STEREO_NOC };

static void test_metrics_by_hand(void **state)
{
    (void)state;
    /* gt:   10 10 100 40 | 20 20 5 0(invalid)
     * pred: 10.5 12.5 104 44 | 20 23.5 5 77
     * errors: 0.5 2.5 4 4 | 0 3.5 0 - */
    const float gt[8] = {10, 10, 100, 40, 20, 20, 5, 0};
    const uint8_t mask[8] = {VN, VN, VN, V, VN, V, VN, 0};
    const float pred[8] = {10.5f, 12.5f, 104, 44, 20, 23.5f, 5, 77};
    stereo_pair p;
    make_pair(&p, gt, mask, true);
    stereo_metrics m = {0};
    stereo_metrics_add(&m, pred, &p);
    stereo_scores all, noc;
    stereo_metrics_scores(&m, &all, &noc);
    /* all 7 valid: sum 0.5+2.5+4+4+0+3.5+0 = 14.5 */
    assert_int_equal(all.pixels, 7);
    assert_true(fabs(all.epe - 14.5 / 7) < 1e-12);
    assert_true(fabs(all.bad1 - 100.0 * 4 / 7) < 1e-9); /* 2.5, 4, 4, 3.5 */
    assert_true(fabs(all.bad2 - 100.0 * 4 / 7) < 1e-9);
    assert_true(fabs(all.bad3 - 100.0 * 3 / 7) < 1e-9); /* 4, 4, 3.5 */
    /* D1: > 3 px and > 5% of gt: 4 of 100 (5 px needed) no; 4 of 40 yes; 3.5 of 20 yes */
    assert_true(fabs(all.d1 - 100.0 * 2 / 7) < 1e-9);
    /* noc: pixels 0, 1, 2, 4, 6: errors 0.5, 2.5, 4, 0, 0 */
    assert_int_equal(noc.pixels, 5);
    assert_true(fabs(noc.epe - 7.0 / 5) < 1e-12);
    assert_true(fabs(noc.bad3 - 20.0) < 1e-9);
    assert_true(fabs(noc.d1 - 0.0) < 1e-12);
    assert_int_equal(m.pairs, 1);
    assert_int_equal(m.pairs_noc, 1);

    /* a second pair without NOC bits adds to "all" only */
    stereo_pair q;
    make_pair(&q, gt, mask, false);
    stereo_metrics_add(&m, gt, &q); /* exact: errors 0 */
    stereo_metrics_scores(&m, &all, &noc);
    assert_int_equal(all.pixels, 14);
    assert_true(fabs(all.epe - 14.5 / 14) < 1e-12);
    assert_int_equal(noc.pixels, 5);
    assert_int_equal(m.pairs_noc, 1);
    stereo_pair_free(&p);
    stereo_pair_free(&q);
}

static void test_metrics_empty_and_non_finite(void **state)
{
    (void)state;
    stereo_metrics m = {0};
    stereo_scores all, noc;
    stereo_metrics_scores(&m, &all, &noc);
    assert_true(isnan(all.epe) && isnan(all.d1) && isnan(noc.bad3));
    assert_int_equal(all.pixels, 0);

    const float gt[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const uint8_t mask[8] = {V, V, V, V, V, V, V, V};
    float pred[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    pred[3] = NAN;
    stereo_pair p;
    make_pair(&p, gt, mask, false);
    stereo_metrics_add(&m, pred, &p);
    stereo_metrics_scores(&m, &all, &noc);
    assert_true(isinf(all.epe));
    assert_true(fabs(all.bad3 - 100.0 / 8) < 1e-9);
    assert_true(isnan(noc.epe));
    stereo_pair_free(&p);
}

static void test_downsample_means_valid_pixels(void **state)
{
    (void)state;
    /* 4x4 at level 1: 2x2 blocks */
    const float disp[16] = {1, 3, 10, 10, /**/ 5, 7, 10, 10, /**/ 2, 2, 9, 9, /**/ 2, 2, 9, 9};
    const uint8_t mask[16] = {V, V, V, V, /**/ V, V, V, 0, /**/ 0, 0, 0, V, /**/ 0, 0, 0, 0};
    float out[4], full[16];
    manta_err e = {0};
    TU_OK_ERR(stereo_disp_downsample(disp, mask, 4, 4, 1, out, &e));
    assert_true(out[0] == 4.0f);  /* mean of 1, 3, 5, 7 */
    assert_true(out[1] == 10.0f); /* three valid 10s */
    assert_true(out[2] == 0.0f);  /* none valid */
    assert_true(out[3] == 9.0f);  /* one valid 9 */
    TU_OK_ERR(stereo_disp_downsample(disp, mask, 4, 4, 2, out, &e));
    assert_true(fabsf(out[0] - (1 + 3 + 10 + 10 + 5 + 7 + 10 + 9) / 8.0f) < 1e-6f);
    TU_OK_ERR(stereo_disp_downsample(disp, mask, 4, 4, 0, full, &e));
    assert_true(full[0] == 1.0f && full[7] == 0.0f && full[11] == 9.0f && full[8] == 0.0f);

    assert_int_equal(stereo_disp_downsample(disp, mask, 4, 6, 2, out, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "not a multiple of 4"));
    assert_int_equal(stereo_disp_downsample(disp, mask, 4, 4, -1, out, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(stereo_disp_downsample(disp, mask, 4, 4, 3, out, &e), MANTA_ERR_INVALID_ARG);
}

static void test_colour_maps(void **state)
{
    (void)state;
    const float disp[8] = {0, 32, 64, 100, NAN, 16, 48, -5};
    const uint8_t mask[8] = {V, V, V, V, V, 0, V, V};
    uint8_t rgb[24];
    stereo_disp_colorize(disp, mask, 2, 4, 64.0f, rgb);
    const uint8_t first[3] = {0, 0, 128}, last[3] = {128, 0, 0}, black[3] = {0, 0, 0};
    assert_memory_equal(rgb + 0, first, 3);  /* 0 */
    assert_memory_equal(rgb + 6, last, 3);   /* max_disp */
    assert_memory_equal(rgb + 9, last, 3);   /* above: clamped */
    assert_memory_equal(rgb + 12, black, 3); /* NaN */
    assert_memory_equal(rgb + 15, black, 3); /* masked out */
    assert_memory_equal(rgb + 21, first, 3); /* below 0: clamped */
    const uint8_t middle[3] = {64, 255, 128};
    assert_memory_equal(rgb + 3, middle, 3); /* the middle stop */

    const float gt[8] = {10, 10, 10, 10, 10, 10, 10, 10};
    const uint8_t gmask[8] = {V, V, V, V, V, V, 0, V};
    const float pred[8] = {10.5f, 11.5f, 12.5f, 14, 16, NAN, 10, 10};
    stereo_pair p;
    make_pair(&p, gt, gmask, false);
    stereo_error_colorize(pred, &p, rgb);
    static const uint8_t want[7][3] = {
        {0, 0, 0},     /* 0.5 px */
        {40, 90, 255}, /* 1.5 */
        {40, 200, 60}, /* 2.5 */
        {250, 220, 0}, /* 4 */
        {230, 30, 30}, /* 6 */
        {230, 30, 30}, /* NaN */
        {64, 64, 64},  /* no ground truth */
    };
    for (int i = 0; i < 7; i++)
        assert_memory_equal(rgb + 3 * i, want[i], 3);
    stereo_pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_by_hand),
        cmocka_unit_test(test_metrics_empty_and_non_finite),
        cmocka_unit_test(test_downsample_means_valid_pixels),
        cmocka_unit_test(test_colour_maps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
