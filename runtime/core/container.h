/**
 * @file container.h
 * @brief The checkpoint container: a versioned, checksummed file of named
 *        sections (float32 arrays, int64 arrays, bytes, JSON text), written
 *        atomically and verified completely before anything is used.
 *
 * Training checkpoints (train/checkpoint.h adds the device transfers) and
 * the accuracy predictor's model files are such containers.
 * docs/checkpoint.md describes the format and the conventions.
 *
 * @par Layout (format version 1; every integer little-endian)
 * @verbatim
 * File header, 40 bytes, at offset 0
 *    0   8  magic       "MANTACKP"
 *    8   4  version     1 (CKPT_FORMAT_VERSION)
 *   12   4  flags       0 (no flag is defined; a reader refuses unknown bits)
 *   16   4  sections    number of sections that follow
 *   20   4  reserved    0
 *   24   8  file_size   bytes in the whole file, trailer included
 *   32   4  header_crc  CRC-32 of bytes 0..31
 *   36   4  reserved    0
 *
 * Section, repeated `sections` times from offset 40; every section starts at
 * an offset that is a multiple of 8
 *   +0   4  hdr_crc     CRC-32 of the rest of the section header (+4 .. P-1)
 *   +4   4  type        1 float32, 2 int64, 3 bytes, 4 JSON (UTF-8 text)
 *   +8   8  count       elements (bytes for types 3 and 4)
 *  +16   4  name_len    1..255
 *  +20   4  reserved    0
 *  +24   name_len bytes name (printable ASCII), zero-padded to a multiple of 8
 *   P    count * element size bytes payload (8-byte aligned), zero-padded to 8
 *   E    4  sec_crc     CRC-32 of bytes +0 .. E-1: section header and payload
 *  E+4   4  reserved    0
 *
 * Trailer, 16 bytes, at file_size - 16
 *    0   8  end marker  "MANTAEND"
 *    8   4  reserved    0
 *   12   4  file_crc    CRC-32 of every byte before it (0 .. file_size-5)
 * @endverbatim
 * CRC-32 is zlib's crc32() (ISO-HDLC polynomial). Floats are stored as their
 * IEEE-754 bit patterns, so NaN payloads and -0.0 survive a round trip.
 * Section names are unique within a file.
 *
 * @par Writing
 * ckpt_writer_begin() creates "<path>.tmp.<pid>" in the target's folder (the
 * temporary name of core/fileio.h) and streams sections into it as they are
 * added; ckpt_writer_commit() writes the
 * trailer and header, fsyncs the file, renames it over @p path and fsyncs the
 * folder. On any failure the temporary file is removed and an existing
 * checkpoint at @p path is left untouched. ckpt_writer_begin_mem() builds the
 * same bytes in memory instead.
 *
 * @par Reading
 * ckpt_open() checks magic, version, header CRC, size, every section's bounds
 * and CRC, the file CRC and name uniqueness before it returns; every size
 * read from the file is checked against the file size before any
 * allocation. Sections are then looked up by name and type and copied with
 * an exact expected count into host arrays, or streamed in chunks to a
 * consumer (ckpt_read_f32_stream()); each copy re-checks the section CRC.
 *
 * Errors: every function returns a ::manta_status and writes one line naming
 * the checkpoint (its path, or the name given for memory) and the problem.
 * Objects are not shared between threads.
 */
#ifndef MANTA_CORE_CONTAINER_H
#define MANTA_CORE_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** The format version this build writes and the only one it reads. */
#define CKPT_FORMAT_VERSION 1u
/** Longest section name, in bytes. */
#define CKPT_NAME_MAX 255
/** Size of the file header and of the trailer, in bytes. */
#define CKPT_HEADER_SIZE 40
#define CKPT_TRAILER_SIZE 16
/** Most float32 values one call of a ::ckpt_f32_source or ::ckpt_f32_sink handles (256 KiB). */
#define CKPT_STREAM_CHUNK ((size_t)64 * 1024)

/** Type of a section's elements (the numbers are stored in files). */
typedef enum ckpt_type {
    CKPT_F32 = 1,   /**< IEEE-754 binary32, 4 bytes each */
    CKPT_I64 = 2,   /**< two's-complement int64, 8 bytes each */
    CKPT_BYTES = 3, /**< opaque bytes */
    CKPT_JSON = 4   /**< UTF-8 JSON text, no terminator stored */
} ckpt_type;

/** Name of a type ("float32", "int64", "bytes", "json"); never NULL. */
const char *ckpt_type_name(ckpt_type t);

/* ---- writer ------------------------------------------------------------- */

/** A checkpoint being written. Opaque. */
typedef struct ckpt_writer ckpt_writer;

/** File operations of a writer, as seen by a ::ckpt_fault_fn. */
typedef enum ckpt_io_op {
    CKPT_IO_CREATE,  /**< creating the temporary file */
    CKPT_IO_WRITE,   /**< one write of the temporary file */
    CKPT_IO_SYNC,    /**< fsync of the temporary file */
    CKPT_IO_RENAME,  /**< renaming the temporary file over the target */
    CKPT_IO_SYNC_DIR /**< fsync of the target's folder */
} ckpt_io_op;

/**
 * Fault injection for tests: called before each file operation of a writer
 * with the operation, the file offset and the length (writes only; 0
 * otherwise). Return 0 to let it run, or an errno value (ENOSPC, EIO, ...)
 * to make it fail as if the system had returned that error.
 */
typedef int (*ckpt_fault_fn)(void *user, ckpt_io_op op, uint64_t offset, size_t len);

/** Options of ckpt_writer_begin(); zero-initialise (or pass NULL) for defaults. */
typedef struct ckpt_writer_opts {
    ckpt_fault_fn fault; /**< NULL in normal use */
    void *fault_user;    /**< passed to @c fault */
} ckpt_writer_opts;

/**
 * Start writing a checkpoint to @p path: creates "<path>.tmp.<pid>" in the
 * same folder (truncating a stale one). Nothing at @p path changes until
 * ckpt_writer_commit() succeeds.
 *
 * @param path target file; any existing file there is replaced at commit.
 * @param opt  options, or NULL.
 * @param out  the writer; NULL on failure. Release it with
 *             ckpt_writer_commit() or ckpt_writer_abort().
 * @param err  error record the writer keeps and fills on every failure of
 *             this and later calls on the writer (it must outlive the
 *             writer); NULL drops messages.
 * @return MANTA_ERR_IO naming the temporary file when it cannot be created,
 *         MANTA_ERR_INVALID_ARG for an empty path, MANTA_ERR_NO_MEMORY.
 */
manta_status ckpt_writer_begin(const char *path, const ckpt_writer_opts *opt, ckpt_writer **out,
                               manta_err *err);

/**
 * Start building a checkpoint in memory; finish with ckpt_writer_commit_mem().
 * @param name what messages call the checkpoint (NULL: "<memory>").
 * @param out, err as for ckpt_writer_begin().
 */
manta_status ckpt_writer_begin_mem(const char *name, ckpt_writer **out, manta_err *err);

/**
 * Append a float32 section of @p n values copied bit for bit from @p data
 * (host memory, (n) floats; NULL allowed when n is 0).
 *
 * Errors are sticky: after the first failure every later call returns that
 * status without writing, and commit fails and removes the temporary file.
 * @return MANTA_ERR_INVALID_ARG for a name that is empty, longer than
 *         ::CKPT_NAME_MAX, not printable ASCII or already added ("section
 *         'params' added twice"), MANTA_ERR_IO for a failed write,
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status ckpt_add_f32(ckpt_writer *w, const char *name, const float *data, size_t n);

/**
 * Producer of a streamed float32 section: write the values
 * [first, first + k) of the section into @p dst ((k) floats, host byte
 * order; k is at most ::CKPT_STREAM_CHUNK).
 * @return MANTA_OK, or a status with a message in @p err (which is never
 *         NULL) saying what failed, e.g. "reading the device failed: ...".
 */
typedef manta_status (*ckpt_f32_source)(void *user, size_t first, float *dst, size_t k,
                                        manta_err *err);

/**
 * Append a float32 section of @p n values produced by @p src in chunks of
 * ::CKPT_STREAM_CHUNK, through a host staging buffer of the writer: an array
 * of any size held elsewhere (a device slab) is stored without a host copy
 * of it. @p src is called in order of @p first, from this call only.
 * @param src  NULL is allowed when @p n is 0.
 * @param user passed to @p src.
 * @return as ckpt_add_f32() (a NULL @p src for values is "no data");
 *         a failure of @p src is the writer's error, with its status and the
 *         message "checkpoint X: section 'name': <the source's message>".
 */
manta_status ckpt_add_f32_stream(ckpt_writer *w, const char *name, size_t n, ckpt_f32_source src,
                                 void *user);

/** Append an int64 section of @p n values (NULL allowed when n is 0).
 *  Errors as ckpt_add_f32(). */
manta_status ckpt_add_i64(ckpt_writer *w, const char *name, const int64_t *data, size_t n);

/** Append @p n opaque bytes (NULL allowed when n is 0). Errors as ckpt_add_f32(). */
manta_status ckpt_add_bytes(ckpt_writer *w, const char *name, const void *data, size_t n);

/**
 * Append JSON text (NUL-terminated; the terminator is not stored).
 * @return MANTA_ERR_INVALID_ARG when @p text is not valid UTF-8 or not one
 *         well-formed JSON value; otherwise as ckpt_add_f32().
 */
manta_status ckpt_add_json(ckpt_writer *w, const char *name, const char *text);

/**
 * Finish a file writer: write the trailer and the header, flush, fsync,
 * rename over the target path and fsync its folder. Frees @p w in every
 * case. On failure before the rename the temporary file is removed and the
 * target is untouched; a failure of the final folder fsync is reported
 * (MANTA_ERR_IO) although the new checkpoint is already in place.
 * @return the writer's first error if an earlier call failed (its message
 *         is already in the record), MANTA_ERR_IO for a failed write,
 *         fsync or rename, MANTA_ERR_INVALID_ARG for a memory writer.
 */
manta_status ckpt_writer_commit(ckpt_writer *w);

/**
 * Finish a memory writer: the complete file in a malloc'd buffer that the
 * caller frees. Frees @p w in every case; on failure *data is NULL and
 * *size 0.
 * @return the writer's first error, MANTA_ERR_INVALID_ARG for a file writer.
 */
manta_status ckpt_writer_commit_mem(ckpt_writer *w, void **data, size_t *size);

/** Discard a writer: removes its temporary file and frees it. The error
 *  record is not touched. NULL is allowed. */
void ckpt_writer_abort(ckpt_writer *w);

/* ---- reader ------------------------------------------------------------- */

/** A verified checkpoint. Opaque. */
typedef struct ckpt_reader ckpt_reader;

/** One section as listed by ckpt_section_at(). */
typedef struct ckpt_section_info {
    const char *name; /**< owned by the reader; valid until ckpt_close() */
    ckpt_type type;
    uint64_t count; /**< elements (bytes for CKPT_BYTES and CKPT_JSON) */
} ckpt_section_info;

/**
 * Open and verify the checkpoint at @p path. The file stays open (payloads
 * are read on demand) until ckpt_close(); memory use is proportional to the
 * number of sections, not to their sizes.
 *
 * @param out the reader; NULL on failure.
 * @return MANTA_ERR_IO when the file cannot be opened or read or is not a
 *         regular file; MANTA_ERR_UNSUPPORTED for another format version
 *         ("checkpoint X is format version 2, this build reads 1") or
 *         unknown flags; MANTA_ERR_FORMAT for a file that is empty, not a
 *         checkpoint, truncated ("truncated (100 of 2048 bytes)"), longer
 *         than its header says, corrupt ("header is corrupt (CRC
 *         mismatch)", "section 'params' is corrupt (CRC mismatch)", "header
 *         of section #2 (byte 96) is corrupt ...", "end marker is corrupt",
 *         "corrupt (file CRC mismatch)"), whose sizes exceed the file, or
 *         that names a section twice; MANTA_ERR_NO_MEMORY.
 */
manta_status ckpt_open(const char *path, ckpt_reader **out, manta_err *err);

/**
 * Open and verify a checkpoint held in memory (as ckpt_writer_commit_mem()
 * returns it). The reader borrows @p data, which must stay valid and
 * unchanged until ckpt_close().
 * @param name what messages call the checkpoint (NULL: "<memory>").
 * @return as ckpt_open().
 */
manta_status ckpt_open_mem(const void *data, size_t size, const char *name, ckpt_reader **out,
                           manta_err *err);

/** Close the file and free the reader. NULL is allowed. */
void ckpt_close(ckpt_reader *r);

/** Number of sections, in file order. */
size_t ckpt_num_sections(const ckpt_reader *r);

/** Section @p i (0-based, file order) into @p out; false when out of range. */
bool ckpt_section_at(const ckpt_reader *r, size_t i, ckpt_section_info *out);

/** Whether a section called @p name exists (of any type). */
bool ckpt_has(const ckpt_reader *r, const char *name);

/**
 * Look up section @p name of type @p type.
 * @param count its element count (may be NULL).
 * @return MANTA_ERR_FORMAT "checkpoint X has no section 'name'" or
 *         "checkpoint X: section 'name' is int64, not float32".
 */
manta_status ckpt_find(const ckpt_reader *r, const char *name, ckpt_type type, uint64_t *count,
                       manta_err *err);

/**
 * Copy float32 section @p name into @p dst ((n) floats) bit for bit.
 * @return the errors of ckpt_find(); MANTA_ERR_FORMAT when the section does
 *         not hold exactly @p n values ("checkpoint X: section 'params' has
 *         1000 floats, the model needs 1200") or when its CRC no longer
 *         matches (the file changed after it was opened; @p dst is then
 *         unspecified); MANTA_ERR_IO for a failed read.
 */
manta_status ckpt_read_f32(ckpt_reader *r, const char *name, float *dst, size_t n, manta_err *err);

/**
 * Consumer of a streamed float32 section: take the values
 * [first, first + k) of the section from @p src ((k) floats, host byte
 * order; k is at most ::CKPT_STREAM_CHUNK; @p src is valid during the call).
 * @return MANTA_OK, or a status with a message in @p err (never NULL).
 */
typedef manta_status (*ckpt_f32_sink)(void *user, size_t first, const float *src, size_t k,
                                      manta_err *err);

/**
 * Hand float32 section @p name, which must hold exactly @p n values, to
 * @p sink in chunks of ::CKPT_STREAM_CHUNK in order of their position,
 * through a host staging buffer of the reader; the section's CRC is checked
 * once all chunks were passed, so on a CRC error @p sink has seen data that
 * turned out corrupt. A failure of @p sink stops the read.
 * @param sink NULL is allowed when @p n is 0.
 * @return as ckpt_read_f32() (a NULL @p sink for values is "no
 *         destination"); a failure of @p sink with its status and the
 *         message "checkpoint X: section 'name': <the sink's message>".
 */
manta_status ckpt_read_f32_stream(ckpt_reader *r, const char *name, size_t n, ckpt_f32_sink sink,
                                  void *user, manta_err *err);

/** Copy int64 section @p name into @p dst ((n) values). Errors as ckpt_read_f32(). */
manta_status ckpt_read_i64(ckpt_reader *r, const char *name, int64_t *dst, size_t n,
                           manta_err *err);

/** Copy bytes section @p name into @p dst ((n) bytes). Errors as ckpt_read_f32(). */
manta_status ckpt_read_bytes(ckpt_reader *r, const char *name, void *dst, size_t n, manta_err *err);

/**
 * Read JSON section @p name into a malloc'd, NUL-terminated string the
 * caller frees; @p len (may be NULL) receives its length without the NUL.
 * @return the errors of ckpt_find(); MANTA_ERR_FORMAT when the text is not
 *         valid UTF-8 or not well-formed JSON, or its CRC no longer matches.
 */
manta_status ckpt_read_json(ckpt_reader *r, const char *name, char **text, size_t *len,
                            manta_err *err);

#endif
