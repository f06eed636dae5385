/* The stereo export's operators end to end: the correlation pattern of
 * xgraph_add_correlation() against the training side's definition
 * (runtime/nn/correlation.h), and random stereo graphs (two inputs, several
 * outputs: shared encoder, correlation, concatenations, transposed
 * convolution, leaky ReLU, upsampling, slice) written as .tflite and run by the
 * engine, fused and generic, against the graph's double reference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "common/xgrand.h"
#include "engine/engine.h"
#include "export/tflite.h"

#define RTOL 1e-5

static size_t count4(const xg_tensor *t)
{
    return (size_t)t->shape[0] * t->shape[1] * t->shape[2] * t->shape[3];
}

static float *rand_floats(manta_rng *rng, size_t n)
{
    float *p = malloc(n * sizeof *p);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = 2.0f * manta_rng_uniform(rng) - 1.0f;
    return p;
}

static double *to_doubles(const float *x, size_t n)
{
    double *d = tu_doubles(n);
    for (size_t i = 0; i < n; i++)
        d[i] = x[i];
    return d;
}

/* DispNetC's correlation as runtime/nn/correlation.h defines it (NCHW there):
 *   out[b, i, y, x] = (1/C) * sum_c fl[b, c, y, x] * fr[b, c, y, x - i*stride],
 * 0 where x - i*stride < 0; here with NHWC tensors and the displacement last. */
static void direct_correlation(const float *fl, const float *fr, int n, int h, int w, int c,
                               int max_disp, int stride, double *out)
{
    const int D = max_disp / stride + 1;
    for (int b = 0; b < n; b++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                for (int i = 0; i < D; i++) {
                    const int xr = x - i * stride;
                    double s = 0;
                    for (int ch = 0; xr >= 0 && ch < c; ch++)
                        s += (double)fl[(((size_t)b * h + y) * w + x) * c + ch] *
                             fr[(((size_t)b * h + y) * w + xr) * c + ch];
                    out[(((size_t)b * h + y) * w + x) * D + i] = s / c;
                }
}

/* A graph holding only the correlation of its two inputs. */
static int corr_graph(xgraph *g, int n, int h, int w, int c, int max_disp, int stride)
{
    manta_err err;
    const int shape[4] = {n, h, w, c};
    memset(g, 0, sizeof *g);
    g->inputs[0] = xgraph_add_tensor(g, 4, shape, "left", &err);
    g->inputs[1] = xgraph_add_tensor(g, 4, shape, "right", &err);
    g->n_inputs = 2;
    const int out =
        xgraph_add_correlation(g, g->inputs[0], g->inputs[1], max_disp, stride, "corr", &err);
    assert_true(out >= 0);
    g->n_outputs = 1;
    g->outputs[0] = out;
    g->input = g->logits = g->output = -1;
    assert_int_equal(xgraph_validate(g, &err), MANTA_OK);
    return out;
}

static void test_correlation_pattern_is_the_definition(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 501, 1);
    for (int t = 0; t < 10; t++) {
        const int n = tu_rand_int(&rng, 1, 2), h = tu_rand_int(&rng, 1, 5);
        const int w = tu_rand_int(&rng, 1, 12), c = tu_rand_int(&rng, 1, 20);
        const int stride = tu_rand_int(&rng, 1, 3), max_disp = tu_rand_int(&rng, 0, 10);
        const int D = max_disp / stride + 1;
        xgraph g;
        manta_err err;
        const int out = corr_graph(&g, n, h, w, c, max_disp, stride);
        /* the form: PAD, (SLICE, MUL, MEAN_C) per displacement, CONCAT */
        assert_int_equal(g.n_ops, 3 * D + 2);
        assert_int_equal(g.ops[0].kind, XG_PAD);
        assert_int_equal(g.ops[0].pad[2], (D - 1) * stride);
        for (int i = 0; i < D; i++) {
            assert_int_equal(g.ops[1 + 3 * i].kind, XG_SLICE);
            assert_int_equal(g.ops[1 + 3 * i].begin[2], (D - 1 - i) * stride);
            assert_int_equal(g.ops[2 + 3 * i].kind, XG_MUL);
            assert_int_equal(g.ops[3 + 3 * i].kind, XG_MEAN_C);
        }
        assert_int_equal(g.ops[g.n_ops - 1].kind, XG_CONCAT);
        assert_int_equal(g.tensors[out].shape[3], D);
        const size_t nf = (size_t)n * h * w * c, no = (size_t)n * h * w * D;
        float *l = rand_floats(&rng, nf), *r = rand_floats(&rng, nf), *ref = malloc(no * 4);
        double *want = tu_doubles(no);
        assert_non_null(ref);
        const float *ins[2] = {l, r};
        assert_int_equal(xgraph_reference_tensors(&g, ins, 1, &out, &ref, &err), MANTA_OK);
        direct_correlation(l, r, n, h, w, c, max_disp, stride, want);
        double *got = to_doubles(ref, no);
        tu_assert_close(got, want, no, RTOL, "correlation pattern vs definition");
        free(l), free(r), free(ref), free(want), free(got);
        xgraph_free(&g);
    }
}

/* The model loaded with @p ops, prepared in an exact arena. */
typedef struct run {
    mengine_model m;
    mengine e;
    void *arena;
    mengine_stats s;
} run;

static void run_open(run *r, const uint8_t *model, size_t size, const mengine_op_resolver *ops)
{
    char msg[256];
    size_t need;
    memset(r, 0, sizeof *r);
    if (mengine_model_load_ops(&r->m, model, size, ops, NULL, msg, sizeof msg) != MENGINE_OK)
        fail_msg("load: %s", msg);
    const size_t ws = mengine_plan_work_size(&r->m);
    void *work = malloc(ws);
    assert_non_null(work);
    assert_int_equal(mengine_arena_size(&r->m, work, ws, &need, msg, sizeof msg), MENGINE_OK);
    free(work);
    r->arena = aligned_alloc(MENGINE_ARENA_ALIGN, (need + 15) & ~(size_t)15);
    assert_non_null(r->arena);
    assert_int_equal(mengine_init(&r->e, &r->m, r->arena, need), MENGINE_OK);
    if (mengine_prepare(&r->e, msg, sizeof msg) != MENGINE_OK)
        fail_msg("prepare: %s", msg);
    assert_int_equal(mengine_get_stats(&r->e, &r->s), MENGINE_OK);
}

/* Run with @p inputs (one per model input) and return output @p k as doubles. */
static double *run_output(run *r, const float *const *inputs, size_t k)
{
    for (size_t i = 0; i < mengine_input_count(&r->e); i++) {
        mengine_view v;
        assert_int_equal(mengine_input(&r->e, i, &v), MENGINE_OK);
        memcpy(v.data, inputs[i], v.count * sizeof *v.data);
    }
    assert_int_equal(mengine_invoke(&r->e), MENGINE_OK);
    mengine_view v;
    assert_int_equal(mengine_output(&r->e, k, &v), MENGINE_OK);
    double *y = tu_doubles(v.count);
    for (size_t i = 0; i < v.count; i++)
        y[i] = v.cdata[i];
    return y;
}

static void run_close(run *r) { free(r->arena); }

/* Every operator but the fused correlation. */
static mengine_op_resolver generic_ops(const mengine_op **table)
{
    size_t n = 0;
    for (size_t i = 0; i < mengine_all_ops.n_ops; i++)
        if (mengine_all_ops.ops[i] != &mengine_op_correlation)
            table[n++] = mengine_all_ops.ops[i];
    const mengine_op_resolver r = {table, n};
    return r;
}

/* Index of the graph tensor named @p name. */
static int tensor_named(const xgraph *g, const char *name)
{
    for (int t = 0; t < g->n_tensors; t++)
        if (!strcmp(g->tensors[t].name, name))
            return t;
    fail_msg("no tensor '%s'", name);
    return -1;
}

/* Write @p g, run it fused and generic, compare both with the reference. */
static void round_trip(const xgraph *g, manta_rng *rng, int expect_fused)
{
    manta_err err;
    uint8_t *model;
    size_t size;
    tflite_report rep;
    assert_int_equal(tflite_write(g, &model, &size, &rep, &err), MANTA_OK);
    assert_int_equal(rep.fused_correlations, (size_t)expect_fused);
    const mengine_op *table[64];
    const mengine_op_resolver gen = generic_ops(table);
    run fused, plain;
    run_open(&fused, model, size, &mengine_all_ops);
    run_open(&plain, model, size, &gen);
    assert_int_equal(fused.s.fused_correlations, (size_t)expect_fused);
    assert_int_equal(plain.s.fused_correlations, 0);
    assert_int_equal(mengine_input_count(&fused.e), (size_t)g->n_inputs);
    assert_int_equal(mengine_output_count(&fused.e), (size_t)g->n_outputs);
    /* fused: the padded features and the per-displacement maps get no memory */
    static const char *const elided[] = {"corr/pad", "corr/d0", "corr/d0/mul", "corr/d0/mean"};
    for (size_t i = 0; i < sizeof elided / sizeof elided[0]; i++) {
        mengine_view v;
        assert_int_equal(mengine_tensor(&fused.e, (size_t)tensor_named(g, elided[i]), &v),
                         MENGINE_OK);
        assert_true(expect_fused ? v.data == NULL : v.data != NULL);
        assert_int_equal(mengine_tensor(&plain.e, (size_t)tensor_named(g, elided[i]), &v),
                         MENGINE_OK);
        assert_non_null(v.data);
    }
    if (expect_fused)
        assert_true(fused.s.activation_bytes <= plain.s.activation_bytes);
    float *ins[XG_MAX_IO];
    for (int k = 0; k < g->n_inputs; k++)
        ins[k] = rand_floats(rng, count4(&g->tensors[g->inputs[k]]));
    for (int k = 0; k < g->n_outputs; k++) {
        const int t = g->outputs[k];
        const size_t n = count4(&g->tensors[t]);
        float *ref = malloc(n * sizeof *ref);
        assert_non_null(ref);
        assert_int_equal(xgraph_reference_tensors(g, (const float *const *)ins, 1, &t, &ref, &err),
                         MANTA_OK);
        double *want = to_doubles(ref, n);
        double *a = run_output(&fused, (const float *const *)ins, (size_t)k);
        double *b = run_output(&plain, (const float *const *)ins, (size_t)k);
        tu_assert_close(a, want, n, RTOL, "fused engine vs reference");
        tu_assert_close(b, want, n, RTOL, "generic engine vs reference");
        tu_assert_close(a, b, n, RTOL, "fused vs generic");
        free(ref), free(want), free(a), free(b);
    }
    double dmax, dprob;
    assert_int_equal(tflite_check(g, model, size, 7, &dmax, &dprob, &err), MANTA_OK);
    assert_true(dmax < 1e-4);
    assert_true(dprob == -1.0);
    for (int k = 0; k < g->n_inputs; k++)
        free(ins[k]);
    run_close(&fused);
    run_close(&plain);
    free(model);
}

static void test_correlation_graph_round_trip(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 502, 1);
    for (int t = 0; t < 6; t++) {
        xgraph g;
        corr_graph(&g, tu_rand_int(&rng, 1, 2), tu_rand_int(&rng, 1, 6), tu_rand_int(&rng, 1, 14),
                   tu_rand_int(&rng, 1, 24), tu_rand_int(&rng, 0, 12), tu_rand_int(&rng, 1, 2));
        round_trip(&g, &rng, 1);
        xgraph_free(&g);
    }
}

static void test_stereo_graph_round_trip(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 503, 1);
    for (int t = 0; t < 8; t++) {
        xgraph g;
        manta_err err;
        assert_int_equal(xgr_stereo(&g, &rng, NULL, &err), MANTA_OK);
        round_trip(&g, &rng, 1);
        xgraph_free(&g);
    }
    /* DispNetC's proportions, small: 41 displacements at 1/2 resolution */
    xgraph g;
    manta_err err;
    const xgr_stereo_opts o = {8, 48, 8, 40, 1};
    assert_int_equal(xgr_stereo(&g, &rng, &o, &err), MANTA_OK);
    round_trip(&g, &rng, 1);
    xgraph_free(&g);
}

/* The graph checks of the stereo kinds. */
static void test_graph_rules(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 504, 1);
    manta_err err;
    xgraph g;
    const xgr_stereo_opts o = {6, 8, 3, 2, 1};
    assert_int_equal(xgr_stereo(&g, &rng, &o, &err), MANTA_OK);
    assert_int_equal(xgraph_validate(&g, &err), MANTA_OK);
    xg_op *sl = NULL;
    for (int i = 0; i < g.n_ops; i++)
        if (g.ops[i].out == tensor_named(&g, "left.c0"))
            sl = &g.ops[i];
    assert_non_null(sl);
    sl->begin[3] = 1; /* channels 1 .. 1 + size: fits */
    assert_int_equal(xgraph_validate(&g, &err), MANTA_OK);
    sl->begin[3] = 3;
    assert_int_equal(xgraph_validate(&g, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "run past dim 3"));
    sl->begin[3] = 0;
    xg_op *up = NULL, *cat = NULL;
    for (int i = 0; i < g.n_ops; i++) {
        if (g.ops[i].kind == XG_TCONV)
            up = &g.ops[i];
        if (g.ops[i].kind == XG_CONCAT && g.ops[i].n_ins == 3)
            cat = &g.ops[i];
    }
    assert_true(up && cat);
    up->stride = 3; /* 6x8 does not come from 3x4 with stride 3 */
    assert_int_equal(xgraph_validate(&g, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "does not come from the input's 3x4"));
    up->stride = 2;
    const int keep = cat->ins[1];
    cat->ins[1] = g.inputs[1]; /* 3 channels for 1 */
    assert_int_equal(xgraph_validate(&g, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "channels"));
    cat->ins[1] = keep;
    g.outputs[1] = g.inputs[0];
    assert_int_equal(xgraph_validate(&g, &err), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(err.msg, "twice"));
    xgraph_free(&g);
    /* a classification reference refuses a graph of two inputs */
    corr_graph(&g, 1, 2, 3, 4, 2, 1);
    float x[24] = {0}, y[24];
    assert_int_equal(xgraph_reference(&g, x, y, &err), MANTA_ERR_INVALID_ARG);
    xgraph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_correlation_pattern_is_the_definition),
        cmocka_unit_test(test_correlation_graph_round_trip),
        cmocka_unit_test(test_stereo_graph_round_trip),
        cmocka_unit_test(test_graph_rules),
    };
    return cmocka_run_group_tests_name("engine stereo operators", tests, NULL, NULL);
}
