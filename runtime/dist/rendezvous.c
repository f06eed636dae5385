/* Rendezvous through rank 0 (see rendezvous.h). */
#define _DEFAULT_SOURCE

#include "dist/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/le.h"
#include "dist/auth.h"
#include "dist/net.h"

#define TABLE_MAGIC "MNTT"
#define TABLE_HEAD 16
#define TABLE_ENTRY 20

static void emit(const dist_config *cfg, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void emit(const dist_config *cfg, const char *fmt, ...)
{
    if (!cfg->event)
        return;
    char line[MANTA_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    cfg->event(cfg->event_ctx, line);
}

void dist_rdzv_free(dist_rdzv *r)
{
    if (!r)
        return;
    free(r->peers);
    r->peers = NULL;
    dist_close(&r->ring_fd);
}

/* The table for one rank, with its MAC under that rank's link key. */
static size_t table_encode(const dist_peer *peers, int world, const unsigned char *key,
                           unsigned char *buf)
{
    memset(buf, 0, TABLE_HEAD);
    memcpy(buf, TABLE_MAGIC, 4);
    buf[4] = 2;
    buf[5] = 5;
    manta_le_put32(buf + 8, (uint32_t)world);
    unsigned char *p = buf + TABLE_HEAD;
    for (int i = 0; i < world; i++, p += TABLE_ENTRY) {
        memcpy(p, peers[i].addr.b, 16);
        manta_le_put16(p + 16, peers[i].port);
        p[18] = p[19] = 0;
    }
    size_t n = (size_t)(p - buf);
    crypto_auth_hmacsha256(p, buf, n, key);
    return n + 32;
}

static manta_status missing_ranks(const unsigned char *taken, int world, double timeout,
                                  manta_err *err)
{
    char list[256] = "";
    size_t used = 0;
    int missing = 0;
    for (int r = 1; r < world; r++) {
        if (taken[r])
            continue;
        missing++;
        if (used < sizeof list - 16) {
            int w = snprintf(list + used, sizeof list - used, "%s%d", used ? ", " : "", r);
            used += w > 0 ? (size_t)w : 0;
        } else if (list[used - 1] != '.') {
            snprintf(list + used, sizeof list - used, ", ...");
            used = strlen(list);
        }
    }
    return manta_err_set(
        err, MANTA_ERR_IO,
        "rendezvous timed out after %.3g s: %d of %d ranks joined; missing rank%s %s", timeout,
        world - missing, world, missing > 1 ? "s" : "", list);
}

static manta_status run_master(const dist_config *cfg, const dist_addr *maddr,
                               const dist_addr *ring_addr, double deadline, dist_rdzv *out,
                               manta_err *err)
{
    int world = cfg->world_size;
    int lfd = -1;
    dist_addr bind_addr = *maddr;
    if (cfg->rdzv_bind_all) {
        if (dist_addr_is_v4(maddr))
            bind_addr = dist_addr_v4(htonl(INADDR_ANY));
        else
            memset(bind_addr.b, 0, sizeof bind_addr.b);
    }
    manta_status st = dist_listen(&bind_addr, (uint16_t)cfg->master_port, 0, &lfd, NULL, err);
    if (st != MANTA_OK)
        return st;
    uint16_t rport = 0;
    st =
        dist_listen(ring_addr, (uint16_t)cfg->ring_port, cfg->sock_buf, &out->ring_fd, &rport, err);
    if (st != MANTA_OK) {
        dist_close(&lfd);
        return st;
    }
    out->peers[0].addr = *ring_addr;
    out->peers[0].port = rport;
    unsigned char *taken = calloc((size_t)world, 1);
    int *fds = malloc((size_t)world * sizeof *fds);
    unsigned char *keys = malloc((size_t)world * DIST_KEY_BYTES);
    unsigned char *table = malloc(TABLE_HEAD + (size_t)world * TABLE_ENTRY + 32);
    if (!taken || !fds || !keys || !table) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "rendezvous: out of memory for %d ranks",
                           world);
        goto done;
    }
    for (int r = 0; r < world; r++)
        fds[r] = -1;
    taken[0] = 1;
    int joined = 1;
    while (joined < world) {
        int fd = -1;
        dist_addr pa;
        uint16_t pp;
        manta_err e2;
        if (dist_accept(lfd, deadline, &fd, &pa, &pp, &e2) != MANTA_OK) {
            st = missing_ranks(taken, world, cfg->timeout_s, err);
            goto done;
        }
        char pas[DIST_ADDR_STR], what[80];
        dist_addr_port_str(&pa, pp, pas);
        snprintf(what, sizeof what, "connection from %s", pas);
        double hs = dist_now() + (cfg->timeout_s < 10.0 ? cfg->timeout_s : 10.0);
        dist_hello h;
        unsigned char key[DIST_KEY_BYTES];
        if (dist_auth_server(fd, cfg, DIST_LINK_RDZV, -1, taken, hs < deadline ? hs : deadline,
                             what, &h, key, NULL, &e2) != MANTA_OK) {
            emit(cfg, "rendezvous: %s", e2.msg);
            dist_close(&fd);
            continue;
        }
        if (h.port == 0 || dist_addr_is_any(&h.addr)) {
            emit(cfg, "rendezvous: rejected %s: rank %d advertised no usable ring address", what,
                 h.rank);
            dist_close(&fd);
            continue;
        }
        taken[h.rank] = 1;
        fds[h.rank] = fd;
        memcpy(keys + (size_t)h.rank * DIST_KEY_BYTES, key, DIST_KEY_BYTES);
        sodium_memzero(key, sizeof key);
        out->peers[h.rank].addr = h.addr;
        out->peers[h.rank].port = h.port;
        joined++;
    }
    for (int r = 1; r < world; r++) {
        size_t n = table_encode(out->peers, world, keys + (size_t)r * DIST_KEY_BYTES, table);
        char what[64];
        snprintf(what, sizeof what, "rank %d (rendezvous)", r);
        if ((st = dist_send_all(fds[r], table, n, deadline, what, err)) != MANTA_OK)
            goto done;
    }
    st = MANTA_OK;
done:
    if (fds)
        for (int r = 0; r < world; r++)
            dist_close(&fds[r]);
    if (keys)
        sodium_memzero(keys, (size_t)world * DIST_KEY_BYTES);
    free(taken), free(fds), free(keys), free(table);
    dist_close(&lfd);
    return st;
}

static manta_status run_worker(const dist_config *cfg, const dist_addr *maddr, dist_addr ring_addr,
                               int have_addr, double deadline, dist_rdzv *out, manta_err *err)
{
    int world = cfg->world_size;
    char ma[DIST_ADDR_STR], what[340];
    dist_addr_port_str(maddr, (uint16_t)cfg->master_port, ma);
    snprintf(what, sizeof what, "master %s (%s, rank 0)", cfg->master_addr, ma);
    int fd = -1;
    manta_status st = dist_connect(maddr, (uint16_t)cfg->master_port, 0, deadline, what, &fd, err);
    if (st != MANTA_OK)
        return st;
    if (!have_addr && dist_local_addr(fd, &ring_addr, err) != MANTA_OK) {
        dist_close(&fd);
        return MANTA_ERR_IO;
    }
    uint16_t rport = 0;
    unsigned char key[DIST_KEY_BYTES];
    unsigned char *table = malloc(TABLE_HEAD + (size_t)world * TABLE_ENTRY + 32);
    if (!table) {
        dist_close(&fd);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "rendezvous: out of memory");
    }
    st = dist_listen(&ring_addr, (uint16_t)cfg->ring_port, cfg->sock_buf, &out->ring_fd, &rport,
                     err);
    if (st != MANTA_OK)
        goto done;
    dist_hello me = {.rank = cfg->rank, .addr = ring_addr, .port = rport};
    if ((st = dist_auth_client(fd, cfg, DIST_LINK_RDZV, 0, &me, deadline, what, key, err)) !=
        MANTA_OK)
        goto done;
    if ((st = dist_recv_all(fd, table, TABLE_HEAD, deadline, what, err)) != MANTA_OK)
        goto done;
    uint32_t tw = manta_le_get32(table + 8);
    if (memcmp(table, TABLE_MAGIC, 4) != 0 || table[4] != 2 || table[5] != 5 ||
        tw != (uint32_t)world) {
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s sent a malformed address table header (world %u, expected %d)", what,
                           (unsigned)tw, world);
        goto done;
    }
    size_t body = (size_t)world * TABLE_ENTRY;
    if ((st = dist_recv_all(fd, table + TABLE_HEAD, body + 32, deadline, what, err)) != MANTA_OK)
        goto done;
    if (crypto_auth_hmacsha256_verify(table + TABLE_HEAD + body, table, TABLE_HEAD + body, key) !=
        0) {
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: the address table failed its authentication tag", what);
        goto done;
    }
    for (int r = 0; r < world; r++) {
        const unsigned char *p = table + TABLE_HEAD + (size_t)r * TABLE_ENTRY;
        memcpy(out->peers[r].addr.b, p, 16);
        out->peers[r].port = manta_le_get16(p + 16);
        if (out->peers[r].port == 0) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: address table has no port for rank %d",
                               what, r);
            goto done;
        }
    }
    if (memcmp(out->peers[cfg->rank].addr.b, ring_addr.b, 16) != 0 ||
        out->peers[cfg->rank].port != rport) {
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: address table disagrees with this rank's own address", what);
        goto done;
    }
    st = MANTA_OK;
done:
    sodium_memzero(key, sizeof key);
    free(table);
    dist_close(&fd);
    return st;
}

int dist_loopback_warning(const dist_peer *peers, int world, int rank, char *out, size_t cap)
{
    if (cap)
        out[0] = '\0';
    const dist_addr *mine = &peers[rank].addr;
    if (!dist_addr_is_loopback(mine))
        return 0;
    for (int r = 0; r < world; r++) {
        if (dist_addr_is_loopback(&peers[r].addr))
            continue;
        char a[DIST_ADDR_STR], b[DIST_ADDR_STR];
        dist_addr_str(mine, a);
        dist_addr_str(&peers[r].addr, b);
        snprintf(out, cap,
                 "rank %d advertises the loopback address %s to peers on other hosts (rank %d is "
                 "at %s): they "
                 "cannot reach it; choose an interface with --iface or MANTA_IFACE, or set "
                 "MASTER_ADDR to a "
                 "routable address",
                 rank, a, r, b);
        return 1;
    }
    return 0;
}

manta_status dist_rendezvous(const dist_config *cfg, dist_rdzv *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    out->ring_fd = -1;
    manta_status st = dist_config_check(cfg, err);
    if (st != MANTA_OK)
        return st;
    out->rank = cfg->rank;
    out->world = cfg->world_size;
    if (cfg->world_size == 1)
        return MANTA_OK;
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    double deadline = dist_now() + cfg->timeout_s;
    dist_addr maddr, ring_addr;
    memset(&ring_addr, 0, sizeof ring_addr);
    int have_addr = 0;
    manta_err e2;
    if ((st = dist_resolve(cfg->master_addr, &maddr, &e2)) != MANTA_OK)
        return manta_err_set(err, st, "master address: %s", e2.msg);
    if (cfg->ring_addr[0]) {
        if (dist_addr_parse(cfg->ring_addr, &ring_addr, &e2) != MANTA_OK)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "ring address: %s", e2.msg);
        have_addr = 1;
    } else if (cfg->iface[0]) {
        if ((st = dist_iface_addr(cfg->iface, &maddr, &ring_addr, err)) != MANTA_OK)
            return st;
        have_addr = 1;
    } else if (cfg->rank == 0) {
        ring_addr = maddr, have_addr = 1;
    }
    out->peers = calloc((size_t)cfg->world_size, sizeof *out->peers);
    if (!out->peers)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "rendezvous: out of memory for %d ranks",
                             cfg->world_size);
    st = cfg->rank == 0 ? run_master(cfg, &maddr, &ring_addr, deadline, out, err)
                        : run_worker(cfg, &maddr, ring_addr, have_addr, deadline, out, err);
    if (st != MANTA_OK) {
        dist_rdzv_free(out);
        return st;
    }
    if (dist_loopback_warning(out->peers, cfg->world_size, cfg->rank, out->warning,
                              sizeof out->warning))
        emit(cfg, "warning: %s", out->warning);
    return MANTA_OK;
}
