#include "nn/correlation.h"

#include "nn/launch.h"

/* Outputs per work-item of the CPU kernels (CORR_G in cl_kernels/correlation.cl): 8 columns
 * of CORR_G displacements or channels. */
#define CORR_V 8
#define CORR_G 4

/* GPU forward: work-groups of FWD_X columns x FWD_D displacements of one row. */
#define FWD_X 64
#define FWD_D 4

/* Work-items per group of the GPU backward (one per input value). */
#define GPU_GROUP 256

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

int nn_corr_out_c(const nn_corr_shape *s)
{
    if (!s || s->max_disp < 0 || s->stride < 1)
        return 0;
    return s->max_disp / s->stride + 1;
}

double nn_corr_macs(const nn_corr_shape *s)
{
    int nd = nn_corr_out_c(s);
    if (nd < 1 || s->n < 1 || s->c < 1 || s->h < 1 || s->w < 1)
        return 0.0;
    double cols = 0.0; /* sum over displacements of the columns with x - d >= 0 */
    for (int i = 0; i < nd; i++) {
        long long d = (long long)i * s->stride;
        if (d < s->w)
            cols += (double)(s->w - d);
    }
    return (double)s->n * s->c * s->h * cols;
}

/* MANTA_ERR_INVALID_ARG naming @p op and @p what when @p v exceeds the kernels' int indices. */
static manta_status fits_int(mcl_dev *d, const char *op, const char *what, size_t v)
{
    if (v <= (size_t)INT_MAX)
        return MANTA_OK;
    return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                         "%s: %s = %zu exceeds the kernels' 32-bit index range", op, what, v);
}

static manta_status check_shape(mcl_dev *d, const char *op, const nn_corr_shape *s)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_FIELDS(d, op, NN_FIELD(s, n, 1), NN_FIELD(s, c, 1), NN_FIELD(s, h, 1),
                    NN_FIELD(s, w, 1), NN_FIELD(s, max_disp, 0), NN_FIELD(s, stride, 1));
    /* Factors below 2^31 keep every product of two within 64 bits. */
    size_t hw = (size_t)s->h * (size_t)s->w;
    MANTA_TRY(fits_int(d, op, "plane h*w", hw));
    MANTA_TRY(fits_int(d, op, "planes n*c", (size_t)s->n * (size_t)s->c));
    MANTA_TRY(fits_int(d, op, "rows n*h", (size_t)s->n * (size_t)s->h));
    MANTA_TRY(fits_int(d, op, "feature size n*c*h*w", (size_t)s->n * (size_t)s->c * hw));
    MANTA_TRY(fits_int(d, op, "n*(max_disp/stride+1)", (size_t)s->n * (size_t)nn_corr_out_c(s)));
    MANTA_TRY(fits_int(d, op, "output size n*(max_disp/stride+1)*h*w",
                       (size_t)s->n * (size_t)nn_corr_out_c(s) * hw));
    /* the kernels form x + d and x0 + 7 */
    return fits_int(d, op, "w + max_disp + 8", (size_t)s->w + (size_t)s->max_disp + CORR_V);
}

/* The arguments every correlation kernel takes after its views. */
static void shape_args(mcl_launch *L, const nn_corr_shape *s)
{
    const int v[] = {s->n, s->c, s->h, s->w, nn_corr_out_c(s), s->stride};
    nn_arg_ints(L, v, sizeof v / sizeof v[0]);
}

/* A CPU kernel over (ceil(W / 8), ceil(groups / CORR_G), N*H), the work-groups left to
 * the implementation. */
static manta_status run_rows(mcl_launch *L, const nn_corr_shape *s, int groups, size_t outputs)
{
    mcl_launch_output(L, outputs);
    size_t global[3] = {((size_t)s->w + CORR_V - 1) / CORR_V,
                        ((size_t)groups + CORR_G - 1) / CORR_G, (size_t)s->n * (size_t)s->h};
    return mcl_launch_run(L, 3, global, NULL);
}

/* Work-group of corr_forward1: FWD_X columns (fewer for a narrower row) x FWD_D
 * displacements of one row, within the kernel's and the device's limits. */
static void forward_group(const mcl_launch *L, const nn_corr_shape *s, size_t nd, size_t local[3])
{
    size_t cap = nn_group_cap(L, FWD_X * FWD_D), lx = FWD_X;
    while (lx > 1 && lx / 2 >= (size_t)s->w)
        lx /= 2;
    lx = lx < cap ? lx : cap;
    lx = lx < nn_item_max(L->d, 0) ? lx : nn_item_max(L->d, 0);
    size_t ly = cap / lx < FWD_D ? cap / lx : FWD_D;
    ly = ly < nd ? ly : nd;
    ly = ly < nn_item_max(L->d, 1) ? ly : nn_item_max(L->d, 1);
    local[0] = lx;
    local[1] = ly < 1 ? 1 : ly;
    local[2] = 1;
}

manta_status nn_corr_forward(mcl_dev *d, const nn_corr_shape *s, mview fl, mview fr, mview out)
{
    static const char op[] = "correlation forward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_buffer(d, op, "fl", fl));
    MANTA_TRY(nn_need_buffer(d, op, "fr", fr));
    MANTA_TRY(nn_need_buffer(d, op, "out", out));
    int nd = nn_corr_out_c(s);
    size_t rows = (size_t)s->n * (size_t)s->h;
    size_t outputs = rows * (size_t)nd * (size_t)s->w;
    mcl_launch L;
    if (gpu_variant(d)) {
        mcl_launch_begin(&L, d, "correlation", "corr_forward1");
        mcl_arg_views(&L, (mview[]){fl, fr, out}, 3);
        shape_args(&L, s);
        mcl_launch_output(&L, outputs);
        size_t local[3];
        forward_group(&L, s, (size_t)nd, local);
        return mcl_launch_run(&L, 3, (size_t[]){(size_t)s->w, (size_t)nd, rows}, local);
    }
    mcl_launch_begin(&L, d, "correlation", "corr_forward_rows");
    mcl_arg_views(&L, (mview[]){fl, fr, out}, 3);
    shape_args(&L, s);
    return run_rows(&L, s, nd, outputs);
}

/* One input gradient: kernel <name>_rows (CPU) or <name>1 (GPU) over the views
 * (other features, dout, gradient). */
static manta_status backward_one(mcl_dev *d, const nn_corr_shape *s, bool left, mview feat,
                                 mview dout, mview grad)
{
    size_t values = (size_t)s->n * (size_t)s->c * (size_t)s->h * (size_t)s->w;
    mcl_launch L;
    if (gpu_variant(d)) {
        mcl_launch_begin(&L, d, "correlation", left ? "corr_backward_fl1" : "corr_backward_fr1");
        mcl_arg_views(&L, (mview[]){feat, dout, grad}, 3);
        shape_args(&L, s);
        mcl_launch_output(&L, values);
        return mcl_launch_run(&L, 1, (size_t[]){values}, (size_t[]){nn_group_cap(&L, GPU_GROUP)});
    }
    mcl_launch_begin(&L, d, "correlation",
                     left ? "corr_backward_fl_rows" : "corr_backward_fr_rows");
    mcl_arg_views(&L, (mview[]){feat, dout, grad}, 3);
    shape_args(&L, s);
    return run_rows(&L, s, s->c, values);
}

manta_status nn_corr_backward(mcl_dev *d, const nn_corr_shape *s, mview fl, mview fr, mview dout,
                              mview dfl, mview dfr)
{
    static const char op[] = "correlation backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_buffer(d, op, "dout", dout));
    if (dfl.mem) {
        MANTA_TRY(nn_need_buffer(d, op, "fr (for dfl)", fr));
        MANTA_TRY(backward_one(d, s, true, fr, dout, dfl));
    }
    if (dfr.mem) {
        MANTA_TRY(nn_need_buffer(d, op, "fl (for dfr)", fl));
        MANTA_TRY(backward_one(d, s, false, fl, dout, dfr));
    }
    return MANTA_OK;
}
