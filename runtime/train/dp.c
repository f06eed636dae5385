#include "train/dp.h"

#include "cl/blas.h"
#include "core/clock.h"

#include <math.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/** Most devices one process drives. */
#define DP_MAX_DEV 64

/** Figures a rank adds to a step's last allreduce (dp_rank_figures, in its order). */
#define DP_FIGS 5

typedef struct dp_sync_ctx {
    struct dp_trainer *p;
    int i; /* local replica */
} dp_sync_ctx;

struct dp_trainer {
    int D, N, rank, R; /* local replicas, ranks, this rank, all replicas */
    dp_mode mode;
    ring_comm *ring;
    const dp_replica_ops *ops;
    mcl_dev *dev[DP_MAX_DEV];
    void *tr[DP_MAX_DEV];
    int local_batch;
    size_t n_params;
    /* one lock and condition for the barrier, the hand-over of steps and failures */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int locks_ok;
    int arrived;
    unsigned long bgen;
    int failed;
    manta_status fail_st;
    char fail_msg[MANTA_ERR_MSG_MAX];
    /* the step handed to the device threads */
    unsigned long work_gen;
    int done, quit;
    long step;
    const void *batch;
    unsigned char *res;        /* (D, ops->result_size) the replicas' results */
    float sums[DP_MAX_DEV][4]; /* the replicas' figures to add up */
    pthread_t th[DP_MAX_DEV];
    int n_threads;
    /* synchronised batch norm */
    size_t w2;     /* 2 x widest channel count: one slot */
    float *slots;  /* (D, w2) this process's replicas' inputs */
    float *gather; /* (R, w2) every replica's inputs (DP_DATA over ranks) */
    float *result; /* (w2) the combined values */
    long result_m;
    /* gradients */
    float *hg[DP_MAX_DEV]; /* (n_params) each device's gradients; hg[0] is gsum when D == 1 */
    float *gsum;           /* (n_params + tail) summed gradients, then the 4 sums of the
                            * replicas' figures, then DP_FIGS per rank (dp_rank_figures) */
    size_t tail;           /* 4 + N * DP_FIGS */
    /* timing of the steps (dp_rank_figures) */
    double t_compute[DP_MAX_DEV];     /* this step: each replica's compute and gradient read */
    double data_wait;                 /* this step: dp_set_data_wait() */
    double last_allreduce, last_step; /* the step before */
    dp_rank_figures *figs;            /* (N) every rank's figures of the last step */
    dp_sync_ctx ctx[DP_MAX_DEV];
    /* gradient buckets: nb contiguous ranges of the decayed gradients [0, n_decay), in the
     * order they are allreduced (from the classifier's end down to the stem); then one
     * allreduce of [n_decay, n_params + 4) */
    size_t n_decay, bucket_bytes;
    int overlap; /* buckets allreduced during the backward (a grad_ready hook) */
    int nb;
    size_t *b_lo, *b_hi;     /* (nb) */
    ring_handle *b_h;        /* (nb) tickets of this step's bucket allreduces */
    int b_issued;            /* buckets of this step queued on the ring (device thread 0) */
    int b_ready[DP_MAX_DEV]; /* buckets of this step each replica has read */
    dist_wire wire;          /* encoding of the bucket allreduces (the ring's) */
    float *ef;               /* (n_decay) int8's error feedback of this rank, or NULL */
};

int dp_local_replicas(const dp_trainer *p) { return p->D; }
int dp_replicas(const dp_trainer *p) { return p->R; }
void *dp_replica(dp_trainer *p, int i) { return p->tr[i]; }
mcl_dev *dp_device(dp_trainer *p, int i) { return p->dev[i]; }

/* Record the first failure and wake every waiting thread. */
static manta_status fail(dp_trainer *p, manta_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static manta_status fail(dp_trainer *p, manta_status st, const char *fmt, ...)
{
    pthread_mutex_lock(&p->mu);
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->fail_msg, sizeof p->fail_msg, fmt, ap);
        va_end(ap);
        p->failed = 1;
        p->fail_st = st;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* The recorded failure into @p err. */
static manta_status failure(dp_trainer *p, manta_err *err)
{
    pthread_mutex_lock(&p->mu);
    manta_status st = p->fail_st;
    if (err)
        manta_err_set(err, st, "%s", p->fail_msg);
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* Wait until all D local replicas arrive; the recorded failure if there is one. */
static manta_status barrier(dp_trainer *p)
{
    if (p->D == 1)
        return p->failed ? p->fail_st : MANTA_OK;
    pthread_mutex_lock(&p->mu);
    unsigned long g = p->bgen;
    if (!p->failed && ++p->arrived == p->D) {
        p->arrived = 0;
        p->bgen++;
        pthread_cond_broadcast(&p->cv);
    } else {
        while (g == p->bgen && !p->failed)
            pthread_cond_wait(&p->cv, &p->mu);
    }
    manta_status st = p->failed ? p->fail_st : MANTA_OK;
    pthread_mutex_unlock(&p->mu);
    return st;
}

/* Replicas that share batch-norm statistics. */
static int bn_group(const dp_trainer *p) { return p->mode == DP_DATA ? p->R : p->D; }

/* Combine @p count inputs of 2c floats each (stride apart) into p->result, in order. */
static void combine(dp_trainer *p, ofa_bn_sync_kind kind, const float *base, size_t stride,
                    int count, int c)
{
    for (int ch = 0; ch < c; ch++) {
        double a = 0, b = 0;
        for (int g = 0; g < count; g++) {
            a += base[(size_t)g * stride + (size_t)ch];
            if (kind == OFA_BN_SYNC_GRADS)
                b += base[(size_t)g * stride + (size_t)c + (size_t)ch];
        }
        if (kind == OFA_BN_SYNC_STATS) { /* equal shares: mean of means, law of total variance */
            double mean = a / count;
            for (int g = 0; g < count; g++) {
                double dm = base[(size_t)g * stride + (size_t)ch] - mean;
                b += base[(size_t)g * stride + (size_t)c + (size_t)ch] + dm * dm;
            }
            a = mean;
            b /= count;
        }
        p->result[ch] = (float)a;
        p->result[c + ch] = (float)b;
    }
}

/* ofa_bn_sync_fn over the replicas of this object (see ofa_supernet_set_bn_sync). */
static manta_status bn_sync(void *vctx, ofa_bn_sync_kind kind, float *v, int c, long m,
                            long *m_total, manta_err *err)
{
    dp_sync_ctx *x = vctx;
    dp_trainer *p = x->p;
    const size_t n2 = 2 * (size_t)c;
    if (n2 > p->w2)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "synchronised batch norm: %d channels", c);
    memcpy(p->slots + (size_t)x->i * p->w2, v, n2 * sizeof *v);
    manta_status st = barrier(p);
    if (st == MANTA_OK && x->i == 0) {
        if (p->mode == DP_DATA && p->N > 1) {
            /* gather over the ranks: each fills its own slots, the others are zeros */
            memset(p->gather, 0, (size_t)p->R * n2 * sizeof *p->gather);
            for (int d = 0; d < p->D; d++)
                memcpy(p->gather + (size_t)(p->rank * p->D + d) * n2, p->slots + (size_t)d * p->w2,
                       n2 * sizeof *v);
            manta_err re;
            manta_err_clear(&re);
            st = ring_allreduce(p->ring, p->gather, (size_t)p->R * n2, RING_SUM, &re);
            if (st != MANTA_OK)
                fail(p, st, "rank %d: step %ld: synchronised batch norm: %s", p->rank, p->step + 1,
                     re.msg);
            else
                combine(p, kind, p->gather, n2, p->R, c);
        } else {
            combine(p, kind, p->slots, p->w2, p->D, c);
        }
        p->result_m = m * bn_group(p);
    }
    if (st == MANTA_OK)
        st = barrier(p);
    if (st != MANTA_OK)
        return failure(p, err);
    memcpy(v, p->result, n2 * sizeof *v);
    *m_total = p->result_m;
    return MANTA_OK;
}

/* Sum the devices' gradients [lo, hi) into gsum, element by element in device order. */
static void sum_devices(dp_trainer *p, size_t lo, size_t hi)
{
    if (p->D == 1)
        return; /* hg[0] is gsum */
    for (size_t j = lo; j < hi; j++) {
        float s = p->hg[0][j];
        for (int d = 1; d < p->D; d++)
            s += p->hg[d][j];
        p->gsum[j] = s;
    }
}

/* Queue the allreduce of bucket @p b (device thread 0). */
static manta_status issue_bucket(dp_trainer *p, int b)
{
    manta_err re;
    manta_err_clear(&re);
    manta_status st =
        ring_allreduce_wire_async(p->ring, p->gsum + p->b_lo[b], p->b_hi[b] - p->b_lo[b], RING_SUM,
                                  p->wire, p->ef ? p->ef + p->b_lo[b] : NULL, &p->b_h[b], &re);
    if (st != MANTA_OK)
        return fail(p, st, "rank %d: step %ld: gradient allreduce (bucket %d of %d): %s", p->rank,
                    p->step + 1, b + 1, p->nb, re.msg);
    p->b_issued = b + 1;
    return MANTA_OK;
}

/* Wait for every bucket allreduce queued in this step; the first error. */
static manta_status wait_buckets(dp_trainer *p)
{
    manta_status first = MANTA_OK;
    for (int b = 0; b < p->b_issued; b++) {
        manta_err re;
        manta_err_clear(&re);
        manta_status st = ring_wait(p->ring, p->b_h[b], &re);
        if (st != MANTA_OK && first == MANTA_OK)
            first = fail(p, st, "rank %d: step %ld: gradient allreduce (bucket %d of %d): %s",
                         p->rank, p->step + 1, b + 1, p->nb, re.msg);
    }
    p->b_issued = 0;
    return first;
}

/* ofa_grad_ready_fn of replica i: the decayed gradients [from, n_decay) are final. Every
 * bucket that lies in that range and was not handled yet is read from the device; once all
 * local replicas have read it, device thread 0 sums it over the devices and queues its
 * allreduce, while the backward goes on. */
static manta_status grad_ready(void *vctx, size_t from)
{
    dp_sync_ctx *x = vctx;
    dp_trainer *p = x->p;
    const int i = x->i, b0 = p->b_ready[i];
    int b = b0;
    while (b < p->nb && p->b_lo[b] >= from)
        b++;
    if (b == b0)
        return MANTA_OK;
    /* buckets b0 .. b-1 are adjacent: one read */
    const size_t lo = p->b_lo[b - 1], hi = p->b_hi[b0];
    ofa_slabs sl;
    p->ops->slabs(p->tr[i], &sl);
    MANTA_TRY(mcl_read(p->dev[i], mview_at(sl.grads, lo), p->hg[i] + lo, hi - lo));
    p->b_ready[i] = b;
    if (barrier(p) != MANTA_OK)
        return failure(p, NULL);
    if (i == 0) {
        sum_devices(p, lo, hi);
        for (int k = b0; k < b; k++)
            MANTA_TRY(issue_bucket(p, k));
    }
    return MANTA_OK;
}

/* This rank's figures of the step (dp_rank_figures' order) into @p v. */
static void put_figures(const dp_trainer *p, float *v)
{
    double compute = 0;
    for (int d = 0; d < p->D; d++)
        compute = p->t_compute[d] > compute ? p->t_compute[d] : compute;
    v[0] = (float)compute;
    v[1] = (float)p->data_wait;
    v[2] = (float)p->last_allreduce;
    v[3] = (float)p->last_step;
    v[4] = (float)((p->n_params + p->tail) * sizeof(float));
}

/* Every rank's figures from @p v (N x DP_FIGS) into p->figs. */
static void get_figures(dp_trainer *p, const float *v)
{
    for (int r = 0; r < p->N; r++) {
        const float *f = v + (size_t)r * DP_FIGS;
        p->figs[r] = (dp_rank_figures){f[0], f[1], f[2], f[3], f[4]};
    }
}

uint64_t dp_sample_seed(uint64_t seed, dp_mode mode, int rank)
{
    return mode == DP_SUBNET ? seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1)) : seed;
}

void dp_set_data_wait(dp_trainer *p, double seconds) { p->data_wait = seconds; }

int dp_rank_figures_get(const dp_trainer *p, dp_rank_figures *out, int cap)
{
    for (int r = 0; r < p->N && r < cap; r++)
        out[r] = p->figs[r];
    return p->N;
}

/* Replica @p i's part of a step: compute its shard, sum the gradients, apply. */
static void run_replica(dp_trainer *p, int i)
{
    const dp_replica_ops *ops = p->ops;
    void *t = p->tr[i];
    const long step = p->step;
    const int first = (p->rank * p->D + i) * p->local_batch;
    ofa_slabs sl;
    ops->slabs(t, &sl);
    /* with the hook the decayed gradients were read (and their buckets queued) during the
     * backward; what is left is [n_decay, n_params) */
    const int hooked = p->overlap && p->N > 1 && ops->set_grad_ready;
    const size_t rest = hooked ? p->n_decay : 0;
    p->b_ready[i] = 0;
    const double t0 = manta_now();
    if (hooked)
        ops->set_grad_ready(t, grad_ready, &p->ctx[i]);
    manta_status st =
        ops->compute(t, step, p->batch, first, p->res + (size_t)i * ops->result_size, p->sums[i]);
    if (hooked)
        ops->set_grad_ready(t, NULL, NULL);
    if (st == MANTA_OK)
        st = mcl_read(p->dev[i], mview_at(sl.grads, rest), p->hg[i] + rest, p->n_params - rest);
    p->t_compute[i] = manta_now() - t0;
    if (st != MANTA_OK) {
        fail(p, st, "rank %d: step %ld: device %d (%s): %s", p->rank, step + 1, i,
             mcl_info(p->dev[i])->name, mcl_err(p->dev[i])->msg);
        return;
    }
    if (barrier(p) != MANTA_OK)
        return;
    /* sum over the devices, element by element in device order; device i takes a slice */
    if (p->D > 1) {
        size_t span = p->n_params - rest;
        sum_devices(p, rest + span * (size_t)i / (size_t)p->D,
                    rest + span * (size_t)(i + 1) / (size_t)p->D);
    }
    if (barrier(p) != MANTA_OK)
        return;
    if (i == 0) {
        float *tail = p->gsum + p->n_params;
        memset(tail, 0, p->tail * sizeof *tail);
        for (int d = 0; d < p->D; d++)
            for (int k = 0; k < 4; k++)
                tail[k] += p->sums[d][k];
        put_figures(p, tail + 4 + (size_t)p->rank * DP_FIGS);
        const double ta = manta_now();
        if (p->N > 1) {
            /* the same allreduces in the same order with or without overlap: the buckets
             * from the classifier down to the stem, then batch norm, biases and the tail */
            st = MANTA_OK;
            for (int b = p->b_issued; b < p->nb && st == MANTA_OK; b++)
                st = issue_bucket(p, b);
            manta_err re;
            manta_err_clear(&re);
            if (st == MANTA_OK && p->wire == DIST_WIRE_FIXED) {
                /* fixed point: batch norm and biases exact too, the figures in float32 */
                ring_handle h;
                st = ring_allreduce_wire_async(p->ring, p->gsum + p->n_decay,
                                               p->n_params - p->n_decay, RING_SUM, p->wire, NULL,
                                               &h, &re);
                if (st == MANTA_OK)
                    st = ring_wait(p->ring, h, &re);
                if (st == MANTA_OK)
                    st = ring_allreduce(p->ring, p->gsum + p->n_params, p->tail, RING_SUM, &re);
                if (st != MANTA_OK)
                    fail(p, st, "rank %d: step %ld: gradient allreduce: %s", p->rank, step + 1,
                         re.msg);
            } else if (st == MANTA_OK) {
                st = ring_allreduce(p->ring, p->gsum + p->n_decay,
                                    p->n_params - p->n_decay + p->tail, RING_SUM, &re);
                if (st != MANTA_OK)
                    fail(p, st, "rank %d: step %ld: gradient allreduce: %s", p->rank, step + 1,
                         re.msg);
            }
            (void)wait_buckets(p);
        }
        p->last_allreduce = manta_now() - ta;
        get_figures(p, tail + 4);
    }
    if (barrier(p) != MANTA_OK)
        return;
    st = mcl_write(p->dev[i], sl.grads, p->gsum, p->n_params);
    if (st == MANTA_OK)
        st = ops->apply(t, step, 1.0f / (float)p->R);
    if (st != MANTA_OK)
        fail(p, st, "rank %d: step %ld: device %d (%s): %s", p->rank, step + 1, i,
             mcl_info(p->dev[i])->name, mcl_err(p->dev[i])->msg);
}

static void *device_thread(void *arg)
{
    dp_sync_ctx *x = arg;
    dp_trainer *p = x->p;
    unsigned long seen = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->work_gen == seen && !p->quit)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->work_gen;
        pthread_mutex_unlock(&p->mu);
        run_replica(p, x->i);
        pthread_mutex_lock(&p->mu);
        p->done++;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

void dp_destroy(dp_trainer *p)
{
    if (!p)
        return;
    if (p->n_threads) {
        pthread_mutex_lock(&p->mu);
        p->quit = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i <= p->n_threads; i++)
            pthread_join(p->th[i], NULL);
    }
    for (int i = 0; i < p->D; i++) {
        if (p->tr[i])
            p->ops->destroy(p->tr[i]);
        if (p->hg[i] != p->gsum)
            free(p->hg[i]);
    }
    free(p->res);
    free(p->figs);
    free(p->gsum);
    free(p->ef);
    free(p->b_lo);
    free(p->b_hi);
    free(p->b_h);
    free(p->slots);
    free(p->gather);
    free(p->result);
    if (p->locks_ok) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    free(p);
}

/* Cut the decayed gradients [0, n_decay) into buckets at the block boundaries of the
 * supernet, from the end down: each bucket closes at the first boundary that makes it hold
 * at least @p bytes (0: one bucket). */
static manta_status plan_buckets(dp_trainer *p, size_t bytes, manta_err *err)
{
    int (*grad_bounds)(void *, size_t *, int) = p->ops->grad_bounds;
    int nbounds = grad_bounds ? grad_bounds(p->tr[0], NULL, 0) : 1;
    size_t *bounds = malloc((size_t)(nbounds + 1) * sizeof *bounds);
    size_t *lo = malloc((size_t)(nbounds + 1) * sizeof *lo);
    size_t *hi = malloc((size_t)(nbounds + 1) * sizeof *hi);
    ring_handle *h = malloc((size_t)(nbounds + 1) * sizeof *h);
    if (!bounds || !lo || !hi || !h) {
        free(bounds), free(lo), free(hi), free(h);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "data parallel: out of host memory");
    }
    if (grad_bounds)
        grad_bounds(p->tr[0], bounds, nbounds);
    else
        bounds[0] = 0;
    const size_t want = bytes ? (bytes + sizeof(float) - 1) / sizeof(float) : SIZE_MAX;
    int nb = 0;
    size_t top = p->n_decay;
    for (int k = nbounds - 1; k >= 0 && top > 0; k--) {
        size_t b = bounds[k] < top ? bounds[k] : top;
        if (top - b >= want || k == 0) {
            lo[nb] = k == 0 ? 0 : b;
            hi[nb++] = top;
            top = lo[nb - 1];
        }
    }
    free(bounds);
    free(p->b_lo), free(p->b_hi), free(p->b_h);
    p->b_lo = lo, p->b_hi = hi, p->b_h = h;
    p->nb = nb;
    p->bucket_bytes = bytes;
    return MANTA_OK;
}

manta_status dp_set_buckets(dp_trainer *p, size_t bytes, int overlap, manta_err *err)
{
    if (p->failed)
        return failure(p, err);
    if (bytes > ((size_t)1 << 40))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "data parallel: bucket size of %zu bytes",
                             bytes);
    if (p->N > 1) { /* every rank must issue the same allreduces in the same order */
        float *v = calloc(2 * (size_t)p->N, sizeof *v);
        if (!v)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "data parallel: out of host memory");
        const float kib = (float)((bytes + 1023) / 1024);
        v[2 * p->rank] = kib;
        v[2 * p->rank + 1] = overlap ? 1.0f : 0.0f;
        manta_status st = ring_allreduce(p->ring, v, 2 * (size_t)p->N, RING_SUM, err);
        for (int r = 0; r < p->N && st == MANTA_OK; r++)
            if (v[2 * r] != kib || v[2 * r + 1] != v[2 * p->rank + 1])
                st = manta_err_set(
                    err, MANTA_ERR_INVALID_ARG,
                    "rank %d uses gradient buckets of %.0f KiB %s overlap, rank %d "
                    "%.0f KiB %s: every rank must use the same bucket size and overlap",
                    r, (double)v[2 * r], v[2 * r + 1] != 0 ? "with" : "without", p->rank,
                    (double)kib, overlap ? "with" : "without");
        free(v);
        if (st != MANTA_OK)
            return fail(p, st, "%s", err->msg);
    }
    MANTA_TRY(plan_buckets(p, bytes, err));
    p->overlap = overlap != 0;
    return MANTA_OK;
}

/* Every rank must drive as many devices in the same mode as this one. */
static manta_status check_ranks(dp_trainer *p, manta_err *err)
{
    float *v = calloc(2 * (size_t)p->N, sizeof *v);
    if (!v)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "data parallel: out of host memory");
    v[2 * p->rank] = (float)p->D;
    v[2 * p->rank + 1] = (float)p->mode;
    manta_status st = ring_allreduce(p->ring, v, 2 * (size_t)p->N, RING_SUM, err);
    for (int r = 0; r < p->N && st == MANTA_OK; r++)
        if (v[2 * r] != (float)p->D || v[2 * r + 1] != (float)p->mode)
            st = manta_err_set(
                err, MANTA_ERR_INVALID_ARG,
                "rank %d drives %d device(s) in %s mode, rank %d %d in %s mode: every "
                "rank must use the same number of devices and the same --mode",
                r, (int)v[2 * r], v[2 * r + 1] == (float)DP_DATA ? "data" : "subnet", p->rank, p->D,
                p->mode == DP_DATA ? "data" : "subnet");
    free(v);
    return st;
}

manta_status dp_create_ops(const dp_replica_ops *ops, const void *cfg, mcl_dev *const *devs,
                           int n_dev, int batch, uint64_t seed, dp_mode mode, ring_comm *ring,
                           dp_trainer **out, manta_err *err)
{
    *out = NULL;
    if (n_dev < 1 || n_dev > DP_MAX_DEV)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "data parallel: %d devices (1 .. %d per process)", n_dev, DP_MAX_DEV);
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL,
                             "data parallel: libsodium failed to initialise");
    dp_trainer *p = calloc(1, sizeof *p);
    if (!p)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "data parallel: out of host memory");
    p->D = n_dev;
    p->N = ring ? ring_size(ring) : 1;
    p->rank = ring ? ring_rank(ring) : 0;
    p->R = p->D * p->N;
    p->mode = mode;
    p->ring = ring;
    p->ops = ops;
    p->tail = 4 + (size_t)p->N * DP_FIGS;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return manta_err_set(err, MANTA_ERR_INTERNAL, "data parallel: cannot create a mutex");
    }
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return manta_err_set(err, MANTA_ERR_INTERNAL, "data parallel: cannot create a condition");
    }
    p->locks_ok = 1;
    manta_status st = MANTA_OK;
    if (batch < 1 || batch % p->R != 0)
        st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                           "data parallel: the batch of %d samples does not split into %d equal "
                           "shards (%d rank(s) x %d device(s)); use a multiple of %d",
                           batch, p->R, p->N, p->D, p->R);
    if (st == MANTA_OK && p->N > 1)
        st = check_ranks(p, err);
    p->local_batch = batch / p->R;
    for (int i = 0; i < p->D && st == MANTA_OK; i++) {
        p->dev[i] = devs[i];
        st = ops->create(cfg, devs[i], seed, p->local_batch, &p->tr[i]);
        if (st != MANTA_OK) {
            manta_err_set(err, st, "device %d (%s): %s", i, mcl_info(devs[i])->name,
                          mcl_err(devs[i])->msg);
            break;
        }
        if (ops->set_shard)
            ops->set_shard(p->tr[i], (long)(p->rank * p->D + i) * p->local_batch);
        if (mode == DP_SUBNET) /* a different sub-network per rank, shared by its devices */
            ops->set_sample_seed(p->tr[i], dp_sample_seed(seed, mode, p->rank));
        p->ctx[i] = (dp_sync_ctx){p, i};
        if (bn_group(p) > 1)
            ops->set_bn_sync(p->tr[i], bn_sync, &p->ctx[i]);
    }
    if (st == MANTA_OK) {
        ofa_slabs sl;
        ops->slabs(p->tr[0], &sl);
        p->n_params = sl.n_params;
        p->n_decay = sl.n_decay;
        p->overlap = 1;
        st = plan_buckets(p, DP_BUCKET_BYTES, err);
    }
    if (st == MANTA_OK) {
        p->w2 = 2 * (size_t)ops->bn_max_channels(p->tr[0]);
        int ok = (p->res = calloc((size_t)p->D, ops->result_size)) != NULL &&
                 (p->figs = calloc((size_t)p->N, sizeof *p->figs)) != NULL;
        if (ok && p->R > 1) {
            ok = (p->gsum = malloc((p->n_params + p->tail) * sizeof(float))) != NULL;
            for (int i = 0; i < p->D && ok; i++)
                ok = (p->hg[i] = p->D == 1 ? p->gsum : malloc(p->n_params * sizeof(float))) != NULL;
            ok = ok && (p->slots = malloc((size_t)p->D * p->w2 * sizeof(float))) != NULL;
            ok = ok && (p->result = malloc(p->w2 * sizeof(float))) != NULL;
            if (ok && mode == DP_DATA && p->N > 1)
                ok = (p->gather = malloc((size_t)p->R * p->w2 * sizeof(float))) != NULL;
            p->wire = p->N > 1 ? ring_wire(ring) : DIST_WIRE_F32;
            if (ok && p->wire == DIST_WIRE_INT8)
                ok = (p->ef = calloc(p->n_decay ? p->n_decay : 1, sizeof(float))) != NULL;
        }
        if (!ok)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "data parallel: out of host memory");
    }
    /* CLBlast's first call on a device, before the device threads may make theirs at once
     * (cl/blas.h) */
    for (int i = 0; i < p->D && st == MANTA_OK && p->D > 1; i++)
        if ((st = mcl_blas_prepare(devs[i])) != MANTA_OK)
            manta_err_set(err, st, "device %d (%s): %s", i, mcl_info(devs[i])->name,
                          mcl_err(devs[i])->msg);
    for (int i = 1; i < p->D && st == MANTA_OK; i++) {
        if (pthread_create(&p->th[i], NULL, device_thread, &p->ctx[i]) != 0)
            st = manta_err_set(err, MANTA_ERR_INTERNAL,
                               "data parallel: cannot start the thread of device %d", i);
        else
            p->n_threads = i;
    }
    if (st != MANTA_OK) {
        dp_destroy(p);
        return st;
    }
    *out = p;
    return MANTA_OK;
}

manta_status dp_run(dp_trainer *p, long step, const void *batch, void *res, manta_err *err)
{
    if (p->failed)
        return failure(p, err);
    const double t0 = manta_now();
    if (p->R == 1) { /* the single-device path: nothing to synchronise */
        manta_status st = p->ops->step(p->tr[0], step, batch, res ? res : p->res);
        if (st != MANTA_OK)
            manta_err_set(err, st, "%s", mcl_err(p->dev[0])->msg);
        p->t_compute[0] = manta_now() - t0;
        float v[DP_FIGS];
        put_figures(p, v);
        get_figures(p, v);
        p->last_step = p->t_compute[0];
        return st;
    }
    pthread_mutex_lock(&p->mu);
    p->step = step;
    p->batch = batch;
    p->done = 0;
    p->work_gen++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    p->b_issued = 0;
    run_replica(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->done < p->D - 1)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (p->b_issued) /* a failure left bucket allreduces queued: they use gsum */
        (void)wait_buckets(p);
    if (p->failed)
        return failure(p, err);
    p->last_step = manta_now() - t0;
    if (res) {
        memcpy(res, p->res, p->ops->result_size);
        p->ops->merge(res, p->gsum + p->n_params, p->R);
    }
    return MANTA_OK;
}

/* Hash of local replica @p i: parameters, momentum and (data mode) BN statistics. */
static manta_status replica_hash(dp_trainer *p, int i, unsigned char h[DP_HASH_BYTES],
                                 manta_err *err)
{
    ofa_slabs sl;
    p->ops->slabs(p->tr[i], &sl);
    size_t n = sl.n_params > sl.n_state ? sl.n_params : sl.n_state;
    float *buf = malloc((n ? n : 1) * sizeof *buf);
    if (!buf)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "replica check: out of host memory");
    crypto_generichash_state hs;
    crypto_generichash_init(&hs, NULL, 0, DP_HASH_BYTES);
    mview views[3] = {sl.params, sl.momentum, sl.state};
    size_t sizes[3] = {sl.n_params, sl.n_params, sl.n_state};
    int parts = p->mode == DP_DATA ? 3 : 2;
    manta_status st = MANTA_OK;
    for (int k = 0; k < parts && st == MANTA_OK; k++) {
        st = mcl_read(p->dev[i], views[k], buf, sizes[k]);
        if (st == MANTA_OK)
            crypto_generichash_update(&hs, (const unsigned char *)buf, sizes[k] * sizeof *buf);
        else
            manta_err_set(err, st, "replica check: device %d (%s): %s", i,
                          mcl_info(p->dev[i])->name, mcl_err(p->dev[i])->msg);
    }
    crypto_generichash_final(&hs, h, DP_HASH_BYTES);
    free(buf);
    return st;
}

static void hex8(const unsigned char *h, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

manta_status dp_check(dp_trainer *p, long step, unsigned char hash[DP_HASH_BYTES], manta_err *err)
{
    if (p->failed)
        return failure(p, err);
    unsigned char h0[DP_HASH_BYTES], h[DP_HASH_BYTES];
    char a[17], b[17];
    MANTA_TRY(replica_hash(p, 0, h0, err));
    for (int i = 1; i < p->D; i++) {
        MANTA_TRY(replica_hash(p, i, h, err));
        if (memcmp(h, h0, sizeof h) != 0) {
            hex8(h0, a), hex8(h, b);
            return fail(p,
                        manta_err_set(err, MANTA_ERR_INTERNAL,
                                      "replica check after step %ld: rank %d device %d (%s) "
                                      "diverged from device 0 (weights hash %s.. vs %s..)",
                                      step, p->rank, i, mcl_info(p->dev[i])->name, b, a),
                        "%s", err->msg);
        }
    }
    if (hash)
        memcpy(hash, h0, sizeof h0);
    if (p->N == 1)
        return MANTA_OK;
    /* gather every rank's hash: bytes as floats (exact), zeros elsewhere, summed */
    float *v = calloc((size_t)p->N * DP_HASH_BYTES, sizeof *v);
    if (!v)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "replica check: out of host memory");
    for (int k = 0; k < DP_HASH_BYTES; k++)
        v[(size_t)p->rank * DP_HASH_BYTES + k] = (float)h0[k];
    manta_err re;
    manta_err_clear(&re);
    manta_status st = ring_allreduce(p->ring, v, (size_t)p->N * DP_HASH_BYTES, RING_SUM, &re);
    if (st != MANTA_OK) {
        manta_err_set(err, st, "rank %d: replica check after step %ld: %s", p->rank, step, re.msg);
        free(v);
        return fail(p, st, "%s", err->msg);
    }
    unsigned char hr[DP_HASH_BYTES], hz[DP_HASH_BYTES];
    for (int k = 0; k < DP_HASH_BYTES; k++)
        hz[k] = (unsigned char)v[k];
    for (int r = 1; r < p->N && st == MANTA_OK; r++) {
        for (int k = 0; k < DP_HASH_BYTES; k++)
            hr[k] = (unsigned char)v[(size_t)r * DP_HASH_BYTES + k];
        if (memcmp(hr, hz, sizeof hr) != 0) {
            hex8(hz, a), hex8(hr, b);
            st =
                manta_err_set(err, MANTA_ERR_INTERNAL,
                              "replica check after step %ld: rank %d diverged from rank 0 (weights "
                              "hash %s.. vs %s..)",
                              step, r, b, a);
            fail(p, st, "%s", err->msg);
        }
    }
    free(v);
    return st;
}

size_t dp_ef_count(const dp_trainer *p) { return p->ef ? p->n_decay : 0; }

manta_status dp_ef_gather(dp_trainer *p, float *all, manta_err *err)
{
    if (p->failed)
        return failure(p, err);
    const size_t n = dp_ef_count(p);
    if (!n)
        return MANTA_OK;
    /* every rank's residual at its place, zeros elsewhere, summed (x + 0 is x) */
    float *v = calloc((size_t)p->N * n, sizeof *v);
    if (!v)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "error feedback: out of host memory");
    memcpy(v + (size_t)p->rank * n, p->ef, n * sizeof *v);
    manta_err re;
    manta_err_clear(&re);
    manta_status st = ring_allreduce(p->ring, v, (size_t)p->N * n, RING_SUM, &re);
    if (st != MANTA_OK) {
        manta_err_set(err, st, "rank %d: gathering the error feedback: %s", p->rank, re.msg);
        free(v);
        return fail(p, st, "%s", err->msg);
    }
    if (all)
        memcpy(all, v, (size_t)p->N * n * sizeof *v);
    free(v);
    return MANTA_OK;
}

manta_status dp_ef_load(dp_trainer *p, const float *all, size_t count, manta_err *err)
{
    const size_t n = dp_ef_count(p);
    if (!n)
        return MANTA_OK;
    if (count != (size_t)p->N * n)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "error feedback of %zu values, this job needs %d ranks x %zu", count,
                             p->N, n);
    memcpy(p->ef, all + (size_t)p->rank * n, n * sizeof *p->ef);
    return MANTA_OK;
}
