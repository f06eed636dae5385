/**
 * @file fileio.h
 * @brief Whole-file reads, atomic file writes and folder creation for host
 *        code (POSIX).
 *
 * Every file manta writes for later use (checkpoints, predictor models,
 * latency tables, tuning files, cached programs, exported models, search
 * results) is replaced atomically: the bytes go to a temporary file in the
 * target's folder, named "<path>.tmp.<pid>", which is flushed, synced and
 * then renamed over the target, and the folder is synced after the rename.
 * A crash leaves either the old file or the new one, never a mix; a process
 * killed mid-write leaves its "*.tmp.<pid>" file behind. Because the name
 * holds the process id, one process must not write the same path from two
 * threads at once.
 *
 * Errors: every function returns a ::manta_status and writes one line into
 * @p err (may be NULL) that begins with the path it concerns, followed by
 * ": " and the cause (with the system's reason where there is one).
 */
#ifndef MANTA_CORE_FILEIO_H
#define MANTA_CORE_FILEIO_H

#include <stddef.h>

#include "core/status.h"

/**
 * Read the whole regular file @p path into a malloc'd buffer that the
 * caller frees (*out). One NUL byte follows the data (not counted in
 * @p len), so text can be parsed in place; the buffer is aligned as malloc
 * aligns. An empty file gives a buffer holding just the NUL.
 *
 * @param max_bytes largest file accepted (must be below SIZE_MAX).
 * @param out       receives the buffer; NULL on failure.
 * @param len       receives the number of bytes read (may be NULL).
 * @return MANTA_ERR_IO when the file cannot be opened or read, is a folder
 *         or not a regular file (a FIFO is refused without blocking), or is
 *         larger than @p max_bytes ("<path>: 5000 bytes, more than the 4096
 *         allowed"); MANTA_ERR_NO_MEMORY; MANTA_ERR_INVALID_ARG for NULL
 *         arguments.
 */
manta_status manta_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                             manta_err *err);

/**
 * Replace @p path by the @p len bytes at @p data atomically (see the file
 * comment): create "<path>.tmp.<pid>" (truncating a stale one; a link there
 * is not followed), write, flush, fsync, rename over @p path, fsync the
 * folder. On a failure before the rename the temporary file is removed and
 * an existing file at @p path is untouched.
 *
 * @param data may be NULL when @p len is 0.
 * @return MANTA_ERR_IO naming the temporary file when it cannot be created,
 *         or @p path and the system's reason when a write, the sync or the
 *         rename fails; MANTA_ERR_IO also when only the final folder sync
 *         fails ("written, but syncing its folder failed"), the new file
 *         then being in place; MANTA_ERR_INVALID_ARG for an empty path;
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status manta_file_write_atomic(const char *path, const void *data, size_t len,
                                     manta_err *err);

/**
 * Create the temporary file under which @p path is written, for writers that stream a file
 * of their own and then rename it (manta_file_write_atomic(), the checkpoint container):
 * "<path>.tmp.<pid>.<k>" with the first k = 0, 1, ... whose name is free, created
 * exclusively (O_EXCL), so that threads and processes writing the same path at once each
 * write their own. *tmp receives the name (malloc'd; the caller frees it) and *fd the file,
 * open for writing.
 * @return MANTA_ERR_IO naming @p path, the last name tried and the system's reason (then
 *         *tmp is NULL and *fd -1); MANTA_ERR_NO_MEMORY.
 */
manta_status manta_file_create_tmp(const char *path, char **tmp, int *fd, manta_err *err);

/**
 * fsync the folder that holds @p path ("." for a name without a '/'), so
 * that a rename into it survives a crash. A file system that cannot sync
 * folders (EINVAL, ENOTSUP) is not a failure.
 * @return MANTA_ERR_IO naming the folder and the system's reason;
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status manta_file_sync_dir(const char *path, manta_err *err);

/**
 * Create the folder @p path and every missing folder above it (mode 0755
 * before the umask), as `mkdir -p` does. Folders that exist are fine.
 * @return MANTA_ERR_IO naming the first folder that cannot be created, or
 *         @p path when it exists but is not a folder; MANTA_ERR_INVALID_ARG
 *         for an empty path; MANTA_ERR_NO_MEMORY.
 */
manta_status manta_file_mkdir_p(const char *path, manta_err *err);

/**
 * Remove @p path and, for a folder, everything below it; symbolic links are removed, not
 * followed. A missing path is no error; what cannot be removed is left (best effort, for
 * temporary folders).
 */
void manta_file_remove_tree(const char *path);

#endif
