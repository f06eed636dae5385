/* Stereo batches: generated pairs as they are and augmented, folder pairs cropped, the
 * ground-truth pyramid of every pair, a batch filled one range a source, and the refusals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "data/stereo_batch.h"
#include "data/stereo_metrics.h"

#define H 32
#define W 64
#define LEVELS 3

static tu_tmpdir root;

static int setup(void **state)
{
    (void)state;
    return tu_tmpdir_make(&root, "sbatch");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&root);
}

static stereo_source synth_source(void)
{
    stereo_source s = {.kind = STEREO_SOURCE_SYNTH, .base = 1000, .count = 50};
    stereo_synth_opts_default(&s.synth, W, H, 16.0f, 7);
    return s;
}

/* Every level of pair k of @p b against the pyramid of @p p. */
static void check_levels(const stereo_batch *b, int k, const stereo_pair *p)
{
    manta_err e = {0};
    size_t plane = (size_t)H * W;
    float *want = malloc(plane * sizeof *want);
    assert_non_null(want);
    for (int l = 0; l < LEVELS; l++) {
        size_t n = plane >> (2 * l);
        TU_OK_ERR(stereo_disp_downsample(p->disp, p->mask, H, W, l, want, &e));
        assert_memory_equal(b->gt[l] + (size_t)k * n, want, n * sizeof *want);
    }
    free(want);
}

static void test_generated_pairs_as_they_are(void **state)
{
    (void)state;
    manta_err e = {0};
    stereo_batch b;
    TU_OK_ERR(stereo_batch_alloc(&b, 3, H, W, LEVELS, &e));
    stereo_source src = synth_source();
    const long idx[3] = {4, 57, -1}; /* 57 and -1 wrap to 7 and 49 */
    TU_OK_ERR(stereo_batch_fill(&b, &src, idx, NULL, NULL, &e));
    assert_int_equal(b.index[1], 7);
    assert_int_equal(b.index[2], 49);
    size_t views = 3 * (size_t)H * W;
    for (int k = 0; k < 3; k++) {
        stereo_pair p;
        TU_OK_ERR(stereo_pair_alloc(&p, H, W, &e));
        stereo_synth_opts o = src.synth;
        TU_OK_ERR(stereo_synth_generate(&o, src.base + (uint64_t)b.index[k], &p, &e));
        assert_memory_equal(b.left + (size_t)k * views, p.left, views * sizeof(float));
        assert_memory_equal(b.right + (size_t)k * views, p.right, views * sizeof(float));
        check_levels(&b, k, &p);
        /* the generator's disparities are all valid and positive: level 0 is them */
        for (size_t i = 0; i < (size_t)H * W; i++)
            assert_true(b.gt[0][(size_t)k * H * W + i] == p.disp[i]);
        stereo_pair_free(&p);
    }
    stereo_batch_free(&b);
}

static void test_generated_pairs_jittered(void **state)
{
    (void)state;
    manta_err e = {0};
    stereo_batch a, j1, j2;
    TU_OK_ERR(stereo_batch_alloc(&a, 2, H, W, LEVELS, &e));
    TU_OK_ERR(stereo_batch_alloc(&j1, 2, H, W, LEVELS, &e));
    TU_OK_ERR(stereo_batch_alloc(&j2, 2, H, W, LEVELS, &e));
    stereo_source src = synth_source();
    const long idx[2] = {1, 2};
    stereo_aug_params aug;
    stereo_aug_params_default(&aug, H, W);
    manta_rng r1, r2;
    manta_rng_seed(&r1, 3, 4);
    manta_rng_seed(&r2, 3, 4);
    TU_OK_ERR(stereo_batch_fill(&a, &src, idx, NULL, NULL, &e));
    TU_OK_ERR(stereo_batch_fill(&j1, &src, idx, &aug, &r1, &e));
    TU_OK_ERR(stereo_batch_fill(&j2, &src, idx, &aug, &r2, &e));
    size_t views = 2 * 3 * (size_t)H * W;
    /* the same draws give the same batch; the jitter changes the views, not the geometry */
    assert_memory_equal(j1.left, j2.left, views * sizeof(float));
    assert_memory_not_equal(j1.left, a.left, views * sizeof(float));
    for (int l = 0; l < LEVELS; l++)
        assert_memory_equal(j1.gt[l], a.gt[l], 2 * ((size_t)H * W >> (2 * l)) * sizeof(float));
    stereo_batch_free(&a);
    stereo_batch_free(&j1);
    stereo_batch_free(&j2);
}

/* The offset (oy, ox) at which @p crop's left view is a window of @p p's, or -1. */
static int find_window(const stereo_pair *p, const float *crop, int *oy, int *ox)
{
    for (*oy = 0; *oy + H <= p->height; (*oy)++)
        for (*ox = 0; *ox + W <= p->width; (*ox)++) {
            bool same = true;
            for (int c = 0; c < 3 && same; c++)
                for (int y = 0; y < H && same; y++)
                    same = !memcmp(crop + ((size_t)c * H + y) * W,
                                   p->left + ((size_t)c * p->height + *oy + y) * p->width + *ox,
                                   W * sizeof(float));
            if (same)
                return 0;
        }
    return -1;
}

static void test_folder_pairs_cropped(void **state)
{
    (void)state;
    manta_err e = {0};
    char dir[256];
    tu_tmpdir_path(&root, "kitti", dir, sizeof dir);
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, W + 13, H + 9, 16.0f, 11);
    for (int i = 0; i < 2; i++) {
        stereo_pair p;
        TU_OK_ERR(stereo_pair_alloc(&p, H + 9, W + 13, &e));
        TU_OK_ERR(stereo_synth_generate(&o, (uint64_t)i, &p, &e));
        TU_OK_ERR(stereo_folder_write_kitti(dir, i, &p, &e));
        stereo_pair_free(&p);
    }
    stereo_set set;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &set, &e));
    stereo_source src = {.kind = STEREO_SOURCE_FOLDER, .count = set.count, .set = &set};
    stereo_aug_params crop_only = {.crop_h = H, .crop_w = W, .per_view = true};
    stereo_batch b;
    TU_OK_ERR(stereo_batch_alloc(&b, 2, H, W, LEVELS, &e));
    manta_rng rng;
    manta_rng_seed(&rng, 9, 9);
    const long idx[2] = {1, 0};
    TU_OK_ERR(stereo_batch_fill(&b, &src, idx, &crop_only, &rng, &e));
    for (int k = 0; k < 2; k++) {
        stereo_pair p, win;
        TU_OK_ERR(stereo_folder_load(&set, (int)idx[k], &p, &e));
        int oy = 0, ox = 0;
        assert_int_equal(find_window(&p, b.left + (size_t)k * 3 * H * W, &oy, &ox), 0);
        TU_OK_ERR(stereo_pair_alloc(&win, H, W, &e));
        for (int y = 0; y < H; y++) {
            size_t from = (size_t)(oy + y) * p.width + ox;
            memcpy(win.disp + (size_t)y * W, p.disp + from, W * sizeof(float));
            memcpy(win.mask + (size_t)y * W, p.mask + from, W);
        }
        check_levels(&b, k, &win);
        stereo_pair_free(&p);
        stereo_pair_free(&win);
    }
    stereo_batch_free(&b);

    /* refusals: no crop for a folder; a batch larger than the pairs, naming the file */
    TU_OK_ERR(stereo_batch_alloc(&b, 1, H + 16, W, LEVELS, &e));
    assert_int_equal(stereo_batch_fill(&b, &src, idx, NULL, NULL, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "need a crop"));
    stereo_aug_params big = crop_only;
    big.crop_h = H + 16;
    assert_int_equal(stereo_batch_fill(&b, &src, idx, &big, &rng, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "000001_10.png"));
    assert_non_null(strstr(e.msg, "smaller than the batch"));
    stereo_batch_free(&b);
    stereo_set_free(&set);
}

/* A batch of generated pairs then a folder's, one range each: what a batch of each source
 * with the same draws holds, pair for pair; the pairs outside a range untouched; has_noc
 * over the ranges filled from pair 0. */
static void test_range_fill_mixes_sources(void **state)
{
    (void)state;
    manta_err e = {0};
    char dir[256];
    tu_tmpdir_path(&root, "mixed", dir, sizeof dir);
    stereo_synth_opts o;
    stereo_synth_opts_default(&o, W + 8, H + 4, 16.0f, 12);
    for (int i = 0; i < 3; i++) {
        stereo_pair p;
        TU_OK_ERR(stereo_pair_alloc(&p, H + 4, W + 8, &e));
        TU_OK_ERR(stereo_synth_generate(&o, (uint64_t)i, &p, &e));
        TU_OK_ERR(stereo_folder_write_kitti(dir, i, &p, &e));
        stereo_pair_free(&p);
    }
    char noc[300];
    snprintf(noc, sizeof noc, "%s/disp_noc_0", dir); /* the folder's pairs: no NOC bits */
    for (int i = 0; i < 3; i++) {
        char f[400];
        snprintf(f, sizeof f, "%s/%06d_10.png", noc, i);
        assert_int_equal(remove(f), 0);
    }
    assert_int_equal(remove(noc), 0);
    stereo_set set;
    TU_OK_ERR(stereo_folder_open(dir, STEREO_LAYOUT_AUTO, &set, &e));
    stereo_source gen = synth_source();
    stereo_source fold = {.kind = STEREO_SOURCE_FOLDER, .count = set.count, .set = &set};
    stereo_aug_params aug;
    stereo_aug_params_default(&aug, H, W);
    const long gi[1] = {5}, fi[2] = {2, 4}; /* 4 wraps to 1 */

    stereo_batch mix, g, f;
    TU_OK_ERR(stereo_batch_alloc(&mix, 3, H, W, LEVELS, &e));
    TU_OK_ERR(stereo_batch_alloc(&g, 1, H, W, LEVELS, &e));
    TU_OK_ERR(stereo_batch_alloc(&f, 2, H, W, LEVELS, &e));
    manta_rng r1, r2;
    manta_rng_seed(&r1, 5, 6);
    manta_rng_seed(&r2, 5, 6);
    TU_OK_ERR(stereo_batch_fill_range(&mix, &gen, 0, 1, gi, &aug, &r1, &e));
    assert_true(mix.has_noc);
    TU_OK_ERR(stereo_batch_fill_range(&mix, &fold, 1, 2, fi, &aug, &r1, &e));
    assert_false(mix.has_noc);
    TU_OK_ERR(stereo_batch_fill(&g, &gen, gi, &aug, &r2, &e));
    assert_true(g.has_noc);
    TU_OK_ERR(stereo_batch_fill(&f, &fold, fi, &aug, &r2, &e));
    assert_false(f.has_noc);
    assert_int_equal(mix.index[0], 5);
    assert_int_equal(mix.index[1], 2);
    assert_int_equal(mix.index[2], 1);
    const size_t plane = (size_t)H * W, views = 3 * plane;
    assert_memory_equal(mix.left, g.left, views * sizeof(float));
    assert_memory_equal(mix.right, g.right, views * sizeof(float));
    assert_memory_equal(mix.left + views, f.left, 2 * views * sizeof(float));
    assert_memory_equal(mix.right + views, f.right, 2 * views * sizeof(float));
    assert_memory_equal(mix.mask + plane, f.mask, 2 * plane);
    for (int l = 0; l < LEVELS; l++) {
        const size_t n = plane >> (2 * l);
        assert_memory_equal(mix.gt[l], g.gt[l], n * sizeof(float));
        assert_memory_equal(mix.gt[l] + n, f.gt[l], 2 * n * sizeof(float));
    }

    /* a later range leaves the pairs before it as they are */
    float *keep = malloc(views * sizeof *keep);
    assert_non_null(keep);
    memcpy(keep, mix.left, views * sizeof *keep);
    const long gi2[2] = {7, 8};
    TU_OK_ERR(stereo_batch_fill_range(&mix, &gen, 1, 2, gi2, &aug, &r1, &e));
    assert_memory_equal(mix.left, keep, views * sizeof *keep);
    assert_false(mix.has_noc); /* the range does not start at pair 0: cleared only */
    free(keep);

    /* a range outside the batch: refused, nothing filled */
    assert_int_equal(stereo_batch_fill_range(&mix, &gen, 2, 2, gi2, &aug, &r1, &e),
                     MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "pairs 2 .. 3 of a batch of 3"));
    assert_int_equal(stereo_batch_fill_range(&mix, &gen, -1, 1, gi2, &aug, &r1, &e),
                     MANTA_ERR_INVALID_ARG);
    TU_OK_ERR(stereo_batch_fill_range(&mix, &gen, 3, 0, gi2, &aug, &r1, &e)); /* empty */
    stereo_batch_free(&mix);
    stereo_batch_free(&g);
    stereo_batch_free(&f);
    stereo_set_free(&set);
}

static void test_alloc_refusals(void **state)
{
    (void)state;
    manta_err e = {0};
    stereo_batch b;
    assert_int_equal(stereo_batch_alloc(&b, 2, 30, 64, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "not a multiple of 4"));
    assert_int_equal(stereo_batch_alloc(&b, 0, 32, 64, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(stereo_batch_alloc(&b, 1, 32, 64, STEREO_BATCH_MAX_LEVELS + 1, &e),
                     MANTA_ERR_INVALID_ARG);
    assert_null(b.left);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generated_pairs_as_they_are),
        cmocka_unit_test(test_generated_pairs_jittered),
        cmocka_unit_test(test_folder_pairs_cropped),
        cmocka_unit_test(test_range_fill_mixes_sources),
        cmocka_unit_test(test_alloc_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
