/**
 * @file fbwalk.h
 * @brief Schema-free walk of any byte string through the engine's checked
 *        FlatBuffers reader (runtime/engine/fbread_impl.h): every field of every
 *        reachable table read as each scalar type, as a table, a vector and a
 *        string, and every vector as a vector of tables. Shared by the
 *        reader's unit test and its libFuzzer target
 *        (tools/fuzz/fuzz_fbread.c). C99, reader and diag only.
 */
#ifndef MANTA_TESTS_FBWALK_H
#define MANTA_TESTS_FBWALK_H

#include <stddef.h>
#include <stdint.h>

/** Field ids tried in every table (0 to FBW_FIELDS - 1). */
#define FBW_FIELDS 12
/** Elements of a vector tried as tables. */
#define FBW_VEC_TABLES 8
/** Nesting and table limits of the walk's reader. */
#define FBW_MAX_DEPTH 6
#define FBW_MAX_TABLES 512

/**
 * Walk @p size bytes at @p data (4-byte aligned; the caller copies them into
 * a buffer of exactly that size so that the address sanitizer sees any read
 * past it). Checks the reader's promises on every call: a success returns an
 * object inside the data (table and vtable in bounds and aligned, vector
 * elements and string terminator inside, depth within the limit), a failure
 * returns an error code with a message.
 * @param tables receives the number of tables read successfully (may be NULL).
 * @return NULL when every promise held, else a static description of the
 *         broken one.
 */
const char *fbw_walk(const uint8_t *data, size_t size, unsigned *tables);

#endif
