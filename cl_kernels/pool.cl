/* Global average pooling, per-channel scaling, add and axpy. "rows" are the
 * N*C rows of hw values of a (N, C, HW) tensor. The row reductions run one
 * work-group per row (local size a power of two) and reduce with wg_sum(). */

/* x: (rows, hw); y: (rows). One work-group per row. */
__kernel void avgpool_forward(VIEW(x), VIEW(y), int hw, __local float *scratch)
{
    PTR(x); PTR(y);
    int r = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    __global const float *row = x + (size_t)r * (size_t)hw;
    float s = 0.0f;
    for (int i = l; i < hw; i += wg)
        s += row[i];
    s = wg_sum(s, scratch);
    if (l == 0)
        y[r] = s / (float)hw;
}

/* dy: (rows); dx: (rows, hw), overwritten. One item per value of dx. */
__kernel void avgpool_backward(VIEW(dy), VIEW(dx), int total, int hw)
{
    PTR(dy); PTR(dx);
    int i = GID0;
    if (i < total)
        dx[i] = dy[i / hw] / (float)hw;
}

/* x, y: (rows, hw), y may alias x; s: (rows). One item per value. */
__kernel void scale_forward(VIEW(x), VIEW(s), VIEW(y), int total, int hw)
{
    PTR(x); PTR(s); PTR(y);
    int i = GID0;
    if (i < total)
        y[i] = x[i] * s[i / hw];
}

/* x, dy: (rows, hw); ds: (rows), overwritten with sum_i dy * x. One
 * work-group per row. */
__kernel void scale_backward_s(VIEW(x), VIEW(dy), VIEW(ds), int hw, __local float *scratch)
{
    PTR(x); PTR(dy); PTR(ds);
    int r = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    size_t base = (size_t)r * (size_t)hw;
    float s = 0.0f;
    for (int i = l; i < hw; i += wg)
        s += dy[base + i] * x[base + i];
    s = wg_sum(s, scratch);
    if (l == 0)
        ds[r] = s;
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
