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

/* dcol: (Cin*KH*KW, N*Ho*Wo); dx: (N, Cin, H, W), overwritten.
 * One work-item per input element gathers every column entry that im2col
 * copied from it. */
__kernel void col2im(VIEW(dcol), VIEW(dx), int n, int cin, int h, int w, int kh, int kw,
                     int stride_h, int stride_w, int pad_h, int pad_w, int ho, int wo)
{
    PTR(dcol); PTR(dx);
    int i = GID0;
    int total = n * cin * h * w;
    if (i >= total)
        return;
    int ix = i % w;
    int t = i / w;
    int iy = t % h;
    t /= h;
    int ci = t % cin;
    int b = t / cin;
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
    dx[i] = acc;
}

/* src: (A, B, I); dst: (B, A, I), dst[b][a][i] = src[a][b][i].
 * Global (I, A, B). Converts between (C, N, HW) and (N, C, HW). */
__kernel void swap01(VIEW(src), VIEW(dst), int a_dim, int b_dim, int inner)
{
    PTR(src); PTR(dst);
    int i = GID0;
    int a = (int)get_global_id(1);
    int b = (int)get_global_id(2);
    if (i >= inner || a >= a_dim || b >= b_dim)
        return;
    dst[(b * a_dim + a) * inner + i] = src[(a * b_dim + b) * inner + i];
}

/* ---- Pointwise (1x1, stride 1, no padding) convolution, direct ----------
 * A tensor (N, R, HW) is seen as R rows over the N*HW columns (b, p); a
 * chunk is 8 consecutive columns. With CONTIG (HW a multiple of 8) a chunk
 * lies inside one image and is one vector load; otherwise its lanes are
 * gathered one by one. */

/* out (N, M, HW) = A (M, K) applied to in (N, K, HW): out[b, m, p] =
 * sum_k A[m, k] in[b, k, p], where A[m, k] = a[m * a_rs + k * a_ks] (the
 * forward passes W (Cout, Cin) with a_rs = w_ld, a_ks = 1; dx passes W^T with
 * a_rs = 1, a_ks = w_ld). Global (ceil(chunks / 2), ceil(M / PW_MR)): each
 * work-item computes PW_MR rows of 2 chunks (16 columns). Overwrites out. */
#define PW_MR 8
inline void pw_apply(__global const float *in, __global const float *a, __global float *out,
                     int n, int k_dim, int m_dim, int hw, int a_rs, int a_ks, const bool contig)
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
    if (contig) {
        int j0 = c0 * 8, j1 = two ? j0 + 8 : j0;
        int b0 = j0 / hw, b1 = j1 / hw;
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

#define PW_APPLY_ARGS VIEW(in), VIEW(a), VIEW(out), int n, int k_dim, int m_dim, int hw, \
                      int a_rs, int a_ks

__kernel void pw_apply_contig(PW_APPLY_ARGS)
{
    PTR(in); PTR(a); PTR(out);
    pw_apply(in, a, out, n, k_dim, m_dim, hw, a_rs, a_ks, true);
}

__kernel void pw_apply_gather(PW_APPLY_ARGS)
{
    PTR(in); PTR(a); PTR(out);
    pw_apply(in, a, out, n, k_dim, m_dim, hw, a_rs, a_ks, false);
}

/* dw (Cout, w_ld) += dy (N, Cout, HW) x (N, Cin, HW)^T over the N*HW columns:
 * dw[co, ci] += sum_(b, p) dy[b, co, p] x[b, ci, p]. Global
 * (ceil(Cin / PW_WN), ceil(Cout / PW_WM)): each work-item sums a PW_WM x PW_WN
 * block of dw over every column, in chunks of 8 (float8 partial sums). */
#define PW_WM 4
#define PW_WN 4
inline void pw_wgrad(__global const float *x, __global const float *dy, __global float *dw,
                     int n, int cin, int cout, int hw, int ld, const bool contig)
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
    if (contig) {
        for (int b = 0; b < n; b++) {
            __global const float *gb = dy + (size_t)b * cout * hw;
            __global const float *xb = x + (size_t)b * cin * hw;
            for (int p = 0; p < hw; p += 8) {
                float8 g[PW_WM], v[PW_WN];
#pragma unroll
                for (int i = 0; i < PW_WM; i++)
                    g[i] = vload8(0, gb + (size_t)cor[i] * hw + p);
#pragma unroll
                for (int j = 0; j < PW_WN; j++)
                    v[j] = vload8(0, xb + (size_t)cir[j] * hw + p);
#pragma unroll
                for (int i = 0; i < PW_WM; i++)
#pragma unroll
                    for (int j = 0; j < PW_WN; j++)
                        acc[i][j] = fma(g[i], v[j], acc[i][j]);
            }
        }
    } else {
        /* lanes over 8 consecutive columns (b, p); the tail lanes read column 0
         * of image 0 and get a zero dy */
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
    }
#pragma unroll
    for (int i = 0; i < PW_WM; i++)
#pragma unroll
        for (int j = 0; j < PW_WN; j++) {
            if (co0 + i < cout && ci0 + j < cin) {
                float8 s = acc[i][j];
                float4 h = s.lo + s.hi;
                float2 q = h.lo + h.hi;
                dw[(size_t)(co0 + i) * ld + ci0 + j] += q.x + q.y;
            }
        }
}

#define PW_WGRAD_ARGS VIEW(x), VIEW(dy), VIEW(dw), int n, int cin, int cout, int hw, int ld

__kernel void pw_wgrad_contig(PW_WGRAD_ARGS)
{
    PTR(x); PTR(dy); PTR(dw);
    pw_wgrad(x, dy, dw, n, cin, cout, hw, ld, true);
}

__kernel void pw_wgrad_gather(PW_WGRAD_ARGS)
{
    PTR(x); PTR(dy); PTR(dw);
    pw_wgrad(x, dy, dw, n, cin, cout, hw, ld, false);
}
