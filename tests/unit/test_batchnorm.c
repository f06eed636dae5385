/* Batch norm: statistics, training and eval forward and the running
 * statistics against the double reference; backward through the batch
 * statistics against central finite differences; accumulation of the
 * parameter gradients; inputs far from zero; bad shapes. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "nn/batchnorm.h"
#include "ref/ref_bn.h"

#define MOMENTUM 0.1
#define EPS 1e-5

/* One batch-norm problem on the host (doubles holding float values) and on
 * the device. */
typedef struct bn_case {
    nn_bn_shape s;
    size_t len;                             /* N * C * HW */
    double *x, *r;                          /* (N, C, HW): input, loss weights */
    double *gamma, *beta, *rmean, *rvar;    /* (C) */
    mview vx, vgamma, vbeta, vrmean, vrvar; /* device copies of the above */
    mview vscr;                             /* op scratch (guarded) */
    size_t nscr;                            /* its floats: nn_bn_scratch_floats() */
} bn_case;

/* Round to float so the reference sees exactly what the device holds. */
static void round_float(double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        v[i] = (float)v[i];
}

static double *fill(manta_rng *rng, size_t n, double lo, double hi)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    assert_non_null(v);
    tu_fill_uniform(rng, v, n, lo, hi);
    round_float(v, n);
    return v;
}

/* Random problem of the given shape; x uniform in offset +- 1 (times a scale). */
static bn_case case_make(mcl_dev *d, manta_rng *rng, int n, int c, int hw, double offset)
{
    bn_case k;
    k.s = (nn_bn_shape){n, c, hw};
    k.len = (size_t)n * (size_t)c * (size_t)hw;
    k.x = fill(rng, k.len, offset - 1, offset + 1);
    if (offset == 0) /* vary the spread per channel around zero */
        for (size_t i = 0; i < k.len; i++)
            k.x[i] = (float)(k.x[i] * (1 + (int)(i / (size_t)hw % (size_t)c) % 3));
    k.r = fill(rng, k.len, -1, 1);
    k.gamma = fill(rng, (size_t)c, 0.5, 1.5);
    k.beta = fill(rng, (size_t)c, -1, 1);
    k.rmean = fill(rng, (size_t)c, -0.5, 0.5);
    k.rvar = fill(rng, (size_t)c, 0.5, 2);
    k.vx = tu_alloc_from(d, k.x, k.len);
    k.vgamma = tu_alloc_from(d, k.gamma, (size_t)c);
    k.vbeta = tu_alloc_from(d, k.beta, (size_t)c);
    k.vrmean = tu_alloc_from(d, k.rmean, (size_t)c);
    k.vrvar = tu_alloc_from(d, k.rvar, (size_t)c);
    k.nscr = nn_bn_scratch_floats(d, &k.s);
    k.vscr = tu_scratch(d, k.nscr);
    return k;
}

static void case_free(mcl_dev *d, bn_case *k)
{
    tu_free(d, k->vx), tu_free(d, k->vgamma), tu_free(d, k->vbeta);
    tu_free(d, k->vrmean), tu_free(d, k->vrvar);
    tu_scratch_free(d, k->vscr, k->nscr);
    free(k->x), free(k->r), free(k->gamma), free(k->beta), free(k->rmean), free(k->rvar);
}

/* Random training shape: N 1..5, C 1..max_c, the given HW, and n * hw > 1. */
static void rand_shape(manta_rng *rng, int max_c, int hw, int *n, int *c)
{
    *n = tu_rand_int(rng, 1, 5);
    *c = tu_rand_int(rng, 1, max_c);
    if (*n * hw < 2)
        *n = 2;
}

static const int HWS[] = {1, 7, 16, 49, 121};

static void test_bn_stats_match_reference(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 1);
    for (int t = 0; t < 4; t++) {
        int n = tu_rand_int(&rng, 1, 5), c = tu_rand_int(&rng, 1, 19);
        bn_case k = case_make(d, &rng, n, c, HWS[t], 0);
        double mean[19], var[19], got[19];
        mview vm = tu_alloc(d, (size_t)c), vv = tu_alloc(d, (size_t)c);
        TU_OK(d, nn_bn_stats(d, &k.s, k.vx, vm, vv, k.vscr));
        ref_bn_stats(n, c, HWS[t], k.x, mean, var);
        tu_download(d, vm, got, (size_t)c);
        tu_assert_close(got, mean, (size_t)c, 1e-4, "batch mean");
        tu_download(d, vv, got, (size_t)c);
        tu_assert_close(got, var, (size_t)c, 1e-4, "batch variance");
        tu_free(d, vm), tu_free(d, vv);
        case_free(d, &k);
    }
}

/* Training forward of one case against the reference: y (also in place),
 * saved statistics and the running statistics after two steps. */
static void check_train_forward(mcl_dev *d, bn_case *k)
{
    const int n = k->s.n, c = k->s.c, hw = k->s.hw;
    const size_t cs = (size_t)c;
    double *y = malloc(k->len * sizeof *y), *got = malloc(k->len * sizeof *got);
    double smean[19], sinv[19];
    assert_true(y && got && c <= 19);
    mview vy = tu_alloc(d, k->len), vsm = tu_alloc(d, cs), vsi = tu_alloc(d, cs);

    TU_OK(d, nn_bn_forward_train(d, &k->s, MOMENTUM, EPS, k->vx, k->vgamma, k->vbeta, k->vrmean,
                                 k->vrvar, vy, vsm, vsi, k->vscr));
    ref_bn_forward_train(n, c, hw, MOMENTUM, EPS, k->x, k->gamma, k->beta, k->rmean, k->rvar, y,
                         smean, sinv);
    tu_download(d, vy, got, k->len);
    tu_assert_close(got, y, k->len, 1e-4, "training forward y");
    tu_download(d, vsm, got, cs);
    tu_assert_close(got, smean, cs, 1e-4, "saved mean");
    tu_download(d, vsi, got, cs);
    tu_assert_close(got, sinv, cs, 1e-4, "saved invstd");

    /* second step in place (y aliases x): the running statistics move again */
    TU_OK(d, nn_bn_forward_train(d, &k->s, MOMENTUM, EPS, k->vx, k->vgamma, k->vbeta, k->vrmean,
                                 k->vrvar, k->vx, vsm, vsi, k->vscr));
    ref_bn_forward_train(n, c, hw, MOMENTUM, EPS, k->x, k->gamma, k->beta, k->rmean, k->rvar, y,
                         smean, sinv);
    tu_download(d, k->vx, got, k->len);
    tu_assert_close(got, y, k->len, 1e-4, "in-place training forward y");
    tu_download(d, k->vrmean, got, cs);
    tu_assert_close(got, k->rmean, cs, 1e-4, "running mean");
    tu_download(d, k->vrvar, got, cs);
    tu_assert_close(got, k->rvar, cs, 1e-4, "running variance (unbiased)");
    tu_upload(d, k->vx, k->x, k->len);

    tu_free(d, vy), tu_free(d, vsm), tu_free(d, vsi);
    free(y), free(got);
}

static void test_bn_train_forward_and_running_stats(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 2);
    for (int t = 0; t < 4; t++) {
        int n, c;
        rand_shape(&rng, 19, HWS[t], &n, &c);
        bn_case k = case_make(d, &rng, n, c, HWS[t], 0);
        check_train_forward(d, &k);
        case_free(d, &k);
    }
}

static void test_bn_eval_forward_uses_running_stats(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 3);
    for (int t = 0; t < 4; t++) {
        int n = tu_rand_int(&rng, 1, 5), c = tu_rand_int(&rng, 1, 19);
        bn_case k = case_make(d, &rng, n, c, HWS[t], 0);
        double *y = malloc(k.len * sizeof *y), *got = malloc(k.len * sizeof *got);
        assert_true(y && got);
        mview vy = tu_alloc(d, k.len);
        TU_OK(d, nn_bn_forward_eval(d, &k.s, EPS, k.vx, k.vgamma, k.vbeta, k.vrmean, k.vrvar, vy));
        ref_bn_forward_eval(n, c, HWS[t], EPS, k.x, k.gamma, k.beta, k.rmean, k.rvar, y);
        tu_download(d, vy, got, k.len);
        tu_assert_close(got, y, k.len, 1e-4, "eval forward y");
        TU_OK(d,
              nn_bn_forward_eval(d, &k.s, EPS, k.vx, k.vgamma, k.vbeta, k.vrmean, k.vrvar, k.vx));
        tu_download(d, k.vx, got, k.len);
        tu_assert_close(got, y, k.len, 1e-4, "in-place eval forward y");
        tu_free(d, vy);
        free(y), free(got);
        case_free(d, &k);
    }
}

/* The loss finite differences differentiate: sum(y * r), y from the
 * training forward with the batch statistics. */
static double bn_loss(void *p)
{
    bn_case *k = p;
    double *y = malloc(k->len * sizeof *y);
    assert_non_null(y);
    ref_bn_forward_train(k->s.n, k->s.c, k->s.hw, MOMENTUM, EPS, k->x, k->gamma, k->beta, NULL,
                         NULL, y, NULL, NULL);
    double l = tu_dot(y, k->r, k->len);
    free(y);
    return l;
}

/* Backward of one case against finite differences: dx (into a separate
 * buffer, or in place over dy), dgamma and dbeta accumulated onto random
 * starting values. */
static void check_backward(mcl_dev *d, manta_rng *rng, bn_case *k, int in_place)
{
    const size_t cs = (size_t)k->s.c;
    double *fd = malloc(k->len * sizeof *fd), *got = malloc(k->len * sizeof *got);
    double *g0 = fill(rng, cs, -1, 1), *b0 = fill(rng, cs, -1, 1), want[19];
    assert_true(fd && got && cs <= 19);
    mview vy = tu_alloc(d, k->len), vsm = tu_alloc(d, cs), vsi = tu_alloc(d, cs);
    mview vdy = tu_alloc_from(d, k->r, k->len), vdx = in_place ? vdy : tu_alloc(d, k->len);
    mview vdg = tu_alloc_from(d, g0, cs), vdb = tu_alloc_from(d, b0, cs);

    TU_OK(d, nn_bn_forward_train(d, &k->s, MOMENTUM, EPS, k->vx, k->vgamma, k->vbeta, k->vrmean,
                                 k->vrvar, vy, vsm, vsi, k->vscr));
    TU_OK(d, nn_bn_backward(d, &k->s, k->vx, k->vgamma, vsm, vsi, vdy, vdx, vdg, vdb, k->vscr));

    tu_fd_grad(bn_loss, k, k->x, k->len, 1e-4, fd);
    tu_download(d, vdx, got, k->len);
    tu_assert_close(got, fd, k->len, 1e-3, in_place ? "dx (in place over dy)" : "dx");
    tu_fd_grad(bn_loss, k, k->gamma, cs, 1e-4, fd);
    for (size_t i = 0; i < cs; i++)
        want[i] = g0[i] + fd[i];
    tu_download(d, vdg, got, cs);
    tu_assert_close(got, want, cs, 1e-3, "dgamma (accumulated)");
    tu_fd_grad(bn_loss, k, k->beta, cs, 1e-4, fd);
    for (size_t i = 0; i < cs; i++)
        want[i] = b0[i] + fd[i];
    tu_download(d, vdb, got, cs);
    tu_assert_close(got, want, cs, 1e-3, "dbeta (accumulated)");

    tu_free(d, vy), tu_free(d, vsm), tu_free(d, vsi), tu_free(d, vdy), tu_free(d, vdg);
    tu_free(d, vdb);
    if (!in_place)
        tu_free(d, vdx);
    free(fd), free(got), free(g0), free(b0);
}

static void test_bn_backward_through_batch_stats(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 4);
    for (int t = 0; t < 4; t++) {
        int n, c;
        rand_shape(&rng, 6, HWS[t], &n, &c);
        bn_case k = case_make(d, &rng, n, c, HWS[t], 0);
        check_backward(d, &rng, &k, 0);
        case_free(d, &k);
    }
}

static void test_bn_backward_dx_aliases_dy(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 5);
    bn_case k = case_make(d, &rng, 3, 5, 7, 0);
    check_backward(d, &rng, &k, 1);
    case_free(d, &k);
}

/* Values 1000 +- 1: float E[x^2] - E[x]^2 would lose every digit. */
static void test_bn_large_mean_offset_stays_accurate(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 6);
    bn_case k = case_make(d, &rng, 4, 3, 49, 1000);
    double mean[3], var[3], got[3];
    mview vm = tu_alloc(d, 3), vv = tu_alloc(d, 3);
    TU_OK(d, nn_bn_stats(d, &k.s, k.vx, vm, vv, k.vscr));
    ref_bn_stats(4, 3, 49, k.x, mean, var);
    tu_download(d, vm, got, 3);
    tu_assert_close(got, mean, 3, 1e-6, "mean near 1000");
    tu_download(d, vv, got, 3);
    tu_assert_close(got, var, 3, 1e-4, "variance near 1000");
    tu_free(d, vm), tu_free(d, vv);
    check_train_forward(d, &k);
    check_backward(d, &rng, &k, 0);
    case_free(d, &k);
}

/* From 16 images on, each work-item of a channel takes whole rows: the
 * statistics, training forward and backward there, with full and partial
 * chunks of 8, and values far from zero. */
static void test_bn_batch_of_16_or_more(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 7);
    static const int shapes[][4] = {{20, 3, 13, 0}, {17, 2, 16, 0}, {16, 2, 9, 1000}};
    for (int t = 0; t < 3; t++) {
        int n = shapes[t][0], c = shapes[t][1], hw = shapes[t][2];
        bn_case k = case_make(d, &rng, n, c, hw, shapes[t][3]);
        double mean[3], var[3], got[3];
        mview vm = tu_alloc(d, (size_t)c), vv = tu_alloc(d, (size_t)c);
        TU_OK(d, nn_bn_stats(d, &k.s, k.vx, vm, vv, k.vscr));
        ref_bn_stats(n, c, hw, k.x, mean, var);
        tu_download(d, vm, got, (size_t)c);
        tu_assert_close(got, mean, (size_t)c, shapes[t][3] ? 1e-6 : 1e-4, "batch mean");
        tu_download(d, vv, got, (size_t)c);
        tu_assert_close(got, var, (size_t)c, 1e-4, "batch variance");
        tu_free(d, vm), tu_free(d, vv);
        check_train_forward(d, &k);
        check_backward(d, &rng, &k, 0);
        case_free(d, &k);
    }
}

/* Channels of several thousand values: the GPU variant cuts them into ranges reduced by a
 * work-group each and combined per channel. Statistics, training forward and backward
 * against the reference (the backward in closed form: finite differences over this many
 * values would take minutes), far from zero too. */
static void test_bn_long_channels(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 10);
    static const int shapes[][4] = {{24, 3, 400, 0}, {8, 2, 1200, 1000}, {64, 5, 64, 0}};
    for (int t = 0; t < 3; t++) {
        int n = shapes[t][0], c = shapes[t][1], hw = shapes[t][2];
        const size_t cs = (size_t)c;
        bn_case k = case_make(d, &rng, n, c, hw, shapes[t][3]);
        double mean[5], var[5], got[5], dg[5], db[5];
        mview vm = tu_alloc(d, cs), vv = tu_alloc(d, cs);
        TU_OK(d, nn_bn_stats(d, &k.s, k.vx, vm, vv, k.vscr));
        ref_bn_stats(n, c, hw, k.x, mean, var);
        tu_download(d, vm, got, cs);
        tu_assert_close(got, mean, cs, shapes[t][3] ? 1e-6 : 1e-4, "batch mean");
        tu_download(d, vv, got, cs);
        tu_assert_close(got, var, cs, 1e-4, "batch variance");
        tu_free(d, vm), tu_free(d, vv);
        check_train_forward(d, &k);

        double *dx = malloc(k.len * sizeof *dx), *gdx = malloc(k.len * sizeof *gdx);
        assert_true(dx && gdx);
        mview vy = tu_alloc(d, k.len), vsm = tu_alloc(d, cs), vsi = tu_alloc(d, cs);
        mview vdy = tu_alloc_from(d, k.r, k.len), vdx = tu_alloc(d, k.len);
        mview vdg = tu_alloc(d, cs), vdb = tu_alloc(d, cs);
        TU_OK(d, mcl_fill(d, vdg, 0.0f, cs));
        TU_OK(d, mcl_fill(d, vdb, 0.0f, cs));
        TU_OK(d, nn_bn_forward_train(d, &k.s, MOMENTUM, EPS, k.vx, k.vgamma, k.vbeta, k.vrmean,
                                     k.vrvar, vy, vsm, vsi, k.vscr));
        TU_OK(d, nn_bn_backward(d, &k.s, k.vx, k.vgamma, vsm, vsi, vdy, vdx, vdg, vdb, k.vscr));
        ref_bn_backward(n, c, hw, EPS, k.x, k.gamma, k.r, dx, dg, db);
        tu_download(d, vdx, gdx, k.len);
        tu_assert_close(gdx, dx, k.len, 1e-3, "dx of long channels");
        tu_download(d, vdg, got, cs);
        tu_assert_close(got, dg, cs, 1e-3, "dgamma of long channels");
        tu_download(d, vdb, got, cs);
        tu_assert_close(got, db, cs, 1e-3, "dbeta of long channels");
        mview all[] = {vy, vsm, vsi, vdy, vdx, vdg, vdb};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            tu_free(d, all[j]);
        free(dx), free(gdx);
        case_free(d, &k);
    }
}

/* The error of a call must be MANTA_ERR_INVALID_ARG naming @p field. */
static void expect_invalid(mcl_dev *d, manta_status st, const char *field)
{
    assert_int_equal(st, MANTA_ERR_INVALID_ARG);
    const char *msg = manta_err_msg(mcl_err(d), st);
    if (!strstr(msg, field))
        fail_msg("message '%s' does not name '%s'", msg, field);
}

static void test_bn_rejects_bad_shapes(void **state)
{
    mcl_dev *d = *state;
    mview v = tu_alloc(d, 16);
    nn_bn_shape ok = {2, 2, 2};
    expect_invalid(d, nn_bn_stats(d, &(nn_bn_shape){0, 2, 2}, v, v, v, v), "shape n");
    expect_invalid(d, nn_bn_stats(d, &(nn_bn_shape){2, -1, 2}, v, v, v, v), "shape c");
    expect_invalid(d, nn_bn_forward_eval(d, &(nn_bn_shape){2, 2, 0}, 1e-5f, v, v, v, v, v, v),
                   "shape hw");
    expect_invalid(d, nn_bn_stats(d, NULL, v, v, v, v), "shape");
    expect_invalid(
        d, nn_bn_forward_train(d, &(nn_bn_shape){1, 2, 1}, 0.1f, 1e-5f, v, v, v, v, v, v, v, v, v),
        "n*hw");
    expect_invalid(d, nn_bn_forward_train(d, &ok, 1.5f, 1e-5f, v, v, v, v, v, v, v, v, v),
                   "momentum");
    expect_invalid(d, nn_bn_forward_train(d, &ok, 0.1f, 0.0f, v, v, v, v, v, v, v, v, v), "eps");
    expect_invalid(d, nn_bn_forward_eval(d, &ok, -1.0f, v, v, v, v, v, v), "eps");
    expect_invalid(d, nn_bn_backward(d, &(nn_bn_shape){2, 0, 2}, v, v, v, v, v, v, v, v, v),
                   "shape c");
    tu_free(d, v);
}

/* Synchronised batch norm: a batch split into two shards, statistics combined on the host
 * as runtime/train/dp.c does (mean of the means, mean of var + (mean_i - mean)^2), equals
 * the training forward and backward on the whole batch: y, saved and running statistics,
 * dx, dgamma and dbeta (accumulated by both shards). */
static void test_bn_sync_shards_match_whole_batch(void **state)
{
    mcl_dev *d = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 41, 9);
    static const int shapes[][3] = {{8, 5, 7}, {4, 3, 1}, {16, 2, 9}};
    for (int t = 0; t < 3; t++) {
        const int n = shapes[t][0], c = shapes[t][1], hw = shapes[t][2], h = n / 2;
        const size_t cs = (size_t)c, half = (size_t)h * cs * (size_t)hw;
        bn_case k = case_make(d, &rng, n, c, hw, 0);
        /* whole batch */
        mview y = tu_alloc(d, k.len), sm = tu_alloc(d, cs), si = tu_alloc(d, cs);
        mview rm = tu_alloc_from(d, k.rmean, cs), rv = tu_alloc_from(d, k.rvar, cs);
        mview dy = tu_alloc_from(d, k.r, k.len), dx = tu_alloc(d, k.len);
        mview dg = tu_alloc(d, cs), db = tu_alloc(d, cs);
        TU_OK(d, mcl_fill(d, dg, 0.0f, cs));
        TU_OK(d, mcl_fill(d, db, 0.0f, cs));
        TU_OK(d, nn_bn_forward_train(d, &k.s, (float)MOMENTUM, (float)EPS, k.vx, k.vgamma, k.vbeta,
                                     rm, rv, y, sm, si, k.vscr));
        TU_OK(d, nn_bn_backward(d, &k.s, k.vx, k.vgamma, sm, si, dy, dx, dg, db, k.vscr));
        /* two shards */
        nn_bn_shape sh = {h, c, hw};
        mview y2 = tu_alloc(d, k.len), sm2 = tu_alloc(d, cs), si2 = tu_alloc(d, cs);
        mview rm2 = tu_alloc_from(d, k.rmean, cs), rv2 = tu_alloc_from(d, k.rvar, cs);
        mview dx2 = tu_alloc(d, k.len), dg2 = tu_alloc(d, cs), db2 = tu_alloc(d, cs);
        mview st = tu_alloc(d, 2 * cs), sums[2] = {tu_alloc(d, 2 * cs), tu_alloc(d, 2 * cs)};
        TU_OK(d, mcl_fill(d, dg2, 0.0f, cs));
        TU_OK(d, mcl_fill(d, db2, 0.0f, cs));
        double part[2][2 * 5], comb[2 * 5];
        for (int i = 0; i < 2; i++) {
            TU_OK(d, nn_bn_stats(d, &sh, mview_at(k.vx, (size_t)i * half), st, mview_at(st, cs),
                                 k.vscr));
            tu_download(d, st, part[i], 2 * cs);
        }
        for (int ch = 0; ch < c; ch++) {
            double mean = (part[0][ch] + part[1][ch]) / 2, var = 0;
            for (int i = 0; i < 2; i++)
                var += part[i][c + ch] + (part[i][ch] - mean) * (part[i][ch] - mean);
            comb[ch] = (float)mean;
            comb[c + ch] = (float)(var / 2);
        }
        tu_upload(d, st, comb, 2 * cs);
        const long m = (long)n * hw;
        TU_OK(d, nn_bn_sync_finish(d, c, m, (float)MOMENTUM, (float)EPS, st, rm2, rv2, sm2, si2));
        for (int i = 0; i < 2; i++)
            TU_OK(d, nn_bn_forward_apply(d, &sh, mview_at(k.vx, (size_t)i * half), k.vgamma,
                                         k.vbeta, sm2, si2, mview_at(y2, (size_t)i * half)));
        for (int i = 0; i < 2; i++) {
            TU_OK(d,
                  nn_bn_backward_reduce(d, &sh, mview_at(k.vx, (size_t)i * half), sm2, si2,
                                        mview_at(dy, (size_t)i * half), sums[i], dg2, db2, k.vscr));
            tu_download(d, sums[i], part[i], 2 * cs);
        }
        for (size_t j = 0; j < 2 * cs; j++)
            comb[j] = (float)(part[0][j] + part[1][j]);
        tu_upload(d, sums[0], comb, 2 * cs);
        for (int i = 0; i < 2; i++)
            TU_OK(d, nn_bn_backward_apply(d, &sh, m, mview_at(k.vx, (size_t)i * half), k.vgamma,
                                          sm2, si2, mview_at(dy, (size_t)i * half),
                                          mview_at(dx2, (size_t)i * half), sums[0]));
        double *a = malloc(k.len * sizeof *a), *b = malloc(k.len * sizeof *b);
        assert_non_null(a);
        assert_non_null(b);
        struct {
            mview whole, shards;
            size_t n;
            const char *what;
        } cmp[] = {{y, y2, k.len, "y"},
                   {sm, sm2, cs, "saved mean"},
                   {si, si2, cs, "saved 1/std"},
                   {rm, rm2, cs, "running mean"},
                   {rv, rv2, cs, "running variance"},
                   {dx, dx2, k.len, "dx"},
                   {dg, dg2, cs, "dgamma"},
                   {db, db2, cs, "dbeta"}};
        for (size_t j = 0; j < sizeof cmp / sizeof cmp[0]; j++) {
            tu_download(d, cmp[j].whole, a, cmp[j].n);
            tu_download(d, cmp[j].shards, b, cmp[j].n);
            tu_assert_close(b, a, cmp[j].n, 1e-4, cmp[j].what);
        }
        free(a), free(b);
        mview all[] = {y,   sm,  si,  rm,  rv,  dy,  dx,  dg, db,      y2,
                       sm2, si2, rm2, rv2, dx2, dg2, db2, st, sums[0], sums[1]};
        for (size_t j = 0; j < sizeof all / sizeof all[0]; j++)
            tu_free(d, all[j]);
        case_free(d, &k);
    }
    /* argument checks */
    mview v = tu_alloc(d, 16);
    expect_invalid(d, nn_bn_sync_finish(d, 2, 1, 0.1f, 1e-5f, v, v, v, v, v), "values per channel");
    expect_invalid(d, nn_bn_sync_finish(d, 0, 8, 0.1f, 1e-5f, v, v, v, v, v), "channels");
    tu_free(d, v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bn_stats_match_reference),
        cmocka_unit_test(test_bn_train_forward_and_running_stats),
        cmocka_unit_test(test_bn_eval_forward_uses_running_stats),
        cmocka_unit_test(test_bn_backward_through_batch_stats),
        cmocka_unit_test(test_bn_backward_dx_aliases_dy),
        cmocka_unit_test(test_bn_large_mean_offset_stays_accurate),
        cmocka_unit_test(test_bn_batch_of_16_or_more),
        cmocka_unit_test(test_bn_long_channels),
        cmocka_unit_test(test_bn_rejects_bad_shapes),
        cmocka_unit_test(test_bn_sync_shards_match_whole_batch),
    };
    return cmocka_run_group_tests_name("batchnorm", tests, tu_setup_device, tu_teardown_device);
}
