#include "nn/linear.h"

#include "cl/blas.h"
#include "nn/launch.h"

/* Checks the shape and returns the row stride of W in *ld. */
static manta_status check_shape(mcl_dev *d, const nn_linear_shape *s, const char *op, size_t *ld)
{
    if (!s)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: shape is NULL", op);
    NN_CHECK_POS(d, op, "shape n", s->n);
    NN_CHECK_POS(d, op, "shape in", s->in);
    NN_CHECK_POS(d, op, "shape out", s->out);
    if (s->w_ld != 0 && s->w_ld < s->in)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: shape w_ld %d is neither 0 nor at least in (%d)", op,
                             s->w_ld, s->in);
    NN_CHECK_INT(d, (size_t)s->n * (size_t)s->out, "linear output size n*out");
    *ld = s->w_ld ? (size_t)s->w_ld : (size_t)s->in;
    return MANTA_OK;
}

manta_status nn_linear_forward(mcl_dev *d, const nn_linear_shape *s, mview x, mview w, mview b,
                               mview y)
{
    size_t ld;
    manta_status st = check_shape(d, s, "linear_forward", &ld);
    if (st != MANTA_OK)
        return st;
    size_t n = (size_t)s->n, in = (size_t)s->in, out = (size_t)s->out;
    /* y (n, out) = x (n, in) * W^T, W (out, in) with row stride ld */
    st = mcl_sgemm(d, false, true, n, out, in, 1.0f, x, in, w, ld, 0.0f, y, out);
    if (st != MANTA_OK || !b.mem)
        return st;
    mcl_launch L;
    mcl_launch_begin(&L, d, "linear", "bias_forward");
    mcl_arg_view(&L, y);
    mcl_arg_view(&L, b);
    mcl_arg_int(&L, (int)(n * out));
    mcl_arg_int(&L, s->out);
    return mcl_launch_run(&L, 1, (size_t[]){n * out}, NULL);
}

manta_status nn_linear_backward(mcl_dev *d, const nn_linear_shape *s, mview x, mview w, mview dy,
                                mview dx, mview dw, mview db)
{
    size_t ld;
    manta_status st = check_shape(d, s, "linear_backward", &ld);
    if (st != MANTA_OK)
        return st;
    size_t n = (size_t)s->n, in = (size_t)s->in, out = (size_t)s->out;
    if (dx.mem) {
        /* dx (n, in) = dy (n, out) * W (out, in) */
        st = mcl_sgemm(d, false, false, n, in, out, 1.0f, dy, out, w, ld, 0.0f, dx, in);
        if (st != MANTA_OK)
            return st;
    }
    /* dW (out, in) += dy^T (out, n) * x (n, in), with W's row stride */
    st = mcl_sgemm(d, true, false, out, in, n, 1.0f, dy, out, x, in, 1.0f, dw, ld);
    if (st != MANTA_OK || !db.mem)
        return st;
    mcl_launch L;
    mcl_launch_begin(&L, d, "linear", "bias_backward");
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, db);
    mcl_arg_int(&L, s->n);
    mcl_arg_int(&L, s->out);
    return mcl_launch_run(&L, 1, (size_t[]){out}, NULL);
}
