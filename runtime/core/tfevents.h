/**
 * @file tfevents.h
 * @brief TensorBoard event files: a writer of scalar summaries that
 *        `tensorboard --logdir` shows next to PyTorch's, and a reader that
 *        checks every record (tests, reports).
 *
 * File: `<dir>/events.out.tfevents.<unix seconds>.<host>`, a TFRecord file.
 * Every record is, little-endian:
 *
 *     offset  size  field
 *     0       8     length     n, bytes of data (uint64)
 *     8       4     len_crc    manta_crc32c_mask(CRC-32C of bytes 0..7)
 *     12      n     data       one Event protocol buffer
 *     12 + n  4     data_crc   manta_crc32c_mask(CRC-32C of the data)
 *
 * The Events (TensorBoard's tensorboard/compat/proto/event.proto and
 * summary.proto, proto3) are encoded here by hand with only the fields below:
 *
 *     Event   { double wall_time = 1; int64 step = 2; string file_version = 3;
 *               Summary summary = 5; }
 *     Summary { repeated Value value = 1; }
 *     Value   { string tag = 1; float simple_value = 2; }
 *
 * The first record is an Event with the wall time and file_version
 * "brain.Event:2"; each manta_tfevents_append() adds one Event with the wall
 * time, the step and a Summary of (tag, simple_value) Values. Wall times are
 * seconds since the Unix epoch (manta_wall_time()).
 *
 * Errors: every function returns a ::manta_status and writes one line into
 * @p err (may be NULL) that begins with the path of the file (or the folder)
 * it concerns.
 */
#ifndef MANTA_CORE_TFEVENTS_H
#define MANTA_CORE_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** The file_version of the first record. */
#define MANTA_TFEVENTS_VERSION "brain.Event:2"
/** Longest tag, in bytes (the tags are printable ASCII: ' ' to '~'). */
#define MANTA_TFEVENTS_TAG_MAX 256
/** Most values one manta_tfevents_append() writes. */
#define MANTA_TFEVENTS_VALUES_MAX 1024

/** An open event file being written. Opaque; one thread at a time. */
typedef struct manta_tfevents manta_tfevents;

/** One scalar of a step: a tag such as "train/loss" and its value. */
typedef struct manta_tfscalar {
    const char *tag; /**< 1 to MANTA_TFEVENTS_TAG_MAX bytes of printable ASCII (borrowed) */
    float value;     /**< any float; NaN and infinities are written as they are */
} manta_tfscalar;

/**
 * Create the folder @p dir (and those above it, as manta_file_mkdir_p()) and
 * a new event file in it, named `events.out.tfevents.<S>.<host>` where S is
 * the whole seconds of @p wall_time; when that name exists (two writers in
 * the same second), `.1`, `.2`, ... up to `.99` is added, so an existing
 * file is never overwritten or appended to. Writes the first record
 * (file_version MANTA_TFEVENTS_VERSION at @p wall_time) and flushes it.
 *
 * @param dir       the folder (TensorBoard shows each folder under --logdir as a run).
 * @param host      the host part of the name; NULL for this machine's name
 *                  (gethostname()). Bytes other than letters, digits, '.',
 *                  '-' and '_' become '_'; an empty name becomes "localhost".
 * @param wall_time seconds since the epoch, in [0, 1e12).
 * @param out       receives the writer, which the caller closes with
 *                  manta_tfevents_close(); NULL on failure.
 * @return MANTA_ERR_IO naming the folder or the file when it cannot be
 *         created or the first record not written (the file is then
 *         removed); MANTA_ERR_INVALID_ARG for NULL or empty @p dir, NULL
 *         @p out or a bad @p wall_time; MANTA_ERR_NO_MEMORY.
 */
manta_status manta_tfevents_open(const char *dir, const char *host, double wall_time,
                                 manta_tfevents **out, manta_err *err);

/** Path of the file @p w writes (owned by @p w, valid until it is closed). */
const char *manta_tfevents_path(const manta_tfevents *w);

/**
 * Append one Event: @p step, @p wall_time and a Summary of the @p n scalars
 * at @p values, as one record written whole, then flush it to the system
 * (fflush, no fsync), so that a reader of the file sees it at once.
 *
 * @param step      the step (TensorBoard's x axis); steps need not increase,
 *                  but TensorBoard drops earlier points of a tag when a step
 *                  goes back (as after a resume).
 * @param wall_time seconds since the epoch, in [0, 1e12).
 * @param values    (n) the scalars (borrowed); 1 <= n <= MANTA_TFEVENTS_VALUES_MAX.
 * @return MANTA_ERR_INVALID_ARG naming the file and the tag when a tag is
 *         empty, too long or not printable ASCII, or for a bad @p n or
 *         @p wall_time (nothing is written then); MANTA_ERR_IO naming the
 *         file and the system's reason when the write or the flush fails.
 *         After a failed write the file may end in a partial record, so
 *         every later call returns MANTA_ERR_IO without writing;
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status manta_tfevents_append(manta_tfevents *w, int64_t step, double wall_time,
                                   const manta_tfscalar *values, size_t n, manta_err *err);

/**
 * Close the file and free @p w (NULL is allowed and does nothing).
 * @return MANTA_ERR_IO naming the file when closing it fails (buffered bytes
 *         could not be written); @p w is freed in every case.
 */
manta_status manta_tfevents_close(manta_tfevents *w, manta_err *err);

/** One scalar read back: the Value of an Event's Summary that held a simple_value. */
typedef struct manta_tfevents_point {
    size_t record;    /**< index of the record that holds it (the first record is 0) */
    int64_t step;     /**< the Event's step */
    double wall_time; /**< the Event's wall time */
    char *tag;        /**< the Value's tag, NUL-terminated (owned by the log) */
    float value;      /**< the simple_value */
} manta_tfevents_point;

/** What manta_tfevents_read() found in a file. Free with manta_tfevents_log_free(). */
typedef struct manta_tfevents_log {
    size_t n_records;             /**< records in the file */
    char *file_version;           /**< the first record's file_version; NULL without one */
    double first_wall_time;       /**< the first record's wall time (0 without one) */
    manta_tfevents_point *points; /**< (n_points) every simple_value, in file order */
    size_t n_points;
} manta_tfevents_log;

/**
 * Read the event file @p path whole (at most @p max_bytes), checking the
 * length CRC and the data CRC of every record and decoding each record as an
 * Event: the first record's file_version and wall time, and every Summary
 * Value that holds a simple_value (other Values, such as tensors, images or
 * histograms, and fields other than those listed in the file comment are
 * skipped by their wire type). Events, Summaries and Values are checked to
 * be well-formed protocol buffers: every length within its message, known
 * fields with their wire types, no groups, varints of at most 10 bytes.
 *
 * @param log receives the file's contents; zeroed on failure.
 * @return MANTA_ERR_FORMAT naming the file, the record (its index and byte
 *         offset) and what is wrong: "truncated", "length CRC mismatch",
 *         "data CRC mismatch" (with the stored and computed values), or the
 *         protocol buffer's fault; MANTA_ERR_IO when the file cannot be read
 *         or is larger than @p max_bytes; MANTA_ERR_INVALID_ARG for NULL
 *         arguments; MANTA_ERR_NO_MEMORY.
 */
manta_status manta_tfevents_read(const char *path, size_t max_bytes, manta_tfevents_log *log,
                                 manta_err *err);

/** Free what a log holds and zero it (NULL is allowed). */
void manta_tfevents_log_free(manta_tfevents_log *log);

#endif
