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

/** Return MANTA_ERR_INVALID_ARG from the calling op @p op when the int shape
 *  field @p name (value @p v) is below 1. */
#define NN_CHECK_POS(d, op, name, v)                                                       \
    do {                                                                                  \
        if ((v) < 1)                                                                      \
            return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,                        \
                                 "%s: %s is %d; it must be at least 1", op, name, (int)(v)); \
    } while (0)

/** Round @p n up to a multiple of @p m (m > 0). */
static inline size_t nn_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/** Largest work-group size the reduction kernels use. */
#define NN_REDUCE_WG_MAX 128

/**
 * Work-group size for a kernel that reduces @p n values per work-group with
 * wg_sum() of cl_kernels/common.cl: a power of two, at most NN_REDUCE_WG_MAX
 * and the device's largest work-group, and no larger than needed for @p n.
 */
static inline size_t nn_reduce_wg(const mcl_dev *d, size_t n)
{
    size_t cap = mcl_info(d)->max_work_group;
    size_t wg = 1;
    while (wg * 2 <= NN_REDUCE_WG_MAX && wg * 2 <= cap && wg < n)
        wg *= 2;
    return wg;
}

#endif
