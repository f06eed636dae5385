#include "nn/deconv.h"

#include <limits.h>
#include <stdint.h>

#include "cl/blas.h"
#include "nn/bias.h"
#include "nn/conv.h"
#include "nn/launch.h"

/* The GEMM path works on the adjoint convolution (deconv.h): input (N, Cout, Ho, Wo),
 * output (N, Cin, H, W), so its column matrix is
 *   col (Cout*KH*KW, N*H*W)    row (co, ky, kx), column (b, iy, ix)
 * and conv.cl's col2im (forward) and im2col (backward) run with that geometry.
 * Scratch layout of the GEMM path, in floats from scratch.off:
 *   col  (Cout*KH*KW, N*H*W)  forward: W^T x; backward: im2col of dy (for dx and dW)
 *   xt   (Cin, N*H*W)         x in GEMM layout for dW, when N > 1 (with N == 1 x is)
 *   part                      partial sums of the GPU variant's split dW or db
 * The forward and dx GEMMs run per image (batched): the column matrix's images are
 * contiguous column ranges, so W^T x_b lands in its place and W col_b in dx_b, with no
 * layout change of x, y, dy or dx.
 * On PoCL (2 cores) the CPU variant's direct k4 s2 p1 kernels ran forward + backward 2.5
 * to 7 times faster than this path at a decoder shape (N 8, 64 -> 32 channels, 16 x 32 ->
 * 32 x 64; tools/bench/deconv_bench.c), each pass faster. */

/* a * b, saturating at SIZE_MAX so that size checks cannot be fooled by wrap-around. */
static size_t mul_sat(size_t a, size_t b) { return (a && b > SIZE_MAX / a) ? SIZE_MAX : a * b; }

static size_t add_sat(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

/* (in - 1) * stride - 2 * pad + k; 0 when an argument is out of range or the result is not
 * a positive int. */
static int deconv_out(int in, int k, int stride, int pad)
{
    if (in < 1 || k < 1 || stride < 1 || pad < 0)
        return 0;
    long long v = ((long long)in - 1) * stride - 2LL * pad + k;
    return v < 1 || v > INT_MAX ? 0 : (int)v;
}

int nn_deconv2d_out_h(const nn_deconv2d_shape *s)
{
    return s ? deconv_out(s->h, s->kh, s->stride_h, s->pad_h) : 0;
}

int nn_deconv2d_out_w(const nn_deconv2d_shape *s)
{
    return s ? deconv_out(s->w, s->kw, s->stride_w, s->pad_w) : 0;
}

double nn_deconv2d_macs(const nn_deconv2d_shape *s)
{
    return (double)s->n * s->cin * s->h * s->w * s->cout * s->kh * s->kw;
}

static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

/* The CPU variant's direct kernels: k4 s2 p1 on both axes. */
static bool direct(const mcl_dev *d, const nn_deconv2d_shape *s)
{
    return !gpu_variant(d) && s->kh == 4 && s->kw == 4 && s->stride_h == 2 && s->stride_w == 2 &&
           s->pad_h == 1 && s->pad_w == 1;
}

/* Rows of the column matrix (Cout*KH*KW: one weight row) and its columns (N*H*W). */
static size_t col_rows(const nn_deconv2d_shape *s)
{
    return mul_sat(mul_sat((size_t)s->cout, (size_t)s->kh), (size_t)s->kw);
}

static size_t col_cols(const nn_deconv2d_shape *s)
{
    return mul_sat(mul_sat((size_t)s->n, (size_t)s->h), (size_t)s->w);
}

static size_t out_hw(const nn_deconv2d_shape *s)
{
    return mul_sat((size_t)nn_deconv2d_out_h(s), (size_t)nn_deconv2d_out_w(s));
}

static size_t weight_ld(const nn_deconv2d_shape *s)
{
    return s->w_ld ? (size_t)s->w_ld : col_rows(s);
}

/* Chunks of K = N*H*W in the GPU variant's dW (nn_wgrad_splits()). */
static size_t wgrad_splits(const mcl_dev *d, const nn_deconv2d_shape *s)
{
    return nn_wgrad_splits(d, mul_sat((size_t)s->cin, col_rows(s)), col_cols(s));
}

/* Floats of the col and xt parts of the scratch, before the partial sums. */
static size_t gemm_floats(const nn_deconv2d_shape *s)
{
    size_t col = mul_sat(col_rows(s), col_cols(s));
    size_t xt = s->n > 1 ? mul_sat((size_t)s->cin, col_cols(s)) : 0;
    return add_sat(col, xt);
}

/* The bias of @p s: (N, Cout, Ho*Wo) (nn/bias.h). */
static nn_bias_shape bias_shape(const nn_deconv2d_shape *s)
{
    size_t hw = out_hw(s);
    return (nn_bias_shape){s->n, s->cout, hw > (size_t)INT_MAX ? INT_MAX : (int)hw};
}

/* Floats of the partial sums (0 when no gradient is split): the split dW's, or the bias
 * gradient's scratch (nn_bias_channels_scratch_floats()). */
static size_t part_floats(const mcl_dev *d, const nn_deconv2d_shape *s)
{
    size_t ws = wgrad_splits(d, s);
    size_t w = ws > 1 ? mul_sat(ws, mul_sat((size_t)s->cin, col_rows(s))) : 0;
    nn_bias_shape bs = bias_shape(s);
    size_t b = nn_bias_channels_scratch_floats(d, &bs);
    return w > b ? w : b;
}

static bool valid_shape(const nn_deconv2d_shape *s)
{
    return s && s->n >= 1 && s->cin >= 1 && s->cout >= 1 && s->h >= 1 && s->w >= 1 &&
           s->w_ld >= 0 && nn_deconv2d_out_h(s) >= 1 && nn_deconv2d_out_w(s) >= 1;
}

/* Scratch of the whole batch of @p s (no chunks). */
static size_t whole_scratch_floats(const mcl_dev *d, const nn_deconv2d_shape *s)
{
    if (!valid_shape(s))
        return 0;
    size_t part = part_floats(d, s);
    if (direct(d, s))
        return part;
    return add_sat(gemm_floats(s), part);
}

/* Images per chunk of the GEMM path (nn_conv2d_chunk()'s rule): N when the whole batch's
 * scratch fits nn_scratch_cap(). */
static int deconv_chunk(const mcl_dev *d, const nn_deconv2d_shape *s)
{
    const size_t cap = nn_scratch_cap(d);
    if (!valid_shape(s) || s->n <= 1 || direct(d, s) || whole_scratch_floats(d, s) <= cap)
        return s ? s->n : 0;
    int lo = 1, hi = s->n - 1;
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        nn_deconv2d_shape c = *s;
        c.n = mid;
        if (whole_scratch_floats(d, &c) <= cap)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

size_t nn_deconv2d_scratch_floats(const mcl_dev *d, const nn_deconv2d_shape *s)
{
    if (!valid_shape(s))
        return 0;
    const int chunk = deconv_chunk(d, s);
    if (chunk >= s->n)
        return whole_scratch_floats(d, s);
    nn_deconv2d_shape c = *s;
    c.n = chunk;
    nn_bias_shape bs = bias_shape(s); /* the bias gradient runs on the whole batch */
    size_t b = nn_bias_channels_scratch_floats(d, &bs), w = whole_scratch_floats(d, &c);
    /* at least the cap, as nn_conv2d_scratch_floats(): room for a narrower shape's whole
     * batch */
    size_t cap = nn_scratch_cap(d);
    w = w > cap ? w : cap;
    return w > b ? w : b;
}

/* Check @p s and the sizes the kernels index with int. */
static manta_status check_shape(mcl_dev *d, const char *op, const nn_deconv2d_shape *s)
{
    NN_CHECK_CONV_SHAPE(d, op, s);
    bool rows = nn_deconv2d_out_h(s) < 1; /* else columns */
    if (rows || nn_deconv2d_out_w(s) < 1) {
        char a = rows ? 'h' : 'w';
        long long in = rows ? s->h : s->w, st = rows ? s->stride_h : s->stride_w;
        long long pad = rows ? s->pad_h : s->pad_w, k = rows ? s->kh : s->kw;
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: padding pad_%c = %lld leaves no output %s: (%c - 1) * stride_%c "
                             "- 2 * pad_%c + k%c = %lld",
                             op, a, pad, rows ? "rows" : "columns", a, a, a, a,
                             (in - 1) * st - 2 * pad + k);
    }
    if (s->w_ld != 0 && (size_t)s->w_ld < col_rows(s))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: shape field w_ld = %d is below cout*kh*kw = %zu", op, s->w_ld,
                             col_rows(s));
    NN_CHECK_INT(d, mul_sat((size_t)s->cin, col_cols(s)), "deconv2d input size");
    NN_CHECK_INT(d, mul_sat(mul_sat((size_t)s->n, (size_t)s->cout), out_hw(s)),
                 "deconv2d output size");
    NN_CHECK_INT(d, mul_sat(col_rows(s), col_cols(s)), "deconv2d column matrix size");
    NN_CHECK_INT(d, mul_sat(weight_ld(s), (size_t)s->cin), "deconv2d weight size");
    return MANTA_OK;
}

/* ---- GEMM path -------------------------------------------------------------------- */

/* The convolution whose adjoint @p s is: from y's (N, Cout, Ho, Wo) to x's (N, Cin, H, W)
 * with the same kernel, stride and padding. im2col of dy and col2im into y run on it. */
static nn_conv2d_shape adjoint(const nn_deconv2d_shape *s)
{
    return (nn_conv2d_shape){
        s->n,     s->cout, nn_deconv2d_out_h(s), nn_deconv2d_out_w(s), s->cin,
        s->kh,    s->kw,   s->stride_h,          s->stride_w,          s->pad_h,
        s->pad_w, 0};
}

/* ---- CPU variant: direct k4 s2 p1 kernels ----------------------------------------- */

/* cl_kernels/deconv.cl: channels per work-item of the forward (output) and dx (input). */
#define DIRECT_CO 4
#define DIRECT_CI 4

/* Run @p L over (ceil(W / 8), H, N * ceil(C / per)) work-items. */
static manta_status direct_run(mcl_launch *L, const nn_deconv2d_shape *s, int c, int per,
                               size_t outputs)
{
    size_t chunks = ((size_t)s->w + 7) / 8;
    size_t z = (size_t)s->n * (((size_t)c + (size_t)per - 1) / (size_t)per);
    mcl_launch_output(L, outputs);
    return mcl_launch_run(L, 3, (size_t[]){chunks, (size_t)s->h, z}, NULL);
}

/* The shape arguments of the direct kernels after their views. */
static void direct_shape_args(mcl_launch *L, const nn_deconv2d_shape *s)
{
    nn_arg_ints(L, (const int[]){s->n, s->cin, s->h, s->w, s->cout, (int)weight_ld(s)}, 6);
}

static manta_status direct_forward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w,
                                   mview b, mview y)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "deconv", "deconv_k4s2_forward");
    /* without a bias the kernel never reads its view: w stands in for it */
    mcl_arg_views(&L, (mview[]){x, w, b.mem ? b : w, y}, 4);
    direct_shape_args(&L, s);
    mcl_arg_int(&L, b.mem != NULL);
    return direct_run(&L, s, s->cout, DIRECT_CO, (size_t)s->n * (size_t)s->cout * out_hw(s));
}

/* Begin the direct backward kernel @p kernel: views a, b, out, then the shape. */
static void begin_direct_backward(mcl_launch *L, mcl_dev *d, const char *kernel,
                                  const nn_deconv2d_shape *s, mview a, mview b, mview out)
{
    mcl_launch_begin(L, d, "deconv", kernel);
    mcl_arg_views(L, (mview[]){a, b, out}, 3);
    direct_shape_args(L, s);
}

static manta_status direct_dx(mcl_dev *d, const nn_deconv2d_shape *s, mview w, mview dy, mview dx)
{
    mcl_launch L;
    begin_direct_backward(&L, d, "deconv_k4s2_backward_dx", s, dy, w, dx);
    return direct_run(&L, s, s->cin, DIRECT_CI, (size_t)s->cin * col_cols(s));
}

static manta_status direct_dw(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview dy, mview dw)
{
    mcl_launch L;
    begin_direct_backward(&L, d, "deconv_k4s2_backward_w", s, x, dy, dw);
    mcl_launch_output(&L, (size_t)s->cin * col_rows(s));
    return mcl_launch_run(&L, 2, (size_t[]){(size_t)s->cout, ((size_t)s->cin + 1) / 2}, NULL);
}

/* ---- the op --------------------------------------------------------------------------- */

static manta_status deconv_forward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w,
                                   mview b, mview y, mview scratch)
{
    static const char op[] = "deconv2d forward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_forward_buffers(d, op, x, w, y));
    if (direct(d, s))
        return direct_forward(d, s, x, w, b, y);
    MANTA_TRY(nn_need_buffer(d, op, "scratch", scratch));
    size_t rows = col_rows(s), hw = (size_t)s->h * (size_t)s->w, cin = (size_t)s->cin;
    /* col[:, image b] (CoutKK, HW) = W^T (CoutKK, Cin) x_b (Cin, HW) */
    MANTA_TRY(mcl_sgemm_batched(d, true, false, rows, hw, cin, 1.0f, w, weight_ld(s), 0, x, hw,
                                cin * hw, 0.0f, scratch, col_cols(s), hw, (size_t)s->n));
    nn_conv2d_shape adj = adjoint(s);
    MANTA_TRY(nn_col2im(d, &adj, scratch, y));
    nn_bias_shape bs = bias_shape(s);
    return b.mem ? nn_bias_channels_forward(d, &bs, b, y) : MANTA_OK;
}

static manta_status deconv_backward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w,
                                    mview dy, mview dx, mview dw, mview db, mview scratch)
{
    static const char op[] = "deconv2d backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_backward_buffers(d, op, x, w, dy, dx, dw));
    nn_bias_shape bs = bias_shape(s);
    bool split_bias = db.mem && nn_bias_channels_scratch_floats(d, &bs) > 0;
    if (split_bias || (!direct(d, s) && (dx.mem || dw.mem)))
        MANTA_TRY(nn_need_buffer(d, op, "scratch", scratch));
    mview part = mview_at(scratch, direct(d, s) ? 0 : gemm_floats(s));
    if (db.mem)
        MANTA_TRY(nn_bias_channels_backward(d, &bs, dy, db, split_bias ? part : (mview){NULL, 0}));
    if (direct(d, s)) {
        if (dw.mem)
            MANTA_TRY(direct_dw(d, s, x, dy, dw));
        return dx.mem ? direct_dx(d, s, w, dy, dx) : MANTA_OK;
    }
    if (!dx.mem && !dw.mem)
        return MANTA_OK;
    size_t rows = col_rows(s), cols = col_cols(s), hw = (size_t)s->h * (size_t)s->w;
    size_t cin = (size_t)s->cin;
    mview col = scratch; // (CoutKK, N*H*W): im2col of dy
    nn_conv2d_shape adj = adjoint(s);
    MANTA_TRY(nn_im2col(d, &adj, dy, col));
    if (dw.mem) {
        mview xt = x; // (Cin, N*H*W)
        if (s->n > 1) {
            xt = mview_at(scratch, rows * cols);
            MANTA_TRY(nn_swap01(d, x, xt, s->n, s->cin, s->h * s->w));
        }
        /* dW (Cin, CoutKK) += xt (Cin, NHW) col^T (NHW, CoutKK) */
        MANTA_TRY(nn_gemm_wgrad(d, cin, rows, cols, xt, col, dw, weight_ld(s), part));
    }
    if (!dx.mem)
        return MANTA_OK;
    /* dx_b (Cin, HW) = W (Cin, CoutKK) col[:, image b] (CoutKK, HW) */
    return mcl_sgemm_batched(d, false, false, cin, hw, rows, 1.0f, w, weight_ld(s), 0, col, cols,
                             hw, 0.0f, dx, hw, cin * hw, (size_t)s->n);
}

/* Floats of one image of the input and of the output of @p s. */
static size_t image_in(const nn_deconv2d_shape *s) { return (size_t)s->cin * s->h * s->w; }
static size_t image_out(const nn_deconv2d_shape *s) { return (size_t)s->cout * out_hw(s); }

manta_status nn_deconv2d_forward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w, mview b,
                                 mview y, mview scratch)
{
    const int chunk = deconv_chunk(d, s);
    if (!s || chunk >= s->n)
        return deconv_forward(d, s, x, w, b, y, scratch);
    for (int i = 0; i < s->n; i += chunk) {
        nn_deconv2d_shape c = *s;
        c.n = s->n - i < chunk ? s->n - i : chunk;
        MANTA_TRY(deconv_forward(d, &c, x.mem ? mview_at(x, (size_t)i * image_in(s)) : x, w, b,
                                 y.mem ? mview_at(y, (size_t)i * image_out(s)) : y, scratch));
    }
    return MANTA_OK;
}

manta_status nn_deconv2d_backward(mcl_dev *d, const nn_deconv2d_shape *s, mview x, mview w,
                                  mview dy, mview dx, mview dw, mview db, mview scratch)
{
    const int chunk = deconv_chunk(d, s);
    if (!s || chunk >= s->n)
        return deconv_backward(d, s, x, w, dy, dx, dw, db, scratch);
    static const char op[] = "deconv2d backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_backward_buffers(d, op, x, w, dy, dx, dw));
    if (db.mem) { /* the bias gradient of the whole batch, then dx and dW in chunks */
        nn_bias_shape bs = bias_shape(s);
        bool split = nn_bias_channels_scratch_floats(d, &bs) > 0;
        if (split)
            MANTA_TRY(nn_need_buffer(d, op, "scratch", scratch));
        MANTA_TRY(nn_bias_channels_backward(d, &bs, dy, db, split ? scratch : (mview){NULL, 0}));
    }
    if (!dx.mem && !dw.mem)
        return MANTA_OK;
    for (int i = 0; i < s->n; i += chunk) {
        nn_deconv2d_shape c = *s;
        c.n = s->n - i < chunk ? s->n - i : chunk;
        const size_t in = (size_t)i * image_in(s), out = (size_t)i * image_out(s);
        MANTA_TRY(deconv_backward(d, &c, x.mem ? mview_at(x, in) : x, w,
                                  dy.mem ? mview_at(dy, out) : dy, dx.mem ? mview_at(dx, in) : dx,
                                  dw, (mview){NULL, 0}, scratch));
    }
    return MANTA_OK;
}
