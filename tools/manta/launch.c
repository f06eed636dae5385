/* manta launch: start N local ranks of a distributed command, as
 * `torchrun --standalone` does: every child gets RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT (a free
 * port), MANTA_JOB_ID and, unless one is set, a fresh random MANTA_SECRET.
 * SIGINT/SIGTERM are forwarded to the children; when one rank fails the
 * others get SIGTERM after a grace period (then SIGKILL), and the launcher
 * reports which rank failed and how, and exits non-zero. */
#define _DEFAULT_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "dist/config.h"

#define LAUNCH_MAX 256

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta launch -n N [--port P] [--grace S] [--quiet] -- COMMAND [ARGS...]\n\n"
            "Starts N local ranks of COMMAND (like torchrun --standalone), each with RANK,\n"
            "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT, MANTA_JOB_ID\n"
            "and, unless MANTA_SECRET or MANTA_SECRET_FILE is set, a fresh random MANTA_SECRET.\n"
            "COMMAND 'manta' runs this very program. Example:\n"
            "  manta launch -n 2 -- manta train --schedule smoke --batch 16 --out runs/x\n\n"
            "  -n, --nproc N   ranks to start (1 .. %d)\n"
            "  --port P        rendezvous port (default: a free port)\n"
            "  --grace S       seconds the other ranks get to exit after one fails, before\n"
            "                  SIGTERM (and SIGKILL S seconds later); default 10\n"
            "  --quiet         no line when every rank succeeded\n"
            "SIGINT/SIGTERM are forwarded to every rank. Exit status: 0 when all ranks exit 0,\n"
            "else that of the first failing rank (128 + signal when it was killed).\n",
            LAUNCH_MAX);
}

static volatile sig_atomic_t pending_sig;

static void on_signal(int sig) { pending_sig = sig; }

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = 0;
    if (s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(s, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void describe(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, cap, "ended with wait status %d", status);
}

int cmd_launch(int argc, char **argv)
{
    long n = 0, port = 0, grace = 10;
    int quiet = 0, cmd_at = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            cmd_at = i + 1;
            break;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--nproc")) {
            if (!cmd_parse_long("launch", a, v, 1, LAUNCH_MAX, &n))
                return 2;
            i++;
        } else if (!strcmp(a, "--port")) {
            if (!cmd_parse_long("launch", a, v, 1, 65535, &port))
                return 2;
            i++;
        } else if (!strcmp(a, "--grace")) {
            if (!cmd_parse_long("launch", a, v, 0, 3600, &grace))
                return 2;
            i++;
        } else if (a[0] != '-') {
            cmd_at = i;
            break;
        } else {
            fprintf(stderr, "manta launch: unknown option '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (n < 1 || cmd_at < 0 || cmd_at >= argc) {
        fprintf(stderr, "manta launch: needs -n N and a command after '--' (see --help)\n");
        return 2;
    }
    if (!port && !(port = free_port())) {
        fprintf(stderr, "manta launch: no free TCP port on 127.0.0.1 for the rendezvous\n");
        return 1;
    }
    char secret[2 * 32 + 1] = "";
    if (!getenv("MANTA_SECRET") && !getenv("MANTA_SECRET_FILE")) {
        if (sodium_init() < 0) {
            fprintf(stderr, "manta launch: libsodium failed to initialise\n");
            return 1;
        }
        unsigned char raw[32];
        randombytes_buf(raw, sizeof raw);
        sodium_bin2hex(secret, sizeof secret, raw, sizeof raw);
        sodium_memzero(raw, sizeof raw);
    }
    char job[DIST_JOB_MAX];
    snprintf(job, sizeof job, "launch-%d-%ld", (int)getpid(), port);
    /* 'manta' is this program */
    const char *prog = strcmp(argv[cmd_at], "manta") ? argv[cmd_at] : "/proc/self/exe";

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fflush(stdout);
    fflush(stderr);
    pid_t pid[LAUNCH_MAX];
    int status[LAUNCH_MAX], alive = 0, rc = 0, failed_rank = -1;
    for (int r = 0; r < n; r++) {
        pid[r] = fork();
        if (pid[r] < 0) {
            fprintf(stderr, "manta launch: starting rank %d: fork: %s\n", r, strerror(errno));
            rc = 1;
            n = r;
            break;
        }
        if (pid[r] == 0) {
            sigaction(SIGINT, &old_int, NULL);
            sigaction(SIGTERM, &old_term, NULL);
            char b[32];
            snprintf(b, sizeof b, "%d", r);
            setenv("RANK", b, 1);
            setenv("LOCAL_RANK", b, 1);
            snprintf(b, sizeof b, "%ld", n);
            setenv("WORLD_SIZE", b, 1);
            setenv("LOCAL_WORLD_SIZE", b, 1);
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            snprintf(b, sizeof b, "%ld", port);
            setenv("MASTER_PORT", b, 1);
            if (!getenv("MANTA_JOB_ID"))
                setenv("MANTA_JOB_ID", job, 1);
            if (secret[0])
                setenv("MANTA_SECRET", secret, 1);
            execvp(prog, argv + cmd_at);
            fprintf(stderr, "manta launch: rank %d: cannot run '%s': %s\n", r, argv[cmd_at],
                    strerror(errno));
            _exit(127);
        }
        status[r] = -1;
        alive++;
    }
    sodium_memzero(secret, sizeof secret);
    if (rc) /* a fork failed: stop the ranks already started */
        for (int r = 0; r < n; r++)
            kill(pid[r], SIGTERM);
    double term_at = 0, kill_at = 0;
    while (alive > 0) {
        if (pending_sig) {
            int sig = pending_sig;
            pending_sig = 0;
            for (int r = 0; r < n; r++)
                if (status[r] < 0)
                    kill(pid[r], sig);
        }
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w > 0) {
            for (int r = 0; r < n; r++) {
                if (pid[r] != w)
                    continue;
                status[r] = st;
                alive--;
                if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && failed_rank < 0) {
                    char what[128];
                    describe(st, what, sizeof what);
                    fprintf(stderr, "manta launch: rank %d (pid %d) %s%s\n", r, (int)w, what,
                            alive ? "; stopping the other ranks" : "");
                    failed_rank = r;
                    rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                    term_at = now_s() + (double)grace;
                    kill_at = term_at + (double)grace;
                }
            }
            continue;
        }
        if (w < 0 && errno != EINTR)
            break;
        double t = now_s();
        if (term_at > 0 && t >= term_at) {
            for (int r = 0; r < n; r++)
                if (status[r] < 0)
                    kill(pid[r], SIGTERM);
            term_at = 0;
        }
        if (kill_at > 0 && t >= kill_at) {
            for (int r = 0; r < n; r++)
                if (status[r] < 0)
                    kill(pid[r], SIGKILL);
            kill_at = 0;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (failed_rank >= 0) {
        for (int r = 0; r < n; r++)
            if (r != failed_rank && status[r] >= 0 && (!WIFEXITED(status[r]) || WEXITSTATUS(status[r]))) {
                char what[128];
                describe(status[r], what, sizeof what);
                fprintf(stderr, "manta launch: rank %d %s\n", r, what);
            }
        return rc ? rc : 1;
    }
    if (!quiet && rc == 0)
        fprintf(stderr, "manta launch: all %ld ranks exited with status 0\n", n);
    return rc;
}
