/* Host utilities of runtime/core: whole-file reads (limit, folders, missing
 * files), atomic writes (content, no temporary left, a failed write keeps the
 * old file, the temporary file named), mkdir -p, the text buffer, the
 * little-endian helpers, and the container's streamed float32 sections
 * (chunks in order, a failing producer or consumer reported with its
 * message). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/testutil.h"
#include "core/container.h"
#include "core/fileio.h"
#include "core/le.h"
#include "core/strbuf.h"

static char dir[] = "/tmp/manta-core-io-XXXXXX";

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", dir, name);
}

static void expect_msg(const manta_err *e, const char *needle)
{
    if (!strstr(e->msg, needle))
        fail_msg("message '%s' lacks '%s'", e->msg, needle);
}

/* Entries of the test folder whose name contains ".tmp.". */
static int count_tmp_files(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

/* The file at p holds exactly the text want (read with a limit of its length). */
static void expect_file(const char *p, const char *want)
{
    manta_err e;
    char *text;
    size_t n;
    if (manta_file_read(p, strlen(want), &text, &n, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(n, strlen(want));
    assert_string_equal(text, want);
    free(text);
}

static void test_write_and_read(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "a.txt");
    manta_err e;
    assert_int_equal(manta_file_write_atomic(p, "hello\n", 6, &e), MANTA_OK);
    expect_file(p, "hello\n");
    /* replaced, not appended */
    assert_int_equal(manta_file_write_atomic(p, "x", 1, &e), MANTA_OK);
    expect_file(p, "x");
    assert_int_equal(count_tmp_files(), 0);
    /* an empty file */
    assert_int_equal(manta_file_write_atomic(p, NULL, 0, &e), MANTA_OK);
    expect_file(p, "");
    unlink(p);
}

static void test_read_errors(void **state)
{
    (void)state;
    char p[256];
    path_of(p, sizeof p, "big.txt");
    manta_err e;
    assert_int_equal(manta_file_write_atomic(p, "0123456789", 10, &e), MANTA_OK);
    char *text = (char *)1;
    assert_int_equal(manta_file_read(p, 9, &text, NULL, &e), MANTA_ERR_IO);
    assert_null(text);
    expect_msg(&e, p);
    expect_msg(&e, "10 bytes, more than the 9 allowed");
    unlink(p);
    assert_int_equal(manta_file_read(p, 100, &text, NULL, &e), MANTA_ERR_IO);
    expect_msg(&e, "big.txt: cannot open: No such file");
    assert_int_equal(manta_file_read(dir, 100, &text, NULL, &e), MANTA_ERR_IO);
    expect_msg(&e, "is a folder, not a file");
    /* a FIFO is refused without blocking */
    path_of(p, sizeof p, "fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    assert_int_equal(manta_file_read(p, 100, &text, NULL, &e), MANTA_ERR_IO);
    expect_msg(&e, "is not a regular file");
    unlink(p);
}

static void test_failed_write_keeps_old_file(void **state)
{
    (void)state;
    manta_err e;
    /* the temporary file cannot be created: it is named, nothing is left */
    char p[256];
    path_of(p, sizeof p, "missing/x.json");
    assert_int_equal(manta_file_write_atomic(p, "{}", 2, &e), MANTA_ERR_IO);
    expect_msg(&e, "cannot create the temporary file");
    expect_msg(&e, "missing/x.json.tmp.");
    /* the rename fails (the target is a folder): the folder stays, no temporary file */
    path_of(p, sizeof p, "taken");
    assert_int_equal(mkdir(p, 0755), 0);
    char q[256];
    path_of(q, sizeof q, "taken/inside");
    assert_int_equal(manta_file_write_atomic(q, "1", 1, &e), MANTA_OK);
    assert_int_equal(manta_file_write_atomic(p, "2", 1, &e), MANTA_ERR_IO);
    expect_msg(&e, p);
    expect_msg(&e, "cannot write");
    assert_int_equal(count_tmp_files(), 0);
    expect_file(q, "1");
    unlink(q);
    rmdir(p);
    assert_int_equal(manta_file_write_atomic("", "x", 1, &e), MANTA_ERR_INVALID_ARG);
}

static void test_tmp_name_and_sync_dir(void **state)
{
    (void)state;
    manta_err e;
    /* two writers of one path at once get their own temporary files */
    char p[256], want[320];
    path_of(p, sizeof p, "b.ckpt");
    char *tmp[2];
    int fd[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(manta_file_create_tmp(p, &tmp[k], &fd[k], &e), MANTA_OK);
        snprintf(want, sizeof want, "%s.tmp.%ld.%d", p, (long)getpid(), k);
        assert_string_equal(tmp[k], want);
        assert_true(fd[k] >= 0);
    }
    for (int k = 0; k < 2; k++) {
        close(fd[k]);
        assert_int_equal(remove(tmp[k]), 0);
        free(tmp[k]);
    }
    char none[300];
    snprintf(none, sizeof none, "%s/no-such-folder/x", p);
    assert_int_equal(manta_file_create_tmp(none, &tmp[0], &fd[0], &e), MANTA_ERR_IO);
    assert_null(tmp[0]);
    assert_int_equal(fd[0], -1);
    assert_non_null(strstr(e.msg, "no-such-folder/x"));
    path_of(p, sizeof p, "any");
    assert_int_equal(manta_file_sync_dir(p, &e), MANTA_OK);
    assert_int_equal(manta_file_sync_dir("no-folder-here", &e), MANTA_OK); /* "." */
    assert_int_equal(manta_file_sync_dir("/nonexistent-manta/x", &e), MANTA_ERR_IO);
    expect_msg(&e, "/nonexistent-manta: cannot open the folder");
}

static void test_mkdir_p(void **state)
{
    (void)state;
    manta_err e;
    char p[256], q[256];
    path_of(p, sizeof p, "d1/d2/d3/");
    assert_int_equal(manta_file_mkdir_p(p, &e), MANTA_OK);
    assert_int_equal(manta_file_mkdir_p(p, &e), MANTA_OK); /* exists: fine */
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    /* a file in the way */
    path_of(q, sizeof q, "d1/file");
    assert_int_equal(manta_file_write_atomic(q, "x", 1, &e), MANTA_OK);
    assert_int_equal(manta_file_mkdir_p(q, &e), MANTA_ERR_IO);
    expect_msg(&e, "d1/file: exists and is not a folder");
    path_of(p, sizeof p, "d1/file/sub");
    assert_int_equal(manta_file_mkdir_p(p, &e), MANTA_ERR_IO);
    expect_msg(&e, "d1/file/sub: cannot create the folder");
    assert_int_equal(manta_file_mkdir_p("", &e), MANTA_ERR_INVALID_ARG);
    unlink(q);
    const char *sub[] = {"d1/d2/d3", "d1/d2", "d1"};
    for (int i = 0; i < 3; i++) {
        path_of(p, sizeof p, sub[i]);
        assert_int_equal(rmdir(p), 0);
    }
}

static void test_strbuf(void **state)
{
    (void)state;
    manta_strbuf b = {0};
    assert_null(b.p);
    manta_strbuf_printf(&b, "%s=%d;", "a", 1);
    assert_string_equal(b.p, "a=1;");
    assert_int_equal(b.n, 4);
    /* grows past the first allocation, text intact */
    for (int i = 0; i < 2000; i++)
        manta_strbuf_printf(&b, "%04d", i);
    assert_false(b.oom);
    assert_int_equal(b.n, 4 + 2000 * 4);
    assert_int_equal(strlen(b.p), b.n);
    assert_memory_equal(b.p + 4 + 1999 * 4, "1999", 4);
    assert_true(b.cap > b.n);
    /* once failed, appends do nothing */
    b.oom = true;
    manta_strbuf_printf(&b, "more");
    assert_int_equal(b.n, 4 + 2000 * 4);
    manta_strbuf_free(&b);
    assert_null(b.p);
    assert_int_equal(b.n, 0);
    assert_false(b.oom);
    manta_strbuf_free(NULL);
}

static void test_little_endian(void **state)
{
    (void)state;
    unsigned char b[8];
    manta_le_put32(b, 0x04030201u);
    assert_memory_equal(b, "\x01\x02\x03\x04", 4);
    assert_int_equal(manta_le_get32(b), 0x04030201u);
    manta_le_put16(b, 0xbeef);
    assert_memory_equal(b, "\xef\xbe", 2);
    assert_int_equal(manta_le_get16(b), 0xbeef);
    manta_le_put64(b, 0x8877665544332211ull);
    assert_memory_equal(b, "\x11\x22\x33\x44\x55\x66\x77\x88", 8);
    assert_true(manta_le_get64(b) == 0x8877665544332211ull);
    manta_le_put(b, 0xabcdef, 3);
    assert_int_equal(manta_le_get(b, 3), 0xabcdef);
}

/* A producer of value i = i * 0.5 that fails at a given first index. */
typedef struct ramp {
    size_t fail_at; /* SIZE_MAX: never */
    size_t calls, next;
} ramp;

static manta_status ramp_fill(void *user, size_t first, float *dst, size_t k, manta_err *err)
{
    ramp *r = user;
    assert_int_equal(first, r->next);
    assert_true(k > 0 && k <= CKPT_STREAM_CHUNK);
    r->calls++;
    r->next = first + k;
    if (first == r->fail_at)
        return manta_err_set(err, MANTA_ERR_IO, "the source broke at %zu", first);
    for (size_t i = 0; i < k; i++)
        dst[i] = (float)(first + i) * 0.5f;
    return MANTA_OK;
}

static manta_status ramp_check(void *user, size_t first, const float *src, size_t k, manta_err *err)
{
    ramp *r = user;
    assert_int_equal(first, r->next);
    r->calls++;
    r->next = first + k;
    if (first == r->fail_at)
        return manta_err_set(err, MANTA_ERR_DEVICE_MEMORY, "the sink is full");
    for (size_t i = 0; i < k; i++)
        assert_true(src[i] == (float)(first + i) * 0.5f);
    return MANTA_OK;
}

static void test_container_streams(void **state)
{
    (void)state;
    const size_t n = 2 * CKPT_STREAM_CHUNK + 7;
    manta_err e;
    ckpt_writer *w;
    assert_int_equal(ckpt_writer_begin_mem("s", &w, &e), MANTA_OK);
    ramp src = {SIZE_MAX, 0, 0};
    assert_int_equal(ckpt_add_f32_stream(w, "ramp", n, ramp_fill, &src), MANTA_OK);
    assert_int_equal(src.calls, 3);
    assert_int_equal(ckpt_add_f32_stream(w, "empty", 0, NULL, NULL), MANTA_OK);
    void *data;
    size_t size;
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_OK);
    /* the same bytes as a plain float32 section */
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)i * 0.5f;
    assert_int_equal(ckpt_writer_begin_mem("s", &w, &e), MANTA_OK);
    ckpt_add_f32(w, "ramp", x, n);
    ckpt_add_f32(w, "empty", NULL, 0);
    void *plain;
    size_t plain_size;
    assert_int_equal(ckpt_writer_commit_mem(w, &plain, &plain_size), MANTA_OK);
    assert_int_equal(size, plain_size);
    assert_memory_equal(data, plain, size);
    free(plain);
    free(x);

    ckpt_reader *r;
    assert_int_equal(ckpt_open_mem(data, size, "s", &r, &e), MANTA_OK);
    ramp sink = {SIZE_MAX, 0, 0};
    assert_int_equal(ckpt_read_f32_stream(r, "ramp", n, ramp_check, &sink, &e), MANTA_OK);
    assert_int_equal(sink.calls, 3);
    assert_int_equal(ckpt_read_f32_stream(r, "empty", 0, NULL, NULL, &e), MANTA_OK);
    assert_int_equal(ckpt_read_f32_stream(r, "ramp", n, NULL, NULL, &e), MANTA_ERR_INVALID_ARG);
    expect_msg(&e, "no destination");
    ramp full = {CKPT_STREAM_CHUNK, 0, 0};
    assert_int_equal(ckpt_read_f32_stream(r, "ramp", n, ramp_check, &full, &e),
                     MANTA_ERR_DEVICE_MEMORY);
    expect_msg(&e, "checkpoint s: section 'ramp': the sink is full");
    assert_int_equal(full.calls, 2);
    ckpt_close(r);
    free(data);

    /* a failing producer: the writer's sticky error, with its message */
    assert_int_equal(ckpt_writer_begin_mem("t", &w, &e), MANTA_OK);
    ramp bad = {CKPT_STREAM_CHUNK, 0, 0};
    assert_int_equal(ckpt_add_f32_stream(w, "ramp", n, ramp_fill, &bad), MANTA_ERR_IO);
    expect_msg(&e, "checkpoint t: section 'ramp': the source broke at 65536");
    assert_int_equal(ckpt_add_f32(w, "next", NULL, 0), MANTA_ERR_IO);
    assert_int_equal(ckpt_writer_commit_mem(w, &data, &size), MANTA_ERR_IO);
    assert_null(data);
    assert_int_equal(ckpt_writer_begin_mem("u", &w, &e), MANTA_OK);
    assert_int_equal(ckpt_add_f32_stream(w, "x", 3, NULL, NULL), MANTA_ERR_INVALID_ARG);
    expect_msg(&e, "no data for 3 floats");
    ckpt_writer_abort(w);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_and_read),
        cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_failed_write_keeps_old_file),
        cmocka_unit_test(test_tmp_name_and_sync_dir),
        cmocka_unit_test(test_mkdir_p),
        cmocka_unit_test(test_strbuf),
        cmocka_unit_test(test_little_endian),
        cmocka_unit_test(test_container_streams),
    };
    return cmocka_run_group_tests_name("core host utilities", tests, setup, teardown);
}
