#include "core/tfevents.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crc32c.h"
#include "core/fileio.h"
#include "core/le.h"

/* Protocol buffer keys (field number << 3 | wire type) of the fields written. */
enum {
    WT_VARINT = 0,
    WT_I64 = 1,
    WT_LEN = 2,
    WT_SGROUP = 3,
    WT_EGROUP = 4,
    WT_I32 = 5,
    KEY_EVENT_WALL_TIME = 1 << 3 | WT_I64,    /* 0x09 */
    KEY_EVENT_STEP = 2 << 3 | WT_VARINT,      /* 0x10 */
    KEY_EVENT_FILE_VERSION = 3 << 3 | WT_LEN, /* 0x1a */
    KEY_EVENT_SUMMARY = 5 << 3 | WT_LEN,      /* 0x2a */
    KEY_SUMMARY_VALUE = 1 << 3 | WT_LEN,      /* 0x0a */
    KEY_VALUE_TAG = 1 << 3 | WT_LEN,          /* 0x0a */
    KEY_VALUE_SIMPLE = 2 << 3 | WT_I32,       /* 0x15 */
};

/* Record framing: length (8) and its CRC (4) before the data, the data's CRC (4) after. */
#define REC_HEAD 12
#define REC_TAIL 4

/* Longest host part of a file name. */
#define HOST_MAX 128

struct manta_tfevents {
    FILE *f;
    char *path;
    unsigned char *buf; /* the record being built */
    size_t cap;
    bool failed; /* a write failed: the file may end in a partial record */
};

/* ---- encoding ---------------------------------------------------------------------------- */

static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (unsigned char)v;
    return p;
}

static unsigned char *put_double(unsigned char *p, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    manta_le_put64(p, bits);
    return p + 8;
}

static unsigned char *put_float(unsigned char *p, float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    manta_le_put32(p, bits);
    return p + 4;
}

static unsigned char *put_bytes(unsigned char *p, unsigned key, const void *s, size_t n)
{
    *p++ = (unsigned char)key;
    p = put_varint(p, n);
    memcpy(p, s, n);
    return p + n;
}

/* Bytes of a Value message: its tag and simple_value. */
static size_t value_len(size_t tag_len) { return 1 + varint_len(tag_len) + tag_len + 1 + 4; }

/* Make room for @p n bytes in the writer's record buffer. */
static manta_status reserve(manta_tfevents *w, size_t n, manta_err *err)
{
    if (n <= w->cap)
        return MANTA_OK;
    unsigned char *b = realloc(w->buf, n);
    if (!b)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for a %zu-byte record",
                             w->path, n);
    w->buf = b;
    w->cap = n;
    return MANTA_OK;
}

/* Frame the @p n bytes of data at w->buf + REC_HEAD as a record and write it whole, flushed. */
static manta_status write_record(manta_tfevents *w, size_t n, manta_err *err)
{
    unsigned char *b = w->buf;
    manta_le_put64(b, n);
    manta_le_put32(b + 8, manta_crc32c_mask(manta_crc32c(0, b, 8)));
    manta_le_put32(b + REC_HEAD + n, manta_crc32c_mask(manta_crc32c(0, b + REC_HEAD, n)));
    const size_t total = REC_HEAD + n + REC_TAIL;
    errno = 0;
    if (fwrite(b, 1, total, w->f) != total || fflush(w->f) != 0) {
        w->failed = true;
        return manta_err_set(err, MANTA_ERR_IO, "%s: writing a record failed: %s", w->path,
                             errno ? strerror(errno) : "short write");
    }
    return MANTA_OK;
}

/* Seconds since the epoch below 1e12 (about the year 33700), so that the whole seconds of a
 * file name fit any integer type. */
static bool wall_time_ok(double t) { return t >= 0 && t < 1e12; }

/* ---- writer ------------------------------------------------------------------------------ */

/* @p host (or this machine's name) with every byte a file name should not hold replaced. */
static void host_part(const char *host, char out[HOST_MAX])
{
    char name[HOST_MAX];
    if (!host) {
        if (gethostname(name, sizeof name) != 0)
            name[0] = '\0';
        name[sizeof name - 1] = '\0';
        host = name;
    }
    size_t i = 0;
    for (; host[i] && i + 1 < HOST_MAX; i++) {
        const char c = host[i];
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        out[i] = ok ? c : '_';
    }
    out[i] = '\0';
    if (i == 0)
        snprintf(out, HOST_MAX, "localhost");
}

/* Create a file under a name that does not exist yet: @p base, else base.1 ... base.99. */
static manta_status create_new(const char *base, char **path, FILE **f, manta_err *err)
{
    const size_t cap = strlen(base) + 8;
    char *p = malloc(cap);
    if (!p)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", base);
    for (int k = 0; k < 100; k++) {
        if (k == 0)
            snprintf(p, cap, "%s", base);
        else
            snprintf(p, cap, "%s.%d", base, k);
        *f = fopen(p, "wbx"); /* C11: fails when the file exists */
        if (*f) {
            *path = p;
            return MANTA_OK;
        }
        if (errno != EEXIST) {
            manta_status st =
                manta_err_set(err, MANTA_ERR_IO, "%s: cannot create: %s", p, strerror(errno));
            free(p);
            return st;
        }
    }
    free(p);
    return manta_err_set(err, MANTA_ERR_IO, "%s: exists, and so do its names .1 to .99", base);
}

manta_status manta_tfevents_open(const char *dir, const char *host, double wall_time,
                                 manta_tfevents **out, manta_err *err)
{
    if (out)
        *out = NULL;
    if (!dir || !*dir || !out)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "event file: a folder and a place for the writer are required");
    if (!wall_time_ok(wall_time))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: wall time %g is not a time since the epoch", dir, wall_time);
    MANTA_TRY(manta_file_mkdir_p(dir, err));
    char h[HOST_MAX];
    host_part(host, h);
    const size_t cap = strlen(dir) + HOST_MAX + 64;
    char *base = malloc(cap);
    manta_tfevents *w = calloc(1, sizeof *w);
    manta_status st = MANTA_OK;
    if (!base || !w) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for an event file", dir);
        goto fail;
    }
    snprintf(base, cap, "%s/events.out.tfevents.%lld.%s", dir, (long long)floor(wall_time), h);
    if ((st = create_new(base, &w->path, &w->f, err)) != MANTA_OK)
        goto fail;
    static const char version[] = MANTA_TFEVENTS_VERSION;
    const size_t vlen = sizeof version - 1;
    const size_t n = 9 + 1 + varint_len(vlen) + vlen;
    if ((st = reserve(w, REC_HEAD + n + REC_TAIL, err)) != MANTA_OK)
        goto fail_file;
    unsigned char *p = w->buf + REC_HEAD;
    *p++ = KEY_EVENT_WALL_TIME;
    p = put_double(p, wall_time);
    put_bytes(p, KEY_EVENT_FILE_VERSION, version, vlen);
    if ((st = write_record(w, n, err)) != MANTA_OK)
        goto fail_file;
    free(base);
    *out = w;
    return MANTA_OK;
fail_file:
    fclose(w->f);
    remove(w->path);
fail:
    free(base);
    if (w) {
        free(w->path);
        free(w->buf);
        free(w);
    }
    return st;
}

const char *manta_tfevents_path(const manta_tfevents *w) { return w->path; }

/* A tag's length when it is 1 to MANTA_TFEVENTS_TAG_MAX bytes of printable ASCII, else 0. */
static size_t tag_len(const char *tag)
{
    if (!tag)
        return 0;
    size_t n = 0;
    for (; tag[n]; n++)
        if (n == MANTA_TFEVENTS_TAG_MAX || (unsigned char)tag[n] < 0x20 ||
            (unsigned char)tag[n] > 0x7e)
            return 0;
    return n;
}

manta_status manta_tfevents_append(manta_tfevents *w, int64_t step, double wall_time,
                                   const manta_tfscalar *values, size_t n, manta_err *err)
{
    if (!w)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "event file: no writer");
    if (w->failed)
        return manta_err_set(err, MANTA_ERR_IO, "%s: an earlier write failed", w->path);
    if (!values || n == 0 || n > MANTA_TFEVENTS_VALUES_MAX)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: %zu scalars in one step (1 to %d allowed)", w->path,
                             values ? n : 0, MANTA_TFEVENTS_VALUES_MAX);
    if (!wall_time_ok(wall_time))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: wall time %g is not a time since the epoch", w->path, wall_time);
    size_t summary = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t t = tag_len(values[i].tag);
        if (t == 0)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "%s: tag %zu '%.40s' is empty, longer than %d bytes or not "
                                 "printable ASCII",
                                 w->path, i, values[i].tag ? values[i].tag : "(null)",
                                 MANTA_TFEVENTS_TAG_MAX);
        const size_t v = value_len(t);
        summary += 1 + varint_len(v) + v;
    }
    const uint64_t ustep = (uint64_t)step; /* int64 varints are two's complement */
    const size_t len = 9 + (step ? 1 + varint_len(ustep) : 0) + 1 + varint_len(summary) + summary;
    MANTA_TRY(reserve(w, REC_HEAD + len + REC_TAIL, err));
    unsigned char *p = w->buf + REC_HEAD;
    *p++ = KEY_EVENT_WALL_TIME;
    p = put_double(p, wall_time);
    if (step) { /* proto3 leaves zero out */
        *p++ = KEY_EVENT_STEP;
        p = put_varint(p, ustep);
    }
    *p++ = KEY_EVENT_SUMMARY;
    p = put_varint(p, summary);
    for (size_t i = 0; i < n; i++) {
        const size_t t = strlen(values[i].tag);
        *p++ = KEY_SUMMARY_VALUE;
        p = put_varint(p, value_len(t));
        p = put_bytes(p, KEY_VALUE_TAG, values[i].tag, t);
        *p++ = KEY_VALUE_SIMPLE;
        p = put_float(p, values[i].value);
    }
    if ((size_t)(p - (w->buf + REC_HEAD)) != len)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "%s: event of %zu bytes, %zu expected",
                             w->path, (size_t)(p - (w->buf + REC_HEAD)), len);
    return write_record(w, len, err);
}

manta_status manta_tfevents_close(manta_tfevents *w, manta_err *err)
{
    if (!w)
        return MANTA_OK;
    manta_status st = MANTA_OK;
    if (fclose(w->f) != 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: closing failed: %s", w->path, strerror(errno));
    free(w->path);
    free(w->buf);
    free(w);
    return st;
}

/* ---- reader ------------------------------------------------------------------------------ */

/* A bounded view of protocol buffer bytes, and where its faults are reported. */
typedef struct pb {
    const unsigned char *p, *end;
    const char *path;
    size_t record, offset;
    manta_err *err;
} pb;

static manta_status pb_fault(const pb *b, const char *what)
{
    return manta_err_set(b->err, MANTA_ERR_FORMAT, "%s: record %zu (byte %zu): %s", b->path,
                         b->record, b->offset, what);
}

static manta_status pb_varint(pb *b, uint64_t *v, const char *what)
{
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (b->p == b->end)
            return pb_fault(b, what);
        const unsigned char c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *v = x;
            return MANTA_OK;
        }
    }
    return pb_fault(b, what);
}

/* The length-delimited field at the cursor, as a view; the cursor moves past it. */
static manta_status pb_sub(pb *b, pb *sub, const char *what)
{
    uint64_t n;
    MANTA_TRY(pb_varint(b, &n, what));
    if (n > (uint64_t)(b->end - b->p))
        return pb_fault(b, what);
    *sub = *b;
    sub->end = b->p + n;
    b->p += n;
    return MANTA_OK;
}

/* Skip a field of wire type @p wt (the key was read). */
static manta_status pb_skip(pb *b, unsigned wt)
{
    uint64_t v;
    pb sub;
    switch (wt) {
    case WT_VARINT: return pb_varint(b, &v, "a varint field is cut short");
    case WT_I64:
    case WT_I32: {
        const size_t n = wt == WT_I64 ? 8 : 4;
        if ((size_t)(b->end - b->p) < n)
            return pb_fault(b, "a fixed-size field is cut short");
        b->p += n;
        return MANTA_OK;
    }
    case WT_LEN: return pb_sub(b, &sub, "a length-delimited field runs past its message");
    default: return pb_fault(b, "a group or an unknown wire type (not an Event)");
    }
}

/* The next key: its field number and wire type. */
static manta_status pb_key(pb *b, uint64_t *field, unsigned *wt)
{
    uint64_t k;
    MANTA_TRY(pb_varint(b, &k, "a field key is cut short"));
    *field = k >> 3;
    *wt = (unsigned)(k & 7);
    if (*field == 0)
        return pb_fault(b, "field number 0");
    return MANTA_OK;
}

static manta_status wrong_type(const pb *b, const char *field)
{
    char what[96];
    snprintf(what, sizeof what, "%s has the wrong wire type", field);
    return pb_fault(b, what);
}

static char *dup_n(const unsigned char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Growing list of points being read. */
typedef struct points {
    manta_tfevents_point *v;
    size_t n, cap;
} points;

static manta_status add_point(points *ps, const manta_tfevents_point *pt, const pb *b)
{
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 64;
        manta_tfevents_point *v = realloc(ps->v, cap * sizeof *v);
        if (!v)
            return manta_err_set(b->err, MANTA_ERR_NO_MEMORY, "%s: out of memory", b->path);
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n++] = *pt;
    return MANTA_OK;
}

/* A Value: a point when it holds a simple_value. */
static manta_status read_value(pb v, int64_t step, double wall_time, points *ps)
{
    const unsigned char *tag = NULL;
    size_t tag_n = 0;
    bool have = false;
    float value = 0;
    while (v.p < v.end) {
        uint64_t field;
        unsigned wt;
        MANTA_TRY(pb_key(&v, &field, &wt));
        if (field == 1) {
            pb s;
            if (wt != WT_LEN)
                return wrong_type(&v, "Value.tag");
            MANTA_TRY(pb_sub(&v, &s, "Value.tag runs past its Value"));
            tag = s.p;
            tag_n = (size_t)(s.end - s.p);
        } else if (field == 2) {
            if (wt != WT_I32)
                return wrong_type(&v, "Value.simple_value");
            if (v.end - v.p < 4)
                return pb_fault(&v, "Value.simple_value is cut short");
            uint32_t bits = manta_le_get32(v.p);
            memcpy(&value, &bits, sizeof value);
            v.p += 4;
            have = true;
        } else {
            MANTA_TRY(pb_skip(&v, wt));
        }
    }
    if (!have)
        return MANTA_OK;
    manta_tfevents_point pt = {v.record, step, wall_time,
                               dup_n(tag ? tag : (const unsigned char *)"", tag_n), value};
    if (!pt.tag)
        return manta_err_set(v.err, MANTA_ERR_NO_MEMORY, "%s: out of memory", v.path);
    manta_status st = add_point(ps, &pt, &v);
    if (st != MANTA_OK)
        free(pt.tag);
    return st;
}

/* The Values of a Summary. */
static manta_status read_summary(pb s, int64_t step, double wall_time, points *ps)
{
    while (s.p < s.end) {
        uint64_t field;
        unsigned wt;
        MANTA_TRY(pb_key(&s, &field, &wt));
        if (field != 1) {
            MANTA_TRY(pb_skip(&s, wt));
            continue;
        }
        pb v;
        if (wt != WT_LEN)
            return wrong_type(&s, "Summary.value");
        MANTA_TRY(pb_sub(&s, &v, "a Summary.value runs past its Summary"));
        MANTA_TRY(read_value(v, step, wall_time, ps));
    }
    return MANTA_OK;
}

/* One Event (a record's data): its points, and for the first record its file_version. Two
 * passes, because the wall time and the step may follow the summary in the bytes. */
static manta_status read_event(const pb *whole, manta_tfevents_log *log, points *ps)
{
    double wall_time = 0;
    int64_t step = 0;
    pb e = *whole;
    while (e.p < e.end) {
        uint64_t field, v;
        unsigned wt;
        pb s;
        MANTA_TRY(pb_key(&e, &field, &wt));
        switch (field) {
        case 1:
            if (wt != WT_I64)
                return wrong_type(&e, "Event.wall_time");
            if (e.end - e.p < 8)
                return pb_fault(&e, "Event.wall_time is cut short");
            v = manta_le_get64(e.p);
            memcpy(&wall_time, &v, sizeof wall_time);
            e.p += 8;
            break;
        case 2:
            if (wt != WT_VARINT)
                return wrong_type(&e, "Event.step");
            MANTA_TRY(pb_varint(&e, &v, "Event.step is cut short"));
            step = (int64_t)v;
            break;
        case 3:
            if (wt != WT_LEN)
                return wrong_type(&e, "Event.file_version");
            MANTA_TRY(pb_sub(&e, &s, "Event.file_version runs past its Event"));
            if (log->n_records == 0 && !log->file_version &&
                !(log->file_version = dup_n(s.p, (size_t)(s.end - s.p))))
                return manta_err_set(e.err, MANTA_ERR_NO_MEMORY, "%s: out of memory", e.path);
            break;
        case 5:
            if (wt != WT_LEN)
                return wrong_type(&e, "Event.summary");
            MANTA_TRY(pb_sub(&e, &s, "Event.summary runs past its Event"));
            break;
        default: MANTA_TRY(pb_skip(&e, wt));
        }
    }
    if (log->n_records == 0)
        log->first_wall_time = wall_time;
    for (e = *whole; e.p < e.end;) { /* well-formed: checked above */
        uint64_t field;
        unsigned wt;
        pb s;
        MANTA_TRY(pb_key(&e, &field, &wt));
        if (field != 5) {
            MANTA_TRY(pb_skip(&e, wt));
            continue;
        }
        MANTA_TRY(pb_sub(&e, &s, "Event.summary runs past its Event"));
        MANTA_TRY(read_summary(s, step, wall_time, ps));
    }
    return MANTA_OK;
}

void manta_tfevents_log_free(manta_tfevents_log *log)
{
    if (!log)
        return;
    for (size_t i = 0; i < log->n_points; i++)
        free(log->points[i].tag);
    free(log->points);
    free(log->file_version);
    memset(log, 0, sizeof *log);
}

manta_status manta_tfevents_read(const char *path, size_t max_bytes, manta_tfevents_log *log,
                                 manta_err *err)
{
    if (log)
        memset(log, 0, sizeof *log);
    if (!path || !log)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "event file: a path and a log are required");
    char *text;
    size_t len;
    MANTA_TRY(manta_file_read(path, max_bytes, &text, &len, err));
    const unsigned char *data = (const unsigned char *)text;
    points ps = {0};
    manta_status st = MANTA_OK;
    size_t off = 0;
    char what[160];
    while (off < len && st == MANTA_OK) {
        pb b = {data + off, data + len, path, log->n_records, off, err};
        const size_t left = len - off;
        if (left < REC_HEAD) {
            snprintf(what, sizeof what, "truncated: %zu bytes left, a record header needs %d", left,
                     REC_HEAD);
            st = pb_fault(&b, what);
            break;
        }
        const uint64_t n = manta_le_get64(data + off);
        const uint32_t stored = manta_le_get32(data + off + 8);
        const uint32_t crc = manta_crc32c_mask(manta_crc32c(0, data + off, 8));
        if (stored != crc) {
            snprintf(what, sizeof what, "length CRC mismatch (stored 0x%08x, computed 0x%08x)",
                     (unsigned)stored, (unsigned)crc);
            st = pb_fault(&b, what);
            break;
        }
        if (n > left - REC_HEAD || left - REC_HEAD - n < REC_TAIL) {
            snprintf(what, sizeof what, "truncated: %llu bytes of data and their CRC, %zu left",
                     (unsigned long long)n, left - REC_HEAD);
            st = pb_fault(&b, what);
            break;
        }
        const unsigned char *d = data + off + REC_HEAD;
        const uint32_t dstored = manta_le_get32(d + n);
        const uint32_t dcrc = manta_crc32c_mask(manta_crc32c(0, d, (size_t)n));
        if (dstored != dcrc) {
            snprintf(what, sizeof what, "data CRC mismatch (stored 0x%08x, computed 0x%08x)",
                     (unsigned)dstored, (unsigned)dcrc);
            st = pb_fault(&b, what);
            break;
        }
        b.p = d;
        b.end = d + n;
        st = read_event(&b, log, &ps);
        log->n_records++;
        off += REC_HEAD + (size_t)n + REC_TAIL;
    }
    free(text);
    log->points = ps.v;
    log->n_points = ps.n;
    if (st != MANTA_OK)
        manta_tfevents_log_free(log);
    return st;
}
