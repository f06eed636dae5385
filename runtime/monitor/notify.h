/**
 * @file notify.h
 * @brief The monitor's `--on-alert CMD`: a shell command started in a
 *        detached process with a text (the alert as JSON) on its standard
 *        input, without waiting for it.
 */
#ifndef MANTA_MONITOR_NOTIFY_H
#define MANTA_MONITOR_NOTIFY_H

#include <stddef.h>

#include "core/status.h"

/** Most bytes of standard input mon_notify() gives a command (a pipe's atomic size). */
#define MON_NOTIFY_MAX 4096

/**
 * Run `/bin/sh -c @p cmd` in a new session, detached (a double fork, so that
 * no zombie is left and the caller never waits for it), with @p n bytes of
 * @p text (at most ::MON_NOTIFY_MAX) on its standard input, then end of file;
 * its standard output and error are the caller's. Returns once the command
 * is started; its exit status is not seen. Safe to call from a thread of a
 * multi-threaded process (the children call only async-signal-safe functions
 * before exec).
 * @return MANTA_ERR_INVALID_ARG for a NULL or empty @p cmd or a longer
 *         @p text; MANTA_ERR_IO naming the command when the pipe or a
 *         process cannot be created.
 */
manta_status mon_notify(const char *cmd, const char *text, size_t n, manta_err *err);

#endif
