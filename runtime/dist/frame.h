/**
 * @file frame.h
 * @brief Wire format of the ring's frames after authentication.
 *
 * Every frame is a 48-byte header, a 16-byte tag, then `length` payload bytes:
 *
 *     off size field
 *      0   4  magic "MNTR"
 *      4   1  version (1)
 *      5   1  type: 1 DATA, 2 ABORT
 *      6   1  reduction: 0 sum, 1 average
 *      7   1  flags: the payload's encoding (dist_wire: 0 float32, 1 fp16, 2 bf16, 3 int8, 4 fixed)
 *      8   8  seq     frame number on this link, from 0, +1 per frame
 *     16   8  op      collective number on this communicator, from 0
 *     24   8  count   elements of the collective (all ranks must agree)
 *     32   8  offset  element offset of the payload in the buffer
 *     40   4  length  payload bytes (DATA: dist_wire_payload() of the segment; ABORT: <= RING_ABORT_MAX)
 *     44   4  step    ring step 0 .. 2(N-1)-1 (DATA); the rank that failed first (ABORT)
 *     48  16  tag     Poly1305, one-time key = ChaCha20(link key, nonce = seq)[0..32)
 *     64   .  payload (DATA): the segment's elements, little-endian, in the encoding
 *              of flags (dist/wire.h; int8: a float32 scale then the bytes), or a
 *              printable message (ABORT)
 *
 * All integers little-endian. The receiver knows every DATA field in advance
 * (op, seq, step, count, offset, length follow from the documented schedule),
 * so it compares the whole header with the expected one, and verifies the tag
 * in header mode, before reading a single payload byte; any difference is an
 * error naming the field, the expected and the received value. The tag covers
 * the header only (DIST_MAC_HEADER) or the header and the payload
 * (DIST_MAC_FULL); ABORT frames are always fully covered. The link key comes
 * from the handshake (auth.h), so frames cannot be moved between links, runs
 * or positions in the stream.
 *
 * A rank that fails sends an ABORT both ways: down the ring as the next frame
 * of its stream, and back up the ring on the link it receives from (which
 * carries nothing else) with seq = RING_REVERSE_SEQ, a nonce the forward
 * stream never reaches.
 */
#ifndef MANTA_DIST_FRAME_H
#define MANTA_DIST_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define RING_HDR_BYTES 48  /**< header bytes covered by the tag */
#define RING_TAG_BYTES 16  /**< Poly1305 tag */
#define RING_HEAD_BYTES 64 /**< header + tag: what precedes the payload */
#define RING_ABORT_MAX 480 /**< longest ABORT message */
#define RING_FRAME_VERSION 1
#define RING_REVERSE_SEQ UINT64_MAX /**< seq of an ABORT sent against the ring */

/** Frame types. */
enum { RING_FRAME_DATA = 1, RING_FRAME_ABORT = 2 };

/** A decoded header. */
typedef struct ring_frame {
    uint8_t type;    /**< RING_FRAME_DATA or RING_FRAME_ABORT */
    uint8_t redop;   /**< 0 sum, 1 average */
    uint8_t version; /**< RING_FRAME_VERSION */
    uint8_t flags;   /**< the payload's encoding (dist_wire) */
    uint64_t seq;    /**< frame number on the link */
    uint64_t op;     /**< collective number */
    uint64_t count;  /**< elements of the collective */
    uint64_t offset; /**< element offset of the payload */
    uint32_t length; /**< payload bytes */
    uint32_t step;   /**< ring step (DATA) or failing rank (ABORT) */
} ring_frame;

/** Encode @p f into 48 header bytes (magic and version set here). */
void ring_frame_pack(const ring_frame *f, unsigned char out[RING_HDR_BYTES]);

/**
 * Decode 48 header bytes.
 * @return 0 when magic is right, -1 otherwise (fields are decoded anyway).
 */
int ring_frame_unpack(const unsigned char in[RING_HDR_BYTES], ring_frame *f);

/**
 * Tag of a frame: Poly1305 over the header and (when @p payload is not NULL) the payload,
 * with the one-time key derived from @p link_key and @p seq.
 */
void ring_frame_tag(const unsigned char *link_key, uint64_t seq,
                    const unsigned char hdr[RING_HDR_BYTES], const void *payload, size_t n,
                    unsigned char tag[RING_TAG_BYTES]);

#endif
