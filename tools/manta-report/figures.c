/* manta report's figures (report.h): the training curves per phase, the sampled
 * sub-networks' sizes, per-rank throughput, the search's accuracy against latency with its
 * Pareto front, the chosen and the uniform sub-networks, and the latency table's predicted
 * against measured latency; each as a PNG and an SVG drawn by plot.h. */
#include "manta-report/report.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manta-report/plot.h"

static plot_series line(const char *label, const double *x, const double *y, size_t n, int color)
{
    return (plot_series){
        .label = label, .x = x, .y = y, .n = n, .color = plot_palette(color), .line = true};
}

static plot_series points(const char *label, const double *x, const double *y, size_t n, int color,
                          plot_marker m, bool hollow, double size)
{
    return (plot_series){.label = label,
                         .x = x,
                         .y = y,
                         .n = n,
                         .color = plot_palette(color),
                         .marker = m,
                         .hollow = hollow,
                         .size = size};
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

static manta_status write_figure(report *r, const plot_figure *f, const char *stem, manta_err *err)
{
    char path[REP_PATH_CAP + 64];
    snprintf(path, sizeof path, "%s/%s.png", r->out, stem);
    MANTA_TRY(plot_write_png(f, path, err));
    snprintf(path, sizeof path, "%s/%s.svg", r->out, stem);
    MANTA_TRY(plot_write_svg(f, path, err));
    report_plot *po = &r->plots[r->n_plots++];
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
    const manta_run_history *t = &r->in.train;
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
                 r->run ? base_name(r->run) : base_name(r->in.metrics_path),
                 r->in.metrics_path) >= (int)sizeof title)
        snprintf(title, sizeof title, "Training%s", t->stereo ? " (stereo)" : "");
    plot_figure *f = calloc(1, sizeof *f);
    if (!f) {
        free(pct);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "training plot: out of memory");
    }
    *f = (plot_figure){.title = title, .width = 1400, .height = 900, .cols = 2, .n_panels = 4};
    const char *unit = t->stereo ? "pairs/s" : "images/s";
    f->panel[0] = (plot_panel){.title = "Loss (mean over the steps since the last record)",
                               .xlabel = "step",
                               .ylabel = "loss"};
    add_series(&f->panel[0], line("training loss", t->loss.step, t->loss.v, n, 0));
    f->panel[1] =
        (plot_panel){.title = t->stereo ? "End-point error: batch and held-out at phase ends"
                                        : "Top-1: batch and validation at phase ends",
                     .xlabel = "step",
                     .ylabel = t->stereo ? "EPE (px)" : "top-1 (%)",
                     .y_zero = true};
    add_series(&f->panel[1],
               line(t->stereo ? "batch EPE" : "batch top-1 (training)", t->metric.step, pct, n, 0));
    plot_series sl = points(t->stereo ? "held-out, largest" : "validation, largest", vx, vl, nv, 3,
                            PLOT_MARK_CIRCLE, false, 5);
    plot_series ss = points(t->stereo ? "held-out, smallest" : "validation, smallest", vx, vs, nv,
                            2, PLOT_MARK_TRIANGLE, false, 5.5);
    sl.line = ss.line = true;
    sl.dashed = ss.dashed = true;
    add_series(&f->panel[1], sl);
    add_series(&f->panel[1], ss);
    f->panel[2] = (plot_panel){
        .title = "Learning rate", .xlabel = "step", .ylabel = "learning rate", .y_zero = true};
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
    const manta_run_history *t = &r->in.train;
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
    *f = (plot_figure){.title = "Sampled sub-networks: MACs and parameters",
                       .width = 1400,
                       .height = 560,
                       .cols = 2,
                       .n_panels = 2};
    f->panel[0] = (plot_panel){.title = "MACs of the sub-networks sampled (one image, at the "
                                        "step's resolution)",
                               .xlabel = "step",
                               .ylabel = "MACs (millions)",
                               .y_zero = true};
    f->panel[1] = (plot_panel){.title = "Parameters of the sub-networks sampled",
                               .xlabel = "step",
                               .ylabel = "parameters (millions)",
                               .y_zero = true};
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
    const manta_run_history *t = &r->in.train;
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
    *f = (plot_figure){.title = title,
                       .width = np == 1   ? 1000
                                : np == 2 ? 1400
                                          : 1800,
                       .height = 560,
                       .cols = (int)np,
                       .n_panels = np};
    const char *unit = t->stereo ? "pairs/s" : "images/s";
    plot_panel *ps = &f->panel[0], *pm = have_ms ? &f->panel[1] : NULL,
               *pw = have_wait ? &f->panel[np - 1] : NULL;
    *ps = (plot_panel){
        .title = "Throughput of each rank", .xlabel = "step", .ylabel = unit, .y_zero = true};
    if (pm)
        *pm = (plot_panel){.title = "Step time of each rank",
                           .xlabel = "step",
                           .ylabel = "step time (ms)",
                           .y_zero = true};
    if (pw)
        *pw = (plot_panel){.title = "Waiting for data and the allreduce, each rank",
                           .xlabel = "step",
                           .ylabel = "waiting per step (ms)",
                           .y_zero = true};
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
static bool c_all(const rep_cand *c)
{
    (void)c;
    return true;
}

static size_t pick(const rep_cand *c, size_t n, cand_pred keep, bool val, double k100, double *x,
                   double *y)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (keep(&c[i]) && (!val || isfinite(c[i].val_top1))) {
            x[k] = c[i].latency_ms;
            y[k++] = k100 * (val ? c[i].val_top1 : c[i].predicted_top1);
        }
    return k;
}

static manta_status plot_search(report *r, manta_err *err)
{
    const rep_search *s = &r->in.search;
    size_t cap = s->n_front + s->n_cand + 1; /* the uniform ones: of the front and re-ranked */
    double *buf = malloc(16 * cap * sizeof *buf);
    plot_figure *f = calloc(1, sizeof *f);
    if (!buf || !f) {
        free(buf), free(f);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search plot: out of memory");
    }
    double *fx = buf, *fy = fx + cap, *ux = fy + cap, *uy = ux + cap, *px = uy + cap,
           *py = px + cap, *mx = py + cap, *my = mx + cap, *umx = my + cap, *umy = umx + cap,
           *ex = umy + cap, *ey = ex + 3 * cap;
    char title[384], budget[64], chosen[96];
    /* top-1 in %, or a stereo search's EPE in px (measured on held-out pairs) */
    const double k = s->stereo ? 1 : 100;
    const char *what = s->stereo ? "EPE" : "top-1", *meas = s->stereo ? "held-out" : "validation";
    char pf[64], rp[64], rv[64], up[64], uv[64];
    snprintf(pf, sizeof pf, "Pareto front (predicted %s)", what);
    snprintf(rp, sizeof rp, "re-ranked: predicted");
    snprintf(rv, sizeof rv, "re-ranked: %s", meas);
    snprintf(up, sizeof up, "uniform: predicted");
    snprintf(uv, sizeof uv, "uniform: %s", meas);
    snprintf(title, sizeof title, "Search: %s against predicted latency (%s on %.100s)", what,
             s->space[0] ? s->space : "?", s->device[0] ? s->device : "?");
    *f = (plot_figure){.title = title, .width = 1100, .height = 720, .n_panels = 1};
    plot_panel *p = &f->panel[0];
    *p = (plot_panel){.title = "Pareto front, re-ranked candidates, uniform sub-networks, chosen",
                      .xlabel = "predicted latency (ms)",
                      .ylabel = s->stereo ? "EPE (px)" : "top-1 (%)"};
    size_t nf = pick(s->front, s->n_front, c_all, false, k, fx, fy);
    size_t nu = pick(s->front, s->n_front, c_uniform, false, k, ux, uy); /* then the re-ranked */
    nu += pick(s->cand, s->n_cand, c_uniform, false, k, ux + nu, uy + nu);
    size_t np = pick(s->cand, s->n_cand, c_other, false, k, px, py);
    size_t nm = pick(s->cand, s->n_cand, c_other, true, k, mx, my);
    size_t num = pick(s->cand, s->n_cand, c_uniform, true, k, umx, umy);
    plot_series front = points(pf, fx, fy, nf, 0, PLOT_MARK_CIRCLE, false, 3);
    front.line = true;
    /* each measured candidate's predicted and validation top-1 joined: the predictor's error */
    size_t ne = 0;
    for (size_t i = 0; i < s->n_cand; i++)
        if (isfinite(s->cand[i].val_top1)) {
            ex[ne] = ex[ne + 1] = s->cand[i].latency_ms, ex[ne + 2] = NAN;
            ey[ne] = k * s->cand[i].predicted_top1, ey[ne + 1] = k * s->cand[i].val_top1;
            ey[ne + 2] = NAN;
            ne += 3;
        }
    plot_series err_lines = line("predicted to measured", ex, ey, ne, 7);
    err_lines.dashed = true;
    add_series(p, err_lines);
    add_series(p, front);
    add_series(p, points(rp, px, py, np, 1, PLOT_MARK_CIRCLE, true, 4.5));
    add_series(p, points(rv, mx, my, nm, 1, PLOT_MARK_DIAMOND, false, 5));
    add_series(p, points(up, ux, uy, nu, 2, PLOT_MARK_SQUARE, true, 5));
    add_series(p, points(uv, umx, umy, num, 2, PLOT_MARK_SQUARE, false, 5));
    double cx = s->best.latency_ms,
           cy = k * (isfinite(s->best.val_top1) ? s->best.val_top1 : s->best.predicted_top1);
    snprintf(chosen, sizeof chosen, "chosen: %.*f%s %s at %.3f ms", s->stereo ? 3 : 2, cy,
             s->stereo ? " px" : "%", isfinite(s->best.val_top1) ? meas : "predicted", cx);
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
    const rep_latency *l = &r->in.lat;
    double hi = 0;
    for (size_t i = 0; i < l->n; i++)
        hi = fmax(hi, fmax(l->pred[i], l->meas[i]));
    plot_ticks t;
    rep_nice_ticks(0, hi * 1.05, 6, &t);
    hi = t.hi;
    const double dx[2] = {0, hi}, dy[2] = {0, hi}, up[2] = {0, 1.1 * hi}, lo[2] = {0, 0.9 * hi};
    char title[384], sub[256], lab[64];
    snprintf(title, sizeof title, "Latency table check: predicted against measured (%.150s)",
             l->device[0] ? l->device : r->in.lat_path);
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
    *p = (plot_panel){.title = sub,
                      .xlabel = "measured latency (ms)",
                      .ylabel = "predicted latency (ms)",
                      .fix_x = true,
                      .fix_y = true,
                      .x_lo = 0,
                      .x_hi = hi,
                      .y_lo = 0,
                      .y_hi = hi};
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

manta_status report_figures(report *r, manta_err *err)
{
    const rep_inputs *in = &r->in;
    if (in->have_train)
        MANTA_TRY(plot_training(r, err));
    if (in->have_train && in->train.macs[0].n > 0)
        MANTA_TRY(plot_subnets(r, err));
    if (in->have_train && in->train.n_ranks > 0)
        MANTA_TRY(plot_ranks(r, err));
    if (in->have_search)
        MANTA_TRY(plot_search(r, err));
    if (in->have_lat)
        MANTA_TRY(plot_latency(r, err));
    return MANTA_OK;
}
