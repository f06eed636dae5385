/* Whole models: a small mobile-style network end to end against the composed
 * references, the memory planner (no live overlap, in-place and reshape
 * sharing, offline plans, exact arena size), call order, the FlatBuffers
 * builder, and flatc reading our files with models/tflite_subset.fbs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil_host.h"
#include "core/fileio.h"
#include "common/tflbuild.h"
#include "engine/kernels_impl.h"
#include "export/flatbuf.h"
#include "ref/ref_engine.h"

static uint32_t r32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* A constant with random values in [-0.5, 0.5): float for the model, double for the reference. */
typedef struct param {
    float *f;
    double *d;
    size_t n;
} param;

static param param_new(manta_rng *rng, size_t n)
{
    param p = {malloc(n * sizeof(float)), malloc(n * sizeof(double)), n};
    assert_true(p.f && p.d);
    tb_rand(rng, p.f, p.d, n, -0.5, 0.5);
    return p;
}

static void param_free(param *p) { free(p->f), free(p->d); }

/* ---- the multi-operator network ---- */

enum { H = 15, W = 15, C0 = 3, C1 = 8, SE = 4, C2 = 12, CLASSES = 10 };

typedef struct net {
    param w1, b1, wd, bd, ws1, bs1, ws2, bs2, wp, bp, wf, bf;
    tb_model m;
    int32_t t_in, t_c1, t_d1, t_se3, t_se4, t_m, t_a, t_p, t_h, t_out;
} net;

static void net_build(net *n, manta_rng *rng)
{
    tb_model *m = &n->m;
    n->w1 = param_new(rng, C1 * 3 * 3 * C0), n->b1 = param_new(rng, C1);
    n->wd = param_new(rng, 3 * 3 * C1), n->bd = param_new(rng, C1);
    n->ws1 = param_new(rng, SE * C1), n->bs1 = param_new(rng, SE);
    n->ws2 = param_new(rng, C1 * SE), n->bs2 = param_new(rng, C1);
    n->wp = param_new(rng, C2 * 2 * C1), n->bp = param_new(rng, C2);
    n->wf = param_new(rng, CLASSES * C2), n->bf = param_new(rng, CLASSES);
    tb_init(m);
    const int32_t d_in[4] = {1, H, W, C0}, d_w1[4] = {C1, 3, 3, C0}, d_c1[1] = {C1};
    const int32_t d_act[4] = {1, 8, 8, C1}, d_wd[4] = {1, 3, 3, C1}, d_se[4] = {1, 1, 1, C1};
    const int32_t d_ws1[2] = {SE, C1}, d_se1[4] = {1, 1, 1, SE}, d_ws2[2] = {C1, SE};
    const int32_t d_se2[2] = {1, C1}, se_shape[4] = {1, 1, 1, C1}, d_cat[4] = {1, 8, 8, 2 * C1};
    const int32_t d_wp[4] = {C2, 1, 1, 2 * C1}, d_c2[1] = {C2}, d_p[4] = {1, 8, 8, C2};
    const int32_t d_pool[4] = {1, 4, 4, C2}, d_g[2] = {1, C2}, d_wf[2] = {CLASSES, C2};
    const int32_t d_cls[1] = {CLASSES}, d_out[2] = {1, CLASSES}, axes[2] = {1, 2};
    const int32_t d_se_b[1] = {SE};

    n->t_in = tb_tensor_f32(m, "input", 4, d_in, NULL);
    int32_t w1 = tb_tensor_f32(m, "stem/w", 4, d_w1, n->w1.f),
            b1 = tb_tensor_f32(m, "stem/b", 1, d_c1, n->b1.f);
    n->t_c1 = tb_tensor_f32(m, "stem", 4, d_act, NULL);
    int32_t wd = tb_tensor_f32(m, "dw/w", 4, d_wd, n->wd.f),
            bd = tb_tensor_f32(m, "dw/b", 1, d_c1, n->bd.f);
    n->t_d1 = tb_tensor_f32(m, "dw", 4, d_act, NULL);
    int32_t ax = tb_tensor_i32(m, "axes", 2, axes);
    int32_t se0 = tb_tensor_f32(m, "se/pool", 4, d_se, NULL);
    int32_t ws1 = tb_tensor_f32(m, "se/fc1/w", 2, d_ws1, n->ws1.f),
            bs1 = tb_tensor_f32(m, "se/fc1/b", 1, d_se_b, n->bs1.f);
    int32_t se1 = tb_tensor_f32(m, "se/fc1", 4, d_se1, NULL);
    int32_t ws2 = tb_tensor_f32(m, "se/fc2/w", 2, d_ws2, n->ws2.f),
            bs2 = tb_tensor_f32(m, "se/fc2/b", 1, d_c1, n->bs2.f);
    int32_t se2 = tb_tensor_f32(m, "se/fc2", 2, d_se2, NULL);
    n->t_se3 = tb_tensor_f32(m, "se/gate", 2, d_se2, NULL);
    int32_t shp = tb_tensor_i32(m, "se/shape", 4, se_shape);
    n->t_se4 = tb_tensor_f32(m, "se/gate4", 4, d_se, NULL);
    n->t_m = tb_tensor_f32(m, "se/out", 4, d_act, NULL);
    n->t_a = tb_tensor_f32(m, "residual", 4, d_act, NULL);
    int32_t cat = tb_tensor_f32(m, "concat", 4, d_cat, NULL);
    int32_t wp = tb_tensor_f32(m, "proj/w", 4, d_wp, n->wp.f),
            bp = tb_tensor_f32(m, "proj/b", 1, d_c2, n->bp.f);
    n->t_p = tb_tensor_f32(m, "proj", 4, d_p, NULL);
    n->t_h = tb_tensor_f32(m, "hswish", 4, d_p, NULL);
    int32_t pool = tb_tensor_f32(m, "pool", 4, d_pool, NULL);
    int32_t g = tb_tensor_f32(m, "gap", 2, d_g, NULL);
    int32_t wf = tb_tensor_f32(m, "fc/w", 2, d_wf, n->wf.f),
            bf = tb_tensor_f32(m, "fc/b", 1, d_cls, n->bf.f);
    int32_t logits = tb_tensor_f32(m, "logits", 2, d_out, NULL);
    n->t_out = tb_tensor_f32(m, "probs", 2, d_out, NULL);

    const tb_opts conv = {.type = 1, .padding = 0, .stride_w = 2, .stride_h = 2, .act = 3};
    const tb_opts dw = {
        .type = 2, .padding = 0, .stride_w = 1, .stride_h = 1, .act = 1, .depth_multiplier = 1};
    const tb_opts keep = {.type = 27, .keep_dims = 1}, flat = {.type = 27, .keep_dims = 0};
    const tb_opts fc_keep = {.type = 8, .act = 1, .keep_dims = 1}, fc = {.type = 8};
    const tb_opts mul = {.type = 21}, add = {.type = 11}, concat = {.type = 10, .axis = 3};
    const tb_opts proj = {.type = 1, .padding = 1, .stride_w = 1, .stride_h = 1};
    const tb_opts avg = {
        .type = 5, .padding = 1, .stride_w = 2, .stride_h = 2, .filter_w = 2, .filter_h = 2};
    const tb_opts soft = {.type = 9, .beta = 1.0f}, reshape = {.type = 17};
    const int32_t i_conv[3] = {n->t_in, w1, b1}, i_dw[3] = {n->t_c1, wd, bd},
                  i_mean[2] = {n->t_d1, ax};
    const int32_t i_fc1[3] = {se0, ws1, bs1}, i_fc2[3] = {se1, ws2, bs2}, i_rs[2] = {n->t_se3, shp};
    const int32_t i_mul[2] = {n->t_d1, n->t_se4}, i_add[2] = {n->t_m, n->t_c1},
                  i_cat[2] = {n->t_a, n->t_c1};
    const int32_t i_proj[3] = {cat, wp, bp}, i_gap[2] = {pool, ax}, i_fc[3] = {g, wf, bf};
    tb_op_add(m, MENGINE_OP_CONV_2D, 1, 3, i_conv, n->t_c1, &conv);
    tb_op_add(m, MENGINE_OP_DEPTHWISE_CONV_2D, 1, 3, i_dw, n->t_d1, &dw);
    tb_op_add(m, MENGINE_OP_MEAN, 1, 2, i_mean, se0, &keep);
    tb_op_add(m, MENGINE_OP_FULLY_CONNECTED, 5, 3, i_fc1, se1, &fc_keep);
    tb_op_add(m, MENGINE_OP_FULLY_CONNECTED, 1, 3, i_fc2, se2, &fc);
    tb_op_add(m, MENGINE_OP_LOGISTIC, 1, 1, &se2, n->t_se3, NULL);
    tb_op_add(m, MENGINE_OP_RESHAPE, 1, 2, i_rs, n->t_se4, &reshape);
    tb_op_add(m, MENGINE_OP_MUL, 1, 2, i_mul, n->t_m, &mul);
    tb_op_add(m, MENGINE_OP_ADD, 1, 2, i_add, n->t_a, &add);
    tb_op_add(m, MENGINE_OP_CONCATENATION, 1, 2, i_cat, cat, &concat);
    tb_op_add(m, MENGINE_OP_CONV_2D, 1, 3, i_proj, n->t_p, &proj);
    tb_op_add(m, MENGINE_OP_HARD_SWISH, 1, 1, &n->t_p, n->t_h, NULL);
    tb_op_add(m, MENGINE_OP_AVERAGE_POOL_2D, 1, 1, &n->t_h, pool, &avg);
    tb_op_add(m, MENGINE_OP_MEAN, 1, 2, i_gap, g, &flat);
    tb_op_add(m, MENGINE_OP_FULLY_CONNECTED, 1, 3, i_fc, logits, &fc);
    tb_op_add(m, MENGINE_OP_SOFTMAX, 1, 1, &logits, n->t_out, &soft);
    tb_io(m, 1, &n->t_in, 1, &n->t_out);
}

static void net_free(net *n)
{
    param *all[] = {&n->w1,  &n->b1,  &n->wd, &n->bd, &n->ws1, &n->bs1,
                    &n->ws2, &n->bs2, &n->wp, &n->bp, &n->wf,  &n->bf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        param_free(all[i]);
    tb_release(&n->m);
}

/* The same network with the references, in double precision. */
static void net_reference(const net *n, const double *x, double *probs)
{
    enum { A = 8 * 8 * C1 };
    double c1[A], d1[A], se0[C1], se1[SE], se2[C1], mul[A], add[A], cat[8 * 8 * 2 * C1];
    double p[8 * 8 * C2], pool[4 * 4 * C2], g[C2], logits[CLASSES];
    const int d4[4] = {1, 8, 8, C1}, s4[4] = {1, 1, 1, C1};
    re_conv2d(x, 1, H, W, C0, n->w1.d, C1, 3, 3, n->b1.d, 2, 2, 0, 3, c1);
    re_depthwise(c1, 1, 8, 8, C1, n->wd.d, 1, 3, 3, n->bd.d, 1, 1, 0, 1, d1);
    re_mean_hw(d1, 1, 8, 8, C1, se0);
    re_fully_connected(se0, 1, C1, n->ws1.d, SE, n->bs1.d, 1, se1);
    re_fully_connected(se1, 1, SE, n->ws2.d, C1, n->bs2.d, 0, se2);
    for (int i = 0; i < C1; i++)
        se2[i] = re_unary(3, se2[i], 0);
    re_binary(1, d1, d4, se2, s4, d4, 0, mul);
    re_binary(0, mul, d4, c1, d4, d4, 0, add);
    const double *parts[2] = {add, c1};
    const int dims[4] = {1, 8, 8, C1}, *dp[2] = {dims, dims};
    re_concat(2, parts, dp, 4, 3, cat);
    re_conv2d(cat, 1, 8, 8, 2 * C1, n->wp.d, C2, 1, 1, n->bp.d, 1, 1, 1, 0, p);
    for (int i = 0; i < 8 * 8 * C2; i++)
        p[i] = re_unary(2, p[i], 0);
    re_avg_pool(p, 1, 8, 8, C2, 2, 2, 2, 2, 1, 0, pool);
    re_mean_hw(pool, 1, 4, 4, C2, g);
    re_fully_connected(g, 1, C2, n->wf.d, CLASSES, n->bf.d, 0, logits);
    re_softmax(logits, 1, CLASSES, 1.0, probs);
}

static void test_end_to_end_network(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 31, 1);
    net n;
    net_build(&n, &rng);
    tb_run r;
    tb_run_open(&r, &n.m);
    for (int round = 0; round < 2; round++) { /* the arena is reused between invokes */
        float x[H * W * C0];
        double xd[H * W * C0], want[CLASSES], got[CLASSES];
        tb_rand(&rng, x, xd, H * W * C0, -1, 1);
        net_reference(&n, xd, want);
        tb_run_input(&r, 0, x, H * W * C0);
        tb_run_invoke(&r);
        tb_run_output(&r, 0, got, CLASSES);
        tu_assert_close(got, want, CLASSES, 1e-5, "network output");
    }
    tb_run_close(&r);
    net_free(&n);
}

/* ---- planner ---- */

/* Lifetimes as the test sees the graph: [written, last read], model outputs to the end. */
static void lifetimes(const tb_model *m, int *first, int *last)
{
    for (int t = 0; t < m->n_t; t++)
        first[t] = 1 << 20, last[t] = -1;
    for (int i = 0; i < m->n_in; i++)
        first[m->in[i]] = 0;
    for (int i = 0; i < m->n_op; i++) {
        for (int k = 0; k < m->op[i].n_in; k++)
            if (m->op[i].in[k] >= 0 && last[m->op[i].in[k]] < i + 1)
                last[m->op[i].in[k]] = i + 1;
        first[m->op[i].out[0]] = i + 1;
        if (last[m->op[i].out[0]] < i + 1)
            last[m->op[i].out[0]] = i + 1;
    }
    for (int i = 0; i < m->n_out; i++)
        last[m->out[i]] = m->n_op + 1;
}

/* Operator that writes tensor @p t, or -1. */
static int producer(const tb_model *m, int t)
{
    for (int i = 0; i < m->n_op; i++)
        if (m->op[i].out[0] == t)
            return i;
    return -1;
}

/* Tensors whose memory overlaps while both are live may only be an
 * element-wise output written over its dying input, or a reshape of the other. */
static void check_no_live_overlap(const tb_model *m, const mengine *e)
{
    int first[TB_MAX_TENSORS], last[TB_MAX_TENSORS];
    lifetimes(m, first, last);
    for (int a = 0; a < m->n_t; a++)
        for (int b = a + 1; b < m->n_t; b++) {
            mengine_view va, vb;
            assert_int_equal(mengine_tensor(e, (size_t)a, &va), MENGINE_OK);
            assert_int_equal(mengine_tensor(e, (size_t)b, &vb), MENGINE_OK);
            if (!va.data || !vb.data || first[a] > last[b] || first[b] > last[a])
                continue;
            const char *pa = (const char *)va.data, *pb = (const char *)vb.data;
            if (pa + va.count * 4 <= pb || pb + vb.count * 4 <= pa)
                continue;
            const int pa_op = producer(m, a), pb_op = producer(m, b);
            const int later = pa_op > pb_op ? a : b, earlier = later == a ? b : a;
            const tb_op *op = &m->op[producer(m, later)];
            int reads_earlier = 0;
            for (int k = 0; k < op->n_in; k++)
                reads_earlier |= op->in[k] == earlier;
            const int32_t code = m->code[op->opcode];
            const int shared = pa == pb && va.count == vb.count && reads_earlier &&
                               (code == MENGINE_OP_RESHAPE || last[earlier] == first[later]);
            if (!shared)
                fail_msg("tensors %d '%s' and %d '%s' overlap while both are live", a, m->t[a].name,
                         b, m->t[b].name);
        }
}

static void test_planner_network(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 32, 1);
    net n;
    net_build(&n, &rng);
    tb_run r;
    tb_run_open(&r, &n.m);
    check_no_live_overlap(&n.m, &r.e);
    mengine_view a, b;
    /* the reshape shares its input's buffer */
    mengine_tensor(&r.e, (size_t)n.t_se3, &a), mengine_tensor(&r.e, (size_t)n.t_se4, &b);
    assert_ptr_equal(a.data, b.data);
    /* hard swish writes over the projection, which nothing reads afterwards */
    mengine_tensor(&r.e, (size_t)n.t_p, &a), mengine_tensor(&r.e, (size_t)n.t_h, &b);
    assert_ptr_equal(a.data, b.data);
    /* the SE multiply writes over the depthwise output (its last use) */
    mengine_tensor(&r.e, (size_t)n.t_d1, &a), mengine_tensor(&r.e, (size_t)n.t_m, &b);
    assert_ptr_equal(a.data, b.data);
    /* the stem output is read after the add: the add must not write over it */
    mengine_tensor(&r.e, (size_t)n.t_c1, &a), mengine_tensor(&r.e, (size_t)n.t_a, &b);
    assert_ptr_not_equal(a.data, b.data);
    mengine_stats s;
    assert_int_equal(mengine_get_stats(&r.e, &s), MENGINE_OK);
    assert_int_equal(s.arena_used, r.arena_size);
    assert_true(s.records_bytes % MENGINE_ARENA_ALIGN == 0);
    print_message("# network: arena %zu bytes (records %zu, activations %zu)\n", s.arena_used,
                  s.records_bytes, s.activation_bytes);
    tb_run_close(&r);
    net_free(&n);
}

/* in -> conv 1x1 -> relu -> relu6 -> hard swish (output): one buffer for the chain. */
static void test_planner_inplace_chain(void **state)
{
    (void)state;
    static float w[8 * 8], b[8];
    tb_model m;
    tb_init(&m);
    const int32_t d[4] = {1, 8, 8, 8}, dw[4] = {8, 1, 1, 8}, db[1] = {8};
    int32_t t[6];
    t[0] = tb_tensor_f32(&m, "in", 4, d, NULL);
    int32_t wt = tb_tensor_f32(&m, "w", 4, dw, w), bt = tb_tensor_f32(&m, "b", 1, db, b);
    for (int i = 1; i < 5; i++)
        t[i] = tb_tensor_f32(&m, "chain", 4, d, NULL);
    const tb_opts conv = {.type = 1, .stride_w = 1, .stride_h = 1};
    const int32_t ci[3] = {t[0], wt, bt};
    tb_op_add(&m, MENGINE_OP_CONV_2D, 1, 3, ci, t[1], &conv);
    tb_op_add(&m, MENGINE_OP_RELU, 1, 1, &t[1], t[2], NULL);
    tb_op_add(&m, MENGINE_OP_RELU6, 1, 1, &t[2], t[3], NULL);
    tb_op_add(&m, MENGINE_OP_HARD_SWISH, 1, 1, &t[3], t[4], NULL);
    tb_io(&m, 1, &t[0], 1, &t[4]);
    tb_run r;
    tb_run_open(&r, &m);
    mengine_stats s;
    mengine_get_stats(&r.e, &s);
    /* input 2048 + chain 2048 + conv weight panel MK_CONV_NR*1*1*8 floats */
    assert_int_equal(s.activation_bytes, 2048 + 2048 + MK_CONV_NR * 8 * sizeof(float));
    mengine_view v1, v4;
    mengine_tensor(&r.e, (size_t)t[1], &v1), mengine_tensor(&r.e, (size_t)t[4], &v4);
    assert_ptr_equal(v1.data, v4.data);
    check_no_live_overlap(&m, &r.e);
    tb_run_close(&r);
    tb_release(&m);
}

/* A chain of pools (no scratch, not in place) ping-pongs between two buffers. */
static void test_planner_reuses_dead_buffers(void **state)
{
    (void)state;
    tb_model m;
    tb_init(&m);
    const int32_t d[4] = {1, 6, 6, 4}; /* 576 bytes */
    const tb_opts pool = {.type = 5, .stride_w = 1, .stride_h = 1, .filter_w = 1, .filter_h = 1};
    int32_t prev = tb_tensor_f32(&m, "in", 4, d, NULL), in = prev;
    for (int i = 0; i < 6; i++) {
        int32_t next = tb_tensor_f32(&m, "x", 4, d, NULL);
        tb_op_add(&m, MENGINE_OP_AVERAGE_POOL_2D, 1, 1, &prev, next, &pool);
        prev = next;
    }
    tb_io(&m, 1, &in, 1, &prev);
    tb_run r;
    tb_run_open(&r, &m);
    mengine_stats s;
    mengine_get_stats(&r.e, &s);
    assert_int_equal(s.activation_bytes, 2 * 576);
    check_no_live_overlap(&m, &r.e);
    tb_run_close(&r);
    tb_release(&m);
}

/* in -> relu -> relu6 -> out with the OfflineMemoryAllocation metadata. */
static void offline_model(tb_model *m, const int32_t offsets[3])
{
    const int32_t d[4] = {1, 4, 4, 4}; /* 256 bytes */
    tb_init(m);
    int32_t a = tb_tensor_f32(m, "in", 4, d, NULL), b = tb_tensor_f32(m, "mid", 4, d, NULL);
    int32_t c = tb_tensor_f32(m, "out", 4, d, NULL);
    tb_op_add(m, MENGINE_OP_RELU, 1, 1, &a, b, NULL);
    tb_op_add(m, MENGINE_OP_RELU6, 1, 1, &b, c, NULL);
    tb_io(m, 1, &a, 1, &c);
    tb_offline(m, offsets);
}

static void test_offline_plan_honoured(void **state)
{
    (void)state;
    const int32_t offsets[3] = {1024, -1, 64};
    tb_model m;
    offline_model(&m, offsets);
    tb_run r;
    tb_run_open(&r, &m);
    mengine_stats s;
    mengine_get_stats(&r.e, &s);
    const uint8_t *act = (const uint8_t *)r.arena + s.records_bytes;
    mengine_view v[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(mengine_tensor(&r.e, (size_t)i, &v[i]), MENGINE_OK);
    assert_ptr_equal((const uint8_t *)v[0].data, act + 1024);
    assert_ptr_equal((const uint8_t *)v[2].data, act + 64);
    /* 'mid' is planned around them: not over 'in' (live together), not over 'out' */
    const uint8_t *mid = (const uint8_t *)v[1].data;
    assert_true(mid + 256 <= act + 64 || mid >= act + 320);
    assert_true(mid + 256 <= act + 1024 || mid >= act + 1280);
    assert_true(s.activation_bytes >= 1280);
    float x[64];
    double got[64], want[64];
    for (int i = 0; i < 64; i++) {
        x[i] = (float)(i - 20) * 0.25f;
        want[i] = re_unary(1, x[i], 0);
    }
    tb_run_input(&r, 0, x, 64);
    tb_run_invoke(&r);
    tb_run_output(&r, 0, got, 64);
    tu_assert_close(got, want, 64, 1e-6, "offline-planned model");
    tb_run_close(&r);
    tb_release(&m);
}

static void test_offline_plan_overlap_rejected(void **state)
{
    (void)state;
    const int32_t offsets[3] = {0, 128, 512}; /* in and mid overlap while both live */
    tb_model m;
    offline_model(&m, offsets);
    size_t n, need;
    uint8_t *f = tb_finish(&m, &n);
    mengine_model mm;
    char msg[256];
    assert_int_equal(mengine_model_load(&mm, f, n, NULL, msg, sizeof msg), MENGINE_OK);
    size_t ws = mengine_plan_work_size(&mm);
    void *work = malloc(ws);
    assert_non_null(work);
    assert_int_equal(mengine_arena_size(&mm, work, ws, &need, msg, sizeof msg), MENGINE_ERR_PLAN);
    assert_non_null(strstr(msg, "overlap"));
    assert_int_equal(mengine_arena_size(&mm, work, ws - 1, &need, msg, sizeof msg),
                     MENGINE_ERR_ARENA);
    free(work);
    free(f);
    tb_release(&m);
}

/* in -> relu -> mid -> reshape -> flat -> relu6 -> out, with an offline plan. */
static void offline_share_model(tb_model *m, const int32_t offsets[4])
{
    const int32_t d[4] = {1, 4, 4, 4}, d2[2] = {1, 64}, shape[2] = {1, 64};
    tb_init(m);
    int32_t a = tb_tensor_f32(m, "in", 4, d, NULL), b = tb_tensor_f32(m, "mid", 4, d, NULL);
    int32_t c = tb_tensor_f32(m, "flat", 2, d2, NULL), o = tb_tensor_f32(m, "out", 2, d2, NULL);
    int32_t sh = tb_tensor_i32(m, "shape", 2, shape);
    const int32_t rin[2] = {b, sh};
    tb_op_add(m, MENGINE_OP_RELU, 1, 1, &a, b, NULL);
    tb_op_add(m, MENGINE_OP_RESHAPE, 1, 2, rin, c, NULL);
    tb_op_add(m, MENGINE_OP_RELU6, 1, 1, &c, o, NULL);
    tb_io(m, 1, &a, 1, &o);
    const int32_t all[5] = {offsets[0], offsets[1], offsets[2], offsets[3], -1};
    tb_offline(m, all);
}

/* A plan written from the planner's own result (tensors sharing a buffer at the same
 * offset, as the exporter writes it) is accepted and reproduced exactly. */
static void test_offline_plan_shared_buffers(void **state)
{
    (void)state;
    tb_model m;
    const int32_t none[4] = {-1, -1, -1, -1};
    offline_share_model(&m, none);
    tb_run r;
    tb_run_open(&r, &m);
    mengine_stats s;
    mengine_get_stats(&r.e, &s);
    const uint8_t *act = (const uint8_t *)r.arena + s.records_bytes;
    int32_t planned[4];
    for (int i = 0; i < 4; i++) {
        mengine_view v;
        assert_int_equal(mengine_tensor(&r.e, (size_t)i, &v), MENGINE_OK);
        planned[i] = (int32_t)((const uint8_t *)v.data - act);
    }
    /* reshape shares; the in-place relu6 writes over 'flat' */
    assert_int_equal(planned[1], planned[2]);
    assert_int_equal(planned[2], planned[3]);
    const size_t arena = r.arena_size;
    tb_run_close(&r);
    tb_release(&m);
    offline_share_model(&m, planned);
    tb_run_open(&r, &m);
    mengine_get_stats(&r.e, &s);
    act = (const uint8_t *)r.arena + s.records_bytes;
    for (int i = 0; i < 4; i++) {
        mengine_view v;
        assert_int_equal(mengine_tensor(&r.e, (size_t)i, &v), MENGINE_OK);
        assert_int_equal((int32_t)((const uint8_t *)v.data - act), planned[i]);
    }
    assert_int_equal(r.arena_size, arena);
    float x[64];
    double got[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)(i - 30) * 0.25f;
    tb_run_input(&r, 0, x, 64);
    tb_run_invoke(&r);
    tb_run_output(&r, 0, got, 64);
    for (int i = 0; i < 64; i++)
        assert_true(got[i] == (x[i] < 0 ? 0 : x[i] > 6 ? 6 : x[i]));
    tb_run_close(&r);
    tb_release(&m);
    /* the input at the output's offset: both live at once, rejected */
    const int32_t clash[4] = {planned[3], planned[1], planned[2], planned[3]};
    offline_share_model(&m, clash);
    size_t n, need;
    uint8_t *f = tb_finish(&m, &n);
    mengine_model mm;
    char msg[256];
    assert_int_equal(mengine_model_load(&mm, f, n, NULL, msg, sizeof msg), MENGINE_OK);
    void *work = malloc(mengine_plan_work_size(&mm));
    assert_non_null(work);
    assert_int_equal(
        mengine_arena_size(&mm, work, mengine_plan_work_size(&mm), &need, msg, sizeof msg),
        MENGINE_ERR_PLAN);
    free(work);
    free(f);
    tb_release(&m);
}

/* ---- arena size and call order ---- */

static void test_arena_size_exact_and_call_order(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 33, 1);
    net n;
    net_build(&n, &rng);
    tb_run r;
    tb_run_open(&r, &n.m); /* prepared with exactly mengine_arena_size() bytes */
    char msg[256];
    mengine e;
    mengine_view v;
    assert_int_equal(mengine_invoke(NULL), MENGINE_ERR_STATE);
    assert_int_equal(mengine_prepare(NULL, msg, sizeof msg), MENGINE_ERR_STATE);
    assert_int_equal(mengine_init(&e, &r.m, (uint8_t *)r.arena + 8, r.arena_size), MENGINE_ERR_ARG);
    assert_int_equal(mengine_init(&e, &r.m, r.arena, r.arena_size - 16), MENGINE_OK);
    assert_int_equal(mengine_invoke(&e), MENGINE_ERR_STATE);
    assert_int_equal(mengine_input(&e, 0, &v), MENGINE_ERR_STATE);
    assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_ERR_ARENA);
    assert_non_null(strstr(msg, "needs"));
    assert_int_equal(mengine_init(&e, &r.m, r.arena, r.arena_size), MENGINE_OK);
    assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(mengine_input_count(&e), 1);
    assert_int_equal(mengine_output_count(&e), 1);
    assert_int_equal(mengine_input(&e, 1, &v), MENGINE_ERR_ARG);
    assert_int_equal(mengine_output(&e, 0, &v), MENGINE_OK);
    assert_int_equal(v.rank, 2);
    assert_int_equal(v.dims[1], CLASSES);
    assert_int_equal(mengine_tensor(&e, 1, &v), MENGINE_OK); /* a constant: read-only */
    assert_null(v.data);
    assert_non_null(v.cdata);
    assert_int_equal(mengine_invoke(&e), MENGINE_OK);
    tb_run_close(&r);
    net_free(&n);
}

/* ---- FlatBuffers builder ---- */

static void test_flatbuf_builder(void **state)
{
    (void)state;
    mfb_builder b;
    mfb_ref t1, t2, v16, s, root;
    assert_int_equal(mfb_init(&b, 8), MANTA_OK); /* tiny: forces growth */
    const uint8_t bytes[5] = {1, 2, 3, 4, 5};
    assert_int_equal(mfb_create_vector(&b, bytes, 5, 1, 16, &v16), MANTA_OK);
    assert_int_equal(mfb_create_string(&b, "hi", 2, &s), MANTA_OK);
    assert_int_equal(mfb_start_table(&b), MANTA_OK);
    assert_int_equal(mfb_add_i32(&b, 0, 7, 0), MANTA_OK);
    assert_int_equal(mfb_add_i32(&b, 1, 0, 0), MANTA_OK); /* default: not written */
    assert_int_equal(mfb_add_ref(&b, 2, v16), MANTA_OK);
    assert_int_equal(mfb_end_table(&b, &t1), MANTA_OK);
    assert_int_equal(mfb_start_table(&b), MANTA_OK);
    assert_int_equal(mfb_add_i32(&b, 0, 9, 0), MANTA_OK);
    assert_int_equal(mfb_add_ref(&b, 2, v16), MANTA_OK);
    assert_int_equal(mfb_end_table(&b, &t2), MANTA_OK); /* same layout: shares t1's vtable */
    mfb_ref both[2] = {t1, t2}, vt;
    assert_int_equal(mfb_create_ref_vector(&b, both, 2, &vt), MANTA_OK);
    assert_int_equal(mfb_start_table(&b), MANTA_OK);
    assert_int_equal(mfb_add_ref(&b, 0, vt), MANTA_OK);
    assert_int_equal(mfb_add_ref(&b, 1, s), MANTA_OK);
    assert_int_equal(mfb_add_i8(&b, 2, -3, 0), MANTA_OK);
    assert_int_equal(mfb_add_u16(&b, 3, 500, 0), MANTA_OK);
    assert_int_equal(mfb_add_i64(&b, 4, -5, 0), MANTA_OK);
    assert_int_equal(mfb_add_f32(&b, 5, 1.5f, 0.0f), MANTA_OK);
    assert_int_equal(mfb_add_bool(&b, 6, 1, 0), MANTA_OK);
    assert_int_equal(mfb_end_table(&b, &root), MANTA_OK);
    assert_int_equal(mfb_finish(&b, root, "TEST"), MANTA_OK);
    size_t n;
    const uint8_t *f = mfb_data(&b, &n);
    assert_non_null(f);
    assert_int_equal(mfb_alignment(&b), 16);
    assert_int_equal(n % 16, 0);
    assert_memory_equal(f + 4, "TEST", 4);

    const uint32_t rt = r32(f), rvt = rt - r32(f + rt);
    assert_int_equal(r16(f + rvt), 4 + 2 * 7);
    const uint32_t f0 = rt + r16(f + rvt + 4), vec = f0 + r32(f + f0);
    assert_int_equal(r32(f + vec), 2);
    const uint32_t a = vec + 4 + r32(f + vec + 4), c = vec + 8 + r32(f + vec + 8);
    const uint32_t vta = a - r32(f + a), vtc = c - r32(f + c);
    assert_int_equal(vta, vtc);                /* shared vtable */
    assert_int_equal(r16(f + vta), 4 + 2 * 3); /* fields 0..2 */
    assert_int_equal(r16(f + vta + 6), 0);     /* field 1 left at its default */
    assert_int_equal(r32(f + a + r16(f + vta + 4)), 7);
    assert_int_equal(r32(f + c + r16(f + vtc + 4)), 9);
    const uint32_t fa = a + r16(f + vta + 8), data = fa + r32(f + fa);
    assert_int_equal(r32(f + data), 5);
    assert_int_equal((data + 4) % 16, 0); /* force_align 16 */
    assert_memory_equal(f + data + 4, bytes, 5);
    const uint32_t fs = rt + r16(f + rvt + 6), str = fs + r32(f + fs);
    assert_int_equal(r32(f + str), 2);
    assert_memory_equal(f + str + 4, "hi", 3);
    assert_int_equal((int8_t)f[rt + r16(f + rvt + 8)], -3);
    assert_int_equal(r16(f + rt + r16(f + rvt + 10)), 500);
    const uint32_t f64 = rt + r16(f + rvt + 12);
    assert_int_equal(f64 % 8, 0);
    assert_int_equal(r32(f + f64), (uint32_t)-5);
    assert_int_equal(r32(f + f64 + 4), 0xffffffffu);
    float half;
    uint32_t bits = r32(f + rt + r16(f + rvt + 14));
    memcpy(&half, &bits, 4);
    assert_true(half == 1.5f);
    assert_int_equal(f[rt + r16(f + rvt + 16)], 1);
    mfb_free(&b);

    /* misuse: errors are sticky */
    assert_int_equal(mfb_init(&b, 0), MANTA_OK);
    assert_int_equal(mfb_start_table(&b), MANTA_OK);
    assert_int_equal(mfb_add_i32(&b, MFB_MAX_FIELDS, 1, 0), MANTA_ERR_INVALID_ARG);
    assert_int_equal(mfb_create_string(&b, "x", 1, &s), MANTA_ERR_INVALID_ARG);
    assert_string_equal(mfb_error(&b), "field id out of range");
    assert_null(mfb_data(&b, &n));
    mfb_free(&b);
    assert_int_equal(mfb_init(&b, 0), MANTA_OK);
    assert_int_equal(mfb_create_string(&b, "x", 1, &s), MANTA_OK);
    assert_int_equal(mfb_add_i32(&b, 0, 1, 0), MANTA_ERR_INVALID_ARG); /* no open table */
    mfb_free(&b);
    assert_int_equal(mfb_init(&b, 0), MANTA_OK);
    assert_int_equal(mfb_start_table(&b), MANTA_OK);
    assert_int_equal(mfb_end_table(&b, &root), MANTA_OK);
    assert_int_equal(mfb_finish(&b, root, "TOOLONG"), MANTA_ERR_INVALID_ARG);
    mfb_free(&b);
}

/* ---- standard tools read our files ---- */

static void test_flatc_reads_model(void **state)
{
    (void)state;
    if (system("command -v flatc >/dev/null 2>&1") != 0) {
        print_message("# flatc not installed: skipping (apt-get install flatbuffers-compiler)\n");
        skip();
    }
    if (access("models/tflite_subset.fbs", R_OK) != 0) {
        print_message("# models/tflite_subset.fbs not found: run from the repository root\n");
        skip();
    }
    manta_rng rng;
    manta_rng_seed(&rng, 34, 1);
    net n;
    net_build(&n, &rng);
    int32_t plan[TB_MAX_TENSORS];
    for (int i = 0; i < n.m.n_t; i++)
        plan[i] = -1; /* all planned at run time */
    tb_offline(&n.m, plan);
    size_t size;
    uint8_t *f = tb_finish(&n.m, &size);
    char dir[] = "/tmp/manta-flatc-XXXXXX", path[64], cmd[512], json[96];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/model.tflite", dir);
    snprintf(json, sizeof json, "%s/model.json", dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(f, 1, size, fp), size);
    assert_int_equal(fclose(fp), 0);
    snprintf(cmd, sizeof cmd,
             "flatc --json --raw-binary --strict-json -o %s models/tflite_subset.fbs -- %s", dir,
             path);
    assert_int_equal(system(cmd), 0);
    fp = fopen(json, "rb");
    assert_non_null(fp);
    const size_t cap = 1 << 20;
    char *text = malloc(cap);
    assert_non_null(text);
    size_t got = fread(text, 1, cap - 1, fp);
    fclose(fp);
    text[got] = '\0';
    assert_non_null(strstr(text, "\"DEPTHWISE_CONV_2D\""));
    assert_non_null(strstr(text, "\"HARD_SWISH\""));
    assert_non_null(strstr(text, "\"OfflineMemoryAllocation\""));
    assert_non_null(strstr(text, "\"stem/w\""));
    free(text);
    manta_file_remove_tree(dir);
    assert_int_not_equal(access(dir, F_OK), 0); /* removed (readdir works on every board) */
    free(f);
    net_free(&n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_end_to_end_network),
        cmocka_unit_test(test_planner_network),
        cmocka_unit_test(test_planner_inplace_chain),
        cmocka_unit_test(test_planner_reuses_dead_buffers),
        cmocka_unit_test(test_offline_plan_honoured),
        cmocka_unit_test(test_offline_plan_overlap_rejected),
        cmocka_unit_test(test_offline_plan_shared_buffers),
        cmocka_unit_test(test_arena_size_exact_and_call_order),
        cmocka_unit_test(test_flatbuf_builder),
        cmocka_unit_test(test_flatc_reads_model),
    };
    return cmocka_run_group_tests_name("engine models", tests, NULL, NULL);
}
