/**
 * @file launch.h
 * @brief Small helpers shared by the op launchers of runtime/nn/ (internal).
 */
#ifndef MANTA_NN_LAUNCH_H
#define MANTA_NN_LAUNCH_H

#include <limits.h>

#include "cl/cl.h"

/** Return MANTA_ERR_INVALID_ARG from the calling op when a size does not fit
 *  the kernels' int indices. */
#define NN_CHECK_INT(d, v, what)                                                           \
    do {                                                                                  \
        if ((size_t)(v) > (size_t)INT_MAX)                                                \
            return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,                        \
                                 "%s %zu exceeds the kernels' 32-bit index range", what,   \
                                 (size_t)(v));                                             \
    } while (0)

/** Round @p n up to a multiple of @p m (m > 0). */
static inline size_t nn_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

#endif
