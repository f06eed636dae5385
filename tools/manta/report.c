/* manta report RUN_DIR: plots of a run a person would rather look at than read (PNG and
 * SVG, drawn with cairo by plot.c) and one HTML page with all of them and the key figures:
 * the training curves per phase, the sampled sub-networks' sizes, per-rank throughput, the
 * search's accuracy against latency with its Pareto front, the chosen and the uniform
 * sub-networks, and the latency table's predicted against measured latency. It draws what RUN_DIR (or the options)
 * holds and says in one line per missing input what it skipped. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/strbuf.h"
#include "plot.h"
#include "report_data.h"

#define PATH_CAP 4096
#define MAX_SKIPS 8
#define MAX_PLOTS 5

typedef struct report_opts {
    const char *run, *out, *metrics, *search, *latency;
    bool json, quiet;
} report_opts;

/* One written plot: its file stem and what it shows. */
typedef struct plot_out {
    char stem[32];
    char title[256];
} plot_out;

/* Everything read, and what was written and skipped. */
typedef struct report {
    report_opts o;
    char out[PATH_CAP];
    char metrics_path[PATH_CAP], search_path[PATH_CAP], front_path[PATH_CAP];
    char lat_path[PATH_CAP], lat_summary_path[PATH_CAP];
    bool have_train, have_search, have_front, have_lat;
    manta_run_history train;
    rep_search search;
    rep_latency lat;
    double test_top1;            /* RUN_DIR/test.json (NaN: none) */
    double bench_p10, bench_med; /* RUN_DIR/bench.json (NaN: none) */
    char skipped[MAX_SKIPS][512];
    int n_skipped;
    plot_out plots[MAX_PLOTS];
    int n_plots;
} report;

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* @p dir/@p name into @p buf when it is a file. */
static bool find_in(char *buf, const char *dir, const char *name)
{
    if (!dir)
        return false;
    return snprintf(buf, PATH_CAP, "%s/%s", dir, name) < PATH_CAP && is_file(buf);
}

/* @p path with its last extension replaced by @p ext (".json"), into @p buf. */
static void with_ext(char *buf, const char *path, const char *ext)
{
    snprintf(buf, PATH_CAP, "%s", path);
    char *dot = strrchr(buf, '.'), *slash = strrchr(buf, '/');
    if (dot && (!slash || dot > slash))
        *dot = '\0';
    size_t n = strlen(buf);
    snprintf(buf + n, PATH_CAP - n, "%s", ext);
}

/* The folder of @p path into @p buf ("." for a bare name). */
static void dir_of(char *buf, const char *path)
{
    snprintf(buf, PATH_CAP, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash)
        snprintf(buf, PATH_CAP, ".");
    else if (slash == buf)
        buf[1] = '\0';
    else
        *slash = '\0';
}

/* Note an input that is missing and what is left out for it. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void skip(report *r, const char *fmt, ...)
{
    if (r->n_skipped == MAX_SKIPS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->skipped[r->n_skipped++], sizeof r->skipped[0], fmt, ap);
    va_end(ap);
}

static bool fail(const manta_err *err)
{
    fprintf(stderr, "manta report: %s\n", err->msg);
    return false;
}

/* Read a whole text file, or print why not. */
static char *read_text(const char *path)
{
    char *text = NULL;
    manta_err err;
    if (manta_file_read(path, 512u << 20, &text, NULL, &err) != MANTA_OK) {
        fail(&err);
        return NULL;
    }
    return text;
}

/* A number of a small JSON file (test.json, bench.json): NaN when absent or unreadable. */
static double json_file_number(const char *path, const char *obj, const char *key)
{
    char *text = NULL;
    double v = NAN;
    if (!is_file(path) || manta_file_read(path, 1u << 20, &text, NULL, NULL) != MANTA_OK)
        return NAN;
    cJSON *doc = cJSON_Parse(text);
    const cJSON *o = obj ? manta_json_object(doc, obj) : doc;
    if (!manta_json_number(o, key, -INFINITY, INFINITY, &v))
        v = NAN;
    cJSON_Delete(doc);
    free(text);
    return v;
}

/* ---- finding and reading the inputs ---- */

static bool load_training(report *r)
{
    const report_opts *o = &r->o;
    if (o->metrics) {
        snprintf(r->metrics_path, PATH_CAP, "%s", o->metrics);
    } else if (!o->run) {
        skip(r, "training curves and per-rank throughput: no --metrics FILE given");
        return true;
    } else if (!find_in(r->metrics_path, o->run, "metrics.jsonl") &&
               !find_in(r->metrics_path, o->run, "supernet/metrics.jsonl")) {
        skip(r, "training curves and per-rank throughput: no metrics.jsonl in %s or %s/supernet "
                "(--metrics FILE)", o->run, o->run);
        return true;
    }
    manta_err err;
    if (manta_run_history_load(r->metrics_path, &r->train, &err) != MANTA_OK)
        return fail(&err);
    if (r->train.malformed > 0)
        fprintf(stderr,
                "manta report: warning: %s: %ld of %ld lines are not JSON objects and were "
                "skipped (the first: line %ld)\n",
                r->metrics_path, r->train.malformed, r->train.lines, r->train.first_malformed);
    if (r->train.loss.n == 0) {
        skip(r, "training curves and per-rank throughput: %s has no progress records",
             r->metrics_path);
        return true;
    }
    r->have_train = true;
    if (r->train.n_ranks == 0)
        skip(r, "per-rank throughput: the progress records of %s have no \"ranks\"",
             r->metrics_path);
    return true;
}

static bool load_search(report *r)
{
    const report_opts *o = &r->o;
    if (o->search) {
        if (is_dir(o->search))
            snprintf(r->search_path, PATH_CAP, "%s/search.json", o->search);
        else
            snprintf(r->search_path, PATH_CAP, "%s", o->search);
    } else if (!o->run) {
        skip(r, "search plot: no --search FILE given");
        return true;
    } else if (!find_in(r->search_path, o->run, "search.json") &&
               !find_in(r->search_path, o->run, "search/search.json")) {
        skip(r, "search plot: no search.json in %s or %s/search (--search FILE)", o->run, o->run);
        return true;
    }
    char *text = read_text(r->search_path);
    if (!text)
        return false;
    manta_err err;
    manta_status st = rep_search_parse(text, r->search_path, &r->search, &err);
    free(text);
    if (st != MANTA_OK)
        return fail(&err);
    r->have_search = true;
    char dir[PATH_CAP];
    dir_of(dir, r->search_path);
    if (!find_in(r->front_path, dir, "front.csv")) {
        skip(r, "Pareto front: no front.csv beside %s", r->search_path);
        return true;
    }
    if (!(text = read_text(r->front_path)))
        return false;
    st = rep_front_parse(text, r->front_path, &r->search, &err);
    free(text);
    if (st != MANTA_OK)
        return fail(&err);
    r->have_front = true;
    return true;
}

/* --latency FILE: the validation CSV, its JSON summary, or the latency table (validate.csv
 * beside it); without it, RUN_DIR/validate.csv. */
static bool load_latency(report *r)
{
    const report_opts *o = &r->o;
    if (o->latency) {
        const char *dot = strrchr(o->latency, '.');
        if (dot && !strcmp(dot, ".json")) {
            char *text = read_text(o->latency);
            if (!text)
                return false;
            cJSON *doc = cJSON_Parse(text);
            const char *fmt = manta_json_string(doc, "format");
            bool table = fmt && !strcmp(fmt, "manta-latency-table");
            cJSON_Delete(doc);
            free(text);
            if (table) {
                char dir[PATH_CAP];
                dir_of(dir, o->latency);
                if (!find_in(r->lat_path, dir, "validate.csv")) {
                    skip(r, "latency validation plot: no validate.csv beside the latency table %s "
                            "(manta-profile --lut %s --validate K --csv FILE)",
                         o->latency, o->latency);
                    return true;
                }
                find_in(r->lat_summary_path, dir, "validate.json");
            } else {
                snprintf(r->lat_summary_path, PATH_CAP, "%s", o->latency);
                with_ext(r->lat_path, o->latency, ".csv");
            }
        } else {
            snprintf(r->lat_path, PATH_CAP, "%s", o->latency);
            with_ext(r->lat_summary_path, o->latency, ".json");
        }
    } else if (!o->run) {
        skip(r, "latency validation plot: no --latency FILE given");
        return true;
    } else if (!find_in(r->lat_path, o->run, "validate.csv")) {
        skip(r, "latency validation plot: no validate.csv in %s (--latency FILE)", o->run);
        return true;
    } else {
        find_in(r->lat_summary_path, o->run, "validate.json");
    }
    char *text = read_text(r->lat_path);
    if (!text)
        return false;
    manta_err err;
    manta_status st = rep_latency_parse_csv(text, r->lat_path, &r->lat, &err);
    free(text);
    if (st != MANTA_OK)
        return fail(&err);
    if (r->lat_summary_path[0] && is_file(r->lat_summary_path)) {
        if (!(text = read_text(r->lat_summary_path)))
            return false;
        st = rep_latency_parse_summary(text, r->lat_summary_path, &r->lat, &err);
        free(text);
        if (st != MANTA_OK)
            return fail(&err);
    }
    if (r->lat.n == 0) {
        skip(r, "latency validation plot: %s has no sub-network with a prediction", r->lat_path);
        return true;
    }
    r->have_lat = true;
    return true;
}

/* ---- the plots ---- */

static plot_series line(const char *label, const double *x, const double *y, size_t n, int color)
{
    return (plot_series){.label = label, .x = x, .y = y, .n = n, .color = plot_palette(color),
                         .line = true};
}

static plot_series points(const char *label, const double *x, const double *y, size_t n,
                          int color, plot_marker m, bool hollow, double size)
{
    return (plot_series){.label = label, .x = x, .y = y, .n = n, .color = plot_palette(color),
                         .marker = m, .hollow = hollow, .size = size};
}

static void add_series(plot_panel *p, plot_series s)
{
    if (p->n_series < PLOT_MAX_SERIES && s.n > 0)
        p->series[p->n_series++] = s;
}

/* The phases as shaded spans of @p p. */
static void phase_spans(const manta_run_history *t, plot_panel *p)
{
    double prev = 0;
    for (int i = 0; i < t->n_phases && p->n_spans < PLOT_MAX_SPANS; i++) {
        const manta_run_phase *ph = &t->phases[i];
        if (!ph->seen || (double)ph->last_step <= prev)
            continue;
        p->spans[p->n_spans++] = (plot_span){prev, (double)ph->last_step, ph->name};
        prev = (double)ph->last_step;
    }
}

static manta_status write_figure(report *r, const plot_figure *f, const char *stem,
                                 manta_err *err)
{
    char path[PATH_CAP + 64];
    snprintf(path, sizeof path, "%s/%s.png", r->out, stem);
    MANTA_TRY(plot_write_png(f, path, err));
    snprintf(path, sizeof path, "%s/%s.svg", r->out, stem);
    MANTA_TRY(plot_write_svg(f, path, err));
    plot_out *po = &r->plots[r->n_plots++];
    snprintf(po->stem, sizeof po->stem, "%s", stem);
    snprintf(po->title, sizeof po->title, "%s", f->title ? f->title : stem);
    return MANTA_OK;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s && s[1] ? s + 1 : p;
}

static manta_status plot_training(report *r, manta_err *err)
{
    const manta_run_history *t = &r->train;
    const size_t n = t->loss.n;
    const int np = t->n_phases;
    double *pct = malloc((n + 1) * sizeof *pct), vx[MANTA_RUN_MAX_PHASES], vl[MANTA_RUN_MAX_PHASES],
           vs[MANTA_RUN_MAX_PHASES];
    if (!pct)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "training plot: out of memory");
    const double scale = t->stereo ? 1 : 100; /* top-1 in percent */
    for (size_t i = 0; i < n; i++)
        pct[i] = scale * t->metric.v[i];
    size_t nv = 0;
    for (int i = 0; i < np; i++)
        if (t->phases[i].has_val) {
            vx[nv] = (double)t->phases[i].val_step;
            vl[nv] = scale * t->phases[i].val_largest;
            vs[nv++] = scale * t->phases[i].val_smallest;
        }
    char title[256];
    if (snprintf(title, sizeof title, "Training: %s%s (%s)", t->stereo ? "stereo, " : "",
                 r->o.run ? base_name(r->o.run) : base_name(r->metrics_path),
                 r->metrics_path) >= (int)sizeof title)
        snprintf(title, sizeof title, "Training%s", t->stereo ? " (stereo)" : "");
    plot_figure *f = calloc(1, sizeof *f);
    if (!f) {
        free(pct);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "training plot: out of memory");
    }
    *f = (plot_figure){.title = title, .width = 1400, .height = 900, .cols = 2, .n_panels = 4};
    const char *unit = t->stereo ? "pairs/s" : "images/s";
    f->panel[0] = (plot_panel){.title = "Loss (mean over the steps since the last record)",
                               .xlabel = "step", .ylabel = "loss"};
    add_series(&f->panel[0], line("training loss", t->loss.step, t->loss.v, n, 0));
    f->panel[1] = (plot_panel){
        .title = t->stereo ? "End-point error: batch and held-out at phase ends"
                           : "Top-1: batch and validation at phase ends",
        .xlabel = "step",
        .ylabel = t->stereo ? "EPE (px)" : "top-1 (%)",
        .y_zero = true};
    add_series(&f->panel[1], line(t->stereo ? "batch EPE" : "batch top-1 (training)",
                                  t->metric.step, pct, n, 0));
    plot_series sl = points(t->stereo ? "held-out, largest" : "validation, largest", vx, vl, nv, 3,
                            PLOT_MARK_CIRCLE, false, 5);
    plot_series ss = points(t->stereo ? "held-out, smallest" : "validation, smallest", vx, vs, nv,
                            2, PLOT_MARK_TRIANGLE, false, 5.5);
    sl.line = ss.line = true;
    sl.dashed = ss.dashed = true;
    add_series(&f->panel[1], sl);
    add_series(&f->panel[1], ss);
    f->panel[2] = (plot_panel){.title = "Learning rate", .xlabel = "step", .ylabel = "learning rate",
                               .y_zero = true};
    add_series(&f->panel[2], line("learning rate", t->lr.step, t->lr.v, n, 4));
    char rt[64], ry[64];
    snprintf(rt, sizeof rt, "Throughput (%s)", unit);
    snprintf(ry, sizeof ry, "%s", unit);
    f->panel[3] = (plot_panel){.title = rt, .xlabel = "step", .ylabel = ry, .y_zero = true};
    add_series(&f->panel[3], line(unit, t->rate.step, t->rate.v, n, 1));
    for (int i = 0; i < 4; i++) {
        phase_spans(t, &f->panel[i]);
        f->panel[i].series[0].label = i == 1 ? f->panel[i].series[0].label : NULL;
    }
    if (f->panel[1].n_series == 1)
        f->panel[1].series[0].label = NULL;
    manta_status st = write_figure(r, f, "training", err);
    free(f);
    free(pct);
    return st;
}

/* The sizes of the sub-networks sampled in each record's window ("subnets" of the
 * classification trainer's progress records): MACs and parameters, mean with the smallest
 * and largest, in millions. */
static manta_status plot_subnets(report *r, manta_err *err)
{
    const manta_run_history *t = &r->train;
    double *v[2][3] = {{NULL}};
    plot_figure *f = calloc(1, sizeof *f);
    bool ok = f != NULL;
    for (int k = 0; k < 2 && ok; k++)
        for (int j = 0; j < 3 && ok; j++) {
            const manta_run_series *s = k ? &t->params[j] : &t->macs[j];
            ok = (v[k][j] = malloc((s->n + 1) * sizeof *v[k][j])) != NULL;
            for (size_t i = 0; ok && i < s->n; i++)
                v[k][j][i] = s->v[i] / 1e6;
        }
    manta_status st = MANTA_OK;
    if (!ok) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "sub-network plot: out of memory");
        goto out;
    }
    *f = (plot_figure){.title = "Sampled sub-networks: MACs and parameters", .width = 1400,
                       .height = 560, .cols = 2, .n_panels = 2};
    f->panel[0] = (plot_panel){.title = "MACs of the sub-networks sampled (one image, at the "
                                        "step's resolution)",
                               .xlabel = "step", .ylabel = "MACs (millions)", .y_zero = true};
    f->panel[1] = (plot_panel){.title = "Parameters of the sub-networks sampled",
                               .xlabel = "step", .ylabel = "parameters (millions)", .y_zero = true};
    static const char *const labels[3] = {"mean", "smallest", "largest"};
    for (int k = 0; k < 2; k++) {
        for (int j = 0; j < 3; j++) {
            const manta_run_series *s = k ? &t->params[j] : &t->macs[j];
            plot_series ps = line(labels[j], s->step, v[k][j], s->n, j == 0 ? 0 : j == 1 ? 2 : 3);
            ps.dashed = j > 0;
            add_series(&f->panel[k], ps);
        }
        phase_spans(t, &f->panel[k]);
    }
    st = write_figure(r, f, "subnets", err);
out:
    for (int k = 0; k < 2; k++)
        for (int j = 0; j < 3; j++)
            free(v[k][j]);
    free(f);
    return st;
}

static manta_status plot_ranks(report *r, manta_err *err)
{
    const manta_run_history *t = &r->train;
    size_t nr = t->n_ranks < PLOT_MAX_SERIES ? t->n_ranks : PLOT_MAX_SERIES;
    char labels[PLOT_MAX_SERIES][96], title[256];
    plot_figure *f = calloc(1, sizeof *f);
    if (!f)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "throughput plot: out of memory");
    bool have_ms = false, have_wait = false;
    for (size_t i = 0; i < nr; i++)
        for (size_t k = 0; k < t->ranks[i].step_ms.n; k++) {
            have_ms |= isfinite(t->ranks[i].step_ms.v[k]);
            have_wait |= isfinite(t->ranks[i].wait_ms.v[k]);
        }
    size_t np = 1 + have_ms + have_wait;
    if (t->n_ranks > nr)
        snprintf(title, sizeof title, "Per-rank throughput (the first %zu of %zu ranks)", nr,
                 t->n_ranks);
    else
        snprintf(title, sizeof title, "Per-rank throughput (%zu ranks)", t->n_ranks);
    *f = (plot_figure){.title = title, .width = np == 1 ? 1000 : np == 2 ? 1400 : 1800,
                       .height = 560, .cols = (int)np, .n_panels = np};
    const char *unit = t->stereo ? "pairs/s" : "images/s";
    plot_panel *ps = &f->panel[0], *pm = have_ms ? &f->panel[1] : NULL,
               *pw = have_wait ? &f->panel[np - 1] : NULL;
    *ps = (plot_panel){.title = "Throughput of each rank", .xlabel = "step", .ylabel = unit,
                       .y_zero = true};
    if (pm)
        *pm = (plot_panel){.title = "Step time of each rank", .xlabel = "step",
                           .ylabel = "step time (ms)", .y_zero = true};
    if (pw)
        *pw = (plot_panel){.title = "Waiting for data and the allreduce, each rank",
                           .xlabel = "step", .ylabel = "waiting per step (ms)", .y_zero = true};
    for (size_t i = 0; i < nr; i++) {
        const manta_run_rank *k = &t->ranks[i];
        if (k->device[0])
            snprintf(labels[i], sizeof labels[i], "rank %d (%.60s)", k->rank, k->device);
        else
            snprintf(labels[i], sizeof labels[i], "rank %d", k->rank);
        add_series(ps, line(labels[i], k->ips.step, k->ips.v, k->ips.n, (int)i));
        if (pm)
            add_series(pm, line(labels[i], k->step_ms.step, k->step_ms.v, k->step_ms.n, (int)i));
        if (pw)
            add_series(pw, line(labels[i], k->wait_ms.step, k->wait_ms.v, k->wait_ms.n, (int)i));
    }
    for (size_t p = 0; p < f->n_panels; p++)
        phase_spans(t, &f->panel[p]);
    manta_status st = write_figure(r, f, "throughput", err);
    free(f);
    return st;
}

/* The x (latency) and y (top-1 in %) of the candidates of @p c that pass @p keep. */
typedef bool (*cand_pred)(const rep_cand *c);
static bool c_uniform(const rep_cand *c) { return c->uniform; }
static bool c_other(const rep_cand *c) { return !c->uniform; }
static bool c_all(const rep_cand *c) { (void)c; return true; }

static size_t pick(const rep_cand *c, size_t n, cand_pred keep, bool val, double *x, double *y)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep(&c[i]) && (!val || isfinite(c[i].val_top1))) {
            x[k] = c[i].latency_ms;
            y[k++] = 100 * (val ? c[i].val_top1 : c[i].predicted_top1);
        }
    return k;
}

static manta_status plot_search(report *r, manta_err *err)
{
    const rep_search *s = &r->search;
    size_t cap = s->n_front + s->n_cand + 1; /* the uniform ones: of the front and re-ranked */
    double *buf = malloc(16 * cap * sizeof *buf);
    plot_figure *f = calloc(1, sizeof *f);
    if (!buf || !f) {
        free(buf), free(f);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search plot: out of memory");
    }
    double *fx = buf, *fy = fx + cap, *ux = fy + cap, *uy = ux + cap, *px = uy + cap, *py = px + cap,
           *mx = py + cap, *my = mx + cap, *umx = my + cap, *umy = umx + cap, *ex = umy + cap,
           *ey = ex + 3 * cap;
    char title[384], budget[64], chosen[96];
    snprintf(title, sizeof title, "Search: top-1 against predicted latency (%s on %.100s)",
             s->space[0] ? s->space : "?", s->device[0] ? s->device : "?");
    *f = (plot_figure){.title = title, .width = 1100, .height = 720, .n_panels = 1};
    plot_panel *p = &f->panel[0];
    *p = (plot_panel){.title = "Pareto front, re-ranked candidates, uniform sub-networks, chosen",
                      .xlabel = "predicted latency (ms)", .ylabel = "top-1 (%)"};
    size_t nf = pick(s->front, s->n_front, c_all, false, fx, fy);
    size_t nu = pick(s->front, s->n_front, c_uniform, false, ux, uy); /* then the re-ranked */
    nu += pick(s->cand, s->n_cand, c_uniform, false, ux + nu, uy + nu);
    size_t np = pick(s->cand, s->n_cand, c_other, false, px, py);
    size_t nm = pick(s->cand, s->n_cand, c_other, true, mx, my);
    size_t num = pick(s->cand, s->n_cand, c_uniform, true, umx, umy);
    plot_series front = points("Pareto front (predicted top-1)", fx, fy, nf, 0, PLOT_MARK_CIRCLE,
                               false, 3);
    front.line = true;
    /* each measured candidate's predicted and validation top-1 joined: the predictor's error */
    size_t ne = 0;
    for (size_t i = 0; i < s->n_cand; i++)
        if (isfinite(s->cand[i].val_top1)) {
            ex[ne] = ex[ne + 1] = s->cand[i].latency_ms, ex[ne + 2] = NAN;
            ey[ne] = 100 * s->cand[i].predicted_top1, ey[ne + 1] = 100 * s->cand[i].val_top1;
            ey[ne + 2] = NAN;
            ne += 3;
        }
    plot_series err_lines = line("predicted to measured", ex, ey, ne, 7);
    err_lines.dashed = true;
    add_series(p, err_lines);
    add_series(p, front);
    add_series(p, points("re-ranked: predicted", px, py, np, 1, PLOT_MARK_CIRCLE, true, 4.5));
    add_series(p, points("re-ranked: validation", mx, my, nm, 1, PLOT_MARK_DIAMOND, false, 5));
    add_series(p, points("uniform: predicted", ux, uy, nu, 2, PLOT_MARK_SQUARE, true, 5));
    add_series(p, points("uniform: validation", umx, umy, num, 2, PLOT_MARK_SQUARE, false, 5));
    double cx = s->best.latency_ms,
           cy = 100 * (isfinite(s->best.val_top1) ? s->best.val_top1 : s->best.predicted_top1);
    snprintf(chosen, sizeof chosen, "chosen: %.2f%% %s at %.3f ms", cy,
             isfinite(s->best.val_top1) ? "validation" : "predicted", cx);
    add_series(p, points(chosen, &cx, &cy, 1, 3, PLOT_MARK_STAR, false, 10));
    if (s->budget_ms > 0) {
        snprintf(budget, sizeof budget, "budget %.4g ms", s->budget_ms);
        p->vlines[p->n_vlines++] = (plot_vline){s->budget_ms, budget, {0.35, 0.35, 0.35}, true};
    }
    manta_status st = write_figure(r, f, "search", err);
    free(f);
    free(buf);
    return st;
}

static manta_status plot_latency(report *r, manta_err *err)
{
    const rep_latency *l = &r->lat;
    double hi = 0;
    for (size_t i = 0; i < l->n; i++)
        hi = fmax(hi, fmax(l->pred[i], l->meas[i]));
    plot_ticks t;
    plot_nice_ticks(0, hi * 1.05, 6, &t);
    hi = t.hi;
    const double dx[2] = {0, hi}, dy[2] = {0, hi}, up[2] = {0, 1.1 * hi}, lo[2] = {0, 0.9 * hi};
    char title[384], sub[256], lab[64];
    snprintf(title, sizeof title, "Latency table check: predicted against measured (%.150s)",
             l->device[0] ? l->device : r->lat_path);
    if (l->has_summary && isfinite(l->mean_abs_pct))
        snprintf(sub, sizeof sub,
                 "%zu sub-networks: mean |error| %.1f%%, within 10%%: %.0f%%, Kendall tau %.2f",
                 l->n, l->mean_abs_pct, 100 * l->within_10pct, l->kendall_tau);
    else
        snprintf(sub, sizeof sub, "%zu sub-networks", l->n);
    plot_figure *f = calloc(1, sizeof *f);
    if (!f)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "latency plot: out of memory");
    *f = (plot_figure){.title = title, .width = 900, .height = 760, .n_panels = 1};
    plot_panel *p = &f->panel[0];
    *p = (plot_panel){.title = sub, .xlabel = "measured latency (ms)",
                      .ylabel = "predicted latency (ms)", .fix_x = true, .fix_y = true,
                      .x_lo = 0, .x_hi = hi, .y_lo = 0, .y_hi = hi};
    plot_series eq = line("predicted = measured", dx, dy, 2, 7);
    plot_series a = line("+10% / -10%", dx, up, 2, 7), b = line(NULL, dx, lo, 2, 7);
    a.dashed = b.dashed = true;
    add_series(p, eq);
    add_series(p, a);
    add_series(p, b);
    snprintf(lab, sizeof lab, "sub-networks (%zu)", l->n);
    add_series(p, points(lab, l->meas, l->pred, l->n, 0, PLOT_MARK_CIRCLE, false, 4.5));
    manta_status st = write_figure(r, f, "latency", err);
    free(f);
    return st;
}

/* ---- the page ---- */

static void html_esc(manta_strbuf *b, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': manta_strbuf_printf(b, "&lt;"); break;
        case '>': manta_strbuf_printf(b, "&gt;"); break;
        case '&': manta_strbuf_printf(b, "&amp;"); break;
        case '"': manta_strbuf_printf(b, "&quot;"); break;
        default: manta_strbuf_printf(b, "%c", *s);
        }
    }
}

static void row(manta_strbuf *b, const char *key, const char *fmt, double v)
{
    if (!isfinite(v))
        return;
    manta_strbuf_printf(b, "<tr><th>%s</th><td>", key);
    manta_strbuf_printf(b, fmt, v);
    manta_strbuf_printf(b, "</td></tr>\n");
}

static void row_str(manta_strbuf *b, const char *key, const char *v)
{
    if (!v || !v[0])
        return;
    manta_strbuf_printf(b, "<tr><th>%s</th><td>", key);
    html_esc(b, v);
    manta_strbuf_printf(b, "</td></tr>\n");
}

static void html_training(manta_strbuf *b, const report *r)
{
    const manta_run_history *t = &r->train;
    size_t n = t->loss.n;
    manta_strbuf_printf(b, "<h2>Training</h2>\n<table>\n");
    row_str(b, "metrics", r->metrics_path);
    manta_strbuf_printf(b, "<tr><th>steps</th><td>%.0f", t->loss.step[n - 1]);
    if (t->steps > 0)
        manta_strbuf_printf(b, " of %ld", t->steps);
    manta_strbuf_printf(b, "</td></tr>\n");
    row(b, "final loss", "%.4f", t->loss.v[n - 1]);
    if (t->stereo)
        row(b, "final batch EPE", "%.3f px", t->metric.v[n - 1]);
    else
        row(b, "final batch top-1", "%.2f%%", 100 * t->metric.v[n - 1]);
    row(b, t->stereo ? "final pairs/s" : "final images/s", "%.1f", t->rate.v[n - 1]);
    const manta_run_series *mm = t->macs, *pp = t->params;
    if (mm[0].n > 0 && mm[1].n == mm[0].n && mm[2].n == mm[0].n) {
        size_t k = mm[0].n - 1;
        manta_strbuf_printf(b, "<tr><th>sampled sub-networks, last record: MACs</th><td>%.2f M "
                               "(%.2f to %.2f M)</td></tr>\n",
                            mm[0].v[k] / 1e6, mm[1].v[k] / 1e6, mm[2].v[k] / 1e6);
    }
    if (pp[0].n > 0 && pp[1].n == pp[0].n && pp[2].n == pp[0].n) {
        size_t k = pp[0].n - 1;
        manta_strbuf_printf(b, "<tr><th>sampled sub-networks, last record: parameters</th><td>"
                               "%.3f M (%.3f to %.3f M)</td></tr>\n",
                            pp[0].v[k] / 1e6, pp[1].v[k] / 1e6, pp[2].v[k] / 1e6);
    }
    manta_strbuf_printf(b, "</table>\n<table>\n<tr><th>phase</th><th>last step</th><th>%s</th>"
                           "<th>%s</th></tr>\n",
                        t->stereo ? "held-out EPE, largest" : "validation top-1, largest",
                        t->stereo ? "held-out EPE, smallest" : "validation top-1, smallest");
    for (int i = 0; i < t->n_phases; i++) {
        const manta_run_phase *p = &t->phases[i];
        if (!p->seen)
            continue;
        manta_strbuf_printf(b, "<tr><td>%d. ", i + 1);
        html_esc(b, p->name);
        manta_strbuf_printf(b, "</td><td>%ld</td>", p->last_step);
        if (!p->has_val)
            manta_strbuf_printf(b, "<td>-</td><td>-</td></tr>\n");
        else if (t->stereo)
            manta_strbuf_printf(b, "<td>%.3f px</td><td>%.3f px</td></tr>\n", p->val_largest,
                                p->val_smallest);
        else
            manta_strbuf_printf(b, "<td>%.2f%%</td><td>%.2f%%</td></tr>\n", 100 * p->val_largest,
                                100 * p->val_smallest);
    }
    manta_strbuf_printf(b, "</table>\n");
}

static void html_search(manta_strbuf *b, const report *r)
{
    const rep_search *s = &r->search;
    manta_strbuf_printf(b, "<h2>Search</h2>\n<table>\n");
    row_str(b, "result", r->search_path);
    row_str(b, "space", s->space);
    row_str(b, "latency table's device", s->device);
    if (s->budget_ms > 0)
        row(b, "latency budget", "%.4g ms", s->budget_ms);
    row_str(b, "chosen sub-network", s->best_arch);
    row(b, "predicted top-1", "%.2f%%", 100 * s->best.predicted_top1);
    row(b, "validation top-1 (re-rank)", "%.2f%%", 100 * s->best.val_top1);
    row(b, "predicted latency", "%.3f ms", s->best.latency_ms);
    row(b, "MACs", "%.0f", s->best_macs);
    row(b, "arena", "%.1f KiB", s->best_arena_bytes / 1024);
    row(b, "model file", "%.1f KiB", s->best_file_bytes / 1024);
    row(b, "test top-1 (engine, test.json)", "%.2f%%", 100 * r->test_top1);
    row(b, "measured latency (bench.json, p10)", "%.3f ms", r->bench_p10);
    row(b, "measured latency (bench.json, median)", "%.3f ms", r->bench_med);
    if (s->evaluated >= 0)
        row(b, "candidates evaluated", "%.0f", (double)s->evaluated);
    row(b, "Pareto front points", "%.0f", r->have_front ? (double)s->n_front : NAN);
    manta_strbuf_printf(b, "</table>\n");
}

static void html_latency(manta_strbuf *b, const report *r)
{
    const rep_latency *l = &r->lat;
    manta_strbuf_printf(b, "<h2>Latency table</h2>\n<table>\n");
    row_str(b, "validation", r->lat_path);
    row_str(b, "device", l->device);
    row(b, "sub-networks timed", "%.0f", (double)l->n);
    if (l->has_summary) {
        row(b, "mean |error|", "%.1f%%", l->mean_abs_pct);
        row(b, "within 10%", "%.0f%%", 100 * l->within_10pct);
        row(b, "Kendall tau", "%.2f", l->kendall_tau);
    }
    manta_strbuf_printf(b, "</table>\n");
}

static manta_status write_html(report *r, manta_err *err)
{
    manta_strbuf b = {0};
    const char *name = r->o.run ? r->o.run : r->out;
    manta_strbuf_printf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                            "<title>manta report: ");
    html_esc(&b, name);
    manta_strbuf_printf(
        &b, "</title>\n<style>\nbody{font-family:sans-serif;margin:2em auto;max-width:1200px;"
            "color:#222;padding:0 1em}\ntable{border-collapse:collapse;margin:0.5em 0 1em}\n"
            "th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\n"
            "th{background:#f3f5f8;font-weight:600}\ntd{font-family:monospace;word-break:break-all}"
            "\nfigure{margin:1.5em 0}\nfigure img{max-width:100%%;border:1px solid #ddd}\n"
            ".skipped{color:#a33}\n</style>\n</head>\n<body>\n<h1>manta report: ");
    html_esc(&b, name);
    manta_strbuf_printf(&b, "</h1>\n");
    if (r->have_train)
        html_training(&b, r);
    if (r->have_search)
        html_search(&b, r);
    if (r->have_lat)
        html_latency(&b, r);
    if (r->n_plots > 0)
        manta_strbuf_printf(&b, "<h2>Plots</h2>\n");
    for (int i = 0; i < r->n_plots; i++) {
        const plot_out *p = &r->plots[i];
        manta_strbuf_printf(&b, "<figure id=\"%s\">\n<a href=\"%s.png\"><img src=\"%s.svg\" alt=\"",
                            p->stem, p->stem, p->stem);
        html_esc(&b, p->title);
        manta_strbuf_printf(&b, "\"></a>\n<figcaption>");
        html_esc(&b, p->title);
        manta_strbuf_printf(&b, " (<a href=\"%s.svg\">SVG</a>, <a href=\"%s.png\">PNG</a>)"
                                "</figcaption>\n</figure>\n",
                            p->stem, p->stem);
    }
    if (r->n_skipped > 0) {
        manta_strbuf_printf(&b, "<h2>Skipped</h2>\n<ul class=\"skipped\">\n");
        for (int i = 0; i < r->n_skipped; i++) {
            manta_strbuf_printf(&b, "<li>");
            html_esc(&b, r->skipped[i]);
            manta_strbuf_printf(&b, "</li>\n");
        }
        manta_strbuf_printf(&b, "</ul>\n");
    }
    manta_strbuf_printf(&b, "</body>\n</html>\n");
    char path[PATH_CAP + 16];
    snprintf(path, sizeof path, "%s/index.html", r->out);
    return manta_strbuf_write_file(&b, path, err);
}

/* ---- the command ---- */

static int parse_args(int argc, char **argv, report_opts *o)
{
    *o = (report_opts){0};
    const opt_def defs[] = {
        {.name = "out", .kind = OPT_STRING, .dest = &o->out, .metavar = "DIR",
         .help = "where the plots and index.html go (default RUN_DIR/report)"},
        {.name = "metrics", .kind = OPT_STRING, .dest = &o->metrics, .metavar = "FILE",
         .help = "training metrics (default RUN_DIR/[supernet/]metrics.jsonl)"},
        {.name = "search", .kind = OPT_STRING, .dest = &o->search, .metavar = "FILE",
         .help = "search.json or its folder (default RUN_DIR/[search/]search.json)"},
        {.name = "latency", .kind = OPT_STRING, .dest = &o->latency, .metavar = "FILE",
         .help = "the table's validation CSV (default RUN_DIR/validate.csv)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o->json,
         .help = "one JSON line: folder, files written, skipped"},
        {.name = "quiet", .kind = OPT_FLAG, .dest = &o->quiet, .help = "print errors only"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta report", "[RUN_DIR] [--out DIR] [--metrics FILE] [--search FILE] [--latency FILE]\n"
                        "                    [--json] [--quiet]",
        "Plots of a run as PNG and SVG, drawn with cairo, and DIR/index.html showing them\n"
        "all with the key figures (final losses, phase-end validation, the chosen\n"
        "sub-network with its predicted accuracy and latency):\n"
        "  training.png    loss, batch top-1 (EPE for stereo runs), learning rate and\n"
        "                  images/s against step; phases shaded and named; validation\n"
        "                  top-1 (held-out EPE) of the largest and smallest sub-network\n"
        "                  at each phase's end\n"
        "  subnets.png     MACs and parameters of the sub-networks sampled (mean, smallest,\n"
        "                  largest) against step, when the progress records carry \"subnets\"\n"
        "  throughput.png  images/s, step time and time waiting for data and the\n"
        "                  allreduce of each rank, when the progress records carry \"ranks\"\n"
        "  search.png      the search's Pareto front (predicted top-1 against predicted\n"
        "                  latency), the re-ranked candidates predicted and measured,\n"
        "                  the uniform sub-networks, the chosen one and the budget\n"
        "  latency.png     the latency table's predicted against measured latency of\n"
        "                  whole sub-networks, with +-10% lines\n"
        "RUN_DIR is a training folder (metrics.jsonl) or a demo folder (supernet/,\n"
        "search/, validate.csv); what is missing is skipped with one line saying so.\n"
        "--search also takes the folder of search.json (front.csv is read beside it).\n"
        "--latency takes the CSV of manta-profile --validate K --csv F (or of manta\n"
        "profile --lut T --csv F), its summary (--json, F.json beside the CSV), or the\n"
        "latency table (validate.csv and validate.json beside it).\n"
        "Without RUN_DIR, name the inputs and --out DIR. Every file is replaced\n"
        "atomically. Exit status 1 when an input cannot be read or nothing is found.\n",
        defs, 0, 1};
    int first;
    opt_result res = opt_parse(&cmd, argc, argv, &first);
    if (res != OPT_OK)
        return res == OPT_HELP ? 0 : 2;
    o->run = first < argc ? argv[first] : NULL;
    if (!o->run && !o->metrics && !o->search && !o->latency) {
        fprintf(stderr, "manta report: give RUN_DIR, or --metrics, --search or --latency with "
                        "--out DIR (see --help)\n");
        return 2;
    }
    if (!o->run && !o->out) {
        fprintf(stderr, "manta report: --out DIR is needed without RUN_DIR\n");
        return 2;
    }
    return 1;
}

static void report_free(report *r)
{
    manta_run_history_free(&r->train);
    rep_search_free(&r->search);
    rep_latency_free(&r->lat);
}

static void print_json(const report *r)
{
    printf("{\"out\":");
    cmd_json_str(stdout, r->out);
    printf(",\"files\":[");
    for (int i = 0; i < r->n_plots; i++)
        printf("%s\"%s.png\",\"%s.svg\"", i ? "," : "", r->plots[i].stem, r->plots[i].stem);
    printf("%s\"index.html\"],\"skipped\":[", r->n_plots ? "," : "");
    for (int i = 0; i < r->n_skipped; i++) {
        if (i)
            printf(",");
        cmd_json_str(stdout, r->skipped[i]);
    }
    printf("],");
    cmd_json_version(stdout);
    printf("}\n");
}

/* Read every input (nothing is written when one cannot be read). */
static bool load_all(report *r)
{
    const report_opts *o = &r->o;
    struct stat st;
    if (o->run && stat(o->run, &st) != 0) {
        fprintf(stderr, "manta report: %s: %s\n", o->run, strerror(errno));
        return false;
    }
    if (o->run && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "manta report: %s: not a folder (RUN_DIR is a run's folder)\n", o->run);
        return false;
    }
    if (!load_training(r) || !load_search(r) || !load_latency(r))
        return false;
    if (!r->have_train && !r->have_search && !r->have_lat) {
        fprintf(stderr, "manta report: %s: nothing to report: no training progress, search result "
                        "or latency validation found (see manta report --help)\n",
                o->run ? o->run : "the inputs");
        return false;
    }
    r->test_top1 = r->bench_p10 = r->bench_med = NAN;
    char p[PATH_CAP];
    if (o->run && find_in(p, o->run, "test.json"))
        r->test_top1 = json_file_number(p, NULL, "top1");
    if (o->run && find_in(p, o->run, "bench.json")) {
        r->bench_p10 = json_file_number(p, "bench", "p10_ms");
        r->bench_med = json_file_number(p, "bench", "median_ms");
    }
    return true;
}

int cmd_report(int argc, char **argv)
{
    report *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "manta report: out of memory\n");
        return 1;
    }
    int rc = parse_args(argc, argv, &r->o);
    if (rc != 1) {
        free(r);
        return rc;
    }
    rc = 1;
    const report_opts *o = &r->o;
    if (o->out)
        snprintf(r->out, sizeof r->out, "%s", o->out);
    else
        snprintf(r->out, sizeof r->out, "%s/report", o->run);
    manta_err err;
    manta_err_clear(&err);
    if (!load_all(r))
        goto out;
    if (manta_file_mkdir_p(r->out, &err) != MANTA_OK) {
        fail(&err);
        goto out;
    }
    if ((r->have_train && plot_training(r, &err) != MANTA_OK) ||
        (r->have_train && r->train.macs[0].n > 0 && plot_subnets(r, &err) != MANTA_OK) ||
        (r->have_train && r->train.n_ranks > 0 && plot_ranks(r, &err) != MANTA_OK) ||
        (r->have_search && plot_search(r, &err) != MANTA_OK) ||
        (r->have_lat && plot_latency(r, &err) != MANTA_OK) || write_html(r, &err) != MANTA_OK) {
        fail(&err);
        goto out;
    }
    if (o->json)
        print_json(r);
    else if (!o->quiet) {
        for (int i = 0; i < r->n_skipped; i++)
            printf("skipped %s\n", r->skipped[i]);
        for (int i = 0; i < r->n_plots; i++)
            printf("wrote %s/%s.png and .svg: %s\n", r->out, r->plots[i].stem, r->plots[i].title);
        printf("wrote %s/index.html\n", r->out);
    }
    rc = 0;
out:
    report_free(r);
    free(r);
    /* cairo's font caches (fontconfig patterns), so that leak checkers see no leak; no cairo
     * object is alive here */
    cairo_debug_reset_static_data();
    return rc;
}
