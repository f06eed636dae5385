#include "nn/pool.h"

#include "nn/launch.h"

/* Row reduction launch: one work-group per row of hw values, with scratch. */
static manta_status run_per_row(mcl_launch *L, size_t nc, size_t hw)
{
    size_t wg = nn_reduce_wg(L, (hw + 7) / 8);
    mcl_arg_local(L, wg * sizeof(float));
    mcl_launch_output(L, nc);
    return mcl_launch_run(L, 1, (size_t[]){nc * wg}, (size_t[]){wg});
}

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

/* Row reductions take one work-item per row when there are enough rows for
 * the device (at least ROWS_PER_ITEM_MIN) and the rows are not much longer
 * than that (GPU variant: at most ROW_ITEM_MAX_GPU values); else one work-group
 * per row. */
#define ROWS_PER_ITEM_MIN 64
#define ROW_ITEM_MAX_GPU 32
static bool item_per_row(const mcl_dev *d, size_t nc, size_t hw)
{
    if (gpu_variant(d) && hw > ROW_ITEM_MAX_GPU)
        return false;
    return nc >= ROWS_PER_ITEM_MIN && hw <= 64 * nc;
}

/* Work-items per group for the one-per-row kernels. */
#define ROW_GROUP 64

/* Per-value launch over chunks of 8: global (ceil(hw / 8), nc), about 64
 * chunks a group. */
static manta_status run_chunks(mcl_launch *L, size_t nc, size_t hw)
{
    size_t chunks = (hw + 7) / 8;
    if (chunks == 0 || nc == 0)
        return MANTA_OK; /* empty tensor */
    mcl_launch_output(L, nc * hw);
    size_t lx = chunks < 64 ? chunks : 64, ly = 64 / lx;
    if (ly > nc)
        ly = nc;
    bool fits = lx * ly <= mcl_launch_wg_max(L) && ly <= nn_item_max(L->d, 1);
    return mcl_launch_run(L, 2, (size_t[]){chunks, nc}, fits ? (size_t[]){lx, ly} : NULL);
}

/* The rest of a per-value launch whose views are set: one work-item per value (the
 * *1 kernels of the GPU variant, taking the value count) or per chunk of 8. */
static manta_status run_values(mcl_launch *L, size_t nc, size_t hw)
{
    if (gpu_variant(L->d)) {
        mcl_arg_int(L, (int)(nc * hw));
        mcl_arg_int(L, (int)hw);
        return nn_run_per_value(L, nc * hw);
    }
    mcl_arg_int(L, (int)nc);
    mcl_arg_int(L, (int)hw);
    return run_chunks(L, nc, hw);
}

/* One work-item per row, ROW_GROUP rows a group. */
static manta_status run_rows(mcl_launch *L, size_t nc)
{
    mcl_launch_output(L, nc);
    return mcl_launch_run(L, 1, (size_t[]){nc}, (size_t[]){nn_group_cap(L, ROW_GROUP)});
}

/* Checks nc * hw against the kernels' int indices (sizes are size_t, so
 * nothing is negative; hw is checked first so the product cannot wrap). */
static manta_status check_rows(mcl_dev *d, size_t nc, size_t hw, const char *op)
{
    if (hw > (size_t)INT_MAX || (hw && nc > (size_t)INT_MAX / hw))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: nc %zu * hw %zu exceeds the kernels' 32-bit index range", op, nc,
                             hw);
    return MANTA_OK;
}

/* check_rows() for the mean of each row, which needs hw of at least 1. */
static manta_status check_mean_rows(mcl_dev *d, size_t nc, size_t hw, const char *op)
{
    if (hw == 0)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: hw is 0 (mean of an empty row)", op);
    return check_rows(d, nc, hw, op);
}

manta_status nn_avgpool_forward(mcl_dev *d, size_t nc, size_t hw, mview x, mview y)
{
    MANTA_TRY(check_mean_rows(d, nc, hw, "avgpool_forward"));
    mcl_launch L;
    if (item_per_row(d, nc, hw)) {
        mcl_launch_begin(&L, d, "pool", "avgpool_forward_rows");
        mcl_arg_view(&L, x);
        mcl_arg_view(&L, y);
        mcl_arg_int(&L, (int)nc);
        mcl_arg_int(&L, (int)hw);
        return run_rows(&L, nc);
    }
    mcl_launch_begin(&L, d, "pool", "avgpool_forward");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, y);
    mcl_arg_int(&L, (int)hw);
    return run_per_row(&L, nc, hw);
}

manta_status nn_avgpool_backward(mcl_dev *d, size_t nc, size_t hw, mview dy, mview dx)
{
    MANTA_TRY(check_mean_rows(d, nc, hw, "avgpool_backward"));
    mcl_launch L;
    mcl_launch_begin(&L, d, "pool", gpu_variant(d) ? "avgpool_backward1" : "avgpool_backward");
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, dx);
    return run_values(&L, nc, hw);
}

manta_status nn_scale_forward(mcl_dev *d, size_t nc, size_t hw, mview x, mview s, mview y)
{
    MANTA_TRY(check_rows(d, nc, hw, "scale_forward"));
    mcl_launch L;
    mcl_launch_begin(&L, d, "pool", gpu_variant(d) ? "scale_forward1" : "scale_forward");
    mcl_arg_views(&L, (mview[]){x, s, y}, 3);
    return run_values(&L, nc, hw);
}

manta_status nn_scale_backward(mcl_dev *d, size_t nc, size_t hw, mview x, mview s, mview dy,
                               mview dx, mview ds)
{
    manta_status st = check_rows(d, nc, hw, "scale_backward");
    if (st != MANTA_OK)
        return st;
    /* ds first: it reads dy, which dx may overwrite */
    mcl_launch L;
    if (item_per_row(d, nc, hw)) {
        mcl_launch_begin(&L, d, "pool", "scale_backward_s_rows");
        mcl_arg_views(&L, (mview[]){x, dy, ds}, 3);
        mcl_arg_int(&L, (int)nc);
        mcl_arg_int(&L, (int)hw);
        st = run_rows(&L, nc);
    } else {
        mcl_launch_begin(&L, d, "pool", "scale_backward_s");
        mcl_arg_views(&L, (mview[]){x, dy, ds}, 3);
        mcl_arg_int(&L, (int)hw);
        st = run_per_row(&L, nc, hw);
    }
    if (st != MANTA_OK || !dx.mem)
        return st;
    return nn_scale_forward(d, nc, hw, dy, s, dx); /* dx = dy * s */
}

manta_status nn_add(mcl_dev *d, size_t n, mview a, mview b, mview y)
{
    NN_CHECK_INT(d, n, "add size n");
    mcl_launch L;
    mcl_launch_begin(&L, d, "pool", "add");
    mcl_arg_views(&L, (mview[]){a, b, y}, 3);
    mcl_arg_int(&L, (int)n);
    return nn_run_per_value(&L, n);
}

manta_status nn_axpy(mcl_dev *d, size_t n, float alpha, mview x, mview y)
{
    NN_CHECK_INT(d, n, "axpy size n");
    mcl_launch L;
    mcl_launch_begin(&L, d, "pool", "axpy");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, y);
    mcl_arg_int(&L, (int)n);
    mcl_arg_float(&L, alpha);
    return nn_run_per_value(&L, n);
}
