#include "nn/upsample.h"

#include <math.h>

#include "nn/launch.h"

/* Work-items per group of the GPU kernels (one per value). */
#define GPU_GROUP 256

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

/* in * f when both are >= 1 and the product fits an int, else 0. */
static int scaled(int in, int f)
{
    if (in < 1 || f < 1 || (long long)in * f > INT_MAX)
        return 0;
    return in * f;
}

int nn_upsample_out_h(const nn_upsample_shape *s) { return s ? scaled(s->h, s->factor) : 0; }

int nn_upsample_out_w(const nn_upsample_shape *s) { return s ? scaled(s->w, s->factor) : 0; }

/* MANTA_ERR_INVALID_ARG naming @p op and @p what when @p v exceeds the kernels' int indices. */
static manta_status fits_int(mcl_dev *d, const char *op, const char *what, size_t v)
{
    if (v <= (size_t)INT_MAX)
        return MANTA_OK;
    return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                         "%s: %s = %zu exceeds the kernels' 32-bit index range", op, what, v);
}

static manta_status check(mcl_dev *d, const char *op, const nn_upsample_shape *s, float scale)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_FIELDS(d, op, NN_FIELD(s, n, 1), NN_FIELD(s, c, 1), NN_FIELD(s, h, 1),
                    NN_FIELD(s, w, 1), NN_FIELD(s, factor, 1));
    if (!isfinite(scale))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: scale %g is not finite", op,
                             (double)scale);
    /* Factors below 2^31 keep every product of two within 64 bits. */
    size_t planes = (size_t)s->n * (size_t)s->c, f = (size_t)s->factor;
    MANTA_TRY(fits_int(d, op, "planes n*c", planes));
    MANTA_TRY(fits_int(d, op, "output height factor*h", f * (size_t)s->h));
    MANTA_TRY(fits_int(d, op, "output width factor*w", f * (size_t)s->w));
    size_t out_plane = f * (size_t)s->h * f * (size_t)s->w;
    MANTA_TRY(fits_int(d, op, "output plane", out_plane));
    MANTA_TRY(fits_int(d, op, "output size n*c*(factor*h)*(factor*w)", planes * out_plane));
    /* the backward gather forms factor * (i + 2) */
    return fits_int(d, op, "factor*(h+w+4)", f * ((size_t)s->h + 2) + f * ((size_t)s->w + 2));
}

/* Check the shape and the views (forward: x -> y; backward: dy -> dx), then run kernel
 * <pass>_rows (CPU: global (rows, planes)) or <pass>1 (GPU: one work-item per value) over
 * views a -> b. */
static manta_status run(mcl_dev *d, const nn_upsample_shape *s, float scale, bool forward, mview a,
                        mview b)
{
    const char *op = forward ? "upsample forward" : "upsample backward";
    MANTA_TRY(check(d, op, s, scale));
    MANTA_TRY(nn_need_buffer(d, op, forward ? "x" : "dy", a));
    MANTA_TRY(nn_need_buffer(d, op, forward ? "y" : "dx", b));
    size_t planes = (size_t)s->n * (size_t)s->c;
    size_t rows = forward ? (size_t)nn_upsample_out_h(s) : (size_t)s->h;
    size_t cols = forward ? (size_t)nn_upsample_out_w(s) : (size_t)s->w;
    bool gpu = gpu_variant(d);
    const char *name = forward ? (gpu ? "upsample_forward1" : "upsample_forward_rows")
                               : (gpu ? "upsample_backward1" : "upsample_backward_rows");
    mcl_launch L;
    mcl_launch_begin(&L, d, "upsample", name);
    mcl_arg_views(&L, (mview[]){a, b}, 2);
    const int v[] = {(int)planes, s->h, s->w, s->factor};
    nn_arg_ints(&L, v, sizeof v / sizeof v[0]);
    mcl_arg_float(&L, scale);
    mcl_launch_output(&L, planes * rows * cols);
    if (gpu)
        return mcl_launch_run(&L, 1, (size_t[]){planes * rows * cols},
                              (size_t[]){nn_group_cap(&L, GPU_GROUP)});
    return mcl_launch_run(&L, 2, (size_t[]){rows, planes}, NULL);
}

manta_status nn_upsample_forward(mcl_dev *d, const nn_upsample_shape *s, float scale, mview x,
                                 mview y)
{
    return run(d, s, scale, true, x, y);
}

manta_status nn_upsample_backward(mcl_dev *d, const nn_upsample_shape *s, float scale, mview dy,
                                  mview dx)
{
    return run(d, s, scale, false, dy, dx);
}
