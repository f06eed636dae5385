/* The MANTA_* environment variables: the table and its one reader (env.h). */
#include "core/env.h"

#include <stdlib.h>
#include <string.h>

/* One row per manta_env_var, in the enum's order (test_core_env checks the names). */
static const manta_env_desc table[MANTA_ENV_COUNT] = {
    [MANTA_ENV_DEVICE] = {"MANTA_DEVICE", "devices",
                          "the OpenCL device when no --device is given: an index from `manta "
                          "devices`, a type (gpu, cpu, accelerator) or part of the device or "
                          "platform name",
                          "device 0"},
    [MANTA_ENV_DEVICE_LIMITS] = {"MANTA_DEVICE_LIMITS", "devices",
                                 "clamps the limits of every device, e.g. "
                                 "local=32k,wg=256,items=256x256x64,alloc=256m (a small GPU's "
                                 "profile on any device)",
                                 "the limits the devices report"},
    [MANTA_ENV_KERNELS] = {"MANTA_KERNELS", "devices",
                           "the kernel variants: cpu, gpu or auto (by device type)", "auto"},
    [MANTA_ENV_CACHE_DIR] = {"MANTA_CACHE_DIR", "devices",
                             "the folder of the compiled-program cache and of the CLBlast "
                             "tuning files",
                             "$XDG_CACHE_HOME/manta, else ~/.cache/manta"},
    [MANTA_ENV_NO_TUNING] = {"MANTA_NO_TUNING", "devices",
                             "any value but empty or 0: ignore the device's CLBlast tuning file "
                             "for this run",
                             "the tuning file is applied"},
    [MANTA_ENV_CLBLAST_TUNERS] = {"MANTA_CLBLAST_TUNERS", "devices",
                                  "the folder holding CLBlast's tuner programs (manta tune)",
                                  "searched in $PATH"},
    [MANTA_ENV_JOB_ID] = {"MANTA_JOB_ID", "distributed",
                          "the id of a distributed job, part of every authentication (manta "
                          "launch sets one)",
                          "TORCHELASTIC_RUN_ID, else SLURM_JOB_ID, else \"manta\""},
    [MANTA_ENV_SECRET] = {"MANTA_SECRET", "distributed",
                          "the ranks' shared secret, 8 bytes or more (manta launch sets a random "
                          "one); wins over MANTA_SECRET_FILE",
                          "no secret: required for more than one rank"},
    [MANTA_ENV_SECRET_FILE] = {"MANTA_SECRET_FILE", "distributed",
                               "a file (readable by its owner only) holding the shared secret",
                               "no file is read"},
    [MANTA_ENV_IFACE] = {"MANTA_IFACE", "distributed",
                         "the network interface whose address the ring uses, IPv4 or IPv6 as "
                         "the master's (--iface)",
                         "the interface that routes to the master"},
    [MANTA_ENV_TIMEOUT] = {"MANTA_TIMEOUT", "distributed",
                           "deadline of every network operation, seconds in (0, 86400] "
                           "(--timeout)",
                           "60"},
    [MANTA_ENV_FRAME_MAC] = {"MANTA_FRAME_MAC", "distributed",
                             "what the ring's frame tags cover: header or full (--mac)", "header"},
    [MANTA_ENV_SOCKBUF] = {"MANTA_SOCKBUF", "distributed",
                           "the ring's socket buffer sizes in bytes, 0 for the kernel's "
                           "autotuning (--sock-buf)",
                           "0"},
    [MANTA_ENV_RING_ORDER] = {"MANTA_RING_ORDER", "distributed",
                              "the ranks in their order around the ring, e.g. 2,0,1 (the same on "
                              "every rank): neighbours on one host, or a check that --aggregate "
                              "fixed does not depend on the order",
                              "0,1,...,N-1"},
    [MANTA_ENV_MONITOR_TOKEN] = {"MANTA_MONITOR_TOKEN", "monitor",
                                 "the token (8 to 256 characters) every request to the training "
                                 "monitor must carry; required to listen beyond loopback",
                                 "no token; the monitor then listens on loopback only"},
};

const manta_env_desc *manta_env_describe(manta_env_var v)
{
    return (int)v >= 0 && v < MANTA_ENV_COUNT ? &table[v] : NULL;
}

const char *manta_env_name(manta_env_var v)
{
    const manta_env_desc *d = manta_env_describe(v);
    return d ? d->name : "";
}

int manta_env_find(const char *name)
{
    for (int i = 0; name && i < MANTA_ENV_COUNT; i++)
        if (strcmp(table[i].name, name) == 0)
            return i;
    return -1;
}

const char *manta_env_get(manta_env_var v)
{
    const manta_env_desc *d = manta_env_describe(v);
    return d ? getenv(d->name) : NULL;
}
