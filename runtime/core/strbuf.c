#include "core/strbuf.h"

#include "core/fileio.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void manta_strbuf_printf(manta_strbuf *b, const char *fmt, ...)
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
    size_t need = b->n + (size_t)len + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need && cap <= SIZE_MAX / 2)
            cap *= 2;
        char *p = cap >= need ? realloc(b->p, cap) : NULL;
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

void manta_strbuf_csv_str(manta_strbuf *b, const char *s)
{
    manta_strbuf_printf(b, "\"");
    while (*s) {
        size_t run = strcspn(s, "\"");
        manta_strbuf_printf(b, "%.*s", (int)run, s);
        s += run;
        if (*s == '"') {
            manta_strbuf_printf(b, "\"\"");
            s++;
        }
    }
    manta_strbuf_printf(b, "\"");
}

void manta_strbuf_json_str(manta_strbuf *b, const char *s)
{
    manta_strbuf_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            manta_strbuf_printf(b, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            manta_strbuf_printf(b, "\\u%04x", *p);
        else
            manta_strbuf_printf(b, "%c", *p);
    }
    manta_strbuf_printf(b, "\"");
}

void manta_strbuf_free(manta_strbuf *b)
{
    if (!b)
        return;
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
    b->oom = false;
}

manta_status manta_strbuf_write_file(manta_strbuf *b, const char *path, manta_err *err)
{
    manta_status st = b->oom ? manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path)
                             : manta_file_write_atomic(path, b->p ? b->p : "", b->n, err);
    manta_strbuf_free(b);
    return st;
}
