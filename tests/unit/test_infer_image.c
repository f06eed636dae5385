/* manta-infer's image input (tools/manta-infer/image.h) against the data
 * pipeline: its resize gives the same bytes as the pipeline's one filter
 * (data/resample.h), which agrees with the double-precision reference, and a
 * JPEG becomes the input tensor the pipeline's resize, the centred crop and
 * the normalisation make of the decoded pixels. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <turbojpeg.h>

#include "../../tools/manta-infer/image.h"
#include "core/rng.h"
#include "data/resample.h"
#include "ref/ref_resize.h"

/* A smooth random image (h, w, c) with some noise, so that resizing matters. */
static uint8_t *make_image(manta_rng *r, int h, int w, int c)
{
    uint8_t *p = malloc((size_t)h * w * c);
    assert_non_null(p);
    const double fy = 0.05 + 0.5 * manta_rng_uniform(r), fx = 0.05 + 0.5 * manta_rng_uniform(r);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int ch = 0; ch < c; ch++) {
                double v = 128 + 90 * sin(fy * y + 1.3 * ch) * cos(fx * x) +
                           30 * (manta_rng_uniform(r) - 0.5);
                p[((size_t)y * w + x) * c + ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    return p;
}

static void test_resize_matches_pipeline(void **state)
{
    (void)state;
    static const int sizes[][4] = {
        {1, 1, 1, 1},     {1, 1, 7, 5},     {8, 8, 8, 8},      {9, 13, 9, 13},
        {32, 32, 16, 16}, {28, 28, 32, 32}, {100, 75, 24, 18}, {5, 200, 3, 40},
        {200, 5, 37, 1},  {17, 31, 64, 96}, {63, 64, 62, 65},  {480, 640, 24, 32},
    };
    manta_rng r;
    manta_rng_seed(&r, 5, 9);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] + 24; i++) {
        int h, w, oh, ow;
        if (i < sizeof sizes / sizeof sizes[0]) {
            h = sizes[i][0], w = sizes[i][1], oh = sizes[i][2], ow = sizes[i][3];
        } else { /* random sizes, enlarging and shrinking */
            h = 1 + (int)manta_rng_below(&r, 90), w = 1 + (int)manta_rng_below(&r, 90);
            oh = 1 + (int)manta_rng_below(&r, 90), ow = 1 + (int)manta_rng_below(&r, 90);
        }
        for (int c = 1; c <= 3; c += 2) {
            uint8_t *src = make_image(&r, h, w, c);
            uint8_t *a = malloc((size_t)oh * ow * c), *b = malloc((size_t)oh * ow * c);
            assert_non_null(a);
            assert_non_null(b);
            manta_err err;
            assert_int_equal(image_resize_u8(src, h, w, c, a, oh, ow), 0);
            assert_int_equal(data_rs_resize_u8(src, h, w, c, b, oh, ow, &err), MANTA_OK);
            if (memcmp(a, b, (size_t)oh * ow * c) != 0)
                fail_msg("%dx%dx%d -> %dx%d: manta-infer and the pipeline differ", h, w, c, oh, ow);
            if (c == 1 && (size_t)h * w * oh * ow <= 4000000) { /* and the reference (slow) */
                double *s = malloc((size_t)h * w * sizeof *s),
                       *d = malloc((size_t)oh * ow * sizeof *d);
                assert_non_null(s);
                assert_non_null(d);
                for (size_t k = 0; k < (size_t)h * w; k++)
                    s[k] = src[k];
                ref_resize(s, h, w, d, oh, ow);
                for (size_t k = 0; k < (size_t)oh * ow; k++)
                    if (fabs(a[k] - d[k]) > 0.5 + 1e-3)
                        fail_msg("%dx%d -> %dx%d: value %zu is %d, the reference %.4f", h, w, oh,
                                 ow, k, a[k], d[k]);
                free(s);
                free(d);
            }
            free(src);
            free(a);
            free(b);
        }
    }
}

/* @p pix (h, w, c) as a JPEG (quality 95, no chroma subsampling). */
static unsigned char *encode(const uint8_t *pix, int h, int w, int c, unsigned long *size)
{
    tjhandle tj = tjInitCompress();
    assert_non_null(tj);
    unsigned char *out = NULL;
    *size = 0;
    int rc = tjCompress2(tj, pix, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, &out, size,
                         c == 1 ? TJSAMP_GRAY : TJSAMP_444, 95, 0);
    tjDestroy(tj);
    assert_int_equal(rc, 0);
    return out;
}

/* The input tensor the pipeline makes of a JPEG: decoded as @p c channels, shorter
 * side resized to @p r (the other keeping the aspect ratio), the centred r x r square,
 * (pixel / 255 - mean) / std. */
static void pipeline_input(const unsigned char *jpeg, unsigned long size, int r,
                           const image_norm *n, float *out)
{
    const int c = n->channels;
    tjhandle tj = tjInitDecompress();
    int w, h, sub, cs;
    assert_int_equal(tjDecompressHeader3(tj, jpeg, size, &w, &h, &sub, &cs), 0);
    uint8_t *pix = malloc((size_t)w * h * c);
    assert_non_null(pix);
    assert_int_equal(tjDecompress2(tj, jpeg, size, pix, w, 0, h, c == 1 ? TJPF_GRAY : TJPF_RGB, 0),
                     0);
    tjDestroy(tj);
    const int oh = h <= w ? r : (int)fmax(1.0, floor((double)h * r / w + 0.5));
    const int ow = h <= w ? (int)fmax(1.0, floor((double)w * r / h + 0.5)) : r;
    uint8_t *rs = malloc((size_t)oh * ow * c);
    assert_non_null(rs);
    manta_err err;
    assert_int_equal(data_rs_resize_u8(pix, h, w, c, rs, oh, ow, &err), MANTA_OK);
    const int y0 = (oh - r) / 2, x0 = (ow - r) / 2;
    for (int y = 0; y < r; y++)
        for (int x = 0; x < r; x++)
            for (int ch = 0; ch < c; ch++) {
                const float v = rs[((size_t)(y + y0) * ow + (size_t)(x + x0)) * c + ch] / 255.0f;
                out[((size_t)y * r + x) * c + ch] = (v - n->mean[ch]) / n->std[ch];
            }
    free(pix);
    free(rs);
}

static void test_jpeg_input_matches_pipeline(void **state)
{
    (void)state;
    static const int shapes[][3] = {
        /* h, w, r */
        {64, 48, 32}, {48, 64, 32}, {20, 20, 32}, {300, 120, 24}, {33, 97, 28}, {40, 40, 40},
    };
    manta_rng rng;
    manta_rng_seed(&rng, 12, 4);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int c = 1; c <= 3; c += 2) {
            const int h = shapes[i][0], w = shapes[i][1], r = shapes[i][2];
            uint8_t *pix = make_image(&rng, h, w, c);
            unsigned long size;
            unsigned char *jpeg = encode(pix, h, w, c, &size);
            const image_norm n = {c, {0.5f, 0.4f, 0.3f}, {0.25f, 0.2f, 0.5f}};
            float *got = malloc((size_t)r * r * c * sizeof *got);
            float *want = malloc((size_t)r * r * c * sizeof *want);
            assert_non_null(got);
            assert_non_null(want);
            char why[256] = "";
            if (image_load_jpeg(jpeg, size, r, &n, got, why, sizeof why) != 0)
                fail_msg("%dx%dx%d: %s", h, w, c, why);
            pipeline_input(jpeg, size, r, &n, want);
            for (size_t k = 0; k < (size_t)r * r * c; k++)
                if (got[k] != want[k])
                    fail_msg("%dx%dx%d at %d: value %zu is %g, the pipeline's %g", h, w, c, r, k,
                             (double)got[k], (double)want[k]);
            free(pix);
            tjFree(jpeg);
            free(got);
            free(want);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_matches_pipeline),
        cmocka_unit_test(test_jpeg_input_matches_pipeline),
    };
    return cmocka_run_group_tests_name("manta-infer image input", tests, NULL, NULL);
}
