/* Synthetic graphs for the profiler and the search (profile/synth.h): a
 * sub-network's graph has exactly the operators, tensors and sizes of the one
 * the exporter extracts from a trained supernet (so the written file and the
 * engine's arena are the same size), its keyed layers' graphs add up to it,
 * every layer key of a space builds and runs in the engine; and the latency
 * agreement figures (profile/validate.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/graphcmp.h"
#include "common/testutil.h"
#include "engine/engine.h"
#include "export/tflite.h"
#include "classify/extract.h"
#include "classify/supernet.h"
#include "profile/synth.h"
#include "profile/validate.h"

/* Two units (the second with SE and a stride-1 first block), a feature-mix head,
 * odd and even resolutions (SAME and explicit PAD). */
static void tiny_space(ofa_space *s)
{
    ofa_space_cpu_default(s);
    snprintf(s->name, sizeof s->name, "tiny");
    s->classes = 3;
    s->n_res = 2;
    s->res[0] = 7;
    s->res[1] = 8;
    s->stem_width = 8;
    s->first_width = 8;
    s->n_units = 2;
    s->n_d = 2;
    s->d[0] = 1;
    s->d[1] = 2;
    s->max_depth = 2;
    s->unit[0] = (ofa_unit_spec){8, 2, NN_ACT_RELU, false};
    s->unit[1] = (ofa_unit_spec){16, 1, NN_ACT_HSWISH, true};
    s->head_expand = 16;
    s->head_mix = 12;
}

static void check_against_extract(mcl_dev *d, const ofa_space *s, int trials)
{
    ofa_supernet *n = NULL;
    TU_OK(d, ofa_supernet_create(d, s, 1, 42, &n));
    char *labels[16];
    char names[16][16];
    for (int i = 0; i < s->classes; i++) {
        snprintf(names[i], sizeof names[i], "class-%d", i);
        labels[i] = names[i];
    }
    xg_preprocess pre = {.channels = s->in_channels,
                         .mean = {0.25f},
                         .std = {0.5f},
                         .n_labels = s->classes,
                         .labels = labels};
    manta_rng rng;
    manta_rng_seed(&rng, 5, 0);
    for (int t = 0; t < trials; t++) {
        ofa_arch a;
        if (t == 0)
            ofa_arch_max(s, 0, &a);
        else if (t == 1)
            ofa_arch_min(s, 0, &a);
        else
            ofa_arch_sample(s, &rng, &a);
        TU_OK(d, ofa_supernet_set_arch(n, &a));
        manta_err e;
        manta_err_clear(&e);
        xgraph want, got;
        if (ofa_supernet_extract(n, &pre, &want, &e) != MANTA_OK)
            fail_msg("extract: %s", e.msg);
        const synth_opts so = {(uint64_t)t, t % 2 == 1};
        if (prof_synth_arch_graph(s, &a, &pre, &so, &got, &e) != MANTA_OK)
            fail_msg("synth: %s", e.msg);
        tu_assert_same_graph(&got, &want);
        uint8_t *f1 = NULL, *f2 = NULL;
        size_t s1 = 0, s2 = 0;
        tflite_report r1, r2;
        if (tflite_write(&want, &f1, &s1, &r1, &e) != MANTA_OK ||
            tflite_write(&got, &f2, &s2, &r2, &e) != MANTA_OK)
            fail_msg("tflite: %s", e.msg);
        assert_int_equal(s1, s2);
        assert_int_equal(r1.arena_bytes, r2.arena_bytes);
        assert_int_equal(r1.weights_bytes, r2.weights_bytes);
        double dl = 1, dp = 1;
        if (tflite_check(&got, f2, s2, 3, &dl, &dp, &e) != MANTA_OK)
            fail_msg("engine check: %s", e.msg);
        assert_true(dl < 1e-3);
        free(f1), free(f2);
        xgraph_free(&want);
        xgraph_free(&got);
    }
    ofa_supernet_destroy(n);
}

static void test_arch_graph_matches_extract(void **state)
{
    mcl_dev *d = *state;
    ofa_space s;
    tiny_space(&s);
    check_against_extract(d, &s, 6);
    ofa_space_cpu_default(&s);
    check_against_extract(d, &s, 3);
}

/* Ops of a layer graph without its RESHAPE tail, and (*skip) without the flatten that a
 * classifier after a feature mix needs only in its own graph (whose input is 4-D). */
static int body_ops(const ofa_space *s, const lat_layer *l, const xgraph *g, int *skip)
{
    *skip = l->type == LAT_LOGITS && s->head_mix > 0;
    return g->n_ops - *skip - (l->type == LAT_LOGITS ? 0 : l->type == LAT_MIX ? 1 : 2);
}

/* The keyed layers of a sub-network, one after the other, are its graph, op for op. */
static void test_layers_add_up_to_the_network(void **state)
{
    (void)state;
    ofa_space spaces[2];
    tiny_space(&spaces[0]);
    ofa_space_cpu_default(&spaces[1]);
    manta_rng rng;
    manta_rng_seed(&rng, 9, 0);
    for (int k = 0; k < 2; k++) {
        const ofa_space *s = &spaces[k];
        for (int t = 0; t < 8; t++) {
            ofa_arch a;
            ofa_arch_sample(s, &rng, &a);
            manta_err e;
            lat_layer L[LAT_MAX_ARCH_LAYERS];
            int nl = 0;
            assert_int_equal(lat_arch_layers(s, &a, L, &nl, &e), MANTA_OK);
            xgraph net, net2;
            const synth_opts so = {1, true};
            assert_int_equal(prof_synth_arch_graph(s, &a, NULL, &so, &net, &e), MANTA_OK);
            int first[LAT_MAX_ARCH_LAYERS + 1], n_first = 0;
            assert_int_equal(
                prof_synth_arch_graph_layers(s, &a, NULL, &so, &net2, first, &n_first, &e),
                MANTA_OK);
            assert_int_equal(n_first, nl);
            assert_int_equal(net2.n_ops, net.n_ops);
            assert_int_equal(first[nl], net.n_ops);
            xgraph_free(&net2);
            int at = 0;
            for (int i = 0; i < nl; i++) {
                assert_int_equal(first[i], at); /* layer i starts where its ops start */
                xgraph g;
                if (prof_synth_layer_graph(s, &L[i], &so, &g, &e) != MANTA_OK)
                    fail_msg("%s: %s", L[i].key, e.msg);
                int skip;
                const int m = body_ops(s, &L[i], &g, &skip);
                assert_true(at + m <= net.n_ops);
                for (int j = 0; j < m; j++) {
                    const xg_op *x = &g.ops[skip + j], *y = &net.ops[at + j];
                    assert_int_equal(x->kind, y->kind);
                    assert_int_equal(x->n_weights, y->n_weights);
                    assert_int_equal(x->act, y->act);
                    assert_memory_equal(g.tensors[x->out].shape, net.tensors[y->out].shape,
                                        sizeof(int) * 4);
                }
                at += m;
                xgraph_free(&g);
            }
            assert_int_equal(at, net.n_ops);
            xgraph_free(&net);
        }
    }
}

/* Every key of cpu-default builds, writes and runs in the engine as the reference says. */
static void test_every_key_runs(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    lat_layer *keys = NULL;
    size_t n = 0;
    manta_err e;
    assert_int_equal(lat_enumerate(&s, &keys, &n, &e), MANTA_OK);
    assert_int_equal(n, 207);
    for (size_t i = 0; i < n; i++) {
        xgraph g;
        const synth_opts so = {i, false};
        if (prof_synth_layer_graph(&s, &keys[i], &so, &g, &e) != MANTA_OK)
            fail_msg("%s: %s", keys[i].key, e.msg);
        if (i % 7 == 0 || keys[i].type != LAT_MBCONV) { /* the engine on a share of them */
            uint8_t *f = NULL;
            size_t size = 0;
            if (tflite_write(&g, &f, &size, NULL, &e) != MANTA_OK)
                fail_msg("%s: %s", keys[i].key, e.msg);
            double dl = 1, dp = 1;
            if (tflite_check(&g, f, size, 1, &dl, &dp, &e) != MANTA_OK)
                fail_msg("%s: %s", keys[i].key, e.msg);
            assert_true(dl < 1e-3);
            free(f);
        }
        xgraph_free(&g);
    }
    free(keys);
    xgraph g;
    assert_int_equal(prof_synth_empty_graph(4, 4, 3, &g, &e), MANTA_OK);
    assert_int_equal(g.n_ops, 2);
    xgraph_free(&g);
}

/* The engine's operator observer: called before every operator in order and once after the
 * last, with outputs equal to a plain invocation; the boundaries of prof_synth_arch_graph_layers()
 * are the engine's operator indices. */
typedef struct seen {
    uint32_t calls, next, bad;
} seen;

static void observe(void *ctx, uint32_t op)
{
    seen *s = ctx;
    s->bad += op != s->next;
    s->next = op + 1;
    s->calls++;
}

static void test_engine_observer(void **state)
{
    (void)state;
    ofa_space s;
    ofa_space_cpu_default(&s);
    ofa_arch a;
    ofa_arch_min(&s, 24, &a);
    xgraph g;
    manta_err e;
    const synth_opts so = {3, false};
    int first[LAT_MAX_ARCH_LAYERS + 1], nl = 0;
    assert_int_equal(prof_synth_arch_graph_layers(&s, &a, NULL, &so, &g, first, &nl, &e), MANTA_OK);
    uint8_t *f = NULL;
    size_t size = 0;
    assert_int_equal(tflite_write(&g, &f, &size, NULL, &e), MANTA_OK);
    mengine_model m;
    char msg[256];
    assert_int_equal(mengine_model_load(&m, f, size, NULL, msg, sizeof msg), MENGINE_OK);
    size_t ws = mengine_plan_work_size(&m), need = 0;
    void *work = malloc(ws);
    assert_non_null(work);
    assert_int_equal(mengine_arena_size(&m, work, ws, &need, msg, sizeof msg), MENGINE_OK);
    free(work);
    void *arena = aligned_alloc(MENGINE_ARENA_ALIGN, (need + 15) / 16 * 16);
    assert_non_null(arena);
    mengine en;
    memset(&en, 0, sizeof en);
    assert_int_equal(mengine_op_count(&en), 0); /* not initialised */
    assert_int_equal(mengine_init(&en, &m, arena, need), MENGINE_OK);
    seen sn = {0, 0, 0};
    assert_int_equal(mengine_invoke_observed(&en, observe, &sn), MENGINE_ERR_STATE);
    assert_int_equal(mengine_prepare(&en, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(mengine_op_count(&en), (size_t)g.n_ops);
    assert_int_equal(first[nl], g.n_ops);
    mengine_view in, out;
    assert_int_equal(mengine_input(&en, 0, &in), MENGINE_OK);
    /* the input is filled before each run: element-wise operators may write over it */
    for (size_t i = 0; i < in.count; i++)
        in.data[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    assert_int_equal(mengine_invoke(&en), MENGINE_OK);
    assert_int_equal(mengine_output(&en, 0, &out), MENGINE_OK);
    float *want = malloc(out.count * sizeof *want);
    assert_non_null(want);
    memcpy(want, out.cdata, out.count * sizeof *want);
    assert_int_equal(mengine_invoke_observed(&en, NULL, NULL), MENGINE_ERR_ARG);
    for (size_t i = 0; i < in.count; i++)
        in.data[i] = (float)((i * 37) % 11) / 11.0f - 0.5f;
    assert_int_equal(mengine_invoke_observed(&en, observe, &sn), MENGINE_OK);
    assert_int_equal(sn.calls, (uint32_t)g.n_ops + 1);
    assert_int_equal(sn.bad, 0);
    assert_memory_equal(want, out.cdata, out.count * sizeof *want);
    free(want);
    free(arena);
    free(f);
    xgraph_free(&g);
}

static void test_agreement_figures(void **state)
{
    (void)state;
    manta_err e;
    lat_agreement ag;
    const double meas[5] = {1, 2, 3, 4, 5};
    assert_int_equal(lat_agreement_compute(meas, meas, 5, 0.1, &ag, &e), MANTA_OK);
    assert_true(ag.mean_abs_pct == 0 && ag.max_abs_pct == 0 && ag.rmse == 0);
    assert_true(ag.within == 1 && fabs(ag.kendall_tau - 1) < 1e-12);
    const double rev[5] = {5, 4, 3, 2, 1};
    assert_int_equal(lat_agreement_compute(rev, meas, 5, 0.1, &ag, &e), MANTA_OK);
    assert_true(fabs(ag.kendall_tau + 1) < 1e-12);
    /* +5 %, -20 %, +10 % (exactly at the tolerance), 0, 0 */
    const double pred[5] = {1.05, 1.6, 3.3, 4, 5};
    assert_int_equal(lat_agreement_compute(pred, meas, 5, 0.1, &ag, &e), MANTA_OK);
    assert_true(fabs(ag.mean_abs_pct - 7.0) < 1e-9);
    assert_true(fabs(ag.max_abs_pct - 20.0) < 1e-9);
    assert_true(fabs(ag.mean_pct - (5 - 20 + 10) / 5.0) < 1e-9);
    assert_true(fabs(ag.within - 0.8) < 1e-12);
    assert_true(fabs(ag.max_abs - 0.4) < 1e-9);
    assert_true(fabs(ag.rmse - sqrt((0.0025 + 0.16 + 0.09) / 5)) < 1e-9);
    assert_true(fabs(ag.kendall_tau - 1) < 1e-12); /* the order is kept */
    /* ties: tau-b = (C - D) / sqrt((P - Tx)(P - Ty)) */
    const double tp[4] = {1, 1, 2, 3}, tm[4] = {1, 2, 3, 4};
    assert_int_equal(lat_agreement_compute(tp, tm, 4, 0.1, &ag, &e), MANTA_OK);
    assert_true(fabs(ag.kendall_tau - 5.0 / sqrt(5.0 * 6.0)) < 1e-12);
    /* refused */
    assert_int_equal(lat_agreement_compute(meas, meas, 1, 0.1, &ag, &e), MANTA_ERR_INVALID_ARG);
    const double bad[2] = {1, 0};
    assert_int_equal(lat_agreement_compute(meas, bad, 2, 0.1, &ag, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "measurement 1"));
    const double nan2[2] = {NAN, 1};
    assert_int_equal(lat_agreement_compute(nan2, meas, 2, 0.1, &ag, &e), MANTA_ERR_INVALID_ARG);
    /* median */
    const double v[6] = {5, 1, 4, 2, 3, 6};
    assert_true(lat_median(v, 5) == 3);
    assert_true(lat_median(v, 6) == 3.5);
    assert_true(v[0] == 5); /* not reordered */
    assert_true(lat_median(v, 0) == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arch_graph_matches_extract),
        cmocka_unit_test(test_layers_add_up_to_the_network),
        cmocka_unit_test(test_every_key_runs),
        cmocka_unit_test(test_engine_observer),
        cmocka_unit_test(test_agreement_figures),
    };
    return cmocka_run_group_tests(tests, tu_setup_device, tu_teardown_device);
}
