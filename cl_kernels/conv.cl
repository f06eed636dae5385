/* Dense 2-D convolution (see runtime/nn/conv.h): helpers around CLBlast SGEMM
 * (im2col, its adjoint col2im (a gather: no atomics), and the axis swap
 * between the GEMM layout (C, N, HW) and NCHW (N, C, HW)), and the direct
 * kernels of 1x1 stride-1 unpadded convolutions.
 * The column matrix col is (Cin*KH*KW, N*Ho*Wo): row (ci, ky, kx), column
 * (n, oy, ox). */

/* x: (N, Cin, H, W); col: (Cin*KH*KW, N*Ho*Wo).
 * Global (N*Ho*Wo, Cin); each work-item writes the KH*KW rows of one column
 * for one input channel, zero where the window reads padding. */
__kernel void im2col(VIEW(x), VIEW(col), int n, int cin, int h, int w, int kh, int kw,
                     int stride_h, int stride_w, int pad_h, int pad_w, int ho, int wo)
{
    PTR(x); PTR(col);
    int j = GID0;                 /* column (n, oy, ox) */
    int ci = (int)get_global_id(1);
    int hw_o = ho * wo;
    int ncols = n * hw_o;
    if (j >= ncols || ci >= cin)
        return;
    int b = j / hw_o;
    int p = j - b * hw_o;
    int oy = p / wo;
    int ox = p - oy * wo;
    __global const float *xp = x + (b * cin + ci) * h * w;
    __global float *cp = col + ci * kh * kw * ncols + j;
    int iy0 = oy * stride_h - pad_h;
    int ix0 = ox * stride_w - pad_w;
    for (int ky = 0; ky < kh; ky++) {
        int iy = iy0 + ky;
        bool row_in = iy >= 0 && iy < h;
        for (int kx = 0; kx < kw; kx++) {
            int ix = ix0 + kx;
            *cp = (row_in && ix >= 0 && ix < w) ? xp[iy * w + ix] : 0.0f;
            cp += ncols;
        }
    }
}

/* part: (splits, count) partial sums of a weight gradient (the split-K GEMMs of the GPU
 * variant's dW, depthwise.cl's dw_wgrad_partial); out += their sum, value o = r*cols + c at
 * out[r*ld + c] (ld >= cols: a block of a larger weight matrix). One work-group per value,
 * local size a power of two with as many floats in scratch. */
__kernel void wgrad_reduce(VIEW(part), VIEW(out), int count, int cols, int ld, int splits,
                           __local float *scratch)
{
    PTR(part); PTR(out);
    int o = (int)get_group_id(0), l = (int)get_local_id(0), L = (int)get_local_size(0);
    float acc = 0.0f;
    for (int s = l; s < splits; s += L)
        acc += part[s * count + o];
    acc = wg_sum(acc, scratch);
    if (l == 0) {
        int r = o / cols;
        out[r * ld + (o - r * cols)] += acc;
    }
}

/* dcol: (Cin*KH*KW, N*Ho*Wo); dx: (N, Cin, H, W), overwritten.
 * Global (W, H, N*Cin): one work-item per input element gathers every column
 * entry that im2col copied from it. */
__kernel void col2im(VIEW(dcol), VIEW(dx), int n, int cin, int h, int w, int kh, int kw,
                     int stride_h, int stride_w, int pad_h, int pad_w, int ho, int wo)
{
    PTR(dcol); PTR(dx);
    int ix = (int)get_global_id(0), iy = (int)get_global_id(1), plane = (int)get_global_id(2);
    if (ix >= w || iy >= h || plane >= n * cin)
        return;
    int ci = plane % cin, b = plane / cin;
    int ncols = n * ho * wo;
    __global const float *cp = dcol + ci * kh * kw * ncols + b * ho * wo;
    float acc = 0.0f;
    for (int ky = 0; ky < kh; ky++) {
        int ty = iy + pad_h - ky; /* oy * stride_h */
        if (ty < 0 || ty % stride_h != 0)
            continue;
        int oy = ty / stride_h;
        if (oy >= ho)
            continue;
        for (int kx = 0; kx < kw; kx++) {
            int tx = ix + pad_w - kx;
            if (tx < 0 || tx % stride_w != 0)
                continue;
            int ox = tx / stride_w;
            if (ox < wo)
                acc += cp[(ky * kw + kx) * ncols + oy * wo + ox];
        }
    }
    dx[(plane * h + iy) * w + ix] = acc;
}

/* src: (A, B, I); dst: (B, A, I), dst[b][a][i] = src[a][b][i].
 * Global (ceil(I / 8), A, B): one work-item per chunk of 8 of the inner
 * axis (the last one masked). Converts between (C, N, HW) and (N, C, HW). */
__kernel void swap01(VIEW(src), VIEW(dst), int a_dim, int b_dim, int inner)
{
    PTR(src); PTR(dst);
    int i = (int)get_global_id(0) * 8;
    int a = (int)get_global_id(1);
    int b = (int)get_global_id(2);
    if (i >= inner || a >= a_dim || b >= b_dim)
        return;
    __global const float *sp = src + (a * b_dim + b) * inner + i;
    __global float *dp = dst + (b * a_dim + a) * inner + i;
    if (i + 8 <= inner) {
        vstore8(vload8(0, sp), 0, dp);
    } else {
        for (int j = 0; j < inner - i; j++)
            dp[j] = sp[j];
    }
}

/* swap01 with one work-item per value: global (I, A, B). */
__kernel void swap01_1(VIEW(src), VIEW(dst), int a_dim, int b_dim, int inner)
{
    PTR(src); PTR(dst);
    int i = (int)get_global_id(0), a = (int)get_global_id(1), b = (int)get_global_id(2);
    if (i < inner && a < a_dim && b < b_dim)
        dst[(b * a_dim + a) * inner + i] = src[(a * b_dim + b) * inner + i];
}

/* ---- Pointwise (1x1, stride 1, no padding) convolution, direct ----------
 * A tensor (N, R, HW) is seen as R rows over the N*HW columns (b, p); a
 * chunk is 8 consecutive columns. A chunk inside one image is one vector
 * load; one that spans two images (or ends the tensor) is gathered lane by
 * lane. */

/* out (N, M, HW) = A (M, K) applied to in (N, K, HW): out[b, m, p] =
 * sum_k A[m, k] in[b, k, p], where A[m, k] = a[m * a_rs + k * a_ks] (the
 * forward passes W (Cout, Cin) with a_rs = w_ld, a_ks = 1; dx passes W^T with
 * a_rs = 1, a_ks = w_ld). Global (ceil(chunks / 2), ceil(M / PW_MR)): each
 * work-item computes PW_MR rows of 2 chunks (16 columns). Overwrites out. */
#define PW_MR 8
inline void pw_apply_body(__global const float *in, __global const float *a, __global float *out,
                          int n, int k_dim, int m_dim, int hw, int a_rs, int a_ks,
                          const bool contig)
{
    int cols = n * hw, chunks = (cols + 7) / 8;
    int c0 = (int)get_global_id(0) * 2, m0 = (int)get_global_id(1) * PW_MR;
    if (c0 >= chunks || m0 >= m_dim)
        return;
    bool two = c0 + 1 < chunks;
    float8 acc0[PW_MR], acc1[PW_MR];
#pragma unroll
    for (int i = 0; i < PW_MR; i++)
        acc0[i] = acc1[i] = (float8)(0.0f);
    __global const float *ar[PW_MR];
#pragma unroll
    for (int i = 0; i < PW_MR; i++)
        ar[i] = a + (size_t)min(m0 + i, m_dim - 1) * a_rs;
    int j0 = c0 * 8, j1 = two ? j0 + 8 : j0;
    int b0 = j0 / hw, b1 = j1 / hw;
    /* both chunks inside an image (a missing second chunk repeats the first) */
    bool inside = contig || (j0 + 8 <= cols && (j0 - b0 * hw) + 8 <= hw && j1 + 8 <= cols &&
                             (j1 - b1 * hw) + 8 <= hw);
    if (inside) {
        __global const float *x0 = in + (size_t)b0 * k_dim * hw + (j0 - b0 * hw);
        __global const float *x1 = in + (size_t)b1 * k_dim * hw + (j1 - b1 * hw);
        for (int k = 0; k < k_dim; k++) {
            float8 v0 = vload8(0, x0), v1 = vload8(0, x1);
            x0 += hw;
            x1 += hw;
#pragma unroll
            for (int i = 0; i < PW_MR; i++) {
                float8 av = (float8)(ar[i][k * a_ks]);
                acc0[i] = fma(av, v0, acc0[i]);
                acc1[i] = fma(av, v1, acc1[i]);
            }
        }
        __global float *y0 = out + ((size_t)b0 * m_dim + m0) * hw + (j0 - b0 * hw);
        __global float *y1 = out + ((size_t)b1 * m_dim + m0) * hw + (j1 - b1 * hw);
#pragma unroll
        for (int i = 0; i < PW_MR; i++) {
            if (m0 + i < m_dim) {
                vstore8(acc0[i], 0, y0 + (size_t)i * hw);
                if (two)
                    vstore8(acc1[i], 0, y1 + (size_t)i * hw);
            }
        }
        return;
    }
    /* gathered lanes: column j = c0 * 8 + lane (clamped for loads) */
    int off0[8], off1[8];
    for (int l = 0; l < 8; l++) {
        int j = min(c0 * 8 + l, cols - 1), b = j / hw;
        off0[l] = b * k_dim * hw + (j - b * hw);
        j = min(c0 * 8 + 8 + l, cols - 1), b = j / hw;
        off1[l] = b * k_dim * hw + (j - b * hw);
    }
    for (int k = 0; k < k_dim; k++) {
        __global const float *xk = in + (size_t)k * hw;
        float8 v0 = (float8)(xk[off0[0]], xk[off0[1]], xk[off0[2]], xk[off0[3]], xk[off0[4]],
                             xk[off0[5]], xk[off0[6]], xk[off0[7]]);
        float8 v1 = (float8)(xk[off1[0]], xk[off1[1]], xk[off1[2]], xk[off1[3]], xk[off1[4]],
                             xk[off1[5]], xk[off1[6]], xk[off1[7]]);
#pragma unroll
        for (int i = 0; i < PW_MR; i++) {
            float8 av = (float8)(ar[i][k * a_ks]);
            acc0[i] = fma(av, v0, acc0[i]);
            acc1[i] = fma(av, v1, acc1[i]);
        }
    }
    for (int i = 0; i < PW_MR && m0 + i < m_dim; i++) {
        float r0[8], r1[8];
        vstore8(acc0[i], 0, r0);
        vstore8(acc1[i], 0, r1);
        for (int l = 0; l < 16; l++) {
            int j = c0 * 8 + l;
            if (j >= cols)
                break;
            int b = j / hw;
            out[((size_t)b * m_dim + m0 + i) * hw + (j - b * hw)] = l < 8 ? r0[l] : r1[l - 8];
        }
    }
}

/* pw_apply_body for HW = 2 or 4 (compile-time): a chunk of 8 columns is
 * 8 / HW whole images of HW contiguous values, one vector load each. */
inline float8 pw_packed_load(__global const float *in, int b0, int n, int k, int k_dim,
                             const int HW)
{
    __global const float *p0 = in + ((size_t)min(b0, n - 1) * k_dim + k) * HW;
    __global const float *p1 = in + ((size_t)min(b0 + 1, n - 1) * k_dim + k) * HW;
    if (HW == 4)
        return (float8)(vload4(0, p0), vload4(0, p1));
    __global const float *p2 = in + ((size_t)min(b0 + 2, n - 1) * k_dim + k) * HW;
    __global const float *p3 = in + ((size_t)min(b0 + 3, n - 1) * k_dim + k) * HW;
    return (float8)(vload2(0, p0), vload2(0, p1), vload2(0, p2), vload2(0, p3));
}

inline void pw_apply_packed_body(__global const float *in, __global const float *a,
                                 __global float *out, int n, int k_dim, int m_dim, int a_rs,
                                 int a_ks, const int HW)
{
    const int R = 8 / HW; /* images per chunk */
    int chunks = (n * HW + 7) / 8;
    int c0 = (int)get_global_id(0) * 2, m0 = (int)get_global_id(1) * PW_MR;
    if (c0 >= chunks || m0 >= m_dim)
        return;
    int b0 = c0 * R, b1 = b0 + R; /* first image of each chunk */
    float8 acc0[PW_MR], acc1[PW_MR];
#pragma unroll
    for (int i = 0; i < PW_MR; i++)
        acc0[i] = acc1[i] = (float8)(0.0f);
    __global const float *ar[PW_MR];
#pragma unroll
    for (int i = 0; i < PW_MR; i++)
        ar[i] = a + (size_t)min(m0 + i, m_dim - 1) * a_rs;
    for (int k = 0; k < k_dim; k++) {
        float8 v0 = pw_packed_load(in, b0, n, k, k_dim, HW);
        float8 v1 = pw_packed_load(in, b1, n, k, k_dim, HW);
#pragma unroll
        for (int i = 0; i < PW_MR; i++) {
            float8 av = (float8)(ar[i][k * a_ks]);
            acc0[i] = fma(av, v0, acc0[i]);
            acc1[i] = fma(av, v1, acc1[i]);
        }
    }
    for (int i = 0; i < PW_MR && m0 + i < m_dim; i++) {
        float t[16];
        vstore8(acc0[i], 0, t);
        vstore8(acc1[i], 0, t + 8);
        for (int q = 0; q < 2 * R && b0 + q < n; q++) {
            __global float *o = out + ((size_t)(b0 + q) * m_dim + m0 + i) * HW;
            if (HW == 4)
                vstore4(vload4(0, t + q * 4), 0, o);
            else
                vstore2(vload2(0, t + q * 2), 0, o);
        }
    }
}

#define PW_APPLY_ARGS VIEW(in), VIEW(a), VIEW(out), int n, int k_dim, int m_dim, int hw,     \
                      int a_rs, int a_ks

/* hw a multiple of 8: every chunk lies inside an image */
__kernel void pw_apply_contig(PW_APPLY_ARGS)
{
    PTR(in); PTR(a); PTR(out);
    pw_apply_body(in, a, out, n, k_dim, m_dim, hw, a_rs, a_ks, true);
}

__kernel void pw_apply_packed2(PW_APPLY_ARGS)
{
    PTR(in); PTR(a); PTR(out);
    pw_apply_packed_body(in, a, out, n, k_dim, m_dim, a_rs, a_ks, 2);
}

__kernel void pw_apply_packed4(PW_APPLY_ARGS)
{
    PTR(in); PTR(a); PTR(out);
    pw_apply_packed_body(in, a, out, n, k_dim, m_dim, a_rs, a_ks, 4);
}

__kernel void pw_apply_mixed(PW_APPLY_ARGS)
{
    PTR(in); PTR(a); PTR(out);
    pw_apply_body(in, a, out, n, k_dim, m_dim, hw, a_rs, a_ks, false);
}

/* dw (Cout, w_ld) += dy (N, Cout, HW) x (N, Cin, HW)^T over the N*HW columns:
 * dw[co, ci] += sum_(b, p) dy[b, co, p] x[b, ci, p]. Three variants:
 *  - rows (HW >= 8): global (ceil(Cin / PW_WN), ceil(Cout / PW_WM)); each
 *    work-item sums a PW_WM x PW_WN block of dw over every image's row in
 *    chunks of 8 (the last chunk of a row overlapping the one before, its
 *    lanes already counted masked out);
 *  - packed (HW = 1, 2 or 4): a vector holds 8 / HW channels times HW
 *    columns of one image, contiguous in x; dy's HW values are repeated
 *    across it; global (ceil(Cin / (PW_WN * 8 / HW)), ceil(Cout / PW_WM));
 *  - gather (other HW below 8): lanes over 8 consecutive columns (b, p). */
#define PW_WM 4
#define PW_WN 4

/* Add the lane sums of acc (PW_WM x PW_WN) to dw rows co0.., columns ci0... */
inline void pw_wgrad_store(__global float *dw, float8 acc[PW_WM][PW_WN], int co0, int ci0,
                           int cout, int cin, int ld)
{
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
#pragma unroll
        for (int j = 0; j < PW_WN; j++) {
            if (co0 + i < cout && ci0 + j < cin) {
                dw[(size_t)(co0 + i) * ld + ci0 + j] += hsum8(acc[i][j]);
            }
        }
}

inline void pw_wgrad_rows(__global const float *x, __global const float *dy, __global float *dw,
                          int n, int cin, int cout, int hw, int ld)
{
    int ci0 = (int)get_global_id(0) * PW_WN, co0 = (int)get_global_id(1) * PW_WM;
    if (ci0 >= cin || co0 >= cout)
        return;
    float8 acc[PW_WM][PW_WN];
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
#pragma unroll
        for (int j = 0; j < PW_WN; j++)
            acc[i][j] = (float8)(0.0f);
    int cor[PW_WM], cir[PW_WN];
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
        cor[i] = min(co0 + i, cout - 1);
#pragma unroll
    for (int j = 0; j < PW_WN; j++)
        cir[j] = min(ci0 + j, cin - 1);
    int full = hw / 8 * 8, tail = hw - full;
    /* the overlapping last chunk starts at hw - 8; lanes below 8 - tail were counted */
    float8 keep = select((float8)(0.0f), (float8)(1.0f),
                         (int8)(0, 1, 2, 3, 4, 5, 6, 7) >= (int8)(8 - tail));
    for (int b = 0; b < n; b++) {
        __global const float *gb = dy + (size_t)b * cout * hw;
        __global const float *xb = x + (size_t)b * cin * hw;
        for (int p = 0; p <= full; p += 8) {
            bool last = p == full;
            if (last && tail == 0)
                break;
            int at = last ? hw - 8 : p;
            float8 g[PW_WM], v[PW_WN];
#pragma unroll
            for (int i = 0; i < PW_WM; i++) {
                g[i] = vload8(0, gb + (size_t)cor[i] * hw + at);
                if (last)
                    g[i] *= keep;
            }
#pragma unroll
            for (int j = 0; j < PW_WN; j++)
                v[j] = vload8(0, xb + (size_t)cir[j] * hw + at);
#pragma unroll
            for (int i = 0; i < PW_WM; i++)
#pragma unroll
                for (int j = 0; j < PW_WN; j++)
                    acc[i][j] = fma(g[i], v[j], acc[i][j]);
        }
    }
    pw_wgrad_store(dw, acc, co0, ci0, cout, cin, ld);
}

/* dy[b, co, 0 .. HW-1] repeated over 8 lanes, HW = 1, 2 or 4. */
inline float8 pw_repeat(__global const float *p, const int HW)
{
    if (HW == 1)
        return (float8)(p[0]);
    if (HW == 2) {
        float2 v = vload2(0, p);
        return (float8)(v, v, v, v);
    }
    float4 v = vload4(0, p);
    return (float8)(v, v);
}

inline void pw_wgrad_packed(__global const float *x, __global const float *dy, __global float *dw,
                            int n, int cin, int cout, int ld, const int HW)
{
    const int R = 8 / HW; /* channels per vector */
    int ci0 = (int)get_global_id(0) * (PW_WN * R), co0 = (int)get_global_id(1) * PW_WM;
    if (ci0 >= cin || co0 >= cout)
        return;
    float8 acc[PW_WM][PW_WN];
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
#pragma unroll
        for (int j = 0; j < PW_WN; j++)
            acc[i][j] = (float8)(0.0f);
    int cor[PW_WM];
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
        cor[i] = min(co0 + i, cout - 1);
    /* channels of each vector inside [0, cin): whole vectors load at once */
    int have[PW_WN];
#pragma unroll
    for (int j = 0; j < PW_WN; j++)
        have[j] = clamp(cin - (ci0 + j * R), 0, R);
    for (int b = 0; b < n; b++) {
        __global const float *gb = dy + (size_t)b * cout * HW;
        __global const float *xb = x + ((size_t)b * cin + ci0) * HW;
        float8 g[PW_WM], v[PW_WN];
#pragma unroll
        for (int i = 0; i < PW_WM; i++)
            g[i] = pw_repeat(gb + (size_t)cor[i] * HW, HW);
#pragma unroll
        for (int j = 0; j < PW_WN; j++) {
            if (have[j] == R) {
                v[j] = vload8(0, xb + j * 8);
            } else {
                float t[8];
                for (int l = 0; l < 8; l++)
                    t[l] = l < have[j] * HW ? xb[j * 8 + l] : 0.0f;
                v[j] = vload8(0, t);
            }
        }
#pragma unroll
        for (int i = 0; i < PW_WM; i++)
#pragma unroll
            for (int j = 0; j < PW_WN; j++)
                acc[i][j] = fma(g[i], v[j], acc[i][j]);
    }
    /* lane r * HW + p of vector j is channel ci0 + j * R + r, column p */
#pragma unroll
    for (int i = 0; i < PW_WM; i++) {
        if (co0 + i >= cout)
            continue;
#pragma unroll
        for (int j = 0; j < PW_WN; j++) {
            float t[8];
            vstore8(acc[i][j], 0, t);
            for (int r = 0; r < have[j]; r++) {
                float sum = 0.0f;
                for (int p = 0; p < HW; p++)
                    sum += t[r * HW + p];
                dw[(size_t)(co0 + i) * ld + ci0 + j * R + r] += sum;
            }
        }
    }
}

inline void pw_wgrad_gather(__global const float *x, __global const float *dy, __global float *dw,
                            int n, int cin, int cout, int hw, int ld)
{
    int ci0 = (int)get_global_id(0) * PW_WN, co0 = (int)get_global_id(1) * PW_WM;
    if (ci0 >= cin || co0 >= cout)
        return;
    float8 acc[PW_WM][PW_WN];
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
#pragma unroll
        for (int j = 0; j < PW_WN; j++)
            acc[i][j] = (float8)(0.0f);
    int cor[PW_WM], cir[PW_WN];
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
        cor[i] = min(co0 + i, cout - 1);
#pragma unroll
    for (int j = 0; j < PW_WN; j++)
        cir[j] = min(ci0 + j, cin - 1);
    /* the tail lanes read column 0 of image 0 and get a zero dy */
    int cols = n * hw;
    for (int c0 = 0; c0 < cols; c0 += 8) {
        float g[PW_WM][8], v[PW_WN][8];
        for (int l = 0; l < 8; l++) {
            int j = c0 + l, b = j < cols ? j / hw : 0, p = j < cols ? j - b * hw : 0;
            float keep = j < cols ? 1.0f : 0.0f;
#pragma unroll
            for (int i = 0; i < PW_WM; i++)
                g[i][l] = keep * dy[((size_t)b * cout + cor[i]) * hw + p];
#pragma unroll
            for (int jj = 0; jj < PW_WN; jj++)
                v[jj][l] = x[((size_t)b * cin + cir[jj]) * hw + p];
        }
#pragma unroll
        for (int i = 0; i < PW_WM; i++)
#pragma unroll
            for (int jj = 0; jj < PW_WN; jj++)
                acc[i][jj] = fma(vload8(0, g[i]), vload8(0, v[jj]), acc[i][jj]);
    }
    pw_wgrad_store(dw, acc, co0, ci0, cout, cin, ld);
}

#define PW_WGRAD_ARGS VIEW(x), VIEW(dy), VIEW(dw), int n, int cin, int cout, int hw, int ld

__kernel void pw_wgrad_rows_k(PW_WGRAD_ARGS)
{
    PTR(x); PTR(dy); PTR(dw);
    pw_wgrad_rows(x, dy, dw, n, cin, cout, hw, ld);
}

__kernel void pw_wgrad_gather_k(PW_WGRAD_ARGS)
{
    PTR(x); PTR(dy); PTR(dw);
    pw_wgrad_gather(x, dy, dw, n, cin, cout, hw, ld);
}

#define PW_WGRAD_PACKED(HW)                                                                  \
    __kernel void pw_wgrad_packed##HW(PW_WGRAD_ARGS)                                         \
    {                                                                                        \
        PTR(x); PTR(dy); PTR(dw);                                                            \
        pw_wgrad_packed(x, dy, dw, n, cin, cout, ld, HW);                                    \
    }
PW_WGRAD_PACKED(1)
PW_WGRAD_PACKED(2)
PW_WGRAD_PACKED(4)

/* ---- Direct dense convolution for few input channels (the stem) ---------
 * Square K x K filters, K = 3, 5, 7, stride S = 1 or 2, the same padding on
 * both axes. The forward stages the zero-padded rows of every input channel
 * of a band in local memory (as the tiled depthwise kernels, stride-2 rows
 * split into even and odd columns) and computes CONV_V = 8 outputs of a row
 * for CONV_CB = 8 output channels per work-item. The weight gradient stages
 * rows in private memory, one work-item per (co, ci, ky). */

#define CONV_CB 8

/* dst[i], i in [0, cnt): src[i - pad] when valid and 0 <= i - pad < width,
 * else 0 (float8 chunks, the last one overlapping). */
inline void conv_fill_row(__local float *dst, __global const float *src, bool valid, int pad,
                          int width, int cnt)
{
    int a = valid ? min(max(pad, 0), cnt) : cnt;
    int b = valid ? min(max(pad + width, 0), cnt) : cnt;
    for (int i = 0; i < a; i++)
        dst[i] = 0.0f;
    if (b - a >= 8) {
        for (int i = a; i < b; i += 8) {
            int at = min(i, b - 8);
            vstore8(vload8(0, src + (at - pad)), 0, dst + at);
        }
    } else {
        for (int i = a; i < b; i++)
            dst[i] = src[i - pad];
    }
    for (int i = b; i < cnt; i++)
        dst[i] = 0.0f;
}

/* The row above split into even (ev) and odd (od) padded columns, nh each. */
inline void conv_fill_row2(__local float *ev, __local float *od, __global const float *src,
                           bool valid, int pad, int width, int nh)
{
    for (int j = 0; j < nh; j++) {
        int i0 = 2 * j - pad, i1 = i0 + 1;
        ev[j] = (valid && i0 >= 0 && i0 < width) ? src[i0] : 0.0f;
        od[j] = (valid && i1 >= 0 && i1 < width) ? src[i1] : 0.0f;
    }
}

/* Row stride of a staged row for ns strips of 8 outputs. */
inline int conv_tile_stride(int ns, const int K, const int S)
{
    return S == 1 ? ns * 8 + K - 1 : 2 * (ns * 8 + (K - 1) / 2);
}

/* 8 taps of a staged row for outputs ox0 ... */
inline float8 conv_tap(__local const float *row, int ox0, int kx, int ts, const int S)
{
    if (S == 1)
        return vload8(0, row + ox0 + kx);
    return vload8(0, row + (kx & 1) * (ts / 2) + ox0 + (kx >> 1));
}

/* y (N, Cout, Ho, Wo) = conv(x (N, Cin, H, W), w (Cout rows of ld floats,
 * [ci][ky][kx])). Global (ns, Ho rounded to the band, N * ceil(Cout / 8)),
 * local (ns, rows per band, 1); tile: Cin * ((band - 1) * S + K) rows of
 * conv_tile_stride() floats. */
#define CONV_TILE_FWD(K, S)                                                                  \
__kernel void conv_tile_forward_k##K##_s##S(VIEW(x), VIEW(w), VIEW(y), int n, int cin,       \
                                            int height, int width, int cout, int pad,        \
                                            int ho, int wo, int ld, __local float *tile)     \
{                                                                                            \
    PTR(x); PTR(w); PTR(y);                                                                  \
    int ns = (int)get_local_size(0), LY = (int)get_local_size(1);                            \
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1);                                \
    int ts = conv_tile_stride(ns, K, S), th = (LY - 1) * S + K;                              \
    int ncb = (cout + CONV_CB - 1) / CONV_CB;                                                \
    int g = (int)get_group_id(2), b = g / ncb, co0 = (g - b * ncb) * CONV_CB;                \
    int oy0 = (int)get_group_id(1) * LY;                                                     \
    for (int r = lx + ns * ly; r < cin * th; r += ns * LY) {                                 \
        int ci = r / th, ty = r - ci * th, iy = oy0 * S + ty - pad;                          \
        bool valid = iy >= 0 && iy < height;                                                 \
        __global const float *src =                                                          \
            x + (((size_t)b * cin + ci) * height + (valid ? iy : 0)) * width;                \
        __local float *dst = tile + r * ts;                                                  \
        if (S == 1)                                                                          \
            conv_fill_row(dst, src, valid, pad, width, ts);                                  \
        else                                                                                 \
            conv_fill_row2(dst, dst + ts / 2, src, valid, pad, width, ts / 2);               \
    }                                                                                        \
    barrier(CLK_LOCAL_MEM_FENCE);                                                            \
    int oy = oy0 + ly, ox0 = lx * 8;                                                         \
    if (oy >= ho)                                                                            \
        return;                                                                              \
    float8 acc[CONV_CB];                                                                     \
    _Pragma("unroll")                                                                        \
    for (int i = 0; i < CONV_CB; i++)                                                        \
        acc[i] = (float8)(0.0f);                                                             \
    __global const float *wr[CONV_CB];                                                       \
    _Pragma("unroll")                                                                        \
    for (int i = 0; i < CONV_CB; i++)                                                        \
        wr[i] = w + (size_t)min(co0 + i, cout - 1) * ld;                                     \
    for (int ci = 0; ci < cin; ci++) {                                                       \
        __local const float *tp = tile + (ci * th + ly * S) * ts;                            \
        _Pragma("unroll")                                                                    \
        for (int ky = 0; ky < K; ky++)                                                       \
            _Pragma("unroll")                                                                \
            for (int kx = 0; kx < K; kx++) {                                                 \
                float8 t = conv_tap(tp + ky * ts, ox0, kx, ts, S);                           \
                int wi = (ci * K + ky) * K + kx;                                             \
                _Pragma("unroll")                                                            \
                for (int i = 0; i < CONV_CB; i++)                                            \
                    acc[i] = fma(t, (float8)(wr[i][wi]), acc[i]);                            \
            }                                                                                \
    }                                                                                        \
    int left = wo - ox0;                                                                     \
    for (int i = 0; i < CONV_CB && co0 + i < cout; i++) {                                    \
        __global float *yr = y + (((size_t)b * cout + co0 + i) * ho + oy) * wo + ox0;        \
        if (left >= 8) {                                                                     \
            vstore8(acc[i], 0, yr);                                                          \
        } else {                                                                             \
            float t[8];                                                                      \
            vstore8(acc[i], 0, t);                                                           \
            for (int j = 0; j < left; j++)                                                   \
                yr[j] = t[j];                                                                \
        }                                                                                    \
    }                                                                                        \
}

/* dw (Cout rows of ld floats) += dL/dw: dw[co][ci][ky][kx] += sum over (b, oy, ox)
 * of dy[b, co, oy, ox] * x[b, ci, oy*S - pad + ky, ox*S - pad + kx]. Global
 * Cout * Cin * K: one work-item per (co, ci, ky) with K float8 partial sums;
 * each x row its taps meet is copied into a private zero-padded row and the
 * matching dy row into a zero-extended one (as dw_rows_backward_w_* of
 * depthwise.cl). The host guarantees ceil(wo / 8) * 8 * S + K <= CONV_ROW_MAX. */
#define CONV_ROW_MAX 136
inline void conv_copy_row(float *dst, __global const float *src, int cnt)
{
    int i = 0;
    for (; i + 8 <= cnt; i += 8)
        vstore8(vload8(0, src + i), 0, dst + i);
    for (; i < cnt; i++)
        dst[i] = src[i];
}

#define CONV_ROWS_DW(K, S)                                                                   \
__kernel void conv_rows_backward_w_k##K##_s##S(VIEW(x), VIEW(dy), VIEW(dw), int n, int cin,  \
                                               int height, int width, int cout, int pad,     \
                                               int ho, int wo, int ld)                       \
{                                                                                            \
    PTR(x); PTR(dy); PTR(dw);                                                                \
    int g = GID0;                                                                            \
    if (g >= cout * cin * K)                                                                 \
        return;                                                                              \
    int ky = g % K, t = g / K, ci = t % cin, co = t / cin;                                   \
    int oy_lo = pad > ky ? (pad - ky + S - 1) / S : 0;                                       \
    int last_y = height - 1 + pad - ky;                                                      \
    int oy_hi = last_y < 0 ? 0 : min(ho, last_y / S + 1);                                    \
    int rows = oy_hi - oy_lo;                                                                \
    if (rows <= 0)                                                                           \
        return;                                                                              \
    int nch = (wo + 7) / 8, xlen = nch * 8 * S + K;                                          \
    int xcnt = clamp(xlen - pad, 0, width);                                                  \
    float xb[2 * CONV_ROW_MAX], db[2 * CONV_ROW_MAX];                                        \
    for (int i = 0; i < xlen; i++)                                                           \
        xb[i] = xb[CONV_ROW_MAX + i] = 0.0f;                                                 \
    for (int i = wo; i < nch * 8; i++)                                                       \
        db[i] = db[CONV_ROW_MAX + i] = 0.0f;                                                 \
    float8 acc[K];                                                                           \
    _Pragma("unroll")                                                                        \
    for (int kx = 0; kx < K; kx++)                                                           \
        acc[kx] = (float8)(0.0f);                                                            \
    int total = n * rows;                                                                    \
    conv_copy_row(xb + pad, x + ((size_t)ci * height + oy_lo * S - pad + ky) * width, xcnt); \
    conv_copy_row(db, dy + ((size_t)co * ho + oy_lo) * wo, wo);                              \
    int r = 0, b = 0;                                                                        \
    for (int s = 0; s < total; s++) {                                                        \
        int cur = (s & 1) * CONV_ROW_MAX;                                                    \
        if (s + 1 < total) { /* copy the next rows while this one is used */                 \
            if (++r == rows) {                                                               \
                r = 0;                                                                       \
                b++;                                                                         \
            }                                                                                \
            int oy = oy_lo + r, nxt = CONV_ROW_MAX - cur;                                    \
            conv_copy_row(xb + nxt + pad,                                                    \
                          x + (((size_t)b * cin + ci) * height + oy * S - pad + ky) * width, \
                          xcnt);                                                             \
            conv_copy_row(db + nxt, dy + (((size_t)b * cout + co) * ho + oy) * wo, wo);      \
        }                                                                                    \
        for (int j = 0; j < nch; j++) {                                                      \
            float8 gv = vload8(0, db + cur + 8 * j);                                         \
            _Pragma("unroll")                                                                \
            for (int kx = 0; kx < K; kx++) {                                                 \
                float8 xv = S == 1 ? vload8(0, xb + cur + 8 * j + kx)                        \
                                   : vload16(0, xb + cur + 16 * j + kx).even;                \
                acc[kx] = fma(gv, xv, acc[kx]);                                              \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    _Pragma("unroll")                                                                        \
    for (int kx = 0; kx < K; kx++) {                                                         \
        dw[(size_t)co * ld + (ci * K + ky) * K + kx] += hsum8(acc[kx]);                      \
    }                                                                                        \
}

CONV_TILE_FWD(3, 1)
CONV_TILE_FWD(3, 2)
CONV_TILE_FWD(5, 1)
CONV_TILE_FWD(5, 2)
CONV_TILE_FWD(7, 1)
CONV_TILE_FWD(7, 2)
CONV_ROWS_DW(3, 1)
CONV_ROWS_DW(3, 2)
CONV_ROWS_DW(5, 1)
CONV_ROWS_DW(5, 2)
CONV_ROWS_DW(7, 1)
CONV_ROWS_DW(7, 2)

/* The CPU variant's 3x3 stride-1 pad-1 convolution of any channel counts, forward and dx,
 * as one kernel: out (N, B, H, W)[b] = sum over a < A and the 3 x 3 taps of
 * w[b * wb + a * wa + tap] * in (N, A, H, W)[a] around the pixel, taps read (ky, kx) at
 * (y + ky - 1, x + kx - 1); with flip, tap (2 - ky, 2 - kx) there (the forward: in = x,
 * B = Cout, wb = ld, wa = 9; dx: in = dy, B = Cin, wb = 9, wa = ld, flip). Global
 * (ceil(W / 8), H, N * ceil(B / CONV3_CB)): 8 outputs of a row of CONV3_CB output channels
 * per work-item, each input row read once for them; out overwritten. */
#define CONV3_CB 4
__kernel void conv3_rows(VIEW(in), VIEW(w), VIEW(out), int n, int a_ch, int b_ch, int height,
                         int width, int wb, int wa, int flip)
{
    PTR(in); PTR(w); PTR(out);
    int nbb = (b_ch + CONV3_CB - 1) / CONV3_CB;
    int x0 = GID0 * 8, y = (int)get_global_id(1), g = (int)get_global_id(2);
    if (x0 >= width || y >= height || g >= n * nbb)
        return;
    int bn = g / nbb, b0 = (g - bn * nbb) * CONV3_CB, nb = min(CONV3_CB, b_ch - b0);
    float8 acc[CONV3_CB];
    for (int j = 0; j < CONV3_CB; j++)
        acc[j] = (float8)(0.0f);
    bool inner = x0 >= 1 && x0 + 9 <= width;
    int dt = flip ? -1 : 1;
    float r[10];
    for (int a = 0; a < a_ch; a++) {
        __global const float *plane = in + ((size_t)bn * a_ch + a) * height * width;
        __global const float *wt = w + (size_t)b0 * wb + (size_t)a * wa;
        for (int ky = 0; ky < 3; ky++) {
            int iy = y + ky - 1;
            if (iy < 0 || iy >= height)
                continue;
            __global const float *row = plane + (size_t)iy * width + x0 - 1;
            float8 v0, v1, v2;
            if (inner) {
                v0 = vload8(0, row);
                float8 hi = vload8(0, row + 2);
                v1 = (float8)(v0.s123, v0.s4567, hi.s6);
                v2 = hi;
            } else {
                for (int i = 0; i < 10; i++) {
                    int ix = x0 + i - 1;
                    r[i] = ix >= 0 && ix < width ? row[i] : 0.0f;
                }
                v0 = (float8)(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
                v1 = (float8)(r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8]);
                v2 = (float8)(r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]);
            }
            int t = flip ? (2 - ky) * 3 + 2 : ky * 3;
            for (int j = 0; j < CONV3_CB; j++) {
                if (j < nb) {
                    __global const float *wj = wt + (size_t)j * wb;
                    acc[j] = fma((float8)(wj[t]), v0, acc[j]);
                    acc[j] = fma((float8)(wj[t + dt]), v1, acc[j]);
                    acc[j] = fma((float8)(wj[t + 2 * dt]), v2, acc[j]);
                }
            }
        }
    }
    for (int j = 0; j < nb; j++) {
        __global float *o = out + (((size_t)bn * b_ch + b0 + j) * height + y) * width + x0;
        if (x0 + 8 <= width) {
            vstore8(acc[j], 0, o);
        } else {
            float v[8];
            vstore8(acc[j], 0, v);
            for (int i = 0; x0 + i < width; i++)
                o[i] = v[i];
        }
    }
}
