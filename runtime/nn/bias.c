#include "nn/bias.h"

#include "nn/launch.h"

/* The GPU variant's bias gradient: about BIAS_GROUPS work-groups in all, each summing a
 * range of at least BIAS_MIN_RANGE values of one channel. */
#define BIAS_GROUPS 256
#define BIAS_MIN_RANGE 1024

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

static bool valid(const nn_bias_shape *s)
{
    return s && s->n >= 1 && s->c >= 1 && s->hw >= 1 &&
           (size_t)s->n * (size_t)s->c * (size_t)s->hw <= (size_t)INT_MAX;
}

/* Ranges each channel's N*HW values are summed in: 1 on the CPU variant. */
static size_t splits(const mcl_dev *d, const nn_bias_shape *s)
{
    if (!gpu_variant(d))
        return 1;
    size_t want = (BIAS_GROUPS + (size_t)s->c - 1) / (size_t)s->c, n = 1;
    size_t k = (size_t)s->n * (size_t)s->hw;
    while (n * 2 <= want && n * 2 <= k / BIAS_MIN_RANGE)
        n *= 2;
    return n;
}

size_t nn_bias_channels_scratch_floats(const mcl_dev *d, const nn_bias_shape *s)
{
    if (!valid(s))
        return 0;
    size_t n = splits(d, s);
    return n > 1 ? n * (size_t)s->c : 0;
}

static manta_status check_shape(mcl_dev *d, const char *op, const nn_bias_shape *s)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_FIELDS(d, op, NN_FIELD(s, n, 1), NN_FIELD(s, c, 1), NN_FIELD(s, hw, 1));
    size_t total = (size_t)s->n * (size_t)s->c * (size_t)s->hw;
    if (total > (size_t)INT_MAX)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: n*c*hw = %zu exceeds the kernels' 32-bit index range", op, total);
    return MANTA_OK;
}

manta_status nn_bias_channels_forward(mcl_dev *d, const nn_bias_shape *s, mview b, mview y)
{
    static const char op[] = "bias forward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_buffers2(d, op, "b", b, "y", y));
    size_t rows = (size_t)s->n * (size_t)s->c, total = rows * (size_t)s->hw;
    mcl_launch L;
    if (gpu_variant(d)) {
        mcl_launch_begin(&L, d, "bias", "bias_add");
        mcl_arg_view(&L, y);
        mcl_arg_view(&L, b);
        nn_arg_ints(&L, (const int[]){s->c, s->hw, (int)total}, 3);
        return nn_run_per_value(&L, total);
    }
    mcl_launch_begin(&L, d, "bias", "bias_add_rows");
    mcl_arg_view(&L, y);
    mcl_arg_view(&L, b);
    nn_arg_ints(&L, (const int[]){s->c, s->hw, (int)rows}, 3);
    mcl_launch_output(&L, total);
    return mcl_launch_run(&L, 2, (size_t[]){((size_t)s->hw + 7) / 8, rows}, NULL);
}

manta_status nn_bias_channels_backward(mcl_dev *d, const nn_bias_shape *s, mview dy, mview db,
                                       mview scratch)
{
    static const char op[] = "bias backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_buffers2(d, op, "dy", dy, "db", db));
    size_t n = splits(d, s), c = (size_t)s->c;
    if (n > 1)
        MANTA_TRY(nn_need_buffer(d, op, "scratch", scratch));
    size_t range = (size_t)s->n * (size_t)s->hw / n;
    mcl_launch L;
    mcl_launch_begin(&L, d, "bias", "bias_grad_partial");
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, n > 1 ? scratch : db);
    nn_arg_ints(&L, (const int[]){s->n, s->c, s->hw, (int)n, n == 1}, 5);
    size_t group = gpu_variant(d) ? nn_reduce_wg(&L, range) : 1;
    mcl_arg_local(&L, group * sizeof(float));
    mcl_launch_output(&L, n * c);
    MANTA_TRY(mcl_launch_run(&L, 1, (size_t[]){n * c * group}, (size_t[]){group}));
    if (n == 1)
        return MANTA_OK;
    return nn_wgrad_reduce(d, scratch, db, c, c, c, n);
}
