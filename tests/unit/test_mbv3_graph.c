/* The one MobileNetV3 graph builder (export/mbv3_graph.h): the graph the exporter
 * extracts from a supernet and the profiler's synthetic graph of the same sub-network
 * have the same operators, options, tensors and names, and the engine plans the same
 * arena and file for both, over random sub-networks of the built-in spaces; each request
 * describes its operator's weights, the source's values land in that operator (the
 * squeeze-and-excite's h-sigmoid folded), and a source's error stops the build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/graphcmp.h"
#include "common/testutil.h"
#include "export/mbv3_graph.h"
#include "export/tflite.h"
#include "classify/extract.h"
#include "classify/supernet.h"
#include "profile/latency_table.h"
#include "profile/synth.h"

/* The engine's plan of a graph: arena, file and weight bytes. */
static tflite_report plan(const xgraph *g)
{
    manta_err e;
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report r;
    if (tflite_write(g, &data, &size, &r, &e) != MANTA_OK)
        fail_msg("tflite: %s", e.msg);
    free(data);
    return r;
}

/* `trials` sub-networks of space `name` (the largest, the smallest, then random):
 * extracted from a supernet and synthesised, the same graph and the same plan. */
static void extract_matches_synth(mcl_dev *d, const char *name, int trials)
{
    ofa_space s;
    manta_err e;
    if (ofa_space_load(name, &s, &e) != MANTA_OK)
        fail_msg("%s: %s", name, e.msg);
    ofa_supernet *n = NULL;
    TU_OK(d, ofa_supernet_create(d, &s, 1, 7, &n));
    char **labels = calloc((size_t)s.classes, sizeof *labels);
    assert_non_null(labels);
    labels[0] = "zero";
    labels[1] = "one"; /* the rest NULL: written as "" */
    const xg_preprocess pre = {.channels = s.in_channels,
                               .mean = {0.5f, 0.25f, 0.125f},
                               .std = {2, 3, 4},
                               .n_labels = s.classes,
                               .labels = labels};
    manta_rng rng;
    manta_rng_seed(&rng, 17, 0);
    for (int t = 0; t < trials; t++) {
        ofa_arch a;
        if (t == 0)
            ofa_arch_max(&s, 0, &a);
        else if (t == 1)
            ofa_arch_min(&s, 0, &a);
        else
            ofa_arch_sample(&s, &rng, &a);
        TU_OK(d, ofa_supernet_set_arch(n, &a));
        xgraph want, got;
        if (ofa_supernet_extract(n, &pre, &want, &e) != MANTA_OK)
            fail_msg("%s trial %d: extract: %s", name, t, e.msg);
        const synth_opts so = {(uint64_t)t, true};
        if (prof_synth_arch_graph(&s, &a, &pre, &so, &got, &e) != MANTA_OK)
            fail_msg("%s trial %d: synth: %s", name, t, e.msg);
        tu_assert_same_graph(&want, &got);
        const tflite_report p = plan(&want), q = plan(&got);
        assert_int_equal(p.arena_bytes, q.arena_bytes);
        assert_int_equal(p.activation_bytes, q.activation_bytes);
        assert_int_equal(p.file_bytes, q.file_bytes);
        assert_int_equal(p.weights_bytes, q.weights_bytes);
        xgraph_free(&want);
        xgraph_free(&got);
    }
    ofa_supernet_destroy(n);
    free(labels);
}

static void test_extract_matches_synth(void **state)
{
    extract_matches_synth(*state, "cpu-default", 30);
    extract_matches_synth(*state, "mbv3-w1.0", 30);
}

/* A source that checks each request and fills its weights with the request's number
 * and its bias with minus it; it fails at request `fail_at` (0: never). */
typedef struct recorder {
    int n;
    int fail_at;
} recorder;

static manta_status record(void *ctx, const mbv3_request *r, manta_err *err)
{
    recorder *c = ctx;
    const mbv3_layer *l = r->layer;
    c->n++;
    if (c->n == c->fail_at)
        return manta_err_set(err, MANTA_ERR_IO, "source failed at %d", c->n);
    const size_t per_out =
        r->kind == XG_DWCONV ? (size_t)r->k * r->k : (size_t)r->k * r->k * (size_t)r->cin;
    assert_int_equal(r->n_weights, (size_t)r->cout * per_out);
    assert_true(r->kind != XG_DWCONV || r->cin == r->cout);
    assert_int_equal(r->bias == NULL, l->type == MBV3_MIX);
    assert_int_equal(r->n_bias, r->bias ? (size_t)r->cout : 0);
    const bool after_se = r->part == MBV3_PROJECT && l->se;
    assert_true(r->in_scale == (after_se ? 1.0f / 6.0f : 1.0f));
    switch (l->type) {
    case MBV3_STEM:
    case MBV3_HEAD: assert_int_equal(r->part, MBV3_CONV); break;
    case MBV3_BLOCK:
        assert_true(r->part >= MBV3_EXPAND && r->part <= MBV3_PROJECT);
        assert_true(r->part != MBV3_EXPAND || l->has_expand);
        assert_true((r->part != MBV3_SE_REDUCE && r->part != MBV3_SE_EXPAND) || l->se);
        assert_int_equal(r->k, r->part == MBV3_DW ? l->kernel : 1);
        break;
    case MBV3_MIX:
    case MBV3_CLASSIFIER:
        assert_int_equal(r->part, MBV3_FC);
        assert_int_equal(r->kind, XG_FC);
        break;
    case MBV3_POOL: fail_msg("a request for the pool");
    }
    for (size_t i = 0; i < r->n_weights; i++) {
        assert_true(r->weights[i] == 0.0f);
        r->weights[i] = (float)c->n;
    }
    for (size_t i = 0; i < r->n_bias; i++) {
        assert_true(r->bias[i] == 0.0f);
        r->bias[i] = -(float)c->n;
    }
    return MANTA_OK;
}

/* Every operator with weights got one request, in graph order, and holds its values; the
 * squeeze-and-excite expand's bias has the h-sigmoid's + 3. */
static void test_requests_fill_operators(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_mbv3_w10(&s);
    manta_rng rng;
    manta_rng_seed(&rng, 3, 0);
    for (int t = 0; t < 4; t++) {
        ofa_arch a;
        ofa_arch_sample(&s, &rng, &a);
        recorder rec = {0, 0};
        const mbv3_source src = {record, &rec};
        manta_err e;
        xgraph g;
        mbv3_layer L[MBV3_MAX_LAYERS];
        int first[MBV3_MAX_LAYERS + 1], nl = 0, m = 0;
        if (mbv3_arch_graph(&s, &a, NULL, &src, &g, first, &nl, &e) != MANTA_OK)
            fail_msg("%s", e.msg);
        assert_int_equal(mbv3_arch_layers(&s, &a, L, &m, &e), MANTA_OK);
        assert_int_equal(nl, m);
        assert_int_equal(first[nl], g.n_ops);
        int k = 0;
        for (int i = 0; i < g.n_ops; i++) {
            const xg_op *op = &g.ops[i];
            if (!op->weights)
                continue;
            k++;
            const bool se_expand = strstr(g.tensors[op->out].name, ".se.expand") != NULL;
            for (size_t j = 0; j < op->n_weights; j++)
                assert_true(op->weights[j] == (float)k);
            for (size_t j = 0; j < op->n_bias; j++)
                assert_true(op->bias[j] == -(float)k + (se_expand ? 3.0f : 0.0f));
        }
        assert_int_equal(k, rec.n);
        xgraph_free(&g);
    }
}

/* No source: every value 0 but the squeeze-and-excite expand's bias, 3. */
static void test_no_source_is_zeros(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_mbv3_w10(&s);
    ofa_arch a;
    ofa_arch_min(&s, 0, &a);
    manta_err e;
    xgraph g;
    assert_int_equal(mbv3_arch_graph(&s, &a, NULL, NULL, &g, NULL, NULL, &e), MANTA_OK);
    int se = 0;
    for (int i = 0; i < g.n_ops; i++) {
        const xg_op *op = &g.ops[i];
        const bool se_expand = strstr(g.tensors[op->out].name, ".se.expand") != NULL;
        se += se_expand;
        for (size_t j = 0; j < op->n_weights; j++)
            assert_true(op->weights[j] == 0.0f);
        for (size_t j = 0; j < op->n_bias; j++)
            assert_true(op->bias[j] == (se_expand ? 3.0f : 0.0f));
    }
    assert_true(se > 0);
    assert_int_equal(g.pre.resolution, a.r);
    assert_int_equal(g.pre.channels, 3);
    assert_int_equal(g.pre.n_labels, 0);
    xgraph_free(&g);
}

/* A source's error stops the build with its status and message and leaves no graph; an
 * architecture not of the space is refused. */
static void test_errors(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    ofa_arch_max(&s, 0, &a);
    manta_err e;
    xgraph g;
    const int fail_at[] = {1, 12};
    for (int i = 0; i < 2; i++) {
        const int at = fail_at[i];
        recorder rec = {0, at};
        const mbv3_source src = {record, &rec};
        manta_err_clear(&e);
        assert_int_equal(mbv3_arch_graph(&s, &a, NULL, &src, &g, NULL, NULL, &e), MANTA_ERR_IO);
        assert_int_equal(rec.n, at);
        assert_non_null(strstr(e.msg, "source failed"));
        assert_int_equal(g.n_ops, 0);
        assert_int_equal(g.n_tensors, 0);
        assert_null(g.ops);
        assert_null(g.tensors);
    }
    a.ks[0] = 4;
    assert_int_equal(mbv3_arch_graph(&s, &a, NULL, NULL, &g, NULL, NULL, &e),
                     MANTA_ERR_INVALID_ARG);
    assert_null(g.ops);
    mbv3_layer L[MBV3_MAX_LAYERS];
    int n = -1;
    assert_int_equal(mbv3_arch_layers(&s, &a, L, &n, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(n, 0);
}

/* The layers carry their slots, and the keyed layers of latency_table.h are they. */
static void test_layers(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    ofa_arch_uniform(&s, 5, 4, 2, 28, &a);
    a.d[1] = 4;
    manta_err e;
    mbv3_layer L[MBV3_MAX_LAYERS];
    lat_layer K[LAT_MAX_ARCH_LAYERS];
    int n = 0, m = 0;
    assert_int_equal(mbv3_arch_layers(&s, &a, L, &n, &e), MANTA_OK);
    assert_int_equal(lat_arch_layers(&s, &a, K, &m, &e), MANTA_OK);
    assert_int_equal(n, 2 + 2 + 4 + 2 + 2 + 2 + 3);
    assert_int_equal(m, n);
    const int slots[] = {-1, 0, 1, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17};
    for (int i = 0; i < n; i++) {
        assert_string_equal(L[i].where, K[i].where);
        assert_int_equal(L[i].in_c, K[i].in_c);
        assert_int_equal(L[i].out_h, K[i].out_h);
        assert_int_equal(L[i].mid, K[i].mid);
        if (i >= 1 && i <= 13) {
            assert_int_equal(L[i].type, MBV3_BLOCK);
            assert_int_equal(L[i].slot, slots[i - 1]);
        } else
            assert_int_equal(L[i].slot, -1);
    }
    assert_string_equal(L[1].where, "first");
    assert_false(L[1].has_expand);
    assert_string_equal(L[6].where, "u2.b3");
    assert_int_equal(L[n - 1].type, MBV3_CLASSIFIER);
    assert_int_equal(L[n - 1].out_c, s.classes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_extract_matches_synth),
        cmocka_unit_test(test_requests_fill_operators),
        cmocka_unit_test(test_no_source_is_zeros),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_layers),
    };
    return cmocka_run_group_tests(tests, tu_setup_device, tu_teardown_device);
}
