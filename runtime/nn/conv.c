#include "nn/conv.h"

#include <stdint.h>
#include <stdio.h>

#include "cl/blas.h"
#include "cl/slab.h"
#include "nn/launch.h"

/* Scratch layout of the im2col path, in floats from scratch.off:
 *   col (Cin*KH*KW, N*Ho*Wo)  im2col of x; backward reuses it for dcol
 *   yt  (Cout, N*Ho*Wo)       GEMM output (forward) or dy in GEMM layout
 * With N == 1 the GEMM layout (Cout, Ho*Wo) is NCHW itself and yt is unused.
 * The 1x1 stride-1 unpadded path needs no scratch: it runs the direct
 * pointwise kernels of cl_kernels/conv.cl on NCHW (forward and dx as one
 * weight-times-columns kernel, dW as a blocked reduction over the N*HW
 * columns), which on PoCL ran 10 to 40 times faster than CLBlast SGEMM per
 * image (batched) at the supernet's shapes.
 * The GPU variant's dW, Cout x Cin*KH*KW values summed over K = N*Ho*Wo columns, is
 * few values over a long K: as one GEMM it ran on one or a few work-groups (an H100
 * spent 3 ms on the stem's 16 x 9 weights at batch 64). It is split along K into
 * wgrad_splits() chunks, one batched GEMM writes their partial sums after col and yt,
 *   part (splits, Cout*Cin*KH*KW)
 * and wgrad_reduce adds them up into dW. */

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

/* The GPU variant runs every convolution as im2col and GEMMs over K = N*Ho*Wo; the CPU
 * variant has direct kernels for the pointwise and stem convolutions. */
static bool gpu_variant(const mcl_dev *d) { return mcl_get_variant(d) == MCL_VARIANT_GPU; }

/* The split-K weight gradient: about WGRAD_TARGET values of partial sums in all (some 256
 * GEMM tiles of 64 x 64, a few per compute unit of a large GPU), chunks of K at least
 * WGRAD_MIN_CHUNK columns long. */
#define WGRAD_TARGET ((size_t)1 << 20)
#define WGRAD_MIN_CHUNK 256

size_t nn_wgrad_splits(const mcl_dev *d, size_t values, size_t k)
{
    if (!gpu_variant(d))
        return 1;
    size_t want = values ? (WGRAD_TARGET + values - 1) / values : 1, splits = 1;
    while (splits * 2 <= want && splits * 2 <= k / WGRAD_MIN_CHUNK)
        splits *= 2;
    return splits;
}

/* Chunks of K = N*Ho*Wo in the dW of @p s. */
static size_t wgrad_splits(const mcl_dev *d, const nn_conv2d_shape *s)
{
    return nn_wgrad_splits(d, mul_sat((size_t)s->cout, col_rows(s)), col_cols(s));
}

/* Floats of the col (and yt) part of the scratch, before the partial sums. */
static size_t gemm_floats(const nn_conv2d_shape *s)
{
    size_t col = mul_sat(col_rows(s), col_cols(s));
    size_t yt = s->n > 1 ? mul_sat((size_t)s->cout, col_cols(s)) : 0;
    return col > SIZE_MAX - yt ? SIZE_MAX : col + yt;
}

static bool cpu_direct_all(const mcl_dev *d, const nn_conv2d_shape *s);

/* Scratch of the whole batch of @p s (no chunks). */
static size_t whole_scratch_floats(const mcl_dev *d, const nn_conv2d_shape *s)
{
    bool valid = s->n >= 1 && s->cin >= 1 && s->cout >= 1 && nn_conv2d_out_h(s) >= 1 &&
                 nn_conv2d_out_w(s) >= 1;
    if (!valid || (is_pointwise(s) && !gpu_variant(d)) || cpu_direct_all(d, s))
        return 0;
    size_t floats = gemm_floats(s), splits = wgrad_splits(d, s);
    size_t part = splits > 1 ? mul_sat(splits, mul_sat((size_t)s->cout, col_rows(s))) : 0;
    return floats > SIZE_MAX - part ? SIZE_MAX : floats + part;
}

size_t nn_scratch_cap(const mcl_dev *d)
{
    size_t piece = mcl_piece_floats(d);
    return piece < NN_SCRATCH_CAP ? piece : NN_SCRATCH_CAP;
}

int nn_conv2d_chunk(const mcl_dev *d, const nn_conv2d_shape *s)
{
    const size_t cap = nn_scratch_cap(d);
    if (s->n <= 1 || whole_scratch_floats(d, s) <= cap)
        return s->n;
    int lo = 1, hi = s->n - 1; /* the most images whose scratch fits (at least 1) */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        nn_conv2d_shape c = *s;
        c.n = mid;
        if (whole_scratch_floats(d, &c) <= cap)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

size_t nn_conv2d_scratch_floats(const mcl_dev *d, const nn_conv2d_shape *s)
{
    size_t whole = whole_scratch_floats(d, s), cap = nn_scratch_cap(d);
    if (s->n <= 1 || whole <= cap)
        return whole;
    /* in chunks: the cap itself, so that a narrower shape run later with the same scratch
     * (a sub-network's), whose whole batch may fit the cap, finds room for it */
    nn_conv2d_shape c = *s;
    c.n = nn_conv2d_chunk(d, s);
    size_t chunk = whole_scratch_floats(d, &c);
    return chunk > cap ? chunk : cap;
}

/* Check @p s and the sizes the kernels index with int. */
static manta_status check_shape(mcl_dev *d, const char *op, const nn_conv2d_shape *s)
{
    NN_CHECK_CONV_SHAPE(d, op, s);
    bool rows = nn_conv2d_out_h(s) < 1; /* else columns */
    if (rows || nn_conv2d_out_w(s) < 1) {
        char a = rows ? 'h' : 'w';
        return manta_err_set(
            mcl_err(d), MANTA_ERR_INVALID_ARG,
            "%s: kernel %s k%c = %d exceeds the padded input %s %c + 2*pad_%c = "
            "%lld",
            op, rows ? "height" : "width", a, rows ? s->kh : s->kw, rows ? "height" : "width", a, a,
            rows ? (long long)s->h + 2LL * s->pad_h : (long long)s->w + 2LL * s->pad_w);
    }
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

/* Begin im2col or col2im, which take the same arguments: the view read, the view
 * written, then the geometry. */
static void begin_col(mcl_launch *L, mcl_dev *d, const char *kernel, const nn_conv2d_shape *s,
                      mview from, mview to)
{
    const int geometry[] = {s->n,
                            s->cin,
                            s->h,
                            s->w,
                            s->kh,
                            s->kw,
                            s->stride_h,
                            s->stride_w,
                            s->pad_h,
                            s->pad_w,
                            nn_conv2d_out_h(s),
                            nn_conv2d_out_w(s)};
    mcl_launch_begin(L, d, "conv", kernel);
    mcl_arg_view(L, from);
    mcl_arg_view(L, to);
    nn_arg_ints(L, geometry, sizeof geometry / sizeof geometry[0]);
}

/* x: (N, Cin, H, W) -> col: (Cin*KH*KW, N*Ho*Wo) */
manta_status nn_im2col(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview col)
{
    mcl_launch L;
    begin_col(&L, d, "im2col", s, x, col);
    mcl_launch_output(&L, col_rows(s) * col_cols(s));
    return mcl_launch_run(&L, 2, (size_t[]){col_cols(s), (size_t)s->cin}, NULL);
}

/* dcol: (Cin*KH*KW, N*Ho*Wo) -> dx: (N, Cin, H, W), overwritten */
manta_status nn_col2im(mcl_dev *d, const nn_conv2d_shape *s, mview dcol, mview dx)
{
    mcl_launch L;
    begin_col(&L, d, "col2im", s, dcol, dx);
    size_t planes = (size_t)s->n * (size_t)s->cin, w = (size_t)s->w, h = (size_t)s->h;
    size_t local[3] = {w < 64 ? w : 64, 1, 1};
    local[1] = 64 / local[0] < h ? 64 / local[0] : h;
    bool fits = local[0] * local[1] <= mcl_launch_wg_max(&L) && local[0] <= nn_item_max(d, 0) &&
                local[1] <= nn_item_max(d, 1);
    mcl_launch_output(&L, w * h * planes);
    return mcl_launch_run(&L, 3, (size_t[]){w, h, planes}, fits ? local : NULL);
}

/* src: (A, B, I) -> dst: (B, A, I); dimension 0 of the launch runs over chunks of 8 of
 * the inner axis (swap01), or over its values (swap01_1, GPU variant). */
manta_status nn_swap01(mcl_dev *d, mview src, mview dst, int a, int b, int inner)
{
    const bool one = gpu_variant(d);
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", one ? "swap01_1" : "swap01");
    mcl_arg_view(&L, src);
    mcl_arg_view(&L, dst);
    mcl_arg_int(&L, a);
    mcl_arg_int(&L, b);
    mcl_arg_int(&L, inner);
    size_t chunks = one ? (size_t)inner : ((size_t)inner + 7) / 8;
    size_t local[3] = {chunks < 64 ? chunks : 64, 1, 1};
    local[1] = 64 / local[0] < (size_t)a ? 64 / local[0] : (size_t)a;
    bool fits = local[0] * local[1] <= mcl_launch_wg_max(&L) && local[0] <= nn_item_max(d, 0) &&
                local[1] <= nn_item_max(d, 1);
    mcl_launch_output(&L, (size_t)a * (size_t)b * (size_t)inner);
    return mcl_launch_run(&L, 3, (size_t[]){chunks, (size_t)a, (size_t)b}, fits ? local : NULL);
}

/* Work-group for a 2-D launch of gx x gy work-items: up to 8 along x, then
 * along y up to 64 in all (within the device's limit). */
static void group_2d(const mcl_launch *L, size_t gx, size_t gy, size_t local[2])
{
    size_t cap = mcl_launch_wg_max(L);
    size_t lx = gx < 8 ? gx : 8;
    if (lx > nn_item_max(L->d, 0))
        lx = nn_item_max(L->d, 0);
    size_t ly = 64 / lx;
    if (ly > gy)
        ly = gy;
    if (ly > nn_item_max(L->d, 1))
        ly = nn_item_max(L->d, 1);
    while (lx * ly > cap && ly > 1)
        ly /= 2;
    while (lx * ly > cap && lx > 1)
        lx /= 2;
    local[0] = lx;
    local[1] = ly;
}

/* Run @p L over gx x gy work-items in the groups of group_2d(). */
static manta_status run_2d(mcl_launch *L, size_t gx, size_t gy)
{
    size_t local[2];
    group_2d(L, gx, gy, local);
    return mcl_launch_run(L, 2, (size_t[]){gx, gy}, local);
}

/* Begin @p kernel of @p program for out = A in: lin_forward and the pw_apply kernels take
 * (in, a, out, n, k, m) first. */
static void begin_apply(mcl_launch *L, mcl_dev *d, const char *program, const char *kernel,
                        mview in, mview a, mview out, size_t n, size_t k, size_t m)
{
    mcl_launch_begin(L, d, program, kernel);
    mcl_arg_views(L, (mview[]){in, a, out}, 3);
    mcl_arg_int(L, (int)n);
    mcl_arg_int(L, (int)k);
    mcl_arg_int(L, (int)m);
}

/* out (N, M) = in (N, K) A^T for hw = 1, with the kernels of
 * cl_kernels/linear.cl: the forward (A = W, a_ks = 1) is lin_forward (dot
 * products of rows), dx (A = W^T) is lin_rows (rows of W scaled by dy). */
static manta_status pw_apply_hw1(mcl_dev *d, mview in, mview a, mview out, size_t n, size_t k,
                                 size_t m, size_t a_rs, size_t a_ks)
{
    mcl_launch L;
    if (a_ks == 1) {
        begin_apply(&L, d, "linear", "lin_forward", in, a, out, n, k, m);
        mcl_arg_int(&L, (int)a_rs);
        return run_2d(&L, (m + 3) / 4, (n + 3) / 4);
    }
    /* out (N, M) = in (N, K) B with B (K, M) = A^T, rows of stride a_ks */
    mcl_launch_begin(&L, d, "linear", "lin_rows");
    mcl_arg_views(&L, (mview[]){in, a, out}, 3);
    mcl_arg_int(&L, (int)n);
    mcl_arg_int(&L, (int)m);
    mcl_arg_int(&L, (int)k);
    mcl_arg_int(&L, (int)k);
    mcl_arg_int(&L, 1);
    mcl_arg_int(&L, (int)a_ks);
    mcl_arg_int(&L, (int)m);
    mcl_arg_float(&L, 0.0f);
    return run_2d(&L, (m + 15) / 16, (n + 3) / 4);
}

/* out (N, M, HW) = A (M, K) in (N, K, HW), A[m, k] = a[m * a_rs + k * a_ks]. */
static manta_status pw_apply(mcl_dev *d, mview in, mview a, mview out, size_t n, size_t k, size_t m,
                             size_t hw, size_t a_rs, size_t a_ks)
{
    if (hw == 1) /* out (N, M) = in (N, K) A^T: the linear layer's kernels */
        return pw_apply_hw1(d, in, a, out, n, k, m, a_rs, a_ks);
    /* chunks of 8 columns: inside an image (hw a multiple of 8), whole images
     * (hw 2 or 4), else vector loads where they fit and gathers elsewhere */
    const char *name = hw % 8 == 0 ? "pw_apply_contig"
                       : hw == 4   ? "pw_apply_packed4"
                       : hw == 2   ? "pw_apply_packed2"
                                   : "pw_apply_mixed";
    mcl_launch L;
    begin_apply(&L, d, "conv", name, in, a, out, n, k, m);
    mcl_arg_int(&L, (int)hw);
    mcl_arg_int(&L, (int)a_rs);
    mcl_arg_int(&L, (int)a_ks);
    size_t chunks = (n * hw + 7) / 8;
    return run_2d(&L, (chunks + 1) / 2, (m + 7) / 8);
}

/* dw (Cout, ld) += dy (N, Cout, HW) x (N, Cin, HW)^T */
static manta_status pw_wgrad(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview dy, mview dw,
                             size_t ld)
{
    size_t hw = (size_t)s->h * (size_t)s->w;
    /* cl_kernels/conv.cl: whole rows from 8 columns on, channels packed with
     * the columns when hw divides 8, else gathered columns */
    char name[32];
    size_t per_item = 4; /* input channels per work-item */
    if (hw >= 8) {
        snprintf(name, sizeof name, "pw_wgrad_rows_k");
    } else if (8 % hw == 0) {
        snprintf(name, sizeof name, "pw_wgrad_packed%zu", hw);
        per_item = 4 * (8 / hw);
    } else {
        snprintf(name, sizeof name, "pw_wgrad_gather_k");
    }
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", name);
    mcl_arg_views(&L, (mview[]){x, dy, dw}, 3);
    mcl_arg_int(&L, s->n);
    mcl_arg_int(&L, s->cin);
    mcl_arg_int(&L, s->cout);
    mcl_arg_int(&L, (int)hw);
    mcl_arg_int(&L, (int)ld);
    return run_2d(&L, ((size_t)s->cin + per_item - 1) / per_item, ((size_t)s->cout + 3) / 4);
}

/* Direct kernels for dense convolutions with few input channels (the stem;
 * cl_kernels/conv.cl): square K = 3, 5, 7, equal strides 1 or 2 and pads.
 * The forward needs rows of at least DIRECT_MIN_WIDTH outputs; dW rows up to
 * DIRECT_ROW_MAX floats (CONV_ROW_MAX there). */
#define DIRECT_MAX_CIN 4
#define DIRECT_MIN_WIDTH 4
#define DIRECT_GROUP 128
#define DIRECT_ROW_MAX 136

/* The kernels of conv_rows_backward_w: square K = 3, 5, 7, equal strides 1 or 2 and pads,
 * any channel counts (a work-item per output channel, input channel and kernel row, over
 * the batch's rows). */
static bool direct_dw_shape(const nn_conv2d_shape *s)
{
    return s->kh == s->kw && (s->kh == 3 || s->kh == 5 || s->kh == 7) &&
           s->stride_h == s->stride_w && (s->stride_h == 1 || s->stride_h == 2) &&
           s->pad_h == s->pad_w;
}

/* The direct forward (conv_tile_forward: the input channels' rows staged in local memory). */
static bool direct_shape(const nn_conv2d_shape *s)
{
    return direct_dw_shape(s) && s->cin <= DIRECT_MAX_CIN;
}

/* Output channels per work-item of conv3_rows (CONV3_CB in conv.cl). */
#define CONV3_CB 4

/* conv3_rows: 3x3, stride 1, pad 1, more input channels than the tiled forward takes. */
static bool conv3_shape(const nn_conv2d_shape *s)
{
    return s->kh == 3 && s->kw == 3 && s->stride_h == 1 && s->stride_w == 1 && s->pad_h == 1 &&
           s->pad_w == 1;
}

/* out (N, B, H, W) from in (N, A, H, W) through the 3x3 taps (conv3_rows in conv.cl). */
static manta_status conv3_rows(mcl_dev *d, const nn_conv2d_shape *s, mview in, mview w, mview out,
                               int a, int b, int wb, int wa, int flip)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", "conv3_rows");
    mcl_arg_views(&L, (mview[]){in, w, out}, 3);
    nn_arg_ints(&L, (const int[]){s->n, a, b, s->h, s->w, wb, wa, flip}, 8);
    mcl_launch_output(&L, (size_t)s->n * b * s->h * s->w);
    const size_t blocks = ((size_t)b + CONV3_CB - 1) / CONV3_CB;
    return mcl_launch_run(
        &L, 3, (size_t[]){((size_t)s->w + 7) / 8, (size_t)s->h, (size_t)s->n * blocks}, NULL);
}

/* The arguments of the direct kernels: three views, then the shape. */
static void direct_args(mcl_launch *L, mview a, mview b, mview out, const nn_conv2d_shape *s)
{
    mcl_arg_views(L, (mview[]){a, b, out}, 3);
    const int shape[] = {s->n,
                         s->cin,
                         s->h,
                         s->w,
                         s->cout,
                         s->pad_h,
                         nn_conv2d_out_h(s),
                         nn_conv2d_out_w(s),
                         (int)weight_ld(s)};
    nn_arg_ints(L, shape, sizeof shape / sizeof shape[0]);
}

/* Direct forward; *done false (nothing enqueued) when the shape does not suit it. */
static manta_status direct_forward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview y,
                                   bool *done)
{
    size_t ho = (size_t)nn_conv2d_out_h(s), wo = (size_t)nn_conv2d_out_w(s);
    size_t k = (size_t)s->kh, st = (size_t)s->stride_h;
    *done = false;
    if (!direct_shape(s) || wo < DIRECT_MIN_WIDTH)
        return MANTA_OK;
    char name[40];
    snprintf(name, sizeof name, "conv_tile_forward_k%zu_s%zu", k, st);
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", name);
    size_t cap = nn_group_cap(&L, DIRECT_GROUP);
    size_t mem = (size_t)(mcl_info(d)->local_mem / 2 / sizeof(float));
    size_t ns = (wo + 7) / 8;
    size_t ts = st == 1 ? ns * 8 + k - 1 : 2 * (ns * 8 + (k - 1) / 2);
    if (ns > cap || ns > nn_item_max(d, 0))
        return MANTA_OK;
    size_t ly = cap / ns < ho ? cap / ns : ho;
    if (ly > nn_item_max(d, 1))
        ly = nn_item_max(d, 1);
    while (ly > 1 && (size_t)s->cin * ((ly - 1) * st + k) * ts > mem)
        ly /= 2;
    size_t floats = (size_t)s->cin * ((ly - 1) * st + k) * ts;
    if (floats > mem)
        return MANTA_OK;
    direct_args(&L, x, w, y, s);
    mcl_arg_local(&L, floats * sizeof(float));
    *done = true;
    size_t groups = (size_t)s->n * (((size_t)s->cout + 7) / 8);
    return mcl_launch_run(&L, 3, (size_t[]){ns, ho, groups}, (size_t[]){ns, ly, 1});
}

/* Whether the CPU variant's direct dW takes @p s (conv_rows_backward_w: rows up to
 * DIRECT_ROW_MAX floats, K work-items a group). */
static bool direct_dw_fits(const mcl_dev *d, const nn_conv2d_shape *s)
{
    size_t wo = (size_t)nn_conv2d_out_w(s), k = (size_t)s->kh, st = (size_t)s->stride_h;
    return direct_dw_shape(s) && (wo + 7) / 8 * 8 * st + k <= DIRECT_ROW_MAX &&
           k <= mcl_info(d)->max_work_group;
}

/* The CPU variant runs every pass of @p s without scratch: conv3_rows forward and dx (or the
 * tiled forward), the direct dW. */
static bool cpu_direct_all(const mcl_dev *d, const nn_conv2d_shape *s)
{
    return !gpu_variant(d) && conv3_shape(s) && direct_dw_fits(d, s);
}

/* Direct dW (accumulated); *done false when the shape does not suit it. */
static manta_status direct_wgrad(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview dy, mview dw,
                                 bool *done)
{
    size_t k = (size_t)s->kh, st = (size_t)s->stride_h;
    *done = false;
    if (!direct_dw_fits(d, s))
        return MANTA_OK;
    char name[40];
    snprintf(name, sizeof name, "conv_rows_backward_w_k%zu_s%zu", k, st);
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", name);
    direct_args(&L, x, dy, dw, s);
    *done = true;
    size_t items = (size_t)s->cout * (size_t)s->cin * k;
    return mcl_launch_run(&L, 1, (size_t[]){items}, (size_t[]){k});
}

static manta_status conv_forward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview y,
                                 mview scratch)
{
    static const char op[] = "conv2d forward";
    manta_status st = check_shape(d, op, s);
    if (st == MANTA_OK)
        st = nn_need_forward_buffers(d, op, x, w, y);
    if (st != MANTA_OK)
        return st;
    size_t cout = (size_t)s->cout, ld = weight_ld(s);
    size_t hw_o = (size_t)nn_conv2d_out_h(s) * (size_t)nn_conv2d_out_w(s);

    if (!gpu_variant(d)) {
        if (is_pointwise(s)) /* y (N, Cout, HW) = W (Cout, Cin) x (N, Cin, HW) */
            return pw_apply(d, x, w, y, (size_t)s->n, (size_t)s->cin, cout, hw_o, ld, 1);
        bool done;
        st = direct_forward(d, s, x, w, y, &done);
        if (st != MANTA_OK || done)
            return st;
        if (conv3_shape(s))
            return conv3_rows(d, s, x, w, y, s->cin, s->cout, (int)ld, 9, 0);
    }
    if ((st = nn_need_buffer(d, op, "scratch", scratch)) != MANTA_OK)
        return st;
    size_t rows = col_rows(s), cols = col_cols(s);
    mview col = scratch;                                 // (Cin*KH*KW, N*Ho*Wo)
    mview yt = s->n > 1 ? mview_at(scratch, rows * cols) // (Cout, N, Ho*Wo)
                        : y;
    if ((st = nn_im2col(d, s, x, col)) != MANTA_OK)
        return st;
    st = mcl_sgemm(d, false, false, cout, cols, rows, 1.0f, w, ld, col, cols, 0.0f, yt, cols);
    if (st != MANTA_OK || s->n == 1)
        return st;
    return nn_swap01(d, yt, y, s->cout, s->n, (int)hw_o);
}

/* 1x1 stride-1 unpadded backward: x (N, Cin, HW), dy (N, Cout, HW). */
static manta_status pointwise_backward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w,
                                       mview dy, mview dx, mview dw)
{
    size_t cin = (size_t)s->cin, cout = (size_t)s->cout, hw = (size_t)s->h * (size_t)s->w;
    size_t ld = weight_ld(s);
    manta_status st = MANTA_OK;
    if (dw.mem) /* dW (Cout, Cin) += dy x^T over the N*HW columns */
        st = pw_wgrad(d, s, x, dy, dw, ld);
    if (st != MANTA_OK || !dx.mem)
        return st;
    /* dx (N, Cin, HW) = W^T (Cin, Cout) dy (N, Cout, HW) */
    return pw_apply(d, dy, w, dx, (size_t)s->n, cout, cin, hw, 1, ld);
}

manta_status nn_wgrad_reduce(mcl_dev *d, mview part, mview out, size_t count, size_t cols,
                             size_t ld, size_t splits)
{
    NN_CHECK_INT(d, splits * count, "weight gradient partial sums");
    mcl_launch L;
    mcl_launch_begin(&L, d, "conv", "wgrad_reduce");
    mcl_arg_view(&L, part);
    mcl_arg_view(&L, out);
    nn_arg_ints(&L, (const int[]){(int)count, (int)cols, (int)ld, (int)splits}, 4);
    size_t group = nn_reduce_wg(&L, splits);
    if (group > NN_WGRAD_REDUCE_WG)
        group = NN_WGRAD_REDUCE_WG;
    mcl_arg_local(&L, group * sizeof(float));
    mcl_launch_output(&L, count);
    return mcl_launch_run(&L, 1, (size_t[]){count * group}, (size_t[]){group});
}

manta_status nn_gemm_wgrad(mcl_dev *d, size_t m, size_t n, size_t k, mview a, mview b, mview dw,
                           size_t ld, mview part)
{
    size_t splits = nn_wgrad_splits(d, m * n, k);
    if (splits == 1)
        return mcl_sgemm(d, false, true, m, n, k, 1.0f, a, k, b, k, 1.0f, dw, ld);
    size_t chunk = k / splits, done = chunk * splits;
    MANTA_TRY(mcl_sgemm_batched(d, false, true, m, n, chunk, 1.0f, a, k, chunk, b, k, chunk, 0.0f,
                                part, n, m * n, splits));
    MANTA_TRY(nn_wgrad_reduce(d, part, dw, m * n, n, ld, splits));
    if (done == k)
        return MANTA_OK;
    return mcl_sgemm(d, false, true, m, n, k - done, 1.0f, mview_at(a, done), k, mview_at(b, done),
                     k, 1.0f, dw, ld);
}

static manta_status conv_backward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview dy,
                                  mview dx, mview dw, mview scratch)
{
    static const char op[] = "conv2d backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_backward_buffers(d, op, x, w, dy, dx, dw));
    if (!dx.mem && !dw.mem)
        return MANTA_OK;
    if (is_pointwise(s) && !gpu_variant(d))
        return pointwise_backward(d, s, x, w, dy, dx, dw);
    if (dw.mem && !gpu_variant(d)) {
        bool done;
        MANTA_TRY(direct_wgrad(d, s, x, dy, dw, &done));
        if (done)
            dw = (mview){NULL, 0}; /* the im2col path below only computes dx */
        if (!dx.mem && !dw.mem)
            return MANTA_OK;
    }
    if (dx.mem && !dw.mem && !gpu_variant(d) && conv3_shape(s)) /* dx: the flipped taps */
        return conv3_rows(d, s, dy, w, dx, s->cout, s->cin, 9, (int)weight_ld(s), 1);
    manta_status st = nn_need_buffer(d, op, "scratch", scratch);
    if (st != MANTA_OK)
        return st;
    size_t rows = col_rows(s), cols = col_cols(s), cout = (size_t)s->cout, ld = weight_ld(s);
    size_t hw_o = (size_t)nn_conv2d_out_h(s) * (size_t)nn_conv2d_out_w(s);
    mview col = scratch; // (Cin*KH*KW, N*Ho*Wo): im2col of x, then dcol
    mview dyt = dy;      // (Cout, N, Ho*Wo)
    if (s->n > 1) {
        dyt = mview_at(scratch, rows * cols);
        if ((st = nn_swap01(d, dy, dyt, s->n, s->cout, (int)hw_o)) != MANTA_OK)
            return st;
    }
    if (dw.mem) {
        if ((st = nn_im2col(d, s, x, col)) != MANTA_OK)
            return st;
        /* dW (Cout, CinKK) += dy' (Cout, NHW) col^T (NHW, CinKK) */
        st =
            nn_gemm_wgrad(d, cout, rows, cols, dyt, col, dw, ld, mview_at(scratch, gemm_floats(s)));
        if (st != MANTA_OK)
            return st;
    }
    if (!dx.mem)
        return MANTA_OK;
    /* dcol (CinKK, NHW) = W^T (CinKK, Cout) dy' (Cout, NHW) */
    st = mcl_sgemm(d, true, false, rows, cols, cout, 1.0f, w, ld, dyt, cols, 0.0f, col, cols);
    if (st != MANTA_OK)
        return st;
    return nn_col2im(d, s, col, dx);
}

/* Floats of one image of the input and of the output of @p s. */
static size_t image_in(const nn_conv2d_shape *s) { return (size_t)s->cin * s->h * s->w; }
static size_t image_out(const nn_conv2d_shape *s)
{
    return (size_t)s->cout * nn_conv2d_out_h(s) * nn_conv2d_out_w(s);
}

manta_status nn_conv2d_forward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview y,
                               mview scratch)
{
    const int chunk = s && s->n >= 1 ? nn_conv2d_chunk(d, s) : 0;
    if (!s || chunk >= s->n)
        return conv_forward(d, s, x, w, y, scratch);
    for (int i = 0; i < s->n; i += chunk) {
        nn_conv2d_shape c = *s;
        c.n = s->n - i < chunk ? s->n - i : chunk;
        MANTA_TRY(conv_forward(d, &c, x.mem ? mview_at(x, (size_t)i * image_in(s)) : x, w,
                               y.mem ? mview_at(y, (size_t)i * image_out(s)) : y, scratch));
    }
    return MANTA_OK;
}

manta_status nn_conv2d_backward(mcl_dev *d, const nn_conv2d_shape *s, mview x, mview w, mview dy,
                                mview dx, mview dw, mview scratch)
{
    const int chunk = s && s->n >= 1 ? nn_conv2d_chunk(d, s) : 0;
    if (!s || chunk >= s->n)
        return conv_backward(d, s, x, w, dy, dx, dw, scratch);
    for (int i = 0; i < s->n; i += chunk) {
        nn_conv2d_shape c = *s;
        c.n = s->n - i < chunk ? s->n - i : chunk;
        const size_t in = (size_t)i * image_in(s), out = (size_t)i * image_out(s);
        MANTA_TRY(conv_backward(d, &c, x.mem ? mview_at(x, in) : x, w,
                                dy.mem ? mview_at(dy, out) : dy, dx.mem ? mview_at(dx, in) : dx, dw,
                                scratch));
    }
    return MANTA_OK;
}
