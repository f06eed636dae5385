/* Dense 2-D convolution helpers around CLBlast SGEMM (see runtime/nn/conv.h):
 * im2col, its adjoint col2im (a gather: no atomics), and the axis swap between
 * the GEMM layout (C, N, HW) and NCHW (N, C, HW).
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
