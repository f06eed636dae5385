/* PAD folded into the convolution that follows (mengine_fuse_pad()): a chain of PAD ->
 * DEPTHWISE_CONV_2D / CONV_2D (VALID) pairs run folded and unfused (the same operators with
 * every PAD output also a model output, which keeps the PADs), outputs equal bit for bit;
 * the folded PADs counted, their outputs without memory, no fold where the offline plan
 * gives the PAD's output an offset, none into a 1x1 convolution. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "common/tflbuild.h"

enum { N_PADS = 5 };

typedef struct chain {
    tb_model m;
    int32_t in, out, pads[N_PADS]; /* tensors */
    size_t n_in, n_out;
} chain;

static int32_t f32(chain *c, const char *name, int32_t n, int32_t h, int32_t w, int32_t ch,
                   const float *data)
{
    const int32_t d[4] = {n, h, w, ch};
    return tb_tensor_f32(&c->m, name, 4, d, data);
}

/* PAD of (t, b, l, r) rows / columns on @p x (1, h, w, ch) -> the padded tensor. */
static int32_t pad(chain *c, int32_t x, int h, int w, int ch, const int32_t *tblr)
{
    const int32_t pv[8] = {0, 0, tblr[0], tblr[1], tblr[2], tblr[3], 0, 0}, dp[2] = {4, 2};
    int32_t ins[2] = {x, tb_tensor_buf(&c->m, "paddings", 2, 2, dp,
                                       (uint32_t)tb_buffer_add(&c->m, pv, sizeof pv))};
    const int32_t out = f32(c, "padded", 1, h + tblr[0] + tblr[1], w + tblr[2] + tblr[3], ch, NULL);
    tb_opts o = {.type = 22};
    tb_op_add(&c->m, MENGINE_OP_PAD, 1, 2, ins, out, &o);
    return out;
}

static float *rnd(manta_rng *rng, size_t n)
{
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    assert_true(f && d);
    tb_rand(rng, f, d, n, -1, 1);
    free(d);
    return f;
}

/* conv (depthwise when @p dw) of @p x (1, h, w, ci), k x k, VALID, stride s, co channels. */
static int32_t conv(chain *c, manta_rng *rng, int dw, int32_t x, int h, int w, int ci, int co,
                    int k, int s, int act, float **keep)
{
    const int oh = (h - k) / s + 1, ow = (w - k) / s + 1;
    const size_t nw = (size_t)k * k * ci * (dw ? 1 : co);
    keep[0] = rnd(rng, nw), keep[1] = rnd(rng, (size_t)co);
    const int32_t dwt[4] = {dw ? 1 : co, k, k, dw ? co : ci}, db[1] = {co};
    int32_t ins[3] = {x, tb_tensor_f32(&c->m, "w", 4, dwt, keep[0]),
                      tb_tensor_f32(&c->m, "b", 1, db, keep[1])};
    const int32_t out = f32(c, "conv", 1, oh, ow, co, NULL);
    tb_opts o = {.type = dw ? 2 : 1,
                 .padding = 1,
                 .stride_w = s,
                 .stride_h = s,
                 .act = act,
                 .depth_multiplier = dw ? 1 : 0};
    tb_op_add(&c->m, dw ? MENGINE_OP_DEPTHWISE_CONV_2D : MENGINE_OP_CONV_2D, 1, 3, ins, out, &o);
    return out;
}

/* X (1, 9, 21, 8) -> PAD -> DW 3x3 -> PAD (asymmetric) -> CONV 3x3 s2 (5 channels) -> PAD ->
 * CONV 3x3 (1 channel) -> PAD -> CONV 3x3 (20 channels: two panels) -> PAD -> DW 3x3 s2.
 * With @p keep_pads, every PAD output is also a model output. Weights from @p seed. */
static void build(chain *c, int keep_pads, float **w)
{
    manta_rng rng;
    manta_rng_seed(&rng, 77, 1);
    tb_init(&c->m);
    const int32_t all1[4] = {1, 1, 1, 1}, asym[4] = {1, 1, 2, 1}, big[4] = {2, 0, 0, 3};
    c->in = f32(c, "x", 1, 9, 21, 8, NULL);
    c->pads[0] = pad(c, c->in, 9, 21, 8, all1);                           /* 11 x 23 */
    int32_t t = conv(c, &rng, 1, c->pads[0], 11, 23, 8, 8, 3, 1, 3, w);   /* 9 x 21 */
    c->pads[1] = pad(c, t, 9, 21, 8, asym);                               /* 11 x 24 */
    t = conv(c, &rng, 0, c->pads[1], 11, 24, 8, 5, 3, 2, 0, w + 2);       /* 5 x 11 */
    c->pads[2] = pad(c, t, 5, 11, 5, all1);                               /* 7 x 13 */
    t = conv(c, &rng, 0, c->pads[2], 7, 13, 5, 1, 3, 1, 1, w + 4);        /* 5 x 11 x 1 */
    c->pads[3] = pad(c, t, 5, 11, 1, big);                                /* 7 x 14 */
    t = conv(c, &rng, 0, c->pads[3], 7, 14, 1, 20, 3, 1, 0, w + 6);       /* 5 x 12 x 20 */
    c->pads[4] = pad(c, t, 5, 12, 20, all1);                              /* 7 x 14 */
    c->out = conv(c, &rng, 1, c->pads[4], 7, 14, 20, 20, 3, 2, 0, w + 8); /* 3 x 6 x 20 */
    int32_t outs[1 + N_PADS] = {c->out};
    for (int i = 0; i < N_PADS; i++)
        outs[1 + i] = c->pads[i];
    tb_io(&c->m, 1, &c->in, keep_pads ? 1 + N_PADS : 1, outs);
    c->n_in = 9 * 21 * 8;
    c->n_out = 3 * 6 * 20;
}

static void run(chain *c, const float *x, double *y, mengine_stats *s, int *pad_views_null)
{
    tb_run r;
    tb_run_open(&r, &c->m);
    tb_run_input(&r, 0, x, c->n_in);
    tb_run_invoke(&r);
    tb_run_output(&r, 0, y, c->n_out);
    assert_int_equal(mengine_get_stats(&r.e, s), MENGINE_OK);
    *pad_views_null = 0;
    for (int i = 0; i < N_PADS; i++) {
        mengine_view v;
        assert_int_equal(mengine_tensor(&r.e, (size_t)c->pads[i], &v), MENGINE_OK);
        *pad_views_null += !v.data && !v.cdata;
    }
    tb_run_close(&r);
}

static void free_weights(float **w)
{
    for (int i = 0; i < 10; i++)
        free(w[i]);
}

static void test_fold_bit_identical(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 78, 1);
    chain folded, unfused;
    float *wf[10], *wu[10];
    build(&folded, 0, wf);
    build(&unfused, 1, wu);
    float *x = rnd(&rng, folded.n_in);
    double *yf = malloc(folded.n_out * sizeof *yf), *yu = malloc(folded.n_out * sizeof *yu);
    assert_true(yf && yu);
    mengine_stats sf, su;
    int nf, nu;
    run(&folded, x, yf, &sf, &nf);
    run(&unfused, x, yu, &su, &nu);
    assert_int_equal(sf.folded_pads, N_PADS);
    assert_int_equal(nf, N_PADS); /* the folded PADs' outputs have no memory */
    assert_int_equal(su.folded_pads, 0);
    assert_int_equal(nu, 0);
    assert_true(sf.activation_bytes < su.activation_bytes);
    for (size_t i = 0; i < folded.n_out; i++)
        if (yf[i] != yu[i])
            fail_msg("output %zu: folded %.9g, unfused %.9g", i, yf[i], yu[i]);
    tb_release(&folded.m), tb_release(&unfused.m);
    free_weights(wf), free_weights(wu);
    free(x), free(yf), free(yu);
}

/* An offline plan that gives a PAD's output an offset was made without the fold: kept. */
static void test_fold_offline_plan(void **state)
{
    (void)state;
    chain c;
    float *w[10];
    build(&c, 0, w);
    int32_t off[256];
    for (int i = 0; i < 256; i++)
        off[i] = -1;
    assert_true(c.pads[0] < 256);
    off[c.pads[0]] = 0;
    tb_offline(&c.m, off);
    manta_rng rng;
    manta_rng_seed(&rng, 79, 1);
    float *x = rnd(&rng, c.n_in);
    double *y = malloc(c.n_out * sizeof *y);
    assert_non_null(y);
    mengine_stats s;
    int n;
    run(&c, x, y, &s, &n);
    assert_int_equal(s.folded_pads, N_PADS - 1);
    assert_int_equal(n, N_PADS - 1);
    tb_release(&c.m);
    free_weights(w);
    free(x), free(y);
}

/* A PAD before a 1x1 convolution stays (the 1x1 kernels have no padding). */
static void test_fold_not_1x1(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 80, 1);
    chain c;
    float *w[2];
    tb_init(&c.m);
    const int32_t all1[4] = {1, 1, 1, 1};
    c.in = f32(&c, "x", 1, 4, 5, 3, NULL);
    c.pads[0] = pad(&c, c.in, 4, 5, 3, all1);
    c.out = conv(&c, &rng, 0, c.pads[0], 6, 7, 3, 4, 1, 1, 0, w);
    tb_io(&c.m, 1, &c.in, 1, &c.out);
    tb_run r;
    tb_run_open(&r, &c.m);
    mengine_stats s;
    assert_int_equal(mengine_get_stats(&r.e, &s), MENGINE_OK);
    assert_int_equal(s.folded_pads, 0);
    tb_run_close(&r);
    tb_release(&c.m);
    free(w[0]), free(w[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_bit_identical),
        cmocka_unit_test(test_fold_offline_plan),
        cmocka_unit_test(test_fold_not_1x1),
    };
    return cmocka_run_group_tests_name("engine PAD folding", tests, NULL, NULL);
}
