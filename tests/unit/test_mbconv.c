/* Elastic MBConv units (elastic/mbconv.h) hosted by a tiny network of the test's own, as the
 * stereo supernet hosts them: one unit of three slots (stride 2 first, identity skips
 * after) planned for 8x12 inputs and run on non-square 6x10 inputs with smaller kernels
 * (the kernel transforms), fewer expanded channels and SE units, and depth 3 or 2. Under
 * both kernel variants the forward agrees with a plain-C double reference, the backward
 * with finite differences of the forward along random directions (parameters and input),
 * and weights outside the configuration receive no gradient; the slots share one region of
 * the gradient slab. Bad plans and configurations are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/variants.h"
#include "elastic/mbconv.h"
#include "ref/ref_act.h"
#include "ref/ref_bn.h"
#include "ref/ref_conv.h"
#include "ref/ref_linear.h"
#include "ref/ref_pool.h"
#include "space/ofa_space.h"

enum { B = 2, IN_C = 4, WIDTH = 8, MID_MAX = 48, SLOTS = 3, HMAX = 8, WMAX = 12, H = 6, W = 10 };

/* The host network: an input tensor, one MBConv unit, a loss sum(out * r). */
typedef struct host {
    ofa_net net;
    ofa_mbconv slot[SLOTS];
    ofa_mbconv_cfg cfg[SLOTS];
    int depth;
    size_t x0; /* input (B, IN_C, H, W) */
    size_t n_params, n_decay, n_state;
} host;

/* What one test runs: the unit's features and the active configuration of each slot. */
typedef struct setup_t {
    bool se;
    nn_act act;
    int depth;
    int ki[SLOTS], mid[SLOTS];
} setup_t;

static int out_size(int in, int stride) { return (in - 1) / stride + 1; }

/* Moves the parameters from the training initialisation to a generic point (as
 * test_supernet does): weights doubled, kernel matrices the identity plus noise, batch
 * norm scales (0.5 .. 1.5) and shifts and SE biases (+-0.2) random. Scales and shifts far
 * from 1 and 0 would leave ReLU channels nearly all zero: batch norm over so few values
 * then divides by a near-zero deviation and every ReLU kink inside a finite step shows. */
static void generic_values(host *h, float *p, manta_rng *rng)
{
    for (size_t i = 0; i < h->n_params; i++) {
        double u = 2 * manta_rng_uniform(rng) - 1;
        p[i] = i < h->n_decay ? 2.0f * p[i] : (float)(p[i] * (1 + 0.3 * u) + 0.2 * u);
    }
    for (int s = 0; s < SLOTS; s++) {
        const ofa_mbconv *u = &h->slot[s];
        for (int i = 0; i + 1 < u->n_ks; i++) {
            int kk = u->ks[i] * u->ks[i];
            for (int j = 0; j < kk * kk; j++)
                p[u->kmat[i] + (size_t)j] =
                    (float)((j % (kk + 1) == 0) + 0.2 * (2 * manta_rng_uniform(rng) - 1));
        }
    }
}

/* Plan, create and initialise the host network the way a network embedding ofa_net
 * does: every slot's weights, then batch norms, then activations and scratch. */
static void host_create(host *h, mcl_dev *d, const setup_t *t)
{
    memset(h, 0, sizeof *h);
    h->net.d = d;
    h->net.batch = B;
    mlayout pl = {0}, sl = {0}, al = {0};
    manta_err *err = mcl_err(d);
    for (int i = 0; i < SLOTS; i++) {
        ofa_mbconv_spec sp = {.in_c = i ? WIDTH : IN_C,
                              .width = WIDTH,
                              .mid_max = MID_MAX,
                              .stride = i ? 1 : 2,
                              .act = t->act,
                              .se = t->se,
                              .n_ks = 3,
                              .ks = {3, 5, 7},
                              .h = i ? out_size(HMAX, 2) : HMAX,
                              .w = i ? out_size(WMAX, 2) : WMAX};
        TU_OK(d, ofa_mbconv_plan_weights(&h->slot[i], &sp, &pl, err));
    }
    h->n_decay = pl.total;
    for (int i = 0; i < SLOTS; i++)
        ofa_mbconv_plan_bn(&h->slot[i], &pl, &sl);
    h->n_params = pl.total;
    h->n_state = sl.total;
    h->x0 = mlayout_add(&al, (size_t)B * IN_C * HMAX * WMAX);
    size_t scratch = 0;
    int widest = 1;
    for (int i = 0; i < SLOTS; i++) {
        ofa_mbconv_plan_acts(&h->net, &h->slot[i], &al, &scratch);
        int c = ofa_mbconv_bn_channels(&h->slot[i]);
        widest = c > widest ? c : widest;
    }
    ofa_net_plan_stats(&h->net, &al, widest);
    const ofa_net_sizes sz = {.params = pl.total,
                              .state = sl.total,
                              .acts = al.total,
                              .scratch = scratch,
                              .params_name = "test parameters",
                              .grads_name = "test gradients",
                              .who = "test"};
    TU_OK(d, ofa_net_alloc(&h->net, &sz));
    float *p = calloc(h->n_params, sizeof *p), *st = calloc(h->n_state, sizeof *st);
    assert_true(p && st);
    manta_rng rng;
    manta_rng_seed(&rng, 17, 3);
    for (int i = 0; i < SLOTS; i++) {
        const ofa_bn *bns[3];
        int ch[3], nb = ofa_mbconv_bns(&h->slot[i], bns, ch);
        ofa_mbconv_init_weights(&h->slot[i], &rng, p);
        for (int b = 0; b < nb; b++)
            ofa_bn_init_values(bns[b], ch[b], p, st);
    }
    generic_values(h, p, &rng);
    TU_OK(d, mcl_write(d, mslab_view(&h->net.params, 0), p, h->n_params));
    TU_OK(d, mcl_write(d, mslab_view(&h->net.state, 0), st, h->n_state));
    free(p), free(st);
    h->net.fwd_params = mslab_view(&h->net.params, 0);
    h->net.fwd_bn = OFA_BN_BATCH_ONLY;
}

/* The first t->depth slots active on an H x W input, each feeding the next. */
static void host_configure(host *h, const setup_t *t)
{
    size_t in = h->x0;
    int hh = H, ww = W;
    h->depth = t->depth;
    for (int i = 0; i < t->depth; i++) {
        ofa_mbconv_cfg *c = &h->cfg[i];
        *c = (ofa_mbconv_cfg){.ki = t->ki[i],
                              .mid = t->mid[i],
                              .se = ofa_mbconv_se_units(t->mid[i]),
                              .h = hh,
                              .w = ww,
                              .residual = i > 0,
                              .in = in};
        TU_OK(h->net.d, ofa_mbconv_configure(&h->slot[i], c, mcl_err(h->net.d)));
        assert_int_equal(c->k, h->slot[i].ks[t->ki[i]]);
        assert_int_equal(c->ho, out_size(hh, h->slot[i].stride));
        assert_int_equal(c->wo, out_size(ww, h->slot[i].stride));
        in = c->out;
        hh = c->ho;
        ww = c->wo;
    }
    assert_int_equal(h->cfg[t->depth - 1].ho, 3); /* non-square output: 3 x 5 */
    assert_int_equal(h->cfg[t->depth - 1].wo, 5);
}

static size_t out_floats(const host *h)
{
    const ofa_mbconv_cfg *c = &h->cfg[h->depth - 1];
    return (size_t)B * WIDTH * c->ho * c->wo;
}

static void host_forward(host *h)
{
    for (int i = 0; i < h->depth; i++)
        TU_OK(h->net.d, ofa_mbconv_forward(&h->net, &h->slot[i], &h->cfg[i]));
}

/* Gradients of sum(out * r): parameters (zeroed first, then accumulated) and input. */
static void host_backward(host *h, const double *r)
{
    mcl_dev *d = h->net.d;
    TU_OK(d, mcl_fill(d, mslab_view(&h->net.grads, 0), 0.0f, h->n_params));
    tu_upload(d, ofa_net_ga(&h->net, h->cfg[h->depth - 1].out), r, out_floats(h));
    for (int i = h->depth - 1; i >= 0; i--)
        TU_OK(d, ofa_mbconv_backward(&h->net, &h->slot[i], &h->cfg[i]));
}

static void host_destroy(host *h) { ofa_net_free(&h->net); }

/* ---- the plain-C reference --------------------------------------------------------------- */

/* The first mid channels of the stored kernel, transformed down to ks[ki] (OFA's chain). */
static double *ref_kernel(const ofa_mbconv *u, const ofa_mbconv_cfg *c, const double *p)
{
    int big = u->ks[u->n_ks - 1];
    double *cur = tu_doubles((size_t)c->mid * big * big);
    memcpy(cur, p + u->dw_w, (size_t)c->mid * big * big * sizeof *cur);
    for (int i = u->n_ks - 2; i >= c->ki; i--) {
        const int k = u->ks[i], kk = k * k, off = big / 2 - k / 2;
        const double *m = p + u->kmat[i];
        double *next = tu_doubles((size_t)c->mid * kk);
        for (int ch = 0; ch < c->mid; ch++)
            for (int a = 0; a < kk; a++) {
                double s = 0;
                for (int b = 0; b < kk; b++)
                    s += cur[(size_t)ch * big * big + (size_t)(off + b / k) * big + off + b % k] *
                         m[a * kk + b];
                next[(size_t)ch * kk + a] = s;
            }
        free(cur);
        cur = next;
        big = k;
    }
    return cur;
}

static void ref_bn(const ofa_bn *b, int c, size_t hw, const double *p, double *x)
{
    ref_bn_forward_train(B, c, (int)hw, 0.1, OFA_BN_EPS, x, p + b->gamma, p + b->beta, NULL, NULL,
                         x, NULL, NULL);
}

/* Squeeze-and-excite on x (B, mid, ohw), in place. */
static void ref_se(const ofa_mbconv *u, const ofa_mbconv_cfg *c, const double *p, double *x,
                   size_t ohw)
{
    const size_t nm = (size_t)B * c->mid;
    double *pool = tu_doubles(nm), *r = tu_doubles((size_t)B * c->se), *s = tu_doubles(nm);
    ref_avgpool(nm, ohw, x, pool);
    ref_linear_forward(B, c->mid, c->se, u->mid_max, pool, p + u->se_r_w, p + u->se_r_b, r);
    ref_act_forward(NN_ACT_RELU, r, r, (size_t)B * c->se);
    ref_linear_forward(B, c->se, c->mid, u->se_max, r, p + u->se_e_w, p + u->se_e_b, s);
    ref_act_forward(NN_ACT_HSIGMOID, s, s, nm);
    ref_scale(nm, ohw, x, s, x);
    free(pool), free(r), free(s);
}

/* One slot: x (B, in_c, h, w) -> y (B, width, ho, wo), batch statistics. The output size
 * is recomputed here from the reference's convolution arithmetic. */
static void ref_slot(const ofa_mbconv *u, const ofa_mbconv_cfg *c, const double *p, const double *x,
                     double *y)
{
    const int k = u->ks[c->ki], mid = c->mid;
    const int ho = ref_conv_out(c->h, k, u->stride, k / 2);
    const int wo = ref_conv_out(c->w, k, u->stride, k / 2);
    const size_t hw = (size_t)c->h * c->w, ohw = (size_t)ho * wo;
    double *e = tu_doubles((size_t)B * mid * hw), *dd = tu_doubles((size_t)B * mid * ohw);
    nn_conv2d_shape es = {B, u->in_c, c->h, c->w, mid, 1, 1, 1, 1, 0, 0, u->in_c};
    ref_conv2d_forward(&es, x, p + u->e_w, e);
    ref_bn(&u->e_bn, mid, hw, p, e);
    ref_act_forward(u->act, e, e, (size_t)B * mid * hw);
    double *kern = ref_kernel(u, c, p);
    nn_dw_shape ds = {B, mid, c->h, c->w, k, u->stride, k / 2};
    ref_dw_forward(&ds, e, kern, dd);
    ref_bn(&u->d_bn, mid, ohw, p, dd);
    ref_act_forward(u->act, dd, dd, (size_t)B * mid * ohw);
    if (u->se)
        ref_se(u, c, p, dd, ohw);
    nn_conv2d_shape ps = {B, mid, ho, wo, u->width, 1, 1, 1, 1, 0, 0, u->mid_max};
    ref_conv2d_forward(&ps, dd, p + u->p_w, y);
    ref_bn(&u->p_bn, u->width, ohw, p, y);
    if (c->residual)
        for (size_t i = 0; i < (size_t)B * u->width * ohw; i++)
            y[i] += x[i];
    free(e), free(dd), free(kern);
}

/* ---- the checks ---------------------------------------------------------------------------- */

static double loss_of(host *h, const double *r, double *out)
{
    host_forward(h);
    tu_download(h->net.d, ofa_net_a(&h->net, h->cfg[h->depth - 1].out), out, out_floats(h));
    return tu_dot(out, r, out_floats(h));
}

/* The device forward against the reference, slot after slot. */
static void check_forward(host *h, const double *p, const double *x)
{
    const size_t big = (size_t)B * MID_MAX * HMAX * WMAX;
    double *cur = tu_doubles(big), *next = tu_doubles(big), *got = tu_doubles(big);
    memcpy(cur, x, (size_t)B * IN_C * H * W * sizeof *cur);
    host_forward(h);
    for (int i = 0; i < h->depth; i++) {
        const ofa_mbconv_cfg *c = &h->cfg[i];
        ref_slot(&h->slot[i], c, p, cur, next);
        size_t n = (size_t)B * WIDTH * c->ho * c->wo;
        tu_download(h->net.d, ofa_net_a(&h->net, c->out), got, n);
        char what[64];
        snprintf(what, sizeof what, "slot %d output (%dx%d -> %dx%d)", i, c->h, c->w, c->ho, c->wo);
        tu_variant_assert_close(h->net.d, got, next, n, 2e-4, what);
        double *t = cur;
        cur = next, next = t;
    }
    free(cur), free(next), free(got);
}

/* d/dt L(p + t v, x + t u) at t = 0 by central differences against g . v + gx . u, along 3
 * random directions; each must agree within 10% (+0.02) (ReLU and h-swish kinks make a
 * finite step through the unit inexact), and their mean relative error within 4%. */
static void check_gradients(host *h, double *p0, double *x0, uint64_t seed)
{
    mcl_dev *d = h->net.d;
    const size_t np = h->n_params, nx = (size_t)B * IN_C * H * W, nl = out_floats(h);
    mview params = mslab_view(&h->net.params, 0), xv = ofa_net_a(&h->net, h->x0);
    manta_rng rng;
    manta_rng_seed(&rng, seed, 1);
    double *r = tu_doubles(nl), *out = tu_doubles(nl), *g = tu_doubles(np), *gx = tu_doubles(nx);
    double *v = tu_doubles(np), *vx = tu_doubles(nx), *pt = tu_doubles(np), *xt = tu_doubles(nx);
    tu_fill_uniform(&rng, r, nl, -1, 1);
    loss_of(h, r, out);
    host_backward(h, r);
    tu_download(d, mslab_view(&h->net.grads, 0), g, np);
    tu_download(d, ofa_net_ga(&h->net, h->x0), gx, nx);
    double rel_sum = 0;
    for (int trial = 0; trial < 3; trial++) {
        double gv = 0, terms = 0;
        for (size_t i = 0; i < np + nx; i++) {
            double *vi = i < np ? &v[i] : &vx[i - np], a = i < np ? p0[i] : x0[i - np];
            *vi = (2 * manta_rng_uniform(&rng) - 1) * (fabs(a) + 0.05);
            double term = (i < np ? g[i] : gx[i - np]) * *vi;
            gv += term;
            terms += term * term;
        }
        const double eps = 1.25e-4;
        double l[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            double t = sgn ? -eps : eps;
            for (size_t i = 0; i < np; i++)
                pt[i] = p0[i] + t * v[i];
            for (size_t i = 0; i < nx; i++)
                xt[i] = x0[i] + t * vx[i];
            tu_upload(d, params, pt, np);
            tu_upload(d, xv, xt, nx);
            l[sgn] = loss_of(h, r, out);
        }
        double fd = (l[0] - l[1]) / (2 * eps);
        if (!(fabs(fd - gv) <= 0.1 * fabs(gv) + 0.02))
            fail_msg("%s kernels, trial %d: finite difference %.6g, gradient %.6g",
                     tu_variant_name(d), trial, fd, gv);
        rel_sum += fabs(fd - gv) / fmax(fmax(fabs(gv), sqrt(terms)), 1e-3);
    }
    tu_upload(d, params, p0, np);
    tu_upload(d, xv, x0, nx);
    print_message("# %s kernels: mean relative error %.4f over 3 directions\n", tu_variant_name(d),
                  rel_sum / 3);
    if (!(rel_sum / 3 < 0.04))
        fail_msg("mean relative error %.4f", rel_sum / 3);
    free(r), free(out), free(g), free(gx), free(v), free(vx), free(pt), free(xt);
}

static double abs_sum(const double *g, size_t off, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += fabs(g[off + i]);
    return s;
}

/* Weights outside the configuration get no gradient (g: the last backward's): every
 * parameter of a slot beyond the depth; in an active slot, expand rows and depthwise
 * channels beyond mid, the outer ring of the stored 7x7 kernel for a smaller kernel (the
 * 7 -> 5 matrix reads its centre 5x5) and the matrices below the kernel used. */
static void check_idle_weights(const host *h, const double *g)
{
    for (int s = 0; s < SLOTS; s++) {
        const ofa_mbconv *u = &h->slot[s];
        const ofa_mbconv_cfg *c = &h->cfg[s];
        if (s >= h->depth) {
            const ofa_bn *bns[3];
            int ch[3], nb = ofa_mbconv_bns(u, bns, ch);
            double idle = abs_sum(g, u->e_w, u->p_w + (size_t)u->width * MID_MAX - u->e_w);
            for (int b = 0; b < nb; b++)
                idle += abs_sum(g, bns[b]->gamma, (size_t)ch[b]) +
                        abs_sum(g, bns[b]->beta, (size_t)ch[b]);
            if (u->se)
                idle += abs_sum(g, u->se_r_b, (size_t)u->se_max) + abs_sum(g, u->se_e_b, MID_MAX);
            if (idle != 0)
                fail_msg("slot %d beyond the depth: gradient %g", s, idle);
            continue;
        }
        double idle = 0, used = 0;
        for (int ch = 0; ch < MID_MAX; ch++)
            for (int t = 0; t < 49; t++) {
                bool outer = t / 7 == 0 || t / 7 == 6 || t % 7 == 0 || t % 7 == 6;
                double v = fabs(g[u->dw_w + (size_t)ch * 49 + (size_t)t]);
                if (ch >= c->mid || (outer && c->ki < u->n_ks - 1))
                    idle += v;
                else
                    used += v;
            }
        idle += abs_sum(g, u->e_w + (size_t)c->mid * u->in_c, (size_t)(MID_MAX - c->mid) * u->in_c);
        for (int i = 0; i + 1 < u->n_ks; i++) {
            double m = abs_sum(g, u->kmat[i], (size_t)u->ks[i] * u->ks[i] * u->ks[i] * u->ks[i]);
            if (i < c->ki)
                idle += m;
            else
                used += m;
        }
        if (idle != 0)
            fail_msg("slot %d: gradient %g outside its configuration", s, idle);
        assert_true(used > 0);
    }
}

static void run_setup(void **state, const setup_t *t, uint64_t seed)
{
    tu_variant_devs *v = *state;
    for (int k = 0; k < TU_VARIANTS; k++) {
        host h;
        host_create(&h, v->dev[k], t);
        host_configure(&h, t);
        manta_rng rng;
        manta_rng_seed(&rng, seed, 2);
        const size_t nx = (size_t)B * IN_C * H * W;
        double *x = tu_doubles(nx), *p = tu_doubles(h.n_params);
        tu_fill_uniform(&rng, x, nx, -2, 2);
        tu_upload(v->dev[k], ofa_net_a(&h.net, h.x0), x, nx);
        tu_download(v->dev[k], mslab_view(&h.net.params, 0), p, h.n_params);
        check_forward(&h, p, x);
        check_gradients(&h, p, x, seed);
        double *g = tu_doubles(h.n_params);
        tu_download(v->dev[k], mslab_view(&h.net.grads, 0), g, h.n_params);
        check_idle_weights(&h, g);
        free(x), free(p), free(g);
        host_destroy(&h);
    }
}

static void test_no_se_relu_kernels_3_5(void **state)
{
    const setup_t t = {false, NN_ACT_RELU, 3, {0, 1, 0}, {24, 48, 16}};
    run_setup(state, &t, 1);
}

static void test_se_hswish_every_kernel(void **state)
{
    const setup_t t = {true, NN_ACT_HSWISH, 3, {1, 2, 0}, {24, 40, 48}};
    run_setup(state, &t, 2);
}

static void test_se_depth_two(void **state)
{
    const setup_t t = {true, NN_ACT_RELU, 2, {0, 1, 0}, {40, 16, 8}};
    run_setup(state, &t, 3);
}

/* The gradient slab: each slot's tensors but its output (from e_conv to p_conv) have their
 * gradients in one region shared by the slots, at its start; the input and every slot's
 * output keep places of their own after it, in the activations' order and as large. */
static void test_gradient_slab_shares_slot_internals(void **state)
{
    tu_variant_devs *v = *state;
    const setup_t t = {true, NN_ACT_HSWISH, 3, {1, 2, 0}, {24, 40, 48}};
    host h;
    host_create(&h, v->dev[0], &t);
    const ofa_net *n = &h.net;
    size_t internal = 0, shared = 0;
    for (int i = 0; i < SLOTS; i++) {
        const ofa_mbconv_acts *a = &h.slot[i].t;
        const size_t len = a->p_bn - a->e_conv;
        internal += len;
        shared = len > shared ? len : shared;
        assert_int_equal(ofa_net_ga(n, a->e_conv).off, 0);
        assert_int_equal(ofa_net_ga(n, a->p_conv).off, a->p_conv - a->e_conv);
    }
    assert_int_equal(n->gplan.shared, shared);
    assert_int_equal(n->dacts.floats, n->acts.floats - internal + shared);
    /* the slot with a stride has no identity skip: its output is p_bn */
    assert_int_equal(h.slot[0].t.out, h.slot[0].t.p_bn);
    const size_t own[] = {h.x0,
                          h.slot[0].t.p_bn,
                          h.slot[1].t.p_bn,
                          h.slot[1].t.out,
                          h.slot[2].t.p_bn,
                          h.slot[2].t.out,
                          n->stats_tmp};
    size_t next = shared;
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        size_t before = 0; /* internal floats planned before it */
        for (int j = 0; j < SLOTS; j++)
            before += h.slot[j].t.e_conv < own[i] ? h.slot[j].t.p_bn - h.slot[j].t.e_conv : 0;
        const size_t g = ofa_net_ga(n, own[i]).off;
        assert_int_equal(g, shared + own[i] - before);
        assert_true(g >= next);
        next = g + 1;
    }
    /* a range that begins before the last one ends, or an empty one, is not marked */
    ofa_net_plan_internal(&h.net, h.slot[2].t.e_conv, n->acts.floats);
    ofa_net_plan_internal(&h.net, n->acts.floats, n->acts.floats);
    assert_int_equal(n->gplan.n, SLOTS);
    assert_int_equal(n->gplan.shared, shared);
    host_destroy(&h);
}

/* Plans and configurations outside the slot are refused, naming the field. */
static void test_bad_plan_and_configuration_refused(void **state)
{
    tu_variant_devs *v = *state;
    mcl_dev *d = v->dev[0];
    manta_err e;
    mlayout pl = {0};
    ofa_mbconv u;
    ofa_mbconv_spec sp = {.in_c = 4,
                          .width = 4,
                          .mid_max = 16,
                          .stride = 1,
                          .act = NN_ACT_RELU,
                          .n_ks = 2,
                          .ks = {3, 4},
                          .h = 5,
                          .w = 7};
    manta_err_clear(&e);
    assert_int_equal(ofa_mbconv_plan_weights(&u, &sp, &pl, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "ks"));
    sp.ks[1] = 5;
    sp.w = 0;
    assert_int_equal(ofa_mbconv_plan_weights(&u, &sp, &pl, &e), MANTA_ERR_INVALID_ARG);
    sp.w = 7;
    TU_OK(d, ofa_mbconv_plan_weights(&u, &sp, &pl, &e));
    const ofa_mbconv_cfg good = {.ki = 0, .mid = 8, .se = 8, .h = 5, .w = 7, .residual = true};
    ofa_mbconv_cfg c = good;
    TU_OK(d, ofa_mbconv_configure(&u, &c, &e));
    assert_int_equal(c.ho, 5);
    assert_int_equal(c.wo, 7);
    const struct {
        ofa_mbconv_cfg c;
        const char *field;
    } bad[] = {
        {{.ki = 2, .mid = 8, .h = 5, .w = 7}, "kernel"},
        {{.ki = 0, .mid = 17, .h = 5, .w = 7}, "mid"},
        {{.ki = 0, .mid = 8, .h = 6, .w = 7}, "h"},
        {{.ki = 0, .mid = 8, .h = 5, .w = 8}, "w"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = bad[i].c;
        assert_int_equal(ofa_mbconv_configure(&u, &c, &e), MANTA_ERR_INVALID_ARG);
        assert_non_null(strstr(e.msg, bad[i].field));
    }
    sp.stride = 2; /* no identity skip across a stride */
    TU_OK(d, ofa_mbconv_plan_weights(&u, &sp, &pl, &e));
    c = good;
    assert_int_equal(ofa_mbconv_configure(&u, &c, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "residual"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_se_relu_kernels_3_5),
        cmocka_unit_test(test_se_hswish_every_kernel),
        cmocka_unit_test(test_se_depth_two),
        cmocka_unit_test(test_gradient_slab_shares_slot_internals),
        cmocka_unit_test(test_bad_plan_and_configuration_refused),
    };
    return cmocka_run_group_tests_name("ofa mbconv units", tests, tu_setup_variants,
                                       tu_teardown_variants);
}
