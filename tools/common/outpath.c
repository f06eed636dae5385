#include "outpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The nearest existing ancestor of @p path (a path that does not exist) must be a folder
 * the process may write in; with @p parent_only, its parent must be that ancestor (files are
 * written into existing folders; folders are made with their parents). */
static bool creatable(const char *prog, const char *opt, const char *path, bool parent_only)
{
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) {
        fprintf(stderr, "%s: --%s %.64s...: path too long\n", prog, opt, path);
        return false;
    }
    for (;;) {
        char *slash = strrchr(dir, '/');
        while (slash && slash > dir && slash[1] == '\0') { /* "a/b/" -> "a/b" */
            *slash = '\0';
            slash = strrchr(dir, '/');
        }
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == dir)
            dir[1] = '\0'; /* "/x" -> "/" */
        else
            *slash = '\0';
        struct stat s;
        if (stat(dir, &s) == 0) {
            if (!S_ISDIR(s.st_mode)) {
                fprintf(stderr, "%s: --%s %s: %s is not a folder\n", prog, opt, path, dir);
                return false;
            }
            if (access(dir, W_OK | X_OK) != 0) {
                fprintf(stderr, "%s: --%s %s: cannot write in %s: %s\n", prog, opt, path, dir,
                        strerror(errno));
                return false;
            }
            return true;
        }
        if (parent_only && (errno == ENOENT || errno == ENOTDIR)) {
            fprintf(stderr, "%s: --%s %s: cannot write there: the folder %s does not exist\n", prog,
                    opt, path, dir);
            return false;
        }
        if ((errno != ENOENT && errno != ENOTDIR) || !strcmp(dir, ".") || !strcmp(dir, "/")) {
            fprintf(stderr, "%s: --%s %s: %s: %s\n", prog, opt, path, dir, strerror(errno));
            return false;
        }
    }
}

bool out_check_file(const char *prog, const char *opt, const char *path)
{
    struct stat s;
    if (!path || !*path) {
        fprintf(stderr, "%s: --%s needs a file name\n", prog, opt);
        return false;
    }
    if (stat(path, &s) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            fprintf(stderr, "%s: --%s %s: %s\n", prog, opt, path, strerror(errno));
            return false;
        }
        return creatable(prog, opt, path, true);
    }
    if (S_ISDIR(s.st_mode)) {
        fprintf(stderr, "%s: --%s %s is a folder; a file is meant\n", prog, opt, path);
        return false;
    }
    if (access(path, W_OK) != 0) {
        fprintf(stderr, "%s: --%s %s: cannot write: %s\n", prog, opt, path, strerror(errno));
        return false;
    }
    return true;
}

bool out_check_dir(const char *prog, const char *opt, const char *path)
{
    struct stat s;
    if (!path || !*path) {
        fprintf(stderr, "%s: --%s needs a folder name\n", prog, opt);
        return false;
    }
    if (stat(path, &s) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            fprintf(stderr, "%s: --%s %s: %s\n", prog, opt, path, strerror(errno));
            return false;
        }
        return creatable(prog, opt, path, false);
    }
    if (!S_ISDIR(s.st_mode)) {
        fprintf(stderr, "%s: --%s %s is a file; a folder is meant\n", prog, opt, path);
        return false;
    }
    if (access(path, W_OK | X_OK) != 0) {
        fprintf(stderr, "%s: --%s %s: cannot write in it: %s\n", prog, opt, path, strerror(errno));
        return false;
    }
    return true;
}
