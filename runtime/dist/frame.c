/* Ring frame header encoding and tags (see frame.h). */
#include "dist/frame.h"

#include <sodium.h>
#include <string.h>

#include "core/le.h"

void ring_frame_pack(const ring_frame *f, unsigned char out[RING_HDR_BYTES])
{
    memcpy(out, "MNTR", 4);
    out[4] = RING_FRAME_VERSION;
    out[5] = f->type;
    out[6] = f->redop;
    out[7] = f->flags;
    manta_le_put64(out + 8, f->seq);
    manta_le_put64(out + 16, f->op);
    manta_le_put64(out + 24, f->count);
    manta_le_put64(out + 32, f->offset);
    manta_le_put32(out + 40, f->length);
    manta_le_put32(out + 44, f->step);
}

int ring_frame_unpack(const unsigned char in[RING_HDR_BYTES], ring_frame *f)
{
    f->version = in[4];
    f->type = in[5];
    f->redop = in[6];
    f->flags = in[7];
    f->seq = manta_le_get64(in + 8);
    f->op = manta_le_get64(in + 16);
    f->count = manta_le_get64(in + 24);
    f->offset = manta_le_get64(in + 32);
    f->length = manta_le_get32(in + 40);
    f->step = manta_le_get32(in + 44);
    return memcmp(in, "MNTR", 4) == 0 ? 0 : -1;
}

void ring_frame_tag(const unsigned char *link_key, uint64_t seq,
                    const unsigned char hdr[RING_HDR_BYTES], const void *payload, size_t n,
                    unsigned char tag[RING_TAG_BYTES])
{
    unsigned char nonce[crypto_stream_chacha20_NONCEBYTES], otk[crypto_onetimeauth_KEYBYTES];
    manta_le_put64(nonce, seq);
    crypto_stream_chacha20(otk, sizeof otk, nonce, link_key);
    crypto_onetimeauth_state st;
    crypto_onetimeauth_init(&st, otk);
    crypto_onetimeauth_update(&st, hdr, RING_HDR_BYTES);
    if (payload && n)
        crypto_onetimeauth_update(&st, payload, n);
    crypto_onetimeauth_final(&st, tag);
    sodium_memzero(otk, sizeof otk);
}
