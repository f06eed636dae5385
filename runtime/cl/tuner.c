/* The tuner is started with posix_spawn and a change of folder
 * (posix_spawn_file_actions_addchdir_np: glibc 2.29, musl 1.1.24). */
#define _GNU_SOURCE

#include "cl/tuner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/fileio.h"

/* ---- finding the tuners ----------------------------------------------------------- */

static bool executable(const char *dir, const char *prog)
{
    char p[4096];
    int n = snprintf(p, sizeof p, "%s/%s", dir, prog);
    return n > 0 && (size_t)n < sizeof p && access(p, X_OK) == 0;
}

manta_status mcl_tuner_find(const char *path_list, const char *const *programs, size_t n, char *dir,
                            size_t cap, manta_err *err)
{
    if (n == 0 || cap == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "tuner search: no program named, or no room for the folder");
    dir[0] = '\0';
    char d[4096];
    for (const char *p = path_list; p && *p && !dir[0];) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 0 && len < sizeof d && len < cap) {
            memcpy(d, p, len);
            d[len] = '\0';
            if (executable(d, programs[0]))
                snprintf(dir, cap, "%s", d);
        }
        p = end ? end + 1 : NULL;
    }
    if (!dir[0])
        return manta_err_set(
            err, MANTA_ERR_UNSUPPORTED,
            "CLBlast's tuners (%s, ...) are not installed: install the Debian "
            "package clblast-utils (apt-get install clblast-utils, or 'make deps')",
            programs[0]);
    for (size_t i = 1; i < n; i++)
        if (!executable(dir, programs[i]))
            return manta_err_set(err, MANTA_ERR_IO,
                                 "%s is missing from %s: reinstall the Debian package "
                                 "clblast-utils",
                                 programs[i], dir);
    return MANTA_OK;
}

/* ---- the log ----------------------------------------------------------------------- */

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

/* A configuration line "| ID | total | ... | time | PERF | status |": PERF
 * when its status says the results matched, else 0. */
static double matched_perf(const char *line)
{
    if (!strstr(line, "results match"))
        return 0;
    const char *bars[16];
    int nb = 0;
    for (const char *p = line; *p && nb < 16; p++)
        if (*p == '|')
            bars[nb++] = p;
    return nb >= 4 ? atof(bars[nb - 3] + 1) : 0;
}

void mcl_tuner_log_read(const char *path, mcl_tuner_log *g)
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
        unsigned long v, id, total;
        if (sscanf(line, "* Found %lu configuration", &v) == 1 && g->n_found < MCL_TUNER_VARIANTS)
            g->found[g->n_found++] = v;
        if (strstr(line, "|   ID |") && strstr(line, "GB/s"))
            snprintf(g->unit, sizeof g->unit, "GB/s");
        if (sscanf(line, "| %lu | %lu |", &id, &total) == 2) {
            g->done++;
            double perf = matched_perf(line);
            if (perf > g->best)
                g->best = perf;
        }
    }
    fclose(f);
}

/* ---- running one ------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Start the tuner of @p r with its output in @p log; its process id in *pid. */
static manta_status spawn(const mcl_tuner_run *r, const char *log, pid_t *pid, manta_err *err)
{
    char plat[16], dev[16], sm[24], sn[24], sk[24], fr[32], rn[16];
    snprintf(plat, sizeof plat, "%u", r->platform);
    snprintf(dev, sizeof dev, "%u", r->device);
    snprintf(sm, sizeof sm, "%zu", r->m);
    snprintf(sn, sizeof sn, "%zu", r->n);
    snprintf(sk, sizeof sk, "%zu", r->k);
    snprintf(fr, sizeof fr, "%.4f", r->fraction);
    snprintf(rn, sizeof rn, "%d", r->runs);
    char *argv[24];
    int a = 0;
    argv[a++] = (char *)r->program;
    argv[a++] = "-platform", argv[a++] = plat;
    argv[a++] = "-device", argv[a++] = dev;
    argv[a++] = "-precision", argv[a++] = "32";
    argv[a++] = "-m", argv[a++] = sm;
    argv[a++] = "-n", argv[a++] = sn;
    if (r->k)
        argv[a++] = "-k", argv[a++] = sk;
    argv[a++] = "-fraction", argv[a++] = fr;
    argv[a++] = "-runs", argv[a++] = rn;
    argv[a] = NULL;
    posix_spawn_file_actions_t fa;
    int e = posix_spawn_file_actions_init(&fa);
    if (e == 0) {
        /* in order: the log is opened relative to the caller's folder */
        if ((e = posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC,
                                                  0644)) == 0 &&
            (e = posix_spawn_file_actions_adddup2(&fa, 1, 2)) == 0 &&
            (e = posix_spawn_file_actions_addchdir_np(&fa, r->dir)) == 0)
            e = posix_spawn(pid, r->program, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
    }
    if (e != 0)
        return manta_err_set(err, MANTA_ERR_IO, "cannot run %s (log: %s): %s", r->program, log,
                             strerror(e));
    return MANTA_OK;
}

manta_status mcl_tuner_exec(const mcl_tuner_run *r, manta_err *err)
{
    const char *name = base_name(r->program);
    char log[4200];
    snprintf(log, sizeof log, "%s/log.txt", r->dir);
    fflush(NULL);
    pid_t pid;
    manta_status st = spawn(r, log, &pid, err);
    if (st != MANTA_OK)
        return st;
    double start = manta_now(), last = start;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return manta_err_set(err, MANTA_ERR_IO, "waiting for %s: %s", name, strerror(errno));
        double now = manta_now();
        if (now - start > r->limit_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return manta_err_set(err, MANTA_ERR_BLAS, "%s did not finish within %g s (log: %s)",
                                 name, r->limit_s, log);
        }
        if (r->progress && r->report_s > 0 && now - last >= r->report_s) {
            mcl_tuner_log g;
            mcl_tuner_log_read(log, &g);
            r->progress(r->ctx, &g, now - start);
            last = now;
        }
        manta_sleep(0.25);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return MANTA_OK;
    mcl_tuner_log g;
    mcl_tuner_log_read(log, &g);
    const char *said = g.last[0] ? g.last : "no output";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return manta_err_set(err, MANTA_ERR_BLAS, "cannot run %s (log: %s)", r->program, log);
    if (WIFEXITED(status))
        return manta_err_set(err, MANTA_ERR_BLAS, "%s failed with exit status %d: %s (log: %s)",
                             name, WEXITSTATUS(status), said, log);
    return manta_err_set(err, MANTA_ERR_BLAS, "%s was killed by signal %d: %s (log: %s)", name,
                         WIFSIGNALED(status) ? WTERMSIG(status) : 0, said, log);
}

/* ---- its results ------------------------------------------------------------------- */

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

static bool result_file(const char *name)
{
    size_t n = strlen(name);
    return strncmp(name, "clblast_", 8) == 0 && n >= 9 && strcmp(name + n - 8, "_32.json") == 0;
}

/* The best results of every variant's file in @p dir: the first of each in
 * firsts[0 .. *nf-1], the runners-up in rest[0 .. *nr-1]. */
static manta_status read_variants(const char *dir, const char *kernel, const char *device,
                                  size_t max, mcl_tune_kernel *firsts, size_t *nf,
                                  mcl_tune_kernel *rest, size_t *nr, manta_err *err)
{
    DIR *dp = opendir(dir);
    if (!dp)
        return manta_err_set(err, MANTA_ERR_IO, "cannot read '%s': %s", dir, strerror(errno));
    manta_status st = MANTA_OK;
    struct dirent *e;
    while (st == MANTA_OK && *nf < MCL_TUNER_VARIANTS && (e = readdir(dp)) != NULL) {
        if (!result_file(e->d_name))
            continue;
        char file[4400], on[256];
        snprintf(file, sizeof file, "%s/%s", dir, e->d_name);
        mcl_tune_kernel k[MCL_TUNE_MAX_CANDIDATES];
        size_t got = 0;
        st = mcl_tune_parse_tuner_ranked(file, k, max, &got, on, sizeof on, err);
        if (st == MANTA_OK && strcmp(on, device) != 0)
            st = manta_err_set(err, MANTA_ERR_UNSUPPORTED, "%s: tuned '%s', not '%s'", file, on,
                               device);
        else if (st == MANTA_OK && got > 0 && strcmp(k[0].kernel, kernel) != 0)
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: results for '%s', expected '%s'", file,
                               k[0].kernel, kernel);
        else if (st == MANTA_OK && got > 0) {
            firsts[(*nf)++] = k[0];
            for (size_t i = 1; i < got; i++)
                rest[(*nr)++] = k[i];
        }
    }
    closedir(dp);
    return st;
}

manta_status mcl_tuner_results(const char *dir, const char *kernel, const char *device, size_t max,
                               mcl_tune_kernel *out, size_t *count, manta_err *err)
{
    *count = 0;
    if (max == 0 || max > MCL_TUNE_MAX_CANDIDATES)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "tuner results: %zu candidates asked, "
                             "1 .. %d allowed",
                             max, MCL_TUNE_MAX_CANDIDATES);
    mcl_tune_kernel *firsts =
        malloc(MCL_TUNER_VARIANTS * (1 + MCL_TUNE_MAX_CANDIDATES) * sizeof *firsts);
    if (!firsts)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "tuner results: out of memory");
    mcl_tune_kernel *rest = firsts + MCL_TUNER_VARIANTS;
    size_t nf = 0, nr = 0;
    manta_status st = read_variants(dir, kernel, device, max, firsts, &nf, rest, &nr, err);
    if (st == MANTA_OK) {
        qsort(firsts, nf, sizeof firsts[0], cmp_time);
        qsort(rest, nr, sizeof rest[0], cmp_time);
        for (size_t i = 0; i < nf + nr && *count < max; i++) {
            const mcl_tune_kernel *k = i < nf ? &firsts[i] : &rest[i - nf];
            bool dup = false;
            for (size_t j = 0; j < *count; j++)
                dup |= same_params(&out[j], k);
            if (!dup)
                out[(*count)++] = *k;
        }
        qsort(out, *count, sizeof out[0], cmp_time);
    }
    free(firsts);
    return st;
}

/* ---- one kernel -------------------------------------------------------------------- */

static mcl_tuner_run run_of(const mcl_tuner_job *j, const char *dir, double fraction, int runs)
{
    return (mcl_tuner_run){.program = j->program,
                           .dir = dir,
                           .platform = j->info->platform_index,
                           .device = j->info->device_index,
                           .m = j->m,
                           .n = j->n,
                           .k = j->k,
                           .fraction = fraction,
                           .runs = runs,
                           .limit_s = j->limit_s};
}

manta_status mcl_tuner_tune(const mcl_tuner_job *j, mcl_tune_kernel *out, size_t *count,
                            mcl_tuner_done *done, manta_err *err)
{
    *count = 0;
    memset(done, 0, sizeof *done);
    char probe[4200], log[4300];
    snprintf(probe, sizeof probe, "%s.count", j->dir);
    manta_status st = manta_file_mkdir_p(j->dir, err);
    if (st == MANTA_OK)
        st = manta_file_mkdir_p(probe, err);
    mcl_tuner_run r = run_of(j, probe, 1e9, 1); /* explores nothing: only counts */
    if (st == MANTA_OK)
        st = mcl_tuner_exec(&r, err);
    if (st != MANTA_OK)
        return st;
    mcl_tuner_log g;
    snprintf(log, sizeof log, "%s/log.txt", probe);
    mcl_tuner_log_read(log, &g);
    for (size_t i = 0; i < g.n_found; i++)
        done->total += g.found[i];
    if (done->total == 0)
        return manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                             "%s found no valid configuration for '%s' (log: %s)",
                             base_name(j->program), j->info->name, log);
    double fraction = done->total > j->budget ? (double)done->total / (double)j->budget : 1.0;
    for (size_t i = 0; i < g.n_found; i++)
        done->expect += fraction == 1.0 ? g.found[i] : (size_t)((double)g.found[i] / fraction);
    if (j->start)
        j->start(j->ctx, done->expect, done->total);
    double start = manta_now();
    r = run_of(j, j->dir, fraction, j->runs);
    r.report_s = j->report_s;
    r.progress = j->progress;
    r.ctx = j->ctx;
    st = mcl_tuner_exec(&r, err);
    if (st == MANTA_OK)
        st = mcl_tuner_results(j->dir, j->kernel, j->info->name, j->max, out, count, err);
    snprintf(log, sizeof log, "%s/log.txt", j->dir);
    if (st == MANTA_OK && *count == 0)
        st = manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                           "%s wrote no result: no configuration ran correctly on '%s' (log: %s)",
                           base_name(j->program), j->info->name, log);
    if (st != MANTA_OK)
        return st;
    done->seconds = manta_now() - start;
    mcl_tuner_log_read(log, &g);
    const mcl_tune_kernel *best = &out[0];
    bool gemm = j->k > 0;
    done->best = gemm && best->time_ms > 0 ? 2.0 * (double)best->m * (double)best->n *
                                                 (double)best->k / (best->time_ms * 1e6)
                                           : g.best;
    snprintf(done->unit, sizeof done->unit, "%s", gemm ? "GFLOPS" : g.unit);
    return MANTA_OK;
}
