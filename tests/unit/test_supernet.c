/* The OFA supernet: the backward pass of whole sub-networks agrees with
 * finite differences along random directions (elastic kernel, width, depth,
 * resolution, SE, residuals), skipped weights receive no gradient, and
 * switching sub-networks creates no buffer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "export/tflite.h"
#include "classify/extract.h"
#include "classify/supernet.h"

enum { B = 3 };

/* A small space with every feature: 2 units (the second with SE and a
 * stride-1 first block), depths 1..2, kernels 3/5/7, a feature-mix head. */
static void tiny_space(ofa_space *s)
{
    ofa_space_cpu_default(s);
    s->in_channels = 1;
    s->classes = 3;
    s->n_res = 2;
    s->res[0] = 7; /* odd: SAME padding on export; even: explicit PAD */
    s->res[1] = 8;
    s->stem_width = 8;
    s->first_width = 8;
    s->n_units = 2;
    s->n_d = 2;
    s->d[0] = 1;
    s->d[1] = 2;
    s->max_depth = 2;
    s->unit[0].width = 8;
    s->unit[0].stride = 2;
    s->unit[0].act = NN_ACT_RELU;
    s->unit[0].se = false;
    s->unit[1].width = 8;
    s->unit[1].stride = 1;
    s->unit[1].act = NN_ACT_HSWISH;
    s->unit[1].se = true;
    s->head_expand = 16;
    s->head_mix = 12;
}

typedef struct fixture {
    mcl_dev *d;
    ofa_space s;
    ofa_supernet *n;
    ofa_slabs sl;
    ofa_bn_mode mode; /* of the forwards a gradient check differentiates */
} fixture;

static double loss_of(fixture *f, const double *r, size_t nl, double *logits)
{
    TU_OK(f->d, ofa_supernet_forward(f->n, f->sl.params, f->mode));
    tu_download(f->d, ofa_supernet_logits(f->n), logits, nl);
    return tu_dot(logits, r, nl);
}

/* d/dt L(p + t v) at t = 0 by central differences, against grad . v.
 * ReLU, h-swish and h-sigmoid have kinks, so a finite step through a whole
 * network is never exact: each direction must agree within 10% (+0.02), and
 * the mean relative error over all directions of a test within 4%.
 * A random direction can be nearly orthogonal to the gradient (grad . v
 * close to 0 while its terms are not), so the relative error divides by the
 * larger of |grad . v| and sqrt(sum (g_i v_i)^2), the size grad . v has for
 * a direction of random signs. Returns the sum of relative errors of the 3
 * directions. */
static double check_arch(fixture *f, const ofa_arch *a, uint64_t seed)
{
    mcl_dev *d = f->d;
    TU_OK(d, ofa_supernet_set_arch(f->n, a));
    size_t np = f->sl.n_params, nl = (size_t)B * f->s.classes, nx = (size_t)B * a->r * a->r;
    manta_rng rng;
    manta_rng_seed(&rng, seed, 1);
    double *x = malloc(nx * sizeof *x), *r = malloc(nl * sizeof *r), *lg = malloc(nl * sizeof *lg);
    double *p0 = malloc(np * sizeof *p0), *g = malloc(np * sizeof *g), *v = malloc(np * sizeof *v);
    double *pt = malloc(np * sizeof *pt);
    assert_true(x && r && lg && p0 && g && v && pt);
    tu_fill_uniform(&rng, x, nx, -2, 2);
    tu_fill_uniform(&rng, r, nl, -1, 1);
    tu_upload(d, ofa_supernet_input(f->n), x, nx);
    tu_download(d, f->sl.params, p0, np);

    TU_OK(d, mcl_fill(d, f->sl.grads, 0.0f, np));
    loss_of(f, r, nl, lg);
    tu_upload(d, ofa_supernet_dlogits(f->n), r, nl);
    TU_OK(d, ofa_supernet_backward(f->n));
    tu_download(d, f->sl.grads, g, np);

    double rel_sum = 0;
    for (int trial = 0; trial < 3; trial++) {
        double gv = 0, terms = 0;
        for (size_t i = 0; i < np; i++) {
            v[i] = (2 * manta_rng_uniform(&rng) - 1) * (fabs(p0[i]) + 0.05);
            gv += g[i] * v[i];
            terms += g[i] * v[i] * g[i] * v[i];
        }
        /* small enough that few kinks fall inside the step, large enough
         * that float32 rounding of the loss stays below 1e-3 of the slope */
        const double eps = 1.25e-4;
        double lp, lm;
        for (size_t i = 0; i < np; i++)
            pt[i] = p0[i] + eps * v[i];
        tu_upload(d, f->sl.params, pt, np);
        lp = loss_of(f, r, nl, lg);
        for (size_t i = 0; i < np; i++)
            pt[i] = p0[i] - eps * v[i];
        tu_upload(d, f->sl.params, pt, np);
        lm = loss_of(f, r, nl, lg);
        double fd = (lp - lm) / (2 * eps);
        if (!(fabs(fd - gv) <= 0.1 * fabs(gv) + 0.02))
            fail_msg("r=%d trial %d: finite difference %.6g, gradient %.6g", a->r, trial, fd, gv);
        rel_sum += fabs(fd - gv) / fmax(fmax(fabs(gv), sqrt(terms)), 1e-3);
    }
    tu_upload(d, f->sl.params, p0, np);
    free(x), free(r), free(lg), free(p0), free(g), free(v), free(pt);
    return rel_sum;
}

static void test_backward_matches_finite_differences(void **state)
{
    fixture *f = *state;
    ofa_arch a;
    double rel = 0;
    double *p_init = tu_move_to_generic_point(f->d, f->sl.params, f->sl.n_params, f->sl.n_decay);
    ofa_arch_max(&f->s, 0, &a);
    rel += check_arch(f, &a, 1);
    ofa_arch_min(&f->s, 0, &a);
    rel += check_arch(f, &a, 2);
    manta_rng rng;
    manta_rng_seed(&rng, 77, 0);
    for (int i = 0; i < 4; i++) { /* mixed kernels 3/5/7, widths, depths, resolutions */
        ofa_arch_sample(&f->s, &rng, &a);
        rel += check_arch(f, &a, 10 + (uint64_t)i);
    }
    /* training mode: batch statistics as above, plus dropout before the
     * classifier with a fixed mask (and running statistics that move, which
     * the outputs do not read) */
    f->mode = OFA_BN_TRAIN;
    ofa_supernet_set_dropout_seed(f->n, 99);
    ofa_arch_max(&f->s, 0, &a);
    rel += check_arch(f, &a, 3);
    f->mode = OFA_BN_BATCH_ONLY;
    tu_upload(f->d, f->sl.params, p_init, f->sl.n_params);
    free(p_init);
    print_message("# mean relative error %.4f over 21 directions\n", rel / 21);
    if (!(rel / 21 < 0.04))
        fail_msg("mean relative error %.4f over 21 directions", rel / 21);
}

/* The minimal sub-network leaves unit slots beyond depth 1, expanded
 * channels beyond its width and the 7x7 ring outside 3x3 without gradient;
 * the kernel matrices it uses do get one. */
static void test_inactive_weights_get_no_gradient(void **state)
{
    fixture *f = *state;
    mcl_dev *d = f->d;
    ofa_arch a;
    ofa_arch_min(&f->s, 0, &a);
    TU_OK(d, ofa_supernet_set_arch(f->n, &a));
    size_t np = f->sl.n_params, nl = (size_t)B * f->s.classes;
    double *g = malloc(np * sizeof *g), *r = malloc(nl * sizeof *r);
    assert_true(g && r);
    for (size_t i = 0; i < nl; i++)
        r[i] = (i % 3) - 1.0;
    TU_OK(d, mcl_fill(d, f->sl.grads, 0.0f, np));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_TRAIN));
    tu_upload(d, ofa_supernet_dlogits(f->n), r, nl);
    TU_OK(d, ofa_supernet_backward(f->n));
    tu_download(d, f->sl.grads, g, np);
    size_t zero = 0, nonzero = 0;
    for (size_t i = 0; i < np; i++)
        if (g[i] == 0.0)
            zero++;
        else
            nonzero++;
    /* min: e=3 of 6 channels, depth 1 of 2, kernel 3 of 7: most weights idle */
    assert_true(nonzero > 200);
    assert_true(zero > nonzero);
    free(g), free(r);
}

static void test_switching_subnets_creates_no_buffers(void **state)
{
    fixture *f = *state;
    mcl_dev *d = f->d;
    mcl_stats s0, s1;
    mcl_get_stats(d, &s0);
    manta_rng rng;
    manta_rng_seed(&rng, 5, 0);
    for (int i = 0; i < 6; i++) {
        ofa_arch a;
        ofa_arch_sample(&f->s, &rng, &a);
        TU_OK(d, ofa_supernet_set_arch(f->n, &a));
        TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_TRAIN));
        TU_OK(d, ofa_supernet_backward(f->n));
    }
    mcl_get_stats(d, &s1);
    assert_int_equal(s1.buffers_created, s0.buffers_created);
}

/* What the grad_ready hook saw: each call's offset and the gradients [from, n_decay) then. */
typedef struct hook_log {
    mcl_dev *d;
    mview grads;
    size_t n_decay;
    int calls;
    size_t from[64];
    float *snap[64];
} hook_log;

static manta_status record(void *ctx, size_t from)
{
    hook_log *h = ctx;
    if (h->calls >= 64)
        return MANTA_ERR_INTERNAL;
    h->from[h->calls] = from;
    h->snap[h->calls] = malloc((h->n_decay - from + 1) * sizeof(float));
    if (!h->snap[h->calls])
        return MANTA_ERR_NO_MEMORY;
    manta_status st =
        mcl_read(h->d, mview_at(h->grads, from), h->snap[h->calls], h->n_decay - from);
    h->calls++;
    return st;
}

/* The backward reports block after block, from the head down to 0, at offsets of
 * ofa_supernet_grad_bounds(), and the gradients it reports as final do not change later. */
static void test_grad_ready_reports_final_ranges(void **state)
{
    fixture *f = *state;
    mcl_dev *d = f->d;
    size_t bounds[64];
    int nbounds = ofa_supernet_grad_bounds(f->n, bounds, 64);
    assert_true(nbounds >= 4 && nbounds <= 64);
    assert_int_equal(bounds[0], 0);
    for (int k = 1; k < nbounds; k++)
        assert_true(bounds[k] > bounds[k - 1] && bounds[k] < f->sl.n_decay);
    manta_rng rng;
    manta_rng_seed(&rng, 11, 0);
    float *g = malloc(f->sl.n_decay * sizeof *g);
    assert_non_null(g);
    for (int trial = 0; trial < 3; trial++) {
        ofa_arch a;
        if (trial == 0)
            ofa_arch_max(&f->s, f->s.res[1], &a);
        else
            ofa_arch_sample(&f->s, &rng, &a);
        TU_OK(d, ofa_supernet_set_arch(f->n, &a));
        TU_OK(d, mcl_fill(d, f->sl.grads, 0.0f, f->sl.n_params));
        TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_TRAIN));
        TU_OK(d, mcl_fill(d, ofa_supernet_dlogits(f->n), 0.5f, (size_t)B * f->s.classes));
        hook_log h = {.d = d, .grads = f->sl.grads, .n_decay = f->sl.n_decay};
        ofa_supernet_set_grad_ready(f->n, record, &h);
        TU_OK(d, ofa_supernet_backward(f->n));
        ofa_supernet_set_grad_ready(f->n, NULL, NULL);
        TU_OK(d, mcl_read(d, f->sl.grads, g, f->sl.n_decay));
        /* head, every active slot, the two stem blocks, the stem */
        int active = 0;
        for (int u = 0; u < f->s.n_units; u++)
            active += a.d[u];
        assert_int_equal(h.calls, active + 4);
        assert_int_equal(h.from[h.calls - 1], 0);
        size_t nz = 0;
        for (int c = 0; c < h.calls; c++) {
            int found = 0;
            for (int k = 0; k < nbounds; k++)
                found |= bounds[k] == h.from[c];
            assert_true(found);
            if (c > 0)
                assert_true(h.from[c] < h.from[c - 1]);
            for (size_t j = h.from[c]; j < f->sl.n_decay; j++) {
                assert_true(memcmp(&h.snap[c][j - h.from[c]], &g[j], sizeof *g) == 0);
                nz += g[j] != 0.0f;
            }
            free(h.snap[c]);
        }
        assert_true(nz > 100);
    }
    free(g);
}

static void test_bad_use_is_refused(void **state)
{
    fixture *f = *state;
    ofa_arch a;
    ofa_arch_max(&f->s, 0, &a);
    a.ks[1] = 9;
    assert_int_equal(ofa_supernet_set_arch(f->n, &a), MANTA_ERR_INVALID_ARG);
    ofa_arch_max(&f->s, 0, &a);
    TU_OK(f->d, ofa_supernet_set_arch(f->n, &a));
    TU_OK(f->d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
    assert_int_equal(ofa_supernet_backward(f->n), MANTA_ERR_INVALID_ARG); /* eval forward */
}

/* Re-organising channels keeps the full network's function, while a narrow
 * sub-network (which sees other channels afterwards) changes. */
static void test_width_reorder_keeps_full_network(void **state)
{
    fixture *f = *state;
    mcl_dev *d = f->d;
    ofa_arch a;
    ofa_arch_max(&f->s, 0, &a);
    TU_OK(d, ofa_supernet_set_arch(f->n, &a));
    size_t nx = (size_t)B * a.r * a.r, nl = (size_t)B * f->s.classes;
    double x[B * 64], before[B * 3], after[B * 3], nb[B * 3], na[B * 3];
    ofa_arch narrow;
    ofa_arch_min(&f->s, a.r, &narrow);
    manta_rng rng;
    manta_rng_seed(&rng, 8, 8);
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_upload(d, ofa_supernet_input(f->n), x, nx);
    /* a few training steps' worth of running statistics, then eval mode */
    for (int i = 0; i < 3; i++)
        TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_TRAIN));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
    tu_download(d, ofa_supernet_logits(f->n), before, nl);
    TU_OK(d, ofa_supernet_set_arch(f->n, &narrow));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
    tu_download(d, ofa_supernet_logits(f->n), nb, nl);
    TU_OK(d, ofa_supernet_set_arch(f->n, &a));
    for (int keep = 0; keep < 2; keep++) {
        TU_OK(d, ofa_supernet_reorder_width(f->n, keep));
        TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
        tu_download(d, ofa_supernet_logits(f->n), after, nl);
        tu_assert_close(after, before, nl, 1e-4, "full network after re-organisation");
    }
    TU_OK(d, ofa_supernet_set_arch(f->n, &narrow));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
    tu_download(d, ofa_supernet_logits(f->n), na, nl);
    double diff = 0;
    for (size_t i = 0; i < nl; i++)
        diff += fabs(na[i] - nb[i]);
    assert_true(diff > 1e-3);
    assert_int_equal(ofa_supernet_reorder_width(f->n, f->s.n_e), MANTA_ERR_INVALID_ARG);
}

/* Re-calibrating over two copies of one batch makes the running statistics
 * that batch's mean and biased variance, so eval mode then reproduces the
 * batch-statistics forward. */
static void test_bn_recalibration_matches_batch_statistics(void **state)
{
    fixture *f = *state;
    mcl_dev *d = f->d;
    manta_rng rng;
    manta_rng_seed(&rng, 31, 0);
    ofa_arch a;
    ofa_arch_sample(&f->s, &rng, &a);
    TU_OK(d, ofa_supernet_set_arch(f->n, &a));
    size_t nx = (size_t)B * a.r * a.r, nl = (size_t)B * f->s.classes;
    double x[B * 64], batch[B * 3], eval[B * 3];
    tu_fill_uniform(&rng, x, nx, -1, 1);
    tu_upload(d, ofa_supernet_input(f->n), x, nx);
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_BATCH_ONLY));
    tu_download(d, ofa_supernet_logits(f->n), batch, nl);
    assert_int_equal(ofa_supernet_recal_begin(f->n, B - 1), MANTA_ERR_INVALID_ARG);
    TU_OK(d, ofa_supernet_recal_begin(f->n, 2 * B));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_RECAL));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_RECAL));
    TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
    tu_download(d, ofa_supernet_logits(f->n), eval, nl);
    tu_assert_close(eval, batch, nl, 1e-3, "eval after re-calibration");
}

/* The exported graph (BN folded, kernels baked, SE folded, PAD for even
 * stride-2 inputs) computes what the supernet computes in eval mode, in the
 * double-precision reference and in the engine from the written .tflite. */
static void test_extracted_graph_matches_supernet(void **state)
{
    fixture *f = *state;
    mcl_dev *d = f->d;
    manta_rng rng;
    manta_rng_seed(&rng, 123, 0);
    for (int trial = 0; trial < 5; trial++) {
        ofa_arch a;
        if (trial == 0)
            ofa_arch_max(&f->s, 7, &a);
        else if (trial == 1)
            ofa_arch_min(&f->s, 8, &a);
        else
            ofa_arch_sample(&f->s, &rng, &a);
        TU_OK(d, ofa_supernet_set_arch(f->n, &a));
        const int R = a.r, C = f->s.in_channels, K = f->s.classes;
        size_t nx = (size_t)B * C * R * R;
        double x[B * 64], want[B * 3];
        tu_fill_uniform(&rng, x, nx, -1.5, 1.5);
        tu_upload(d, ofa_supernet_input(f->n), x, nx);
        for (int i = 0; i < 4; i++) /* running statistics away from their start */
            TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_TRAIN));
        TU_OK(d, ofa_supernet_forward(f->n, f->sl.params, OFA_BN_EVAL));
        tu_download(d, ofa_supernet_logits(f->n), want, (size_t)B * K);
        xg_preprocess pre = {0};
        xgraph g;
        manta_err e;
        manta_err_clear(&e);
        if (ofa_supernet_extract(f->n, &pre, &g, &e) != MANTA_OK)
            fail_msg("extract: %s", e.msg);
        for (int b = 0; b < B; b++) {
            float in[64], logits[3];
            double got[3];
            for (int c = 0; c < C; c++) /* NCHW -> NHWC */
                for (int i = 0; i < R * R; i++)
                    in[i * C + c] = (float)x[((size_t)b * C + c) * R * R + (size_t)i];
            if (xgraph_reference(&g, in, logits, &e) != MANTA_OK)
                fail_msg("reference: %s", e.msg);
            for (int k = 0; k < K; k++)
                got[k] = logits[k];
            tu_assert_close(got, want + (size_t)b * K, (size_t)K, 1e-4, "exported logits");
        }
        uint8_t *file = NULL;
        size_t size = 0;
        tflite_report rep;
        if (tflite_write(&g, &file, &size, &rep, &e) != MANTA_OK)
            fail_msg("tflite: %s", e.msg);
        double dl = 1, dp = 1;
        if (tflite_check(&g, file, size, 7, &dl, &dp, &e) != MANTA_OK)
            fail_msg("engine check: %s", e.msg);
        assert_true(dl < 1e-4 && dp < 1e-5);
        free(file);
        xgraph_free(&g);
    }
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->d = tu_open_device();
    tiny_space(&f->s);
    manta_status st = ofa_supernet_create(f->d, &f->s, B, 42, &f->n);
    if (st != MANTA_OK) {
        fprintf(stderr, "supernet: %s\n", mcl_err(f->d)->msg);
        return -1;
    }
    ofa_supernet_slabs(f->n, &f->sl);
    f->mode = OFA_BN_BATCH_ONLY;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ofa_supernet_destroy(f->n);
    mcl_close(f->d);
    free(f);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backward_matches_finite_differences),
        cmocka_unit_test(test_inactive_weights_get_no_gradient),
        cmocka_unit_test(test_switching_subnets_creates_no_buffers),
        cmocka_unit_test(test_grad_ready_reports_final_ranges),
        cmocka_unit_test(test_bad_use_is_refused),
        cmocka_unit_test(test_width_reorder_keeps_full_network),
        cmocka_unit_test(test_bn_recalibration_matches_batch_statistics),
        cmocka_unit_test(test_extracted_graph_matches_supernet),
    };
    return cmocka_run_group_tests_name("ofa supernet", tests, setup, teardown);
}
