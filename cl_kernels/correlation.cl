/* 1-D horizontal correlation of stereo features (DispNetC), see runtime/nn/correlation.h.
 * fl, fr, dfl, dfr: (N, C, H, W); out, dout: (N, ND, H, W), ND = max_disp / stride + 1.
 *   out[b, i, y, x] = (1/C) * sum_c fl[b, c, y, x] * fr[b, c, y, x - i*stride]
 * (0 where x - i*stride < 0: the right view is zero outside the image).
 *   dfl[b, c, y, x] = (1/C) * sum_i dout[b, i, y, x] * fr[b, c, y, x - d_i]
 *   dfr[b, c, y, x] = (1/C) * sum_i dout[b, i, y, x + d_i] * fl[b, c, y, x + d_i]
 * CPU variant (corr_*_rows): a work-item computes 8 neighbouring columns of CORR_G
 * displacements (forward) or channels (backward) with float8 arithmetic, looping over the
 * channels (forward) or displacements (backward); a row segment inside the image is one
 * vector load, one crossing its edge one vector load inside the row with its lanes moved
 * (value by value in rows narrower than 8), one outside is skipped. The common case, every
 * segment of a work-item inside the row (forward) or of a displacement (backward), runs a
 * loop of plain vector loads and FMAs; the edge cases a general loop. On PoCL (2-core EPYC,
 * 24x48, C 64, D 41, batch 64) the three kernels ran 3-4x faster so than with one general
 * loop that read edge segments value by value (docs/benchmarks.md, "Stereo depth").
 * GPU variant (corr_*1): one work-item per output value (forward) or input value
 * (backward), looping over the channels or the displacements. */

#define CORR_ARGS int n, int c, int height, int width, int nd, int stride

/* Outputs (displacements or channels) per work-item of the CPU kernels. They name the 4
 * accumulators one by one: PoCL neither unrolled a loop over an array of them nor kept the
 * array in registers (each FMA went through memory: the three kernels took 1.5x the time). */
#define CORR_G 4
#if CORR_G != 4
#error "the CPU kernels name CORR_G = 4 accumulators"
#endif

/* v moved up by k lanes (1 <= k <= 7), zeros in lanes 0 .. k-1: a constant swizzle each. */
inline float8 corr_shift_up(float8 v, int k)
{
    switch (k) {
    case 1: return (float8)(0.0f, v.s012, v.s3456);
    case 2: return (float8)((float2)(0.0f), v.s0123, v.s45);
    case 3: return (float8)((float3)(0.0f), v.s0123, v.s4);
    case 4: return (float8)((float4)(0.0f), v.s0123);
    case 5: return (float8)((float4)(0.0f), 0.0f, v.s012);
    case 6: return (float8)((float4)(0.0f), (float2)(0.0f), v.s01);
    default: return (float8)((float4)(0.0f), (float3)(0.0f), v.s0);
    }
}

/* v moved down by k lanes (1 <= k <= 7), zeros in lanes 8-k .. 7. */
inline float8 corr_shift_down(float8 v, int k)
{
    switch (k) {
    case 1: return (float8)(v.s123, v.s4567, 0.0f);
    case 2: return (float8)(v.s23, v.s4567, (float2)(0.0f));
    case 3: return (float8)(v.s3, v.s4567, (float3)(0.0f));
    case 4: return (float8)(v.s4567, (float4)(0.0f));
    case 5: return (float8)(v.s567, 0.0f, (float4)(0.0f));
    case 6: return (float8)(v.s67, (float2)(0.0f), (float4)(0.0f));
    default: return (float8)(v.s7, (float3)(0.0f), (float4)(0.0f));
    }
}

/* Lanes j = 0..7 of row p (width values) at columns s + j, 0 outside [0, width), for a
 * segment crossing an edge of the row (-8 < s < 0 or width - 8 < s < width). A row of 8 or
 * more values: one vector load inside the row, its lanes moved (a private array written
 * value by value and read as a vector, as narrower rows are read, stalls store forwarding:
 * the kernels ran 1.4x slower so). */
inline float8 corr_load(__global const float *p, int s, int width)
{
    if (width >= 8)
        return s < 0 ? corr_shift_up(vload8(0, p), -s)
                     : corr_shift_down(vload8(0, p + width - 8), s + 8 - width);
    float a[8];
    for (int j = 0; j < 8; j++)
        a[j] = (s + j >= 0 && s + j < width) ? p[s + j] : 0.0f;
    return vload8(0, a);
}

/* How corr_seg() reads the 8 columns s .. s+7 of a row of width values: 0 none lies in
 * the row (zeros, nothing read), 1 all do (one vector load), 2 some do (one at a time).
 * It depends on s only, so loops over channels or displacements choose it once per
 * segment. */
inline int corr_mode(int s, int width)
{
    if (s <= -8 || s >= width)
        return 0;
    return s >= 0 && s + 8 <= width ? 1 : 2;
}

/* Columns s .. s+7 of row p, read as corr_mode() @p mode says. */
inline float8 corr_seg(__global const float *p, int s, int width, int mode)
{
    if (mode == 1)
        return vload8(0, p + s);
    return mode == 2 ? corr_load(p, s, width) : (float8)(0.0f);
}

/* ---- CPU variant --------------------------------------------------------------------------
 * Global (ceil(W / 8), ceil(ND / CORR_G), N*H): columns x0 .. x0+7 of row (b, y) for the
 * displacements i0 .. i0+CORR_G-1, each fl segment loaded once per channel. */
__kernel void corr_forward_rows(VIEW(fl), VIEW(fr), VIEW(out), CORR_ARGS)
{
    PTR(fl); PTR(fr); PTR(out);
    int x0 = 8 * (int)get_global_id(0), i0 = CORR_G * (int)get_global_id(1);
    int row = (int)get_global_id(2);
    if (x0 >= width || i0 >= nd || row >= n * height)
        return;
    int b = row / height, y = row - b * height;
    int plane = height * width, left = width - x0;
    __global const float *a = fl + (b * c * height + y) * width;
    __global const float *r = fr + (b * c * height + y) * width;
    int gn = min(CORR_G, nd - i0);
    float inv = 1.0f / (float)c;
    if (gn == 4 && x0 + 8 <= width && x0 - (i0 + 3) * stride >= 0) {
        /* every segment inside the row: fr at x0 - d_i0 - g * stride */
        __global const float *q = r + x0 - i0 * stride;
        float8 a0 = (float8)(0.0f), a1 = a0, a2 = a0, a3 = a0;
        a += x0;
        for (int k = 0; k < c; k++) {
            float8 va = vload8(0, a);
            a0 = fma(va, vload8(0, q), a0);
            a1 = fma(va, vload8(0, q - stride), a1);
            a2 = fma(va, vload8(0, q - 2 * stride), a2);
            a3 = fma(va, vload8(0, q - 3 * stride), a3);
            a += plane;
            q += plane;
        }
        __global float *o = out + ((b * nd + i0) * height + y) * width + x0;
        vstore8(a0 * inv, 0, o);
        vstore8(a1 * inv, 0, o + plane);
        vstore8(a2 * inv, 0, o + 2 * plane);
        vstore8(a3 * inv, 0, o + 3 * plane);
        return;
    }
    /* else one displacement at a time: its segment inside the row, crossing its left edge
     * (fr from column 0 against fl from x0 - s, the sums moved up by -s lanes at the end),
     * outside it (zeros), or any other way (read as corr_seg() says) */
    int ma = corr_mode(x0, width);
    for (int g = 0; g < gn; g++) {
        int s = x0 - (i0 + g) * stride, m = corr_mode(s, width);
        __global const float *p = a, *q = r;
        float8 acc = (float8)(0.0f);
        if (ma == 1 && m == 1) {
            for (int k = 0; k < c; k++, p += plane, q += plane)
                acc = fma(vload8(0, p + x0), vload8(0, q + s), acc);
        } else if (ma == 1 && m == 2 && s < 0 && x0 - s + 8 <= width) {
            for (int k = 0; k < c; k++, p += plane, q += plane)
                acc = fma(vload8(0, p + x0 - s), vload8(0, q), acc);
            acc = corr_shift_up(acc, -s);
        } else if (m) {
            for (int k = 0; k < c; k++, p += plane, q += plane)
                acc = fma(corr_seg(p, x0, width, ma), corr_seg(q, s, width, m), acc);
        }
        store8(out + ((b * nd + i0 + g) * height + y) * width + x0, acc * inv, left);
    }
}

/* corr_backward_fl_rows and corr_backward_fr_rows, one body: d@p DST for channels
 * c0 .. c0+CORR_G-1, columns x0 .. x0+7 of row (b, y), from the features @p SRC of the other
 * view; overwrites. Displacement i reads SRC at columns s = @p S and dout at @p GS
 * (dfl: fr at x0 - d, dout at x0; dfr: fl and dout at x0 + d), up to i = LAST / stride
 * (the displacements whose SRC segment reaches into the image). When the 8 columns lie in
 * the row, displacements 0 .. INNER / stride read both segments inside it: a loop of plain
 * vector loads (channels past C repeat the last one, not stored); the rest, the general loop.
 * A macro, not a function, so that each kernel compiles to its own loops whatever the
 * compiler inlines (corr_mode() of the invariant x0 is hoisted, that of s shared).
 * Global (ceil(W / 8), ceil(C / CORR_G), N*H). */
#define CORR_BACKWARD_ROWS(NAME, SRC, DST, S, GS, LAST, INNER)                              \
    __kernel void NAME(VIEW(SRC), VIEW(dout), VIEW(DST), CORR_ARGS)                         \
    {                                                                                       \
        PTR(SRC); PTR(dout); PTR(DST);                                                      \
        int x0 = 8 * (int)get_global_id(0), c0 = CORR_G * (int)get_global_id(1);            \
        int row = (int)get_global_id(2);                                                    \
        if (x0 >= width || c0 >= c || row >= n * height)                                    \
            return;                                                                         \
        int b = row / height, y = row - b * height;                                         \
        int plane = height * width, left = width - x0;                                      \
        int gn = min(CORR_G, c - c0);                                                       \
        __global const float *f = SRC + ((b * c + c0) * height + y) * width;                \
        __global const float *gr = dout + (b * nd * height + y) * width;                    \
        int last = min(nd - 1, (LAST) / stride), i = 0;                                     \
        __global const float *f1 = f + min(1, gn - 1) * plane;                              \
        __global const float *f2 = f + min(2, gn - 1) * plane;                              \
        __global const float *f3 = f + min(3, gn - 1) * plane;                              \
        float8 a0 = (float8)(0.0f), a1 = a0, a2 = a0, a3 = a0;                              \
        if (left >= 8) {                                                                    \
            int inner = min(last, (INNER) / stride);                                        \
            for (; i <= inner; i++) {                                                       \
                int s = S;                                                                  \
                float8 vg = vload8(0, gr + i * plane + (GS));                               \
                a0 = fma(vg, vload8(0, f + s), a0);                                         \
                a1 = fma(vg, vload8(0, f1 + s), a1);                                        \
                a2 = fma(vg, vload8(0, f2 + s), a2);                                        \
                a3 = fma(vg, vload8(0, f3 + s), a3);                                        \
            }                                                                               \
        }                                                                                   \
        for (; i <= last; i++) {                                                            \
            int s = S, m = corr_mode(s, width);                                             \
            float8 vg = corr_seg(gr + i * plane, GS, width, corr_mode(GS, width));          \
            a0 = fma(vg, corr_seg(f, s, width, m), a0);                                     \
            a1 = fma(vg, corr_seg(f1, s, width, m), a1);                                    \
            a2 = fma(vg, corr_seg(f2, s, width, m), a2);                                    \
            a3 = fma(vg, corr_seg(f3, s, width, m), a3);                                    \
        }                                                                                   \
        float inv = 1.0f / (float)c;                                                        \
        __global float *o = DST + ((b * c + c0) * height + y) * width + x0;                 \
        store8(o, a0 * inv, left);                                                          \
        if (gn > 1)                                                                         \
            store8(o + plane, a1 * inv, left);                                              \
        if (gn > 2)                                                                         \
            store8(o + 2 * plane, a2 * inv, left);                                          \
        if (gn > 3)                                                                         \
            store8(o + 3 * plane, a3 * inv, left);                                          \
    }

/* dfl: fr lanes left of column 0 are zeros, so displacements with x0 - d > -8; inside the
 * row for d <= x0. */
CORR_BACKWARD_ROWS(corr_backward_fl_rows, fr, dfl, x0 - i * stride, x0, x0 + 7, x0)
/* dfr: lanes right of the image are zeros, so displacements with x0 + d < width; inside the
 * row for x0 + d + 8 <= width. */
CORR_BACKWARD_ROWS(corr_backward_fr_rows, fl, dfr, x0 + i * stride, s, width - 1 - x0,
                   width - 8 - x0)

/* ---- GPU variant --------------------------------------------------------------------------
 * Forward: one work-item per output (x, i, b * H + y), looping over the channels; the
 * work-items of a group share fl and fr rows through the cache. (A variant staging channel
 * blocks of fl and of the fr span of a displacement tile in local memory ran 1.6x slower on
 * an H100: 0.174 against 0.107 ms at N 4, C 64, 96x192, max_disp 40.)
 * Global (W, ND, N*H). */
__kernel void corr_forward1(VIEW(fl), VIEW(fr), VIEW(out), CORR_ARGS)
{
    PTR(fl); PTR(fr); PTR(out);
    int x = (int)get_global_id(0), i = (int)get_global_id(1), row = (int)get_global_id(2);
    if (x >= width || i >= nd || row >= n * height)
        return;
    int b = row / height, y = row - b * height, d = i * stride, plane = height * width;
    float acc = 0.0f;
    if (x >= d) {
        __global const float *a = fl + (b * c * height + y) * width + x;
        __global const float *r = fr + (b * c * height + y) * width + x - d;
        for (int k = 0; k < c; k++)
            acc = fma(a[k * plane], r[k * plane], acc);
    }
    out[((b * nd + i) * height + y) * width + x] = acc * (1.0f / (float)c);
}

/* dfl, one work-item per value (b, ch, y, x), x fastest; overwrites. Global N*C*H*W. */
__kernel void corr_backward_fl1(VIEW(fr), VIEW(dout), VIEW(dfl), CORR_ARGS)
{
    PTR(fr); PTR(dout); PTR(dfl);
    int g = GID0;
    if (g >= n * c * height * width)
        return;
    int x = g % width, t = g / width, y = t % height, bc = t / height, b = bc / c;
    int plane = height * width;
    __global const float *r = fr + (bc * height + y) * width + x; /* column x, d = 0 */
    __global const float *gr = dout + (b * nd * height + y) * width + x;
    int last = min(nd - 1, x / stride);
    float acc = 0.0f;
    for (int i = 0; i <= last; i++)
        acc = fma(gr[i * plane], r[-i * stride], acc);
    dfl[g] = acc * (1.0f / (float)c);
}

/* dfr, one work-item per value (b, ch, y, x), x fastest; overwrites. Global N*C*H*W. */
__kernel void corr_backward_fr1(VIEW(fl), VIEW(dout), VIEW(dfr), CORR_ARGS)
{
    PTR(fl); PTR(dout); PTR(dfr);
    int g = GID0;
    if (g >= n * c * height * width)
        return;
    int x = g % width, t = g / width, y = t % height, bc = t / height, b = bc / c;
    int plane = height * width;
    __global const float *a = fl + (bc * height + y) * width + x;
    __global const float *gr = dout + (b * nd * height + y) * width + x;
    int last = min(nd - 1, (width - 1 - x) / stride);
    float acc = 0.0f;
    for (int i = 0; i <= last; i++) {
        int d = i * stride;
        acc = fma(gr[i * plane + d], a[d], acc);
    }
    dfr[g] = acc * (1.0f / (float)c);
}
