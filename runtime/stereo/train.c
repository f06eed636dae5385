#include "stereo/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "nn/disp_loss.h"
#include "train/optim.h"

struct stereo_trainer {
    mcl_dev *d;
    stereo_space space;
    ofa_space view; /* the encoder as an OFA space: sampling and schedule presets */
    ofa_schedule sched;
    uint64_t seed, sample_seed;
    int B, P; /* pairs per batch on this device; predictions */
    stereo_net *net;
    ofa_slabs sl;
    mslab teacher; /* parameters of the teacher */
    mslab backup;  /* BN statistics saved around a re-calibration */
    bool bn_saved; /* backup holds them (stereo_trainer_restore_bn() has not put them back) */
    mslab io;      /* ground truth per prediction, the teacher's finest prediction, results */
    size_t gt[STEREO_MAX_PREDS], teacher_pred, results, scratch;
    int max_subnets, has_teacher;
    float *host_results;
    float *host_grads; /* (n_params) with clipping: the gradient read back for its norm */
};

stereo_net *stereo_trainer_net(stereo_trainer *t) { return t->net; }
const ofa_schedule *stereo_trainer_schedule(const stereo_trainer *t) { return &t->sched; }
int stereo_trainer_has_teacher(const stereo_trainer *t) { return t->has_teacher; }
mview stereo_trainer_teacher(const stereo_trainer *t) { return mslab_view(&t->teacher, 0); }
void stereo_trainer_set_has_teacher(stereo_trainer *t, int has) { t->has_teacher = has; }

/* Peak learning rates of the stereo presets (SGD, Nesterov momentum 0.9); fine-tuning's
 * is below the last shrinking phase's, so that the sub-networks the initial network
 * already serves are moved, not retrained. */
#define STEREO_LR 0.02f
#define STEREO_LR_LATER 0.01f
#define STEREO_LR_FINETUNE 0.003f
/* Largest L2 norm of an applied gradient: the quick schedule's first 150 steps had a median
 * of 3.0, 90% below 5.3 and spikes to 34; runs with training crops 64 wide or photographs
 * diverged at the first phase's rate after such spikes (docs/stereo.md). */
#define STEREO_CLIP_NORM 10.0f
#define STEREO_FINETUNE_STEPS 200

/* "finetune": the last phase of progressive shrinking (every kernel size, depth, expand
 * ratio and decoder width; four sub-networks a step by the sandwich rule) distilling from
 * the initial network from step 0, without width re-organisation (it would permute the
 * channels the initial network's sub-networks share), in the loss's last round. */
static manta_status finetune_preset(const stereo_space *space, const ofa_space *view, int batch,
                                    ofa_schedule *out, manta_err *err)
{
    MANTA_TRY(ofa_schedule_preset(view, "smoke", batch, 1, out, err)); /* the run's settings */
    ofa_phase p = out->phase[out->n_phases - 1];                       /* expand-2's sampling */
    snprintf(out->preset, sizeof out->preset, "finetune");
    snprintf(p.name, sizeof p.name, "finetune");
    p.steps = STEREO_FINETUNE_STEPS;
    p.warmup_steps = p.steps / 20;
    p.lr = STEREO_LR_FINETUNE;
    p.reorder = -1;
    p.distill = 1;
    out->clip_norm = STEREO_CLIP_NORM;
    p.sandwich = p.subnets >= 2;
    p.n_dw = space->n_dec_ratios;
    p.final_round = 1;
    out->n_phases = 1;
    out->phase[0] = p;
    return MANTA_OK;
}

manta_status stereo_schedule_preset(const stereo_space *space, const char *preset, int batch,
                                    long steps_per_epoch, ofa_schedule *out, manta_err *err)
{
    ofa_space view;
    stereo_space_ofa_view(space, &view);
    if (!strcmp(preset, "finetune"))
        return finetune_preset(space, &view, batch, out, err);
    if (strcmp(preset, "smoke") && strcmp(preset, "quick") && strcmp(preset, "full"))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "schedule '%s': unknown (smoke, quick, full, finetune)", preset);
    MANTA_TRY(ofa_schedule_preset(&view, preset, batch, steps_per_epoch, out, err));
    /* quick and full: steps per phase sized by time rather than epochs (on the idle 2-core
     * machine with PoCL a step of 8 pairs of the largest stereo-cpu network takes 0.20 s, of
     * the kernel phase's 0.27 s, of the depth phases' two sub-networks 0.43 s, of the expand
     * phases' four 0.59-0.67 s: quick is about 19 minutes there, within the 20 it may take on
     * 2 cores; the full phase has most of the steps, since the largest sub-network's held-out
     * EPE is made there, and expand-2 the next most, since the smallest's is made there (it
     * still fell 9% from 144 to 420 steps); full is 8 times the steps quick had first, 8,560;
     * docs/benchmarks.md) */
    static const long quick[6] = {3000, 270, 150, 150, 96, 420};
    static const long full[6] = {6400, 720, 400, 400, 256, 384};
    const long *steps = !strcmp(preset, "quick") ? quick : !strcmp(preset, "full") ? full : NULL;
    for (int i = 0; i < out->n_phases; i++) {
        ofa_phase *p = &out->phase[i];
        /* the decoder's width shrinks with the units' expand ratio: the two largest ratios
         * in expand-1 (phase 5), all in expand-2 */
        p->n_dw = i < 4 ? 1 : i == 4 ? 2 : space->n_dec_ratios;
        p->n_dw = p->n_dw < space->n_dec_ratios ? p->n_dw : space->n_dec_ratios;
        /* every preset samples by the sandwich rule where a step has several sub-networks
         * (stereo_sample_subnet()): with OFA's uniform sampling the largest sub-network lost
         * 0.2 px of held-out EPE over the later phases of the quick schedule once the
         * decoder's width became elastic (docs/benchmarks.md) */
        p->sandwich = p->subnets >= 2;
        /* the classification rates are for label-smoothed cross-entropy: the disparity
         * loss (an L1 mean in pixels) takes STEREO_LR first, then STEREO_LR_LATER */
        p->lr = i == 0 ? STEREO_LR : STEREO_LR_LATER;
        if (steps && i < 6) {
            p->steps = steps[i];
            p->warmup_steps = p->steps / 20;
        }
    }
    out->clip_norm = STEREO_CLIP_NORM;
    return MANTA_OK;
}

void stereo_sample_subnet(const stereo_space *space, const ofa_space *view, const ofa_phase *p,
                          uint64_t seed, long step, int k, ofa_arch *a)
{
    const int n = p->n_dw < 1 ? 1 : p->n_dw, lo = space->n_dec_ratios - n;
    const int role = ofa_sandwich_role(p, k);
    ofa_sample_subnet(view, p, seed, step, k, space->crop_h, a); /* its sandwich rule too */
    if (role != 0) { /* the phase's widest / narrowest decoder with them */
        stereo_arch_set_dec(space, NULL, role > 0 ? space->n_dec_ratios - 1 : lo, a);
        return;
    }
    int choice[STEREO_MAX_LEVELS];
    manta_rng g;
    const uint64_t at = manta_splitmix64((uint64_t)step * 64 + (uint64_t)k);
    manta_rng_seed(&g, manta_splitmix64(seed ^ at), 0xd3c); /* ofa_sample_subnet(): 0x5ab */
    for (int i = 0; i < space->n_levels; i++)
        choice[i] = lo + (int)manta_rng_below(&g, (uint32_t)n);
    stereo_arch_set_dec(space, choice, 0, a);
}

/* Level of the ground truth of prediction p: prediction P - 1 is full resolution. */
static int level_of(const stereo_trainer *t, int p) { return t->P - 1 - p; }

/* Prediction p's shape for inputs of h x w. */
static nn_disp_loss_shape pred_shape_at(const stereo_trainer *t, int p, int h, int w)
{
    int l = level_of(t, p);
    return (nn_disp_loss_shape){t->B, h >> l, w >> l};
}

/* Prediction p's shape at the network's present size (that of the last batch uploaded). */
static nn_disp_loss_shape pred_shape(const stereo_trainer *t, int p)
{
    int h, w;
    stereo_net_size(t->net, &h, &w);
    return pred_shape_at(t, p, h, w);
}

static size_t shape_floats(nn_disp_loss_shape s) { return (size_t)s.n * s.h * s.w; }

/* Floats of a prediction's values at the network's present size. */
static size_t pred_floats(const stereo_trainer *t, int p) { return shape_floats(pred_shape(t, p)); }

/* Results of one sub-network: NN_DISP_LOSS_RESULT floats per prediction, then the
 * distillation's. */
static size_t result_floats(const stereo_trainer *t)
{
    return (size_t)(t->P + 1) * NN_DISP_LOSS_RESULT;
}

void stereo_trainer_destroy(stereo_trainer *t)
{
    if (!t)
        return;
    mslab_destroy(t->d, &t->teacher);
    mslab_destroy(t->d, &t->backup);
    mslab_destroy(t->d, &t->io);
    stereo_net_destroy(t->net);
    free(t->host_results);
    free(t->host_grads);
    free(t);
}

/* Plan the trainer's device buffers in @p l, for the largest of the space's crops. */
static void plan_io(stereo_trainer *t, mlayout *l)
{
    int h, w;
    stereo_space_plan_size(&t->space, &h, &w);
    for (int p = 0; p < t->P; p++)
        t->gt[p] = mlayout_add(l, shape_floats(pred_shape_at(t, p, h, w)));
    t->teacher_pred = mlayout_add(l, shape_floats(pred_shape_at(t, t->P - 1, h, w)));
    t->results = mlayout_add(l, result_floats(t) * (size_t)t->max_subnets);
    nn_disp_loss_shape s = pred_shape_at(t, t->P - 1, h, w);
    t->scratch = mlayout_add(l, nn_disp_loss_scratch_floats(t->d, &s) + 1);
}

manta_status stereo_trainer_plan_memory(mcl_dev *d, const stereo_space *space, int max_subnets,
                                        int batch, stereo_mem *out)
{
    memset(out, 0, sizeof *out);
    MANTA_TRY(stereo_net_plan_memory(d, space, batch, false, &out->net));
    stereo_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "trainer: out of host memory");
    t->d = d;
    t->space = *space;
    t->B = batch;
    t->P = stereo_preds(space);
    t->max_subnets = max_subnets > 0 ? max_subnets : 1;
    mlayout l = {0};
    plan_io(t, &l);
    free(t);
    const ofa_net_mem *m = &out->net;
    out->io = l.total;
    out->bytes = m->bytes + (unsigned long long)(l.total + m->params + m->state) * sizeof(float);
    out->unit_bytes = (unsigned long long)m->unit * sizeof(float);
    out->unit_what = m->unit_what;
    if (l.total > m->unit)
        out->unit_bytes = (unsigned long long)l.total * sizeof(float),
        out->unit_what = "trainer buffers";
    return MANTA_OK;
}

/* ofa_net_mem_plan_fn over stereo_trainer_plan_memory(). */
typedef struct pick_ctx {
    mcl_dev *d;
    const stereo_space *space;
    int max_subnets;
} pick_ctx;

static manta_status pick_plan(void *ctx, int batch, unsigned long long *bytes,
                              unsigned long long *unit_bytes, const char **unit_what)
{
    const pick_ctx *c = ctx;
    stereo_mem m;
    MANTA_TRY(stereo_trainer_plan_memory(c->d, c->space, c->max_subnets, batch, &m));
    *bytes = m.bytes, *unit_bytes = m.unit_bytes, *unit_what = m.unit_what;
    return MANTA_OK;
}

manta_status stereo_trainer_pick_batch(mcl_dev *d, const stereo_space *space, int max_subnets,
                                       int max_batch, unsigned long long global_mem,
                                       unsigned long long max_alloc, int *batch, stereo_mem *plan)
{
    pick_ctx c = {d, space, max_subnets};
    unsigned long long b, u;
    const char *w;
    MANTA_TRY(
        ofa_net_pick_batch(pick_plan, &c, max_batch, global_mem, max_alloc, batch, &b, &u, &w));
    return stereo_trainer_plan_memory(d, space, max_subnets, *batch > 0 ? *batch : 1, plan);
}

manta_status stereo_trainer_create(mcl_dev *d, const stereo_space *space, const ofa_schedule *sched,
                                   uint64_t seed, stereo_trainer **out)
{
    return stereo_trainer_create_shard(d, space, sched, seed, sched->batch, out);
}

int stereo_trainer_batch(const stereo_trainer *t) { return t->B; }

void stereo_trainer_set_sample_seed(stereo_trainer *t, uint64_t seed) { t->sample_seed = seed; }

manta_status stereo_trainer_create_shard(mcl_dev *d, const stereo_space *space,
                                         const ofa_schedule *sched, uint64_t seed, int local_batch,
                                         stereo_trainer **out)
{
    *out = NULL;
    if (local_batch < 1 || local_batch > sched->batch)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "stereo trainer: a shard of %d pairs of a batch of %d", local_batch,
                             sched->batch);
    stereo_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "trainer: out of host memory");
    t->d = d;
    t->space = *space;
    stereo_space_ofa_view(space, &t->view);
    t->sched = *sched;
    t->seed = seed;
    t->sample_seed = seed;
    t->B = local_batch;
    t->P = stereo_preds(space);
    for (int i = 0; i < sched->n_phases; i++)
        if (sched->phase[i].subnets > t->max_subnets)
            t->max_subnets = sched->phase[i].subnets;
    t->max_subnets = t->max_subnets > 0 ? t->max_subnets : 1;
    manta_status st = stereo_net_create(d, space, t->B, seed, &t->net);
    if (st == MANTA_OK) {
        stereo_net_slabs(t->net, &t->sl);
        mlayout l = {0};
        plan_io(t, &l);
        st = mslab_create(d, &t->io, l.total, "trainer buffers");
    }
    if (st == MANTA_OK)
        st = mslab_create(d, &t->teacher, t->sl.n_params, "teacher parameters");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->backup, t->sl.n_state, "saved batch-norm statistics");
    t->host_results = malloc(result_floats(t) * (size_t)t->max_subnets * sizeof(float));
    if (st == MANTA_OK && sched->clip_norm > 0 &&
        !(t->host_grads = malloc(t->sl.n_params * sizeof *t->host_grads)))
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "trainer: out of host memory");
    if (st == MANTA_OK && !t->host_results)
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "trainer: out of host memory");
    if (st != MANTA_OK) {
        stereo_trainer_destroy(t);
        return st;
    }
    *out = t;
    return MANTA_OK;
}

static mview IO(const stereo_trainer *t, size_t off) { return mslab_view(&t->io, off); }

int stereo_trainer_round(const stereo_trainer *t, long step)
{
    long total = ofa_schedule_total_steps(&t->sched), in_phase;
    int rounds = t->space.n_rounds, ph = ofa_schedule_locate(&t->sched, step, &in_phase);
    if (ph >= 0 && t->sched.phase[ph].final_round)
        return rounds - 1;
    if (total <= 0 || step <= 0)
        return 0;
    long r = step * rounds / total;
    return r >= rounds ? rounds - 1 : (int)r;
}

/* Upload the views and the ground truth of every prediction of pairs [first, first + B)
 * of @p b; the network runs at the batch's size from now on. */
static manta_status upload(stereo_trainer *t, const stereo_batch *b, int first)
{
    if (first < 0 || b->n < first + t->B || b->levels < t->P)
        return manta_err_set(mcl_err(t->d), MANTA_ERR_INVALID_ARG,
                             "stereo trainer: a batch of %d pairs with %d levels; the trainer "
                             "needs pairs %d .. %d with %d",
                             b->n, b->levels, first, first + t->B - 1, t->P);
    MANTA_TRY(stereo_net_set_size(t->net, b->height, b->width));
    const size_t per_view = STEREO_CHANNELS * (size_t)b->height * (size_t)b->width;
    const size_t views = (size_t)t->B * per_view;
    mview in = stereo_net_input(t->net);
    MANTA_TRY(mcl_write(t->d, in, b->left + (size_t)first * per_view, views));
    MANTA_TRY(mcl_write(t->d, mview_at(in, views), b->right + (size_t)first * per_view, views));
    for (int p = 0; p < t->P; p++) {
        const int l = level_of(t, p);
        const size_t at = (size_t)first * (size_t)(b->height >> l) * (size_t)(b->width >> l);
        MANTA_TRY(mcl_write(t->d, IO(t, t->gt[p]), b->gt[l] + at, pred_floats(t, p)));
    }
    return MANTA_OK;
}

/* The multi-scale loss of the last forward into the results of sub-network @p k (and the
 * gradients of the predictions); with @p distill, the distillation loss too. */
static manta_status losses(stereo_trainer *t, int k, int round, int distill)
{
    size_t res = t->results + (size_t)k * result_floats(t);
    MANTA_TRY(mcl_fill(t->d, IO(t, res), 0.0f, result_floats(t)));
    double sum = 0; /* the round's weights, normalised: the loss's scale stays the same */
    for (int p = 0; p < t->P; p++)
        sum += t->space.loss_w[round][p];
    for (int p = 0; p < t->P; p++) {
        float w = (float)(t->space.loss_w[round][p] / sum);
        if (w <= 0.0f)
            continue;
        nn_disp_loss_shape s = pred_shape(t, p);
        nn_disp_loss_params lp = {NN_DISP_LOSS_L1, w, (float)t->space.max_disp, 0.0f};
        MANTA_TRY(nn_disp_loss(t->d, &s, &lp, stereo_net_pred(t->net, p), IO(t, t->gt[p]),
                               IO(t, res + (size_t)p * NN_DISP_LOSS_RESULT),
                               stereo_net_dpred(t->net, p), IO(t, t->scratch)));
    }
    if (!distill)
        return MANTA_OK;
    const int f = t->P - 1;
    nn_disp_loss_shape s = pred_shape(t, f);
    nn_disp_loss_params kd = {NN_DISP_LOSS_L1, t->sched.kd_ratio, 0.0f, 1.0f};
    return nn_disp_loss(t->d, &s, &kd, stereo_net_pred(t->net, f), IO(t, t->teacher_pred),
                        IO(t, res + (size_t)t->P * NN_DISP_LOSS_RESULT),
                        stereo_net_dpred(t->net, f), IO(t, t->scratch));
}

manta_status stereo_trainer_snapshot_teacher(stereo_trainer *t)
{
    MANTA_TRY(mcl_copy(t->d, mslab_view(&t->teacher, 0), t->sl.params, t->sl.n_params));
    t->has_teacher = 1;
    return MANTA_OK;
}

/* What happens before the first step of a phase (as the classification trainer's): the
 * teacher snapshot, the width re-organisation of a phase that asks for it, zero momentum. */
static manta_status begin_phase(stereo_trainer *t, int phase)
{
    const ofa_phase *p = &t->sched.phase[phase];
    if (phase > 0 && !t->has_teacher) /* the first phase's network is the teacher */
        MANTA_TRY(stereo_trainer_snapshot_teacher(t));
    if (p->reorder >= 0)
        MANTA_TRY(stereo_net_reorder_width(t->net, p->reorder));
    return mcl_fill(t->d, t->sl.momentum, 0.0f, t->sl.n_params);
}

/* The step's figures from the results of its @p subnets sub-networks. */
static void summarise(const stereo_trainer *t, int subnets, int distill, stereo_step_result *o)
{
    double loss = 0, kd = 0, epe = 0;
    const size_t per = result_floats(t);
    for (int k = 0; k < subnets; k++) {
        const float *r = t->host_results + (size_t)k * per;
        for (int p = 0; p < t->P; p++)
            loss += r[(size_t)p * NN_DISP_LOSS_RESULT];
        epe += r[(size_t)(t->P - 1) * NN_DISP_LOSS_RESULT + 1];
        if (distill)
            kd += r[(size_t)t->P * NN_DISP_LOSS_RESULT] / t->sched.kd_ratio;
    }
    o->kd_loss = (float)(kd / subnets);
    o->loss = (float)((loss + t->sched.kd_ratio * kd) / subnets);
    o->epe = (float)(epe / subnets);
}

/* The phase of global step @p step (its index into the schedule) and the step's place in
 * it; whether it distils; its sub-networks. */
static manta_status locate(stereo_trainer *t, long step, long *in_phase, int *distill, int *subnets,
                           int *phase)
{
    *phase = ofa_schedule_locate(&t->sched, step, in_phase);
    if (*phase < 0)
        return manta_err_set(mcl_err(t->d), MANTA_ERR_INVALID_ARG,
                             "stereo trainer: step %ld is past the schedule's %ld steps", step,
                             ofa_schedule_total_steps(&t->sched));
    const ofa_phase *p = &t->sched.phase[*phase];
    *distill = p->distill && t->has_teacher && t->sched.kd_ratio > 0;
    *subnets = p->subnets < t->max_subnets ? p->subnets : t->max_subnets;
    return MANTA_OK;
}

manta_status stereo_trainer_compute(stereo_trainer *t, long step, const stereo_batch *b, int first,
                                    stereo_step_result *out)
{
    mcl_dev *d = t->d;
    long in_phase;
    int distill, subnets, phase;
    MANTA_TRY(locate(t, step, &in_phase, &distill, &subnets, &phase));
    const ofa_phase *p = &t->sched.phase[phase];
    if (in_phase == 0) {
        MANTA_TRY(begin_phase(t, phase));
        distill = p->distill && t->has_teacher && t->sched.kd_ratio > 0;
    }
    MANTA_TRY(upload(t, b, first));
    MANTA_TRY(mcl_fill(d, t->sl.grads, 0.0f, t->sl.n_params));
    const int round = stereo_trainer_round(t, step);
    ofa_arch a;
    if (distill) {
        stereo_arch_max(&t->space, &a);
        MANTA_TRY(stereo_net_set_arch(t->net, &a));
        MANTA_TRY(stereo_net_forward(t->net, mslab_view(&t->teacher, 0), OFA_BN_BATCH_ONLY));
        MANTA_TRY(mcl_copy(d, IO(t, t->teacher_pred), stereo_net_pred(t->net, t->P - 1),
                           pred_floats(t, t->P - 1)));
    }
    for (int k = 0; k < subnets; k++) {
        stereo_sample_subnet(&t->space, &t->view, p, t->sample_seed, step, k, &a);
        MANTA_TRY(stereo_net_set_arch(t->net, &a));
        MANTA_TRY(stereo_net_forward(t->net, t->sl.params, OFA_BN_TRAIN));
        MANTA_TRY(losses(t, k, round, distill));
        MANTA_TRY(stereo_net_backward(t->net));
    }
    /* the one read of a step: every sub-network's losses */
    MANTA_TRY(mcl_read(d, IO(t, t->results), t->host_results, result_floats(t) * (size_t)subnets));
    if (out) {
        lr_schedule ls = {p->lr, p->warmup_steps, p->steps};
        summarise(t, subnets, distill, out);
        out->phase = phase;
        out->round = round;
        out->lr = train_lr_at(&ls, in_phase);
    }
    return MANTA_OK;
}

manta_status stereo_trainer_apply(stereo_trainer *t, long step, float grad_scale)
{
    long in_phase;
    int distill, subnets, phase;
    MANTA_TRY(locate(t, step, &in_phase, &distill, &subnets, &phase));
    const ofa_phase *p = &t->sched.phase[phase];
    lr_schedule ls = {p->lr, p->warmup_steps, p->steps};
    /* the mean gradient over the sub-networks, the distillation term weighted
     * kd_ratio / (1 + kd_ratio): the step keeps the first phase's scale (summed, two or four
     * sub-networks with distillation made the decoder diverge at the first phase's rates) */
    float scale = grad_scale / ((float)subnets * (distill ? 1.0f + t->sched.kd_ratio : 1.0f));
    if (t->host_grads) { /* the norm of the gradient applied, clipped */
        MANTA_TRY(mcl_read(t->d, t->sl.grads, t->host_grads, t->sl.n_params));
        double sq = 0;
        for (size_t i = 0; i < t->sl.n_params; i++)
            sq += (double)t->host_grads[i] * t->host_grads[i];
        const double norm = sqrt(sq) * scale;
        if (norm > t->sched.clip_norm)
            scale *= (float)(t->sched.clip_norm / norm);
    }
    optim_sgd opt = {t->sched.momentum, t->sched.weight_decay, true};
    MANTA_TRY(optim_sgd_step(t->d, &opt, train_lr_at(&ls, in_phase), scale, t->sl.params,
                             t->sl.grads, t->sl.momentum, t->sl.n_decay, t->sl.n_params));
    return mcl_finish(t->d);
}

manta_status stereo_trainer_step(stereo_trainer *t, long step, const stereo_batch *b,
                                 stereo_step_result *out)
{
    MANTA_TRY(stereo_trainer_compute(t, step, b, 0, out));
    return stereo_trainer_apply(t, step, 1.0f);
}

/* ---- replicas of data-parallel training (train/dp.h) ---- */

typedef struct stereo_dp_cfg {
    const stereo_space *space;
    const ofa_schedule *sched;
} stereo_dp_cfg;

static manta_status dp_create_replica(const void *cfg, mcl_dev *d, uint64_t seed, int local_batch,
                                      void **out)
{
    const stereo_dp_cfg *c = cfg;
    return stereo_trainer_create_shard(d, c->space, c->sched, seed, local_batch,
                                       (stereo_trainer **)out);
}
static void dp_destroy_replica(void *r) { stereo_trainer_destroy(r); }
static void dp_slabs(void *r, ofa_slabs *out) { *out = ((stereo_trainer *)r)->sl; }
static int dp_bn_max_channels(void *r)
{
    return stereo_net_bn_max_channels(((stereo_trainer *)r)->net);
}
static void dp_set_bn_sync(void *r, ofa_bn_sync_fn fn, void *ctx)
{
    stereo_net_set_bn_sync(((stereo_trainer *)r)->net, fn, ctx);
}
static void dp_set_sample_seed(void *r, uint64_t seed) { stereo_trainer_set_sample_seed(r, seed); }

static manta_status dp_compute(void *r, long step, const void *batch, int first, void *res,
                               float sums[4])
{
    stereo_step_result *o = res;
    MANTA_TRY(stereo_trainer_compute(r, step, batch, first, o));
    sums[0] = o->loss;
    sums[1] = o->kd_loss;
    sums[2] = o->epe;
    sums[3] = 0.0f;
    return MANTA_OK;
}
static manta_status dp_apply(void *r, long step, float grad_scale)
{
    return stereo_trainer_apply(r, step, grad_scale);
}
static manta_status dp_whole_step(void *r, long step, const void *batch, void *res)
{
    return stereo_trainer_step(r, step, batch, res);
}
static void dp_merge(void *res, const float sums[4], int replicas)
{
    stereo_step_result *o = res;
    o->loss = sums[0] / (float)replicas;
    o->kd_loss = sums[1] / (float)replicas;
    o->epe = sums[2] / (float)replicas;
}

static const dp_replica_ops STEREO_DP_OPS = {
    .result_size = sizeof(stereo_step_result),
    .create = dp_create_replica,
    .destroy = dp_destroy_replica,
    .slabs = dp_slabs,
    .bn_max_channels = dp_bn_max_channels,
    .set_bn_sync = dp_set_bn_sync,
    .set_sample_seed = dp_set_sample_seed,
    .compute = dp_compute,
    .apply = dp_apply,
    .step = dp_whole_step,
    .merge = dp_merge,
};

manta_status stereo_dp_create(mcl_dev *const *devs, int n_dev, const stereo_space *space,
                              const ofa_schedule *sched, uint64_t seed, dp_mode mode,
                              ring_comm *ring, dp_trainer **out, manta_err *err)
{
    const stereo_dp_cfg cfg = {space, sched};
    return dp_create_ops(&STEREO_DP_OPS, &cfg, devs, n_dev, sched->batch, seed, mode, ring, out,
                         err);
}

manta_status stereo_dp_step(dp_trainer *p, long step, const stereo_batch *b,
                            stereo_step_result *out, manta_err *err)
{
    return dp_run(p, step, b, out, err);
}

manta_status stereo_trainer_recalibrate(stereo_trainer *t, const ofa_arch *a, stereo_batch *b,
                                        stereo_batch_fn recal, void *ctx, long pairs)
{
    MANTA_TRY(stereo_net_set_arch(t->net, a));
    if (!t->bn_saved) /* a re-calibration not restored yet keeps the statistics it saved */
        MANTA_TRY(mcl_copy(t->d, mslab_view(&t->backup, 0), t->sl.state, t->sl.n_state));
    t->bn_saved = true;
    const int per = b->n / t->B * t->B; /* pairs of a source batch this device runs */
    long batches = per > 0 ? pairs / per : 0;
    if (batches < 1)
        return MANTA_OK; /* too few pairs: the supernet's statistics as they are */
    manta_status st = stereo_net_recal_begin(t->net, batches * per);
    for (long i = 0; i < batches && st == MANTA_OK; i++) {
        int count = 0;
        st = recal(ctx, i, b, &count, mcl_err(t->d));
        for (int first = 0; first < per && st == MANTA_OK; first += t->B) {
            st = upload(t, b, first);
            if (st == MANTA_OK)
                st = stereo_net_forward(t->net, t->sl.params, OFA_BN_RECAL);
        }
    }
    return st;
}

manta_status stereo_trainer_restore_bn(stereo_trainer *t)
{
    if (!t->bn_saved)
        return MANTA_OK;
    t->bn_saved = false;
    return mcl_copy(t->d, t->sl.state, mslab_view(&t->backup, 0), t->sl.n_state);
}

manta_status stereo_trainer_evaluate(stereo_trainer *t, const ofa_arch *a, stereo_batch *b,
                                     stereo_batch_fn recal, void *recal_ctx, long recal_pairs,
                                     stereo_batch_fn eval, void *eval_ctx, long eval_pairs,
                                     stereo_metrics *m, float *pred)
{
    const size_t plane = (size_t)b->height * (size_t)b->width;
    float *host = malloc((size_t)t->B * plane * sizeof *host);
    if (!host)
        return manta_err_set(mcl_err(t->d), MANTA_ERR_NO_MEMORY, "evaluation: out of memory");
    manta_status st = stereo_trainer_recalibrate(t, a, b, recal, recal_ctx, recal_pairs);
    long seen = 0;
    for (long i = 0; seen < eval_pairs && st == MANTA_OK; i++) {
        int count = 0;
        st = eval(eval_ctx, i, b, &count, mcl_err(t->d));
        if (st != MANTA_OK || count <= 0)
            break;
        count = count < eval_pairs - seen ? count : (int)(eval_pairs - seen);
        /* the source's batch in runs of this device's B pairs */
        for (int first = 0; first < count && st == MANTA_OK; first += t->B) {
            if ((st = upload(t, b, first)) == MANTA_OK)
                st = stereo_net_forward(t->net, t->sl.params, OFA_BN_EVAL);
            if (st == MANTA_OK)
                st = mcl_read(t->d, stereo_net_pred(t->net, t->P - 1), host, (size_t)t->B * plane);
            for (int k = first; k < first + t->B && k < count && st == MANTA_OK; k++) {
                /* a view of pair k's ground truth (not owned) */
                const float *got = host + (size_t)(k - first) * plane;
                stereo_pair gt = {.height = b->height,
                                  .width = b->width,
                                  .disp = b->gt[0] + (size_t)k * plane,
                                  .mask = b->mask + (size_t)k * plane,
                                  .has_noc = b->has_noc};
                stereo_metrics_add(m, got, &gt);
                if (pred)
                    memcpy(pred + (size_t)(seen + k) * plane, got, plane * sizeof *pred);
            }
        }
        seen += count;
    }
    free(host);
    manta_status rs = stereo_trainer_restore_bn(t);
    return st != MANTA_OK ? st : rs;
}

void stereo_heldout_source(const stereo_space *s, uint64_t seed, long count, stereo_source *out)
{
    *out = (stereo_source){.kind = STEREO_SOURCE_SYNTH, .base = (uint64_t)1 << 40, .count = count};
    stereo_synth_opts_default(&out->synth, s->crop_w, s->crop_h, (float)s->max_disp,
                              seed ^ 0x6865ULL);
}

manta_status stereo_ordered_batch(void *ctx, long index, stereo_batch *b, int *count,
                                  manta_err *err)
{
    const stereo_source *src = ctx;
    long idx[64];
    int n = b->n < 64 ? b->n : 64;
    for (int k = 0; k < n; k++)
        idx[k] = index * b->n + k;
    *count = b->n;
    stereo_aug_params crop = {.crop_h = b->height, .crop_w = b->width, .per_view = true};
    manta_rng rng;
    manta_rng_seed(&rng, (uint64_t)index, 7);
    bool folder = src->kind == STEREO_SOURCE_FOLDER;
    return stereo_batch_fill(b, src, idx, folder ? &crop : NULL, folder ? &rng : NULL, err);
}
