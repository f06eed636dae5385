/* Charts drawn with cairo for `manta report` (plot.h): the palette and the drawing; the
 * files are plot_file.c's. */
#include "manta-report/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_PI 3.14159265358979323846

plot_color plot_palette(int i)
{
    static const plot_color c[10] = {
        {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
        {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
        {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
    };
    return c[(i % 10 + 10) % 10];
}

/* ---- drawing ---- */

enum { HA_LEFT, HA_CENTER, HA_RIGHT };
enum { VA_TOP, VA_MIDDLE, VA_BASELINE };

#define FONT "sans-serif"

static void set_rgb(cairo_t *cr, plot_color c) { cairo_set_source_rgb(cr, c.r, c.g, c.b); }

bool plot_utf8_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80                           ? 0
                : (*p & 0xE0) == 0xC0 && *p >= 0xC2 ? 1
                : (*p & 0xF0) == 0xE0               ? 2
                : (*p & 0xF8) == 0xF0 && *p <= 0xF4 ? 3
                                                    : -1;
        if (n < 0)
            return false;
        for (int k = 1; k <= n; k++)
            if ((p[k] & 0xC0) != 0x80)
                return false;
        p += n + 1;
    }
    return true;
}

/* @p s at (x, y), aligned by @p ha and @p va; returns its width. Text that is not UTF-8
 * is drawn with '?' for its bytes beyond ASCII. */
static double text(cairo_t *cr, double x, double y, const char *s, int ha, int va)
{
    char safe[512];
    if (!plot_utf8_ok(s)) {
        size_t i = 0;
        for (; s[i] && i + 1 < sizeof safe; i++)
            safe[i] = (unsigned char)s[i] < 0x80 ? s[i] : '?';
        safe[i] = '\0';
        s = safe;
    }
    cairo_text_extents_t e;
    cairo_font_extents_t fe;
    cairo_text_extents(cr, s, &e);
    cairo_font_extents(cr, &fe);
    double dx = ha == HA_LEFT ? 0 : ha == HA_CENTER ? -e.x_advance / 2 : -e.x_advance;
    double dy = va == VA_TOP ? fe.ascent : va == VA_MIDDLE ? (fe.ascent - fe.descent) / 2 : 0;
    cairo_move_to(cr, x + dx, y + dy);
    cairo_show_text(cr, s);
    cairo_new_path(cr);
    return e.x_advance;
}

static double text_width(cairo_t *cr, const char *s)
{
    if (!plot_utf8_ok(s))
        return 7.0 * (double)strlen(s); /* about; text() draws it with '?' */
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

static void font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

/* A marker's path at (x, y) of radius @p r. */
static void marker_path(cairo_t *cr, plot_marker m, double x, double y, double r)
{
    switch (m) {
    case PLOT_MARK_CIRCLE:
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, r, 0, 2 * PLOT_PI);
        break;
    case PLOT_MARK_SQUARE: cairo_rectangle(cr, x - r * 0.85, y - r * 0.85, 1.7 * r, 1.7 * r); break;
    case PLOT_MARK_DIAMOND:
        cairo_move_to(cr, x, y - 1.25 * r);
        cairo_line_to(cr, x + 1.25 * r, y);
        cairo_line_to(cr, x, y + 1.25 * r);
        cairo_line_to(cr, x - 1.25 * r, y);
        cairo_close_path(cr);
        break;
    case PLOT_MARK_TRIANGLE:
        cairo_move_to(cr, x, y - 1.2 * r);
        cairo_line_to(cr, x + 1.1 * r, y + 0.8 * r);
        cairo_line_to(cr, x - 1.1 * r, y + 0.8 * r);
        cairo_close_path(cr);
        break;
    case PLOT_MARK_STAR:
        for (int k = 0; k < 10; k++) {
            double a = -PLOT_PI / 2 + k * PLOT_PI / 5, rr = k % 2 ? 0.45 * r : 1.25 * r;
            if (k == 0)
                cairo_move_to(cr, x + rr * cos(a), y + rr * sin(a));
            else
                cairo_line_to(cr, x + rr * cos(a), y + rr * sin(a));
        }
        cairo_close_path(cr);
        break;
    case PLOT_MARK_NONE: break;
    }
}

static void marker(cairo_t *cr, const plot_series *s, double x, double y)
{
    double r = s->size > 0 ? s->size : 3.5;
    marker_path(cr, s->marker, x, y, r);
    if (s->hollow) {
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill_preserve(cr);
        set_rgb(cr, s->color);
        cairo_set_line_width(cr, 1.4);
        cairo_stroke(cr);
    } else {
        set_rgb(cr, s->color);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_set_line_width(cr, s->marker == PLOT_MARK_STAR ? 0.8 : 0.6);
        cairo_stroke(cr);
    }
}

/* Where the data lie: the ranges of the panel's finite points and markers. */
typedef struct frame {
    double px, py, pw, ph; /* plot area in canvas units */
    plot_ticks xt, yt;
} frame;

static double fx(const frame *f, double x)
{
    return f->px + (x - f->xt.lo) / (f->xt.hi - f->xt.lo) * f->pw;
}
static double fy(const frame *f, double y)
{
    return f->py + f->ph - (y - f->yt.lo) / (f->yt.hi - f->yt.lo) * f->ph;
}

static void data_range(const plot_panel *p, double *x0, double *x1, double *y0, double *y1)
{
    *x0 = *y0 = INFINITY;
    *x1 = *y1 = -INFINITY;
    for (size_t i = 0; i < p->n_series; i++) {
        const plot_series *s = &p->series[i];
        for (size_t k = 0; k < s->n; k++) {
            if (!isfinite(s->x[k]) || !isfinite(s->y[k]))
                continue;
            *x0 = fmin(*x0, s->x[k]), *x1 = fmax(*x1, s->x[k]);
            *y0 = fmin(*y0, s->y[k]), *y1 = fmax(*y1, s->y[k]);
        }
    }
    for (size_t i = 0; i < p->n_spans; i++)
        if (isfinite(p->spans[i].x0) && isfinite(p->spans[i].x1))
            *x0 = fmin(*x0, p->spans[i].x0), *x1 = fmax(*x1, p->spans[i].x1);
    for (size_t i = 0; i < p->n_vlines; i++)
        if (isfinite(p->vlines[i].x))
            *x0 = fmin(*x0, p->vlines[i].x), *x1 = fmax(*x1, p->vlines[i].x);
    if (!(*x0 <= *x1))
        *x0 = 0, *x1 = 1;
    if (!(*y0 <= *y1))
        *y0 = 0, *y1 = 1;
}

/* Make [@p lo, @p hi] the axis' range, keeping the ticks inside it (when two remain). */
static void tighten(plot_ticks *t, double lo, double hi)
{
    if (!(lo < hi))
        return;
    double eps = 1e-9 * (hi - lo);
    int k = 0;
    double v[PLOT_MAX_TICKS];
    for (int i = 0; i < t->n; i++)
        if (t->v[i] >= lo - eps && t->v[i] <= hi + eps)
            v[k++] = t->v[i];
    if (k < 2)
        return;
    memcpy(t->v, v, (size_t)k * sizeof v[0]);
    t->n = k;
    t->lo = lo, t->hi = hi;
}

static void axes(const plot_panel *p, frame *f)
{
    double x0, x1, y0, y1;
    data_range(p, &x0, &x1, &y0, &y1);
    bool scatter_x = p->n_spans == 0; /* lines against steps start at the axis */
    if (p->fix_x)
        x0 = p->x_lo, x1 = p->x_hi;
    else if (scatter_x) {
        double m = 0.04 * (x1 - x0);
        x0 -= m, x1 += m;
    }
    if (p->fix_y)
        y0 = p->y_lo, y1 = p->y_hi;
    else {
        double m = 0.04 * (y1 - y0), d0 = y0, d1 = y1;
        y0 -= m, y1 += m;
        if (p->y_zero) /* from 0, without a margin beyond it */
            y0 = d0 >= 0 ? 0 : y0, y1 = d1 <= 0 ? 0 : y1;
    }
    int nx = (int)(f->pw / 90), ny = (int)(f->ph / 45);
    if (!rep_nice_ticks(x0, x1, nx, &f->xt))
        rep_nice_ticks(0, 1, nx, &f->xt);
    if (!rep_nice_ticks(y0, y1, ny, &f->yt))
        rep_nice_ticks(0, 1, ny, &f->yt);
    /* a fixed range, and steps, end where they end; the ticks inside them */
    if (p->fix_x || !scatter_x)
        tighten(&f->xt, x0, x1);
    if (p->fix_y)
        tighten(&f->yt, y0, y1);
}

/* The legend's entries' box at a corner (0 top right, 1 top left, 2 bottom right,
 * 3 bottom left) of the plot area; the number of points it would hide. */
static size_t legend_box(const plot_panel *p, const frame *f, int corner, double w, double h,
                         double *bx, double *by)
{
    *bx = corner % 2 == 0 ? f->px + f->pw - w - 8 : f->px + 8;
    *by = corner < 2 ? f->py + (p->n_spans ? 22 : 8) : f->py + f->ph - h - 8;
    size_t hidden = 0;
    for (size_t i = 0; i < p->n_series; i++) {
        const plot_series *s = &p->series[i];
        for (size_t k = 0; k < s->n; k++) {
            if (!isfinite(s->x[k]) || !isfinite(s->y[k]))
                continue;
            double x = fx(f, s->x[k]), y = fy(f, s->y[k]);
            hidden += x >= *bx - 4 && x <= *bx + w + 4 && y >= *by - 4 && y <= *by + h + 4;
        }
    }
    return hidden;
}

static void legend(cairo_t *cr, const plot_panel *p, const frame *f)
{
    font(cr, 11, false);
    size_t n = 0;
    double w = 0;
    for (size_t i = 0; i < p->n_series; i++)
        if (p->series[i].label) {
            n++;
            w = fmax(w, text_width(cr, p->series[i].label));
        }
    if (n == 0)
        return;
    const double row = 16, sample = 26;
    w += sample + 16;
    double h = (double)n * row + 8, bx = 0, by = 0;
    size_t best = (size_t)-1;
    int corner = 0;
    for (int c = 0; c < 4; c++) {
        double x, y;
        size_t hid = legend_box(p, f, c, w, h, &x, &y);
        if (hid < best)
            best = hid, corner = c;
    }
    legend_box(p, f, corner, w, h, &bx, &by);
    cairo_rectangle(cr, bx, by, w, h);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.88);
    cairo_fill_preserve(cr);
    cairo_set_source_rgb(cr, 0.75, 0.75, 0.75);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
    double y = by + 4 + row / 2;
    for (size_t i = 0; i < p->n_series; i++) {
        const plot_series *s = &p->series[i];
        if (!s->label)
            continue;
        double x = bx + 6;
        if (s->line) {
            set_rgb(cr, s->color);
            cairo_set_line_width(cr, 1.8);
            if (s->dashed) {
                const double d[] = {5, 3};
                cairo_set_dash(cr, d, 2, 0);
            }
            cairo_move_to(cr, x, y);
            cairo_line_to(cr, x + sample, y);
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
        if (s->marker != PLOT_MARK_NONE)
            marker(cr, s, x + sample / 2, y);
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        text(cr, x + sample + 6, y, s->label, HA_LEFT, VA_MIDDLE);
        y += row;
    }
}

static void series(cairo_t *cr, const plot_series *s, const frame *f)
{
    if (s->line) {
        set_rgb(cr, s->color);
        cairo_set_line_width(cr, 1.8);
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
        if (s->dashed) {
            const double d[] = {6, 4};
            cairo_set_dash(cr, d, 2, 0);
        }
        bool pen = false;
        for (size_t k = 0; k < s->n; k++) {
            if (!isfinite(s->x[k]) || !isfinite(s->y[k])) {
                pen = false;
                continue;
            }
            if (pen)
                cairo_line_to(cr, fx(f, s->x[k]), fy(f, s->y[k]));
            else
                cairo_move_to(cr, fx(f, s->x[k]), fy(f, s->y[k]));
            pen = true;
        }
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    if (s->marker != PLOT_MARK_NONE)
        for (size_t k = 0; k < s->n; k++)
            if (isfinite(s->x[k]) && isfinite(s->y[k]))
                marker(cr, s, fx(f, s->x[k]), fy(f, s->y[k]));
}

/* One panel in the cell (cx, cy, cw, ch). */
static void panel(cairo_t *cr, const plot_panel *p, double cx, double cy, double cw, double ch)
{
    frame f;
    const double left = 74, right = 18, top = p->title ? 30 : 12, bottom = p->xlabel ? 52 : 34;
    f.px = cx + left, f.py = cy + top;
    f.pw = fmax(cw - left - right, 20), f.ph = fmax(ch - top - bottom, 20);
    axes(p, &f);

    if (p->title) {
        font(cr, 13, true);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        text(cr, f.px + f.pw / 2, cy + 8, p->title, HA_CENTER, VA_TOP);
    }
    cairo_rectangle(cr, f.px, f.py, f.pw, f.ph);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_fill(cr);

    cairo_save(cr);
    cairo_rectangle(cr, f.px, f.py, f.pw, f.ph);
    cairo_clip(cr);
    /* spans, shaded in turn, their names at the top */
    font(cr, 10.5, false);
    for (size_t i = 0; i < p->n_spans; i++) {
        const plot_span *s = &p->spans[i];
        double a = fx(&f, s->x0), b = fx(&f, s->x1);
        if (i % 2 == 0)
            cairo_set_source_rgb(cr, 0.93, 0.95, 0.98);
        else
            cairo_set_source_rgb(cr, 0.985, 0.985, 0.985);
        cairo_rectangle(cr, a, f.py, b - a, f.ph);
        cairo_fill(cr);
        if (s->label && text_width(cr, s->label) + 6 < b - a) {
            cairo_set_source_rgb(cr, 0.35, 0.38, 0.45);
            text(cr, (a + b) / 2, f.py + 4, s->label, HA_CENTER, VA_TOP);
        }
        if (i > 0) { /* the boundary */
            cairo_set_source_rgb(cr, 0.6, 0.63, 0.7);
            cairo_set_line_width(cr, 0.8);
            cairo_move_to(cr, a, f.py);
            cairo_line_to(cr, a, f.py + f.ph);
            cairo_stroke(cr);
        }
    }
    /* grid */
    cairo_set_source_rgba(cr, 0, 0, 0, 0.09);
    cairo_set_line_width(cr, 1);
    for (int i = 0; i < f.xt.n; i++) {
        double x = floor(fx(&f, f.xt.v[i])) + 0.5;
        cairo_move_to(cr, x, f.py);
        cairo_line_to(cr, x, f.py + f.ph);
    }
    for (int i = 0; i < f.yt.n; i++) {
        double y = floor(fy(&f, f.yt.v[i])) + 0.5;
        cairo_move_to(cr, f.px, y);
        cairo_line_to(cr, f.px + f.pw, y);
    }
    cairo_stroke(cr);
    /* markers */
    for (size_t i = 0; i < p->n_vlines; i++) {
        const plot_vline *v = &p->vlines[i];
        double x = fx(&f, v->x);
        set_rgb(cr, v->color);
        cairo_set_line_width(cr, 1.4);
        if (v->dashed) {
            const double d[] = {5, 4};
            cairo_set_dash(cr, d, 2, 0);
        }
        cairo_move_to(cr, x, f.py);
        cairo_line_to(cr, x, f.py + f.ph);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        if (v->label) {
            font(cr, 10.5, false);
            double w = text_width(cr, v->label);
            bool right_side = x + 4 + w < f.px + f.pw;
            text(cr, right_side ? x + 4 : x - 4, f.py + f.ph - 6, v->label,
                 right_side ? HA_LEFT : HA_RIGHT, VA_BASELINE);
        }
    }
    for (size_t i = 0; i < p->n_series; i++)
        series(cr, &p->series[i], &f);
    cairo_restore(cr);

    /* frame, ticks and their labels */
    cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, floor(f.px) + 0.5, floor(f.py) + 0.5, floor(f.pw), floor(f.ph));
    cairo_stroke(cr);
    font(cr, 11, false);
    char buf[64];
    for (int i = 0; i < f.xt.n; i++) {
        double x = fx(&f, f.xt.v[i]);
        cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
        cairo_move_to(cr, x, f.py + f.ph);
        cairo_line_to(cr, x, f.py + f.ph + 4);
        cairo_stroke(cr);
        rep_format_tick(f.xt.v[i], &f.xt, buf, sizeof buf);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        text(cr, x, f.py + f.ph + 7, buf, HA_CENTER, VA_TOP);
    }
    double yw = 0;
    for (int i = 0; i < f.yt.n; i++) {
        double y = fy(&f, f.yt.v[i]);
        cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
        cairo_move_to(cr, f.px - 4, y);
        cairo_line_to(cr, f.px, y);
        cairo_stroke(cr);
        rep_format_tick(f.yt.v[i], &f.yt, buf, sizeof buf);
        cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
        yw = fmax(yw, text(cr, f.px - 7, y, buf, HA_RIGHT, VA_MIDDLE));
    }
    font(cr, 12, false);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    if (p->xlabel)
        text(cr, f.px + f.pw / 2, f.py + f.ph + 26, p->xlabel, HA_CENTER, VA_TOP);
    if (p->ylabel) {
        cairo_save(cr);
        cairo_translate(cr, fmax(f.px - 12 - yw, cx + 16), f.py + f.ph / 2);
        cairo_rotate(cr, -PLOT_PI / 2);
        text(cr, 0, 0, p->ylabel, HA_CENTER, VA_BASELINE);
        cairo_restore(cr);
    }
    legend(cr, p, &f);
}

void plot_draw(cairo_t *cr, const plot_figure *f)
{
    cairo_save(cr);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, 0, 0, f->width, f->height);
    cairo_fill(cr);
    double top = 0;
    if (f->title) {
        font(cr, 16, true);
        double w = text_width(cr, f->title);
        if (w > f->width - 24) /* a long title: smaller, down to 9 */
            font(cr, fmax(9, 16 * (f->width - 24) / w), true);
        cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
        text(cr, f->width / 2.0, 12, f->title, HA_CENTER, VA_TOP);
        top = 36;
    }
    int cols = f->cols > 0 ? f->cols : 1;
    size_t n = f->n_panels > PLOT_MAX_PANELS ? PLOT_MAX_PANELS : f->n_panels;
    int rows = (int)((n + (size_t)cols - 1) / (size_t)cols);
    if (rows < 1)
        rows = 1;
    double cw = f->width / (double)cols, ch = (f->height - top) / rows;
    for (size_t i = 0; i < n; i++)
        panel(cr, &f->panel[i], (double)(i % (size_t)cols) * cw,
              top + (double)(i / (size_t)cols) * ch, cw, ch);
    cairo_restore(cr);
}

/* ---- files ---- */
