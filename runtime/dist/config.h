/**
 * @file config.h
 * @brief Configuration of a distributed job: rank, world size, rendezvous
 *        address, ring interface, job id, shared secret, deadline. Filled from
 *        torchrun-style or SLURM environment variables, then overridden by the
 *        caller's flags.
 *
 * Precedence, lowest first: built-in defaults, SLURM variables, torchrun
 * variables and MANTA_* variables, then whatever the caller (the CLI's flags)
 * writes into the struct after dist_config_from_env().
 *
 * | field        | torchrun / manta                  | SLURM                          | default   |
 * |--------------|-----------------------------------|--------------------------------|-----------|
 * | rank         | RANK                              | SLURM_PROCID                   | 0         |
 * | world_size   | WORLD_SIZE                        | SLURM_NTASKS                   | 1         |
 * | local_rank   | LOCAL_RANK                        | SLURM_LOCALID                  | 0         |
 * | master_addr  | MASTER_ADDR                       | first host of SLURM_JOB_NODELIST | 127.0.0.1 |
 * | master_port  | MASTER_PORT                       |                                | 29500     |
 * | job_id       | MANTA_JOB_ID, TORCHELASTIC_RUN_ID | SLURM_JOB_ID                   | "manta"   |
 * | iface        | MANTA_IFACE                       |                                | (route to master) |
 * | timeout_s    | MANTA_TIMEOUT (seconds)           |                                | 60        |
 * | secret       | MANTA_SECRET, MANTA_SECRET_FILE   |                                | none      |
 * | frame_mac    | MANTA_FRAME_MAC (header, full)    |                                | header    |
 * | sock_buf     | MANTA_SOCKBUF (bytes, 0 = autotune) |                              | 0         |
 * | min/max_nodes | PET_NNODES (N or MIN:MAX)        |                                | 0 (none)  |
 * | ring_order   | MANTA_RING_ORDER (e.g. "2,0,1")   |                                | 0..N-1    |
 */
#ifndef MANTA_DIST_CONFIG_H
#define MANTA_DIST_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** Largest world size accepted (bounds every table received from the network). */
#define DIST_MAX_WORLD 4096
/** Longest job id, including the terminator. Job ids are printable ASCII. */
#define DIST_JOB_MAX 64
/** Size of the derived secret key (an HMAC-SHA256 key). */
#define DIST_KEY_BYTES 32

/** What the per-frame authentication tag of the ring covers. */
typedef enum dist_frame_mac {
    DIST_MAC_HEADER = 0, /**< Poly1305 over the 48-byte header (binds frames to the link; cheap) */
    DIST_MAC_FULL = 1    /**< Poly1305 over header and payload (integrity of the data too) */
} dist_frame_mac;

/** Encoding of the gradient allreduces' payload on the ring (dist/wire.h; --compress, --aggregate). */
typedef enum dist_wire {
    DIST_WIRE_F32 = 0,  /**< float32 (default) */
    DIST_WIRE_FP16 = 1, /**< IEEE binary16, float32 accumulation at every hop */
    DIST_WIRE_BF16 = 2, /**< bfloat16, float32 accumulation at every hop */
    DIST_WIRE_INT8 = 3, /**< int8 with a scale per segment and error feedback */
    DIST_WIRE_FIXED = 4 /**< int32 fixed point with a scale agreed per allreduce: exact sums */
} dist_wire;

/** Number of dist_wire values. */
#define DIST_WIRE_COUNT 5

/** The --compress / --aggregate name of @p w: "none", "fp16", "bf16", "int8", "fixed". */
const char *dist_wire_name(dist_wire w);

/** Optional sink for events the layer reports (rejected peers, warnings). Called from any thread. */
typedef void (*dist_event_fn)(void *ctx, const char *line);

/** Everything a rank needs to join a job. Plain data: copy it freely. */
typedef struct dist_config {
    int rank;              /**< this rank, 0 <= rank < world_size */
    int world_size;        /**< number of ranks, 1 .. DIST_MAX_WORLD */
    int local_rank;        /**< rank within this host (informational) */
    char master_addr[256]; /**< rendezvous host name, IPv4 or IPv6 address (rank 0 listens there) */
    int master_port;       /**< rendezvous TCP port, 1..65535 */
    int rdzv_bind_all;     /**< rank 0 binds the rendezvous to 0.0.0.0 instead of master_addr */
    char iface[64];        /**< interface whose address (the master's family) the ring uses; "" =
                             the route to the master */
    char ring_addr[64]; /**< explicit IPv4 or IPv6 address for the ring listener; overrides iface */
    int ring_port;      /**< ring listener port; 0 = ephemeral */
    char job_id[DIST_JOB_MAX]; /**< distinguishes runs; part of every authentication */
    unsigned char
        key[DIST_KEY_BYTES]; /**< derived from the shared secret (dist_config_set_secret) */
    int has_key;             /**< non-zero once key holds a secret */
    double timeout_s;        /**< deadline of every blocking network operation, seconds */
    int sock_buf; /**< ring SO_SNDBUF/SO_RCVBUF in bytes; 0 = kernel autotuning (default) */
    dist_frame_mac frame_mac; /**< per-frame tag coverage on the ring */
    int min_nodes, max_nodes; /**< elastic range from PET_NNODES (torchrun's --nnodes MIN:MAX);
                                   0 when not given */
    char ring_order[256];     /**< the ranks in their order around the ring ("2,0,1"); "" = by rank.
                               Checked by ring_create() (a permutation of 0..N-1) */
    dist_wire wire; /**< encoding of the gradient allreduces (every rank must agree: the rendezvous
                         refuses a rank with another) */
    dist_event_fn event; /**< where rejections and warnings are reported; may be NULL */
    void *event_ctx;     /**< passed to @ref event */
} dist_config;

/** Look-up of one environment variable: returns its value or NULL. */
typedef const char *(*dist_getenv_fn)(void *ctx, const char *name);

/** Defaults: world 1, rank 0, 127.0.0.1:29500, job "manta", 60 s, header MACs, no secret. */
void dist_config_init(dist_config *c);

/**
 * Fill @p c from the environment (see the table in this file). Unset variables
 * leave the field as it is; malformed ones are an error naming the variable.
 * @param env  look-up function, called with each variable's name (the MANTA_* names are
 *             core/env.h's); NULL reads the process environment (manta_env_get() for the
 *             MANTA_* variables, getenv() for torchrun's and SLURM's).
 * @param ctx  passed to @p env.
 */
manta_status dist_config_from_env(dist_config *c, dist_getenv_fn env, void *ctx, manta_err *err);

/**
 * Parse an elastic range "N" or "MIN:MAX" (torchrun's --nnodes, PET_NNODES) into @p min and
 * @p max, 1 <= min <= max <= DIST_MAX_WORLD. @p what names the source in the message.
 */
manta_status dist_parse_nnodes(const char *what, const char *v, int *min, int *max, manta_err *err);

/**
 * Derive the key from a shared secret (BLAKE2b-256 of the bytes, domain-separated).
 * @param secret bytes of the secret; at least 8 bytes.
 */
manta_status dist_config_set_secret(dist_config *c, const void *secret, size_t len, manta_err *err);

/**
 * Read the secret from a file (trailing newlines dropped, at most 4096 bytes).
 * The file must not be readable by group or others.
 */
manta_status dist_config_secret_file(dist_config *c, const char *path, manta_err *err);

/**
 * Check ranges and the presence of a secret when world_size > 1.
 * @return MANTA_ERR_INVALID_ARG naming the field that is wrong.
 */
manta_status dist_config_check(const dist_config *c, manta_err *err);

/**
 * The host at @p index of a SLURM host list such as "node[01-04,07],gpu-[1-2]x,login".
 * Brackets hold comma-separated numbers or ranges (zero padding kept); several
 * bracket groups in one name expand as a product, the last one fastest.
 * @param count out: number of hosts in the list; may be NULL.
 * @return MANTA_ERR_FORMAT for a malformed list, MANTA_ERR_INVALID_ARG when index >= count.
 */
manta_status dist_nodelist_host(const char *list, size_t index, char *out, size_t cap,
                                size_t *count, manta_err *err);

#endif
