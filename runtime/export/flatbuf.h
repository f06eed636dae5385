/**
 * @file flatbuf.h
 * @brief A small, generic FlatBuffers builder (host side, C11).
 *
 * The buffer is built back to front, like the official builder: every object
 * is written before the objects that refer to it, so every offset points
 * forward, and the root offset plus the file identifier are written last, at
 * the front. Objects are named by an ::mfb_ref, their distance from the *end*
 * of the buffer, which stays valid while the buffer grows.
 *
 * Supported: tables with vtables (identical vtables are shared), scalar fields
 * that are left out when equal to their default, strings, vectors of scalars
 * or structs with any power-of-two alignment (force_align 16 for
 * tflite Buffer.data), vectors of offsets, and a root with a 4-character file
 * identifier. Alignment follows the FlatBuffers rules: each scalar is aligned
 * to its size relative to the end of the buffer, and the finished size is a
 * multiple of the largest alignment used, so the data is correctly aligned
 * when the finished buffer starts at an address with that alignment.
 *
 * Rules of use: between mfb_start_table() and mfb_end_table() only the
 * mfb_add_*() calls are allowed (no strings, vectors or nested tables: build
 * those first). Field ids are 0 .. MFB_MAX_FIELDS-1.
 *
 * Errors are sticky: after the first failure every call returns the same
 * status and mfb_error() says what went wrong. Vector and string contents are
 * copied as they lie in memory, so the host must be little-endian
 * (mfb_init() returns MANTA_ERR_UNSUPPORTED otherwise).
 */
#ifndef MANTA_EXPORT_FLATBUF_H
#define MANTA_EXPORT_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** Highest field id + 1 that a table may use. */
#define MFB_MAX_FIELDS 64

/** An object already written: its distance in bytes from the end of the buffer (0 = none). */
typedef uint32_t mfb_ref;

/** Builder state. Fields are private; use the functions. */
typedef struct mfb_builder {
    uint8_t *buf;                   /**< storage; the data occupies the last @c size bytes */
    size_t cap;                     /**< bytes allocated */
    size_t size;                    /**< bytes written */
    size_t minalign;                /**< largest alignment used so far */
    int in_table;                   /**< a table is open */
    size_t table_end;               /**< size when the open table started */
    uint32_t field[MFB_MAX_FIELDS]; /**< per field id: position (from the end) or 0 */
    unsigned n_fields;              /**< highest field id added + 1 */
    uint32_t *vtables;              /**< positions of the vtables written, for sharing */
    size_t n_vtables, cap_vtables;
    int finished;        /**< mfb_finish() succeeded */
    manta_status status; /**< first error (sticky) */
    const char *why;     /**< static description of the first error */
} mfb_builder;

/**
 * Start a builder.
 * @param b       builder to initialise (owned by the caller; release with mfb_free()).
 * @param initial bytes to allocate at first (0 picks a default); the buffer grows as needed.
 * @return MANTA_OK, MANTA_ERR_NO_MEMORY, or MANTA_ERR_UNSUPPORTED on a big-endian host.
 */
manta_status mfb_init(mfb_builder *b, size_t initial);

/** Release the builder's memory (NULL and a zeroed builder are allowed). */
void mfb_free(mfb_builder *b);

/** Static description of the first error, or "" when there was none. Never NULL. */
const char *mfb_error(const mfb_builder *b);

/** Open a table. Fails (MANTA_ERR_INVALID_ARG) if one is already open or the buffer is finished. */
manta_status mfb_start_table(mfb_builder *b);

/**
 * @name Scalar fields
 * Add a scalar field to the open table, unless @p v equals @p def (readers
 * then see the default): one function per FlatBuffers scalar type, written in
 * its width (bool and int8/uint8: 1 byte, uint16: 2, int32/uint32/float: 4,
 * int64: 8). A bool is written as 0 or 1 and compared with @p def as a truth
 * value, a float compared with @p def bit for bit. Fields may be added in any
 * order; adding the same id twice is an error.
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (no open table, id out of range,
 *         field added twice), MANTA_ERR_NO_MEMORY.
 * @{
 */
manta_status mfb_add_bool(mfb_builder *b, unsigned id, int v, int def);
manta_status mfb_add_i8(mfb_builder *b, unsigned id, int8_t v, int8_t def);
manta_status mfb_add_u8(mfb_builder *b, unsigned id, uint8_t v, uint8_t def);
manta_status mfb_add_u16(mfb_builder *b, unsigned id, uint16_t v, uint16_t def);
manta_status mfb_add_i32(mfb_builder *b, unsigned id, int32_t v, int32_t def);
manta_status mfb_add_u32(mfb_builder *b, unsigned id, uint32_t v, uint32_t def);
manta_status mfb_add_i64(mfb_builder *b, unsigned id, int64_t v, int64_t def);
manta_status mfb_add_f32(mfb_builder *b, unsigned id, float v, float def);
/** @} */

/**
 * Add a field that refers to an object written earlier (table, string,
 * vector). @p ref 0 means "absent" and adds nothing.
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (no open table, bad id, @p ref not
 *         an object of this buffer), MANTA_ERR_NO_MEMORY.
 */
manta_status mfb_add_ref(mfb_builder *b, unsigned id, mfb_ref ref);

/**
 * Close the open table: writes its vtable (or shares an identical one).
 * @param out the table (written only on success).
 */
manta_status mfb_end_table(mfb_builder *b, mfb_ref *out);

/**
 * Write a string: u32 length, the bytes, a 0 terminator.
 * @param s   @p len bytes (may contain 0 bytes); NULL only when @p len is 0.
 * @param out the string (written only on success).
 */
manta_status mfb_create_string(mfb_builder *b, const char *s, size_t len, mfb_ref *out);

/**
 * Write a vector of scalars or structs: u32 count then the elements, copied
 * from @p data as they lie in memory (little-endian host).
 * @param elem_size bytes per element (> 0).
 * @param align     alignment of the first element: a power of two, at least
 *                  the scalar size (use 16 for tflite Buffer.data, force_align 16).
 * @param out       the vector (written only on success).
 */
manta_status mfb_create_vector(mfb_builder *b, const void *data, size_t count, size_t elem_size,
                               size_t align, mfb_ref *out);

/**
 * Write a vector of offsets to objects written earlier (tables, strings).
 * @param refs  @p count objects, none 0.
 * @param out   the vector (written only on success).
 */
manta_status mfb_create_ref_vector(mfb_builder *b, const mfb_ref *refs, size_t count, mfb_ref *out);

/**
 * Finish the buffer: root offset, then the optional file identifier.
 * @param root  the root table.
 * @param ident exactly 4 characters ("TFL3") or NULL for none.
 */
manta_status mfb_finish(mfb_builder *b, mfb_ref root, const char *ident);

/**
 * The finished buffer, owned by the builder (valid until mfb_free()).
 * Copy it to an address aligned to mfb_alignment() before reading it in place.
 * @param size its size in bytes.
 * @return the first byte, or NULL if mfb_finish() has not succeeded.
 */
const uint8_t *mfb_data(const mfb_builder *b, size_t *size);

/** Alignment the finished buffer needs in memory (largest alignment used). */
size_t mfb_alignment(const mfb_builder *b);

#endif
