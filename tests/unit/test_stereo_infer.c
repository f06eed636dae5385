/* Whole-pair inference of a stereo sub-network (stereo/infer.h): the padding and the crop
 * against a plain-C reference; at the network's size the whole-pair path gives what the
 * crop path of stereo_trainer_evaluate() gives; pairs of other sizes are run whole (every
 * valid pixel scored, the prediction that of the pair padded by hand); a pair too small for
 * the network is refused naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stereo_fix.h"
#include "common/testutil.h"
#include "stereo/infer.h"
#include "stereo/train.h"

#define BATCH 2

static tu_tmpdir root;

typedef struct fixture {
    mcl_dev *d;
    tu_stereo_tiny x; /* x.src: the training and re-calibration pairs */
    stereo_trainer *t;
} fixture;

/* A trainer trained a few steps (predictions away from their first values near 0). */
static int setup(void **state)
{
    static fixture f;
    manta_err e = {0};
    f.d = tu_open_device();
    if (tu_stereo_tiny_load(&f.x, BATCH) != 0)
        return -1;
    ofa_schedule s = tu_stereo_one_phase(BATCH, 12, 0.05f);
    if (stereo_trainer_create(f.d, &f.x.sp, &s, 3, &f.t) != MANTA_OK) {
        fprintf(stderr, "setup: %s\n", mcl_err(f.d)->msg);
        return -1;
    }
    for (long step = 0; step < 12; step++) {
        int count;
        if (stereo_ordered_batch(&f.x.src, step, &f.x.b, &count, &e) != MANTA_OK ||
            stereo_trainer_step(f.t, step, &f.x.b, NULL) != MANTA_OK) {
            fprintf(stderr, "setup: training step %ld failed\n", step);
            return -1;
        }
    }
    *state = &f;
    return tu_tmpdir_make(&root, "sinfer");
}

static int teardown(void **state)
{
    fixture *f = *state;
    stereo_trainer_destroy(f->t);
    tu_stereo_tiny_free(&f->x);
    mcl_close(f->d);
    return tu_tmpdir_remove(&root);
}

/* ---- padding and crop against the plain-C reference ---- */

/* The reference padding: dst[k][y][x] = src[k][min(y, h - 1)][min(x, w - 1)]. */
static void ref_pad(const float *src, int c, int h, int w, int ph, int pw, float *dst)
{
    for (int k = 0; k < c; k++)
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                const int sy = y < h ? y : h - 1, sx = x < w ? x : w - 1;
                dst[((size_t)k * ph + y) * pw + x] = src[((size_t)k * h + sy) * w + sx];
            }
}

static void test_pad_and_crop_match_reference(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 11, 0);
    /* the sizes: a multiple already, one more, one less, single rows and columns */
    const int sizes[][3] = {{16, 32, 3}, {17, 33, 3}, {15, 31, 3}, {1, 1, 3}, {1, 9, 2},
                            {9, 1, 2},   {21, 37, 3}, {8, 8, 1},   {5, 40, 3}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int levels = 0; levels <= 4; levels++) {
            const int h = sizes[k][0], w = sizes[k][1], c = sizes[k][2], m = 1 << levels;
            int ph, pw;
            stereo_pad_size(h, w, levels, &ph, &pw);
            /* the smallest multiples of 2^levels at least as large */
            assert_true(ph % m == 0 && pw % m == 0);
            assert_true(ph >= h && ph - h < m && pw >= w && pw - w < m);
            float *src = malloc((size_t)c * h * w * sizeof *src);
            float *got = malloc((size_t)c * ph * pw * sizeof *got);
            float *want = malloc((size_t)c * ph * pw * sizeof *want);
            float *back = malloc((size_t)h * w * sizeof *back);
            assert_true(src && got && want && back);
            for (size_t i = 0; i < (size_t)c * h * w; i++)
                src[i] = manta_rng_uniform(&rng);
            stereo_pad_planes(src, c, h, w, ph, pw, got);
            ref_pad(src, c, h, w, ph, pw, want);
            assert_memory_equal(got, want, (size_t)c * ph * pw * sizeof *got);
            for (int ch = 0; ch < c; ch++) {
                stereo_crop_plane(got + (size_t)ch * ph * pw, ph, pw, h, w, back);
                assert_memory_equal(back, src + (size_t)ch * h * w, (size_t)h * w * sizeof *back);
            }
            free(src), free(got), free(want), free(back);
        }
}

/* ---- folders ---- */

/* Write pairs of the sizes @p hw (height, width) to a new KITTI folder @p name; their
 * valid pixels into *valid. */
static void write_folder(const fixture *f, const char *name, const int (*hw)[2], int n, char *dir,
                         size_t cap, long *valid)
{
    manta_err e = {0};
    tu_tmpdir_path(&root, name, dir, cap);
    *valid = 0;
    for (int i = 0; i < n; i++) {
        stereo_synth_opts o;
        stereo_synth_opts_default(&o, hw[i][1], hw[i][0], (float)f->x.sp.max_disp, 77);
        stereo_pair p;
        TU_OK_ERR(stereo_pair_alloc(&p, hw[i][0], hw[i][1], &e));
        TU_OK_ERR(stereo_synth_generate(&o, (uint64_t)i, &p, &e));
        TU_OK_ERR(stereo_folder_write_kitti(dir, i, &p, &e));
        for (size_t q = 0; q < (size_t)p.height * p.width; q++)
            *valid += (p.mask[q] & STEREO_VALID) != 0;
        stereo_pair_free(&p);
    }
}

/* The pairs of a folder, scored whole by a runner of @p a over the trainer's re-calibrated
 * network; predictions of every pair, one after the other, into @p pred when not NULL. */
typedef struct collect {
    float *pred;
    size_t at;
} collect;

static manta_status keep_pred(void *ctx, long index, const stereo_pair *p, const float *pred,
                              const stereo_infer_run *run, manta_err *err)
{
    (void)index, (void)run, (void)err;
    collect *c = ctx;
    const size_t plane = (size_t)p->height * p->width;
    if (c->pred)
        memcpy(c->pred + c->at, pred, plane * sizeof *pred);
    c->at += plane;
    return MANTA_OK;
}

static void whole(fixture *f, const ofa_arch *a, const stereo_set *set, stereo_metrics *m,
                  float *pred, stereo_infer_summary *sum, bool recal_at_size)
{
    manta_err e = {0};
    /* re-calibrated at the size: the crop's statistics from other pairs, which the runner's
     * re-calibration on the first pairs replaces */
    stereo_source other = f->x.src;
    other.base += 500;
    TU_OK(f->d, stereo_trainer_recalibrate(f->t, a, &f->x.b, stereo_ordered_batch,
                                           recal_at_size ? &other : &f->x.src, 4));
    stereo_infer *r;
    TU_OK_ERR(stereo_infer_create(f->d, stereo_trainer_net(f->t), a, &r, &e));
    if (recal_at_size)
        stereo_infer_set_recal(r, &f->x.src, 4);
    collect c = {pred, 0};
    TU_OK_ERR(stereo_infer_folder(r, set, set->count, m, keep_pred, &c, sum, &e));
    stereo_infer_destroy(r);
    TU_OK(f->d, stereo_trainer_restore_bn(f->t));
}

/* Pairs of exactly the network's size: the crop path (a crop of the whole size is the whole
 * pair) and the whole-pair path give the same figures and predictions, also when the runner
 * re-calibrates at the pairs' size (on the source network, with the same pairs). The two
 * differ only in the batch (2 against 1) and in the crop path's colour jitter of width 0,
 * which rounds through the gamma table: up to float rounding. */
static void test_network_size_as_crop_path(void **state)
{
    fixture *f = *state;
    manta_err e = {0};
    const int hw[3][2] = {{16, 32}, {16, 32}, {16, 32}};
    char dir[256];
    long valid;
    write_folder(f, "net-size", hw, 3, dir, sizeof dir, &valid);
    stereo_set set;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &set, &e));
    const size_t plane = 16 * 32;
    for (int run = 0; run < 4; run++) {
        const int arch = run & 1;
        ofa_arch a;
        (arch ? stereo_arch_min : stereo_arch_max)(&f->x.sp, &a);
        stereo_source src = {.kind = STEREO_SOURCE_FOLDER, .count = set.count, .set = &set};
        stereo_metrics crop = {0}, full = {0};
        float *pc = malloc(3 * plane * sizeof *pc), *pw = malloc(3 * plane * sizeof *pw);
        assert_true(pc && pw);
        TU_OK(f->d, stereo_trainer_evaluate(f->t, &a, &f->x.b, stereo_ordered_batch, &f->x.src, 4,
                                            stereo_ordered_batch, &src, 3, &crop, pc));
        stereo_infer_summary sum;
        whole(f, &a, &set, &full, pw, &sum, run >= 2);
        double worst = 0, spread = 0;
        for (size_t i = 0; i < 3 * plane; i++) {
            worst = fmax(worst, fabs((double)pc[i] - pw[i]));
            spread = fmax(spread, fabs((double)pw[i] - pw[0]));
        }
        stereo_scores ca, cn, wa, wn;
        stereo_metrics_scores(&crop, &ca, &cn);
        stereo_metrics_scores(&full, &wa, &wn);
        printf("# %s%s: EPE crop path %.6f, whole %.6f px; largest prediction difference %.3g "
               "(predictions spread over %.3g px)\n",
               arch ? "min" : "max", run >= 2 ? " (re-calibrated at the size)" : "", ca.epe, wa.epe,
               worst, spread);
        assert_true(spread > 0.05); /* a network that predicts something */
        assert_true(worst < 1e-4);
        assert_int_equal(full.pairs, 3);
        assert_int_equal(wa.pixels, ca.pixels);
        assert_int_equal(wa.pixels, valid);
        assert_int_equal(wn.pixels, cn.pixels);
        assert_float_equal(wa.epe, ca.epe, 1e-5);
        assert_float_equal(wn.epe, cn.epe, 1e-5);
        assert_float_equal(wa.bad1, ca.bad1, 1e-9);
        assert_float_equal(wa.d1, ca.d1, 1e-9);
        assert_int_equal(sum.pairs, 3);
        assert_int_equal(sum.sizes, 1);
        assert_int_equal(sum.timed, 2); /* the first forward at the size is not timed */
        assert_true(sum.min_h == 16 && sum.max_h == 16 && sum.min_w == 32 && sum.max_w == 32);
        assert_true(sum.ms_median > 0);
        free(pc), free(pw);
    }
    stereo_set_free(&set);
}

/* Pairs of other sizes (not multiples of 2^3), sizes changing from pair to pair: every
 * valid pixel is scored, and a pair's prediction is that of the pair padded by hand to the
 * network's size (the same network, the same input: the same bits). */
static void test_other_sizes_run_whole(void **state)
{
    fixture *f = *state;
    manta_err e = {0};
    const int hw[4][2] = {{21, 37}, {16, 32}, {21, 37}, {19, 35}};
    char dir[256];
    long valid;
    write_folder(f, "sizes", hw, 4, dir, sizeof dir, &valid);
    stereo_set set;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &set, &e));
    ofa_arch a;
    stereo_arch_max(&f->x.sp, &a);
    stereo_metrics m = {0};
    stereo_infer_summary sum;
    size_t total = 0;
    for (int i = 0; i < 4; i++)
        total += (size_t)hw[i][0] * hw[i][1];
    float *pred = malloc(total * sizeof *pred);
    assert_non_null(pred);
    whole(f, &a, &set, &m, pred, &sum, false);
    stereo_scores all, noc;
    stereo_metrics_scores(&m, &all, &noc);
    printf("# 4 pairs of 37x21, 32x16, 37x21, 35x19: EPE %.4f px over %ld pixels, %d networks, "
           "%.3f ms per pair (median of %ld)\n",
           all.epe, all.pixels, sum.sizes, sum.ms_median, sum.timed);
    assert_int_equal(all.pixels, valid);
    assert_int_equal(m.pairs, 4);
    assert_true(isfinite(all.epe) && all.epe > 0);
    /* 37x21 and 35x19 both run at 40x24, 32x16 at its own size: 40x24, 32x16, 40x24 */
    assert_int_equal(sum.sizes, 3);
    assert_int_equal(sum.timed, 1); /* pair 3: the same size as pair 2 */
    assert_true(sum.min_h == 24 && sum.max_h == 24 && sum.min_w == 40 && sum.max_w == 40);

    /* pair 0 padded by hand (the reference) and run as a pair of 40x24 */
    stereo_pair p, big;
    TU_OK_ERR(stereo_folder_load(&set, 0, &p, &e));
    TU_OK_ERR(stereo_pair_alloc(&big, 24, 40, &e));
    ref_pad(p.left, 3, 21, 37, 24, 40, big.left);
    ref_pad(p.right, 3, 21, 37, 24, 40, big.right);
    TU_OK(f->d, stereo_trainer_recalibrate(f->t, &a, &f->x.b, stereo_ordered_batch, &f->x.src, 4));
    stereo_infer *r;
    TU_OK_ERR(stereo_infer_create(f->d, stereo_trainer_net(f->t), &a, &r, &e));
    float *got = malloc(21 * 37 * sizeof *got), *full = malloc(24 * 40 * sizeof *full);
    float *want = malloc(21 * 37 * sizeof *want);
    assert_true(got && full && want);
    stereo_infer_run run;
    TU_OK_ERR(stereo_infer_pair(r, &p, "pair 0", got, &run, &e));
    assert_true(run.new_size && run.padded_h == 24 && run.padded_w == 40);
    assert_memory_equal(got, pred, 21 * 37 * sizeof *got); /* as in the folder's run */
    TU_OK_ERR(stereo_infer_pair(r, &big, "pair 0 padded", full, &run, &e));
    assert_false(run.new_size);
    for (int y = 0; y < 21; y++) /* its top-left 37x21 */
        for (int x = 0; x < 37; x++)
            want[y * 37 + x] = full[y * 40 + x];
    assert_memory_equal(got, want, 21 * 37 * sizeof *got);
    double ms = 0;
    TU_OK_ERR(stereo_infer_time_again(r, &ms, &e));
    assert_true(ms > 0);

    /* too small for the network: 8 px wide is not wider than max_disp 8 */
    stereo_pair tiny;
    TU_OK_ERR(stereo_pair_alloc(&tiny, 8, 8, &e));
    assert_int_equal(stereo_infer_pair(r, &tiny, "tiny.png", got, NULL, &e), MANTA_ERR_INVALID_ARG);
    printf("# %s\n", e.msg);
    assert_non_null(strstr(e.msg, "tiny.png (8x8, padded to 8x8): too small"));
    assert_null(strchr(e.msg, '\n'));
    stereo_pair_free(&tiny);

    stereo_infer_destroy(r);
    TU_OK(f->d, stereo_trainer_restore_bn(f->t));
    free(got), free(full), free(want), free(pred);
    stereo_pair_free(&p), stereo_pair_free(&big);
    stereo_set_free(&set);
}

/* Beyond the source network's sizes the re-calibration runs batches of up to
 * STEREO_RECAL_BATCH pairs on a network made for the size, so every layer's statistics are
 * gathered as training normalises (a batch, not one pair at a time, which let a deep
 * network's inference saturate on real photographs): with 4 re-calibration pairs, one
 * batch, the prediction is that of a network of batch 4 re-calibrated on those 4 pairs. */
static void test_recal_beyond_plan_in_batches(void **state)
{
    fixture *f = *state;
    manta_err e = {0};
    const int H = 40, W = 48, NR = 4; /* the plan is 32 x 32 */
    ofa_arch a;
    stereo_arch_max(&f->x.sp, &a);
    stereo_pair p;
    stereo_synth_opts o = f->x.src.synth;
    o.width = W, o.height = H, o.seed = 77;
    TU_OK_ERR(stereo_pair_alloc(&p, H, W, &e));
    TU_OK_ERR(stereo_synth_generate(&o, 0, &p, &e));
    assert_int_equal(stereo_infer_recal_pairs(&f->x.sp, NR, H, W), NR);
    stereo_infer *r;
    TU_OK_ERR(stereo_infer_create(f->d, stereo_trainer_net(f->t), &a, &r, &e));
    stereo_infer_set_recal(r, &f->x.src, NR);
    float *got = malloc((size_t)H * W * sizeof *got);
    assert_non_null(got);
    stereo_infer_run run;
    TU_OK_ERR(stereo_infer_pair(r, &p, "pair", got, &run, &e));
    assert_true(run.new_size && run.padded_h == H && run.padded_w == W);
    stereo_infer_destroy(r);

    /* the reference: a network of batch NR at H x W, one RECAL forward of the same pairs */
    stereo_space s = f->x.sp;
    s.crop_h = H, s.crop_w = W, s.n_crops = 0;
    stereo_net *n;
    TU_OK(f->d, stereo_net_create_forward_only(f->d, &s, NR, 0, &n));
    ofa_slabs from, to;
    stereo_net_slabs(stereo_trainer_net(f->t), &from);
    stereo_net_slabs(n, &to);
    TU_OK(f->d, mcl_copy(f->d, to.params, from.params, from.n_params));
    ofa_arch ah = a;
    ah.r = H;
    TU_OK(f->d, stereo_net_set_arch(n, &ah));
    const size_t view = (size_t)3 * H * W, plane = (size_t)H * W;
    double *x = tu_doubles(2 * NR * view), *want = tu_doubles(plane);
    stereo_synth_opts ro = f->x.src.synth;
    ro.width = W, ro.height = H;
    stereo_pair q;
    TU_OK_ERR(stereo_pair_alloc(&q, H, W, &e));
    for (int k = 0; k < NR; k++) {
        TU_OK_ERR(stereo_synth_generate(&ro, f->x.src.base + (uint64_t)k, &q, &e));
        for (size_t i = 0; i < view; i++) {
            x[(size_t)k * view + i] = q.left[i];
            x[((size_t)NR + k) * view + i] = q.right[i];
        }
    }
    TU_OK(f->d, stereo_net_recal_begin(n, NR));
    tu_upload(f->d, stereo_net_input(n), x, 2 * NR * view);
    TU_OK(f->d, stereo_net_forward(n, to.params, OFA_BN_RECAL));
    for (int k = 0; k < NR; k++) /* the pair in every slot: EVAL runs each on its own */
        for (size_t i = 0; i < view; i++) {
            x[(size_t)k * view + i] = p.left[i];
            x[((size_t)NR + k) * view + i] = p.right[i];
        }
    tu_upload(f->d, stereo_net_input(n), x, 2 * NR * view);
    TU_OK(f->d, stereo_net_forward(n, to.params, OFA_BN_EVAL));
    tu_download(f->d, stereo_net_pred(n, stereo_preds(&s) - 1), want, plane);
    double *g = tu_doubles(plane);
    for (size_t i = 0; i < plane; i++)
        g[i] = got[i];
    tu_assert_close(g, want, plane, 1e-4, "prediction after the re-calibration in one batch");
    stereo_net_destroy(n);
    stereo_pair_free(&p), stereo_pair_free(&q);
    free(got), free(x), free(want), free(g);
}

/* The trainer's BN statistics come back, bit for bit, after a re-calibration. */
static void test_restore_bn(void **state)
{
    fixture *f = *state;
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(f->t), &sl);
    float *before = malloc(sl.n_state * sizeof *before);
    float *after = malloc(sl.n_state * sizeof *after);
    assert_true(before && after);
    TU_OK(f->d, mcl_read(f->d, sl.state, before, sl.n_state));
    ofa_arch a;
    stereo_arch_min(&f->x.sp, &a);
    TU_OK(f->d, stereo_trainer_recalibrate(f->t, &a, &f->x.b, stereo_ordered_batch, &f->x.src, 4));
    TU_OK(f->d, mcl_read(f->d, sl.state, after, sl.n_state));
    assert_true(memcmp(before, after, sl.n_state * sizeof *after) != 0);
    TU_OK(f->d, stereo_trainer_restore_bn(f->t));
    TU_OK(f->d, mcl_read(f->d, sl.state, after, sl.n_state));
    assert_memory_equal(before, after, sl.n_state * sizeof *after);
    free(before), free(after);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pad_and_crop_match_reference),
        cmocka_unit_test(test_network_size_as_crop_path),
        cmocka_unit_test(test_other_sizes_run_whole),
        cmocka_unit_test(test_recal_beyond_plan_in_batches),
        cmocka_unit_test(test_restore_bn),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
