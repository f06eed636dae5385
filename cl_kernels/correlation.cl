/* 1-D horizontal correlation of stereo features (DispNetC), see runtime/nn/correlation.h.
 * fl, fr, dfl, dfr: (N, C, H, W); out, dout: (N, ND, H, W), ND = max_disp / stride + 1.
 *   out[b, i, y, x] = (1/C) * sum_c fl[b, c, y, x] * fr[b, c, y, x - i*stride]
 * (0 where x - i*stride < 0: the right view is zero outside the image).
 *   dfl[b, c, y, x] = (1/C) * sum_i dout[b, i, y, x] * fr[b, c, y, x - d_i]
 *   dfr[b, c, y, x] = (1/C) * sum_i dout[b, i, y, x + d_i] * fl[b, c, y, x + d_i]
 * CPU variant (corr_*_rows): a work-item computes 8 neighbouring columns of CORR_G
 * displacements (forward) or channels (backward) with float8 arithmetic, looping over the
 * channels (forward) or displacements (backward); a row segment inside the image is one
 * vector load, one crossing its edge is read value by value, one outside is skipped.
 * GPU variant (corr_*1): one work-item per output value (forward) or input value
 * (backward), looping over the channels or the displacements. */

#define CORR_ARGS int n, int c, int height, int width, int nd, int stride

/* Outputs (displacements or channels) per work-item of the CPU kernels. */
#define CORR_G 4

/* Lanes j = 0..7 of row p (width values) at columns s + j; 0 outside [0, width). */
inline float8 corr_load(__global const float *p, int s, int width)
{
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
    float8 acc[CORR_G];
    int s[CORR_G], mode[CORR_G];
    for (int g = 0; g < CORR_G; g++) {
        acc[g] = (float8)(0.0f);
        s[g] = x0 - (i0 + g) * stride; /* fr column of lane 0 */
        mode[g] = g < gn ? corr_mode(s[g], width) : 0;
    }
    int ma = corr_mode(x0, width);
    /* no channel loop when every displacement's segment lies left of the image */
    int live = 0;
    for (int g = 0; g < CORR_G; g++)
        live |= mode[g];
    for (int k = 0; live && k < c; k++) {
        float8 va = corr_seg(a, x0, width, ma);
        for (int g = 0; g < CORR_G; g++)
            if (mode[g])
                acc[g] = fma(va, corr_seg(r, s[g], width, mode[g]), acc[g]);
        a += plane;
        r += plane;
    }
    float inv = 1.0f / (float)c;
    for (int g = 0; g < CORR_G; g++)
        if (g < gn)
            store8(out + ((b * nd + i0 + g) * height + y) * width + x0, acc[g] * inv, left);
}

/* corr_backward_fl_rows and corr_backward_fr_rows, one body: d@p DST for channels
 * c0 .. c0+CORR_G-1, columns x0 .. x0+7 of row (b, y), from the features @p SRC of the other
 * view; overwrites. Displacement i reads SRC at columns s = @p S and dout at @p GS
 * (dfl: fr at x0 - d, dout at x0; dfr: fl and dout at x0 + d), up to i = LAST / stride
 * (the displacements whose SRC segment reaches into the image). A macro, not a function,
 * so that each kernel compiles to its own loop whatever the compiler inlines (corr_mode()
 * of the invariant x0 is hoisted, that of s shared).
 * Global (ceil(W / 8), ceil(C / CORR_G), N*H). */
#define CORR_BACKWARD_ROWS(NAME, SRC, DST, S, GS, LAST)                                     \
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
        float8 acc[CORR_G];                                                                 \
        for (int g = 0; g < CORR_G; g++)                                                    \
            acc[g] = (float8)(0.0f);                                                        \
        int last = min(nd - 1, (LAST) / stride);                                            \
        for (int i = 0; i <= last; i++) {                                                   \
            int s = S, m = corr_mode(s, width);                                             \
            float8 vg = corr_seg(gr + i * plane, GS, width, corr_mode(GS, width));          \
            for (int g = 0; g < CORR_G; g++)                                                \
                if (g < gn)                                                                 \
                    acc[g] = fma(vg, corr_seg(f + g * plane, s, width, m), acc[g]);         \
        }                                                                                   \
        float inv = 1.0f / (float)c;                                                        \
        for (int g = 0; g < CORR_G; g++)                                                    \
            if (g < gn)                                                                     \
                store8(DST + ((b * c + c0 + g) * height + y) * width + x0, acc[g] * inv,    \
                       left);                                                               \
    }

/* dfl: fr lanes left of column 0 are zeros, so displacements with x0 - d > -8. */
CORR_BACKWARD_ROWS(corr_backward_fl_rows, fr, dfl, x0 - i * stride, x0, x0 + 7)
/* dfr: lanes right of the image are zeros, so displacements with x0 + d < width. */
CORR_BACKWARD_ROWS(corr_backward_fr_rows, fl, dfr, x0 + i * stride, s, width - 1 - x0)

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
