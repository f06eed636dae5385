/* Faults on the ring, on loopback with a 2 s deadline: a fake rank 0 that
 * knows the secret sends garbage, truncated frames, oversized lengths, wrong
 * sequence numbers, forged tags, or nothing; impostors without the secret are
 * rejected and cannot inject data; a rank killed or stopped in the middle of
 * allreduces makes every other rank fail within the deadline, naming it. */
#define _DEFAULT_SOURCE

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/testutil.h"
#include "dist/auth.h"
#include "dist/frame.h"
#include "dist/net.h"
#include "dist/rendezvous.h"
#include "dist/ring.h"

#define SECRET "fault-test secret 0123456789"
#define DEADLINE 2.0

static void base_config(dist_config *c, int rank, int world, int port, const char *secret)
{
    dist_config_init(c);
    c->rank = rank;
    c->world_size = world;
    c->master_port = port;
    c->timeout_s = DEADLINE;
    snprintf(c->job_id, sizeof c->job_id, "test-faults-%d", port);
    assert_int_equal(dist_config_set_secret(c, secret, strlen(secret), NULL), MANTA_OK);
}

typedef struct events {
    pthread_mutex_t mu;
    char text[8192];
} events;

static void on_event(void *ctx, const char *line)
{
    events *e = ctx;
    pthread_mutex_lock(&e->mu);
    size_t n = strlen(e->text);
    snprintf(e->text + n, sizeof e->text - n, "%s\n", line);
    pthread_mutex_unlock(&e->mu);
}

/* ---- the real rank 1 and a fake rank 0 ------------------------------------------------------------ */

typedef struct victim {
    dist_config cfg;
    size_t n;
    float x[1000];
    manta_status setup_st, st, again_st;
    manta_err err, again_err;
    double seconds;       /* the allreduce alone */
    double again_seconds; /* a second call after the failure */
} victim;

static void *victim_main(void *arg)
{
    victim *v = arg;
    ring_comm *c = NULL;
    manta_err_clear(&v->err);
    v->setup_st = v->st = ring_create(&v->cfg, &c, &v->err);
    if (v->st != MANTA_OK)
        return NULL;
    double t0 = dist_now();
    v->st = ring_allreduce(c, v->x, v->n, RING_SUM, &v->err);
    v->seconds = dist_now() - t0;
    if (v->st != MANTA_OK) {
        t0 = dist_now();
        v->again_st = ring_allreduce(c, v->x, v->n, RING_SUM, &v->again_err);
        v->again_seconds = dist_now() - t0;
    }
    ring_destroy(c);
    return NULL;
}

typedef struct fake {
    dist_config cfg;
    dist_rdzv rz;
    int out_fd, in_fd;
    unsigned char out_key[DIST_KEY_BYTES], in_key[DIST_KEY_BYTES];
    victim v;
    events ev;
    pthread_t th;
} fake;

/* Start rank 1 in a thread and play rank 0 up to the rendezvous. */
static void fake_rendezvous(fake *f, size_t n, dist_frame_mac mac)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->ev.mu, NULL);
    f->out_fd = f->in_fd = -1;
    int port = dist_free_port();
    base_config(&f->cfg, 0, 2, port, SECRET);
    base_config(&f->v.cfg, 1, 2, port, SECRET);
    f->cfg.frame_mac = f->v.cfg.frame_mac = mac;
    f->v.cfg.event = on_event;
    f->v.cfg.event_ctx = &f->ev;
    f->v.n = n;
    for (size_t i = 0; i < n; i++)
        f->v.x[i] = (float)i * 0.25f + 1.0f;
    assert_int_equal(pthread_create(&f->th, NULL, victim_main, &f->v), 0);
    manta_err e;
    if (dist_rendezvous(&f->cfg, &f->rz, &e) != MANTA_OK)
        fail_msg("fake rendezvous: %s", e.msg);
}

/* Connect and authenticate both ring links like a real rank 0. */
static void fake_links(fake *f)
{
    manta_err e;
    double d = dist_now() + DEADLINE;
    assert_int_equal(
        dist_connect(&f->rz.peers[1].addr, f->rz.peers[1].port, 0, d, "rank 1", &f->out_fd, &e),
        MANTA_OK);
    dist_hello me = {.rank = 0};
    if (dist_auth_client(f->out_fd, &f->cfg, DIST_LINK_RING, 1, &me, d, "rank 1", f->out_key, &e) !=
        MANTA_OK)
        fail_msg("fake: %s", e.msg);
    dist_addr pa;
    uint16_t pp;
    assert_int_equal(dist_accept(f->rz.ring_fd, d, &f->in_fd, &pa, &pp, &e), MANTA_OK);
    dist_hello h;
    if (dist_auth_server(f->in_fd, &f->cfg, DIST_LINK_RING, 1, NULL, d, "rank 1", &h, f->in_key,
                         NULL, &e) != MANTA_OK)
        fail_msg("fake: %s", e.msg);
}

static void fake_finish(fake *f)
{
    pthread_join(f->th, NULL);
    dist_close(&f->out_fd);
    dist_close(&f->in_fd);
    dist_rdzv_free(&f->rz);
    pthread_mutex_destroy(&f->ev.mu);
}

/* A DATA frame of rank 0's first step towards rank 1 (n elements, N = 2, chunk 1). */
static void first_frame(const fake *f, ring_frame *fr)
{
    size_t n = f->v.n, b = ring_chunk_begin(n, 2, 1), e = ring_chunk_begin(n, 2, 2);
    memset(fr, 0, sizeof *fr);
    fr->type = RING_FRAME_DATA;
    fr->seq = 0;
    fr->op = 0;
    fr->count = n;
    fr->offset = b;
    fr->length = (uint32_t)((e - b) * sizeof(float));
    fr->step = 0;
}

static void send_frame(fake *f, const ring_frame *fr, const void *payload, size_t nbytes, int forge)
{
    unsigned char head[RING_HEAD_BYTES];
    ring_frame_pack(fr, head);
    int full = f->cfg.frame_mac == DIST_MAC_FULL;
    ring_frame_tag(f->out_key, fr->seq, head, full ? payload : NULL, nbytes, head + RING_HDR_BYTES);
    if (forge)
        head[RING_HDR_BYTES] ^= 1;
    assert_int_equal(dist_send_all(f->out_fd, head, sizeof head, dist_now() + 1, "rank 1", NULL),
                     MANTA_OK);
    if (nbytes)
        (void)dist_send_all(f->out_fd, payload, nbytes, dist_now() + 1, "rank 1", NULL);
}

/* The victim failed within the deadline, with a message containing @p want and naming rank 0,
 * and the communicator stayed failed. */
static void expect_failure(fake *f, const char *want)
{
    fake_finish(f);
    victim *v = &f->v;
    print_message("rank 1 (%.2f s): %s\n", v->seconds, v->err.msg);
    assert_int_equal(v->setup_st, MANTA_OK);
    assert_int_not_equal(v->st, MANTA_OK);
    if (!strstr(v->err.msg, want))
        fail_msg("expected '%s' in: %s", want, v->err.msg);
    assert_non_null(strstr(v->err.msg, "rank 0 (127.0.0.1:"));
    assert_non_null(strstr(v->err.msg, "allreduce op 0"));
    assert_true(v->seconds < DEADLINE + 1.0);
    /* Unusable afterwards: the same error at once. */
    assert_int_equal(v->again_st, v->st);
    assert_string_equal(v->again_err.msg, v->err.msg);
    assert_true(v->again_seconds < 0.5);
}

static void test_garbage_bytes(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    unsigned char junk[200];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char)(i * 37 + 11);
    dist_send_all(f.out_fd, junk, sizeof junk, dist_now() + 1, "rank 1", NULL);
    expect_failure(&f, "not a manta frame");
}

static void test_oversized_length(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    fr.length = 0x7fffffffu; /* would be 2 GiB: must be refused before any payload is read */
    send_frame(&f, &fr, NULL, 0, 0);
    expect_failure(&f, "length is 2147483647, expected 2000");
}

static void test_wrong_sequence(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    fr.seq = 7;
    float p[500] = {0};
    send_frame(&f, &fr, p, sizeof p, 0);
    expect_failure(&f, "seq is 7, expected 0");
}

static void test_size_disagreement(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    fr.count = 999;
    float p[500] = {0};
    send_frame(&f, &fr, p, sizeof p, 0);
    expect_failure(&f, "disagree on the allreduce size");
}

static void test_forged_header_tag(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    float p[500] = {0};
    send_frame(&f, &fr, p, sizeof p, 1);
    expect_failure(&f, "failed authentication");
}

static void test_forged_payload_full_mac(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_FULL);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    float p[500] = {0};
    unsigned char head[RING_HEAD_BYTES];
    ring_frame_pack(&fr, head);
    ring_frame_tag(f.out_key, 0, head, p, sizeof p, head + RING_HDR_BYTES);
    p[3] = 1.0f; /* changed after tagging: an on-path edit of the data */
    dist_send_all(f.out_fd, head, sizeof head, dist_now() + 1, "rank 1", NULL);
    dist_send_all(f.out_fd, p, sizeof p, dist_now() + 1, "rank 1", NULL);
    expect_failure(&f, "failed authentication");
}

static void test_truncated_then_closed(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    float p[500] = {0};
    send_frame(&f, &fr, p, 100, 0); /* 100 of 2000 payload bytes */
    shutdown(f.out_fd, SHUT_WR);
    expect_failure(&f, "closed the connection in the middle of a frame");
}

static void test_truncated_then_silent(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    ring_frame fr;
    first_frame(&f, &fr);
    float p[500] = {0};
    send_frame(&f, &fr, p, 100, 0);
    expect_failure(&f, "timed out after 2 s waiting for data from rank 0");
    assert_true(f.v.seconds > DEADLINE - 0.1);
}

static void test_silent_peer(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 1000, DIST_MAC_HEADER);
    fake_links(&f);
    expect_failure(&f, "timed out after 2 s");
}

/* Impostors without the secret, or sending junk, are rejected and logged; the real rank 0 then
 * completes an allreduce with rank 1 whose result is the exact sum. */
static void test_impostors_cannot_inject(void **s)
{
    (void)s;
    fake f;
    fake_rendezvous(&f, 2, DIST_MAC_HEADER);
    manta_err e;
    double d = dist_now() + DEADLINE;
    /* 1: knows everything but the secret. */
    dist_config bad = f.cfg;
    assert_int_equal(dist_config_set_secret(&bad, "guessed secret!", 15, NULL), MANTA_OK);
    int fd = -1;
    unsigned char key[DIST_KEY_BYTES];
    assert_int_equal(dist_connect(&f.rz.peers[1].addr, f.rz.peers[1].port, 0, d, "rank 1", &fd, &e),
                     MANTA_OK);
    dist_hello me = {.rank = 0};
    assert_int_not_equal(dist_auth_client(fd, &bad, DIST_LINK_RING, 1, &me, d, "rank 1", key, &e),
                         MANTA_OK);
    print_message("impostor 1: %s\n", e.msg);
    assert_non_null(strstr(e.msg, "secret"));
    dist_close(&fd);
    /* 2: pretends to be a frame stream straight away. */
    assert_int_equal(dist_connect(&f.rz.peers[1].addr, f.rz.peers[1].port, 0, d, "rank 1", &fd, &e),
                     MANTA_OK);
    unsigned char junk[300];
    memset(junk, 0x41, sizeof junk);
    dist_send_all(fd, junk, sizeof junk, d, "rank 1", NULL);
    /* Wait for the rejection before the real link (the victim handles one connection at a time). */
    char c;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, 1, 1000);
    (void)recv(fd, &c, 1, 0);
    dist_close(&fd);
    /* The real rank 0. */
    fake_links(&f);
    float a[2] = {3.5f, -1.25f};
    ring_frame fr;
    first_frame(&f, &fr); /* chunk 1 = element 1 */
    send_frame(&f, &fr, &a[1], sizeof(float), 0);
    unsigned char head[RING_HEAD_BYTES];
    float got;
    assert_int_equal(dist_recv_all(f.in_fd, head, sizeof head, dist_now() + 2, "rank 1", NULL),
                     MANTA_OK);
    ring_frame in;
    assert_int_equal(ring_frame_unpack(head, &in), 0);
    assert_int_equal(in.offset, 0);
    assert_int_equal(in.length, 4);
    assert_int_equal(dist_recv_all(f.in_fd, &got, 4, dist_now() + 2, "rank 1", NULL), MANTA_OK);
    unsigned char tag[RING_TAG_BYTES];
    ring_frame_tag(f.in_key, 0, head, NULL, 0, tag);
    assert_memory_equal(tag, head + RING_HDR_BYTES, RING_TAG_BYTES);
    float v0 = 1.0f, v1 = 1.25f; /* the victim's inputs (fake_rendezvous) */
    float chunk0 = got + a[0];   /* chunk 0 starts at rank 1 */
    fr.seq = 1;
    fr.step = 1;
    fr.offset = 0;
    send_frame(&f, &fr, &chunk0, sizeof(float), 0);
    assert_int_equal(dist_recv_all(f.in_fd, head, sizeof head, dist_now() + 2, "rank 1", NULL),
                     MANTA_OK);
    assert_int_equal(dist_recv_all(f.in_fd, &got, 4, dist_now() + 2, "rank 1", NULL), MANTA_OK);
    fake_finish(&f);
    print_message("events:\n%s", f.ev.text);
    if (f.v.st != MANTA_OK)
        fail_msg("rank 1: %s", f.v.err.msg);
    assert_true(f.v.x[0] == v0 + a[0]);
    assert_true(f.v.x[1] == a[1] + v1);
    assert_true(got == a[1] + v1);
    assert_non_null(strstr(f.ev.text, "authentication failed"));
    assert_non_null(strstr(f.ev.text, "not a manta handshake"));
}

/* ---- whole ranks killed or stopped (processes) --------------------------------------------------- */

#define KN 3

/* A child rank: allreduces until an error; reports "R" after its first successes, then "E <msg>". */
static void child_rank(int rank, int port, int wfd)
{
    dist_config cfg;
    dist_config_init(&cfg);
    cfg.rank = rank;
    cfg.world_size = KN;
    cfg.master_port = port;
    cfg.timeout_s = DEADLINE;
    snprintf(cfg.job_id, sizeof cfg.job_id, "test-kill-%d", port);
    dist_config_set_secret(&cfg, SECRET, strlen(SECRET), NULL);
    ring_comm *c = NULL;
    manta_err e;
    char line[MANTA_ERR_MSG_MAX + 8];
    if (ring_create(&cfg, &c, &e) != MANTA_OK) {
        snprintf(line, sizeof line, "E %s\n", e.msg);
        (void)!write(wfd, line, strlen(line));
        _exit(0);
    }
    size_t n = 1 << 18;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f;
    for (int it = 0; it < 20000; it++) {
        if (ring_allreduce(c, x, n, RING_AVG, &e) != MANTA_OK) {
            snprintf(line, sizeof line, "E %s\n", e.msg);
            (void)!write(wfd, line, strlen(line));
            _exit(0);
        }
        if (it == 2)
            (void)!write(wfd, "R\n", 2);
    }
    (void)!write(wfd, "D\n", 2);
    _exit(0);
}

/* Read one line from fd before the deadline. */
static int read_line(int fd, char *buf, size_t cap, double deadline)
{
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = (int)((deadline - dist_now()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            break;
        ssize_t r = read(fd, buf + n, 1);
        if (r <= 0)
            break;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 1;
        }
        n++;
    }
    buf[n] = '\0';
    return 0;
}

static void run_fault_processes(int sig)
{
    int port = dist_free_port();
    pid_t pid[KN];
    int rfd[KN];
    for (int r = 0; r < KN; r++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid[r] = fork();
        assert_true(pid[r] >= 0);
        if (pid[r] == 0) {
            close(p[0]);
            child_rank(r, port, p[1]);
        }
        close(p[1]);
        rfd[r] = p[0];
    }
    char line[KN][MANTA_ERR_MSG_MAX + 8];
    int ready = 1;
    for (int r = 0; r < KN; r++)
        if (!read_line(rfd[r], line[r], sizeof line[r], dist_now() + 20) ||
            strcmp(line[r], "R") != 0)
            ready = 0;
    double t_kill = dist_now();
    if (ready) {
        usleep(20000);
        t_kill = dist_now();
        kill(pid[1], sig);
    }
    double took[KN] = {0};
    for (int r = 0; r < KN && ready; r++) {
        if (r == 1)
            continue;
        read_line(rfd[r], line[r], sizeof line[r], t_kill + DEADLINE + 2.0);
        took[r] = dist_now() - t_kill;
    }
    for (int r = 0; r < KN; r++) {
        kill(pid[r], SIGKILL);
        waitpid(pid[r], NULL, 0);
        close(rfd[r]);
    }
    if (!ready)
        fail_msg("the ranks did not start: %s | %s | %s", line[0], line[1], line[2]);
    for (int r = 0; r < KN; r++) {
        if (r == 1)
            continue;
        print_message("rank %d after %.2f s: %s\n", r, took[r], line[r]);
        if (line[r][0] != 'E')
            fail_msg("rank %d did not fail: '%s'", r, line[r]);
        assert_true(took[r] < DEADLINE + 1.0);
        if (sig == SIGKILL || r == 2)
            assert_non_null(strstr(line[r], "rank 1 (127.0.0.1:"));
    }
}

static void test_killed_rank(void **s)
{
    (void)s;
    run_fault_processes(SIGKILL);
}

static void test_stopped_rank(void **s)
{
    (void)s;
    run_fault_processes(SIGSTOP);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_garbage_bytes),
        cmocka_unit_test(test_oversized_length),
        cmocka_unit_test(test_wrong_sequence),
        cmocka_unit_test(test_size_disagreement),
        cmocka_unit_test(test_forged_header_tag),
        cmocka_unit_test(test_forged_payload_full_mac),
        cmocka_unit_test(test_truncated_then_closed),
        cmocka_unit_test(test_truncated_then_silent),
        cmocka_unit_test(test_silent_peer),
        cmocka_unit_test(test_impostors_cannot_inject),
        cmocka_unit_test(test_killed_rank),
        cmocka_unit_test(test_stopped_rank),
    };
    return cmocka_run_group_tests_name("dist faults", tests, NULL, NULL);
}
