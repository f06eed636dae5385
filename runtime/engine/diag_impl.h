/* Engine messages: a one-line message into a caller buffer (no stdio in the
 * engine). The bottom of the engine's files: it depends on the public
 * headers only. Not part of the public API. */
#ifndef MANTA_ENGINE_DIAG_H
#define MANTA_ENGINE_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/* Where messages go: a caller buffer (msg may be NULL). */
typedef struct mdiag {
    char *msg;
    size_t cap;
} mdiag;

/* Write a message (printf subset: %s %d %u %zu %%) into @p d, replacing what
 * it held, and return @p code. Does nothing but return @p code when @p d or
 * its buffer is NULL or has no room. */
mengine_status mengine_diag_fail(mdiag *d, mengine_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* As mengine_diag_fail(), prefixed with "operator OP (NAME): ", NAME being
 * mengine_op_name(@p builtin); the arguments come as a va_list. */
mengine_status mengine_diag_op_vfail(mdiag *d, uint32_t op, int32_t builtin, mengine_status code,
                                     const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 0)))
#endif
    ;

#endif
