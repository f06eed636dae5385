/* Loader and prefetch thread: epoch orders, per-batch resolution, exact
 * resume from (epoch, position, rng), the prefetched sequence equal to the
 * synchronous one, wait times, errors and shutdown. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/testutil.h"
#include "data/prefetch.h"

#define N_IMG 50
#define BATCH 8
#define RMAX 16

static dataset ds;

static int setup(void **state)
{
    (void)state;
    if (data_set_init_fixed(&ds, N_IMG, 12, 14, 1, 5, NULL) != MANTA_OK)
        return -1;
    manta_rng r;
    manta_rng_seed(&r, 5, 5);
    for (size_t i = 0; i < (size_t)N_IMG * 12 * 14; i++)
        ds.pixels[i] = (uint8_t)manta_rng_u32(&r);
    for (int i = 0; i < N_IMG; i++)
        ds.labels[i] = i % 5;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    data_set_free(&ds);
    return 0;
}

/* OFA-style: a resolution per batch, a pure function of (epoch, batch). */
static int res_of(void *ctx, int64_t epoch, int64_t batch)
{
    (void)ctx;
    return 8 + (int)((epoch * 31 + batch * 7) % 5) * 2;
}

static void opts_for(loader_opts *o, bool drop_last)
{
    data_loader_opts_default(o, &ds);
    o->batch = BATCH;
    o->drop_last = drop_last;
    o->seed = 77;
    o->res_fn = res_of;
    o->max_resolution = RMAX;
}

/* One recorded batch. */
typedef struct rec {
    loader_batch_info info;
    float images[BATCH * RMAX * RMAX];
    float labels[BATCH];
    int index[BATCH];
    loader_state after;
} rec;

/* The first n batches of a synchronous loader from `start` (NULL: the run's start). */
static rec *run_sync(const loader_opts *o, const loader_state *start, int n)
{
    rec *r = calloc((size_t)n, sizeof *r);
    assert_non_null(r);
    loader l;
    manta_err e;
    assert_int_equal(data_loader_init(&l, o, start, &e), MANTA_OK);
    assert_true(data_loader_image_floats(&l) <= BATCH * RMAX * RMAX);
    for (int i = 0; i < n; i++) {
        if (data_loader_next(&l, r[i].images, r[i].labels, r[i].index, &r[i].info, &e) != MANTA_OK)
            fail_msg("%s", e.msg);
        data_loader_get_state(&l, &r[i].after);
    }
    data_loader_free(&l);
    return r;
}

static void expect_same(const rec *want, const prefetch_batch *b, int k)
{
    if (b->n != want->info.n || b->resolution != want->info.resolution ||
        b->epoch != want->info.epoch || b->batch != want->info.batch)
        fail_msg(
            "batch %d: n %d R %d epoch %lld batch %lld; expected n %d R %d epoch %lld batch %lld",
            k, b->n, b->resolution, (long long)b->epoch, (long long)b->batch, want->info.n,
            want->info.resolution, (long long)want->info.epoch, (long long)want->info.batch);
    size_t nf = (size_t)b->n * b->resolution * b->resolution;
    assert_memory_equal(b->images, want->images, nf * sizeof(float));
    assert_memory_equal(b->labels, want->labels, (size_t)b->n * sizeof(float));
    assert_memory_equal(b->index, want->index, (size_t)b->n * sizeof(int));
    assert_memory_equal(&b->after, &want->after, sizeof b->after);
}

static void test_loader_epoch_orders(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, false);
    /* 50 samples, batches of 8: 6 full + one of 2 per epoch */
    rec *r = run_sync(&o, NULL, 14);
    int seen[N_IMG] = {0};
    for (int k = 0; k < 7; k++) {
        assert_int_equal(r[k].info.epoch, 0);
        assert_int_equal(r[k].info.batch, k);
        assert_int_equal(r[k].info.n, k < 6 ? 8 : 2);
        assert_int_equal(r[k].info.resolution, res_of(NULL, 0, k));
        for (int i = 0; i < r[k].info.n; i++) {
            seen[r[k].index[i]]++;
            assert_true(r[k].labels[i] == (float)(r[k].index[i] % 5));
        }
    }
    for (int i = 0; i < N_IMG; i++)
        assert_int_equal(seen[i], 1);
    /* the state after the last batch of an epoch reads (next epoch, 0) */
    assert_int_equal(r[6].after.epoch, 1);
    assert_int_equal(r[6].after.pos, 0);
    assert_int_equal(r[7].info.epoch, 1);
    /* epoch 1 has another order */
    assert_true(memcmp(r[0].index, r[7].index, sizeof r[0].index) != 0);
    /* and it can be rebuilt from (seed, epoch) alone, whatever the RNG state */
    loader_state s = {1, 0, {0, 1}};
    rec *r2 = run_sync(&o, &s, 1);
    assert_memory_equal(r2[0].index, r[7].index, sizeof r2[0].index);
    free(r2);
    /* shuffle off: plain order */
    o.shuffle = false;
    rec *r3 = run_sync(&o, NULL, 1);
    for (int i = 0; i < BATCH; i++)
        assert_int_equal(r3[0].index[i], i);
    free(r3);
    free(r);
}

static void test_loader_drop_last_and_subset(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, true);
    int subset[20];
    for (int i = 0; i < 20; i++)
        subset[i] = 2 * i + 1; /* odd images only */
    o.indices = subset;
    o.n_indices = 20;
    o.epochs = 2;
    rec *r = run_sync(&o, NULL, 5);
    for (int k = 0; k < 4; k++) { /* two full batches per epoch, the 4 left over dropped */
        assert_int_equal(r[k].info.n, BATCH);
        assert_int_equal(r[k].info.epoch, k / 2);
        for (int i = 0; i < BATCH; i++)
            assert_int_equal(r[k].index[i] % 2, 1);
    }
    assert_int_equal(r[4].info.n, 0); /* two epochs done */
    free(r);
}

static void test_loader_resume_mid_epoch(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, false);
    rec *all = run_sync(&o, NULL, 16);
    for (int cut = 1; cut < 12; cut += 3) {
        rec *rest = run_sync(&o, &all[cut - 1].after, 16 - cut);
        for (int k = 0; k < 16 - cut; k++) {
            assert_memory_equal(&rest[k].info, &all[cut + k].info, sizeof rest[k].info);
            assert_memory_equal(rest[k].images, all[cut + k].images, sizeof rest[k].images);
            assert_memory_equal(rest[k].index, all[cut + k].index, sizeof rest[k].index);
            assert_memory_equal(&rest[k].after, &all[cut + k].after, sizeof rest[k].after);
        }
        free(rest);
    }
    free(all);
}

static void test_prefetch_equals_sync(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, false);
    o.epochs = 3; /* 21 batches, then the end */
    rec *want = run_sync(&o, NULL, 22);
    assert_int_equal(want[21].info.n, 0);
    prefetch *p;
    manta_err e;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_OK);
    prefetch_batch b;
    for (int k = 0; k < 21; k++) {
        double w;
        assert_int_equal(data_prefetch_next(p, &b, &w, &e), MANTA_OK);
        assert_int_equal(b.channels, 1);
        expect_same(&want[k], &b, k);
        loader_state s;
        data_prefetch_get_state(p, &s);
        assert_memory_equal(&s, &want[k].after, sizeof s);
    }
    for (int again = 0; again < 2; again++) { /* the end, repeated */
        assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_OK);
        assert_int_equal(b.n, 0);
        assert_int_equal(b.epoch, 3);
    }
    data_prefetch_stop(p);
    free(want);
}

static void test_prefetch_resume_from_state(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, true); /* 6 batches per epoch */
    rec *want = run_sync(&o, NULL, 20);
    prefetch *p;
    manta_err e;
    prefetch_batch b;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 0, &e), MANTA_OK);
    for (int k = 0; k < 9; k++) { /* into the second epoch */
        assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_OK);
        expect_same(&want[k], &b, k);
    }
    loader_state saved;
    data_prefetch_get_state(p, &saved);
    assert_int_equal(saved.epoch, 1);
    assert_int_equal(saved.pos, 3 * BATCH);
    data_prefetch_stop(p); /* the producer is ahead; its extra batches are dropped */
    /* a new prefetcher (think: a new process after a checkpoint) continues exactly */
    assert_int_equal(data_prefetch_start(&p, &o, &saved, 2, &e), MANTA_OK);
    for (int k = 9; k < 20; k++) {
        assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_OK);
        expect_same(&want[k], &b, k);
    }
    data_prefetch_stop(p);
    free(want);
}

static int slow_res(void *ctx, int64_t epoch, int64_t batch)
{
    (void)ctx, (void)epoch, (void)batch;
    struct timespec ts = {0, 30 * 1000 * 1000}; /* a slow producer: 30 ms per batch */
    nanosleep(&ts, NULL);
    return 12;
}

static void test_prefetch_reports_wait_time(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, true);
    o.res_fn = slow_res;
    prefetch *p;
    manta_err e;
    prefetch_batch b;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_OK);
    double w1, w2, w3;
    assert_int_equal(data_prefetch_next(p, &b, &w1, &e), MANTA_OK);
    assert_true(w1 > 0.010);                     /* the first batch takes the producer 30 ms */
    struct timespec ts = {0, 250 * 1000 * 1000}; /* a slow "training step" */
    nanosleep(&ts, NULL);
    assert_int_equal(data_prefetch_next(p, &b, &w2, &e), MANTA_OK);
    assert_true(w2 < w1); /* ready: the ring filled during the step */
    assert_true(w2 >= 0);
    assert_int_equal(data_prefetch_next(p, &b, &w3, &e), MANTA_OK);
    assert_true(data_prefetch_wait_total(p) == w1 + w2 + w3);
    assert_int_equal(b.resolution, 12);
    data_prefetch_stop(p);
}

static int failing_res(void *ctx, int64_t epoch, int64_t batch)
{
    (void)ctx;
    return epoch == 0 && batch == 3 ? 0 : 10;
}

static void test_prefetch_error_propagates_in_order(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, true);
    o.res_fn = failing_res;
    prefetch *p;
    manta_err e;
    prefetch_batch b;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_OK);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_OK);
        assert_int_equal(b.batch, k);
    }
    for (int again = 0; again < 2; again++) {
        manta_err_clear(&e);
        assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_ERR_INVALID_ARG);
        assert_non_null(strstr(e.msg, "gave 0 for epoch 0 batch 3"));
    }
    loader_state s;
    data_prefetch_get_state(p, &s);
    assert_int_equal(s.pos, 3 * BATCH); /* resume point: the failed batch */
    data_prefetch_stop(p);
}

static void test_prefetch_shutdown(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, false);
    prefetch *p;
    manta_err e;
    prefetch_batch b;
    /* stop at once, while the producer may still be starting */
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 2, &e), MANTA_OK);
    data_prefetch_stop(p);
    /* stop with the ring full and a batch held by the consumer */
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 4, &e), MANTA_OK);
    assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_OK);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    data_prefetch_stop(p);
    data_prefetch_stop(NULL);
    /* stop after the producer ended by itself */
    o.epochs = 1;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_OK);
    int n = 0;
    do {
        assert_int_equal(data_prefetch_next(p, &b, NULL, &e), MANTA_OK);
        n += b.n;
    } while (b.n > 0);
    assert_int_equal(n, N_IMG);
    data_prefetch_stop(p);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    loader_opts o;
    opts_for(&o, true);
    prefetch *p;
    manta_err e;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 1, &e), MANTA_ERR_INVALID_ARG);
    assert_null(p);
    assert_non_null(strstr(e.msg, "slots"));
    o.batch = 64; /* more than the 50 samples, with drop_last */
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "no full batch"));
    opts_for(&o, true);
    loader_state s = {0, N_IMG + 1, {0, 1}};
    assert_int_equal(data_prefetch_start(&p, &o, &s, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "start state"));
    opts_for(&o, true);
    o.max_resolution = 0;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "max_resolution"));
    opts_for(&o, true);
    int bad = N_IMG;
    o.indices = &bad;
    o.n_indices = 1;
    o.batch = 1;
    assert_int_equal(data_prefetch_start(&p, &o, NULL, 3, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "outside"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader_epoch_orders),
        cmocka_unit_test(test_loader_drop_last_and_subset),
        cmocka_unit_test(test_loader_resume_mid_epoch),
        cmocka_unit_test(test_prefetch_equals_sync),
        cmocka_unit_test(test_prefetch_resume_from_state),
        cmocka_unit_test(test_prefetch_reports_wait_time),
        cmocka_unit_test(test_prefetch_error_propagates_in_order),
        cmocka_unit_test(test_prefetch_shutdown),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests_name("loader and prefetch", tests, setup, teardown);
}
