/* A recursive-descent JSON reader, just enough for the preprocessing metadata:
 * objects, arrays, strings (escapes, \u as UTF-8), numbers, true/false/null,
 * nesting bounded, every read bounded by the end of the text. */
#include "meta.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 32

typedef struct jp {
    const char *p, *end;
    int depth;
    char *why;
    size_t why_cap;
} jp;

static int fail(jp *j, const char *what)
{
    if (j->why && j->why_cap && !j->why[0])
        snprintf(j->why, j->why_cap, "%s", what);
    return -1;
}

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
    if (++j->depth > MAX_DEPTH)
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

/* Array of up to 3 numbers. */
static int floats(jp *j, float *out, int *n)
{
    ws(j);
    *n = 0;
    if (j->p >= j->end || *j->p != '[')
        return fail(j, "expected an array of numbers");
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 0;
    }
    for (;;) {
        double v;
        ws(j);
        if (number(j, &v))
            return -1;
        if (*n >= 3)
            return fail(j, "more than 3 channel values");
        out[(*n)++] = (float)v;
        ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == ']') {
            j->p++;
            return 0;
        }
        return fail(j, "expected ',' or ']'");
    }
}

static int labels(jp *j, infer_meta *m)
{
    ws(j);
    if (j->p >= j->end || *j->p != '[')
        return fail(j, "labels: expected an array of strings");
    j->p++;
    ws(j);
    if (j->p < j->end && *j->p == ']') {
        j->p++;
        return 0;
    }
    for (;;) {
        ws(j);
        char **nl = realloc(m->labels, ((size_t)m->n_labels + 1) * sizeof *nl);
        if (!nl)
            return fail(j, "out of memory");
        m->labels = nl;
        m->labels[m->n_labels] = malloc(META_LABEL_MAX);
        if (!m->labels[m->n_labels])
            return fail(j, "out of memory");
        m->n_labels++;
        if (string(j, m->labels[m->n_labels - 1], META_LABEL_MAX))
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
        return fail(j, "labels: expected ',' or ']'");
    }
}

int meta_parse(const char *text, size_t size, infer_meta *m, char *why, size_t why_cap)
{
    memset(m, 0, sizeof *m);
    m->logits_tensor = -1;
    if (why && why_cap)
        why[0] = '\0';
    jp j = {text, text + size, 0, why, why_cap};
    if (size > META_MAX_TEXT)
        return fail(&j, "metadata larger than 1 MiB");
    ws(&j);
    if (j.p >= j.end || *j.p != '{')
        return fail(&j, "not a JSON object");
    j.p++;
    ws(&j);
    int rc = 0;
    if (j.p < j.end && *j.p == '}') {
        j.p++;
    } else {
        for (;;) {
            char key[32];
            ws(&j);
            if ((rc = string(&j, key, sizeof key)))
                break;
            ws(&j);
            if (j.p >= j.end || *j.p != ':') {
                rc = fail(&j, "expected ':'");
                break;
            }
            j.p++;
            if (!strcmp(key, "resolution"))
                rc = int_value(&j, &m->resolution);
            else if (!strcmp(key, "channels"))
                rc = int_value(&j, &m->channels);
            else if (!strcmp(key, "logits_tensor"))
                rc = int_value(&j, &m->logits_tensor);
            else if (!strcmp(key, "mean"))
                rc = floats(&j, m->mean, &m->n_mean);
            else if (!strcmp(key, "std"))
                rc = floats(&j, m->std, &m->n_std);
            else if (!strcmp(key, "labels"))
                rc = labels(&j, m);
            else
                rc = value(&j);
            if (rc)
                break;
            ws(&j);
            if (j.p < j.end && *j.p == ',') {
                j.p++;
                continue;
            }
            if (j.p < j.end && *j.p == '}') {
                j.p++;
                break;
            }
            rc = fail(&j, "expected ',' or '}'");
            break;
        }
    }
    if (rc == 0) {
        ws(&j);
        if (j.p != j.end)
            rc = fail(&j, "text after the JSON object");
    }
    if (rc) {
        char where[64];
        snprintf(where, sizeof where, " at byte %zu", (size_t)(j.p - text));
        if (why && strlen(why) + strlen(where) < why_cap)
            strcat(why, where);
        meta_free(m);
        m->logits_tensor = -1;
        return -1;
    }
    return 0;
}

void meta_free(infer_meta *m)
{
    for (int i = 0; i < m->n_labels; i++)
        free(m->labels[i]);
    free(m->labels);
    memset(m, 0, sizeof *m);
}
