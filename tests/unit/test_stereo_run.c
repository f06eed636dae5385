/* The settings and data of a stereo training run (stereo/run.h): option conflicts, a new
 * run's settings, the sources of its pairs and the schedule's scaled learning rates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stereo/run.h"

static stereo_run_opts opts(void)
{
    return (stereo_run_opts){.schedule = "smoke",
                             .data = "synthetic",
                             .textures = "none",
                             .batch = 4,
                             .train_pairs = 64,
                             .seed = 3,
                             .lr_scale = 0.5,
                             .mix = -1};
}

static void test_conflicts(void **state)
{
    (void)state;
    stereo_run_opts o = opts();
    assert_null(stereo_run_conflict(&o));
    o.init = "a.ckpt";
    o.resume = true;
    assert_non_null(stereo_run_conflict(&o));
    o = opts();
    o.mix = 0.5; /* no folder */
    assert_non_null(stereo_run_conflict(&o));
    o.resume = true; /* a resumed run's own settings */
    assert_null(stereo_run_conflict(&o));
    o = opts();
    o.schedule = "finetune";
    assert_non_null(stereo_run_conflict(&o));
    o.init = "a.ckpt";
    assert_null(stereo_run_conflict(&o));
}

static void test_textures(void **state)
{
    (void)state;
    stereo_run_opts o = opts();
    bool missing = true;
    assert_null(stereo_run_textures(&o, true, &missing));
    assert_false(missing);
    o.textures = "photos";
    assert_string_equal(stereo_run_textures(&o, false, &missing), "photos");
    o.textures = NULL;
    assert_null(stereo_run_textures(&o, false, &missing)); /* no procedural pairs */
    assert_false(missing);
    const char *tx = stereo_run_textures(&o, true, &missing);
    assert_true(tx ? !strcmp(tx, "default") && !missing : missing);
}

static void test_meta_new(void **state)
{
    (void)state;
    stereo_space sp;
    stereo_space_cpu(&sp);
    stereo_meta m, init;
    manta_err err = {0};
    bool missing;
    stereo_run_opts o = opts();
    assert_int_equal(stereo_run_meta_new(&o, &sp, &m, &init, &missing, &err), MANTA_OK);
    assert_string_equal(m.preset, "smoke");
    assert_string_equal(m.data, "synthetic");
    assert_string_equal(m.val_data, "synthetic");
    assert_string_equal(m.textures, "");
    assert_string_equal(m.init, "");
    assert_int_equal(m.batch, 4);
    assert_int_equal(m.seed, 3);
    assert_int_equal(m.train_pairs, 64);
    assert_true(m.mix == 0 && m.lr_scale == 0.5);
    o.data = "pairs";
    o.textures = "photos"; /* photographs without procedural pairs */
    assert_int_equal(stereo_run_meta_new(&o, &sp, &m, &init, &missing, &err),
                     MANTA_ERR_INVALID_ARG);
    o.mix = 0.25;
    assert_int_equal(stereo_run_meta_new(&o, &sp, &m, &init, &missing, &err), MANTA_OK);
    assert_string_equal(m.textures, "photos");
    assert_true(m.mix == 0.25);
    o.init = "/nonexistent/run.ckpt";
    assert_int_not_equal(stereo_run_meta_new(&o, &sp, &m, &init, &missing, &err), MANTA_OK);
    assert_non_null(strstr(err.msg, "--init: "));
}

static void test_plan(void **state)
{
    (void)state;
    stereo_space sp;
    stereo_space_cpu(&sp);
    stereo_meta m, init;
    manta_err err = {0};
    bool missing;
    stereo_run_opts o = opts();
    assert_int_equal(stereo_run_meta_new(&o, &sp, &m, &init, &missing, &err), MANTA_OK);
    stereo_run_data d;
    assert_int_equal(stereo_run_data_open(&d, &sp, &m, &err), MANTA_OK);
    assert_false(d.have_set || d.have_val_set);
    assert_int_equal(d.photos.count, 0);
    ofa_schedule sched, plain;
    assert_int_equal(stereo_run_plan(&d, &sp, &m, 8, &sched, &err), MANTA_OK);
    assert_int_equal(stereo_schedule_preset(&sp, "smoke", 4, 16, &plain, &err), MANTA_OK);
    assert_int_equal(sched.n_phases, plain.n_phases);
    for (int i = 0; i < sched.n_phases; i++)
        assert_true(sched.phase[i].lr == (float)(plain.phase[i].lr * 0.5f));
    assert_int_equal(d.train.kind, STEREO_SOURCE_SYNTH);
    assert_int_equal(d.train.count, 64);
    assert_null(d.train.synth.photos);
    assert_int_equal(d.gen.count, 64);
    stereo_source held;
    stereo_heldout_source(&sp, 3, 8, &held);
    assert_int_equal(d.eval.kind, held.kind);
    assert_int_equal(d.eval.count, 8);
    stereo_steps s = stereo_run_steps(&d, &sp, &m);
    assert_ptr_equal(s.train, &d.train);
    assert_ptr_equal(s.gen, &d.gen);
    assert_false(s.folder);
    assert_int_equal(stereo_steps_generated(&s, 4), 0);
    int h, w;
    char what[256];
    stereo_run_dead_taps(&sp, &m, &h, &w, what, sizeof what);
    assert_true(h >= sp.crop_h && w >= sp.crop_w);
    stereo_run_data_free(&d);
    assert_int_equal(stereo_run_data_open(&d, &sp, &m, &err), MANTA_OK);
    snprintf(m.val_data, sizeof m.val_data, "/nonexistent/folder");
    stereo_run_data_free(&d);
    assert_int_not_equal(stereo_run_data_open(&d, &sp, &m, &err), MANTA_OK);
    stereo_run_data_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conflicts),
        cmocka_unit_test(test_textures),
        cmocka_unit_test(test_meta_new),
        cmocka_unit_test(test_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
