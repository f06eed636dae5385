/**
 * @file env.h
 * @brief The MANTA_* environment variables: one table of every variable the library and the
 *        programs read (name, meaning, default), and the one accessor that reads them.
 *
 * Every MANTA_* variable is declared here, once, as an enum value and a row of the table in
 * env.c; nothing else in runtime/ or tools/ calls getenv() on a MANTA_* name (a test checks).
 * `manta --help-env` prints the table and README.md's "Environment variables" lists the same
 * names (a test checks that too). Variables of other tools that the library also honours
 * (torchrun's RANK, WORLD_SIZE, MASTER_ADDR, ...; SLURM's) are read by dist/config.c and
 * listed in docs/distributed.md, not here.
 *
 * The table is constant and the accessor keeps no state: it returns what getenv() returns, so
 * the usual getenv() rules apply (the pointer is the environment's, valid until the variable
 * is changed; do not call it while another thread calls setenv()).
 *
 * Adding a variable: an enum value before MANTA_ENV_COUNT, its row in env.c (same order), the
 * code that reads it through manta_env_get(), and a line in README.md's list.
 */
#ifndef MANTA_CORE_ENV_H
#define MANTA_CORE_ENV_H

#include <stddef.h>

/** Every MANTA_* environment variable; the value indexes the table of env.c. */
typedef enum manta_env_var {
    /* devices and kernels (runtime/cl) */
    MANTA_ENV_DEVICE = 0,     /**< MANTA_DEVICE: the device when no --device is given */
    MANTA_ENV_DEVICE_LIMITS,  /**< MANTA_DEVICE_LIMITS: clamps every device's limits */
    MANTA_ENV_KERNELS,        /**< MANTA_KERNELS: cpu, gpu or auto kernel variants */
    MANTA_ENV_CACHE_DIR,      /**< MANTA_CACHE_DIR: program-binary and tuning cache folder */
    MANTA_ENV_NO_TUNING,      /**< MANTA_NO_TUNING: ignore the device's tuning file */
    MANTA_ENV_CLBLAST_TUNERS, /**< MANTA_CLBLAST_TUNERS: where manta tune finds the tuners */
    /* distributed jobs (runtime/dist, manta launch) */
    MANTA_ENV_JOB_ID,      /**< MANTA_JOB_ID: the job id */
    MANTA_ENV_SECRET,      /**< MANTA_SECRET: the ranks' shared secret */
    MANTA_ENV_SECRET_FILE, /**< MANTA_SECRET_FILE: a file holding the shared secret */
    MANTA_ENV_IFACE,       /**< MANTA_IFACE: the ring's network interface */
    MANTA_ENV_TIMEOUT,     /**< MANTA_TIMEOUT: deadline of network operations, seconds */
    MANTA_ENV_FRAME_MAC,   /**< MANTA_FRAME_MAC: header or full frame tags */
    MANTA_ENV_SOCKBUF,     /**< MANTA_SOCKBUF: ring socket buffer bytes */
    MANTA_ENV_RING_ORDER,  /**< MANTA_RING_ORDER: the ranks' order around the ring */
    /* the training monitor (runtime/monitor) */
    MANTA_ENV_MONITOR_TOKEN, /**< MANTA_MONITOR_TOKEN: the monitor's access token */
    MANTA_ENV_COUNT          /**< number of variables (not a variable) */
} manta_env_var;

/** One row of the table: constant strings, never NULL. */
typedef struct manta_env_desc {
    const char *name;    /**< the variable, e.g. "MANTA_DEVICE" */
    const char *group;   /**< what reads it: "devices", "distributed", "monitor" */
    const char *meaning; /**< what it sets and the values it takes, one sentence */
    const char *unset;   /**< what happens when it is unset (the default) */
} manta_env_desc;

/** The row of @p v; NULL when @p v is not in [0, MANTA_ENV_COUNT). */
const manta_env_desc *manta_env_describe(manta_env_var v);

/** The name of @p v ("MANTA_DEVICE"); "" when @p v is out of range. */
const char *manta_env_name(manta_env_var v);

/** The variable named @p name, or -1 when the table has no such name (or @p name is NULL). */
int manta_env_find(const char *name);

/**
 * The value of @p v in the process environment, as getenv() returns it: NULL when unset (or
 * @p v is out of range), possibly the empty string. Callers decide what an empty value means
 * (the table's rows say).
 */
const char *manta_env_get(manta_env_var v);

#endif
