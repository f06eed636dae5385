/* A figure of plot.h written as a PNG or an SVG file (plot.h): cairo's surfaces, written
 * into memory, then to the file atomically. */
#include "manta-report/plot.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cairo/cairo-svg.h>

#include "core/fileio.h"

/* Bytes cairo writes, gathered in memory. */
typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
    bool oom;
} membuf;

static cairo_status_t membuf_write(void *closure, const unsigned char *data, unsigned int len)
{
    membuf *b = closure;
    if (b->n + len > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + len)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return CAIRO_STATUS_WRITE_ERROR;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    return CAIRO_STATUS_SUCCESS;
}

static manta_status check_figure(const plot_figure *f, const char *path, manta_err *err)
{
    if (f->n_panels < 1 || f->n_panels > PLOT_MAX_PANELS || f->width < 100 || f->height < 100 ||
        f->width > 8192 || f->height > 8192)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: a figure needs 1 to %d panels and a size of 100 to 8192 (has %zu "
                             "panels, %d x %d)",
                             path, PLOT_MAX_PANELS, f->n_panels, f->width, f->height);
    for (size_t i = 0; i < f->n_panels; i++)
        if (f->panel[i].n_series > PLOT_MAX_SERIES || f->panel[i].n_spans > PLOT_MAX_SPANS ||
            f->panel[i].n_vlines > PLOT_MAX_VLINES)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "%s: panel %zu has more series, spans or markers than allowed",
                                 path, i + 1);
    return MANTA_OK;
}

static manta_status cairo_failed(const char *path, cairo_status_t cs, bool oom, manta_err *err)
{
    if (oom || cs == CAIRO_STATUS_NO_MEMORY)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    return manta_err_set(err, MANTA_ERR_IO, "%s: cairo: %s", path, cairo_status_to_string(cs));
}

manta_status plot_write_png(const plot_figure *f, const char *path, manta_err *err)
{
    MANTA_TRY(check_figure(f, path, err));
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, f->width, f->height);
    cairo_t *cr = cairo_create(s);
    plot_draw(cr, f);
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    membuf b = {0};
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_write_to_png_stream(s, membuf_write, &b);
    cairo_surface_destroy(s);
    manta_status st = cs == CAIRO_STATUS_SUCCESS ? manta_file_write_atomic(path, b.p, b.n, err)
                                                 : cairo_failed(path, cs, b.oom, err);
    free(b.p);
    return st;
}

/* Append @p s to @p b with XML's special characters escaped. */
static void xml_escaped(membuf *b, const char *s)
{
    bool ascii = s && !plot_utf8_ok(s); /* then '?' for the bytes beyond ASCII */
    for (; s && *s; s++) {
        if (ascii && (unsigned char)*s >= 0x80) {
            membuf_write(b, (const unsigned char *)"?", 1);
            continue;
        }
        const char *r = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : NULL;
        if (r)
            membuf_write(b, (const unsigned char *)r, (unsigned)strlen(r));
        else if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
            membuf_write(b, (const unsigned char *)s, 1);
    }
}

static void put(membuf *b, const char *s)
{
    membuf_write(b, (const unsigned char *)s, (unsigned)strlen(s));
}

manta_status plot_write_svg(const plot_figure *f, const char *path, manta_err *err)
{
    MANTA_TRY(check_figure(f, path, err));
    membuf b = {0};
    cairo_surface_t *s = cairo_svg_surface_create_for_stream(membuf_write, &b, f->width, f->height);
    cairo_t *cr = cairo_create(s);
    plot_draw(cr, f);
    cairo_status_t cs = cairo_status(cr);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    if (cs == CAIRO_STATUS_SUCCESS)
        cs = cairo_surface_status(s);
    cairo_surface_destroy(s);
    manta_status st = MANTA_OK;
    if (cs != CAIRO_STATUS_SUCCESS || b.oom) {
        st = cairo_failed(path, cs, b.oom, err);
        free(b.p);
        return st;
    }
    /* <title> and <desc> right after the root element's start tag */
    membuf_write(&b, (const unsigned char *)"", 1); /* NUL-terminate */
    char *root = b.oom ? NULL : strstr((char *)b.p, "<svg");
    char *end = root ? strchr(root, '>') : NULL;
    if (!end) {
        free(b.p);
        return b.oom ? manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path)
                     : manta_err_set(err, MANTA_ERR_IO, "%s: cairo wrote no <svg> element", path);
    }
    size_t head = (size_t)(end + 1 - (char *)b.p);
    membuf o = {0};
    membuf_write(&o, b.p, (unsigned)head);
    put(&o, "\n<title>");
    xml_escaped(&o, f->title ? f->title : "");
    put(&o, "</title>\n<desc>");
    for (size_t i = 0; i < f->n_panels; i++) {
        if (i)
            put(&o, "; ");
        xml_escaped(&o, f->panel[i].title ? f->panel[i].title : "");
    }
    put(&o, "</desc>");
    membuf_write(&o, b.p + head, (unsigned)(b.n - 1 - head));
    free(b.p);
    st = o.oom ? manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path)
               : manta_file_write_atomic(path, o.p, o.n, err);
    free(o.p);
    return st;
}

void plot_release_static(void) { cairo_debug_reset_static_data(); }
