/* manta report's part of the program (tools/manta-report/, libmanta_report.a, with
 * cairo): a figure written as PNG and SVG (plot.h: the PNG's size, the SVG's title and
 * description, figures refused, text that is not UTF-8), and the figures and the page of a
 * demo folder's inputs (report.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "core/fileio.h"
#include "manta-report/plot.h"
#include "manta-report/report.h"
#include "report/inputs.h"

/* ---- a figure's files ---- */

static void figure(plot_figure *f, const double *x, const double *y, size_t n)
{
    memset(f, 0, sizeof *f);
    f->title = "A <test> & figure";
    f->width = 320, f->height = 240, f->n_panels = 1;
    f->panel[0].title = "panel one";
    f->panel[0].series[0] = (plot_series){.label = "s",
                                          .x = x,
                                          .y = y,
                                          .n = n,
                                          .line = true,
                                          .marker = PLOT_MARK_STAR,
                                          .color = plot_palette(3)};
    f->panel[0].n_series = 1;
    f->panel[0].spans[0] = (plot_span){0, 2, "a"};
    f->panel[0].n_spans = 1;
    f->panel[0].vlines[0] = (plot_vline){1.5, "budget", {0, 0, 0}, true};
    f->panel[0].n_vlines = 1;
}

static void test_write_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/manta_test_plot_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char png[128], svg[128], bad[160];
    snprintf(png, sizeof png, "%s/a.png", dir);
    snprintf(svg, sizeof svg, "%s/a.svg", dir);
    const double x[] = {0, 1, NAN, 2}, y[] = {1, 3, 2, INFINITY};
    plot_figure *f = malloc(sizeof *f);
    assert_non_null(f);
    figure(f, x, y, 4);
    manta_err err;
    assert_int_equal(plot_write_png(f, png, &err), MANTA_OK);
    assert_int_equal(plot_write_svg(f, svg, &err), MANTA_OK);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(manta_file_read(png, 1 << 24, &text, &len, &err), MANTA_OK);
    assert_true(len > 100 && !memcmp(text, "\x89PNG\r\n\x1a\n", 8));
    /* IHDR: width and height, big-endian */
    const unsigned char *h = (const unsigned char *)text + 16;
    assert_int_equal((h[0] << 24) | (h[1] << 16) | (h[2] << 8) | h[3], 320);
    assert_int_equal((h[4] << 24) | (h[5] << 16) | (h[6] << 8) | h[7], 240);
    free(text);
    assert_int_equal(manta_file_read(svg, 1 << 24, &text, &len, &err), MANTA_OK);
    assert_non_null(strstr(text, "<svg"));
    assert_non_null(strstr(text, "<title>A &lt;test&gt; &amp; figure</title>"));
    assert_non_null(strstr(text, "<desc>panel one</desc>"));
    assert_true(strstr(text, "<title>") > strstr(text, "<svg"));
    free(text);
    /* a figure without panels, or too small: nothing written */
    snprintf(bad, sizeof bad, "%s/none.png", dir);
    f->n_panels = 0;
    assert_int_equal(plot_write_png(f, bad, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, bad));
    f->n_panels = 1, f->width = 10;
    assert_int_equal(plot_write_svg(f, bad, &err), MANTA_ERR_INVALID_ARG);
    struct stat st;
    assert_int_not_equal(stat(bad, &st), 0);
    /* no folder: the error names the file */
    f->width = 320;
    snprintf(bad, sizeof bad, "%s/no/such/a.png", dir);
    assert_int_equal(plot_write_png(f, bad, &err), MANTA_ERR_IO);
    assert_non_null(strstr(err.msg, dir));
    /* text that is not UTF-8 (a device's name) is drawn, not refused by cairo */
    f->panel[0].title = "device \xff\xfe name";
    assert_int_equal(plot_write_png(f, png, &err), MANTA_OK);
    assert_int_equal(plot_write_svg(f, svg, &err), MANTA_OK);
    assert_int_equal(manta_file_read(svg, 1 << 24, &text, &len, &err), MANTA_OK);
    assert_non_null(strstr(text, "<desc>device ?? name</desc>"));
    free(text);
    /* an empty panel still draws (axes 0..1) */
    f->panel[0].n_series = 0, f->panel[0].n_spans = 0, f->panel[0].n_vlines = 0;
    assert_int_equal(plot_write_png(f, png, &err), MANTA_OK);
    free(f);
    manta_file_remove_tree(dir);
}

/* ---- a report ---- */

/* The figures and index.html of tests/data/report/demo (no subnets in its records). */
static void test_report_demo(void **state)
{
    (void)state;
    report *r = calloc(1, sizeof *r);
    assert_non_null(r);
    char dir[] = "/tmp/manta_test_plot_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(r->out, sizeof r->out, "%s", dir);
    r->run = "tests/data/report/demo";
    const rep_input_opts o = {.run = r->run};
    manta_err err;
    assert_int_equal(rep_inputs_load(&o, &r->in, &err), MANTA_OK);
    assert_int_equal(report_figures(r, &err), MANTA_OK);
    assert_int_equal(report_html(r, &err), MANTA_OK);
    const char *stems[] = {"training", "throughput", "search", "latency"};
    assert_int_equal(r->n_plots, 4);
    char path[REP_PATH_CAP + 64], *html = NULL;
    struct stat st;
    snprintf(path, sizeof path, "%s/index.html", dir);
    assert_int_equal(manta_file_read(path, 1 << 24, &html, NULL, &err), MANTA_OK);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(r->plots[i].stem, stems[i]);
        snprintf(path, sizeof path, "%s/%s.png", dir, stems[i]);
        assert_int_equal(stat(path, &st), 0);
        snprintf(path, sizeof path, "%s/%s.svg", dir, stems[i]);
        assert_int_equal(stat(path, &st), 0);
        snprintf(path, sizeof path, "%s.png", stems[i]);
        assert_non_null(strstr(html, path));
    }
    free(html);
    rep_inputs_free(&r->in);
    free(r);
    manta_file_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_files),
        cmocka_unit_test(test_report_demo),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    plot_release_static();
    return rc;
}
