#include "nn/dropout.h"

#include <math.h>

#include "nn/launch.h"

static uint32_t drop_hash(uint32_t lo, uint32_t hi, uint32_t i)
{
    uint32_t x = i * 0x9E3779B9u ^ lo;
    x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
    x ^= hi;
    x ^= x >> 16, x *= 0x7feb352du, x ^= x >> 15, x *= 0x846ca68bu, x ^= x >> 16;
    return x;
}

static uint32_t threshold(float p)
{
    return (uint32_t)fmin((double)p * 4294967296.0, 4294967295.0);
}

int nn_dropout_keep(uint64_t seed, uint32_t i, float p)
{
    return drop_hash((uint32_t)seed, (uint32_t)(seed >> 32), i) >= threshold(p);
}

/* Both directions apply the same mask and scale. */
static manta_status apply(mcl_dev *d, size_t n, uint32_t off, float p, uint64_t seed, mview x,
                          mview y)
{
    NN_CHECK_INT(d, n, "dropout size");
    if (!(p >= 0.0f && p < 1.0f))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "dropout: probability %g outside [0, 1)", (double)p);
    mcl_launch L;
    mcl_launch_begin(&L, d, "dropout", "dropout_apply");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, y);
    mcl_arg_int(&L, (int)n);
    mcl_arg_uint(&L, threshold(p));
    mcl_arg_float(&L, 1.0f / (1.0f - p));
    mcl_arg_uint(&L, (uint32_t)seed);
    mcl_arg_uint(&L, (uint32_t)(seed >> 32));
    mcl_arg_uint(&L, off);
    return mcl_launch_run(&L, 1, (size_t[]){n}, NULL);
}

manta_status nn_dropout_forward(mcl_dev *d, size_t n, float p, uint64_t seed, mview x, mview y)
{
    return apply(d, n, 0, p, seed, x, y);
}

manta_status nn_dropout_backward(mcl_dev *d, size_t n, float p, uint64_t seed, mview dy, mview dx)
{
    return apply(d, n, 0, p, seed, dy, dx);
}

manta_status nn_dropout_forward_at(mcl_dev *d, size_t n, uint32_t off, float p, uint64_t seed,
                                   mview x, mview y)
{
    return apply(d, n, off, p, seed, x, y);
}

manta_status nn_dropout_backward_at(mcl_dev *d, size_t n, uint32_t off, float p, uint64_t seed,
                                    mview dy, mview dx)
{
    return apply(d, n, off, p, seed, dy, dx);
}
