/* Ring-allreduce over authenticated TCP links with a communication thread (see ring.h). */
#define _DEFAULT_SOURCE /* MSG_DONTWAIT */

#include "dist/ring.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "dist/auth.h"
#include "dist/frame.h"
#include "dist/net.h"
#include "dist/rendezvous.h"
#include "dist/wire.h"

typedef struct ring_req {
    float *buf;
    size_t n;
    ring_redop op;
    dist_wire wire;
    float *residual;
    struct ring_req *next;
} ring_req;

struct ring_comm {
    dist_config cfg;
    int rank, world, next, prev;
    int pos; /* this rank's position around the ring (MANTA_RING_ORDER; the rank by default) */
    dist_peer *peers;
    int send_fd, recv_fd;
    unsigned char send_key[DIST_KEY_BYTES], recv_key[DIST_KEY_BYTES];
    uint64_t send_seq, recv_seq;
    float *scratch;      /* one received segment during reduce-scatter */
    unsigned char *wbuf; /* encoded payloads of a compressed allreduce (grows as needed) */
    size_t wcap;
    char warning[512];

    pthread_t thread;
    int thread_started;
    /* the sender thread: one per communicator, runs the sending half of every allreduce */
    pthread_t sender;
    int sender_started;
    pthread_mutex_t smu;
    pthread_cond_t scv;
    uint64_t s_gen, s_done;
    int s_stop;
    struct xfer *cur;
    int wake_s[2], wake_r[2]; /* pipes that wake the sender / the receiver out of poll() */
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    ring_req *head, *tail;
    uint64_t issued, completed, failed_from;
    int stop;
    manta_err fail;
    ring_stats stats;
};

/* ---- layout --------------------------------------------------------------------------------------- */

size_t ring_chunk_begin(size_t n, int world, int c)
{
    size_t q = n / (size_t)world, m = n % (size_t)world, cc = (size_t)c;
    return cc * q + (cc < m ? cc : m);
}

size_t ring_segments(size_t n, int world)
{
    size_t cmax = (n + (size_t)world - 1) / (size_t)world;
    size_t bytes = cmax * sizeof(float);
    size_t k = (bytes + RING_SEG_BYTES - 1) / RING_SEG_BYTES;
    if (k < 2 && bytes >= 2 * (size_t)RING_SEG_MIN)
        k = 2;
    return k ? k : 1;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

/* The larger of a (received) and b (this rank's); NaN when either is. */
static float max_nan(float a, float b)
{
    if (a != a || b != b)
        return a != a ? a : b;
    return a > b ? a : b;
}

/* dst[i] = src[i] + dst[i]: the received partial sum first, then this rank's value. */
static void add_into(float *restrict dst, const float *restrict src, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            dst[i + k] = src[i + k] + dst[i + k];
    for (; i < n; i++)
        dst[i] = src[i] + dst[i];
}

static void reduce_into(ring_redop op, float *restrict dst, const float *restrict src, size_t n)
{
    if (op != RING_MAX) {
        add_into(dst, src, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = max_nan(src[i], dst[i]);
}

void ring_reference(const float *const *inputs, int world, size_t n, ring_redop op, float *out)
{
    for (int c = 0; c < world; c++) {
        size_t b = ring_chunk_begin(n, world, c), e = ring_chunk_begin(n, world, c + 1);
        for (size_t i = b; i < e; i++) {
            float acc = inputs[mod(c + 1, world)][i];
            for (int j = 2; j <= world; j++)
                acc = op == RING_MAX ? max_nan(acc, inputs[mod(c + j, world)][i])
                                     : acc + inputs[mod(c + j, world)][i];
            if (op == RING_AVG)
                acc = acc / (float)world;
            out[i] = acc;
        }
    }
}

/* ---- one allreduce on the wire --------------------------------------------------------------------- */

typedef struct side_err {
    manta_err e;
    int peer; /* rank the error is about */
    int link; /* 0: both links usable, 1: the link to the next rank is broken, 2: the one from the previous */
    int got_abort; /* the error is an ABORT from a peer: forward its text unchanged */
    char text[RING_ABORT_MAX + 1];
} side_err;

typedef struct xfer {
    ring_comm *c;
    float *buf;
    size_t n, K;
    ring_redop redop;
    uint64_t op, U;
    /* the encoding (dist/wire.h); with one other than float32 the payloads travel through
     * wb: segment g of elements [off, off + len) at off * element bytes + g * head bytes */
    dist_wire wire;
    unsigned char *wb;
    float *res; /* int8's error feedback (n floats) or NULL */
    /* sending */
    uint64_t su;
    int s_active;
    unsigned char s_head[RING_HEAD_BYTES];
    const unsigned char *s_payload;
    size_t s_plen, s_done;
    /* receiving */
    uint64_t ru;
    int r_payload; /* 0: reading the 64-byte head, 1: the payload */
    int r_abort;
    unsigned char r_head[RING_HEAD_BYTES];
    ring_frame r_f;
    unsigned char *r_dst;
    size_t r_plen, r_done;
    size_t r_reduced; /* payload bytes of a reduce-scatter frame already added into the buffer */
    int r_rs;         /* the frame being received belongs to the reduce-scatter */
    char abort_msg[RING_ABORT_MAX + 1]; /* ABORT payload being received */
    ring_stats st; /* counters of this call (each half writes its own fields) */
    /* between the halves */
    _Atomic uint64_t ru_pub; /* units received and reduced, published by the receiver */
    _Atomic int s_waiting;   /* the sender waits for ru_pub */
    _Atomic int failed_by;   /* 0, or the half that failed first: 1 receiver, 2 sender */
    /* failure, per half */
    side_err rs, ss;
} xfer;

static void peer_name(const ring_comm *c, int r, char *out, size_t cap)
{
    char a[DIST_ADDR_STR];
    dist_addr_port_str(&c->peers[r].addr, c->peers[r].port, a);
    snprintf(out, cap, "rank %d (%s)", r, a);
}

/* Where the ring is: "allreduce op 3 (step 1, frame seq 17)". */
static void where(const xfer *x, int recv_side, char *out, size_t cap)
{
    uint64_t u = recv_side ? x->ru : x->su;
    if (u >= x->U)
        u = x->U ? x->U - 1 : 0;
    snprintf(out, cap, "allreduce op %" PRIu64 " (step %" PRIu64 ", frame seq %" PRIu64 ")", x->op,
             x->K ? u / x->K : 0, recv_side ? x->c->recv_seq : x->c->send_seq);
}

static void wake(int fd)
{
    char b = 1;
    (void)!write(fd, &b, 1);
}

static void drain(int fd)
{
    char b[64];
    while (read(fd, b, sizeof b) > 0) {
    }
}

static manta_status fail(xfer *x, manta_err *err, int peer, int link, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static manta_status fail(xfer *x, manta_err *err, int peer, int link, const char *fmt, ...)
{
    char msg[MANTA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int side = err == &x->rs.e ? 1 : 2;
    side_err *se = side == 1 ? &x->rs : &x->ss;
    se->peer = peer;
    se->link = link;
    manta_err_set(err, MANTA_ERR_IO, "%s", msg);
    int none = 0;
    if (atomic_compare_exchange_strong(&x->failed_by, &none, side))
        wake(side == 1 ? x->c->wake_s[1] : x->c->wake_r[1]);
    return MANTA_ERR_IO;
}

static void unit_range(const xfer *x, uint64_t u, int recv_side, size_t *off, size_t *len,
                       int *step, uint64_t *seg)
{
    const ring_comm *c = x->c;
    int N = c->world, r = c->pos;
    uint64_t s = u / x->K, j = u % x->K;
    int chunk;
    if (s < (uint64_t)(N - 1))
        chunk = mod(r - (int)s - 1 - recv_side, N);
    else
        chunk = mod(r - (int)(s - (uint64_t)(N - 1)) - recv_side, N);
    size_t b = ring_chunk_begin(x->n, N, chunk), e = ring_chunk_begin(x->n, N, chunk + 1),
           L = e - b;
    size_t sb = b + (size_t)((uint64_t)L * j / x->K),
           se = b + (size_t)((uint64_t)L * (j + 1) / x->K);
    *off = sb;
    *len = se - sb;
    *step = (int)s;
    if (seg)
        *seg = (uint64_t)chunk * x->K + j;
}

/* Where the encoded segment @p seg starting at element @p off lies in x->wb. */
static unsigned char *wire_at(const xfer *x, size_t off, uint64_t seg)
{
    return x->wb + off * dist_wire_elem_bytes(x->wire) + seg * dist_wire_head_bytes(x->wire);
}

static void start_send(xfer *x)
{
    ring_comm *c = x->c;
    size_t off, len;
    int step;
    uint64_t seg;
    unit_range(x, x->su, 0, &off, &len, &step, &seg);
    if (x->wire == DIST_WIRE_F32) {
        x->s_payload = (const unsigned char *)(x->buf + off);
        x->s_plen = len * sizeof(float);
    } else {
        /* Reduce-scatter: encode this rank's partial sum (fixed point: the integers are there
         * already). All-gather: forward the encoded segment as it came. */
        unsigned char *p = wire_at(x, off, seg);
        if (step < c->world - 1 && x->wire != DIST_WIRE_FIXED)
            dist_wire_encode(x->wire, x->buf + off, len, p, x->res ? x->res + off : NULL);
        x->s_payload = p;
        x->s_plen = dist_wire_payload(x->wire, len);
    }
    ring_frame f = {.type = RING_FRAME_DATA,
                    .redop = (uint8_t)x->redop,
                    .flags = (uint8_t)x->wire,
                    .seq = c->send_seq,
                    .op = x->op,
                    .count = x->n,
                    .offset = off,
                    .length = (uint32_t)x->s_plen,
                    .step = (uint32_t)step};
    ring_frame_pack(&f, x->s_head);
    ring_frame_tag(c->send_key, c->send_seq, x->s_head,
                   c->cfg.frame_mac == DIST_MAC_FULL ? x->s_payload : NULL, x->s_plen,
                   x->s_head + RING_HDR_BYTES);
    x->s_done = 0;
    x->s_active = 1;
}

/* Push bytes of the current frame. Returns 1 on progress, 0 on EAGAIN, -1 on error (errno set). */
static int push(xfer *x)
{
    struct iovec iov[2];
    int cnt = 0;
    size_t d = x->s_done;
    if (d < RING_HEAD_BYTES) {
        iov[cnt].iov_base = x->s_head + d;
        iov[cnt++].iov_len = RING_HEAD_BYTES - d;
        d = 0;
    } else {
        d -= RING_HEAD_BYTES;
    }
    if (x->s_plen > d) {
        iov[cnt].iov_base = (void *)(uintptr_t)(x->s_payload + d);
        iov[cnt++].iov_len = x->s_plen - d;
    }
    struct msghdr m;
    memset(&m, 0, sizeof m);
    m.msg_iov = iov;
    m.msg_iovlen = (size_t)cnt;
    ssize_t w = sendmsg(x->c->send_fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
        x->s_done += (size_t)w;
        return 1;
    }
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (w == 0)
        errno = EPIPE;
    return -1;
}

static void sanitize(char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            s[i] = '?';
    s[len] = '\0';
}

/* A failing rank also sends an ABORT against the ring, on the link it receives from (seq
 * RING_REVERSE_SEQ), before it closes. When the link to the next rank breaks, read that ABORT if it
 * is there, so the error names the rank that failed first. Returns MANTA_OK when there is none. */
static manta_status reverse_abort(xfer *x, manta_err *err)
{
    ring_comm *c = x->c;
    unsigned char head[RING_HEAD_BYTES];
    char msg[RING_ABORT_MAX + 1];
    if (recv(c->send_fd, head, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
        return MANTA_OK;
    double d = dist_now() + 0.1;
    ring_frame f;
    if (dist_recv_all(c->send_fd, head, sizeof head, d, "next rank", NULL) != MANTA_OK ||
        ring_frame_unpack(head, &f) != 0 || f.type != RING_FRAME_ABORT ||
        f.seq != RING_REVERSE_SEQ || f.length > RING_ABORT_MAX ||
        dist_recv_all(c->send_fd, msg, f.length, d, "next rank", NULL) != MANTA_OK)
        return MANTA_OK;
    unsigned char tag[RING_TAG_BYTES];
    ring_frame_tag(c->send_key, RING_REVERSE_SEQ, head, msg, f.length, tag);
    if (sodium_memcmp(tag, head + RING_HDR_BYTES, RING_TAG_BYTES) != 0)
        return MANTA_OK;
    sanitize(msg, f.length);
    char q[80], w[128];
    peer_name(c, c->next, q, sizeof q);
    where(x, 0, w, sizeof w);
    int origin = (int)f.step < c->world ? (int)f.step : c->next;
    if (origin == c->rank && x->ru < x->U) {
        /* The next rank timed out waiting for this one, but this rank is alive and itself still
         * waits for data from its previous rank: the stall is upstream, name that rank. */
        char p[80];
        peer_name(c, c->prev, p, sizeof p);
        return fail(x, err, c->prev, 1,
                    "%s: %s stalled: no data from it, and %s timed out waiting for this rank", w, p,
                    q);
    }
    snprintf(x->ss.text, sizeof x->ss.text, "%s", msg);
    x->ss.got_abort = 1;
    return fail(x, err, origin, 1, "%s: aborted (ABORT from %s): %s", w, q, msg);
}

static manta_status do_sends(xfer *x, int *progress, manta_err *err)
{
    ring_comm *c = x->c;
    for (;;) {
        if (!x->s_active) {
            if (x->su >= x->U)
                return MANTA_OK;
            /* Step s > 0 forwards what step s-1 received: wait for that segment. */
            if (x->su >= x->K && atomic_load(&x->ru_pub) <= x->su - x->K)
                return MANTA_OK;
            start_send(x);
        }
        int rc = push(x);
        if (rc == 0)
            return MANTA_OK;
        if (rc < 0) {
            char p[80], w[128];
            int e = errno;
            if (reverse_abort(x, err) != MANTA_OK)
                return MANTA_ERR_IO;
            peer_name(c, c->next, p, sizeof p);
            where(x, 0, w, sizeof w);
            return fail(x, err, c->next, 1,
                        "%s: sending to %s failed: %s (the peer closed the connection or died)", w,
                        p, strerror(e));
        }
        *progress = 1;
        if (x->s_done == RING_HEAD_BYTES + x->s_plen) {
            x->s_active = 0;
            x->st.bytes_sent += x->s_plen;
            x->st.frames_sent++;
            c->send_seq++;
            x->su++;
        }
    }
}

/* Check a received DATA/ABORT head against what the schedule expects, before reading its payload. */
static manta_status check_head(xfer *x, manta_err *err)
{
    ring_comm *c = x->c;
    char p[80], w[128];
    peer_name(c, c->prev, p, sizeof p);
    where(x, 1, w, sizeof w);
    ring_frame *f = &x->r_f;
    x->r_rs = 0;
    x->r_reduced = 0;
    if (ring_frame_unpack(x->r_head, f) != 0)
        return fail(
            x, err, c->prev, 0,
            "%s: received bytes from %s that are not a manta frame (bad magic %02x%02x%02x%02x)", w,
            p, x->r_head[0], x->r_head[1], x->r_head[2], x->r_head[3]);
#define EXPECT(field, want)                                                                      \
    if ((uint64_t)(f->field) != (uint64_t)(want))                                                \
        return fail(x, err, c->prev, 0,                                                          \
                    "%s: bad frame from %s: %s is %" PRIu64 ", expected %" PRIu64, w, p, #field, \
                    (uint64_t)(f->field), (uint64_t)(want));
    EXPECT(version, RING_FRAME_VERSION)
    EXPECT(seq, c->recv_seq)
    if (f->type == RING_FRAME_ABORT) {
        if (f->length > RING_ABORT_MAX)
            return fail(x, err, c->prev, 0,
                        "%s: bad ABORT frame from %s: length %" PRIu32 " exceeds %d", w, p,
                        f->length, RING_ABORT_MAX);
        x->r_abort = 1;
        x->r_dst = (unsigned char *)x->abort_msg;
        x->r_plen = f->length;
        return MANTA_OK;
    }
    EXPECT(type, RING_FRAME_DATA)
    if (f->flags != (uint8_t)x->wire)
        return fail(x, err, c->prev, 0,
                    "%s: the ranks disagree on the gradient encoding: %s sent %s, this rank "
                    "uses %s",
                    w, p, dist_wire_name((dist_wire)f->flags), dist_wire_name(x->wire));
    EXPECT(op, x->op)
    if (f->count != x->n)
        return fail(x, err, c->prev, 0,
                    "%s: the ranks disagree on the allreduce size: %s sent count %" PRIu64
                    ", this rank has %zu",
                    w, p, f->count, x->n);
    EXPECT(redop, x->redop)
    size_t off, len;
    int step;
    uint64_t seg;
    unit_range(x, x->ru, 1, &off, &len, &step, &seg);
    const size_t plen = dist_wire_payload(x->wire, len);
    EXPECT(step, step)
    EXPECT(offset, off)
    EXPECT(length, plen)
#undef EXPECT
    int full = c->cfg.frame_mac == DIST_MAC_FULL;
    if (!full) {
        unsigned char tag[RING_TAG_BYTES];
        ring_frame_tag(c->recv_key, c->recv_seq, x->r_head, NULL, 0, tag);
        if (sodium_memcmp(tag, x->r_head + RING_HDR_BYTES, RING_TAG_BYTES) != 0)
            return fail(x, err, c->prev, 0,
                        "%s: frame from %s failed authentication (forged or corrupted header)", w,
                        p);
    }
    x->r_abort = 0;
    x->r_plen = plen;
    x->r_rs = step < c->world - 1;
    x->r_reduced = 0;
    if (x->r_rs)
        x->r_dst = (unsigned char *)c->scratch;
    else
        x->r_dst =
            x->wire == DIST_WIRE_F32 ? (unsigned char *)(x->buf + off) : wire_at(x, off, seg);
    return MANTA_OK;
}

/* The frame's payload has arrived: verify, then reduce or keep it. */
static manta_status finish_frame(xfer *x, manta_err *err)
{
    ring_comm *c = x->c;
    int full = c->cfg.frame_mac == DIST_MAC_FULL || x->r_abort;
    if (full) {
        unsigned char tag[RING_TAG_BYTES];
        ring_frame_tag(c->recv_key, c->recv_seq, x->r_head, x->r_dst, x->r_plen, tag);
        if (sodium_memcmp(tag, x->r_head + RING_HDR_BYTES, RING_TAG_BYTES) != 0) {
            char p[80], w[128];
            peer_name(c, c->prev, p, sizeof p);
            where(x, 1, w, sizeof w);
            return fail(x, err, c->prev, 0,
                        "%s: frame from %s failed authentication (forged or corrupted)", w, p);
        }
    }
    if (x->r_abort) {
        /* Printable characters only: the text goes to the user's terminal. */
        sanitize(x->abort_msg, x->r_plen);
        char p[80], w[128];
        peer_name(c, c->prev, p, sizeof p);
        where(x, 1, w, sizeof w);
        int origin = (int)x->r_f.step < c->world ? (int)x->r_f.step : c->prev;
        snprintf(x->rs.text, sizeof x->rs.text, "%s", x->abort_msg);
        x->rs.got_abort = 1;
        return fail(x, err, origin, 0, "%s: aborted (ABORT from %s): %s", w, p, x->abort_msg);
    }
    size_t off, len;
    int step;
    uint64_t seg;
    unit_range(x, x->ru, 1, &off, &len, &step, &seg);
    const float div = x->redop == RING_AVG ? (float)c->world : 1.0f;
    if (x->wire == DIST_WIRE_F32) {
        if (x->r_rs) {
            float *dst = x->buf + off;
            size_t done = x->r_reduced / sizeof(float);
            reduce_into(x->redop, dst + done, c->scratch + done, len - done);
            if (step == c->world - 2 && x->redop == RING_AVG) {
                for (size_t i = 0; i < len; i++)
                    dst[i] = dst[i] / div;
            }
        }
    } else if (x->wire == DIST_WIRE_FIXED) {
        if (x->r_rs) /* integers: exact in any order; decoded after the all-gather */
            dist_fixed_add((int32_t *)(void *)wire_at(x, off, seg), (const int32_t *)c->scratch,
                           len);
    } else if (x->r_rs) {
        dist_wire_decode(x->wire, (const unsigned char *)c->scratch, len, x->buf + off, 1, 1.0f);
        if (step == c->world - 2) {
            /* This rank's chunk is summed: encode it for the all-gather and keep what every
             * other rank will decode, so all ranks hold the same bits. */
            unsigned char *p = wire_at(x, off, seg);
            dist_wire_encode(x->wire, x->buf + off, len, p, x->res ? x->res + off : NULL);
            dist_wire_decode(x->wire, p, len, x->buf + off, 0, div);
        }
    } else {
        dist_wire_decode(x->wire, wire_at(x, off, seg), len, x->buf + off, 0, div);
    }
    x->st.bytes_recv += x->r_plen;
    x->st.frames_recv++;
    c->recv_seq++;
    x->ru++;
    atomic_store(&x->ru_pub, x->ru);
    if (atomic_load(&x->s_waiting))
        wake(c->wake_s[1]);
    return MANTA_OK;
}

static manta_status do_recvs(xfer *x, int *progress, manta_err *err)
{
    ring_comm *c = x->c;
    while (x->ru < x->U || x->r_payload || x->r_abort) {
        unsigned char *dst;
        size_t want;
        if (!x->r_payload) {
            dst = x->r_head + x->r_done;
            want = RING_HEAD_BYTES - x->r_done;
        } else {
            dst = x->r_dst + x->r_done;
            want = x->r_plen - x->r_done;
        }
        ssize_t r = want ? recv(c->recv_fd, dst, want, MSG_DONTWAIT) : 0;
        if (want && r == 0) {
            char p[80], w[128];
            peer_name(c, c->prev, p, sizeof p);
            where(x, 1, w, sizeof w);
            return fail(x, err, c->prev, 2, "%s: %s closed the connection%s", w, p,
                        x->r_done || x->r_payload ? " in the middle of a frame" : "");
        }
        if (want && r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return MANTA_OK;
            char p[80], w[128];
            int e = errno;
            peer_name(c, c->prev, p, sizeof p);
            where(x, 1, w, sizeof w);
            return fail(x, err, c->prev, 2, "%s: receiving from %s failed: %s", w, p, strerror(e));
        }
        if (r > 0) {
            x->r_done += (size_t)r;
            *progress = 1;
            /* Header tags: add what has arrived while it is still in cache. With full tags, nothing
             * is added before the tag has been checked (finish_frame). */
            if (x->r_payload && x->r_rs && c->cfg.frame_mac != DIST_MAC_FULL &&
                x->wire == DIST_WIRE_F32) {
                size_t upto = x->r_done & ~(size_t)(64 * 1024 - 1);
                if (upto > x->r_reduced) {
                    size_t a = x->r_reduced / sizeof(float), b = upto / sizeof(float);
                    size_t off = (size_t)(x->r_f.offset);
                    reduce_into(x->redop, x->buf + off + a, c->scratch + a, b - a);
                    x->r_reduced = upto;
                }
            }
        }
        if (!x->r_payload) {
            if (x->r_done < RING_HEAD_BYTES)
                continue;
            manta_status st = check_head(x, err);
            if (st != MANTA_OK)
                return st;
            x->r_payload = 1;
            x->r_done = 0;
        }
        if (x->r_done == x->r_plen) {
            manta_status st = finish_frame(x, err);
            x->r_payload = 0;
            x->r_done = 0;
            if (st != MANTA_OK)
                return st;
        }
    }
    return MANTA_OK;
}

/* An ABORT frame of @p x naming the failed rank @p origin, with @p msg (cut to RING_ABORT_MAX
 * bytes), tagged with @p key and @p seq, sent on @p fd to @p peer until @p deadline; a failure
 * to send is not reported (the ring is failing already). */
static void send_abort(const xfer *x, int origin, const char *msg, const unsigned char *key,
                       uint64_t seq, int fd, double deadline, const char *peer)
{
    unsigned char frame[RING_HEAD_BYTES + RING_ABORT_MAX];
    size_t len = strlen(msg);
    if (len > RING_ABORT_MAX)
        len = RING_ABORT_MAX;
    ring_frame f = {.type = RING_FRAME_ABORT,
                    .redop = (uint8_t)x->redop,
                    .seq = seq,
                    .op = x->op,
                    .count = x->n,
                    .length = (uint32_t)len,
                    .step = (uint32_t)origin};
    ring_frame_pack(&f, frame);
    memcpy(frame + RING_HEAD_BYTES, msg, len);
    ring_frame_tag(key, seq, frame, frame + RING_HEAD_BYTES, len, frame + RING_HDR_BYTES);
    (void)dist_send_all(fd, frame, RING_HEAD_BYTES + len, deadline, peer, NULL);
}

/* After a failure: finish the frame being sent (briefly) and send an ABORT naming the failed rank. */
static void forward_abort(xfer *x, int origin, const char *msg)
{
    ring_comm *c = x->c;
    double budget = c->cfg.timeout_s / 2 < 1.0 ? c->cfg.timeout_s / 2 : 1.0;
    double deadline = dist_now() + budget;
    if (x->s_active && x->s_done > 0) {
        while (x->s_done < RING_HEAD_BYTES + x->s_plen) {
            int rc = push(x);
            if (rc < 0)
                return;
            if (rc == 0) {
                struct pollfd p = {.fd = c->send_fd, .events = POLLOUT};
                double left = deadline - dist_now();
                if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0)
                    return;
            }
        }
        c->send_seq++;
    }
    send_abort(x, origin, msg, c->send_key, c->send_seq, c->send_fd, deadline, "next rank");
    c->send_seq++;
}

static void send_reverse_abort(xfer *x, int origin, const char *msg)
{
    ring_comm *c = x->c;
    double budget = c->cfg.timeout_s / 2 < 0.5 ? c->cfg.timeout_s / 2 : 0.5;
    send_abort(x, origin, msg, c->recv_key, RING_REVERSE_SEQ, c->recv_fd, dist_now() + budget,
               "previous rank");
}

/* The sending half: frames go out as the schedule and the received segments allow. */
static manta_status send_loop(xfer *x)
{
    ring_comm *c = x->c;
    manta_err *err = &x->ss.e;
    double timeout = c->cfg.timeout_s, last = dist_now();
    for (;;) {
        if (atomic_load(&x->failed_by))
            return MANTA_ERR_IO;
        int progress = 0;
        manta_status st = do_sends(x, &progress, err);
        if (st != MANTA_OK)
            return st;
        if (x->su >= x->U && !x->s_active)
            return MANTA_OK;
        double now = dist_now();
        if (progress) {
            last = now;
            continue;
        }
        /* Blocked on the schedule (the receiver has its own deadline) or on the socket. */
        int on_socket = x->s_active;
        if (!on_socket) {
            atomic_store(&x->s_waiting, 1);
            if (atomic_load(&x->ru_pub) > x->su - x->K || atomic_load(&x->failed_by)) {
                atomic_store(&x->s_waiting, 0);
                continue;
            }
            last = now;
        }
        double left = last + timeout - now;
        if (on_socket && left <= 0) {
            char q[80], w[128];
            peer_name(c, c->next, q, sizeof q);
            where(x, 0, w, sizeof w);
            return fail(x, err, c->next, 1,
                        "%s: timed out after %.3g s sending to %s (it stopped reading)", w, timeout,
                        q);
        }
        /* The send socket never carries data towards us: readable means closed, reset or an ABORT. */
        struct pollfd pf[2] = {
            {.fd = c->send_fd, .events = (short)(POLLIN | (on_socket ? POLLOUT : 0))},
            {.fd = c->wake_s[0], .events = POLLIN}};
        int rc = poll(pf, 2, (int)(left * 1000) + 1);
        atomic_store(&x->s_waiting, 0);
        if (rc < 0 && errno != EINTR)
            return fail(x, err, c->next, 0, "allreduce op %" PRIu64 ": poll: %s", x->op,
                        strerror(errno));
        if (rc > 0 && pf[1].revents)
            drain(c->wake_s[0]);
        if (rc > 0 && (pf[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            char tmp;
            ssize_t r = recv(c->send_fd, &tmp, 1, MSG_DONTWAIT | MSG_PEEK);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                r > 0) {
                char q[80], w[128];
                if ((st = reverse_abort(x, err)) != MANTA_OK)
                    return st;
                peer_name(c, c->next, q, sizeof q);
                where(x, 0, w, sizeof w);
                return fail(x, err, c->next, 1, "%s: %s %s", w, q,
                            r > 0 ? "sent unexpected data on the outgoing link"
                                  : "closed the connection (died?)");
            }
        }
    }
}

/* The receiving half: frames come in, are checked, reduced or stored. */
static manta_status recv_loop(xfer *x)
{
    ring_comm *c = x->c;
    manta_err *err = &x->rs.e;
    double timeout = c->cfg.timeout_s, last = dist_now();
    while (x->ru < x->U) {
        if (atomic_load(&x->failed_by))
            return MANTA_ERR_IO;
        int progress = 0;
        manta_status st = do_recvs(x, &progress, err);
        if (st != MANTA_OK)
            return st;
        if (x->ru >= x->U)
            break;
        double now = dist_now();
        if (progress) {
            last = now;
            continue;
        }
        double left = last + timeout - now;
        if (left <= 0) {
            char p[80], w[128];
            peer_name(c, c->prev, p, sizeof p);
            where(x, 1, w, sizeof w);
            return fail(x, err, c->prev, 0, "%s: timed out after %.3g s waiting for data from %s",
                        w, timeout, p);
        }
        struct pollfd pf[2] = {{.fd = c->recv_fd, .events = POLLIN},
                               {.fd = c->wake_r[0], .events = POLLIN}};
        int rc = poll(pf, 2, (int)(left * 1000) + 1);
        if (rc < 0 && errno != EINTR)
            return fail(x, err, c->prev, 0, "allreduce op %" PRIu64 ": poll: %s", x->op,
                        strerror(errno));
        if (rc > 0 && pf[1].revents)
            drain(c->wake_r[0]);
    }
    return MANTA_OK;
}

static void *sender_main(void *arg)
{
    ring_comm *c = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&c->smu);
    for (;;) {
        while (c->s_gen == seen && !c->s_stop)
            pthread_cond_wait(&c->scv, &c->smu);
        if (c->s_stop)
            break;
        seen = c->s_gen;
        xfer *x = c->cur;
        pthread_mutex_unlock(&c->smu);
        (void)send_loop(x);
        pthread_mutex_lock(&c->smu);
        c->s_done = seen;
        pthread_cond_broadcast(&c->scv);
    }
    pthread_mutex_unlock(&c->smu);
    return NULL;
}

/* One pass over the ring: the sender thread sends while this thread receives and reduces. */
static manta_status run_xfer(ring_comm *c, uint64_t op, float *buf, size_t n, ring_redop redop,
                             dist_wire wire, float *res, ring_stats *acc, manta_err *err)
{
    xfer *x = calloc(1, sizeof *x);
    if (!x)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "allreduce op %" PRIu64 ": out of memory",
                             op);
    x->c = c;
    x->buf = buf;
    x->n = n;
    x->redop = redop;
    x->op = op;
    x->wire = wire;
    x->wb = c->wbuf;
    x->res = wire == DIST_WIRE_INT8 ? res : NULL;
    x->K = ring_segments(n, c->world);
    x->U = 2 * (uint64_t)(c->world - 1) * x->K;
    atomic_init(&x->ru_pub, 0);
    atomic_init(&x->s_waiting, 0);
    atomic_init(&x->failed_by, 0);
    drain(c->wake_s[0]);
    drain(c->wake_r[0]);
    pthread_mutex_lock(&c->smu);
    c->cur = x;
    c->s_gen++;
    pthread_cond_broadcast(&c->scv);
    pthread_mutex_unlock(&c->smu);
    (void)recv_loop(x);
    pthread_mutex_lock(&c->smu);
    while (c->s_done != c->s_gen)
        pthread_cond_wait(&c->scv, &c->smu);
    c->cur = NULL;
    pthread_mutex_unlock(&c->smu);
    manta_status st = MANTA_OK;
    int by = atomic_load(&x->failed_by);
    if (by) {
        side_err *se = by == 1 ? &x->rs : &x->ss;
        st = manta_err_set(err, MANTA_ERR_IO, "%s", se->e.msg);
        char text[RING_ABORT_MAX + 1], me[80];
        if (se->got_abort) {
            snprintf(text, sizeof text, "%s", se->text);
        } else {
            peer_name(c, c->rank, me, sizeof me);
            snprintf(text, sizeof text, "%.60s detected: %.400s", me, se->e.msg);
        }
        /* Tell both neighbours, over the links that still work, then close. */
        if (se->link != 1)
            forward_abort(x, se->peer, text);
        if (se->link != 2)
            send_reverse_abort(x, se->peer, text);
        shutdown(c->send_fd, SHUT_RDWR);
        shutdown(c->recv_fd, SHUT_RDWR);
    }
    acc->bytes_sent += x->st.bytes_sent;
    acc->bytes_recv += x->st.bytes_recv;
    acc->frames_sent += x->st.frames_sent;
    acc->frames_recv += x->st.frames_recv;
    free(x);
    return st;
}

/* One allreduce of request @p q: float32 in one pass; compressed encodings through the wire
 * buffer; fixed point after an allreduce-max that agrees on the scale. */
static manta_status run_op(ring_comm *c, uint64_t op, const ring_req *q, ring_stats *acc,
                           manta_err *err)
{
    if (q->wire == DIST_WIRE_F32)
        return run_xfer(c, op, q->buf, q->n, q->op, DIST_WIRE_F32, NULL, acc, err);
    const size_t K = ring_segments(q->n, c->world);
    const size_t need = q->n * dist_wire_elem_bytes(q->wire) +
                        (size_t)c->world * K * dist_wire_head_bytes(q->wire) + 16;
    if (need > c->wcap) {
        free(c->wbuf);
        c->wcap = 0;
        c->wbuf = malloc(need);
        if (!c->wbuf)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                 "allreduce op %" PRIu64 ": out of memory for %zu encoded bytes",
                                 op, need);
        c->wcap = need;
    }
    if (q->wire == DIST_WIRE_INT8 && q->residual) {
        /* error feedback: what the earlier allreduces rounded away is sent now */
        for (size_t i = 0; i < q->n; i++) {
            q->buf[i] += q->residual[i];
            q->residual[i] = 0.0f;
        }
    }
    int k = 0;
    if (q->wire == DIST_WIRE_FIXED) {
        float *m = malloc((size_t)c->world * sizeof *m);
        if (!m)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                 "allreduce op %" PRIu64 ": out of memory", op);
        const float mine = dist_maxabs(q->buf, q->n);
        for (int r = 0; r < c->world; r++)
            m[r] = mine;
        manta_status st =
            run_xfer(c, op, m, (size_t)c->world, RING_MAX, DIST_WIRE_F32, NULL, acc, err);
        const float M = m[0];
        free(m);
        if (st != MANTA_OK)
            return st;
        if (!isfinite(M)) { /* a rank has an infinite or NaN value: so has the sum */
            for (size_t i = 0; i < q->n; i++)
                q->buf[i] = NAN;
            return MANTA_OK;
        }
        k = dist_fixed_shift(M, c->world);
        dist_fixed_encode(q->buf, q->n, k, (int32_t *)(void *)c->wbuf);
    }
    manta_status st = run_xfer(c, op, q->buf, q->n, q->op, q->wire, q->residual, acc, err);
    if (st == MANTA_OK && q->wire == DIST_WIRE_FIXED)
        dist_fixed_decode((const int32_t *)(void *)c->wbuf, q->n, k,
                          q->op == RING_AVG ? (double)c->world : 1.0, q->buf);
    return st;
}

/* ---- thread and queue ---------------------------------------------------------------------------- */

static void *comm_main(void *arg)
{
    ring_comm *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->head && !c->stop)
            pthread_cond_wait(&c->work, &c->mu);
        if (c->stop)
            break;
        ring_req *q = c->head;
        c->head = q->next;
        if (!c->head)
            c->tail = NULL;
        uint64_t op = c->completed;
        int broken = c->failed_from != UINT64_MAX;
        pthread_mutex_unlock(&c->mu);
        manta_err e;
        manta_err_clear(&e);
        ring_stats add = {0};
        manta_status st = broken ? MANTA_OK : run_op(c, op, q, &add, &e);
        free(q);
        pthread_mutex_lock(&c->mu);
        if (st != MANTA_OK) {
            c->failed_from = op;
            c->fail = e;
            c->fail.code = st;
        } else if (!broken) {
            c->stats.ops++;
        }
        c->stats.bytes_sent += add.bytes_sent;
        c->stats.bytes_recv += add.bytes_recv;
        c->stats.frames_sent += add.frames_sent;
        c->stats.frames_recv += add.frames_recv;
        c->completed++;
        pthread_cond_broadcast(&c->done);
    }
    /* Cancel what was queued but not started. */
    while (c->head) {
        ring_req *q = c->head;
        c->head = q->next;
        free(q);
        if (c->failed_from == UINT64_MAX) {
            c->failed_from = c->completed;
            manta_err_set(&c->fail, MANTA_ERR_IO,
                          "allreduce op %" PRIu64 " cancelled: communicator destroyed",
                          c->completed);
        }
        c->completed++;
    }
    c->tail = NULL;
    pthread_cond_broadcast(&c->done);
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

manta_status ring_parse_order(const char *text, int world, int *order, manta_err *err)
{
    for (int p = 0; p < world; p++)
        order[p] = p;
    if (!text || !text[0])
        return MANTA_OK;
    unsigned char *seen = calloc((size_t)world, 1);
    if (!seen)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "ring order: out of memory");
    const char *s = text;
    int n = 0;
    manta_status st = MANTA_OK;
    while (st == MANTA_OK && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v >= world || n >= world || seen[v] ||
            (*end && (*end != ',' || !end[1])))
            st = MANTA_ERR_INVALID_ARG;
        else {
            seen[v] = 1;
            order[n++] = (int)v;
            s = *end ? end + 1 : end;
        }
    }
    free(seen);
    if (st != MANTA_OK || n != world) {
        for (int p = 0; p < world; p++)
            order[p] = p;
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "MANTA_RING_ORDER '%s': expected every rank 0..%d once, separated by "
                             "commas",
                             text, world - 1);
    }
    return MANTA_OK;
}

int ring_rank(const ring_comm *c) { return c->rank; }
int ring_size(const ring_comm *c) { return c->world; }
const char *ring_warning(const ring_comm *c) { return c->warning[0] ? c->warning : NULL; }

void ring_get_stats(ring_comm *c, ring_stats *s)
{
    pthread_mutex_lock(&c->mu);
    *s = c->stats;
    pthread_mutex_unlock(&c->mu);
}

static manta_status failed(ring_comm *c, manta_err *err)
{
    if (err)
        *err = c->fail;
    return c->fail.code != MANTA_OK ? c->fail.code : MANTA_ERR_IO;
}

dist_wire ring_wire(const ring_comm *c) { return c->cfg.wire; }

manta_status ring_allreduce_async(ring_comm *c, float *buf, size_t n, ring_redop op, ring_handle *h,
                                  manta_err *err)
{
    return ring_allreduce_wire_async(c, buf, n, op, DIST_WIRE_F32, NULL, h, err);
}

manta_status ring_allreduce_wire_async(ring_comm *c, float *buf, size_t n, ring_redop op,
                                       dist_wire wire, float *residual, ring_handle *h,
                                       manta_err *err)
{
    if (!buf && n)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "allreduce: NULL buffer for %zu elements",
                             n);
    if (op != RING_SUM && op != RING_AVG && op != RING_MAX)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "allreduce: unknown reduction %d",
                             (int)op);
    if ((unsigned)wire >= DIST_WIRE_COUNT || (op == RING_MAX && wire != DIST_WIRE_F32))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "allreduce: encoding %d with reduction %d (max needs float32)",
                             (int)wire, (int)op);
    if (n > ((size_t)1 << 40))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "allreduce: %zu elements exceed the 2^40 limit", n);
    pthread_mutex_lock(&c->mu);
    if (c->failed_from != UINT64_MAX) {
        manta_status st = failed(c, err);
        pthread_mutex_unlock(&c->mu);
        return st;
    }
    if (c->world == 1) { /* nothing to exchange: the sum of one input is the input */
        *h = c->issued++;
        c->completed++;
        c->stats.ops++;
        pthread_mutex_unlock(&c->mu);
        return MANTA_OK;
    }
    ring_req *q = malloc(sizeof *q);
    if (!q) {
        pthread_mutex_unlock(&c->mu);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "allreduce: out of memory");
    }
    q->buf = buf;
    q->n = n;
    q->op = op;
    q->wire = wire;
    q->residual = residual;
    q->next = NULL;
    if (c->tail)
        c->tail->next = q;
    else
        c->head = q;
    c->tail = q;
    *h = c->issued++;
    pthread_cond_signal(&c->work);
    pthread_mutex_unlock(&c->mu);
    return MANTA_OK;
}

manta_status ring_wait(ring_comm *c, ring_handle h, manta_err *err)
{
    pthread_mutex_lock(&c->mu);
    if (h >= c->issued) {
        pthread_mutex_unlock(&c->mu);
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "ring_wait: handle %" PRIu64 " was never issued", h);
    }
    while (c->completed <= h)
        pthread_cond_wait(&c->done, &c->mu);
    manta_status st = h >= c->failed_from ? failed(c, err) : MANTA_OK;
    pthread_mutex_unlock(&c->mu);
    return st;
}

int ring_failed(ring_comm *c)
{
    if (c->world == 1)
        return 0;
    pthread_mutex_lock(&c->mu);
    int f = c->failed_from != UINT64_MAX;
    pthread_mutex_unlock(&c->mu);
    return f;
}

manta_status ring_allreduce(ring_comm *c, float *buf, size_t n, ring_redop op, manta_err *err)
{
    ring_handle h;
    manta_status st = ring_allreduce_async(c, buf, n, op, &h, err);
    return st != MANTA_OK ? st : ring_wait(c, h, err);
}

/* ---- setup ---------------------------------------------------------------------------------------- */

static manta_status connect_next(ring_comm *c, double deadline, manta_err *err)
{
    char what[96];
    peer_name(c, c->next, what, sizeof what);
    manta_status st = dist_connect(&c->peers[c->next].addr, c->peers[c->next].port, c->cfg.sock_buf,
                                   deadline, what, &c->send_fd, err);
    if (st != MANTA_OK)
        return st;
    dist_hello me = {.rank = c->rank};
    return dist_auth_client(c->send_fd, &c->cfg, DIST_LINK_RING, c->next, &me, deadline, what,
                            c->send_key, err);
}

static manta_status accept_prev(ring_comm *c, int lfd, double deadline, manta_err *err)
{
    int rejected = 0;
    char last[MANTA_ERR_MSG_MAX / 2] = "";
    for (;;) {
        int fd = -1;
        dist_addr pa;
        uint16_t pp;
        manta_err e2;
        if (dist_accept(lfd, deadline, &fd, &pa, &pp, &e2) != MANTA_OK) {
            char p[96];
            peer_name(c, c->prev, p, sizeof p);
            return manta_err_set(
                err, MANTA_ERR_IO, "ring setup: %s did not connect within %.3g s%s%s%s", p,
                c->cfg.timeout_s, rejected ? "; rejected connections, the last: " : "", last, "");
        }
        char pas[DIST_ADDR_STR], what[96];
        dist_addr_port_str(&pa, pp, pas);
        snprintf(what, sizeof what, "ring connection from %s", pas);
        double hs = dist_now() + (c->cfg.timeout_s < 10.0 ? c->cfg.timeout_s : 10.0);
        dist_hello h;
        if (dist_auth_server(fd, &c->cfg, DIST_LINK_RING, c->prev, NULL,
                             hs < deadline ? hs : deadline, what, &h, c->recv_key, NULL,
                             &e2) == MANTA_OK) {
            c->recv_fd = fd;
            return MANTA_OK;
        }
        rejected++;
        snprintf(last, sizeof last, "%.500s", e2.msg);
        if (c->cfg.event) {
            char line[MANTA_ERR_MSG_MAX];
            snprintf(line, sizeof line, "ring: %.1000s", e2.msg);
            c->cfg.event(c->cfg.event_ctx, line);
        }
        dist_close(&fd);
    }
}

/* A communicator with nothing connected yet. */
static ring_comm *ring_alloc(const dist_config *cfg)
{
    ring_comm *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->cfg = *cfg;
    c->send_fd = c->recv_fd = -1;
    c->wake_s[0] = c->wake_s[1] = c->wake_r[0] = c->wake_r[1] = -1;
    c->failed_from = UINT64_MAX;
    pthread_mutex_init(&c->smu, NULL);
    pthread_cond_init(&c->scv, NULL);
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->work, NULL);
    pthread_cond_init(&c->done, NULL);
    return c;
}

static manta_status ring_connect(ring_comm *c, dist_rdzv *rzp, ring_comm **out, manta_err *err);

manta_status ring_create(const dist_config *cfg, ring_comm **out, manta_err *err)
{
    *out = NULL;
    ring_comm *c = ring_alloc(cfg);
    if (!c)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "ring: out of memory");
    dist_rdzv rz;
    manta_status st = dist_rendezvous(&c->cfg, &rz, err);
    if (st != MANTA_OK) {
        ring_destroy(c);
        return st;
    }
    return ring_connect(c, &rz, out, err);
}

manta_status ring_create_from(const dist_config *cfg, dist_rdzv *rz, ring_comm **out,
                              manta_err *err)
{
    *out = NULL;
    ring_comm *c = ring_alloc(cfg);
    if (!c) {
        dist_rdzv_free(rz);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "ring: out of memory");
    }
    c->cfg.rank = rz->rank;
    c->cfg.world_size = rz->world;
    c->cfg.ring_order[0] = 0; /* the ranks stand in the order of the table */
    return ring_connect(c, rz, out, err);
}

/* Connect @p c around the ring of the rendezvous result @p rzp (consumed) and start its
 * threads; frees @p c on failure. */
static manta_status ring_connect(ring_comm *c, dist_rdzv *rzp, ring_comm **out, manta_err *err)
{
    dist_rdzv rz = *rzp;
    rzp->peers = NULL;
    rzp->ring_fd = -1;
    manta_status st = MANTA_OK;
    c->rank = rz.rank;
    c->world = rz.world;
    c->peers = rz.peers;
    rz.peers = NULL;
    snprintf(c->warning, sizeof c->warning, "%s", rz.warning);
    if (c->world == 1) {
        dist_rdzv_free(&rz);
        *out = c;
        return MANTA_OK;
    }
    int *order = malloc((size_t)c->world * sizeof *order);
    if (!order) {
        dist_rdzv_free(&rz);
        ring_destroy(c);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "ring: out of memory");
    }
    st = ring_parse_order(c->cfg.ring_order, c->world, order, err);
    for (int p = 0; p < c->world; p++)
        if (order[p] == c->rank)
            c->pos = p;
    c->next = order[(c->pos + 1) % c->world];
    c->prev = order[(c->pos + c->world - 1) % c->world];
    free(order);
    if (st != MANTA_OK) {
        dist_rdzv_free(&rz);
        ring_destroy(c);
        return st;
    }
    double deadline = dist_now() + c->cfg.timeout_s;
    /* Position 0 connects first, every other rank accepts first: the handshakes run once
     * around the ring. */
    if (c->pos == 0) {
        st = connect_next(c, deadline, err);
        if (st == MANTA_OK)
            st = accept_prev(c, rz.ring_fd, deadline, err);
    } else {
        st = accept_prev(c, rz.ring_fd, deadline, err);
        if (st == MANTA_OK)
            st = connect_next(c, deadline, err);
    }
    dist_rdzv_free(&rz);
    if (st == MANTA_OK) {
        c->scratch = malloc(RING_SEG_BYTES);
        if (!c->scratch)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY,
                               "ring: out of memory for the segment buffer");
    }
    if (st == MANTA_OK) {
        if (pipe(c->wake_s) != 0 || pipe(c->wake_r) != 0)
            st = manta_err_set(err, MANTA_ERR_IO, "ring: pipe: %s", strerror(errno));
        for (int i = 0; i < 2 && st == MANTA_OK; i++) {
            int fds[2] = {c->wake_s[i], c->wake_r[i]};
            for (int k = 0; k < 2; k++) {
                fcntl(fds[k], F_SETFL, fcntl(fds[k], F_GETFL, 0) | O_NONBLOCK);
                fcntl(fds[k], F_SETFD, FD_CLOEXEC);
            }
        }
    }
    if (st == MANTA_OK) {
        if (pthread_create(&c->sender, NULL, sender_main, c) != 0)
            st = manta_err_set(err, MANTA_ERR_INTERNAL, "ring: cannot start the sender thread");
        else
            c->sender_started = 1;
    }
    if (st == MANTA_OK) {
        if (pthread_create(&c->thread, NULL, comm_main, c) != 0)
            st = manta_err_set(err, MANTA_ERR_INTERNAL,
                               "ring: cannot start the communication thread");
        else
            c->thread_started = 1;
    }
    if (st != MANTA_OK) {
        ring_destroy(c);
        return st;
    }
    *out = c;
    return MANTA_OK;
}

void ring_destroy(ring_comm *c)
{
    if (!c)
        return;
    if (c->thread_started) {
        pthread_mutex_lock(&c->mu);
        c->stop = 1;
        pthread_cond_broadcast(&c->work);
        pthread_mutex_unlock(&c->mu);
        pthread_join(c->thread, NULL);
    }
    if (c->sender_started) {
        pthread_mutex_lock(&c->smu);
        c->s_stop = 1;
        pthread_cond_broadcast(&c->scv);
        pthread_mutex_unlock(&c->smu);
        pthread_join(c->sender, NULL);
    }
    for (int i = 0; i < 2; i++) {
        dist_close(&c->wake_s[i]);
        dist_close(&c->wake_r[i]);
    }
    pthread_mutex_destroy(&c->smu);
    pthread_cond_destroy(&c->scv);
    while (c->head) {
        ring_req *q = c->head;
        c->head = q->next;
        free(q);
    }
    dist_close(&c->send_fd);
    dist_close(&c->recv_fd);
    sodium_memzero(c->send_key, sizeof c->send_key);
    sodium_memzero(c->recv_key, sizeof c->recv_key);
    sodium_memzero(c->cfg.key, sizeof c->cfg.key);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->work);
    pthread_cond_destroy(&c->done);
    free(c->scratch);
    free(c->wbuf);
    free(c->peers);
    free(c);
}
