/* 1-D correlation (DispNetC): the device forward against the double reference, the
 * backward against central finite differences of the reference (loss = sum(out * r)) on
 * small shapes and against the reference's closed form on DispNetC's displacement range
 * (many column chunks, displacement and channel groups, work-groups). dfl and dfr are
 * overwritten and each can be skipped. Every case runs the CPU and the GPU kernels
 * (common/variants.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "common/variants.h"
#include "nn/correlation.h"
#include "ref/stereo_ref.h"

/* Offset in floats of every device view inside its buffer. */
#define VIEW_OFF 3

typedef struct fd_ctx {
    const nn_corr_shape *s;
    double *fl, *fr, *out, *r; /* fl, fr (N, C, H, W); out, r (N, D, H, W) */
    size_t nout;
} fd_ctx;

static double corr_loss(void *p)
{
    fd_ctx *c = p;
    ref_corr_forward(c->s, c->fl, c->fr, c->out);
    return tu_dot(c->out, c->r, c->nout);
}

static void close_to(mcl_dev *d, const double *got, const double *want, size_t n, double rtol,
                     const char *what, const nn_corr_shape *s)
{
    char msg[160];
    snprintf(msg, sizeof msg, "correlation %s (%s kernels, n%d c%d h%d w%d disp%d stride%d)", what,
             tu_variant_name(d), s->n, s->c, s->h, s->w, s->max_disp, s->stride);
    tu_assert_close(got, want, n, rtol, msg);
}

/* Forward and backward of @p s on @p d; the gradients against finite differences when
 * @p fd, else against ref_corr_backward(). */
static void check_corr(mcl_dev *d, const nn_corr_shape *s, uint64_t seed, bool fd)
{
    manta_rng rng;
    manta_rng_seed(&rng, 2024, seed);
    int nd = ref_corr_disps(s);
    assert_int_equal(nn_corr_out_c(s), nd);
    size_t nf = (size_t)s->n * s->c * s->h * s->w, no = (size_t)s->n * nd * s->h * s->w;
    double *fl = tu_doubles(nf), *fr = tu_doubles(nf), *out = tu_doubles(no), *r = tu_doubles(no);
    double *got = tu_doubles(nf > no ? nf : no), *gl = tu_doubles(nf), *gr = tu_doubles(nf);
    tu_fill_uniform(&rng, fl, nf, -1, 1);
    tu_fill_uniform(&rng, fr, nf, -1, 1);
    tu_fill_uniform(&rng, r, no, -1, 1);

    mview vfl = tu_view_at(d, VIEW_OFF, fl, nf), vfr = tu_view_at(d, VIEW_OFF, fr, nf),
          vout = tu_view_at(d, VIEW_OFF, NULL, no);
    mview vr = tu_view_at(d, VIEW_OFF, r, no), vdl = tu_view_at(d, VIEW_OFF, NULL, nf),
          vdr = tu_view_at(d, VIEW_OFF, NULL, nf);
    mview none = {NULL, 0};

    TU_OK(d, mcl_fill(d, vout, 555.0f, no));
    TU_OK(d, nn_corr_forward(d, s, vfl, vfr, vout));
    tu_download(d, vout, got, no);
    ref_corr_forward(s, fl, fr, out);
    close_to(d, got, out, no, 1e-4, "forward", s);

    if (fd) {
        fd_ctx c = {s, fl, fr, out, r, no};
        tu_fd_grad(corr_loss, &c, fl, nf, 1e-3, gl);
        tu_fd_grad(corr_loss, &c, fr, nf, 1e-3, gr);
        /* the closed form the large cases use agrees with the differences */
        double *cl = tu_doubles(nf), *cr = tu_doubles(nf);
        ref_corr_backward(s, fl, fr, r, cl, cr);
        close_to(d, cl, gl, nf, 1e-6, "reference dfl", s);
        close_to(d, cr, gr, nf, 1e-6, "reference dfr", s);
        free(cl), free(cr);
    } else {
        ref_corr_backward(s, fl, fr, r, gl, gr);
    }
    double tol = fd ? 1e-3 : 1e-4;

    /* both gradients, overwritten */
    TU_OK(d, mcl_fill(d, vdl, 777.0f, nf));
    TU_OK(d, mcl_fill(d, vdr, -777.0f, nf));
    TU_OK(d, nn_corr_backward(d, s, vfl, vfr, vr, vdl, vdr));
    tu_download(d, vdl, got, nf);
    close_to(d, got, gl, nf, tol, "dfl", s);
    tu_download(d, vdr, got, nf);
    close_to(d, got, gr, nf, tol, "dfr", s);

    /* dfl alone (fl not needed), then dfr alone (fr not needed): the other untouched */
    TU_OK(d, mcl_fill(d, vdl, 1.0f, nf));
    TU_OK(d, mcl_fill(d, vdr, 2.0f, nf));
    TU_OK(d, nn_corr_backward(d, s, none, vfr, vr, vdl, none));
    tu_download(d, vdl, got, nf);
    close_to(d, got, gl, nf, tol, "dfl without dfr", s);
    tu_download(d, vdr, got, nf);
    for (size_t i = 0; i < nf; i++)
        assert_true(got[i] == 2.0);
    TU_OK(d, nn_corr_backward(d, s, vfl, none, vr, none, vdr));
    tu_download(d, vdr, got, nf);
    close_to(d, got, gr, nf, tol, "dfr without dfl", s);

    tu_free(d, vfl), tu_free(d, vfr), tu_free(d, vout), tu_free(d, vr), tu_free(d, vdl);
    tu_free(d, vdr);
    free(fl), free(fr), free(out), free(r), free(got), free(gl), free(gr);
}

/* Every shape of @p shapes on both variants. */
static void check_all(void **state, const nn_corr_shape *shapes, size_t n, bool fd)
{
    tu_variant_devs *v = *state;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (size_t i = 0; i < n; i++)
            check_corr(v->dev[k], &shapes[i], 10 * i + (size_t)k, fd);
}

/* Shapes: n, c, h, w, max_disp, stride */

static void test_corr_small_odd_sizes(void **st)
{
    static const nn_corr_shape shapes[] = {
        {2, 5, 3, 13, 4, 1}, /* D 5, odd sizes, a partial chunk of 8 columns */
        {1, 3, 2, 9, 12, 1}, /* displacements beyond the row: channels all 0 there */
        {1, 1, 1, 1, 3, 1},  /* one pixel */
        {3, 2, 1, 17, 2, 1}, /* batch 3, two full chunks and one column */
    };
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], true);
}

static void test_corr_stride_and_max_disp_not_multiple(void **st)
{
    static const nn_corr_shape shapes[] = {
        {2, 4, 3, 11, 7, 2}, /* D = 7 / 2 + 1 = 4: displacements 0, 2, 4, 6 */
        {1, 3, 2, 12, 9, 3}, /* 0, 3, 6, 9 */
        {1, 37, 2, 7, 0, 1}, /* D 1 (the channel mean of fl * fr); 37 channels */
    };
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], true);
}

/* Rows of whole 8-column chunks: the CPU kernels' loops of plain vector loads (forward:
 * every displacement of a work-item inside the row; backward: the displacements before the
 * edge) beside segments crossing the left edge (fr, dfl) and the right edge (dfr) by each
 * of 1 .. 7 columns, and channels and displacements that do not fill a group. */
static void test_corr_whole_chunks(void **st)
{
    static const nn_corr_shape shapes[] = {
        {2, 6, 2, 24, 9, 1},  /* D 10: groups of 4, 4, 2; 6 channels: 4 + 2 */
        {1, 5, 2, 16, 10, 2}, /* displacements 0, 2, .., 10 */
        {1, 4, 1, 8, 8, 1},   /* one chunk, displacements up to its width */
        {1, 9, 1, 32, 7, 1},  /* D 8: two full groups */
    };
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], true);
}

/* DispNetC's displacement range (max_disp 40, D 41) and wider rows, against the closed form:
 * several work-groups along the row and the displacements in the GPU kernels, several
 * column chunks, displacement and channel groups in the CPU ones. */
static void test_corr_dispnet_range_large(void **st)
{
    static const nn_corr_shape shapes[] = {
        {2, 64, 5, 70, 40, 1},
        {1, 40, 4, 50, 30, 2},
        {1, 3, 3, 130, 20, 1},
    };
    check_all(st, shapes, sizeof shapes / sizeof shapes[0], false);
}

static void test_corr_out_c_and_macs(void **st)
{
    (void)st;
    nn_corr_shape s = {1, 2, 3, 10, 40, 1};
    assert_int_equal(nn_corr_out_c(&s), 41);
    /* columns meeting the image: 10 + 9 + ... + 1 */
    assert_true(nn_corr_macs(&s) == 1.0 * 2 * 3 * 55);
    s.stride = 3;
    assert_int_equal(nn_corr_out_c(&s), 14);
    s.stride = 0;
    assert_int_equal(nn_corr_out_c(&s), 0);
    assert_true(nn_corr_macs(&s) == 0.0);
}

/* MANTA_ERR_INVALID_ARG from forward and backward, the message naming the op and @p what. */
static void expect_invalid(mcl_dev *d, const nn_corr_shape *s, mview a, mview b, mview c,
                           const char *what)
{
    manta_status st = nn_corr_forward(d, s, a, b, c);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, "correlation forward") || !strstr(msg, what))
        fail_msg("forward message '%s' does not name the op and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
    st = nn_corr_backward(d, s, a, b, c, a, b);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, "correlation backward") || !strstr(msg, what))
        fail_msg("backward message '%s' does not name the op and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
}

static void test_corr_bad_shapes_rejected(void **st)
{
    tu_variant_devs *v = *st;
    mcl_dev *d = v->dev[0];
    mview m = tu_alloc(d, 64), none = {NULL, 0};
    const nn_corr_shape ok = {1, 2, 2, 4, 2, 1};
    nn_corr_shape s = ok;
    s.c = 0;
    expect_invalid(d, &s, m, m, m, "field c");
    s = ok, s.w = -3;
    expect_invalid(d, &s, m, m, m, "field w");
    s = ok, s.stride = 0;
    expect_invalid(d, &s, m, m, m, "field stride");
    s = ok, s.max_disp = -1;
    expect_invalid(d, &s, m, m, m, "field max_disp");
    s = ok, s.n = 0;
    expect_invalid(d, &s, m, m, m, "field n");
    s = ok, s.n = 70000, s.c = 70000;
    expect_invalid(d, &s, m, m, m, "32-bit");
    expect_invalid(d, NULL, m, m, m, "shape is NULL");

    /* views the call needs */
    assert_int_equal(nn_corr_forward(d, &ok, m, none, m), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "fr"));
    assert_int_equal(nn_corr_backward(d, &ok, m, m, none, m, m), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "dout"));
    assert_int_equal(nn_corr_backward(d, &ok, m, none, m, m, none), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "fr (for dfl)"));
    assert_int_equal(nn_corr_backward(d, &ok, none, m, m, none, m), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "fl (for dfr)"));
    manta_err_clear(mcl_err(d));
    tu_free(d, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corr_small_odd_sizes),
        cmocka_unit_test(test_corr_stride_and_max_disp_not_multiple),
        cmocka_unit_test(test_corr_whole_chunks),
        cmocka_unit_test(test_corr_dispnet_range_large),
        cmocka_unit_test(test_corr_out_c_and_macs),
        cmocka_unit_test(test_corr_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("correlation", tests, tu_setup_variants,
                                       tu_teardown_variants);
}
