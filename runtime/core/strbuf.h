/**
 * @file strbuf.h
 * @brief A growing text buffer for writers of text files (CSV, JSON lines,
 *        SVG, generated C).
 *
 * Appends never fail at the call site: a failed allocation sets the buffer's
 * @c oom flag, later appends do nothing, and the writer checks the flag once
 * before it uses the text. This keeps long chains of appends readable.
 */
#ifndef MANTA_CORE_STRBUF_H
#define MANTA_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/**
 * A text buffer. Zero-initialise it (`manta_strbuf b = {0};`), append with
 * manta_strbuf_printf(), release with manta_strbuf_free(). The buffer owns
 * @c p; a caller may take it over instead of freeing (then it frees @c p).
 */
typedef struct manta_strbuf {
    char *p;    /**< NUL-terminated text; NULL while nothing was appended */
    size_t n;   /**< length of the text, without the NUL */
    size_t cap; /**< bytes allocated at @c p */
    bool oom;   /**< an append failed for lack of memory; later appends do nothing */
} manta_strbuf;

/**
 * Append printf output to @p b, growing it as needed. On failure (out of
 * memory, or an encoding error of the format) sets b->oom and leaves the text
 * as it was; once b->oom is set the call does nothing.
 */
void manta_strbuf_printf(manta_strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/**
 * Append @p s as one quoted CSV field (RFC 4180): in double quotes, each '"'
 * doubled. Fails as manta_strbuf_printf() does.
 */
void manta_strbuf_csv_str(manta_strbuf *b, const char *s);

/**
 * Append @p s as one JSON string: in double quotes, '"' and '\\' escaped, control
 * characters (and DEL) as \\u00XX; other bytes as they are (UTF-8 passes through).
 * Fails as manta_strbuf_printf() does.
 */
void manta_strbuf_json_str(manta_strbuf *b, const char *s);

/** Free the text and reset @p b to empty (oom cleared). NULL is allowed. */
void manta_strbuf_free(manta_strbuf *b);

/**
 * Write the text of @p b to @p path atomically (manta_file_write_atomic()), then free
 * @p b whatever happened.
 * @return MANTA_ERR_NO_MEMORY naming @p path when an append had failed (nothing written),
 *         else manta_file_write_atomic()'s status.
 */
manta_status manta_strbuf_write_file(manta_strbuf *b, const char *path, manta_err *err);

#endif
