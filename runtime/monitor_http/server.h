/**
 * @file server.h
 * @brief The training monitor's HTTP server (libmicrohttpd): the live page,
 *        the JSON API, server-sent events, Prometheus /metrics and /healthz,
 *        over one or more run folders whose metrics.jsonl it tails.
 *
 * A library of its own (build/lib/libmanta_monitor_http.a, with the page of
 * page/ embedded; programs that link it link libmicrohttpd too), so that
 * libmanta.a, which holds the model it serves (monitor/model.h), needs no
 * libmicrohttpd. Board builds compile server_none.c instead: the same
 * functions, and mon_server_start() fails with MANTA_ERR_UNSUPPORTED.
 *
 * The server never touches the trainer: a thread of its own reads each
 * folder's metrics.jsonl every `poll_s` seconds into a model (monitor/model.h), and
 * libmicrohttpd's threads (one per connection, at most `max_connections`, at
 * most `per_ip_connections` from one address, idle ones closed after
 * `timeout_s`) answer from the models under a mutex held for the copy of an
 * answer. A slow or hostile client therefore holds at most its own thread.
 * The same thread checks the alerts (monitor/alerts.h) after each read and
 * runs `on_alert` (monitor/notify.h) for each alert that newly holds; the
 * answers are monitor/answers.h's and monitor/prometheus.h's.
 *
 * Endpoints (GET or HEAD; docs/monitor.md has the answers' members):
 * `/`, `/app.js`, `/style.css` (the page, embedded at build time), `/healthz`,
 * `/api/runs`, `/api/run?run=K`, `/api/metrics?run=K&since=N&limit=L`,
 * `/api/ranks?run=K`, `/api/events?run=K&since=N` (text/event-stream),
 * `/metrics` (Prometheus text 0.0.4). Other methods: 405; unknown paths: 404;
 * malformed queries: 400.
 *
 * Access: with a token set, every request but /healthz must carry it
 * (`Authorization: Bearer TOKEN` or `?token=TOKEN`; compared in constant
 * time), else 401. Bound to an address outside 127.0.0.0/8 the server does
 * not start without a token.
 */
#ifndef MANTA_MONITOR_HTTP_SERVER_H
#define MANTA_MONITOR_HTTP_SERVER_H

#include <stddef.h>

#include "core/status.h"
#include "monitor/model.h"

/** Most run folders one server shows. */
#define MON_MAX_RUNS 16
/** Shortest token accepted. */
#define MON_TOKEN_MIN 8

/** What a server does. Strings are borrowed during mon_server_start() only (copied). */
typedef struct mon_options {
    const char *listen;     /**< "[ADDR:]PORT": IPv4 address or "localhost" (default
                                    127.0.0.1), port 0-65535 (0: any free port) */
    const char *token;      /**< the access token, or NULL/"" for none */
    const char *on_alert;   /**< shell command run for each new alert, or NULL */
    mon_alert_opts alerts;  /**< thresholds */
    double poll_s;          /**< seconds between two reads of the files (default 0.5) */
    int max_connections;    /**< at once (default 64) */
    int per_ip_connections; /**< at once from one address (default 16) */
    unsigned timeout_s;     /**< an idle connection is closed after this (default 30) */
    double events_max_s;    /**< an event stream ends after this (the page reconnects; 300) */
    int quiet;              /**< 1: no line on standard error for failed alert commands */
} mon_options;

/** The defaults above, listen "127.0.0.1:8080", the token from MANTA_MONITOR_TOKEN. */
void mon_options_default(mon_options *o);

/** A running server. Opaque. */
typedef struct mon_server mon_server;

/**
 * Start serving the run folders @p dirs[0 .. n-1] (each with its
 * metrics.jsonl, which may not exist yet), 1 <= @p n <= ::MON_MAX_RUNS. The
 * runs are named by their folders' last components. Returns once the socket
 * listens and the files were read once.
 * @param out receives the server, stopped with mon_server_stop(); NULL on failure.
 * @return MANTA_ERR_INVALID_ARG for a bad listen address, option or folder
 *         count, or a non-loopback address without a token (or a token shorter
 *         than ::MON_TOKEN_MIN); MANTA_ERR_IO when the address cannot be bound
 *         (in use) or a thread not started; MANTA_ERR_NO_MEMORY. The message
 *         names the address or folder.
 */
manta_status mon_server_start(const mon_options *o, const char *const *dirs, int n,
                              mon_server **out, manta_err *err);

/** The port the server listens on (the chosen one when the options said 0). */
int mon_server_port(const mon_server *s);

/** "http://ADDR:PORT/" into @p buf (@p cap bytes; cut short when smaller). */
void mon_server_url(const mon_server *s, char *buf, size_t cap);

/**
 * Read the files once more now (the poll thread does it every poll_s): for a
 * caller that has just written a last record and is about to stop the server.
 */
void mon_server_poll_now(mon_server *s);

/** Stop listening, end the streams and connections, join the threads, free. NULL allowed. */
void mon_server_stop(mon_server *s);

#endif
