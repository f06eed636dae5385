/* Export of a stereo sub-network (stereo/extract.h): the largest, the smallest and a sampled
 * sub-network of the tiny space, trained a few steps and re-calibrated, written as .tflite;
 * the engine's finest disparity against the device network's forward on the same pair (1e-4
 * relative L2), the correlation fused, the encoder's weights stored once (the file with
 * them shared is smaller than with a copy per view, by the size of the shared layers), the
 * graph's reference against the engine, the profiler's synthetic graph of the same
 * sub-network (export/stereo_graph.h, the one builder) of the same structure and file size,
 * and the metadata. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/graphcmp.h"
#include "common/stereo_fix.h"
#include "common/testutil.h"
#include "engine/engine.h"
#include "export/tflite.h"
#include "export/tflite_meta.h"
#include "profile/synth.h"
#include "stereo/extract.h"
#include "stereo/train.h"

#define BATCH 2

typedef struct fixture {
    mcl_dev *d;
    tu_stereo_tiny x;
    stereo_trainer *t;
} fixture;

static int setup(void **state)
{
    static fixture f;
    manta_err e = {0};
    f.d = tu_open_device();
    if (tu_stereo_tiny_load(&f.x, BATCH) != 0)
        return -1;
    ofa_schedule s = tu_stereo_one_phase(BATCH, 8, 0.05f);
    if (stereo_trainer_create(f.d, &f.x.sp, &s, 3, &f.t) != MANTA_OK) {
        fprintf(stderr, "setup: %s\n", mcl_err(f.d)->msg);
        return -1;
    }
    for (long step = 0; step < 8; step++) {
        int count;
        if (stereo_ordered_batch(&f.x.src, step, &f.x.b, &count, &e) != MANTA_OK ||
            stereo_trainer_step(f.t, step, &f.x.b, NULL) != MANTA_OK) {
            fprintf(stderr, "setup: training step %ld failed\n", step);
            return -1;
        }
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    stereo_trainer_destroy(f->t);
    tu_stereo_tiny_free(&f->x);
    mcl_close(f->d);
    return 0;
}

/* Export @p a re-calibrated on 4 pairs and check it against the device on a held-out pair. */
static void export_and_check(fixture *f, const ofa_arch *a)
{
    manta_err e = {0};
    TU_OK(f->d, stereo_trainer_recalibrate(f->t, a, &f->x.b, stereo_ordered_batch, &f->x.src, 4));
    stereo_net *n = stereo_trainer_net(f->t);
    xgraph g;
    TU_OK_ERR(stereo_net_extract(n, &g, &e));
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report rep;
    TU_OK_ERR(tflite_write(&g, &data, &size, &rep, &e));
    assert_int_equal(rep.fused_correlations, 1);

    /* a held-out pair, (2, 3, H, W) */
    const stereo_space *sp = &f->x.sp;
    const size_t view = 3 * (size_t)sp->crop_h * sp->crop_w;
    stereo_source held = f->x.src;
    held.base += 700;
    int count;
    TU_OK_ERR(stereo_ordered_batch(&held, 0, &f->x.b, &count, &e));
    float *views = malloc(2 * view * sizeof *views);
    assert_non_null(views);
    memcpy(views, f->x.b.left, view * sizeof *views);
    memcpy(views + view, f->x.b.right, view * sizeof *views);
    stereo_export_diff diff;
    TU_OK_ERR(stereo_export_check(n, data, size, views, &diff, &e));
    printf("# engine vs device: max |diff| %.3g px, relative L2 %.3g, mean disparity %.3f, "
           "%zu bytes, %d ops, fused %zu\n",
           diff.max_abs, diff.rel_l2, diff.mean_disp, size, rep.n_ops, diff.fused_correlations);
    assert_true(diff.rel_l2 < 1e-4);
    assert_int_equal(diff.fused_correlations, 1);
    assert_true(fabs(diff.mean_disp) > 1e-3); /* the network predicts something */

    /* the graph's reference agrees with the engine too */
    double dl = 0, dp = 0;
    TU_OK_ERR(tflite_check(&g, data, size, 5, &dl, &dp, &e));
    assert_true(dl < 1e-3);

    /* shared weights stored once: a copy per view makes a larger file with more buffers */
    xgraph_free(&g);
    TU_OK_ERR(stereo_net_extract(n, &g, &e));
    g.share_weights = false;
    uint8_t *dup = NULL;
    size_t dup_size = 0;
    tflite_report dup_rep;
    TU_OK_ERR(tflite_write(&g, &dup, &dup_size, &dup_rep, &e));
    size_t shared_bytes = 0; /* the right view's weights and biases */
    int right_ops = 0;
    for (int i = 0; i < g.n_ops; i++)
        if (!strncmp(g.tensors[g.ops[i].out].name, "r.", 2) && g.ops[i].weights) {
            shared_bytes += 4 * (g.ops[i].n_weights + g.ops[i].n_bias);
            right_ops++;
        }
    assert_true(right_ops >= 3); /* the stem and a block's expand and project at least */
    assert_true(dup_rep.n_tensors - rep.n_tensors >= 2 * right_ops);
    assert_true(dup_rep.weights_bytes - rep.weights_bytes >= shared_bytes);
    assert_true(dup_size >= size + shared_bytes);

    /* the profiler's synthetic graph of the same sub-network (the shared builder with
     * synthetic values) has the device extraction's structure, and its file the same size */
    xgraph syn;
    const synth_opts so = {7, false};
    ofa_arch at = *a;
    at.r = sp->crop_h;
    TU_OK_ERR(prof_synth_stereo_graph(sp, &at, &so, &syn, NULL, NULL, &e));
    xgraph_free(&g);
    TU_OK_ERR(stereo_net_extract(n, &g, &e));
    tu_assert_same_graph(&g, &syn);
    uint8_t *sdata = NULL;
    size_t ssize = 0;
    TU_OK_ERR(tflite_write(&syn, &sdata, &ssize, NULL, &e));
    assert_int_equal(ssize, size);
    free(sdata);
    xgraph_free(&syn);

    /* the metadata */
    mengine_model m;
    char msg[128];
    assert_int_equal(mengine_model_load(&m, data, size, NULL, msg, sizeof msg), MENGINE_OK);
    const uint8_t *text;
    size_t len;
    assert_int_equal(mengine_model_metadata(&m, TFLITE_META_PREPROCESS, &text, &len), MENGINE_OK);
    tflite_meta meta;
    TU_OK_ERR(tflite_meta_parse((const char *)text, len, &meta, &e));
    assert_string_equal(meta.task, "stereo");
    assert_string_equal(meta.space, sp->name);
    assert_int_equal(meta.height, sp->crop_h);
    assert_int_equal(meta.width, sp->crop_w);
    assert_true(meta.disp_scale == 1.0f);
    tflite_meta_free(&meta);

    free(views);
    free(data);
    free(dup);
    xgraph_free(&g);
    TU_OK(f->d, stereo_trainer_restore_bn(f->t));
}

static void test_export_max(void **state)
{
    fixture *f = *state;
    ofa_arch a;
    stereo_arch_max(&f->x.sp, &a);
    export_and_check(f, &a);
}

static void test_export_min(void **state)
{
    fixture *f = *state;
    ofa_arch a;
    stereo_arch_min(&f->x.sp, &a);
    export_and_check(f, &a);
}

static void test_export_sampled(void **state)
{
    fixture *f = *state;
    manta_rng rng;
    manta_rng_seed(&rng, 21, 0);
    for (int i = 0; i < 2; i++) {
        ofa_arch a;
        stereo_arch_sample(&f->x.sp, &rng, &a);
        export_and_check(f, &a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_export_max),
        cmocka_unit_test(test_export_min),
        cmocka_unit_test(test_export_sampled),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
