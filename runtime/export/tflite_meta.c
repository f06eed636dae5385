/* A recursive-descent JSON reader, just enough for the preprocessing metadata:
 * objects, arrays, strings (escapes, \u as UTF-8), numbers, true/false/null,
 * nesting bounded, every read bounded by the end of the text. */
#include "export/tflite_meta.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct jp {
    const char *p, *end;
    int depth;
    const char *why; /* the first failure */
    manta_status st;
} jp;

static int fail_as(jp *j, manta_status st, const char *what)
{
    if (!j->why) {
        j->why = what;
        j->st = st;
    }
    return -1;
}

static int fail(jp *j, const char *what) { return fail_as(j, MANTA_ERR_FORMAT, what); }

static void ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static int lit(jp *j, const char *w)
{
    const size_t n = strlen(w);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
        return fail(j, "bad literal");
    j->p += n;
    return 0;
}

static int hex4(jp *j, unsigned *v)
{
    *v = 0;
    if (j->end - j->p < 4)
        return fail(j, "truncated \\u escape");
    for (int i = 0; i < 4; i++) {
        const char c = *j->p++;
        *v <<= 4;
        if (c >= '0' && c <= '9')
            *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            *v |= (unsigned)(c - 'A' + 10);
        else
            return fail(j, "bad \\u escape");
    }
    return 0;
}

/* Append byte @p c to out (cut at cap - 1). */
static void put(char *out, size_t cap, size_t *n, char c)
{
    if (out && *n + 1 < cap)
        out[*n] = c;
    (*n)++;
}

/* A string; copied (0-terminated, cut) into @p out when not NULL. */
static int string(jp *j, char *out, size_t cap)
{
    size_t n = 0;
    if (j->p >= j->end || *j->p != '"')
        return fail(j, "expected a string");
    j->p++;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20)
            return fail(j, "control character in a string");
        if (c != '\\') {
            put(out, cap, &n, c);
            continue;
        }
        if (j->p >= j->end)
            break;
        c = *j->p++;
        switch (c) {
        case '"':
        case '\\':
        case '/': put(out, cap, &n, c); break;
        case 'b': put(out, cap, &n, '\b'); break;
        case 'f': put(out, cap, &n, '\f'); break;
        case 'n': put(out, cap, &n, '\n'); break;
        case 'r': put(out, cap, &n, '\r'); break;
        case 't': put(out, cap, &n, '\t'); break;
        case 'u': {
            unsigned u, lo;
            if (hex4(j, &u))
                return -1;
            if (u >= 0xd800 && u < 0xdc00 && j->end - j->p >= 6 && j->p[0] == '\\' &&
                j->p[1] == 'u') {
                j->p += 2;
                if (hex4(j, &lo))
                    return -1;
                u = lo >= 0xdc00 && lo < 0xe000 ? 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00)
                                                : 0xfffd;
            } else if (u >= 0xd800 && u < 0xe000) {
                u = 0xfffd;
            }
            if (u < 0x80) {
                put(out, cap, &n, (char)u);
            } else if (u < 0x800) {
                put(out, cap, &n, (char)(0xc0 | u >> 6));
                put(out, cap, &n, (char)(0x80 | (u & 0x3f)));
            } else if (u < 0x10000) {
                put(out, cap, &n, (char)(0xe0 | u >> 12));
                put(out, cap, &n, (char)(0x80 | ((u >> 6) & 0x3f)));
                put(out, cap, &n, (char)(0x80 | (u & 0x3f)));
            } else {
                put(out, cap, &n, (char)(0xf0 | u >> 18));
                put(out, cap, &n, (char)(0x80 | ((u >> 12) & 0x3f)));
                put(out, cap, &n, (char)(0x80 | ((u >> 6) & 0x3f)));
                put(out, cap, &n, (char)(0x80 | (u & 0x3f)));
            }
            break;
        }
        default: return fail(j, "bad escape in a string");
        }
    }
    if (j->p >= j->end)
        return fail(j, "unterminated string");
    j->p++;
    if (out && cap)
        out[n < cap ? n : cap - 1] = '\0';
    return 0;
}

static int number(jp *j, double *v)
{
    char buf[64];
    size_t n = 0;
    while (j->p + n < j->end && n < sizeof buf - 1 && strchr("+-0123456789.eE", j->p[n]) != NULL)
        n++;
    if (n == 0)
        return fail(j, "expected a number");
    memcpy(buf, j->p, n);
    buf[n] = '\0';
    char *e;
    *v = strtod(buf, &e);
    if (e != buf + n || !isfinite(*v))
        return fail(j, "bad number");
    j->p += n;
    return 0;
}

static int value(jp *j);

static int skip_object_or_array(jp *j, char close)
{
    if (++j->depth > TFLITE_META_MAX_DEPTH)
        return fail(j, "nested too deep");
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        j->depth--;
        return 0;
    }
    for (;;) {
        ws(j);
        if (close == '}') {
            if (string(j, NULL, 0))
                return -1;
            ws(j);
            if (j->p >= j->end || *j->p != ':')
                return fail(j, "expected ':'");
            j->p++;
        }
        if (value(j))
            return -1;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            j->depth--;
            return 0;
        }
        return fail(j, "expected ',' or a closing bracket");
    }
}

/* Skip any value. */
static int value(jp *j)
{
    ws(j);
    if (j->p >= j->end)
        return fail(j, "unexpected end");
    switch (*j->p) {
    case '{': return skip_object_or_array(j, '}');
    case '[': return skip_object_or_array(j, ']');
    case '"': return string(j, NULL, 0);
    case 't': return lit(j, "true");
    case 'f': return lit(j, "false");
    case 'n': return lit(j, "null");
    default: {
        double v;
        return number(j, &v);
    }
    }
}

static int int_value(jp *j, int *out)
{
    double v;
    ws(j);
    if (number(j, &v))
        return -1;
    if (v != floor(v) || v < -1 || v > 1e6)
        return fail(j, "expected a small integer");
    *out = (int)v;
    return 0;
}

/* An array (after white space), each element read by @p elem; @p not_array and
 * @p bad_sep are the messages of a missing '[' and of a missing ',' or ']'. */
static int array(jp *j, const char *not_array, const char *bad_sep, int (*elem)(jp *, void *),
                 void *ctx)
{
    ws(j);
    if (j->p >= j->end || *j->p != '[')
        return fail(j, not_array);
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 0;
    }
    for (;;) {
        ws(j);
        if (elem(j, ctx))
            return -1;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 0;
        }
        return fail(j, bad_sep);
    }
}

/* Up to 3 channel values. */
typedef struct floats3 {
    float *v;
    int *n;
} floats3;

static int float_elem(jp *j, void *ctx)
{
    floats3 *f = ctx;
    double v;
    if (number(j, &v))
        return -1;
    if (*f->n >= 3)
        return fail(j, "more than 3 channel values");
    f->v[(*f->n)++] = (float)v;
    return 0;
}

static int floats(jp *j, float *out, int *n)
{
    floats3 f = {out, n};
    *n = 0;
    return array(j, "expected an array of numbers", "expected ',' or ']'", float_elem, &f);
}

static int label_elem(jp *j, void *ctx)
{
    tflite_meta *m = ctx;
    char **nl = realloc(m->labels, ((size_t)m->n_labels + 1) * sizeof *nl);
    if (!nl)
        return fail_as(j, MANTA_ERR_NO_MEMORY, "out of memory");
    m->labels = nl;
    m->labels[m->n_labels] = malloc(TFLITE_META_LABEL_MAX);
    if (!m->labels[m->n_labels])
        return fail_as(j, MANTA_ERR_NO_MEMORY, "out of memory");
    m->n_labels++;
    return string(j, m->labels[m->n_labels - 1], TFLITE_META_LABEL_MAX);
}

static int labels(jp *j, tflite_meta *m)
{
    return array(j, "labels: expected an array of strings", "labels: expected ',' or ']'",
                 label_elem, m);
}

/* A positive finite number, at most 1e6. */
static int scale_value(jp *j, float *out)
{
    double v;
    ws(j);
    if (number(j, &v))
        return -1;
    if (!(v > 0.0 && v <= 1e6))
        return fail(j, "disparity_scale, max_disp: expected a number in (0, 1e6]");
    *out = (float)v;
    return 0;
}

/* The top-level object at j->p ('{'): the keys of tflite_meta read, the others skipped. */
static int object(jp *j, tflite_meta *m)
{
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == '}') {
        j->p++;
        return 0;
    }
    for (;;) {
        char key[32];
        int rc;
        ws(j);
        if (string(j, key, sizeof key))
            return -1;
        ws(j);
        if (j->p >= j->end || *j->p != ':')
            return fail(j, "expected ':'");
        j->p++;
        if (!strcmp(key, "resolution"))
            rc = int_value(j, &m->resolution);
        else if (!strcmp(key, "channels"))
            rc = int_value(j, &m->channels);
        else if (!strcmp(key, "logits_tensor"))
            rc = int_value(j, &m->logits_tensor);
        else if (!strcmp(key, "mean"))
            rc = floats(j, m->mean, &m->n_mean);
        else if (!strcmp(key, "std"))
            rc = floats(j, m->std, &m->n_std);
        else if (!strcmp(key, "labels"))
            rc = labels(j, m);
        else if (!strcmp(key, "height"))
            rc = int_value(j, &m->height);
        else if (!strcmp(key, "width"))
            rc = int_value(j, &m->width);
        else if (!strcmp(key, "task"))
            rc = (ws(j), string(j, m->task, sizeof m->task));
        else if (!strcmp(key, "space"))
            rc = (ws(j), string(j, m->space, sizeof m->space));
        else if (!strcmp(key, "disparity_scale"))
            rc = scale_value(j, &m->disp_scale);
        else if (!strcmp(key, "max_disp"))
            rc = scale_value(j, &m->max_disp);
        else
            rc = value(j);
        if (rc)
            return -1;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == '}') {
            j->p++;
            return 0;
        }
        return fail(j, "expected ',' or '}'");
    }
}

manta_status tflite_meta_parse(const char *text, size_t size, tflite_meta *m, manta_err *err)
{
    memset(m, 0, sizeof *m);
    m->logits_tensor = -1;
    if (size > TFLITE_META_MAX_TEXT)
        return manta_err_set(err, MANTA_ERR_FORMAT, "metadata larger than 1 MiB");
    if (!text) /* no metadata */
        return manta_err_set(err, MANTA_ERR_FORMAT, "not a JSON object");
    jp j = {text, text + size, 0, NULL, MANTA_OK};
    ws(&j);
    if (j.p >= j.end || *j.p != '{')
        return manta_err_set(err, MANTA_ERR_FORMAT, "not a JSON object");
    object(&j, m);
    if (!j.why) {
        ws(&j);
        if (j.p != j.end)
            fail(&j, "text after the JSON object");
    }
    if (j.why) {
        tflite_meta_free(m);
        m->logits_tensor = -1;
        return manta_err_set(err, j.st, "%s at byte %zu", j.why, (size_t)(j.p - text));
    }
    return MANTA_OK;
}

void tflite_meta_free(tflite_meta *m)
{
    for (int i = 0; i < m->n_labels; i++)
        free(m->labels[i]);
    free(m->labels);
    memset(m, 0, sizeof *m);
}
