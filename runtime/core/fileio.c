#include "core/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

manta_status manta_file_read(const char *path, size_t max_bytes, char **out, size_t *len,
                             manta_err *err)
{
    if (out)
        *out = NULL;
    if (len)
        *len = 0;
    if (!path || !out || max_bytes == SIZE_MAX)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "file read: a path, an output pointer and a size limit are required");
    /* O_NONBLOCK: a FIFO must not block the open; it is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    manta_status st = MANTA_OK;
    if (fstat(fd, &sb) != 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = manta_err_set(err, MANTA_ERR_IO, "%s: %s", path,
                           S_ISDIR(sb.st_mode) ? "is a folder, not a file"
                                               : "is not a regular file");
    else if ((uintmax_t)sb.st_size > max_bytes)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: %jd bytes, more than the %zu allowed", path,
                           (intmax_t)sb.st_size, max_bytes);
    size_t n = st == MANTA_OK ? (size_t)sb.st_size : 0;
    char *buf = st == MANTA_OK ? malloc(n + 1) : NULL;
    if (st == MANTA_OK && !buf)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", path, n);
    size_t got = 0;
    while (st == MANTA_OK && got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
        else if (k == 0)
            st = manta_err_set(err, MANTA_ERR_IO,
                               "%s: read %zu of %zu bytes (the file shrank while it was read)",
                               path, got, n);
        else
            got += (size_t)k;
    }
    close(fd);
    if (st != MANTA_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return MANTA_OK;
}

/* Most temporary names tried for one path ("<path>.tmp.<pid>.<k>", k below this). */
#define TMP_TRIES 256

manta_status manta_file_create_tmp(const char *path, char **tmp, int *fd, manta_err *err)
{
    *fd = -1;
    size_t n = strlen(path) + 40;
    *tmp = malloc(n);
    if (!*tmp)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    int e = EEXIST;
    for (int k = 0; k < TMP_TRIES && e == EEXIST; k++) {
        snprintf(*tmp, n, "%s.tmp.%ld.%d", path, (long)getpid(), k);
        *fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        e = *fd >= 0 ? 0 : errno;
    }
    if (*fd >= 0)
        return MANTA_OK;
    manta_status st = manta_err_set(
        err, MANTA_ERR_IO, "%s: cannot create the temporary file %s: %s", path, *tmp, strerror(e));
    free(*tmp);
    *tmp = NULL;
    return st;
}

manta_status manta_file_sync_dir(const char *path, manta_err *err)
{
    const char *slash = strrchr(path, '/');
    char *dir = !slash ? dup_n(".", 1) : dup_n(path, slash == path ? 1 : (size_t)(slash - path));
    if (!dir)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    manta_status st = MANTA_OK;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot open the folder: %s", dir,
                           strerror(errno));
    else {
        /* Some file systems cannot sync folders; that is not a failure. */
        if (fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP)
            st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot sync the folder: %s", dir,
                               strerror(errno));
        close(fd);
    }
    free(dir);
    return st;
}

manta_status manta_file_write_atomic(const char *path, const void *data, size_t len, manta_err *err)
{
    if (!path || !*path)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "output path is empty");
    if (len && !data)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: no data for %zu bytes", path, len);
    char *tmp;
    int fd;
    MANTA_TRY(manta_file_create_tmp(path, &tmp, &fd, err));
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        int e = errno;
        close(fd);
        remove(tmp);
        manta_status st =
            manta_err_set(err, MANTA_ERR_IO, "%s: cannot create the temporary file %s: %s", path,
                          tmp, strerror(e));
        free(tmp);
        return st;
    }
    int e = 0;
    errno = 0;
    if (len && fwrite(data, 1, len, f) != len)
        e = errno ? errno : EIO;
    if (!e && fflush(f) != 0)
        e = errno;
    if (!e && fsync(fileno(f)) != 0 && errno != EINVAL)
        e = errno;
    if (fclose(f) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, path) != 0)
        e = errno;
    if (e)
        remove(tmp);
    free(tmp);
    if (e)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    manta_err why;
    if (manta_file_sync_dir(path, &why) != MANTA_OK)
        return manta_err_set(err, MANTA_ERR_IO,
                             "%s: written, but syncing its folder failed (it may not survive a "
                             "crash): %s",
                             path, why.msg);
    return MANTA_OK;
}

manta_status manta_file_mkdir_p(const char *path, manta_err *err)
{
    if (!path || !*path)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "folder path is empty");
    size_t n = strlen(path);
    char *dir = dup_n(path, n);
    if (!dir)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    manta_status st = MANTA_OK;
    /* Each prefix that ends before a '/', then the whole path; from the start again (a few
     * times) where a parent made here vanished before its child was: another process removed
     * it while empty (ranks of one job sharing an output folder) */
    for (int tries = 0, again = 1; again && tries < 8; tries++) {
        again = 0;
        for (size_t i = 1; st == MANTA_OK && !again && i <= n; i++) {
            if (dir[i] != '/' && dir[i] != '\0')
                continue;
            char c = dir[i];
            dir[i] = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
                if (errno == ENOENT && i > 1 && tries < 7)
                    again = 1;
                else
                    st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot create the folder: %s", dir,
                                       strerror(errno));
            }
            dir[i] = c;
        }
    }
    free(dir);
    struct stat sb;
    if (st == MANTA_OK && stat(path, &sb) != 0)
        st = manta_err_set(err, MANTA_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (st == MANTA_OK && !S_ISDIR(sb.st_mode))
        st = manta_err_set(err, MANTA_ERR_IO, "%s: exists and is not a folder", path);
    return st;
}

void manta_file_remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (!S_ISDIR(sb.st_mode)) {
        unlink(path);
        return;
    }
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *p = malloc(n);
            if (!p)
                continue;
            snprintf(p, n, "%s/%s", path, e->d_name);
            manta_file_remove_tree(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(path);
}
