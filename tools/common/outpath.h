/**
 * @file outpath.h
 * @brief Output paths of the programs in tools/, checked before the work: a
 *        command that will write a file or a folder says at once when it cannot,
 *        instead of after minutes of computation.
 *
 * A file that does not exist yet needs an existing parent folder the process may
 * write in (files are written into folders that exist); a folder that does not
 * exist yet, a nearest existing ancestor that is such a folder (the command makes
 * it with its parents). Neither check creates, opens or changes anything. On failure they print
 * one line on standard error, "<prog>: --<opt> <path>: <why>", and return false.
 */
#ifndef MANTA_TOOLS_OUTPATH_H
#define MANTA_TOOLS_OUTPATH_H

#include <stdbool.h>

/**
 * Whether a file may be written at @p path: not a folder, writable when it
 * exists, else in an existing folder that is writable. @p prog starts the message ("manta export"), @p opt
 * names the option without "--" ("out").
 */
bool out_check_file(const char *prog, const char *opt, const char *path);

/**
 * Whether files may be written into the folder @p path: a writable folder when
 * it exists (not a file), else creatable.
 */
bool out_check_dir(const char *prog, const char *opt, const char *path);

#endif
