#include "data/prefetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct slot {
    float *images; /* (batch, C, Rmax, Rmax) capacity */
    float *labels; /* (batch) */
    int *index;    /* (batch) */
    loader_batch_info info;
    loader_state after;
} slot;

struct prefetch {
    loader ld; /* advanced by the producer only */
    slot *slots;
    int n_slots;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* "something changed": one waiter on each side */
    /* Under mu: batches k < produced are ready in slot k % n_slots; the consumer
     * has released every batch k < released and holds batch consumed - 1 when
     * released < consumed. The producer writes batch k once k - released < n_slots. */
    int64_t produced, consumed, released;
    bool stop;   /* consumer asks the producer to quit */
    bool done;   /* producer reached the end of the epochs */
    bool failed; /* producer failed making batch `produced` */
    manta_status fail_st;
    manta_err fail_err;

    /* Consumer side only. */
    loader_state state; /* after the last batch handed over */
    double wait_total;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *producer(void *arg)
{
    prefetch *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->stop && p->produced - p->released >= p->n_slots)
            pthread_cond_wait(&p->cv, &p->mu);
        bool quit = p->stop;
        int64_t k = p->produced;
        pthread_mutex_unlock(&p->mu);
        if (quit)
            return NULL;
        /* Slot k % n_slots is ours alone until `produced` moves past k. */
        slot *s = &p->slots[k % p->n_slots];
        manta_err err;
        manta_err_clear(&err);
        manta_status st = data_loader_next(&p->ld, s->images, s->labels, s->index, &s->info, &err);
        data_loader_get_state(&p->ld, &s->after);
        pthread_mutex_lock(&p->mu);
        if (st != MANTA_OK) {
            p->failed = true;
            p->fail_st = st;
            p->fail_err = err;
            p->fail_err.code = st;
        } else if (s->info.n == 0) {
            p->done = true;
        } else {
            p->produced++;
        }
        bool end = p->failed || p->done;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (end)
            return NULL;
    }
}

static void free_slots(prefetch *p)
{
    if (!p->slots)
        return;
    for (int i = 0; i < p->n_slots; i++) {
        free(p->slots[i].images);
        free(p->slots[i].labels);
        free(p->slots[i].index);
    }
    free(p->slots);
    p->slots = NULL;
}

manta_status data_prefetch_start(prefetch **out, const loader_opts *o, const loader_state *start,
                                 int slots, manta_err *err)
{
    *out = NULL;
    if (slots == 0)
        slots = PREFETCH_DEFAULT_SLOTS;
    if (slots < 2 || slots > 64)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "prefetch: %d slots (must be in [2, 64])",
                             slots);
    prefetch *p = calloc(1, sizeof *p);
    if (!p)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "prefetch: out of memory");
    manta_status st = data_loader_init(&p->ld, o, start, err);
    if (st != MANTA_OK) {
        free(p);
        return st;
    }
    data_loader_get_state(&p->ld, &p->state);
    p->n_slots = slots;
    p->slots = calloc((size_t)slots, sizeof *p->slots);
    const size_t nimg = data_loader_image_floats(&p->ld);
    for (int i = 0; p->slots && i < slots; i++) {
        slot *s = &p->slots[i];
        s->images = malloc(nimg * sizeof *s->images);
        s->labels = malloc((size_t)o->batch * sizeof *s->labels);
        s->index = malloc((size_t)o->batch * sizeof *s->index);
        if (!s->images || !s->labels || !s->index) {
            st = MANTA_ERR_NO_MEMORY;
            break;
        }
    }
    if (!p->slots || st != MANTA_OK) {
        free_slots(p);
        data_loader_free(&p->ld);
        free(p);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                             "prefetch: out of memory for %d slots of %zu floats", slots, nimg);
    }
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free_slots(p);
        data_loader_free(&p->ld);
        free(p);
        return manta_err_set(err, MANTA_ERR_INTERNAL, "prefetch: cannot create a mutex");
    }
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free_slots(p);
        data_loader_free(&p->ld);
        free(p);
        return manta_err_set(err, MANTA_ERR_INTERNAL, "prefetch: cannot create a condition");
    }
    if (pthread_create(&p->thread, NULL, producer, p) != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free_slots(p);
        data_loader_free(&p->ld);
        free(p);
        return manta_err_set(err, MANTA_ERR_INTERNAL, "prefetch: cannot start the producer thread");
    }
    *out = p;
    return MANTA_OK;
}

manta_status data_prefetch_next(prefetch *p, prefetch_batch *b, double *wait_s, manta_err *err)
{
    memset(b, 0, sizeof *b);
    double waited = 0;
    pthread_mutex_lock(&p->mu);
    if (p->released < p->consumed) { /* give back the slot held since the last call */
        p->released = p->consumed;
        pthread_cond_broadcast(&p->cv);
    }
    if (p->produced == p->consumed && !p->done && !p->failed) {
        double t0 = now_s();
        while (p->produced == p->consumed && !p->done && !p->failed)
            pthread_cond_wait(&p->cv, &p->mu);
        waited = now_s() - t0;
    }
    manta_status st = MANTA_OK;
    if (p->produced > p->consumed) {
        const slot *s = &p->slots[p->consumed % p->n_slots];
        p->consumed++;
        b->n = s->info.n;
        b->channels = p->ld.o.data->channels;
        b->resolution = s->info.resolution;
        b->epoch = s->info.epoch;
        b->batch = s->info.batch;
        b->images = s->images;
        b->labels = s->labels;
        b->index = s->index;
        b->after = s->after;
        p->state = s->after;
    } else if (p->failed) {
        st = manta_err_set(err, p->fail_st, "%s", p->fail_err.msg);
    } else { /* done */
        b->channels = p->ld.o.data->channels;
        b->epoch = p->state.epoch;
        b->after = p->state;
    }
    pthread_mutex_unlock(&p->mu);
    p->wait_total += waited;
    if (wait_s)
        *wait_s = waited;
    return st;
}

void data_prefetch_get_state(const prefetch *p, loader_state *s) { *s = p->state; }

double data_prefetch_wait_total(const prefetch *p) { return p->wait_total; }

void data_prefetch_stop(prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free_slots(p);
    data_loader_free(&p->ld);
    free(p);
}
