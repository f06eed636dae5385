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

/** Return MANTA_ERR_INVALID_ARG from the calling op, naming @p op and the
 *  field, when the int field @p f of shape @p s is below @p lo. */
#define NN_CHECK_FIELD_MIN(d, op, s, f, lo)                                               \
    do {                                                                                  \
        if ((s)->f < (lo))                                                                \
            return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,                        \
                                 "%s: shape field %s = %d must be >= %d", op, #f, (s)->f,  \
                                 lo);                                                      \
    } while (0)

/** Round @p n up to a multiple of @p m (m > 0). */
static inline size_t nn_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

/** Largest work-group size the reduction kernels use. */
#define NN_REDUCE_WG_MAX 128

/** @p want work-items per group, or fewer when the kernel of @p L allows
 *  fewer on its device (mcl_launch_wg_max()). */
static inline size_t nn_group_cap(const mcl_launch *L, size_t want)
{
    size_t cap = mcl_launch_wg_max(L);
    return want < cap ? want : cap;
}

/**
 * Work-group size for the kernel of @p L that reduces @p n values per
 * work-group with wg_sum() of cl_kernels/common.cl: a power of two, at most
 * NN_REDUCE_WG_MAX and the kernel's largest work-group on the device, and no
 * larger than needed for @p n.
 */
static inline size_t nn_reduce_wg(const mcl_launch *L, size_t n)
{
    size_t cap = nn_group_cap(L, NN_REDUCE_WG_MAX);
    size_t wg = 1;
    while (wg * 2 <= cap && wg < n)
        wg *= 2;
    return wg;
}

/** Largest work-group extent the device allows along dimension @p dim (0..2)
 *  (CL_DEVICE_MAX_WORK_ITEM_SIZES, clamped by MANTA_DEVICE_LIMITS; GPUs often
 *  allow only 64 along dim 2). */
static inline size_t nn_item_max(const mcl_dev *d, unsigned dim)
{
    return dim < 3 ? mcl_info(d)->max_work_item[dim] : 1;
}

/** Set the int arguments @p v[0] ... @p v[n - 1] of @p L, in order (a kernel's shape
 *  parameters, written as one table). */
static inline void nn_arg_ints(mcl_launch *L, const int *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mcl_arg_int(L, v[i]);
}

/** Run @p L with one work-item per value of its @p n outputs, in one dimension, the
 *  work-group left to the implementation; @p n is stated for the launch log. */
static inline manta_status nn_run_per_value(mcl_launch *L, size_t n)
{
    mcl_launch_output(L, n);
    return mcl_launch_run(L, 1, (size_t[]){n}, NULL);
}

/** Work-group size of nn_wgrad_reduce() at most (its partial sums are few per value). */
#define NN_WGRAD_REDUCE_WG 64

/**
 * out += the sum of @p splits partial sums of a weight gradient: @p part holds
 * (splits, count) floats, value o = r*cols + c of each is added to out[r*ld + c]
 * (ld >= cols: a block of a larger weight matrix). Kernel wgrad_reduce of
 * cl_kernels/conv.cl, one work-group per value (defined in runtime/nn/conv.c; used by
 * the GPU variant's convolution and depthwise weight gradients).
 */
manta_status nn_wgrad_reduce(mcl_dev *d, mview part, mview out, size_t count, size_t cols,
                             size_t ld, size_t splits);

/** Output size of a sliding window along one axis, (in + 2*pad - k) / stride + 1;
 *  0 when an argument is out of range or the window does not fit the padded input. */
static inline int nn_window_out(int in, int k, int stride, int pad)
{
    if (in < 1 || k < 1 || stride < 1 || pad < 0 || (long long)in + 2LL * pad < k)
        return 0;
    return (int)(((long long)in + 2LL * pad - k) / stride + 1);
}

/** MANTA_ERR_INVALID_ARG naming @p op when its shape @p s is NULL. */
static inline manta_status nn_need_shape(mcl_dev *d, const char *op, const void *s)
{
    if (s)
        return MANTA_OK;
    return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: shape is NULL", op);
}

/** MANTA_ERR_INVALID_ARG naming @p op and @p name when @p v has no buffer. */
static inline manta_status nn_need_buffer(mcl_dev *d, const char *op, const char *name, mview v)
{
    if (v.mem)
        return MANTA_OK;
    return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: %s has no buffer", op, name);
}

/** The buffers of a convolution's forward (conv.c, depthwise.c): x, w and y. */
static inline manta_status nn_need_forward_buffers(mcl_dev *d, const char *op, mview x, mview w,
                                                   mview y)
{
    manta_status st = nn_need_buffer(d, op, "x", x);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "w", w);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "y", y);
    return st;
}

/** The buffers of a convolution's backward: dy, x when @p dw is wanted (has a buffer),
 *  w when @p dx is. */
static inline manta_status nn_need_backward_buffers(mcl_dev *d, const char *op, mview x, mview w,
                                                    mview dy, mview dx, mview dw)
{
    manta_status st = nn_need_buffer(d, op, "dy", dy);
    if (st == MANTA_OK && dw.mem)
        st = nn_need_buffer(d, op, "x", x);
    if (st == MANTA_OK && dx.mem)
        st = nn_need_buffer(d, op, "w", w);
    return st;
}

#endif
