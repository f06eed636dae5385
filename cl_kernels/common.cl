/* Shared preamble, placed before every program of cl_kernels/ at build time.
 * OpenCL C 1.2. Every tensor argument is a (pointer, offset-in-floats) pair,
 * written with the PTR macro so kernels read `PTR(x)` and use `x` as usual. */

/* Parameter pair for one tensor view: `__global float *x_base, uint x_off`. */
#define VIEW(x) __global float *x##_base, uint x##_off
/* Inside the body: make `x` point at the first element of the view. */
#define PTR(x) __global float *x = x##_base + x##_off

/* Flat index of the current work-item in dimension 0. */
#define GID0 ((int)get_global_id(0))

/* Sum of v over the work-group, returned to every work-item. The local size
 * must be a power of two; scratch holds get_local_size(0) floats and may be
 * reused as soon as this returns. Every work-item of the group must call it. */
inline float wg_sum(float v, __local float *scratch)
{
    int l = (int)get_local_id(0);
    scratch[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = (int)get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s)
            scratch[l] += scratch[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* The 8 values at p, 0 in the lanes from `left` on (a chunk that ends a row). */
inline float8 load8(__global const float *p, int left)
{
    if (left >= 8)
        return vload8(0, p);
    float a[8];
    for (int j = 0; j < 8; j++)
        a[j] = j < left ? p[j] : 0.0f;
    return vload8(0, a);
}

/* Store the first min(left, 8) lanes of v at p. */
inline void store8(__global float *p, float8 v, int left)
{
    if (left >= 8) {
        vstore8(v, 0, p);
        return;
    }
    float a[8];
    vstore8(v, 0, a);
    for (int j = 0; j < left; j++)
        p[j] = a[j];
}

/* Sum of the 8 lanes of v. */
inline float hsum8(float8 v)
{
    float4 a = v.lo + v.hi;
    float2 b = a.lo + a.hi;
    return b.x + b.y;
}
