/* Depthwise 2-D convolution (see runtime/nn/depthwise.h).
 * x, dx: (N, C, H, W); w, dw: (C, K, K); y, dy: (N, C, Ho, Wo).
 * Three families, chosen by runtime/nn/depthwise.c:
 *  - direct kernels, one work-item per output (forward, dx gather) or a
 *    work-group per weight (dw): any shape; the forward and dx come as a
 *    general kernel and as copies specialised for K = 3, 5, 7 and stride 1, 2;
 *  - tiled kernels (dw_tile_*) for forward and dx when a row has at least 4
 *    outputs: zero-padded rows staged in local memory, float8 strips (the lanes
 *    past the row computed and dropped);
 *  - weight-gradient kernels without work-group reduction: dw_rows_* (K = 3,
 *    5, 7, stride 1, 2; rows staged in private memory) and dw_direct_* (any K,
 *    stride 1, 2). */

/* Sum over the K x K window at (iy0, ix0) of plane xp (H, W) times wp (K, K),
 * over the taps inside the plane only. */
inline float dw_window(__global const float *xp, __global const float *wp, int height, int width,
                       int iy0, int ix0, const int K)
{
    int ky_lo = max(0, -iy0), ky_hi = min(K, height - iy0);
    int kx_lo = max(0, -ix0), kx_hi = min(K, width - ix0);
    float acc = 0.0f;
    for (int ky = ky_lo; ky < ky_hi; ky++) {
        __global const float *xr = xp + (iy0 + ky) * width + ix0;
        __global const float *wr = wp + ky * K;
        for (int kx = kx_lo; kx < kx_hi; kx++)
            acc += xr[kx] * wr[kx];
    }
    return acc;
}

/* Global (Wo, Ho, N*C): one work-item per output element (n, c, oy, ox). */
inline void dw_forward_item(__global const float *x, __global const float *w, __global float *y,
                            int n, int c, int height, int width, const int K, const int S,
                            int pad, int ho, int wo)
{
    int ox = (int)get_global_id(0), oy = (int)get_global_id(1);
    int plane = (int)get_global_id(2); /* n * C + c */
    if (ox >= wo || oy >= ho || plane >= n * c)
        return;
    __global const float *xp = x + plane * height * width;
    __global const float *wp = w + (plane % c) * K * K;
    y[(plane * ho + oy) * wo + ox] = dw_window(xp, wp, height, width, oy * S - pad, ox * S - pad, K);
}

/* Global (W, H, N*C): one work-item per input element (n, c, iy, ix): the sum
 * of dy * w over the outputs whose windows read it. Overwrites dx. */
inline void dw_dx_item(__global const float *dy, __global const float *w, __global float *dx,
                       int n, int c, int height, int width, const int K, const int S, int pad,
                       int ho, int wo)
{
    int ix = (int)get_global_id(0), iy = (int)get_global_id(1);
    int plane = (int)get_global_id(2); /* n * C + c */
    if (ix >= width || iy >= height || plane >= n * c)
        return;
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
    dx[(plane * height + iy) * width + ix] = acc;
}

#define DW_ARGS                                                                              \
    int n, int c, int height, int width, int k, int stride, int pad, int ho, int wo

/* x: (N, C, H, W); w: (C, K, K); y: (N, C, Ho, Wo). Global (Wo, Ho, N*C). */
__kernel void dw_forward(VIEW(x), VIEW(w), VIEW(y), DW_ARGS)
{
    PTR(x); PTR(w); PTR(y);
    dw_forward_item(x, w, y, n, c, height, width, k, stride, pad, ho, wo);
}

/* dy: (N, C, Ho, Wo); w: (C, K, K); dx: (N, C, H, W). Global (W, H, N*C). */
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

/* ---- Tiled kernels ------------------------------------------------------
 * Faster versions for K = 3, 5, 7 and stride 1 or 2 (K and S compile-time),
 * used by the host when the plane is wide enough for vectors to pay off.
 * A work-group stages zero-padded input rows in local memory, so the tap
 * loops need no bounds checks, and each work-item computes DW_V consecutive
 * outputs of one row with vector arithmetic (float8).
 * NDRange: dim 0 = strips of DW_V outputs along a row (local size = all the
 * strips of a row), dim 1 = rows of a band (local size = rows per band),
 * dim 2 = planes n * C + c (local size = planes per group).
 * Stride-2 tiles store each padded row as its even then its odd columns, so
 * every tap reads contiguous floats. */

#define DW_V 8
/* Output rows per work-item of the tiled correlation. */
#define DW_R 4

/* dst[i], i in [0, cnt): src[i - pad] when the row is valid and
 * 0 <= i - pad < width, else 0. Copies in float8 chunks, the last one
 * overlapping the one before when the run is not a multiple of 8. */
inline void dw_fill_row(__local float *dst, __global const float *src, bool valid, int pad,
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

/* The stride-2 split of the row above: ev[j] = value at 2j, od[j] at 2j + 1,
 * j in [0, nh). Columns j whose 16 values lie inside the row are copied in
 * chunks of 8 (the last one overlapping), the others one by one. */
inline void dw_fill_row2(__local float *ev, __local float *od, __global const float *src,
                         bool valid, int pad, int width, int nh)
{
    /* chunks start at j with 2j - pad >= 0 and 2j - pad + 16 <= width */
    int lo = (pad + 1) / 2, hi = (width + pad - 16) / 2; /* first and last start */
    bool vec = valid && pad >= 0 && width + pad >= 16 && lo <= hi && hi + 8 <= nh;
    int vlo = vec ? lo : nh, vhi = vec ? hi + 8 : nh; /* columns the chunks fill */
    for (int j = 0; j < vlo; j++) {
        int i0 = 2 * j - pad, i1 = i0 + 1;
        ev[j] = (valid && i0 >= 0 && i0 < width) ? src[i0] : 0.0f;
        od[j] = (valid && i1 >= 0 && i1 < width) ? src[i1] : 0.0f;
    }
    if (vec) {
        for (int j = lo;; j += 8) {
            int at = min(j, hi);
            float16 v = vload16(0, src + (2 * at - pad));
            vstore8(v.even, 0, ev + at);
            vstore8(v.odd, 0, od + at);
            if (at == hi)
                break;
        }
    }
    for (int j = vhi; j < nh; j++) {
        int i0 = 2 * j - pad, i1 = i0 + 1;
        ev[j] = (valid && i0 >= 0 && i0 < width) ? src[i0] : 0.0f;
        od[j] = (valid && i1 >= 0 && i1 < width) ? src[i1] : 0.0f;
    }
}

/* Row stride (floats) of a tile row for outputs [0, ns * DW_V): stride 1
 * keeps the padded row, stride 2 its even half then its odd half. */
inline int dw_tile_stride(int ns, const int K, const int S)
{
    return S == 1 ? ns * DW_V + K - 1 : 2 * (ns * DW_V + (K - 1) / 2);
}

/* Stage rows [row0, row0 + th) of the zero-padded planes p0 ... p0 + np - 1
 * (input rows row0 - pad ..., columns -pad ...) into tile, th rows of ts
 * floats per plane; planes from `planes` on are zeros. */
inline void dw_stage(__local float *tile, __global const float *in, int p0, int np, int planes,
                     int height, int width, int pad, int row0, int th, int ts, const int S)
{
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1), lz = (int)get_local_id(2);
    int LX = (int)get_local_size(0), LY = (int)get_local_size(1);
    int LZ = (int)get_local_size(2);
    int lin = lx + LX * (ly + LY * lz), nwi = LX * LY * LZ;
    for (int r = lin; r < np * th; r += nwi) {
        int z = r / th, ty = r - z * th;
        int plane = p0 + z, iy = row0 + ty - pad;
        bool valid = plane < planes && iy >= 0 && iy < height;
        __global const float *src = in + ((size_t)plane * height + (valid ? iy : 0)) * width;
        __local float *dst = tile + r * ts;
        if (S == 1)
            dw_fill_row(dst, src, valid, pad, width, ts);
        else
            dw_fill_row2(dst, dst + ts / 2, src, valid, pad, width, ts / 2);
    }
}

/* Tile geometry of the stride-2 dx: row stride and rows per plane for a band
 * of `rows` dx rows of ns strips of 16 columns (the host computes the same). */
inline int dw_dx2_stride(int ns, const int K) { return 8 * ns + (K / 2 + 1) / 2 + K / 2 + 1; }
inline int dw_dx2_rows(int rows, const int K) { return (rows + K) / 2 + 1; }

/* DW_V taps of one tile row for outputs ox0 ... (ox0 a multiple of DW_V). */
inline float8 dw_tap(__local const float *row, int ox0, int kx, int ts, const int S)
{
    if (S == 1)
        return vload8(0, row + ox0 + kx);
    return vload8(0, row + (kx & 1) * (ts / 2) + ox0 + (kx >> 1));
}

/* out (planes, ho, wo) = correlation of in (planes, height, width), zero-
 * padded by pad, with the K x K filter of each plane's channel (w (C, K, K),
 * reversed when flip, which turns the stride-1 forward into its dx). */
inline void dw_tile_corr(__global const float *in, __global const float *w, __global float *out,
                         int planes, int c, int height, int width, int pad, int ho, int wo,
                         __local float *tile, const int K, const int S, const bool flip)
{
    int ns = (int)get_local_size(0), LY = (int)get_local_size(1);
    int ts = dw_tile_stride(ns, K, S), th = (LY * DW_R - 1) * S + K;
    int oy0 = (int)get_group_id(1) * LY * DW_R;
    int LZ = (int)get_local_size(2);
    dw_stage(tile, in, (int)get_group_id(2) * LZ, LZ, planes, height, width, pad, oy0 * S, th,
             ts, S);
    barrier(CLK_LOCAL_MEM_FENCE);
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1), lz = (int)get_local_id(2);
    int plane = (int)get_global_id(2), oy = oy0 + ly * DW_R, ox0 = lx * DW_V;
    if (plane >= planes || oy >= ho)
        return;
    __global const float *wp = w + (plane % c) * (K * K);
    __local const float *tp = tile + (lz * th + ly * DW_R * S) * ts;
    /* DW_R output rows, filter column kx at a time (a loop: unrolling it would
     * spill), its K weights in registers: staged row t feeds output row r
     * through filter row t - r * S, each tap load serving up to DW_R fma. Two
     * partial sums per output row (t even, odd) keep 2 * DW_R fma chains. */
    float8 acc[DW_R][2];
#pragma unroll
    for (int r = 0; r < DW_R; r++)
        acc[r][0] = acc[r][1] = (float8)(0.0f);
#pragma unroll 1
    for (int kx = 0; kx < K; kx++) {
        float wcol[7]; /* K <= 7 */
#pragma unroll
        for (int ky = 0; ky < K; ky++)
            wcol[ky] = wp[flip ? K * K - 1 - (ky * K + kx) : ky * K + kx];
#pragma unroll
        for (int t = 0; t < (DW_R - 1) * S + K; t++) {
            float8 v = dw_tap(tp + t * ts, ox0, kx, ts, S);
#pragma unroll
            for (int r = 0; r < DW_R; r++) {
                int ky = t - r * S;
                if (ky >= 0 && ky < K)
                    acc[r][t & 1] = fma(v, (float8)(wcol[ky]), acc[r][t & 1]);
            }
        }
    }
    __global float *orow = out + ((size_t)plane * ho + oy) * wo + ox0;
#pragma unroll
    for (int r = 0; r < DW_R; r++)
        if (oy + r < ho)
            store8(orow + (size_t)r * wo, acc[r][0] + acc[r][1], wo - ox0);
}

#define DW_TILE_ARGS int planes, int c, int height, int width, int pad, int ho, int wo,      \
                     __local float *tile

#define DW_TILE_FWD(K, S)                                                                    \
    __kernel void dw_tile_forward_k##K##_s##S(VIEW(x), VIEW(w), VIEW(y), DW_TILE_ARGS)       \
    {                                                                                        \
        PTR(x); PTR(w); PTR(y);                                                              \
        dw_tile_corr(x, w, y, planes, c, height, width, pad, ho, wo, tile, K, S, false);     \
    }
/* Stride-1 dx: dy (planes, ho, wo) -> dx (planes, h, w) through the flipped
 * filter with padding K - 1 - pad; the caller passes dy's sizes as the input
 * and dx's as the output, and that padding. */
#define DW_TILE_DX1(K)                                                                       \
    __kernel void dw_tile_backward_dx_k##K##_s1(VIEW(dy), VIEW(w), VIEW(dx), DW_TILE_ARGS)   \
    {                                                                                        \
        PTR(dy); PTR(w); PTR(dx);                                                            \
        dw_tile_corr(dy, w, dx, planes, c, height, width, pad, ho, wo, tile, K, 1, true);    \
    }

DW_TILE_FWD(3, 1)
DW_TILE_FWD(3, 2)
DW_TILE_FWD(5, 1)
DW_TILE_FWD(5, 2)
DW_TILE_FWD(7, 1)
DW_TILE_FWD(7, 2)
DW_TILE_DX1(3)
DW_TILE_DX1(5)
DW_TILE_DX1(7)

/* dx (planes, h, w) of the stride-2 forward with pad P = K/2:
 * dx[iy][ix] = sum of dy[(iy + P - ky) / 2][(ix + P - kx) / 2] * w[ky][kx] over
 * the taps where both differences are even (and inside dy). Work-items as in
 * dw_tile_corr, over dx, each computing DW_R rows (from an even row) of 16
 * columns (from an even column): the even and the odd columns as two float8.
 * The tile holds dy rows oy_lo ... oy_lo + th - 1 and columns -P ..., zero
 * outside dy. For a work-item's first dy row oy_w, dx row iy0 + r meets dy
 * row oy_w + t through filter row ky = BASE + r - 2t, BASE = iy0 + P - 2 oy_w
 * being K - 1 or K by the parity of P - K + 1 alone (iy0 is even), so the
 * (r, t) -> ky map is known at compile time and each tap load serves every
 * output row it meets. Filter columns go in pairs (kx even, kx + 1): the
 * first feeds one class of columns, the second the other. */
#define DW_DX2_V 16
inline void dw_tile_dx2(__global const float *dy, __global const float *w, __global float *dx,
                        int planes, int c, int height, int width, int ho, int wo,
                        __local float *tile, const int K)
{
    const int P = K / 2;
    const int BASE = ((P - K + 1) & 1) ? K : K - 1;
    const int T = (BASE + DW_R - 1) / 2 + 1; /* dy rows a work-item reads */
    const int C0 = P & 1; /* column class of the even filter columns: 0 even, 1 odd */
    int ns = (int)get_local_size(0), LY = (int)get_local_size(1), LZ = (int)get_local_size(2);
    int ts = dw_dx2_stride(ns, K), th = dw_dx2_rows(LY * DW_R, K);
    int iy0 = (int)get_group_id(1) * LY * DW_R;
    int oy_lo = (iy0 + P - (K - 1) + 2 * K) / 2 - K; /* floor((iy0 + P - K + 1) / 2) */
    dw_stage(tile, dy, (int)get_group_id(2) * LZ, LZ, planes, ho, wo, P, oy_lo + P, th, ts, 1);
    barrier(CLK_LOCAL_MEM_FENCE);
    int lx = (int)get_local_id(0), ly = (int)get_local_id(1), lz = (int)get_local_id(2);
    int plane = (int)get_global_id(2), iy = iy0 + ly * DW_R, ix0 = lx * DW_DX2_V;
    if (plane >= planes || iy >= height)
        return;
    __global const float *wp = w + (plane % c) * (K * K);
    /* tile row of t = 0: oy_w - oy_lo = 2 ly; column of lane 0 at offset 0 */
    __local const float *tp = tile + (lz * th + 2 * ly) * ts + ix0 / 2 + P;
    float8 acc[DW_R][2];
#pragma unroll
    for (int r = 0; r < DW_R; r++)
        acc[r][0] = acc[r][1] = (float8)(0.0f);
#pragma unroll 1
    for (int kx = 0; kx < K; kx += 2) {
#pragma unroll
        for (int h = 0; h < 2; h++) { /* kx + h: column class C0 ^ h */
            int q = kx + h;
            if (q < K) {
                /* lane m of class a reads dy column ix0/2 + m + (a + P - q) / 2 */
                int off = (((C0 ^ h) + P) - q) / 2;
                float wcol[7]; /* K <= 7 */
#pragma unroll
                for (int ky = 0; ky < K; ky++)
                    wcol[ky] = wp[ky * K + q];
#pragma unroll
                for (int t = 0; t < T; t++) {
                    bool used = false;
#pragma unroll
                    for (int r = 0; r < DW_R; r++) {
                        int ky = BASE + r - 2 * t;
                        used = used || (ky >= 0 && ky < K);
                    }
                    if (!used)
                        continue;
                    float8 v = vload8(0, tp + t * ts + off);
#pragma unroll
                    for (int r = 0; r < DW_R; r++) {
                        int ky = BASE + r - 2 * t;
                        if (ky >= 0 && ky < K)
                            acc[r][C0 ^ h] = fma(v, (float8)(wcol[ky]), acc[r][C0 ^ h]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < DW_R; r++) {
        if (iy + r >= height)
            break;
        float8 e = acc[r][0], o = acc[r][1];
        __global float *row = dx + ((size_t)plane * height + iy + r) * width + ix0;
        store8(row, (float8)(e.s0, o.s0, e.s1, o.s1, e.s2, o.s2, e.s3, o.s3), width - ix0);
        if (width - ix0 > 8)
            store8(row + 8, (float8)(e.s4, o.s4, e.s5, o.s5, e.s6, o.s6, e.s7, o.s7),
                     width - ix0 - 8);
    }
}

#define DW_TILE_DX2(K)                                                                       \
    __kernel void dw_tile_backward_dx_k##K##_s2(VIEW(dy), VIEW(w), VIEW(dx), int planes,     \
                                                int c, int height, int width, int ho, int wo, \
                                                __local float *tile)                         \
    {                                                                                        \
        PTR(dy); PTR(w); PTR(dx);                                                            \
        dw_tile_dx2(dy, w, dx, planes, c, height, width, ho, wo, tile, K);                   \
    }
DW_TILE_DX2(3)
DW_TILE_DX2(5)
DW_TILE_DX2(7)

/* p[0], p[S], ..., p[7 * S], reading nothing past p[7 * S]. */
inline float8 dw_load_strided(__global const float *p, const int S)
{
    if (S == 1)
        return vload8(0, p);
    float8 a = vload8(0, p), b = vload8(0, p + 7);
    return shuffle2(a, b, (uint8)(0, 2, 4, 6, 9, 11, 13, 15));
}

/* dw (C, K, K) += sum over (b, oy, ox) of dy[b, c, oy, ox] * x[b, c, oy*S - pad + ky,
 * ox*S - pad + kx], stride S = 1 or 2 at compile time, K at run time (for the
 * shapes dw_rows_* do not take). Global C*K*K: one work-item per weight,
 * summing over the rows and columns whose tap lies inside x (so every load is
 * in bounds) in float8 chunks; a run whose length is not a multiple of 8 ends
 * with an overlapping chunk whose lanes already counted are masked out, and a
 * run shorter than 8 is summed in scalars. */
inline void dw_w_direct(__global const float *x, __global const float *dy, __global float *dw,
                        int n, int c, int height, int width, int k, int pad, int ho, int wo,
                        const int S)
{
    int g = GID0;
    if (g >= c * k * k)
        return;
    int ch = g / (k * k), tap = g - ch * (k * k), ky = tap / k, kx = tap - ky * k;
    int oy_lo = pad > ky ? (pad - ky + S - 1) / S : 0;
    int last_y = height - 1 + pad - ky;
    int oy_hi = last_y < 0 ? 0 : min(ho, last_y / S + 1);
    int ox_lo = pad > kx ? (pad - kx + S - 1) / S : 0;
    int last_x = width - 1 + pad - kx;
    int ox_hi = last_x < 0 ? 0 : min(wo, last_x / S + 1);
    int len = ox_hi - ox_lo, nv = len / 8, rem = len - nv * 8;
    bool overlap = nv > 0 && rem > 0;
    float8 keep = select((float8)(0.0f), (float8)(1.0f),
                         (int8)(0, 1, 2, 3, 4, 5, 6, 7) >= (int8)(8 - rem));
    int xo = kx - pad; /* x column of ox = 0 */
    float8 acc = (float8)(0.0f);
    float sacc = 0.0f;
    for (int b = 0; b < n; b++) {
        int plane = b * c + ch;
        for (int oy = oy_lo; oy < oy_hi; oy++) {
            __global const float *dyr = dy + ((size_t)plane * ho + oy) * wo;
            __global const float *xr =
                x + ((size_t)plane * height + (oy * S - pad + ky)) * width;
            for (int v = 0; v < nv; v++) {
                int ox = ox_lo + 8 * v;
                acc = fma(vload8(0, dyr + ox), dw_load_strided(xr + ox * S + xo, S), acc);
            }
            if (overlap) {
                int ox = ox_hi - 8;
                acc = fma(vload8(0, dyr + ox) * keep, dw_load_strided(xr + ox * S + xo, S), acc);
            } else if (nv == 0) {
                for (int ox = ox_lo; ox < ox_hi; ox++)
                    sacc += dyr[ox] * xr[ox * S + xo];
            }
        }
    }
    dw[g] += hsum8(acc) + sacc;
}

__kernel void dw_direct_backward_w_s1(VIEW(x), VIEW(dy), VIEW(dw), DW_ARGS)
{
    PTR(x); PTR(dy); PTR(dw);
    dw_w_direct(x, dy, dw, n, c, height, width, k, pad, ho, wo, 1);
}

__kernel void dw_direct_backward_w_s2(VIEW(x), VIEW(dy), VIEW(dw), DW_ARGS)
{
    PTR(x); PTR(dy); PTR(dw);
    dw_w_direct(x, dy, dw, n, c, height, width, k, pad, ho, wo, 2);
}

/* Longest row (floats) the row-staged weight gradient keeps in private memory. */
#define DW_ROW_MAX 136

/* dst[0 .. cnt) = src[0 .. cnt), private destination. */
inline void dw_copy_row(float *dst, __global const float *src, int cnt)
{
    int i = 0;
    for (; i + 8 <= cnt; i += 8)
        vstore8(vload8(0, src + i), 0, dst + i);
    for (; i < cnt; i++)
        dst[i] = src[i];
}

/* The zero-padded row (src[m] at position pad + m, m < cnt) split into its
 * even positions ev[i / 2] and odd ones od[i / 2]; positions outside keep
 * what the buffers hold (zeros). */
inline void dw_copy_row2(float *ev, float *od, __global const float *src, int pad, int cnt)
{
    int i = pad, end = pad + cnt;
    if (i < end && (i & 1)) {
        od[i >> 1] = src[0];
        i++;
    }
    int last = (end - 16) & ~1; /* last even start of 16 positions inside */
    if (last >= i) {
        for (;; i += 16) {
            int at = min(i, last);
            float16 v = vload16(0, src + (at - pad));
            vstore8(v.even, 0, ev + at / 2);
            vstore8(v.odd, 0, od + at / 2);
            if (at == last)
                break;
        }
        i = last + 16;
    }
    int last8 = (end - 8) & ~1; /* then chunks of 8 positions */
    if (last8 >= i) {
        for (;; i += 8) {
            int at = min(i, last8);
            float8 v = vload8(0, src + (at - pad));
            vstore4(v.even, 0, ev + at / 2);
            vstore4(v.odd, 0, od + at / 2);
            if (at == last8)
                break;
        }
        i = last8 + 8;
    }
    for (; i < end; i++) {
        if (i & 1)
            od[i >> 1] = src[i - pad];
        else
            ev[i >> 1] = src[i - pad];
    }
}

/* Copy an x row into private buffer b: zero-padded, or with SPLIT its even
 * positions at b and odd ones at b + DW_ROW_MAX / 2. */
inline void dw_copy_xrow(float *b, __global const float *src, int pad, int cnt, const bool split)
{
    if (!split)
        dw_copy_row(b + pad, src, cnt);
    else
        dw_copy_row2(b, b + DW_ROW_MAX / 2, src, pad, cnt);
}

/* Tap kx of chunk j of a copied x row: 8 values at stride S. */
inline float8 dw_row_tap(const float *b, int j, int kx, const int S, const bool split)
{
    if (S == 1)
        return vload8(0, b + 8 * j + kx);
    if (split)
        return vload8(0, b + (kx & 1) * (DW_ROW_MAX / 2) + 8 * j + (kx >> 1));
    return vload16(0, b + 16 * j + kx).even;
}

/* dw as dw_w_direct, K and S at compile time. Global C*K: one work-item per
 * (c, ky), keeping the K sums of its taps as float8 partial sums. Each row of
 * x that the taps meet is copied into a private zero-padded row, and the
 * matching row of dy into a zero-extended one, so every tap of every chunk of
 * DW_V outputs is one unconditional vector load. At stride 2 the split
 * variant (..._s2x, for rows of more than one chunk, where a row's work hides
 * the copy of the next) stores the even and odd positions apart, so each tap
 * is contiguous; the other reads 16 values and keeps the even ones. The host
 * guarantees ceil(wo / 8) * 8 * S + K <= DW_ROW_MAX. */
#define DW_ROWS_DW(K, S, SPLIT, SFX)                                                         \
__kernel void dw_rows_backward_w_k##K##_s##S##SFX(VIEW(x), VIEW(dy), VIEW(dw), DW_ARGS)      \
{                                                                                            \
    PTR(x); PTR(dy); PTR(dw);                                                                \
    int g = GID0;                                                                            \
    if (g >= c * K)                                                                          \
        return;                                                                              \
    int ch = g / K, ky = g - ch * K;                                                         \
    int oy_lo = pad > ky ? (pad - ky + S - 1) / S : 0;                                       \
    int last_y = height - 1 + pad - ky;                                                      \
    int oy_hi = last_y < 0 ? 0 : min(ho, last_y / S + 1);                                    \
    int rows = oy_hi - oy_lo;                                                                \
    if (rows <= 0)                                                                           \
        return;                                                                              \
    int nch = (wo + 7) / 8;                                                                  \
    int xlen = nch * 8 * S + K;                                                              \
    int xcnt = clamp(xlen - pad, 0, width); /* x columns kept */                             \
    /* two buffers: the next row is copied while the current one is used */                  \
    float xb[2 * DW_ROW_MAX], db[2 * DW_ROW_MAX];                                            \
    for (int i = 0; i < (SPLIT ? DW_ROW_MAX : xlen); i++)                                    \
        xb[i] = xb[DW_ROW_MAX + i] = 0.0f;                                                   \
    for (int i = wo; i < nch * 8; i++)                                                       \
        db[i] = db[DW_ROW_MAX + i] = 0.0f;                                                   \
    float8 acc[K];                                                                           \
    _Pragma("unroll")                                                                        \
    for (int kx = 0; kx < K; kx++)                                                           \
        acc[kx] = (float8)(0.0f);                                                            \
    int total = n * rows;                                                                    \
    int xrow = (ch * height + oy_lo * S - pad + ky) * width, drow = (ch * ho + oy_lo) * wo;  \
    dw_copy_xrow(xb, x + xrow, pad, xcnt, SPLIT);                                            \
    dw_copy_row(db, dy + drow, wo);                                                          \
    int r = 0, b = 0;                                                                        \
    for (int t = 0; t < total; t++) {                                                        \
        int cur = (t & 1) * DW_ROW_MAX;                                                      \
        if (t + 1 < total) {                                                                 \
            if (++r == rows) {                                                               \
                r = 0;                                                                       \
                b++;                                                                         \
            }                                                                                \
            int plane = b * c + ch, oy = oy_lo + r;                                          \
            int nxt = DW_ROW_MAX - cur;                                                      \
            dw_copy_xrow(xb + nxt, x + ((size_t)plane * height + oy * S - pad + ky) * width, \
                         pad, xcnt, SPLIT);                                                  \
            dw_copy_row(db + nxt, dy + ((size_t)plane * ho + oy) * wo, wo);                  \
        }                                                                                    \
        for (int j = 0; j < nch; j++) {                                                      \
            float8 gv = vload8(0, db + cur + 8 * j);                                         \
            _Pragma("unroll")                                                                \
            for (int kx = 0; kx < K; kx++) {                                                 \
                float8 xv = dw_row_tap(xb + cur, j, kx, S, SPLIT);                           \
                acc[kx] = fma(gv, xv, acc[kx]);                                              \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    _Pragma("unroll")                                                                        \
    for (int kx = 0; kx < K; kx++)                                                           \
        dw[(ch * K + ky) * K + kx] += hsum8(acc[kx]);                                        \
}
DW_ROWS_DW(3, 1, false, )
DW_ROWS_DW(3, 2, false, )
DW_ROWS_DW(3, 2, true, x)
DW_ROWS_DW(5, 1, false, )
DW_ROWS_DW(5, 2, false, )
DW_ROWS_DW(5, 2, true, x)
DW_ROWS_DW(7, 1, false, )
DW_ROWS_DW(7, 2, false, )
DW_ROWS_DW(7, 2, true, x)

/* ---- GPU variant of the weight gradient: a two-stage reduction ---------------------------
 * Stage 1 (dw_wgrad_partial): the N*Ho output rows (b, oy) are cut into `splits`
 * contiguous ranges; one work-item per (range, channel, tap) sums dy * x over its range,
 * into part (splits, C, K*K). Neighbouring work-items are neighbouring taps of one channel:
 * they read the same dy row and neighbouring x values. Global splits * C * K*K (1-D).
 * Stage 2 is wgrad_reduce of cl_kernels/conv.cl: one work-group per weight sums its `splits`
 * partial sums and adds the total to dw (C, K, K). */
__kernel void dw_wgrad_partial(VIEW(x), VIEW(dy), VIEW(part), DW_ARGS, int splits)
{
    PTR(x); PTR(dy); PTR(part);
    int kk = k * k, g = GID0;
    if (g >= splits * c * kk)
        return;
    int t = g % kk, rest = g / kk, ch = rest % c, s = rest / c;
    int ky = t / k, kx = t - ky * k;
    int rows = n * ho;
    int lo = (int)((long)rows * s / splits), hi = (int)((long)rows * (s + 1) / splits);
    /* output columns whose tap lies inside the input row */
    int ox_lo = kx < pad ? (pad - kx + stride - 1) / stride : 0;
    int last = width - 1 + pad - kx;
    int ox_hi = last < 0 ? 0 : min(wo, last / stride + 1);
    float acc = 0.0f;
    for (int r = lo; r < hi; r++) {
        int b = r / ho, oy = r - b * ho;
        int iy = oy * stride - pad + ky;
        if (iy < 0 || iy >= height)
            continue;
        __global const float *xr = x + ((b * c + ch) * height + iy) * width - pad + kx;
        __global const float *gr = dy + ((b * c + ch) * ho + oy) * wo;
        for (int ox = ox_lo; ox < ox_hi; ox++)
            acc = fma(gr[ox], xr[ox * stride], acc);
    }
    part[g] = acc;
}
