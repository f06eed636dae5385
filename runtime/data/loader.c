#include "data/loader.h"

#include <stdlib.h>
#include <string.h>

/* PCG streams: augmentation and epoch orders never share numbers. */
#define AUG_STREAM 0x617567ULL   /* "aug" */
#define ORDER_STREAM 0x6f7264ULL /* "ord" */

void data_loader_opts_default(loader_opts *o, const dataset *d)
{
    memset(o, 0, sizeof *o);
    o->data = d;
    o->batch = 64;
    o->shuffle = true;
    o->drop_last = true;
    data_aug_params_default(&o->aug, AUG_TRAIN, d ? d->channels : 3);
    o->resolution = d && d->stored_size > 0 ? d->stored_size : 32;
}

void data_loader_state_init(loader_state *s, uint64_t seed)
{
    s->epoch = 0;
    s->pos = 0;
    manta_rng_seed(&s->rng, seed, AUG_STREAM);
}

size_t data_loader_image_floats(const loader *l)
{
    int r = l->o.res_fn ? l->o.max_resolution : l->o.resolution;
    return (size_t)l->o.batch * l->o.data->channels * r * r;
}

/* Batches an epoch holds from position pos on: is there another one? */
static bool has_batch(const loader *l, int64_t pos)
{
    int64_t left = l->n - pos;
    return l->o.drop_last ? left >= l->o.batch : left > 0;
}

static void normalise(loader *l)
{
    if (!has_batch(l, l->st.pos)) {
        l->st.epoch++;
        l->st.pos = 0;
    }
}

static void build_order(loader *l, int64_t epoch)
{
    memcpy(l->order, l->indices, (size_t)l->n * sizeof *l->order);
    if (l->o.shuffle) {
        manta_rng r;
        manta_rng_seed(&r, manta_splitmix64(l->o.seed ^ manta_splitmix64((uint64_t)epoch)),
                       ORDER_STREAM);
        for (int i = l->n - 1; i > 0; i--) {
            int j = (int)manta_rng_below(&r, (uint32_t)i + 1);
            int t = l->order[i];
            l->order[i] = l->order[j];
            l->order[j] = t;
        }
    }
    l->order_epoch = epoch;
}

manta_status data_loader_init(loader *l, const loader_opts *o, const loader_state *start,
                              manta_err *err)
{
    memset(l, 0, sizeof *l);
    const dataset *d = o->data;
    if (!d || d->count <= 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "loader: no data set, or it is empty");
    if (o->batch <= 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "loader: batch is %d (must be > 0)",
                             o->batch);
    int rmax = o->res_fn ? o->max_resolution : o->resolution;
    if (rmax < 1 || rmax > AUG_MAX_RESOLUTION)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "loader: %s is %d (must be in [1, %d])",
                             o->res_fn ? "max_resolution" : "resolution", rmax, AUG_MAX_RESOLUTION);
    if (o->epochs < 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "loader: epochs is %lld (must be >= 0)",
                             (long long)o->epochs);
    int n = o->indices ? o->n_indices : d->count;
    if (n <= 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "loader: the sample list is empty");
    if (o->drop_last && n < o->batch)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "loader: %d samples make no full batch of %d (drop_last is on)", n,
                             o->batch);
    /* Check the augmentation parameters once, on a 1x1 image. */
    const uint8_t px[3] = {0, 0, 0};
    float out[3];
    aug_view v = {0, 0, 1, false};
    manta_status st = data_aug_render(&o->aug, px, 1, 1, d->channels, &v, 1, out, err);
    if (st != MANTA_OK)
        return st;
    l->o = *o;
    l->o.indices = NULL;
    l->n = n;
    l->indices = malloc((size_t)n * sizeof *l->indices);
    l->order = malloc((size_t)n * sizeof *l->order);
    if (!l->indices || !l->order) {
        data_loader_free(l);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "loader: out of memory for %d indices", n);
    }
    for (int i = 0; i < n; i++) {
        int k = o->indices ? o->indices[i] : i;
        if (k < 0 || k >= d->count) {
            data_loader_free(l);
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "loader: sample %d is image %d, outside [0, %d)", i, k, d->count);
        }
        l->indices[i] = k;
    }
    if (start) {
        if (start->epoch < 0 || start->pos < 0 || start->pos > n) {
            data_loader_free(l);
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "loader: start state (epoch %lld, position %lld) is outside an "
                                 "epoch of %d samples",
                                 (long long)start->epoch, (long long)start->pos, n);
        }
        l->st = *start;
    } else {
        data_loader_state_init(&l->st, o->seed);
    }
    normalise(l);
    l->order_epoch = -1;
    return MANTA_OK;
}

manta_status data_loader_next(loader *l, float *images, float *labels, int *index,
                              loader_batch_info *info, manta_err *err)
{
    memset(info, 0, sizeof *info);
    if (l->o.epochs > 0 && l->st.epoch >= l->o.epochs) {
        info->epoch = l->st.epoch;
        return MANTA_OK; /* n = 0: done */
    }
    const int B = l->o.batch;
    const int64_t bnum = l->st.pos / B;
    int r = l->o.resolution;
    if (l->o.res_fn) {
        r = l->o.res_fn(l->o.res_ctx, l->st.epoch, bnum);
        if (r < 1 || r > l->o.max_resolution)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "loader: resolution callback gave %d for epoch %lld batch %lld "
                                 "(allowed 1..%d)",
                                 r, (long long)l->st.epoch, (long long)bnum, l->o.max_resolution);
    }
    if (l->order_epoch != l->st.epoch)
        build_order(l, l->st.epoch);
    int64_t left = l->n - l->st.pos;
    int take = left < B ? (int)left : B;
    const int *idx = l->order + l->st.pos;
    manta_rng rng = l->st.rng; /* commit only on success */
    manta_status st = data_aug_batch(&l->o.aug, l->o.data, idx, take, r, &rng, images, labels, err);
    if (st != MANTA_OK)
        return st;
    if (index)
        memcpy(index, idx, (size_t)take * sizeof *index);
    info->n = take;
    info->resolution = r;
    info->epoch = l->st.epoch;
    info->batch = bnum;
    l->st.rng = rng;
    l->st.pos += take;
    normalise(l);
    return MANTA_OK;
}

void data_loader_get_state(const loader *l, loader_state *s) { *s = l->st; }

void data_loader_free(loader *l)
{
    if (!l)
        return;
    free(l->indices);
    free(l->order);
    memset(l, 0, sizeof *l);
}
