/* Training end to end on the device: a two-layer net overfits a fixed batch,
 * gradients accumulate across passes, and the fixed CNN trains with no
 * buffer created in the steady-state loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "common/testutil.h"
#include "nn/activation.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "train/optim.h"
#include "classify/tinynet.h"

enum { IN = 48, HID = 32, OUT = 5, B = 16 };

/* Two-layer MLP: x (B, IN) -> linear -> ReLU -> linear -> logits (B, OUT). */
typedef struct mlp {
    mslab p, g, m, a;
    size_t w1, b1, w2, b2, n_params, n_decay;
    size_t x, h, r, logits, dh, dr, dlogits, labels, losses;
} mlp;

static void mlp_create(mcl_dev *d, mlp *n, uint64_t seed)
{
    mlayout pl = {0}, al = {0};
    n->w1 = mlayout_add(&pl, HID * IN);
    n->w2 = mlayout_add(&pl, OUT * HID);
    n->n_decay = pl.total;
    n->b1 = mlayout_add(&pl, HID);
    n->b2 = mlayout_add(&pl, OUT);
    n->n_params = pl.total;
    n->x = mlayout_add(&al, B * IN);
    n->h = mlayout_add(&al, B * HID);
    n->r = mlayout_add(&al, B * HID);
    n->logits = mlayout_add(&al, B * OUT);
    n->dh = mlayout_add(&al, B * HID);
    n->dr = mlayout_add(&al, B * HID);
    n->dlogits = mlayout_add(&al, B * OUT);
    n->labels = mlayout_add(&al, B);
    n->losses = mlayout_add(&al, B);
    TU_OK(d, mslab_create(d, &n->p, pl.total, "params"));
    TU_OK(d, mslab_create(d, &n->g, pl.total, "grads"));
    TU_OK(d, mslab_create(d, &n->m, pl.total, "momentum"));
    TU_OK(d, mslab_create(d, &n->a, al.total, "activations"));
    manta_rng r;
    manta_rng_seed(&r, seed, 0);
    double *w = calloc(pl.total, sizeof *w);
    assert_non_null(w);
    tu_fill_uniform(&r, w + n->w1, HID * IN, -1 / sqrt(IN), 1 / sqrt(IN));
    tu_fill_uniform(&r, w + n->w2, OUT * HID, -1 / sqrt(HID), 1 / sqrt(HID));
    tu_upload(d, mslab_view(&n->p, 0), w, pl.total);
    free(w);
}

static void mlp_destroy(mcl_dev *d, mlp *n)
{
    mslab_destroy(d, &n->p), mslab_destroy(d, &n->g), mslab_destroy(d, &n->m);
    mslab_destroy(d, &n->a);
}

/* Forward and backward of samples [b0, b0+nb) of the uploaded batch; the loss
 * gradient is scaled by `scale`; parameter gradients accumulate. */
static float mlp_pass(mcl_dev *d, mlp *n, int b0, int nb, float scale)
{
    mview P = mslab_view(&n->p, 0), G = mslab_view(&n->g, 0), A = mslab_view(&n->a, 0);
    nn_linear_shape l1 = {nb, IN, HID, 0}, l2 = {nb, HID, OUT, 0};
    mview x = mview_at(A, n->x + (size_t)b0 * IN), none = {NULL, 0};
    TU_OK(d,
          nn_linear_forward(d, &l1, x, mview_at(P, n->w1), mview_at(P, n->b1), mview_at(A, n->h)));
    TU_OK(d,
          nn_act_forward(d, NN_ACT_RELU, mview_at(A, n->h), mview_at(A, n->r), (size_t)nb * HID));
    TU_OK(d, nn_linear_forward(d, &l2, mview_at(A, n->r), mview_at(P, n->w2), mview_at(P, n->b2),
                               mview_at(A, n->logits)));
    TU_OK(d, nn_xent_forward_backward(d, nb, OUT, 0.0f, mview_at(A, n->logits),
                                      mview_at(A, n->labels + (size_t)b0), mview_at(A, n->losses),
                                      mview_at(A, n->dlogits), scale, 0.0f));
    TU_OK(d,
          nn_linear_backward(d, &l2, mview_at(A, n->r), mview_at(P, n->w2), mview_at(A, n->dlogits),
                             mview_at(A, n->dr), mview_at(G, n->w2), mview_at(G, n->b2)));
    TU_OK(d, nn_act_backward(d, NN_ACT_RELU, mview_at(A, n->h), mview_at(A, n->dr),
                             mview_at(A, n->dh), (size_t)nb * HID));
    TU_OK(d, nn_linear_backward(d, &l1, x, mview_at(P, n->w1), mview_at(A, n->dh), none,
                                mview_at(G, n->w1), mview_at(G, n->b1)));
    float losses[B];
    TU_OK(d, mcl_read(d, mview_at(A, n->losses), losses, (size_t)nb));
    float s = 0;
    for (int i = 0; i < nb; i++)
        s += losses[i];
    return s / (float)nb;
}

static void upload_batch(mcl_dev *d, mlp *n, uint64_t seed)
{
    manta_rng r;
    manta_rng_seed(&r, seed, 3);
    double x[B * IN], y[B];
    tu_fill_uniform(&r, x, B * IN, -1, 1);
    for (int i = 0; i < B; i++)
        y[i] = (double)manta_rng_below(&r, OUT);
    tu_upload(d, mslab_view(&n->a, n->x), x, B * IN);
    tu_upload(d, mslab_view(&n->a, n->labels), y, B);
}

static void test_two_layer_net_overfits_one_batch(void **state)
{
    mcl_dev *d = *state;
    mlp n;
    mlp_create(d, &n, 11);
    upload_batch(d, &n, 5);
    optim_sgd o = {0.9f, 0.0f, true};
    float first = 0, loss = 0;
    for (int step = 0; step < 300; step++) {
        TU_OK(d, mcl_fill(d, mslab_view(&n.g, 0), 0.0f, n.n_params));
        loss = mlp_pass(d, &n, 0, B, 1.0f / B);
        if (step == 0)
            first = loss;
        TU_OK(d, optim_sgd_step(d, &o, 0.1f, 1.0f, mslab_view(&n.p, 0), mslab_view(&n.g, 0),
                                mslab_view(&n.m, 0), n.n_decay, n.n_params));
    }
    assert_true(first > 1.0f); /* random labels of 5 classes start near ln 5 */
    if (!(loss < 0.01f))
        fail_msg("loss after 300 steps %g (start %g)", loss, first);
    mlp_destroy(d, &n);
}

/* Two passes over the halves of a batch, accumulated, then one step, equal
 * one pass over the whole batch. */
static void test_gradient_accumulation_matches_full_batch(void **state)
{
    mcl_dev *d = *state;
    mlp a, b;
    mlp_create(d, &a, 21);
    mlp_create(d, &b, 21);
    upload_batch(d, &a, 9);
    upload_batch(d, &b, 9);
    optim_sgd o = {0.9f, 1e-3f, true};
    for (int step = 0; step < 3; step++) {
        TU_OK(d, mcl_fill(d, mslab_view(&a.g, 0), 0.0f, a.n_params));
        TU_OK(d, mcl_fill(d, mslab_view(&b.g, 0), 0.0f, b.n_params));
        mlp_pass(d, &a, 0, B, 1.0f / B);
        mlp_pass(d, &b, 0, B / 2, 1.0f / (B / 2));
        mlp_pass(d, &b, B / 2, B / 2, 1.0f / (B / 2));
        TU_OK(d, optim_sgd_step(d, &o, 0.1f, 1.0f, mslab_view(&a.p, 0), mslab_view(&a.g, 0),
                                mslab_view(&a.m, 0), a.n_decay, a.n_params));
        TU_OK(d, optim_sgd_step(d, &o, 0.1f, 0.5f, mslab_view(&b.p, 0), mslab_view(&b.g, 0),
                                mslab_view(&b.m, 0), b.n_decay, b.n_params));
    }
    double *pa = malloc(a.n_params * sizeof *pa), *pb = malloc(a.n_params * sizeof *pb);
    assert_true(pa && pb);
    tu_download(d, mslab_view(&a.p, 0), pa, a.n_params);
    tu_download(d, mslab_view(&b.p, 0), pb, b.n_params);
    tu_assert_close(pb, pa, a.n_params, 1e-4, "accumulated vs full-batch parameters");
    free(pa), free(pb);
    mlp_destroy(d, &a), mlp_destroy(d, &b);
}

/* The fixed CNN learns a synthetic task (the class sets the mean brightness
 * of a quadrant) and creates no buffer after its first step. */
static void test_tinynet_trains_without_new_buffers(void **state)
{
    mcl_dev *d = *state;
    enum { NB = 16, H = 12, W = 12, K = 4 };
    tinynet_config cfg = {1, H, W, K, NB, 0.0f};
    tinynet *net = NULL;
    TU_OK(d, tinynet_create(d, &cfg, 3, &net));
    assert_true(tinynet_param_count(net) > 2000);
    manta_rng r;
    manta_rng_seed(&r, 4, 4);
    float *img = malloc(NB * H * W * sizeof *img), lab[NB];
    assert_non_null(img);
    for (int b = 0; b < NB; b++) {
        int k = b % K;
        lab[b] = (float)k;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int q = (y >= H / 2) * 2 + (x >= W / 2);
                img[(b * H + y) * W + x] = 0.3f * manta_rng_normal(&r) + (q == k ? 1.5f : -0.5f);
            }
    }
    optim_sgd o = {0.9f, 3e-5f, true};
    tinynet_step_result res;
    TU_OK(d, tinynet_train_step(net, img, lab, &o, 0.05f, &res));
    float first = res.loss;
    mcl_stats s0, s1;
    mcl_get_stats(d, &s0);
    for (int step = 0; step < 40; step++)
        TU_OK(d, tinynet_train_step(net, img, lab, &o, 0.05f, &res));
    mcl_get_stats(d, &s1);
    assert_int_equal(s1.buffers_created, s0.buffers_created); /* steady state: none */
    assert_int_equal(s1.bytes_allocated, s0.bytes_allocated);
    assert_true(s1.launches > s0.launches);
    if (!(res.loss < 0.3f * first))
        fail_msg("loss %g after 41 steps, first %g", res.loss, first);
    assert_true(res.correct >= NB - 1);
    float logits[NB * K];
    TU_OK(d, tinynet_predict(net, img, logits));
    int correct = 0;
    for (int b = 0; b < NB; b++) {
        int best = 0;
        for (int k = 1; k < K; k++)
            best = logits[b * K + k] > logits[b * K + best] ? k : best;
        correct += best == (int)lab[b];
    }
    assert_true(correct >= NB - 2); /* eval mode (running BN statistics) agrees */
    free(img);
    tinynet_destroy(net);
}

static void test_tinynet_rejects_bad_config(void **state)
{
    mcl_dev *d = *state;
    tinynet *net = (tinynet *)1;
    tinynet_config cfg = {1, 4, 4, 10, 8, 0.1f};
    assert_int_equal(tinynet_create(d, &cfg, 1, &net), MANTA_ERR_INVALID_ARG);
    assert_null(net);
    assert_non_null(strstr(mcl_err(d)->msg, "tinynet"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_layer_net_overfits_one_batch),
        cmocka_unit_test(test_gradient_accumulation_matches_full_batch),
        cmocka_unit_test(test_tinynet_trains_without_new_buffers),
        cmocka_unit_test(test_tinynet_rejects_bad_config),
    };
    return cmocka_run_group_tests_name("training", tests, tu_setup_device, tu_teardown_device);
}
