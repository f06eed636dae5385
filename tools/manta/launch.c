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
#include "dist/net.h"
#include "common/opts.h"
#include "core/env.h"
#include "dist/config.h"

#define LAUNCH_MAX 256
#define STR(x) #x
#define XSTR(x) STR(x)

static volatile sig_atomic_t pending_sig;

static void on_signal(int sig) { pending_sig = sig; }

static void describe(int status, char *out, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, cap, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, cap, "ended with wait status %d", status);
}

/* Where the command starts in argv: at "--" or at the first argument that is
 * neither one of launch's options (@p defs) nor an option's value, so that the
 * command's own options are not taken for launch's. */
static int command_at(const opt_def *defs, int argc, char **argv)
{
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0 && argv[i][0] == '-' && argv[i][1]) {
        const char *a = argv[i++];
        const opt_def *o = NULL;
        for (const opt_def *d = defs; d->name && !o; d++)
            if (a[1] == '-' ? !strchr(a, '=') && !strncmp(d->name, a + 2, strlen(a + 2))
                            : d->key == a[1] && !a[2])
                o = d;
        if (o && o->kind != OPT_FLAG)
            i++; /* its value */
    }
    return i;
}

/* The ranks of one launch. */
typedef struct launch {
    int n; /* ranks started */
    int port, grace;
    char secret[2 * 32 + 1];
    char job[DIST_JOB_MAX];
    const char *prog; /* what each rank runs */
    char **args;      /* its arguments, args[0] as given */
    pid_t pid[LAUNCH_MAX];
    int status[LAUNCH_MAX]; /* wait status, -1 while it runs */
    const char *nnodes;     /* --nnodes MIN:MAX: elastic, with a rendezvous service */
    int min, max;
    pid_t rdzv; /* the service (0: none) */
} launch;

/* Set the job's environment in a child. */
static void child_env(const launch *l)
{
    char b[32];
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    snprintf(b, sizeof b, "%d", l->port);
    setenv("MASTER_PORT", b, 1);
    if (!manta_env_get(MANTA_ENV_JOB_ID))
        setenv(manta_env_name(MANTA_ENV_JOB_ID), l->job, 1);
    if (l->secret[0])
        setenv(manta_env_name(MANTA_ENV_SECRET), l->secret, 1);
    if (l->nnodes) {
        snprintf(b, sizeof b, "%d:%d", l->min, l->max);
        setenv("PET_NNODES", b, 1);
    }
}

/* --nnodes: start the rendezvous service (this program's `manta rendezvous`); 1 on failure. */
static int start_rdzv(launch *l, const struct sigaction *old_int, const struct sigaction *old_term)
{
    l->rdzv = fork();
    if (l->rdzv < 0) {
        fprintf(stderr, "manta launch: starting the rendezvous service: fork: %s\n",
                strerror(errno));
        l->rdzv = 0;
        return 1;
    }
    if (l->rdzv == 0) {
        sigaction(SIGINT, old_int, NULL);
        sigaction(SIGTERM, old_term, NULL);
        child_env(l);
        char expect[32];
        snprintf(expect, sizeof expect, "%d", l->n);
        char *args[] = {"manta", "rendezvous", "--expect", expect, NULL};
        execv("/proc/self/exe", args);
        fprintf(stderr, "manta launch: cannot run the rendezvous service: %s\n", strerror(errno));
        _exit(127);
    }
    return 0;
}

/* Fork every rank with its environment; 1 when a fork failed (l->n then
 * counts the ranks started, which are sent SIGTERM). */
static int start_ranks(launch *l, const struct sigaction *old_int, const struct sigaction *old_term)
{
    int rc = 0, n = l->n;
    for (int r = 0; r < n; r++) {
        l->pid[r] = fork();
        if (l->pid[r] < 0) {
            fprintf(stderr, "manta launch: starting rank %d: fork: %s\n", r, strerror(errno));
            rc = 1;
            l->n = r;
            break;
        }
        if (l->pid[r] == 0) {
            sigaction(SIGINT, old_int, NULL);
            sigaction(SIGTERM, old_term, NULL);
            char b[32];
            snprintf(b, sizeof b, "%d", r);
            setenv("RANK", b, 1);
            setenv("LOCAL_RANK", b, 1);
            snprintf(b, sizeof b, "%d", n);
            setenv("WORLD_SIZE", b, 1);
            setenv("LOCAL_WORLD_SIZE", b, 1);
            child_env(l);
            execvp(l->prog, l->args);
            fprintf(stderr, "manta launch: rank %d: cannot run '%s': %s\n", r, l->args[0],
                    strerror(errno));
            _exit(127);
        }
        l->status[r] = -1;
    }
    sodium_memzero(l->secret, sizeof l->secret);
    if (rc) /* a fork failed: stop the ranks already started */
        for (int r = 0; r < l->n; r++)
            kill(l->pid[r], SIGTERM);
    return rc;
}

static void signal_running(const launch *l, int sig)
{
    for (int r = 0; r < l->n; r++)
        if (l->status[r] < 0)
            kill(l->pid[r], sig);
}

/* Wait for every rank, forwarding signals; the first that fails gets the
 * others stopped after the grace period. Returns the exit status (@p rc when
 * none failed) and the failed rank in *failed (-1: none). */
static int wait_ranks(launch *l, int rc, int *failed)
{
    int alive = 0;
    for (int r = 0; r < l->n; r++)
        alive += l->status[r] < 0;
    double term_at = 0, kill_at = 0;
    *failed = -1;
    while (alive > 0) {
        if (pending_sig) {
            int sig = pending_sig;
            pending_sig = 0;
            signal_running(l, sig);
        }
        int st;
        pid_t w = waitpid(-1, &st, WNOHANG);
        if (w > 0 && w == l->rdzv) {
            char what[128];
            describe(st, what, sizeof what);
            fprintf(stderr, "manta launch: the rendezvous service (pid %d) %s\n", (int)w, what);
            l->rdzv = 0;
            continue;
        }
        for (int r = 0; w > 0 && r < l->n; r++) {
            if (l->pid[r] != w)
                continue;
            l->status[r] = st;
            alive--;
            if (l->nnodes && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
                char what[128];
                describe(st, what, sizeof what);
                fprintf(stderr, "manta launch: rank %d (pid %d) %s%s\n", r, (int)w, what,
                        alive ? "; the others go on (elastic)" : "");
                if (*failed < 0) {
                    *failed = r;
                    rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                }
            } else if ((!WIFEXITED(st) || WEXITSTATUS(st) != 0) && *failed < 0) {
                char what[128];
                describe(st, what, sizeof what);
                fprintf(stderr, "manta launch: rank %d (pid %d) %s%s\n", r, (int)w, what,
                        alive ? "; stopping the other ranks" : "");
                *failed = r;
                rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                term_at = cmd_now() + (double)l->grace;
                kill_at = term_at + (double)l->grace;
            }
        }
        if (w > 0)
            continue;
        if (w < 0 && errno != EINTR)
            break;
        double t = cmd_now();
        if (term_at > 0 && t >= term_at) {
            signal_running(l, SIGTERM);
            term_at = 0;
        }
        if (kill_at > 0 && t >= kill_at) {
            signal_running(l, SIGKILL);
            kill_at = 0;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

int cmd_launch(int argc, char **argv)
{
    launch *l = calloc(1, sizeof *l);
    if (!l) {
        fprintf(stderr, "manta launch: out of memory\n");
        return 1;
    }
    bool quiet = false;
    l->grace = 10;
    const opt_def defs[] = {
        {.name = "nproc",
         .key = 'n',
         .kind = OPT_INT,
         .dest = &l->n,
         .lo = 1,
         .hi = LAUNCH_MAX,
         .metavar = "N",
         .help = "ranks to start (1 .. " XSTR(LAUNCH_MAX) ")"},
        {.name = "port",
         .kind = OPT_INT,
         .dest = &l->port,
         .lo = 1,
         .hi = 65535,
         .metavar = "P",
         .help = "rendezvous port (default: a free port)"},
        {.name = "grace",
         .kind = OPT_INT,
         .dest = &l->grace,
         .lo = 0,
         .hi = 3600,
         .metavar = "S",
         .help =
             "after a rank fails: seconds before SIGTERM, then SIGKILL (default 10; 0: at once)"},
        {.name = "nnodes",
         .kind = OPT_STRING,
         .dest = &l->nnodes,
         .metavar = "MIN:MAX",
         .help = "elastic: a rendezvous service, MAX ranks (or -n), the job goes on with MIN"},
        {.name = "quiet",
         .kind = OPT_FLAG,
         .dest = &quiet,
         .help = "no line when every rank succeeded"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta launch",
        "-n N | --nnodes MIN:MAX [--port P] [--grace S] [--quiet] -- COMMAND [ARGS...]",
        "Starts N local ranks of COMMAND (like torchrun --standalone), each with RANK,\n"
        "WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT, "
        "MANTA_JOB_ID\n"
        "and, unless MANTA_SECRET or MANTA_SECRET_FILE is set, a fresh random MANTA_SECRET.\n"
        "COMMAND 'manta' runs this very program. Example:\n"
        "  manta launch -n 2 -- manta train --schedule smoke --batch 16 --out runs/x\n\n"
        "SIGINT/SIGTERM are forwarded to every rank. Exit status: 0 when all ranks exit 0,\n"
        "else that of the first failing rank (128 + signal when it was killed).\n\n"
        "--nnodes MIN:MAX (elastic, with 'manta train --elastic'): starts 'manta rendezvous'\n"
        "on MASTER_PORT first and MAX ranks (or -n N), with PET_NNODES=MIN:MAX; a rank that\n"
        "fails is reported and the others go on. Exit status: 0 when a rank exited 0,\n"
        "else that of the first failing rank.\n",
        defs,
        0,
        0};
    int cmd_at = command_at(defs, argc, argv), first, rc = 2;
    opt_result r = opt_parse(&cmd, cmd_at, argv, &first);
    if (r != OPT_OK) {
        free(l);
        return r == OPT_HELP ? 0 : 2;
    }
    cmd_at += cmd_at < argc && !strcmp(argv[cmd_at], "--");
    if (l->nnodes) {
        manta_err e;
        if (dist_parse_nnodes("--nnodes", l->nnodes, &l->min, &l->max, &e) != MANTA_OK) {
            fprintf(stderr, "manta launch: %s\n", e.msg);
            goto out;
        }
        if (l->n < 1)
            l->n = l->max;
        if (l->n > l->max || l->max > LAUNCH_MAX) {
            fprintf(stderr, "manta launch: -n %d is more than --nnodes' MAX %d (at most %d)\n",
                    l->n, l->max, LAUNCH_MAX);
            goto out;
        }
    }
    if (l->n < 1 || cmd_at >= argc) {
        fprintf(stderr, "manta launch: needs -n N and a command after '--' (see --help)\n");
        goto out;
    }
    rc = 1;
    if (!l->port && !(l->port = dist_free_port())) {
        fprintf(stderr, "manta launch: no free TCP port on 127.0.0.1 for the rendezvous\n");
        goto out;
    }
    if (!manta_env_get(MANTA_ENV_SECRET) && !manta_env_get(MANTA_ENV_SECRET_FILE)) {
        if (sodium_init() < 0) {
            fprintf(stderr, "manta launch: libsodium failed to initialise\n");
            goto out;
        }
        unsigned char raw[32];
        randombytes_buf(raw, sizeof raw);
        sodium_bin2hex(l->secret, sizeof l->secret, raw, sizeof raw);
        sodium_memzero(raw, sizeof raw);
    }
    snprintf(l->job, sizeof l->job, "launch-%d-%d", (int)getpid(), l->port);
    l->args = argv + cmd_at;
    l->prog = strcmp(argv[cmd_at], "manta") ? argv[cmd_at] : "/proc/self/exe"; /* this program */

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fflush(stdout);
    fflush(stderr);
    int failed = -1, ok = 0;
    if (l->nnodes && start_rdzv(l, &old_int, &old_term))
        rc = 1;
    else
        rc = wait_ranks(l, start_ranks(l, &old_int, &old_term), &failed);
    for (int k = 0; k < l->n; k++)
        ok += l->status[k] >= 0 && WIFEXITED(l->status[k]) && !WEXITSTATUS(l->status[k]);
    if (l->rdzv > 0) { /* every rank has ended: the service too */
        kill(l->rdzv, SIGTERM);
        waitpid(l->rdzv, NULL, 0);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (l->nnodes) {
        if (ok > 0) {
            rc = 0;
            if (!quiet)
                fprintf(stderr,
                        "manta launch: the elastic job finished (%d of %d ranks exited 0)\n", ok,
                        l->n);
        } else {
            rc = rc ? rc : 1;
        }
    } else if (failed >= 0) {
        for (int k = 0; k < l->n; k++)
            if (k != failed && l->status[k] >= 0 &&
                (!WIFEXITED(l->status[k]) || WEXITSTATUS(l->status[k]))) {
                char what[128];
                describe(l->status[k], what, sizeof what);
                fprintf(stderr, "manta launch: rank %d %s\n", k, what);
            }
        rc = rc ? rc : 1;
    } else if (!quiet && rc == 0) {
        fprintf(stderr, "manta launch: all %d ranks exited with status 0\n", l->n);
    }
out:
    sodium_memzero(l->secret, sizeof l->secret);
    free(l);
    return rc;
}
