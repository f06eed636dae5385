#include "nn/batchnorm.h"

#include "nn/launch.h"

/* Shape checks shared by every entry point; returns MANTA_OK or the error. */
static manta_status check_shape(mcl_dev *d, const nn_bn_shape *s, const char *op)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_POS(d, op, "shape n", s->n);
    NN_CHECK_POS(d, op, "shape c", s->c);
    NN_CHECK_POS(d, op, "shape hw", s->hw);
    NN_CHECK_INT(d, (size_t)s->n * (size_t)s->c * (size_t)s->hw, "batch norm size n*c*hw");
    return MANTA_OK;
}

static manta_status check_eps(mcl_dev *d, float eps, const char *op)
{
    if (!(eps > 0.0f))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: eps %g must be positive", op,
                             (double)eps);
    return MANTA_OK;
}

static manta_status check_momentum(mcl_dev *d, float momentum, const char *op)
{
    if (!(momentum >= 0.0f && momentum <= 1.0f))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: momentum %g outside [0, 1]",
                             op, (double)momentum);
    return MANTA_OK;
}

/* The shape arguments of the per-channel kernels and of the GPU variant's first stage. */
static void channel_args(mcl_launch *L, const nn_bn_shape *s)
{
    mcl_arg_int(L, s->n);
    mcl_arg_int(L, s->c);
    mcl_arg_int(L, s->hw);
}

/* Work-group size of the per-channel kernels, which take chunks of 8 values:
 * about CHUNKS_PER_ITEM chunks per work-item (a small group reduces faster).
 * From ROWS_MIN images on, no more work-items than images, which then take
 * whole rows (see cl_kernels/batchnorm.cl). */
#define CHUNKS_PER_ITEM 16
#define ROWS_MIN 16
static size_t channel_wg(const mcl_launch *L, const nn_bn_shape *s)
{
    size_t chunks = (size_t)s->n * (((size_t)s->hw + 7) / 8);
    size_t wg = nn_reduce_wg(L, (chunks + CHUNKS_PER_ITEM - 1) / CHUNKS_PER_ITEM);
    while (s->n >= ROWS_MIN && wg > (size_t)s->n)
        wg /= 2;
    return wg;
}

/* ---- GPU variant: ranges of each channel reduced by one work-group each ---------------
 * A range holds about BN_RANGE values (16 per work-item of a group of NN_REDUCE_WG_MAX),
 * at most BN_MAX_RANGES a channel: with C channels, C * ranges work-groups. The scratch this
 * needs grows with N*HW and C, so the size for a network's largest shape covers every
 * smaller one. */
#define BN_RANGE 2048
#define BN_MAX_RANGES 1024

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

static size_t ranges(const nn_bn_shape *s)
{
    size_t r = (size_t)s->n * (size_t)s->hw / BN_RANGE;
    return r < 1 ? 1 : r > BN_MAX_RANGES ? BN_MAX_RANGES : r;
}

size_t nn_bn_scratch_floats(const mcl_dev *d, const nn_bn_shape *s)
{
    if (!s || s->n < 1 || s->c < 1 || s->hw < 1 || !gpu_variant(d))
        return 0;
    return 2 * (size_t)s->c * (ranges(s) + 1);
}

/* Scratch views of the GPU variant: the ranges' partial results (ranges, C, 2), then
 * (2, C) per-channel results. */
static manta_status gpu_scratch(mcl_dev *d, const nn_bn_shape *s, const char *op, mview scratch,
                                mview *part, mview *chan)
{
    MANTA_TRY(nn_need_buffer(d, op, "scratch", scratch));
    *part = scratch;
    *chan = mview_at(scratch, 2 * (size_t)s->c * ranges(s));
    return MANTA_OK;
}

/* The rest of a stage-1 launch whose views are set: the shape, the ranges, the scratch of
 * the group's reduction; global (C * wg, ranges), one group per (channel, range). */
static manta_status run_ranges(mcl_launch *L, const nn_bn_shape *s)
{
    size_t r = ranges(s), per = (size_t)s->n * (size_t)s->hw / r;
    size_t wg = nn_reduce_wg(L, per);
    channel_args(L, s);
    mcl_arg_int(L, (int)r);
    mcl_arg_local(L, wg * sizeof(float));
    mcl_launch_output(L, 2 * (size_t)s->c * r);
    return mcl_launch_run(L, 2, (size_t[]){(size_t)s->c * wg, r}, (size_t[]){wg, 1});
}

/* mean, var (C) of x by the two stages. */
static manta_status gpu_stats(mcl_dev *d, const nn_bn_shape *s, mview x, mview part, mview mean,
                              mview var)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_partial_stats");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, part);
    MANTA_TRY(run_ranges(&L, s));
    mcl_launch_begin(&L, d, "batchnorm", "bn_combine_stats");
    mcl_arg_views(&L, (mview[]){x, part, mean, var}, 4);
    mcl_arg_int(&L, s->n * s->hw);
    mcl_arg_int(&L, s->c);
    mcl_arg_int(&L, s->hw);
    mcl_arg_int(&L, (int)ranges(s));
    mcl_launch_output(&L, 2 * (size_t)s->c);
    return mcl_launch_run(&L, 1, (size_t[]){(size_t)s->c}, NULL);
}

/* sums (2, C) of dy and dy * xhat by the two stages; dgamma, dbeta +=. */
static manta_status gpu_grad_sums(mcl_dev *d, const nn_bn_shape *s, mview x, mview save_mean,
                                  mview save_invstd, mview dy, mview part, mview sums, mview dgamma,
                                  mview dbeta)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_partial_grad");
    mcl_arg_views(&L, (mview[]){x, save_mean, save_invstd, dy, part}, 5);
    MANTA_TRY(run_ranges(&L, s));
    mcl_launch_begin(&L, d, "batchnorm", "bn_combine_grad");
    mcl_arg_views(&L, (mview[]){part, sums, dgamma, dbeta}, 4);
    mcl_arg_int(&L, s->c);
    mcl_arg_int(&L, (int)ranges(s));
    mcl_launch_output(&L, 4 * (size_t)s->c);
    return mcl_launch_run(&L, 1, (size_t[]){(size_t)s->c}, NULL);
}

/* Launch one work-group of a reduction size per channel, with its scratch. */
static manta_status run_per_channel(mcl_launch *L, const nn_bn_shape *s)
{
    size_t wg = channel_wg(L, s);
    mcl_arg_local(L, wg * sizeof(float));
    return mcl_launch_run(L, 1, (size_t[]){(size_t)s->c * wg}, (size_t[]){wg});
}

manta_status nn_bn_stats(mcl_dev *d, const nn_bn_shape *s, mview x, mview mean, mview var,
                         mview scratch)
{
    MANTA_TRY(check_shape(d, s, "bn_stats"));
    if (gpu_variant(d)) {
        mview part, chan;
        MANTA_TRY(gpu_scratch(d, s, "bn_stats", scratch, &part, &chan));
        return gpu_stats(d, s, x, part, mean, var);
    }
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_stats");
    mcl_arg_views(&L, (mview[]){x, mean, var}, 3);
    channel_args(&L, s);
    return run_per_channel(&L, s);
}

manta_status nn_bn_forward_train(mcl_dev *d, const nn_bn_shape *s, float momentum, float eps,
                                 mview x, mview gamma, mview beta, mview running_mean,
                                 mview running_var, mview y, mview save_mean, mview save_invstd,
                                 mview scratch)
{
    MANTA_TRY(check_shape(d, s, "bn_forward_train"));
    MANTA_TRY(check_eps(d, eps, "bn_forward_train"));
    if ((size_t)s->n * (size_t)s->hw < 2)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "bn_forward_train: n*hw is 1; training needs more than one value "
                             "per channel");
    MANTA_TRY(check_momentum(d, momentum, "bn_forward_train"));
    if (gpu_variant(d)) {
        mview part, chan;
        long m = (long)s->n * s->hw;
        MANTA_TRY(gpu_scratch(d, s, "bn_forward_train", scratch, &part, &chan));
        MANTA_TRY(gpu_stats(d, s, x, part, chan, mview_at(chan, (size_t)s->c)));
        MANTA_TRY(nn_bn_sync_finish(d, s->c, m, momentum, eps, chan, running_mean, running_var,
                                    save_mean, save_invstd));
        return nn_bn_forward_apply(d, s, x, gamma, beta, save_mean, save_invstd, y);
    }
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_forward_train");
    mcl_arg_views(
        &L, (mview[]){x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd}, 8);
    channel_args(&L, s);
    mcl_arg_float(&L, momentum);
    mcl_arg_float(&L, eps);
    return run_per_channel(&L, s);
}

/* The shape arguments of the element-wise kernels: the rows N*C (or, for the *_apply1
 * kernels, @p one, the N*C*HW values), C and HW. */
static void row_args(mcl_launch *L, const nn_bn_shape *s, bool one)
{
    mcl_arg_int(L, s->n * s->c * (one ? s->hw : 1));
    mcl_arg_int(L, s->c);
    mcl_arg_int(L, s->hw);
}

/* Launch an element-wise kernel over (ceil(HW / 8), N*C): about 64 chunks of
 * 8 values a group, whole rows, several rows when they are short; or, for the
 * *_apply1 kernels (@p one), one work-item per value. */
static manta_status run_rows(mcl_launch *L, const nn_bn_shape *s, bool one)
{
    size_t total = (size_t)s->n * (size_t)s->c * (size_t)s->hw;
    if (one) /* the *_apply1 kernels: one work-item per value */
        return nn_run_per_value(L, total);
    mcl_launch_output(L, total);
    size_t rows = (size_t)s->n * (size_t)s->c, chunks = ((size_t)s->hw + 7) / 8;
    size_t lx = chunks < 64 ? chunks : 64, ly = 64 / lx;
    if (ly > rows)
        ly = rows;
    bool fits = lx * ly <= mcl_launch_wg_max(L) && ly <= nn_item_max(L->d, 1);
    return mcl_launch_run(L, 2, (size_t[]){chunks, rows}, fits ? (size_t[]){lx, ly} : NULL);
}

manta_status nn_bn_forward_eval(mcl_dev *d, const nn_bn_shape *s, float eps, mview x, mview gamma,
                                mview beta, mview running_mean, mview running_var, mview y)
{
    MANTA_TRY(check_shape(d, s, "bn_forward_eval"));
    MANTA_TRY(check_eps(d, eps, "bn_forward_eval"));
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_forward_eval");
    mcl_arg_views(&L, (mview[]){x, gamma, beta, running_mean, running_var, y}, 6);
    row_args(&L, s, false);
    mcl_arg_float(&L, eps);
    return run_rows(&L, s, false);
}

manta_status nn_bn_backward(mcl_dev *d, const nn_bn_shape *s, mview x, mview gamma, mview save_mean,
                            mview save_invstd, mview dy, mview dx, mview dgamma, mview dbeta,
                            mview scratch)
{
    MANTA_TRY(check_shape(d, s, "bn_backward"));
    if (gpu_variant(d)) {
        mview part, sums;
        MANTA_TRY(gpu_scratch(d, s, "bn_backward", scratch, &part, &sums));
        MANTA_TRY(gpu_grad_sums(d, s, x, save_mean, save_invstd, dy, part, sums, dgamma, dbeta));
        return nn_bn_backward_apply(d, s, (long)s->n * s->hw, x, gamma, save_mean, save_invstd, dy,
                                    dx, sums);
    }
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_backward");
    mcl_arg_views(&L, (mview[]){x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta}, 8);
    channel_args(&L, s);
    return run_per_channel(&L, s);
}

manta_status nn_bn_sync_finish(mcl_dev *d, int c, long m_total, float momentum, float eps,
                               mview stats, mview running_mean, mview running_var, mview save_mean,
                               mview save_invstd)
{
    NN_CHECK_POS(d, "bn_sync_finish", "channels", c);
    MANTA_TRY(check_eps(d, eps, "bn_sync_finish"));
    if (m_total < 2)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "bn_sync_finish: %ld values per channel; training needs more than one",
                             m_total);
    MANTA_TRY(check_momentum(d, momentum, "bn_sync_finish"));
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_sync_finish");
    mcl_arg_views(&L, (mview[]){stats, running_mean, running_var, save_mean, save_invstd}, 5);
    mcl_arg_int(&L, c);
    mcl_arg_float(&L, momentum);
    mcl_arg_float(&L, (float)m_total / (float)(m_total - 1));
    mcl_arg_float(&L, eps);
    mcl_launch_output(&L, 4 * (size_t)c);
    return mcl_launch_run(&L, 1, (size_t[]){(size_t)c}, NULL);
}

manta_status nn_bn_forward_apply(mcl_dev *d, const nn_bn_shape *s, mview x, mview gamma, mview beta,
                                 mview save_mean, mview save_invstd, mview y)
{
    MANTA_TRY(check_shape(d, s, "bn_forward_apply"));
    mcl_launch L;
    bool one = gpu_variant(d); /* one work-item per value, or per 8 */
    mcl_launch_begin(&L, d, "batchnorm", one ? "bn_forward_apply1" : "bn_forward_apply");
    mcl_arg_views(&L, (mview[]){x, gamma, beta, save_mean, save_invstd, y}, 6);
    row_args(&L, s, one);
    return run_rows(&L, s, one);
}

manta_status nn_bn_backward_reduce(mcl_dev *d, const nn_bn_shape *s, mview x, mview save_mean,
                                   mview save_invstd, mview dy, mview sums, mview dgamma,
                                   mview dbeta, mview scratch)
{
    MANTA_TRY(check_shape(d, s, "bn_backward_reduce"));
    if (gpu_variant(d)) {
        mview part, chan;
        MANTA_TRY(gpu_scratch(d, s, "bn_backward_reduce", scratch, &part, &chan));
        return gpu_grad_sums(d, s, x, save_mean, save_invstd, dy, part, sums, dgamma, dbeta);
    }
    mcl_launch L;
    mcl_launch_begin(&L, d, "batchnorm", "bn_backward_reduce");
    mcl_arg_views(&L, (mview[]){x, save_mean, save_invstd, dy, sums, dgamma, dbeta}, 7);
    channel_args(&L, s);
    return run_per_channel(&L, s);
}

manta_status nn_bn_backward_apply(mcl_dev *d, const nn_bn_shape *s, long m_total, mview x,
                                  mview gamma, mview save_mean, mview save_invstd, mview dy,
                                  mview dx, mview sums)
{
    MANTA_TRY(check_shape(d, s, "bn_backward_apply"));
    if (m_total < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "bn_backward_apply: %ld values per channel", m_total);
    mcl_launch L;
    bool one = gpu_variant(d); /* one work-item per value, or per 8 */
    mcl_launch_begin(&L, d, "batchnorm", one ? "bn_backward_apply1" : "bn_backward_apply");
    mcl_arg_views(&L, (mview[]){x, gamma, save_mean, save_invstd, dy, dx, sums}, 7);
    row_args(&L, s, one);
    mcl_arg_float(&L, (float)(1.0 / (double)m_total));
    return run_rows(&L, s, one);
}
