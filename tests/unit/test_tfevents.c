/* TensorBoard event files (core/tfevents.h) and CRC-32C (core/crc32c.h): CRC-32C known
 * answers (RFC 3720's vectors) and masked values as TensorBoard computes them; scalars of a
 * few steps and tags written and read back with every record's CRCs checked (by the reader
 * and again here), the exact bytes of the first record, the file's name; a byte changed in
 * a record's data or length, or a file cut short, refused naming the record; bad tags
 * refused with nothing written; Events holding fields the writer does not use (source
 * metadata, tensors, metadata) read, their scalars kept; random Events read or refused. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/testutil.h"
#include "core/rng.h"
#include "core/crc32c.h"
#include "core/fileio.h"
#include "core/le.h"
#include "core/tfevents.h"

#define MAX_BYTES (1u << 20)

static tu_tmpdir dir; /* the group's temporary folder */

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(&dir, "tfevents");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

static void expect_msg(const manta_err *e, const char *needle)
{
    if (!strstr(e->msg, needle))
        fail_msg("message '%s' lacks '%s'", e->msg, needle);
}

static void test_crc32c_known_answers(void **state)
{
    (void)state;
    unsigned char zeros[32] = {0}, ones[32], inc[32], dec[32];
    for (int i = 0; i < 32; i++) {
        ones[i] = 0xff;
        inc[i] = (unsigned char)i;
        dec[i] = (unsigned char)(31 - i);
    }
    assert_int_equal(manta_crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(manta_crc32c(0, NULL, 0), 0u);
    assert_int_equal(manta_crc32c(0, zeros, 32), 0x8A9136AAu); /* RFC 3720, B.4 */
    assert_int_equal(manta_crc32c(0, ones, 32), 0x62A8AB43u);
    assert_int_equal(manta_crc32c(0, inc, 32), 0x46DD794Eu);
    assert_int_equal(manta_crc32c(0, dec, 32), 0x113FDB5Cu);
    /* Continuing a CRC equals the CRC of the whole. */
    assert_int_equal(manta_crc32c(manta_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    /* Masked, as tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c gives. */
    assert_int_equal(manta_crc32c_mask(manta_crc32c(0, "123456789", 9)), 0xC78AB0E5u);
    assert_int_equal(manta_crc32c_mask(0), 0xA282EAD8u);
    unsigned char len23[8];
    manta_le_put64(len23, 23);
    assert_int_equal(manta_crc32c_mask(manta_crc32c(0, len23, 8)), 0x1EF8CEE7u);
}

/* The whole file at @p path (fails the test when it cannot be read). */
static unsigned char *slurp(const char *path, size_t *len)
{
    char *text;
    manta_err e;
    TU_OK_ERR(manta_file_read(path, MAX_BYTES, &text, len, &e));
    return (unsigned char *)text;
}

/* Replace the file at @p path by @p len bytes (no sync: many small files). */
static void spill(const char *path, const unsigned char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* Walk the records of @p f independently of the reader, checking both CRCs of each;
 * returns the number of records and the offset of record @p want in *at (when present). */
static size_t walk_records(const unsigned char *f, size_t len, size_t want, size_t *at)
{
    size_t off = 0, k = 0;
    while (off < len) {
        assert_true(len - off >= 16);
        const uint64_t n = manta_le_get64(f + off);
        assert_true(n <= len - off - 16);
        assert_int_equal(manta_le_get32(f + off + 8),
                         manta_crc32c_mask(manta_crc32c(0, f + off, 8)));
        assert_int_equal(manta_le_get32(f + off + 12 + n),
                         manta_crc32c_mask(manta_crc32c(0, f + off + 12, (size_t)n)));
        if (k == want && at)
            *at = off;
        off += 12 + (size_t)n + 4;
        k++;
    }
    assert_int_equal(off, len);
    return k;
}

static const char *const TAGS[] = {"train/loss", "train/lr", "val/top1_largest"};

static float value_of(int step, int tag) { return (float)(step * 10 + tag) + 0.25f * (float)tag; }

/* Write steps @p steps (n_steps) with the three tags into a new file in @p folder. */
static void write_steps(const char *folder, const int64_t *steps, int n_steps, char *path,
                        size_t cap)
{
    manta_tfevents *w;
    manta_err e;
    TU_OK_ERR(manta_tfevents_open(folder, "test-host", 1700000000.5, &w, &e));
    for (int s = 0; s < n_steps; s++) {
        manta_tfscalar v[3];
        for (int t = 0; t < 3; t++)
            v[t] = (manta_tfscalar){TAGS[t], value_of(s, t)};
        TU_OK_ERR(manta_tfevents_append(w, steps[s], 1700000001.0 + s, v, 3, &e));
    }
    snprintf(path, cap, "%s", manta_tfevents_path(w));
    assert_int_equal(manta_tfevents_close(w, &e), MANTA_OK);
}

static void test_round_trip(void **state)
{
    (void)state;
    char folder[256], path[512];
    tu_tmpdir_path(&dir, "rt/nested", folder, sizeof folder);
    const int64_t steps[] = {0, 20, 40, (int64_t)1 << 40, -3};
    write_steps(folder, steps, 5, path, sizeof path);
    char want[512];
    snprintf(want, sizeof want, "%s/events.out.tfevents.1700000000.test-host", folder);
    assert_string_equal(path, want);

    size_t len;
    unsigned char *f = slurp(path, &len);
    assert_int_equal(walk_records(f, len, 0, NULL), 6);
    /* The first record: wall time and "brain.Event:2", nothing else. */
    assert_int_equal(manta_le_get64(f), 9 + 2 + 13);
    double t = 1700000000.5;
    unsigned char first[24] = {0x09};
    memcpy(first + 1, &t, 8); /* little-endian hosts only, as manta */
    first[9] = 0x1a;
    first[10] = 13;
    memcpy(first + 11, "brain.Event:2", 13);
    assert_memory_equal(f + 12, first, sizeof first);
    free(f);

    manta_tfevents_log log;
    manta_err e;
    TU_OK_ERR(manta_tfevents_read(path, MAX_BYTES, &log, &e));
    assert_int_equal(log.n_records, 6);
    assert_string_equal(log.file_version, MANTA_TFEVENTS_VERSION);
    assert_true(log.first_wall_time == 1700000000.5);
    assert_int_equal(log.n_points, 15);
    for (int s = 0; s < 5; s++)
        for (int k = 0; k < 3; k++) {
            const manta_tfevents_point *p = &log.points[3 * s + k];
            assert_int_equal(p->record, (size_t)s + 1);
            assert_true(p->step == steps[s]);
            assert_true(p->wall_time == 1700000001.0 + s);
            assert_string_equal(p->tag, TAGS[k]);
            assert_memory_equal(&p->value, &(float){value_of(s, k)}, sizeof(float));
        }
    manta_tfevents_log_free(&log);
    assert_null(log.points);
}

static void test_special_values_and_names(void **state)
{
    (void)state;
    char folder[256];
    tu_tmpdir_path(&dir, "names", folder, sizeof folder);
    manta_tfevents *a, *b;
    manta_err e;
    assert_int_equal(manta_tfevents_open(folder, "node 7/x", 42.9, &a, &e), MANTA_OK);
    assert_int_equal(manta_tfevents_open(folder, "node 7/x", 42.0, &b, &e), MANTA_OK);
    char want[512];
    snprintf(want, sizeof want, "%s/events.out.tfevents.42.node_7_x", folder);
    assert_string_equal(manta_tfevents_path(a), want);
    strcat(want, ".1"); /* the same second and host: a new name, never the same file */
    assert_string_equal(manta_tfevents_path(b), want);
    const manta_tfscalar v[] = {{"nan", (float)NAN}, {"inf", (float)INFINITY}, {"~ !", -0.0f}};
    assert_int_equal(manta_tfevents_append(b, 7, 43, v, 3, &e), MANTA_OK);
    char path_b[512];
    snprintf(path_b, sizeof path_b, "%s", manta_tfevents_path(b));
    assert_int_equal(manta_tfevents_close(a, &e), MANTA_OK);
    assert_int_equal(manta_tfevents_close(b, &e), MANTA_OK);
    manta_tfevents_log log;
    TU_OK_ERR(manta_tfevents_read(path_b, MAX_BYTES, &log, &e));
    assert_int_equal(log.n_points, 3);
    assert_true(isnan(log.points[0].value));
    assert_true(isinf(log.points[1].value) && log.points[1].value > 0);
    assert_true(log.points[2].value == 0 && signbit(log.points[2].value));
    assert_string_equal(log.points[2].tag, "~ !");
    manta_tfevents_log_free(&log);
    assert_int_equal(manta_tfevents_close(NULL, &e), MANTA_OK);
}

static void test_corruption_refused(void **state)
{
    (void)state;
    char folder[256], path[512], bad[600];
    tu_tmpdir_path(&dir, "corrupt", folder, sizeof folder);
    const int64_t steps[] = {1, 2, 3};
    write_steps(folder, steps, 3, path, sizeof path);
    tu_tmpdir_path(&dir, "bad.tfevents", bad, sizeof bad);
    size_t len, at = 0;
    unsigned char *f = slurp(path, &len);
    assert_int_equal(walk_records(f, len, 2, &at), 4);
    manta_tfevents_log log;
    manta_err e;
    char rec[64];
    snprintf(rec, sizeof rec, "record 2 (byte %zu)", at);

    /* One byte of record 2's data: its data CRC no longer matches. */
    f[at + 12 + 5] ^= 0x10;
    spill(bad, f, len);
    assert_int_equal(manta_tfevents_read(bad, MAX_BYTES, &log, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, bad);
    expect_msg(&e, rec);
    expect_msg(&e, "data CRC mismatch");
    assert_null(log.points);
    assert_int_equal(log.n_records, 0);
    f[at + 12 + 5] ^= 0x10;

    /* One byte of its length. */
    f[at + 1] ^= 0x01;
    spill(bad, f, len);
    assert_int_equal(manta_tfevents_read(bad, MAX_BYTES, &log, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, rec);
    expect_msg(&e, "length CRC mismatch");
    f[at + 1] ^= 0x01;

    /* One byte of its data CRC. */
    const size_t n = (size_t)manta_le_get64(f + at);
    f[at + 12 + n + 2] ^= 0x80;
    spill(bad, f, len);
    assert_int_equal(manta_tfevents_read(bad, MAX_BYTES, &log, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, rec);
    expect_msg(&e, "data CRC mismatch");
    f[at + 12 + n + 2] ^= 0x80;

    /* Cut short: the last record, then inside the first header. */
    size_t last = 0;
    walk_records(f, len, 3, &last);
    spill(bad, f, len - 1);
    assert_int_equal(manta_tfevents_read(bad, MAX_BYTES, &log, &e), MANTA_ERR_FORMAT);
    snprintf(rec, sizeof rec, "record 3 (byte %zu): truncated", last);
    expect_msg(&e, rec);
    spill(bad, f, 7);
    assert_int_equal(manta_tfevents_read(bad, MAX_BYTES, &log, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "record 0 (byte 0): truncated");

    /* Intact, it still reads; a limit below its size is an I/O error naming it. */
    spill(bad, f, len);
    assert_int_equal(manta_tfevents_read(bad, MAX_BYTES, &log, &e), MANTA_OK);
    assert_int_equal(log.n_points, 9);
    manta_tfevents_log_free(&log);
    assert_int_equal(manta_tfevents_read(bad, 16, &log, &e), MANTA_ERR_IO);
    expect_msg(&e, bad);
    free(f);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    char folder[256], file[300];
    tu_tmpdir_path(&dir, "args", folder, sizeof folder);
    manta_tfevents *w;
    manta_err e;
    assert_int_equal(manta_tfevents_open(folder, "h", -1, &w, &e), MANTA_ERR_INVALID_ARG);
    assert_null(w);
    assert_int_equal(manta_tfevents_open("", "h", 1, &w, &e), MANTA_ERR_INVALID_ARG);
    /* A folder that is a file. */
    tu_tmpdir_path(&dir, "plain", file, sizeof file);
    spill(file, (const unsigned char *)"x", 1);
    assert_int_equal(manta_tfevents_open(file, "h", 1, &w, &e), MANTA_ERR_IO);
    expect_msg(&e, file);

    assert_int_equal(manta_tfevents_open(folder, "h", 5, &w, &e), MANTA_OK);
    struct stat st0, st1;
    assert_int_equal(stat(manta_tfevents_path(w), &st0), 0);
    char long_tag[MANTA_TFEVENTS_TAG_MAX + 2];
    memset(long_tag, 'a', sizeof long_tag - 1);
    long_tag[sizeof long_tag - 1] = '\0';
    const char *bad_tags[] = {"", "caf\xc3\xa9", "tab\there", long_tag, NULL};
    for (int i = 0; i < 5; i++) {
        const manta_tfscalar v[2] = {{"ok", 1}, {bad_tags[i], 2}};
        assert_int_equal(manta_tfevents_append(w, 1, 6, v, 2, &e), MANTA_ERR_INVALID_ARG);
        expect_msg(&e, manta_tfevents_path(w));
        expect_msg(&e, "tag 1");
    }
    const manta_tfscalar ok = {"ok", 1};
    assert_int_equal(manta_tfevents_append(w, 1, 6, &ok, 0, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(manta_tfevents_append(w, 1, NAN, &ok, 1, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(stat(manta_tfevents_path(w), &st1), 0);
    assert_int_equal(st0.st_size, st1.st_size); /* nothing written */
    long_tag[MANTA_TFEVENTS_TAG_MAX] = '\0';    /* the longest allowed */
    const manta_tfscalar longest = {long_tag, 3};
    assert_int_equal(manta_tfevents_append(w, 1, 6, &longest, 1, &e), MANTA_OK);
    assert_int_equal(manta_tfevents_close(w, &e), MANTA_OK);
}

/* Frame @p n bytes of data as a record at @p out; returns the record's size. */
static size_t frame(unsigned char *out, const unsigned char *data, size_t n)
{
    manta_le_put64(out, n);
    manta_le_put32(out + 8, manta_crc32c_mask(manta_crc32c(0, out, 8)));
    memcpy(out + 12, data, n);
    manta_le_put32(out + 12 + n, manta_crc32c_mask(manta_crc32c(0, data, n)));
    return 12 + n + 4;
}

/* Events as other writers encode them: source_metadata (10) in the first; a summary before
 * the step and wall time; Values with metadata (9), a tensor (8) and no simple_value. */
static void test_foreign_fields(void **state)
{
    (void)state;
    static const unsigned char ev0[] = {
        0x1a, 0x0d, 'b', 'r', 'a',  'i',  'n',  '.',  'E', 'v', 'e',
        'n',  't',  ':', '2', 0x52, 0x04, 0x0a, 0x02, 'p', 't', /* source_metadata { writer: "pt" } */
    };
    static const unsigned char ev1[] = {
        0x2a, 0x1a,                                           /* summary, 26 bytes */
        0x0a, 0x0f,                                           /* value, 15 bytes */
        0x4a, 0x02, 0x12, 0x00,                               /* metadata { display_name: "" } */
        0x0a, 0x01, 'a',                                      /* tag "a" */
        0x15, 0x00, 0x00, 0xc0, 0x3f,                         /* simple_value 1.5 */
        0x3a, 0x01, 'n',                                      /* node_name "n" (deprecated) */
        0x0a, 0x07, 0x0a, 0x01, 'b',  0x42, 0x02, 0x08, 0x01, /* value "b", tensor {dtype 1} */
        0x10, 0x96, 0x01,                                     /* step 150 */
        0x09, 0,    0,    0,    0,    0,    0,    0xf0, 0x3f, /* wall_time 1.0 */
    };
    unsigned char file[256];
    size_t len = frame(file, ev0, sizeof ev0);
    len += frame(file + len, ev1, sizeof ev1);
    char path[300];
    tu_tmpdir_path(&dir, "foreign.tfevents", path, sizeof path);
    spill(path, file, len);
    manta_tfevents_log log;
    manta_err e;
    TU_OK_ERR(manta_tfevents_read(path, MAX_BYTES, &log, &e));
    assert_int_equal(log.n_records, 2);
    assert_string_equal(log.file_version, "brain.Event:2");
    assert_int_equal(log.n_points, 1);
    assert_string_equal(log.points[0].tag, "a");
    assert_true(log.points[0].value == 1.5f);
    assert_true(log.points[0].step == 150);
    assert_true(log.points[0].wall_time == 1.0);
    manta_tfevents_log_free(&log);

    /* A Value whose tag runs past it: a format error naming record 1. */
    unsigned char broken[sizeof ev1];
    memcpy(broken, ev1, sizeof ev1);
    broken[9] = 0x30;
    len = frame(file, ev0, sizeof ev0);
    len += frame(file + len, broken, sizeof broken);
    spill(path, file, len);
    assert_int_equal(manta_tfevents_read(path, MAX_BYTES, &log, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "record 1");
    expect_msg(&e, "Value.tag");
}

/* Random Events with valid CRCs, built from protobuf-like pieces (keys of the known fields
 * with any wire type, lengths past the end, long varints): each is read or refused as
 * malformed, never more. */
static void test_random_events(void **state)
{
    (void)state;
    static const unsigned char pieces[] = {0x09, 0x10, 0x1a, 0x2a, 0x0a, 0x15, 0x12, 0x0d,
                                           0x0b, 0x0c, 0x00, 0x80, 0xff, 0x01, 0x05, 0x7f};
    manta_rng rng;
    manta_rng_seed(&rng, 19, 3);
    char path[300];
    tu_tmpdir_path(&dir, "random.tfevents", path, sizeof path);
    int ok = 0, refused = 0;
    for (int i = 0; i < 2000; i++) {
        unsigned char ev[64], file[128];
        const size_t n = manta_rng_below(&rng, sizeof ev + 1);
        for (size_t k = 0; k < n; k++)
            ev[k] = manta_rng_below(&rng, 2) ? pieces[manta_rng_below(&rng, sizeof pieces)]
                                             : (unsigned char)manta_rng_below(&rng, 256);
        spill(path, file, frame(file, ev, n));
        manta_tfevents_log log;
        manta_err e;
        manta_status st = manta_tfevents_read(path, MAX_BYTES, &log, &e);
        if (st == MANTA_OK) {
            assert_int_equal(log.n_records, 1);
            ok++;
        } else {
            assert_int_equal(st, MANTA_ERR_FORMAT);
            expect_msg(&e, "record 0 (byte 0)");
            refused++;
        }
        manta_tfevents_log_free(&log);
    }
    assert_true(ok > 0 && refused > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_known_answers),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_special_values_and_names),
        cmocka_unit_test(test_corruption_refused),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_foreign_fields),
        cmocka_unit_test(test_random_events),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
