/* Augmentation: eval and train views against the plain-C reference crop and
 * resize (tests/ref/ref_resize), flips, crop bounds, determinism. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "data/augment.h"
#include "data/resample.h"
#include "ref/ref_resize.h"

/* A dataset of n random RGB (or gray) images of h x w, labels i % 5. */
static void make_set(dataset *d, int n, int h, int w, int c, uint64_t seed)
{
    manta_err e;
    assert_int_equal(data_set_init_fixed(d, n, h, w, c, 5, &e), MANTA_OK);
    manta_rng r;
    manta_rng_seed(&r, seed, 1);
    for (size_t i = 0; i < (size_t)n * h * w * c; i++)
        d->pixels[i] = (uint8_t)manta_rng_u32(&r);
    for (int i = 0; i < n; i++)
        d->labels[i] = i % 5;
}

static void params(aug_params *p, aug_mode m, int c)
{
    data_aug_params_default(p, m, c);
    p->mean[0] = 0.4f, p->mean[1] = 0.5f, p->mean[2] = 0.6f;
    p->std[0] = 0.2f, p->std[1] = 0.25f, p->std[2] = 0.3f;
}

/* Reference of one view: crop per channel, resize, normalise -> (c, r, r). */
static void ref_view(const aug_params *p, const uint8_t *img, int h, int w, int c,
                     const aug_view *v, int r, double *out)
{
    double *crop = malloc(sizeof(double) * v->side * v->side);
    assert_non_null(crop);
    for (int ch = 0; ch < c; ch++) {
        ref_crop(img, h, w, c, ch, v->y0, v->x0, v->side, p->pad_kind == AUG_PAD_EDGE, v->flip,
                 crop);
        double *o = out + (size_t)ch * r * r;
        ref_resize(crop, v->side, v->side, o, r, r);
        for (int i = 0; i < r * r; i++)
            o[i] = (o[i] / 255.0 - p->mean[ch]) / p->std[ch];
    }
    free(crop);
}

static void expect_close(const float *got, const double *want, size_t n, double tol,
                         const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol)
            fail_msg("%s: element %zu is %.6f, reference %.6f", what, i, (double)got[i], want[i]);
}

static void test_eval_matches_reference(void **state)
{
    (void)state;
    dataset d;
    make_set(&d, 1, 40, 52, 3, 11); /* centre square 40x40 at x0 = 6 */
    aug_params p;
    params(&p, AUG_EVAL, 3);
    const int rs[] = {40, 32, 24, 17, 56, 64};
    for (size_t k = 0; k < sizeof rs / sizeof rs[0]; k++) {
        int r = rs[k];
        float *got = malloc(sizeof(float) * 3 * r * r);
        double *want = malloc(sizeof(double) * 3 * r * r);
        float lab;
        int idx = 0;
        assert_int_equal(data_aug_batch(&p, &d, &idx, 1, r, NULL, got, &lab, NULL), MANTA_OK);
        aug_view v = {0, 6, 40, false};
        ref_view(&p, dataset_image(&d, 0), 40, 52, 3, &v, r, want);
        char what[32];
        snprintf(what, sizeof what, "eval R=%d", r);
        expect_close(got, want, (size_t)3 * r * r, 1e-4, what);
        assert_true(lab == 0.0f);
        free(got);
        free(want);
    }
    data_set_free(&d);
}

static void test_identity_at_stored_size(void **state)
{
    (void)state;
    dataset d;
    make_set(&d, 1, 28, 28, 1, 5);
    aug_params p;
    data_aug_params_default(&p, AUG_EVAL, 1);
    float out[28 * 28];
    int idx = 0;
    assert_int_equal(data_aug_batch(&p, &d, &idx, 1, 28, NULL, out, NULL, NULL), MANTA_OK);
    for (int i = 0; i < 28 * 28; i++) {
        float want = (d.pixels[i] / 255.0f - IDX_FASHION_MEAN) / IDX_FASHION_STD;
        assert_true(fabsf(out[i] - want) < 1e-5f);
    }
    data_set_free(&d);
}

static void test_train_views_match_reference(void **state)
{
    (void)state;
    dataset d;
    make_set(&d, 1, 30, 30, 3, 12);
    const uint8_t *img = dataset_image(&d, 0);
    const aug_view views[] = {{-4, -4, 30, false},
                              {4, 4, 30, true},
                              {-3, 2, 30, true},
                              {0, 0, 30, false},
                              {2, -4, 30, false}};
    for (int kind = 0; kind < 2; kind++)
        for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
            aug_params p;
            params(&p, AUG_TRAIN, 3);
            p.pad_kind = kind ? AUG_PAD_EDGE : AUG_PAD_ZERO;
            const int r = k % 2 ? 24 : 36;
            float *got = malloc(sizeof(float) * 3 * r * r);
            double *want = malloc(sizeof(double) * 3 * r * r);
            assert_int_equal(data_aug_render(&p, img, 30, 30, 3, &views[k], r, got, NULL),
                             MANTA_OK);
            ref_view(&p, img, 30, 30, 3, &views[k], r, want);
            char what[64];
            snprintf(what, sizeof what, "train view %zu pad %s", k, kind ? "edge" : "zero");
            expect_close(got, want, (size_t)3 * r * r, 1e-4, what);
            free(got);
            free(want);
        }
    /* zero padding: the top-left corner of view (-4, -4) at R = side is the pad value */
    aug_params p;
    params(&p, AUG_TRAIN, 3);
    float out[3 * 30 * 30];
    aug_view v = {-4, -4, 30, false};
    assert_int_equal(data_aug_render(&p, img, 30, 30, 3, &v, 30, out, NULL), MANTA_OK);
    assert_true(fabsf(out[0] - (-p.mean[0] / p.std[0])) < 1e-5f);
    assert_true(fabsf(out[4 * 30 + 4] - (img[0] / 255.0f - p.mean[0]) / p.std[0]) < 1e-5f);
    data_set_free(&d);
}

static void test_flip_mirrors_exactly(void **state)
{
    (void)state;
    dataset d;
    make_set(&d, 1, 33, 40, 3, 13);
    aug_params p;
    params(&p, AUG_TRAIN, 3);
    const int r = 29;
    float a[3 * 29 * 29], b[3 * 29 * 29];
    aug_view v = {-2, 5, 33, false};
    assert_int_equal(data_aug_render(&p, dataset_image(&d, 0), 33, 40, 3, &v, r, a, NULL),
                     MANTA_OK);
    v.flip = true;
    assert_int_equal(data_aug_render(&p, dataset_image(&d, 0), 33, 40, 3, &v, r, b, NULL),
                     MANTA_OK);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < r; y++)
            for (int x = 0; x < r; x++)
                assert_true(a[(c * r + y) * r + x] == b[(c * r + y) * r + (r - 1 - x)]);
    data_set_free(&d);
}

static void test_crop_bounds_and_flip_rate(void **state)
{
    (void)state;
    aug_params p;
    data_aug_params_default(&p, AUG_TRAIN, 3);
    manta_rng r;
    manta_rng_seed(&r, 99, 3);
    const int h = 36, w = 50, pad = 4, side = 36;
    int seen_y[9] = {0}, min_x = 1000, max_x = -1000, flips = 0;
    const int n = 4000;
    for (int i = 0; i < n; i++) {
        aug_view v;
        data_aug_sample_view(&p, h, w, &r, &v);
        assert_int_equal(v.side, side);
        assert_true(v.y0 >= -pad && v.y0 <= h + pad - side);
        assert_true(v.x0 >= -pad && v.x0 <= w + pad - side);
        seen_y[v.y0 + pad]++;
        min_x = v.x0 < min_x ? v.x0 : min_x;
        max_x = v.x0 > max_x ? v.x0 : max_x;
        flips += v.flip;
    }
    for (int k = 0; k < 9; k++)
        assert_true(seen_y[k] > n / 9 / 2); /* every offset drawn, about uniformly */
    assert_int_equal(min_x, -pad);
    assert_int_equal(max_x, w + pad - side);
    assert_true(flips > n * 0.45 && flips < n * 0.55);
    /* flip off: never flipped; eval: the centre, no RNG needed */
    p.flip = false;
    for (int i = 0; i < 100; i++) {
        aug_view v;
        data_aug_sample_view(&p, h, w, &r, &v);
        assert_false(v.flip);
    }
    data_aug_params_default(&p, AUG_EVAL, 3);
    aug_view v;
    data_aug_sample_view(&p, 41, 36, NULL, &v);
    assert_int_equal(v.y0, 2);
    assert_int_equal(v.x0, 0);
    assert_int_equal(v.side, 36);
}

static void test_batch_deterministic_for_seed(void **state)
{
    (void)state;
    dataset d;
    make_set(&d, 8, 36, 36, 3, 14);
    aug_params p;
    params(&p, AUG_TRAIN, 3);
    const int idx[6] = {3, 1, 4, 1, 5, 7}, r = 32;
    const size_t n = (size_t)6 * 3 * r * r;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), la[6], lb[6];
    manta_rng r1, r2;
    manta_rng_seed(&r1, 2024, 0);
    manta_rng_seed(&r2, 2024, 0);
    assert_int_equal(data_aug_batch(&p, &d, idx, 6, r, &r1, a, la, NULL), MANTA_OK);
    assert_int_equal(data_aug_batch(&p, &d, idx, 6, r, &r2, b, lb, NULL), MANTA_OK);
    assert_memory_equal(a, b, n * sizeof *a);
    assert_memory_equal(la, lb, sizeof la);
    assert_memory_equal(&r1, &r2, sizeof r1);
    for (int i = 0; i < 6; i++)
        assert_true(la[i] == (float)(idx[i] % 5));
    /* each image consumed exactly three draws */
    manta_rng r3;
    manta_rng_seed(&r3, 2024, 0);
    for (int i = 0; i < 6; i++) {
        aug_view v;
        data_aug_sample_view(&p, 36, 36, &r3, &v);
    }
    assert_memory_equal(&r1, &r3, sizeof r1);
    /* another seed: another batch */
    manta_rng_seed(&r2, 2025, 0);
    assert_int_equal(data_aug_batch(&p, &d, idx, 6, r, &r2, b, lb, NULL), MANTA_OK);
    assert_true(memcmp(a, b, n * sizeof *a) != 0);
    free(a);
    free(b);
    data_set_free(&d);
}

static void test_variable_size_images(void **state)
{
    (void)state;
    /* two images of different shapes in one set, as a JPEG folder gives */
    dataset d;
    manta_err e;
    assert_int_equal(data_set_init_fixed(&d, 2, 36, 36, 1, 2, &e), MANTA_OK);
    uint8_t *px = realloc(d.pixels, 36 * 48 + 54 * 36);
    assert_non_null(px);
    d.pixels = px;
    for (int i = 0; i < 36 * 48 + 54 * 36; i++)
        px[i] = (uint8_t)(i * 13);
    d.height[0] = 36, d.width[0] = 48, d.offset[0] = 0;
    d.height[1] = 54, d.width[1] = 36, d.offset[1] = 36 * 48;
    d.stored_size = 36;
    aug_params p;
    params(&p, AUG_EVAL, 1);
    int idx[2] = {0, 1};
    float out[2 * 20 * 20];
    double want[20 * 20];
    assert_int_equal(data_aug_batch(&p, &d, idx, 2, 20, NULL, out, NULL, &e), MANTA_OK);
    aug_view v0 = {0, 6, 36, false}, v1 = {9, 0, 36, false};
    ref_view(&p, px, 36, 48, 1, &v0, 20, want);
    expect_close(out, want, 400, 1e-4, "image 0");
    ref_view(&p, px + 36 * 48, 54, 36, 1, &v1, 20, want);
    expect_close(out + 400, want, 400, 1e-4, "image 1");
    data_set_free(&d);
}

static void test_resample_taps(void **state)
{
    (void)state;
    const int sizes[][2] = {{36, 36}, {36, 24}, {36, 64}, {1, 5}, {5, 1}, {300, 36}, {7, 3}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        rs_taps t;
        int in = sizes[k][0], out = sizes[k][1];
        assert_int_equal(data_rs_taps_make(&t, in, out, NULL), MANTA_OK);
        for (int o = 0; o < out; o++) {
            double s = 0;
            assert_true(t.first[o] >= 0 && t.first[o] + t.taps <= in);
            for (int j = 0; j < t.taps; j++) {
                assert_true(t.w[o * t.taps + j] >= 0);
                s += t.w[o * t.taps + j];
            }
            assert_true(fabs(s - 1) < 1e-6);
        }
        data_rs_taps_free(&t);
    }
}

static void test_bad_arguments(void **state)
{
    (void)state;
    dataset d;
    make_set(&d, 2, 8, 8, 3, 15);
    aug_params p;
    params(&p, AUG_TRAIN, 3);
    manta_rng r;
    manta_rng_seed(&r, 1, 1);
    float out[3 * 8 * 8 * 2], lab[2];
    manta_err e;
    int bad[2] = {0, 2};
    assert_int_equal(data_aug_batch(&p, &d, bad, 2, 8, &r, out, lab, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "index 2"));
    int ok[2] = {0, 1};
    assert_int_equal(data_aug_batch(&p, &d, ok, 2, 0, &r, out, lab, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "resolution 0"));
    p.std[1] = 0;
    assert_int_equal(data_aug_batch(&p, &d, ok, 2, 8, &r, out, lab, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "std[1]"));
    params(&p, AUG_TRAIN, 3);
    aug_view v = {-5, 0, 8, false}; /* beyond the 4-pixel padding */
    assert_int_equal(data_aug_render(&p, d.pixels, 8, 8, 3, &v, 8, out, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "view"));
    data_set_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_matches_reference),
        cmocka_unit_test(test_identity_at_stored_size),
        cmocka_unit_test(test_train_views_match_reference),
        cmocka_unit_test(test_flip_mirrors_exactly),
        cmocka_unit_test(test_crop_bounds_and_flip_rate),
        cmocka_unit_test(test_batch_deterministic_for_seed),
        cmocka_unit_test(test_variable_size_images),
        cmocka_unit_test(test_resample_taps),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("augmentation", tests, NULL, NULL);
}
