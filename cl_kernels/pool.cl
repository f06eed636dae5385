/* Global average pooling, per-channel scaling, add and axpy. "rows" are the
 * N*C rows of hw values of a (N, C, HW) tensor, read as float8 chunks (the
 * last chunk of a row masked when hw is not a multiple of 8).
 * Row reductions come in two forms: one work-item per row (many rows), and
 * one work-group per row reducing with wg_sum() (few long rows; local size a
 * power of two). Per-value kernels run one work-item per chunk over the
 * global range (ceil(hw / 8), rows). */

/* Sum over i in [l, hw) step wg of chunks of a[i*8 ...] (times b[...] when b). */
inline float pool_row_sum(__global const float *a, __global const float *b, int hw, int l, int wg)
{
    float8 s = (float8)(0.0f);
    for (int i = l * 8; i < hw; i += wg * 8) {
        float8 v = load8(a + i, hw - i);
        s = b ? fma(v, load8(b + i, hw - i), s) : s + v;
    }
    return hsum8(s);
}

/* x: (rows, hw); y: (rows). One work-item per row. */
__kernel void avgpool_forward_rows(VIEW(x), VIEW(y), int rows, int hw)
{
    PTR(x); PTR(y);
    int r = GID0;
    if (r < rows)
        y[r] = pool_row_sum(x + (size_t)r * (size_t)hw, 0, hw, 0, 1) / (float)hw;
}

/* x: (rows, hw); y: (rows). One work-group per row. */
__kernel void avgpool_forward(VIEW(x), VIEW(y), int hw, __local float *scratch)
{
    PTR(x); PTR(y);
    int r = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    float s = pool_row_sum(x + (size_t)r * (size_t)hw, 0, hw, l, wg);
    s = wg_sum(s, scratch);
    if (l == 0)
        y[r] = s / (float)hw;
}

/* dy: (rows); dx: (rows, hw), overwritten. Global (ceil(hw / 8), rows). */
__kernel void avgpool_backward(VIEW(dy), VIEW(dx), int rows, int hw)
{
    PTR(dy); PTR(dx);
    int k = (int)get_global_id(0) * 8, r = (int)get_global_id(1);
    if (k < hw && r < rows)
        store8(dx + r * hw + k, (float8)(dy[r] / (float)hw), hw - k);
}

/* x, y: (rows, hw), y may alias x; s: (rows). Global (ceil(hw / 8), rows). */
__kernel void scale_forward(VIEW(x), VIEW(s), VIEW(y), int rows, int hw)
{
    PTR(x); PTR(s); PTR(y);
    int k = (int)get_global_id(0) * 8, r = (int)get_global_id(1);
    if (k < hw && r < rows) {
        int i = r * hw + k;
        store8(y + i, load8(x + i, hw - k) * s[r], hw - k);
    }
}

/* x, dy: (rows, hw); ds: (rows), overwritten with sum_i dy * x. One
 * work-item per row. */
__kernel void scale_backward_s_rows(VIEW(x), VIEW(dy), VIEW(ds), int rows, int hw)
{
    PTR(x); PTR(dy); PTR(ds);
    int r = GID0;
    if (r < rows) {
        size_t base = (size_t)r * (size_t)hw;
        ds[r] = pool_row_sum(dy + base, x + base, hw, 0, 1);
    }
}

/* x, dy: (rows, hw); ds: (rows), overwritten with sum_i dy * x. One
 * work-group per row. */
__kernel void scale_backward_s(VIEW(x), VIEW(dy), VIEW(ds), int hw, __local float *scratch)
{
    PTR(x); PTR(dy); PTR(ds);
    int r = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    size_t base = (size_t)r * (size_t)hw;
    float s = pool_row_sum(dy + base, x + base, hw, l, wg);
    s = wg_sum(s, scratch);
    if (l == 0)
        ds[r] = s;
}

/* avgpool_backward and scale_forward with one work-item per value: global rows * hw. */
__kernel void avgpool_backward1(VIEW(dy), VIEW(dx), int total, int hw)
{
    PTR(dy); PTR(dx);
    int i = GID0;
    if (i < total)
        dx[i] = dy[i / hw] / (float)hw;
}

__kernel void scale_forward1(VIEW(x), VIEW(s), VIEW(y), int total, int hw)
{
    PTR(x); PTR(s); PTR(y);
    int i = GID0;
    if (i < total)
        y[i] = x[i] * s[i / hw];
}

/* a, b, y: (n); y may alias a or b. */
__kernel void add(VIEW(a), VIEW(b), VIEW(y), int n)
{
    PTR(a); PTR(b); PTR(y);
    int i = GID0;
    if (i < n)
        y[i] = a[i] + b[i];
}

/* x, y: (n); y += alpha * x. */
__kernel void axpy(VIEW(x), VIEW(y), int n, float alpha)
{
    PTR(x); PTR(y);
    int i = GID0;
    if (i < n)
        y[i] += alpha * x[i];
}
