/**
 * @file rendezvous.h
 * @brief How the ranks of a job find each other: rank 0 listens on
 *        MASTER_ADDR:MASTER_PORT, every other rank connects, authenticates
 *        (auth.h) and reports the address of its own ring listener; rank 0
 *        answers each with the table of all ring addresses.
 *
 * Addresses are IPv4 or IPv6 (net.h's dist_addr); the master is resolved with
 * dist_resolve() (literals, bracketed IPv6, names through getaddrinfo with
 * AF_UNSPEC). Ring address of a rank: cfg->ring_addr if set, else the address
 * of cfg->iface in the master's family, else (rank 0) the rendezvous address,
 * else (other ranks) the local address of its connection to the master, i.e.
 * the interface that routes to the master. The ring listener binds to that
 * address only, on cfg->ring_port (0: ephemeral). The rendezvous listener
 * binds to the master address only, unless cfg->rdzv_bind_all (0.0.0.0 for an
 * IPv4 master; :: for an IPv6 one, which also accepts IPv4: dual stack).
 *
 * Every rank's HELLO names its gradient encoding (cfg->wire); rank 0 refuses
 * a rank whose encoding differs from its own, naming both (auth.h).
 *
 * TABLE (rank 0 -> rank r): 16-byte header (magic "MNTT", version 2, type 5,
 * world size u32), world entries of 20 bytes (16-byte address as dist_addr,
 * port u16 LE, 0 u16),
 * HMAC-SHA256 (32 B) under the link key of that connection. The header is
 * checked (world size equal to the receiver's) before the entries are read.
 *
 * The whole rendezvous is bounded by cfg->timeout_s from the call.
 */
#ifndef MANTA_DIST_RENDEZVOUS_H
#define MANTA_DIST_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "dist/config.h"
#include "dist/net.h"

/** One rank's ring listener. */
typedef struct dist_peer {
    dist_addr addr; /**< IPv4 (mapped) or IPv6 */
    uint16_t port;  /**< host order */
} dist_peer;

/** Result of a rendezvous. Release with dist_rdzv_free(). */
typedef struct dist_rdzv {
    int rank;         /**< this rank */
    int world;        /**< world size */
    dist_peer *peers; /**< world entries: every rank's ring listener (NULL when world is 1) */
    int ring_fd;      /**< this rank's ring listener (-1 when world is 1) */
    char warning
        [512]; /**< "" or a warning for the user (loopback address advertised to remote peers) */
} dist_rdzv;

/**
 * Run the rendezvous for @p cfg (checked with dist_config_check()). World size 1 returns at once.
 * Rejected connections (wrong secret, garbage, wrong job, duplicate rank) are reported through
 * cfg->event and do not stop rank 0 from waiting for the real ranks until the deadline.
 * @param out filled on success; on failure nothing needs freeing.
 * @param err names the missing ranks, the master or the cause.
 */
manta_status dist_rendezvous(const dist_config *cfg, dist_rdzv *out, manta_err *err);

/**
 * The loopback warning: when @p rank's ring address is a loopback one (127.0.0.0/8, ::1) while
 * another rank's is not (so that rank is on another host and cannot reach
 * it), write a one-line warning naming both into @p out and return 1;
 * otherwise write "" and return 0. dist_rendezvous() fills dist_rdzv.warning with it.
 */
int dist_loopback_warning(const dist_peer *peers, int world, int rank, char *out, size_t cap);

/** Close the ring listener and free the table. Safe on any struct dist_rendezvous() filled, twice too. */
void dist_rdzv_free(dist_rdzv *r);

#endif
