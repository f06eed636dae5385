/* The pairs of a stereo run's steps (stereo/steps.h): a function of (seed, step) alone, the
 * crop one of the space's training crops, generated pairs first with a folder and --mix. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stereo/steps.h"

#define PAIRS 3

typedef struct fixture {
    stereo_space sp;
    stereo_source src;
    stereo_batch a, b;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    manta_err err = {0};
    assert_non_null(f);
    stereo_space_cpu(&f->sp); /* three training crops */
    f->src.kind = STEREO_SOURCE_SYNTH;
    f->src.count = 1000;
    stereo_synth_opts_default(&f->src.synth, f->sp.crop_w, f->sp.crop_h, (float)f->sp.max_disp, 5);
    assert_int_equal(stereo_batch_alloc(&f->a, PAIRS, f->sp.crop_h, f->sp.crop_w, 2, &err),
                     MANTA_OK);
    assert_int_equal(stereo_batch_alloc(&f->b, PAIRS, f->sp.crop_h, f->sp.crop_w, 2, &err),
                     MANTA_OK);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    stereo_batch_free(&f->a);
    stereo_batch_free(&f->b);
    free(f);
    return 0;
}

static bool same_batch(const stereo_batch *a, const stereo_batch *b)
{
    const size_t n = (size_t)a->n * 3 * a->height * a->width;
    return a->height == b->height && a->width == b->width &&
           !memcmp(a->left, b->left, n * sizeof *a->left) &&
           !memcmp(a->right, b->right, n * sizeof *a->right) &&
           !memcmp(a->index, b->index, sizeof a->index);
}

static void test_a_function_of_seed_and_step(void **state)
{
    fixture *f = *state;
    manta_err err = {0};
    stereo_steps s = {.space = &f->sp, .seed = 7, .train = &f->src};
    bool crop_seen[STEREO_MAX_CROPS] = {false};
    for (long step = 0; step < 12; step++) {
        assert_int_equal(stereo_steps_batch(&s, step, &f->a, &err), MANTA_OK);
        /* another batch, drawn after other steps: the same pairs */
        assert_int_equal(stereo_steps_batch(&s, step + 100, &f->b, &err), MANTA_OK);
        assert_int_equal(stereo_steps_batch(&s, step, &f->b, &err), MANTA_OK);
        assert_true(same_batch(&f->a, &f->b));
        int k = 0, h, w;
        for (; k < stereo_space_n_crops(&f->sp); k++) {
            stereo_space_crop(&f->sp, k, &h, &w);
            if (h == f->a.height && w == f->a.width)
                break;
        }
        assert_true(k < stereo_space_n_crops(&f->sp)); /* one of the training crops */
        crop_seen[k] = true;
    }
    for (int k = 0; k < stereo_space_n_crops(&f->sp); k++)
        assert_true(crop_seen[k]); /* every crop drawn in 12 steps (3 crops) */
    assert_int_equal(stereo_steps_batch(&s, 3, &f->a, &err), MANTA_OK);
    assert_int_equal(stereo_steps_batch(&s, 4, &f->b, &err), MANTA_OK);
    assert_false(same_batch(&f->a, &f->b)); /* another step, other pairs */
    s.seed = 8;
    assert_int_equal(stereo_steps_batch(&s, 3, &f->b, &err), MANTA_OK);
    assert_false(same_batch(&f->a, &f->b)); /* another seed, other pairs */
}

static void test_folder_runs_at_the_crop_with_generated_pairs_first(void **state)
{
    fixture *f = *state;
    manta_err err = {0};
    stereo_source gen = f->src;
    gen.base = 1u << 20;
    stereo_steps s = {
        .space = &f->sp, .seed = 7, .train = &f->src, .gen = &gen, .mix = 0.34, .folder = true};
    assert_int_equal(stereo_steps_generated(&s, PAIRS), 1);
    assert_int_equal(stereo_steps_generated(&s, 10), 3);
    s.mix = 0;
    assert_int_equal(stereo_steps_generated(&s, PAIRS), 0);
    s.mix = 0.34;
    for (long step = 0; step < 6; step++) {
        assert_int_equal(stereo_steps_batch(&s, step, &f->a, &err), MANTA_OK);
        assert_int_equal(f->a.height, f->sp.crop_h); /* a folder trains at the crop alone */
        assert_int_equal(f->a.width, f->sp.crop_w);
    }
    stereo_steps plain = s;
    plain.folder = false;
    assert_int_equal(stereo_steps_generated(&plain, PAIRS), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_function_of_seed_and_step),
        cmocka_unit_test(test_folder_runs_at_the_crop_with_generated_pairs_first),
    };
    return cmocka_run_group_tests_name("stereo step batches", tests, setup, teardown);
}
