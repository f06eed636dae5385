/**
 * @file ring.h
 * @brief Ring-allreduce of float32 arrays over TCP between N ranks, run by
 *        communication threads so that allreduces overlap the caller's work.
 *
 * Threads: ring_create() starts two per communicator. The communication
 * thread takes queued allreduces in order, receives, checks and reduces the
 * incoming segments; the sender thread sends the outgoing ones as soon as the
 * schedule allows. Sending and receiving so proceed in parallel, and the
 * caller's thread only queues and waits.
 *
 * Topology: the ranks stand around the ring in the order of cfg->ring_order
 * (MANTA_RING_ORDER, e.g. "2,0,1"; by rank when empty); the rank at position p
 * sends to the one at p+1 and receives from the one at p-1 (mod N), one
 * authenticated TCP connection per direction of the ring (TCP_NODELAY, 4 MiB
 * socket buffers). Below, "rank c" in the layout and the reduction order
 * means the rank at position c.
 *
 * Algorithm (bandwidth-optimal): the n elements are cut into N chunks, chunk c
 * = [c*q + min(c, m), ...) with q = n / N, m = n % N (the first m chunks have
 * one more element). N-1 reduce-scatter steps then N-1 all-gather steps; in
 * each step a rank sends one chunk and receives one, so every rank sends and
 * receives 2(N-1)/N of the data. Every chunk is cut into K segments (the same
 * K for all chunks: at most RING_SEG_BYTES each, and at least 2 when a chunk
 * holds 2 x RING_SEG_MIN bytes or more); segments are pipelined: the segment j
 * of step s is sent as soon as segment j of step s-1 has arrived, so many
 * segments are in flight and sending, receiving and reducing overlap.
 *
 * Reduction order (fixed, so results are bit-identical from run to run for a
 * given N, and identical on every rank): chunk c is reduced in ring order
 * starting at rank c+1:
 *
 *     acc = x[c+1];  acc = acc + x[c+2];  ...;  acc = acc + x[c+N]   (ranks mod N)
 *
 * each addition rounded to float32; for the average the sum is then divided by
 * (float)N once, by rank c, before the all-gather. ring_reference() computes
 * the same thing serially.
 *
 * Encodings (ring_allreduce_wire_async(), dist/wire.h): with fp16, bf16 or int8
 * every rank encodes its partial sum before sending it (reduce-scatter), the
 * receiver decodes it and adds its own float32 value in the order above; the
 * rank that completes chunk c encodes it once, keeps the decoded values (so
 * every rank holds the same bits) and the all-gather forwards the encoded
 * bytes unchanged; the average divides after decoding, on every rank. int8's
 * rounding errors (every hop's and the final one) are added to the caller's
 * residual, which is added to the buffer at the start of the next allreduce
 * with it (error feedback: nothing is lost, only delayed). Fixed point: an
 * allreduce-max of every rank's largest magnitude first (float32, N elements),
 * then the int32 values are summed exactly and decoded on every rank: the same
 * bits for any order of the ranks. The frame's flags byte names the encoding,
 * so ranks that disagree fail on the first frame naming both.
 *
 * Failures: every wait is bounded by the configured deadline (no progress on
 * the ring for timeout_s seconds). The rank that detects a failure sends an
 * ABORT frame naming the failed rank downstream, and every rank forwards it,
 * so all ranks fail fast with a message naming the peer rank, its address, the
 * collective number, ring step and frame sequence number. After any error the
 * communicator is unusable: every pending and later call returns that error;
 * only ring_destroy() remains. On error the contents of the buffers of the
 * failed and the pending operations are unspecified.
 */
#ifndef MANTA_DIST_RING_H
#define MANTA_DIST_RING_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "dist/config.h"
#include "dist/rendezvous.h"

/** Largest segment payload on the wire. */
#define RING_SEG_BYTES (1u << 20)
/** Chunks of at least twice this many bytes are cut into at least two segments. */
#define RING_SEG_MIN (16u << 10)

/** Reduction applied by an allreduce. */
typedef enum ring_redop {
    RING_SUM = 0, /**< element-wise sum */
    RING_AVG = 1, /**< element-wise sum divided by the world size */
    RING_MAX = 2  /**< element-wise maximum (NaN wins); float32 encoding only */
} ring_redop;

/** Ticket of an asynchronous allreduce, passed to ring_wait(). */
typedef uint64_t ring_handle;

/** Communicator (opaque). One per process and job; its calls may come from one caller thread at a time. */
typedef struct ring_comm ring_comm;

/** Counters of a communicator (bytes are payload bytes). */
typedef struct ring_stats {
    uint64_t ops;         /**< allreduces completed */
    uint64_t bytes_sent;  /**< payload bytes sent */
    uint64_t bytes_recv;  /**< payload bytes received */
    uint64_t frames_sent; /**< frames sent */
    uint64_t frames_recv; /**< frames received */
} ring_stats;

/**
 * Join the job described by @p cfg: rendezvous, connect and authenticate the
 * ring, start the communication thread. World size 1 needs no network.
 * @param out  the communicator; release with ring_destroy().
 * @param err  names the failing step, peer and cause.
 */
manta_status ring_create(const dist_config *cfg, ring_comm **out, manta_err *err);

/**
 * Connect the ring of a rendezvous made elsewhere (the elastic service, elastic.h): @p rz
 * gives this rank, the world size, every rank's ring listener and this rank's listening
 * socket; it is consumed (freed, also on failure). cfg->rank and world_size are ignored
 * (taken from @p rz) and so is cfg->ring_order (the ranks stand around the ring in rank
 * order: a world size that changes from one generation to the next has no fixed order to
 * give); everything else of @p cfg (secret, job id, deadline, gradient encoding) applies.
 */
manta_status ring_create_from(const dist_config *cfg, dist_rdzv *rz, ring_comm **out,
                              manta_err *err);

/** Whether the communicator has failed (every call now returns its error): a peer died,
 *  stalled past the deadline or sent garbage. */
int ring_failed(ring_comm *c);

/** This rank. */
int ring_rank(const ring_comm *c);
/** Number of ranks. */
int ring_size(const ring_comm *c);
/** A warning from the rendezvous (loopback address advertised to remote peers), or NULL. */
const char *ring_warning(const ring_comm *c);
/** Copy the counters (consistent after ring_wait()). */
void ring_get_stats(ring_comm *c, ring_stats *s);

/**
 * Queue an in-place allreduce of @p buf (n floats) and return at once. Every
 * rank must issue the same sequence of allreduces (same n and reduction, same
 * order). @p buf must stay valid and untouched until ring_wait() returns.
 * @param h  out: ticket for ring_wait().
 * @return the communicator's error if it has failed; MANTA_ERR_INVALID_ARG for a NULL buffer with n > 0.
 */
manta_status ring_allreduce_async(ring_comm *c, float *buf, size_t n, ring_redop op, ring_handle *h,
                                  manta_err *err);

/**
 * Wait for an allreduce queued by ring_allreduce_async(). Operations complete
 * in the order they were queued.
 * @return MANTA_OK when it completed; the communicator's error otherwise.
 */
manta_status ring_wait(ring_comm *c, ring_handle h, manta_err *err);

/**
 * ring_allreduce_async() with the payload in encoding @p wire (dist/wire.h; DIST_WIRE_F32:
 * the same as ring_allreduce_async()). @p residual (n floats, may be NULL) is int8's error
 * feedback: added to @p buf before the allreduce and set to what it rounded away (keep it
 * untouched until ring_wait()); ignored by the other encodings. With one rank nothing is
 * encoded. The allreduce is exact for DIST_WIRE_FIXED up to the scale (wire.h), and NaN
 * everywhere when a rank holds an infinite or NaN value.
 * @return MANTA_ERR_INVALID_ARG for an unknown encoding or RING_MAX with one other than float32.
 */
manta_status ring_allreduce_wire_async(ring_comm *c, float *buf, size_t n, ring_redop op,
                                       dist_wire wire, float *residual, ring_handle *h,
                                       manta_err *err);

/** The job's encoding of gradient allreduces (dist_config.wire, agreed at the rendezvous). */
dist_wire ring_wire(const ring_comm *c);

/** ring_allreduce_async() followed by ring_wait(). */
manta_status ring_allreduce(ring_comm *c, float *buf, size_t n, ring_redop op, manta_err *err);

/**
 * Stop the thread (after the operation in progress, cancelling queued ones),
 * close the sockets and free @p c. NULL is allowed.
 */
void ring_destroy(ring_comm *c);

/**
 * Serial reference in the documented order: out = reduction of the @p world
 * inputs (each n floats), chunk c summed in ring order from rank c+1.
 * @p out may alias none of the inputs.
 */
void ring_reference(const float *const *inputs, int world, size_t n, ring_redop op, float *out);

/**
 * The ranks in their ring order from @p text ("2,0,1"; NULL or "": 0..world-1) into @p order
 * (world ints; 0..world-1 after an error).
 * @return MANTA_ERR_INVALID_ARG unless every rank 0..world-1 appears exactly once.
 */
manta_status ring_parse_order(const char *text, int world, int *order, manta_err *err);

/** First element of chunk @p c of n elements over @p world ranks (c may be world: returns n). */
size_t ring_chunk_begin(size_t n, int world, int c);

/** Segments per chunk (K) the ring uses for n elements over @p world ranks. */
size_t ring_segments(size_t n, int world);

#endif
