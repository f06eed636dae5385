/* Mutual HMAC-SHA256 challenge-response over one connection (see auth.h). */
#include "dist/auth.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "core/le.h"
#include "dist/net.h"

#define AUTH_MAGIC "MNTH"
#define AUTH_VERSION 2
#define HELLO_SIZE 160
#define CHAL_SIZE 160
#define RESP_SIZE 48
#define RESULT_SIZE 16
#define NONCE 32

enum { T_HELLO = 1, T_CHAL = 2, T_RESP = 3, T_RESULT = 4 };

const char *dist_reject_str(int code)
{
    switch (code) {
    case DIST_ACCEPT: return "accepted";
    case DIST_REJECT_AUTH: return "authentication failed (the shared secrets differ)";
    case DIST_REJECT_JOB: return "different job id";
    case DIST_REJECT_WORLD: return "different world size";
    case DIST_REJECT_RANK: return "unexpected or duplicate rank";
    case DIST_REJECT_VERSION: return "protocol version or link kind differ";
    case DIST_REJECT_BUSY: return "rendezvous not accepting ranks";
    case DIST_REJECT_WIRE: return "different gradient encoding (--compress / --aggregate)";
    }
    return "unknown reason";
}

static void put_head(unsigned char *b, int type, dist_link_kind kind)
{
    memcpy(b, AUTH_MAGIC, 4);
    b[4] = AUTH_VERSION;
    b[5] = (unsigned char)type;
    b[6] = (unsigned char)kind;
    b[7] = 0;
}

/* Job id as a zero-padded 64-byte field. */
static void job_field(const dist_config *cfg, unsigned char out[DIST_JOB_MAX])
{
    memset(out, 0, DIST_JOB_MAX);
    memcpy(out, cfg->job_id, strnlen(cfg->job_id, DIST_JOB_MAX - 1));
}

/* Printable copy of a peer's job field for messages. */
static void job_print(const unsigned char *f, char out[DIST_JOB_MAX])
{
    size_t i = 0;
    for (; i < DIST_JOB_MAX - 1 && f[i]; i++)
        out[i] = (f[i] >= 0x21 && f[i] < 0x7f) ? (char)f[i] : '?';
    out[i] = '\0';
}

typedef struct transcript {
    unsigned char b[16 + 1 + DIST_JOB_MAX + 8 + 16 + 2 + 1 + 4 + 2 * NONCE];
} transcript;

static void make_transcript(transcript *t, dist_link_kind kind, const unsigned char *job, int crank,
                            int world, const dist_addr *caddr, uint16_t cport, int wire, int srank,
                            const unsigned char *cn, const unsigned char *sn)
{
    unsigned char *p = t->b;
    memcpy(p, "manta-auth-v2\0\0\0", 16), p += 16;
    *p++ = (unsigned char)kind;
    memcpy(p, job, DIST_JOB_MAX), p += DIST_JOB_MAX;
    manta_le_put32(p, (uint32_t)crank), p += 4;
    manta_le_put32(p, (uint32_t)world), p += 4;
    memcpy(p, caddr->b, 16), p += 16;
    manta_le_put16(p, cport), p += 2;
    *p++ = (unsigned char)wire;
    manta_le_put32(p, (uint32_t)srank), p += 4;
    memcpy(p, cn, NONCE), p += NONCE;
    memcpy(p, sn, NONCE);
}

static void mac_of(unsigned char out[32], const unsigned char *key, char label, const transcript *t)
{
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init(&st, key, DIST_KEY_BYTES);
    unsigned char l = (unsigned char)label;
    crypto_auth_hmacsha256_update(&st, &l, 1);
    crypto_auth_hmacsha256_update(&st, t->b, sizeof t->b);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof st);
}

static int head_ok(const unsigned char *b, int type, dist_link_kind kind)
{
    return memcmp(b, AUTH_MAGIC, 4) == 0 && b[4] == AUTH_VERSION && b[5] == type &&
           b[6] == (unsigned char)kind;
}

manta_status dist_auth_client(int fd, const dist_config *cfg, dist_link_kind kind, int expect_rank,
                              const dist_hello *me, double deadline, const char *what,
                              unsigned char *link_key, manta_err *err)
{
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    unsigned char hello[HELLO_SIZE], chal[CHAL_SIZE], resp[RESP_SIZE], job[DIST_JOB_MAX];
    unsigned char cn[NONCE];
    manta_status st;
    memset(hello, 0, sizeof hello);
    job_field(cfg, job);
    randombytes_buf(cn, sizeof cn);
    put_head(hello, T_HELLO, kind);
    manta_le_put32(hello + 8, (uint32_t)me->rank);
    manta_le_put32(hello + 12, (uint32_t)cfg->world_size);
    manta_le_put16(hello + 20, me->port);
    hello[22] = (unsigned char)cfg->wire;
    memcpy(hello + 120, me->addr.b, 16);
    memcpy(hello + 24, job, DIST_JOB_MAX);
    memcpy(hello + 88, cn, NONCE);
    if ((st = dist_send_all(fd, hello, sizeof hello, deadline, what, err)) != MANTA_OK)
        return st;
    /* The common 16-byte prefix tells a CHALLENGE from an early RESULT. */
    if ((st = dist_recv_all(fd, chal, RESULT_SIZE, deadline, what, err)) != MANTA_OK)
        return st;
    if (memcmp(chal, AUTH_MAGIC, 4) != 0 || chal[4] != AUTH_VERSION)
        return manta_err_set(
            err, MANTA_ERR_FORMAT,
            "%s is not a manta peer of this version (bad handshake magic or version)", what);
    if (head_ok(chal, T_RESULT, kind) && chal[8] == DIST_REJECT_WIRE)
        return manta_err_set(err, MANTA_ERR_IO,
                             "%s rejected rank %d: different gradient encoding: this rank uses "
                             "'%s', rank 0 '%s' (give every rank the same --compress / "
                             "--aggregate)",
                             what, me->rank, dist_wire_name(cfg->wire),
                             dist_wire_name((dist_wire)chal[9]));
    if (head_ok(chal, T_RESULT, kind))
        return manta_err_set(err, MANTA_ERR_IO, "%s rejected rank %d: %s", what, me->rank,
                             dist_reject_str(chal[8]));
    if (!head_ok(chal, T_CHAL, kind))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s sent handshake message type %u, expected a challenge", what,
                             (unsigned)chal[5]);
    if ((st = dist_recv_all(fd, chal + RESULT_SIZE, CHAL_SIZE - RESULT_SIZE, deadline, what,
                            err)) != MANTA_OK)
        return st;
    int srank = (int)manta_le_get32(chal + 8);
    int sworld = (int)manta_le_get32(chal + 12);
    if (memcmp(chal + 24, job, DIST_JOB_MAX) != 0) {
        char pj[DIST_JOB_MAX];
        job_print(chal + 24, pj);
        return manta_err_set(err, MANTA_ERR_IO, "%s belongs to job '%s', this rank to job '%s'",
                             what, pj, cfg->job_id);
    }
    if (sworld != cfg->world_size || srank != expect_rank)
        return manta_err_set(err, MANTA_ERR_IO,
                             "%s is rank %d of world %d; expected rank %d of world %d", what, srank,
                             sworld, expect_rank, cfg->world_size);
    transcript t;
    make_transcript(&t, kind, job, me->rank, cfg->world_size, &me->addr, me->port, (int)cfg->wire,
                    srank, cn, chal + 88);
    unsigned char mac[32];
    mac_of(mac, cfg->key, 'S', &t);
    if (sodium_memcmp(mac, chal + 120, 32) != 0)
        return manta_err_set(
            err, MANTA_ERR_IO,
            "authentication of %s failed: it does not know this job's shared secret "
            "(MANTA_SECRET differs?)",
            what);
    memset(resp, 0, sizeof resp);
    put_head(resp, T_RESP, kind);
    mac_of(resp + 16, cfg->key, 'C', &t);
    if ((st = dist_send_all(fd, resp, sizeof resp, deadline, what, err)) != MANTA_OK)
        return st;
    unsigned char res[RESULT_SIZE];
    if ((st = dist_recv_all(fd, res, sizeof res, deadline, what, err)) != MANTA_OK)
        return st;
    if (!head_ok(res, T_RESULT, kind))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s sent a malformed handshake result", what);
    if (res[8] != DIST_ACCEPT)
        return manta_err_set(err, MANTA_ERR_IO, "%s rejected rank %d: %s", what, me->rank,
                             dist_reject_str(res[8]));
    mac_of(link_key, cfg->key, 'L', &t);
    return MANTA_OK;
}

static manta_status reject(int fd, dist_link_kind kind, int code, int wire, double deadline,
                           const char *what, int *reason)
{
    unsigned char res[RESULT_SIZE];
    memset(res, 0, sizeof res);
    put_head(res, T_RESULT, kind);
    res[8] = (unsigned char)code;
    res[9] = (unsigned char)wire;
    if (reason)
        *reason = code;
    /* Best effort and brief: the peer may be gone or hostile. */
    double d = dist_now() + 0.2;
    (void)dist_send_all(fd, res, sizeof res, d < deadline ? d : deadline, what, NULL);
    return MANTA_ERR_IO;
}

manta_status dist_auth_server(int fd, const dist_config *cfg, dist_link_kind kind, int expect_rank,
                              const unsigned char *taken, double deadline, const char *what,
                              dist_hello *peer, unsigned char *link_key, int *reason,
                              manta_err *err)
{
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    if (reason)
        *reason = DIST_REJECT_AUTH;
    unsigned char hello[HELLO_SIZE], chal[CHAL_SIZE], resp[RESP_SIZE], job[DIST_JOB_MAX], sn[NONCE];
    manta_status st;
    job_field(cfg, job);
    /* the 16-byte head first: a peer of another version is told so, not left waiting */
    if ((st = dist_recv_all(fd, hello, 16, deadline, what, err)) != MANTA_OK)
        return st;
    if (memcmp(hello, AUTH_MAGIC, 4) != 0 || hello[5] != T_HELLO) {
        manta_err_set(err, MANTA_ERR_FORMAT,
                      "rejected %s: not a manta handshake (bad magic or type)", what);
        return reject(fd, kind, DIST_REJECT_VERSION, (int)cfg->wire, deadline, what, reason);
    }
    if (hello[4] != AUTH_VERSION || hello[6] != (unsigned char)kind) {
        manta_err_set(err, MANTA_ERR_FORMAT,
                      "rejected %s: protocol version %u link kind %u, expected %u and %u", what,
                      (unsigned)hello[4], (unsigned)hello[6], AUTH_VERSION, (unsigned)kind);
        return reject(fd, kind, DIST_REJECT_VERSION, (int)cfg->wire, deadline, what, reason);
    }
    if ((st = dist_recv_all(fd, hello + 16, sizeof hello - 16, deadline, what, err)) != MANTA_OK)
        return st;
    int crank = (int)manta_le_get32(hello + 8);
    int cworld = (int)manta_le_get32(hello + 12);
    dist_addr caddr;
    memcpy(caddr.b, hello + 120, 16);
    uint16_t cport = manta_le_get16(hello + 20);
    int cwire = hello[22];
    if (memcmp(hello + 24, job, DIST_JOB_MAX) != 0) {
        char pj[DIST_JOB_MAX];
        job_print(hello + 24, pj);
        manta_err_set(err, MANTA_ERR_IO, "rejected %s: job '%s', this job is '%s'", what, pj,
                      cfg->job_id);
        return reject(fd, kind, DIST_REJECT_JOB, (int)cfg->wire, deadline, what, reason);
    }
    if (cworld != cfg->world_size) {
        manta_err_set(err, MANTA_ERR_IO, "rejected %s: world size %d, this job has %d", what,
                      cworld, cfg->world_size);
        return reject(fd, kind, DIST_REJECT_WORLD, (int)cfg->wire, deadline, what, reason);
    }
    int rank_ok = expect_rank >= 0
                      ? crank == expect_rank
                      : (crank > 0 && crank < cfg->world_size && !(taken && taken[crank]));
    if (!rank_ok) {
        manta_err_set(err, MANTA_ERR_IO, "rejected %s: claims rank %d, %s", what, crank,
                      expect_rank >= 0 ? "not the expected neighbour"
                                       : "out of range or already joined");
        return reject(fd, kind, DIST_REJECT_RANK, (int)cfg->wire, deadline, what, reason);
    }
    if (cwire != (int)cfg->wire) {
        manta_err_set(err, MANTA_ERR_IO,
                      "rejected %s: rank %d uses the gradient encoding '%s', this job (rank %d) "
                      "'%s' (--compress / --aggregate differ)",
                      what, crank,
                      cwire < DIST_WIRE_COUNT ? dist_wire_name((dist_wire)cwire) : "unknown",
                      cfg->rank, dist_wire_name(cfg->wire));
        return reject(fd, kind, DIST_REJECT_WIRE, (int)cfg->wire, deadline, what, reason);
    }
    randombytes_buf(sn, sizeof sn);
    transcript t;
    make_transcript(&t, kind, job, crank, cworld, &caddr, cport, cwire, cfg->rank, hello + 88, sn);
    memset(chal, 0, sizeof chal);
    put_head(chal, T_CHAL, kind);
    manta_le_put32(chal + 8, (uint32_t)cfg->rank);
    manta_le_put32(chal + 12, (uint32_t)cfg->world_size);
    memcpy(chal + 24, job, DIST_JOB_MAX);
    memcpy(chal + 88, sn, NONCE);
    mac_of(chal + 120, cfg->key, 'S', &t);
    if ((st = dist_send_all(fd, chal, sizeof chal, deadline, what, err)) != MANTA_OK)
        return st;
    manta_err e2;
    if ((st = dist_recv_all(fd, resp, sizeof resp, deadline, what, &e2)) != MANTA_OK) {
        manta_err_set(
            err, st,
            "rejected %s claiming rank %d: authentication failed: it hung up at the challenge "
            "(%s), as a peer with another secret does",
            what, crank, e2.msg);
        if (reason)
            *reason = DIST_REJECT_AUTH;
        return st;
    }
    unsigned char mac[32];
    mac_of(mac, cfg->key, 'C', &t);
    if (!head_ok(resp, T_RESP, kind) || sodium_memcmp(mac, resp + 16, 32) != 0) {
        manta_err_set(err, MANTA_ERR_IO,
                      "rejected %s claiming rank %d: authentication failed (wrong secret?)", what,
                      crank);
        return reject(fd, kind, DIST_REJECT_AUTH, (int)cfg->wire, deadline, what, reason);
    }
    unsigned char res[RESULT_SIZE];
    memset(res, 0, sizeof res);
    put_head(res, T_RESULT, kind);
    res[8] = DIST_ACCEPT;
    if ((st = dist_send_all(fd, res, sizeof res, deadline, what, err)) != MANTA_OK)
        return st;
    if (reason)
        *reason = DIST_ACCEPT;
    peer->rank = crank;
    peer->addr = caddr;
    peer->port = cport;
    mac_of(link_key, cfg->key, 'L', &t);
    return MANTA_OK;
}
