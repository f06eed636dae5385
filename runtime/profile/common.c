#include "profile/common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

manta_status prof_space_hash(const ofa_space *s, char out[PROF_HASH_LEN], manta_err *err)
{
    char *json = NULL;
    MANTA_TRY(ofa_space_to_json(s, &json, err));
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    free(json);
    snprintf(out, PROF_HASH_LEN, "fnv1a64:%016" PRIx64, h);
    return MANTA_OK;
}

manta_status prof_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
                            manta_err *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long n = -1;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot read (not a regular file?)", path);
    }
    if ((size_t)n > max_bytes) {
        fclose(f);
        return manta_err_set(err, MANTA_ERR_IO, "%s: %ld bytes, more than the %zu allowed", path, n,
                             max_bytes);
    }
    char *buf = malloc((size_t)n + 1);
    if (!buf) {
        fclose(f);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %ld bytes", path, n);
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || got != (size_t)n) {
        free(buf);
        return manta_err_set(err, MANTA_ERR_IO, "%s: read %zu of %ld bytes", path, got, n);
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = (size_t)n;
    return MANTA_OK;
}

manta_status prof_write_file_atomic(const char *path, const void *data, size_t len, manta_err *err)
{
    if (!path || !*path)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "output path is empty");
    size_t n = strlen(path) + 32;
    char *tmp = malloc(n);
    if (!tmp)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        manta_status st =
            manta_err_set(err, MANTA_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    int e = 0;
    if (len && fwrite(data, 1, len, f) != len)
        e = errno ? errno : EIO;
    if (!e && fflush(f) != 0)
        e = errno;
    if (!e && fsync(fileno(f)) != 0 && errno != EINVAL)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    manta_status st = MANTA_OK;
    if (e) {
        remove(tmp);
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    free(tmp);
    return st;
}

char *prof_format_double(char buf[40], double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

bool prof_json_add_number(cJSON *o, const char *name, double v)
{
    char buf[40];
    return cJSON_AddRawToObject(o, name, prof_format_double(buf, v)) != NULL;
}

void prof_buf_printf(prof_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0) {
        b->oom = true;
        return;
    }
    if (b->n + (size_t)len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + (size_t)len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    b->n += (size_t)len;
}
