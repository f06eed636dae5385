/* JPEG folders: class subfolders the tests write with TurboJPEG, gray and
 * RGB, file names in any case, corrupt files skipped and counted (and the
 * load failing past 1%), and the folder errors. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>
#include <unistd.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "data/jpeg_folder.h"

static char root[] = "/tmp/manta-jpeg-XXXXXX";

/* ---- helpers ---------------------------------------------------------- */

/* A fresh, empty folder root/<name>; returns its path in buf. */
static const char *fresh(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", root, name);
    manta_file_remove_tree(buf);
    assert_int_equal(mkdir(buf, 0700), 0);
    return buf;
}

static void mkdir_in(const char *dir, const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(mkdir(p, 0700), 0);
}

static void write_bytes(const char *dir, const char *name, const void *data, size_t n)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Encode a w x h image (gray: 1 channel, else RGB) and write it. */
static void write_jpeg(const char *dir, const char *name, const unsigned char *px, int w, int h,
                       int channels)
{
    tjhandle tj = tjInitCompress();
    assert_non_null(tj);
    unsigned char *buf = NULL;
    unsigned long size = 0;
    int rc = tjCompress2(tj, px, w, 0, h, channels == 1 ? TJPF_GRAY : TJPF_RGB, &buf, &size,
                         channels == 1 ? TJSAMP_GRAY : TJSAMP_444, 95, TJFLAG_ACCURATEDCT);
    if (rc != 0)
        fail_msg("tjCompress2: %s", tjGetErrorStr2(tj));
    write_bytes(dir, name, buf, size);
    tjFree(buf);
    tjDestroy(tj);
}

/* A flat image of one colour (channels values of rgb). */
static void write_flat(const char *dir, const char *name, int w, int h, int channels,
                       const unsigned char *rgb)
{
    unsigned char *px = malloc((size_t)w * h * channels);
    assert_non_null(px);
    for (int i = 0; i < w * h; i++)
        for (int c = 0; c < channels; c++)
            px[i * channels + c] = rgb[c];
    write_jpeg(dir, name, px, w, h, channels);
    free(px);
}

static const unsigned char colour[3][3] = {{200, 40, 90}, {30, 180, 60}, {70, 90, 220}};

/* Check every pixel of image i is within tol of v (channels values). */
static void expect_flat(const dataset *d, int i, const unsigned char *v, int tol)
{
    const uint8_t *p = dataset_image(d, i);
    int n = d->height[i] * d->width[i];
    for (int q = 0; q < n; q++)
        for (int c = 0; c < d->channels; c++)
            if (abs((int)p[q * d->channels + c] - (int)v[c]) > tol)
                fail_msg("image %d pixel %d channel %d is %d, expected %d", i, q, c,
                         p[q * d->channels + c], v[c]);
}

/* root/name with classes "cat", "ant", "dog" (sorted: ant, cat, dog), per class
 * `per` flat RGB images of 40x30 in the class colour (ant 0, cat 1, dog 2). */
static const char *make_three_classes(char *buf, size_t cap, const char *name, int per)
{
    const char *dir = fresh(buf, cap, name);
    const char *cls[3] = {"ant", "cat", "dog"};
    for (int k = 2; k >= 0; k--) {
        mkdir_in(dir, cls[k]);
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", dir, cls[k]);
        for (int i = 0; i < per; i++) {
            char f[64];
            snprintf(f, sizeof f, "img%03d.jpg", i);
            write_flat(sub, f, 40, 30, 3, colour[k]);
        }
    }
    return dir;
}

static jpeg_folder_opts opts_for(int channels, int stored)
{
    jpeg_folder_opts o;
    jpeg_folder_opts_default(&o);
    o.channels = channels;
    o.stored_size = stored;
    return o;
}

/* ---- tests -------------------------------------------------------------- */

static void test_rgb_classes_sorted_and_resized(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = make_three_classes(buf, sizeof buf, "rgb", 3);
    /* noise the loader must ignore: a text file, a hidden folder, a root file */
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/cat", dir);
    write_bytes(sub, "notes.txt", "x", 1);
    mkdir_in(dir, ".cache");
    write_bytes(dir, "README", "x", 1);

    jpeg_folder_opts o = opts_for(3, 24);
    jpeg_folder_report rep;
    dataset d;
    manta_err e;
    manta_err_clear(&e);
    if (jpeg_folder_load(dir, &o, &d, &rep, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(d.count, 9);
    assert_int_equal(d.channels, 3);
    assert_int_equal(d.classes, 3);
    assert_string_equal(d.class_names[0], "ant");
    assert_string_equal(d.class_names[1], "cat");
    assert_string_equal(d.class_names[2], "dog");
    assert_int_equal(rep.files, 9);
    assert_int_equal(rep.loaded, 9);
    assert_int_equal(rep.failed, 0);
    assert_int_equal(rep.ignored, 1);
    assert_int_equal(d.stored_size, 24);
    for (int i = 0; i < 9; i++) {
        assert_int_equal(d.labels[i], i / 3);
        assert_int_equal(d.height[i], 24); /* 30 -> 24 */
        assert_int_equal(d.width[i], 32);  /* 40 * 24 / 30 */
        expect_flat(&d, i, colour[i / 3], 4);
    }
    data_set_free(&d);
}

static void test_gray_and_rgb_to_gray(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = fresh(buf, sizeof buf, "gray");
    mkdir_in(dir, "a");
    mkdir_in(dir, "b");
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/a", dir);
    const unsigned char g[1] = {77};
    write_flat(sub, "x.jpg", 36, 36, 1, g); /* gray JPEG */
    snprintf(sub, sizeof sub, "%s/b", dir);
    write_flat(sub, "y.jpg", 36, 36, 3, colour[1]); /* RGB JPEG, loaded as gray */

    jpeg_folder_opts o = opts_for(1, 36);
    dataset d;
    manta_err e;
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), MANTA_OK);
    assert_int_equal(d.count, 2);
    assert_int_equal(d.channels, 1);
    assert_int_equal(d.height[0], 36);
    assert_int_equal(d.width[0], 36);
    expect_flat(&d, 0, g, 2);
    const unsigned char y[1] = {(unsigned char)(0.299 * 30 + 0.587 * 180 + 0.114 * 60 + 0.5)};
    expect_flat(&d, 1, y, 4);
    data_set_free(&d);

    /* the gray file as RGB: three equal channels */
    o = opts_for(3, 36);
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), MANTA_OK);
    const unsigned char g3[3] = {77, 77, 77};
    expect_flat(&d, 0, g3, 2);
    data_set_free(&d);
}

static void test_extension_case_and_order(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = fresh(buf, sizeof buf, "case");
    mkdir_in(dir, "c");
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/c", dir);
    const char *names[] = {"b.JPG", "a.Jpeg", "c.jpeg", "d.JPEG", "e.png", "jpg"};
    for (int i = 0; i < 6; i++) {
        unsigned char v[3] = {(unsigned char)(20 + 40 * i), 0, 0};
        write_flat(sub, names[i], 8, 8, 3, v);
    }
    jpeg_folder_report rep;
    dataset d;
    manta_err e;
    jpeg_folder_opts o = opts_for(3, 0); /* keep sizes */
    assert_int_equal(jpeg_folder_load(dir, &o, &d, &rep, &e), MANTA_OK);
    assert_int_equal(d.count, 4);
    assert_int_equal(rep.ignored, 2);
    /* sorted names: a.Jpeg (1), b.JPG (0), c.jpeg (2), d.JPEG (3) */
    const int want[4] = {1, 0, 2, 3};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(d.height[i], 8);
        assert_true(abs((int)dataset_image(&d, i)[0] - (20 + 40 * want[i])) <= 4);
    }
    data_set_free(&d);
}

static void test_large_image_dct_scaling(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = fresh(buf, sizeof buf, "large");
    mkdir_in(dir, "k");
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/k", dir);
    /* 320 x 240 gradient: decoded at 1/4 (80 x 60), then resized to 48 x 36 */
    int w = 320, h = 240;
    unsigned char *px = malloc((size_t)w * h * 3);
    assert_non_null(px);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            px[(y * w + x) * 3 + 0] = (unsigned char)(x * 255 / (w - 1));
            px[(y * w + x) * 3 + 1] = (unsigned char)(y * 255 / (h - 1));
            px[(y * w + x) * 3 + 2] = 128;
        }
    write_jpeg(sub, "big.jpg", px, w, h, 3);
    free(px);
    dataset d;
    manta_err e;
    jpeg_folder_opts o = opts_for(3, 36);
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), MANTA_OK);
    assert_int_equal(d.height[0], 36);
    assert_int_equal(d.width[0], 48);
    const uint8_t *p = dataset_image(&d, 0);
    /* The gradient survives: left dark red, right bright red, blue flat. */
    assert_true(p[(18 * 48 + 0) * 3] < 20);
    assert_true(p[(18 * 48 + 47) * 3] > 235);
    assert_true(abs((int)p[(18 * 48 + 24) * 3] - 130) < 12);
    assert_true(abs((int)p[(18 * 48 + 24) * 3 + 2] - 128) < 4);
    data_set_free(&d);
    /* stored size 0 keeps the full decode */
    o.stored_size = 0;
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), MANTA_OK);
    assert_int_equal(d.height[0], 240);
    assert_int_equal(d.width[0], 320);
    assert_int_equal(d.stored_size, 240);
    data_set_free(&d);
}

static void test_corrupt_file_skipped_and_counted(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = make_three_classes(buf, sizeof buf, "corrupt1", 40); /* 120 files */
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/cat", dir);
    write_bytes(sub, "img007.jpg", "this is not a jpeg at all", 25);
    jpeg_folder_report rep;
    dataset d;
    manta_err e;
    jpeg_folder_opts o = opts_for(3, 20);
    if (jpeg_folder_load(dir, &o, &d, &rep, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(rep.files, 120);
    assert_int_equal(rep.failed, 1);
    assert_int_equal(rep.loaded, 119);
    assert_int_equal(rep.reported, 1);
    assert_non_null(strstr(rep.failures[0], "cat/img007.jpg"));
    assert_int_equal(d.count, 119);
    int per[3] = {0, 0, 0};
    for (int i = 0; i < d.count; i++)
        per[d.labels[i]]++;
    assert_int_equal(per[0], 40);
    assert_int_equal(per[1], 39);
    assert_int_equal(per[2], 40);
    data_set_free(&d);
}

static void test_too_many_corrupt_fails(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = make_three_classes(buf, sizeof buf, "corrupt2", 40);
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/ant", dir);
    write_bytes(sub, "img003.jpg", "", 0); /* empty */
    snprintf(sub, sizeof sub, "%s/dog", dir);
    /* a JPEG cut after its header: SOI and garbage */
    const unsigned char half[] = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0};
    write_bytes(sub, "img011.jpg", half, sizeof half);
    jpeg_folder_report rep;
    dataset d;
    manta_err e;
    manta_err_clear(&e);
    jpeg_folder_opts o = opts_for(3, 20);
    assert_int_equal(jpeg_folder_load(dir, &o, &d, &rep, &e), MANTA_ERR_FORMAT);
    assert_null(d.pixels);
    assert_int_equal(rep.failed, 2);
    assert_int_equal(rep.reported, 2);
    assert_non_null(strstr(e.msg, "2 of 120"));
    assert_non_null(strstr(e.msg, "ant/img003.jpg"));
    assert_non_null(strstr(rep.failures[0], "empty file"));
    assert_non_null(strstr(rep.failures[1], "dog/img011.jpg"));
    /* a looser limit accepts them */
    o.max_fail_fraction = 0.05;
    assert_int_equal(jpeg_folder_load(dir, &o, &d, &rep, &e), MANTA_OK);
    assert_int_equal(d.count, 118);
    data_set_free(&d);
}

static void test_truncated_file_warned_or_failed(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = make_three_classes(buf, sizeof buf, "trunc", 2);
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/dog", dir);
    /* a noisy 64x64 JPEG cut to 60%: libjpeg warns (premature end) and fills gray */
    unsigned char *px = malloc(64 * 64 * 3);
    assert_non_null(px);
    for (int q = 0; q < 64 * 64 * 3; q++)
        px[q] = (unsigned char)(q * 97 + (q >> 5));
    tjhandle tj = tjInitCompress();
    unsigned char *jpg = NULL;
    unsigned long size = 0;
    assert_int_equal(tjCompress2(tj, px, 64, 0, 64, TJPF_RGB, &jpg, &size, TJSAMP_444, 90, 0), 0);
    write_bytes(sub, "cut.jpg", jpg, size * 6 / 10);
    tjFree(jpg);
    tjDestroy(tj);
    free(px);
    jpeg_folder_report rep;
    dataset d;
    manta_err e;
    jpeg_folder_opts o = opts_for(3, 16);
    o.max_fail_fraction = 0.5;
    assert_int_equal(jpeg_folder_load(dir, &o, &d, &rep, &e), MANTA_OK);
    assert_int_equal(rep.files, 7);
    assert_int_equal(rep.warned, 1);
    assert_int_equal(rep.failed, 0);
    assert_int_equal(d.count, 7);
    data_set_free(&d);
    o.fail_on_warning = true;
    assert_int_equal(jpeg_folder_load(dir, &o, &d, &rep, &e), MANTA_OK);
    assert_int_equal(rep.warned, 0);
    assert_int_equal(rep.failed, 1);
    assert_int_equal(d.count, 6);
    assert_non_null(strstr(rep.failures[0], "dog/cut.jpg: cannot decode"));
    data_set_free(&d);
}

static void expect_load_error(const char *dir, manta_status want, const char *needle)
{
    dataset d;
    manta_err e;
    manta_err_clear(&e);
    jpeg_folder_opts o = opts_for(3, 36);
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), want);
    assert_null(d.pixels);
    if (!strstr(e.msg, needle))
        fail_msg("message '%s' lacks '%s'", e.msg, needle);
}

static void test_missing_and_not_a_folder(void **state)
{
    (void)state;
    char p[1024];
    snprintf(p, sizeof p, "%s/does-not-exist", root);
    expect_load_error(p, MANTA_ERR_IO, "does-not-exist: cannot open");
    char buf[512];
    const char *dir = fresh(buf, sizeof buf, "plainfile");
    write_bytes(dir, "f.jpg", "x", 1);
    snprintf(p, sizeof p, "%s/f.jpg", dir);
    expect_load_error(p, MANTA_ERR_IO, "not a folder");
}

static void test_no_class_subfolders(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = fresh(buf, sizeof buf, "flat");
    const unsigned char v[3] = {1, 2, 3};
    write_flat(dir, "a.jpg", 8, 8, 3, v); /* images directly in root: no classes */
    expect_load_error(dir, MANTA_ERR_FORMAT, "no class subfolders");
}

static void test_empty_class_folder(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = make_three_classes(buf, sizeof buf, "emptycls", 2);
    mkdir_in(dir, "empty");
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/empty", dir);
    write_bytes(sub, "a.txt", "x", 1);
    expect_load_error(dir, MANTA_ERR_FORMAT, "empty: class folder holds no .jpg or .jpeg files");
}

static void test_threads_give_same_dataset(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = fresh(buf, sizeof buf, "threads");
    for (int k = 0; k < 2; k++) {
        char cls[8], sub[1024];
        snprintf(cls, sizeof cls, "c%d", k);
        mkdir_in(dir, cls);
        snprintf(sub, sizeof sub, "%s/%s", dir, cls);
        for (int i = 0; i < 7; i++) {
            int w = 20 + 9 * i, h = 50 - 3 * i;
            unsigned char *px = malloc((size_t)w * h * 3);
            assert_non_null(px);
            for (int q = 0; q < w * h * 3; q++)
                px[q] = (unsigned char)(q * 31 + k * 7 + i);
            char f[32];
            snprintf(f, sizeof f, "%d.jpg", i);
            write_jpeg(sub, f, px, w, h, 3);
            free(px);
        }
    }
    dataset a, b;
    manta_err e;
    jpeg_folder_opts o = opts_for(3, 16);
    assert_int_equal(jpeg_folder_load(dir, &o, &a, NULL, &e), MANTA_OK);
    o.threads = 2;
    assert_int_equal(jpeg_folder_load(dir, &o, &b, NULL, &e), MANTA_OK);
    assert_int_equal(a.count, 14);
    assert_int_equal(b.count, 14);
    assert_int_equal(a.stored_size, 16);
    size_t bytes = a.offset[13] + (size_t)a.height[13] * a.width[13] * 3;
    for (int i = 0; i < 14; i++) {
        assert_int_equal(a.height[i], b.height[i]);
        assert_int_equal(a.width[i], b.width[i]);
        assert_int_equal(a.labels[i], b.labels[i]);
        assert_int_equal(a.offset[i], b.offset[i]);
        int s = a.height[i] < a.width[i] ? a.height[i] : a.width[i];
        assert_int_equal(s, 16);
    }
    assert_memory_equal(a.pixels, b.pixels, bytes);
    data_set_free(&a);
    data_set_free(&b);
}

static void test_match_classes(void **state)
{
    (void)state;
    char b1[512], b2[512];
    const char *train = make_three_classes(b1, sizeof b1, "mtrain", 1);
    const char *val = fresh(b2, sizeof b2, "mval");
    mkdir_in(val, "ant");
    mkdir_in(val, "cat");
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/ant", val);
    write_flat(sub, "a.jpg", 8, 8, 3, colour[0]);
    snprintf(sub, sizeof sub, "%s/cat", val);
    write_flat(sub, "a.jpg", 8, 8, 3, colour[1]);
    dataset tr, va;
    manta_err e;
    manta_err_clear(&e);
    jpeg_folder_opts o = opts_for(3, 8);
    assert_int_equal(jpeg_folder_load(train, &o, &tr, NULL, &e), MANTA_OK);
    o.match_classes = &tr;
    assert_int_equal(jpeg_folder_load(val, &o, &va, NULL, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "expected 'dog'"));
    mkdir_in(val, "dog");
    snprintf(sub, sizeof sub, "%s/dog", val);
    write_flat(sub, "a.jpg", 8, 8, 3, colour[2]);
    assert_int_equal(jpeg_folder_load(val, &o, &va, NULL, &e), MANTA_OK);
    assert_int_equal(va.count, 3);
    data_set_free(&va);
    data_set_free(&tr);
}

static void test_bad_options(void **state)
{
    (void)state;
    char buf[512];
    const char *dir = make_three_classes(buf, sizeof buf, "opts", 1);
    dataset d;
    manta_err e;
    jpeg_folder_opts o = opts_for(2, 36);
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "channels"));
    o = opts_for(3, -1);
    assert_int_equal(jpeg_folder_load(dir, &o, &d, NULL, &e), MANTA_ERR_INVALID_ARG);
    /* NULL options: defaults (RGB, stored size 36) */
    assert_int_equal(jpeg_folder_load(dir, NULL, &d, NULL, &e), MANTA_OK);
    assert_int_equal(d.height[0], 36);
    assert_int_equal(d.width[0], 48);
    data_set_free(&d);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    manta_file_remove_tree(root);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rgb_classes_sorted_and_resized),
        cmocka_unit_test(test_gray_and_rgb_to_gray),
        cmocka_unit_test(test_extension_case_and_order),
        cmocka_unit_test(test_large_image_dct_scaling),
        cmocka_unit_test(test_corrupt_file_skipped_and_counted),
        cmocka_unit_test(test_too_many_corrupt_fails),
        cmocka_unit_test(test_truncated_file_warned_or_failed),
        cmocka_unit_test(test_missing_and_not_a_folder),
        cmocka_unit_test(test_no_class_subfolders),
        cmocka_unit_test(test_empty_class_folder),
        cmocka_unit_test(test_threads_give_same_dataset),
        cmocka_unit_test(test_match_classes),
        cmocka_unit_test(test_bad_options),
    };
    return cmocka_run_group_tests_name("jpeg folders", tests, setup, teardown);
}
