/* Checkpoint files: round trips of every section type (host and device),
 * bit-exact floats, every kind of damage (corrupt bytes in each region,
 * truncation, wrong magic and version, hostile sizes, duplicate names), the
 * lookup errors, atomic replacement under injected write failures, and a
 * deterministic mutation fuzz loop. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/testutil.h"
#include "core/fileio.h"
#include "train/checkpoint.h"

static char dir[] = "/tmp/manta-ckpt-XXXXXX";

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

/* ---- little helpers ------------------------------------------------------ */

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t crc(const unsigned char *p, size_t n) { return (uint32_t)crc32_z(0, p, n); }

static size_t pad8(uint64_t n) { return (size_t)((8 - n % 8) % 8); }

static float f_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Entries of the test folder whose name contains ".tmp.". */
static int count_tmp_files(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static void expect_msg(const manta_err *e, const char *needle)
{
    if (!strstr(e->msg, needle))
        fail_msg("message '%s' lacks '%s'", e->msg, needle);
}

/* ---- the sample checkpoint ------------------------------------------------ */

#define N_PARAMS 37
static const uint32_t special_bits[] = {
    0x00000000u, 0x80000000u,                                        /* +0, -0 */
    0x7fc00000u, 0x7fc00001u, 0xffc12345u, 0x7f800001u, 0xffbfffffu, /* quiet and signalling NaNs */
    0x7f800000u, 0xff800000u,                                        /* infinities */
    0x00000001u, 0x807fffffu,                                        /* subnormals */
    0x7f7fffffu, 0x3f800000u,                                        /* FLT_MAX, 1 */
};
#define N_SPECIAL (sizeof special_bits / sizeof special_bits[0])

static void sample_params(float *p)
{
    for (int i = 0; i < N_PARAMS; i++)
        p[i] = (float)i * 0.25f - 3.0f;
    memcpy(p, special_bits, sizeof special_bits);
}

static const int64_t sample_step[3] = {INT64_MIN, -1, INT64_MAX};
static const unsigned char sample_rng[13] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 255};
static const char sample_meta[] =
    "{\"step\": 1200, \"arch\": [3, 5, 7], \"note\": \"\xc3\xa9t\xc3\xa9\"}";

/* Add the sample sections to a writer. */
static manta_status add_sample(ckpt_writer *w)
{
    float p[N_PARAMS];
    sample_params(p);
    manta_status st = ckpt_add_f32(w, "params", p, N_PARAMS);
    if (st == MANTA_OK)
        st = ckpt_add_i64(w, "step", sample_step, 3);
    if (st == MANTA_OK)
        st = ckpt_add_bytes(w, "rng", sample_rng, sizeof sample_rng);
    if (st == MANTA_OK)
        st = ckpt_add_json(w, "meta", sample_meta);
    if (st == MANTA_OK)
        st = ckpt_add_f32(w, "empty", NULL, 0);
    return st;
}

static unsigned char *sample_mem(size_t *size)
{
    ckpt_writer *w;
    manta_err e;
    assert_int_equal(ckpt_writer_begin_mem("sample", &w, &e), MANTA_OK);
    assert_int_equal(add_sample(w), MANTA_OK);
    void *data;
    if (ckpt_writer_commit_mem(w, &data, size) != MANTA_OK)
        fail_msg("%s", e.msg);
    return data;
}

static void write_sample(const char *path)
{
    ckpt_writer *w;
    manta_err e;
    manta_err_clear(&e);
    assert_int_equal(ckpt_writer_begin(path, NULL, &w, &e), MANTA_OK);
    assert_int_equal(add_sample(w), MANTA_OK);
    if (ckpt_writer_commit(w) != MANTA_OK)
        fail_msg("%s", e.msg);
}

/* Every sample section reads back bit for bit. */
static void check_sample(ckpt_reader *r)
{
    manta_err e;
    float want[N_PARAMS], got[N_PARAMS];
    sample_params(want);
    assert_int_equal(ckpt_num_sections(r), 5);
    assert_int_equal(ckpt_read_f32(r, "params", got, N_PARAMS, &e), MANTA_OK);
    assert_memory_equal(got, want, sizeof want);
    int64_t step[3];
    assert_int_equal(ckpt_read_i64(r, "step", step, 3, &e), MANTA_OK);
    assert_memory_equal(step, sample_step, sizeof step);
    unsigned char rng[sizeof sample_rng];
    assert_int_equal(ckpt_read_bytes(r, "rng", rng, sizeof rng, &e), MANTA_OK);
    assert_memory_equal(rng, sample_rng, sizeof rng);
    char *meta;
    size_t len;
    assert_int_equal(ckpt_read_json(r, "meta", &meta, &len, &e), MANTA_OK);
    assert_int_equal(len, strlen(sample_meta));
    assert_string_equal(meta, sample_meta);
    free(meta);
    assert_int_equal(ckpt_read_f32(r, "empty", NULL, 0, &e), MANTA_OK);
}

/* Offsets of the sections of a valid file. */
static size_t section_offsets(const unsigned char *b, size_t *off, size_t cap)
{
    size_t n = get32(b + 16), o = CKPT_HEADER_SIZE;
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        off[i] = o;
        uint32_t type = get32(b + o + 4), nl = get32(b + o + 16);
        uint64_t es = type == CKPT_F32 ? 4 : type == CKPT_I64 ? 8 : 1;
        uint64_t bytes = get64(b + o + 8) * es;
        o += 24 + nl + pad8(nl) + bytes + pad8(bytes) + 8;
    }
    return n;
}

/* Recompute every CRC of a possibly damaged file, walking it defensively, so
 * that the structure itself is what the reader gets to judge. */
static void fix_crcs(unsigned char *b, size_t len)
{
    if (len < CKPT_HEADER_SIZE)
        return;
    put32(b + 32, crc(b, 32));
    uint64_t nsec = get32(b + 16), o = CKPT_HEADER_SIZE;
    for (uint64_t i = 0; i < nsec && o + 24 <= len; i++) {
        uint32_t type = get32(b + o + 4), nl = get32(b + o + 16);
        uint64_t es = type == CKPT_F32 ? 4 : type == CKPT_I64 ? 8 : type <= 4 && type ? 1 : 0;
        if (nl == 0 || nl > 255 || o + 24 + nl + pad8(nl) > len)
            break;
        uint64_t span = 24 + nl + pad8(nl), count = get64(b + o + 8);
        put32(b + o, crc(b + o + 4, (size_t)span - 4));
        if (!es || count > len / es)
            break;
        uint64_t end = o + span + count * es + pad8(count * es);
        if (end + 8 > len)
            break;
        put32(b + end, crc(b + o, (size_t)(end - o)));
        o = end + 8;
    }
    if (len >= 4)
        put32(b + len - 4, crc(b, len - 4));
}

static void expect_open_mem_fails(const unsigned char *b, size_t n, manta_status want,
                                  const char *needle)
{
    ckpt_reader *r = (ckpt_reader *)&r;
    manta_err e;
    manta_err_clear(&e);
    manta_status st = ckpt_open_mem(b, n, "damaged", &r, &e);
    if (st != want)
        fail_msg("status %s, want %s (%s)", manta_status_str(st), manta_status_str(want), e.msg);
    assert_null(r);
    expect_msg(&e, needle);
}

/* Write bytes to a file, open it and expect a failure naming the file. */
static void expect_open_file_fails(const unsigned char *b, size_t n, manta_status want,
                                   const char *needle)
{
    char p[256];
    path_of(p, sizeof p, "damaged.ckpt");
    write_file(p, b, n);
    ckpt_reader *r;
    manta_err e;
    manta_err_clear(&e);
    manta_status st = ckpt_open(p, &r, &e);
    if (st != want)
        fail_msg("status %s, want %s (%s)", manta_status_str(st), manta_status_str(want), e.msg);
    assert_null(r);
    expect_msg(&e, p);
    expect_msg(&e, needle);
    unlink(p);
}

/* ---- tests ----------------------------------------------------------------- */

static void test_round_trip_file(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "sample.ckpt");
    write_sample(p);
    assert_int_equal(count_tmp_files(), 0);
    ckpt_reader *r;
    manta_err e;
    if (ckpt_open(p, &r, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    check_sample(r);
    /* Listing in file order. */
    static const char *names[] = {"params", "step", "rng", "meta", "empty"};
    static const ckpt_type types[] = {CKPT_F32, CKPT_I64, CKPT_BYTES, CKPT_JSON, CKPT_F32};
    const uint64_t counts[] = {N_PARAMS, 3, sizeof sample_rng, strlen(sample_meta), 0};
    for (size_t i = 0; i < 5; i++) {
        ckpt_section_info s;
        assert_true(ckpt_section_at(r, i, &s));
        assert_string_equal(s.name, names[i]);
        assert_int_equal(s.type, types[i]);
        assert_int_equal(s.count, counts[i]);
        assert_true(ckpt_has(r, names[i]));
    }
    ckpt_section_info s;
    assert_false(ckpt_section_at(r, 5, &s));
    assert_false(ckpt_has(r, "missing"));
    uint64_t n = 0;
    assert_int_equal(ckpt_find(r, "rng", CKPT_BYTES, &n, &e), MANTA_OK);
    assert_int_equal(n, sizeof sample_rng);
    ckpt_close(r);
    unlink(p);
}

static void test_memory_writer_matches_file(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "same.ckpt");
    write_sample(p);
    size_t fn, mn;
    unsigned char *fb = read_file(p, &fn), *mb = sample_mem(&mn);
    assert_int_equal(fn, mn);
    assert_memory_equal(fb, mb, fn);
    assert_int_equal(fn % 8, 0);
    assert_memory_equal(mb, "MANTACKP", 8);
    assert_int_equal(get32(mb + 8), CKPT_FORMAT_VERSION);
    assert_int_equal(get64(mb + 24), mn);
    assert_int_equal(get32(mb + mn - 4), crc(mb, mn - 4));
    /* Payloads are 8-byte aligned. */
    size_t off[8], ns = section_offsets(mb, off, 8);
    for (size_t i = 0; i < ns; i++) {
        uint32_t nl = get32(mb + off[i] + 16);
        assert_int_equal((off[i] + 24 + nl + pad8(nl)) % 8, 0);
    }
    ckpt_reader *r;
    manta_err e;
    assert_int_equal(ckpt_open_mem(mb, mn, "mem", &r, &e), MANTA_OK);
    check_sample(r);
    ckpt_close(r);
    free(fb), free(mb);
    unlink(p);
}

static void test_device_view_round_trip(void **state)
{
    (void)state;
    mcl_dev *d = tu_open_device();
    const size_t n = 65536 + 4099; /* more than one 256 KiB staging chunk */
    float *host = malloc(n * sizeof *host), *back = malloc(n * sizeof *back);
    assert_true(host && back);
    manta_rng rng;
    manta_rng_seed(&rng, 11, 0);
    for (size_t i = 0; i < n; i++)
        host[i] = manta_rng_normal(&rng);
    memcpy(host + 1000, special_bits, sizeof special_bits);
    memcpy(host + n - N_SPECIAL, special_bits, sizeof special_bits);
    mview src = tu_alloc(d, n + 5), dst = tu_alloc(d, n + 9);
    TU_OK(d, mcl_write(d, mview_at(src, 5), host, n));

    char p[256];
    path_of(p, sizeof p, "device.ckpt");
    ckpt_writer *w;
    manta_err e;
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(train_ckpt_add_f32_device(w, "params", d, mview_at(src, 5), n), MANTA_OK);
    assert_int_equal(train_ckpt_add_f32_device(w, "none", d, src, 0), MANTA_OK);
    if (ckpt_writer_commit(w) != MANTA_OK)
        fail_msg("%s", e.msg);

    ckpt_reader *r;
    if (ckpt_open(p, &r, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    /* To the device at an offset, and to the host: both bit for bit. */
    TU_OK(d, mcl_fill(d, dst, 7.0f, n + 9));
    if (train_ckpt_read_f32_device(r, "params", d, mview_at(dst, 9), n, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    TU_OK(d, mcl_read(d, mview_at(dst, 9), back, n));
    assert_memory_equal(back, host, n * sizeof *host);
    float guard[9];
    TU_OK(d, mcl_read(d, dst, guard, 9));
    for (int i = 0; i < 9; i++)
        assert_true(guard[i] == 7.0f);
    memset(back, 0, n * sizeof *back);
    assert_int_equal(ckpt_read_f32(r, "params", back, n, &e), MANTA_OK);
    assert_memory_equal(back, host, n * sizeof *host);
    assert_int_equal(train_ckpt_read_f32_device(r, "none", d, dst, 0, &e), MANTA_OK);
    /* A wrong count is refused before the device is touched. */
    assert_int_equal(train_ckpt_read_f32_device(r, "params", d, dst, n + 1, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "has 69635 floats, the model needs 69636");
    ckpt_close(r);
    tu_free(d, src), tu_free(d, dst);
    mcl_close(d);
    free(host), free(back);
    unlink(p);
}

static void test_empty_arrays(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "empty.ckpt");
    ckpt_writer *w;
    manta_err e;
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "f", NULL, 0), MANTA_OK);
    assert_int_equal(ckpt_add_i64(w, "i", NULL, 0), MANTA_OK);
    assert_int_equal(ckpt_add_bytes(w, "b", NULL, 0), MANTA_OK);
    assert_int_equal(ckpt_add_json(w, "j", "[]"), MANTA_OK);
    assert_int_equal(ckpt_writer_commit(w), MANTA_OK);
    ckpt_reader *r;
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_OK);
    assert_int_equal(ckpt_num_sections(r), 4);
    assert_int_equal(ckpt_read_f32(r, "f", NULL, 0, &e), MANTA_OK);
    assert_int_equal(ckpt_read_i64(r, "i", NULL, 0, &e), MANTA_OK);
    assert_int_equal(ckpt_read_bytes(r, "b", NULL, 0, &e), MANTA_OK);
    char *t;
    assert_int_equal(ckpt_read_json(r, "j", &t, NULL, &e), MANTA_OK);
    assert_string_equal(t, "[]");
    free(t);
    float one;
    assert_int_equal(ckpt_read_f32(r, "f", &one, 1, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "section 'f' has 0 floats, the model needs 1");
    ckpt_close(r);

    /* A checkpoint without sections is valid too. */
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_writer_commit(w), MANTA_OK);
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_OK);
    assert_int_equal(ckpt_num_sections(r), 0);
    assert_false(ckpt_has(r, "f"));
    ckpt_close(r);
    size_t n;
    free(read_file(p, &n));
    assert_int_equal(n, CKPT_HEADER_SIZE + CKPT_TRAILER_SIZE);
    unlink(p);
}

static void test_bit_exact_floats(void **state)
{
    (void)state;
    const size_t n = N_SPECIAL * 3;
    float x[N_SPECIAL * 3], y[N_SPECIAL * 3];
    for (size_t i = 0; i < n; i++)
        x[i] = f_bits(special_bits[i % N_SPECIAL] ^ (uint32_t)(i / N_SPECIAL));
    ckpt_writer *w;
    manta_err e;
    assert_int_equal(ckpt_writer_begin_mem(NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "x", x, n), MANTA_OK);
    void *data;
    size_t size;
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_OK);
    /* Stored little-endian as the bit patterns. */
    const unsigned char *pl = (const unsigned char *)data + CKPT_HEADER_SIZE + 24 + 8;
    for (size_t i = 0; i < n; i++) {
        uint32_t want;
        memcpy(&want, &x[i], 4);
        assert_int_equal(get32(pl + 4 * i), want);
    }
    ckpt_reader *r;
    assert_int_equal(ckpt_open_mem(data, size, NULL, &r, &e), MANTA_OK);
    assert_int_equal(ckpt_read_f32(r, "x", y, n, &e), MANTA_OK);
    assert_memory_equal(x, y, sizeof x);
    ckpt_close(r);
    free(data);
}

static void test_corrupt_byte_in_each_region(void **state)
{
    (void)state;
    size_t n;
    unsigned char *good = sample_mem(&n), *b = malloc(n);
    assert_non_null(b);
    size_t off[8];
    assert_int_equal(section_offsets(good, off, 8), 5);
    /* params: 32-byte header, 148 payload bytes, 4 of padding, then the CRC */
    assert_int_equal(off[1] - off[0], 32 + 148 + 4 + 8);
    size_t step_hdr = off[1], rng_pad = off[2] + 32 + 13;
    struct {
        size_t at;
        manta_status st;
        const char *msg;
    } cases[] = {
        {0, MANTA_ERR_FORMAT, "is not a manta checkpoint"},
        {8, MANTA_ERR_UNSUPPORTED, "is format version 5, this build reads 1"},
        {12, MANTA_ERR_FORMAT, "header is corrupt (CRC mismatch)"},
        {17, MANTA_ERR_FORMAT, "header is corrupt (CRC mismatch)"},
        {25, MANTA_ERR_FORMAT, "header is corrupt (CRC mismatch)"},
        {33, MANTA_ERR_FORMAT, "header is corrupt (CRC mismatch)"},
        {38, MANTA_ERR_FORMAT, "header is corrupt (reserved bytes not zero)"},
        {off[0] + 1, MANTA_ERR_FORMAT, "header of section #1 (byte 40) is corrupt (CRC mismatch)"},
        {off[0] + 4, MANTA_ERR_FORMAT, "header of section #1 (byte 40) is corrupt (CRC mismatch)"},
        {off[0] + 9, MANTA_ERR_FORMAT, "header of section #1 (byte 40) is corrupt (CRC mismatch)"},
        {off[0] + 25, MANTA_ERR_FORMAT, "header of section #1 (byte 40) is corrupt (CRC mismatch)"},
        {off[0] + 19, MANTA_ERR_FORMAT, "header of section #1 (byte 40) is corrupt (name length"},
        {step_hdr + 20, MANTA_ERR_FORMAT, "header of section #2 (byte 232) is corrupt (CRC"},
        {off[0] + 32, MANTA_ERR_FORMAT, "section 'params' is corrupt (CRC mismatch)"},
        {off[0] + 32 + 147, MANTA_ERR_FORMAT, "section 'params' is corrupt (CRC mismatch)"},
        {off[0] + 32 + 149, MANTA_ERR_FORMAT, "section 'params' is corrupt (CRC mismatch)"},
        {off[1] - 8, MANTA_ERR_FORMAT, "section 'params' is corrupt (CRC mismatch)"},
        {off[1] - 2, MANTA_ERR_FORMAT, "section 'params' is corrupt (reserved bytes not zero)"},
        {rng_pad, MANTA_ERR_FORMAT, "section 'rng' is corrupt (CRC mismatch)"},
        {off[3] + 40, MANTA_ERR_FORMAT, "section 'meta' is corrupt (CRC mismatch)"},
        {n - 16, MANTA_ERR_FORMAT, "end marker is corrupt"},
        {n - 8, MANTA_ERR_FORMAT, "end marker is corrupt"},
        {n - 4, MANTA_ERR_FORMAT, "is corrupt (file CRC mismatch)"},
        {n - 1, MANTA_ERR_FORMAT, "is corrupt (file CRC mismatch)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, good, n);
        b[cases[i].at] ^= 0x04;
        expect_open_file_fails(b, n, cases[i].st, cases[i].msg);
    }
    free(good), free(b);
}

static void test_truncated_at_every_length(void **state)
{
    (void)state;
    size_t n;
    unsigned char *good = sample_mem(&n);
    char want[128];
    for (size_t len = 0; len < n; len++) {
        if (len == 0)
            snprintf(want, sizeof want, "is empty");
        else if (len < CKPT_HEADER_SIZE)
            snprintf(want, sizeof want, "is truncated");
        else
            snprintf(want, sizeof want, "is truncated (%zu of %zu bytes)", len, n);
        /* Each length from its own allocation, so ASan sees any overread. */
        unsigned char *b = malloc(len ? len : 1);
        assert_non_null(b);
        memcpy(b, good, len);
        expect_open_mem_fails(b, len, MANTA_ERR_FORMAT, want);
        if (len % 41 == 0 || len < 10)
            expect_open_file_fails(b, len, MANTA_ERR_FORMAT, want);
        free(b);
    }
    /* And longer than the header says. */
    unsigned char *b = malloc(n + 3);
    assert_non_null(b);
    memcpy(b, good, n);
    memset(b + n, 0, 3);
    expect_open_file_fails(b, n + 3, MANTA_ERR_FORMAT, "has 3 bytes of trailing data");
    free(b), free(good);
}

static void test_wrong_magic_and_not_a_file(void **state)
{
    (void)state;
    const char text[] = "step,loss\n1,2.3\n2,2.1\n3,1.9\n4,1.8\n5,1.6\n6,1.5\n";
    expect_open_file_fails((const unsigned char *)text, sizeof text - 1, MANTA_ERR_FORMAT,
                           "is not a manta checkpoint");
    expect_open_file_fails((const unsigned char *)"MANTX", 5, MANTA_ERR_FORMAT,
                           "is not a manta checkpoint");
    ckpt_reader *r;
    manta_err e;
    assert_int_equal(ckpt_open(dir, &r, &e), MANTA_ERR_IO);
    assert_null(r);
    expect_msg(&e, "is a folder");
    char p[256];
    path_of(p, sizeof p, "no such file.ckpt");
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_ERR_IO);
    expect_msg(&e, p);
    expect_msg(&e, "No such file");
}

static void test_other_version_and_flags_refused(void **state)
{
    (void)state;
    size_t n;
    unsigned char *good = sample_mem(&n), *b = malloc(n);
    assert_non_null(b);
    const uint32_t versions[] = {2, 0, 0xffffffffu};
    for (int i = 0; i < 3; i++) {
        memcpy(b, good, n);
        put32(b + 8, versions[i]);
        fix_crcs(b, n);
        char want[128];
        snprintf(want, sizeof want, "is format version %u, this build reads 1", versions[i]);
        expect_open_file_fails(b, n, MANTA_ERR_UNSUPPORTED, want);
    }
    memcpy(b, good, n);
    put32(b + 12, 0x10);
    fix_crcs(b, n);
    expect_open_mem_fails(b, n, MANTA_ERR_UNSUPPORTED, "uses flags 0x10 that this build does not");
    free(good), free(b);
}

/* Sizes in a file whose CRCs are all valid: refused from the file size,
 * before anything is allocated for them. */
static void test_hostile_sizes(void **state)
{
    (void)state;
    size_t n;
    unsigned char *good = sample_mem(&n), *b = malloc(n);
    assert_non_null(b);
    size_t off[8];
    section_offsets(good, off, 8);
    struct {
        size_t at;
        int wide;
        uint64_t v;
        const char *msg;
    } cases[] = {
        {16, 0, 0xffffffffu, "header claims 4294967295 sections"},
        {16, 0, 6, "section #6 at byte"},
        {16, 0, 4, "its 4 sections end at byte"},
        {24, 1, UINT64_MAX, "is truncated"},
        {24, 1, 8, "bytes of trailing data after its end (byte 8)"},
        {off[0] + 8, 1, UINT64_MAX / 2, "section 'params' claims 9223372036854775807 floats"},
        {off[1] + 8, 1, (UINT64_MAX >> 3) + 2, "section 'step' claims 2305843009213693953 int64"},
        {off[4] + 8, 1, 1u << 30, "section 'empty' claims 1073741824 floats"},
        {off[0] + 16, 0, 0xffffu, "(name length 65535)"},
        {off[0] + 16, 0, 0, "(name length 0)"},
        {off[0] + 4, 0, 9, "section 'params' has unknown type 9"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(b, good, n);
        if (cases[i].wide)
            put64(b + cases[i].at, cases[i].v);
        else
            put32(b + cases[i].at, (uint32_t)cases[i].v);
        fix_crcs(b, n);
        expect_open_mem_fails(b, n, MANTA_ERR_FORMAT, cases[i].msg);
    }
    /* A name with a control character. */
    memcpy(b, good, n);
    b[off[0] + 24] = '\n';
    fix_crcs(b, n);
    expect_open_mem_fails(b, n, MANTA_ERR_FORMAT, "(name is not printable ASCII)");
    free(good), free(b);
}

static void test_duplicate_names(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "dup.ckpt");
    write_sample(p);
    size_t n0;
    unsigned char *before = read_file(p, &n0);
    /* At write: refused, sticky, and the previous checkpoint stays. */
    ckpt_writer *w;
    manta_err e;
    float x[2] = {1, 2};
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "params", x, 2), MANTA_OK);
    assert_int_equal(ckpt_add_bytes(w, "params", x, 2), MANTA_ERR_INVALID_ARG);
    expect_msg(&e, "section 'params' added twice");
    expect_msg(&e, p);
    assert_int_equal(ckpt_add_f32(w, "other", x, 2), MANTA_ERR_INVALID_ARG);
    assert_int_equal(ckpt_writer_commit(w), MANTA_ERR_INVALID_ARG);
    expect_msg(&e, "added twice");
    size_t n1;
    unsigned char *after = read_file(p, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(before, after, n0);
    assert_int_equal(count_tmp_files(), 0);
    free(before), free(after);
    unlink(p);

    /* At read: a crafted file with valid CRCs. */
    assert_int_equal(ckpt_writer_begin_mem(NULL, &w, &e), MANTA_OK);
    ckpt_add_f32(w, "aa", x, 2);
    ckpt_add_i64(w, "zz", NULL, 0);
    ckpt_add_f32(w, "ab", x, 1);
    void *data;
    size_t size;
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_OK);
    unsigned char *b = data;
    size_t off[4];
    assert_int_equal(section_offsets(b, off, 4), 3);
    assert_memory_equal(b + off[2] + 24, "ab", 2);
    b[off[2] + 25] = 'a';
    fix_crcs(b, size);
    expect_open_mem_fails(b, size, MANTA_ERR_FORMAT, "section 'aa' appears twice");
    free(data);
}

static void test_lookup_errors(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "lookup.ckpt");
    ckpt_writer *w;
    manta_err e;
    float *x = calloc(1000, sizeof *x);
    assert_non_null(x);
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "params", x, 1000), MANTA_OK);
    assert_int_equal(ckpt_add_i64(w, "step", (int64_t[]){5}, 1), MANTA_OK);
    assert_int_equal(ckpt_writer_commit(w), MANTA_OK);
    ckpt_reader *r;
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_OK);
    float *y = calloc(1200, sizeof *y);
    assert_non_null(y);
    char want[512];

    assert_int_equal(ckpt_read_f32(r, "params", y, 1200, &e), MANTA_ERR_FORMAT);
    snprintf(want, sizeof want,
             "checkpoint %s: section 'params' has 1000 floats, the model needs 1200", p);
    assert_string_equal(e.msg, want);
    assert_int_equal(ckpt_read_f32(r, "bn_state", y, 10, &e), MANTA_ERR_FORMAT);
    snprintf(want, sizeof want, "checkpoint %s has no section 'bn_state'", p);
    assert_string_equal(e.msg, want);
    int64_t s[2];
    assert_int_equal(ckpt_read_i64(r, "params", s, 1000, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "section 'params' is float32, not int64");
    assert_int_equal(ckpt_read_i64(r, "step", s, 2, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "section 'step' has 1 int64 values, the model needs 2");
    char *t = (char *)s;
    assert_int_equal(ckpt_read_json(r, "step", &t, NULL, &e), MANTA_ERR_FORMAT);
    assert_null(t);
    expect_msg(&e, "section 'step' is int64, not json");
    uint64_t count = 99;
    assert_int_equal(ckpt_find(r, "step", CKPT_BYTES, &count, &e), MANTA_ERR_FORMAT);
    assert_int_equal(ckpt_find(r, "step", CKPT_I64, &count, &e), MANTA_OK);
    assert_int_equal(count, 1);
    assert_int_equal(ckpt_read_i64(r, "step", s, 1, &e), MANTA_OK);
    assert_int_equal(s[0], 5);
    /* The section is intact after failed lookups. */
    assert_int_equal(ckpt_read_f32(r, "params", y, 1000, &e), MANTA_OK);
    ckpt_close(r);
    free(x), free(y);
    unlink(p);
}

static void test_invalid_writer_arguments(void **state)
{
    (void)state;
    char longname[300];
    memset(longname, 'n', sizeof longname);
    longname[256] = '\0';
    const char *bad_names[] = {"", "tab\tname", longname, NULL};
    const char *bad_json[] = {"",    "{", "{} x", "\"\xff\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"",
                              "[1,]"};
    ckpt_writer *w;
    manta_err e;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ckpt_writer_begin_mem(NULL, &w, &e), MANTA_OK);
        assert_int_equal(ckpt_add_bytes(w, bad_names[i], "x", 1), MANTA_ERR_INVALID_ARG);
        expect_msg(&e, "is not 1 to 255 printable ASCII characters");
        ckpt_writer_abort(w);
    }
    longname[255] = '\0'; /* the longest allowed name */
    assert_int_equal(ckpt_writer_begin_mem(NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_bytes(w, longname, "x", 1), MANTA_OK);
    assert_int_equal(ckpt_add_bytes(w, "with space", "x", 1), MANTA_OK);
    void *data;
    size_t size;
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_OK);
    ckpt_reader *r;
    assert_int_equal(ckpt_open_mem(data, size, NULL, &r, &e), MANTA_OK);
    assert_true(ckpt_has(r, longname));
    ckpt_close(r);
    free(data);
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        assert_int_equal(ckpt_writer_begin_mem(NULL, &w, &e), MANTA_OK);
        assert_int_equal(ckpt_add_json(w, "meta", bad_json[i]), MANTA_ERR_INVALID_ARG);
        expect_msg(&e, "section 'meta' is not valid UTF-8 JSON text");
        ckpt_writer_abort(w);
    }
    assert_int_equal(ckpt_writer_begin_mem(NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "p", NULL, 3), MANTA_ERR_INVALID_ARG);
    expect_msg(&e, "no data for 3 floats");
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_ERR_INVALID_ARG);
    assert_null(data);
    /* A folder that does not exist: the temporary file is named. */
    char p[256];
    path_of(p, sizeof p, "missing/x.ckpt");
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_ERR_IO);
    assert_null(w);
    expect_msg(&e, "cannot create the temporary file");
    expect_msg(&e, "missing/x.ckpt.tmp.");
    /* A memory writer cannot be committed to a file and vice versa. */
    assert_int_equal(ckpt_writer_begin_mem("m", &w, &e), MANTA_OK);
    assert_int_equal(ckpt_writer_commit(w), MANTA_ERR_INVALID_ARG);
    path_of(p, sizeof p, "kind.ckpt");
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_ERR_INVALID_ARG);
    assert_int_equal(count_tmp_files(), 0);
    assert_int_equal(access(p, F_OK), -1);
}

/* Fault injection: fail the nth operation of one kind with an errno. */
typedef struct fault_plan {
    ckpt_io_op op;
    int nth;        /* 1-based; 0: never */
    int seen[5];    /* operations seen, by kind */
    uint64_t limit; /* writes reaching past this offset fail with ENOSPC; 0: none */
    int err;
} fault_plan;

static int inject(void *user, ckpt_io_op op, uint64_t offset, size_t len)
{
    fault_plan *f = user;
    int k = ++f->seen[op];
    if (f->limit && op == CKPT_IO_WRITE && offset + len > f->limit)
        return ENOSPC;
    return op == f->op && k == f->nth ? f->err : 0;
}

/* A large checkpoint (several write calls) with a plan. */
static manta_status write_big(const char *path, fault_plan *f, manta_err *e)
{
    const size_t n = 300000;
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)i;
    ckpt_writer_opts o = {inject, f};
    ckpt_writer *w;
    manta_status st = ckpt_writer_begin(path, &o, &w, e);
    if (st == MANTA_OK) {
        ckpt_add_json(w, "meta", "{\"v\": 2}");
        ckpt_add_f32(w, "params", x, n);
        for (int i = 0; i < 40; i++) {
            char name[32];
            snprintf(name, sizeof name, "small.%d", i);
            ckpt_add_f32(w, name, x, 2000);
        }
        st = ckpt_writer_commit(w);
    }
    free(x);
    return st;
}

static void test_failed_write_keeps_previous(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "keep.ckpt");
    write_sample(p);
    size_t n0;
    unsigned char *before = read_file(p, &n0);
    manta_err e;
    /* Count the operations of a successful write elsewhere. */
    char q[256];
    path_of(q, sizeof q, "count.ckpt");
    fault_plan all = {0};
    assert_int_equal(write_big(q, &all, &e), MANTA_OK);
    unlink(q);
    assert_int_equal(all.seen[CKPT_IO_CREATE], 1);
    assert_true(all.seen[CKPT_IO_WRITE] >= 4);
    assert_int_equal(all.seen[CKPT_IO_SYNC], 1);
    assert_int_equal(all.seen[CKPT_IO_RENAME], 1);

    const ckpt_io_op ops[] = {CKPT_IO_CREATE, CKPT_IO_WRITE, CKPT_IO_SYNC, CKPT_IO_RENAME};
    for (int o = 0; o < 4; o++)
        for (int k = 1; k <= all.seen[ops[o]]; k++) {
            fault_plan f = {ops[o], k, {0}, 0, ops[o] == CKPT_IO_WRITE ? ENOSPC : EIO};
            manta_err_clear(&e);
            assert_int_equal(write_big(p, &f, &e), MANTA_ERR_IO);
            expect_msg(&e, p);
            expect_msg(&e, strerror(f.err));
            size_t n1;
            unsigned char *after = read_file(p, &n1);
            assert_int_equal(n1, n0);
            assert_memory_equal(after, before, n0);
            free(after);
            assert_int_equal(count_tmp_files(), 0);
        }
    /* A disk that fills up part way, at several sizes. */
    const uint64_t limits[] = {1, 40, 4096, 300000, 1000000};
    for (int i = 0; i < 5; i++) {
        fault_plan f = {CKPT_IO_CREATE, 0, {0}, limits[i], 0};
        assert_int_equal(write_big(p, &f, &e), MANTA_ERR_IO);
        expect_msg(&e, "No space left on device");
        size_t n1;
        unsigned char *after = read_file(p, &n1);
        assert_int_equal(n1, n0);
        assert_memory_equal(after, before, n0);
        free(after);
        assert_int_equal(count_tmp_files(), 0);
    }
    /* A failed folder sync is reported, but the new file is in place. */
    fault_plan f = {CKPT_IO_SYNC_DIR, 1, {0}, 0, EIO};
    assert_int_equal(write_big(p, &f, &e), MANTA_ERR_IO);
    expect_msg(&e, "syncing its folder failed");
    ckpt_reader *r;
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_OK);
    assert_true(ckpt_has(r, "small.39"));
    ckpt_close(r);
    assert_int_equal(count_tmp_files(), 0);
    free(before);
    unlink(p);
}

static void test_sticky_error_and_abort(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "sticky.ckpt");
    ckpt_writer *w;
    manta_err e;
    fault_plan f = {CKPT_IO_WRITE, 1, {0}, 0, EIO};
    ckpt_writer_opts o = {inject, &f};
    /* The first flush fails inside an add of a large array. */
    float *x = calloc(100000, sizeof *x);
    assert_non_null(x);
    assert_int_equal(ckpt_writer_begin(p, &o, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "big", x, 100000), MANTA_ERR_IO);
    expect_msg(&e, "Input/output error");
    assert_int_equal(ckpt_add_f32(w, "next", x, 1), MANTA_ERR_IO);
    assert_int_equal(f.seen[CKPT_IO_WRITE], 1); /* nothing more was tried */
    assert_int_equal(ckpt_writer_commit(w), MANTA_ERR_IO);
    assert_int_equal(access(p, F_OK), -1);
    assert_int_equal(count_tmp_files(), 1 - 1);
    /* Abort removes the temporary file. */
    assert_int_equal(ckpt_writer_begin(p, NULL, &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32(w, "big", x, 100000), MANTA_OK);
    assert_int_equal(count_tmp_files(), 1);
    ckpt_writer_abort(w);
    assert_int_equal(count_tmp_files(), 0);
    assert_int_equal(access(p, F_OK), -1);
    free(x);
}

static void test_file_name_with_spaces(void **state)
{
    (void)state;
    char sub[256], p[300];
    path_of(sub, sizeof sub, "run 7 (copy)");
    assert_int_equal(mkdir(sub, 0755), 0);
    snprintf(p, sizeof p, "%s/step 1200 final.ckpt", sub);
    write_sample(p);
    write_sample(p); /* replaces */
    ckpt_reader *r;
    manta_err e;
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_OK);
    check_sample(r);
    ckpt_close(r);
    /* A message names the path as it is. */
    size_t n;
    unsigned char *b = read_file(p, &n);
    b[n - 1] ^= 1;
    write_file(p, b, n);
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "step 1200 final.ckpt is corrupt (file CRC mismatch)");
    free(b);
    unlink(p);
    assert_int_equal(rmdir(sub), 0);
}

/* A file changed or cut after it was verified: each read checks again. */
static void test_file_changed_after_open(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "changing.ckpt");
    write_sample(p);
    size_t n;
    unsigned char *b = read_file(p, &n);
    size_t off[8];
    section_offsets(b, off, 8);
    ckpt_reader *r;
    manta_err e;
    assert_int_equal(ckpt_open(p, &r, &e), MANTA_OK);
    /* Rewrite one payload byte in place (same inode). */
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    fseek(f, (long)(off[0] + 32 + 50), SEEK_SET);
    fputc(b[off[0] + 32 + 50] ^ 0x40, f);
    fclose(f);
    float x[N_PARAMS];
    assert_int_equal(ckpt_read_f32(r, "params", x, N_PARAMS, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "section 'params' is corrupt (CRC mismatch; the file changed after it was");
    int64_t step[3];
    assert_int_equal(ckpt_read_i64(r, "step", step, 3, &e), MANTA_OK);
    /* Cut it short. */
    assert_int_equal(truncate(p, (off_t)off[2]), 0);
    unsigned char rng[sizeof sample_rng];
    assert_int_equal(ckpt_read_bytes(r, "rng", rng, sizeof rng, &e), MANTA_ERR_FORMAT);
    expect_msg(&e, "truncated while reading");
    ckpt_close(r);
    free(b);
    unlink(p);
}

/* Read every section a verified reader lists; each read succeeds or (for
 * JSON content) fails cleanly. */
static void read_all(ckpt_reader *r)
{
    manta_err e;
    for (size_t i = 0; i < ckpt_num_sections(r); i++) {
        ckpt_section_info s;
        assert_true(ckpt_section_at(r, i, &s));
        size_t es = s.type == CKPT_F32 ? 4 : s.type == CKPT_I64 ? 8 : 1;
        void *buf = malloc(s.count * es + 1);
        assert_non_null(buf);
        manta_status st = MANTA_OK;
        char *t = NULL;
        switch (s.type) {
        case CKPT_F32: st = ckpt_read_f32(r, s.name, buf, s.count, &e); break;
        case CKPT_I64: st = ckpt_read_i64(r, s.name, buf, s.count, &e); break;
        case CKPT_BYTES: st = ckpt_read_bytes(r, s.name, buf, s.count, &e); break;
        case CKPT_JSON:
            st = ckpt_read_json(r, s.name, &t, NULL, &e);
            if (st != MANTA_OK)
                assert_int_equal(st, MANTA_ERR_FORMAT);
            st = MANTA_OK;
            free(t);
            break;
        }
        assert_int_equal(st, MANTA_OK);
        free(buf);
    }
}

static void test_fuzz_mutations(void **state)
{
    (void)state;
    size_t n;
    unsigned char *good = sample_mem(&n);
    manta_rng rng;
    manta_rng_seed(&rng, 20240531, 3);
    static const uint64_t interesting[] = {
        0, 1, 7, 8, 255, 256, 0x7fffffff, 0x80000000u, 0xffffffffu, UINT64_MAX, 1ull << 62, 40};
    int loaded = 0, refused = 0;
    for (int it = 0; it < 2000; it++) {
        size_t len = n;
        unsigned char *b = malloc(n + 64);
        assert_non_null(b);
        memcpy(b, good, n);
        int kind = (int)manta_rng_below(&rng, 7);
        int reps = kind == 6 ? 2 + (int)manta_rng_below(&rng, 3) : 1;
        for (int k = 0; k < reps; k++) {
            int m = kind == 6 ? (int)manta_rng_below(&rng, 2) : kind;
            if (len == 0)
                break;
            size_t at = manta_rng_below(&rng, (uint32_t)len);
            switch (m) {
            case 0: b[at] ^= (unsigned char)(1u << manta_rng_below(&rng, 8)); break;
            case 1: b[at] = (unsigned char)manta_rng_u32(&rng); break;
            case 2: len = manta_rng_below(&rng, (uint32_t)len); break;
            case 3: {
                size_t add = 1 + manta_rng_below(&rng, 63);
                for (size_t i = 0; i < add; i++)
                    b[len + i] = (unsigned char)manta_rng_u32(&rng);
                len += add;
                break;
            }
            case 4: {
                at &= ~(size_t)3;
                uint64_t v = interesting[manta_rng_below(&rng, 12)];
                if (v == 40)
                    v = n;
                if (at + 8 <= len && manta_rng_below(&rng, 2))
                    put64(b + at, v);
                else if (at + 4 <= len)
                    put32(b + at, (uint32_t)v);
                break;
            }
            case 5: {
                size_t from = manta_rng_below(&rng, (uint32_t)len),
                       k2 = 1 + manta_rng_below(&rng, 32);
                if (from + k2 <= len && at + k2 <= len)
                    memmove(b + at, b + from, k2);
                break;
            }
            }
        }
        bool fixed = manta_rng_below(&rng, 2);
        if (fixed)
            fix_crcs(b, len);
        /* Exactly len bytes, so ASan catches any read past them. */
        unsigned char *exact = malloc(len ? len : 1);
        assert_non_null(exact);
        memcpy(exact, b, len);
        free(b);
        ckpt_reader *r;
        manta_err e;
        manta_err_clear(&e);
        manta_status st = ckpt_open_mem(exact, len, "fuzz", &r, &e);
        if (st == MANTA_OK) {
            loaded++;
            if (!fixed || (len == n && memcmp(exact, good, n) == 0))
                check_sample(r); /* an accepted unrepaired file is the original */
            else
                read_all(r);
            ckpt_close(r);
        } else {
            refused++;
            if (st != MANTA_ERR_FORMAT && st != MANTA_ERR_UNSUPPORTED)
                fail_msg("iteration %d: status %s (%s)", it, manta_status_str(st), e.msg);
            assert_null(r);
            assert_true(strstr(e.msg, "fuzz") != NULL);
            assert_true(strchr(e.msg, '\n') == NULL);
        }
        free(exact);
    }
    assert_int_equal(loaded + refused, 2000);
    assert_true(refused > 1000);
    print_message("# fuzz: %d loaded, %d refused\n", loaded, refused);
    free(good);
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
        cmocka_unit_test(test_round_trip_file),
        cmocka_unit_test(test_memory_writer_matches_file),
        cmocka_unit_test(test_device_view_round_trip),
        cmocka_unit_test(test_empty_arrays),
        cmocka_unit_test(test_bit_exact_floats),
        cmocka_unit_test(test_corrupt_byte_in_each_region),
        cmocka_unit_test(test_truncated_at_every_length),
        cmocka_unit_test(test_wrong_magic_and_not_a_file),
        cmocka_unit_test(test_other_version_and_flags_refused),
        cmocka_unit_test(test_hostile_sizes),
        cmocka_unit_test(test_duplicate_names),
        cmocka_unit_test(test_lookup_errors),
        cmocka_unit_test(test_invalid_writer_arguments),
        cmocka_unit_test(test_failed_write_keeps_previous),
        cmocka_unit_test(test_sticky_error_and_abort),
        cmocka_unit_test(test_file_name_with_spaces),
        cmocka_unit_test(test_file_changed_after_open),
        cmocka_unit_test(test_fuzz_mutations),
    };
    return cmocka_run_group_tests_name("checkpoint", tests, setup, teardown);
}
