/* The search's exact arena and file sizes (search/sizes.h): the exporter's
 * figures for the graph the builder makes, each sub-network built once however
 * often it is asked for, through the cache's growth, with the export's
 * preprocessing counted, errors passed on, and an int8 search's sizes those of
 * manta-profile --int8 --arch's model (lat_item_open()). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/testutil.h"

#include "core/rng.h"
#include "export/tflite.h"
#include "profile/measure.h"
#include "profile/synth.h"
#include "search/sizes.h"

/* What tflite_write() reports for the builder's graph of @p a. */
static void exported(const ofa_space *s, const ofa_arch *a, const xg_preprocess *pre, size_t *arena,
                     size_t *file)
{
    manta_err e;
    xgraph g;
    const synth_opts so = {0, true};
    TU_OK_ERR(prof_synth_arch_graph(s, a, pre, &so, &g, &e));
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report rep;
    TU_OK_ERR(tflite_write(&g, &data, &size, &rep, &e));
    *arena = rep.arena_bytes;
    *file = rep.file_bytes;
    free(data);
    xgraph_free(&g);
}

static void test_sizes_are_the_exporters(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    search_sizes c;
    search_sizes_init(&c, s, NULL);
    manta_rng rng;
    manta_rng_seed(&rng, 3, 1);
    for (int i = 0; i < 6; i++) {
        ofa_arch a;
        if (i == 0)
            ofa_arch_min(s, 0, &a);
        else if (i == 1)
            ofa_arch_max(s, 0, &a);
        else
            ofa_arch_sample(s, &rng, &a);
        size_t arena, file, want_arena, want_file;
        TU_OK_ERR(search_sizes_get(&c, &a, &arena, &file, &e));
        exported(s, &a, NULL, &want_arena, &want_file);
        assert_int_equal(arena, want_arena);
        assert_int_equal(file, want_file);
        assert_int_equal(c.built, i + 1);
        size_t again_arena, again_file; /* from the cache */
        TU_OK_ERR(search_sizes_get(&c, &a, &again_arena, &again_file, &e));
        assert_int_equal(again_arena, arena);
        assert_int_equal(again_file, file);
        assert_int_equal(c.built, i + 1);
    }
    search_sizes_free(&c);
    search_sizes_free(NULL);
}

static void test_labels_count_in_the_file(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    char *names[10];
    char store[10][16];
    for (int i = 0; i < 10; i++) {
        snprintf(store[i], sizeof store[i], "class-%d", i);
        names[i] = store[i];
    }
    xg_preprocess pre = {
        .channels = 1, .mean = {0.5f}, .std = {0.25f}, .n_labels = 10, .labels = names};
    ofa_arch a;
    ofa_arch_min(s, 0, &a);
    search_sizes plain, labelled;
    search_sizes_init(&plain, s, NULL);
    search_sizes_init(&labelled, s, &pre);
    size_t arena0, file0, arena1, file1, want_arena, want_file;
    TU_OK_ERR(search_sizes_get(&plain, &a, &arena0, &file0, &e));
    TU_OK_ERR(search_sizes_get(&labelled, &a, &arena1, &file1, &e));
    exported(s, &a, &pre, &want_arena, &want_file);
    assert_int_equal(file1, want_file);
    assert_int_equal(arena1, want_arena);
    assert_true(file1 > file0); /* the labels are in the file's metadata */
    assert_int_equal(arena1, arena0);
    search_sizes_free(&plain);
    search_sizes_free(&labelled);
}

/* More sub-networks than the first table holds (1024 slots, grown at half): every one
 * found again after the growth, none built twice. */
static void test_growth_keeps_every_entry(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    enum { N = 600 };
    ofa_arch *a = malloc(N * sizeof *a);
    size_t *arena = malloc(N * sizeof *arena), *file = malloc(N * sizeof *file);
    assert_true(a && arena && file);
    manta_rng rng;
    manta_rng_seed(&rng, 11, 2);
    search_sizes c;
    search_sizes_init(&c, s, NULL);
    long distinct = 0;
    for (int i = 0; i < N; i++) {
        ofa_arch_sample(s, &rng, &a[i]);
        a[i].r = s->res[0]; /* the smallest models: quick to build */
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !memcmp(&a[i], &a[j], sizeof a[i]);
        distinct += !seen;
        TU_OK_ERR(search_sizes_get(&c, &a[i], &arena[i], &file[i], &e));
    }
    assert_int_equal(c.built, distinct);
    assert_true(distinct > 512);
    for (int i = 0; i < N; i++) {
        size_t x, y;
        TU_OK_ERR(search_sizes_get(&c, &a[i], &x, &y, &e));
        assert_int_equal(x, arena[i]);
        assert_int_equal(y, file[i]);
    }
    assert_int_equal(c.built, distinct);
    search_sizes_free(&c);
    free(a);
    free(arena);
    free(file);
}

static void test_errors_pass_on(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    search_sizes c;
    search_sizes_init(&c, s, NULL);
    ofa_arch a;
    ofa_arch_min(s, 0, &a);
    a.r = 13; /* not a resolution of the space */
    size_t arena, file;
    assert_int_equal(search_sizes_get(&c, &a, &arena, &file, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(c.built, 0);
    search_sizes_free(&c);
}

/* int8: the arena and file size of the model manta-profile --int8 --arch opens for the same
 * sub-network (lat_item_open(): seed 1, calibrated, written as int8), smaller files than the
 * float ones; a stereo space's int8 sizes are refused. */
static void test_int8_sizes_are_the_profilers(void **state)
{
    const ofa_space *s = *state;
    manta_err e;
    search_sizes c, f;
    search_sizes_init(&c, s, NULL);
    search_sizes_init(&f, s, NULL);
    c.int8 = true;
    manta_rng rng;
    manta_rng_seed(&rng, 5, 1);
    for (int i = 0; i < 3; i++) {
        ofa_arch a;
        if (i == 0)
            ofa_arch_min(s, 0, &a);
        else
            ofa_arch_sample(s, &rng, &a);
        size_t arena, file, farena, ffile;
        TU_OK_ERR(search_sizes_get(&c, &a, &arena, &file, &e));
        TU_OK_ERR(search_sizes_get(&f, &a, &farena, &ffile, &e));
        lat_item it;
        memset(&it, 0, sizeof it);
        it.arch = a;
        it.seed = 1;
        it.int8 = true;
        pt_model m;
        TU_OK_ERR(lat_item_open(s, &it, &m, &e));
        assert_int_equal(arena, m.arena_bytes);
        assert_int_equal(file, m.size);
        pt_close(&m);
        assert_true(file < ffile / 2);
    }
    assert_int_equal(c.built, 3);
    search_sizes_free(&c);
    search_sizes_free(&f);

    stereo_space ss;
    TU_OK_ERR(stereo_space_load("tests/data/stereo_tiny.json", &ss, &e));
    search_sizes_init_stereo(&c, &ss);
    c.int8 = true;
    ofa_arch a;
    stereo_arch_min(&ss, &a);
    size_t arena, file;
    assert_int_equal(search_sizes_get(&c, &a, &arena, &file, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "int8"));
    search_sizes_free(&c);
}

static int setup(void **state)
{
    static ofa_space s;
    ofa_space_cpu_default(&s);
    *state = &s;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_are_the_exporters),
        cmocka_unit_test(test_labels_count_in_the_file),
        cmocka_unit_test(test_growth_keeps_every_entry),
        cmocka_unit_test(test_errors_pass_on),
        cmocka_unit_test(test_int8_sizes_are_the_profilers),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
