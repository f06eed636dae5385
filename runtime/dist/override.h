/**
 * @file override.h
 * @brief A distributed job's settings given on a command line (--world,
 *        --rank, --master HOST[:PORT], --iface, --ring-addr, --job,
 *        --secret-file, --timeout, --rdzv-bind-all), applied over those
 *        dist_config_from_env() read: a flag wins over the environment.
 */
#ifndef MANTA_DIST_OVERRIDE_H
#define MANTA_DIST_OVERRIDE_H

#include "dist/config.h"

/** What the flags say; a field left at its value of DIST_OVERRIDE_NONE changes nothing. */
typedef struct dist_override {
    int world_size;          /**< > 0: the world size */
    int rank;                /**< >= 0: this rank */
    const char *master;      /**< "HOST", "HOST:PORT" (split at the last colon), an IPv6 address
                                  alone ("::1") or in brackets ("[::1]", "[::1]:29500") */
    const char *iface;       /**< interface of the ring */
    const char *ring_addr;   /**< IPv4 or IPv6 address of the ring listener */
    const char *job_id;      /**< job id */
    const char *secret_file; /**< read with dist_config_secret_file() */
    double timeout_s;        /**< > 0: the network deadline, seconds */
    int rdzv_bind_all;       /**< non-zero: rank 0 binds the rendezvous to every address */
} dist_override;

/** A dist_override that changes nothing (the strings NULL). */
#define DIST_OVERRIDE_NONE ((dist_override){0, -1, NULL, NULL, NULL, NULL, NULL, 0, 0})

/**
 * Apply @p o to @p c. The fields are checked as they are written; the whole
 * configuration is not (dist_config_check() does that).
 * @return MANTA_ERR_INVALID_ARG naming the flag: a port that is not an integer
 *         in [1, 65535] ("--master port needs an integer in [1, 65535], got
 *         'x'"), an empty host, a value longer than its field; the errors of
 *         dist_config_secret_file(). @p c may then be partly changed.
 */
manta_status dist_config_override(dist_config *c, const dist_override *o, manta_err *err);

#endif
