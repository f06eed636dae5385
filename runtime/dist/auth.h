/**
 * @file auth.h
 * @brief Mutual challenge-response authentication of one TCP connection with
 *        the job's shared secret (HMAC-SHA256, libsodium), and the per-link key
 *        that authenticates the frames sent on it afterwards.
 *
 * Messages, all fixed size, little-endian, checked field by field before use:
 *
 *     client -> server  HELLO     160 B  magic "MNTH", version 2, type 1, link kind, client rank,
 *                                        world size, ring port (u16 at 20), gradient encoding
 *                                        (dist_wire, byte 22), job id (64 B at 24), client
 *                                        nonce (32 B at 88), ring address (16 B at 120, dist_addr)
 *     server -> client  CHALLENGE 160 B  type 2: server rank, world size, job id, server nonce (32 B),
 *                                        mac_s (32 B)
 *     client -> server  RESPONSE   48 B  type 3: mac_c (32 B)
 *     server -> client  RESULT     16 B  type 4: 0 accepted, else the reason of the rejection
 *                                        (byte 8); byte 9: the server's gradient encoding
 *
 * With T = "manta-auth-v2" | kind | job id | client rank, world, address, port, encoding | server rank |
 * client nonce | server nonce and K the key derived from the secret:
 * mac_s = HMAC-SHA256(K, "S" | T), mac_c = HMAC-SHA256(K, "C" | T) (distinct labels, so neither
 * side's answer can be reflected), and the link key = HMAC-SHA256(K, "L" | T). Fresh random
 * nonces on both sides make every transcript, and so every link key, unique: a recorded
 * handshake cannot be replayed. The server may reject early (RESULT with a reason) when the
 * job id, world size, rank, gradient encoding or version do not match; a RESULT is not authenticated (an
 * attacker able to forge one could as well reset the connection).
 */
#ifndef MANTA_DIST_AUTH_H
#define MANTA_DIST_AUTH_H

#include <stdint.h>

#include "core/status.h"
#include "dist/config.h"
#include "dist/net.h"

/** What a connection is for (part of the transcript, so keys of different uses never coincide). */
typedef enum dist_link_kind {
    DIST_LINK_RDZV = 1,   /**< a rank to the rendezvous master (rank 0) */
    DIST_LINK_RING = 2,   /**< rank r to rank r+1 (data flows client -> server) */
    DIST_LINK_ELASTIC = 3 /**< a rank to the elastic rendezvous service (elastic.h) */
} dist_link_kind;

/** What an authenticated client claimed (and proved) in its HELLO. */
typedef struct dist_hello {
    int rank;       /**< the client's rank */
    dist_addr addr; /**< the client's ring listener address (zero on ring links) */
    uint16_t port;  /**< the client's ring listener port (host order; 0 on ring links) */
} dist_hello;

/** Reasons a server rejects a client (the RESULT code). */
typedef enum dist_reject {
    DIST_ACCEPT = 0,
    DIST_REJECT_AUTH = 1,    /**< wrong MAC: the client does not know the secret */
    DIST_REJECT_JOB = 2,     /**< another job id */
    DIST_REJECT_WORLD = 3,   /**< another world size */
    DIST_REJECT_RANK = 4,    /**< unexpected or duplicate rank */
    DIST_REJECT_VERSION = 5, /**< protocol version or link kind differ */
    DIST_REJECT_BUSY = 6,    /**< the rendezvous failed or is complete */
    DIST_REJECT_WIRE = 7     /**< another gradient encoding (--compress / --aggregate) */
} dist_reject;

/** Short text of a rejection reason. Never NULL. */
const char *dist_reject_str(int code);

/**
 * Client side: send HELLO, check the server's identity and MAC, answer, read the verdict.
 * @param expect_rank the rank the server must be (0 for the rendezvous, rank+1 on the ring).
 * @param me          what this rank claims (its rank and, for the rendezvous, ring address).
 * @param what        names the server in messages ("master 10.0.0.1:29500").
 * @param link_key    out: the link key (DIST_KEY_BYTES).
 */
manta_status dist_auth_client(int fd, const dist_config *cfg, dist_link_kind kind, int expect_rank,
                              const dist_hello *me, double deadline, const char *what,
                              unsigned char *link_key, manta_err *err);

/**
 * Server side: read HELLO, check it, challenge, verify the answer, send the verdict.
 * @param expect_rank the client rank required (-1: any rank in 1..world-1 not marked in @p taken).
 * @param taken       world_size flags of ranks already joined (may be NULL); not modified.
 * @param peer        out: what the client claimed.
 * @param what        names the client in messages ("connection from 10.0.0.2:41234").
 * @param reason      out: the RESULT code sent (DIST_ACCEPT on success); may be NULL.
 * @return MANTA_OK when the client is authenticated; otherwise the connection must be closed and
 *         the message (naming @p what and the cause) reported as an event.
 */
manta_status dist_auth_server(int fd, const dist_config *cfg, dist_link_kind kind, int expect_rank,
                              const unsigned char *taken, double deadline, const char *what,
                              dist_hello *peer, unsigned char *link_key, int *reason,
                              manta_err *err);

#endif
