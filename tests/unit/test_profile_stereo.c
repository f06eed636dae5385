/* The stereo latency table: every layer of every sub-network of the tiny stereo space
 * (tests/data/stereo_tiny.json) has an enumerated key and a prediction is the sum of its
 * keys; the keyed layers are the synthetic graph's operators in order (export/stereo_graph.h,
 * the exporter's builder); every key's one-layer graph builds; the cover sub-networks hold
 * every key; tables of the stereo space round-trip and those of another space are refused
 * both ways. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "core/rng.h"
#include "profile/latency_table.h"
#include "profile/synth.h"

static tu_tmpdir dir;
static stereo_space sp;

static int setup(void **state)
{
    (void)state;
    manta_err e = {0};
    if (stereo_space_load("tests/data/stereo_tiny.json", &sp, &e) != MANTA_OK) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return -1;
    }
    return tu_tmpdir_make(&dir, "profile_stereo");
}

static int teardown(void **state)
{
    (void)state;
    return tu_tmpdir_remove(&dir);
}

/* A table of every key with distinct statistics, overhead 0.25 ms. */
static void full_table(lat_table *t)
{
    manta_err e = {0};
    lat_layer *keys = NULL;
    size_t n = 0;
    TU_OK_ERR(lat_stereo_enumerate(&sp, &keys, &n, &e));
    TU_OK_ERR(lat_table_init_stereo(t, &sp, &e));
    for (size_t i = 0; i < n; i++) {
        const lat_stats st = {0.5 + i, 0.6 + i, 0.01, 10, 0.01 * (double)(i + 1)};
        TU_OK_ERR(lat_table_set(t, keys[i].key, &st, &e));
    }
    t->overhead_ms = 0.25;
    free(keys);
}

static void test_every_layer_has_a_key(void **state)
{
    (void)state;
    manta_err e = {0};
    lat_table t;
    full_table(&t);
    TU_OK_ERR(lat_table_check_complete(&t, &e));
    assert_int_equal(t.n, 56);
    lat_layer L[LAT_MAX_ARCH_LAYERS];
    manta_rng rng;
    manta_rng_seed(&rng, 3, 1);
    for (int i = 0; i < 300; i++) {
        ofa_arch a;
        if (i == 0)
            stereo_arch_max(&sp, &a);
        else if (i == 1)
            stereo_arch_min(&sp, &a);
        else
            stereo_arch_sample(&sp, &rng, &a);
        int n = 0;
        TU_OK_ERR(lat_stereo_arch_layers(&sp, &a, L, &n, &e));
        double sum = t.overhead_ms;
        int stems = 0, corr = 0;
        for (int j = 0; j < n; j++) {
            const lat_entry *en = lat_table_find(&t, L[j].key);
            if (!en)
                fail_msg("layer %s: key '%s' not enumerated", L[j].where, L[j].key);
            sum += en->st.p10_ms;
            stems += L[j].type == LAT_STEM;
            corr += L[j].type == LAT_CORR;
        }
        assert_int_equal(stems, 2); /* both views */
        assert_int_equal(corr, 1);  /* one fused kernel */
        /* 2 stems, the shared blocks twice, corr, redir, concat, coarsest prediction, 5 a level */
        int blocks = 0, shared = 0;
        for (int u = 0; u < sp.n_units; u++) {
            blocks += a.d[u];
            shared += u < sp.corr_after_unit ? a.d[u] : 0;
        }
        assert_int_equal(n, 2 + blocks + shared + 3 + 1 + 5 * sp.n_levels);
        double pred = 0;
        TU_OK_ERR(lat_predict(&t, &a, &pred, &e));
        assert_true(fabs(pred - sum) < 1e-12);
    }
    lat_table_free(&t);
}

static void test_keys_are_the_graph_layers(void **state)
{
    (void)state;
    manta_err e = {0};
    manta_rng rng;
    manta_rng_seed(&rng, 4, 1);
    lat_layer L[LAT_MAX_ARCH_LAYERS];
    for (int i = 0; i < 20; i++) {
        ofa_arch a;
        stereo_arch_sample(&sp, &rng, &a);
        int n = 0, nl = 0, first[LAT_MAX_ARCH_LAYERS + 1];
        TU_OK_ERR(lat_stereo_arch_layers(&sp, &a, L, &n, &e));
        xgraph g;
        const synth_opts so = {1, i % 2 == 0};
        TU_OK_ERR(prof_synth_stereo_graph(&sp, &a, &so, &g, first, &nl, &e));
        assert_int_equal(nl, n);
        assert_int_equal(first[0], 0);
        assert_int_equal(first[n], g.n_ops);
        for (int j = 0; j < n; j++) {
            assert_true(first[j + 1] > first[j]);
            /* the layer's last operator writes a tensor of the layer's output shape */
            const xg_tensor *o = &g.tensors[g.ops[first[j + 1] - 1].out];
            assert_int_equal(o->shape[1], L[j].out_h);
            assert_int_equal(o->shape[2], L[j].out_w);
            assert_int_equal(o->shape[3], L[j].out_c);
        }
        assert_int_equal(g.n_inputs, 2);
        assert_int_equal(g.n_outputs, 1);
        TU_OK_ERR(xgraph_validate(&g, &e));
        xgraph_free(&g);
    }
}

static void test_one_layer_graphs(void **state)
{
    (void)state;
    manta_err e = {0};
    lat_layer *keys = NULL;
    size_t n = 0;
    TU_OK_ERR(lat_stereo_enumerate(&sp, &keys, &n, &e));
    for (size_t i = 0; i < n; i++) {
        xgraph g;
        const synth_opts so = {i, false};
        manta_status st = prof_synth_stereo_layer_graph(&keys[i], &so, &g, &e);
        if (st != MANTA_OK)
            fail_msg("'%s': %s", keys[i].key, e.msg);
        assert_int_equal(g.n_inputs, keys[i].n_in);
        xgraph_free(&g);
    }
    free(keys);
}

static void test_cover_archs(void **state)
{
    (void)state;
    manta_err e = {0};
    ofa_arch *archs = NULL;
    size_t na = 0;
    TU_OK_ERR(lat_stereo_cover_archs(&sp, 2, 9, &archs, &na, &e));
    lat_table t;
    full_table(&t);
    long *count = calloc(t.n, sizeof *count);
    assert_non_null(count);
    lat_layer L[LAT_MAX_ARCH_LAYERS];
    for (size_t i = 0; i < na; i++) {
        int n = 0;
        TU_OK_ERR(lat_stereo_arch_layers(&sp, &archs[i], L, &n, &e));
        for (int j = 0; j < n; j++)
            count[lat_table_find(&t, L[j].key) - t.entry]++;
    }
    for (size_t k = 0; k < t.n; k++)
        if (count[k] < 2)
            fail_msg("'%s' in %ld sub-networks", t.entry[k].key, count[k]);
    free(count);
    free(archs);
    lat_table_free(&t);
}

static void test_round_trip_and_refusals(void **state)
{
    (void)state;
    manta_err e = {0};
    lat_table t, back;
    full_table(&t);
    TU_OK_ERR(lat_table_set_meta(&t, "dev", "cpu", "cc", "2026-01-01T00:00:00Z", &e));
    char path[512], cpath[512];
    tu_tmpdir_path(&dir, "stereo.json", path, sizeof path);
    TU_OK_ERR(lat_table_save(&t, path, &e));
    TU_OK_ERR(lat_table_load_stereo(path, &sp, &back, &e));
    assert_true(back.stereo);
    assert_int_equal(back.n, t.n);
    ofa_arch a;
    stereo_arch_max(&sp, &a);
    double p1 = 0, p2 = 0;
    TU_OK_ERR(lat_predict(&t, &a, &p1, &e));
    TU_OK_ERR(lat_predict(&back, &a, &p2, &e));
    assert_true(p1 == p2);
    lat_table_free(&back);

    /* for a classification space, or another stereo space: refused */
    ofa_space cls;
    ofa_space_cpu_default(&cls);
    assert_int_equal(lat_table_load(path, &cls, &back, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "made for space 'stereo-tiny'"));
    stereo_space other;
    stereo_space_cpu(&other);
    assert_int_equal(lat_table_load_stereo(path, &other, &back, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "not 'stereo-cpu'"));
    /* the same name, another spec: refused by the hash */
    other = sp;
    other.redir_width = 8;
    assert_int_equal(lat_table_load_stereo(path, &other, &back, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "differs"));

    /* a classification table loaded for the stereo space: refused */
    lat_table c;
    TU_OK_ERR(lat_table_init(&c, &cls, &e));
    tu_tmpdir_path(&dir, "cls.json", cpath, sizeof cpath);
    TU_OK_ERR(lat_table_save(&c, cpath, &e));
    assert_int_equal(lat_table_load_stereo(cpath, &sp, &back, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "made for space 'cpu-default'"));
    lat_table_free(&c);
    lat_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_layer_has_a_key),
        cmocka_unit_test(test_keys_are_the_graph_layers),
        cmocka_unit_test(test_one_layer_graphs),
        cmocka_unit_test(test_cover_archs),
        cmocka_unit_test(test_round_trip_and_refusals),
    };
    return cmocka_run_group_tests_name("stereo latency table", tests, setup, teardown);
}
