/* Masked disparity loss (L1, smooth L1): loss, EPE and valid count against the double
 * reference, the gradient against central finite differences of the reference loss (small
 * maps) and its closed form (maps large enough for many partial sums), the validity rule
 * (0, negative, NaN, infinite and, with max_disp, too large ground truth), beta
 * accumulation, forward only, no valid pixel, and bad arguments. Every case runs the CPU and
 * the GPU kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "common/variants.h"
#include "nn/disp_loss.h"
#include "ref/stereo_ref.h"

/* Offset in floats of every device view inside its buffer. */
#define VIEW_OFF 5

typedef struct loss_case {
    nn_disp_loss_shape s;
    nn_disp_loss_params p;
    size_t n;
    double *pred, *gt; /* (N, 1, H, W), float values */
} loss_case;

/* A case with ground truth in [0.5, 0.9 * range), about `invalid` of it invalid (0,
 * negative, NaN, +inf, and above max_disp when that is set), and pred = gt + e with e in
 * [-3, 3] kept away from the loss's kinks. */
static loss_case make_case(manta_rng *rng, int n, int h, int w, nn_disp_loss_kind kind,
                           double max_disp, double invalid)
{
    loss_case c = {{n, h, w}, {kind, 0.32f, (float)max_disp, 0.0f}, 0, NULL, NULL};
    c.n = (size_t)n * h * w;
    c.pred = tu_doubles(c.n);
    c.gt = tu_doubles(c.n);
    double range = max_disp > 0 ? max_disp : 60.0;
    static const double kinks_l1[] = {0.0}, kinks_smooth[] = {-1.0, 1.0};
    for (size_t i = 0; i < c.n; i++) {
        double g = (float)(0.5 + (0.9 * range - 0.5) * manta_rng_uniform(rng));
        double e = -3.0 + 6.0 * manta_rng_uniform(rng);
        if (kind == NN_DISP_LOSS_L1)
            tu_avoid_kinks(&e, 1, kinks_l1, 1, 0.02);
        else
            tu_avoid_kinks(&e, 1, kinks_smooth, 2, 0.02);
        c.pred[i] = (float)(g + e);
        if (manta_rng_uniform(rng) < invalid) {
            static const double bad[] = {0.0, -2.5, NAN, INFINITY};
            int k = tu_rand_int(rng, 0, max_disp > 0 ? 4 : 3);
            g = k < 4 ? bad[k] : max_disp + 1.0 + manta_rng_uniform(rng);
        }
        c.gt[i] = g;
    }
    return c;
}

static void free_case(loss_case *c) { free(c->pred), free(c->gt); }

static double case_loss(void *p)
{
    loss_case *c = p;
    double loss, epe, cnt;
    ref_disp_loss(c->p.kind, c->p.weight, c->p.max_disp, c->n, c->pred, c->gt, &loss, &epe, &cnt);
    return loss;
}

/* The gradient of the reference loss in closed form. */
static void ref_grad(const loss_case *c, double *g)
{
    double loss, epe, cnt;
    ref_disp_loss(c->p.kind, c->p.weight, c->p.max_disp, c->n, c->pred, c->gt, &loss, &epe, &cnt);
    for (size_t i = 0; i < c->n; i++) {
        g[i] = 0;
        if (!ref_disp_valid(c->gt[i], c->p.max_disp) || cnt == 0)
            continue;
        double e = c->pred[i] - c->gt[i];
        double de = (c->p.kind == NN_DISP_LOSS_L1 || fabs(e) >= 1) ? (e > 0) - (e < 0) : e;
        g[i] = c->p.weight * de / cnt;
    }
}

static void close_to(mcl_dev *d, const double *got, const double *want, size_t n, double rtol,
                     const char *what, const loss_case *c)
{
    char msg[200];
    snprintf(msg, sizeof msg, "disparity loss %s (%s kernels, %s, n%d h%d w%d, max_disp %g)", what,
             tu_variant_name(d), c->p.kind == NN_DISP_LOSS_L1 ? "L1" : "smooth L1", c->s.n, c->s.h,
             c->s.w, (double)c->p.max_disp);
    tu_assert_close(got, want, n, rtol, msg);
}

/* Run the op: result[3] and (when dpred is not NULL) dpred, which holds its starting values
 * on entry. */
static void run_op(mcl_dev *d, const loss_case *c, double *result, double *dpred)
{
    size_t ns = nn_disp_loss_scratch_floats(d, &c->s);
    assert_true(ns >= 3 && ns <= 3 * 512);
    mview vp = tu_view_at(d, VIEW_OFF, c->pred, c->n), vg = tu_view_at(d, VIEW_OFF, c->gt, c->n);
    mview vres = tu_view_at(d, VIEW_OFF, NULL, NN_DISP_LOSS_RESULT), scratch = tu_scratch(d, ns);
    mview vd = {NULL, 0};
    if (dpred)
        vd = tu_view_at(d, VIEW_OFF, dpred, c->n);
    TU_OK(d, mcl_fill(d, vres, 12345.0f, NN_DISP_LOSS_RESULT));
    TU_OK(d, nn_disp_loss(d, &c->s, &c->p, vp, vg, vres, vd, scratch));
    tu_download(d, vres, result, NN_DISP_LOSS_RESULT);
    if (dpred) {
        tu_download(d, vd, dpred, c->n);
        tu_free(d, vd);
    }
    tu_scratch_free(d, scratch, ns);
    tu_free(d, vp), tu_free(d, vg), tu_free(d, vres);
}

/* Loss, EPE, count and the gradient (beta 0, dpred starting as NaN: not read), then beta
 * 0.5 onto a prior gradient, then forward only. */
static void check_case(mcl_dev *d, loss_case *c, bool fd)
{
    double want[3], res[3];
    ref_disp_loss(c->p.kind, c->p.weight, c->p.max_disp, c->n, c->pred, c->gt, &want[0], &want[1],
                  &want[2]);
    double *g = tu_doubles(c->n), *gw = tu_doubles(c->n), *prior = tu_doubles(c->n);
    for (size_t i = 0; i < c->n; i++)
        g[i] = NAN;
    c->p.beta = 0.0f;
    run_op(d, c, res, g);
    close_to(d, res, want, 1, 1e-4, "loss", c);
    close_to(d, res + 1, want + 1, 1, 1e-4, "EPE", c);
    assert_true(res[2] == want[2]);
    if (fd) {
        tu_fd_grad(case_loss, c, c->pred, c->n, 1e-3, gw);
        double *cf = tu_doubles(c->n);
        ref_grad(c, cf);
        close_to(d, cf, gw, c->n, 1e-6, "closed-form gradient vs differences", c);
        free(cf);
    } else {
        ref_grad(c, gw);
    }
    close_to(d, g, gw, c->n, 1e-4, "dpred", c);

    manta_rng rng;
    manta_rng_seed(&rng, 5, c->n);
    tu_fill_uniform(&rng, prior, c->n, -1, 1);
    memcpy(g, prior, c->n * sizeof *g);
    c->p.beta = 0.5f;
    run_op(d, c, res, g);
    for (size_t i = 0; i < c->n; i++)
        prior[i] = 0.5 * prior[i] + gw[i];
    close_to(d, g, prior, c->n, 1e-4, "dpred with beta 0.5", c);
    c->p.beta = 0.0f;

    run_op(d, c, res, NULL); /* forward only */
    close_to(d, res, want, 1, 1e-4, "loss without gradient", c);
    assert_true(res[2] == want[2]);
    free(g), free(gw), free(prior);
}

static void check_both(void **state, int n, int h, int w, nn_disp_loss_kind kind, double max_disp,
                       double invalid, bool fd, uint64_t seed)
{
    tu_variant_devs *v = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 31, seed);
    loss_case c = make_case(&rng, n, h, w, kind, max_disp, invalid);
    for (int k = 0; k < TU_VARIANTS; k++)
        check_case(v->dev[k], &c, fd);
    free_case(&c);
}

static void test_disp_l1_small_odd(void **st)
{
    check_both(st, 2, 5, 7, NN_DISP_LOSS_L1, 0, 0.3, true, 1);
    check_both(st, 1, 1, 1, NN_DISP_LOSS_L1, 0, 0.0, true, 2);
    check_both(st, 3, 3, 13, NN_DISP_LOSS_L1, 20, 0.4, true, 3);
}

static void test_disp_smooth_l1_small_odd(void **st)
{
    check_both(st, 2, 5, 7, NN_DISP_LOSS_SMOOTH_L1, 0, 0.3, true, 4);
    check_both(st, 1, 9, 11, NN_DISP_LOSS_SMOOTH_L1, 30, 0.2, true, 5);
}

/* Many partial sums (GPU: groups up to the cap of 512; CPU: ranges of 16384). */
static void test_disp_large_maps(void **st)
{
    check_both(st, 2, 160, 301, NN_DISP_LOSS_SMOOTH_L1, 0, 0.25, false, 6);
    check_both(st, 4, 384, 769, NN_DISP_LOSS_L1, 192, 0.1, false, 7);
}

/* Every pixel invalid: loss, EPE and count 0, the gradient 0 (overwritten). */
static void test_disp_no_valid_pixel(void **st)
{
    tu_variant_devs *v = *st;
    manta_rng rng;
    manta_rng_seed(&rng, 8, 8);
    loss_case c = make_case(&rng, 1, 4, 9, NN_DISP_LOSS_SMOOTH_L1, 10, 1.0);
    for (int k = 0; k < TU_VARIANTS; k++) {
        double res[3], *g = tu_doubles(c.n);
        for (size_t i = 0; i < c.n; i++)
            g[i] = 7.0;
        run_op(v->dev[k], &c, res, g);
        assert_true(res[0] == 0.0 && res[1] == 0.0 && res[2] == 0.0);
        for (size_t i = 0; i < c.n; i++)
            assert_true(g[i] == 0.0);
        free(g);
    }
    free_case(&c);
}

static void expect_invalid(mcl_dev *d, const nn_disp_loss_shape *s, const nn_disp_loss_params *p,
                           mview m, mview scratch, const char *what)
{
    manta_status st = nn_disp_loss(d, s, p, m, m, m, m, scratch);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, "disparity loss") || !strstr(msg, what))
        fail_msg("message '%s' does not name the op and '%s'", msg, what);
    manta_err_clear(mcl_err(d));
}

static void test_disp_bad_arguments_rejected(void **st)
{
    tu_variant_devs *v = *st;
    mcl_dev *d = v->dev[0];
    mview m = tu_alloc(d, 64), none = {NULL, 0};
    const nn_disp_loss_shape ok = {1, 2, 3};
    const nn_disp_loss_params okp = {NN_DISP_LOSS_L1, 1.0f, 0.0f, 0.0f};
    nn_disp_loss_shape s = ok;
    nn_disp_loss_params p = okp;
    s.n = 0;
    expect_invalid(d, &s, &p, m, m, "field n");
    assert_int_equal(nn_disp_loss_scratch_floats(d, &s), 0);
    s = ok, s.w = -1;
    expect_invalid(d, &s, &p, m, m, "field w");
    s = ok, s.n = 1 << 15, s.h = 1 << 15, s.w = 4;
    expect_invalid(d, &s, &p, m, m, "n*h*w");
    s = ok;
    p.kind = (nn_disp_loss_kind)7;
    expect_invalid(d, &s, &p, m, m, "kind");
    p = okp, p.weight = -1.0f;
    expect_invalid(d, &s, &p, m, m, "weight");
    p = okp, p.weight = NAN;
    expect_invalid(d, &s, &p, m, m, "weight");
    p = okp, p.max_disp = -4.0f;
    expect_invalid(d, &s, &p, m, m, "max_disp");
    p = okp, p.beta = INFINITY;
    expect_invalid(d, &s, &p, m, m, "beta");
    expect_invalid(d, &s, NULL, m, m, "params is NULL");
    expect_invalid(d, NULL, &okp, m, m, "shape is NULL");
    expect_invalid(d, &ok, &okp, m, none, "scratch has no buffer");
    assert_int_equal(nn_disp_loss(d, &ok, &okp, m, none, m, m, m), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(d), MANTA_ERR_INVALID_ARG), "gt has no buffer"));
    manta_err_clear(mcl_err(d));
    tu_free(d, m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disp_l1_small_odd),
        cmocka_unit_test(test_disp_smooth_l1_small_odd),
        cmocka_unit_test(test_disp_large_maps),
        cmocka_unit_test(test_disp_no_valid_pixel),
        cmocka_unit_test(test_disp_bad_arguments_rejected),
    };
    return cmocka_run_group_tests_name("disp_loss", tests, tu_setup_variants, tu_teardown_variants);
}
