#include "nn/disp_loss.h"

#include <math.h>

#include "nn/launch.h"

/* Partial sums: GPU about one group per GPU_PER_GROUP values (at most MAX_PARTS groups);
 * CPU one work-item per CPU_PER_PART values (at most CPU_MAX_PARTS). */
#define GPU_PER_GROUP 2048
#define CPU_PER_PART 16384
#define CPU_MAX_PARTS 64
#define MAX_PARTS 512
/* Work-items per group of the per-value gradient kernel. */
#define GPU_GROUP 256

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

/* The partial sums of stage 1 for @p total values, and (CPU) the values per work-item. */
static size_t parts_for(const mcl_dev *d, size_t total, size_t *per)
{
    size_t parts;
    if (gpu_variant(d)) {
        parts = div_up(total, GPU_PER_GROUP);
        if (parts > MAX_PARTS)
            parts = MAX_PARTS;
        *per = 0;
        return parts < 1 ? 1 : parts;
    }
    parts = div_up(total, CPU_PER_PART);
    if (parts > CPU_MAX_PARTS)
        parts = CPU_MAX_PARTS;
    if (parts < 1)
        parts = 1;
    *per = div_up(div_up(total, parts), 8) * 8;
    return div_up(total, *per);
}

static bool shape_ok(const nn_disp_loss_shape *s)
{
    return s && s->n >= 1 && s->h >= 1 && s->w >= 1 &&
           (size_t)s->n * (size_t)s->h <= (size_t)INT_MAX &&
           (size_t)s->n * (size_t)s->h * (size_t)s->w <= (size_t)INT_MAX / 2;
}

size_t nn_disp_loss_scratch_floats(const mcl_dev *d, const nn_disp_loss_shape *s)
{
    if (!shape_ok(s))
        return 0;
    size_t per;
    return 3 * parts_for(d, (size_t)s->n * (size_t)s->h * (size_t)s->w, &per);
}

static manta_status check(mcl_dev *d, const char *op, const nn_disp_loss_shape *s,
                          const nn_disp_loss_params *p)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    if (!p)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: params is NULL", op);
    NN_CHECK_FIELDS(d, op, NN_FIELD(s, n, 1), NN_FIELD(s, h, 1), NN_FIELD(s, w, 1));
    /* half the int range: the strided loop adds the launch's work-items to an index (n*h
     * checked first: a product of three ints could wrap) */
    size_t nh = (size_t)s->n * (size_t)s->h, total = nh * (size_t)s->w;
    if (nh > (size_t)INT_MAX || 2 * total > (size_t)INT_MAX)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: size n*h*w = %d*%d*%d exceeds the kernels' index range (2^30)",
                             op, s->n, s->h, s->w);
    if (p->kind != NN_DISP_LOSS_L1 && p->kind != NN_DISP_LOSS_SMOOTH_L1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: params kind %d is not L1 (0) or smooth L1 (1)", op, (int)p->kind);
    if (!(isfinite(p->weight) && p->weight >= 0.0f))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: params weight %g must be finite and >= 0", op, (double)p->weight);
    if (!(isfinite(p->max_disp) && p->max_disp >= 0.0f))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: params max_disp %g must be finite and >= 0 (0: no bound)", op,
                             (double)p->max_disp);
    if (!isfinite(p->beta))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: params beta %g is not finite",
                             op, (double)p->beta);
    return MANTA_OK;
}

/* The arguments after the views shared by the stage-1 and stage-3 kernels. */
static void loss_args(mcl_launch *L, size_t total, const nn_disp_loss_params *p)
{
    mcl_arg_int(L, (int)total);
    mcl_arg_int(L, (int)p->kind);
    mcl_arg_float(L, p->max_disp);
}

manta_status nn_disp_loss(mcl_dev *d, const nn_disp_loss_shape *s, const nn_disp_loss_params *p,
                          mview pred, mview gt, mview result, mview dpred, mview scratch)
{
    static const char op[] = "disparity loss";
    MANTA_TRY(check(d, op, s, p));
    MANTA_TRY(nn_need_buffer(d, op, "pred", pred));
    MANTA_TRY(nn_need_buffer(d, op, "gt", gt));
    MANTA_TRY(nn_need_buffer(d, op, "result", result));
    MANTA_TRY(nn_need_buffer(d, op, "scratch", scratch));
    size_t total = (size_t)s->n * (size_t)s->h * (size_t)s->w, per;
    size_t parts = parts_for(d, total, &per);
    bool gpu = gpu_variant(d);
    mcl_launch L;

    /* stage 1: partial sums into scratch */
    mcl_launch_begin(&L, d, "disp_loss", gpu ? "disp_loss_partial" : "disp_loss_partial_rows");
    mcl_arg_views(&L, (mview[]){pred, gt, scratch}, 3);
    loss_args(&L, total, p);
    mcl_launch_output(&L, 3 * parts);
    if (gpu) {
        size_t wg = nn_reduce_wg(&L, div_up(total, parts));
        mcl_arg_local(&L, wg * sizeof(float));
        MANTA_TRY(mcl_launch_run(&L, 1, (size_t[]){parts * wg}, (size_t[]){wg}));
    } else {
        mcl_arg_int(&L, (int)parts);
        mcl_arg_int(&L, (int)per);
        MANTA_TRY(mcl_launch_run(&L, 1, (size_t[]){parts}, NULL));
    }

    /* stage 2: one work-group adds them into the result */
    mcl_launch_begin(&L, d, "disp_loss", "disp_loss_reduce");
    mcl_arg_views(&L, (mview[]){scratch, result}, 2);
    mcl_arg_int(&L, (int)parts);
    mcl_arg_float(&L, p->weight);
    size_t wg = nn_reduce_wg(&L, parts);
    mcl_arg_local(&L, wg * sizeof(float));
    mcl_launch_output(&L, NN_DISP_LOSS_RESULT);
    MANTA_TRY(mcl_launch_run(&L, 1, (size_t[]){wg}, (size_t[]){wg}));
    if (!dpred.mem)
        return MANTA_OK;

    /* stage 3: the gradient, scaled by the count in the result */
    mcl_launch_begin(&L, d, "disp_loss", gpu ? "disp_loss_grad1" : "disp_loss_grad_rows");
    mcl_arg_views(&L, (mview[]){pred, gt, result, dpred}, 4);
    loss_args(&L, total, p);
    mcl_arg_float(&L, p->weight);
    mcl_arg_float(&L, p->beta);
    mcl_launch_output(&L, total);
    if (gpu)
        return mcl_launch_run(&L, 1, (size_t[]){total}, (size_t[]){nn_group_cap(&L, GPU_GROUP)});
    return mcl_launch_run(&L, 1, (size_t[]){div_up(total, 8)}, NULL);
}
