#include "classify/ofa_train.h"

#include <stdlib.h>
#include <string.h>

#include "cl/slab.h"
#include "nn/loss.h"
#include "classify/extract.h"
#include "train/optim.h"

struct ofa_trainer {
    mcl_dev *d;
    ofa_space space;
    ofa_schedule sched;
    uint64_t seed;
    uint64_t sample_seed; /* seeds the sub-network sampling (seed unless set) */
    int B;                /* images per batch on this device (a shard of sched.batch) */
    ofa_supernet *net;
    ofa_slabs sl;
    mslab teacher; /* parameters of the teacher */
    mslab backup;  /* BN statistics saved around a re-calibration */
    mslab io;      /* labels, teacher logits, then per sub-network of a step its results */
    size_t labels, teacher_logits, results;
    int max_subnets; /* the most sub-networks a step of the schedule trains */
    int has_teacher;
    float *host_results, *host_images, *host_labels;
    ofa_grad_ready_fn grad_ready; /* progress of the last backward of a step, or NULL */
    void *grad_ready_ctx;
};

ofa_supernet *ofa_trainer_net(ofa_trainer *t) { return t->net; }
const ofa_schedule *ofa_trainer_schedule(const ofa_trainer *t) { return &t->sched; }
int ofa_trainer_has_teacher(const ofa_trainer *t) { return t->has_teacher; }
mview ofa_trainer_teacher(const ofa_trainer *t) { return mslab_view(&t->teacher, 0); }
void ofa_trainer_set_has_teacher(ofa_trainer *t, int has) { t->has_teacher = has; }

int ofa_trainer_resolution(const ofa_trainer *t, long step)
{
    return ofa_sample_resolution(&t->space, t->seed, step);
}

void ofa_trainer_destroy(ofa_trainer *t)
{
    if (!t)
        return;
    mslab_destroy(t->d, &t->teacher);
    mslab_destroy(t->d, &t->backup);
    mslab_destroy(t->d, &t->io);
    ofa_supernet_destroy(t->net);
    free(t->host_results);
    free(t->host_images);
    free(t->host_labels);
    free(t);
}

manta_status ofa_trainer_create(mcl_dev *d, const ofa_space *space, const ofa_schedule *sched,
                                uint64_t seed, ofa_trainer **out)
{
    return ofa_trainer_create_shard(d, space, sched, seed, sched->batch, out);
}

int ofa_trainer_batch(const ofa_trainer *t) { return t->B; }
void ofa_trainer_set_sample_seed(ofa_trainer *t, uint64_t seed) { t->sample_seed = seed; }

void ofa_trainer_set_grad_ready(ofa_trainer *t, ofa_grad_ready_fn fn, void *ctx)
{
    t->grad_ready = fn;
    t->grad_ready_ctx = ctx;
}

/* What one sub-network of a step leaves in io for the host, read once after the step's
 * last backward (the device never waits for the host inside a step): its losses (B), its
 * distillation losses (B) and its logits (B, K). */
static size_t result_floats(const ofa_trainer *t)
{
    return (size_t)t->B * (2 + (size_t)t->space.classes);
}

manta_status ofa_trainer_create_shard(mcl_dev *d, const ofa_space *space, const ofa_schedule *sched,
                                      uint64_t seed, int local_batch, ofa_trainer **out)
{
    *out = NULL;
    if (local_batch < 1 || local_batch > sched->batch)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "trainer: shard of %d images of a batch of %d", local_batch,
                             sched->batch);
    ofa_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "trainer: out of host memory");
    t->d = d;
    t->space = *space;
    t->sched = *sched;
    t->seed = seed;
    t->sample_seed = seed;
    t->B = local_batch;
    const int B = local_batch, K = space->classes;
    const int rmax = space->res[space->n_res - 1];
    manta_status st = ofa_supernet_create(d, space, B, seed, &t->net);
    if (st == MANTA_OK) {
        ofa_supernet_slabs(t->net, &t->sl);
        for (int i = 0; i < sched->n_phases; i++)
            if (sched->phase[i].subnets > t->max_subnets)
                t->max_subnets = sched->phase[i].subnets;
        mlayout l = {0};
        t->labels = mlayout_add(&l, (size_t)B);
        t->teacher_logits = mlayout_add(&l, (size_t)B * K);
        t->results = mlayout_add(&l, result_floats(t) * (size_t)t->max_subnets);
        st = mslab_create(d, &t->io, l.total, "trainer buffers");
    }
    if (st == MANTA_OK)
        st = mslab_create(d, &t->teacher, t->sl.n_params, "teacher parameters");
    if (st == MANTA_OK)
        st = mslab_create(d, &t->backup, t->sl.n_state, "saved batch-norm statistics");
    size_t slots = t->max_subnets > 0 ? (size_t)t->max_subnets : 1;
    t->host_results = malloc(result_floats(t) * slots * sizeof(float));
    t->host_images = malloc((size_t)B * space->in_channels * rmax * rmax * sizeof(float));
    t->host_labels = malloc((size_t)B * sizeof(float));
    if (st == MANTA_OK && (!t->host_results || !t->host_images || !t->host_labels))
        st = manta_err_set(mcl_err(d), MANTA_ERR_NO_MEMORY, "trainer: out of host memory");
    if (st != MANTA_OK) {
        ofa_trainer_destroy(t);
        return st;
    }
    *out = t;
    return MANTA_OK;
}

static mview IO(const ofa_trainer *t, size_t off) { return mslab_view(&t->io, off); }

/* Sum of n floats. */
static double sum_floats(const float *v, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Correct arg-max predictions of n rows of K logits. */
static int count_correct(const float *logits, int K, const float *labels, int n)
{
    int c = 0;
    for (int b = 0; b < n; b++) {
        const float *row = logits + (size_t)b * K;
        int best = 0;
        for (int k = 1; k < K; k++)
            if (row[k] > row[best])
                best = k;
        c += best == (int)labels[b];
    }
    return c;
}

/* What happens before the first step of a phase. */
static manta_status begin_phase(ofa_trainer *t, int phase)
{
    const ofa_phase *p = &t->sched.phase[phase];
    if (phase > 0 && !t->has_teacher) { /* the first phase's network is the teacher */
        MANTA_TRY(mcl_copy(t->d, mslab_view(&t->teacher, 0), t->sl.params, t->sl.n_params));
        t->has_teacher = 1;
    }
    if (p->reorder >= 0)
        MANTA_TRY(ofa_supernet_reorder_width(t->net, p->reorder));
    return mcl_fill(t->d, t->sl.momentum, 0.0f, t->sl.n_params);
}

/* Phase of global step @p step, or an error naming the step. */
static manta_status locate(ofa_trainer *t, long step, int *phase, long *in_phase)
{
    *phase = ofa_schedule_locate(&t->sched, step, in_phase);
    if (*phase < 0)
        return manta_err_set(mcl_err(t->d), MANTA_ERR_INVALID_ARG,
                             "trainer: step %ld is past the schedule's %ld steps", step,
                             ofa_schedule_total_steps(&t->sched));
    return MANTA_OK;
}

manta_status ofa_trainer_compute(ofa_trainer *t, long step, const float *images,
                                 const float *labels, ofa_step_result *out)
{
    mcl_dev *d = t->d;
    const int B = t->B, K = t->space.classes;
    long in_phase;
    int phase;
    MANTA_TRY(locate(t, step, &phase, &in_phase));
    const ofa_phase *p = &t->sched.phase[phase];
    if (in_phase == 0)
        MANTA_TRY(begin_phase(t, phase));
    const int r = ofa_trainer_resolution(t, step);
    ofa_supernet *net = t->net;
    MANTA_TRY(
        mcl_write(d, ofa_supernet_input(net), images, (size_t)B * t->space.in_channels * r * r));
    MANTA_TRY(mcl_write(d, IO(t, t->labels), labels, (size_t)B));
    MANTA_TRY(mcl_fill(d, t->sl.grads, 0.0f, t->sl.n_params));
    const int distill = p->distill && t->has_teacher && t->sched.kd_ratio > 0;
    ofa_arch a;
    if (distill) {
        ofa_arch_max(&t->space, r, &a);
        MANTA_TRY(ofa_supernet_set_arch(net, &a));
        MANTA_TRY(ofa_supernet_forward(net, mslab_view(&t->teacher, 0), OFA_BN_BATCH_ONLY));
        MANTA_TRY(mcl_copy(d, IO(t, t->teacher_logits), ofa_supernet_logits(net), (size_t)B * K));
    }
    if (p->subnets > t->max_subnets)
        return manta_err_set(mcl_err(d), MANTA_ERR_INTERNAL,
                             "trainer: phase '%s' trains %d sub-networks a step, room for %d",
                             p->name, p->subnets, t->max_subnets);
    const size_t per = result_floats(t);
    for (int k = 0; k < p->subnets; k++) {
        const size_t losses = t->results + (size_t)k * per, kd_losses = losses + (size_t)B;
        ofa_sample_subnet(&t->space, p, t->sample_seed, step, k, r, &a);
        MANTA_TRY(ofa_supernet_set_arch(net, &a));
        ofa_supernet_set_dropout_seed(net, t->seed ^ ((uint64_t)step << 8) ^ (uint64_t)k);
        MANTA_TRY(ofa_supernet_forward(net, t->sl.params, OFA_BN_TRAIN));
        MANTA_TRY(nn_xent_forward_backward(
            d, B, K, t->sched.label_smoothing, ofa_supernet_logits(net), IO(t, t->labels),
            IO(t, losses), ofa_supernet_dlogits(net), 1.0f / (float)B, 0.0f));
        if (distill)
            MANTA_TRY(nn_soft_xent_forward_backward(
                d, B, K, ofa_supernet_logits(net), IO(t, t->teacher_logits), IO(t, kd_losses),
                ofa_supernet_dlogits(net), t->sched.kd_ratio / (float)B, 1.0f));
        MANTA_TRY(
            mcl_copy(d, IO(t, kd_losses + (size_t)B), ofa_supernet_logits(net), (size_t)B * K));
        const int last = k == p->subnets - 1;
        ofa_supernet_set_grad_ready(net, last ? t->grad_ready : NULL, t->grad_ready_ctx);
        manta_status bst = ofa_supernet_backward(net);
        ofa_supernet_set_grad_ready(net, NULL, NULL);
        MANTA_TRY(bst);
    }
    /* the one read of a step: every sub-network's losses and logits */
    MANTA_TRY(mcl_read(d, IO(t, t->results), t->host_results, per * (size_t)p->subnets));
    double loss = 0, kd = 0;
    int correct = 0;
    for (int k = 0; k < p->subnets; k++) {
        const float *r = t->host_results + (size_t)k * per;
        loss += sum_floats(r, B);
        if (distill)
            kd += sum_floats(r + B, B);
        correct += count_correct(r + 2 * (size_t)B, K, labels, B);
    }
    lr_schedule ls = {p->lr, p->warmup_steps, p->steps};
    if (out) {
        const double n = (double)B * p->subnets;
        out->phase = phase;
        out->r = r;
        out->kd_loss = (float)(kd / n);
        out->loss = (float)((loss + t->sched.kd_ratio * kd) / n);
        out->correct = correct;
        out->predictions = B * p->subnets;
        out->lr = train_lr_at(&ls, in_phase);
    }
    return mcl_finish(d);
}

manta_status ofa_trainer_apply(ofa_trainer *t, long step, float grad_scale)
{
    long in_phase;
    int phase;
    MANTA_TRY(locate(t, step, &phase, &in_phase));
    const ofa_phase *p = &t->sched.phase[phase];
    lr_schedule ls = {p->lr, p->warmup_steps, p->steps};
    optim_sgd opt = {t->sched.momentum, t->sched.weight_decay, true};
    MANTA_TRY(optim_sgd_step(t->d, &opt, train_lr_at(&ls, in_phase), grad_scale, t->sl.params,
                             t->sl.grads, t->sl.momentum, t->sl.n_decay, t->sl.n_params));
    return mcl_finish(t->d);
}

manta_status ofa_trainer_step(ofa_trainer *t, long step, const float *images, const float *labels,
                              ofa_step_result *out)
{
    MANTA_TRY(ofa_trainer_compute(t, step, images, labels, out));
    return ofa_trainer_apply(t, step, 1.0f);
}

/* Select sub-network @p a, save the supernet's BN statistics and
 * re-calibrate them for @p a over @p recal_images images. The caller restores
 * the statistics with restore_stats(). */
static manta_status recalibrate(ofa_trainer *t, const ofa_arch *a, ofa_batch_fn recal,
                                void *recal_ctx, long recal_images)
{
    mcl_dev *d = t->d;
    ofa_supernet *net = t->net;
    const int B = t->B;
    const size_t in = (size_t)B * t->space.in_channels * a->r * a->r;
    MANTA_TRY(ofa_supernet_set_arch(net, a));
    MANTA_TRY(mcl_copy(d, mslab_view(&t->backup, 0), t->sl.state, t->sl.n_state));
    long batches = recal_images / B;
    manta_status st = ofa_supernet_recal_begin(net, batches * B);
    for (long i = 0; i < batches && st == MANTA_OK; i++) {
        int count;
        st = recal(recal_ctx, i, a->r, t->host_images, t->host_labels, &count);
        if (st == MANTA_OK)
            st = mcl_write(d, ofa_supernet_input(net), t->host_images, in);
        if (st == MANTA_OK)
            st = ofa_supernet_forward(net, t->sl.params, OFA_BN_RECAL);
    }
    return st;
}

/* Put back the statistics recalibrate() saved; keeps the first error. */
static manta_status restore_stats(ofa_trainer *t, manta_status st)
{
    manta_status rs = mcl_copy(t->d, t->sl.state, mslab_view(&t->backup, 0), t->sl.n_state);
    return st != MANTA_OK ? st : rs;
}

manta_status ofa_trainer_evaluate(ofa_trainer *t, const ofa_arch *a, ofa_batch_fn recal,
                                  void *recal_ctx, long recal_images, ofa_batch_fn eval,
                                  void *eval_ctx, long eval_images, double *top1, float *logits)
{
    mcl_dev *d = t->d;
    ofa_supernet *net = t->net;
    const size_t in = (size_t)t->B * t->space.in_channels * a->r * a->r;
    *top1 = 0;
    manta_status st = recalibrate(t, a, recal, recal_ctx, recal_images);
    long seen = 0, correct = 0;
    for (long i = 0; seen < eval_images && st == MANTA_OK; i++) {
        int count = 0, c = 0;
        st = eval(eval_ctx, i, a->r, t->host_images, t->host_labels, &count);
        if (st == MANTA_OK && count <= 0)
            break;
        if (st == MANTA_OK)
            st = mcl_write(d, ofa_supernet_input(net), t->host_images, in);
        if (st == MANTA_OK)
            st = ofa_supernet_forward(net, t->sl.params, OFA_BN_EVAL);
        if (count > eval_images - seen)
            count = (int)(eval_images - seen);
        /* the logits go where the first sub-network's results of a step go */
        float *host = t->host_results + 2 * (size_t)t->B;
        if (st == MANTA_OK)
            st = mcl_read(d, ofa_supernet_logits(net), host, (size_t)count * t->space.classes);
        if (st == MANTA_OK)
            c = count_correct(host, t->space.classes, t->host_labels, count);
        if (st == MANTA_OK && logits)
            memcpy(logits + (size_t)seen * t->space.classes, host,
                   (size_t)count * t->space.classes * sizeof *logits);
        seen += count;
        correct += c;
    }
    st = restore_stats(t, st); /* even after a failure */
    if (st == MANTA_OK && seen > 0)
        *top1 = (double)correct / (double)seen;
    return st;
}

manta_status ofa_trainer_extract(ofa_trainer *t, const ofa_arch *a, ofa_batch_fn recal,
                                 void *recal_ctx, long recal_images, const xg_preprocess *pre,
                                 xgraph *out, manta_err *err)
{
    manta_status st = recalibrate(t, a, recal, recal_ctx, recal_images);
    if (st != MANTA_OK)
        manta_err_set(err, st, "%s", mcl_err(t->d)->msg);
    else
        st = ofa_supernet_extract(t->net, pre, out, err);
    return restore_stats(t, st);
}
