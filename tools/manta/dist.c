/* manta bench allreduce: ring-allreduce bandwidth in the nccl-tests form
 * (size, time, algbw = S/t, busbw = algbw * 2(N-1)/N). Either starts N local
 * ranks as processes on 127.0.0.1, or runs one rank of a job whose ranks are
 * started elsewhere (--world/--rank or the torchrun/SLURM variables). */
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
#include <unistd.h>

#include "cmd.h"
#include "dist/net.h"
#include "dist/ring.h"

#define MAX_SIZES 32

typedef struct ar_opts {
    int ranks;            /* local mode: ranks to start */
    int join;             /* run one rank of an external job */
    size_t sizes[MAX_SIZES];
    int nsizes;
    int repeats;          /* 0: by size */
    int warmup;
    int json;
    dist_config cfg;
} ar_opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta bench allreduce [-n N] [--sizes 1K,1M,64M] [--repeats R] [--json] [OPTIONS]\n\n"
            "Ring-allreduce (float32 sum) bandwidth, nccl-tests style: size, median time, algbw = S/t,\n"
            "busbw = algbw * 2(N-1)/N (GB/s = 1e9 B/s).\n\n"
            "Local mode (default): starts N ranks as processes on 127.0.0.1 with a fresh secret.\n"
            "  -n, --ranks N      ranks to start (default 2)\n"
            "Job mode: run one rank; the others are started the same way elsewhere. The job comes from\n"
            "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT or SLURM_*, MANTA_SECRET[_FILE], overridden by:\n"
            "  --world N --rank R --master HOST[:PORT] --iface NAME --ring-addr A --job ID\n"
            "  --secret-file PATH --rdzv-bind-all\n"
            "Both:\n"
            "  --sizes LIST       bytes per rank, K/M/G = 2^10/2^20/2^30 (default 1K,1M,64M)\n"
            "  --repeats R        timed repetitions per size (default 100 / 20 / 10 by size)\n"
            "  --warmup W         untimed repetitions first (default 2)\n"
            "  --mac header|full  frame tags over headers (default) or headers and data\n"
            "  --timeout S        deadline of every network wait, seconds (default 60)\n"
            "  --sock-buf B       SO_SNDBUF/SO_RCVBUF of the ring sockets (default 0: kernel autotuning)\n"
            "  --json             one JSON document\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return 0;
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30, end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > (1ull << 34) / mul)
        return 0;
    *out = (size_t)(v * mul);
    return 1;
}

static int parse_sizes(const char *list, ar_opts *o)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    o->nsizes = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->nsizes == MAX_SIZES || !parse_size(t, &o->sizes[o->nsizes]) || o->sizes[o->nsizes] % 4) {
            fprintf(stderr, "manta bench allreduce: --sizes: '%s' is not a size in bytes (multiple of 4, "
                            "K/M/G suffixes, at most %d sizes)\n", t, MAX_SIZES);
            return 0;
        }
        o->nsizes++;
    }
    if (!o->nsizes) {
        fprintf(stderr, "manta bench allreduce: --sizes is empty\n");
        return 0;
    }
    return 1;
}

static int parse_int_opt(const char *opt, const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long x = strtol(v ? v : "", &end, 10);
    if (!v || end == v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "manta bench allreduce: %s needs an integer in [%ld, %ld], got '%s'\n", opt, lo, hi,
                v ? v : "");
        return 0;
    }
    *out = (int)x;
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void print_event(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "manta: %s\n", line);
}

static int repeats_for(const ar_opts *o, size_t bytes)
{
    if (o->repeats)
        return o->repeats;
    return bytes >= (16u << 20) ? 10 : bytes >= (1u << 20) ? 20 : 100;
}

/* One rank: every size, warm-up then timed repetitions, each after a one-float barrier. Rank 0
 * prints. Returns the exit status. */
static int run_rank(const ar_opts *o, const char *mode)
{
    manta_err err;
    manta_err_clear(&err);
    ring_comm *c = NULL;
    manta_status st = ring_create(&o->cfg, &c, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta: rank %d: %s\n", o->cfg.rank, manta_err_msg(&err, st));
        return 1;
    }
    int rank = ring_rank(c), N = ring_size(c);
    if (ring_warning(c) && rank == 0)
        fprintf(stderr, "manta: warning: %s\n", ring_warning(c));
    size_t maxb = 0;
    for (int i = 0; i < o->nsizes; i++)
        maxb = o->sizes[i] > maxb ? o->sizes[i] : maxb;
    float *buf = malloc(maxb ? maxb : 4);
    double *t = malloc(sizeof(double) * 1000);
    if (!buf || !t) {
        fprintf(stderr, "manta: rank %d: out of memory\n", rank);
        ring_destroy(c);
        free(buf), free(t);
        return 1;
    }
    double factor = N > 1 ? 2.0 * (N - 1) / N : 0.0;
    if (rank == 0 && !o->json) {
        printf("# manta ring-allreduce: %d ranks (%s), float32 sum, frame tags over %s, median of repeats\n", N,
               mode, o->cfg.frame_mac == DIST_MAC_FULL ? "header+data" : "header");
        printf("# %12s %12s %8s %12s %12s %12s %12s\n", "size(B)", "count", "repeats", "time(us)", "min(us)",
               "algbw(GB/s)", "busbw(GB/s)");
        fflush(stdout);
    }
    if (rank == 0 && o->json)
        printf("{\"benchmark\": \"allreduce\", \"impl\": \"manta\", \"ranks\": %d, \"mode\": \"%s\", \"mac\": "
               "\"%s\", \"results\": [",
               N, mode, o->cfg.frame_mac == DIST_MAC_FULL ? "full" : "header");
    int rc = 0;
    for (int si = 0; si < o->nsizes && rc == 0; si++) {
        size_t bytes = o->sizes[si], n = bytes / 4;
        int reps = repeats_for(o, bytes);
        if (reps > 1000)
            reps = 1000;
        for (int r = -o->warmup; r < reps; r++) {
            float v = 0.5f + (float)rank; /* reset, so sums stay finite over the repetitions */
            for (size_t i = 0; i < n; i++)
                buf[i] = v;
            float one = 1.0f;
            if ((st = ring_allreduce(c, &one, 1, RING_SUM, &err)) != MANTA_OK)
                break;
            double t0 = dist_now();
            if ((st = ring_allreduce(c, buf, n, RING_SUM, &err)) != MANTA_OK)
                break;
            if (r >= 0)
                t[r] = dist_now() - t0;
        }
        if (st != MANTA_OK) {
            fprintf(stderr, "manta: rank %d: %s\n", rank, manta_err_msg(&err, st));
            rc = 1;
            break;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
        double algbw = (double)bytes / med / 1e9;
        if (rank != 0)
            continue;
        if (o->json)
            printf("%s{\"bytes\": %zu, \"count\": %zu, \"repeats\": %d, \"time_us\": %.2f, \"min_us\": %.2f, "
                   "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f}",
                   si ? ", " : "", bytes, n, reps, med * 1e6, t[0] * 1e6, algbw, algbw * factor);
        else
            printf("  %12zu %12zu %8d %12.1f %12.1f %12.3f %12.3f\n", bytes, n, reps, med * 1e6, t[0] * 1e6,
                   algbw, algbw * factor);
        fflush(stdout);
    }
    if (rank == 0 && o->json) {
        printf("], ");
        cmd_json_version(stdout);
        printf("}\n");
    }
    ring_destroy(c);
    free(buf), free(t);
    return rc;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof sa;
    int port = 0;
    if (s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof sa) == 0 && getsockname(s, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static int run_local(ar_opts *o)
{
    if (sodium_init() < 0) {
        fprintf(stderr, "manta bench allreduce: libsodium failed to initialise\n");
        return 1;
    }
    unsigned char secret[32];
    randombytes_buf(secret, sizeof secret);
    dist_config_set_secret(&o->cfg, secret, sizeof secret, NULL);
    sodium_memzero(secret, sizeof secret);
    snprintf(o->cfg.master_addr, sizeof o->cfg.master_addr, "127.0.0.1");
    if (!o->cfg.master_port || o->cfg.master_port == 29500)
        o->cfg.master_port = free_port();
    snprintf(o->cfg.job_id, sizeof o->cfg.job_id, "bench-%d-%d", (int)getpid(), o->cfg.master_port);
    o->cfg.world_size = o->ranks;
    fflush(stdout);
    pid_t pid[DIST_MAX_WORLD];
    int started = 0, rc = 0;
    for (int r = 0; r < o->ranks; r++) {
        pid[r] = fork();
        if (pid[r] < 0) {
            fprintf(stderr, "manta bench allreduce: fork: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        if (pid[r] == 0) {
            o->cfg.rank = r;
            int res = run_rank(o, "processes on 127.0.0.1");
            fflush(stdout);
            _exit(res);
        }
        started++;
    }
    for (int r = 0; r < started; r++) {
        int status = 0;
        if (rc)
            kill(pid[r], SIGTERM);
        waitpid(pid[r], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            rc = 1;
    }
    return rc;
}

int cmd_bench_allreduce(int argc, char **argv)
{
    ar_opts *o = calloc(1, sizeof *o);
    if (!o) {
        fprintf(stderr, "manta bench allreduce: out of memory\n");
        return 1;
    }
    int res = 2;
    o->ranks = 2;
    o->warmup = 2;
    dist_config_init(&o->cfg);
    o->cfg.event = print_event;
    manta_err err;
    int world = 0, rank = -1;
    const char *secret_file = NULL;
    parse_sizes("1K,1M,64M", o);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            res = 0;
            goto out;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--rdzv-bind-all")) {
            o->cfg.rdzv_bind_all = 1;
        } else if (!v) {
            fprintf(stderr, "manta bench allreduce: unknown option '%s' or missing value (see --help)\n", a);
            goto out;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--ranks")) {
            if (!parse_int_opt(a, v, 1, 64, &o->ranks))
                goto out;
            i++;
        } else if (!strcmp(a, "--sizes")) {
            if (!parse_sizes(v, o))
                goto out;
            i++;
        } else if (!strcmp(a, "--repeats")) {
            if (!parse_int_opt(a, v, 1, 1000, &o->repeats))
                goto out;
            i++;
        } else if (!strcmp(a, "--warmup")) {
            if (!parse_int_opt(a, v, 0, 100, &o->warmup))
                goto out;
            i++;
        } else if (!strcmp(a, "--world")) {
            if (!parse_int_opt(a, v, 1, DIST_MAX_WORLD, &world))
                goto out;
            i++;
        } else if (!strcmp(a, "--rank")) {
            if (!parse_int_opt(a, v, 0, DIST_MAX_WORLD - 1, &rank))
                goto out;
            i++;
        } else if (!strcmp(a, "--master")) {
            char host[256];
            snprintf(host, sizeof host, "%s", v);
            char *colon = strrchr(host, ':');
            if (colon) {
                *colon = '\0';
                if (!parse_int_opt("--master port", colon + 1, 1, 65535, &o->cfg.master_port))
                    goto out;
            }
            snprintf(o->cfg.master_addr, sizeof o->cfg.master_addr, "%s", host);
            i++;
        } else if (!strcmp(a, "--iface")) {
            snprintf(o->cfg.iface, sizeof o->cfg.iface, "%s", v);
            i++;
        } else if (!strcmp(a, "--ring-addr")) {
            snprintf(o->cfg.ring_addr, sizeof o->cfg.ring_addr, "%s", v);
            i++;
        } else if (!strcmp(a, "--job")) {
            snprintf(o->cfg.job_id, sizeof o->cfg.job_id, "%s", v);
            i++;
        } else if (!strcmp(a, "--secret-file")) {
            secret_file = v;
            i++;
        } else if (!strcmp(a, "--mac")) {
            if (!strcmp(v, "header"))
                o->cfg.frame_mac = DIST_MAC_HEADER;
            else if (!strcmp(v, "full"))
                o->cfg.frame_mac = DIST_MAC_FULL;
            else {
                fprintf(stderr, "manta bench allreduce: --mac must be 'header' or 'full', got '%s'\n", v);
                goto out;
            }
            i++;
        } else if (!strcmp(a, "--sock-buf")) {
            size_t b;
            if (!parse_size(v, &b) || b > (1u << 30)) {
                fprintf(stderr, "manta bench allreduce: --sock-buf needs bytes (K/M suffixes), got '%s'\n", v);
                goto out;
            }
            o->cfg.sock_buf = (int)b;
            i++;
        } else if (!strcmp(a, "--timeout")) {
            char *end;
            double t = strtod(v, &end);
            if (end == v || *end || !(t > 0 && t <= 86400)) {
                fprintf(stderr, "manta bench allreduce: --timeout needs seconds in (0, 86400], got '%s'\n", v);
                goto out;
            }
            o->cfg.timeout_s = t;
            i++;
        } else {
            fprintf(stderr, "manta bench allreduce: unknown option '%s' (see --help)\n", a);
            goto out;
        }
    }
    const char *ws = getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : getenv("SLURM_NTASKS");
    o->join = world > 0 || rank >= 0 || (ws && strcmp(ws, "1") != 0);
    res = 1;
    if (o->join) {
        /* Job mode: environment first, then the flags. */
        dist_config flags = o->cfg;
        if (dist_config_from_env(&o->cfg, NULL, NULL, &err) != MANTA_OK) {
            fprintf(stderr, "manta bench allreduce: %s\n", err.msg);
            goto out;
        }
        dist_config d;
        dist_config_init(&d);
        if (strcmp(flags.master_addr, d.master_addr))
            snprintf(o->cfg.master_addr, sizeof o->cfg.master_addr, "%s", flags.master_addr);
        if (flags.master_port != d.master_port)
            o->cfg.master_port = flags.master_port;
        if (flags.iface[0])
            snprintf(o->cfg.iface, sizeof o->cfg.iface, "%s", flags.iface);
        if (flags.ring_addr[0])
            snprintf(o->cfg.ring_addr, sizeof o->cfg.ring_addr, "%s", flags.ring_addr);
        if (strcmp(flags.job_id, d.job_id))
            snprintf(o->cfg.job_id, sizeof o->cfg.job_id, "%s", flags.job_id);
        if (flags.timeout_s != d.timeout_s)
            o->cfg.timeout_s = flags.timeout_s;
        if (flags.frame_mac != d.frame_mac)
            o->cfg.frame_mac = flags.frame_mac;
        if (flags.sock_buf != d.sock_buf)
            o->cfg.sock_buf = flags.sock_buf;
        if (flags.rdzv_bind_all)
            o->cfg.rdzv_bind_all = 1;
        if (world > 0)
            o->cfg.world_size = world;
        if (rank >= 0)
            o->cfg.rank = rank;
        if (secret_file && dist_config_secret_file(&o->cfg, secret_file, &err) != MANTA_OK) {
            fprintf(stderr, "manta bench allreduce: %s\n", err.msg);
            goto out;
        }
        if (dist_config_check(&o->cfg, &err) != MANTA_OK) {
            fprintf(stderr, "manta bench allreduce: %s\n", err.msg);
            goto out;
        }
        res = run_rank(o, "one process per rank");
    } else {
        res = run_local(o);
    }
out:
    sodium_memzero(o->cfg.key, sizeof o->cfg.key);
    free(o);
    return res;
}
