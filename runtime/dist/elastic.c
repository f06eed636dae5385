/* Elastic membership: the rendezvous service and the member's JOIN (see elastic.h). */
#define _DEFAULT_SOURCE

#include "dist/elastic.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/le.h"
#include "dist/auth.h"
#include "dist/net.h"

#define MSG_MAGIC "MNTE"
#define JOIN_BYTES 256
#define HEAD_BYTES 256
#define ENTRY 20
#define MSG_VERSION 2
#define MAC 32
#define T_JOIN 1
/* The settle time of a round when all ranks of the ring but one came back (seconds). */
#define ELASTIC_SETTLE_ONE 0.2

/* ---- messages ------------------------------------------------------------------------------- */

static void mac(unsigned char out[MAC], char label, const unsigned char *body, size_t n,
                const unsigned char *key)
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, DIST_KEY_BYTES);
    crypto_auth_hmacsha256_update(&st, (const unsigned char *)&label, 1);
    crypto_auth_hmacsha256_update(&st, body, n);
    crypto_auth_hmacsha256_final(&st, out);
}

static int mac_ok(const unsigned char *tag, char label, const unsigned char *body, size_t n,
                  const unsigned char *key)
{
    unsigned char m[MAC];
    mac(m, label, body, n, key);
    return sodium_memcmp(m, tag, MAC) == 0;
}

static void head(unsigned char *b, int type)
{
    memcpy(b, MSG_MAGIC, 4);
    b[4] = MSG_VERSION;
    b[5] = (unsigned char)type;
}

static void put_ref(unsigned char *step, unsigned char *size, unsigned char *hash,
                    const dist_state_ref *r)
{
    manta_le_put64(step, (uint64_t)r->step);
    manta_le_put64(size, r->bytes);
    memcpy(hash, r->hash, DIST_HASH_BYTES);
}

static void join_encode(const dist_elastic_join_req *q, const dist_addr *addr, uint16_t port,
                        unsigned char *b)
{
    memset(b, 0, JOIN_BYTES);
    head(b, T_JOIN);
    manta_le_put64(b + 8, q->id);
    manta_le_put64(b + 16, q->generation);
    manta_le_put32(b + 24, (uint32_t)q->former_rank);
    b[28] = (unsigned char)q->wire;
    manta_le_put16(b + 32, port);
    put_ref(b + 40, b + 56, b + 72, &q->state[0]);
    put_ref(b + 48, b + 64, b + 104, &q->state[1]);
    memcpy(b + 136, q->spec, DIST_HASH_BYTES);
    memcpy(b + 168, q->version, DIST_VERSION_MAX - 1);
    memcpy(b + 200, addr->b, 16);
}

static int join_decode(const unsigned char *b, dist_elastic_join_req *q, dist_addr *addr,
                       uint16_t *port)
{
    if (memcmp(b, MSG_MAGIC, 4) != 0 || b[4] != MSG_VERSION || b[5] != T_JOIN ||
        b[28] >= DIST_WIRE_COUNT)
        return 0;
    memset(q, 0, sizeof *q);
    q->id = manta_le_get64(b + 8);
    q->generation = manta_le_get64(b + 16);
    q->former_rank = (int32_t)manta_le_get32(b + 24);
    q->wire = (dist_wire)b[28];
    memcpy(addr->b, b + 200, 16);
    *port = manta_le_get16(b + 32);
    for (int k = 0; k < 2; k++) {
        q->state[k].step = (int64_t)manta_le_get64(b + 40 + 8 * k);
        q->state[k].bytes = manta_le_get64(b + 56 + 8 * k);
        memcpy(q->state[k].hash, b + 72 + 32 * k, DIST_HASH_BYTES);
        if (q->state[k].step < -1)
            return 0;
    }
    memcpy(q->spec, b + 136, DIST_HASH_BYTES);
    memcpy(q->version, b + 168, DIST_VERSION_MAX - 1);
    for (int i = 0; i < DIST_VERSION_MAX - 1 && q->version[i]; i++)
        if (q->version[i] < 32 || q->version[i] > 126)
            q->version[i] = '?';
    return q->id != 0 && *port != 0 && q->former_rank >= -1 && q->former_rank < DIST_MAX_WORLD;
}

/* ---- member side ----------------------------------------------------------------------------- */

void dist_elastic_assign_free(dist_elastic_assign *a)
{
    if (!a)
        return;
    dist_rdzv_free(&a->rz);
    dist_close(&a->watch_fd);
    sodium_memzero(a->watch_key, sizeof a->watch_key);
}

/* The address this rank's ring listener binds to (as dist_rendezvous() chooses it): the
 * configured one, that of the interface in the service's family, else the local address of
 * the connection to the service. */
static manta_status ring_address(const dist_config *cfg, int fd, const dist_addr *maddr,
                                 dist_addr *addr, manta_err *err)
{
    if (cfg->ring_addr[0]) {
        manta_err e2;
        if (dist_addr_parse(cfg->ring_addr, addr, &e2) != MANTA_OK)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "ring address: %s", e2.msg);
        return MANTA_OK;
    }
    if (cfg->iface[0])
        return dist_iface_addr(cfg->iface, maddr, addr, err);
    return dist_local_addr(fd, addr, err);
}

/* Decode an answer's fixed part into @p a; the table follows when it is an assignment. */
static manta_status answer_decode(const unsigned char *b, dist_elastic_assign *a, const char *what,
                                  manta_err *err)
{
    if (memcmp(b, MSG_MAGIC, 4) != 0 || b[4] != MSG_VERSION ||
        (b[5] != DIST_ELASTIC_ASSIGN && b[5] != DIST_ELASTIC_REJECT && b[5] != DIST_ELASTIC_STOP))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s sent a malformed answer", what);
    a->kind = b[5];
    a->generation = manta_le_get64(b + 8);
    a->rank = (int32_t)manta_le_get32(b + 16);
    a->world = (int32_t)manta_le_get32(b + 20);
    a->step = (int64_t)manta_le_get64(b + 24);
    a->source = (int32_t)manta_le_get32(b + 32);
    a->need_state = b[36];
    a->any_need = b[37];
    a->write_ckpt = b[38];
    a->ref.step = a->step;
    a->ref.bytes = manta_le_get64(b + 40);
    memcpy(a->ref.hash, b + 48, DIST_HASH_BYTES);
    memcpy(a->msg, b + 80, DIST_ELASTIC_MSG);
    a->msg[DIST_ELASTIC_MSG - 1] = 0;
    for (char *p = a->msg; *p; p++)
        if (*p < 32 || *p > 126)
            *p = '?';
    if (a->kind != DIST_ELASTIC_ASSIGN)
        return MANTA_OK;
    if (a->world < 1 || a->world > DIST_MAX_WORLD || a->rank < 0 || a->rank >= a->world ||
        a->source < 0 || a->source >= a->world || a->step < 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s sent an assignment out of range (rank %d of %d, source %d, step "
                             "%" PRId64 ")",
                             what, a->rank, a->world, a->source, a->step);
    return MANTA_OK;
}

manta_status dist_elastic_join(const dist_config *cfg, const dist_elastic_join_req *req,
                               double wait_s, dist_elastic_assign *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    out->rz.ring_fd = out->watch_fd = -1;
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    const double t0 = dist_now(), deadline = t0 + cfg->timeout_s;
    dist_addr maddr;
    MANTA_TRY(dist_resolve(cfg->master_addr, &maddr, err));
    char what[96], mas[DIST_ADDR_STR];
    dist_addr_port_str(&maddr, (uint16_t)cfg->master_port, mas);
    snprintf(what, sizeof what, "rendezvous service %s", mas);
    int fd = -1;
    MANTA_TRY(dist_connect(&maddr, (uint16_t)cfg->master_port, 0, deadline, what, &fd, err));
    unsigned char key[DIST_KEY_BYTES];
    unsigned char *buf = NULL;
    dist_addr raddr;
    memset(&raddr, 0, sizeof raddr);
    uint16_t rport = 0;
    manta_status st = ring_address(cfg, fd, &maddr, &raddr, err);
    if (st == MANTA_OK)
        st = dist_listen(&raddr, (uint16_t)cfg->ring_port, cfg->sock_buf, &out->rz.ring_fd, &rport,
                         err);
    /* the service link: client 1 of 2, server 0; the gradient encoding travels in the JOIN
     * (the service learns the job's from the first member), not in the link's HELLO */
    dist_config lc = *cfg;
    lc.world_size = 2;
    lc.wire = DIST_WIRE_F32;
    dist_hello me = {.rank = 1, .addr = raddr, .port = rport};
    if (st == MANTA_OK)
        st = dist_auth_client(fd, &lc, DIST_LINK_ELASTIC, 0, &me, deadline, what, key, err);
    unsigned char j[JOIN_BYTES + MAC];
    if (st == MANTA_OK) {
        join_encode(req, &raddr, rport, j);
        mac(j + JOIN_BYTES, 'J', j, JOIN_BYTES, key);
        st = dist_send_all(fd, j, sizeof j, deadline, what, err);
    }
    unsigned char h[HEAD_BYTES];
    const double wait_end = dist_now() + cfg->timeout_s + wait_s;
    if (st == MANTA_OK)
        st = dist_recv_all(fd, h, HEAD_BYTES, wait_end, what, err);
    if (st == MANTA_OK)
        st = answer_decode(h, out, what, err);
    size_t body = out->kind == DIST_ELASTIC_ASSIGN ? (size_t)out->world * ENTRY : 0;
    if (st == MANTA_OK && !(buf = malloc(HEAD_BYTES + body + MAC)))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "rendezvous: out of memory");
    if (st == MANTA_OK) {
        memcpy(buf, h, HEAD_BYTES);
        st =
            dist_recv_all(fd, buf + HEAD_BYTES, body + MAC, dist_now() + cfg->timeout_s, what, err);
    }
    if (st == MANTA_OK && !mac_ok(buf + HEAD_BYTES + body, 'A', buf, HEAD_BYTES + body, key))
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: the answer failed its authentication tag",
                           what);
    if (st == MANTA_OK && out->kind == DIST_ELASTIC_ASSIGN) {
        out->rz.rank = out->rank;
        out->rz.world = out->world;
        if (!(out->rz.peers = calloc((size_t)out->world, sizeof *out->rz.peers)))
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "rendezvous: out of memory");
        for (int r = 0; st == MANTA_OK && r < out->world; r++) {
            const unsigned char *p = buf + HEAD_BYTES + (size_t)r * ENTRY;
            memcpy(out->rz.peers[r].addr.b, p, 16);
            out->rz.peers[r].port = manta_le_get16(p + 16);
            if (!out->rz.peers[r].port)
                st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: no port for rank %d", what, r);
        }
        if (st == MANTA_OK && (memcmp(out->rz.peers[out->rank].addr.b, raddr.b, 16) != 0 ||
                               out->rz.peers[out->rank].port != rport))
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: the table disagrees with this rank's own address", what);
        if (st == MANTA_OK)
            dist_loopback_warning(out->rz.peers, out->world, out->rank, out->rz.warning,
                                  sizeof out->rz.warning);
    }
    free(buf);
    if (st == MANTA_OK && out->kind == DIST_ELASTIC_ASSIGN && out->rank == 0) {
        out->watch_fd = fd; /* the service tells rank 0 on it when a new rank waits */
        fd = -1;
        memcpy(out->watch_key, key, DIST_KEY_BYTES);
    }
    sodium_memzero(key, sizeof key);
    dist_close(&fd);
    if (st != MANTA_OK || out->kind != DIST_ELASTIC_ASSIGN)
        dist_elastic_assign_free(out);
    return st;
}

int dist_elastic_watch(int *fd, const unsigned char *key, uint64_t generation)
{
    if (*fd < 0)
        return -1;
    struct pollfd p = {.fd = *fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
        return 0;
    unsigned char tag[MAC], g[8];
    ssize_t n = recv(*fd, tag, sizeof tag, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    if (n == (ssize_t)sizeof tag) {
        manta_le_put64(g, generation);
        if (mac_ok(tag, 'W', g, sizeof g, key))
            return 1;
    }
    dist_close(fd); /* closed, partial or forged: no more notices on this connection */
    return -1;
}

manta_status dist_elastic_bcast(ring_comm *c, int root, unsigned char *buf, size_t n,
                                manta_err *err)
{
    const size_t chunk = (size_t)1 << 20; /* floats per allreduce, 3 bytes each */
    float *f = malloc(chunk * sizeof *f);
    if (!f)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "state transfer: out of memory");
    const int me = ring_rank(c);
    manta_status st = MANTA_OK;
    for (size_t off = 0; off < n && st == MANTA_OK; off += 3 * chunk) {
        const size_t m = n - off < 3 * chunk ? n - off : 3 * chunk, nf = (m + 2) / 3;
        for (size_t i = 0; i < nf; i++) {
            uint32_t v = 0; /* below 2^24: exact in a float, and so is any sum with zeros */
            for (size_t k = 0; me == root && k < 3 && 3 * i + k < m; k++)
                v |= (uint32_t)buf[off + 3 * i + k] << (8 * k);
            f[i] = (float)v;
        }
        st = ring_allreduce(c, f, nf, RING_SUM, err);
        for (size_t i = 0; st == MANTA_OK && me != root && i < nf; i++) {
            const uint32_t v = (uint32_t)f[i];
            for (size_t k = 0; k < 3 && 3 * i + k < m; k++)
                buf[off + 3 * i + k] = (unsigned char)(v >> (8 * k));
        }
    }
    free(f);
    return st;
}

/* ---- service ---------------------------------------------------------------------------------- */

typedef struct member {
    int fd;
    unsigned char key[DIST_KEY_BYTES];
    dist_elastic_join_req q;
    dist_addr addr;
    uint16_t port;
    char what[96];
    int survivor;                /* a member of the current generation */
    char note[DIST_ELASTIC_MSG]; /* told with its assignment ("" : nothing) */
} member;

struct dist_elastic_server {
    dist_config cfg;
    dist_elastic_opts o;
    char path[1024];
    int lfd;
    uint64_t gen;  /* the last generation formed */
    int world;     /* its size */
    uint64_t *ids; /* its members' ids by rank (world entries) */
    int have_spec; /* spec, version and encoding of the job known */
    unsigned char spec[DIST_HASH_BYTES];
    dist_wire wire; /* the job's gradient encoding */
    char version[DIST_VERSION_MAX];
    member *pend; /* the round's JOINs (DIST_MAX_WORLD) */
    int n_pend;
    double round_open, last_join; /* round_open 0: no round open */
    int watch_fd; /* the connection of the generation's rank 0, kept open (-1: none) */
    unsigned char watch_key[DIST_KEY_BYTES];
    int notified; /* rank 0 was told of a waiting new rank */
};

static void emit(const dist_elastic_server *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void emit(const dist_elastic_server *s, const char *fmt, ...)
{
    if (!s->cfg.event)
        return;
    char line[MANTA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->cfg.event(s->cfg.event_ctx, line);
}

static void hex8(const unsigned char *h, char out[17])
{
    for (int i = 0; i < 8; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* Save the generation to the service's file (atomically). */
static void state_save(dist_elastic_server *s)
{
    if (!s->o.state_path)
        return;
    char tmp[1100], sh[2 * DIST_HASH_BYTES + 1];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        emit(s, "warning: %s: %s", tmp, strerror(errno));
        return;
    }
    sodium_bin2hex(sh, sizeof sh, s->spec, DIST_HASH_BYTES);
    fprintf(f,
            "manta-rendezvous 2\njob %s\ngeneration %" PRIu64
            "\nspec %s\nversion %s\nencoding %s\nworld %d\n",
            s->cfg.job_id, s->gen, s->have_spec ? sh : "-", s->have_spec ? s->version : "-",
            s->have_spec ? dist_wire_name(s->wire) : "-", s->world);
    for (int r = 0; r < s->world; r++)
        fprintf(f, "member %d %016" PRIx64 "\n", r, s->ids[r]);
    int bad = ferror(f) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, s->path) != 0)
        emit(s, "warning: writing %s failed", s->path);
}

/* Load the service's file when it exists. */
static manta_status state_load(dist_elastic_server *s, manta_err *err)
{
    FILE *f = fopen(s->path, "r");
    if (!f)
        return errno == ENOENT
                   ? MANTA_OK
                   : manta_err_set(err, MANTA_ERR_IO, "%s: %s", s->path, strerror(errno));
    char line[256], job[DIST_JOB_MAX + 8] = "", spec[80] = "", ver[DIST_VERSION_MAX + 8] = "",
                                       enc[16] = "-";
    unsigned long long gen = 0;
    int world = 0, ok = 1, seen = 0;
    if (!fgets(line, sizeof line, f) || strcmp(line, "manta-rendezvous 2\n") != 0)
        ok = 0;
    while (ok && fgets(line, sizeof line, f)) {
        int r;
        unsigned long long id;
        if (sscanf(line, "job %71s", job) == 1 || sscanf(line, "spec %79s", spec) == 1 ||
            sscanf(line, "version %39[^\n]", ver) == 1 || sscanf(line, "encoding %15s", enc) == 1)
            continue;
        if (sscanf(line, "generation %llu", &gen) == 1)
            continue;
        if (sscanf(line, "world %d", &world) == 1) {
            if (world < 0 || world > DIST_MAX_WORLD || s->ids)
                ok = 0;
            else if (world > 0 && !(s->ids = calloc((size_t)world, sizeof *s->ids)))
                ok = 0;
            continue;
        }
        if (sscanf(line, "member %d %llx", &r, &id) == 2 && s->ids && r >= 0 && r < world) {
            s->ids[r] = id;
            seen++;
            continue;
        }
        ok = 0;
    }
    fclose(f);
    if (!ok || seen != world || strcmp(job, s->cfg.job_id) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: not a rendezvous file of job '%s' (or damaged)", s->path,
                             s->cfg.job_id);
    s->gen = gen;
    s->world = world;
    if (strcmp(spec, "-") != 0) {
        size_t n = 0;
        if (sodium_hex2bin(s->spec, DIST_HASH_BYTES, spec, strlen(spec), NULL, &n, NULL) != 0 ||
            n != DIST_HASH_BYTES)
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: bad spec hash", s->path);
        snprintf(s->version, sizeof s->version, "%s", ver);
        int w = 0;
        while (w < DIST_WIRE_COUNT && strcmp(enc, dist_wire_name((dist_wire)w)) != 0)
            w++;
        if (w == DIST_WIRE_COUNT)
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: unknown gradient encoding '%s'",
                                 s->path, enc);
        s->wire = (dist_wire)w;
        s->have_spec = 1;
    }
    emit(s, "rendezvous: restored generation %" PRIu64 " of %d rank(s) from %s", s->gen, s->world,
         s->path);
    return MANTA_OK;
}

manta_status dist_elastic_server_open(const dist_config *cfg, const dist_elastic_opts *opts,
                                      dist_elastic_server **out, manta_err *err)
{
    *out = NULL;
    if (opts->min_ranks < 1 || opts->max_ranks < opts->min_ranks ||
        opts->max_ranks > DIST_MAX_WORLD || !(opts->settle_s >= 0) || !(opts->timeout_s > 0) ||
        !(opts->last_call_s >= 0) || opts->expect < 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "rendezvous: ranks %d:%d, settle %g s, timeout %g s out of range",
                             opts->min_ranks, opts->max_ranks, opts->settle_s, opts->timeout_s);
    if (!cfg->has_key)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "rendezvous: no shared secret (MANTA_SECRET or MANTA_SECRET_FILE)");
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    dist_elastic_server *s = calloc(1, sizeof *s);
    if (!s || !(s->pend = calloc(DIST_MAX_WORLD, sizeof *s->pend))) {
        free(s);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "rendezvous: out of memory");
    }
    s->cfg = *cfg;
    s->o = *opts;
    s->lfd = s->watch_fd = -1;
    if (opts->state_path) {
        snprintf(s->path, sizeof s->path, "%s", opts->state_path);
        s->o.state_path = s->path;
    }
    manta_status st = s->o.state_path ? state_load(s, err) : MANTA_OK;
    dist_addr a;
    if (st == MANTA_OK)
        st = dist_resolve(cfg->master_addr, &a, err);
    if (st == MANTA_OK && cfg->rdzv_bind_all) { /* 0.0.0.0, or :: (dual stack) for IPv6 */
        if (dist_addr_is_v4(&a))
            a = dist_addr_v4(htonl(INADDR_ANY));
        else
            memset(a.b, 0, sizeof a.b);
    }
    if (st == MANTA_OK)
        st = dist_listen(&a, (uint16_t)cfg->master_port, 0, &s->lfd, NULL, err);
    if (st != MANTA_OK) {
        dist_elastic_server_close(s);
        return st;
    }
    *out = s;
    return MANTA_OK;
}

uint64_t dist_elastic_server_generation(const dist_elastic_server *s) { return s->gen; }

void dist_elastic_server_close(dist_elastic_server *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_pend; i++)
        dist_close(&s->pend[i].fd);
    dist_close(&s->lfd);
    dist_close(&s->watch_fd);
    sodium_memzero(s->watch_key, sizeof s->watch_key);
    sodium_memzero(s->cfg.key, sizeof s->cfg.key);
    free(s->pend);
    free(s->ids);
    free(s);
}

/* Send an answer (fixed part @p h, then @p n table entries) to member @p m and close it. */
static void answer(dist_elastic_server *s, member *m, unsigned char *h, const dist_peer *table,
                   int n, int keep)
{
    const size_t body = (size_t)n * ENTRY;
    unsigned char *b = malloc(HEAD_BYTES + body + MAC);
    if (b) {
        memcpy(b, h, HEAD_BYTES);
        for (int r = 0; r < n; r++) {
            unsigned char *p = b + HEAD_BYTES + (size_t)r * ENTRY;
            memcpy(p, table[r].addr.b, 16);
            manta_le_put16(p + 16, table[r].port);
            p[18] = p[19] = 0;
        }
        mac(b + HEAD_BYTES + body, 'A', b, HEAD_BYTES + body, m->key);
        manta_err e;
        if (dist_send_all(m->fd, b, HEAD_BYTES + body + MAC, dist_now() + 5.0, m->what, &e) !=
            MANTA_OK)
            emit(s, "rendezvous: %s", e.msg);
        free(b);
    }
    if (keep) { /* the generation's rank 0: told on this connection when a new rank waits */
        dist_close(&s->watch_fd);
        s->watch_fd = m->fd;
        memcpy(s->watch_key, m->key, DIST_KEY_BYTES);
        m->fd = -1;
        s->notified = 0;
    }
    sodium_memzero(m->key, sizeof m->key);
    dist_close(&m->fd);
}

static void refuse(dist_elastic_server *s, member *m, int kind, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static void refuse(dist_elastic_server *s, member *m, int kind, const char *fmt, ...)
{
    unsigned char h[HEAD_BYTES];
    memset(h, 0, sizeof h);
    head(h, kind);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf((char *)h + 80, DIST_ELASTIC_MSG, fmt, ap);
    va_end(ap);
    if (kind == DIST_ELASTIC_REJECT)
        emit(s, "rendezvous: refused %s: %s", m->what, (char *)h + 80);
    answer(s, m, h, NULL, 0, 0);
}

/* Whether member @p m of the current generation holds the state after @p step; its ref. */
static const dist_state_ref *has_step(const member *m, int64_t step)
{
    for (int k = 0; k < 2; k++)
        if (m->q.state[k].step == step && step >= 0)
            return &m->q.state[k];
    return NULL;
}

static int by_former_rank(const void *a, const void *b)
{
    const member *x = a, *y = b;
    if (x->survivor != y->survivor)
        return y->survivor - x->survivor;
    if (x->survivor)
        return x->q.former_rank - y->q.former_rank;
    return 0;
}

/* Close the round: the new generation of the pending members. */
static void form(dist_elastic_server *s)
{
    const int n = s->n_pend;
    /* survivors first in their former order, then the new ranks in order of arrival */
    for (int i = 0; i < n; i++)
        s->pend[i].survivor = s->gen == 0 || (s->pend[i].q.generation == s->gen);
    int any_survivor = 0;
    for (int i = 0; i < n; i++)
        any_survivor |= s->pend[i].survivor;
    if (!any_survivor) /* nobody of the last ring: the new ranks' own states count */
        for (int i = 0; i < n; i++)
            s->pend[i].survivor = s->pend[i].q.state[0].step >= 0;
    /* a stable sort keeps the arrival order of the new ranks */
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && by_former_rank(&s->pend[k - 1], &s->pend[k]) > 0; k--) {
            member t = s->pend[k];
            s->pend[k] = s->pend[k - 1];
            s->pend[k - 1] = t;
        }
    int64_t step = -1;
    for (int i = 0; i < n; i++)
        if (s->pend[i].survivor && s->pend[i].q.state[0].step >= 0 &&
            (step < 0 || s->pend[i].q.state[0].step < step))
            step = s->pend[i].q.state[0].step;
    int source = -1; /* the first in rank order holding the state, preferring a serialised one */
    for (int i = 0; i < n && source < 0; i++)
        if (s->pend[i].survivor && has_step(&s->pend[i], step) &&
            has_step(&s->pend[i], step)->bytes > 0)
            source = i;
    for (int i = 0; i < n && source < 0; i++)
        if (s->pend[i].survivor && has_step(&s->pend[i], step))
            source = i;
    if (source < 0) {
        for (int i = 0; i < n; i++)
            refuse(s, &s->pend[i], DIST_ELASTIC_STOP, "no member holds a training state");
        s->n_pend = 0;
        return;
    }
    const dist_state_ref ref = *has_step(&s->pend[source], step);
    dist_peer *table = calloc((size_t)n, sizeof *table);
    uint64_t *ids = calloc((size_t)n, sizeof *ids);
    if (!table || !ids) {
        free(table);
        free(ids);
        emit(s, "rendezvous: out of memory forming a generation");
        return;
    }
    int any_need = 0;
    unsigned char need[DIST_MAX_WORLD];
    for (int i = 0; i < n; i++) {
        table[i] = (dist_peer){.addr = s->pend[i].addr, .port = s->pend[i].port};
        ids[i] = s->pend[i].q.id;
        const dist_state_ref *own = has_step(&s->pend[i], step);
        need[i] = !own || memcmp(own->hash, ref.hash, DIST_HASH_BYTES) != 0;
        if (own && need[i]) {
            char a[17], b[17];
            hex8(own->hash, a);
            hex8(ref.hash, b);
            emit(s,
                 "rendezvous: %s's state after step %" PRId64 " has hash %s.., rank %d's %s..: "
                 "it is sent rank %d's",
                 s->pend[i].what, step, a, source, b, source);
        }
        any_need |= need[i];
    }
    const uint64_t gen = s->gen + 1;
    emit(s,
         "rendezvous: generation %" PRIu64 ": %d rank(s) (was %d), continuing after step %" PRId64
         "%s",
         gen, n, s->world, step, any_need ? ", state sent to the new ranks" : "");
    for (int i = 0; i < n; i++) {
        unsigned char h[HEAD_BYTES];
        memset(h, 0, sizeof h);
        head(h, DIST_ELASTIC_ASSIGN);
        manta_le_put64(h + 8, gen);
        manta_le_put32(h + 16, (uint32_t)i);
        manta_le_put32(h + 20, (uint32_t)n);
        manta_le_put64(h + 24, (uint64_t)step);
        manta_le_put32(h + 32, (uint32_t)source);
        h[36] = need[i];
        h[37] = (unsigned char)any_need;
        manta_le_put64(h + 40, ref.bytes);
        memcpy(h + 48, ref.hash, DIST_HASH_BYTES);
        memcpy(h + 80, s->pend[i].note, DIST_ELASTIC_MSG - 1);
        answer(s, &s->pend[i], h, table, n, i == 0);
    }
    free(table);
    free(s->ids);
    s->ids = ids;
    s->gen = gen;
    s->world = n;
    s->n_pend = 0;
    s->round_open = 0;
    state_save(s);
}

/* Check a JOIN against the job and the round; 1 to keep the member waiting. */
static int admit(dist_elastic_server *s, member *m)
{
    const dist_elastic_join_req *q = &m->q;
    if (!s->have_spec) {
        memcpy(s->spec, q->spec, DIST_HASH_BYTES);
        snprintf(s->version, sizeof s->version, "%s", q->version);
        s->wire = q->wire;
        s->have_spec = 1;
    } else if (strcmp(q->version, s->version) != 0) {
        refuse(s, m, DIST_ELASTIC_REJECT, "code version '%s' differs from the job's '%s'",
               q->version, s->version);
        return 0;
    } else if (q->wire != s->wire) {
        refuse(s, m, DIST_ELASTIC_REJECT,
               "gradient encoding '%s' differs from the job's '%s' (--compress, --aggregate)",
               dist_wire_name(q->wire), dist_wire_name(s->wire));
        return 0;
    } else if (memcmp(q->spec, s->spec, DIST_HASH_BYTES) != 0) {
        char a[17], b[17];
        hex8(q->spec, a);
        hex8(s->spec, b);
        refuse(s, m, DIST_ELASTIC_REJECT,
               "the run's settings (space, schedule, batch, seed, data, mode) differ from the "
               "job's (spec %s.. against %s..)",
               a, b);
        return 0;
    }
    for (int i = 0; i < s->n_pend; i++) {
        if (s->pend[i].q.id == q->id) {
            refuse(s, m, DIST_ELASTIC_REJECT, "member id %016" PRIx64 " is already waiting", q->id);
            return 0;
        }
        if (q->generation > 0 && s->pend[i].q.generation == q->generation &&
            s->pend[i].q.former_rank == q->former_rank) {
            refuse(s, m, DIST_ELASTIC_REJECT,
                   "rank %d of generation %" PRIu64 " is already claimed by %s", q->former_rank,
                   q->generation, s->pend[i].what);
            return 0;
        }
    }
    if (q->generation > s->gen) {
        refuse(s, m, DIST_ELASTIC_REJECT,
               "generation %" PRIu64 " is unknown here (the last formed is %" PRIu64 ")",
               q->generation, s->gen);
        return 0;
    }
    if (q->generation > 0) {
        const int r = q->former_rank;
        if (q->generation < s->gen || r < 0 || r >= s->world || s->ids[r] != q->id) {
            /* a rank stopped (or too slow) until its ring formed again without it: never
             * merged back as what it was; it enters as a new rank, its state checked by hash
             * against the ring's (it is sent the ring's when it differs) */
            snprintf(m->note, sizeof m->note,
                     "rank %d of generation %" PRIu64 " was declared dead (generation %" PRIu64
                     " formed without it): re-admitted as a new rank",
                     r, q->generation, s->gen);
            emit(s, "rendezvous: %s: %s", m->what, m->note);
            m->q.generation = 0;
            m->q.former_rank = -1;
        }
    }
    return 1;
}

/* Accept one connection, authenticate it and read its JOIN. */
static void take(dist_elastic_server *s)
{
    member m = {.fd = -1};
    dist_addr pa;
    uint16_t pp;
    manta_err e;
    if (dist_accept(s->lfd, dist_now() + 0.01, &m.fd, &pa, &pp, &e) != MANTA_OK)
        return;
    char pas[DIST_ADDR_STR];
    dist_addr_port_str(&pa, pp, pas);
    snprintf(m.what, sizeof m.what, "%s", pas);
    dist_config lc = s->cfg;
    lc.world_size = 2;
    lc.wire = DIST_WIRE_F32; /* the member's encoding comes in its JOIN */
    const double deadline = dist_now() + (s->cfg.timeout_s < 5 ? s->cfg.timeout_s : 5);
    dist_hello h;
    unsigned char j[JOIN_BYTES + MAC];
    if (dist_auth_server(m.fd, &lc, DIST_LINK_ELASTIC, 1, NULL, deadline, m.what, &h, m.key, NULL,
                         &e) != MANTA_OK) {
        emit(s, "rendezvous: %s", e.msg);
        dist_close(&m.fd);
        return;
    }
    if (dist_recv_all(m.fd, j, sizeof j, deadline, m.what, &e) != MANTA_OK ||
        !mac_ok(j + JOIN_BYTES, 'J', j, JOIN_BYTES, m.key) ||
        !join_decode(j, &m.q, &m.addr, &m.port) || memcmp(m.addr.b, h.addr.b, 16) != 0 ||
        m.port != h.port) {
        emit(s, "rendezvous: %s sent a malformed or unauthenticated JOIN", m.what);
        sodium_memzero(m.key, sizeof m.key);
        dist_close(&m.fd);
        return;
    }
    snprintf(m.what, sizeof m.what, "%s (id %08" PRIx64 ")", pas, m.q.id >> 32);
    if (!admit(s, &m))
        return;
    int newcomers = m.q.generation == 0;
    for (int i = 0; i < s->n_pend; i++)
        newcomers += s->pend[i].q.generation == 0;
    const int running = s->gen > 0 && s->round_open == 0; /* no rank of the ring back yet */
    if (s->n_pend >= s->o.max_ranks || s->n_pend >= DIST_MAX_WORLD ||
        (running && m.q.generation == 0 && s->world + newcomers > s->o.max_ranks)) {
        refuse(s, &m, DIST_ELASTIC_REJECT, "the job already has its maximum of %d ranks",
               s->o.max_ranks);
        return;
    }
    s->last_join = dist_now();
    s->pend[s->n_pend++] = m;
    if (m.q.generation > 0)
        emit(s, "rendezvous: rank %d of generation %" PRIu64 " back (%s)", m.q.former_rank,
             m.q.generation, m.what);
    else
        emit(s, "rendezvous: new rank %s waiting (%d in this round)", m.what, s->n_pend);
}

/* Tell the generation's rank 0 that a new rank waits: HMAC-SHA256(link key, "W" |
 * generation u64 LE), 32 bytes. */
static void notify(dist_elastic_server *s)
{
    unsigned char g[8], tag[MAC];
    manta_le_put64(g, s->gen);
    mac(tag, 'W', g, sizeof g, s->watch_key);
    manta_err e;
    if (dist_send_all(s->watch_fd, tag, sizeof tag, dist_now() + 1.0, "rank 0", &e) != MANTA_OK)
        dist_close(&s->watch_fd);
    else
        emit(s, "rendezvous: told rank 0 of generation %" PRIu64 " that a new rank waits", s->gen);
    s->notified = 1;
}

/* Drop waiting members whose connection closed. */
static void reap(dist_elastic_server *s)
{
    if (s->watch_fd >= 0) { /* rank 0 of the running ring closed its connection: it left it */
        struct pollfd p = {.fd = s->watch_fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
            dist_close(&s->watch_fd);
    }
    for (int i = 0; i < s->n_pend; i++) {
        struct pollfd p = {.fd = s->pend[i].fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) {
            emit(s, "rendezvous: %s left while waiting", s->pend[i].what);
            sodium_memzero(s->pend[i].key, sizeof s->pend[i].key);
            dist_close(&s->pend[i].fd);
            s->pend[i] = s->pend[--s->n_pend];
            i--;
        }
    }
}

manta_status dist_elastic_server_run(dist_elastic_server *s, const volatile sig_atomic_t *stop,
                                     manta_err *err)
{
    while (!stop || !*stop) {
        struct pollfd p = {.fd = s->lfd, .events = POLLIN};
        int k = poll(&p, 1, 50);
        if (k > 0 && (p.revents & POLLIN))
            take(s);
        reap(s);
        if (s->n_pend == 0)
            continue;
        const double now = dist_now();
        /* a round opens when a rank of the running ring comes back (it failed or makes room
         * for a new rank), at the first generation, or when the ring's rank 0 is gone; new
         * ranks alone wait for the ring's next step boundary */
        int open = s->gen == 0 || s->watch_fd < 0;
        for (int i = 0; i < s->n_pend && !open; i++)
            open = s->pend[i].q.generation == s->gen;
        if (!open) {
            if (!s->notified && s->watch_fd >= 0)
                notify(s);
            continue;
        }
        if (s->round_open == 0)
            s->round_open = now;
        /* the first generation waits for every rank up to the deadline; later rounds close
         * when nobody else arrived for the settle time */
        int back = 0; /* ranks of the running generation that came back */
        for (int i = 0; i < s->n_pend; i++)
            back += s->gen > 0 && s->pend[i].q.generation == s->gen;
        const int full = s->n_pend >= s->o.max_ranks ||
                         (s->gen == 0 && s->o.expect > 0 && s->n_pend >= s->o.expect) ||
                         (s->gen > 0 && back == s->world); /* all back: new ranks enter */
        const int enough = s->n_pend >= s->o.min_ranks;
        /* all but one back (one rank failed, the usual case): a short settle, in case a
         * second one failed at the same time */
        double settle = s->gen == 0 ? s->o.last_call_s : s->o.settle_s;
        if (s->gen > 0 && back == s->world - 1 && settle > ELASTIC_SETTLE_ONE)
            settle = ELASTIC_SETTLE_ONE;
        const int settled = now - s->last_join >= settle;
        if (full || (enough && settled)) {
            form(s);
            continue;
        }
        if (!enough && now - s->round_open >= s->o.timeout_s) {
            char why[DIST_ELASTIC_MSG];
            snprintf(why, sizeof why,
                     "only %d rank(s) of the minimum %d joined within %.3g s; the job stops",
                     s->n_pend, s->o.min_ranks, s->o.timeout_s);
            int writer = -1;
            for (int i = 0; i < s->n_pend; i++)
                if (s->pend[i].q.state[0].step >= 0 &&
                    (writer < 0 || s->pend[i].q.state[0].step > s->pend[writer].q.state[0].step))
                    writer = i;
            for (int i = 0; i < s->n_pend; i++) {
                unsigned char h[HEAD_BYTES];
                memset(h, 0, sizeof h);
                head(h, DIST_ELASTIC_STOP);
                h[38] = i == writer;
                snprintf((char *)h + 80, DIST_ELASTIC_MSG, "%s", why);
                answer(s, &s->pend[i], h, NULL, 0, 0);
            }
            s->n_pend = 0;
            s->round_open = 0;
            return manta_err_set(err, MANTA_ERR_IO, "%s", why);
        }
    }
    return MANTA_OK;
}
