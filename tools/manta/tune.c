/* manta tune: run CLBlast's tuners (clblast-utils) for one device, keep the
 * best parameters in the device's tuning file in the cache folder (applied by
 * every later mcl_open), and compare SGEMM before and after at the GEMM
 * shapes of our convolutions. See docs/tuning.md. The methods are in the
 * library: running the tuners (cl/tuner.h), timing SGEMM (cl/tune_time.h) and
 * the choice (cl/tune.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cl/tune.h"
#include "cl/tune_time.h"
#include "cl/tuner.h"
#include "cmd.h"
#include "common/opts.h"
#include "core/env.h"
#include "core/fileio.h"

/* ---- what is tuned ---------------------------------------------------------------- */

typedef struct tuner_spec {
    const char *program;
    const char *kernel; /* CLBlast kernel it tunes */
    int gemm;           /* takes -k */
    size_t m, n, k;     /* problem size given to the tuner */
    int full_only;      /* skipped with --quick */
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
    {"clblast_tuner_copy_fast", "Copy", 0, 512, 512, 0, 1}, /* square only */
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
static const mcl_tune_shape shapes[] = {
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

/* Tuned candidates per GEMM kernel. */
#define MAX_CAND MCL_TUNE_MAX_CANDIDATES

typedef struct tune_opts {
    const char *device;
    bool quick, json, compare, seconds_set;
    int configs;    /* per GEMM tuner; 0: default */
    double seconds; /* per shape and measurement */
} tune_opts;

typedef struct tune_ctx {
    tune_opts o;
    FILE *out; /* progress lines: stdout, or stderr with --json */
    mcl_dev *d;
    const mcl_device_info *info;
    mcl_tune_timing timing;
    uint64_t mnk[N_SHAPES];
    char tuner_dir[1024];
    char work[1200];
    size_t t_def; /* CLBlast's own kernel-selection threshold (0: unknown) */
    double t0;
} tune_ctx;

/* ---- running the tuners ---------------------------------------------------------------- */

/* The folder holding the tuners in c->tuner_dir, or false with a one-line error printed. */
static bool find_tuners(tune_ctx *c)
{
    const char *names[N_TUNERS];
    for (size_t i = 0; i < N_TUNERS; i++)
        names[i] = tuners[i].program;
    const char *env = manta_env_get(MANTA_ENV_CLBLAST_TUNERS);
    manta_err err;
    manta_err_clear(&err);
    manta_status st = mcl_tuner_find(env && *env ? env : getenv("PATH"), names, N_TUNERS,
                                     c->tuner_dir, sizeof c->tuner_dir, &err);
    if (st == MANTA_ERR_UNSUPPORTED && env && *env)
        fprintf(stderr, "manta tune: MANTA_CLBLAST_TUNERS='%s' holds no %s\n", env, names[0]);
    else if (st != MANTA_OK)
        fprintf(stderr, "manta tune: %s\n", err.msg);
    return st == MANTA_OK;
}

/* Progress of one tuner: where it is and what it runs. */
typedef struct tuner_report {
    tune_ctx *c;
    const tuner_spec *t;
    size_t pos, n_run; /* its place among the tuners run */
    size_t expect;     /* configurations of its sample */
} tuner_report;

static void tuner_start(void *ctx, size_t expect, size_t total)
{
    tuner_report *r = ctx;
    const tuner_spec *t = r->t;
    FILE *out = r->c->out;
    r->expect = expect;
    if (t->gemm)
        fprintf(out, "[%zu/%zu] %s: %s, %zu of %zu configurations (m=%zu n=%zu k=%zu)\n",
                r->pos + 1, r->n_run, t->kernel, t->program, expect, total, t->m, t->n, t->k);
    else
        fprintf(out, "[%zu/%zu] %s: %s, %zu of %zu configurations (%zux%zu)\n", r->pos + 1,
                r->n_run, t->kernel, t->program, expect, total, t->m, t->n);
    fflush(out);
}

static void tuner_progress(void *ctx, const mcl_tuner_log *g, double elapsed_s)
{
    const tuner_report *r = ctx;
    fprintf(r->c->out, "      %zu/%zu configurations, best %.1f %s, %.0f s\n", g->done, r->expect,
            g->best, g->unit, elapsed_s);
    fflush(r->c->out);
}

/* Tune one kernel (mcl_tuner_tune()): up to @p max candidates in
 * cand[0 .. *n_cand-1]. */
static int tune_kernel(tune_ctx *c, const tuner_spec *t, size_t pos, size_t n_run, size_t max,
                       mcl_tune_kernel *cand, size_t *n_cand)
{
    char prog[1200], dir[1300];
    snprintf(prog, sizeof prog, "%s/%s", c->tuner_dir, t->program);
    snprintf(dir, sizeof dir, "%s/%s", c->work, t->program + strlen("clblast_tuner_"));
    size_t budget = c->o.configs ? (size_t)c->o.configs : (c->o.quick ? 12 : 30);
    tuner_report report = {c, t, pos, n_run, 0};
    mcl_tuner_job j = {.program = prog,
                       .kernel = t->kernel,
                       .dir = dir,
                       .info = c->info,
                       .m = t->m,
                       .n = t->n,
                       .k = t->gemm ? t->k : 0,
                       .budget = t->gemm          ? budget
                                 : budget / 3 < 6 ? 6
                                                  : budget / 3,
                       .runs = c->o.quick ? 1 : 2,
                       .max = max,
                       .limit_s = TUNER_LIMIT_S,
                       .report_s = 15,
                       .start = tuner_start,
                       .progress = tuner_progress,
                       .ctx = &report};
    mcl_tuner_done done;
    manta_err err;
    manta_err_clear(&err);
    if (mcl_tuner_tune(&j, cand, n_cand, &done, &err) != MANTA_OK) {
        fprintf(stderr, "manta tune: %s\n", err.msg);
        return 1;
    }
    fprintf(c->out, "      done in %.0f s: best %.1f %s (%s)\n", done.seconds, done.best, done.unit,
            cand[0].family);
    fflush(c->out);
    return 0;
}

/* Every tuner (other processes: this one still runs CLBlast's defaults): the
 * direct and indirect candidates, and the helpers. */
static int run_tuners(tune_ctx *c, mcl_tune_found *f)
{
    size_t n_run = 0;
    for (size_t i = 0; i < N_TUNERS; i++)
        n_run += !(c->o.quick && tuners[i].full_only);
    for (size_t i = 0, j = 0; i < N_TUNERS; i++) {
        const tuner_spec *t = &tuners[i];
        if (c->o.quick && t->full_only)
            continue;
        bool direct = !strcmp(t->kernel, "XgemmDirect"), indirect = !strcmp(t->kernel, "Xgemm");
        mcl_tune_kernel cand[MAX_CAND];
        size_t n = 0, max = direct || indirect ? (c->o.quick ? 1 : 2) : 1;
        if (tune_kernel(c, t, j++, n_run, max, cand, &n))
            return 1; /* the work folder stays for its logs */
        for (size_t k = 0; k < n; k++) {
            mcl_tune_option *o = direct     ? &f->direct[f->n_direct++]
                                 : indirect ? &f->indirect[f->n_indirect++]
                                            : NULL;
            if (o) {
                o->tuned = true;
                o->k = cand[k];
            } else {
                mcl_tune_set_put(&f->helpers, &cand[k], NULL);
            }
        }
    }
    return 0;
}

/* ---- timing SGEMM ------------------------------------------------------------------ */

static void timing_report(void *ctx, const mcl_tune_event *e)
{
    FILE *out = ((tune_ctx *)ctx)->out;
    if (e->kind == MCL_TUNE_TIMING)
        fprintf(out, "timing SGEMM at %zu shapes, %s: %zu parameter sets, %d interleaved rounds\n",
                N_SHAPES, e->label, e->n_sets, MCL_TUNE_ROUNDS);
    else if (e->kind == MCL_TUNE_SET_READY)
        fprintf(out, "      set %zu/%zu compiled and calibrated in %.0f s\n", e->set + 1, e->n_sets,
                e->seconds);
    else
        fprintf(out, "      time budget of %.0f s spent: %zu of %zu sets skipped\n", e->seconds,
                e->n_sets - e->set, e->n_sets);
    fflush(out);
}

static manta_status time_all(tune_ctx *c, const char *label, double *gflops)
{
    fprintf(c->out, "timing SGEMM at %zu shapes: %s\n", N_SHAPES, label);
    fflush(c->out);
    return mcl_tune_time_current(c->d, &c->timing, gflops);
}

/* ---- output ---------------------------------------------------------------------------- */

static void json_params(const mcl_tune_kernel *k)
{
    printf("{");
    for (size_t j = 0; j < k->count; j++)
        printf("%s\"%s\":%zu", j ? "," : "", k->names[j], k->values[j]);
    printf("}");
}

static void json_options(const char *name, const mcl_tune_option *o, size_t n, size_t chosen)
{
    printf(",\"%s\":[", name);
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"tuned\":%s,\"helpers\":%s", i ? "," : "", o[i].tuned ? "true" : "false",
               o[i].helpers ? "true" : "false");
        if (o[i].tuned) {
            printf(",\"family\":\"%s\",\"tuner_time_ms\":%.4g,\"parameters\":", o[i].k.family,
                   o[i].k.time_ms);
            json_params(&o[i].k);
        }
        printf(",\"chosen\":%s,\"gflops\":[", i == chosen ? "true" : "false");
        for (size_t s = 0; s < N_SHAPES; s++)
            printf("%s%.3f", s ? "," : "", o[i].gflops[s]);
        printf("]}");
    }
    printf("]");
}

/* What is printed at the end: the stored file, and GFLOP/s per shape before
 * and after; from a tuning run (f and ch not NULL) also every option measured. */
typedef struct tune_result {
    const char *path;
    const mcl_tune_set *set;
    const double *before, *after;
    const mcl_tune_found *f;
    const mcl_tune_choice *ch;
    mcl_tune_key key;
    const mcl_tune_kernel *gr; /* the set's kernel-selection threshold, or NULL */
} tune_result;

static void print_json(const tune_ctx *c, const tune_result *r)
{
    const mcl_device_info *di = c->info;
    const mcl_tune_set *set = r->set;
    printf("{");
    cmd_json_provenance(stdout, c->d);
    printf(",\"platform\":");
    cmd_json_str(stdout, di->platform_name);
    printf(",\"clblast\":\"%s\",\"file\":", r->key.clblast);
    cmd_json_str(stdout, r->path);
    printf(",\"mode\":\"%s\",\"seconds\":%.1f",
           c->o.compare ? "compare"
           : c->o.quick ? "quick"
                        : "full",
           cmd_now() - c->t0);
    if (r->gr)
        printf(",\"min_indirect_size\":%zu", r->gr->values[0]);
    if (c->t_def)
        printf(",\"default_min_indirect_size\":%zu", c->t_def);
    printf(",\"kernels\":[");
    for (size_t i = 0; i < set->count; i++) {
        const mcl_tune_kernel *k = &set->k[i];
        printf("%s{\"kernel\":\"%s\",\"family\":\"%s\",\"parameters\":", i ? "," : "", k->kernel,
               k->family);
        json_params(k);
        printf("}");
    }
    printf("],\"shapes\":[");
    for (size_t i = 0; i < N_SHAPES; i++) {
        const mcl_tune_shape *s = &shapes[i];
        printf("%s{\"m\":%zu,\"n\":%zu,\"k\":%zu,\"batch\":%zu,\"trans_a\":%s,\"trans_b\":%s,"
               "\"what\":\"%s\",\"before_gflops\":%.3f,\"after_gflops\":%.3f",
               i ? "," : "", s->m, s->n, s->k, s->batch, s->ta ? "true" : "false",
               s->tb ? "true" : "false", s->what, r->before[i], r->after[i]);
        if (r->ch)
            printf(",\"kernel\":\"%s\"", r->ch->runs_direct[i] ? "direct" : "indirect");
        printf("}");
    }
    printf("]");
    if (r->ch) {
        json_options("direct_options", r->f->direct, r->f->n_direct, r->ch->direct);
        json_options("indirect_options", r->f->indirect, r->f->n_indirect, r->ch->indirect);
    }
    printf("}\n");
}

/* The tuned option shown in the table: the chosen one, else the best. */
static size_t shown(const double *before, const mcl_tune_option *o, size_t n, size_t chosen)
{
    return chosen > 0 || n < 2 ? chosen : mcl_tune_fastest(before, N_SHAPES, o, 1, n);
}

static void print_table(const tune_ctx *c, const tune_result *r)
{
    const mcl_device_info *di = c->info;
    const mcl_tune_set *set = r->set;
    const mcl_tune_found *f = r->f;
    const mcl_tune_choice *ch = r->ch;
    const double *before = r->before, *after = r->after;
    printf("\ndevice: %s (%s, driver %s), CLBlast %s\n", di->name, di->platform_name,
           di->driver_version, r->key.clblast);
    printf("tuning file: %s\n  tuned:", r->path);
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->k[i].kernel, "GemmRoutine") != 0)
            printf(" %s (%s)", set->k[i].kernel, set->k[i].family);
    if (r->gr)
        printf(" kernel selection (direct GEMM kernel below %zu^3 multiply-adds", r->gr->values[0]);
    if (r->gr && c->t_def)
        printf("; CLBlast's default: %zu^3", c->t_def);
    if (r->gr)
        printf(")");
    printf("\nSGEMM GFLOP/s, median of 5 timed windows%s; before: CLBlast defaults\n",
           ch ? " (rounds interleaved across parameter sets)" : "");
    size_t sd = ch ? shown(before, f->direct, f->n_direct, ch->direct) : 0;
    size_t si = ch ? shown(before, f->indirect, f->n_indirect, ch->indirect) : 0;
    if (ch)
        printf("  %-28s %8s %8s %8s %8s %8s %8s %8s\n", "shape (row-major)", "before", "dir-def",
               "dir-tun", "ind-def", "ind-tun", "after", "speed-up");
    else
        printf("  %-28s %8s %8s %8s\n", "shape (row-major)", "before", "after", "speed-up");
    double lb = 0, la = 0;
    for (size_t i = 0; i < N_SHAPES; i++) {
        const mcl_tune_shape *s = &shapes[i];
        char shape[64];
        int w = snprintf(shape, sizeof shape, "m=%zu n=%zu k=%zu", s->m, s->n, s->k);
        if (s->batch > 1)
            snprintf(shape + w, sizeof shape - (size_t)w, " x%zu", s->batch);
        else if (s->ta || s->tb)
            snprintf(shape + w, sizeof shape - (size_t)w, " %s%s", s->ta ? "A^T" : "",
                     s->tb ? "B^T" : "");
        printf("  %-28s %8.2f", shape, before[i]);
        if (ch)
            printf(" %8.2f %8.2f %8.2f %8.2f", f->direct[0].gflops[i], f->direct[sd].gflops[i],
                   f->indirect[0].gflops[i], f->indirect[si].gflops[i]);
        printf(" %8.2f %7.2fx\n", after[i], after[i] / before[i]);
        lb += log(before[i]);
        la += log(after[i]);
    }
    printf("  %-28s %8.2f", "geometric mean", exp(lb / N_SHAPES));
    if (ch)
        printf(" %8s %8s %8s %8s", "", "", "", "");
    printf(" %8.2f %7.2fx\n", exp(la / N_SHAPES), exp((la - lb) / N_SHAPES));
    if (ch)
        printf(
            "  dir/ind: direct/indirect kernel only, with CLBlast's (def) or the best tuned (tun)\n"
            "  parameters; before and after pick from these columns by kernel selection (re-time\n"
            "  the stored file against CLBlast's defaults in a fresh process: --compare)\n");
    printf("total time: %.0f s\n", cmd_now() - c->t0);
}

static void print_result(const tune_ctx *c, const char *path, const mcl_tune_set *set,
                         const double *before, const double *after, const mcl_tune_found *f,
                         const mcl_tune_choice *ch)
{
    tune_result r = {.path = path,
                     .set = set,
                     .before = before,
                     .after = after,
                     .f = f,
                     .ch = ch,
                     .gr = mcl_tune_set_find(set, "GemmRoutine")};
    mcl_tune_key_of(c->info, &r.key);
    if (c->o.json)
        print_json(c, &r);
    else
        print_table(c, &r);
}

/* ---- the command ------------------------------------------------------------------------- */

/* --compare: CLBlast's defaults against the stored file, in this process. */
static int run_compare(tune_ctx *c, const char *path, const mcl_tune_set *set)
{
    double before[N_SHAPES], after[N_SHAPES];
    manta_status st = mcl_sgemm_direct_limit(c->d, &c->t_def);
    if (st == MANTA_OK)
        st = time_all(c, "CLBlast defaults", before);
    if (st == MANTA_OK)
        st = mcl_tune_apply(c->info->id, set, mcl_err(c->d));
    if (st == MANTA_OK)
        st = time_all(c, "tuned", after);
    if (st != MANTA_OK) {
        cmd_error("tune: timing SGEMM", st, mcl_err(c->d));
        return 1;
    }
    print_result(c, path, set, before, after, NULL, NULL);
    return 0;
}

/* Tune: the tuners, the timings (mcl_tune_measure()), the choice, the file. */
static int run_tuning(tune_ctx *c, const char *path, const mcl_tune_key *key)
{
    mcl_tune_found *f = calloc(1, sizeof *f);
    mcl_tune_set *sets = malloc(2 * sizeof *sets);
    if (!f || !sets) {
        fprintf(stderr, "manta tune: out of memory\n");
        free(f);
        free(sets);
        return 1;
    }
    mcl_tune_set *keep = &sets[0], *set = &sets[1]; /* chosen; as read back */
    f->n_direct = f->n_indirect = 1;                /* option 0: CLBlast's parameters */
    int rc = 1;
    snprintf(c->work, sizeof c->work, "%s/clblast-tune-XXXXXX", mcl_cache_dir(c->d));
    if (!mkdtemp(c->work)) {
        fprintf(stderr, "manta tune: cannot create a folder in '%s': %s\n", mcl_cache_dir(c->d),
                strerror(errno));
        goto out;
    }
    if (run_tuners(c, f))
        goto out;
    manta_status st = mcl_tune_measure(c->d, &c->timing, c->o.quick ? 0 : 240, f);
    c->t_def = f->t_default;
    if (st != MANTA_OK) {
        cmd_error("tune: timing SGEMM", st, mcl_err(c->d));
        goto out;
    }
    mcl_tune_choice ch;
    manta_err err;
    manta_err_clear(&err);
    st = mcl_tune_choose(c->mnk, f->before, N_SHAPES, c->t_def, f->direct, f->n_direct, f->indirect,
                         f->n_indirect, &ch, &err);
    if (st == MANTA_OK)
        st = mcl_tune_choice_set(&ch, f->direct, f->indirect, &f->helpers, keep, &err);
    char note[256], date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(note, sizeof note, "manta tune%s, %s", c->o.quick ? " --quick" : "", date);
    if (st == MANTA_OK)
        st = mcl_tune_save(path, key, keep, note, &err);
    if (st == MANTA_OK)
        st = mcl_tune_load(path, key, set, &err); /* what later runs will apply */
    if (st != MANTA_OK) {
        cmd_error("tune", st, &err);
        goto out;
    }
    manta_file_remove_tree(c->work);
    /* "after" comes from the measurements of the chosen kernels: this process
     * cannot undo overrides it no longer wants ('manta tune --compare' times
     * the stored file in a fresh process) */
    print_result(c, path, set, f->before, ch.gflops, f, &ch);
    rc = 0;
out:
    free(f);
    free(sets);
    return rc;
}

int cmd_tune(int argc, char **argv)
{
    tune_ctx c;
    memset(&c, 0, sizeof c);
    const opt_def defs[] = {
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &c.o.device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "quick",
         .kind = OPT_FLAG,
         .dest = &c.o.quick,
         .help = "smaller search, GEMM kernels only (about a minute when idle)"},
        {.name = "configs",
         .kind = OPT_INT,
         .dest = &c.o.configs,
         .lo = 1,
         .hi = 100000,
         .metavar = "N",
         .help = "configurations tried per GEMM kernel (default 30; quick 12)"},
        {.name = "seconds",
         .kind = OPT_DOUBLE,
         .dest = &c.o.seconds,
         .lo = 0.001,
         .hi = 60,
         .metavar = "S",
         .seen = &c.o.seconds_set,
         .help = "timing per GEMM shape and measurement (default 0.5; quick 0.25)"},
        {.name = "compare",
         .kind = OPT_FLAG,
         .dest = &c.o.compare,
         .help = "tune nothing: time CLBlast defaults against the stored file"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &c.o.json,
         .help = "one JSON document on stdout (progress goes to stderr)"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta tune",
        "[--device SPEC] [--quick] [--configs N] [--seconds S] [--json]\n"
        "       manta tune --compare [--device SPEC] [--json]",
        "Tunes CLBlast's SGEMM for one device. Runs CLBlast's tuners (Debian package\n"
        "clblast-utils) on a random sample of each search space: the direct and the\n"
        "indirect GEMM kernel and the indirect kernel's copy, pad and transpose helpers\n"
        "(single precision). Then times the best candidates at the GEMM shapes of our\n"
        "convolutions, keeps tuned parameters where they beat CLBlast's, picks the size\n"
        "where GEMM switches from the direct to the indirect kernel, and stores the\n"
        "result in the device's tuning file in the cache folder (MANTA_CACHE_DIR). Every\n"
        "later run applies it when it opens the device. Prints SGEMM GFLOP/s before\n"
        "(CLBlast's defaults) and after. Takes a few minutes.\n\n"
        "Environment: MANTA_CLBLAST_TUNERS (folder of the clblast_tuner_* programs;\n"
        "default: PATH), MANTA_NO_TUNING=1 (runs ignore the tuning file).\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!c.o.seconds_set)
        c.o.seconds = c.o.quick ? 0.25 : 0.5;
    c.out = c.o.json ? stderr : stdout;
    c.t0 = cmd_now();
    c.timing = (mcl_tune_timing){.shapes = shapes,
                                 .n_shapes = N_SHAPES,
                                 .seconds = c.o.seconds,
                                 .report = timing_report,
                                 .ctx = &c};
    for (size_t i = 0; i < N_SHAPES; i++)
        c.mnk[i] = mcl_tune_shape_mnk(&shapes[i]);
    if (!c.o.compare && !find_tuners(&c))
        return 1;
    mcl_options untuned = {.no_tuning = true}; /* "before" is CLBlast's defaults */
    c.d = cmd_open_device_with("tune", c.o.device, &untuned);
    if (!c.d)
        return 1;
    c.info = mcl_info(c.d);
    int rc = 1;
    char path[1200];
    mcl_tune_key key;
    mcl_tune_key_of(c.info, &key);
    manta_err err;
    manta_err_clear(&err);
    mcl_tune_set *set = calloc(1, sizeof *set);
    manta_status st = set ? mcl_tune_path(mcl_cache_dir(c.d), &key, path, sizeof path, &err)
                          : manta_err_set(&err, MANTA_ERR_NO_MEMORY, "out of memory");
    if (st == MANTA_OK && c.o.compare)
        st = mcl_tune_load(path, &key, set, &err);
    if (st != MANTA_OK) {
        if (c.o.compare && st == MANTA_ERR_IO && access(path, F_OK) != 0)
            fprintf(stderr, "manta tune: '%s' is not tuned yet (no %s): run 'manta tune'\n",
                    c.info->name, path);
        else
            cmd_error("tune", st, &err);
        goto out;
    }
    fprintf(c.out, "device: %s (platform %u, device %u)\n", c.info->name, c.info->platform_index,
            c.info->device_index);
    rc = c.o.compare ? run_compare(&c, path, set) : run_tuning(&c, path, &key);
out:
    free(set);
    mcl_close(c.d);
    return rc;
}
