/**
 * @file model.h
 * @brief The training monitor's model of one run: built from the run's
 *        metrics.jsonl (tailed while it grows) and bounded in memory. This is
 *        the reader; what is computed from a model is in the headers beside
 *        it: alerts.h (the alerts that hold), answers.h (the JSON answers of
 *        the HTTP API), prometheus.h (the Prometheus text). The HTTP server
 *        that serves them is a library of its own (monitor_http/server.h).
 *
 * The model reads the records of docs/monitor.md with core/records.h's reader
 * (every schema version): classification progress and the stereo trainer's
 * `"event":"step"` lines, the validations (`"eval":"val"`, `"event":"phase_end"`),
 * and the `"event"` records `job`, `checkpoint`, `error`, `done`, `stopped` and `membership`.
 * Unknown records are kept (served by /api/metrics) and otherwise ignored. A
 * line that is not a JSON object (cut short, damaged, longer than
 * ::MON_LINE_MAX) is counted as malformed and skipped; the bare tokens `nan`,
 * `inf` and `-inf` that C's printf wrote for non-finite numbers (schema 0) are
 * read as the strings "NaN", "Infinity" and "-Infinity" (so a NaN loss is
 * seen, and the stored line stays valid JSON).
 *
 * Threads: a model is plain data with no lock of its own; the caller
 * serialises every call on one model (the server holds a mutex per run).
 * Memory: at most ::MON_MAX_RECORDS records and ::MON_MAX_RECORD_BYTES bytes
 * of them are kept (the oldest are dropped first; sequence numbers go on).
 */
#ifndef MANTA_MONITOR_MODEL_H
#define MANTA_MONITOR_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "monitor/alerts.h"

/** Longest line read, in bytes; a longer line is skipped as malformed. */
#define MON_LINE_MAX 65536
/** Most records kept (the oldest go first). */
#define MON_MAX_RECORDS 20000
/** Most bytes of records kept. */
#define MON_MAX_RECORD_BYTES (32u << 20)
/** Most ranks of the per-rank table. */
#define MON_MAX_RANKS 256
/** Most validation results kept (the last ones). */
#define MON_MAX_VALS 64
/** Most bytes one mon_model_tail() reads. */
#define MON_TAIL_CHUNK (4u << 20)

/** One model. Opaque. */
typedef struct mon_model mon_model;

/**
 * A new, empty model of the run named @p name (shown in answers and as the
 * Prometheus label `run`; copied) with thresholds @p alerts (copied; NULL:
 * the defaults).
 * @param out receives the model, freed with mon_model_free(); NULL on failure.
 * @return MANTA_ERR_INVALID_ARG for NULL @p name or @p out, or a bad
 *         threshold; MANTA_ERR_NO_MEMORY.
 */
manta_status mon_model_create(const char *name, const mon_alert_opts *alerts, mon_model **out,
                              manta_err *err);

/** Free @p m and everything it holds. NULL is allowed. */
void mon_model_free(mon_model *m);

/** Forget every record (a new run replaced the file); the sequence numbers go on. */
void mon_model_reset(mon_model *m);

/**
 * Add @p n bytes of the file's text. Complete lines are read at once; the text
 * after the last newline waits for the rest of its line. Never fails: a bad
 * line is counted (mon_model_malformed()); an allocation that fails drops the
 * record and counts it as malformed.
 * @param now seconds since the epoch (the time of the activity).
 */
void mon_model_feed(mon_model *m, const char *data, size_t n, double now);

/**
 * Read what was appended to the file @p path since the last call (at most
 * ::MON_TAIL_CHUNK bytes a call) into the model. A file that is shorter than
 * what was read, or another file under the same name, resets the model first.
 * A missing file is no error (the run has not started). The time of the last
 * activity becomes the file's modification time.
 * @return MANTA_ERR_IO naming @p path when it exists but cannot be read.
 */
manta_status mon_model_tail(mon_model *m, const char *path, manta_err *err);

/** Sequence number of the last record (0: none yet). Records are numbered from 1. */
uint64_t mon_model_last_seq(const mon_model *m);

/** Lines skipped as malformed so far. */
uint64_t mon_model_malformed(const mon_model *m);

/** Whether the run is over: a `done`, `stopped` or `error` record, or the last step reached. */
bool mon_model_finished(const mon_model *m);

#endif
