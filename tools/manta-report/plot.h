/**
 * @file plot.h
 * @brief Charts for `manta report`, drawn with cairo: a figure of one or more
 *        panels, each with nice-number axes and grid, line and scatter series,
 *        shaded named spans (training phases), vertical markers (a budget, a
 *        phase end), a legend placed where it hides fewest points, and titles.
 *
 * One drawing function (plot_draw(), plot.c) renders a figure on any cairo
 * context; plot_write_png() and plot_write_svg() (plot_file.c) give it a PNG
 * image surface or an SVG surface and write the file atomically
 * (manta_file_write_atomic()). Text is drawn with cairo's own ("toy") text
 * API in the fontconfig "sans-serif" face. The axes' ticks are computed by
 * the library (report/ticks.h). Part of build/lib/libmanta_report.a (with
 * cairo); board builds have no report.
 *
 * A figure is plain data that borrows its strings and point arrays: the
 * caller keeps them alive until the figure is drawn. Nothing is allocated by
 * the module except inside the writers, which free what they allocate.
 */
#ifndef MANTA_REPORT_PLOT_H
#define MANTA_REPORT_PLOT_H

#include <stdbool.h>
#include <stddef.h>

#include <cairo/cairo.h>

#include "core/status.h"
#include "report/ticks.h"

#define PLOT_MAX_SERIES 12 /**< series per panel */
#define PLOT_MAX_SPANS 16  /**< shaded spans per panel */
#define PLOT_MAX_VLINES 8  /**< vertical markers per panel */
#define PLOT_MAX_PANELS 4  /**< panels per figure */

/** A colour, each channel in [0, 1]. */
typedef struct plot_color {
    double r, g, b;
} plot_color;

/** The shape drawn at each point of a series. */
typedef enum plot_marker {
    PLOT_MARK_NONE = 0,
    PLOT_MARK_CIRCLE,
    PLOT_MARK_SQUARE,
    PLOT_MARK_DIAMOND,
    PLOT_MARK_TRIANGLE,
    PLOT_MARK_STAR,
} plot_marker;

/** One series: points, joined by a line and/or drawn as markers. */
typedef struct plot_series {
    const char *label;  /**< legend text; NULL keeps the series out of the legend */
    const double *x;    /**< (n) borrowed; a point with a non-finite x or y is skipped
                              and breaks the line */
    const double *y;    /**< (n) borrowed */
    size_t n;           /**< points */
    plot_color color;   /**< line and marker colour */
    bool line;          /**< join consecutive points */
    bool dashed;        /**< a dashed line */
    plot_marker marker; /**< PLOT_MARK_NONE: no markers */
    bool hollow;        /**< markers outlined, not filled */
    double size;        /**< marker radius in pixels (0: 3.5) */
} plot_series;

/** A shaded x range with a name (a training phase); spans alternate in shade. */
typedef struct plot_span {
    double x0, x1;     /**< the range, x0 < x1 */
    const char *label; /**< drawn at the top of the span when it fits; may be NULL */
} plot_span;

/** A vertical line across the plot area at x (a budget). */
typedef struct plot_vline {
    double x;          /**< where */
    const char *label; /**< drawn beside its top; may be NULL */
    plot_color color;  /**< line and label colour */
    bool dashed;       /**< a dashed line */
} plot_vline;

/** One chart: axes, series, spans and markers. */
typedef struct plot_panel {
    const char *title;                   /**< above the plot area; may be NULL */
    const char *xlabel;                  /**< below the x axis; may be NULL */
    const char *ylabel;                  /**< beside the y axis, rotated; may be NULL */
    plot_series series[PLOT_MAX_SERIES]; /**< drawn in order (later on top) */
    size_t n_series;                     /**< series used */
    plot_span spans[PLOT_MAX_SPANS];     /**< drawn first, under the grid */
    size_t n_spans;                      /**< spans used */
    plot_vline vlines[PLOT_MAX_VLINES];  /**< drawn over the grid, under the series */
    size_t n_vlines;                     /**< markers used */
    bool fix_x, fix_y; /**< use x_lo..x_hi / y_lo..y_hi instead of the data's range */
    double x_lo, x_hi; /**< the fixed x range (with fix_x) */
    double y_lo, y_hi; /**< the fixed y range (with fix_y) */
    bool y_zero;       /**< extend the y range to 0 */
} plot_panel;

/** A figure: a title over a grid of panels, drawn on a width x height canvas. */
typedef struct plot_figure {
    const char *title;                 /**< at the top; may be NULL */
    int width, height;                 /**< pixels of the PNG, points of the SVG (>= 100 each) */
    int cols;                          /**< panels per row (0: 1) */
    plot_panel panel[PLOT_MAX_PANELS]; /**< row by row */
    size_t n_panels;                   /**< panels used (1 .. PLOT_MAX_PANELS) */
} plot_figure;

/**
 * Whether @p s (NUL-terminated) is valid UTF-8. cairo refuses other text and
 * stops drawing: the plots draw such a text with '?' for its bytes beyond
 * ASCII, and the SVG's title and description likewise.
 */
bool plot_utf8_ok(const char *s);

/** Colour @p i of a ten-colour palette for series (Tableau 10), repeating. */
plot_color plot_palette(int i);

/**
 * Draw @p f on @p cr over (0, 0) .. (f->width, f->height) in the context's
 * user units: white background, the title, then each panel. Leaves the
 * context's state (source, path, font, clip) as it found it.
 */
void plot_draw(cairo_t *cr, const plot_figure *f);

/**
 * Draw @p f on an RGB image surface of f->width x f->height pixels and write
 * it to @p path as a PNG, atomically.
 * @return MANTA_ERR_INVALID_ARG when the figure has no panel, too many
 *         panels or series, or a size outside 100 .. 8192; MANTA_ERR_NO_MEMORY
 *         or MANTA_ERR_IO when cairo cannot draw or encode it ("<path>: cairo:
 *         <cairo's reason>"); manta_file_write_atomic()'s errors.
 */
manta_status plot_write_png(const plot_figure *f, const char *path, manta_err *err);

/**
 * Draw @p f on an SVG surface of f->width x f->height points and write it to
 * @p path, atomically. cairo draws text as glyph outlines, so the file gets a
 * `<title>` element with the figure's title and a `<desc>` with the panels'
 * titles as the first children of its root (what screen readers and text
 * search find).
 * @return as plot_write_png().
 */
manta_status plot_write_svg(const plot_figure *f, const char *path, manta_err *err);

/**
 * Release cairo's process-wide caches (fonts, fontconfig patterns), so that
 * leak checkers see no leak at exit. Call it only when no cairo object is
 * alive, once the last figure is written; a later figure builds them again.
 */
void plot_release_static(void);

#endif
