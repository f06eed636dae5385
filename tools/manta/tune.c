/* manta tune: run CLBlast's tuners (clblast-utils) for one device, keep the
 * best parameters in the device's tuning file in the cache folder (applied by
 * every later mcl_open), and compare SGEMM before and after at the GEMM
 * shapes of our convolutions. See docs/tuning.md. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cl/blas.h"
#include "cl/slab.h"
#include "cl/tune.h"
#include "cmd.h"

/* ---- what is tuned ---------------------------------------------------------------- */

typedef struct tuner_spec {
    const char *program;
    const char *kernel;   /* CLBlast kernel it tunes */
    int gemm;             /* takes -k */
    size_t m, n, k;       /* problem size given to the tuner */
    int full_only;        /* skipped with --quick */
} tuner_spec;

/* GEMM sizes in CLBlast's column-major terms: our row-major C(m,n) is its
 * C^T, so the long side of our convolution GEMMs (batch x pixels) is the
 * tuner's m. The Xgemm tuner needs multiples of 128. The helper kernels pad,
 * copy and transpose operands for the indirect Xgemm kernel; the padding
 * ones are tuned on a long, narrow matrix like our operands (the fast copy
 * and transpose tuners crash on sizes that are not square). */
static const tuner_spec tuners[] = {
    {"clblast_tuner_xgemm_direct", "XgemmDirect", 1, 2048, 128, 128, 0},
    {"clblast_tuner_xgemm", "Xgemm", 1, 256, 256, 256, 0},
    {"clblast_tuner_copy_fast", "Copy", 0, 512, 512, 0, 1},       /* square only */
    {"clblast_tuner_copy_pad", "Pad", 0, 4096, 64, 0, 1},
    {"clblast_tuner_transpose_fast", "Transpose", 0, 512, 512, 0, 1},
    {"clblast_tuner_transpose_pad", "Padtranspose", 0, 4096, 64, 0, 1},
};
#define N_TUNERS (sizeof tuners / sizeof tuners[0])
#define TUNER_LIMIT_S 1200 /* a tuner that runs longer is stopped: something is wrong */

/* GEMMs of the CPU-default supernet's convolutions (batch 16 at 32x32 unless
 * noted), row-major as manta calls them. 1x1 convolutions run one GEMM per
 * image through CLBlast's strided-batched routine, which uses the same
 * kernels, parameters and threshold; it is timed unbatched here because
 * every parameter set compiles each CLBlast routine it calls (minutes on a
 * small CPU) and the batched one is a routine of its own. */
typedef struct gemm_shape {
    size_t m, n, k, batch;
    bool ta, tb;
    const char *what;
} gemm_shape;

static const gemm_shape shapes[] = {
    {96, 16384, 16, 1, false, false, "conv forward, 16->96 channels"},
    {16, 16384, 96, 1, false, false, "conv forward, 96->16 channels"},
    {384, 64, 96, 1, false, false, "head 1x1, batch 64"},
    {256, 256, 256, 1, false, false, "square"},
    {96, 1024, 16, 1, false, false, "1x1 conv 16->96, one image"},
    {16, 1024, 96, 1, false, false, "1x1 conv 96->16, one image"},
    {96, 16, 16384, 1, false, true, "weight gradient 16->96"},
    {1024, 1024, 1024, 1, false, false, "large square (reference)"},
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* Kernel-selection thresholds that force one kernel (CLBlast runs the direct
 * kernel when m*n*k < T^3). */
#define T_ALL_INDIRECT 0
#define T_ALL_DIRECT 65536

typedef struct tune_opts {
    const char *device;
    bool quick, json, compare;
    size_t configs;   /* per GEMM tuner; 0: default */
    double seconds;   /* per shape and measurement */
} tune_opts;

typedef struct tune_ctx {
    tune_opts o;
    FILE *out;        /* progress lines: stdout, or stderr with --json */
    mcl_dev *d;
    const mcl_device_info *info;
    mslab mem;
    mview a, b, c;
    char tuner_dir[1024];
    char work[1200];
    size_t t_def;     /* CLBlast's own kernel-selection threshold (0: unknown) */
    double t0;
} tune_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta tune [--device SPEC] [--quick] [--configs N] [--seconds S] [--json]\n"
            "       manta tune --compare [--device SPEC] [--json]\n\n"
            "Tunes CLBlast's SGEMM for one device. Runs CLBlast's tuners (Debian package\n"
            "clblast-utils) on a random sample of each search space: the direct and the\n"
            "indirect GEMM kernel and the indirect kernel's copy, pad and transpose helpers\n"
            "(single precision). Then times the best candidates at the GEMM shapes of our\n"
            "convolutions, keeps tuned parameters where they beat CLBlast's, picks the size\n"
            "where GEMM switches from the direct to the indirect kernel, and stores the\n"
            "result in the device's tuning file in the cache folder (MANTA_CACHE_DIR). Every\n"
            "later run applies it when it opens the device. Prints SGEMM GFLOP/s before\n"
            "(CLBlast's defaults) and after. Takes a few minutes.\n\n"
            "  --device SPEC  OpenCL device (default: MANTA_DEVICE, else 0)\n"
            "  --quick        smaller search, GEMM kernels only (about a minute when idle)\n"
            "  --configs N    configurations tried per GEMM kernel (default 30; quick 12)\n"
            "  --seconds S    timing per GEMM shape and measurement (default 0.5)\n"
            "  --compare      tune nothing: time CLBlast defaults against the stored file\n"
            "  --json         one JSON document on stdout (progress goes to stderr)\n\n"
            "Environment: MANTA_CLBLAST_TUNERS (folder of the clblast_tuner_* programs;\n"
            "default: PATH), MANTA_NO_TUNING=1 (runs ignore the tuning file).\n");
}

/* ---- finding and running tuners -------------------------------------------------------- */

static bool executable(const char *dir, const char *prog)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, prog);
    return access(p, X_OK) == 0;
}

/* The folder holding the tuners, or "" with a one-line error printed. */
static bool find_tuners(tune_ctx *c)
{
    const char *env = getenv("MANTA_CLBLAST_TUNERS");
    if (env && *env) {
        if (!executable(env, tuners[0].program)) {
            fprintf(stderr, "manta tune: MANTA_CLBLAST_TUNERS='%s' holds no %s\n", env,
                    tuners[0].program);
            return false;
        }
        snprintf(c->tuner_dir, sizeof c->tuner_dir, "%s", env);
    } else {
        const char *path = getenv("PATH");
        char dir[1024];
        c->tuner_dir[0] = '\0';
        while (path && *path && !c->tuner_dir[0]) {
            const char *end = strchr(path, ':');
            size_t n = end ? (size_t)(end - path) : strlen(path);
            if (n > 0 && n < sizeof dir) {
                memcpy(dir, path, n);
                dir[n] = '\0';
                if (executable(dir, tuners[0].program))
                    snprintf(c->tuner_dir, sizeof c->tuner_dir, "%s", dir);
            }
            path = end ? end + 1 : NULL;
        }
        if (!c->tuner_dir[0]) {
            fprintf(stderr,
                    "manta tune: CLBlast's tuners (%s, ...) are not installed: install the Debian "
                    "package clblast-utils (apt-get install clblast-utils, or 'make deps')\n",
                    tuners[0].program);
            return false;
        }
    }
    for (size_t i = 0; i < N_TUNERS; i++)
        if (!executable(c->tuner_dir, tuners[i].program)) {
            fprintf(stderr,
                    "manta tune: %s is missing from %s: reinstall the Debian package clblast-utils\n",
                    tuners[i].program, c->tuner_dir);
            return false;
        }
    return true;
}

/* Remove ANSI colour sequences in place. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\x1b' && r[1] == '[') {
            r += 2;
            while (*r && !(*r >= '@' && *r <= '~'))
                r++;
            if (*r)
                r++;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* What a tuner's log says so far. */
typedef struct tuner_log {
    size_t found[8];   /* "Found N configuration(s)" per variant */
    size_t n_found;
    size_t done;       /* configuration lines */
    double best;       /* best GFLOPS or GB/s of a matching result */
    char unit[8];
    char last[256];    /* last non-empty line */
} tuner_log;

static void read_log(const char *path, tuner_log *g)
{
    memset(g, 0, sizeof *g);
    snprintf(g->unit, sizeof g->unit, "GFLOPS");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        strip_ansi(line);
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' '))
            line[--n] = '\0';
        if (n == 0)
            continue;
        snprintf(g->last, sizeof g->last, "%s", line);
        unsigned long v;
        if (sscanf(line, "* Found %lu configuration", &v) == 1 && g->n_found < 8)
            g->found[g->n_found++] = v;
        if (strstr(line, "|   ID |") && strstr(line, "GB/s"))
            snprintf(g->unit, sizeof g->unit, "GB/s");
        unsigned long id, total;
        if (sscanf(line, "| %lu | %lu |", &id, &total) == 2) {
            g->done++;
            if (strstr(line, "results match")) {
                /* ... | time | PERF | status | */
                char *bars[16];
                int nb = 0;
                for (char *p = line; *p && nb < 16; p++)
                    if (*p == '|')
                        bars[nb++] = p;
                if (nb >= 4) {
                    double perf = atof(bars[nb - 3] + 1);
                    if (perf > g->best)
                        g->best = perf;
                }
            }
        }
    }
    fclose(f);
}

/* Run one tuner in @p dir with its output in dir/log.txt. Returns 0 when it
 * exited with status 0; else prints a one-line error. */
static int run_tuner(tune_ctx *c, const tuner_spec *t, const char *dir, double fraction,
                     size_t expect, int runs, bool report)
{
    char prog[1200], plat[16], dev[16], sm[24], sn[24], sk[24], fr[32], rn[16], log[1300];
    snprintf(prog, sizeof prog, "%s/%s", c->tuner_dir, t->program);
    snprintf(plat, sizeof plat, "%u", c->info->platform_index);
    snprintf(dev, sizeof dev, "%u", c->info->device_index);
    snprintf(sm, sizeof sm, "%zu", t->m);
    snprintf(sn, sizeof sn, "%zu", t->n);
    snprintf(sk, sizeof sk, "%zu", t->k);
    snprintf(fr, sizeof fr, "%.4f", fraction);
    snprintf(rn, sizeof rn, "%d", runs);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    char *argv[24];
    int a = 0;
    argv[a++] = prog;
    argv[a++] = "-platform", argv[a++] = plat;
    argv[a++] = "-device", argv[a++] = dev;
    argv[a++] = "-precision", argv[a++] = "32";
    argv[a++] = "-m", argv[a++] = sm;
    argv[a++] = "-n", argv[a++] = sn;
    if (t->gemm)
        argv[a++] = "-k", argv[a++] = sk;
    argv[a++] = "-fraction", argv[a++] = fr;
    argv[a++] = "-runs", argv[a++] = rn;
    argv[a] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "manta tune: cannot start %s: %s\n", t->program, strerror(errno));
        return 1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || chdir(dir) != 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        close(fd);
        execv(prog, argv);
        _exit(127);
    }
    double start = now_s(), last = start;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "manta tune: waiting for %s: %s\n", t->program, strerror(errno));
            return 1;
        }
        double now = now_s();
        if (now - start > TUNER_LIMIT_S) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "manta tune: %s did not finish within %d s (log: %s)\n", t->program,
                    TUNER_LIMIT_S, log);
            return 1;
        }
        if (report && now - last >= 15) {
            tuner_log g;
            read_log(log, &g);
            fprintf(c->out, "      %zu/%zu configurations, best %.1f %s, %.0f s\n", g.done, expect,
                    g.best, g.unit, now - start);
            fflush(c->out);
            last = now;
        }
        sleep_ms(250);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    tuner_log g;
    read_log(log, &g);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        fprintf(stderr, "manta tune: cannot run %s (log: %s)\n", prog, log);
    else if (WIFEXITED(status))
        fprintf(stderr, "manta tune: %s failed with exit status %d: %s (log: %s)\n", t->program,
                WEXITSTATUS(status), g.last[0] ? g.last : "no output", log);
    else
        fprintf(stderr, "manta tune: %s was killed by signal %d: %s (log: %s)\n", t->program,
                WIFSIGNALED(status) ? WTERMSIG(status) : 0, g.last[0] ? g.last : "no output",
                log);
    return 1;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "manta tune: cannot create '%s': %s\n", path, strerror(errno));
        return 1;
    }
    return 0;
}

static bool same_params(const mcl_tune_kernel *a, const mcl_tune_kernel *b)
{
    if (strcmp(a->kernel, b->kernel) != 0 || a->count != b->count)
        return false;
    for (size_t i = 0; i < a->count; i++) {
        size_t j = 0;
        while (j < b->count && strcmp(a->names[i], b->names[j]) != 0)
            j++;
        if (j == b->count || a->values[i] != b->values[j])
            return false;
    }
    return true;
}

static int cmp_time(const void *a, const void *b)
{
    double x = ((const mcl_tune_kernel *)a)->time_ms, y = ((const mcl_tune_kernel *)b)->time_ms;
    return (x > y) - (x < y);
}

#define MAX_CAND 4

/* Tune one kernel: count its configurations, run a sample of them and return
 * up to @p max candidates: the best result of each variant the tuner ran (the
 * Xgemm tuner has two kernel designs, GEMMK 0 and 1), then the next fastest. */
static int tune_kernel(tune_ctx *c, size_t idx, size_t pos, size_t n_run, size_t max,
                       mcl_tune_kernel *cand, size_t *n_cand)
{
    const tuner_spec *t = &tuners[idx];
    *n_cand = 0;
    char dir[1300], probe_dir[1400];
    snprintf(dir, sizeof dir, "%s/%s", c->work, t->program + strlen("clblast_tuner_"));
    snprintf(probe_dir, sizeof probe_dir, "%s.count", dir);
    if (make_dir(dir) || make_dir(probe_dir))
        return 1;
    size_t budget = c->o.configs ? c->o.configs : (c->o.quick ? 12 : 30);
    if (!t->gemm)
        budget = budget / 3 < 6 ? 6 : budget / 3;
    /* a huge fraction explores nothing: the tuner only counts */
    if (run_tuner(c, t, probe_dir, 1e9, 0, 1, false))
        return 1;
    tuner_log g;
    char log[1500];
    snprintf(log, sizeof log, "%s/log.txt", probe_dir);
    read_log(log, &g);
    size_t total = 0;
    for (size_t i = 0; i < g.n_found; i++)
        total += g.found[i];
    if (total == 0) {
        fprintf(stderr, "manta tune: %s found no valid configuration for '%s' (log: %s)\n",
                t->program, c->info->name, log);
        return 1;
    }
    double fraction = total > budget ? (double)total / (double)budget : 1.0;
    size_t expect = 0;
    for (size_t i = 0; i < g.n_found; i++)
        expect += fraction == 1.0 ? g.found[i] : (size_t)((double)g.found[i] / fraction);
    if (t->gemm)
        fprintf(c->out, "[%zu/%zu] %s: %s, %zu of %zu configurations (m=%zu n=%zu k=%zu)\n",
                pos + 1, n_run, t->kernel, t->program, expect, total, t->m, t->n, t->k);
    else
        fprintf(c->out, "[%zu/%zu] %s: %s, %zu of %zu configurations (%zux%zu)\n", pos + 1, n_run,
                t->kernel, t->program, expect, total, t->m, t->n);
    fflush(c->out);
    double start = now_s();
    if (run_tuner(c, t, dir, fraction, expect, c->o.quick ? 1 : 2, true))
        return 1;
    /* every clblast_*_32.json it wrote (one per variant that found a result) */
    snprintf(log, sizeof log, "%s/log.txt", dir);
    DIR *dp = opendir(dir);
    if (!dp) {
        fprintf(stderr, "manta tune: cannot read '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    mcl_tune_kernel firsts[8], rest[8 * MAX_CAND];
    size_t n_firsts = 0, n_rest = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(dp)) != NULL) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "clblast_", 8) != 0 || n < 9 || strcmp(e->d_name + n - 8, "_32.json"))
            continue;
        if (n_firsts == 8)
            break;
        char file[1600];
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        mcl_tune_kernel k[MAX_CAND];
        size_t got = 0;
        char device[256];
        manta_err err;
        manta_err_clear(&err);
        if (mcl_tune_parse_tuner_ranked(file, k, max, &got, device, sizeof device, &err) !=
            MANTA_OK) {
            fprintf(stderr, "manta tune: %s\n", err.msg);
            rc = 1;
        } else if (strcmp(device, c->info->name) != 0) {
            fprintf(stderr, "manta tune: %s tuned '%s', not '%s' (platform %u, device %u)\n",
                    t->program, device, c->info->name, c->info->platform_index,
                    c->info->device_index);
            rc = 1;
        } else if (got > 0 && strcmp(k[0].kernel, t->kernel) != 0) {
            fprintf(stderr, "manta tune: %s wrote results for '%s', expected '%s'\n", t->program,
                    k[0].kernel, t->kernel);
            rc = 1;
        } else if (got > 0) {
            firsts[n_firsts++] = k[0];
            for (size_t i = 1; i < got; i++)
                rest[n_rest++] = k[i];
        }
    }
    closedir(dp);
    if (rc)
        return rc;
    if (n_firsts == 0) {
        fprintf(stderr,
                "manta tune: %s wrote no result: no configuration ran correctly on '%s' (log: %s)\n",
                t->program, c->info->name, log);
        return 1;
    }
    qsort(firsts, n_firsts, sizeof firsts[0], cmp_time);
    qsort(rest, n_rest, sizeof rest[0], cmp_time);
    for (size_t i = 0; i < n_firsts + n_rest && *n_cand < max; i++) {
        const mcl_tune_kernel *k = i < n_firsts ? &firsts[i] : &rest[i - n_firsts];
        bool dup = false;
        for (size_t j = 0; j < *n_cand; j++)
            dup |= same_params(&cand[j], k);
        if (!dup)
            cand[(*n_cand)++] = *k;
    }
    qsort(cand, *n_cand, sizeof cand[0], cmp_time);
    read_log(log, &g);
    const mcl_tune_kernel *best = &cand[0];
    double perf = t->gemm && best->time_ms > 0
                      ? 2.0 * (double)best->m * (double)best->n * (double)best->k / (best->time_ms * 1e6)
                      : g.best;
    fprintf(c->out, "      done in %.0f s: best %.1f %s (%s)\n", now_s() - start, perf,
            t->gemm ? "GFLOPS" : g.unit, best->family);
    fflush(c->out);
    return 0;
}

/* ---- timing SGEMM ------------------------------------------------------------------ */

static manta_status gemm(tune_ctx *c, const gemm_shape *s)
{
    size_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
    if (s->batch > 1)
        return mcl_sgemm_batched(c->d, s->ta, s->tb, s->m, s->n, s->k, 1.0f, c->a, lda, 0, c->b,
                                 ldb, s->k * s->n, 0.0f, c->c, s->n, s->m * s->n, s->batch);
    return mcl_sgemm(c->d, s->ta, s->tb, s->m, s->n, s->k, 1.0f, c->a, lda, c->b, ldb, 0.0f, c->c,
                     s->n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* GFLOP/s: median of 5 timed windows after a warm-up call (which compiles). */
static manta_status time_gemm(tune_ctx *c, const gemm_shape *s, double *gflops)
{
    manta_status st = gemm(c, s);
    if (st == MANTA_OK)
        st = mcl_finish(c->d);
    if (st != MANTA_OK)
        return st;
    double t0 = now_s();
    int reps = 0;
    do {
        st = gemm(c, s);
        if (st == MANTA_OK)
            st = mcl_finish(c->d);
        reps++;
    } while (st == MANTA_OK && now_s() - t0 < c->o.seconds / 5 && reps < 10000);
    double w[5];
    for (int i = 0; i < 5 && st == MANTA_OK; i++) {
        double t = now_s();
        for (int r = 0; r < reps && st == MANTA_OK; r++)
            st = gemm(c, s);
        if (st == MANTA_OK)
            st = mcl_finish(c->d);
        w[i] = (now_s() - t) / reps;
    }
    if (st != MANTA_OK)
        return st;
    qsort(w, 5, sizeof w[0], cmp_double);
    *gflops = 2.0 * (double)s->m * (double)s->n * (double)s->k * (double)s->batch / w[2] * 1e-9;
    return MANTA_OK;
}

static manta_status time_all(tune_ctx *c, const char *label, double *gflops)
{
    fprintf(c->out, "timing SGEMM at %zu shapes: %s\n", N_SHAPES, label);
    fflush(c->out);
    for (size_t i = 0; i < N_SHAPES; i++) {
        manta_status st = time_gemm(c, &shapes[i], &gflops[i]);
        if (st != MANTA_OK)
            return st;
    }
    return MANTA_OK;
}

/* @p base plus a kernel-selection threshold (direct kernel when
 * m*n*k < t^3), in @p out. */
static void with_threshold(const mcl_tune_set *base, size_t t, mcl_tune_set *out)
{
    *out = *base;
    mcl_tune_kernel k;
    memset(&k, 0, sizeof k);
    snprintf(k.kernel, sizeof k.kernel, "GemmRoutine");
    snprintf(k.family, sizeof k.family, "manta");
    snprintf(k.names[0], sizeof k.names[0], "XGEMM_MIN_INDIRECT_SIZE");
    k.values[0] = t;
    k.count = 1;
    mcl_tune_set_put(out, &k, NULL); /* replaces or fits: GemmRoutine is one of 7 kernels */
}

/* Most parameter sets timed side by side: CLBlast's direct and indirect, up
 * to MAX_CAND tuned candidates of each. */
#define MAX_VARIANTS (2 + 2 * MAX_CAND)
#define ROUNDS 5

/* GFLOP/s of every shape under each of @p n parameter sets, median of
 * ROUNDS rounds that visit every set in turn, so that a change of machine
 * load hits all sets alike. CLBlast keeps each set's compiled program, so
 * switching back and forth does not recompile. Overrides cannot be undone:
 * each set must override every kernel that any set of the call overrides
 * and that its forced kernel uses. Preparing a set compiles it; sets after
 * the first @p must are skipped once preparing has taken @p budget_s:
 * *measured says how many were timed. */
static manta_status time_interleaved(tune_ctx *c, const char *label, const mcl_tune_set *sets,
                                     size_t n, size_t must, double budget_s, size_t *measured,
                                     double (*g)[N_SHAPES])
{
    size_t reps[MAX_VARIANTS][N_SHAPES];
    double w[MAX_VARIANTS][N_SHAPES][ROUNDS];
    manta_status st = MANTA_OK;
    fprintf(c->out, "timing SGEMM at %zu shapes, %s: %zu parameter sets, %d interleaved rounds\n",
            N_SHAPES, label, n, ROUNDS);
    fflush(c->out);
    double t_start = now_s();
    for (size_t v = 0; v < n && st == MANTA_OK; v++) {
        if (v >= must && now_s() - t_start > budget_s) {
            fprintf(c->out, "      time budget of %.0f s spent: %zu of %zu sets skipped\n", budget_s,
                    n - v, n);
            n = v;
            break;
        }
        double t_set = now_s();
        st = mcl_tune_apply(c->info->id, &sets[v], mcl_err(c->d));
        for (size_t s = 0; s < N_SHAPES && st == MANTA_OK; s++) {
            st = gemm(c, &shapes[s]); /* compiles */
            if (st == MANTA_OK)
                st = mcl_finish(c->d);
            double t0 = now_s();
            size_t r = 0;
            while (st == MANTA_OK && now_s() - t0 < c->o.seconds / ROUNDS && r < 10000) {
                st = gemm(c, &shapes[s]);
                if (st == MANTA_OK)
                    st = mcl_finish(c->d);
                r++;
            }
            reps[v][s] = r;
        }
        fprintf(c->out, "      set %zu/%zu compiled and calibrated in %.0f s\n", v + 1, n,
                now_s() - t_set);
        fflush(c->out);
    }
    for (int round = 0; round < ROUNDS && st == MANTA_OK; round++)
        for (size_t v = 0; v < n && st == MANTA_OK; v++) {
            st = mcl_tune_apply(c->info->id, &sets[v], mcl_err(c->d));
            for (size_t s = 0; s < N_SHAPES && st == MANTA_OK; s++) {
                double t = now_s();
                for (size_t r = 0; r < reps[v][s] && st == MANTA_OK; r++)
                    st = gemm(c, &shapes[s]);
                if (st == MANTA_OK)
                    st = mcl_finish(c->d);
                w[v][s][round] = (now_s() - t) / (double)reps[v][s];
            }
        }
    *measured = st == MANTA_OK ? n : 0;
    for (size_t v = 0; v < n && st == MANTA_OK; v++)
        for (size_t s = 0; s < N_SHAPES; s++) {
            const gemm_shape *sh = &shapes[s];
            qsort(w[v][s], ROUNDS, sizeof w[v][s][0], cmp_double);
            g[v][s] = 2.0 * (double)sh->m * (double)sh->n * (double)sh->k * (double)sh->batch /
                      w[v][s][ROUNDS / 2] * 1e-9;
        }
    return st;
}

/* One way to run the direct or the indirect kernel: CLBlast's parameters
 * (tuned == false) or a tuner's candidate, with its measured GFLOP/s. */
typedef struct option {
    bool tuned;
    bool helpers;        /* with the tuned Copy/Pad/Transpose/Padtranspose */
    mcl_tune_kernel k;   /* XgemmDirect or Xgemm (helpers go with every tuned Xgemm) */
    double g[N_SHAPES];
} option;

/* What goes into the tuning file. */
typedef struct choice {
    size_t d, i;           /* chosen direct and indirect option */
    size_t threshold;      /* direct kernel when m*n*k < threshold^3 */
    bool direct[N_SHAPES]; /* shape i runs the direct kernel */
    double after[N_SHAPES];
} choice;

typedef unsigned long long u64;

static u64 shape_mnk(const gemm_shape *s) { return (u64)s->m * (u64)s->n * (u64)s->k; }

static u64 cube(size_t t) { return (u64)t * (u64)t * (u64)t; }

/* CLBlast's rule: the direct kernel when m*n*k < t^3. */
static bool runs_direct(const gemm_shape *s, size_t t) { return shape_mnk(s) < cube(t); }

static int cmp_u64(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return (x > y) - (x < y);
}

/* Summed time of @p o relative to @p before over every shape. */
static double rel_time(const double *before, const option *o)
{
    double sum = 0;
    for (size_t i = 0; i < N_SHAPES; i++)
        sum += before[i] / o->g[i];
    return sum;
}

/* A choice may leave no shape slower than this fraction below "before": the
 * timing noise on a shared machine, not a trade worth making (one kernel
 * switch point serves every GEMM, also the shapes not timed here). */
#define TUNE_TOLERANCE 0.10

/* Choose the direct option, the indirect option and the size below which the
 * direct kernel runs, minimising the summed time relative to @p before
 * without making any shape slower (beyond TUNE_TOLERANCE). One
 * threshold decides for all GEMMs (CLBlast's rule: direct when m*n*k < T^3),
 * so shapes of equal size go together. T stays CLBlast's own (@p t_def)
 * when that splits the shapes alike; else it is put between the sizes it
 * separates (geometric mean of their cube roots), at half the smallest when
 * every shape runs indirect and at twice the largest when all run direct. A
 * kernel that no shape uses keeps the option that is fastest over all shapes:
 * it serves other sizes. Ties keep CLBlast's parameters. */
static void choose(const double *before, const option *dopt, size_t nd, const option *iopt,
                   size_t ni, size_t t_def, choice *out)
{
    u64 size[N_SHAPES], sorted[N_SHAPES]; /* m*n*k: exact, so equal sizes group */
    for (size_t i = 0; i < N_SHAPES; i++)
        sorted[i] = size[i] = shape_mnk(&shapes[i]);
    qsort(sorted, N_SHAPES, sizeof sorted[0], cmp_u64);
    double best = INFINITY;
    size_t n_best = 0, d_best = 0, i_best = 0; /* direct: the n_best smallest sizes */
    for (size_t d = 0; d < nd; d++)
        for (size_t ii = 0; ii < ni; ii++)
            for (size_t j = 0; j <= N_SHAPES; j++) {
                if (j > 0 && j < N_SHAPES && sorted[j] == sorted[j - 1])
                    continue;
                double cost = 0;
                bool harm = false;
                for (size_t s = 0; s < N_SHAPES; s++) {
                    double g = j > 0 && size[s] <= sorted[j - 1] ? dopt[d].g[s] : iopt[ii].g[s];
                    cost += before[s] / g;
                    harm |= g < (1 - TUNE_TOLERANCE) * before[s];
                }
                if (!harm && cost < best - 1e-9)
                    best = cost, n_best = j, d_best = d, i_best = ii;
            }
    if (n_best == 0)
        for (size_t d = 0; d < nd; d++)
            if (rel_time(before, &dopt[d]) < rel_time(before, &dopt[d_best]))
                d_best = d;
    if (n_best == N_SHAPES)
        for (size_t ii = 0; ii < ni; ii++)
            if (rel_time(before, &iopt[ii]) < rel_time(before, &iopt[i_best]))
                i_best = ii;
    /* T with sorted[n_best-1] < T^3 <= sorted[n_best]; CLBlast's own when it
     * splits the shapes alike (no evidence to move it for other sizes) */
    size_t t, n_def = 0;
    for (size_t s = 0; s < N_SHAPES; s++)
        n_def += sorted[s] < cube(t_def);
    if (t_def > 0 && n_def == n_best) {
        t = t_def;
    } else if (n_best == 0) {
        t = (size_t)floor(cbrt((double)sorted[0]) / 2);
    } else if (n_best == N_SHAPES) {
        t = (size_t)ceil(2 * cbrt((double)sorted[N_SHAPES - 1]));
    } else {
        t = (size_t)floor(sqrt(cbrt((double)sorted[n_best - 1]) * cbrt((double)sorted[n_best])));
        while (t > 0 && cube(t) > sorted[n_best])
            t--;
    }
    while (t < T_ALL_DIRECT && n_best > 0 && cube(t) <= sorted[n_best - 1])
        t++;
    if (t > T_ALL_DIRECT)
        t = T_ALL_DIRECT;
    out->d = d_best;
    out->i = i_best;
    out->threshold = t;
    for (size_t s = 0; s < N_SHAPES; s++) {
        out->direct[s] = runs_direct(&shapes[s], t);
        out->after[s] = out->direct[s] ? dopt[d_best].g[s] : iopt[i_best].g[s];
    }
}

/* ---- output ---------------------------------------------------------------------------- */

/* The tuned option shown in the table: the chosen one, else the best. */
static size_t shown(const double *before, const option *o, size_t n, size_t chosen)
{
    if (chosen > 0 || n < 2)
        return chosen;
    size_t b = 1;
    for (size_t i = 2; i < n; i++)
        if (rel_time(before, &o[i]) < rel_time(before, &o[b]))
            b = i;
    return b;
}

static void json_options(const char *name, const option *o, size_t n, size_t chosen)
{
    printf(",\"%s\":[", name);
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"tuned\":%s,\"helpers\":%s", i ? "," : "", o[i].tuned ? "true" : "false",
               o[i].helpers ? "true" : "false");
        if (o[i].tuned) {
            printf(",\"family\":\"%s\",\"tuner_time_ms\":%.4g,\"parameters\":{", o[i].k.family,
                   o[i].k.time_ms);
            for (size_t j = 0; j < o[i].k.count; j++)
                printf("%s\"%s\":%zu", j ? "," : "", o[i].k.names[j], o[i].k.values[j]);
            printf("}");
        }
        printf(",\"chosen\":%s,\"gflops\":[", i == chosen ? "true" : "false");
        for (size_t s = 0; s < N_SHAPES; s++)
            printf("%s%.3f", s ? "," : "", o[i].g[s]);
        printf("]}");
    }
    printf("]");
}

/* The result: the stored file, and GFLOP/s per shape before and after. With
 * @p ch (a tuning run) also every option measured. */
static void print_result(tune_ctx *c, const char *path, const mcl_tune_set *set,
                         const double *before, const double *after, const option *dopt,
                         size_t nd, const option *iopt, size_t ni, const choice *ch)
{
    const mcl_device_info *di = c->info;
    mcl_tune_key key;
    mcl_tune_key_of(di, &key);
    const mcl_tune_kernel *gr = mcl_tune_set_find(set, "GemmRoutine");
    if (c->o.json) {
        printf("{");
        cmd_json_provenance(stdout, c->d);
        printf(",\"platform\":");
        cmd_json_str(stdout, di->platform_name);
        printf(",\"clblast\":\"%s\",\"file\":", key.clblast);
        cmd_json_str(stdout, path);
        printf(",\"mode\":\"%s\",\"seconds\":%.1f",
               c->o.compare ? "compare" : c->o.quick ? "quick" : "full", now_s() - c->t0);
        if (gr)
            printf(",\"min_indirect_size\":%zu", gr->values[0]);
        if (c->t_def)
            printf(",\"default_min_indirect_size\":%zu", c->t_def);
        printf(",\"kernels\":[");
        for (size_t i = 0; i < set->count; i++) {
            const mcl_tune_kernel *k = &set->k[i];
            printf("%s{\"kernel\":\"%s\",\"family\":\"%s\",\"parameters\":{", i ? "," : "",
                   k->kernel, k->family);
            for (size_t j = 0; j < k->count; j++)
                printf("%s\"%s\":%zu", j ? "," : "", k->names[j], k->values[j]);
            printf("}}");
        }
        printf("],\"shapes\":[");
        for (size_t i = 0; i < N_SHAPES; i++) {
            const gemm_shape *s = &shapes[i];
            printf("%s{\"m\":%zu,\"n\":%zu,\"k\":%zu,\"batch\":%zu,\"trans_a\":%s,\"trans_b\":%s,"
                   "\"what\":\"%s\",\"before_gflops\":%.3f,\"after_gflops\":%.3f",
                   i ? "," : "", s->m, s->n, s->k, s->batch, s->ta ? "true" : "false",
                   s->tb ? "true" : "false", s->what, before[i], after[i]);
            if (ch)
                printf(",\"kernel\":\"%s\"", ch->direct[i] ? "direct" : "indirect");
            printf("}");
        }
        printf("]");
        if (ch) {
            json_options("direct_options", dopt, nd, ch->d);
            json_options("indirect_options", iopt, ni, ch->i);
        }
        printf("}\n");
        return;
    }
    printf("\ndevice: %s (%s, driver %s), CLBlast %s\n", di->name, di->platform_name,
           di->driver_version, key.clblast);
    printf("tuning file: %s\n  tuned:", path);
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->k[i].kernel, "GemmRoutine") != 0)
            printf(" %s (%s)", set->k[i].kernel, set->k[i].family);
    if (gr)
        printf(" kernel selection (direct GEMM kernel below %zu^3 multiply-adds", gr->values[0]);
    if (gr && c->t_def)
        printf("; CLBlast's default: %zu^3", c->t_def);
    if (gr)
        printf(")");
    printf("\nSGEMM GFLOP/s, median of 5 timed windows%s; before: CLBlast defaults\n",
           ch ? " (rounds interleaved across parameter sets)" : "");
    size_t sd = ch ? shown(before, dopt, nd, ch->d) : 0, si = ch ? shown(before, iopt, ni, ch->i) : 0;
    if (ch)
        printf("  %-28s %8s %8s %8s %8s %8s %8s %8s\n", "shape (row-major)", "before", "dir-def",
               "dir-tun", "ind-def", "ind-tun", "after", "speed-up");
    else
        printf("  %-28s %8s %8s %8s\n", "shape (row-major)", "before", "after", "speed-up");
    double lb = 0, la = 0;
    for (size_t i = 0; i < N_SHAPES; i++) {
        const gemm_shape *s = &shapes[i];
        char shape[64];
        int w = snprintf(shape, sizeof shape, "m=%zu n=%zu k=%zu", s->m, s->n, s->k);
        if (s->batch > 1)
            snprintf(shape + w, sizeof shape - (size_t)w, " x%zu", s->batch);
        else if (s->ta || s->tb)
            snprintf(shape + w, sizeof shape - (size_t)w, " %s%s", s->ta ? "A^T" : "",
                     s->tb ? "B^T" : "");
        printf("  %-28s %8.2f", shape, before[i]);
        if (ch)
            printf(" %8.2f %8.2f %8.2f %8.2f", dopt[0].g[i], dopt[sd].g[i], iopt[0].g[i],
                   iopt[si].g[i]);
        printf(" %8.2f %7.2fx\n", after[i], after[i] / before[i]);
        lb += log(before[i]);
        la += log(after[i]);
    }
    printf("  %-28s %8.2f", "geometric mean", exp(lb / N_SHAPES));
    if (ch)
        printf(" %8s %8s %8s %8s", "", "", "", "");
    printf(" %8.2f %7.2fx\n", exp(la / N_SHAPES), exp((la - lb) / N_SHAPES));
    if (ch)
        printf("  dir/ind: direct/indirect kernel only, with CLBlast's (def) or the best tuned (tun)\n"
               "  parameters; before and after pick from these columns by kernel selection (re-time\n"
               "  the stored file against CLBlast's defaults in a fresh process: --compare)\n");
    printf("total time: %.0f s\n", now_s() - c->t0);
}

/* ---- the command ------------------------------------------------------------------------- */

static mcl_dev *open_untuned(const char *spec)
{
    mcl_device_list *list = malloc(sizeof *list);
    if (!list) {
        fprintf(stderr, "manta tune: out of memory\n");
        return NULL;
    }
    manta_err err;
    manta_err_clear(&err);
    size_t idx = 0;
    mcl_dev *d = NULL;
    mcl_options opt = {0};
    opt.no_tuning = true; /* "before" is CLBlast's defaults */
    manta_status st = mcl_enumerate(list, &err);
    if (st == MANTA_OK)
        st = mcl_select(list, spec, &idx, &err);
    if (st == MANTA_OK)
        st = mcl_open(&list->dev[idx], &opt, &d, &err);
    if (st != MANTA_OK)
        cmd_error("tune: device", st, &err);
    free(list);
    return d;
}

static int parse_args(int argc, char **argv, tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seconds = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--json"))
            o->json = true;
        else if (!strcmp(a, "--quick"))
            o->quick = true;
        else if (!strcmp(a, "--compare"))
            o->compare = true;
        else if (!strcmp(a, "--device") && v)
            o->device = v, i++;
        else if (!strcmp(a, "--configs") && v && (o->configs = strtoul(v, &end, 10)) >= 1 &&
                 o->configs <= 100000 && *end == '\0' && v[0] != '-')
            i++;
        else if (!strcmp(a, "--seconds") && v && (o->seconds = strtod(v, &end)) > 0 &&
                 o->seconds <= 60 && *end == '\0')
            i++;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "manta tune: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (o->seconds < 0)
        o->seconds = o->quick ? 0.25 : 0.5;
    return -1;
}

static void remove_tree(const char *path)
{
    DIR *dp = opendir(path);
    if (dp) {
        struct dirent *e;
        while ((e = readdir(dp)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char p[1600];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                remove_tree(p);
            else
                remove(p);
        }
        closedir(dp);
    }
    rmdir(path);
}

int cmd_tune(int argc, char **argv)
{
    tune_ctx c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(argc, argv, &c.o);
    if (rc >= 0)
        return rc;
    c.out = c.o.json ? stderr : stdout;
    c.t0 = now_s();
    if (!c.o.compare && !find_tuners(&c))
        return 1;
    c.d = open_untuned(c.o.device);
    if (!c.d)
        return 1;
    c.info = mcl_info(c.d);
    rc = 1;
    char path[1200];
    mcl_tune_key key;
    mcl_tune_key_of(c.info, &key);
    manta_err err;
    manta_err_clear(&err);
    mcl_tune_set set;
    memset(&set, 0, sizeof set);
    double before[N_SHAPES], after[N_SHAPES];
    manta_status st = mcl_tune_path(mcl_cache_dir(c.d), &key, path, sizeof path, &err);
    if (st != MANTA_OK) {
        cmd_error("tune", st, &err);
        goto out;
    }
    if (c.o.compare) {
        st = mcl_tune_load(path, &key, &set, &err);
        if (st != MANTA_OK) {
            if (st == MANTA_ERR_IO && access(path, F_OK) != 0)
                fprintf(stderr, "manta tune: '%s' is not tuned yet (no %s): run 'manta tune'\n",
                        c.info->name, path);
            else
                cmd_error("tune", st, &err);
            goto out;
        }
    }
    /* operands for every shape */
    size_t na = 0, nb = 0, nc = 0;
    for (size_t i = 0; i < N_SHAPES; i++) {
        const gemm_shape *s = &shapes[i];
        na = na > s->m * s->k ? na : s->m * s->k;
        nb = nb > s->k * s->n * s->batch ? nb : s->k * s->n * s->batch;
        nc = nc > s->m * s->n * s->batch ? nc : s->m * s->n * s->batch;
    }
    mlayout l = {0};
    size_t oa = mlayout_add(&l, na), ob = mlayout_add(&l, nb), oc = mlayout_add(&l, nc);
    st = mslab_create(c.d, &c.mem, l.total, "SGEMM operands");
    if (st == MANTA_OK) {
        float *h = malloc(l.total * sizeof *h);
        if (!h)
            st = manta_err_set(mcl_err(c.d), MANTA_ERR_NO_MEMORY, "out of host memory");
        for (size_t i = 0; h && i < l.total; i++)
            h[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
        if (h)
            st = mcl_write(c.d, mslab_view(&c.mem, 0), h, l.total);
        free(h);
    }
    c.a = mslab_view(&c.mem, oa), c.b = mslab_view(&c.mem, ob), c.c = mslab_view(&c.mem, oc);
    if (st != MANTA_OK) {
        cmd_error("tune", st, mcl_err(c.d));
        goto out;
    }
    fprintf(c.out, "device: %s (platform %u, device %u)\n", c.info->name, c.info->platform_index,
            c.info->device_index);
    if (c.o.compare) {
        st = mcl_sgemm_direct_limit(c.d, &c.t_def);
        if (st == MANTA_OK)
            st = time_all(&c, "CLBlast defaults", before);
        if (st == MANTA_OK)
            st = mcl_tune_apply(c.info->id, &set, mcl_err(c.d));
        if (st == MANTA_OK)
            st = time_all(&c, "tuned", after);
        if (st != MANTA_OK) {
            cmd_error("tune: timing SGEMM", st, mcl_err(c.d));
            goto out;
        }
        print_result(&c, path, &set, before, after, NULL, 0, NULL, 0, NULL);
        rc = 0;
        goto out;
    }

    /* 1. the tuners (other processes: this one still runs CLBlast's defaults) */
    option dopt[1 + MAX_CAND], iopt[1 + MAX_CAND];
    memset(dopt, 0, sizeof dopt);
    memset(iopt, 0, sizeof iopt);
    size_t nd = 1, ni = 1; /* option 0: CLBlast's parameters */
    mcl_tune_set none, helpers;
    memset(&none, 0, sizeof none);
    memset(&helpers, 0, sizeof helpers);
    snprintf(c.work, sizeof c.work, "%s/clblast-tune-XXXXXX", mcl_cache_dir(c.d));
    if (!mkdtemp(c.work)) {
        fprintf(stderr, "manta tune: cannot create a folder in '%s': %s\n", mcl_cache_dir(c.d),
                strerror(errno));
        goto out;
    }
    size_t n_run = 0;
    for (size_t i = 0; i < N_TUNERS; i++)
        n_run += !(c.o.quick && tuners[i].full_only);
    for (size_t i = 0, j = 0; i < N_TUNERS; i++) {
        if (c.o.quick && tuners[i].full_only)
            continue;
        mcl_tune_kernel cand[MAX_CAND];
        size_t n = 0, max = 1;
        if (!strcmp(tuners[i].kernel, "XgemmDirect") || !strcmp(tuners[i].kernel, "Xgemm"))
            max = c.o.quick ? 1 : 2;
        if (tune_kernel(&c, i, j++, n_run, max, cand, &n))
            goto out; /* the work folder stays for its logs */
        for (size_t k = 0; k < n; k++) {
            if (!strcmp(tuners[i].kernel, "XgemmDirect")) {
                dopt[nd].tuned = true;
                dopt[nd++].k = cand[k];
            } else if (!strcmp(tuners[i].kernel, "Xgemm")) {
                iopt[ni].tuned = true;
                iopt[ni++].k = cand[k];
            } else {
                mcl_tune_set_put(&helpers, &cand[k], NULL);
            }
        }
    }

    /* 2. CLBlast's parameters with each kernel forced: only the threshold
     * is overridden, which the next set can set back. Its own threshold
     * says which of the two each shape runs by default: "before". */
    size_t t_def = 0;
    st = mcl_sgemm_direct_limit(c.d, &t_def);
    c.t_def = t_def;
    if (st != MANTA_OK) {
        cmd_error("tune", st, mcl_err(c.d));
        goto out;
    }
    /* Each forced kernel with the least change to CLBlast's own threshold:
     * its own value when it already sends every shape there (CLBlast then
     * builds the very program it builds untuned, maybe cached by PoCL). */
    size_t n_def_direct = 0;
    for (size_t s = 0; s < N_SHAPES; s++)
        n_def_direct += runs_direct(&shapes[s], t_def);
    size_t t_dir = n_def_direct == N_SHAPES ? t_def : T_ALL_DIRECT;
    size_t t_ind = n_def_direct == 0 ? t_def : T_ALL_INDIRECT;
    mcl_tune_set *sets = malloc(MAX_VARIANTS * sizeof *sets);
    double g[MAX_VARIANTS][N_SHAPES];
    if (!sets) {
        fprintf(stderr, "manta tune: out of memory\n");
        goto out;
    }
    size_t measured = 0;
    with_threshold(&none, t_dir, &sets[0]);
    with_threshold(&none, t_ind, &sets[1]);
    st = time_interleaved(&c, "CLBlast's parameters, each kernel forced", sets, 2, 2, 0,
                          &measured, g);
    if (st == MANTA_OK) {
        memcpy(dopt[0].g, g[0], sizeof g[0]);
        memcpy(iopt[0].g, g[1], sizeof g[1]);
        for (size_t s = 0; s < N_SHAPES; s++)
            before[s] = runs_direct(&shapes[s], t_def) ? g[0][s] : g[1][s];
    }
    /* 3. the tuned candidates at our shapes (the tuners timed one size
     * each): direct ones with the direct kernel forced, indirect ones with
     * the indirect kernel forced; the best of each first, the runners-up
     * while the time budget lasts */
    size_t nv = 0, which[MAX_VARIANTS]; /* option: k < nd direct, else indirect k - nd */
    for (size_t r = 1; r < nd || r < ni; r++) {
        if (r < nd) {
            mcl_tune_set base = none;
            mcl_tune_set_put(&base, &dopt[r].k, NULL);
            with_threshold(&base, t_dir, &sets[nv]);
            which[nv++] = r;
        }
        if (r < ni) {
            mcl_tune_set base = none;
            mcl_tune_set_put(&base, &iopt[r].k, NULL);
            with_threshold(&base, t_ind, &sets[nv]);
            which[nv++] = nd + r;
        }
    }
    size_t must = (nd > 1) + (ni > 1);
    if (st == MANTA_OK)
        st = time_interleaved(&c, "tuned candidates, each kernel forced", sets, nv, must,
                              c.o.quick ? 0 : 240, &measured, g);
    free(sets);
    if (st != MANTA_OK) {
        cmd_error("tune: timing SGEMM", st, mcl_err(c.d));
        goto out;
    }
    size_t nd_ok = 1, ni_ok = 1; /* options timed, in order */
    option dk[1 + MAX_CAND], ik[1 + MAX_CAND];
    dk[0] = dopt[0];
    ik[0] = iopt[0];
    for (size_t v = 0; v < measured; v++) {
        option *o = which[v] < nd ? &dopt[which[v]] : &iopt[which[v] - nd];
        memcpy(o->g, g[v], sizeof g[v]);
        if (which[v] < nd)
            dk[nd_ok++] = *o;
        else
            ik[ni_ok++] = *o;
    }
    memcpy(dopt, dk, nd_ok * sizeof dk[0]);
    memcpy(iopt, ik, ni_ok * sizeof ik[0]);
    nd = nd_ok;
    ni = ni_ok;
    /* 4. the best indirect candidate with the tuned helpers too (last: the
     * helpers' defaults cannot be restored once overridden) */
    if (helpers.count > 0 && ni > 1 && ni < 1 + MAX_CAND) {
        size_t b = 1;
        for (size_t k = 2; k < ni; k++)
            if (rel_time(before, &iopt[k]) < rel_time(before, &iopt[b]))
                b = k;
        mcl_tune_set base = helpers, one;
        mcl_tune_set_put(&base, &iopt[b].k, NULL);
        with_threshold(&base, t_ind, &one);
        double gh[1][N_SHAPES];
        st = time_interleaved(&c, "best indirect candidate with tuned copy/pad/transpose", &one, 1,
                              1, 0, &measured, gh);
        if (st != MANTA_OK) {
            cmd_error("tune: timing SGEMM", st, mcl_err(c.d));
            goto out;
        }
        iopt[ni] = iopt[b];
        iopt[ni].helpers = true;
        memcpy(iopt[ni].g, gh[0], sizeof gh[0]);
        ni++;
    }
    choice ch;
    choose(before, dopt, nd, iopt, ni, t_def, &ch);
    /* the file: the winning tuned kernels and the threshold */
    mcl_tune_set keep;
    memset(&keep, 0, sizeof keep);
    if (dopt[ch.d].tuned)
        mcl_tune_set_put(&keep, &dopt[ch.d].k, NULL);
    if (iopt[ch.i].tuned)
        mcl_tune_set_put(&keep, &iopt[ch.i].k, NULL);
    if (iopt[ch.i].helpers)
        for (size_t i = 0; i < helpers.count; i++)
            mcl_tune_set_put(&keep, &helpers.k[i], NULL);
    mcl_tune_kernel gr;
    memset(&gr, 0, sizeof gr);
    snprintf(gr.kernel, sizeof gr.kernel, "GemmRoutine");
    snprintf(gr.family, sizeof gr.family, "manta");
    snprintf(gr.names[0], sizeof gr.names[0], "XGEMM_MIN_INDIRECT_SIZE");
    gr.values[0] = ch.threshold;
    gr.count = 1;
    mcl_tune_set_put(&keep, &gr, NULL);
    char note[256];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(note, sizeof note, "manta tune%s, %s", c.o.quick ? " --quick" : "", date);
    st = mcl_tune_save(path, &key, &keep, note, &err);
    if (st == MANTA_OK)
        st = mcl_tune_load(path, &key, &set, &err); /* what later runs will apply */
    if (st != MANTA_OK) {
        cmd_error("tune", st, &err);
        goto out;
    }
    remove_tree(c.work);
    c.work[0] = '\0';
    /* "after" comes from the measurements of the chosen kernels: this process
     * cannot undo overrides it no longer wants ('manta tune --compare' times
     * the stored file in a fresh process) */
    print_result(&c, path, &set, before, ch.after, dopt, nd, iopt, ni, &ch);
    rc = 0;
out:
    mslab_destroy(c.d, &c.mem);
    mcl_close(c.d);
    return rc;
}
