/* --on-alert: a detached shell command with the alert on its standard input (notify.h). */
#include "monitor/notify.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

manta_status mon_notify(const char *cmd, const char *text, size_t n, manta_err *err)
{
    if (!cmd || !cmd[0] || (n > 0 && !text) || n > MON_NOTIFY_MAX)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "monitor: --on-alert needs a command and at most %d bytes of input",
                             MON_NOTIFY_MAX);
    int p[2];
    if (pipe(p) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "monitor: --on-alert '%s': pipe: %s", cmd,
                             strerror(errno));
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    fcntl(p[1], F_SETFD, FD_CLOEXEC);
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return manta_err_set(err, MANTA_ERR_IO, "monitor: --on-alert '%s': fork: %s", cmd,
                             strerror(e));
    }
    if (child == 0) { /* the middle process: start the command and leave at once */
        pid_t g = fork();
        if (g == 0) {
            setsid();
            if (dup2(p[0], 0) < 0)
                _exit(127);
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
            _exit(127);
        }
        _exit(g < 0 ? 1 : 0);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    /* The text fits the pipe (MON_NOTIFY_MAX <= PIPE_BUF), and this process still holds the
     * read end, so the write neither blocks nor raises SIGPIPE. */
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(p[1], text + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(p[1]);
    close(p[0]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return manta_err_set(err, MANTA_ERR_IO, "monitor: --on-alert '%s': could not start it",
                             cmd);
    return MANTA_OK;
}
