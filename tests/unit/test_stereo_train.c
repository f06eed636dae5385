/* The stereo trainer on a tiny space (tests/data/stereo_tiny.json): the multi-scale loss
 * falls when one batch is trained on repeatedly, a run stopped, saved and resumed ends
 * with the same parameters as one that ran through, two data-parallel replicas train as
 * one device does, evaluation counts every pixel, a checkpoint of another kind is
 * refused, the decoder's widths follow the phases, and a fine-tuning run starts from a
 * checkpoint's network and distils from it from its first step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stereo_fix.h"
#include "common/testutil.h"
#include "stereo/state.h"
#include "train/checkpoint.h"

#define BATCH 2

static tu_tmpdir root;

typedef struct fixture {
    mcl_dev *d;
    tu_stereo_tiny x;
} fixture;

static int setup(void **state)
{
    static fixture f;
    f.d = tu_open_device();
    if (tu_stereo_tiny_load(&f.x, BATCH) != 0)
        return -1;
    *state = &f;
    return tu_tmpdir_make(&root, "strain");
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_stereo_tiny_free(&f->x);
    mcl_close(f->d);
    return tu_tmpdir_remove(&root);
}

static void fill(fixture *f, long first)
{
    manta_err e = {0};
    long idx[BATCH];
    for (int k = 0; k < BATCH; k++)
        idx[k] = first + k;
    TU_OK_ERR(stereo_batch_fill(&f->x.b, &f->x.src, idx, NULL, NULL, &e));
}

static void test_loss_falls_on_one_batch(void **state)
{
    fixture *f = *state;
    /* 0.04: at 0.05 whether 60 steps on one batch converge or stall near 2 px depends on float
     * rounding (the same gradients to 3e-7 at step 0, the losses the same to 6 digits for 13
     * steps, then one run stalls: the CPU variant's direct 3x3 dW stalled at 0.05, the GEMM's
     * at 0.03); at 0.04 both kernels converge (0.79 / 0.81 px) */
    ofa_schedule s = tu_stereo_one_phase(BATCH, 60, 0.04f);
    stereo_trainer *t;
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 3, &t));
    fill(f, 0);
    stereo_step_result r0 = {0}, r = {0};
    double first = 0, last = 0;
    for (long step = 0; step < 60; step++) {
        TU_OK(f->d, stereo_trainer_step(t, step, &f->x.b, &r));
        assert_true(isfinite(r.loss) && isfinite(r.epe));
        if (step < 5)
            first += r.epe / 5;
        if (step >= 55)
            last += r.epe / 5;
        if (step == 0)
            r0 = r;
    }
    printf("# EPE of the finest prediction: %.3f px (steps 1-5) -> %.3f px (steps 56-60); "
           "loss %.3f -> %.3f\n",
           first, last, r0.loss, r.loss);
    assert_true(last < 0.7 * first);
    assert_int_equal(r.phase, 0);
    stereo_trainer_destroy(t);
}

/* A step whose gradient's norm exceeds the schedule's clip_norm applies the gradient scaled
 * down to that norm: with zero momentum and no weight decay on them, the batch-norm and bias
 * entries of the momentum after one step are the gradient times clip / norm (one sub-network,
 * so the applied gradient is the accumulated one); without clipping, the gradient itself. */
static void test_gradient_clipping(void **state)
{
    fixture *f = *state;
    fill(f, 0);
    double limit = 0; /* a quarter of the gradient's norm, from the unclipped run */
    for (int clip = 0; clip < 2; clip++) {
        ofa_schedule s = tu_stereo_one_phase(BATCH, 4, 0.01f);
        s.clip_norm = (float)limit;
        stereo_trainer *t; /* the same seed: the same parameters and gradient */
        TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 3, &t));
        ofa_slabs sl;
        stereo_net_slabs(stereo_trainer_net(t), &sl);
        TU_OK(f->d, stereo_trainer_compute(t, 0, &f->x.b, 0, NULL));
        double *g = tu_doubles(sl.n_params), *m = tu_doubles(sl.n_params);
        tu_download(f->d, sl.grads, g, sl.n_params);
        double sq = 0;
        for (size_t i = 0; i < sl.n_params; i++)
            sq += g[i] * g[i];
        const double norm = sqrt(sq);
        assert_true(norm > 0);
        TU_OK(f->d, stereo_trainer_apply(t, 0, 1.0f));
        tu_download(f->d, sl.momentum, m, sl.n_params);
        const double k = clip ? limit / norm : 1.0;
        for (size_t i = sl.n_decay; i < sl.n_params; i++)
            if (fabs(m[i] - k * g[i]) > 1e-6 * (1 + fabs(g[i])))
                fail_msg("%s: momentum[%zu] %g, gradient %g times %g",
                         clip ? "clipped" : "not clipped", i, m[i], g[i], k);
        limit = norm / 4;
        free(g), free(m);
        stereo_trainer_destroy(t);
    }
}

/* Parameters of @p t on the host (malloc'd). */
static float *params_of(mcl_dev *d, stereo_trainer *t, size_t *n)
{
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    float *p = malloc(sl.n_params * sizeof *p);
    assert_non_null(p);
    TU_OK(d, mcl_read(d, sl.params, p, sl.n_params));
    *n = sl.n_params;
    return p;
}

static void test_resume_is_exact(void **state)
{
    fixture *f = *state;
    manta_err e = {0};
    ofa_schedule s;
    TU_OK_ERR(stereo_schedule_preset(&f->x.sp, "smoke", BATCH, 10, &s, &e));
    long total = ofa_schedule_total_steps(&s), cut = s.phase[0].steps + 1;
    assert_true(total > cut + 2);
    assert_true(s.phase[1].distill); /* the cut lies in a distilling phase: the teacher too */
    stereo_trainer *a, *b, *c;
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 9, &a));
    for (long step = 0; step < cut + 2; step++) {
        fill(f, step * BATCH);
        TU_OK(f->d, stereo_trainer_step(a, step, &f->x.b, NULL));
    }
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 9, &b));
    for (long step = 0; step < cut; step++) {
        fill(f, step * BATCH);
        TU_OK(f->d, stereo_trainer_step(b, step, &f->x.b, NULL));
    }
    char path[256];
    tu_tmpdir_path(&root, "cut.ckpt", path, sizeof path);
    stereo_meta m = {.batch = BATCH,
                     .seed = 9,
                     .step = cut,
                     .train_pairs = 1000,
                     .has_teacher = stereo_trainer_has_teacher(b)};
    snprintf(m.preset, sizeof m.preset, "smoke");
    snprintf(m.data, sizeof m.data, "synthetic");
    snprintf(m.textures, sizeof m.textures, "default"); /* the photographs' folder is kept */
    assert_true(m.has_teacher);
    TU_OK_ERR(stereo_state_save(path, b, f->d, &m, &e));
    stereo_space sp2;
    stereo_meta m2;
    TU_OK_ERR(stereo_state_peek(path, &sp2, &m2, &e));
    assert_int_equal(m2.step, cut);
    assert_string_equal(m2.textures, "default");
    assert_string_equal(sp2.name, f->x.sp.name);
    TU_OK(f->d, stereo_trainer_create(f->d, &sp2, &s, 9, &c));
    TU_OK_ERR(stereo_state_load(path, c, f->d, &m2, &e));
    for (long step = cut; step < cut + 2; step++) {
        fill(f, step * BATCH);
        TU_OK(f->d, stereo_trainer_step(c, step, &f->x.b, NULL));
    }
    size_t na, nc;
    float *pa = params_of(f->d, a, &na), *pc = params_of(f->d, c, &nc);
    assert_int_equal(na, nc);
    assert_memory_equal(pa, pc, na * sizeof *pa);
    free(pa), free(pc);
    stereo_trainer_destroy(a), stereo_trainer_destroy(b), stereo_trainer_destroy(c);
}

/* Every ground-truth pixel of @p b valid (in (0, max_disp]): each pair then has as many
 * valid pixels as any other, so the mean of the shards' losses is the batch's. */
static void all_valid(stereo_batch *b, float max_disp)
{
    for (int l = 0; l < b->levels; l++) {
        size_t n = (size_t)b->n * (size_t)(b->height >> l) * (size_t)(b->width >> l);
        for (size_t i = 0; i < n; i++)
            b->gt[l][i] = fminf(fmaxf(b->gt[l][i], 0.25f), max_disp);
    }
}

/* Two replicas (two handles of the test device), one pair each, synchronised batch norm:
 * the same parameters as one trainer on both pairs, up to float rounding. */
static void test_data_parallel_matches_one_device(void **state)
{
    fixture *f = *state;
    manta_err e = {0};
    ofa_schedule s;
    TU_OK_ERR(stereo_schedule_preset(&f->x.sp, "smoke", BATCH, 10, &s, &e));
    const long steps = s.phase[0].steps;
    mcl_dev *devs[2] = {f->d, tu_open_device()};
    stereo_trainer *one;
    dp_trainer *dp;
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 4, &one));
    TU_OK_ERR(stereo_dp_create(devs, 2, &f->x.sp, &s, 4, DP_DATA, NULL, &dp, &e));
    assert_int_equal(dp_replicas(dp), 2);
    assert_int_equal(stereo_trainer_batch(dp_replica(dp, 1)), BATCH / 2);
    for (long step = 0; step < steps; step++) {
        fill(f, step * BATCH);
        all_valid(&f->x.b, (float)f->x.sp.max_disp);
        stereo_step_result r1, r2;
        TU_OK(f->d, stereo_trainer_step(one, step, &f->x.b, &r1));
        TU_OK_ERR(stereo_dp_step(dp, step, &f->x.b, &r2, &e));
        assert_float_equal(r1.loss, r2.loss, 1e-4 * (1 + fabsf(r1.loss)));
        assert_float_equal(r1.epe, r2.epe, 1e-4 * (1 + fabsf(r1.epe)));
    }
    size_t n1, n2, n3;
    float *p1 = params_of(f->d, one, &n1), *p2 = params_of(f->d, dp_replica(dp, 0), &n2);
    float *p3 = params_of(devs[1], dp_replica(dp, 1), &n3);
    assert_int_equal(n1, n2);
    double worst = 0, moved = 0;
    for (size_t i = 0; i < n1; i++) {
        worst = fmax(worst, fabs((double)p1[i] - p2[i]));
        assert_true(p2[i] == p3[i]); /* the replicas hold the same bits */
    }
    float *p0 = NULL;
    stereo_trainer *fresh;
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 4, &fresh));
    p0 = params_of(f->d, fresh, &n3);
    for (size_t i = 0; i < n1; i++)
        moved = fmax(moved, fabs((double)p1[i] - p0[i]));
    printf("# %ld steps: largest parameter change %.3g, largest difference of the two "
           "replicas from one device %.3g\n",
           steps, moved, worst);
    assert_true(moved > 1e-3);
    assert_true(worst < 1e-3 * moved);
    free(p0), free(p1), free(p2), free(p3);
    stereo_trainer_destroy(fresh);
    stereo_trainer_destroy(one);
    dp_destroy(dp);
    mcl_close(devs[1]);
}

static manta_status ordered(void *ctx, long index, stereo_batch *b, int *count, manta_err *err)
{
    fixture *f = ctx;
    long idx[BATCH] = {index * BATCH, index * BATCH + 1};
    *count = BATCH;
    return stereo_batch_fill(b, &f->x.src, idx, NULL, NULL, err);
}

static void test_evaluate_counts_every_pixel(void **state)
{
    fixture *f = *state;
    ofa_schedule s = tu_stereo_one_phase(BATCH, 4, 0.01f);
    stereo_trainer *t;
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &s, 3, &t));
    ofa_arch a;
    stereo_arch_min(&f->x.sp, &a);
    stereo_metrics m = {0};
    size_t plane = (size_t)f->x.sp.crop_h * f->x.sp.crop_w;
    float *pred = malloc(5 * plane * sizeof *pred);
    assert_non_null(pred);
    TU_OK(f->d, stereo_trainer_evaluate(t, &a, &f->x.b, ordered, f, 4, ordered, f, 5, &m, pred));
    stereo_scores all, noc;
    stereo_metrics_scores(&m, &all, &noc);
    assert_int_equal(m.pairs, 5);
    assert_int_equal(all.pixels, (long)(5 * plane)); /* generated pairs: every pixel valid */
    assert_true(noc.pixels > 0 && noc.pixels < all.pixels);
    assert_true(isfinite(all.epe) && all.epe > 0);
    for (size_t i = 0; i < 5 * plane; i++)
        assert_true(isfinite(pred[i]));
    /* the supernet's BN statistics are back after an evaluation, after a refused
     * sub-network, and after two re-calibrations in a row */
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    double *st0 = tu_doubles(sl.n_state), *st1 = tu_doubles(sl.n_state);
    tu_download(f->d, sl.state, st0, sl.n_state);
    TU_OK(f->d, stereo_trainer_evaluate(t, &a, &f->x.b, ordered, f, 4, ordered, f, 2, &m, NULL));
    tu_download(f->d, sl.state, st1, sl.n_state);
    assert_memory_equal(st0, st1, sl.n_state * sizeof *st0);
    fill(f, 0); /* a training step moves the statistics away from the saved ones */
    TU_OK(f->d, stereo_trainer_step(t, 0, &f->x.b, NULL));
    tu_download(f->d, sl.state, st0, sl.n_state);
    ofa_arch bad = a;
    bad.dw[0] = 3; /* not a width of level 0 */
    assert_int_equal(
        stereo_trainer_evaluate(t, &bad, &f->x.b, ordered, f, 4, ordered, f, 2, &m, NULL),
        MANTA_ERR_INVALID_ARG);
    manta_err_clear(mcl_err(f->d));
    tu_download(f->d, sl.state, st1, sl.n_state);
    assert_memory_equal(st0, st1, sl.n_state * sizeof *st0);
    TU_OK(f->d, stereo_trainer_recalibrate(t, &a, &f->x.b, ordered, f, 4));
    TU_OK(f->d, stereo_trainer_recalibrate(t, &a, &f->x.b, ordered, f, 4));
    tu_download(f->d, sl.state, st1, sl.n_state);
    assert_memory_not_equal(st0, st1, sl.n_state * sizeof *st0); /* re-calibrated */
    TU_OK(f->d, stereo_trainer_restore_bn(t));
    tu_download(f->d, sl.state, st1, sl.n_state);
    assert_memory_equal(st0, st1, sl.n_state * sizeof *st0);
    free(st0), free(st1);
    free(pred);
    stereo_trainer_destroy(t);
}

static void test_other_checkpoint_refused(void **state)
{
    (void)state;
    manta_err e = {0};
    char path[256];
    tu_tmpdir_path(&root, "not-stereo.ckpt", path, sizeof path);
    ckpt_writer *w;
    TU_OK_ERR(ckpt_writer_begin(path, NULL, &w, &e));
    TU_OK_ERR(ckpt_add_json(w, "meta", "{\"format\":\"manta-ofa-train\"}"));
    TU_OK_ERR(ckpt_writer_commit(w));
    stereo_space sp;
    stereo_meta m;
    assert_int_equal(stereo_state_peek(path, &sp, &m, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "not a manta stereo training checkpoint"));
}

/* A slab of @p n floats on the host (malloc'd). */
static float *host_of(mcl_dev *d, mview v, size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    TU_OK(d, mcl_read(d, v, p, n));
    return p;
}

/* The finetune preset: one phase of the last shrinking phase's sampling, distilling, no
 * re-organisation, a lower rate than the full schedule's last phase, the last loss round;
 * stereo_state_init() loads a checkpoint's parameters and statistics into a new trainer
 * (another seed), zero momentum, the teacher its parameters: step 0 distils. Refusals: a
 * classification checkpoint, another space (or the same name with other settings), a
 * missing file. */
static void test_finetune_starts_from_checkpoint(void **state)
{
    fixture *f = *state;
    manta_err e = {0};
    ofa_schedule smoke, ft, full;
    TU_OK_ERR(stereo_schedule_preset(&f->x.sp, "smoke", BATCH, 10, &smoke, &e));
    TU_OK_ERR(stereo_schedule_preset(&f->x.sp, "finetune", BATCH, 10, &ft, &e));
    TU_OK_ERR(stereo_schedule_preset(&f->x.sp, "full", BATCH, 10, &full, &e));
    assert_int_equal(ft.n_phases, 1);
    const ofa_phase *p = &ft.phase[0], *last = &full.phase[full.n_phases - 1];
    assert_string_equal(p->name, "finetune");
    assert_string_equal(ft.preset, "finetune");
    assert_int_equal(p->steps, 200);
    assert_true(p->lr > 0 && p->lr < last->lr);
    assert_int_equal(p->n_ks, last->n_ks);
    assert_int_equal(p->n_e, last->n_e);
    assert_int_equal(p->n_d, last->n_d);
    assert_int_equal(p->subnets, last->subnets);
    assert_int_equal(p->n_dw, f->x.sp.n_dec_ratios);
    assert_true(p->sandwich && p->distill && p->final_round);
    assert_int_equal(p->reorder, -1);
    assert_int_equal(stereo_schedule_preset(&f->x.sp, "finetuned", BATCH, 10, &ft, &e),
                     MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "finetune)"));
    TU_OK_ERR(stereo_schedule_preset(&f->x.sp, "finetune", BATCH, 10, &ft, &e));

    /* the initial run: a few smoke steps (BN statistics and a teacher of its own) */
    stereo_trainer *a, *b;
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &smoke, 4, &a));
    const long n = smoke.phase[0].steps + 1;
    for (long step = 0; step < n; step++) {
        fill(f, step * BATCH);
        TU_OK(f->d, stereo_trainer_step(a, step, &f->x.b, NULL));
    }
    char path[256];
    tu_tmpdir_path(&root, "init.ckpt", path, sizeof path);
    stereo_meta m = {.batch = BATCH,
                     .seed = 4,
                     .step = n,
                     .train_pairs = 1000,
                     .has_teacher = stereo_trainer_has_teacher(a),
                     .lr_scale = 1};
    snprintf(m.preset, sizeof m.preset, "smoke");
    snprintf(m.data, sizeof m.data, "synthetic");
    snprintf(m.val_data, sizeof m.val_data, "synthetic");
    TU_OK_ERR(stereo_state_save(path, a, f->d, &m, &e));

    stereo_meta got;
    TU_OK_ERR(stereo_state_peek_init(path, &f->x.sp, &got, &e));
    assert_int_equal(got.step, n);
    TU_OK(f->d, stereo_trainer_create(f->d, &f->x.sp, &ft, 77, &b));
    TU_OK_ERR(stereo_state_init(path, b, f->d, &e));
    assert_true(stereo_trainer_has_teacher(b));
    ofa_slabs sa, sb;
    stereo_net_slabs(stereo_trainer_net(a), &sa);
    stereo_net_slabs(stereo_trainer_net(b), &sb);
    float *pa = host_of(f->d, sa.params, sa.n_params), *pb = host_of(f->d, sb.params, sb.n_params);
    float *ta = host_of(f->d, sa.state, sa.n_state), *tb = host_of(f->d, sb.state, sb.n_state);
    float *teach = host_of(f->d, stereo_trainer_teacher(b), sb.n_params);
    float *mom = host_of(f->d, sb.momentum, sb.n_params);
    assert_memory_equal(pa, pb, sa.n_params * sizeof *pa);
    assert_memory_equal(ta, tb, sa.n_state * sizeof *ta);
    assert_memory_equal(pa, teach, sa.n_params * sizeof *pa);
    for (size_t i = 0; i < sb.n_params; i++)
        assert_true(mom[i] == 0.0f);
    free(pa), free(pb), free(ta), free(tb), free(teach), free(mom);
    assert_int_equal(stereo_trainer_round(b, 0), f->x.sp.n_rounds - 1);
    stereo_step_result r = {0};
    fill(f, 0);
    TU_OK(f->d, stereo_trainer_step(b, 0, &f->x.b, &r));
    printf("# fine-tuning step 1: loss %.4f, distillation %.4f, EPE %.3f px\n", r.loss, r.kd_loss,
           r.epe);
    assert_true(isfinite(r.loss) && r.kd_loss > 0.0f);
    stereo_trainer_destroy(a), stereo_trainer_destroy(b);

    /* refusals, one line naming the file */
    char cls[256], missing[256];
    tu_tmpdir_path(&root, "classification.ckpt", cls, sizeof cls);
    ckpt_writer *w;
    TU_OK_ERR(ckpt_writer_begin(cls, NULL, &w, &e));
    TU_OK_ERR(ckpt_add_json(w, "meta", "{\"format\":\"manta-ofa-train\"}"));
    TU_OK_ERR(ckpt_writer_commit(w));
    assert_int_equal(stereo_state_peek_init(cls, &f->x.sp, &got, &e), MANTA_ERR_FORMAT);
    assert_non_null(strstr(e.msg, "classification.ckpt: a classification training checkpoint"));
    assert_non_null(strstr(e.msg, "needs a stereo training checkpoint"));
    stereo_space cpu;
    stereo_space_cpu(&cpu);
    assert_int_equal(stereo_state_peek_init(path, &cpu, &got, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "space 'stereo-tiny'; the run's space is 'stereo-cpu'"));
    stereo_space other = f->x.sp;
    other.max_disp += 1;
    assert_int_equal(stereo_state_peek_init(path, &other, &got, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "with other settings"));
    tu_tmpdir_path(&root, "no-such.ckpt", missing, sizeof missing);
    assert_int_not_equal(stereo_state_peek_init(missing, &f->x.sp, &got, &e), MANTA_OK);
    assert_non_null(strstr(e.msg, "no-such.ckpt"));
}

/* The decoder's widths follow the phases of a preset: the widest before the expand phases,
 * the two widest ratios in expand-1, all three in expand-2 (each seen, per level); the
 * same (seed, step, k) draws the same sub-network; the sandwich rule's first and last
 * sub-networks are the largest and the smallest. */
static void test_decoder_width_follows_the_phases(void **state)
{
    (void)state;
    stereo_space sp;
    stereo_space_cpu(&sp);
    ofa_space view;
    stereo_space_ofa_view(&sp, &view);
    ofa_schedule sched;
    manta_err e = {0};
    TU_OK_ERR(stereo_schedule_preset(&sp, "quick", 8, 1, &sched, &e));
    assert_int_equal(sched.n_phases, 6);
    const int want_n[6] = {1, 1, 1, 1, 2, 3};
    for (int ph = 0; ph < 6; ph++) {
        const ofa_phase *p = &sched.phase[ph];
        assert_int_equal(p->n_dw, want_n[ph]);
        int seen[STEREO_MAX_LEVELS][3] = {{0}};
        for (long step = 0; step < 40; step++)
            for (int k = 0; k < p->subnets; k++) {
                ofa_arch a, b;
                stereo_sample_subnet(&sp, &view, p, 99, step, k, &a);
                stereo_sample_subnet(&sp, &view, p, 99, step, k, &b);
                assert_memory_equal(&a, &b, sizeof a);
                TU_OK_ERR(stereo_arch_validate(&sp, &a, &e));
                for (int i = 0; i < sp.n_levels; i++)
                    for (int j = 0; j < 3; j++)
                        seen[i][j] += a.dw[i] == stereo_dec_width(&sp, i, j);
            }
        for (int i = 0; i < sp.n_levels; i++)
            for (int j = 0; j < 3; j++) {
                bool allowed = j >= 3 - want_n[ph];
                if (allowed != (seen[i][j] > 0))
                    fail_msg("phase %s, level %d: ratio %g drawn %d times", p->name, i,
                             sp.dec_ratio[j], seen[i][j]);
            }
    }
    /* the sandwich rule in every phase of several sub-networks a step: the first is the
     * largest; the last the phase's smallest when there are 3 or more (expand-2: the
     * space's smallest); the others random */
    ofa_arch big, small, x;
    stereo_arch_max(&sp, &big);
    stereo_arch_min(&sp, &small);
    for (int ph = 0; ph < 6; ph++) {
        const ofa_phase *p = &sched.phase[ph];
        assert_int_equal(p->sandwich, p->subnets >= 2);
        if (p->subnets < 2)
            continue;
        stereo_sample_subnet(&sp, &view, p, 5, 3, 0, &x);
        assert_memory_equal(&x, &big, sizeof x);
        stereo_sample_subnet(&sp, &view, p, 5, 3, 1, &x);
        if (!memcmp(&x, &big, sizeof x) && p->subnets == 2) /* random: rarely the largest */
            stereo_sample_subnet(&sp, &view, p, 5, 4, 1, &x);
        assert_memory_not_equal(&x, &big, sizeof x);
    }
    stereo_sample_subnet(&sp, &view, &sched.phase[5], 5, 3, sched.phase[5].subnets - 1, &x);
    assert_memory_equal(&x, &small, sizeof x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_falls_on_one_batch),
        cmocka_unit_test(test_gradient_clipping),
        cmocka_unit_test(test_resume_is_exact),
        cmocka_unit_test(test_data_parallel_matches_one_device),
        cmocka_unit_test(test_evaluate_counts_every_pixel),
        cmocka_unit_test(test_other_checkpoint_refused),
        cmocka_unit_test(test_decoder_width_follows_the_phases),
        cmocka_unit_test(test_finetune_starts_from_checkpoint),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
