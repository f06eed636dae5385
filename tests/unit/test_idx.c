/* IDX files: the real Fashion-MNIST from Debian's package, and malformed
 * files, each rejected with a message naming the file and the problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "data/idx.h"

static char dir[] = "/tmp/manta-idx-XXXXXX";

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static void put_u32(unsigned char *b, unsigned v)
{
    b[0] = (unsigned char)(v >> 24), b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8), b[3] = (unsigned char)v;
}

/* Write an image file with n images of r x c (truncated by `cut` bytes) and a
 * label file with m labels; gz selects compression. */
static void write_pair(int n, int r, int c, int m, unsigned img_magic, size_t cut, int gz)
{
    char ip[256], lp[256];
    path_of(ip, sizeof ip, gz ? "img.gz" : "img");
    path_of(lp, sizeof lp, gz ? "lab.gz" : "lab");
    size_t isz = 16 + (size_t)n * r * c - cut, lsz = 8 + (size_t)m;
    unsigned char *ib = calloc(1, isz + cut), *lb = calloc(1, lsz);
    assert_true(ib && lb);
    put_u32(ib, img_magic), put_u32(ib + 4, (unsigned)n), put_u32(ib + 8, (unsigned)r);
    put_u32(ib + 12, (unsigned)c);
    for (size_t i = 16; i < isz; i++)
        ib[i] = (unsigned char)(i * 7);
    put_u32(lb, 0x801), put_u32(lb + 4, (unsigned)m);
    for (int i = 0; i < m; i++)
        lb[8 + i] = (unsigned char)(i % 3);
    gzFile fi = gzopen(ip, gz ? "wb" : "wbT"), fl = gzopen(lp, gz ? "wb" : "wbT");
    assert_true(fi && fl);
    assert_int_equal(gzwrite(fi, ib, (unsigned)isz), (int)isz);
    assert_int_equal(gzwrite(fl, lb, (unsigned)lsz), (int)lsz);
    gzclose(fi), gzclose(fl);
    free(ib), free(lb);
}

static manta_status load(int gz, idx_set *s, manta_err *e)
{
    char ip[256], lp[256];
    path_of(ip, sizeof ip, gz ? "img.gz" : "img");
    path_of(lp, sizeof lp, gz ? "lab.gz" : "lab");
    return data_idx_load(ip, lp, s, e);
}

static void test_fashion_mnist_loads(void **state)
{
    (void)state;
    idx_set tr, te;
    manta_err e;
    if (access(IDX_FASHION_MNIST_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0)
        skip(); /* dataset-fashion-mnist not installed */
    assert_int_equal(data_idx_load_split(IDX_FASHION_MNIST_DIR, "train", &tr, &e), MANTA_OK);
    assert_int_equal(data_idx_load_split(IDX_FASHION_MNIST_DIR, "t10k", &te, &e), MANTA_OK);
    assert_int_equal(tr.count, 60000);
    assert_int_equal(te.count, 10000);
    assert_int_equal(tr.rows, 28);
    assert_int_equal(tr.cols, 28);
    assert_int_equal(tr.classes, 10);
    int hist[10] = {0};
    for (int i = 0; i < te.count; i++)
        hist[te.labels[i]]++;
    for (int k = 0; k < 10; k++)
        assert_int_equal(hist[k], 1000); /* the test set is balanced */
    /* normalised batch: mean about 0 over many images */
    int idx[64];
    float img[64 * 784], lab[64];
    for (int i = 0; i < 64; i++)
        idx[i] = i * 937;
    data_idx_batch(&tr, idx, 64, IDX_FASHION_MEAN, IDX_FASHION_STD, img, lab);
    double m = 0;
    for (int i = 0; i < 64 * 784; i++)
        m += img[i];
    assert_true(fabs(m / (64 * 784)) < 0.3);
    assert_true(lab[1] == tr.labels[937]);
    data_idx_free(&tr), data_idx_free(&te);
}

static void test_plain_and_gzip_files(void **state)
{
    (void)state;
    for (int gz = 0; gz < 2; gz++) {
        write_pair(5, 3, 4, 5, 0x803, 0, gz);
        idx_set s;
        manta_err e;
        assert_int_equal(load(gz, &s, &e), MANTA_OK);
        assert_int_equal(s.count, 5);
        assert_int_equal(s.rows, 3);
        assert_int_equal(s.cols, 4);
        assert_int_equal(s.classes, 3);
        assert_int_equal(s.images[0], (unsigned char)(16 * 7));
        data_idx_free(&s);
    }
}

static void expect_error(int gz, manta_status want, const char *needle)
{
    idx_set s;
    manta_err e;
    manta_err_clear(&e);
    assert_int_equal(load(gz, &s, &e), want);
    assert_null(s.images);
    if (!strstr(e.msg, needle))
        fail_msg("message '%s' lacks '%s'", e.msg, needle);
}

static void test_bad_magic(void **state)
{
    (void)state;
    write_pair(2, 2, 2, 2, 0x801, 0, 1);
    expect_error(1, MANTA_ERR_FORMAT, "not an IDX image file");
}

static void test_truncated_file(void **state)
{
    (void)state;
    write_pair(4, 5, 5, 4, 0x803, 13, 1);
    expect_error(1, MANTA_ERR_FORMAT, "truncated");
}

static void test_count_mismatch(void **state)
{
    (void)state;
    write_pair(4, 2, 2, 3, 0x803, 0, 0);
    expect_error(0, MANTA_ERR_FORMAT, "labels");
}

static void test_missing_file(void **state)
{
    (void)state;
    idx_set s;
    manta_err e;
    assert_int_equal(data_idx_load_split("/nonexistent/dir", "train", &s, &e), MANTA_ERR_IO);
    assert_non_null(strstr(e.msg, "/nonexistent/dir/train-images-idx3-ubyte.gz"));
}

static void test_corrupt_gzip(void **state)
{
    (void)state;
    write_pair(4, 8, 8, 4, 0x803, 0, 1);
    char ip[256];
    path_of(ip, sizeof ip, "img.gz");
    FILE *f = fopen(ip, "r+b");
    assert_non_null(f);
    fseek(f, 30, SEEK_SET);
    for (int i = 0; i < 20; i++)
        fputc(0xA5, f);
    fclose(f);
    idx_set s;
    manta_err e;
    assert_int_not_equal(load(1, &s, &e), MANTA_OK);
    assert_null(s.images);
    assert_non_null(strstr(e.msg, "img.gz"));
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    manta_file_remove_tree(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fashion_mnist_loads), cmocka_unit_test(test_plain_and_gzip_files),
        cmocka_unit_test(test_bad_magic),           cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_count_mismatch),      cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_corrupt_gzip),
    };
    return cmocka_run_group_tests_name("idx data", tests, setup, teardown);
}
