/**
 * @file launch.h
 * @brief Small helpers shared by the op launchers of runtime/nn/ (internal).
 */
#ifndef MANTA_NN_LAUNCH_H
#define MANTA_NN_LAUNCH_H

#include <limits.h>

#include "cl/cl.h"
#include "nn/conv.h"

/** Return MANTA_ERR_INVALID_ARG from the calling op when a size does not fit
 *  the kernels' int indices. */
#define NN_CHECK_INT(d, v, what)                                                         \
    do {                                                                                 \
        if ((size_t)(v) > (size_t)INT_MAX)                                               \
            return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,                      \
                                 "%s %zu exceeds the kernels' 32-bit index range", what, \
                                 (size_t)(v));                                           \
    } while (0)

/** Return MANTA_ERR_INVALID_ARG from the calling op @p op when the int shape
 *  field @p name (value @p v) is below 1. */
#define NN_CHECK_POS(d, op, name, v)                                                         \
    do {                                                                                     \
        if ((v) < 1)                                                                         \
            return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,                          \
                                 "%s: %s is %d; it must be at least 1", op, name, (int)(v)); \
    } while (0)

/** One int field of an op's shape and the least value it may take (NN_CHECK_FIELDS()). */
typedef struct nn_field {
    const char *name;
    int value, min;
} nn_field;

/** The field @p f of shape @p s with its least value @p lo, for NN_CHECK_FIELDS(). */
#define NN_FIELD(s, f, lo) \
    {                      \
#f, (s)->f, lo     \
    }

/** MANTA_ERR_INVALID_ARG naming @p op and the first of the @p n fields below its least
 *  value ("<op>: shape field <name> = <value> must be >= <min>"), else MANTA_OK. */
static inline manta_status nn_check_fields(mcl_dev *d, const char *op, const nn_field *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (f[i].value < f[i].min)
            return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                                 "%s: shape field %s = %d must be >= %d", op, f[i].name, f[i].value,
                                 f[i].min);
    return MANTA_OK;
}

/** Check the NN_FIELD()s given (nn_check_fields()): returns from the calling op on the
 *  first field below its least value. */
#define NN_CHECK_FIELDS(d, op, ...)                                   \
    MANTA_TRY(nn_check_fields(d, op, (const nn_field[]){__VA_ARGS__}, \
                              sizeof((const nn_field[]){__VA_ARGS__}) / sizeof(nn_field)))

/** The fields of the convolution-like shapes (nn_conv2d_shape, nn_deconv2d_shape): sizes,
 *  kernel and strides at least 1, the padding and w_ld at least 0. */
#define NN_CONV_FIELDS(s)                                                                       \
    NN_FIELD(s, n, 1), NN_FIELD(s, cin, 1), NN_FIELD(s, h, 1), NN_FIELD(s, w, 1),               \
        NN_FIELD(s, cout, 1), NN_FIELD(s, kh, 1), NN_FIELD(s, kw, 1), NN_FIELD(s, stride_h, 1), \
        NN_FIELD(s, stride_w, 1), NN_FIELD(s, pad_h, 0), NN_FIELD(s, pad_w, 0),                 \
        NN_FIELD(s, w_ld, 0)

/** Check a convolution-like shape @p s (MANTA_TRY()s): not NULL (nn_need_shape()), and its
 *  NN_CONV_FIELDS. */
#define NN_CHECK_CONV_SHAPE(d, op, s)              \
    do {                                           \
        MANTA_TRY(nn_need_shape(d, op, s));        \
        NN_CHECK_FIELDS(d, op, NN_CONV_FIELDS(s)); \
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

/* ---- the GEMM helpers of conv.c, shared with deconv.c ---- */

/** im2col: x (N, Cin, H, W) -> col (Cin*KH*KW, N*Ho*Wo) for the convolution @p s
 *  (kernels of cl_kernels/conv.cl). */
manta_status nn_im2col(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview col);

/** Its adjoint, col2im: dcol (Cin*KH*KW, N*Ho*Wo) -> dx (N, Cin, H, W), overwritten (each
 *  input value gathers the column entries copied from it: no atomics). */
manta_status nn_col2im(mcl_dev *d, const nn_conv2d_shape *s, mview dcol, mview dx);

/** src (A, B, I) -> dst (B, A, I): the swap between NCHW and the GEMM layout (C, N, HW). */
manta_status nn_swap01(mcl_dev *d, mview src, mview dst, int a, int b, int inner);

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

/**
 * Chunks of K the GPU variant splits a weight gradient's GEMM into, for @p values weights
 * each summed over @p k columns: a power of two (so that K, a multiple of the batch,
 * usually divides evenly), chunks of at least 256 columns, about 2^20 partial sums in all;
 * 1 (one GEMM) for the CPU variant and for short K. nn_gemm_wgrad() needs
 * splits * values floats of scratch when splits > 1.
 */
size_t nn_wgrad_splits(const mcl_dev *d, size_t values, size_t k);

/**
 * dW (m, n; row stride @p ld) += A (m, k) B^T, A and B (n, k) row-major with row stride k:
 * a weight gradient summed over k = N*H*W columns. One GEMM, or nn_wgrad_splits() batched
 * GEMMs over chunks of the columns into @p part (splits * m * n floats), summed into dW
 * by nn_wgrad_reduce(), the last k mod splits columns by one more GEMM. (A GEMM with few
 * values over a long K otherwise runs on one or a few work-groups.) Defined in conv.c.
 */
manta_status nn_gemm_wgrad(mcl_dev *d, size_t m, size_t n, size_t k, mview a, mview b, mview dw,
                           size_t ld, mview part);

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

/** nn_need_buffer() of two views: @p a named @p a_name, then @p b named @p b_name. */
static inline manta_status nn_need_buffers2(mcl_dev *d, const char *op, const char *a_name, mview a,
                                            const char *b_name, mview b)
{
    manta_status st = nn_need_buffer(d, op, a_name, a);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, b_name, b);
    return st;
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
