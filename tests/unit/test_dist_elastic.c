/* The elastic rendezvous service (dist/elastic.h) on loopback: members as threads joining a
 * service thread. The first ring; a rank with another code version, other settings, another
 * secret; a new rank while a ring runs (rank 0 is told, the ring comes back, the new rank is
 * told to take the state of rank 0); a failure round with a rank claimed twice and two states
 * for one step; a rank declared dead coming back (re-admitted as new); a rank with another
 * gradient encoding; the service on IPv6; fewer than MIN ranks stop the job; the state
 * broadcast over a ring (of an int8 job) gives every byte. All waits are bounded by 2-3 s deadlines. */
#define _DEFAULT_SOURCE

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil.h"
#include "dist/elastic.h"
#include "dist/net.h"

#define SECRET "elastic-test-secret"

typedef struct service {
    dist_config cfg;
    dist_elastic_opts o;
    dist_elastic_server *s;
    volatile sig_atomic_t stop;
    manta_status st;
    manta_err err;
    pthread_t th;
} service;

static void config(dist_config *c, int port, const char *secret)
{
    dist_config_init(c);
    c->master_port = port;
    c->timeout_s = 3.0;
    snprintf(c->job_id, sizeof c->job_id, "test-elastic-%d", port);
    assert_int_equal(dist_config_set_secret(c, secret, strlen(secret), NULL), MANTA_OK);
}

static void *service_main(void *arg)
{
    service *v = arg;
    v->st = dist_elastic_server_run(v->s, &v->stop, &v->err);
    return NULL;
}

static void service_start_at(service *v, const char *addr, int min, int max, int expect)
{
    memset(v, 0, sizeof *v);
    int port = dist_free_port();
    assert_true(port > 0);
    config(&v->cfg, port, SECRET);
    snprintf(v->cfg.master_addr, sizeof v->cfg.master_addr, "%s", addr);
    v->o = (dist_elastic_opts){.min_ranks = min,
                               .max_ranks = max,
                               .settle_s = 1.0,
                               .last_call_s = 0.3,
                               .expect = expect,
                               .timeout_s = 2.0};
    manta_err err;
    assert_int_equal(dist_elastic_server_open(&v->cfg, &v->o, &v->s, &err), MANTA_OK);
    assert_int_equal(pthread_create(&v->th, NULL, service_main, v), 0);
}

static void service_start(service *v, int min, int max, int expect)
{
    service_start_at(v, "127.0.0.1", min, max, expect);
}

/* Stop the service and wait for its thread: its state is then final and safe to read (the
 * members' answers go out before the service records their generation). */
static void service_stop(service *v)
{
    if (v->stop)
        return;
    v->stop = 1;
    pthread_join(v->th, NULL);
}

static void service_end(service *v)
{
    service_stop(v);
    dist_elastic_server_close(v->s);
}

typedef struct member {
    dist_config cfg;
    dist_elastic_join_req q;
    dist_elastic_assign a;
    manta_status st;
    manta_err err;
    pthread_t th;
} member;

static void *member_main(void *arg)
{
    member *m = arg;
    manta_err_clear(&m->err);
    m->st = dist_elastic_join(&m->cfg, &m->q, 3.0, &m->a, &m->err);
    return NULL;
}

/* A member of @p v's job: id, last generation and rank, latest state step (hash byte h). */
static void member_init(member *m, const service *v, uint64_t id, uint64_t gen, int rank,
                        int64_t step, unsigned char h)
{
    memset(m, 0, sizeof *m);
    m->cfg = v->cfg;
    m->q.id = id;
    m->q.generation = gen;
    m->q.former_rank = rank;
    m->q.state[0] = (dist_state_ref){.step = step, .bytes = step >= 0 ? 100 : 0};
    memset(m->q.state[0].hash, h, DIST_HASH_BYTES);
    m->q.state[1] = (dist_state_ref){.step = -1};
    memset(m->q.spec, 7, DIST_HASH_BYTES);
    snprintf(m->q.version, sizeof m->q.version, "v1");
}

static void member_start(member *m)
{
    assert_int_equal(pthread_create(&m->th, NULL, member_main, m), 0);
}

static void member_wait(member *m) { pthread_join(m->th, NULL); }

static void test_rounds(void **state)
{
    (void)state;
    service v;
    service_start(&v, 1, 3, 2);
    member a, b;
    /* the first ring: 2 expected ranks, in the order of their RANK */
    member_init(&a, &v, 0xa, 0, 1, 0, 0);
    member_init(&b, &v, 0xb, 0, 0, 0, 0);
    member_start(&a);
    member_start(&b);
    member_wait(&a);
    member_wait(&b);
    assert_int_equal(a.st, MANTA_OK);
    assert_int_equal(b.st, MANTA_OK);
    assert_int_equal(a.a.kind, DIST_ELASTIC_ASSIGN);
    assert_int_equal(a.a.generation, 1);
    assert_int_equal(a.a.world, 2);
    assert_int_equal(a.a.rank, 1);
    assert_int_equal(b.a.rank, 0);
    assert_int_equal(b.a.any_need, 0);
    assert_true(b.a.watch_fd >= 0); /* rank 0 keeps the connection for notices */
    assert_true(a.a.watch_fd < 0);
    int watch = b.a.watch_fd;
    b.a.watch_fd = -1;
    unsigned char wkey[DIST_KEY_BYTES];
    memcpy(wkey, b.a.watch_key, sizeof wkey);
    assert_int_equal(dist_elastic_watch(&watch, wkey, 1), 0);
    dist_elastic_assign_free(&a.a);
    dist_elastic_assign_free(&b.a);

    /* another code version, other settings: refused naming them */
    member x;
    member_init(&x, &v, 0xc, 0, -1, 0, 0);
    snprintf(x.q.version, sizeof x.q.version, "v2");
    member_start(&x);
    member_wait(&x);
    assert_int_equal(x.st, MANTA_OK);
    assert_int_equal(x.a.kind, DIST_ELASTIC_REJECT);
    assert_non_null(strstr(x.a.msg, "code version 'v2' differs from the job's 'v1'"));
    member_init(&x, &v, 0xc, 0, -1, 0, 0);
    x.q.spec[0] = 8;
    member_start(&x);
    member_wait(&x);
    assert_int_equal(x.a.kind, DIST_ELASTIC_REJECT);
    assert_non_null(strstr(x.a.msg, "settings"));
    /* another gradient encoding: refused naming both (the job's came with its first ranks) */
    member_init(&x, &v, 0xc, 0, -1, 0, 0);
    x.q.wire = DIST_WIRE_INT8;
    x.cfg.wire = DIST_WIRE_INT8;
    member_start(&x);
    member_wait(&x);
    assert_int_equal(x.st, MANTA_OK);
    assert_int_equal(x.a.kind, DIST_ELASTIC_REJECT);
    assert_non_null(strstr(x.a.msg, "gradient encoding 'int8' differs from the job's 'none'"));
    /* another secret: the handshake fails */
    member_init(&x, &v, 0xc, 0, -1, 0, 0);
    assert_int_equal(dist_config_set_secret(&x.cfg, "another-secret", 14, NULL), MANTA_OK);
    member_start(&x);
    member_wait(&x);
    assert_int_not_equal(x.st, MANTA_OK);
    assert_non_null(strstr(x.err.msg, "does not know this job's shared secret"));

    /* a new rank while the ring runs: rank 0 is told; the ring comes back (rank 1 reports a
     * state one step ahead of rank 0's) and forms with it; it takes rank 0's state */
    member n;
    member_init(&n, &v, 0xd, 0, -1, 0, 0);
    member_start(&n);
    int told = 0;
    for (int i = 0; i < 300 && !told; i++) {
        told = dist_elastic_watch(&watch, wkey, 1);
        if (!told)
            usleep(10000);
    }
    assert_int_equal(told, 1);
    member_init(&a, &v, 0xa, 1, 1, 6, 0x61);
    a.q.state[1] = (dist_state_ref){.step = 5, .bytes = 100};
    memset(a.q.state[1].hash, 0x51, DIST_HASH_BYTES);
    member_init(&b, &v, 0xb, 1, 0, 5, 0x51);
    member_start(&a);
    member_start(&b);
    member_wait(&a);
    member_wait(&b);
    member_wait(&n);
    assert_int_equal(n.st, MANTA_OK);
    assert_int_equal(n.a.kind, DIST_ELASTIC_ASSIGN);
    assert_int_equal(n.a.generation, 2);
    assert_int_equal(n.a.world, 3);
    assert_int_equal(b.a.rank, 0);
    assert_int_equal(a.a.rank, 1);
    assert_int_equal(n.a.rank, 2); /* the new rank after the ranks that came back */
    assert_int_equal(n.a.step, 5); /* the smallest last step: every rank holds it */
    assert_int_equal(n.a.need_state, 1);
    assert_int_equal(a.a.need_state, 0);
    assert_int_equal(b.a.any_need, 1);
    assert_int_equal(n.a.source, 0);
    assert_int_equal(n.a.ref.hash[0], 0x51);
    close(watch);
    watch = b.a.watch_fd;
    b.a.watch_fd = -1;
    memcpy(wkey, b.a.watch_key, sizeof wkey);
    dist_elastic_assign_free(&a.a);
    dist_elastic_assign_free(&b.a);
    dist_elastic_assign_free(&n.a);

    /* rank 2 failed: ranks 0 and 1 come back (rank 1 with another state for the same step:
     * it is sent rank 0's), and a second process claims rank 1 */
    member_init(&a, &v, 0xa, 2, 1, 7, 2);
    member_init(&b, &v, 0xb, 2, 0, 7, 1);
    member_start(&a);
    usleep(100000);
    member_init(&x, &v, 0xe, 2, 1, 7, 1);
    member_start(&x);
    member_wait(&x);
    assert_int_equal(x.a.kind, DIST_ELASTIC_REJECT);
    assert_non_null(strstr(x.a.msg, "rank 1 of generation 2 is already claimed"));
    member_start(&b);
    member_wait(&a);
    member_wait(&b);
    assert_int_equal(a.a.kind, DIST_ELASTIC_ASSIGN);
    assert_int_equal(a.a.generation, 3);
    assert_int_equal(a.a.world, 2);
    assert_int_equal(a.a.need_state, 1);
    assert_int_equal(b.a.need_state, 0);
    assert_int_equal(a.a.ref.hash[0], 1);
    close(watch);
    watch = b.a.watch_fd;
    b.a.watch_fd = -1;
    memcpy(wkey, b.a.watch_key, sizeof wkey);
    dist_elastic_assign_free(&a.a);
    dist_elastic_assign_free(&b.a);

    /* rank 2 of generation 2 comes back after generation 3 formed without it: re-admitted as
     * a new rank at the ring's next step boundary, not merged back as rank 2 */
    member_init(&x, &v, 0xd, 2, 2, 6, 1);
    member_start(&x);
    told = 0;
    for (int i = 0; i < 300 && !told; i++) {
        told = dist_elastic_watch(&watch, wkey, 3);
        if (!told)
            usleep(10000);
    }
    assert_int_equal(told, 1);
    member_init(&a, &v, 0xa, 3, 1, 8, 3);
    member_init(&b, &v, 0xb, 3, 0, 8, 3);
    member_start(&a);
    member_start(&b);
    member_wait(&a);
    member_wait(&b);
    member_wait(&x);
    assert_int_equal(x.a.kind, DIST_ELASTIC_ASSIGN);
    assert_non_null(strstr(x.a.msg, "rank 2 of generation 2 was declared dead (generation 3 "
                                    "formed without it): re-admitted as a new rank"));
    assert_int_equal(x.a.generation, 4);
    assert_int_equal(x.a.rank, 2);
    assert_int_equal(x.a.need_state, 1);
    assert_int_equal(x.a.step, 8);
    assert_string_equal(a.a.msg, "");
    close(watch);
    dist_elastic_assign_free(&a.a);
    dist_elastic_assign_free(&b.a);
    dist_elastic_assign_free(&x.a);
    service_stop(&v);
    assert_int_equal(dist_elastic_server_generation(v.s), 4);
    service_end(&v);
    assert_int_equal(v.st, MANTA_OK);
}

/* The service on ::1: two ranks with the job's encoding (fixed) form a ring whose table holds
 * their IPv6 ring listeners; skipped where the host has no IPv6 loopback. */
static void test_ipv6(void **state)
{
    (void)state;
    if (!dist_have_ipv6_loopback()) {
        skip();
        return;
    }
    service v;
    service_start_at(&v, "::1", 2, 2, 2);
    member a, b;
    member_init(&a, &v, 0xa, 0, 0, 0, 0);
    member_init(&b, &v, 0xb, 0, 1, 0, 0);
    a.q.wire = b.q.wire = DIST_WIRE_FIXED;
    a.cfg.wire = b.cfg.wire = DIST_WIRE_FIXED;
    member_start(&a);
    member_start(&b);
    member_wait(&a);
    member_wait(&b);
    assert_int_equal(a.st, MANTA_OK);
    assert_int_equal(b.st, MANTA_OK);
    assert_int_equal(a.a.kind, DIST_ELASTIC_ASSIGN);
    assert_int_equal(b.a.kind, DIST_ELASTIC_ASSIGN);
    assert_int_equal(a.a.world, 2);
    for (int r = 0; r < 2; r++) {
        assert_false(dist_addr_is_v4(&a.a.rz.peers[r].addr));
        assert_true(dist_addr_is_loopback(&a.a.rz.peers[r].addr));
    }
    dist_elastic_assign_free(&a.a);
    dist_elastic_assign_free(&b.a);
    service_end(&v);
    assert_int_equal(v.st, MANTA_OK);
}

/* Fewer than MIN ranks within the deadline: every waiting rank gets the stop, the one with
 * the latest state is asked to write it, the service returns the reason. */
static void test_below_min(void **state)
{
    (void)state;
    service v;
    service_start(&v, 2, 2, 0);
    member a;
    member_init(&a, &v, 0xa, 0, 0, 4, 1);
    member_start(&a);
    member_wait(&a);
    assert_int_equal(a.st, MANTA_OK);
    assert_int_equal(a.a.kind, DIST_ELASTIC_STOP);
    assert_int_equal(a.a.write_ckpt, 1);
    assert_non_null(strstr(a.a.msg, "only 1 rank(s) of the minimum 2 joined within 2 s"));
    pthread_join(v.th, NULL);
    assert_int_equal(v.st, MANTA_ERR_IO);
    dist_elastic_server_close(v.s);
}

/* The state broadcast: n bytes of rank 1 reach ranks 0 and 2 exactly (n not a multiple of 3,
 * more than one allreduce). */
typedef struct bc {
    dist_config cfg;
    unsigned char *buf;
    size_t n;
    manta_status st;
    manta_err err;
} bc;

static void *bc_main(void *arg)
{
    bc *b = arg;
    ring_comm *c = NULL;
    b->st = ring_create(&b->cfg, &c, &b->err);
    if (b->st == MANTA_OK)
        b->st = dist_elastic_bcast(c, 1, b->buf, b->n, &b->err);
    ring_destroy(c);
    return NULL;
}

static void test_bcast(void **state)
{
    (void)state;
    const size_t n = 3 * ((size_t)1 << 20) + 7;
    int port = dist_free_port();
    bc b[3];
    pthread_t th[3];
    for (int r = 0; r < 3; r++) {
        config(&b[r].cfg, port, SECRET);
        b[r].cfg.rank = r;
        b[r].cfg.world_size = 3;
        b[r].cfg.wire = DIST_WIRE_INT8; /* the job's gradient encoding: the state stays exact */
        b[r].n = n;
        b[r].buf = malloc(n);
        assert_non_null(b[r].buf);
        for (size_t i = 0; i < n; i++)
            b[r].buf[i] = r == 1 ? (unsigned char)(i * 2654435761u >> 13) : 0x5a;
        assert_int_equal(pthread_create(&th[r], NULL, bc_main, &b[r]), 0);
    }
    for (int r = 0; r < 3; r++)
        pthread_join(th[r], NULL);
    for (int r = 0; r < 3; r++) {
        assert_int_equal(b[r].st, MANTA_OK);
        assert_memory_equal(b[r].buf, b[1].buf, n);
    }
    for (int r = 0; r < 3; r++)
        free(b[r].buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounds),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_below_min),
        cmocka_unit_test(test_bcast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
