/* manta-profile: the board's latency table, measured in the inference engine.
 *
 *   manta-profile [--space S] [--out LUT.json] [options]       profile every layer key
 *   manta-profile --validate K [--lut LUT.json] [options]      predicted against measured
 *
 * Every distinct layer the search space can produce (latency_table.h keys, at
 * each resolution) is timed inside whole sub-networks: random sub-networks
 * that together hold every key --cover times (lat_cover_archs()) are built
 * with weights of the right shapes (profile/synth.h), written as .tflite in
 * memory and run by the engine with the clock read at each keyed layer's
 * first operator (mengine_invoke_observed()). A key's table entry is the
 * lower decile of its in-network times, per network and averaged over the
 * networks that hold it, less one clock reading. The fixed per-inference
 * overhead is then measured on a few random sub-networks run end to end (no
 * readings): the median of (measured - sum of their layers). --method layer
 * times each key as a one-layer model instead (the earlier method).
 *
 * Every model is visited in --passes rounds, in a new random order each
 * round, so that a burst of other work on the machine touches many models a
 * little rather than a few a lot; the lower decile of the runs (what a model
 * takes when nothing else disturbs it) is kept for layers and for --validate
 * alike. The thread stays on one CPU (--no-pin to let it move).
 *
 * Linked with the engine, the exporter, the space and profile code, cJSON and
 * libm: no OpenCL. Exit status: 0 success, 1 failure (one line on stderr),
 * 2 usage; --validate with --check exits 3 when the agreement misses its targets. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "export/tflite.h"
#include "ofa/space.h"
#include "profile/latency_table.h"
#include "profile/synth.h"
#include "profile/validate.h"
#include "timing.h"

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

enum { METHOD_NET, METHOD_LAYER };

typedef struct opts {
    const char *space, *out, *lut, *name, *csv, *arch, *layers_csv;
    int validate, calib, json, quiet, list, check, passes, force, method, cover, pin;
    long seed;
    pt_opts t;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta-profile [--space S] [--out LUT.json] [--name NAME] [timing options]\n"
            "       manta-profile --validate K [--lut LUT.json] [--seed N] [--csv FILE] [--check]\n"
            "       manta-profile --arch ARCH --lut LUT.json [--json]\n"
            "       manta-profile --list [--space S]\n\n"
            "Measures the latency of every layer the search space can produce (OFA's layer\n"
            "keys, at every resolution: stem, blocks, head, pool, classifier) in the\n"
            "inference engine on this CPU, one thread, and writes the latency table (JSON:\n"
            "lower decile, median, mean, variance and count per key; device, CPU, compiler\n"
            "flags, date).\n"
            "Each layer is timed inside random sub-networks that together hold every key\n"
            "--cover times; its entry is the lower decile (p10) of its in-network times. The\n"
            "fixed per-inference overhead is measured on --calib random sub-networks run\n"
            "end to end. --validate K times K random sub-networks end to end (the lower\n"
            "decile of their runs) and compares them with the table's prediction (sum of\n"
            "layers + overhead): mean and largest absolute %% error, share within +-10%%,\n"
            "Kendall's tau, RMSE.\n\n"
            "  --space S        spec file (models/*.json) or built-in name (default cpu-default)\n"
            "  --out FILE       table to write (default latency_table.json)\n"
            "  --lut FILE       with --validate: table to check (default: profile first)\n"
            "  --name NAME      device name stored in the table (default: the host name)\n"
            "  --method M       net: time layers inside whole sub-networks (default);\n"
            "                   layer: each layer alone as a one-layer model\n"
            "  --cover C        with --method net: sub-networks per key, at least (default 3)\n"
            "  --layers-csv F   with --method net: each layer's time in each sub-network\n"
            "  --calib N        sub-networks for the overhead (default 10; 0: overhead 0)\n"
            "  --passes P       rounds over all models, each in a new random order; each\n"
            "                   model is timed a share in every round, so load changes\n"
            "                   touch all alike (default 5)\n"
            "  --min-time-ms T  timed time per layer or network, at least (default 150)\n"
            "  --runs N         timed runs per layer or network, at least (default 15)\n"
            "  --max-runs N     timed runs per layer or network, at most (default 100000)\n"
            "  --warmup N       untimed runs before each round's timing (default 2, and at\n"
            "                   least 2 ms)\n"
            "  --clock wall|cpu wall clock (default) or the thread's CPU time (for a machine\n"
            "                   shared with other work: excludes time the thread is not run)\n"
            "  --no-pin         let the thread move between CPUs (default: kept on one)\n"
            "  --seed N         seed of the sub-networks --validate draws (default 1)\n"
            "  --csv FILE       with --validate: predicted and measured ms (p10 and median)\n"
            "                   and arch per network\n"
            "  --check          with --validate: exit 3 unless >= 95%% lie within +-10%% and\n"
            "                   Kendall's tau >= 0.9\n"
            "  --arch ARCH      with --lut: one sub-network (file or JSON in OFA's encoding,\n"
            "                   or max / min): predicted and measured latency, arena, size\n"
            "  --force          measure against a table from another CPU (refused otherwise)\n"
            "  --device cpu     the engine on this CPU (the only device of this program; for\n"
            "                   an OpenCL device use 'manta profile --device SPEC')\n"
            "  --list           print the layer keys and exit\n"
            "  --json           results as one JSON document on stdout\n"
            "  --quiet          no progress bar\n");
}

static int parse_long(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *e;
    errno = 0;
    long x = strtol(v ? v : "", &e, 10);
    if (!v || e == v || *e || errno || x < lo || x > hi) {
        fprintf(stderr, "manta-profile: %s needs an integer in [%ld, %ld], got '%s'\n", opt, lo,
                hi, v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

static int parse_args(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->space = "cpu-default";
    o->out = "latency_table.json";
    o->calib = 10;
    o->passes = 5;
    o->seed = 1;
    o->cover = 3;
    o->pin = 1;
    o->method = METHOD_NET;
    o->t = (pt_opts){.warmup = 2, .warmup_s = 0.002, .min_runs = 15, .max_runs = 100000,
                     .min_time_s = 0.15, .clock = PT_WALL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(a, "--list")) {
            o->list = 1;
        } else if (!strcmp(a, "--check")) {
            o->check = 1;
        } else if (!strcmp(a, "--force")) {
            o->force = 1;
        } else if (!strcmp(a, "--arch") && v) {
            o->arch = v, i++;
        } else if (!strcmp(a, "--space") && v) {
            o->space = v, i++;
        } else if (!strcmp(a, "--out") && v) {
            o->out = v, i++;
        } else if (!strcmp(a, "--lut") && v) {
            o->lut = v, i++;
        } else if (!strcmp(a, "--name") && v) {
            o->name = v, i++;
        } else if (!strcmp(a, "--layers-csv") && v) {
            o->layers_csv = v, i++;
        } else if (!strcmp(a, "--no-pin")) {
            o->pin = 0;
        } else if (!strcmp(a, "--method") && v && (!strcmp(v, "net") || !strcmp(v, "layer"))) {
            o->method = v[0] == 'n' ? METHOD_NET : METHOD_LAYER, i++;
        } else if (!strcmp(a, "--csv") && v) {
            o->csv = v, i++;
        } else if (!strcmp(a, "--device") && v) {
            if (strcmp(v, "cpu") != 0) {
                fprintf(stderr,
                        "manta-profile: --device %s: this program times the inference engine on "
                        "this CPU only; profile an OpenCL device with the host program: 'manta "
                        "profile --device SPEC'\n",
                        v);
                return -1;
            }
            i++;
        } else if (!strcmp(a, "--clock") && v && (!strcmp(v, "wall") || !strcmp(v, "cpu"))) {
            o->t.clock = v[0] == 'c' ? PT_CPU : PT_WALL, i++;
        } else if (!strcmp(a, "--validate") || !strcmp(a, "--calib") || !strcmp(a, "--runs") ||
                   !strcmp(a, "--max-runs") || !strcmp(a, "--warmup") ||
                   !strcmp(a, "--min-time-ms") || !strcmp(a, "--seed") || !strcmp(a, "--passes") ||
                   !strcmp(a, "--cover")) {
            long lo = !strcmp(a, "--validate") ? 2
                      : !strcmp(a, "--runs") || !strcmp(a, "--max-runs") ||
                              !strcmp(a, "--passes") || !strcmp(a, "--cover")
                          ? 1
                          : 0;
            if (!parse_long(a, v, lo, 1000000000L, &x))
                return -1;
            i++;
            if (!strcmp(a, "--validate"))
                o->validate = (int)(x > 100000 ? 100000 : x);
            else if (!strcmp(a, "--calib"))
                o->calib = (int)(x > 100000 ? 100000 : x);
            else if (!strcmp(a, "--runs"))
                o->t.min_runs = (int)(x > 10000000 ? 10000000 : x);
            else if (!strcmp(a, "--max-runs"))
                o->t.max_runs = (int)(x > 10000000 ? 10000000 : x);
            else if (!strcmp(a, "--warmup"))
                o->t.warmup = (int)(x > 10000000 ? 10000000 : x);
            else if (!strcmp(a, "--cover"))
                o->cover = (int)(x > 1000 ? 1000 : x);
            else if (!strcmp(a, "--passes"))
                o->passes = (int)(x > 1000 ? 1000 : x);
            else if (!strcmp(a, "--min-time-ms"))
                o->t.min_time_s = (double)x / 1e3;
            else
                o->seed = x;
        } else {
            fprintf(stderr, "manta-profile: bad option or value '%s' (see --help)\n", a);
            return -1;
        }
    }
    if (o->t.max_runs < o->t.min_runs)
        o->t.max_runs = o->t.min_runs;
    if ((o->csv || o->check) && !o->validate) {
        fprintf(stderr, "manta-profile: --csv and --check go with --validate K\n");
        return -1;
    }
    if (o->layers_csv && o->method != METHOD_NET) {
        fprintf(stderr, "manta-profile: --layers-csv goes with --method net\n");
        return -1;
    }
    if (o->arch && (o->validate || !o->lut)) {
        fprintf(stderr,
                "manta-profile: --arch ARCH goes with --lut LUT.json (and not --validate)\n");
        return -1;
    }
    return 0;
}

/* ---- progress ------------------------------------------------------------------------ */

typedef struct progress {
    int on, tty;
    double t0;
    int last_pct;
    const char *what;
} progress;

static void fmt_secs(double s, char *buf, size_t cap)
{
    long t = (long)(s + 0.5);
    if (t >= 60)
        snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, cap, "%lds", t);
}

static void progress_start(progress *p, int on, const char *what)
{
    p->on = on;
    p->tty = isatty(fileno(stderr));
    p->t0 = pt_now(PT_WALL);
    p->last_pct = -1;
    p->what = what;
}

static void progress_show(progress *p, size_t done, size_t total, const char *item)
{
    if (!p->on || total == 0)
        return;
    double el = pt_now(PT_WALL) - p->t0;
    int pct = (int)(100 * done / total);
    char e[32], l[32];
    fmt_secs(el, e, sizeof e);
    fmt_secs(done ? el / (double)done * (double)(total - done) : 0, l, sizeof l);
    if (p->tty) {
        char bar[31];
        int fill = (int)(30 * done / total);
        for (int i = 0; i < 30; i++)
            bar[i] = i < fill ? '=' : i == fill ? '>' : ' ';
        bar[30] = 0;
        fprintf(stderr, "\r%s [%s] %3d%% %zu/%zu  %s elapsed, ETA %s  %-.40s\033[K", p->what, bar,
                pct, done, total, e, l, item ? item : "");
        if (done == total)
            fputc('\n', stderr);
    } else if (pct / 10 != p->last_pct / 10 || done == total) {
        fprintf(stderr, "%s: %3d%% (%zu/%zu), %s elapsed, ETA %s\n", p->what, pct, done, total, e,
                l);
        p->last_pct = pct;
    }
    fflush(stderr);
}

/* ---- measuring ------------------------------------------------------------------------ */

/* One thing to time: a keyed layer alone, or a whole sub-network. */
typedef struct item {
    const lat_layer *layer; /* NULL: the sub-network `arch` */
    ofa_arch arch;
    uint64_t seed;  /* weights and input */
    bool layers;    /* sub-network: also time each keyed layer inside it */
    int nl;         /* with layers: keyed layers, bound[] their first operators */
    int bound[PT_MAX_BOUNDS];
    double *ms;     /* timings of every visit (whole runs) */
    size_t n, cap;
    double *seg;    /* with layers: (n, nl) layer times of every run */
    lat_stats st;   /* after measure() */
} item;

static void items_free(item *it, size_t n)
{
    for (size_t i = 0; it && i < n; i++) {
        free(it[i].ms);
        free(it[i].seg);
    }
    free(it);
}

/* Build item's model (the same bytes on every call) and open it in the engine. */
static int open_item(const ofa_space *sp, item *it, pt_model *m, char *msg, size_t cap)
{
    manta_err err;
    manta_err_clear(&err);
    xgraph g;
    const synth_opts so = {it->seed, false};
    manta_status s =
        it->layer ? synth_layer_graph(sp, it->layer, &so, &g, &err)
                  : synth_arch_graph_layers(sp, &it->arch, NULL, &so, &g, it->bound, &it->nl, &err);
    uint8_t *data = NULL;
    size_t size = 0;
    if (s == MANTA_OK) {
        s = tflite_write(&g, &data, &size, NULL, &err);
        xgraph_free(&g);
    }
    if (s != MANTA_OK) {
        snprintf(msg, cap, "%s", manta_err_msg(&err, s));
        return -1;
    }
    return pt_open(m, data, size, it->seed, msg, cap);
}

/* Time every item in `passes` rounds over all of them (so that a change in the machine's
 * load during the run touches every item alike), each visit warming up first and timing
 * runs / passes runs and min_time / passes seconds at least; then each item's statistics. */
static int measure(const ofa_space *sp, item *it, size_t n, const pt_opts *t, int passes,
                   int show, const char *what)
{
    pt_opts v = *t;
    v.min_runs = (t->min_runs + passes - 1) / passes;
    v.min_time_s = t->min_time_s / passes;
    v.max_runs = t->max_runs / passes > v.min_runs ? t->max_runs / passes : v.min_runs;
    progress p;
    progress_start(&p, show, what);
    char msg[512];
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) {
        fprintf(stderr, "manta-profile: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    manta_rng rng;
    manta_rng_seed(&rng, 0x5eed, 0x0dd);
    for (int pass = 0; pass < passes; pass++)
        for (size_t v_i = 0; v_i < n; v_i++) {
            if (v_i == 0 && pass > 0) /* a new random order each round after the first */
                for (size_t j = n - 1; j > 0; j--) {
                    size_t r = manta_rng_below(&rng, (uint32_t)(j + 1)), x = order[j];
                    order[j] = order[r];
                    order[r] = x;
                }
            const size_t i = order[v_i];
            progress_show(&p, (size_t)pass * n + v_i, (size_t)passes * n,
                          it[i].layer ? it[i].layer->key : "sub-network");
            pt_model m;
            double *ms = NULL, *seg = NULL;
            size_t k = 0;
            int rc = open_item(sp, &it[i], &m, msg, sizeof msg);
            if (rc == 0) {
                rc = it[i].layers ? pt_time_layers(&m, &v, it[i].bound, it[i].nl, &seg, &ms, &k,
                                                   msg, sizeof msg)
                                  : pt_time(&m, &v, &ms, &k, msg, sizeof msg);
                if (rc != 0)
                    pt_close(&m);
            }
            if (rc != 0) {
                fprintf(stderr, "\nmanta-profile: %s%s%s\n", it[i].layer ? "layer '" : "",
                        it[i].layer ? it[i].layer->key : "", it[i].layer ? "': " : "");
                fprintf(stderr, "manta-profile: %s\n", msg);
                free(order);
                return -1;
            }
            pt_close(&m);
            if (it[i].n + k > it[i].cap) {
                size_t cap = (it[i].n + k) * 2;
                double *g = realloc(it[i].ms, cap * sizeof *g);
                double *h = g && it[i].layers
                                ? realloc(it[i].seg, cap * (size_t)it[i].nl * sizeof *h)
                                : NULL;
                if (g)
                    it[i].ms = g;
                if (h)
                    it[i].seg = h;
                if (!g || (it[i].layers && !h)) {
                    free(ms);
                    free(seg);
                    free(order);
                    fprintf(stderr, "manta-profile: out of memory\n");
                    return -1;
                }
                it[i].cap = cap;
            }
            memcpy(it[i].ms + it[i].n, ms, k * sizeof *ms);
            if (it[i].layers)
                memcpy(it[i].seg + it[i].n * (size_t)it[i].nl, seg,
                       k * (size_t)it[i].nl * sizeof *seg);
            it[i].n += k;
            free(ms);
            free(seg);
        }
    free(order);
    progress_show(&p, (size_t)passes * n, (size_t)passes * n, "");
    manta_err err;
    manta_err_clear(&err);
    for (size_t i = 0; i < n; i++) {
        manta_status s = lat_stats_from_samples(it[i].ms, it[i].n, &it[i].st, &err);
        if (s != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            return -1;
        }
    }
    return 0;
}

/* The table's fixed overhead from nc sub-networks timed end to end (cal[i].st
 * after measure()): the median of measured (p10) minus the sum of the table's
 * entries, 0 when that is negative or nc is 0. *median gets the median itself
 * (0 when nc is 0). Returns 0, or -1 after printing why. */
static int fit_overhead(lat_table *t, const item *cal, size_t nc, double *median)
{
    t->overhead_ms = 0;
    *median = 0;
    if (nc == 0)
        return 0;
    double *diff = calloc(nc, sizeof *diff);
    if (!diff) {
        fprintf(stderr, "manta-profile: out of memory\n");
        return -1;
    }
    manta_err err;
    for (size_t i = 0; i < nc; i++) {
        double sum;
        manta_status s = lat_predict(t, &cal[i].arch, &sum, &err);
        if (s != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            free(diff);
            return -1;
        }
        diff[i] = cal[i].st.p10_ms - sum;
    }
    *median = lat_median(diff, nc);
    t->overhead_ms = *median > 0 ? *median : 0;
    free(diff);
    return 0;
}

static int profile_net(const opts *o, const ofa_space *sp, const lat_layer *keys, size_t n,
                       lat_table *t, double *clock_ms);

static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    int cores = 0;
    int have = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9))
            cores++;
        const char *c = strchr(line, ':');
        if (!have && c && (!strncmp(line, "model name", 10) || !strncmp(line, "Model", 5) ||
                           !strncmp(line, "Hardware", 8))) {
            c++;
            while (*c == ' ' || *c == '\t')
                c++;
            snprintf(out, cap, "%.*s", (int)strcspn(c, "\n"), c);
            have = 1;
        }
    }
    if (f)
        fclose(f);
    struct utsname u;
    if (!have && uname(&u) == 0)
        snprintf(out, cap, "%.200s", u.machine);
    if (cores > 0) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, " (%d logical CPUs)", cores);
    }
}

static void iso_date(char *out, size_t cap)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *clock_name(pt_clock c) { return c == PT_CPU ? "thread CPU time" : "wall clock"; }

/* Profile every key of the space into t, and the fixed overhead from o->calib random
 * sub-networks timed in the same passes: the median of (end to end - sum of layers). */
static int profile(const opts *o, const ofa_space *sp, lat_table *t, double *seconds,
                   double *empty_ms, double *clock_ms)
{
    manta_err err;
    manta_err_clear(&err);
    lat_layer *keys = NULL;
    size_t n = 0;
    manta_status s = lat_enumerate(sp, &keys, &n, &err);
    if (s == MANTA_OK)
        s = lat_table_init(t, sp, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        free(keys);
        return -1;
    }
    char host[128] = "host", name[LAT_META_MAX], cpu[LAT_META_MAX], date[64], flags[LAT_META_MAX];
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    snprintf(name, sizeof name, "%.120s (manta engine, 1 thread, %s)", o->name ? o->name : host,
             clock_name(o->t.clock));
    cpu_model(cpu, sizeof cpu);
    iso_date(date, sizeof date);
    snprintf(flags, sizeof flags, "%.100s; engine: %.120s", COMPILER, MANTA_ENGINE_FLAGS);
    if ((s = lat_table_set_meta(t, name, cpu, flags, date, &err)) != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        free(keys);
        return -1;
    }
    const double t0 = pt_now(PT_WALL);
    /* what an invocation with no work costs (for the report) */
    *empty_ms = 0;
    xgraph g;
    char msg[256];
    if (synth_empty_graph(8, 8, 16, &g, &err) == MANTA_OK) {
        uint8_t *data = NULL;
        size_t size = 0;
        pt_model m;
        double *ms = NULL;
        size_t k = 0;
        lat_stats st;
        if (tflite_write(&g, &data, &size, NULL, &err) == MANTA_OK &&
            pt_open(&m, data, size, 1, msg, sizeof msg) == 0) {
            if (pt_time(&m, &o->t, &ms, &k, msg, sizeof msg) == 0 &&
                lat_stats_from_samples(ms, k, &st, &err) == MANTA_OK)
                *empty_ms = st.p10_ms;
            free(ms);
            pt_close(&m);
        }
        xgraph_free(&g);
    }
    *clock_ms = 0;
    if (o->method == METHOD_NET) {
        int rc = profile_net(o, sp, keys, n, t, clock_ms);
        free(keys);
        *seconds = pt_now(PT_WALL) - t0;
        return rc;
    }
    const size_t nc = (size_t)o->calib, total = n + nc;
    item *it = calloc(total, sizeof *it);
    if (!it) {
        fprintf(stderr, "manta-profile: out of memory\n");
        free(keys);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        it[i].layer = &keys[i];
        it[i].seed = i + 1;
    }
    manta_rng rng;
    manta_rng_seed(&rng, 0xca11b, 7);
    for (size_t i = 0; i < nc; i++) {
        ofa_arch_sample(sp, &rng, &it[n + i].arch);
        it[n + i].seed = 1000 + i;
    }
    int rc = measure(sp, it, total, &o->t, o->passes, !o->quiet, "profiling");
    for (size_t i = 0; i < n && rc == 0; i++)
        if ((s = lat_table_set(t, keys[i].key, &it[i].st, &err)) != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            rc = -1;
        }
    double ov = 0;
    if (rc == 0)
        rc = fit_overhead(t, it + n, nc, &ov);
    if (rc == 0 && nc > 0 && ov < 0 && !o->quiet)
        fprintf(stderr,
                "manta-profile: note: end-to-end runs were %.4f ms faster than the sum of "
                "their layers (median of %zu); overhead set to 0\n",
                -ov, nc);
    items_free(it, total);
    free(keys);
    *seconds = pt_now(PT_WALL) - t0;
    return rc;
}

/* In-network profiling: the sub-networks of lat_cover_archs() (every key o->cover times) are
 * timed with the clock read at each keyed layer's first operator. A key's p10_ms is the lower
 * decile of its times in each network that holds it, averaged over those networks; median,
 * mean and variance are of all its times pooled; each less one clock reading. The overhead is then
 * what o->calib random sub-networks timed end to end without readings, in the same passes,
 * take beyond the sum of their layers' entries. */
static int profile_net(const opts *o, const ofa_space *sp, const lat_layer *keys, size_t n,
                       lat_table *t, double *clock_ms)
{
    manta_err err;
    manta_err_clear(&err);
    ofa_arch *archs = NULL;
    size_t na = 0;
    manta_status s = lat_cover_archs(sp, o->cover, 0xc04e5, &archs, &na, &err);
    const lat_stats zero = {0, 0, 0, 1, 0};
    for (size_t i = 0; i < n && s == MANTA_OK; i++)
        s = lat_table_set(t, keys[i].key, &zero, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        free(archs);
        return -1;
    }
    const size_t nc = (size_t)o->calib, total = na + nc;
    item *it = calloc(total, sizeof *it);
    size_t *fill = calloc(n ? n : 1, sizeof *fill), *cnt = calloc(n ? n : 1, sizeof *cnt);
    size_t *n_ctx = calloc(n ? n : 1, sizeof *n_ctx);
    double *ctx_p10 = calloc(n ? n : 1, sizeof *ctx_p10);
    double **pool = calloc(n ? n : 1, sizeof *pool);
    lat_layer *L = malloc(LAT_MAX_ARCH_LAYERS * sizeof *L);
    int rc = it && fill && cnt && n_ctx && ctx_p10 && pool && L ? 0 : -1;
    if (rc)
        fprintf(stderr, "manta-profile: out of memory\n");
    manta_rng rng;
    manta_rng_seed(&rng, 0xca11b, 7);
    for (size_t i = 0; i < total && rc == 0; i++) {
        if (i < na) {
            it[i].arch = archs[i];
            it[i].layers = true;
        } else {
            ofa_arch_sample(sp, &rng, &it[i].arch);
        }
        it[i].seed = 1000 + i;
    }
    *clock_ms = pt_clock_cost_ms(o->t.clock);
    if (rc == 0)
        rc = measure(sp, it, total, &o->t, o->passes, !o->quiet, "profiling");
    /* pool each key's in-network times */
    long key_of[LAT_MAX_ARCH_LAYERS];
    for (int round = 0; round < 2 && rc == 0; round++)
        for (size_t i = 0; i < na && rc == 0; i++) {
            int m = 0;
            if ((s = lat_arch_layers(sp, &it[i].arch, L, &m, &err)) != MANTA_OK) {
                fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
                rc = -1;
                break;
            }
            if (m != it[i].nl) {
                fprintf(stderr, "manta-profile: internal: %d layers, %d layer bounds\n", m,
                        it[i].nl);
                rc = -1;
                break;
            }
            for (int j = 0; j < m; j++) {
                const lat_entry *e = lat_table_find(t, L[j].key);
                key_of[j] = e ? (long)(e - t->entry) : -1;
                if (key_of[j] < 0) {
                    fprintf(stderr, "manta-profile: internal: '%s' not enumerated\n", L[j].key);
                    rc = -1;
                    break;
                }
                if (round == 0) {
                    cnt[key_of[j]] += it[i].n;
                    continue;
                }
                double *col = pool[key_of[j]] + fill[key_of[j]];
                for (size_t r = 0; r < it[i].n; r++)
                    col[r] = it[i].seg[r * (size_t)m + (size_t)j];
                /* this context's decile; sorts the new samples in place, which the pool allows */
                lat_stats cs;
                if ((s = lat_stats_from_samples(col, it[i].n, &cs, &err)) != MANTA_OK) {
                    fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
                    rc = -1;
                    break;
                }
                ctx_p10[key_of[j]] += cs.p10_ms;
                n_ctx[key_of[j]]++;
                fill[key_of[j]] += it[i].n;
            }
            if (round == 0 && i + 1 == na)
                for (size_t k = 0; k < n && rc == 0; k++)
                    if (!(pool[k] = malloc((cnt[k] ? cnt[k] : 1) * sizeof **pool))) {
                        fprintf(stderr, "manta-profile: out of memory\n");
                        rc = -1;
                    }
        }
    for (size_t k = 0; k < n && rc == 0; k++) {
        lat_stats st;
        if (!cnt[k]) {
            fprintf(stderr, "manta-profile: internal: no timing of '%s'\n", keys[k].key);
            rc = -1;
            break;
        }
        if ((s = lat_stats_from_samples(pool[k], cnt[k], &st, &err)) != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            rc = -1;
            break;
        }
        st.median_ms = st.median_ms > *clock_ms ? st.median_ms - *clock_ms : 0;
        const double p10 = ctx_p10[k] / (double)n_ctx[k]; /* averaged over the contexts */
        st.p10_ms = p10 > *clock_ms ? p10 - *clock_ms : 0;
        st.mean_ms = st.mean_ms > *clock_ms ? st.mean_ms - *clock_ms : 0;
        if ((s = lat_table_set(t, keys[k].key, &st, &err)) != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            rc = -1;
        }
    }
    if (rc == 0 && o->layers_csv) {
        FILE *f = fopen(o->layers_csv, "w");
        if (!f) {
            fprintf(stderr, "manta-profile: %s: cannot write: %s\n", o->layers_csv,
                    strerror(errno));
            rc = -1;
        } else {
            fprintf(f, "network,layer,where,p10_ms,median_ms,table_p10_ms,runs,key\n");
            double *col = malloc((it[0].n + 1) * sizeof *col);
            for (size_t i = 0; i < na && col; i++) {
                int m = 0;
                lat_arch_layers(sp, &it[i].arch, L, &m, NULL);
                double *c2 = realloc(col, (it[i].n + 1) * sizeof *col);
                if (!c2)
                    break;
                col = c2;
                for (int j = 0; j < m; j++) {
                    for (size_t r = 0; r < it[i].n; r++)
                        col[r] = it[i].seg[r * (size_t)m + (size_t)j];
                    const lat_entry *e = lat_table_find(t, L[j].key);
                    lat_stats cs;
                    if (lat_stats_from_samples(col, it[i].n, &cs, NULL) != MANTA_OK)
                        continue;
                    fprintf(f, "%zu,%d,%s,%.6f,%.6f,%.6f,%zu,%s\n", i, j, L[j].where,
                            cs.p10_ms - *clock_ms, cs.median_ms - *clock_ms,
                            e ? e->st.p10_ms : 0, it[i].n, L[j].key);
                }
            }
            free(col);
            fclose(f);
        }
    }
    double ov = 0;
    if (rc == 0)
        rc = fit_overhead(t, it + na, nc, &ov);
    if (rc == 0 && nc > 0 && !o->quiet)
        fprintf(stderr,
                "manta-profile: %zu sub-networks cover the %zu keys %d times or more; "
                "end to end minus the sum of layers: median %+.4f ms over %zu networks; "
                "clock reading %.5f ms\n",
                na, n, o->cover, ov, nc, *clock_ms);
    for (size_t k = 0; pool && k < n; k++)
        free(pool[k]);
    free(pool);
    free(fill);
    free(cnt);
    free(n_ctx);
    free(ctx_p10);
    free(L);
    items_free(it, total);
    free(archs);
    return rc;
}

static int validate(const opts *o, const ofa_space *sp, const lat_table *t, lat_agreement *ag,
                    double *seconds)
{
    const size_t K = (size_t)o->validate;
    double *pred = malloc(K * sizeof *pred), *meas = malloc(K * sizeof *meas);
    item *it = calloc(K, sizeof *it);
    int rc = 0;
    manta_err err;
    manta_err_clear(&err);
    if (!pred || !meas || !it) {
        fprintf(stderr, "manta-profile: out of memory\n");
        free(pred), free(meas), free(it);
        return -1;
    }
    const double t0 = pt_now(PT_WALL);
    manta_rng rng;
    manta_rng_seed(&rng, (uint64_t)o->seed, 0x7a11d);
    for (size_t i = 0; i < K && rc == 0; i++) {
        ofa_arch_sample(sp, &rng, &it[i].arch);
        it[i].seed = 5000 + i;
        manta_status s = lat_predict(t, &it[i].arch, &pred[i], &err);
        if (s != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            rc = -1;
        }
    }
    if (rc == 0)
        rc = measure(sp, it, K, &o->t, o->passes, !o->quiet, "validating");
    for (size_t i = 0; i < K && rc == 0; i++)
        meas[i] = it[i].st.p10_ms;
    if (rc == 0) {
        manta_status s = lat_agreement_compute(pred, meas, K, 0.10, ag, &err);
        if (s != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            rc = -1;
        }
    }
    FILE *csv = NULL;
    if (rc == 0 && o->csv) {
        if (!(csv = fopen(o->csv, "w"))) {
            fprintf(stderr, "manta-profile: %s: cannot write: %s\n", o->csv, strerror(errno));
            rc = -1;
        } else {
            fprintf(csv, "index,predicted_ms,measured_ms,measured_median_ms,error_pct,arch\n");
            for (size_t i = 0; i < K; i++) {
                char enc[1024];
                ofa_arch_to_json(sp, &it[i].arch, enc, sizeof enc, NULL);
                fprintf(csv, "%zu,%.6f,%.6f,%.6f,%.3f,\"", i, pred[i], meas[i],
                        it[i].st.median_ms, 100 * (pred[i] - meas[i]) / meas[i]);
                for (const char *c = enc; *c; c++) {
                    if (*c == '"')
                        fputc('"', csv);
                    fputc(*c, csv);
                }
                fputs("\"\n", csv);
            }
            if (fclose(csv) != 0) {
                fprintf(stderr, "manta-profile: %s: write failed\n", o->csv);
                rc = -1;
            }
        }
    }
    *seconds = pt_now(PT_WALL) - t0;
    free(pred), free(meas);
    items_free(it, K);
    return rc;
}

static void print_json_string(const char *s);

/* --arch: one sub-network's predicted and measured latency, arena and file size. */
static int one_arch(const opts *o, const ofa_space *sp, const lat_table *t)
{
    manta_err err;
    manta_err_clear(&err);
    item it;
    memset(&it, 0, sizeof it);
    it.seed = 1;
    manta_status s = MANTA_OK;
    if (!strcmp(o->arch, "max") || !strcmp(o->arch, "min")) {
        (o->arch[1] == 'a' ? ofa_arch_max : ofa_arch_min)(sp, 0, &it.arch);
    } else {
        char *text = NULL;
        if (o->arch[0] == '{')
            s = ofa_arch_parse(sp, o->arch, &it.arch, &err);
        else if ((s = manta_file_read(o->arch, 1 << 20, &text, NULL, &err)) == MANTA_OK)
            s = ofa_arch_parse(sp, text, &it.arch, &err);
        free(text);
    }
    double pred = 0;
    if (s == MANTA_OK)
        s = lat_predict(t, &it.arch, &pred, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s: %s\n", o->arch, manta_err_msg(&err, s));
        return 1;
    }
    pt_model m;
    char msg[256];
    size_t arena = 0, file = 0;
    if (open_item(sp, &it, &m, msg, sizeof msg) != 0) {
        fprintf(stderr, "manta-profile: %s\n", msg);
        return 1;
    }
    arena = m.arena_bytes;
    file = m.size;
    pt_close(&m);
    if (measure(sp, &it, 1, &o->t, o->passes, 0, "measuring") != 0) {
        free(it.ms);
        return 1;
    }
    char enc[1024];
    ofa_arch_to_json(sp, &it.arch, enc, sizeof enc, NULL);
    if (o->json)
        printf("{\"arch\":%s,\"predicted_ms\":%.6f,\"measured_ms\":%.6f,\"median_ms\":%.6f,"
               "\"mean_ms\":%.6f,\"runs\":%ld,\"error_pct\":%.3f,\"arena_bytes\":%zu,"
               "\"file_bytes\":%zu}\n",
               enc, pred, it.st.p10_ms, it.st.median_ms, it.st.mean_ms, it.st.count,
               100 * (pred - it.st.p10_ms) / it.st.p10_ms, arena, file);
    else
        printf("%s: predicted %.4f ms, measured %.4f ms (lower decile of %ld, %s; median "
               "%.4f ms), error %+.1f%%; arena %.1f KiB, file %.1f KiB (weights synthetic)\n",
               enc, pred, it.st.p10_ms, it.st.count, clock_name(o->t.clock), it.st.median_ms,
               100 * (pred - it.st.p10_ms) / it.st.p10_ms, arena / 1024.0, file / 1024.0);
    free(it.ms);
    return 0;
}

static void print_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            printf("\\u%04x", (unsigned char)*s);
        else
            putchar(*s);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    if (o.pin)
        pt_pin_cpu();
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    manta_status s = ofa_space_load(o.space, &sp, &err);
    if (s != MANTA_OK) {
        fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
        return 1;
    }
    if (o.list) {
        lat_layer *keys = NULL;
        size_t n = 0;
        if ((s = lat_enumerate(&sp, &keys, &n, &err)) != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            return 1;
        }
        for (size_t i = 0; i < n; i++)
            printf("%s\n", keys[i].key);
        fprintf(stderr, "%zu keys in space '%s'\n", n, sp.name);
        free(keys);
        return 0;
    }
    lat_table t;
    memset(&t, 0, sizeof t);
    double prof_s = 0, empty_ms = 0, clock_ms = 0, val_s = 0;
    int profiled = 0;
    if ((o.validate || o.arch) && o.lut) {
        if ((s = lat_table_load(o.lut, &sp, &t, &err)) == MANTA_OK)
            s = lat_table_check_complete(&t, &err);
        if (s != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            lat_table_free(&t);
            return 1;
        }
        char cpu[LAT_META_MAX];
        cpu_model(cpu, sizeof cpu);
        if (strcmp(cpu, t.cpu) != 0 && !o.force) {
            fprintf(stderr,
                    "manta-profile: %s was measured on another device: CPU '%s' (device '%s'); "
                    "this machine's CPU is '%s'. Measure against a table of this device "
                    "(--force compares anyway)\n",
                    o.lut, t.cpu, t.device, cpu);
            lat_table_free(&t);
            return 1;
        }
        if (o.arch) {
            int rc = one_arch(&o, &sp, &t);
            lat_table_free(&t);
            return rc;
        }
    } else {
        if (profile(&o, &sp, &t, &prof_s, &empty_ms, &clock_ms) != 0) {
            lat_table_free(&t);
            return 1;
        }
        profiled = 1;
        if ((s = lat_table_save(&t, o.out, &err)) != MANTA_OK) {
            fprintf(stderr, "manta-profile: %s\n", manta_err_msg(&err, s));
            lat_table_free(&t);
            return 1;
        }
    }
    lat_agreement ag;
    memset(&ag, 0, sizeof ag);
    if (o.validate && validate(&o, &sp, &t, &ag, &val_s) != 0) {
        lat_table_free(&t);
        return 1;
    }
    const int pass = ag.within >= 0.95 && ag.kendall_tau >= 0.9;
    if (o.json) {
        printf("{\"space\":");
        print_json_string(sp.name);
        printf(",\"clock\":\"%s\"", o.t.clock == PT_CPU ? "cpu" : "wall");
        if (profiled) {
            printf(",\"table\":");
            print_json_string(o.out);
            printf(",\"keys\":%zu,\"method\":\"%s\",\"profile_seconds\":%.3f,"
                   "\"overhead_ms\":%.6f,\"empty_invoke_ms\":%.6f,\"clock_read_ms\":%.6f",
                   t.n, o.method == METHOD_NET ? "net" : "layer", prof_s, t.overhead_ms,
                   empty_ms, clock_ms);
        } else {
            printf(",\"table\":");
            print_json_string(o.lut);
        }
        printf(",\"device\":");
        print_json_string(t.device);
        printf(",\"cpu\":");
        print_json_string(t.cpu);
        printf(",\"compiler_flags\":");
        print_json_string(t.cflags);
        printf(",\"date\":");
        print_json_string(t.date);
        if (o.validate)
            printf(",\"validation\":{\"networks\":%zu,\"seed\":%ld,\"seconds\":%.3f,"
                   "\"mean_abs_pct\":%.4f,\"max_abs_pct\":%.4f,\"mean_pct\":%.4f,"
                   "\"within_10pct\":%.4f,\"kendall_tau\":%.4f,\"rmse_ms\":%.6f,"
                   "\"max_abs_ms\":%.6f,\"meets_targets\":%s}",
                   ag.n, o.seed, val_s, ag.mean_abs_pct, ag.max_abs_pct, ag.mean_pct, ag.within,
                   ag.kendall_tau, ag.rmse, ag.max_abs, pass ? "true" : "false");
        printf("}\n");
    } else {
        if (profiled)
            printf("%s: %zu layer keys of space '%s' in %.1f s (%s, %s); overhead %.4f ms "
                   "(an empty invocation: %.4f ms; a clock reading: %.4f ms)\n",
                   o.out, t.n, sp.name, prof_s,
                   o.method == METHOD_NET ? "inside sub-networks" : "one-layer models",
                   clock_name(o.t.clock), t.overhead_ms, empty_ms, clock_ms);
        if (o.validate)
            printf("validation on %zu random sub-networks (seed %ld, %.1f s): mean |error| "
                   "%.2f%%, max %.2f%%, bias %+.2f%%, within +-10%%: %.1f%%, Kendall tau %.3f, "
                   "RMSE %.4f ms\n",
                   ag.n, o.seed, val_s, ag.mean_abs_pct, ag.max_abs_pct, ag.mean_pct,
                   100 * ag.within, ag.kendall_tau, ag.rmse);
    }
    lat_table_free(&t);
    if (o.validate && o.check && !pass) {
        fprintf(stderr, "manta-profile: validation misses its targets (>= 95%% within +-10%%, "
                        "Kendall tau >= 0.9)\n");
        return 3;
    }
    return 0;
}
