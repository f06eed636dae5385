/* Depthwise 2-D convolution (see runtime/nn/depthwise.h), direct kernels.
 * x, dx: (N, C, H, W); w, dw: (C, K, K); y, dy: (N, C, Ho, Wo).
 * Forward and the dx gather come as a general kernel (K and stride at run
 * time) and as copies specialised for K = 3, 5, 7 and stride 1, 2, in which
 * both are compile-time constants (the forward tap loops unroll). All
 * versions of one pass share one argument list; the specialised ones ignore
 * k and stride. */

/* Sum over the K x K window at (iy0, ix0) of plane xp (H, W) times wp (K, K). */
inline float dw_window(__global const float *xp, __global const float *wp, int height, int width,
                       int iy0, int ix0, const int K)
{
    float acc = 0.0f;
    if (iy0 >= 0 && ix0 >= 0 && iy0 + K <= height && ix0 + K <= width) {
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++)
                acc += xp[(iy0 + ky) * width + ix0 + kx] * wp[ky * K + kx];
        return acc;
    }
    for (int ky = 0; ky < K; ky++) {
        int iy = iy0 + ky;
        if (iy < 0 || iy >= height)
            continue;
        for (int kx = 0; kx < K; kx++) {
            int ix = ix0 + kx;
            if (ix >= 0 && ix < width)
                acc += xp[iy * width + ix] * wp[ky * K + kx];
        }
    }
    return acc;
}

/* One work-item per output element (n, c, oy, ox). */
inline void dw_forward_item(__global const float *x, __global const float *w, __global float *y,
                            int n, int c, int height, int width, const int K, const int S,
                            int pad, int ho, int wo)
{
    int i = GID0;
    if (i >= n * c * ho * wo)
        return;
    int ox = i % wo;
    int t = i / wo;
    int oy = t % ho;
    int plane = t / ho; /* n * C + c */
    __global const float *xp = x + plane * height * width;
    __global const float *wp = w + (plane % c) * K * K;
    y[i] = dw_window(xp, wp, height, width, oy * S - pad, ox * S - pad, K);
}

/* One work-item per input element (n, c, iy, ix): the sum of dy * w over the
 * outputs whose windows read it. Overwrites dx. */
inline void dw_dx_item(__global const float *dy, __global const float *w, __global float *dx,
                       int n, int c, int height, int width, const int K, const int S, int pad,
                       int ho, int wo)
{
    int i = GID0;
    if (i >= n * c * height * width)
        return;
    int ix = i % width;
    int t = i / width;
    int iy = t % height;
    int plane = t / height; /* n * C + c */
    __global const float *dyp = dy + plane * ho * wo;
    __global const float *wp = w + (plane % c) * K * K;
    /* Output oy reads input row oy * S - pad + ky = iy, so only the taps
     * ky = (iy + pad) mod S, + S, ... can meet iy (likewise kx). */
    int ty = iy + pad, tx = ix + pad;
    float acc = 0.0f;
    for (int ky = ty % S; ky < K && ky <= ty; ky += S) {
        int oy = (ty - ky) / S;
        if (oy >= ho)
            continue;
        for (int kx = tx % S; kx < K && kx <= tx; kx += S) {
            int ox = (tx - kx) / S;
            if (ox < wo)
                acc += dyp[oy * wo + ox] * wp[ky * K + kx];
        }
    }
    dx[i] = acc;
}

#define DW_ARGS                                                                              \
    int n, int c, int height, int width, int k, int stride, int pad, int ho, int wo

/* x: (N, C, H, W); w: (C, K, K); y: (N, C, Ho, Wo). Global (N*C*Ho*Wo). */
__kernel void dw_forward(VIEW(x), VIEW(w), VIEW(y), DW_ARGS)
{
    PTR(x); PTR(w); PTR(y);
    dw_forward_item(x, w, y, n, c, height, width, k, stride, pad, ho, wo);
}

/* dy: (N, C, Ho, Wo); w: (C, K, K); dx: (N, C, H, W). Global (N*C*H*W). */
__kernel void dw_backward_dx(VIEW(dy), VIEW(w), VIEW(dx), DW_ARGS)
{
    PTR(dy); PTR(w); PTR(dx);
    dw_dx_item(dy, w, dx, n, c, height, width, k, stride, pad, ho, wo);
}

#define DW_SPECIALISE(K, S)                                                                  \
    __kernel void dw_forward_k##K##_s##S(VIEW(x), VIEW(w), VIEW(y), DW_ARGS)                 \
    {                                                                                        \
        PTR(x); PTR(w); PTR(y);                                                              \
        dw_forward_item(x, w, y, n, c, height, width, K, S, pad, ho, wo);                    \
    }                                                                                        \
    __kernel void dw_backward_dx_k##K##_s##S(VIEW(dy), VIEW(w), VIEW(dx), DW_ARGS)           \
    {                                                                                        \
        PTR(dy); PTR(w); PTR(dx);                                                            \
        dw_dx_item(dy, w, dx, n, c, height, width, K, S, pad, ho, wo);                       \
    }

DW_SPECIALISE(3, 1)
DW_SPECIALISE(3, 2)
DW_SPECIALISE(5, 1)
DW_SPECIALISE(5, 2)
DW_SPECIALISE(7, 1)
DW_SPECIALISE(7, 2)

/* dw += sum over (n, oy, ox) of dy[n, c, oy, ox] * x[n, c, oy*S - pad + ky, ox*S - pad + kx].
 * x: (N, C, H, W); dy: (N, C, Ho, Wo); dw: (C, K, K).
 * Global C*K*K*size: one work-group per (c, ky, kx), the group index being
 * the dw index; the group size must be a power of two, with that many floats
 * of local memory in part. Each work-item sums whole output rows (n, oy) =
 * lid, lid + size, ... over the columns whose tap lies inside the input; a
 * tree reduction in local memory then adds the partial sums, and work-item 0
 * adds the total to dw. */
__kernel void dw_backward_w(VIEW(x), VIEW(dy), VIEW(dw), DW_ARGS, __local float *part)
{
    PTR(x); PTR(dy); PTR(dw);
    int g = (int)get_group_id(0);
    int lid = (int)get_local_id(0);
    int lsz = (int)get_local_size(0);
    int tap = g % (k * k);
    int ch = g / (k * k);
    int ky = tap / k;
    int kx = tap % k;
    /* columns with 0 <= ox * stride - pad + kx < width */
    int ox_lo = pad > kx ? (pad - kx + stride - 1) / stride : 0;
    int last = width - 1 + pad - kx;
    int ox_hi = last < 0 ? 0 : min(wo, last / stride + 1);
    float acc = 0.0f;
    for (int row = lid; row < n * ho; row += lsz) {
        int b = row / ho;
        int oy = row - b * ho;
        int iy = oy * stride - pad + ky;
        if (iy < 0 || iy >= height)
            continue;
        int plane = b * c + ch;
        __global const float *dyr = dy + (plane * ho + oy) * wo;
        int xi = (plane * height + iy) * width + kx - pad; /* x index of ox = 0 */
        for (int ox = ox_lo; ox < ox_hi; ox++)
            acc += dyr[ox] * x[xi + ox * stride];
    }
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = lsz / 2; step > 0; step /= 2) {
        if (lid < step)
            part[lid] += part[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        dw[g] += part[0];
}
