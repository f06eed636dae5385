#include "nn/conv.h"

#include <stdint.h>

#include "cl/blas.h"
#include "nn/launch.h"

/* Scratch layout of the im2col path, in floats from scratch.off:
 *   col (Cin*KH*KW, N*Ho*Wo)  im2col of x; backward reuses it for dcol
 *   yt  (Cout, N*Ho*Wo)       GEMM output (forward) or dy in GEMM layout
 * With N == 1 the GEMM layout (Cout, Ho*Wo) is NCHW itself and yt is unused.
 * The 1x1 stride-1 unpadded path needs no scratch: x (N, Cin, HW) is already
 * the column matrix of each image. Its dW sums N GEMMs with beta = 1, which
 * measured slightly faster on PoCL than transposing x and dy to (C, N*HW) for
 * one GEMM (batch 64, 32x32, 16..96 channels: 4 to 10 % less time over three
 * runs), and needs no scratch. */

/* a * b, saturating at SIZE_MAX so that size checks cannot be fooled by
 * wrap-around. */
static size_t mul_sat(size_t a, size_t b) { return (a && b > SIZE_MAX / a) ? SIZE_MAX : a * b; }

int nn_conv2d_out_h(const nn_conv2d_shape *s)
{
    return nn_window_out(s->h, s->kh, s->stride_h, s->pad_h);
}

int nn_conv2d_out_w(const nn_conv2d_shape *s)
{
    return nn_window_out(s->w, s->kw, s->stride_w, s->pad_w);
}

double nn_conv2d_macs(const nn_conv2d_shape *s)
{
    return (double)s->n * s->cout * nn_conv2d_out_h(s) * nn_conv2d_out_w(s) * s->cin * s->kh *
           s->kw;
}

static bool is_pointwise(const nn_conv2d_shape *s)
{
    return s->kh == 1 && s->kw == 1 && s->stride_h == 1 && s->stride_w == 1 && s->pad_h == 0 &&
           s->pad_w == 0;
}

/* Rows of the column matrix (Cin*KH*KW) and its columns (N*Ho*Wo). */
static size_t col_rows(const nn_conv2d_shape *s)
{
    return mul_sat(mul_sat((size_t)s->cin, (size_t)s->kh), (size_t)s->kw);
}

static size_t col_cols(const nn_conv2d_shape *s)
{
    return mul_sat(mul_sat((size_t)s->n, (size_t)nn_conv2d_out_h(s)), (size_t)nn_conv2d_out_w(s));
}

size_t nn_conv2d_scratch_floats(const nn_conv2d_shape *s)
{
    bool valid = s->n >= 1 && s->cin >= 1 && s->cout >= 1 && nn_conv2d_out_h(s) >= 1 &&
                 nn_conv2d_out_w(s) >= 1;
    if (!valid || is_pointwise(s))
        return 0;
    size_t col = mul_sat(col_rows(s), col_cols(s));
    size_t yt = s->n > 1 ? mul_sat((size_t)s->cout, col_cols(s)) : 0;
    return col > SIZE_MAX - yt ? SIZE_MAX : col + yt;
}

/* Check @p s and the sizes the kernels index with int. */
static manta_status check_shape(mcl_dev *d, const char *op, const nn_conv2d_shape *s)
{
    if (!s)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: shape is NULL", op);
    NN_CHECK_FIELD_MIN(d, op, s, n, 1);
    NN_CHECK_FIELD_MIN(d, op, s, cin, 1);
    NN_CHECK_FIELD_MIN(d, op, s, h, 1);
    NN_CHECK_FIELD_MIN(d, op, s, w, 1);
    NN_CHECK_FIELD_MIN(d, op, s, cout, 1);
    NN_CHECK_FIELD_MIN(d, op, s, kh, 1);
    NN_CHECK_FIELD_MIN(d, op, s, kw, 1);
    NN_CHECK_FIELD_MIN(d, op, s, stride_h, 1);
    NN_CHECK_FIELD_MIN(d, op, s, stride_w, 1);
    NN_CHECK_FIELD_MIN(d, op, s, pad_h, 0);
    NN_CHECK_FIELD_MIN(d, op, s, pad_w, 0);
    NN_CHECK_FIELD_MIN(d, op, s, w_ld, 0);
    if (nn_conv2d_out_h(s) < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: kernel height kh = %d exceeds the padded input height "
                             "h + 2*pad_h = %lld",
                             op, s->kh, (long long)s->h + 2LL * s->pad_h);
    if (nn_conv2d_out_w(s) < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: kernel width kw = %d exceeds the padded input width "
                             "w + 2*pad_w = %lld",
                             op, s->kw, (long long)s->w + 2LL * s->pad_w);
    if (s->w_ld != 0 && (size_t)s->w_ld < col_rows(s))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: shape field w_ld = %d is below cin*kh*kw = %zu", op, s->w_ld,
                             col_rows(s));
    size_t hw_in = mul_sat((size_t)s->h, (size_t)s->w);
    NN_CHECK_INT(d, mul_sat(mul_sat((size_t)s->n, (size_t)s->cin), hw_in), "conv2d input size");
    NN_CHECK_INT(d, mul_sat((size_t)s->cout, col_cols(s)), "conv2d output size");
    NN_CHECK_INT(d, mul_sat(col_rows(s), col_cols(s)), "conv2d column matrix size");
    return MANTA_OK;
}

static size_t weight_ld(const nn_conv2d_shape *s)
{
    return s->w_ld ? (size_t)s->w_ld : col_rows(s);
}

/* Arguments shared by im2col and col2im after their two views. */
static void geometry_args(mcl_launch *L, const nn_conv2d_shape *s)
{
    mcl_arg_int(L, s->n);
    mcl_arg_int(L, s->cin);
    mcl_arg_int(L, s->h);
    mcl_arg_int(L, s->w);
    mcl_arg_int(L, s->kh);
    mcl_arg_int(L, s->kw);
    mcl_arg_int(L, s->stride_h);
    mcl_arg_int(L, s->stride_w);
    mcl_arg_int(L, s->pad_h);
    mcl_arg_int(L, s->pad_w);
    mcl_arg_int(L, nn_conv2d_out_h(s));
    mcl_arg_int(L, nn_conv2d_out_w(s));
}

/* x: (N, Cin, H, W) -> col: (Cin*KH*KW, N*Ho*Wo) */
static manta_status im2col(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview col)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", "im2col");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, col);
    geometry_args(&L, s);
    return mcl_launch_run(&L, 2, (size_t[]){col_cols(s), (size_t)s->cin}, NULL);
}

/* dcol: (Cin*KH*KW, N*Ho*Wo) -> dx: (N, Cin, H, W), overwritten */
static manta_status col2im(mcl_dev *d, const nn_conv2d_shape *s, mview dcol, mview dx)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", "col2im");
    mcl_arg_view(&L, dcol);
    mcl_arg_view(&L, dx);
    geometry_args(&L, s);
    size_t total = (size_t)s->n * (size_t)s->cin * (size_t)s->h * (size_t)s->w;
    return mcl_launch_run(&L, 1, (size_t[]){total}, NULL);
}

/* src: (A, B, I) -> dst: (B, A, I) */
static manta_status swap01(mcl_dev *d, mview src, mview dst, int a, int b, int inner)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", "swap01");
    mcl_arg_view(&L, src);
    mcl_arg_view(&L, dst);
    mcl_arg_int(&L, a);
    mcl_arg_int(&L, b);
    mcl_arg_int(&L, inner);
    return mcl_launch_run(&L, 3, (size_t[]){(size_t)inner, (size_t)a, (size_t)b}, NULL);
}

manta_status nn_conv2d_forward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview y,
                               mview scratch)
{
    static const char op[] = "conv2d forward";
    manta_status st = check_shape(d, op, s);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "x", x);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "w", w);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "y", y);
    if (st != MANTA_OK)
        return st;
    size_t cout = (size_t)s->cout, ld = weight_ld(s);
    size_t hw_o = (size_t)nn_conv2d_out_h(s) * (size_t)nn_conv2d_out_w(s);

    if (is_pointwise(s)) {
        /* y_n (Cout, HW) = W (Cout, Cin) x_n (Cin, HW), for each image n */
        size_t cin = (size_t)s->cin;
        return mcl_sgemm_batched(d, false, false, cout, hw_o, cin, 1.0f, w, ld, 0, x, hw_o,
                                 cin * hw_o, 0.0f, y, hw_o, cout * hw_o, (size_t)s->n);
    }
    if ((st = nn_need_buffer(d, op, "scratch", scratch)) != MANTA_OK)
        return st;
    size_t rows = col_rows(s), cols = col_cols(s);
    mview col = scratch;                                 // (Cin*KH*KW, N*Ho*Wo)
    mview yt = s->n > 1 ? mview_at(scratch, rows * cols) // (Cout, N, Ho*Wo)
                        : y;
    if ((st = im2col(d, s, x, col)) != MANTA_OK)
        return st;
    st = mcl_sgemm(d, false, false, cout, cols, rows, 1.0f, w, ld, col, cols, 0.0f, yt, cols);
    if (st != MANTA_OK || s->n == 1)
        return st;
    return swap01(d, yt, y, s->cout, s->n, (int)hw_o);
}

/* 1x1 stride-1 unpadded backward: x (N, Cin, HW), dy (N, Cout, HW). */
static manta_status pointwise_backward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w,
                                       mview dy, mview dx, mview dw)
{
    size_t cin = (size_t)s->cin, cout = (size_t)s->cout, hw = (size_t)s->h * (size_t)s->w;
    size_t ld = weight_ld(s);
    manta_status st = MANTA_OK;
    /* dW (Cout, Cin) += dy_n (Cout, HW) x_n^T (HW, Cin), summed over n */
    for (int b = 0; dw.mem && b < s->n && st == MANTA_OK; b++)
        st = mcl_sgemm(d, false, true, cout, cin, hw, 1.0f, mview_at(dy, (size_t)b * cout * hw),
                       hw, mview_at(x, (size_t)b * cin * hw), hw, 1.0f, dw, ld);
    if (st != MANTA_OK || !dx.mem)
        return st;
    /* dx_n (Cin, HW) = W^T (Cin, Cout) dy_n (Cout, HW) */
    return mcl_sgemm_batched(d, true, false, cin, hw, cout, 1.0f, w, ld, 0, dy, hw, cout * hw,
                             0.0f, dx, hw, cin * hw, (size_t)s->n);
}

manta_status nn_conv2d_backward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview dy,
                                mview dx, mview dw, mview scratch)
{
    static const char op[] = "conv2d backward";
    manta_status st = check_shape(d, op, s);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "dy", dy);
    if (st == MANTA_OK && dw.mem)
        st = nn_need_buffer(d, op, "x", x);
    if (st == MANTA_OK && dx.mem)
        st = nn_need_buffer(d, op, "w", w);
    if (st != MANTA_OK || (!dx.mem && !dw.mem))
        return st;
    if (is_pointwise(s))
        return pointwise_backward(d, s, x, w, dy, dx, dw);
    if ((st = nn_need_buffer(d, op, "scratch", scratch)) != MANTA_OK)
        return st;
    size_t rows = col_rows(s), cols = col_cols(s), cout = (size_t)s->cout, ld = weight_ld(s);
    size_t hw_o = (size_t)nn_conv2d_out_h(s) * (size_t)nn_conv2d_out_w(s);
    mview col = scratch; // (Cin*KH*KW, N*Ho*Wo): im2col of x, then dcol
    mview dyt = dy;      // (Cout, N, Ho*Wo)
    if (s->n > 1) {
        dyt = mview_at(scratch, rows * cols);
        if ((st = swap01(d, dy, dyt, s->n, s->cout, (int)hw_o)) != MANTA_OK)
            return st;
    }
    if (dw.mem) {
        /* dW (Cout, CinKK) += dy' (Cout, NHW) col^T (NHW, CinKK) */
        if ((st = im2col(d, s, x, col)) != MANTA_OK)
            return st;
        st = mcl_sgemm(d, false, true, cout, rows, cols, 1.0f, dyt, cols, col, cols, 1.0f, dw, ld);
        if (st != MANTA_OK)
            return st;
    }
    if (!dx.mem)
        return MANTA_OK;
    /* dcol (CinKK, NHW) = W^T (CinKK, Cout) dy' (Cout, NHW) */
    st = mcl_sgemm(d, true, false, rows, cols, cout, 1.0f, w, ld, dyt, cols, 0.0f, col, cols);
    if (st != MANTA_OK)
        return st;
    return col2im(d, s, col, dx);
}
