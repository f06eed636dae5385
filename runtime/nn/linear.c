#include "nn/linear.h"

#include "cl/blas.h"
#include "nn/launch.h"

/* Checks the shape and returns the row stride of W in *ld. */
static manta_status check_shape(mcl_dev *d, const nn_linear_shape *s, const char *op, size_t *ld)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_POS(d, op, "shape n", s->n);
    NN_CHECK_POS(d, op, "shape in", s->in);
    NN_CHECK_POS(d, op, "shape out", s->out);
    if (s->w_ld != 0 && s->w_ld < s->in)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: shape w_ld %d is neither 0 nor at least in (%d)", op, s->w_ld,
                             s->in);
    NN_CHECK_INT(d, (size_t)s->n * (size_t)s->out, "linear output size n*out");
    *ld = s->w_ld ? (size_t)s->w_ld : (size_t)s->in;
    return MANTA_OK;
}

/* Work-group for a 2-D launch of gx x gy work-items (up to 8 x 8). */
static void group_2d(const mcl_launch *L, size_t gx, size_t gy, size_t local[2])
{
    size_t cap = mcl_launch_wg_max(L);
    local[0] = gx < 8 ? gx : 8;
    local[1] = gy < 8 ? gy : 8;
    while (local[0] * local[1] > cap && local[1] > 1)
        local[1] /= 2;
    while (local[0] * local[1] > cap && local[0] > 1)
        local[0] /= 2;
}

/* y (n, out) += b per row. */
static manta_status bias_forward(mcl_dev *d, const nn_linear_shape *s, mview y, mview b)
{
    size_t total = (size_t)s->n * (size_t)s->out;
    mcl_launch L;
    mcl_launch_begin(&L, d, "linear", "bias_forward");
    mcl_arg_view(&L, y);
    mcl_arg_view(&L, b);
    mcl_arg_int(&L, (int)total);
    mcl_arg_int(&L, s->out);
    return nn_run_per_value(&L, total);
}

/* Rows of 4 per work-item (LIN_B in cl_kernels/linear.cl), 16 columns. */
#define LIN_B 4

/* c (rows, cols) = beta c + A b, A(r, k) = a[r * a_rs + k * a_ks] (see lin_rows). */
static manta_status lin_rows(mcl_dev *d, mview a, mview b, mview c, size_t rows, size_t cols,
                             size_t kdim, size_t a_rs, size_t a_ks, size_t b_rs, size_t c_rs,
                             float beta)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "linear", "lin_rows");
    mcl_arg_views(&L, (mview[]){a, b, c}, 3);
    mcl_arg_int(&L, (int)rows);
    mcl_arg_int(&L, (int)cols);
    mcl_arg_int(&L, (int)kdim);
    mcl_arg_int(&L, (int)a_rs);
    mcl_arg_int(&L, (int)a_ks);
    mcl_arg_int(&L, (int)b_rs);
    mcl_arg_int(&L, (int)c_rs);
    mcl_arg_float(&L, beta);
    size_t gx = (cols + 15) / 16, gy = (rows + LIN_B - 1) / LIN_B, local[2];
    group_2d(&L, gx, gy, local);
    return mcl_launch_run(&L, 2, (size_t[]){gx, gy}, local);
}

/* The GPU variant multiplies with CLBlast (its kernels spread every output over
 * work-items); the CPU one with the kernels of cl_kernels/linear.cl. */
static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

manta_status nn_linear_forward(mcl_dev *d, const nn_linear_shape *s, mview x, mview w, mview b,
                               mview y)
{
    size_t ld;
    manta_status st = check_shape(d, s, "linear_forward", &ld);
    if (st != MANTA_OK)
        return st;
    size_t n = (size_t)s->n, out = (size_t)s->out;
    /* y (n, out) = x (n, in) * W^T, W (out, in) with row stride ld */
    mcl_launch L;
    if (gpu_variant(d)) {
        st = mcl_sgemm(d, false, true, n, out, (size_t)s->in, 1.0f, x, (size_t)s->in, w, ld, 0.0f,
                       y, out);
        return st != MANTA_OK || !b.mem ? st : bias_forward(d, s, y, b);
    }
    mcl_launch_begin(&L, d, "linear", "lin_forward");
    mcl_arg_views(&L, (mview[]){x, w, y}, 3);
    mcl_arg_int(&L, s->n);
    mcl_arg_int(&L, s->in);
    mcl_arg_int(&L, s->out);
    mcl_arg_int(&L, (int)ld);
    size_t gx = (out + LIN_B - 1) / LIN_B, gy = (n + LIN_B - 1) / LIN_B, local[2];
    group_2d(&L, gx, gy, local);
    st = mcl_launch_run(&L, 2, (size_t[]){gx, gy}, local);
    return st != MANTA_OK || !b.mem ? st : bias_forward(d, s, y, b);
}

manta_status nn_linear_backward(mcl_dev *d, const nn_linear_shape *s, mview x, mview w, mview dy,
                                mview dx, mview dw, mview db)
{
    size_t ld;
    manta_status st = check_shape(d, s, "linear_backward", &ld);
    if (st != MANTA_OK)
        return st;
    size_t n = (size_t)s->n, in = (size_t)s->in, out = (size_t)s->out;
    const bool gpu = gpu_variant(d);
    if (dx.mem) {
        /* dx (n, in) = dy (n, out) * W (out, in) */
        st = gpu ? mcl_sgemm(d, false, false, n, in, out, 1.0f, dy, out, w, ld, 0.0f, dx, in)
                 : lin_rows(d, dy, w, dx, n, in, out, out, 1, ld, in, 0.0f);
        if (st != MANTA_OK)
            return st;
    }
    /* dW (out, in) += dy^T (out, n) * x (n, in), with W's row stride */
    st = gpu ? mcl_sgemm(d, true, false, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, ld)
             : lin_rows(d, dy, x, dw, out, in, n, 1, out, in, ld, 1.0f);
    if (st != MANTA_OK || !db.mem)
        return st;
    mcl_launch L;
    mcl_launch_begin(&L, d, "linear", "bias_backward");
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, db);
    mcl_arg_int(&L, s->n);
    mcl_arg_int(&L, s->out);
    return nn_run_per_value(&L, out);
}
