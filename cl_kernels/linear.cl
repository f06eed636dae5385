/* Fully connected layer: the products (direct kernels for the small layers
 * of the supernet: SE and classifier) and the bias. */

/* y: (n, out), += b broadcast over rows; b: (out). One item per value. */
__kernel void bias_forward(VIEW(y), VIEW(b), int total, int out)
{
    PTR(y); PTR(b);
    int i = GID0;
    if (i < total)
        y[i] += b[i % out];
}

/* dy: (n, out); db: (out), += column sums of dy. One item per column. */
__kernel void bias_backward(VIEW(dy), VIEW(db), int n, int out)
{
    PTR(dy); PTR(db);
    int o = GID0;
    if (o >= out)
        return;
    float s = 0.0f;
    for (int r = 0; r < n; r++)
        s += dy[r * out + o];
    db[o] += s;
}

/* The products, direct (small layers: SE, classifier).
 * lin_forward: y (n, out) = x (n, in) W^T, W (out, in) with row stride ld:
 * each output is a dot product of two contiguous rows; a work-item takes
 * LIN_B rows of x times LIN_B rows of W, with float8 partial sums over in.
 * Global (ceil(out / LIN_B), ceil(n / LIN_B)). */
#define LIN_B 4

__kernel void lin_forward(VIEW(x), VIEW(w), VIEW(y), int n, int in, int out, int ld)
{
    PTR(x); PTR(w); PTR(y);
    int o0 = (int)get_global_id(0) * LIN_B, r0 = (int)get_global_id(1) * LIN_B;
    if (o0 >= out || r0 >= n)
        return;
    __global const float *xr[LIN_B], *wr[LIN_B];
#pragma unroll
    for (int i = 0; i < LIN_B; i++) {
        xr[i] = x + (size_t)min(r0 + i, n - 1) * in;
        wr[i] = w + (size_t)min(o0 + i, out - 1) * ld;
    }
    float8 acc[LIN_B][LIN_B];
#pragma unroll
    for (int i = 0; i < LIN_B; i++)
#pragma unroll
        for (int j = 0; j < LIN_B; j++)
            acc[i][j] = (float8)(0.0f);
    for (int k = 0; k < in; k += 8) {
        int left = in - k;
        float8 xv[LIN_B], wv[LIN_B];
#pragma unroll
        for (int i = 0; i < LIN_B; i++) {
            xv[i] = load8(xr[i] + k, left);
            wv[i] = load8(wr[i] + k, left);
        }
#pragma unroll
        for (int i = 0; i < LIN_B; i++)
#pragma unroll
            for (int j = 0; j < LIN_B; j++)
                acc[i][j] = fma(xv[i], wv[j], acc[i][j]);
    }
#pragma unroll
    for (int i = 0; i < LIN_B; i++)
#pragma unroll
        for (int j = 0; j < LIN_B; j++) {
            if (r0 + i < n && o0 + j < out) {
                y[(size_t)(r0 + i) * out + o0 + j] = hsum8(acc[i][j]);
            }
        }
}

/* c (rows, cols) = beta * c + sum_k A(r, k) b (k, cols), A(r, k) = a[r * a_rs + k * a_ks],
 * b with row stride b_rs, c with row stride c_rs; beta 0 or 1 (c not read when 0).
 * Each work-item computes LIN_B rows of 16 columns (two float8), the columns
 * past cols masked. Global (ceil(cols / 16), ceil(rows / LIN_B)).
 * dx (n, in) = dy (n, out) W: rows n, k over out, A = dy (a_rs out, a_ks 1), b = W.
 * dW (out, in) += dy^T x: rows out, k over n, A = dy^T (a_rs 1, a_ks out), b = x. */
__kernel void lin_rows(VIEW(a), VIEW(b), VIEW(c), int rows, int cols, int kdim, int a_rs,
                       int a_ks, int b_rs, int c_rs, float beta)
{
    PTR(a); PTR(b); PTR(c);
    int i0 = (int)get_global_id(0) * 16, r0 = (int)get_global_id(1) * LIN_B;
    if (i0 >= cols || r0 >= rows)
        return;
    int left0 = cols - i0, left1 = cols - i0 - 8;
    __global const float *ar[LIN_B];
#pragma unroll
    for (int i = 0; i < LIN_B; i++)
        ar[i] = a + (size_t)min(r0 + i, rows - 1) * a_rs;
    float8 acc0[LIN_B], acc1[LIN_B];
#pragma unroll
    for (int i = 0; i < LIN_B; i++)
        acc0[i] = acc1[i] = (float8)(0.0f);
    for (int k = 0; k < kdim; k++) {
        __global const float *bk = b + (size_t)k * b_rs + i0;
        float8 v0 = load8(bk, left0);
        float8 v1 = left1 > 0 ? load8(bk + 8, left1) : (float8)(0.0f);
#pragma unroll
        for (int i = 0; i < LIN_B; i++) {
            float8 av = (float8)(ar[i][(size_t)k * a_ks]);
            acc0[i] = fma(av, v0, acc0[i]);
            acc1[i] = fma(av, v1, acc1[i]);
        }
    }
#pragma unroll
    for (int i = 0; i < LIN_B; i++) {
        if (r0 + i >= rows)
            break;
        __global float *cr = c + (size_t)(r0 + i) * c_rs + i0;
        float t[16];
        vstore8(acc0[i], 0, t);
        vstore8(acc1[i], 0, t + 8);
        int m = min(16, cols - i0);
        for (int j = 0; j < m; j++)
            cr[j] = beta == 0.0f ? t[j] : cr[j] + t[j];
    }
}
