/**
 * @file answers.h
 * @brief The training monitor's JSON answers (the HTTP API of docs/monitor.md:
 *        /api/run, /api/metrics, /api/ranks and the alerts inside them),
 *        written from a run's model (model.h).
 *
 * Every function appends one JSON value, without a newline, to a string
 * buffer the caller owns (core/strbuf.h); an allocation that fails is kept in
 * the buffer's state, as strbuf.h says. Numbers the run has not written are
 * null; non-finite losses are the strings "NaN", "Infinity", "-Infinity".
 * Nothing here changes a model; the caller serialises calls on one model
 * (model.h, "Threads").
 */
#ifndef MANTA_MONITOR_ANSWERS_H
#define MANTA_MONITOR_ANSWERS_H

#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "monitor/alerts.h"
#include "monitor/model.h"

/** Append @p s to @p b as a JSON string (quoted, escaped; NULL as null). */
void mon_json_str(manta_strbuf *b, const char *s);

/** An alert as a JSON object `{"kind","rank","step","message"}` appended to @p b. */
void mon_alert_json(const mon_alert *a, manta_strbuf *b);

/**
 * The run's state as one JSON object (the answer of /api/run) appended to
 * @p b: name, state, task, job header, step, phase, ETA, the last figures,
 * checkpoints, validation results, the error, the alerts at @p now, record
 * counts. docs/monitor.md lists the members.
 */
void mon_model_run_json(const mon_model *m, double now, manta_strbuf *b);

/**
 * The records after sequence number @p since, at most @p max of them, as
 * `{"run":"NAME","first":F,"last":L,"next":S,"records":[...]}` appended to
 * @p b; `next` is the `since` of the following call (the last record
 * written, or @p since when none). When @p since is older than the oldest
 * record kept, the answer starts at the oldest.
 */
void mon_model_records_json(const mon_model *m, uint64_t since, size_t max, manta_strbuf *b);

/**
 * The per-rank table as `{"run":"NAME","ranks":[{...}]}` appended to @p b:
 * each rank's figures from its last report, its heartbeat and its age at
 * @p now, `dead` and `error`.
 */
void mon_model_ranks_json(const mon_model *m, double now, manta_strbuf *b);

#endif
