/* Data-parallel classification training: the classification trainer's replica operations
 * for train/dp.h (classify/ofa_train.h: ofa_dp_create(), ofa_dp_step()). */
#include "classify/ofa_train.h"

#include <math.h>

typedef struct rep_cfg {
    const ofa_space *space;
    const ofa_schedule *sched;
} rep_cfg;

typedef struct rep_batch {
    const float *images, *labels;
} rep_batch;

static manta_status rep_create(const void *cfg, mcl_dev *d, uint64_t seed, int local_batch,
                               void **out)
{
    const rep_cfg *c = cfg;
    return ofa_trainer_create_shard(d, c->space, c->sched, seed, local_batch, (ofa_trainer **)out);
}
static void rep_destroy(void *r) { ofa_trainer_destroy(r); }
static void rep_slabs(void *r, ofa_slabs *out) { ofa_supernet_slabs(ofa_trainer_net(r), out); }
static int rep_grad_bounds(void *r, size_t *bounds, int cap)
{
    return ofa_supernet_grad_bounds(ofa_trainer_net(r), bounds, cap);
}
static int rep_bn_max_channels(void *r) { return ofa_supernet_bn_max_channels(ofa_trainer_net(r)); }
static void rep_set_bn_sync(void *r, ofa_bn_sync_fn fn, void *ctx)
{
    ofa_supernet_set_bn_sync(ofa_trainer_net(r), fn, ctx);
}
static void rep_set_shard(void *r, long first)
{
    ofa_supernet_set_shard(ofa_trainer_net(r), first);
}
static void rep_set_sample_seed(void *r, uint64_t seed) { ofa_trainer_set_sample_seed(r, seed); }
static void rep_set_grad_ready(void *r, ofa_grad_ready_fn fn, void *ctx)
{
    ofa_trainer_set_grad_ready(r, fn, ctx);
}

/* Images of one sample at the resolution of @p step. */
static size_t rep_per_image(ofa_trainer *t, long step)
{
    const size_t r = (size_t)ofa_trainer_resolution(t, step);
    return (size_t)ofa_supernet_space(ofa_trainer_net(t))->in_channels * r * r;
}

static manta_status rep_compute(void *r, long step, const void *batch, int first, void *res,
                                float sums[4])
{
    const rep_batch *b = batch;
    ofa_step_result *o = res;
    MANTA_TRY(ofa_trainer_compute(r, step, b->images + (size_t)first * rep_per_image(r, step),
                                  b->labels + first, o));
    sums[0] = o->loss;
    sums[1] = o->kd_loss;
    sums[2] = (float)o->correct;
    sums[3] = (float)o->predictions;
    return MANTA_OK;
}
static manta_status rep_apply(void *r, long step, float grad_scale)
{
    return ofa_trainer_apply(r, step, grad_scale);
}
static manta_status rep_step(void *r, long step, const void *batch, void *res)
{
    const rep_batch *b = batch;
    return ofa_trainer_step(r, step, b->images, b->labels, res);
}
static void rep_merge(void *res, const float sums[4], int replicas)
{
    ofa_step_result *o = res;
    o->loss = sums[0] / (float)replicas;
    o->kd_loss = sums[1] / (float)replicas;
    o->correct = (int)lrintf(sums[2]);
    o->predictions = (int)lrintf(sums[3]);
}

static const dp_replica_ops REPLICA_OPS = {
    .result_size = sizeof(ofa_step_result),
    .create = rep_create,
    .destroy = rep_destroy,
    .slabs = rep_slabs,
    .grad_bounds = rep_grad_bounds,
    .bn_max_channels = rep_bn_max_channels,
    .set_bn_sync = rep_set_bn_sync,
    .set_shard = rep_set_shard,
    .set_sample_seed = rep_set_sample_seed,
    .set_grad_ready = rep_set_grad_ready,
    .compute = rep_compute,
    .apply = rep_apply,
    .step = rep_step,
    .merge = rep_merge,
};

manta_status ofa_dp_create(mcl_dev *const *devs, int n_dev, const ofa_space *space,
                           const ofa_schedule *sched, uint64_t seed, dp_mode mode, ring_comm *ring,
                           dp_trainer **out, manta_err *err)
{
    const rep_cfg cfg = {space, sched};
    return dp_create_ops(&REPLICA_OPS, &cfg, devs, n_dev, sched->batch, seed, mode, ring, out, err);
}

manta_status ofa_dp_step(dp_trainer *p, long step, const float *images, const float *labels,
                         ofa_step_result *out, manta_err *err)
{
    const rep_batch b = {images, labels};
    return dp_run(p, step, &b, out, err);
}
