/**
 * @file elastic.h
 * @brief Elastic membership: a standalone rendezvous service (`manta rendezvous`) that forms
 *        the ring of a job again and again as ranks die and join, and the rank's side of it.
 *
 * A job is a sequence of *generations*: fixed memberships, each a ring (ring.h) of ranks
 * 0..world-1. A rank joins by connecting to the service (MASTER_ADDR:MASTER_PORT),
 * authenticating with the job's secret (auth.h, link kind DIST_LINK_ELASTIC; its HELLO names no
 * gradient encoding, "none": the JOIN carries the member's) and sending a
 * JOIN: its random member id, the generation and rank it last had (0 / -1 for a new rank),
 * the steps of the two training states it holds (its snapshots: after the last completed
 * step and the one before) with their BLAKE2b-256 hashes and sizes, the hash of the run's
 * settings ("spec") and the code version, and its ring listener. The service collects
 * JOINs into a *round*; a round closes when max ranks joined, or min ranks joined and no
 * one else arrived for the settle time (0.2 s at most when all ranks of the running
 * generation but one came back; at once when all came back: new ranks enter; the first round: max or the expected number of
 * ranks, or min ranks and no one else for the last-call time). It then answers every member with an ASSIGN: the
 * new generation, the member's rank and world size, the ring table, the step S every rank
 * continues from, the rank whose state at S is the reference (its hash, size) and whether
 * this member must receive it (it has no state at S, or one with another hash). A round
 * that has not reached min ranks within the deadline ends the job: every waiting member
 * gets a STOP with the reason, and one of them (the one holding the latest state) is
 * asked to write the last checkpoint.
 *
 * New ranks that arrive while a generation runs wait without a deadline of the service's:
 * the service keeps the connection of the generation's rank 0 open and sends it a notice;
 * rank 0 polls it at every step boundary (dist_elastic_watch()) and all ranks agree on it
 * with the step's stop agreement, then come back to the rendezvous after the step, and the
 * round closes with the new ranks in it (the state sent to them by rank 0). A round opens
 * when a rank of the running generation comes back (or at the first generation, or when
 * rank 0's connection closed); the --timeout of a round counts from then.
 *
 * S = the smallest "last completed step" among the members that were in the current
 * generation (every rank keeps its last two snapshots; a failure interrupts a step that
 * some ranks may have finished and others not, so the members' last steps differ by at
 * most one and all hold the state after S).
 *
 * Refused at the JOIN (a REJECT naming the difference; the service goes on): another
 * spec, code version or gradient encoding (--compress, --aggregate: the service takes the
 * job's from its first member and keeps it in its file) than the job's, a member id already waiting, a former rank already
 * claimed by another member (two ranks claiming the same rank). A member of an older
 * generation that the service declared dead (a ring formed without it: it was stopped, or
 * came back later than the settle time) is never merged back as what it was: it is
 * re-admitted as a new rank (the assignment's message says so), its state checked by hash
 * against the ring's and replaced when it differs. A wrong secret or job id fails the handshake.
 *
 * Messages (little-endian, every one followed by HMAC-SHA256 under the connection's link
 * key over a direction label ("J" member to service, "A" service to member) and the body):
 *
 *     JOIN    256 B  "MNTE", version 2, type 1; id u64 @8, generation u64 @16, former rank
 *                    i32 @24, gradient encoding u8 @28 (dist_wire), port u16 @32, steps
 *                    i64 @40 and @48 (latest, previous; -1 none), sizes u64 @56 and @64,
 *                    hashes @72 and @104 (32 B each), spec hash @136, version (32 B) @168,
 *                    ring address (16 B, dist_addr: IPv6 or IPv4-mapped) @200
 *     ASSIGN 256 B + 20 x world: type 2 (assign), 3 (reject) or 4 (stop); generation u64 @8,
 *                    rank i32 @16, world i32 @20, step i64 @24, source rank i32 @32, need
 *                    state u8 @36, any member needs state u8 @37, write checkpoint u8 @38,
 *                    state size u64 @40, state hash @48, message (160 B) @80; then world
 *                    entries (16-byte dist_addr, port u16, 0 u16)
 *
 * Every field is checked before use (sizes bounded, world in 1..DIST_MAX_WORLD, ranks in
 * range); the service never reads more than these fixed sizes from a member.
 */
#ifndef MANTA_DIST_ELASTIC_H
#define MANTA_DIST_ELASTIC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "dist/config.h"
#include "dist/rendezvous.h"
#include "dist/ring.h"

/** Bytes of a state or spec hash (BLAKE2b-256). */
#define DIST_HASH_BYTES 32
/** Bytes of the code version string, terminator included. */
#define DIST_VERSION_MAX 32
/** Bytes of a REJECT or STOP message, terminator included. */
#define DIST_ELASTIC_MSG 160

/** One training state a member holds. */
typedef struct dist_state_ref {
    int64_t step;                        /**< steps it has completed; -1: none */
    uint64_t bytes;                      /**< size of its serialised form */
    unsigned char hash[DIST_HASH_BYTES]; /**< BLAKE2b-256 of the serialised form */
} dist_state_ref;

/** What a member tells the service (JOIN). */
typedef struct dist_elastic_join_req {
    uint64_t id;                         /**< random per process, non-zero */
    uint64_t generation;                 /**< generation it was last a member of; 0: new */
    int former_rank;                     /**< its rank there; -1: new */
    dist_state_ref state[2];             /**< latest and previous snapshot */
    dist_wire wire;                      /**< its gradient encoding (dist_config.wire) */
    unsigned char spec[DIST_HASH_BYTES]; /**< hash of the run's settings */
    char version[DIST_VERSION_MAX];      /**< code version */
} dist_elastic_join_req;

/** The service's answer. Free with dist_elastic_assign_free(). */
typedef struct dist_elastic_assign {
    int kind;                   /**< 2 assign, 3 rejected, 4 job stopped */
    char msg[DIST_ELASTIC_MSG]; /**< rejected / stopped: the reason; assigned: a note ("" or
                                     why it enters as a new rank) */
    uint64_t generation;        /**< the new generation */
    int rank, world;            /**< this member's rank and the world size */
    int64_t step;               /**< every rank continues from the state after this many steps */
    int source;                 /**< rank whose state at step is the reference */
    int need_state;             /**< this member must receive the state from source */
    int any_need;               /**< some member must: every rank takes part in the transfer */
    int write_ckpt;             /**< stopped: this member writes the last checkpoint */
    dist_state_ref ref;         /**< the reference state (step, size, hash) */
    dist_rdzv rz;               /**< rank, world, ring table and this rank's ring listener */
    /** rank 0: the service connection, kept open for notices (dist_elastic_watch()); -1
     *  otherwise. Take it (set -1) to keep it past dist_elastic_assign_free(). */
    int watch_fd;
    unsigned char watch_key[DIST_KEY_BYTES]; /**< rank 0: the key of the notices */
} dist_elastic_assign;

/** dist_elastic_assign.kind values. */
enum { DIST_ELASTIC_ASSIGN = 2, DIST_ELASTIC_REJECT = 3, DIST_ELASTIC_STOP = 4 };

/**
 * Member side: connect to the service at cfg->master_addr:master_port (retrying until the
 * deadline, so a restarted service is found), open this rank's ring listener (its address as
 * dist_rendezvous() chooses it), send @p req and wait for the answer, at most
 * cfg->timeout_s + @p wait_s seconds.
 * @param out filled on MANTA_OK: an assignment (out->rz owns the listener), a rejection or a
 *            stop (out->msg); release with dist_elastic_assign_free().
 * @return an error naming the service when it cannot be reached or answers garbage.
 */
manta_status dist_elastic_join(const dist_config *cfg, const dist_elastic_join_req *req,
                               double wait_s, dist_elastic_assign *out, manta_err *err);

/**
 * Rank 0 of a generation, at a step boundary: whether the service has told it that a new rank
 * waits (a 32-byte notice HMAC-SHA256(key, "W" | generation) on the kept connection).
 * Never blocks. @return 1 a new rank waits (the ranks should come back to the rendezvous), 0
 * nothing yet, -1 the connection is gone (closed here, *fd set to -1; no more notices).
 */
int dist_elastic_watch(int *fd, const unsigned char *key, uint64_t generation);

/**
 * Send @p n bytes of @p buf from rank @p root to every rank of @p c (collective: every rank
 * passes the same n and root; the others' buffers receive the bytes). The bytes travel three
 * per float (an integer below 2^24) as allreduce sums in which every rank but the root adds
 * zeros, which is exact; the ring's frame tags authenticate them. 4 bytes on the wire per 3
 * bytes of data, in both directions of each link (reduce-scatter and all-gather).
 */
manta_status dist_elastic_bcast(ring_comm *c, int root, unsigned char *buf, size_t n,
                                manta_err *err);

/** Release what dist_elastic_join() filled (the ring listener, the table). Twice is safe. */
void dist_elastic_assign_free(dist_elastic_assign *a);

/** The service's settings. */
typedef struct dist_elastic_opts {
    int min_ranks, max_ranks; /**< 1 <= min <= max <= DIST_MAX_WORLD */
    double settle_s;          /**< a round closes this long after its last JOIN (>= min) */
    double last_call_s;       /**< the first round: the same, counted from the last JOIN (>= min) */
    int expect;               /**< the first round also closes when this many joined (0: MAX) */
    double timeout_s;         /**< a round without min ranks after this long stops the job */
    const char *state_path; /**< its file (written after every round; read at start); may be NULL */
} dist_elastic_opts;

typedef struct dist_elastic_server dist_elastic_server;

/**
 * Open the service: listen on cfg->master_addr:master_port (IPv4 or IPv6, dist_resolve();
 * with cfg->rdzv_bind_all 0.0.0.0, or :: for an IPv6 master, which also accepts IPv4) and
 * load opts->state_path when it exists (the generation, its
 * members, the job's spec, version and encoding: a restarted service knows the running ring).
 * Events (joins, rounds, rejections, stops) go to cfg->event.
 */
manta_status dist_elastic_server_open(const dist_config *cfg, const dist_elastic_opts *opts,
                                      dist_elastic_server **out, manta_err *err);

/**
 * Serve until *@p stop becomes non-zero or the job stops (a round without min ranks within
 * the deadline). @return MANTA_OK after a stop request; MANTA_ERR_IO with the reason in
 * @p err when the job stopped for lack of ranks.
 */
manta_status dist_elastic_server_run(dist_elastic_server *s, const volatile sig_atomic_t *stop,
                                     manta_err *err);

/** The generation formed last (0: none yet). Read it on the thread that runs
 *  dist_elastic_server_run() or after that returns: the members of a generation are answered
 *  before the server records it. */
uint64_t dist_elastic_server_generation(const dist_elastic_server *s);

/** Close the listener and every waiting connection; free. NULL is allowed. */
void dist_elastic_server_close(dist_elastic_server *s);

#endif
