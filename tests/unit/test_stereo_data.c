/* Stereo data: the procedural generator (determinism, ground truth checked
 * against the rendered views, occlusion mask), the photo bank and the generator's
 * photographic pairs (textured layers, single photographs), PNG and PFM round trips, the
 * KITTI and Middlebury folder layouts (built here in a temporary folder), the
 * KITTI writer, geometry-preserving augmentation, and every bad input. */
#include <math.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "data/pfm.h"
#include "data/photo_bank.h"
#include "data/png_io.h"
#include "data/stereo_augment.h"
#include "data/stereo_folder.h"
#include "data/stereo_synth.h"

static tu_tmpdir root; /* the group's temporary folder */

/* "<root>/<fmt...>" into a buffer of the caller; fails the test when it does not fit. */
static const char *tpath(char *buf, size_t n, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof name)
        fail_msg("path name %s does not fit in %zu bytes", fmt, sizeof name);
    return tu_tmpdir_path(&root, name, buf, n);
}

static void mkdirs(const char *path)
{
    manta_err e;
    TU_OK_ERR(manta_file_mkdir_p(path, &e));
}

static void synth(stereo_pair *p, int w, int h, float maxd, uint64_t seed, uint64_t index,
                  bool photometric)
{
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, w, h, maxd, seed);
    o.photometric = photometric;
    manta_err e;
    TU_OK_ERR(stereo_pair_alloc(p, h, w, &e));
    TU_OK_ERR(stereo_synth_generate(&o, index, p, &e));
}

static int same_pair(const stereo_pair *a, const stereo_pair *b)
{
    size_t n = (size_t)a->height * a->width;
    return a->height == b->height && a->width == b->width &&
           !memcmp(a->left, b->left, sizeof(float) * 3 * n) &&
           !memcmp(a->right, b->right, sizeof(float) * 3 * n) &&
           !memcmp(a->disp, b->disp, sizeof(float) * n) && !memcmp(a->mask, b->mask, n);
}

static float clampf_t(float v) { return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

/* ---- generator ------------------------------------------------------------------ */

static void test_synth_deterministic(void **state)
{
    (void)state;
    stereo_pair a, b, c, d;
    synth(&a, 128, 64, 32, 42, 3, true);
    synth(&b, 128, 64, 32, 42, 7, true); /* other pairs in between change nothing */
    stereo_pair_free(&b);
    synth(&b, 128, 64, 32, 42, 3, true);
    assert_true(same_pair(&a, &b));
    synth(&c, 128, 64, 32, 42, 4, true);
    assert_false(same_pair(&a, &c));
    synth(&d, 128, 64, 32, 43, 3, true);
    assert_false(same_pair(&a, &d));
    stereo_pair_free(&a), stereo_pair_free(&b), stereo_pair_free(&c), stereo_pair_free(&d);
}

static void test_synth_ranges(void **state)
{
    (void)state;
    const float maxd = 40.0f;
    double dmin = 1e9, dmax = -1e9, noc = 0, frac = 0;
    size_t total = 0;
    for (int i = 0; i < 12; i++) {
        stereo_pair p;
        synth(&p, 160, 72, maxd, 5, (uint64_t)i, true);
        assert_true(p.has_noc);
        const size_t n = (size_t)p.height * p.width;
        for (size_t k = 0; k < 3 * n; k++) {
            assert_true(p.left[k] >= 0.0f && p.left[k] <= 1.0f);
            assert_true(p.right[k] >= 0.0f && p.right[k] <= 1.0f);
        }
        for (size_t k = 0; k < n; k++) {
            float dv = p.disp[k];
            assert_true(dv >= 0.0f && dv <= maxd * 1.0001f);
            assert_true(p.mask[k] & STEREO_VALID);
            dmin = fmin(dmin, dv);
            dmax = fmax(dmax, dv);
            noc += (p.mask[k] & STEREO_NOC) != 0;
            frac += fabsf(dv - roundf(dv)) > 0.05f;
            /* NOC only where x - d lands inside the right view */
            if (p.mask[k] & STEREO_NOC) {
                float xr = (float)(k % (size_t)p.width) - dv;
                assert_true(xr >= 0.0f && xr <= (float)(p.width - 1));
            }
        }
        total += n;
        stereo_pair_free(&p);
    }
    print_message("synth: disparity range [%.2f, %.2f] of %.0f, %.1f%% non-occluded, %.1f%% "
                  "fractional\n",
                  dmin, dmax, (double)maxd, 100.0 * noc / total, 100.0 * frac / total);
    assert_true(dmin < 0.2 * maxd && dmax > 0.8 * maxd); /* a wide histogram */
    assert_true(noc / total > 0.6 && noc / total < 0.99);
    assert_true(frac / total > 0.5); /* sub-pixel */
}

/* Linear sample of row y of channel c of a (3, H, W) image at x (in [0, W-1]). */
static float sample_row(const float *img, int H, int W, int c, int y, float x)
{
    int j0 = (int)floorf(x), j1 = j0 + 1 < W ? j0 + 1 : j0;
    float f = x - (float)j0;
    const float *row = img + (size_t)c * H * W + (size_t)y * W;
    return (1.0f - f) * row[j0] + f * row[j1];
}

/* Pixels well inside a non-occluded surface: NOC with NOC neighbours on a smooth disparity. */
static int interior(const stereo_pair *p, int x, int y)
{
    const int W = p->width;
    if (x < 2 || x > W - 3)
        return 0;
    const float *d = p->disp + (size_t)y * W;
    const uint8_t *m = p->mask + (size_t)y * W;
    for (int k = -2; k <= 2; k++)
        if (!(m[x + k] & STEREO_NOC) || fabsf(d[x + k] - d[x]) > 0.35f * (float)abs(k))
            return 0;
    float xr = (float)x - d[x];
    return xr >= 1.0f && xr <= (float)(W - 2);
}

/* Mean |right(x - d - shift) - left(x)| over the interior pixels. */
/* The largest |R(x - d) - L(x)| over the interior pixels of @p p whose disparity is an
 * integer (within 0.01 px), where the right view shows exactly the left pixel's texel;
 * *count grows by their number. */
static double integer_disparity_error(const stereo_pair *p, int *count)
{
    double worst = 0.0;
    for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++) {
            float d = p->disp[(size_t)y * p->width + x];
            if (!interior(p, x, y) || fabsf(d - roundf(d)) > 0.01f)
                continue;
            int j = x - (int)roundf(d);
            for (int c = 0; c < 3; c++) {
                size_t o = (size_t)c * p->height * p->width + (size_t)y * p->width;
                worst = fmax(worst, fabsf(p->right[o + j] - p->left[o + x]));
            }
            (*count)++;
        }
    return worst;
}

static double photo_error(const stereo_pair *p, float shift, int *count)
{
    double sum = 0.0;
    int n = 0;
    for (int y = 0; y < p->height; y++)
        for (int x = 0; x < p->width; x++) {
            if (!interior(p, x, y))
                continue;
            float xr = (float)x - p->disp[(size_t)y * p->width + x] - shift;
            xr = fminf(fmaxf(xr, 0.0f), (float)(p->width - 1));
            for (int c = 0; c < 3; c++)
                sum += fabsf(sample_row(p->right, p->height, p->width, c, y, xr) -
                             p->left[(size_t)c * p->height * p->width + (size_t)y * p->width + x]);
            n++;
        }
    *count = n;
    return n ? sum / (3.0 * n) : 0.0;
}

static void test_synth_right_view_matches_disparity(void **state)
{
    (void)state;
    double e0 = 0, e_half = 0, e_one = 0, e_photo = 0, worst_int = 0;
    int n = 0, n_int = 0;
    for (int i = 0; i < 10; i++) {
        stereo_pair p, q;
        int c0, c1, c2, c3;
        synth(&p, 192, 96, 48, 11, (uint64_t)i, false);
        e0 += photo_error(&p, 0.0f, &c0);
        e_half += photo_error(&p, 0.5f, &c1);
        e_one += photo_error(&p, 1.0f, &c2);
        n += c0;
        synth(&q, 192, 96, 48, 11, (uint64_t)i, true); /* same scene, photometric differences on */
        e_photo += photo_error(&q, 0.0f, &c3);
        /* at integer disparities the right pixel shows exactly the left pixel's texel */
        worst_int = fmax(worst_int, integer_disparity_error(&p, &n_int));
        stereo_pair_free(&p);
        stereo_pair_free(&q);
    }
    e0 /= 10, e_half /= 10, e_one /= 10, e_photo /= 10;
    print_message("synth: mean |R(x-d) - L(x)| %.4f over %d interior pixels; shifted by 0.5 px "
                  "%.4f, by 1 px %.4f; with photometric differences %.4f; at %d integer "
                  "disparities worst %.4f\n",
                  e0, n, e_half, e_one, e_photo, n_int, worst_int);
    assert_true(n > 10000);
    assert_true(e0 < 0.006);
    assert_true(e_half > 3.0 * e0 && e_one > 5.0 * e0);
    assert_true(e_photo > 2.0 * e0);
    assert_true(n_int > 50);
    assert_true(worst_int < 0.02);
}

/*
 * Occlusion mask against an independent forward warp: a left pixel q on a
 * surface (its neighbours on the same surface) lands at x_R = q - d_q in the
 * right view; a pixel p landing within 0.25 px of it with a disparity smaller
 * by more than 0.5 px is hidden by q's surface there and must not be NOC.
 * Conversely an occluded pixel inside the right view has a nearer left pixel
 * landing within 1 px of it, unless its occluder is not in the left view at
 * all (right of its border: x_R > W - 1 - max_disp) or hidden there by a
 * third, nearer surface (rare).
 */
static void test_synth_occlusion_mask(void **state)
{
    (void)state;
    const int W = 160;
    const float maxd = 40.0f;
    long violations = 0, occluded_inside = 0, explained = 0, at_border = 0;
    for (int i = 0; i < 8; i++) {
        stereo_pair p;
        synth(&p, W, 80, maxd, 21, (uint64_t)i, true);
        for (int y = 0; y < p.height; y++) {
            const float *d = p.disp + (size_t)y * W;
            const uint8_t *m = p.mask + (size_t)y * W;
            for (int x = 0; x < W; x++) {
                const float xr = (float)x - d[x];
                const int noc = (m[x] & STEREO_NOC) != 0;
                const int inside = xr >= 0.0f && xr <= (float)(W - 1);
                int hidden = 0, near = 0;
                for (int q = 1; q < W - 1; q++) {
                    if (d[q] <= d[x] + 0.1f)
                        continue;
                    const float gap = fabsf((float)q - d[q] - xr);
                    near |= gap < 1.0f;
                    hidden |= gap < 0.25f && d[q] > d[x] + 0.5f && fabsf(d[q - 1] - d[q]) < 0.35f &&
                              fabsf(d[q + 1] - d[q]) < 0.35f;
                }
                violations += hidden && noc;
                if (inside && !noc) {
                    occluded_inside++;
                    if (near)
                        explained++;
                    else if (xr > (float)(W - 1) - maxd)
                        at_border++;
                }
            }
        }
        stereo_pair_free(&p);
    }
    print_message("synth: %ld occluded pixels inside the right view: %.1f%% with a nearer "
                  "left pixel within 1 px, %.1f%% more near the right border; %ld NOC pixels "
                  "behind a surface\n",
                  occluded_inside, 100.0 * explained / (occluded_inside ? occluded_inside : 1),
                  100.0 * at_border / (occluded_inside ? occluded_inside : 1), violations);
    assert_int_equal(violations, 0);
    assert_true(occluded_inside > 500);
    assert_true(explained > 0.7 * occluded_inside);
    assert_true(explained + at_border > 0.98 * occluded_inside);
}

static void test_synth_bad_options(void **state)
{
    (void)state;
    stereo_synth_opts o;
    stereo_pair p;
    manta_err e;
    TU_OK_ERR(stereo_pair_alloc(&p, 32, 64, &e));
    stereo_synth_opts_default(&o, 64, 32, 40, 0); /* more than width / 2 */
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "max_disp"));
    stereo_synth_opts_default(&o, 64, 32, 0, 0);
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    stereo_synth_opts_default(&o, 64, 32, 8, 0);
    o.max_shapes = STEREO_SYNTH_MAX_SHAPES + 1;
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "shapes"));
    stereo_synth_opts_default(&o, 64, 33, 8, 0); /* another size than the pair */
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "64x32"));
    stereo_synth_opts_default(&o, 64, 4, 8, 0);
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    stereo_synth_opts_default(&o, 64, 32, 8, 0); /* no shapes: the background alone */
    o.min_shapes = o.max_shapes = 0;
    TU_OK_ERR(stereo_synth_generate(&o, 0, &p, &e));
    stereo_pair_free(&p);
    assert_int_equal(stereo_pair_alloc(&p, 0, 10, &e), MANTA_ERR_INVALID_ARG);
    assert_null(p.left);
}

/* ---- PNG and PFM ------------------------------------------------------------------ */

static void test_png_round_trips(void **state)
{
    (void)state;
    char path[512];
    manta_err e;
    manta_rng r;
    manta_rng_seed(&r, 3, 0);
    const int H = 23, W = 37;
    uint8_t rgb[23 * 37 * 3], gray[23 * 37];
    uint16_t g16[23 * 37];
    for (int i = 0; i < H * W * 3; i++)
        rgb[i] = (uint8_t)manta_rng_u32(&r);
    for (int i = 0; i < H * W; i++) {
        gray[i] = (uint8_t)manta_rng_u32(&r);
        g16[i] = (uint16_t)manta_rng_u32(&r);
    }
    g16[0] = 0, g16[1] = 65535, g16[2] = 1, g16[3] = 256;
    uint8_t *u8 = NULL;
    uint16_t *u16 = NULL;
    int h, w;
    TU_OK_ERR(mpng_write_rgb8(tpath(path, sizeof path, "rgb.png"), rgb, H, W, &e));
    TU_OK_ERR(mpng_read_u8(path, 3, &u8, &h, &w, &e));
    assert_int_equal(h, H), assert_int_equal(w, W);
    assert_memory_equal(u8, rgb, sizeof rgb);
    free(u8);
    /* colour read as gray: libpng's weights */
    TU_OK_ERR(mpng_read_u8(path, 1, &u8, &h, &w, &e));
    double want = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
    assert_true(fabs(u8[0] - want) <= 1.5);
    free(u8);
    TU_OK_ERR(mpng_write_gray8(tpath(path, sizeof path, "gray.png"), gray, H, W, &e));
    TU_OK_ERR(mpng_read_u8(path, 1, &u8, &h, &w, &e));
    assert_memory_equal(u8, gray, sizeof gray);
    free(u8);
    TU_OK_ERR(mpng_read_u8(path, 3, &u8, &h, &w, &e)); /* gray replicated */
    for (int i = 0; i < H * W; i++)
        assert_true(u8[3 * i] == gray[i] && u8[3 * i + 1] == gray[i] && u8[3 * i + 2] == gray[i]);
    free(u8);
    TU_OK_ERR(mpng_write_gray16(tpath(path, sizeof path, "g16.png"), g16, H, W, &e));
    TU_OK_ERR(mpng_read_gray16(path, &u16, &h, &w, &e));
    assert_int_equal(h, H), assert_int_equal(w, W);
    assert_memory_equal(u16, g16, sizeof g16);
    free(u16);
    /* an RGBA file written by libpng itself: alpha dropped */
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = 4, img.height = 2, img.format = PNG_FORMAT_RGBA;
    uint8_t rgba[2 * 4 * 4];
    for (int i = 0; i < 32; i++)
        rgba[i] = (uint8_t)(i * 7);
    assert_true(
        png_image_write_to_file(&img, tpath(path, sizeof path, "rgba.png"), 0, rgba, 0, NULL));
    TU_OK_ERR(mpng_read_u8(path, 3, &u8, &h, &w, &e));
    assert_int_equal(w, 4), assert_int_equal(h, 2);
    for (int i = 0; i < 8; i++)
        for (int c = 0; c < 3; c++)
            assert_int_equal(u8[3 * i + c], rgba[4 * i + c]);
    free(u8);
}

static void test_png_errors(void **state)
{
    (void)state;
    char path[512], path2[512];
    manta_err e;
    uint8_t *u8 = (uint8_t *)&e;
    uint16_t *u16 = (uint16_t *)&e;
    int h = 9, w = 9;
    assert_int_equal(mpng_read_u8(tpath(path, sizeof path, "missing.png"), 3, &u8, &h, &w, &e),
                     MANTA_ERR_IO);
    assert_null(u8);
    assert_int_equal(h, 0);
    assert_non_null(strstr(e.msg, path));
    FILE *f = fopen(tpath(path, sizeof path, "text.png"), "wb");
    assert_non_null(f);
    fputs("this is not an image at all", f);
    fclose(f);
    assert_int_equal(mpng_read_u8(path, 3, &u8, &h, &w, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "not a PNG"));
    /* an 8-bit file where a 16-bit gray one is needed */
    uint8_t rgb[4 * 4 * 3] = {0};
    manta_err e2;
    TU_OK_ERR(mpng_write_rgb8(tpath(path, sizeof path, "rgb8.png"), rgb, 4, 4, &e2));
    assert_int_equal(mpng_read_gray16(path, &u16, &h, &w, &e), MANTA_ERR_FORMAT);
    assert_null(u16);
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, "8-bit RGB PNG, expected 16-bit gray"));
    /* a truncated file */
    char *data;
    size_t len;
    uint8_t big[64 * 64 * 3];
    manta_rng r;
    manta_rng_seed(&r, 1, 1);
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)manta_rng_u32(&r);
    TU_OK_ERR(mpng_write_rgb8(tpath(path, sizeof path, "big.png"), big, 64, 64, &e2));
    TU_OK_ERR(manta_file_read(path, 1 << 20, &data, &len, &e2));
    TU_OK_ERR(manta_file_write_atomic(tpath(path2, sizeof path2, "cut.png"), data, len / 2, &e2));
    free(data);
    assert_int_equal(mpng_read_u8(path2, 3, &u8, &h, &w, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "cut.png: PNG error"));
    assert_int_equal(mpng_read_u8(path, 2, &u8, &h, &w, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(mpng_write_rgb8(path, big, 0, 4, &e), MANTA_ERR_INVALID_ARG);
}

static void test_pfm_round_trips(void **state)
{
    (void)state;
    char path[512];
    manta_err e;
    float one[5 * 3], three[2 * 3 * 3];
    for (int i = 0; i < 15; i++)
        one[i] = (float)i * 0.37f - 2.0f;
    one[4] = INFINITY;
    one[5] = NAN;
    for (int i = 0; i < 18; i++)
        three[i] = (float)i + 0.5f;
    float *d;
    int h, w, c;
    TU_OK_ERR(pfm_write(tpath(path, sizeof path, "one.pfm"), one, 5, 3, 1, &e));
    TU_OK_ERR(pfm_read(path, &d, &h, &w, &c, &e));
    assert_int_equal(h, 5), assert_int_equal(w, 3), assert_int_equal(c, 1);
    assert_memory_equal(d, one, sizeof one); /* bit for bit, inf and NaN included */
    free(d);
    TU_OK_ERR(pfm_write(tpath(path, sizeof path, "three.pfm"), three, 2, 3, 3, &e));
    TU_OK_ERR(pfm_read(path, &d, &h, &w, &c, &e));
    assert_int_equal(h, 2), assert_int_equal(w, 3), assert_int_equal(c, 3);
    assert_memory_equal(d, three, sizeof three);
    free(d);
    /* written by hand: big-endian (positive scale), bottom row first, "\n" and " " separators */
    const unsigned char rows[16] = {0x3f, 0x80, 0, 0, 0x40, 0,    0, 0,  /* bottom row: 1, 2 */
                                    0x40, 0x40, 0, 0, 0x40, 0x80, 0, 0}; /* top row: 3, 4 */
    unsigned char be[11 + 16];
    memcpy(be, "Pf\n2 2\n2.0\n", 11);
    memcpy(be + 11, rows, sizeof rows);
    TU_OK_ERR(manta_file_write_atomic(tpath(path, sizeof path, "be.pfm"), be, sizeof be, &e));
    TU_OK_ERR(pfm_read(path, &d, &h, &w, &c, &e));
    assert_true(d[0] == 3.0f && d[1] == 4.0f && d[2] == 1.0f && d[3] == 2.0f);
    free(d);
    /* the file as written is little-endian with scale -1, bottom row first */
    char *raw;
    size_t len;
    TU_OK_ERR(manta_file_read(tpath(path, sizeof path, "one.pfm"), 4096, &raw, &len, &e));
    assert_int_equal(memcmp(raw, "Pf\n3 5\n-1\n", 10), 0);
    float first;
    memcpy(&first, raw + 10, 4); /* host is little-endian on every supported target */
    assert_true(first == one[4 * 3]);
    free(raw);
}

static void expect_pfm_error(const char *name, const void *bytes, size_t n, const char *what)
{
    char path[512];
    manta_err e;
    TU_OK_ERR(manta_file_write_atomic(tpath(path, sizeof path, "%s", name), bytes, n, &e));
    float *d = (float *)&e;
    int h = 1, w = 1, c = 1;
    assert_int_equal(pfm_read(path, &d, &h, &w, &c, &e), MANTA_ERR_FORMAT);
    assert_null(d);
    assert_int_equal(h, 0);
    if (!strstr(e.msg, what) || !strstr(e.msg, name))
        fail_msg("%s: message '%s' lacks '%s'", name, e.msg, what);
}

static void test_pfm_errors(void **state)
{
    (void)state;
    unsigned char buf[64] = "Pf\n2 2\n-1\n";
    expect_pfm_error("magic.pfm", "P6\n2 2\n255\n", 11, "not a PFM");
    expect_pfm_error("short.pfm", buf, 10 + 12, "12 bytes of float data, expected 16");
    expect_pfm_error("long.pfm", buf, 10 + 20, "20 bytes of float data, expected 16");
    expect_pfm_error("scale.pfm", "Pf\n2 2\n0\n0000000000000000", 25, "scale");
    expect_pfm_error("dims.pfm", "Pf\n2 x\n-1\n", 10, "width and height");
    expect_pfm_error("zero.pfm", "Pf\n0 2\n-1\n", 10, "width and height");
    char path[512];
    manta_err e;
    float *d;
    int h, w, c;
    assert_int_equal(pfm_read(tpath(path, sizeof path, "none.pfm"), &d, &h, &w, &c, &e),
                     MANTA_ERR_IO);
    float v = 0;
    assert_int_equal(pfm_write(path, &v, 1, 1, 2, &e), MANTA_ERR_INVALID_ARG);
}

/* ---- folders ---------------------------------------------------------------------- */

/* Loaded pair against the pair that was written (8-bit views, 1/256 px disparities). */
static void expect_loaded(const stereo_pair *got, const stereo_pair *want)
{
    assert_int_equal(got->height, want->height);
    assert_int_equal(got->width, want->width);
    const size_t n = (size_t)got->height * got->width;
    for (size_t k = 0; k < 3 * n; k++) {
        assert_true(fabsf(got->left[k] - want->left[k]) <= 0.5f / 255 + 1e-6f);
        assert_true(fabsf(got->right[k] - want->right[k]) <= 0.5f / 255 + 1e-6f);
    }
    for (size_t k = 0; k < n; k++) {
        assert_int_equal(got->mask[k], want->mask[k]);
        if (want->mask[k] & STEREO_VALID)
            assert_true(fabsf(got->disp[k] - fmaxf(want->disp[k], 1.0f / 256)) <=
                        0.5f / 256 + 1e-6f);
    }
}

static void test_kitti_write_and_load(void **state)
{
    (void)state;
    char dir[512], path[512];
    manta_err e;
    tpath(dir, sizeof dir, "kitti");
    stereo_pair p[3];
    for (int i = 0; i < 3; i++) {
        synth(&p[i], 96 + 8 * i, 40, 24, 99, (uint64_t)i, true);
        TU_OK_ERR(stereo_folder_write_kitti(dir, i, &p[i], &e));
    }
    /* KITTI's other frame: a pair without ground truth, listed as skipped */
    uint8_t rgb[8 * 8 * 3] = {0};
    TU_OK_ERR(
        mpng_write_rgb8(tpath(path, sizeof path, "kitti/image_2/000000_11.png"), rgb, 8, 8, &e));
    TU_OK_ERR(
        mpng_write_rgb8(tpath(path, sizeof path, "kitti/image_3/000000_11.png"), rgb, 8, 8, &e));
    /* something else in the view folder is ignored */
    TU_OK_ERR(
        manta_file_write_atomic(tpath(path, sizeof path, "kitti/image_2/notes.txt"), "x", 1, &e));
    stereo_set s;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &s, &e));
    assert_int_equal(s.layout, STEREO_LAYOUT_KITTI);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.skipped, 1);
    assert_string_equal(s.name[1], "000001_10.png");
    for (int i = 0; i < 3; i++) {
        stereo_pair q;
        TU_OK_ERR(stereo_folder_load(&s, i, &q, &e));
        assert_true(q.has_noc);
        expect_loaded(&q, &p[i]);
        stereo_pair_free(&q);
    }
    stereo_set_free(&s);

    /* disp_noc_0 alone: VALID and NOC from it */
    tpath(path, sizeof path, "kitti/disp_occ_0");
    manta_file_remove_tree(path);
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_KITTI, &s, &e));
    stereo_pair q;
    TU_OK_ERR(stereo_folder_load(&s, 0, &q, &e));
    assert_true(q.has_noc);
    for (size_t k = 0; k < (size_t)q.height * q.width; k++) {
        uint8_t want = (p[0].mask[k] & STEREO_NOC) ? (STEREO_VALID | STEREO_NOC) : 0;
        assert_int_equal(q.mask[k], want);
    }
    stereo_pair_free(&q);
    stereo_set_free(&s);

    /* no disparity folder at all (a test set): every pair, no ground truth */
    tpath(path, sizeof path, "kitti/disp_noc_0");
    manta_file_remove_tree(path);
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &s, &e));
    assert_int_equal(s.count, 4);
    assert_int_equal(s.skipped, 0);
    assert_null(s.disp[0]);
    assert_string_equal(s.name[1], "000000_11.png");
    TU_OK_ERR(stereo_folder_load(&s, 1, &q, &e));
    assert_int_equal(q.width, 8);
    assert_false(q.has_noc);
    for (size_t k = 0; k < 64; k++)
        assert_true(q.mask[k] == 0 && q.disp[k] == 0.0f);
    stereo_pair_free(&q);
    stereo_set_free(&s);
    for (int i = 0; i < 3; i++)
        stereo_pair_free(&p[i]);
}

/* A Middlebury scene: views of w x h, a PFM disparity map with a few infinities and a mask. */
static void make_scene(const char *dir, int w, int h, int with_gt, stereo_pair *want)
{
    char path[600];
    manta_err e;
    mkdirs(dir);
    TU_OK_ERR(stereo_pair_alloc(want, h, w, &e));
    const size_t n = (size_t)w * h;
    uint8_t *l = malloc(3 * n), *r = malloc(3 * n), *m = malloc(n);
    float *d = malloc(sizeof(float) * n);
    assert_true(l && r && m && d);
    for (size_t k = 0; k < n; k++) {
        for (int c = 0; c < 3; c++) {
            l[3 * k + c] = (uint8_t)(k * 3 + c * 50);
            r[3 * k + c] = (uint8_t)(k * 5 + c * 20);
            want->left[c * n + k] = l[3 * k + c] / 255.0f;
            want->right[c * n + k] = r[3 * k + c] / 255.0f;
        }
        d[k] = 0.25f * (float)(k % 97);
        m[k] = k % 3 == 0 ? 255 : k % 3 == 1 ? 128 : 0;
        if (k % 11 == 5)
            d[k] = INFINITY;
        if (with_gt && isfinite(d[k])) {
            want->disp[k] = d[k];
            want->mask[k] = STEREO_VALID | (m[k] == 255 ? STEREO_NOC : 0);
        }
    }
    want->has_noc = with_gt != 0;
    snprintf(path, sizeof path, "%s/im0.png", dir);
    TU_OK_ERR(mpng_write_rgb8(path, l, h, w, &e));
    snprintf(path, sizeof path, "%s/im1.png", dir);
    TU_OK_ERR(mpng_write_rgb8(path, r, h, w, &e));
    if (with_gt) {
        snprintf(path, sizeof path, "%s/disp0GT.pfm", dir);
        TU_OK_ERR(pfm_write(path, d, h, w, 1, &e));
        snprintf(path, sizeof path, "%s/mask0nocc.png", dir);
        TU_OK_ERR(mpng_write_gray8(path, m, h, w, &e));
    }
    free(l), free(r), free(m), free(d);
}

static void expect_same(const stereo_pair *got, const stereo_pair *want)
{
    assert_int_equal(got->height, want->height);
    assert_int_equal(got->width, want->width);
    assert_int_equal(got->has_noc, want->has_noc);
    const size_t n = (size_t)got->height * got->width;
    assert_memory_equal(got->left, want->left, sizeof(float) * 3 * n);
    assert_memory_equal(got->right, want->right, sizeof(float) * 3 * n);
    assert_memory_equal(got->disp, want->disp, sizeof(float) * n);
    assert_memory_equal(got->mask, want->mask, n);
}

static void test_middlebury_load(void **state)
{
    (void)state;
    char dir[512], sub[600];
    manta_err e;
    tpath(dir, sizeof dir, "mb");
    stereo_pair a, b, q;
    snprintf(sub, sizeof sub, "%s/Adirondack", dir);
    make_scene(sub, 30, 20, 1, &a);
    snprintf(sub, sizeof sub, "%s/Zebra", dir);
    make_scene(sub, 12, 10, 0, &b);
    snprintf(sub, sizeof sub, "%s/calib-notes", dir);
    mkdirs(sub);
    stereo_set s;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &s, &e));
    assert_int_equal(s.layout, STEREO_LAYOUT_MIDDLEBURY);
    assert_int_equal(s.count, 2);
    assert_int_equal(s.skipped, 1);
    assert_string_equal(s.name[0], "Adirondack");
    assert_null(s.disp[1]);
    TU_OK_ERR(stereo_folder_load(&s, 0, &q, &e));
    expect_same(&q, &a);
    stereo_pair_free(&q);
    TU_OK_ERR(stereo_folder_load(&s, 1, &q, &e));
    expect_same(&q, &b);
    stereo_pair_free(&q);
    assert_int_equal(stereo_folder_load(&s, 2, &q, &e), MANTA_ERR_INVALID_ARG);
    stereo_set_free(&s);
    /* a scene folder given as the root */
    snprintf(sub, sizeof sub, "%s/Adirondack/", dir);
    TU_OK_ERR(stereo_folder_open(sub, STEREO_LAYOUT_MIDDLEBURY, &s, &e));
    assert_int_equal(s.count, 1);
    assert_string_equal(s.name[0], "Adirondack");
    stereo_set_free(&s);
    stereo_pair_free(&a);
    stereo_pair_free(&b);
}

/* ---- bad input ---------------------------------------------------------------------- */

static void expect_open_error(const char *dir, stereo_layout layout, manta_status code,
                              const char *what)
{
    stereo_set s;
    manta_err e;
    assert_int_equal(stereo_folder_open(dir, layout, &s, &e), code);
    assert_int_equal(s.count, 0);
    assert_null(s.left);
    if (!strstr(e.msg, what))
        fail_msg("open %s: message '%s' lacks '%s'", dir, e.msg, what);
}

static void expect_load_error(const char *dir, const char *what, const char *file)
{
    stereo_set s;
    stereo_pair q;
    manta_err e;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &s, &e));
    assert_int_equal(stereo_folder_load(&s, 0, &q, &e), MANTA_ERR_FORMAT);
    assert_null(q.left);
    assert_int_equal(q.height, 0);
    if (!strstr(e.msg, what) || !strstr(e.msg, file))
        fail_msg("load %s: message '%s' lacks '%s' or '%s'", dir, e.msg, what, file);
    stereo_set_free(&s);
}

/* A KITTI folder with one pair of the given sizes; disparity 16-bit, or 8-bit RGB when rgb_disp. */
static void make_kitti(const char *name, int lw, int rw, int dw, int rgb_disp)
{
    char path[512];
    manta_err e;
    uint8_t rgb[10 * 40 * 3] = {0};
    uint16_t d[10 * 40] = {0};
    tpath(path, sizeof path, "%s/image_2", name), mkdirs(path);
    tpath(path, sizeof path, "%s/image_3", name), mkdirs(path);
    tpath(path, sizeof path, "%s/disp_occ_0", name), mkdirs(path);
    TU_OK_ERR(mpng_write_rgb8(tpath(path, sizeof path, "%s/image_2/000000_10.png", name), rgb, 10,
                              lw, &e));
    TU_OK_ERR(mpng_write_rgb8(tpath(path, sizeof path, "%s/image_3/000000_10.png", name), rgb, 10,
                              rw, &e));
    tpath(path, sizeof path, "%s/disp_occ_0/000000_10.png", name);
    if (rgb_disp)
        TU_OK_ERR(mpng_write_rgb8(path, rgb, 10, dw, &e));
    else
        TU_OK_ERR(mpng_write_gray16(path, d, 10, dw, &e));
}

static void test_bad_input(void **state)
{
    (void)state;
    char dir[512], path[600];
    manta_err e;
    /* views of different sizes */
    make_kitti("bad-views", 20, 21, 20, 0);
    expect_load_error(tpath(dir, sizeof dir, "bad-views"),
                      "the right view is 21x10, but the left view",
                      "bad-views/image_3/000000_10.png");
    /* a disparity map of the wrong size, and of the wrong kind */
    make_kitti("bad-dsize", 20, 20, 19, 0);
    expect_load_error(tpath(dir, sizeof dir, "bad-dsize"), "the disparity map is 19x10",
                      "bad-dsize/disp_occ_0/000000_10.png");
    make_kitti("bad-dkind", 20, 20, 20, 1);
    expect_load_error(tpath(dir, sizeof dir, "bad-dkind"), "8-bit RGB PNG, expected 16-bit gray",
                      "bad-dkind/disp_occ_0/000000_10.png");
    /* a right view that is not a PNG */
    make_kitti("bad-png", 20, 20, 20, 0);
    TU_OK_ERR(manta_file_write_atomic(tpath(path, sizeof path, "bad-png/image_3/000000_10.png"),
                                      "garbage", 7, &e));
    expect_load_error(tpath(dir, sizeof dir, "bad-png"), "not a PNG",
                      "bad-png/image_3/000000_10.png");
    /* a left view without its right view */
    make_kitti("bad-missing", 20, 20, 20, 0);
    TU_OK_ERR(mpng_write_rgb8(tpath(path, sizeof path, "bad-missing/image_2/000001_10.png"),
                              (const uint8_t *)path, 2, 2, &e));
    expect_open_error(tpath(dir, sizeof dir, "bad-missing"), STEREO_LAYOUT_AUTO, MANTA_ERR_FORMAT,
                      "bad-missing/image_3/000001_10.png: missing");
    /* Middlebury: a 3-channel PFM, a PFM of the wrong size, a scene without im1.png */
    stereo_pair want;
    make_scene(tpath(dir, sizeof dir, "mb-bad3/s"), 6, 4, 1, &want);
    stereo_pair_free(&want);
    float rgbf[6 * 4 * 3] = {0};
    TU_OK_ERR(pfm_write(tpath(path, sizeof path, "mb-bad3/s/disp0GT.pfm"), rgbf, 4, 6, 3, &e));
    expect_load_error(tpath(dir, sizeof dir, "mb-bad3"), "3-channel PFM", "mb-bad3/s/disp0GT.pfm");
    make_scene(tpath(dir, sizeof dir, "mb-bads/s"), 6, 4, 1, &want);
    stereo_pair_free(&want);
    TU_OK_ERR(pfm_write(tpath(path, sizeof path, "mb-bads/s/disp0GT.pfm"), rgbf, 4, 5, 1, &e));
    expect_load_error(tpath(dir, sizeof dir, "mb-bads"), "the disparity map is 5x4",
                      "mb-bads/s/disp0GT.pfm");
    make_scene(tpath(dir, sizeof dir, "mb-badm/s"), 6, 4, 1, &want);
    stereo_pair_free(&want);
    uint8_t m[3 * 4] = {0};
    TU_OK_ERR(mpng_write_gray8(tpath(path, sizeof path, "mb-badm/s/mask0nocc.png"), m, 3, 4, &e));
    expect_load_error(tpath(dir, sizeof dir, "mb-badm"), "the occlusion mask is 4x3",
                      "mb-badm/s/mask0nocc.png");
    make_scene(tpath(dir, sizeof dir, "mb-noim1/s"), 6, 4, 0, &want);
    stereo_pair_free(&want);
    remove(tpath(path, sizeof path, "mb-noim1/s/im1.png"));
    expect_open_error(tpath(dir, sizeof dir, "mb-noim1"), STEREO_LAYOUT_AUTO, MANTA_ERR_FORMAT,
                      "mb-noim1/s/im1.png: missing");
    /* folders without pairs */
    tpath(dir, sizeof dir, "empty"), mkdirs(dir);
    expect_open_error(dir, STEREO_LAYOUT_AUTO, MANTA_ERR_FORMAT, "no stereo pairs");
    expect_open_error(dir, STEREO_LAYOUT_KITTI, MANTA_ERR_FORMAT, "image_2/ and image_3/");
    tpath(dir, sizeof dir, "empty-kitti/image_2"), mkdirs(dir);
    tpath(dir, sizeof dir, "empty-kitti/image_3"), mkdirs(dir);
    expect_open_error(tpath(dir, sizeof dir, "empty-kitti"), STEREO_LAYOUT_AUTO, MANTA_ERR_FORMAT,
                      "no stereo pairs");
    expect_open_error(tpath(dir, sizeof dir, "nowhere"), STEREO_LAYOUT_AUTO, MANTA_ERR_IO,
                      "nowhere: cannot open");
    expect_open_error(tpath(dir, sizeof dir, "bad-png/image_3/000000_10.png"), STEREO_LAYOUT_AUTO,
                      MANTA_ERR_IO, "not a folder");
    expect_open_error(tpath(dir, sizeof dir, "empty"), (stereo_layout)7, MANTA_ERR_INVALID_ARG,
                      "layout");
    /* the writer refuses what KITTI's encoding cannot hold, before writing anything */
    stereo_pair p;
    TU_OK_ERR(stereo_pair_alloc(&p, 4, 4, &e));
    p.mask[5] = STEREO_VALID;
    p.disp[5] = 300.0f;
    tpath(dir, sizeof dir, "kitti-big");
    assert_int_equal(stereo_folder_write_kitti(dir, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "disparity 300 at (x 1, y 1)"));
    tpath(path, sizeof path, "kitti-big/image_2/000000_10.png");
    FILE *f = fopen(path, "rb");
    assert_null(f);
    assert_int_equal(stereo_folder_write_kitti(dir, -1, &p, &e), MANTA_ERR_INVALID_ARG);
    stereo_pair_free(&p);
}

/* ---- augmentation ---------------------------------------------------------------------- */

static void test_augment_crop_flip(void **state)
{
    (void)state;
    stereo_pair p, q;
    manta_err e;
    synth(&p, 120, 60, 30, 8, 0, false);
    stereo_aug_params a;
    stereo_aug_params_default(&a, 40, 64);
    a.brightness = a.contrast = a.gamma = 0.0f; /* geometry only */
    TU_OK_ERR(stereo_pair_alloc(&q, 40, 64, &e));
    for (int flip = 0; flip < 2; flip++) {
        a.vflip = flip != 0;
        manta_rng r, r2;
        manta_rng_seed(&r, 77, 1);
        r2 = r;
        TU_OK_ERR(stereo_aug_apply(&a, &p, &r, &q, &e));
        int y0 = (int)manta_rng_below(&r2, 60 - 40 + 1),
            x0 = (int)manta_rng_below(&r2, 120 - 64 + 1);
        int flipped = flip && (manta_rng_u32(&r2) >> 31);
        for (int y = 0; y < 40; y++) {
            int sy = y0 + (flipped ? 39 - y : y);
            for (int x = 0; x < 64; x++) {
                size_t o = (size_t)y * 64 + x, s = (size_t)sy * 120 + x0 + x;
                assert_true(q.disp[o] == p.disp[s]);
                assert_true(q.mask[o] == p.mask[s]);
                for (int c = 0; c < 3; c++) {
                    assert_true(fabsf(q.left[c * 2560 + o] - p.left[c * 7200 + s]) < 1e-5f);
                    assert_true(fabsf(q.right[c * 2560 + o] - p.right[c * 7200 + s]) < 1e-5f);
                }
            }
        }
        assert_true(q.has_noc);
        /* still the right ground truth: as good as on the whole pair, far better than shifted */
        int n, n0, n1;
        double err = photo_error(&q, 0.0f, &n), err0 = photo_error(&p, 0.0f, &n0);
        double shifted = photo_error(&q, 0.5f, &n1);
        if (!(err < 1.5 * err0 + 1e-3 && err < 0.5 * shifted && n > 200))
            fail_msg("cropped pair: mean error %.4f over %d pixels (shifted by 0.5 px %.4f), "
                     "whole pair %.4f",
                     err, n, shifted, err0);
    }
    stereo_pair_free(&q);
    stereo_pair_free(&p);
}

static void test_augment_jitter(void **state)
{
    (void)state;
    stereo_pair p, q;
    manta_err e;
    synth(&p, 64, 32, 16, 9, 0, false);
    memcpy(p.right, p.left, sizeof(float) * 3 * 64 * 32); /* identical views */
    TU_OK_ERR(stereo_pair_alloc(&q, 32, 64, &e));
    stereo_aug_params a;
    stereo_aug_params_default(&a, 32, 64);
    manta_rng r;
    manta_rng_seed(&r, 5, 0);
    a.per_view = false;
    TU_OK_ERR(stereo_aug_apply(&a, &p, &r, &q, &e));
    assert_memory_equal(q.left, q.right, sizeof(float) * 3 * 64 * 32);
    a.per_view = true;
    TU_OK_ERR(stereo_aug_apply(&a, &p, &r, &q, &e));
    double diff = 0;
    for (int k = 0; k < 3 * 64 * 32; k++) {
        assert_true(q.left[k] >= 0.0f && q.left[k] <= 1.0f);
        diff += fabsf(q.left[k] - q.right[k]);
    }
    assert_true(diff / (3 * 64 * 32) > 1e-3);
    /* bad parameters draw nothing */
    manta_rng before = r;
    a.crop_w = 65;
    assert_int_equal(stereo_aug_apply(&a, &p, &r, &q, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "crop 65x32 does not fit in the 64x32 pair"));
    a.crop_w = 32;
    assert_int_equal(stereo_aug_apply(&a, &p, &r, &q, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "output pair is 64x32"));
    a.crop_w = 64;
    a.brightness = 1.5f;
    assert_int_equal(stereo_aug_apply(&a, &p, &r, &q, &e), MANTA_ERR_INVALID_ARG);
    assert_true(r.state == before.state);
    stereo_pair_free(&q);
    stereo_pair_free(&p);
}

/* ---- photographs ------------------------------------------------------------------ */

/* Write @p px ((h, w, 3) bytes) as a JPEG (quality 95, 4:4:4) to @p path. */
static void write_jpeg(const char *path, const uint8_t *px, int w, int h)
{
    tjhandle tj = tjInitCompress();
    assert_non_null(tj);
    unsigned char *buf = NULL;
    unsigned long size = 0;
    if (tjCompress2(tj, px, w, 0, h, TJPF_RGB, &buf, &size, TJSAMP_444, 95, TJFLAG_ACCURATEDCT))
        fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, size, f), size);
    fclose(f);
    tjFree(buf);
    tjDestroy(tj);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A "photograph" of w x h: smooth colour waves (periods of 7 to 40 px) seeded by @p k,
 * detailed enough that a crop's place and scale show, smooth enough to interpolate. */
static uint8_t *fake_photo(int w, int h, int k)
{
    uint8_t *px = malloc((size_t)w * h * 3);
    assert_non_null(px);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                float v = 0.5f + 0.22f * sinf(0.31f * x / (1 + c + k % 3) + 0.17f * y + k) +
                          0.2f * cosf(0.09f * (x + 2 * y) * (1 + 0.3f * c) - 0.7f * k);
                px[((size_t)y * w + x) * 3 + c] = (uint8_t)lroundf(255.0f * clampf_t(v));
            }
    return px;
}

/* A bank of @p n photographs of w x h (fake_photo()) made in memory. */
static void fake_bank(photo_bank *b, int n, int w, int h)
{
    b->count = n;
    b->photos = calloc((size_t)n, sizeof *b->photos);
    b->names = calloc((size_t)n, sizeof *b->names);
    assert_true(b->photos && b->names);
    for (int i = 0; i < n; i++) {
        b->photos[i] = (photo){.width = w, .height = h, .rgb = fake_photo(w, h, i)};
        char name[32];
        snprintf(name, sizeof name, "p%d.png", i);
        b->names[i] = strdup(name);
    }
}

static void test_photo_bank_load(void **state)
{
    (void)state;
    tu_tmpdir t;
    assert_int_equal(tu_tmpdir_make(&t, "photos"), 0);
    char path[512];
    manta_err e;
    uint8_t *a = fake_photo(50, 40, 1), *b = fake_photo(40, 30, 2), *c = fake_photo(30, 20, 3);
    write_jpeg(tu_tmpdir_path(&t, "a.jpg", path, sizeof path), a, 50, 40);
    TU_OK_ERR(mpng_write_rgb8(tu_tmpdir_path(&t, "b.png", path, sizeof path), b, 30, 40, &e));
    TU_OK_ERR(mpng_write_rgb8(tu_tmpdir_path(&t, "c.PNG", path, sizeof path), c, 20, 30, &e));
    write_text(tu_tmpdir_path(&t, "d.jpeg", path, sizeof path), "not a JPEG at all");
    write_text(tu_tmpdir_path(&t, "notes.txt", path, sizeof path), "ignored");
    photo_bank bank;
    photo_bank_report rep;
    TU_OK_ERR(photo_bank_load(t.path, NULL, &bank, &rep, &e));
    assert_int_equal(bank.count, 3); /* in name order; the damaged file skipped and counted */
    assert_string_equal(bank.names[0], "a.jpg");
    assert_string_equal(bank.names[1], "b.png");
    assert_string_equal(bank.names[2], "c.PNG");
    assert_int_equal(rep.files, 4);
    assert_int_equal(rep.failed, 1);
    assert_non_null(strstr(rep.first_failure, "d.jpeg"));
    assert_int_equal(bank.photos[0].width, 50);
    assert_int_equal(bank.photos[0].height, 40);
    assert_int_equal(bank.photos[1].width, 40);
    assert_int_equal(bank.photos[2].height, 20);
    assert_memory_equal(bank.photos[1].rgb, b, 40 * 30 * 3); /* PNG: exact */
    int worst = 0;                                           /* JPEG: close */
    for (int i = 0; i < 50 * 40 * 3; i++) {
        const int diff = abs((int)bank.photos[0].rgb[i] - a[i]);
        worst = diff > worst ? diff : worst;
    }
    assert_true(worst <= 12);
    photo_bank_free(&bank);
    assert_int_equal(bank.count, 0);

    /* the caller's smallest size: smaller photographs skipped; none left: one line */
    photo_bank_opts o;
    photo_bank_opts_default(&o);
    o.min_width = 45, o.min_height = 35;
    TU_OK_ERR(photo_bank_load(t.path, &o, &bank, &rep, &e));
    assert_int_equal(bank.count, 1);
    assert_int_equal(rep.too_small, 2);
    photo_bank_free(&bank);
    o.min_width = 60, o.min_height = 50;
    assert_int_equal(photo_bank_load(t.path, &o, &bank, &rep, &e), MANTA_ERR_FORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s: no photograph of at least 60x50 px (the largest is 50x40)",
             t.path);
    assert_string_equal(e.msg, want);
    assert_null(bank.photos);

    /* large photographs shrunk to the bound, never below the smallest size asked */
    uint8_t *big = fake_photo(200, 100, 4);
    TU_OK_ERR(mpng_write_rgb8(tu_tmpdir_path(&t, "e.png", path, sizeof path), big, 100, 200, &e));
    photo_bank_opts_default(&o);
    o.max_short_side = 40;
    TU_OK_ERR(photo_bank_load(t.path, &o, &bank, NULL, &e));
    assert_int_equal(bank.count, 4);
    assert_int_equal(bank.photos[3].width, 80);
    assert_int_equal(bank.photos[3].height, 40);
    const uint8_t *px = bank.photos[3].rgb; /* an average of the 2 x 2 pixels it covers */
    int avg = (big[0] + big[3] + big[600] + big[603] + 2) / 4;
    assert_true(abs((int)px[0] - avg) <= 4);
    photo_bank_free(&bank);
    o.min_width = 120, o.min_height = 50;
    TU_OK_ERR(photo_bank_load(t.path, &o, &bank, NULL, &e));
    assert_int_equal(bank.count, 1);
    assert_int_equal(bank.photos[0].width, 120);
    assert_int_equal(bank.photos[0].height, 60);
    photo_bank_free(&bank);
    free(a), free(b), free(c), free(big);

    /* a folder without a readable image; a folder that is not there */
    tu_tmpdir empty;
    assert_int_equal(tu_tmpdir_make(&empty, "nophotos"), 0);
    assert_int_equal(photo_bank_load(empty.path, NULL, &bank, NULL, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, empty.path));
    assert_non_null(strstr(e.msg, "no readable JPEG or PNG image"));
    write_text(tu_tmpdir_path(&empty, "x.png", path, sizeof path), "not a PNG");
    assert_int_equal(photo_bank_load(empty.path, NULL, &bank, &rep, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "1 failed; first: x.png"));
    assert_int_equal(
        photo_bank_load(tu_tmpdir_path(&empty, "gone", path, sizeof path), NULL, &bank, NULL, &e),
        MANTA_ERR_IO);
    assert_non_null(strstr(e.msg, "gone"));
    tu_tmpdir_remove(&empty);
    tu_tmpdir_remove(&t);
}

static void synth_photo(stereo_pair *p, const photo_bank *bank, float textured, float single,
                        uint64_t seed, uint64_t index, bool photometric)
{
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, 192, 96, 48, seed);
    o.photometric = photometric;
    o.photos = bank;
    o.share_textured = textured;
    o.share_single = single;
    manta_err e;
    TU_OK_ERR(stereo_pair_alloc(p, o.height, o.width, &e));
    TU_OK_ERR(stereo_synth_generate(&o, index, p, &e));
    assert_int_equal(stereo_synth_pair_mode(&o, index), single >= 1.0f ? STEREO_SYNTH_SINGLE
                                                        : textured >= 1.0f
                                                            ? STEREO_SYNTH_TEXTURED
                                                            : stereo_synth_pair_mode(&o, index));
}

/* FNV-1a of a pair's bytes. */
static uint64_t pair_hash(const stereo_pair *p)
{
    const size_t n = (size_t)p->width * p->height;
    const struct {
        const void *p;
        size_t n;
    } parts[4] = {{p->left, 12 * n}, {p->right, 12 * n}, {p->disp, 4 * n}, {p->mask, n}};
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < parts[k].n; i++) {
            h ^= ((const uint8_t *)parts[k].p)[i];
            h *= 0x100000001b3ULL;
        }
    return h;
}

/* Without photographs and without the scene shift, the generator's bytes are those of
 * before photographs existed (hashes of its output then; x86-64, whose float arithmetic and libm this build's
 * figures come from). With a bank, the procedural share of pairs are those pairs too, and
 * photo-textured pairs have their ground truth. */
static void test_synth_unchanged_without_photos(void **state)
{
    (void)state;
    static const uint64_t before[3][4] = {{0x81814d8a0212f661ULL, 0xd6192383cb703bfdULL,
                                           0xbf24b621d668db4eULL, 0x1808a81d119a43c2ULL},
                                          {0xe2b027349b44f7a7ULL, 0x5c0242eb0ddd018bULL,
                                           0x820d2c2ee6217a0fULL, 0xa9aae0bfde0efa8bULL},
                                          {0xf5f3e07ac25903faULL, 0xba071629ab53d194ULL,
                                           0x04ba248d7c524098ULL, 0x3d815255adb872c2ULL}};
    const int cfg[3][4] = {{128, 64, 32, 1}, {160, 72, 40, 0}, {96, 48, 24, 1}};
    photo_bank bank = {0};
    fake_bank(&bank, 2, 200, 120);
    int procedural_seen = 0;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 4; i++) {
            stereo_synth_opts o;
            stereo_synth_opts_default(&o, cfg[c][0], cfg[c][1], (float)cfg[c][2],
                                      (uint64_t)(7 + c));
            o.photometric = cfg[c][3];
            o.share_shifted = 0.0f; /* the pairs of before the scene shift existed */
            stereo_pair p, q;
            manta_err e;
            const uint64_t index = (uint64_t)i * 1000 + 3;
            TU_OK_ERR(stereo_pair_alloc(&p, o.height, o.width, &e));
            TU_OK_ERR(stereo_synth_generate(&o, index, &p, &e));
            assert_int_equal(stereo_synth_pair_mode(&o, index), STEREO_SYNTH_PROCEDURAL);
#if defined(__x86_64__)
            if (pair_hash(&p) != before[c][i])
                fail_msg("pair %d of set %d: hash %016llx, before photographs %016llx", i, c,
                         (unsigned long long)pair_hash(&p), (unsigned long long)before[c][i]);
#else
            (void)before;
#endif
            o.photos = &bank;
            TU_OK_ERR(stereo_pair_alloc(&q, o.height, o.width, &e));
            TU_OK_ERR(stereo_synth_generate(&o, index, &q, &e));
            const stereo_synth_mode mode = stereo_synth_pair_mode(&o, index);
            if (mode == STEREO_SYNTH_PROCEDURAL) {
                assert_true(same_pair(&p, &q));
                procedural_seen++;
            } else {
                assert_false(same_pair(&p, &q));
            }
            if (mode == STEREO_SYNTH_TEXTURED) { /* the same scene: the same ground truth */
                assert_memory_equal(p.disp, q.disp, sizeof(float) * o.width * o.height);
                assert_memory_equal(p.mask, q.mask, (size_t)o.width * o.height);
            }
            stereo_pair_free(&p), stereo_pair_free(&q);
        }
    print_message("synth: 12 pairs without photographs as before; %d of them procedural with "
                  "a bank too\n",
                  procedural_seen);
    photo_bank_free(&bank);
}

/* A shifted scene is the unshifted one brought nearer: the same left view (what each view
 * shows does not change), the disparity d' = delta + k d at every pixel (one delta >= 0 and
 * one k in (0, 1] per pair), never beyond max_disp; about half the pairs, and the right
 * view still matches the left at d' (test_synth_pairs checks that on the default sets). */
static void test_synth_shifted_scene(void **state)
{
    (void)state;
    const int W = 128, H = 64, n = 40;
    const float maxd = 32.0f;
    int shifted = 0;
    double mean0 = 0.0, mean1 = 0.0;
    for (int i = 0; i < n; i++) {
        stereo_synth_opts o;
        stereo_synth_opts_default(&o, W, H, maxd, 11);
        stereo_pair p, q;
        manta_err e;
        TU_OK_ERR(stereo_pair_alloc(&p, H, W, &e));
        TU_OK_ERR(stereo_pair_alloc(&q, H, W, &e));
        o.share_shifted = 0.0f;
        TU_OK_ERR(stereo_synth_generate(&o, (uint64_t)i, &p, &e));
        o.share_shifted = 1.0f;
        TU_OK_ERR(stereo_synth_generate(&o, (uint64_t)i, &q, &e));
        assert_memory_equal(p.left, q.left, sizeof(float) * 3 * W * H);
        /* fit d' = delta + k d over the pixels (least squares), then check every pixel */
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        const int px = W * H;
        for (int j = 0; j < px; j++) {
            sx += p.disp[j], sy += q.disp[j];
            sxx += (double)p.disp[j] * p.disp[j], sxy += (double)p.disp[j] * q.disp[j];
            assert_true(q.disp[j] >= p.disp[j] - 1e-4f && q.disp[j] <= maxd + 1e-4f);
        }
        double k = (px * sxy - sx * sy) / (px * sxx - sx * sx), delta = (sy - k * sx) / px;
        assert_true(k > 0.0 && k <= 1.0 + 1e-6 && delta >= -1e-4);
        for (int j = 0; j < px; j++)
            assert_true(fabs(q.disp[j] - (delta + k * p.disp[j])) < 1e-3);
        shifted += delta > 1e-3 || k < 1.0 - 1e-6;
        mean0 += sx / px / n, mean1 += sy / px / n;
        stereo_pair_free(&p), stereo_pair_free(&q);
    }
    /* the default share: about half of the pairs are shifted */
    int by_default = 0;
    for (int i = 0; i < 200; i++) {
        stereo_synth_opts o, z;
        stereo_synth_opts_default(&o, 32, 16, 8.0f, 3);
        z = o;
        z.share_shifted = 0.0f;
        stereo_pair p, q;
        manta_err e;
        TU_OK_ERR(stereo_pair_alloc(&p, 16, 32, &e));
        TU_OK_ERR(stereo_pair_alloc(&q, 16, 32, &e));
        TU_OK_ERR(stereo_synth_generate(&o, (uint64_t)i, &p, &e));
        TU_OK_ERR(stereo_synth_generate(&z, (uint64_t)i, &q, &e));
        by_default += memcmp(p.disp, q.disp, sizeof(float) * 16 * 32) != 0;
        stereo_pair_free(&p), stereo_pair_free(&q);
    }
    print_message("synth: %d of %d scenes shifted (share 1), mean disparity %.2f -> %.2f px; "
                  "%d of 200 by default\n",
                  shifted, n, mean0, mean1, by_default);
    assert_true(shifted >= n * 3 / 4);
    assert_true(mean1 > mean0 + 0.1 * maxd);
    assert_true(by_default > 70 && by_default < 130);
}

static void test_synth_photo_modes(void **state)
{
    (void)state;
    photo_bank bank = {0};
    fake_bank(&bank, 3, 320, 200);
    /* deterministic by (seed, index), whatever was made before */
    for (int m = 0; m < 2; m++) {
        const float tx = m == 0 ? 1.0f : 0.0f, sg = m == 0 ? 0.0f : 1.0f;
        stereo_pair a, b, c, d;
        synth_photo(&a, &bank, tx, sg, 42, 3, true);
        synth_photo(&b, &bank, tx, sg, 42, 7, true);
        stereo_pair_free(&b);
        synth_photo(&b, &bank, tx, sg, 42, 3, true);
        assert_true(same_pair(&a, &b));
        synth_photo(&c, &bank, tx, sg, 42, 4, true);
        assert_false(same_pair(&a, &c));
        synth_photo(&d, &bank, tx, sg, 43, 3, true);
        assert_false(same_pair(&a, &d));
        stereo_pair_free(&a), stereo_pair_free(&b), stereo_pair_free(&c), stereo_pair_free(&d);
    }
    /* the default shares: about a third each */
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, 64, 32, 8, 5);
    o.photos = &bank;
    int count[3] = {0, 0, 0};
    for (uint64_t i = 0; i < 600; i++)
        count[stereo_synth_pair_mode(&o, i)]++;
    print_message("synth: of 600 pairs %d procedural, %d photo-textured, %d single-photograph\n",
                  count[0], count[1], count[2]);
    for (int k = 0; k < 3; k++)
        assert_true(count[k] > 150 && count[k] < 250);
    o.share_textured = 0.7f, o.share_single = 0.4f; /* more than all of them */
    stereo_pair p;
    manta_err e;
    TU_OK_ERR(stereo_pair_alloc(&p, 32, 64, &e));
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "share"));
    stereo_synth_opts_default(&o, 64, 32, 8, 5);
    photo_bank none = {0};
    o.photos = &none;
    assert_int_equal(stereo_synth_generate(&o, 0, &p, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "empty"));
    stereo_pair_free(&p);
    photo_bank_free(&bank);
}

/* The ground truth of photographic pairs, as test_synth_right_view_matches_disparity()
 * checks procedural ones: right(x - d) = left(x) on non-occluded pixels up to the
 * interpolation of the texture, exactly at integer disparities. */
static void test_synth_photo_right_view_matches_disparity(void **state)
{
    (void)state;
    photo_bank bank = {0};
    fake_bank(&bank, 3, 320, 200);
    for (int m = 0; m < 2; m++) {
        const float tx = m == 0 ? 1.0f : 0.0f, sg = m == 0 ? 0.0f : 1.0f;
        double e0 = 0, e_one = 0, worst_int = 0;
        int n = 0, n_int = 0;
        for (int i = 0; i < 6; i++) {
            stereo_pair p;
            int c0, c1;
            synth_photo(&p, &bank, tx, sg, 11, (uint64_t)i, false);
            assert_true(p.has_noc);
            for (size_t k = 0; k < 3 * (size_t)p.width * p.height; k++)
                assert_true(p.left[k] >= 0.0f && p.left[k] <= 1.0f && p.right[k] >= 0.0f &&
                            p.right[k] <= 1.0f);
            e0 += photo_error(&p, 0.0f, &c0);
            e_one += photo_error(&p, 1.0f, &c1);
            n += c0;
            worst_int = fmax(worst_int, integer_disparity_error(&p, &n_int));
            stereo_pair_free(&p);
        }
        e0 /= 6, e_one /= 6;
        print_message("synth, %s: mean |R(x-d) - L(x)| %.4f over %d interior pixels, shifted by "
                      "1 px %.4f; at %d integer disparities worst %.4f\n",
                      m == 0 ? "photo-textured" : "single photograph", e0, n, e_one, n_int,
                      worst_int);
        assert_true(n > 5000);
        assert_true(e0 < 0.01);
        assert_true(e_one > 3.0 * e0);
        assert_true(n_int > 30);
        assert_true(worst_int < 0.02);
    }
    photo_bank_free(&bank);
}

/* Pixels x-2..x+2 of row y on one disparity plane (interior() also takes two surfaces
 * that meet at nearly the same disparity, where either may show at the match). */
static int planar(const stereo_pair *p, int x, int y)
{
    const float *d = p->disp + (size_t)y * p->width;
    const float g = 0.5f * (d[x + 1] - d[x - 1]);
    for (int k = -2; k <= 2; k++)
        if (fabsf(d[x + k] - d[x] - (float)k * g) > 1e-3f)
            return 0;
    return 1;
}

/* Single photographs with two flat photographs: the left view is one of them everywhere;
 * the right view shows the other only where the left view does not see the surface
 * (disocclusions), never at a non-occluded pixel's match. */
static void test_synth_single_photo_fills_holes(void **state)
{
    (void)state;
    photo_bank bank = {0};
    fake_bank(&bank, 2, 300, 150);
    const uint8_t colour[2][3] = {{230, 20, 20}, {20, 200, 40}};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 300 * 150; i++)
            memcpy(bank.photos[k].rgb + 3 * i, colour[k], 3);
    long other_right = 0, right_px = 0, noc_checked = 0;
    for (int i = 0; i < 6; i++) {
        stereo_pair p;
        synth_photo(&p, &bank, 0.0f, 1.0f, 17, (uint64_t)i, false);
        const size_t plane = (size_t)p.width * p.height;
        const int a = fabsf(p.left[0] - colour[0][0] / 255.0f) < 1e-6f ? 0 : 1;
        for (size_t q = 0; q < plane; q++)
            for (int c = 0; c < 3; c++)
                assert_true(fabsf(p.left[c * plane + q] - colour[a][c] / 255.0f) < 1e-6f);
        for (size_t q = 0; q < plane; q++) {
            other_right += fabsf(p.right[q] - colour[a][0] / 255.0f) > 1e-3f;
            right_px++;
        }
        for (int y = 0; y < p.height; y++)
            for (int x = 0; x < p.width; x++) {
                if (!interior(&p, x, y) || !planar(&p, x, y))
                    continue;
                float xr = (float)x - p.disp[(size_t)y * p.width + x];
                for (int c = 0; c < 3; c++)
                    assert_true(fabsf(sample_row(p.right, p.height, p.width, c, y, xr) -
                                      colour[a][c] / 255.0f) < 1e-4f);
                noc_checked++;
            }
        stereo_pair_free(&p);
    }
    print_message("synth, single photograph: %.1f%% of right-view pixels from the other "
                  "photograph; %ld non-occluded matches all the left's\n",
                  100.0 * other_right / right_px, noc_checked);
    assert_true(other_right > 0.01 * right_px && other_right < 0.4 * right_px);
    assert_true(noc_checked > 10000);
    photo_bank_free(&bank);
}

/* Single photographs: the layers follow the photograph's regions, so a colour edge of the
 * left view is a depth edge (stripes of three flat colours, 60 px wide). */
static void test_synth_single_photo_depth_edges(void **state)
{
    (void)state;
    photo_bank bank = {0};
    fake_bank(&bank, 1, 360, 150);
    const uint8_t colour[3][3] = {{230, 20, 20}, {20, 60, 220}, {240, 230, 40}};
    for (int y = 0; y < 150; y++)
        for (int x = 0; x < 360; x++)
            memcpy(bank.photos[0].rgb + 3 * ((size_t)y * 360 + x), colour[(x / 60) % 3], 3);
    long edges = 0, depth_edges = 0;
    for (int i = 0; i < 8; i++) {
        stereo_pair p;
        synth_photo(&p, &bank, 0.0f, 1.0f, 23, (uint64_t)i, false);
        const size_t plane = (size_t)p.width * p.height;
        for (int y = 0; y < p.height; y++)
            for (int x = 2; x < p.width - 3; x++) {
                const size_t at = (size_t)y * p.width + x;
                float jump = 0.0f;
                for (int c = 0; c < 3; c++)
                    jump = fmaxf(jump, fabsf(p.left[c * plane + at + 1] - p.left[c * plane + at]));
                if (jump < 0.3f)
                    continue;
                edges++;
                depth_edges += fabsf(p.disp[at + 2] - p.disp[at - 1]) > 0.05f;
            }
        stereo_pair_free(&p);
    }
    print_message("synth, single photograph: %ld of %ld colour edges are depth edges\n",
                  depth_edges, edges);
    assert_true(edges > 500);
    assert_true(depth_edges > 0.9 * edges);
    photo_bank_free(&bank);
}

static void test_tone(void **state)
{
    (void)state;
    stereo_gamma g;
    const float gammas[] = {0.67f, 0.82f, 1.0f, 1.22f, 1.5f};
    for (size_t k = 0; k < sizeof gammas / sizeof gammas[0]; k++) {
        stereo_gamma_init(&g, gammas[k]);
        for (int i = 0; i <= 1000; i++) {
            float x = i / 1000.0f, want = powf(x, gammas[k]);
            float got = stereo_gamma_apply(&g, x);
            assert_true(fabsf(got - want) < (x >= 0.05f ? 1e-4f : 4e-3f));
        }
    }
    float v[4] = {-1.0f, 0.25f, 0.5f, 2.0f};
    stereo_gamma_init(&g, 1.0f);
    stereo_tone(v, 4, 2.0f, -0.25f, &g);
    assert_true(v[0] == 0.0f && fabsf(v[1] - 0.25f) < 1e-6f && fabsf(v[2] - 0.75f) < 1e-6f &&
                v[3] == 1.0f);
}

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(&root, "stereo");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_synth_deterministic),
        cmocka_unit_test(test_synth_ranges),
        cmocka_unit_test(test_synth_right_view_matches_disparity),
        cmocka_unit_test(test_synth_occlusion_mask),
        cmocka_unit_test(test_synth_bad_options),
        cmocka_unit_test(test_photo_bank_load),
        cmocka_unit_test(test_synth_unchanged_without_photos),
        cmocka_unit_test(test_synth_shifted_scene),
        cmocka_unit_test(test_synth_photo_modes),
        cmocka_unit_test(test_synth_photo_right_view_matches_disparity),
        cmocka_unit_test(test_synth_single_photo_fills_holes),
        cmocka_unit_test(test_synth_single_photo_depth_edges),
        cmocka_unit_test(test_tone),
        cmocka_unit_test(test_png_round_trips),
        cmocka_unit_test(test_png_errors),
        cmocka_unit_test(test_pfm_round_trips),
        cmocka_unit_test(test_pfm_errors),
        cmocka_unit_test(test_kitti_write_and_load),
        cmocka_unit_test(test_middlebury_load),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_augment_crop_flip),
        cmocka_unit_test(test_augment_jitter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
