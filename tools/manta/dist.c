/* manta bench allreduce: ring-allreduce bandwidth in the nccl-tests form
 * (size, time, algbw = S/t, busbw = algbw * 2(N-1)/N). Either starts N local
 * ranks as processes on 127.0.0.1, or runs one rank of a job whose ranks are
 * started elsewhere (--world/--rank or the torchrun/SLURM variables). */
#define _DEFAULT_SOURCE

#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/stats.h"
#include "dist/net.h"
#include "dist/override.h"
#include "dist/ring.h"

#define MAX_SIZES 32

typedef struct ar_opts {
    int ranks; /* local mode: ranks to start */
    int join;  /* run one rank of an external job */
    size_t sizes[MAX_SIZES];
    int nsizes;
    int repeats; /* 0: by size */
    int warmup;
    bool json;
    dist_config cfg;
} ar_opts;

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
        if (o->nsizes == MAX_SIZES || !parse_size(t, &o->sizes[o->nsizes]) ||
            o->sizes[o->nsizes] % 4) {
            fprintf(stderr,
                    "manta bench allreduce: --sizes: '%s' is not a size in bytes (multiple of 4, "
                    "K/M/G suffixes, at most %d sizes)\n",
                    t, MAX_SIZES);
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

static void print_event(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "manta bench allreduce: %s\n", line);
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
        fprintf(stderr, "manta bench allreduce: rank %d: %s\n", o->cfg.rank,
                manta_err_msg(&err, st));
        return 1;
    }
    int rank = ring_rank(c), N = ring_size(c);
    if (ring_warning(c) && rank == 0)
        fprintf(stderr, "manta bench allreduce: warning: %s\n", ring_warning(c));
    size_t maxb = 0;
    for (int i = 0; i < o->nsizes; i++)
        maxb = o->sizes[i] > maxb ? o->sizes[i] : maxb;
    float *buf = malloc(maxb ? maxb : 4);
    float *res = o->cfg.wire == DIST_WIRE_INT8 ? calloc(maxb / 4 + 1, sizeof(float)) : NULL;
    double *t = malloc(sizeof(double) * 1000);
    if (!buf || !t || (o->cfg.wire == DIST_WIRE_INT8 && !res)) {
        fprintf(stderr, "manta bench allreduce: rank %d: out of memory\n", rank);
        ring_destroy(c);
        free(buf), free(t), free(res);
        return 1;
    }
    double factor = N > 1 ? 2.0 * (N - 1) / N : 0.0;
    if (rank == 0 && !o->json) {
        printf("# manta ring-allreduce: %d ranks (%s), float32 sum, wire encoding %s, frame tags "
               "over %s, median of repeats (sizes and bandwidths in float32 bytes)\n",
               N, mode, dist_wire_name(o->cfg.wire),
               o->cfg.frame_mac == DIST_MAC_FULL ? "header+data" : "header");
        printf("# %12s %12s %8s %12s %12s %12s %12s\n", "size(B)", "count", "repeats", "time(us)",
               "min(us)", "algbw(GB/s)", "busbw(GB/s)");
        fflush(stdout);
    }
    if (rank == 0 && o->json)
        printf("{\"benchmark\": \"allreduce\", \"impl\": \"manta\", \"ranks\": %d, \"mode\": "
               "\"%s\", \"mac\": "
               "\"%s\", \"compress\": \"%s\", \"results\": [",
               N, mode, o->cfg.frame_mac == DIST_MAC_FULL ? "full" : "header",
               dist_wire_name(o->cfg.wire));
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
            ring_handle h;
            if ((st = ring_allreduce_wire_async(c, buf, n, RING_SUM, o->cfg.wire, res, &h, &err)) !=
                    MANTA_OK ||
                (st = ring_wait(c, h, &err)) != MANTA_OK)
                break;
            if (r >= 0)
                t[r] = dist_now() - t0;
        }
        if (st != MANTA_OK) {
            fprintf(stderr, "manta bench allreduce: rank %d: %s\n", rank, manta_err_msg(&err, st));
            rc = 1;
            break;
        }
        const double med = manta_sort_median(t, (size_t)reps);
        double algbw = (double)bytes / med / 1e9;
        if (rank != 0)
            continue;
        if (o->json)
            printf("%s{\"bytes\": %zu, \"count\": %zu, \"repeats\": %d, \"time_us\": %.2f, "
                   "\"min_us\": %.2f, "
                   "\"algbw_gbps\": %.4f, \"busbw_gbps\": %.4f}",
                   si ? ", " : "", bytes, n, reps, med * 1e6, t[0] * 1e6, algbw, algbw * factor);
        else
            printf("  %12zu %12zu %8d %12.1f %12.1f %12.3f %12.3f\n", bytes, n, reps, med * 1e6,
                   t[0] * 1e6, algbw, algbw * factor);
        fflush(stdout);
    }
    if (rank == 0 && o->json) {
        printf("], ");
        cmd_json_version(stdout);
        printf("}\n");
    }
    ring_destroy(c);
    free(buf), free(t), free(res);
    return rc;
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
        o->cfg.master_port = dist_free_port();
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

/* --mac and --sock-buf, when given (@p sock_buf >= 0), into @p c. */
static void set_link(dist_config *c, const char *mac, int sock_buf)
{
    if (mac)
        c->frame_mac = strcmp(mac, "full") ? DIST_MAC_HEADER : DIST_MAC_FULL;
    if (sock_buf >= 0)
        c->sock_buf = sock_buf;
}

/* The configuration of the rank(s): in job mode the environment, then the
 * flags; in local mode the flags alone (a fresh secret comes later, so no
 * secret file is read). 0 after printing why not. */
static int configure(ar_opts *o, dist_override *flags, const char *mac, int sock_buf)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st = MANTA_OK;
    if (o->join)
        st = dist_config_from_env(&o->cfg, NULL, NULL, &err);
    else
        flags->secret_file = NULL;
    if (st == MANTA_OK)
        st = dist_config_override(&o->cfg, flags, &err);
    set_link(&o->cfg, mac, sock_buf);
    if (st == MANTA_OK && o->join)
        st = dist_config_check(&o->cfg, &err);
    if (st != MANTA_OK)
        fprintf(stderr, "manta bench allreduce: %s\n", err.msg);
    return st == MANTA_OK;
}

int cmd_bench_allreduce(int argc, char **argv)
{
    ar_opts *o = calloc(1, sizeof *o);
    if (!o) {
        fprintf(stderr, "manta bench allreduce: out of memory\n");
        return 1;
    }
    o->ranks = 2;
    o->warmup = 2;
    dist_config_init(&o->cfg);
    o->cfg.event = print_event;
    dist_override flags = DIST_OVERRIDE_NONE;
    const char *sizes = "1K,1M,64M", *mac = NULL, *sock_buf = NULL, *compress = "none";
    bool bind_all = false;
    static const char *const macs[] = {"header", "full", NULL};
    static const char *const wires[] = {"none", "fp16", "bf16", "int8", "fixed", NULL};
    const opt_def defs[] = {
        {.name = "ranks",
         .key = 'n',
         .kind = OPT_INT,
         .dest = &o->ranks,
         .lo = 1,
         .hi = 64,
         .metavar = "N",
         .help = "local mode: ranks to start (default 2)"},
        {.name = "sizes",
         .kind = OPT_STRING,
         .dest = &sizes,
         .metavar = "LIST",
         .help = "bytes per rank, K/M/G = 2^10/2^20/2^30 (default 1K,1M,64M)"},
        {.name = "repeats",
         .kind = OPT_INT,
         .dest = &o->repeats,
         .lo = 1,
         .hi = 1000,
         .metavar = "R",
         .help = "timed repetitions per size (default 100 / 20 / 10 by size)"},
        {.name = "warmup",
         .kind = OPT_INT,
         .dest = &o->warmup,
         .lo = 0,
         .hi = 100,
         .metavar = "W",
         .help = "untimed repetitions first (default 2; 0: none)"},
        {.name = "mac",
         .kind = OPT_STRING,
         .dest = &mac,
         .choices = macs,
         .metavar = "header|full",
         .help = "frame tags over headers (default) or headers and data"},
        {.name = "compress",
         .kind = OPT_STRING,
         .dest = &compress,
         .choices = wires,
         .metavar = "none|fp16|bf16|int8|fixed",
         .help = "wire encoding of the data (default none: float32; fixed: int32 fixed point)"},
        {.name = "timeout",
         .kind = OPT_DOUBLE,
         .dest = &flags.timeout_s,
         .lo = 0.001,
         .hi = 86400,
         .metavar = "S",
         .help = "deadline of every network wait, seconds (default 60)"},
        {.name = "sock-buf",
         .kind = OPT_STRING,
         .dest = &sock_buf,
         .metavar = "B",
         .help = "SO_SNDBUF/SO_RCVBUF of the ring sockets (default 0: kernel autotuning)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o->json, .help = "one JSON document"},
        {.name = "world",
         .kind = OPT_INT,
         .dest = &flags.world_size,
         .lo = 1,
         .hi = DIST_MAX_WORLD,
         .metavar = "N",
         .help = "job mode: ranks of the job"},
        {.name = "rank",
         .kind = OPT_INT,
         .dest = &flags.rank,
         .lo = 0,
         .hi = DIST_MAX_WORLD - 1,
         .metavar = "R",
         .help = "job mode: this rank"},
        {.name = "master",
         .kind = OPT_STRING,
         .dest = &flags.master,
         .metavar = "HOST[:PORT]",
         .help = "rendezvous address (rank 0 listens there)"},
        {.name = "iface",
         .kind = OPT_STRING,
         .dest = &flags.iface,
         .metavar = "NAME",
         .help = "network interface of the ring"},
        {.name = "ring-addr",
         .kind = OPT_STRING,
         .dest = &flags.ring_addr,
         .metavar = "A",
         .help = "IPv4 or IPv6 address of the ring listener"},
        {.name = "job",
         .kind = OPT_STRING,
         .dest = &flags.job_id,
         .metavar = "ID",
         .help = "job id"},
        {.name = "secret-file",
         .kind = OPT_STRING,
         .dest = &flags.secret_file,
         .metavar = "PATH",
         .help = "the job's shared secret (mode 600)"},
        {.name = "rdzv-bind-all",
         .kind = OPT_FLAG,
         .dest = &bind_all,
         .help = "rank 0 listens on every address"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta bench allreduce",
        "[-n N] [--sizes 1K,1M,64M] [--repeats R] [--json] [OPTIONS]",
        "Ring-allreduce (float32 sum) bandwidth, nccl-tests style: size, median time, algbw = "
        "S/t,\n"
        "busbw = algbw * 2(N-1)/N (GB/s = 1e9 B/s).\n\n"
        "Local mode (default): starts N ranks as processes on 127.0.0.1 with a fresh secret.\n"
        "Job mode (--world or --rank, or WORLD_SIZE or SLURM_NTASKS above 1): runs one rank; the\n"
        "others are started the same way elsewhere. The job comes from RANK/WORLD_SIZE/\n"
        "MASTER_ADDR/MASTER_PORT or SLURM_*, MANTA_SECRET[_FILE], overridden by the options.\n",
        defs,
        0,
        0};
    int first, res = 2, sock = -1;
    opt_result r = opt_parse(&cmd, argc - 1, argv + 1, &first);
    if (r != OPT_OK) {
        res = r == OPT_HELP ? 0 : 2;
        goto out;
    }
    size_t b = 0;
    if (sock_buf && (!parse_size(sock_buf, &b) || b > (1u << 30))) {
        fprintf(stderr, "manta bench allreduce: --sock-buf needs bytes (K/M suffixes), got '%s'\n",
                sock_buf);
        goto out;
    }
    if (sock_buf)
        sock = (int)b;
    if (!parse_sizes(sizes, o))
        goto out;
    flags.rdzv_bind_all = bind_all;
    for (int w = 0; w < DIST_WIRE_COUNT; w++)
        if (!strcmp(compress, dist_wire_name((dist_wire)w)))
            o->cfg.wire = (dist_wire)w;
    const char *ws = getenv("WORLD_SIZE") ? getenv("WORLD_SIZE") : getenv("SLURM_NTASKS");
    o->join = flags.world_size > 0 || flags.rank >= 0 || (ws && strcmp(ws, "1") != 0);
    res = 1;
    if (configure(o, &flags, mac, sock))
        res = o->join ? run_rank(o, "one process per rank") : run_local(o);
out:
    sodium_memzero(o->cfg.key, sizeof o->cfg.key);
    free(o);
    return res;
}
