/* Transposed conv2d: device forward against the double reference (which scatters, where
 * the device gathers), device backward against central finite differences of the
 * reference (loss = sum(y * r)). Every small case also checks that dw and db accumulate,
 * that dx is overwritten, that dx, dw or db can be skipped, that weight columns beyond
 * Cout*KH*KW (w_ld) are neither read nor written, and that nothing is written past the
 * scratch size the op asks for (the CPU variant's k4 s2 p1 path asks for none and gets an
 * empty view). All other device views sit at a non-zero offset.
 * Each case runs on both kernel variants, whatever MANTA_KERNELS says: the CPU one (direct
 * kernels for k4 s2 p1, GEMMs elsewhere) and the GPU one (GEMMs, split dW and db). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/variants.h"
#include "nn/deconv.h"
#include "ref/ref_deconv.h"

/* Offset in floats of every device view inside its buffer. */
#define VIEW_OFF 3

typedef struct fd_ctx {
    const nn_deconv2d_shape *s;
    double *x, *w, *b, *y, *r; /* x (N, Cin, H, W); w (Cin, w_ld); b (Cout) or NULL;
                                  y, r (N, Cout, Ho, Wo) */
    size_t ny;
} fd_ctx;

static double deconv_loss(void *p)
{
    fd_ctx *c = p;
    ref_deconv2d_forward(c->s, c->x, c->w, c->b, c->y);
    return tu_dot(c->y, c->r, c->ny);
}

/* Full check on a shape small enough for finite differences of every input, weight and
 * bias; without a bias when @p bias is false (db is then never asked for). */
static void check_deconv(mcl_dev *d, const nn_deconv2d_shape *s, bool bias, uint64_t seed)
{
    manta_rng rng;
    manta_rng_seed(&rng, 41, seed);
    int ho = ref_deconv_out(s->h, s->kh, s->stride_h, s->pad_h);
    int wo = ref_deconv_out(s->w, s->kw, s->stride_w, s->pad_w);
    assert_int_equal(nn_deconv2d_out_h(s), ho);
    assert_int_equal(nn_deconv2d_out_w(s), wo);
    size_t kk = (size_t)s->cout * s->kh * s->kw, ld = s->w_ld ? (size_t)s->w_ld : kk;
    size_t cin = (size_t)s->cin, cout = (size_t)s->cout;
    size_t nx = (size_t)s->n * cin * s->h * s->w, ny = (size_t)s->n * cout * ho * wo;
    size_t nw = cin * ld, nwu = cin * kk;
    assert_true(nn_deconv2d_macs(s) == (double)nx * (double)kk);

    double *x = tu_doubles(nx), *w = tu_doubles(nw), *b = tu_doubles(cout), *y = tu_doubles(ny);
    double *r = tu_doubles(ny), *dw0 = tu_doubles(nw), *db0 = tu_doubles(cout);
    size_t most = nx > ny ? nx : ny;
    most = most > nw ? most : nw;
    double *got = tu_doubles(most), *fdx = tu_doubles(nx), *fdw = tu_doubles(nwu),
           *fdb = tu_doubles(cout);
    double *want_w = tu_doubles(nwu), *got_w = tu_doubles(nwu), *want_b = tu_doubles(cout);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_fill_uniform(&rng, r, ny, -1, 1);
    tu_fill_uniform(&rng, b, cout, -1, 1);
    tu_fill_uniform(&rng, db0, cout, -1, 1);
    tu_fill_weight(&rng, w, cin, kk, ld);
    tu_fill_weight(&rng, dw0, cin, kk, ld);

    size_t ns = nn_deconv2d_scratch_floats(d, s);
    mview none = {NULL, 0};
    mview vx = tu_view_at(d, VIEW_OFF, x, nx), vw = tu_view_at(d, VIEW_OFF, w, nw),
          vy = tu_view_at(d, VIEW_OFF, NULL, ny);
    mview vb = bias ? tu_view_at(d, VIEW_OFF, b, cout) : none,
          vdb = bias ? tu_view_at(d, VIEW_OFF, db0, cout) : none;
    mview vdy = tu_view_at(d, VIEW_OFF, r, ny), vdx = tu_view_at(d, VIEW_OFF, NULL, nx),
          vdw = tu_view_at(d, VIEW_OFF, dw0, nw);
    mview scratch = ns ? tu_scratch(d, ns) : none;

    /* forward, y overwritten */
    TU_OK(d, mcl_fill(d, vy, 333.0f, ny));
    TU_OK(d, nn_deconv2d_forward(d, s, vx, vw, vb, vy, scratch));
    tu_download(d, vy, got, ny);
    fd_ctx c = {.s = s, .x = x, .w = w, .b = bias ? b : NULL, .y = y, .r = r, .ny = ny};
    ref_deconv2d_forward(s, x, w, c.b, y);
    tu_variant_assert_close(d, got, y, ny, 1e-4, "deconv2d forward");

    /* reference gradients */
    tu_fd_grad(deconv_loss, &c, x, nx, 1e-3, fdx);
    for (size_t ci = 0; ci < cin; ci++)
        tu_fd_grad(deconv_loss, &c, w + ci * ld, kk, 1e-3, fdw + ci * kk);
    if (bias)
        tu_fd_grad(deconv_loss, &c, b, cout, 1e-3, fdb);
    tu_used_columns(dw0, cin, kk, ld, want_w);
    for (size_t i = 0; i < cout; i++)
        want_b[i] = db0[i] + fdb[i];

    /* dx overwritten, dw and db accumulated onto their prior values */
    TU_OK(d, mcl_fill(d, vdx, 777.0f, nx));
    TU_OK(d, nn_deconv2d_backward(d, s, vx, vw, vdy, vdx, vdw, vdb, scratch));
    tu_download(d, vdx, got, nx);
    tu_variant_assert_close(d, got, fdx, nx, 1e-3, "deconv2d dx");
    tu_download(d, vdw, got, nw);
    tu_assert_unused_nan(got, cin, kk, ld);
    tu_used_columns(got, cin, kk, ld, got_w);
    for (size_t i = 0; i < nwu; i++)
        want_w[i] += fdw[i];
    tu_variant_assert_close(d, got_w, want_w, nwu, 1e-3, "deconv2d dw (prior value + gradient)");
    if (bias) {
        tu_download(d, vdb, got, cout);
        tu_variant_assert_close(d, got, want_b, cout, 1e-3, "deconv2d db (prior value + gradient)");
    }

    /* dx skipped: dw (and db) accumulate a second gradient */
    TU_OK(d, nn_deconv2d_backward(d, s, vx, vw, vdy, none, vdw, vdb, scratch));
    tu_download(d, vdw, got, nw);
    tu_assert_unused_nan(got, cin, kk, ld);
    tu_used_columns(got, cin, kk, ld, got_w);
    for (size_t i = 0; i < nwu; i++)
        want_w[i] += fdw[i];
    tu_variant_assert_close(d, got_w, want_w, nwu, 1e-3, "deconv2d dw after a second backward");
    if (bias) {
        tu_download(d, vdb, got, cout);
        for (size_t i = 0; i < cout; i++)
            want_b[i] += fdb[i];
        tu_variant_assert_close(d, got, want_b, cout, 1e-3, "deconv2d db after a second backward");
    }

    /* dw and db skipped: dx alone, without x; dw untouched */
    TU_OK(d, mcl_fill(d, vdx, -5.0f, nx));
    TU_OK(d, nn_deconv2d_backward(d, s, none, vw, vdy, vdx, none, none, scratch));
    tu_download(d, vdx, got, nx);
    tu_variant_assert_close(d, got, fdx, nx, 1e-3, "deconv2d dx without dw");
    tu_download(d, vdw, got, nw);
    tu_used_columns(got, cin, kk, ld, got_w);
    tu_variant_assert_close(d, got_w, want_w, nwu, 1e-3, "dw untouched when skipped");

    /* db alone (no x, no w), when there is a bias */
    if (bias) {
        TU_OK(d, nn_deconv2d_backward(d, s, none, none, vdy, none, none, vdb, scratch));
        tu_download(d, vdb, got, cout);
        for (size_t i = 0; i < cout; i++)
            want_b[i] += fdb[i];
        tu_variant_assert_close(d, got, want_b, cout, 1e-3, "deconv2d db alone");
    }

    if (ns)
        tu_scratch_free(d, scratch, ns);
    tu_free(d, vx), tu_free(d, vw), tu_free(d, vy), tu_free(d, vdy), tu_free(d, vdx);
    tu_free(d, vdw);
    if (bias)
        tu_free(d, vb), tu_free(d, vdb);
    free(x), free(w), free(b), free(y), free(r), free(dw0), free(db0), free(got), free(fdx);
    free(fdw), free(fdb), free(want_w), free(got_w), free(want_b);
}

/* A shape too large for a finite difference per parameter, with GEMM sizes that are not
 * multiples of any tile and (GPU variant) split dW and db with a remainder: forward
 * element-wise, dx, dw and db by central differences along random directions,
 * <grad, dir>. */
static void check_deconv_large(mcl_dev *d, const nn_deconv2d_shape *s, uint64_t seed, int dirs)
{
    manta_rng rng;
    manta_rng_seed(&rng, 8, seed);
    int ho = ref_deconv_out(s->h, s->kh, s->stride_h, s->pad_h);
    int wo = ref_deconv_out(s->w, s->kw, s->stride_w, s->pad_w);
    size_t nx = (size_t)s->n * s->cin * s->h * s->w, ny = (size_t)s->n * s->cout * ho * wo;
    size_t nw = (size_t)s->cin * s->cout * s->kh * s->kw, nb = (size_t)s->cout;
    size_t most = nx > nw ? nx : nw;
    double *x = tu_doubles(nx), *w = tu_doubles(nw), *b = tu_doubles(nb), *y = tu_doubles(ny);
    double *r = tu_doubles(ny), *x0 = tu_doubles(nx), *w0 = tu_doubles(nw), *b0 = tu_doubles(nb);
    double *got = tu_doubles(ny > nx ? ny : nx), *gdx = tu_doubles(nx), *gdw = tu_doubles(nw);
    double *gdb = tu_doubles(nb), *dir = tu_doubles(most);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_fill_uniform(&rng, w, nw, -1, 1);
    tu_fill_uniform(&rng, b, nb, -1, 1);
    tu_fill_uniform(&rng, r, ny, -1, 1);
    memcpy(x0, x, nx * sizeof *x);
    memcpy(w0, w, nw * sizeof *w);
    memcpy(b0, b, nb * sizeof *b);

    size_t ns = nn_deconv2d_scratch_floats(d, s);
    mview none = {NULL, 0};
    mview vx = tu_view_at(d, VIEW_OFF, x, nx), vw = tu_view_at(d, VIEW_OFF, w, nw),
          vb = tu_view_at(d, VIEW_OFF, b, nb);
    mview vy = tu_view_at(d, VIEW_OFF, NULL, ny), vdy = tu_view_at(d, VIEW_OFF, r, ny),
          vdx = tu_view_at(d, VIEW_OFF, NULL, nx);
    mview vdw = tu_view_at(d, VIEW_OFF, NULL, nw), vdb = tu_view_at(d, VIEW_OFF, NULL, nb);
    mview scratch = ns ? tu_scratch(d, ns) : none;
    TU_OK(d, nn_deconv2d_forward(d, s, vx, vw, vb, vy, scratch));
    tu_download(d, vy, got, ny);
    ref_deconv2d_forward(s, x, w, b, y);
    tu_variant_assert_close(d, got, y, ny, 1e-4, "deconv2d forward (large)");

    TU_OK(d, mcl_fill(d, vdw, 0.0f, nw));
    TU_OK(d, mcl_fill(d, vdb, 0.0f, nb));
    TU_OK(d, nn_deconv2d_backward(d, s, vx, vw, vdy, vdx, vdw, vdb, scratch));
    tu_download(d, vdx, gdx, nx);
    tu_download(d, vdw, gdw, nw);
    tu_download(d, vdb, gdb, nb);
    fd_ctx c = {.s = s, .x = x, .w = w, .b = b, .y = y, .r = r, .ny = ny};
    for (int i = 0; i < dirs; i++) {
        tu_fill_uniform(&rng, dir, nx, -1, 1);
        double want = tu_fd_along(deconv_loss, &c, x, x0, dir, nx, 1e-3);
        double have = tu_dot(gdx, dir, nx);
        tu_variant_assert_close(d, &have, &want, 1, 1e-3, "deconv2d <dx, direction>");
        tu_fill_uniform(&rng, dir, nw, -1, 1);
        want = tu_fd_along(deconv_loss, &c, w, w0, dir, nw, 1e-3), have = tu_dot(gdw, dir, nw);
        tu_variant_assert_close(d, &have, &want, 1, 1e-3, "deconv2d <dw, direction>");
        tu_fill_uniform(&rng, dir, nb, -1, 1);
        want = tu_fd_along(deconv_loss, &c, b, b0, dir, nb, 1e-3), have = tu_dot(gdb, dir, nb);
        tu_variant_assert_close(d, &have, &want, 1, 1e-3, "deconv2d <db, direction>");
    }
    if (ns)
        tu_scratch_free(d, scratch, ns);
    tu_free(d, vx), tu_free(d, vw), tu_free(d, vb), tu_free(d, vy), tu_free(d, vdy);
    tu_free(d, vdx), tu_free(d, vdw), tu_free(d, vdb);
    free(x), free(w), free(b), free(y), free(r), free(x0), free(w0), free(b0), free(got);
    free(gdx), free(gdw), free(gdb), free(dir);
}

/* One shape of check_deconv(). */
typedef struct deconv_case {
    nn_deconv2d_shape s; /* n, cin, h, w, cout, kh, kw, stride_h, stride_w, pad_h, pad_w, w_ld */
    bool bias;
} deconv_case;

/* check_deconv() of every case on both variants. */
static void check_cases(void **state, const deconv_case *c, size_t count, uint64_t seed)
{
    tu_variant_devs *v = *state;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (size_t i = 0; i < count; i++)
            check_deconv(v->dev[k], &c[i].s, c[i].bias, seed + i);
}

/* k4 s2 p1, the decoder's x2 up-sampling: odd sizes, a row shorter than the 8-column
 * chunks, one of two chunks and a half, channel counts that are not multiples of the
 * direct kernels' blocks (4 output, 4 and 2 input channels), one row or one column. */
static void test_deconv_k4s2p1_odd_sizes(void **st)
{
    const deconv_case c[] = {
        {{2, 3, 5, 7, 5, 4, 4, 2, 2, 1, 1, 0}, true},
        {{1, 6, 3, 21, 9, 4, 4, 2, 2, 1, 1, 0}, true},
        {{3, 1, 1, 9, 1, 4, 4, 2, 2, 1, 1, 0}, false},
        {{1, 2, 6, 1, 3, 4, 4, 2, 2, 1, 1, 0}, true},
        {{2, 4, 4, 16, 4, 4, 4, 2, 2, 1, 1, 0}, false},
    };
    check_cases(st, c, sizeof c / sizeof c[0], 1);
}

/* The first 3 of 5 stored output channels (w_ld 80), and weight rows padded from 32 to 40
 * floats, with and without a bias. */
static void test_deconv_k4s2p1_elastic_w_ld(void **st)
{
    const deconv_case c[] = {
        {{2, 5, 3, 10, 3, 4, 4, 2, 2, 1, 1, 80}, true},
        {{1, 3, 4, 5, 2, 4, 4, 2, 2, 1, 1, 40}, false},
    };
    check_cases(st, c, sizeof c / sizeof c[0], 10);
}

/* Other kernels, strides and paddings take the GEMM path on both variants: overlapping
 * windows (k3 s1, k3 s2, k5 s3), no overlap (k2 s2 p0), non-square kernels and strides, a
 * pad that crops several taps (with an elastic weight stride), k4 at stride 1. */
static void test_deconv_general_shapes(void **st)
{
    const deconv_case c[] = {
        {{2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 1, 0}, true},
        {{1, 4, 4, 5, 3, 3, 3, 2, 2, 1, 1, 0}, false},
        {{3, 2, 3, 4, 5, 2, 2, 2, 2, 0, 0, 0}, true},
        {{1, 3, 3, 3, 2, 5, 5, 3, 3, 2, 2, 0}, true},
        {{2, 3, 4, 3, 3, 3, 2, 1, 2, 0, 1, 0}, false},
        {{2, 2, 3, 5, 3, 4, 4, 2, 2, 2, 1, 60}, true},
        {{1, 2, 5, 4, 2, 4, 4, 1, 1, 1, 1, 0}, true},
    };
    check_cases(st, c, sizeof c / sizeof c[0], 20);
}

/* Larger shapes: k4 s2 p1 with several chunks per row and channel blocks, two where the
 * GPU variant splits dW (K = N*H*W = 663 into 2 chunks and 1 remainder column) and db, and
 * 512 -> 256 channels, whose dW grid of 256 x 256 PoCL would run in work-groups of 4096
 * work-items holding 1 KiB of private arrays each: more than its thread's stack (mcl's
 * wg_auto). */
static void test_deconv_larger(void **st)
{
    const nn_deconv2d_shape s[] = {
        {3, 19, 9, 21, 13, 4, 4, 2, 2, 1, 1, 0},
        {3, 5, 13, 17, 3, 4, 4, 2, 2, 1, 1, 0},
        {3, 5, 13, 17, 3, 3, 3, 2, 2, 1, 1, 0},
        {1, 512, 3, 5, 256, 4, 4, 2, 2, 1, 1, 0},
    };
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
            check_deconv_large(v->dev[k], &s[i], 30 + i, i == 1 ? 2 : 1);
}

/* Expect MANTA_ERR_INVALID_ARG from forward and backward, with a message that names the op
 * and @p field. */
static void expect_invalid(mcl_dev *d, const nn_deconv2d_shape *s, const char *field)
{
    mview v = tu_alloc(d, 16);
    manta_status st = nn_deconv2d_forward(d, s, v, v, v, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field) || !strstr(msg, "deconv2d forward"))
        fail_msg("forward message '%s' does not name 'deconv2d forward' and '%s'", msg, field);
    manta_err_clear(mcl_err(d));
    st = nn_deconv2d_backward(d, s, v, v, v, v, v, v, v);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field) || !strstr(msg, "deconv2d backward"))
        fail_msg("backward message '%s' does not name 'deconv2d backward' and '%s'", msg, field);
    manta_err_clear(mcl_err(d));
    tu_free(d, v);
}

static void check_bad_shapes(mcl_dev *d)
{
    const nn_deconv2d_shape ok = {2, 3, 5, 5, 4, 4, 4, 2, 2, 1, 1, 0};
    nn_deconv2d_shape s = ok;
    s.stride_h = 0;
    expect_invalid(d, &s, "stride_h");
    assert_true(nn_deconv2d_out_h(&s) <= 0);
    s = ok, s.pad_w = -1;
    expect_invalid(d, &s, "pad_w");
    s = ok, s.cin = 0;
    expect_invalid(d, &s, "cin");
    s = ok, s.kw = 0;
    expect_invalid(d, &s, "kw");
    s = ok, s.h = 1, s.kh = 2, s.pad_h = 1; /* (1 - 1) * 2 - 2 + 2 = 0 rows */
    expect_invalid(d, &s, "pad_h");
    assert_true(nn_deconv2d_out_h(&s) <= 0);
    assert_int_equal(nn_deconv2d_scratch_floats(d, &s), 0);
    s = ok, s.w_ld = 63; /* below cout*kh*kw = 64 */
    expect_invalid(d, &s, "w_ld");
    expect_invalid(d, NULL, "shape");

    /* buffers the call needs */
    mview v = tu_alloc(d, 4096), none = {NULL, 0};
    manta_status rc = nn_deconv2d_forward(d, &ok, v, v, none, none, v);
    assert_int_equal(rc, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), rc), "y has no buffer"));
    manta_err_clear(mcl_err(d));
    rc = nn_deconv2d_backward(d, &ok, none, v, v, none, v, none, v);
    assert_int_equal(rc, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), rc), "x has no buffer"));
    manta_err_clear(mcl_err(d));
    nn_deconv2d_shape g = ok;
    g.kh = g.kw = 3; /* the GEMM path on both variants: needs scratch */
    rc = nn_deconv2d_forward(d, &g, v, v, none, v, none);
    assert_int_equal(rc, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), rc), "scratch"));
    manta_err_clear(mcl_err(d));
    tu_free(d, v);
}

static void test_deconv_bad_shapes_rejected(void **st)
{
    tu_variant_devs *v = *st;
    for (int k = 0; k < TU_VARIANTS; k++)
        check_bad_shapes(v->dev[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deconv_k4s2p1_odd_sizes),
        cmocka_unit_test(test_deconv_k4s2p1_elastic_w_ld),
        cmocka_unit_test(test_deconv_general_shapes),
        cmocka_unit_test(test_deconv_larger),
        cmocka_unit_test(test_deconv_bad_shapes_rejected),
    };
    return cmocka_run_group_tests_name("deconv2d", tests, tu_setup_variants, tu_teardown_variants);
}
