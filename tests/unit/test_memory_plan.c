/* Device memory at scale: a slab split across buffers at its tensors (mslab_split(), pure);
 * --batch auto's choice from the memory plan and the device's limits (ofa_net_mem_fits(),
 * ofa_net_pick_batch() with a made-up plan, stereo_trainer_pick_batch() against the plans
 * of the batches around its choice, and batch 1 too large, naming the part); the planner
 * agrees with what a network creates; a stereo training step whose activations and their
 * gradients are split across buffers (a device whose largest allocation is clamped below
 * them, MANTA_DEVICE_LIMITS's clamp) gives bit-identical predictions and gradients to the
 * unsplit one (both kernel variants), and one whose op scratch is also chunked over the
 * batch gives the same to float rounding (the GPU variant's im2col convolutions). The
 * activations planned by lifetime (mlayout_pack_plan(), pure): tensors whose lifetimes
 * overlap never share memory, the others do, on made-up layouts and on a stereo network's;
 * a step of sub-networks of a planned network gives bit-identical predictions and gradients
 * to an unplanned one (every activation in its own place), with less activation memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "common/testutil.h"
#include "core/rng.h"
#include "nn/conv.h"
#include "stereo/net.h"
#include "stereo/train.h"

/* ---- the split -------------------------------------------------------------------------- */

static void test_split_at_tensors(void **state)
{
    (void)state;
    size_t lo[MSLAB_MAX_PIECES], bad, bad_n;
    const size_t cuts[] = {0, 10, 20, 50, 60, 100};
    /* fits one piece */
    assert_int_equal(mslab_split(120, cuts, 6, 120, lo, &bad, &bad_n), 1);
    assert_int_equal(lo[0], 0);
    /* pieces of at most 50: [0, 50) [50, 100) [100, 120) */
    assert_int_equal(mslab_split(120, cuts, 6, 50, lo, &bad, &bad_n), 3);
    assert_int_equal(lo[1], 50);
    assert_int_equal(lo[2], 100);
    /* at most 40: [0, 20) [20, 60) [60, 100) [100, 120) */
    assert_int_equal(mslab_split(120, cuts, 6, 40, lo, &bad, &bad_n), 4);
    assert_int_equal(lo[1], 20);
    assert_int_equal(lo[2], 60);
    assert_int_equal(lo[3], 100);
    /* at most 25: the tensor [20, 50) is too long */
    assert_int_equal(mslab_split(120, cuts, 6, 25, lo, &bad, &bad_n), 0);
    assert_int_equal(bad, 20);
    assert_int_equal(bad_n, 30);
    /* the last tensor [100, 120) too long for 15 */
    const size_t c2[] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
    assert_int_equal(mslab_split(120, c2, 10, 15, lo, &bad, &bad_n), 0);
    assert_int_equal(bad, 100);
    assert_int_equal(bad_n, 20);
    /* no cuts at all */
    assert_int_equal(mslab_split(120, NULL, 0, 100, lo, &bad, &bad_n), 0);
    assert_int_equal(bad_n, 120);
    /* more pieces than MSLAB_MAX_PIECES */
    size_t many[200];
    for (int i = 0; i < 200; i++)
        many[i] = (size_t)i * 16;
    assert_int_equal(mslab_split(3200, many, 200, 16, lo, &bad, &bad_n), 0);
    assert_int_equal(bad_n, 0);
    assert_int_equal(mslab_split(3200, many, 200, 64, lo, &bad, &bad_n), 50);
}

/* ---- the plan by lifetime -------------------------------------------------------------- */

static bool life_holds(const mlayout_life *t) { return t->first <= t->last && t->n > 0; }

/* Every pair of tensors of @p p whose lifetimes overlap has disjoint places, every place lies
 * in the buffer, no tensor spans a cut; returns the floats of the largest phase's live
 * tensors (a lower bound of any plan's total), phases up to @p phases (MLAYOUT_END: the
 * last). */
static size_t check_pack(const mlayout_pack *p, unsigned phases)
{
    for (size_t i = 0; i < p->n; i++) {
        const mlayout_life *a = &p->life[i];
        if (!life_holds(a))
            continue;
        assert_true(p->at[i] + a->n <= p->total);
        assert_int_equal(p->at[i] % MLAYOUT_ALIGN, 0);
        for (size_t j = i + 1; j < p->n; j++) {
            const mlayout_life *b = &p->life[j];
            if (!life_holds(b) || a->first > b->last || b->first > a->last)
                continue;
            if (p->at[i] < p->at[j] + b->n && p->at[j] < p->at[i] + a->n)
                fail_msg("tensors %zu [%u, %u] at %zu (+%zu) and %zu [%u, %u] at %zu (+%zu) "
                         "share memory while both live",
                         i, a->first, a->last, p->at[i], a->n, j, b->first, b->last, p->at[j],
                         b->n);
        }
        for (size_t c = 0; c < p->n_cuts; c++)
            assert_false(p->at[i] < p->cuts[c] && p->cuts[c] < p->at[i] + a->n);
    }
    for (size_t c = 1; c < p->n_cuts; c++)
        assert_true(p->cuts[c - 1] < p->cuts[c]);
    size_t bound = 0;
    for (unsigned ph = 0; ph <= phases; ph++) {
        size_t live = 0;
        for (size_t i = 0; i < p->n; i++) {
            const mlayout_life *a = &p->life[i];
            unsigned last = a->last == MLAYOUT_END ? phases : a->last;
            if (life_holds(a) && a->first <= ph && ph <= last)
                live += a->n;
        }
        bound = live > bound ? live : bound;
    }
    assert_true(bound <= p->total);
    return bound;
}

static void test_pack_by_lifetime(void **state)
{
    (void)state;
    /* by hand: two temporaries of different phases share; a tensor born after a temporary's
     * phase reuses its place; a place of a gradient holds nothing */
    mlayout l = {.record = true, .lives = true};
    size_t a = mlayout_add(&l, 100), b = mlayout_add_temp(&l, 200);
    mlayout_phase(&l);
    size_t c = mlayout_add_temp(&l, 200), dd = mlayout_add(&l, 150);
    mlayout_phase(&l);
    size_t e = mlayout_add(&l, 50), f = mlayout_add_unused(&l, 1000),
           g = mlayout_add_always(&l, 10);
    mlayout_pack p;
    assert_int_equal(mlayout_pack_plan(&l, &p), MANTA_OK);
    assert_int_equal(p.n, 7);
    check_pack(&p, 2);
    assert_int_equal(mlayout_pack_map(&p, b), mlayout_pack_map(&p, c));
    assert_true(mlayout_pack_map(&p, e) + 50 <= mlayout_pack_map(&p, c) + 200 &&
                mlayout_pack_map(&p, e) >= mlayout_pack_map(&p, c));
    assert_int_equal(mlayout_pack_map(&p, f), 0);
    assert_int_equal(mlayout_pack_map(&p, a + 7), mlayout_pack_map(&p, a) + 7);
    assert_int_equal(mlayout_pack_map(&p, dd + 149), mlayout_pack_map(&p, dd) + 149);
    (void)g;
    /* a, d, g and the temporary of the phase: 112 + 160 + 16 + 208 */
    assert_int_equal(p.total, 496);
    assert_true(p.total < l.total - 1008);
    mlayout_pack_free(&p);
    mlayout_free(&l);
    /* without lifetimes: nothing to plan */
    mlayout plain = {.record = true};
    mlayout_add(&plain, 10);
    assert_int_equal(mlayout_pack_plan(&plain, &p), MANTA_ERR_INVALID_ARG);
    assert_int_equal(p.n, 0);
    assert_int_equal(mlayout_pack_map(&p, 42), 42);
    mlayout_free(&plain);
    /* made-up layouts: each tensor saved, temporary, always or unused, 1 .. 4000 floats */
    manta_rng r;
    manta_rng_seed(&r, 3, 9);
    for (int trial = 0; trial < 40; trial++) {
        mlayout m = {.record = true, .lives = true};
        size_t held = 0;
        for (int i = 0; i < 80; i++) {
            if (manta_rng_uniform(&r) < 0.3f)
                mlayout_phase(&m);
            size_t len = 1 + (size_t)(manta_rng_uniform(&r) * 4000.0f);
            float k = manta_rng_uniform(&r);
            size_t before = m.total;
            if (k < 0.4f)
                mlayout_add(&m, len);
            else if (k < 0.85f)
                mlayout_add_temp(&m, len);
            else if (k < 0.9f)
                mlayout_add_always(&m, len);
            else
                mlayout_add_unused(&m, len);
            held += k < 0.9f ? m.total - before : 0;
        }
        assert_int_equal(mlayout_pack_plan(&m, &p), MANTA_OK);
        size_t bound = check_pack(&p, m.phase);
        assert_true(p.total <= held);
        for (size_t i = 0; i < p.n; i++) {
            size_t in = (size_t)(manta_rng_uniform(&r) * (float)p.life[i].n);
            assert_int_equal(mlayout_pack_map(&p, p.lo[i] + in), p.at[i] + in);
        }
        if (trial == 0)
            print_message("# made-up layout: %zu floats held, planned %zu, largest phase %zu\n",
                          held, p.total, bound);
        mlayout_pack_free(&p);
        mlayout_free(&m);
    }
}

/* ---- --batch auto ----------------------------------------------------------------------- */

/* A made-up plan: 1000 + 300 b bytes, the largest part 40 b bytes. */
static manta_status linear_plan(void *ctx, int batch, unsigned long long *bytes,
                                unsigned long long *unit, const char **what)
{
    int *calls = ctx;
    (*calls)++;
    *bytes = 1000 + 300ull * (unsigned)batch;
    *unit = 40ull * (unsigned)batch;
    *what = "activations";
    return MANTA_OK;
}

static void test_pick_batch_from_plan_and_limits(void **state)
{
    (void)state;
    assert_true(ofa_net_mem_fits(95, 10, 100, 10));
    assert_false(ofa_net_mem_fits(96, 10, 100, 10)); /* 95% of the global memory */
    assert_false(ofa_net_mem_fits(50, 11, 100, 10)); /* the largest allocation */
    int calls = 0, b;
    unsigned long long bytes, unit;
    const char *what;
    /* global 10000: 1000 + 300 b <= 9500 -> b <= 28; alloc 2000: 40 b -> b <= 50 */
    assert_int_equal(
        ofa_net_pick_batch(linear_plan, &calls, 64, 10000, 2000, &b, &bytes, &unit, &what),
        MANTA_OK);
    assert_int_equal(b, 28);
    assert_int_equal(bytes, 1000 + 300 * 28);
    assert_true(calls < 12); /* a search, not a scan */
    /* the largest allocation binds: 40 b <= 600 -> 15 */
    assert_int_equal(
        ofa_net_pick_batch(linear_plan, &calls, 64, 10000, 600, &b, &bytes, &unit, &what),
        MANTA_OK);
    assert_int_equal(b, 15);
    /* the cap binds */
    assert_int_equal(
        ofa_net_pick_batch(linear_plan, &calls, 8, 1000000, 1000000, &b, &bytes, &unit, &what),
        MANTA_OK);
    assert_int_equal(b, 8);
    /* batch 1 does not fit: 0, batch 1's plan for the message */
    assert_int_equal(
        ofa_net_pick_batch(linear_plan, &calls, 64, 10000, 39, &b, &bytes, &unit, &what), MANTA_OK);
    assert_int_equal(b, 0);
    assert_int_equal(unit, 40);
    assert_string_equal(what, "activations");
}

static const char *const space_json =
    "{\"format\": \"manta-ofa-space\", \"version\": 1, \"task\": \"stereo\", \"name\": \"tiny-a\","
    " \"crop\": {\"height\": 16, \"width\": 32}, \"max_disp\": 8,"
    " \"kernel_sizes\": [3, 5], \"expand_ratios\": [2, 3], \"depths\": [1, 2],"
    " \"stem\": {\"width\": 8, \"kernel\": 3, \"act\": \"h-swish\"},"
    " \"units\": [{\"width\": 8, \"stride\": 2, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 8, \"stride\": 1, \"act\": \"h-swish\", \"se\": true},"
    "  {\"width\": 16, \"stride\": 1, \"act\": \"relu\", \"se\": false},"
    "  {\"width\": 16, \"stride\": 2, \"act\": \"h-swish\", \"se\": true}],"
    " \"correlation\": {\"after_unit\": 2, \"max_disp\": 2, \"stride\": 1, \"redir_width\": 8},"
    " \"decoder\": {\"widths\": [16, 12, 8], \"width_ratios\": [0.5, 1]},"
    " \"loss\": {\"rounds\": [[0.1, 0.2, 0.3, 1], [0, 0, 0, 1]]}}";

/* Open the selected device with @p variant and, when @p limits is not NULL, its limits
 * clamped (as MANTA_DEVICE_LIMITS does). */
static mcl_dev *open_dev(int variant, const char *limits)
{
    mcl_device_list *list = malloc(sizeof *list);
    assert_non_null(list);
    manta_err err;
    manta_err_clear(&err);
    size_t idx = 0;
    if (mcl_enumerate(list, &err) != MANTA_OK || mcl_select(list, NULL, &idx, &err) != MANTA_OK)
        fail_msg("test device: %s", err.msg);
    mcl_device_info info = list->dev[idx];
    if (limits && mcl_limits_clamp(&info, limits, &err) != MANTA_OK)
        fail_msg("clamp %s: %s", limits, err.msg);
    mcl_options opt = {.variant = variant};
    mcl_dev *d = NULL;
    if (mcl_open(&info, &opt, &d, &err) != MANTA_OK)
        fail_msg("open: %s", err.msg);
    free(list);
    return d;
}

static void test_stereo_pick_batch(void **state)
{
    (void)state;
    mcl_dev *d = open_dev(MCL_VARIANT_CPU, NULL);
    stereo_space s;
    manta_err e;
    TU_OK_ERR(stereo_space_parse(space_json, &s, &e));
    stereo_mem m1, m5, m6;
    TU_OK(d, stereo_trainer_plan_memory(d, &s, 2, 1, &m1));
    TU_OK(d, stereo_trainer_plan_memory(d, &s, 2, 5, &m5));
    TU_OK(d, stereo_trainer_plan_memory(d, &s, 2, 6, &m6));
    assert_true(m1.bytes < m5.bytes && m5.bytes < m6.bytes);
    const unsigned long long alloc = mcl_info(d)->max_alloc;
    /* a device whose 95% holds batch 5's plan but not batch 6's */
    const unsigned long long global = (m5.bytes + m6.bytes) / 2 * 20 / 19;
    int b;
    stereo_mem m;
    TU_OK(d, stereo_trainer_pick_batch(d, &s, 2, 64, global, alloc, &b, &m));
    assert_int_equal(b, 5);
    assert_int_equal(m.bytes, m5.bytes);
    /* the largest allocation binds: batch 5's largest part */
    TU_OK(d, stereo_trainer_pick_batch(d, &s, 2, 64, 1ull << 40, m5.unit_bytes, &b, &m));
    assert_true(b >= 5);
    assert_true(m.unit_bytes <= m5.unit_bytes);
    stereo_mem mb;
    TU_OK(d, stereo_trainer_plan_memory(d, &s, 2, b + 1, &mb));
    assert_true(mb.unit_bytes > m5.unit_bytes);
    /* batch 1 does not fit: 0, batch 1's plan names its largest part */
    TU_OK(d, stereo_trainer_pick_batch(d, &s, 2, 64, m1.bytes / 2, alloc, &b, &m));
    assert_int_equal(b, 0);
    assert_int_equal(m.bytes, m1.bytes);
    assert_non_null(m.unit_what);
    /* the planner agrees with what a network creates */
    mcl_stats s0, s1;
    mcl_get_stats(d, &s0);
    stereo_net *n;
    TU_OK(d, stereo_net_create(d, &s, 3, 1, &n));
    mcl_get_stats(d, &s1);
    ofa_net_mem nm;
    TU_OK(d, stereo_net_plan_memory(d, &s, 3, false, &nm));
    assert_int_equal(s1.bytes_allocated - s0.bytes_allocated, nm.bytes);
    stereo_net_destroy(n);
    mcl_close(d);
}

/* ---- a split step against an unsplit one --------------------------------------------------- */

enum { PAIRS = 3 };

typedef struct step_out {
    float *preds, *grads, *dx;
    size_t n_preds, n_params;
    unsigned long buffers;
    size_t act_floats; /* the activations and the op scratch */
} step_out;

/* One forward on batch statistics and one backward of a sampled sub-network from fixed
 * inputs and prediction gradients; the predictions and the parameter gradients. */
static void run_step_of(mcl_dev *d, const stereo_space *s, bool unplanned, uint64_t arch_seed,
                        step_out *o)
{
    mcl_stats s0, s1;
    mcl_get_stats(d, &s0);
    stereo_net *n;
    if (unplanned)
        TU_OK(d, stereo_net_create_unplanned(d, s, PAIRS, 7, &n));
    else
        TU_OK(d, stereo_net_create(d, s, PAIRS, 7, &n));
    mcl_get_stats(d, &s1);
    o->buffers = s1.buffers_created - s0.buffers_created;
    o->act_floats = stereo_net_act_floats(n);
    ofa_slabs sl;
    stereo_net_slabs(n, &sl);
    manta_rng r;
    manta_rng_seed(&r, 5, arch_seed);
    ofa_arch a;
    stereo_arch_sample(s, &r, &a);
    TU_OK(d, stereo_net_set_arch(n, &a));
    const size_t nx = (size_t)2 * PAIRS * 3 * s->crop_h * s->crop_w;
    float *x = malloc(nx * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < nx; i++)
        x[i] = manta_rng_uniform(&r);
    TU_OK(d, mcl_write(d, stereo_net_input(n), x, nx));
    TU_OK(d, mcl_fill(d, sl.grads, 0.0f, sl.n_params));
    TU_OK(d, stereo_net_forward(n, sl.params, OFA_BN_TRAIN));
    o->n_preds = 0;
    for (int p = 0; p < stereo_preds(s); p++)
        o->n_preds +=
            (size_t)PAIRS * (s->crop_h >> (s->n_levels - p)) * (s->crop_w >> (s->n_levels - p));
    o->preds = malloc(o->n_preds * sizeof(float));
    assert_non_null(o->preds);
    float *gp = malloc(o->n_preds * sizeof(float));
    assert_non_null(gp);
    for (size_t i = 0; i < o->n_preds; i++)
        gp[i] = manta_rng_uniform(&r) - 0.5f;
    size_t at = 0;
    for (int p = 0; p < stereo_preds(s); p++) {
        size_t len =
            (size_t)PAIRS * (s->crop_h >> (s->n_levels - p)) * (s->crop_w >> (s->n_levels - p));
        TU_OK(d, mcl_read(d, stereo_net_pred(n, p), o->preds + at, len));
        TU_OK(d, mcl_write(d, stereo_net_dpred(n, p), gp + at, len));
        at += len;
    }
    TU_OK(d, stereo_net_backward(n));
    o->n_params = sl.n_params;
    o->grads = malloc(sl.n_params * sizeof(float));
    assert_non_null(o->grads);
    TU_OK(d, mcl_read(d, sl.grads, o->grads, sl.n_params));
    free(x), free(gp);
    stereo_net_destroy(n);
}

static void run_step(mcl_dev *d, const stereo_space *s, step_out *o)
{
    run_step_of(d, s, false, 5, o);
}

static void free_out(step_out *o) { free(o->preds), free(o->grads); }

static double rel_diff(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0 ? num / den : num;
}

static void test_split_step_equals_unsplit(void **state)
{
    (void)state;
    stereo_space s;
    manta_err e;
    TU_OK_ERR(stereo_space_parse(space_json, &s, &e));
    for (int v = MCL_VARIANT_CPU; v <= MCL_VARIANT_GPU; v++) {
        mcl_dev *d = open_dev(v, NULL);
        ofa_net_mem m;
        TU_OK(d, stereo_net_plan_memory(d, &s, PAIRS, false, &m));
        step_out whole, split, chunked;
        run_step(d, &s, &whole);
        mcl_close(d);
        /* an allocation limit above every part that must stay whole (the op scratch among
         * them: not chunked) but below the activations and their gradients */
        size_t keep = m.unit > m.scratch ? m.unit : m.scratch;
        keep = keep > m.params ? keep : m.params;
        keep = keep > m.state ? keep : m.state;
        assert_true(keep < m.dacts && m.dacts < m.acts);
        char limits[64];
        snprintf(limits, sizeof limits, "alloc=%zu", keep * sizeof(float));
        d = open_dev(v, limits);
        run_step(d, &s, &split);
        mcl_close(d);
        print_message("# %s kernels: activations %zu floats, gradients %zu, scratch %zu, largest "
                      "part %zu (%s); %lu buffers whole, %lu split at %s\n",
                      v == MCL_VARIANT_CPU ? "cpu" : "gpu", m.acts, m.dacts, m.scratch, m.unit,
                      m.unit_what, whole.buffers, split.buffers, limits);
        assert_true(split.buffers > whole.buffers);
        assert_memory_equal(split.preds, whole.preds, whole.n_preds * sizeof(float));
        assert_memory_equal(split.grads, whole.grads, whole.n_params * sizeof(float));
        /* a limit below the op scratch too: every convolution with scratch runs in chunks
         * of images; the same to float rounding (the GPU variant: its 3x3 convolutions run
         * as im2col and GEMMs; the CPU variant's need no scratch) */
        keep = m.act_unit > m.params ? m.act_unit : m.params;
        keep = keep > m.state ? keep : m.state;
        if (v == MCL_VARIANT_CPU) {
            assert_true(m.scratch <= keep);
            free_out(&whole), free_out(&split);
            continue;
        }
        assert_true(keep < m.scratch);
        snprintf(limits, sizeof limits, "alloc=%zu", keep * sizeof(float));
        d = open_dev(v, limits);
        /* the finest level's 3x3 convolution: [skip, prediction, deconvolution] -> 8 */
        nn_conv2d_shape c = {PAIRS, 3 + 1 + 8, s.crop_h, s.crop_w, 8, 3, 3, 1, 1, 1, 1, 0};
        assert_true(nn_conv2d_chunk(d, &c) < PAIRS);
        ofa_net_mem mc;
        TU_OK(d, stereo_net_plan_memory(d, &s, PAIRS, false, &mc));
        assert_true(mc.scratch <= keep);
        run_step(d, &s, &chunked);
        mcl_close(d);
        double dp = rel_diff(chunked.preds, whole.preds, whole.n_preds);
        double dg = rel_diff(chunked.grads, whole.grads, whole.n_params);
        print_message("# %s: op scratch %zu floats (chunked), predictions rel. squared diff "
                      "%.2e, gradients %.2e\n",
                      limits, mc.scratch, dp, dg);
        assert_true(dp < 1e-10 && dg < 1e-10);
        free_out(&whole), free_out(&split), free_out(&chunked);
    }
}

/* ---- a planned step against an unplanned one ------------------------------------------------ */

static void test_lifetime_plan_equals_unplanned(void **state)
{
    (void)state;
    stereo_space s;
    manta_err e;
    TU_OK_ERR(stereo_space_parse(space_json, &s, &e));
    for (int v = MCL_VARIANT_CPU; v <= MCL_VARIANT_GPU; v++) {
        mcl_dev *d = open_dev(v, NULL);
        stereo_net *n;
        TU_OK(d, stereo_net_create(d, &s, PAIRS, 7, &n));
        const mlayout_pack *p = stereo_net_act_plan(n);
        assert_true(p->n > 0);
        unsigned phases = 0;
        for (size_t i = 0; i < p->n; i++)
            if (p->life[i].last != MLAYOUT_END && p->life[i].last > phases)
                phases = p->life[i].last;
        const size_t bound = check_pack(p, phases + 1), tensors = p->n;
        stereo_net_destroy(n);
        /* sampled sub-networks (elastic depth, kernel, expand ratio, decoder width) */
        for (uint64_t k = 0; k < 4; k++) {
            step_out planned, unplanned;
            run_step_of(d, &s, false, 5 + k, &planned);
            run_step_of(d, &s, true, 5 + k, &unplanned);
            if (k == 0)
                print_message("# %s kernels: activations and scratch %zu floats planned by "
                              "lifetime (%zu tensors, largest phase %zu), %zu unplanned\n",
                              v == MCL_VARIANT_CPU ? "cpu" : "gpu", planned.act_floats, tensors,
                              bound, unplanned.act_floats);
            assert_true(planned.act_floats < unplanned.act_floats);
            assert_memory_equal(planned.preds, unplanned.preds, planned.n_preds * sizeof(float));
            assert_memory_equal(planned.grads, unplanned.grads, planned.n_params * sizeof(float));
            free_out(&planned), free_out(&unplanned);
        }
        mcl_close(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_at_tensors),
        cmocka_unit_test(test_pack_by_lifetime),
        cmocka_unit_test(test_pick_batch_from_plan_and_limits),
        cmocka_unit_test(test_stereo_pick_batch),
        cmocka_unit_test(test_split_step_equals_unsplit),
        cmocka_unit_test(test_lifetime_plan_equals_unplanned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
