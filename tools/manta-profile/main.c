/* manta-profile: the board's latency table, measured in the inference engine.
 *
 *   manta-profile [--space S] [--out LUT.json] [options]       profile every layer key
 *   manta-profile --validate K [--lut LUT.json] [options]      predicted against measured
 *
 * The methods are the library's (runtime/profile/measure.h: in-network
 * profiling, the fixed overhead, validation, one sub-network; timing.h: the
 * clocks and the timed runs; summary.h: the space, the sub-network, the
 * table's metadata, progress lines and the results as JSON); this program
 * reads the options, shows progress and prints the results. The thread
 * stays on one CPU (--no-pin to let it move).
 *
 * Linked with the engine, the exporter, the space and profile code, cJSON and
 * libm: no OpenCL. Exit status: 0 success, 1 failure (one line on stderr),
 * 2 usage; --validate with --check exits 3 when the agreement misses its targets. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "common/provenance.h"
#include "core/strbuf.h"
#include "profile/latency_table.h"
#include "profile/measure.h"
#include "profile/summary.h"
#include "profile/timing.h"
#include "profile/validate.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

#ifndef MANTA_ENGINE_FLAGS
#define MANTA_ENGINE_FLAGS "?"
#endif

#if defined(__clang__)
#define COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define COMPILER "gcc " __VERSION__
#else
#define COMPILER "cc"
#endif

typedef struct opts {
    const char *space, *out, *lut, *name, *csv, *arch, *layers_csv, *device, *method, *clock;
    int validate, calib, passes, cover;
    long seed, min_time_ms;
    bool json, quiet, list, check, force, no_pin, version, int8;
    pt_opts t;
    const stereo_space *stereo; /* the space when --space names a stereo one, else NULL */
} opts;

static const char *const METHODS[] = {"net", "layer", NULL};
static const char *const CLOCKS[] = {"wall", "cpu", NULL};

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.space = "cpu-default",
                .out = "latency_table.json",
                .method = "net",
                .clock = "wall",
                .calib = 10,
                .passes = 5,
                .cover = 3,
                .seed = 1,
                .min_time_ms = 150,
                .t = {.warmup = 2, .warmup_s = 0.002, .min_runs = 15, .max_runs = 100000}};
    const opt_def defs[] = {
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &o->space,
         .metavar = "S",
         .help = "spec file (models/*.json) or built-in name (default cpu-default; "
                 "stereo-cpu, stereo-gpu or a stereo spec: the stereo table)"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o->out,
         .metavar = "FILE",
         .help = "table to write (default latency_table.json)"},
        {.name = "lut",
         .kind = OPT_STRING,
         .dest = &o->lut,
         .metavar = "FILE",
         .help = "with --validate or --arch: table to check (default: profile first)"},
        {.name = "name",
         .kind = OPT_STRING,
         .dest = &o->name,
         .metavar = "NAME",
         .help = "device name stored in the table (default: the host name)"},
        {.name = "method",
         .kind = OPT_STRING,
         .dest = &o->method,
         .metavar = "M",
         .help = "net: layers inside whole sub-networks (default); layer: each alone",
         .choices = METHODS},
        {.name = "cover",
         .kind = OPT_INT,
         .dest = &o->cover,
         .lo = 1,
         .hi = 1000,
         .metavar = "C",
         .help = "with --method net: sub-networks per key, at least (default 3)"},
        {.name = "layers-csv",
         .kind = OPT_STRING,
         .dest = &o->layers_csv,
         .metavar = "F",
         .help = "with --method net: each layer's time in each sub-network"},
        {.name = "calib",
         .kind = OPT_INT,
         .dest = &o->calib,
         .lo = 0,
         .hi = 100000,
         .metavar = "N",
         .help = "sub-networks for the overhead (default 10; 0: overhead 0)"},
        {.name = "passes",
         .kind = OPT_INT,
         .dest = &o->passes,
         .lo = 1,
         .hi = 1000,
         .metavar = "P",
         .help = "rounds over all models, each in a new random order (default 5)"},
        {.name = "min-time-ms",
         .kind = OPT_LONG,
         .dest = &o->min_time_ms,
         .lo = 0,
         .hi = 1e9,
         .metavar = "T",
         .help = "timed time per layer or network, at least (default 150; 0: no minimum)"},
        {.name = "runs",
         .kind = OPT_INT,
         .dest = &o->t.min_runs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "timed runs per layer or network, at least (default 15)"},
        {.name = "max-runs",
         .kind = OPT_INT,
         .dest = &o->t.max_runs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "timed runs per layer or network, at most (default 100000)"},
        {.name = "warmup",
         .kind = OPT_INT,
         .dest = &o->t.warmup,
         .lo = 0,
         .hi = 1e7,
         .metavar = "N",
         .help = "untimed runs before each round's timing (default 2; 0: only the 2 ms)"},
        {.name = "clock",
         .kind = OPT_STRING,
         .dest = &o->clock,
         .metavar = "wall|cpu",
         .help = "wall clock (default) or the thread's CPU time",
         .choices = CLOCKS},
        {.name = "no-pin",
         .kind = OPT_FLAG,
         .dest = &o->no_pin,
         .help = "let the thread move between CPUs (default: kept on one)"},
        {.name = "validate",
         .kind = OPT_INT,
         .dest = &o->validate,
         .lo = 2,
         .hi = 100000,
         .metavar = "K",
         .help = "time K random sub-networks against the table's prediction"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &o->seed,
         .lo = 0,
         .hi = 1e9,
         .metavar = "N",
         .help = "seed of the sub-networks --validate draws (default 1)"},
        {.name = "csv",
         .kind = OPT_STRING,
         .dest = &o->csv,
         .metavar = "FILE",
         .help = "with --validate: predicted and measured ms (p10, median), arch"},
        {.name = "check",
         .kind = OPT_FLAG,
         .dest = &o->check,
         .help = "with --validate: exit 3 unless >= 95% within +-10% and tau >= 0.9"},
        {.name = "arch",
         .kind = OPT_STRING,
         .dest = &o->arch,
         .metavar = "ARCH",
         .help = "with --lut: one sub-network's predicted and measured latency"},
        {.name = "int8",
         .kind = OPT_FLAG,
         .dest = &o->int8,
         .help = "the int8 table: each model quantized as 'manta export --int8' does"},
        {.name = "force",
         .kind = OPT_FLAG,
         .dest = &o->force,
         .help = "measure against a table from another CPU (refused otherwise)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o->device,
         .metavar = "cpu",
         .help = "the engine on this CPU (the only device of this program)"},
        {.name = "list",
         .kind = OPT_FLAG,
         .dest = &o->list,
         .help = "print the layer keys and exit"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "results as one JSON document"},
        {.name = "version",
         .kind = OPT_FLAG,
         .dest = &o->version,
         .help = "the version and the git revision it was built from"},
        {.name = "quiet", .kind = OPT_FLAG, .dest = &o->quiet, .help = "no progress bar"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta-profile",
        "[--space S] [--out LUT.json] [--name NAME] [timing options]\n"
        "       manta-profile --validate K [--lut LUT.json] [--seed N] [--csv FILE] [--check]\n"
        "       manta-profile --int8 ...   (the same for the int8 models)\n"
        "       manta-profile --arch ARCH --lut LUT.json [--json]\n"
        "       manta-profile --list [--space S]",
        "Measures the latency of every layer the search space can produce (OFA's layer\n"
        "keys, at every resolution: stem, blocks, head, pool, classifier) in the\n"
        "inference engine on this CPU, one thread, and writes the latency table (JSON:\n"
        "lower decile, median, mean, variance and count per key; device, CPU, compiler\n"
        "flags, date). A stereo space (stereo-cpu, stereo-gpu or a stereo spec) gets\n"
        "the stereo table: its encoder blocks on both views, the correlation, redirect,\n"
        "transposed convolutions, resizes, concatenations and decoder convolutions at\n"
        "the space's crop (docs/stereo.md, \"Latency table\").\n"
        "Each layer is timed inside random sub-networks that together hold every key\n"
        "--cover times; its entry is the lower decile (p10) of its in-network times. The\n"
        "fixed per-inference overhead is measured on --calib random sub-networks run\n"
        "end to end. --validate K times K random sub-networks end to end (the lower\n"
        "decile of their runs) and compares them with the table's prediction (sum of\n"
        "layers + overhead): mean and largest absolute % error, share within +-10%,\n"
        "Kendall's tau, RMSE.\n\n"
        "Every model is visited in --passes rounds, each in a new random order, and\n"
        "timed a share of --runs and --min-time-ms in every round, so that changes of\n"
        "the machine's load touch all alike. --clock cpu times the thread's CPU time\n"
        "(for a machine shared with other work: excludes time the thread is not run).\n"
        "--arch ARCH is a file or JSON in OFA's encoding, or max / min: its predicted\n"
        "and measured latency, arena and file size. --device takes only cpu: profile an\n"
        "OpenCL device with 'manta profile --device SPEC'.\n"
        "--int8 does all of this for the int8 models (calibrated min/max on synthetic\n"
        "inputs, written as 'manta export --int8' writes them): the table says \"dtype\":\n"
        "\"int8\", and only an int8 table is accepted with --int8 (a float32 one without).\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (o->version) {
        tool_print_version(stdout, "manta-profile");
        return 0;
    }
    o->t.min_time_s = (double)o->min_time_ms / 1e3;
    o->t.clock = !strcmp(o->clock, "cpu") ? PT_CPU : PT_WALL;
    if (o->t.max_runs < o->t.min_runs)
        o->t.max_runs = o->t.min_runs;
    if (o->device && strcmp(o->device, "cpu") != 0) {
        fprintf(stderr,
                "manta-profile: --device %s: this program times the inference engine on this "
                "CPU only; profile an OpenCL device with the host program: 'manta profile "
                "--device SPEC'\n",
                o->device);
        return 2;
    }
    if ((o->csv || o->check) && !o->validate) {
        fprintf(stderr, "manta-profile: --csv and --check go with --validate K\n");
        return 2;
    }
    if (o->layers_csv && strcmp(o->method, "net") != 0) {
        fprintf(stderr, "manta-profile: --layers-csv goes with --method net\n");
        return 2;
    }
    if (o->arch && (o->validate || !o->lut)) {
        fprintf(stderr,
                "manta-profile: --arch ARCH goes with --lut LUT.json (and not --validate)\n");
        return 2;
    }
    /* every file written, checked before the work: the table when it is profiled (run()) */
    const bool profiles = !((o->validate || o->arch) && o->lut);
    if ((profiles && !out_check_file("manta-profile", "out", o->out)) ||
        (o->csv && !out_check_file("manta-profile", "csv", o->csv)) ||
        (o->layers_csv && !out_check_file("manta-profile", "layers-csv", o->layers_csv)))
        return 2;
    return 1;
}

/* ---- progress ------------------------------------------------------------------------ */

typedef struct progress {
    bool on, tty;
    double t0;
    int last_pct;
    const char *what;
} progress;

/* A measurement's progress, as lat_measure_opts.progress: a bar on a terminal, else a line
 * every 10 %. */
static void progress_show(void *ctx, size_t done, size_t total, const char *item)
{
    progress *p = ctx;
    if (!p->on || total == 0)
        return;
    char line[256];
    int pct = prof_progress_line(line, sizeof line, p->what, done, total, pt_now(PT_WALL) - p->t0,
                                 item, p->tty);
    if (p->tty)
        fprintf(stderr, "\r%s\033[K%s", line, done == total ? "\n" : "");
    else if (pct / 10 != p->last_pct / 10 || done == total) {
        fprintf(stderr, "%s\n", line);
        p->last_pct = pct;
    }
    fflush(stderr);
}

/* Measurement options of @p o, with progress into @p p (labelled @p what) unless quiet. */
static lat_measure_opts measure_opts(const opts *o, progress *p, bool show, const char *what)
{
    *p = (progress){show && !o->quiet, isatty(fileno(stderr)), pt_now(PT_WALL), -1, what};
    return (lat_measure_opts){o->t, o->passes, progress_show, p, o->int8};
}

/* ---- the table ------------------------------------------------------------------------- */

/* Profile every key of the space into @p t and save it to o->out. */
static int profile(const opts *o, const ofa_space *sp, lat_table *t, lat_profile_report *rep,
                   double *seconds)
{
    manta_err err;
    manta_err_clear(&err);
    progress p;
    manta_strbuf csv = {0};
    const lat_profile_opts po = {!strcmp(o->method, "net") ? LAT_METHOD_NET : LAT_METHOD_LAYER,
                                 o->cover, o->calib, measure_opts(o, &p, true, "profiling"),
                                 o->layers_csv ? &csv : NULL};
    manta_status s =
        o->stereo ? lat_table_init_stereo(t, o->stereo, &err) : lat_table_init(t, sp, &err);
    char flags[LAT_META_MAX];
    snprintf(flags, sizeof flags, "%.100s; engine: %.120s", COMPILER, MANTA_ENGINE_FLAGS);
    if (s == MANTA_OK)
        s = lat_table_name(t, o->name, o->t.clock, flags, &err);
    t->dtype = o->int8 ? LAT_DTYPE_INT8 : LAT_DTYPE_F32;
    const double t0 = pt_now(PT_WALL);
    if (s == MANTA_OK)
        s = lat_profile(sp, &po, t, rep, &err);
    *seconds = pt_now(PT_WALL) - t0;
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        manta_strbuf_free(&csv);
        return 1;
    }
    s = o->layers_csv ? prof_write_text(o->layers_csv, &csv, &err) : MANTA_OK;
    manta_strbuf_free(&csv);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    if (po.method == LAT_METHOD_NET && rep->calib > 0 && !o->quiet)
        fprintf(stderr,
                "manta-profile: %zu sub-networks cover the %zu keys %d times or more; "
                "end to end minus the sum of layers: median %+.4f ms over %zu networks; "
                "clock reading %.5f ms\n",
                rep->networks, rep->keys, o->cover, rep->overhead_median_ms, rep->calib,
                rep->clock_ms);
    if (po.method == LAT_METHOD_LAYER && rep->calib > 0 && rep->overhead_median_ms < 0 && !o->quiet)
        fprintf(stderr,
                "manta-profile: note: end-to-end runs were %.4f ms faster than the sum of "
                "their layers (median of %zu); overhead set to 0\n",
                -rep->overhead_median_ms, rep->calib);
    if ((s = lat_table_save(t, o->out, &err)) != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    return 0;
}

/* Load o->lut, complete and measured on this CPU (unless --force). */
static int load_table(const opts *o, const ofa_space *sp, lat_table *t)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status s = lat_table_load_complete(o->lut, sp, o->stereo,
                                             o->int8 ? LAT_DTYPE_INT8 : LAT_DTYPE_F32, t, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    if (!o->force && (s = lat_table_check_host(t, o->lut, &err)) != MANTA_OK) {
        fprintf(stderr,
                "manta-profile: %s. Measure against a table of this device (--force compares "
                "anyway)\n",
                manta_err_msg(&err, s));
        return 1;
    }
    return 0;
}

/* Print the JSON document of members @p b (built with status @p s) and the version; free @p b. */
static int print_doc(manta_strbuf *b, manta_status s, manta_err *err)
{
    if (s == MANTA_OK)
        printf("{%s,", b->p);
    manta_strbuf_free(b);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(err, s));
        return 1;
    }
    tool_json_version(stdout);
    printf("}\n");
    return 0;
}

/* --arch: one sub-network's predicted and measured latency, arena and file size. */
static int one_arch(const opts *o, const ofa_space *sp, const lat_table *t)
{
    manta_err err;
    manta_err_clear(&err);
    ofa_arch a;
    const stereo_space *ss = o->stereo;
    manta_status s = lat_arch_resolve(sp, ss, o->arch, &a, &err);
    double pred = 0;
    if (s == MANTA_OK)
        s = lat_predict(t, &a, &pred, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s: %s\n", o->arch, manta_err_msg(&err, s));
        return 1;
    }
    progress p;
    const lat_measure_opts mo = measure_opts(o, &p, false, "measuring");
    lat_stats st;
    size_t arena = 0, file = 0;
    s = ss ? lat_measure_arch_stereo(ss, &a, &mo, &st, &arena, &file, &err)
           : lat_measure_arch(sp, &a, &mo, &st, &arena, &file, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    char enc[1024];
    if (ss)
        stereo_arch_to_json(ss, &a, enc, sizeof enc, NULL);
    else
        ofa_arch_to_json(sp, &a, enc, sizeof enc, NULL);
    if (o->json) {
        manta_strbuf b = {0};
        return print_doc(&b, lat_arch_json(&b, enc, pred, &st, arena, file, &err), &err);
    } else
        printf("%s: predicted %.4f ms, measured %.4f ms (lower decile of %ld, %s; median "
               "%.4f ms), error %+.1f%%; arena %.1f KiB, file %.1f KiB (%s, weights synthetic)\n",
               enc, pred, st.p10_ms, st.count, pt_clock_name(o->t.clock), st.median_ms,
               100 * (pred - st.p10_ms) / st.p10_ms, arena / 1024.0, file / 1024.0,
               lat_dtype_name(t->dtype));
    return 0;
}

/* --validate K against @p t, with --csv. */
static int validate(const opts *o, const ofa_space *sp, const lat_table *t, lat_agreement *ag,
                    double *seconds)
{
    manta_err err;
    manta_err_clear(&err);
    progress p;
    const lat_measure_opts mo = measure_opts(o, &p, true, "validating");
    manta_strbuf csv = {0};
    const double t0 = pt_now(PT_WALL);
    manta_status s = lat_validate(sp, t, (size_t)o->validate, (uint64_t)o->seed, &mo, ag,
                                  o->csv ? &csv : NULL, &err);
    *seconds = pt_now(PT_WALL) - t0;
    if (s == MANTA_OK && o->csv)
        s = prof_write_text(o->csv, &csv, &err);
    manta_strbuf_free(&csv);
    if (s != MANTA_OK)
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
    return s != MANTA_OK;
}

/* ---- results --------------------------------------------------------------------------- */

static void print_text(const opts *o, const ofa_space *sp, const lat_table *t, const lat_results *r)
{
    if (r->profiled)
        printf("%s: %zu layer keys of space '%s' in %.1f s (%s, %s); overhead %.4f ms "
               "(an empty invocation: %.4f ms; a clock reading: %.4f ms)\n",
               o->out, t->n, sp->name, r->profile_s,
               !strcmp(o->method, "net") ? "inside sub-networks" : "one-layer models",
               pt_clock_name(o->t.clock), t->overhead_ms, r->rep.empty_ms, r->rep.clock_ms);
    const lat_agreement *ag = &r->ag;
    if (o->validate)
        printf("validation on %zu random sub-networks (seed %ld, %.1f s): mean |error| "
               "%.2f%%, max %.2f%%, bias %+.2f%%, within +-10%%: %.1f%%, Kendall tau %.3f, "
               "RMSE %.4f ms\n",
               ag->n, o->seed, r->validate_s, ag->mean_abs_pct, ag->max_abs_pct, ag->mean_pct,
               100 * ag->within, ag->kendall_tau, ag->rmse);
}

/* --list: the layer keys of the space. */
static int list_keys(const opts *o, const ofa_space *sp)
{
    manta_err err;
    manta_err_clear(&err);
    lat_layer *keys = NULL;
    size_t n = 0;
    manta_status s = lat_enumerate_space(sp, o->stereo, &keys, &n, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        printf("%s\n", keys[i].key);
    fprintf(stderr, "%zu keys in space '%s'\n", n, sp->name);
    free(keys);
    return 0;
}

/* Profile or load the table, then --arch or --validate, and the results. */
static int run(const opts *o, const ofa_space *sp, lat_table *t)
{
    lat_results r = {.space = sp->name,
                     .clock = o->t.clock,
                     .table = o->lut,
                     .method = o->method,
                     .validated = o->validate > 0,
                     .seed = o->seed};
    if ((o->validate || o->arch) && o->lut) {
        if (load_table(o, sp, t) != 0)
            return 1;
        if (o->arch)
            return one_arch(o, sp, t);
    } else {
        if (profile(o, sp, t, &r.rep, &r.profile_s) != 0)
            return 1;
        r.profiled = true;
        r.table = o->out;
    }
    if (o->validate && validate(o, sp, t, &r.ag, &r.validate_s) != 0)
        return 1;
    manta_err err;
    manta_err_clear(&err);
    manta_strbuf b = {0};
    if (o->json && print_doc(&b, lat_results_json(&b, &r, t, &err), &err) != 0)
        return 1;
    if (!o->json)
        print_text(o, sp, t, &r);
    if (o->validate && o->check && !lat_agreement_meets_targets(&r.ag)) {
        fprintf(stderr, "manta-profile: validation misses its targets (>= 95%% within +-10%%, "
                        "Kendall tau >= 0.9)\n");
        return 3;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 1)
        return rc;
    if (!o.no_pin)
        pt_pin_cpu();
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    stereo_space ss;
    bool stereo;
    manta_status s = prof_space_load(o.space, &sp, &ss, &stereo, &err);
    o.stereo = s == MANTA_OK && stereo ? &ss : NULL;
    if (s == MANTA_OK && o.stereo && o.int8) {
        fprintf(stderr, "manta-profile: --int8: space '%s' is a stereo one (no int8 export)\n",
                o.space);
        return 2;
    }
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    if (o.list)
        return list_keys(&o, &sp);
    lat_table t;
    memset(&t, 0, sizeof t);
    rc = run(&o, &sp, &t);
    lat_table_free(&t);
    return rc;
}
