/* Ring-allreduce on loopback: N = 1..5 ranks as threads, results bit-identical
 * to the serial reference in the documented order, repeatable, asynchronous
 * buckets, averages; a wrong secret is rejected with a clear error. */
#define _DEFAULT_SOURCE

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/testutil.h"
#include "dist/net.h"
#include "dist/ring.h"

static void base_config(dist_config *c, int rank, int world, int port, const char *secret)
{
    dist_config_init(c);
    c->rank = rank;
    c->world_size = world;
    c->master_port = port;
    c->timeout_s = 10.0;
    snprintf(c->job_id, sizeof c->job_id, "test-ring-%d", port);
    if (secret)
        assert_int_equal(dist_config_set_secret(c, secret, strlen(secret), NULL), MANTA_OK);
}

/* ---- the allreduce against the reference -------------------------------------------------------- */

#define MAX_LEN 6
typedef struct job {
    int world;
    size_t len[MAX_LEN];
    int nlen;
    float **in[MAX_LEN]; /* in[l][rank] */
    float *ref[MAX_LEN]; /* sums */
    float *avg_ref;      /* average of the last length */
} job;

typedef struct rank_run {
    job *j;
    dist_config cfg;
    manta_status st;
    manta_err err;
    int mismatch; /* first length index that differed + 1 */
    size_t bad_index;
} rank_run;

static void *rank_main(void *arg)
{
    rank_run *rr = arg;
    job *j = rr->j;
    ring_comm *c = NULL;
    manta_err_clear(&rr->err);
    rr->st = ring_create(&rr->cfg, &c, &rr->err);
    if (rr->st != MANTA_OK)
        return NULL;
    int r = ring_rank(c);
    size_t maxn = 0;
    for (int l = 0; l < j->nlen; l++)
        maxn = j->len[l] > maxn ? j->len[l] : maxn;
    float *buf = malloc((maxn ? maxn : 1) * sizeof *buf);
    float *first = malloc((maxn ? maxn : 1) * sizeof *first);
    /* Bandwidth-optimal: one allreduce of n sends (N-1) chunks in each phase, 2(N-1)/N of the data. */
    if (j->world > 1) {
        size_t n = j->len[4];
        int N = j->world;
        memcpy(buf, j->in[4][r], n * sizeof *buf);
        rr->st = ring_allreduce(c, buf, n, RING_SUM, &rr->err);
        ring_stats stt;
        ring_get_stats(c, &stt);
        size_t own = ring_chunk_begin(n, N, r + 1) - ring_chunk_begin(n, N, r);
        size_t nxt = ring_chunk_begin(n, N, (r + 1) % N + 1) - ring_chunk_begin(n, N, (r + 1) % N);
        size_t prv =
            ring_chunk_begin(n, N, (r + N - 1) % N + 1) - ring_chunk_begin(n, N, (r + N - 1) % N);
        uint64_t want = 4 * (uint64_t)(2 * n - own - nxt),
                 want_recv = 4 * (uint64_t)(2 * n - prv - own);
        if (rr->st == MANTA_OK &&
            (stt.bytes_sent != want || stt.bytes_recv != want_recv || stt.ops != 1 ||
             stt.frames_sent != 2 * (uint64_t)(N - 1) * ring_segments(n, N)))
            rr->mismatch = 400;
    }
    /* Twice over every length: the second pass must give the very same bits. */
    for (int pass = 0; pass < 2 && rr->st == MANTA_OK && !rr->mismatch; pass++) {
        for (int l = 0; l < j->nlen && rr->st == MANTA_OK; l++) {
            size_t n = j->len[l];
            memcpy(buf, j->in[l][r], n * sizeof *buf);
            rr->st = ring_allreduce(c, buf, n, RING_SUM, &rr->err);
            if (rr->st != MANTA_OK)
                break;
            if (memcmp(buf, j->ref[l], n * sizeof *buf) != 0) {
                rr->mismatch = l + 1;
                for (size_t i = 0; i < n; i++)
                    if (memcmp(&buf[i], &j->ref[l][i], sizeof(float)) != 0) {
                        rr->bad_index = i;
                        break;
                    }
                break;
            }
            if (l == j->nlen - 1) {
                if (pass == 0)
                    memcpy(first, buf, n * sizeof *buf);
                else if (memcmp(first, buf, n * sizeof *buf) != 0)
                    rr->mismatch = 100;
            }
        }
    }
    /* Average, and three buckets in flight at once (completed in order). */
    if (rr->st == MANTA_OK && !rr->mismatch) {
        int l = j->nlen - 1;
        size_t n = j->len[l];
        memcpy(buf, j->in[l][r], n * sizeof *buf);
        rr->st = ring_allreduce(c, buf, n, RING_AVG, &rr->err);
        if (rr->st == MANTA_OK && memcmp(buf, j->avg_ref, n * sizeof *buf) != 0)
            rr->mismatch = 200;
    }
    if (rr->st == MANTA_OK && !rr->mismatch) {
        float *b[3];
        ring_handle h[3];
        for (int k = 0; k < 3 && rr->st == MANTA_OK; k++) {
            size_t n = j->len[j->nlen - 1 - k];
            b[k] = malloc((n ? n : 1) * sizeof(float));
            memcpy(b[k], j->in[j->nlen - 1 - k][r], n * sizeof(float));
            rr->st = ring_allreduce_async(c, b[k], n, RING_SUM, &h[k], &rr->err);
        }
        for (int k = 0; k < 3; k++) {
            if (rr->st == MANTA_OK)
                rr->st = ring_wait(c, h[k], &rr->err);
            size_t n = j->len[j->nlen - 1 - k];
            if (rr->st == MANTA_OK && memcmp(b[k], j->ref[j->nlen - 1 - k], n * sizeof(float)) != 0)
                rr->mismatch = 300 + k;
        }
        for (int k = 0; k < 3; k++)
            free(b[k]);
    }
    free(buf);
    free(first);
    ring_destroy(c);
    return NULL;
}

static void make_job(job *j, int world)
{
    memset(j, 0, sizeof *j);
    j->world = world;
    size_t lens[MAX_LEN] = {0, 1, (size_t)(world - 1), 7919, 1000000, 1000003};
    j->nlen = MAX_LEN;
    manta_rng rng;
    manta_rng_seed(&rng, 1234, (uint64_t)world);
    for (int l = 0; l < j->nlen; l++) {
        size_t n = lens[l];
        j->len[l] = n;
        j->in[l] = calloc((size_t)world, sizeof(float *));
        for (int r = 0; r < world; r++) {
            j->in[l][r] = malloc((n ? n : 1) * sizeof(float));
            /* Values of mixed magnitude, so that the order of the additions shows in the bits. */
            for (size_t i = 0; i < n; i++) {
                float v = manta_rng_uniform(&rng) * 2.0f - 1.0f;
                j->in[l][r][i] = v * (float)(1u << (manta_rng_u32(&rng) % 12));
            }
        }
        j->ref[l] = malloc((n ? n : 1) * sizeof(float));
        ring_reference((const float *const *)j->in[l], world, n, RING_SUM, j->ref[l]);
    }
    size_t n = j->len[j->nlen - 1];
    j->avg_ref = malloc(n * sizeof(float));
    ring_reference((const float *const *)j->in[j->nlen - 1], world, n, RING_AVG, j->avg_ref);
}

static void free_job(job *j)
{
    for (int l = 0; l < j->nlen; l++) {
        for (int r = 0; r < j->world; r++)
            free(j->in[l][r]);
        free(j->in[l]);
        free(j->ref[l]);
    }
    free(j->avg_ref);
}

static void run_world(int world)
{
    job j;
    make_job(&j, world);
    int port = dist_free_port();
    assert_true(port > 0);
    rank_run *rr = calloc((size_t)world, sizeof *rr);
    pthread_t *th = calloc((size_t)world, sizeof *th);
    for (int r = 0; r < world; r++) {
        rr[r].j = &j;
        base_config(&rr[r].cfg, r, world, port, "correct horse battery staple");
        if (world == 3) /* explicit socket buffers instead of the kernel's autotuning */
            rr[r].cfg.sock_buf = 4 << 20;
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &rr[r]), 0);
    }
    for (int r = 0; r < world; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < world; r++) {
        if (rr[r].st != MANTA_OK)
            fail_msg("N=%d rank %d: %s", world, r, manta_err_msg(&rr[r].err, rr[r].st));
        if (rr[r].mismatch)
            fail_msg("N=%d rank %d: result differs from the reference (case %d, first element %zu)",
                     world, r, rr[r].mismatch, rr[r].bad_index);
    }
    print_message(
        "N=%d: lengths 0, 1, %d, 7919, 10^6, 10^6+3 bit-identical to the reference, twice\n", world,
        world - 1);
    free(rr);
    free(th);
    free_job(&j);
}

static void test_world_1(void **s)
{
    (void)s;
    run_world(1);
}
static void test_world_2(void **s)
{
    (void)s;
    run_world(2);
}
static void test_world_3(void **s)
{
    (void)s;
    run_world(3);
}
static void test_world_4(void **s)
{
    (void)s;
    run_world(4);
}
static void test_world_5(void **s)
{
    (void)s;
    run_world(5);
}

/* The order matters: a plain left-to-right sum differs from the ring order somewhere. */
static void test_reference_order_is_ring_order(void **s)
{
    (void)s;
    float a[3] = {1e8f, 1.0f, -1e8f}, b[3] = {1.0f, 1e8f, 1.0f}, c[3] = {-1e8f, -1e8f, 1e8f};
    const float *in[3] = {a, b, c};
    float out[3];
    ring_reference(in, 3, 3, RING_SUM, out);
    /* chunk 0 = element 0: (b + c) + a; chunk 1: (c + a) + b; chunk 2: (a + b) + c */
    assert_true(out[0] == (1.0f + -1e8f) + 1e8f);
    assert_true(out[1] == (-1e8f + 1.0f) + 1e8f);
    assert_true(out[2] == (-1e8f + 1.0f) + 1e8f);
    assert_int_equal(ring_chunk_begin(10, 3, 0), 0);
    assert_int_equal(ring_chunk_begin(10, 3, 1), 4);
    assert_int_equal(ring_chunk_begin(10, 3, 2), 7);
    assert_int_equal(ring_chunk_begin(10, 3, 3), 10);
    assert_int_equal(ring_segments(10, 3), 1);
    assert_int_equal(ring_segments(1000000, 2), 2);       /* 2 MB chunks: 1 MiB segments */
    assert_int_equal(ring_segments(16 * 1024 * 4, 4), 2); /* 64 KiB chunks: at least 2 */
    assert_int_equal(ring_segments(16 << 20, 2), 32);     /* 32 MiB chunks: 32 segments of 1 MiB */
}

/* ---- authentication ----------------------------------------------------------------------------- */

typedef struct events {
    pthread_mutex_t mu;
    char text[4096];
} events;

static void on_event(void *ctx, const char *line)
{
    events *e = ctx;
    pthread_mutex_lock(&e->mu);
    size_t n = strlen(e->text);
    snprintf(e->text + n, sizeof e->text - n, "%s\n", line);
    pthread_mutex_unlock(&e->mu);
}

typedef struct simple_run {
    dist_config cfg;
    manta_status st;
    manta_err err;
    double seconds;
} simple_run;

static void *simple_main(void *arg)
{
    simple_run *sr = arg;
    double t0 = dist_now();
    ring_comm *c = NULL;
    manta_err_clear(&sr->err);
    sr->st = ring_create(&sr->cfg, &c, &sr->err);
    if (sr->st == MANTA_OK) {
        float x[5] = {1, 2, 3, 4, 5};
        sr->st = ring_allreduce(c, x, 5, RING_SUM, &sr->err);
    }
    sr->seconds = dist_now() - t0;
    ring_destroy(c);
    return NULL;
}

static void test_wrong_secret_rejected(void **s)
{
    (void)s;
    int port = dist_free_port();
    events ev = {.mu = PTHREAD_MUTEX_INITIALIZER};
    simple_run r[2];
    memset(r, 0, sizeof r);
    base_config(&r[0].cfg, 0, 2, port, "the right secret");
    base_config(&r[1].cfg, 1, 2, port, "not the right one");
    r[0].cfg.timeout_s = r[1].cfg.timeout_s = 2.0;
    r[0].cfg.event = on_event;
    r[0].cfg.event_ctx = &ev;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, simple_main, &r[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    print_message("rank 1: %s (%.2f s)\nrank 0: %s (%.2f s)\nevents: %s", r[1].err.msg,
                  r[1].seconds, r[0].err.msg, r[0].seconds, ev.text);
    assert_int_not_equal(r[1].st, MANTA_OK);
    assert_non_null(strstr(r[1].err.msg, "secret"));
    assert_non_null(strstr(r[1].err.msg, "master"));
    assert_true(r[1].seconds < 1.5); /* a wrong secret is known at once, not at the deadline */
    assert_int_not_equal(r[0].st, MANTA_OK);
    assert_non_null(strstr(r[0].err.msg, "missing rank 1"));
    assert_true(r[0].seconds < 3.5);
    assert_non_null(strstr(ev.text, "rejected"));
    assert_non_null(strstr(ev.text, "rank 1"));
}

static void test_missing_secret(void **s)
{
    (void)s;
    dist_config c;
    base_config(&c, 0, 2, 29999, NULL);
    ring_comm *rc = NULL;
    manta_err e;
    assert_int_equal(ring_create(&c, &rc, &e), MANTA_ERR_INVALID_ARG);
    assert_null(rc);
    assert_non_null(strstr(e.msg, "MANTA_SECRET"));
    /* World 1 needs none. */
    c.world_size = 1;
    assert_int_equal(ring_create(&c, &rc, &e), MANTA_OK);
    float x[3] = {1, 2, 3};
    assert_int_equal(ring_allreduce(rc, x, 3, RING_AVG, &e), MANTA_OK);
    assert_true(x[0] == 1 && x[1] == 2 && x[2] == 3);
    ring_destroy(rc);
}

static void test_job_mismatch(void **s)
{
    (void)s;
    int port = dist_free_port();
    simple_run r[2];
    memset(r, 0, sizeof r);
    base_config(&r[0].cfg, 0, 2, port, "shared secret 42");
    base_config(&r[1].cfg, 1, 2, port, "shared secret 42");
    snprintf(r[1].cfg.job_id, sizeof r[1].cfg.job_id, "another-job");
    r[0].cfg.timeout_s = r[1].cfg.timeout_s = 1.0;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, simple_main, &r[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    print_message("rank 1: %s\n", r[1].err.msg);
    assert_int_not_equal(r[1].st, MANTA_OK);
    assert_non_null(strstr(r[1].err.msg, "job"));
    assert_int_not_equal(r[0].st, MANTA_OK);
}

static void test_ring_order_parse(void **s)
{
    (void)s;
    int o[4];
    manta_err e;
    assert_int_equal(ring_parse_order("2,0,1", 3, o, &e), MANTA_OK);
    assert_true(o[0] == 2 && o[1] == 0 && o[2] == 1);
    assert_int_equal(ring_parse_order("", 3, o, &e), MANTA_OK);
    assert_true(o[0] == 0 && o[1] == 1 && o[2] == 2);
    static const char *const bad[] = {"0,0,1", "0,1",    "0,1,2,3", "0,1,3",
                                      "a,b,c", "0,1,2,", "-1,0,1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ring_parse_order(bad[i], 3, o, &e), MANTA_ERR_INVALID_ARG);
        assert_non_null(strstr(e.msg, "MANTA_RING_ORDER"));
        assert_true(o[0] == 0 && o[1] == 1 && o[2] == 2);
    }
    print_message("%s\n", e.msg);
}

/* ---- IPv6 and dual stack ---------------------------------------------------------------------- */

typedef struct v6_run {
    dist_config cfg;
    manta_status st;
    manta_err err;
    float x[5];
} v6_run;

static void *v6_main(void *arg)
{
    v6_run *v = arg;
    ring_comm *c = NULL;
    manta_err_clear(&v->err);
    v->st = ring_create(&v->cfg, &c, &v->err);
    for (int i = 0; i < 5; i++)
        v->x[i] = (float)(i + 1) * (float)(v->cfg.rank + 1);
    if (v->st == MANTA_OK)
        v->st = ring_allreduce(c, v->x, 5, RING_SUM, &v->err);
    ring_destroy(c);
    return NULL;
}

/* Three ranks; rank r's master address masters[r]; rank 0 binds every address if @p all. */
static void run_v6(const char *const masters[3], int all)
{
    int port = dist_free_port();
    v6_run r[3];
    memset(r, 0, sizeof r);
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        base_config(&r[i].cfg, i, 3, port, "six six six");
        snprintf(r[i].cfg.master_addr, sizeof r[i].cfg.master_addr, "%s", masters[i]);
        r[i].cfg.rdzv_bind_all = i == 0 && all;
        pthread_create(&th[i], NULL, v6_main, &r[i]);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) {
        if (r[i].st != MANTA_OK)
            fail_msg("rank %d (master %s): %s", i, masters[i], r[i].err.msg);
        for (int k = 0; k < 5; k++)
            assert_true(r[i].x[k] == (float)(k + 1) * 6.0f);
    }
}

static void test_ipv6_loopback(void **s)
{
    (void)s;
    if (!dist_have_ipv6_loopback()) {
        print_message("skipped: this host has no IPv6 loopback (::1)\n");
        return;
    }
    static const char *const v6[3] = {"::1", "[::1]", "::1"};
    run_v6(v6, 0);
    print_message("3 ranks over ::1: rendezvous and ring on IPv6, sums right\n");
    /* dual stack: rank 0 listens on :: (IPv4 too), the others reach it over IPv4, so the ring
     * mixes IPv6 (rank 0's listener on ::1) and IPv4 links */
    static const char *const mixed[3] = {"::1", "127.0.0.1", "127.0.0.1"};
    run_v6(mixed, 1);
    print_message(
        "dual stack: rank 0 on ::1 and [::]:port, ranks 1-2 over 127.0.0.1: sums right\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_order_is_ring_order),
        cmocka_unit_test(test_world_1),
        cmocka_unit_test(test_world_2),
        cmocka_unit_test(test_world_3),
        cmocka_unit_test(test_world_4),
        cmocka_unit_test(test_world_5),
        cmocka_unit_test(test_missing_secret),
        cmocka_unit_test(test_wrong_secret_rejected),
        cmocka_unit_test(test_job_mismatch),
        cmocka_unit_test(test_ring_order_parse),
        cmocka_unit_test(test_ipv6_loopback),
    };
    return cmocka_run_group_tests_name("dist ring", tests, NULL, NULL);
}
