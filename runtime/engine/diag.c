/* Status names and the small message formatter (no stdio in the engine). */
#include "engine/diag_impl.h"

const char *mengine_status_str(mengine_status s)
{
    switch (s) {
    case MENGINE_OK: return "ok";
    case MENGINE_ERR_ARG: return "invalid argument";
    case MENGINE_ERR_TRUNCATED: return "truncated data";
    case MENGINE_ERR_IDENTIFIER: return "bad file identifier";
    case MENGINE_ERR_OFFSET: return "offset out of bounds";
    case MENGINE_ERR_ALIGNMENT: return "misaligned data";
    case MENGINE_ERR_VTABLE: return "bad vtable";
    case MENGINE_ERR_VECTOR: return "bad vector length";
    case MENGINE_ERR_STRING: return "unterminated string";
    case MENGINE_ERR_DEPTH: return "nesting too deep";
    case MENGINE_ERR_LIMIT: return "limit exceeded";
    case MENGINE_ERR_VERSION: return "unsupported schema version";
    case MENGINE_ERR_SUBGRAPH: return "bad subgraph";
    case MENGINE_ERR_OPCODE_INDEX: return "opcode index out of range";
    case MENGINE_ERR_TENSOR_INDEX: return "tensor index out of range";
    case MENGINE_ERR_BUFFER_INDEX: return "buffer index out of range";
    case MENGINE_ERR_BUFFER_SIZE: return "buffer size does not match shape";
    case MENGINE_ERR_TYPE: return "unsupported tensor type";
    case MENGINE_ERR_SHAPE: return "bad shape";
    case MENGINE_ERR_UNSUPPORTED_OP: return "unsupported operator";
    case MENGINE_ERR_OP_VERSION: return "unsupported operator version";
    case MENGINE_ERR_OPTIONS: return "bad operator options";
    case MENGINE_ERR_GRAPH: return "bad graph";
    case MENGINE_ERR_PLAN: return "bad offline memory plan";
    case MENGINE_ERR_ARENA: return "arena too small";
    case MENGINE_ERR_STATE: return "call out of order";
    case MENGINE_ERR_UNSUPPORTED: return "unsupported feature";
    }
    return "unknown status";
}

typedef struct outbuf {
    char *p;
    size_t cap, len;
} outbuf;

static void put(outbuf *o, char c)
{
    if (o->len + 1 < o->cap)
        o->p[o->len++] = c;
}

static void put_str(outbuf *o, const char *s)
{
    while (*s)
        put(o, *s++);
}

static void put_unsigned(outbuf *o, unsigned long long v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        put(o, tmp[--n]);
}

static void vformat(outbuf *o, const char *fmt, va_list ap)
{
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put(o, *f);
            continue;
        }
        switch (*++f) {
        case 's': put_str(o, va_arg(ap, const char *)); break;
        case 'u': put_unsigned(o, va_arg(ap, unsigned)); break;
        case 'd': {
            int v = va_arg(ap, int);
            if (v < 0) {
                put(o, '-');
                put_unsigned(o, 0ull - (unsigned long long)v);
            } else {
                put_unsigned(o, (unsigned long long)v);
            }
            break;
        }
        case 'z':
            if (f[1] == 'u') {
                f++;
                put_unsigned(o, va_arg(ap, size_t));
            }
            break;
        case '%': put(o, '%'); break;
        case '\0': f--; break;
        default: break;
        }
    }
}

mengine_status mengine_diag_fail(mdiag *d, mengine_status code, const char *fmt, ...)
{
    if (!d || !d->msg || !d->cap)
        return code;
    outbuf o = {d->msg, d->cap, 0};
    va_list ap;
    va_start(ap, fmt);
    vformat(&o, fmt, ap);
    va_end(ap);
    o.p[o.len] = '\0';
    return code;
}

mengine_status mengine_diag_op_vfail(mdiag *d, uint32_t op, int32_t builtin, mengine_status code,
                                     const char *fmt, va_list ap)
{
    if (!d || !d->msg || !d->cap)
        return code;
    outbuf o = {d->msg, d->cap, 0};
    put_str(&o, "operator ");
    put_unsigned(&o, op);
    put_str(&o, " (");
    put_str(&o, mengine_op_name(builtin));
    put_str(&o, "): ");
    vformat(&o, fmt, ap);
    o.p[o.len] = '\0';
    return code;
}
