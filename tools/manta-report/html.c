/* manta report's page (report.h): index.html with the figures and the key figures of
 * each input. */
#include "manta-report/report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/strbuf.h"

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
    const manta_run_history *t = &r->in.train;
    size_t n = t->loss.n;
    manta_strbuf_printf(b, "<h2>Training</h2>\n<table>\n");
    row_str(b, "metrics", r->in.metrics_path);
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
        manta_strbuf_printf(b,
                            "<tr><th>sampled sub-networks, last record: MACs</th><td>%.2f M "
                            "(%.2f to %.2f M)</td></tr>\n",
                            mm[0].v[k] / 1e6, mm[1].v[k] / 1e6, mm[2].v[k] / 1e6);
    }
    if (pp[0].n > 0 && pp[1].n == pp[0].n && pp[2].n == pp[0].n) {
        size_t k = pp[0].n - 1;
        manta_strbuf_printf(b,
                            "<tr><th>sampled sub-networks, last record: parameters</th><td>"
                            "%.3f M (%.3f to %.3f M)</td></tr>\n",
                            pp[0].v[k] / 1e6, pp[1].v[k] / 1e6, pp[2].v[k] / 1e6);
    }
    manta_strbuf_printf(b,
                        "</table>\n<table>\n<tr><th>phase</th><th>last step</th><th>%s</th>"
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
    const rep_search *s = &r->in.search;
    manta_strbuf_printf(b, "<h2>Search</h2>\n<table>\n");
    row_str(b, "result", r->in.search_path);
    row_str(b, "space", s->space);
    row_str(b, "latency table's device", s->device);
    if (s->budget_ms > 0)
        row(b, "latency budget", "%.4g ms", s->budget_ms);
    row_str(b, "chosen sub-network", s->best_arch);
    if (s->stereo) {
        row(b, "predicted EPE", "%.3f px", s->best.predicted_top1);
        row(b, "held-out EPE (re-rank)", "%.3f px", s->best.val_top1);
    } else {
        row(b, "predicted top-1", "%.2f%%", 100 * s->best.predicted_top1);
        row(b, "validation top-1 (re-rank)", "%.2f%%", 100 * s->best.val_top1);
    }
    row(b, "predicted latency", "%.3f ms", s->best.latency_ms);
    row(b, "MACs", "%.0f", s->best_macs);
    row(b, "arena", "%.1f KiB", s->best_arena_bytes / 1024);
    row(b, "model file", "%.1f KiB", s->best_file_bytes / 1024);
    if (s->stereo)
        row(b, "test EPE (engine, test.json)", "%.3f px", r->in.test_top1);
    else
        row(b, "test top-1 (engine, test.json)", "%.2f%%", 100 * r->in.test_top1);
    row(b, "measured latency (bench.json, p10)", "%.3f ms", r->in.bench_p10);
    row(b, "measured latency (bench.json, median)", "%.3f ms", r->in.bench_med);
    if (s->evaluated >= 0)
        row(b, "candidates evaluated", "%.0f", (double)s->evaluated);
    row(b, "Pareto front points", "%.0f", r->in.have_front ? (double)s->n_front : NAN);
    manta_strbuf_printf(b, "</table>\n");
}

static void html_latency(manta_strbuf *b, const report *r)
{
    const rep_latency *l = &r->in.lat;
    manta_strbuf_printf(b, "<h2>Latency table</h2>\n<table>\n");
    row_str(b, "validation", r->in.lat_path);
    row_str(b, "device", l->device);
    row(b, "sub-networks timed", "%.0f", (double)l->n);
    if (l->has_summary) {
        row(b, "mean |error|", "%.1f%%", l->mean_abs_pct);
        row(b, "within 10%", "%.0f%%", 100 * l->within_10pct);
        row(b, "Kendall tau", "%.2f", l->kendall_tau);
    }
    manta_strbuf_printf(b, "</table>\n");
}

manta_status report_html(const report *r, manta_err *err)
{
    manta_strbuf b = {0};
    const char *name = r->run ? r->run : r->out;
    manta_strbuf_printf(&b,
                        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
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
    if (r->in.have_train)
        html_training(&b, r);
    if (r->in.have_search)
        html_search(&b, r);
    if (r->in.have_lat)
        html_latency(&b, r);
    if (r->n_plots > 0)
        manta_strbuf_printf(&b, "<h2>Plots</h2>\n");
    for (int i = 0; i < r->n_plots; i++) {
        const report_plot *p = &r->plots[i];
        manta_strbuf_printf(&b, "<figure id=\"%s\">\n<a href=\"%s.png\"><img src=\"%s.svg\" alt=\"",
                            p->stem, p->stem, p->stem);
        html_esc(&b, p->title);
        manta_strbuf_printf(&b, "\"></a>\n<figcaption>");
        html_esc(&b, p->title);
        manta_strbuf_printf(&b,
                            " (<a href=\"%s.svg\">SVG</a>, <a href=\"%s.png\">PNG</a>)"
                            "</figcaption>\n</figure>\n",
                            p->stem, p->stem);
    }
    if (r->in.n_skipped > 0) {
        manta_strbuf_printf(&b, "<h2>Skipped</h2>\n<ul class=\"skipped\">\n");
        for (int i = 0; i < r->in.n_skipped; i++) {
            manta_strbuf_printf(&b, "<li>");
            html_esc(&b, r->in.skipped[i]);
            manta_strbuf_printf(&b, "</li>\n");
        }
        manta_strbuf_printf(&b, "</ul>\n");
    }
    manta_strbuf_printf(&b, "</body>\n</html>\n");
    char path[REP_PATH_CAP + 16];
    snprintf(path, sizeof path, "%s/index.html", r->out);
    return manta_strbuf_write_file(&b, path, err);
}
