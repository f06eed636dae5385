#include "core/container.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/fileio.h"
#include "core/le.h"

#define MAGIC "MANTACKP"
#define END_MARK "MANTAEND"
/* A section's fixed header part and its trailer. */
#define SEC_FIXED 24
#define SEC_TRAILER 8
/* The smallest section: fixed part, 8 bytes of name, no payload, trailer. */
#define SEC_MIN (SEC_FIXED + 8 + SEC_TRAILER)
/* Host bytes buffered per write, and per chunk of a streamed section. */
#define IO_CHUNK (CKPT_STREAM_CHUNK * sizeof(float))

/* ---- shared helpers ----------------------------------------------------- */

static uint64_t pad8(uint64_t n) { return (8 - n % 8) % 8; }

static uint32_t crc_update(uint32_t crc, const void *p, size_t n)
{
    return n ? (uint32_t)crc32_z(crc, (const Bytef *)p, n) : crc;
}

static bool host_le(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Reverse the bytes of each of the n elements of size es (big-endian hosts). */
static void swap_elems(void *p, size_t n, size_t es)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++, b += es)
        for (size_t j = 0; j < es / 2; j++) {
            unsigned char t = b[j];
            b[j] = b[es - 1 - j];
            b[es - 1 - j] = t;
        }
}

static size_t elem_size(uint32_t type)
{
    switch (type) {
    case CKPT_F32: return 4;
    case CKPT_I64: return 8;
    case CKPT_BYTES:
    case CKPT_JSON: return 1;
    }
    return 0;
}

/* Plural noun for counts of a type: "1000 floats". */
static const char *elem_noun(ckpt_type t)
{
    switch (t) {
    case CKPT_F32: return "floats";
    case CKPT_I64: return "int64 values";
    case CKPT_BYTES:
    case CKPT_JSON: return "bytes";
    }
    return "elements";
}

const char *ckpt_type_name(ckpt_type t)
{
    switch (t) {
    case CKPT_F32: return "float32";
    case CKPT_I64: return "int64";
    case CKPT_BYTES: return "bytes";
    case CKPT_JSON: return "json";
    }
    return "unknown";
}

static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > CKPT_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
            return false;
    return true;
}

/* Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF)
 * without NUL bytes. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
            len = 2;
        else if (c >= 0xe0 && c <= 0xef) {
            len = 3;
            if (c == 0xe0)
                lo = 0xa0;
            else if (c == 0xed)
                hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            len = 4;
            if (c == 0xf0)
                lo = 0x90;
            else if (c == 0xf4)
                hi = 0x8f;
        } else
            return false;
        if (n - i < len)
            return false;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return false;
        for (size_t k = 2; k < len; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xbf)
                return false;
        i += len;
    }
    return true;
}

static bool json_ok(const char *s, size_t n)
{
    if (!utf8_ok((const unsigned char *)s, n))
        return false;
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(s, n, &end, false);
    if (!j)
        return false;
    cJSON_Delete(j);
    /* Only white space may follow the value. */
    for (; end < s + n; end++)
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r')
            return false;
    return true;
}

/* ---- writer ------------------------------------------------------------- */

struct ckpt_writer {
    manta_err *err;
    manta_status st; /* first failure; sticky */
    char *name;      /* target path, or the memory writer's name */
    char *tmp;       /* temporary file (file writers) */
    int fd;          /* temporary file; -1 for memory writers */
    ckpt_writer_opts opt;
    unsigned char *buf; /* file: pending bytes; memory: the whole file */
    size_t len, cap;
    uint64_t flushed;     /* file: bytes already written to fd */
    uint64_t off;         /* bytes emitted so far */
    uint32_t body_crc;    /* CRC of bytes [CKPT_HEADER_SIZE, off) */
    uint32_t sec_crc;     /* CRC of the current section so far */
    unsigned char *stage; /* IO_CHUNK bytes for streamed sections and byte swaps */
    char **names;
    size_t n_sec, names_cap;
};

static int fault(ckpt_writer *w, ckpt_io_op op, uint64_t off, size_t len)
{
    return w->opt.fault ? w->opt.fault(w->opt.fault_user, op, off, len) : 0;
}

/* Record the first failure (later ones keep the first message). */
static manta_status wfail(ckpt_writer *w, manta_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static manta_status wfail(ckpt_writer *w, manta_status code, const char *fmt, ...)
{
    if (w->st != MANTA_OK)
        return w->st;
    w->st = code;
    if (w->err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->err->msg, sizeof w->err->msg, fmt, ap);
        va_end(ap);
        w->err->code = code;
    }
    return code;
}

static manta_status wfail_io(ckpt_writer *w, const char *what, int e)
{
    return wfail(w, MANTA_ERR_IO, "checkpoint %s: %s %s failed: %s", w->name, what, w->tmp,
                 strerror(e));
}

/* write() all of p at the current end of the temporary file. */
static manta_status write_all(ckpt_writer *w, const void *p, size_t n)
{
    const unsigned char *b = p;
    int e = fault(w, CKPT_IO_WRITE, w->flushed, n);
    if (e)
        return wfail_io(w, "writing", e);
    while (n > 0) {
        ssize_t k = write(w->fd, b, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return wfail_io(w, "writing", errno);
        }
        if (k == 0)
            return wfail_io(w, "writing", EIO);
        b += k, n -= (size_t)k, w->flushed += (uint64_t)k;
    }
    return MANTA_OK;
}

static manta_status flush_buf(ckpt_writer *w)
{
    if (w->fd < 0 || w->len == 0)
        return MANTA_OK;
    manta_status st = write_all(w, w->buf, w->len);
    w->len = 0;
    return st;
}

/* Append bytes without touching the CRCs. */
static manta_status put_raw(ckpt_writer *w, const void *p, size_t n)
{
    if (w->st != MANTA_OK)
        return w->st;
    const unsigned char *b = p;
    if (w->fd < 0) {
        if (n > w->cap - w->len) {
            size_t cap = w->cap ? w->cap : 4096;
            while (cap - w->len < n) {
                if (cap > SIZE_MAX / 2)
                    return wfail(w, MANTA_ERR_NO_MEMORY, "checkpoint %s: too large for memory",
                                 w->name);
                cap *= 2;
            }
            unsigned char *nb = realloc(w->buf, cap);
            if (!nb)
                return wfail(w, MANTA_ERR_NO_MEMORY,
                             "checkpoint %s: out of host memory growing the buffer to %zu bytes",
                             w->name, cap);
            w->buf = nb, w->cap = cap;
        }
        if (n)
            memcpy(w->buf + w->len, b, n);
        w->len += n;
        w->off += n;
        return MANTA_OK;
    }
    w->off += n;
    if (n >= w->cap) { /* large: bypass the buffer */
        manta_status st = flush_buf(w);
        return st != MANTA_OK ? st : write_all(w, b, n);
    }
    while (n > 0) {
        if (w->len == w->cap) {
            manta_status st = flush_buf(w);
            if (st != MANTA_OK)
                return st;
        }
        size_t k = w->cap - w->len < n ? w->cap - w->len : n;
        memcpy(w->buf + w->len, b, k);
        w->len += k, b += k, n -= k;
    }
    return MANTA_OK;
}

/* Append bytes that the file CRC and the current section CRC cover. */
static manta_status emit(ckpt_writer *w, const void *p, size_t n)
{
    if (w->st != MANTA_OK)
        return w->st;
    w->body_crc = crc_update(w->body_crc, p, n);
    w->sec_crc = crc_update(w->sec_crc, p, n);
    return put_raw(w, p, n);
}

static manta_status need_stage(ckpt_writer *w)
{
    if (!w->stage && !(w->stage = malloc(IO_CHUNK)))
        return wfail(w, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", w->name);
    return MANTA_OK;
}

/* Emit n host elements of size es in little-endian order. */
static manta_status emit_elems(ckpt_writer *w, const void *src, size_t n, size_t es)
{
    if (host_le() || es == 1)
        return emit(w, src, n * es);
    manta_status st = need_stage(w);
    const unsigned char *b = src;
    size_t per = IO_CHUNK / es;
    for (size_t done = 0; st == MANTA_OK && done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        memcpy(w->stage, b + done * es, k * es);
        swap_elems(w->stage, k, es);
        st = emit(w, w->stage, k * es);
    }
    return st;
}

static manta_status writer_new(const char *name, ckpt_writer **out, manta_err *err)
{
    ckpt_writer *w = calloc(1, sizeof *w);
    if (!w)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", name);
    w->err = err;
    w->fd = -1;
    if (!(w->name = strdup(name))) {
        free(w);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", name);
    }
    *out = w;
    return MANTA_OK;
}

static void writer_free(ckpt_writer *w)
{
    for (size_t i = 0; i < w->n_sec; i++)
        free(w->names[i]);
    free(w->names);
    free(w->stage);
    free(w->buf);
    free(w->tmp);
    free(w->name);
    free(w);
}

/* Close and remove the temporary file, if any. */
static void discard_tmp(ckpt_writer *w)
{
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    if (w->tmp)
        unlink(w->tmp);
}

manta_status ckpt_writer_begin(const char *path, const ckpt_writer_opts *opt, ckpt_writer **out,
                               manta_err *err)
{
    if (out)
        *out = NULL;
    if (!out || !path || !path[0])
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint writer: a path and an output pointer are required");
    ckpt_writer *w;
    manta_status st = writer_new(path, &w, err);
    if (st != MANTA_OK)
        return st;
    if (opt)
        w->opt = *opt;
    w->cap = IO_CHUNK;
    w->buf = malloc(w->cap);
    if (!w->buf) {
        writer_free(w);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", path);
    }
    int e = fault(w, CKPT_IO_CREATE, 0, 0);
    manta_err why;
    manta_status cs = MANTA_OK;
    if (e)
        manta_err_set(err, MANTA_ERR_IO, "checkpoint %s: cannot create its temporary file: %s",
                      path, strerror(e));
    else if ((cs = manta_file_create_tmp(path, &w->tmp, &w->fd, &why)) != MANTA_OK)
        manta_err_set(err, cs, "checkpoint %s", why.msg);
    if (e || cs != MANTA_OK) { /* nothing to remove */
        writer_free(w);
        return e ? MANTA_ERR_IO : cs;
    }
    /* Header placeholder, rewritten at commit. */
    unsigned char zero[CKPT_HEADER_SIZE] = {0};
    put_raw(w, zero, sizeof zero);
    *out = w;
    return MANTA_OK;
}

manta_status ckpt_writer_begin_mem(const char *name, ckpt_writer **out, manta_err *err)
{
    if (!out)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint writer: an output pointer is required");
    *out = NULL;
    ckpt_writer *w;
    manta_status st = writer_new(name ? name : "<memory>", &w, err);
    if (st != MANTA_OK)
        return st;
    unsigned char zero[CKPT_HEADER_SIZE] = {0};
    if ((st = put_raw(w, zero, sizeof zero)) != MANTA_OK) {
        writer_free(w);
        return st;
    }
    *out = w;
    return MANTA_OK;
}

/* Validate the name, remember it and emit the section header. */
static manta_status section_begin(ckpt_writer *w, const char *name, ckpt_type type, size_t n,
                                  const void *data)
{
    if (w->st != MANTA_OK)
        return w->st;
    size_t nl = name ? strlen(name) : 0;
    if (!name_ok(name, nl))
        return wfail(w, MANTA_ERR_INVALID_ARG,
                     "checkpoint %s: section name '%.*s' is not 1 to %d printable ASCII characters",
                     w->name, name ? (int)(nl > 64 ? 64 : nl) : 0, name ? name : "", CKPT_NAME_MAX);
    for (size_t i = 0; i < w->n_sec; i++)
        if (strcmp(w->names[i], name) == 0)
            return wfail(w, MANTA_ERR_INVALID_ARG, "checkpoint %s: section '%s' added twice",
                         w->name, name);
    if (n > 0 && !data)
        return wfail(w, MANTA_ERR_INVALID_ARG, "checkpoint %s: section '%s': no data for %zu %s",
                     w->name, name, n, elem_noun(type));
    if (n > SIZE_MAX / elem_size(type))
        return wfail(w, MANTA_ERR_INVALID_ARG, "checkpoint %s: section '%s': %zu %s is too many",
                     w->name, name, n, elem_noun(type));
    if (w->n_sec >= UINT32_MAX)
        return wfail(w, MANTA_ERR_INVALID_ARG, "checkpoint %s: too many sections", w->name);
    if (w->n_sec == w->names_cap) {
        size_t cap = w->names_cap ? 2 * w->names_cap : 16;
        char **nn = realloc(w->names, cap * sizeof *nn);
        if (!nn)
            return wfail(w, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", w->name);
        w->names = nn, w->names_cap = cap;
    }
    if (!(w->names[w->n_sec] = strdup(name)))
        return wfail(w, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", w->name);
    w->n_sec++;

    unsigned char h[SEC_FIXED + CKPT_NAME_MAX + 8] = {0};
    size_t span = SEC_FIXED + nl + (size_t)pad8(nl);
    manta_le_put32(h + 4, (uint32_t)type);
    manta_le_put64(h + 8, (uint64_t)n);
    manta_le_put32(h + 16, (uint32_t)nl);
    memcpy(h + SEC_FIXED, name, nl);
    manta_le_put32(h, crc_update(0, h + 4, span - 4));
    w->sec_crc = 0;
    return emit(w, h, span);
}

/* Pad the payload of `bytes` bytes and emit the section trailer. */
static manta_status section_end(ckpt_writer *w, uint64_t bytes)
{
    static const unsigned char zero[8] = {0};
    manta_status st = emit(w, zero, (size_t)pad8(bytes));
    if (st != MANTA_OK)
        return st;
    unsigned char t[SEC_TRAILER] = {0};
    manta_le_put32(t, w->sec_crc);
    return emit(w, t, sizeof t);
}

static manta_status add_host(ckpt_writer *w, const char *name, ckpt_type type, const void *data,
                             size_t n)
{
    if (!w)
        return MANTA_ERR_INVALID_ARG;
    size_t es = elem_size(type);
    manta_status st = section_begin(w, name, type, n, data);
    if (st == MANTA_OK && n)
        st = emit_elems(w, data, n, es);
    if (st == MANTA_OK)
        st = section_end(w, (uint64_t)n * es);
    return st;
}

manta_status ckpt_add_f32(ckpt_writer *w, const char *name, const float *data, size_t n)
{
    return add_host(w, name, CKPT_F32, data, n);
}

manta_status ckpt_add_i64(ckpt_writer *w, const char *name, const int64_t *data, size_t n)
{
    return add_host(w, name, CKPT_I64, data, n);
}

manta_status ckpt_add_bytes(ckpt_writer *w, const char *name, const void *data, size_t n)
{
    return add_host(w, name, CKPT_BYTES, data, n);
}

manta_status ckpt_add_json(ckpt_writer *w, const char *name, const char *text)
{
    if (!w)
        return MANTA_ERR_INVALID_ARG;
    if (w->st != MANTA_OK)
        return w->st;
    if (!text || !json_ok(text, strlen(text)))
        return wfail(w, MANTA_ERR_INVALID_ARG,
                     "checkpoint %s: section '%s' is not valid UTF-8 JSON text", w->name,
                     name ? name : "");
    return add_host(w, name, CKPT_JSON, text, strlen(text));
}

manta_status ckpt_add_f32_stream(ckpt_writer *w, const char *name, size_t n, ckpt_f32_source src,
                                 void *user)
{
    if (!w)
        return MANTA_ERR_INVALID_ARG;
    /* section_begin checks the data pointer for NULL only. */
    manta_status st = section_begin(w, name, CKPT_F32, n, src ? (const void *)&src : NULL);
    if (st == MANTA_OK)
        st = need_stage(w);
    size_t per = CKPT_STREAM_CHUNK;
    for (size_t done = 0; st == MANTA_OK && done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        manta_err why;
        manta_err_clear(&why);
        manta_status ss = src(user, done, (float *)(void *)w->stage, k, &why);
        if (ss != MANTA_OK)
            return wfail(w, ss, "checkpoint %s: section '%s': %s", w->name, name,
                         manta_err_msg(&why, ss));
        if (!host_le())
            swap_elems(w->stage, k, sizeof(float));
        st = emit(w, w->stage, k * sizeof(float));
    }
    if (st == MANTA_OK)
        st = section_end(w, (uint64_t)n * sizeof(float));
    return st;
}

/* Emit the trailer and build the final header into hdr. */
static manta_status finish(ckpt_writer *w, unsigned char hdr[CKPT_HEADER_SIZE])
{
    if (w->st != MANTA_OK)
        return w->st;
    unsigned char t[CKPT_TRAILER_SIZE] = {0};
    memcpy(t, END_MARK, 8);
    manta_status st = emit(w, t, CKPT_TRAILER_SIZE - 4);
    if (st != MANTA_OK)
        return st;
    uint64_t size = w->off + 4;
    memset(hdr, 0, CKPT_HEADER_SIZE);
    memcpy(hdr, MAGIC, 8);
    manta_le_put32(hdr + 8, CKPT_FORMAT_VERSION);
    manta_le_put32(hdr + 12, 0);
    manta_le_put32(hdr + 16, (uint32_t)w->n_sec);
    manta_le_put64(hdr + 24, size);
    manta_le_put32(hdr + 32, crc_update(0, hdr, 32));
    uint32_t file_crc = (uint32_t)crc32_combine(crc_update(0, hdr, CKPT_HEADER_SIZE), w->body_crc,
                                                (z_off_t)(w->off - CKPT_HEADER_SIZE));
    unsigned char c[4];
    manta_le_put32(c, file_crc);
    return put_raw(w, c, 4);
}

manta_status ckpt_writer_commit(ckpt_writer *w)
{
    if (!w)
        return MANTA_ERR_INVALID_ARG;
    if (w->fd < 0) {
        manta_status st = wfail(
            w, MANTA_ERR_INVALID_ARG,
            "checkpoint %s: a memory writer is finished with ckpt_writer_commit_mem", w->name);
        writer_free(w);
        return st;
    }
    unsigned char hdr[CKPT_HEADER_SIZE];
    manta_status st = finish(w, hdr);
    if (st == MANTA_OK)
        st = flush_buf(w);
    if (st == MANTA_OK) {
        int e = fault(w, CKPT_IO_WRITE, 0, sizeof hdr);
        ssize_t k = e ? -1 : pwrite(w->fd, hdr, sizeof hdr, 0);
        if (k != (ssize_t)sizeof hdr)
            st = wfail_io(w, "writing the header of", e ? e : k < 0 ? errno : EIO);
    }
    if (st == MANTA_OK) {
        int e = fault(w, CKPT_IO_SYNC, 0, 0);
        if (e || fsync(w->fd) != 0)
            st = wfail_io(w, "fsync of", e ? e : errno);
    }
    if (st == MANTA_OK) {
        int fd = w->fd;
        w->fd = -1;
        if (close(fd) != 0)
            st = wfail_io(w, "closing", errno);
    }
    if (st == MANTA_OK) {
        int e = fault(w, CKPT_IO_RENAME, 0, 0);
        if (e || rename(w->tmp, w->name) != 0) {
            e = e ? e : errno;
            st = wfail(w, MANTA_ERR_IO, "checkpoint %s: renaming %s over it failed: %s", w->name,
                       w->tmp, strerror(e));
        }
    }
    if (st != MANTA_OK) {
        discard_tmp(w);
        writer_free(w);
        return st;
    }
    manta_err why;
    int e = fault(w, CKPT_IO_SYNC_DIR, 0, 0);
    manta_status ds = e ? manta_err_set(&why, MANTA_ERR_IO, "%s", strerror(e))
                        : manta_file_sync_dir(w->name, &why);
    if (ds != MANTA_OK)
        st = wfail(w, MANTA_ERR_IO,
                   "checkpoint %s: written, but syncing its folder failed (it may not survive a "
                   "crash): %s",
                   w->name, why.msg);
    writer_free(w);
    return st;
}

manta_status ckpt_writer_commit_mem(ckpt_writer *w, void **data, size_t *size)
{
    if (data)
        *data = NULL;
    if (size)
        *size = 0;
    if (!w)
        return MANTA_ERR_INVALID_ARG;
    manta_status st = MANTA_OK;
    if (w->fd >= 0 || !data || !size)
        st = wfail(w, MANTA_ERR_INVALID_ARG,
                   "checkpoint %s: ckpt_writer_commit_mem needs a memory writer and output "
                   "pointers",
                   w->name);
    unsigned char hdr[CKPT_HEADER_SIZE];
    if (st == MANTA_OK)
        st = finish(w, hdr);
    if (st == MANTA_OK) {
        memcpy(w->buf, hdr, sizeof hdr);
        *data = w->buf;
        *size = w->len;
        w->buf = NULL;
    }
    discard_tmp(w);
    writer_free(w);
    return st;
}

void ckpt_writer_abort(ckpt_writer *w)
{
    if (!w)
        return;
    discard_tmp(w);
    writer_free(w);
}

/* ---- reader ------------------------------------------------------------- */

typedef struct rsec {
    const char *name; /* into the pool, set once verification is done */
    size_t name_off;
    ckpt_type type;
    uint64_t count;
    uint64_t payload;  /* file offset of the payload */
    uint64_t bytes;    /* payload bytes, without padding */
    uint32_t crc_head; /* section CRC over the header alone */
    uint32_t crc;      /* the section's stored CRC */
} rsec;

struct ckpt_reader {
    char *name;
    int fd; /* -1 for memory readers */
    const unsigned char *mem;
    uint64_t size;
    rsec *sec;
    size_t n_sec, sec_cap;
    char *pool;
    size_t pool_len, pool_cap;
    rsec **sorted;        /* by name */
    unsigned char *chunk; /* IO_CHUNK bytes */
};

/* Read n bytes at off (off + n is within the size checked at open). */
static manta_status rd(const ckpt_reader *r, uint64_t off, void *dst, size_t n, manta_err *err)
{
    if (off > r->size || n > r->size - off)
        return manta_err_set(err, MANTA_ERR_INTERNAL,
                             "checkpoint %s: read of %zu bytes at %llu past the end", r->name, n,
                             (unsigned long long)off);
    if (r->fd < 0) {
        if (n)
            memcpy(dst, r->mem + off, n);
        return MANTA_OK;
    }
    unsigned char *b = dst;
    while (n > 0) {
        ssize_t k = pread(r->fd, b, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return manta_err_set(err, MANTA_ERR_IO, "checkpoint %s: read failed at byte %llu: %s",
                                 r->name, (unsigned long long)off, strerror(errno));
        if (k == 0)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "checkpoint %s: truncated while reading byte %llu (the file "
                                 "changed after it was opened?)",
                                 r->name, (unsigned long long)off);
        b += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return MANTA_OK;
}

/* Verify section #i starting at *off (the sections end at `end`) and add it
 * to the index; *fcrc accumulates the file CRC. */
static manta_status verify_section(ckpt_reader *r, size_t i, uint64_t *off, uint64_t end,
                                   uint32_t *fcrc, manta_err *err)
{
    const char *cn = r->name;
    unsigned long long at = (unsigned long long)*off;
    uint64_t avail = end - *off;
    if (avail < SEC_MIN)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: section #%zu at byte %llu runs past the end of the sections "
            "(byte %llu)",
            cn, i + 1, at, (unsigned long long)end);
    unsigned char h[SEC_FIXED + CKPT_NAME_MAX + 8];
    manta_status st = rd(r, *off, h, SEC_FIXED, err);
    if (st != MANTA_OK)
        return st;
    uint32_t nl = manta_le_get32(h + 16);
    if (nl == 0 || nl > CKPT_NAME_MAX)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: header of section #%zu (byte %llu) is corrupt (name length "
            "%u)",
            cn, i + 1, at, nl);
    size_t span = SEC_FIXED + nl + (size_t)pad8(nl);
    if (avail < span + SEC_TRAILER)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: header of section #%zu (byte %llu) runs past the end of the "
            "sections",
            cn, i + 1, at);
    if ((st = rd(r, *off + SEC_FIXED, h + SEC_FIXED, span - SEC_FIXED, err)) != MANTA_OK)
        return st;
    if (crc_update(0, h + 4, span - 4) != manta_le_get32(h))
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: header of section #%zu (byte %llu) is corrupt (CRC mismatch)", cn,
            i + 1, at);
    const char *name = (const char *)h + SEC_FIXED;
    bool zero = manta_le_get32(h + 20) == 0;
    for (size_t k = SEC_FIXED + nl; k < span; k++)
        zero = zero && h[k] == 0;
    if (!zero || !name_ok(name, nl))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: header of section #%zu (byte %llu) is corrupt (%s)",
                             cn, i + 1, at,
                             zero ? "name is not printable ASCII" : "reserved bytes not zero");
    uint32_t type = manta_le_get32(h + 4);
    size_t es = elem_size(type);
    if (!es)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: section '%.*s' has unknown type %u", cn, (int)nl, name,
                             type);
    uint64_t count = manta_le_get64(h + 8);
    uint64_t room = avail - span - SEC_TRAILER;
    if (count > room / es || count * es + pad8(count * es) > room)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: section '%.*s' claims %llu %s, more than the file holds", cn, (int)nl,
            name, (unsigned long long)count, elem_noun((ckpt_type)type));
    uint64_t bytes = count * es, pad = pad8(bytes);

    uint32_t scrc = crc_update(0, h, span);
    *fcrc = crc_update(*fcrc, h, span);
    uint32_t crc_head = scrc;
    uint64_t p = *off + span;
    for (uint64_t done = 0; done < bytes;) {
        size_t k = bytes - done < IO_CHUNK ? (size_t)(bytes - done) : IO_CHUNK;
        if ((st = rd(r, p + done, r->chunk, k, err)) != MANTA_OK)
            return st;
        scrc = crc_update(scrc, r->chunk, k);
        *fcrc = crc_update(*fcrc, r->chunk, k);
        done += k;
    }
    unsigned char t[8 + SEC_TRAILER];
    if ((st = rd(r, p + bytes, t, (size_t)pad + SEC_TRAILER, err)) != MANTA_OK)
        return st;
    scrc = crc_update(scrc, t, (size_t)pad);
    *fcrc = crc_update(*fcrc, t, (size_t)pad + SEC_TRAILER);
    if (scrc != manta_le_get32(t + pad))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: section '%.*s' is corrupt (CRC mismatch)", cn, (int)nl,
                             name);
    zero = manta_le_get32(t + pad + 4) == 0;
    for (uint64_t k = 0; k < pad; k++)
        zero = zero && t[k] == 0;
    if (!zero)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: section '%.*s' is corrupt (reserved bytes not zero)",
                             cn, (int)nl, name);

    if (r->n_sec == r->sec_cap) {
        size_t cap = r->sec_cap ? 2 * r->sec_cap : 16;
        rsec *ns = realloc(r->sec, cap * sizeof *ns);
        if (!ns)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", cn);
        r->sec = ns, r->sec_cap = cap;
    }
    if (r->pool_cap - r->pool_len < nl + 1) {
        size_t cap = r->pool_cap ? 2 * r->pool_cap : 1024;
        while (cap - r->pool_len < nl + 1)
            cap *= 2;
        char *np = realloc(r->pool, cap);
        if (!np)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", cn);
        r->pool = np, r->pool_cap = cap;
    }
    rsec *s = &r->sec[r->n_sec++];
    s->name = NULL;
    s->name_off = r->pool_len;
    memcpy(r->pool + r->pool_len, name, nl);
    r->pool[r->pool_len + nl] = '\0';
    r->pool_len += nl + 1;
    s->type = (ckpt_type)type;
    s->count = count;
    s->payload = p;
    s->bytes = bytes;
    s->crc_head = crc_head;
    s->crc = scrc;
    *off = p + bytes + pad + SEC_TRAILER;
    return MANTA_OK;
}

static int cmp_sec(const void *a, const void *b)
{
    const rsec *x = *(rsec *const *)a, *y = *(rsec *const *)b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x < y ? -1 : x > y);
}

static manta_status verify(ckpt_reader *r, manta_err *err)
{
    const char *cn = r->name;
    unsigned long long size = (unsigned long long)r->size;
    if (r->size == 0)
        return manta_err_set(err, MANTA_ERR_FORMAT, "checkpoint %s is empty", cn);
    unsigned char h[CKPT_HEADER_SIZE];
    size_t hn = r->size < CKPT_HEADER_SIZE ? (size_t)r->size : CKPT_HEADER_SIZE;
    manta_status st = rd(r, 0, h, hn, err);
    if (st != MANTA_OK)
        return st;
    if (memcmp(h, MAGIC, hn < 8 ? hn : 8) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s is not a manta checkpoint (no \"%s\" magic)", cn, MAGIC);
    if (r->size < CKPT_HEADER_SIZE)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s is truncated (%llu bytes, shorter than its %d-byte header)", cn, size,
            CKPT_HEADER_SIZE);
    uint32_t version = manta_le_get32(h + 8);
    if (version != CKPT_FORMAT_VERSION)
        return manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                             "checkpoint %s is format version %u, this build reads %u", cn, version,
                             CKPT_FORMAT_VERSION);
    if (crc_update(0, h, 32) != manta_le_get32(h + 32))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: header is corrupt (CRC mismatch)", cn);
    if (manta_le_get32(h + 20) != 0 || manta_le_get32(h + 36) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: header is corrupt (reserved bytes not zero)", cn);
    uint32_t flags = manta_le_get32(h + 12);
    if (flags != 0)
        return manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                             "checkpoint %s uses flags 0x%x that this build does not know", cn,
                             flags);
    uint64_t fsize = manta_le_get64(h + 24);
    if (r->size < fsize)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s is truncated (%llu of %llu bytes)", cn, size,
                             (unsigned long long)fsize);
    if (r->size > fsize)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s has %llu bytes of trailing data after its end (byte %llu)", cn,
            size - (unsigned long long)fsize, (unsigned long long)fsize);
    if (fsize < CKPT_HEADER_SIZE + CKPT_TRAILER_SIZE)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: header is corrupt (file size %llu is below the minimum %d)", cn,
            (unsigned long long)fsize, CKPT_HEADER_SIZE + CKPT_TRAILER_SIZE);
    uint64_t end = fsize - CKPT_TRAILER_SIZE;
    uint32_t nsec = manta_le_get32(h + 16);
    if (nsec > (end - CKPT_HEADER_SIZE) / SEC_MIN)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: header claims %u sections, more than %llu bytes can hold", cn, nsec,
            size);

    if (!(r->chunk = malloc(IO_CHUNK)))
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", cn);
    uint32_t fcrc = crc_update(0, h, CKPT_HEADER_SIZE);
    uint64_t off = CKPT_HEADER_SIZE;
    for (size_t i = 0; i < nsec; i++)
        if ((st = verify_section(r, i, &off, end, &fcrc, err)) != MANTA_OK)
            return st;
    if (off != end)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "checkpoint %s: its %u sections end at byte %llu, but the end marker is at "
            "byte %llu",
            cn, nsec, (unsigned long long)off, (unsigned long long)end);
    unsigned char t[CKPT_TRAILER_SIZE];
    if ((st = rd(r, end, t, sizeof t, err)) != MANTA_OK)
        return st;
    if (memcmp(t, END_MARK, 8) != 0 || manta_le_get32(t + 8) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT, "checkpoint %s: end marker is corrupt", cn);
    fcrc = crc_update(fcrc, t, CKPT_TRAILER_SIZE - 4);
    if (fcrc != manta_le_get32(t + 12))
        return manta_err_set(err, MANTA_ERR_FORMAT, "checkpoint %s is corrupt (file CRC mismatch)",
                             cn);

    if (r->n_sec) {
        if (!(r->sorted = malloc(r->n_sec * sizeof *r->sorted)))
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", cn);
        for (size_t i = 0; i < r->n_sec; i++) {
            r->sec[i].name = r->pool + r->sec[i].name_off;
            r->sorted[i] = &r->sec[i];
        }
        qsort(r->sorted, r->n_sec, sizeof *r->sorted, cmp_sec);
        for (size_t i = 1; i < r->n_sec; i++)
            if (strcmp(r->sorted[i - 1]->name, r->sorted[i]->name) == 0)
                return manta_err_set(err, MANTA_ERR_FORMAT,
                                     "checkpoint %s: section '%s' appears twice", cn,
                                     r->sorted[i]->name);
    }
    return MANTA_OK;
}

static manta_status reader_finish_open(ckpt_reader *r, ckpt_reader **out, manta_err *err)
{
    manta_status st = verify(r, err);
    if (st != MANTA_OK) {
        ckpt_close(r);
        return st;
    }
    free(r->chunk); /* reallocated on demand for device reads */
    r->chunk = NULL;
    *out = r;
    return MANTA_OK;
}

static manta_status reader_new(const char *name, ckpt_reader **out, manta_err *err)
{
    ckpt_reader *r = calloc(1, sizeof *r);
    if (r && !(r->name = strdup(name))) {
        free(r);
        r = NULL;
    }
    if (!r)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory", name);
    r->fd = -1;
    *out = r;
    return MANTA_OK;
}

manta_status ckpt_open(const char *path, ckpt_reader **out, manta_err *err)
{
    if (out)
        *out = NULL;
    if (!out || !path)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint reader: a path and an output pointer "
                             "are required");
    ckpt_reader *r;
    manta_status st = reader_new(path, &r, err);
    if (st != MANTA_OK)
        return st;
    /* O_NONBLOCK: a FIFO must not block the open; it is refused below. */
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (r->fd < 0) {
        st = manta_err_set(err, MANTA_ERR_IO, "checkpoint %s: cannot open: %s", path,
                           strerror(errno));
        ckpt_close(r);
        return st;
    }
    struct stat sb;
    if (fstat(r->fd, &sb) != 0) {
        st = manta_err_set(err, MANTA_ERR_IO, "checkpoint %s: cannot stat: %s", path,
                           strerror(errno));
        ckpt_close(r);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = manta_err_set(err, MANTA_ERR_IO, "checkpoint %s: %s", path,
                           S_ISDIR(sb.st_mode) ? "is a folder, not a file"
                                               : "is not a regular file");
        ckpt_close(r);
        return st;
    }
    r->size = (uint64_t)sb.st_size;
    return reader_finish_open(r, out, err);
}

manta_status ckpt_open_mem(const void *data, size_t size, const char *name, ckpt_reader **out,
                           manta_err *err)
{
    if (out)
        *out = NULL;
    if (!name)
        name = "<memory>";
    if (!out || (!data && size))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint %s: data and an output pointer are required", name);
    ckpt_reader *r;
    manta_status st = reader_new(name, &r, err);
    if (st != MANTA_OK)
        return st;
    r->mem = data;
    r->size = size;
    return reader_finish_open(r, out, err);
}

void ckpt_close(ckpt_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->sec);
    free(r->pool);
    free(r->sorted);
    free(r->chunk);
    free(r->name);
    free(r);
}

size_t ckpt_num_sections(const ckpt_reader *r) { return r ? r->n_sec : 0; }

bool ckpt_section_at(const ckpt_reader *r, size_t i, ckpt_section_info *out)
{
    if (!r || i >= r->n_sec || !out)
        return false;
    out->name = r->sec[i].name;
    out->type = r->sec[i].type;
    out->count = r->sec[i].count;
    return true;
}

static const rsec *lookup(const ckpt_reader *r, const char *name)
{
    if (!r || !name || r->n_sec == 0)
        return NULL;
    size_t lo = 0, hi = r->n_sec;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->sorted[mid]->name, name);
        if (c == 0)
            return r->sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool ckpt_has(const ckpt_reader *r, const char *name) { return lookup(r, name) != NULL; }

static manta_status find_sec(const ckpt_reader *r, const char *name, ckpt_type type,
                             const rsec **out, manta_err *err)
{
    if (!r || !name)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint reader: no reader or section name");
    const rsec *s = lookup(r, name);
    if (!s)
        return manta_err_set(err, MANTA_ERR_FORMAT, "checkpoint %s has no section '%s'", r->name,
                             name);
    if (s->type != type)
        return manta_err_set(err, MANTA_ERR_FORMAT, "checkpoint %s: section '%s' is %s, not %s",
                             r->name, name, ckpt_type_name(s->type), ckpt_type_name(type));
    *out = s;
    return MANTA_OK;
}

manta_status ckpt_find(const ckpt_reader *r, const char *name, ckpt_type type, uint64_t *count,
                       manta_err *err)
{
    const rsec *s = NULL;
    manta_status st = find_sec(r, name, type, &s, err);
    if (st == MANTA_OK && count)
        *count = s->count;
    return st;
}

/* Find, check the exact count and the destination. */
static manta_status find_exact(const ckpt_reader *r, const char *name, ckpt_type type, size_t n,
                               bool have_dst, const rsec **out, manta_err *err)
{
    manta_status st = find_sec(r, name, type, out, err);
    if (st != MANTA_OK)
        return st;
    if ((*out)->count != (uint64_t)n)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "checkpoint %s: section '%s' has %llu %s, the model "
                             "needs %zu",
                             r->name, name, (unsigned long long)(*out)->count, elem_noun(type), n);
    if (n > 0 && !have_dst)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint %s: section '%s': no destination", r->name, name);
    return MANTA_OK;
}

static manta_status crc_mismatch(const ckpt_reader *r, const rsec *s, manta_err *err)
{
    return manta_err_set(
        err, MANTA_ERR_FORMAT,
        "checkpoint %s: section '%s' is corrupt (CRC mismatch; the file changed after "
        "it was opened?)",
        r->name, s->name);
}

/* Finish a section CRC with its padding and compare. */
static manta_status check_tail(const ckpt_reader *r, const rsec *s, uint32_t crc, manta_err *err)
{
    unsigned char pad[8];
    size_t np = (size_t)pad8(s->bytes);
    manta_status st = rd(r, s->payload + s->bytes, pad, np, err);
    if (st != MANTA_OK)
        return st;
    return crc_update(crc, pad, np) == s->crc ? MANTA_OK : crc_mismatch(r, s, err);
}

/* Copy a whole payload into host memory and re-check its CRC. */
static manta_status read_host(ckpt_reader *r, const rsec *s, void *dst, size_t es, manta_err *err)
{
    size_t bytes = (size_t)s->bytes;
    manta_status st = rd(r, s->payload, dst, bytes, err);
    if (st != MANTA_OK)
        return st;
    if ((st = check_tail(r, s, crc_update(s->crc_head, dst, bytes), err)) != MANTA_OK)
        return st;
    if (!host_le() && es > 1)
        swap_elems(dst, bytes / es, es);
    return MANTA_OK;
}

manta_status ckpt_read_f32(ckpt_reader *r, const char *name, float *dst, size_t n, manta_err *err)
{
    const rsec *s;
    manta_status st = find_exact(r, name, CKPT_F32, n, dst != NULL, &s, err);
    return st != MANTA_OK ? st : read_host(r, s, dst, sizeof(float), err);
}

manta_status ckpt_read_i64(ckpt_reader *r, const char *name, int64_t *dst, size_t n, manta_err *err)
{
    const rsec *s;
    manta_status st = find_exact(r, name, CKPT_I64, n, dst != NULL, &s, err);
    return st != MANTA_OK ? st : read_host(r, s, dst, sizeof(int64_t), err);
}

manta_status ckpt_read_bytes(ckpt_reader *r, const char *name, void *dst, size_t n, manta_err *err)
{
    const rsec *s;
    manta_status st = find_exact(r, name, CKPT_BYTES, n, dst != NULL, &s, err);
    return st != MANTA_OK ? st : read_host(r, s, dst, 1, err);
}

manta_status ckpt_read_json(ckpt_reader *r, const char *name, char **text, size_t *len,
                            manta_err *err)
{
    if (text)
        *text = NULL;
    if (len)
        *len = 0;
    const rsec *s;
    manta_status st = find_sec(r, name, CKPT_JSON, &s, err);
    if (st != MANTA_OK)
        return st;
    if (!text)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "checkpoint %s: section '%s': no destination", r->name, name);
    /* The count was checked against the file size at open. */
    if (s->bytes >= SIZE_MAX)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: section '%s' is too large",
                             r->name, name);
    char *t = malloc((size_t)s->bytes + 1);
    if (!t)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                             "checkpoint %s: out of host memory for section '%s'", r->name, name);
    st = read_host(r, s, t, 1, err);
    if (st == MANTA_OK && !json_ok(t, (size_t)s->bytes))
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "checkpoint %s: section '%s' is not valid UTF-8 JSON", r->name, name);
    if (st != MANTA_OK) {
        free(t);
        return st;
    }
    t[s->bytes] = '\0';
    *text = t;
    if (len)
        *len = (size_t)s->bytes;
    return MANTA_OK;
}

manta_status ckpt_read_f32_stream(ckpt_reader *r, const char *name, size_t n, ckpt_f32_sink sink,
                                  void *user, manta_err *err)
{
    const rsec *s;
    manta_status st = find_exact(r, name, CKPT_F32, n, sink != NULL, &s, err);
    if (st != MANTA_OK)
        return st;
    if (!r->chunk && !(r->chunk = malloc(IO_CHUNK)))
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of host memory",
                             r->name);
    uint32_t crc = s->crc_head;
    size_t per = CKPT_STREAM_CHUNK;
    for (size_t done = 0; done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        if ((st = rd(r, s->payload + (uint64_t)done * sizeof(float), r->chunk, k * sizeof(float),
                     err)) != MANTA_OK)
            return st;
        crc = crc_update(crc, r->chunk, k * sizeof(float));
        if (!host_le())
            swap_elems(r->chunk, k, sizeof(float));
        manta_err why;
        manta_err_clear(&why);
        manta_status ks = sink(user, done, (const float *)(void *)r->chunk, k, &why);
        if (ks != MANTA_OK)
            return manta_err_set(err, ks, "checkpoint %s: section '%s': %s", r->name, name,
                                 manta_err_msg(&why, ks));
    }
    return check_tail(r, s, crc, err);
}
