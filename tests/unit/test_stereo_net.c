/* The stereo depth supernet on two tiny spaces: it runs, layer for layer, the network
 * stereo_describe() describes (shapes, MACs, parameters) for the largest, the smallest and
 * random sub-networks; its backward agrees with finite differences of its forward along
 * random directions (BN on batch statistics, both kernel variants), with the decoder skips
 * on the shared both-views part, on the correlation's concatenation and on a unit's
 * output; the left and the right view are not interchangeable; degenerate inputs give
 * finite outputs; bad arguments are refused with the field named; switching sub-networks
 * creates no buffer; a network planned for larger training crops runs the crop as a network
 * made for it does; a pooled re-calibration one pair at a time equals one batch of them; the
 * width re-organisation keeps the largest network's predictions
 * (and, keeping groups, the nesting). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/variants.h"
#include "stereo/net.h"

enum { N = 2, SPACES = 2, DIRS = 4 };

/* Space A: the correlation after unit 2 at 1/4, a stride-1 unit after it (its output is
 * the 1/4 skip), SE in two units, an h-swish stem; skips: image, stem (both views), unit 3.
 * Space B: the unit after the correlation has stride 2, so the [correlation, redirect]
 * concatenation is the 1/4 skip; a leaky-ReLU stem, displacement stride 2. */
static const char *const space_json[SPACES] = {
    "{\"format\": \"manta-ofa-space\", \"version\": 1, \"task\": \"stereo\", \"name\": \"tiny-a\","
    " \"crop\": {\"height\": 16, \"width\": 32}, \"max_disp\": 8,"
    " \"kernel_sizes\": [3, 5], \"expand_ratios\": [2, 3], \"depths\": [1, 2],"
    " \"stem\": {\"width\": 8, \"kernel\": 3, \"act\": \"h-swish\"},"
    " \"units\": [{\"width\": 8, \"stride\": 2, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 8, \"stride\": 1, \"act\": \"h-swish\", \"se\": true},"
    "  {\"width\": 16, \"stride\": 1, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 16, \"stride\": 2, \"act\": \"h-swish\", \"se\": true}],"
    " \"correlation\": {\"after_unit\": 2, \"max_disp\": 2, \"stride\": 1, \"redir_width\": 8},"
    " \"decoder\": {\"widths\": [16, 12, 8], \"width_ratios\": [0.5, 1]},"
    " \"loss\": {\"rounds\": [[0.1, 0.2, 0.3, 1], [0, 0, 0, 1]]}}",
    "{\"format\": \"manta-ofa-space\", \"version\": 1, \"task\": \"stereo\", \"name\": \"tiny-b\","
    " \"crop\": {\"height\": 16, \"width\": 32}, \"max_disp\": 8,"
    " \"kernel_sizes\": [3, 5], \"expand_ratios\": [2, 3], \"depths\": [1, 2],"
    " \"stem\": {\"width\": 8, \"kernel\": 5, \"act\": \"leaky-relu\"},"
    " \"units\": [{\"width\": 8, \"stride\": 2, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 12, \"stride\": 1, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 16, \"stride\": 2, \"act\": \"h-swish\", \"se\": true}],"
    " \"correlation\": {\"after_unit\": 2, \"max_disp\": 2, \"stride\": 2, \"redir_width\": 6},"
    " \"decoder\": {\"widths\": [12, 8, 8], \"width_ratios\": [0.5, 1]},"
    " \"loss\": {\"rounds\": [[0.1, 0.2, 0.3, 1]]}}",
};

/* One network on one device. */
typedef struct net_fix {
    mcl_dev *d;
    stereo_space s;
    stereo_net *n;
    ofa_slabs sl;
} net_fix;

typedef struct fixture {
    tu_variant_devs *v;
    net_fix f[TU_VARIANTS][SPACES];
} fixture;

static int setup(void **state)
{
    void *vs = NULL;
    if (tu_setup_variants(&vs) != 0)
        return -1;
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    fx->v = vs;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (int i = 0; i < SPACES; i++) {
            net_fix *f = &fx->f[k][i];
            manta_err e;
            f->d = fx->v->dev[k];
            TU_OK_ERR(stereo_space_parse(space_json[i], &f->s, &e));
            TU_OK(f->d, stereo_net_create(f->d, &f->s, N, 42 + (uint64_t)i, &f->n));
            stereo_net_slabs(f->n, &f->sl);
        }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (int i = 0; i < SPACES; i++)
            stereo_net_destroy(fx->f[k][i].n);
    void *vs = fx->v;
    free(fx);
    return tu_teardown_variants(&vs);
}

/* Values of prediction p: N * (H >> (L - p)) * (W >> (L - p)). */
static size_t pred_len(const stereo_space *s, int p)
{
    return (size_t)N * (size_t)(s->crop_h >> (s->n_levels - p)) *
           (size_t)(s->crop_w >> (s->n_levels - p));
}

static size_t preds_len(const stereo_space *s)
{
    size_t t = 0;
    for (int p = 0; p < stereo_preds(s); p++)
        t += pred_len(s, p);
    return t;
}

static size_t input_len(const stereo_space *s) { return (size_t)2 * N * 3 * s->crop_h * s->crop_w; }

/* Every prediction of the last forward, coarsest first, into @p out (preds_len()). */
static void download_preds(const net_fix *f, double *out)
{
    for (int p = 0; p < stereo_preds(&f->s); p++) {
        tu_download(f->d, stereo_net_pred(f->n, p), out, pred_len(&f->s, p));
        out += pred_len(&f->s, p);
    }
}

/* ---- the layers ------------------------------------------------------------------------- */

#define SAME_INT(field)                                                                  \
    if (g->field != w->field)                                                            \
    fail_msg("%s, layer %d (%s): " #field " %d, stereo_describe() %d", what, i, w->name, \
             (int)g->field, (int)w->field)

/* The network's layers for @p a equal stereo_describe()'s, field by field. */
static void assert_layers_match(net_fix *f, const ofa_arch *a, const char *what)
{
    stereo_desc *want = malloc(sizeof *want), *got = malloc(sizeof *got);
    assert_true(want && got);
    manta_err e;
    TU_OK_ERR(stereo_describe(&f->s, a, want, &e));
    TU_OK(f->d, stereo_net_set_arch(f->n, a));
    TU_OK(f->d, stereo_net_layers(f->n, got));
    if (got->n != want->n)
        fail_msg("%s: %d layers, stereo_describe() %d", what, got->n, want->n);
    for (int i = 0; i < want->n; i++) {
        const stereo_layer *g = &got->layer[i], *w = &want->layer[i];
        if (strcmp(g->name, w->name))
            fail_msg("%s, layer %d: '%s', stereo_describe() '%s'", what, i, g->name, w->name);
        SAME_INT(kind);
        SAME_INT(in_h);
        SAME_INT(in_w);
        SAME_INT(in_c);
        SAME_INT(out_h);
        SAME_INT(out_w);
        SAME_INT(out_c);
        SAME_INT(kernel);
        SAME_INT(stride);
        SAME_INT(bn);
        SAME_INT(bias);
        SAME_INT(act);
        SAME_INT(residual);
        SAME_INT(views);
        SAME_INT(params);
        if (fabs(g->macs - w->macs) > 1e-9 * w->macs)
            fail_msg("%s, layer %d (%s): %.0f MACs, stereo_describe() %.0f", what, i, w->name,
                     g->macs, w->macs);
    }
    assert_true(got->params == want->params);
    assert_true(fabs(got->macs - want->macs) <= 1e-9 * want->macs);
    free(want), free(got);
}

/* The prediction layers "d<k>.pred", k = L .. 0, are 1 x (H >> k) x (W >> k). */
static void assert_pred_shapes(net_fix *f)
{
    stereo_desc *got = malloc(sizeof *got);
    assert_non_null(got);
    TU_OK(f->d, stereo_net_layers(f->n, got));
    const int L = f->s.n_levels;
    int found = 0;
    for (int i = 0; i < got->n; i++) {
        const stereo_layer *l = &got->layer[i];
        int k;
        char tail[8];
        if (sscanf(l->name, "d%d.%7s", &k, tail) != 2 || strcmp(tail, "pred"))
            continue;
        assert_int_equal(k, L - found); /* coarsest first */
        assert_int_equal(l->out_c, 1);
        assert_int_equal(l->out_h, f->s.crop_h >> k);
        assert_int_equal(l->out_w, f->s.crop_w >> k);
        found++;
    }
    assert_int_equal(found, stereo_preds(&f->s));
    free(got);
}

/* Kernel-matrix floats of every slot (ks[i]^2 x ks[i]^2 between consecutive sizes). */
static long kernel_matrix_floats(const stereo_space *s)
{
    long per = 0;
    for (int i = 0; i + 1 < s->n_ks; i++)
        per += (long)s->ks[i] * s->ks[i] * s->ks[i] * s->ks[i];
    return per * s->n_units * s->max_depth;
}

static void test_layers_match_the_description(void **state)
{
    fixture *fx = *state;
    for (int i = 0; i < SPACES; i++) {
        net_fix *f = &fx->f[0][i];
        ofa_arch a;
        stereo_arch_max(&f->s, &a);
        assert_layers_match(f, &a, "largest");
        assert_pred_shapes(f);
        /* the slab holds the largest sub-network's parameters and the kernel matrices,
         * with at most 15 floats of alignment per tensor */
        stereo_desc *d = malloc(sizeof *d);
        manta_err e;
        assert_non_null(d);
        TU_OK_ERR(stereo_describe(&f->s, &a, d, &e));
        long stored = d->params + kernel_matrix_floats(&f->s);
        assert_true((long)f->sl.n_params >= stored);
        assert_true((long)f->sl.n_params < stored + 15L * 4 * d->n);
        print_message("# %s: largest sub-network %ld parameters, %.3f M MACs; parameter slab "
                      "%zu floats\n",
                      f->s.name, d->params, d->macs / 1e6, f->sl.n_params);
        free(d);
        stereo_arch_min(&f->s, &a);
        assert_layers_match(f, &a, "smallest");
        assert_pred_shapes(f);
        manta_rng rng;
        manta_rng_seed(&rng, 3, (uint64_t)i);
        for (int t = 0; t < 6; t++) {
            stereo_arch_sample(&f->s, &rng, &a);
            assert_layers_match(f, &a, "random");
        }
    }
}

/* ---- gradients ------------------------------------------------------------------------- */

/* sum_p <pred_p, r_p> after a forward in batch-statistics mode. */
static double loss_of(net_fix *f, const double *r, double *preds)
{
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_BATCH_ONLY));
    download_preds(f, preds);
    return tu_dot(preds, r, preds_len(&f->s));
}

/* d/dt L(p + t v) at t = 0 by central differences against grad . v for DIRS random
 * directions, with the measure of tests/unit/test_supernet.c: the error relative to the
 * larger of |grad . v| and sqrt(sum (g_i v_i)^2) (the size grad . v has for a direction of
 * random signs: a direction can be nearly orthogonal to the gradient), each within 10%
 * (+ 0.02). Returns the sum of the relative errors; raises *worst to the largest. */
static double check_arch(net_fix *f, const ofa_arch *a, uint64_t seed, double *worst)
{
    mcl_dev *d = f->d;
    TU_OK(d, stereo_net_set_arch(f->n, a));
    const stereo_space *s = &f->s;
    size_t np = f->sl.n_params, nr = preds_len(s), nx = input_len(s);
    manta_rng rng;
    manta_rng_seed(&rng, seed, 1);
    double *x = tu_doubles(nx), *r = tu_doubles(nr), *preds = tu_doubles(nr);
    double *p0 = tu_doubles(np), *g = tu_doubles(np), *v = tu_doubles(np), *pt = tu_doubles(np);
    tu_fill_uniform(&rng, x, nx, 0, 1);
    tu_fill_uniform(&rng, r, nr, -1, 1);
    tu_upload(d, stereo_net_input(f->n), x, nx);
    tu_download(d, f->sl.params, p0, np);

    TU_OK(d, mcl_fill(d, f->sl.grads, 0.0f, np));
    loss_of(f, r, preds);
    const double *rp = r;
    for (int p = 0; p < stereo_preds(s); p++) {
        tu_upload(d, stereo_net_dpred(f->n, p), rp, pred_len(s, p));
        rp += pred_len(s, p);
    }
    TU_OK(d, stereo_net_backward(f->n));
    tu_download(d, f->sl.grads, g, np);
    /* the caller's prediction gradients are read, not changed */
    rp = r;
    for (int p = 0; p < stereo_preds(s); p++) {
        tu_download(d, stereo_net_dpred(f->n, p), preds, pred_len(s, p));
        tu_variant_assert_close(d, preds, rp, pred_len(s, p), 1e-6, "prediction gradient kept");
        rp += pred_len(s, p);
    }

    double rel_sum = 0;
    char failed[160] = "";
    /* the stem's weights come first (stereo/net.h): the last direction moves them alone,
     * whose gradient takes every path back to the input (the 1/2 skip included) */
    const size_t stem = (size_t)s->stem_width * 3 * s->stem_kernel * s->stem_kernel;
    for (int trial = 0; trial < DIRS; trial++) {
        double gv = 0, terms = 0;
        for (size_t i = 0; i < np; i++) {
            bool on = trial < DIRS - 1 || i < stem;
            v[i] = on ? (2 * manta_rng_uniform(&rng) - 1) * (fabs(p0[i]) + 0.05) : 0;
            gv += g[i] * v[i];
            terms += g[i] * v[i] * g[i] * v[i];
        }
        /* smaller than test_supernet's 1.25e-4: the decoder's leaky ReLUs at every pixel put
         * many kinks inside a step through the whole network; float32 rounding of the loss
         * stays near 1e-6, a few % of the slopes here */
        const double eps = 3e-5;
        for (size_t i = 0; i < np; i++)
            pt[i] = p0[i] + eps * v[i];
        tu_upload(d, f->sl.params, pt, np);
        double lp = loss_of(f, r, preds);
        for (size_t i = 0; i < np; i++)
            pt[i] = p0[i] - eps * v[i];
        tu_upload(d, f->sl.params, pt, np);
        double lm = loss_of(f, r, preds);
        double fd = (lp - lm) / (2 * eps);
        const double size = fmax(fmax(fabs(gv), sqrt(terms)), 1e-3);
        if (!(fabs(fd - gv) <= 0.1 * size + 0.02) && !failed[0])
            snprintf(failed, sizeof failed,
                     "%s (%s kernels) direction %d: finite difference %.6g, gradient %.6g", s->name,
                     tu_variant_name(d), trial, fd, gv);
        rel_sum += fabs(fd - gv) / size;
        *worst = fmax(*worst, fabs(fd - gv) / size);
    }
    tu_upload(d, f->sl.params, p0, np);
    free(x), free(r), free(preds), free(p0), free(g), free(v), free(pt);
    if (failed[0])
        fail_msg("%s", failed);
    return rel_sum;
}

static void test_backward_matches_finite_differences(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++) {
        double rel = 0, worst = 0;
        int dirs = 0;
        for (int i = 0; i < SPACES; i++) {
            net_fix *f = &fx->f[k][i];
            double *p_init =
                tu_move_to_generic_point(f->d, f->sl.params, f->sl.n_params, f->sl.n_decay);
            ofa_arch a;
            if (i == 0) {
                stereo_arch_max(&f->s, &a);
                rel += check_arch(f, &a, 1, &worst);
                stereo_arch_min(&f->s, &a);
                rel += check_arch(f, &a, 2, &worst);
                dirs += 2 * DIRS;
            } else {
                manta_rng rng;
                manta_rng_seed(&rng, 11, 0);
                stereo_arch_sample(&f->s, &rng, &a);
                a.d[f->s.n_units - 1] = f->s.max_depth; /* a residual block last */
                rel += check_arch(f, &a, 3, &worst);
                dirs += DIRS;
            }
            tu_upload(f->d, f->sl.params, p_init, f->sl.n_params);
            free(p_init);
        }
        print_message("# %s kernels: relative error %.4f on average over %d directions, at "
                      "most %.4f\n",
                      tu_variant_name(fx->v->dev[k]), rel / dirs, dirs, worst);
        if (!(rel / dirs < 0.04))
            fail_msg("%s kernels: mean relative error %.4f over %d directions",
                     tu_variant_name(fx->v->dev[k]), rel / dirs, dirs);
    }
}

/* ---- the views, degenerate inputs ------------------------------------------------------ */

/* Swapping the left and the right half of the input changes the predictions (the
 * correlation is one-sided and the redirect reads the left view only). The network as
 * initialised predicts disparities near 0. */
static void test_left_and_right_are_not_interchangeable(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++) {
        net_fix *f = &fx->f[k][0];
        const stereo_space *s = &f->s;
        ofa_arch a;
        stereo_arch_max(s, &a);
        TU_OK(f->d, stereo_net_set_arch(f->n, &a));
        size_t nx = input_len(s), half = nx / 2, nr = preds_len(s);
        double *x = tu_doubles(nx), *sw = tu_doubles(nx);
        double *p1 = tu_doubles(nr), *p2 = tu_doubles(nr);
        manta_rng rng;
        manta_rng_seed(&rng, 8, (uint64_t)k);
        tu_fill_uniform(&rng, x, nx, 0, 1);
        memcpy(sw, x + half, half * sizeof *sw);
        memcpy(sw + half, x, half * sizeof *sw);
        tu_upload(f->d, stereo_net_input(f->n), x, nx);
        TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_BATCH_ONLY));
        download_preds(f, p1);
        tu_upload(f->d, stereo_net_input(f->n), sw, nx);
        TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_BATCH_ONLY));
        download_preds(f, p2);
        double diff = 0, size = 0;
        for (size_t i = 0; i < nr; i++) {
            assert_true(isfinite(p1[i]) && isfinite(p2[i]));
            diff = fmax(diff, fabs(p1[i] - p2[i]));
            size = fmax(size, fabs(p1[i]));
        }
        if (!(size < 1.0)) /* initial prediction weights: 0.1 of PyTorch's bound */
            fail_msg("%s kernels: initial disparities up to %g px, not near 0",
                     tu_variant_name(f->d), size);
        if (!(size > 0 && diff > 1e-3 * size))
            fail_msg("%s kernels: swapped views change the predictions by %g (largest %g)",
                     tu_variant_name(f->d), diff, size);
        free(x), free(sw), free(p1), free(p2);
    }
}

/* All-zero and identical views: finite predictions in every batch-norm mode, and a finite
 * backward. */
static void test_degenerate_inputs_give_finite_outputs(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (int i = 0; i < SPACES; i++) {
            net_fix *f = &fx->f[k][i];
            const stereo_space *s = &f->s;
            ofa_arch a;
            stereo_arch_min(s, &a);
            TU_OK(f->d, stereo_net_set_arch(f->n, &a));
            size_t nx = input_len(s), nr = preds_len(s), ng = f->sl.n_params;
            double *x = tu_doubles(nx), *p = tu_doubles(nr), *g = tu_doubles(ng);
            memset(x, 0, nx * sizeof *x); /* all-zero views first */
            double *st = tu_doubles(f->sl.n_state);
            tu_download(f->d, f->sl.state, st, f->sl.n_state); /* TRAIN moves them */
            manta_rng rng;
            manta_rng_seed(&rng, 9, (uint64_t)k);
            for (int pass = 0; pass < 2; pass++) {
                if (pass == 1) { /* identical left and right views */
                    tu_fill_uniform(&rng, x, nx / 2, 0, 1);
                    memcpy(x + nx / 2, x, nx / 2 * sizeof *x);
                }
                tu_upload(f->d, stereo_net_input(f->n), x, nx);
                const ofa_bn_mode modes[] = {OFA_BN_BATCH_ONLY, OFA_BN_EVAL, OFA_BN_TRAIN};
                for (int m = 0; m < 3; m++) {
                    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, modes[m]));
                    download_preds(f, p);
                    for (size_t j = 0; j < nr; j++)
                        if (!isfinite(p[j]))
                            fail_msg("%s, %s kernels, pass %d, mode %d: prediction value %zu "
                                     "is %g",
                                     s->name, tu_variant_name(f->d), pass, m, j, p[j]);
                }
                TU_OK(f->d, mcl_fill(f->d, stereo_net_dpred(f->n, s->n_levels), 1.0f,
                                     pred_len(s, s->n_levels)));
                TU_OK(f->d, mcl_fill(f->d, f->sl.grads, 0.0f, ng));
                TU_OK(f->d, stereo_net_backward(f->n));
                tu_download(f->d, f->sl.grads, g, ng);
                for (size_t j = 0; j < ng; j++)
                    if (!isfinite(g[j]))
                        fail_msg("%s, %s kernels, pass %d: gradient %zu is %g", s->name,
                                 tu_variant_name(f->d), pass, j, g[j]);
            }
            tu_upload(f->d, f->sl.state, st, f->sl.n_state);
            free(x), free(p), free(g), free(st);
        }
}

/* ---- refusals, buffers ------------------------------------------------------------------ */

static void expect_arch_refused(net_fix *f, const ofa_arch *a, const char *gene)
{
    manta_status st = stereo_net_set_arch(f->n, a);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(f->d), st);
    if (!strstr(msg, gene))
        fail_msg("set_arch message '%s' does not name '%s'", msg, gene);
    manta_err_clear(mcl_err(f->d));
}

static void test_bad_arguments_refused(void **state)
{
    fixture *fx = *state;
    net_fix *f = &fx->f[0][0];
    ofa_arch ok, a;
    stereo_arch_min(&f->s, &ok);
    TU_OK(f->d, stereo_net_set_arch(f->n, &ok));
    stereo_arch_max(&f->s, &a);
    a.ks[1] = 4;
    expect_arch_refused(f, &a, "ks[1]");
    a = ok, a.e[3] = 5;
    expect_arch_refused(f, &a, "e[3]");
    a = ok, a.d[2] = 3;
    expect_arch_refused(f, &a, "d[2]");
    a = ok, a.r = 8;
    expect_arch_refused(f, &a, "\"r\"");

    /* a refused architecture leaves the active one (the smallest: depth 1 everywhere) */
    stereo_desc *desc = malloc(sizeof *desc);
    assert_non_null(desc);
    TU_OK(f->d, stereo_net_layers(f->n, desc));
    assert_string_equal(desc->layer[1].name, "u1.b1.expand");
    assert_string_equal(desc->layer[4].name, "u2.b1.expand"); /* u1: expand, dw, project */
    free(desc);
    /* backward needs a training forward on the own parameters */
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_EVAL));
    manta_status st = stereo_net_backward(f->n);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(f->d), st), "training forward"));
    manta_err_clear(mcl_err(f->d));

    stereo_net *n = NULL;
    st = stereo_net_create(f->d, &f->s, 0, 1, &n);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    assert_null(n);
    assert_non_null(strstr(manta_err_msg(mcl_err(f->d), st), "batch"));
    manta_err_clear(mcl_err(f->d));
    stereo_space bad = f->s;
    bad.dec_width[0] = 0;
    st = stereo_net_create(f->d, &bad, N, 1, &n);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(f->d), st), "space.decoder"));
    manta_err_clear(mcl_err(f->d));

    /* a fresh network has no architecture yet */
    TU_OK(f->d, stereo_net_create(f->d, &f->s, 1, 1, &n));
    st = stereo_net_forward(n, f->sl.params, OFA_BN_EVAL);
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(manta_err_msg(mcl_err(f->d), st), "architecture"));
    manta_err_clear(mcl_err(f->d));
    stereo_desc *d = malloc(sizeof *d);
    assert_non_null(d);
    assert_int_equal(stereo_net_layers(n, d), MANTA_ERR_INVALID_ARG);
    manta_err_clear(mcl_err(f->d));
    free(d);
    assert_int_equal(stereo_net_batch(n), 1);
    assert_string_equal(stereo_net_space(n)->name, f->s.name);
    stereo_net_destroy(n);
}

static void test_switching_subnets_creates_no_buffers(void **state)
{
    fixture *fx = *state;
    net_fix *f = &fx->f[0][1];
    mcl_stats s0, s1;
    mcl_get_stats(f->d, &s0);
    manta_rng rng;
    manta_rng_seed(&rng, 5, 0);
    double *st = tu_doubles(f->sl.n_state);
    tu_download(f->d, f->sl.state, st, f->sl.n_state);
    for (int i = 0; i < 4; i++) {
        ofa_arch a;
        stereo_arch_sample(&f->s, &rng, &a);
        TU_OK(f->d, stereo_net_set_arch(f->n, &a));
        TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_TRAIN));
        TU_OK(f->d, stereo_net_backward(f->n));
    }
    TU_OK(f->d, stereo_net_recal_begin(f->n, 4 * N));
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_RECAL));
    mcl_get_stats(f->d, &s1);
    assert_int_equal(s1.buffers_created, s0.buffers_created);
    tu_upload(f->d, f->sl.state, st, f->sl.n_state);
    free(st);
}

/* A network planned for a larger size (a space with training crops), set to the crop, runs
 * what a network made for the crop does: the same predictions and parameter gradients, after
 * passes at the other size; sizes it cannot run are refused, the size then unchanged. */
static void test_set_size_runs_as_a_network_of_that_size(void **state)
{
    fixture *fx = *state;
    for (int i = 0; i < SPACES; i++) {
        net_fix *f = &fx->f[0][i];
        const stereo_space *s = &f->s;
        net_fix g = {.d = f->d, .s = *s};
        g.s.n_crops = 2;
        g.s.crops[0][0] = s->crop_h, g.s.crops[0][1] = s->crop_w;
        g.s.crops[1][0] = 2 * s->crop_h, g.s.crops[1][1] = s->crop_w / 2 + s->crop_w / 4;
        int ph, pw, h, w;
        stereo_space_plan_size(&g.s, &ph, &pw);
        assert_int_equal(ph, 2 * s->crop_h);
        assert_int_equal(pw, s->crop_w);
        TU_OK(g.d, stereo_net_create(g.d, &g.s, N, 7, &g.n));
        stereo_net_size(g.n, &h, &w);
        assert_int_equal(h, s->crop_h); /* it starts at the crop */
        assert_int_equal(w, s->crop_w);
        stereo_net_slabs(g.n, &g.sl);
        assert_int_equal(g.sl.n_params, f->sl.n_params);
        assert_int_equal(g.sl.n_state, f->sl.n_state);
        TU_OK(g.d, mcl_copy(g.d, g.sl.params, f->sl.params, f->sl.n_params));
        TU_OK(g.d, mcl_copy(g.d, g.sl.state, f->sl.state, f->sl.n_state));
        manta_rng rng;
        manta_rng_seed(&rng, 17 + (uint64_t)i, 0);
        ofa_arch a;
        stereo_arch_sample(s, &rng, &a);
        TU_OK(f->d, stereo_net_set_arch(f->n, &a));
        TU_OK(g.d, stereo_net_set_arch(g.n, &a));
        /* passes at the other training crop first */
        const size_t big = (size_t)2 * N * 3 * g.s.crops[1][0] * g.s.crops[1][1];
        double *xb = tu_doubles(big);
        tu_fill_uniform(&rng, xb, big, 0, 1);
        TU_OK(g.d, stereo_net_set_size(g.n, g.s.crops[1][0], g.s.crops[1][1]));
        tu_upload(g.d, stereo_net_input(g.n), xb, big);
        TU_OK(g.d, stereo_net_forward(g.n, g.sl.params, OFA_BN_BATCH_ONLY));
        TU_OK(g.d, stereo_net_backward(g.n));
        /* then the crop, on both networks */
        TU_OK(g.d, stereo_net_set_size(g.n, s->crop_h, s->crop_w));
        const size_t nx = input_len(s), nr = preds_len(s);
        double *x = tu_doubles(nx), *want = tu_doubles(nr), *got = tu_doubles(nr);
        double *gw = tu_doubles(f->sl.n_params), *gg = tu_doubles(f->sl.n_params);
        tu_fill_uniform(&rng, x, nx, 0, 1);
        net_fix *nets[2] = {f, &g};
        double *dp = tu_doubles(nr);
        tu_fill_uniform(&rng, dp, nr, -1, 1);
        for (int k = 0; k < 2; k++) {
            net_fix *t = nets[k];
            tu_upload(t->d, stereo_net_input(t->n), x, nx);
            TU_OK(t->d, stereo_net_forward(t->n, t->sl.params, OFA_BN_BATCH_ONLY));
            download_preds(t, k ? got : want);
            TU_OK(t->d, mcl_fill(t->d, t->sl.grads, 0.0f, t->sl.n_params));
            size_t at = 0;
            for (int p = 0; p < stereo_preds(s); p++) {
                tu_upload(t->d, stereo_net_dpred(t->n, p), dp + at, pred_len(s, p));
                at += pred_len(s, p);
            }
            TU_OK(t->d, stereo_net_backward(t->n));
            tu_download(t->d, t->sl.grads, k ? gg : gw, t->sl.n_params);
        }
        tu_variant_assert_close(g.d, got, want, nr, 1e-6, "predictions after a size change");
        tu_variant_assert_close(g.d, gg, gw, f->sl.n_params, 1e-6,
                                "parameter gradients after a size change");
        /* refused: beyond the plan, and not a multiple of 2^levels */
        const int bad[2][2] = {{4 * s->crop_h, s->crop_w}, {s->crop_h + 1, s->crop_w}};
        for (int b = 0; b < 2; b++) {
            manta_status st = stereo_net_set_size(g.n, bad[b][0], bad[b][1]);
            assert_int_equal(st, MANTA_ERR_INVALID_ARG);
            assert_non_null(strstr(manta_err_msg(mcl_err(g.d), st), "planned for"));
            manta_err_clear(mcl_err(g.d));
            stereo_net_size(g.n, &h, &w);
            assert_int_equal(h, s->crop_h);
        }
        stereo_net_destroy(g.n);
        free(xb), free(x), free(want), free(got), free(gw), free(gg), free(dp);
    }
}

/* A pooled re-calibration over pairs one at a time gives the first batch norm (the stem's,
 * whose input does not depend on other layers' statistics) the statistics of all the pairs
 * together, as one batch of them does; the plain one (the mean of the batches' variances)
 * misses the spread between the pairs. */
static void test_pooled_recalibration(void **state)
{
    fixture *fx = *state;
    net_fix *f = &fx->f[0][0];
    const stereo_space *s = &f->s;
    const int c = s->stem_width, v0 = (c + 15) / 16 * 16; /* the state's mean, variance */
    const size_t view = (size_t)3 * s->crop_h * s->crop_w, nx = input_len(s);
    double *st0 = tu_doubles(f->sl.n_state), *x = tu_doubles(nx), *one = tu_doubles(2 * view);
    double *want = tu_doubles(2 * (size_t)v0), *got = tu_doubles(2 * (size_t)v0);
    tu_download(f->d, f->sl.state, st0, f->sl.n_state);
    manta_rng rng;
    manta_rng_seed(&rng, 23, 0);
    for (int k = 0; k < N; k++) /* pairs of their own brightness: their means differ */
        for (int v = 0; v < 2; v++)
            tu_fill_uniform(&rng, x + ((size_t)v * N + k) * view, view, 0.4 * k, 0.4 * k + 0.5);
    ofa_arch a;
    stereo_arch_max(s, &a);
    TU_OK(f->d, stereo_net_set_arch(f->n, &a));
    TU_OK(f->d, stereo_net_recal_begin(f->n, N));
    tu_upload(f->d, stereo_net_input(f->n), x, nx);
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_RECAL));
    /* the stem's running mean at 0, its variance at v0 (mlayout's 16-float alignment) */
    tu_download(f->d, f->sl.state, want, 2 * (size_t)v0);
    net_fix g = {.d = f->d, .s = *s};
    TU_OK(g.d, stereo_net_create_forward_only(g.d, s, 1, 3, &g.n));
    stereo_net_slabs(g.n, &g.sl);
    TU_OK(g.d, mcl_copy(g.d, g.sl.params, f->sl.params, f->sl.n_params));
    TU_OK(g.d, stereo_net_set_arch(g.n, &a));
    for (int pooled = 1; pooled >= 0; pooled--) {
        if (pooled)
            TU_OK(g.d, stereo_net_recal_begin_pooled(g.n, N));
        else
            TU_OK(g.d, stereo_net_recal_begin(g.n, N));
        for (int k = 0; k < N; k++) {
            memcpy(one, x + (size_t)k * view, view * sizeof *one);
            memcpy(one + view, x + ((size_t)N + k) * view, view * sizeof *one);
            tu_upload(g.d, stereo_net_input(g.n), one, 2 * view);
            TU_OK(g.d, stereo_net_forward(g.n, g.sl.params, OFA_BN_RECAL));
        }
        TU_OK(g.d, stereo_net_recal_end(g.n));
        tu_download(g.d, g.sl.state, got, 2 * (size_t)v0);
        if (pooled) {
            tu_assert_close(got, want, (size_t)c, 1e-4, "pooled re-calibration (stem mean)");
            tu_assert_close(got + v0, want + v0, (size_t)c, 1e-4,
                            "pooled re-calibration (stem variance)");
        } else {
            for (int k = 0; k < c; k++) /* the spread between the pairs' means is missing */
                if (!(want[v0 + k] > 0 && got[v0 + k] < want[v0 + k] * (1 - 1e-3)))
                    fail_msg("stem channel %d: plain variance %g, pooled %g", k, got[v0 + k],
                             want[v0 + k]);
        }
    }
    stereo_net_destroy(g.n);
    tu_upload(f->d, f->sl.state, st0, f->sl.n_state);
    free(st0), free(x), free(one), free(want), free(got);
}

/* A forward-only network with the same parameters and statistics predicts what the training
 * network does, in less device memory (no gradients, no momentum), and refuses a backward. */
static void test_forward_only_network(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++) {
        net_fix *f = &fx->f[k][0];
        const stereo_space *s = &f->s;
        const size_t nx = input_len(s), nr = preds_len(s);
        double *p0 = tu_move_to_generic_point(f->d, f->sl.params, f->sl.n_params, f->sl.n_decay);
        double *x = tu_doubles(nx), *want = tu_doubles(nr), *got = tu_doubles(nr);
        manta_rng rng;
        manta_rng_seed(&rng, 31, 0);
        tu_fill_uniform(&rng, x, nx, 0, 1);
        ofa_arch a;
        stereo_arch_sample(s, &rng, &a);
        tu_upload(f->d, stereo_net_input(f->n), x, nx);
        TU_OK(f->d, stereo_net_set_arch(f->n, &a));
        TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_TRAIN)); /* statistics move */
        TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_EVAL));
        download_preds(f, want);
        mcl_stats s0, s1, s2;
        mcl_get_stats(f->d, &s0);
        net_fix g = {.d = f->d, .s = *s};
        TU_OK(g.d, stereo_net_create_forward_only(g.d, s, N, 99, &g.n));
        mcl_get_stats(f->d, &s1);
        stereo_net_slabs(g.n, &g.sl);
        assert_int_equal(g.sl.n_params, f->sl.n_params);
        TU_OK(g.d, mcl_copy(g.d, g.sl.params, f->sl.params, f->sl.n_params));
        TU_OK(g.d, mcl_copy(g.d, g.sl.state, f->sl.state, f->sl.n_state));
        tu_upload(g.d, stereo_net_input(g.n), x, nx);
        TU_OK(g.d, stereo_net_set_arch(g.n, &a));
        TU_OK(g.d, stereo_net_forward(g.n, g.sl.params, OFA_BN_EVAL));
        download_preds(&g, got);
        tu_variant_assert_close(g.d, got, want, nr, 1e-6, "forward-only network");
        manta_status st = stereo_net_backward(g.n);
        assert_int_equal(st, MANTA_ERR_INVALID_ARG);
        assert_non_null(strstr(manta_err_msg(mcl_err(g.d), st), "forward passes only"));
        manta_err_clear(mcl_err(g.d));
        stereo_net_destroy(g.n);
        mcl_get_stats(f->d, &s2);
        /* a training network also holds the parameters' gradients and momentum, and the
         * activations' gradients */
        const unsigned long long fwd = s1.bytes_allocated - s0.bytes_allocated;
        assert_true(s2.bytes_allocated == s0.bytes_allocated);
        net_fix h = {.d = f->d};
        TU_OK(h.d, stereo_net_create(h.d, s, N, 99, &h.n));
        mcl_stats s3;
        mcl_get_stats(f->d, &s3);
        const unsigned long long full = s3.bytes_allocated - s2.bytes_allocated;
        stereo_net_destroy(h.n);
        print_message("# %s (%s kernels): forward-only network %.2f MB, a training one %.2f MB\n",
                      s->name, tu_variant_name(g.d), fwd / 1e6, full / 1e6);
        const unsigned long long param_grads = 2ull * g.sl.n_params * sizeof(float);
        if (!(fwd + param_grads < full))
            fail_msg("%s: forward-only network %llu bytes, a training one %llu (parameter "
                     "gradients and momentum %llu)",
                     s->name, fwd, full, param_grads);
        tu_upload(f->d, f->sl.params, p0, f->sl.n_params);
        free(p0), free(x), free(want), free(got);
    }
}

/* ---- elastic width: channel re-organisation ------------------------------------------------ */

/* Space A without squeeze-and-excite: the SE hidden units are sorted as a whole (OFA's), so
 * only without SE does a kept group leave the narrow sub-networks' function unchanged. */
static const char *const no_se_json =
    "{\"format\": \"manta-ofa-space\", \"version\": 1, \"task\": \"stereo\", \"name\": \"tiny-c\","
    " \"crop\": {\"height\": 16, \"width\": 32}, \"max_disp\": 8,"
    " \"kernel_sizes\": [3, 5], \"expand_ratios\": [2, 3], \"depths\": [1, 2],"
    " \"stem\": {\"width\": 8, \"kernel\": 3, \"act\": \"h-swish\"},"
    " \"units\": [{\"width\": 8, \"stride\": 2, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 8, \"stride\": 1, \"act\": \"h-swish\", \"se\": false},"
    "  {\"width\": 16, \"stride\": 1, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 16, \"stride\": 2, \"act\": \"h-swish\", \"se\": false}],"
    " \"correlation\": {\"after_unit\": 2, \"max_disp\": 2, \"stride\": 1, \"redir_width\": 8},"
    " \"decoder\": {\"widths\": [16, 12, 8], \"width_ratios\": [0.5, 1]},"
    " \"loss\": {\"rounds\": [[0.1, 0.2, 0.3, 1], [0, 0, 0, 1]]}}";

/* The eval-mode predictions of @p a on the uploaded input into @p out (preds_len()). */
static void eval_preds(net_fix *f, const ofa_arch *a, double *out)
{
    TU_OK(f->d, stereo_net_set_arch(f->n, a));
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_EVAL));
    download_preds(f, out);
}

/* Largest |a - b| and largest |b| over n values. */
static double max_diff(const double *a, const double *b, size_t n, double *size)
{
    double d = 0;
    *size = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        *size = fmax(*size, fabs(b[i]));
    }
    return d;
}

/* Re-organise @p f from one generic point (batch norms not the identity, running statistics
 * from three training passes) at every allowed number of kept groups: the largest
 * network's eval-mode predictions stay; parameters move (the permutation is not the
 * identity); keeping no group changes the smallest network; with @p nested (a space
 * without SE), keeping groups leaves the smallest network unchanged (its channels stay the
 * same set). Parameters and statistics are restored afterwards. */
static void check_reorder(net_fix *f, bool nested)
{
    const stereo_space *s = &f->s;
    const size_t np = f->sl.n_params, ns = f->sl.n_state, nx = input_len(s), nr = preds_len(s);
    double *p0 = tu_move_to_generic_point(f->d, f->sl.params, np, f->sl.n_decay);
    double *st0 = tu_doubles(ns), *st1 = tu_doubles(ns), *x = tu_doubles(nx);
    double *big0 = tu_doubles(nr), *big1 = tu_doubles(nr), *small0 = tu_doubles(nr);
    double *small1 = tu_doubles(nr), *pa = tu_doubles(np), *pb = tu_doubles(np);
    tu_download(f->d, f->sl.state, st0, ns);
    manta_rng rng;
    manta_rng_seed(&rng, 12, 0);
    tu_fill_uniform(&rng, x, nx, 0, 1);
    tu_upload(f->d, stereo_net_input(f->n), x, nx);
    ofa_arch big, small;
    stereo_arch_max(s, &big);
    stereo_arch_min(s, &small);
    TU_OK(f->d, stereo_net_set_arch(f->n, &big));
    for (int i = 0; i < 3; i++)
        TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_TRAIN));
    eval_preds(f, &big, big0);
    eval_preds(f, &small, small0);
    tu_download(f->d, f->sl.params, pa, np);
    tu_download(f->d, f->sl.state, st1, ns);
    for (int keep = 0; keep < s->n_e; keep++) {
        tu_upload(f->d, f->sl.params, pa, np);
        tu_upload(f->d, f->sl.state, st1, ns);
        TU_OK(f->d, stereo_net_reorder_width(f->n, keep));
        tu_download(f->d, f->sl.params, pb, np);
        size_t moved = 0;
        for (size_t i = 0; i < np; i++)
            moved += pa[i] != pb[i];
        if (moved == 0)
            fail_msg("%s, %s kernels: re-organisation keeping %d groups moved no parameter",
                     s->name, tu_variant_name(f->d), keep);
        eval_preds(f, &big, big1);
        tu_variant_assert_close(f->d, big1, big0, nr, 1e-4,
                                "largest network after re-organisation");
        eval_preds(f, &small, small1);
        double size, d = max_diff(small1, small0, nr, &size);
        if (keep == 0 && !(d > 1e-3 * size))
            fail_msg("%s, %s kernels: the smallest network unchanged (%g, largest %g) after "
                     "a full re-organisation",
                     s->name, tu_variant_name(f->d), d, size);
        if (keep > 0 && nested)
            tu_variant_assert_close(f->d, small1, small0, nr, 1e-4,
                                    "smallest network after a nested re-organisation");
    }
    assert_int_equal(stereo_net_reorder_width(f->n, s->n_e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(stereo_net_reorder_width(f->n, -1), MANTA_ERR_INVALID_ARG);
    tu_upload(f->d, f->sl.params, p0, np);
    tu_upload(f->d, f->sl.state, st0, ns);
    free(p0), free(st0), free(st1), free(x), free(big0), free(big1), free(small0), free(small1);
    free(pa), free(pb);
}

/* ---- elastic decoder width ---------------------------------------------------------- */

/* Gradient of the sum of every prediction of @p a w.r.t. the parameters into @p g (a
 * BATCH_ONLY forward on the uploaded input), and its predictions into @p preds. */
static void sum_grad(net_fix *f, const ofa_arch *a, const double *ones, double *g, double *preds)
{
    const stereo_space *s = &f->s;
    TU_OK(f->d, stereo_net_set_arch(f->n, a));
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_BATCH_ONLY));
    download_preds(f, preds);
    for (int p = 0; p < stereo_preds(s); ones += pred_len(s, p), p++)
        tu_upload(f->d, stereo_net_dpred(f->n, p), ones, pred_len(s, p));
    memset(g, 0, f->sl.n_params * sizeof *g);
    tu_upload(f->d, f->sl.grads, g, f->sl.n_params);
    TU_OK(f->d, stereo_net_backward(f->n));
    tu_download(f->d, f->sl.grads, g, f->sl.n_params);
}

/* A narrow decoder reads a prefix of the widest one's channels: with every parameter the
 * widest network reads and the narrow one does not (a gradient the widest leaves non-zero
 * and the narrow one 0) set to 0, the widest network predicts what the narrow one
 * predicts (channels beyond the narrow widths then carry zeros). The encoder is the
 * largest in both. */
static void check_narrow_decoder(net_fix *f)
{
    const stereo_space *s = &f->s;
    const size_t np = f->sl.n_params, nx = input_len(s), nr = preds_len(s);
    double *p0 = tu_move_to_generic_point(f->d, f->sl.params, np, f->sl.n_decay);
    double *x = tu_doubles(nx), *g = tu_doubles(np), *gw = tu_doubles(np), *p1 = tu_doubles(np);
    double *ones = tu_doubles(nr);
    tu_download(f->d, f->sl.params, p1, np); /* the generic point */
    double *narrow = tu_doubles(nr), *wide = tu_doubles(nr), *wide0 = tu_doubles(nr);
    manta_rng rng;
    manta_rng_seed(&rng, 21, 0);
    tu_fill_uniform(&rng, x, nx, 0, 1);
    tu_upload(f->d, stereo_net_input(f->n), x, nx);
    for (size_t i = 0; i < nr; i++)
        ones[i] = 1.0;
    ofa_arch a, big;
    stereo_arch_max(s, &big);
    a = big;
    stereo_arch_set_dec(s, NULL, 0, &a);
    sum_grad(f, &a, ones, g, narrow);
    sum_grad(f, &big, ones, gw, wide0);
    size_t unread = 0;
    for (size_t i = 0; i < np; i++) {
        bool extra = g[i] == 0 && gw[i] != 0;
        p1[i] = extra ? 0.0 : p1[i];
        unread += extra;
    }
    tu_upload(f->d, f->sl.params, p1, np);
    TU_OK(f->d, stereo_net_forward(f->n, f->sl.params, OFA_BN_BATCH_ONLY));
    download_preds(f, wide);
    double size, d0 = max_diff(wide0, narrow, nr, &size);
    if (unread == 0 || !(d0 > 1e-3 * size))
        fail_msg("%s, %s kernels: %zu parameters unread by the narrow decoder, widest and "
                 "narrow predictions %g apart (largest %g): nothing to compare",
                 s->name, tu_variant_name(f->d), unread, d0, size);
    tu_variant_assert_close(f->d, wide, narrow, nr, 1e-5,
                            "widest network with the narrow one's unread parameters at 0");
    tu_upload(f->d, f->sl.params, p0, np);
    free(p0), free(x), free(g), free(gw), free(p1), free(ones), free(narrow), free(wide);
    free(wide0);
}

static void test_narrow_decoder_reads_a_prefix(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++)
        for (int i = 0; i < SPACES; i++)
            check_narrow_decoder(&fx->f[k][i]);
}

static void test_width_reorder_keeps_largest_network(void **state)
{
    fixture *fx = *state;
    for (int k = 0; k < TU_VARIANTS; k++) {
        for (int i = 0; i < SPACES; i++)
            check_reorder(&fx->f[k][i], false);
        net_fix g = {.d = fx->v->dev[k]};
        manta_err e;
        TU_OK_ERR(stereo_space_parse(no_se_json, &g.s, &e));
        TU_OK(g.d, stereo_net_create(g.d, &g.s, N, 7, &g.n));
        stereo_net_slabs(g.n, &g.sl);
        check_reorder(&g, true);
        stereo_net_destroy(g.n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers_match_the_description),
        cmocka_unit_test(test_backward_matches_finite_differences),
        cmocka_unit_test(test_left_and_right_are_not_interchangeable),
        cmocka_unit_test(test_degenerate_inputs_give_finite_outputs),
        cmocka_unit_test(test_bad_arguments_refused),
        cmocka_unit_test(test_switching_subnets_creates_no_buffers),
        cmocka_unit_test(test_set_size_runs_as_a_network_of_that_size),
        cmocka_unit_test(test_pooled_recalibration),
        cmocka_unit_test(test_forward_only_network),
        cmocka_unit_test(test_width_reorder_keeps_largest_network),
        cmocka_unit_test(test_narrow_decoder_reads_a_prefix),
    };
    return cmocka_run_group_tests_name("stereo net", tests, setup, teardown);
}
