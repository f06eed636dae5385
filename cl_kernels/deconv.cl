/* Transposed convolution (see runtime/nn/deconv.h): the CPU variant's direct kernels
 * for k4 s2 p1 (exact x2 up-sampling). The GEMM path's column kernels are conv.cl's
 * im2col and col2im, its bias and bias gradient bias.cl's (runtime/nn/bias.h).
 * Layouts: x (N, Cin, H, W); w Cin rows of Cout*16 ([ci][co][ky][kx]) with row stride
 * ld; y, dy (N, Cout, 2H, 2W) for k4 s2 p1. */

/* row[start + j] for j = 0..7, 0 where start + j lies outside [0, len). */
inline float8 dc_load8(__global const float *row, int start, int len)
{
    if (start >= 0 && start + 8 <= len)
        return vload8(0, row + start);
    float a[8];
    for (int j = 0; j < 8; j++) {
        int i = start + j;
        a[j] = i >= 0 && i < len ? row[i] : 0.0f;
    }
    return vload8(0, a);
}

/* row[start + j] for j = 0..15, 0 where start + j lies outside [0, len). */
inline float16 dc_load16(__global const float *row, int start, int len)
{
    if (start >= 0 && start + 16 <= len)
        return vload16(0, row + start);
    float a[16];
    for (int j = 0; j < 16; j++) {
        int i = start + j;
        a[j] = i >= 0 && i < len ? row[i] : 0.0f;
    }
    return vload16(0, a);
}

/* Output channels (forward) and input channels (dx) per work-item of the direct kernels. */
#define DC_CO 4
#define DC_CI 4

/* Store 2 * min(left, 8) outputs, the lanes of e and o interleaved (e0 o0 e1 o1 ...). */
inline void dc_store_pairs(__global float *p, float8 e, float8 o, int left)
{
    float8 lo = (float8)(e.s0, o.s0, e.s1, o.s1, e.s2, o.s2, e.s3, o.s3);
    float8 hi = (float8)(e.s4, o.s4, e.s5, o.s5, e.s6, o.s6, e.s7, o.s7);
    store8(p, lo, 2 * left);
    if (left > 4)
        store8(p + 8, hi, 2 * left - 8);
}

/* Forward, k4 s2 p1: x (N, Cin, H, W) -> y (N, Cout, 2H, 2W), overwritten, plus bias[co]
 * when has_bias. Global (ceil(W / 8), H, N * ceil(Cout / DC_CO)): a work-item takes input
 * columns ix0 .. ix0+7 of input row iy and DC_CO output channels, and writes output rows
 * 2iy and 2iy+1, columns 2ix0 .. 2ix0+15. Output (oy, ox) gathers ky with
 * oy + 1 - ky even (iy' = (oy + 1 - ky) / 2) and likewise kx: 2 x 2 taps per input channel,
 * from input rows iy-1, iy, iy+1 and columns ix-1, ix, ix+1. */
__kernel void deconv_k4s2_forward(VIEW(x), VIEW(w), VIEW(bias), VIEW(y), int n, int cin,
                                  int h, int wd, int cout, int ld, int has_bias)
{
    PTR(x); PTR(w); PTR(bias); PTR(y);
    int ix0 = GID0 * 8, iy = (int)get_global_id(1), z = (int)get_global_id(2);
    int blocks = (cout + DC_CO - 1) / DC_CO;
    if (ix0 >= wd || iy >= h || z >= n * blocks)
        return;
    int b = z / blocks, co0 = (z - b * blocks) * DC_CO, last = min(DC_CO, cout - co0) - 1;
    int hw = h * wd;
    /* output row 2iy: even (e0) and odd (o0) columns; row 2iy+1: e1, o1 */
    float8 e0[DC_CO], o0[DC_CO], e1[DC_CO], o1[DC_CO];
    for (int c = 0; c < DC_CO; c++) {
        float v = has_bias ? bias[co0 + min(c, last)] : 0.0f;
        e0[c] = (float8)(v);
        o0[c] = e0[c];
        e1[c] = e0[c];
        o1[c] = e0[c];
    }
    bool up = iy > 0, down = iy + 1 < h;
    const float8 zero = (float8)(0.0f);
    __global const float *xr = x + b * cin * hw + iy * wd;
    __global const float *wr = w + co0 * 16;
    for (int ci = 0; ci < cin; ci++, xr += hw, wr += ld) {
        /* row iy (c), iy-1 (u), iy+1 (d); columns ix-1 (M), ix (C), ix+1 (P) */
        float8 cM = dc_load8(xr, ix0 - 1, wd), cC = dc_load8(xr, ix0, wd);
        float8 cP = dc_load8(xr, ix0 + 1, wd);
        float8 uM = up ? dc_load8(xr - wd, ix0 - 1, wd) : zero;
        float8 uC = up ? dc_load8(xr - wd, ix0, wd) : zero;
        float8 uP = up ? dc_load8(xr - wd, ix0 + 1, wd) : zero;
        float8 dM = down ? dc_load8(xr + wd, ix0 - 1, wd) : zero;
        float8 dC = down ? dc_load8(xr + wd, ix0, wd) : zero;
        float8 dP = down ? dc_load8(xr + wd, ix0 + 1, wd) : zero;
        for (int c = 0; c < DC_CO; c++) {
            float16 k = vload16(0, wr + min(c, last) * 16); /* tap ky*4 + kx */
            e0[c] += k.s5 * cC + k.s7 * cM + k.sd * uC + k.sf * uM;
            o0[c] += k.s4 * cP + k.s6 * cC + k.sc * uP + k.se * uC;
            e1[c] += k.s1 * dC + k.s3 * dM + k.s9 * cC + k.sb * cM;
            o1[c] += k.s0 * dP + k.s2 * dC + k.s8 * cP + k.sa * cC;
        }
    }
    int wo = 2 * wd, left = min(8, wd - ix0);
    for (int c = 0; c <= last; c++) {
        __global float *yr = y + ((b * cout + co0 + c) * 2 * h + 2 * iy) * wo + 2 * ix0;
        dc_store_pairs(yr, e0[c], o0[c], left);
        dc_store_pairs(yr + wo, e1[c], o1[c], left);
    }
}

/* acc + the 4 taps t of one kernel row applied to a dy row: v holds dy columns
 * 2ix-1, 2ix (even, odd lanes), u columns 2ix+1, 2ix+2. */
inline float8 dc_row_taps(float8 acc, float4 t, float16 v, float16 u)
{
    return acc + t.s0 * v.even + t.s1 * v.odd + t.s2 * u.even + t.s3 * u.odd;
}

/* dx, k4 s2 p1: dy (N, Cout, 2H, 2W) -> dx (N, Cin, H, W), overwritten: the 4 x 4 stride-2
 * pad-1 convolution of dy, dx[b, ci, iy, ix] = sum over co, ky, kx of
 * dy[b, co, 2iy-1+ky, 2ix-1+kx] * w[ci, co, ky, kx]. Global (ceil(W / 8), H,
 * N * ceil(Cin / DC_CI)): a work-item takes 8 columns of one row for DC_CI input channels. */
__kernel void deconv_k4s2_backward_dx(VIEW(dy), VIEW(w), VIEW(dx), int n, int cin, int h,
                                      int wd, int cout, int ld)
{
    PTR(dy); PTR(w); PTR(dx);
    int ix0 = GID0 * 8, iy = (int)get_global_id(1), z = (int)get_global_id(2);
    int blocks = (cin + DC_CI - 1) / DC_CI;
    if (ix0 >= wd || iy >= h || z >= n * blocks)
        return;
    int b = z / blocks, ci0 = (z - b * blocks) * DC_CI, last = min(DC_CI, cin - ci0) - 1;
    int ho = 2 * h, wo = 2 * wd;
    float8 acc[DC_CI];
    for (int c = 0; c < DC_CI; c++)
        acc[c] = (float8)(0.0f);
    const float16 zero = (float16)(0.0f);
    bool top = iy > 0, bottom = iy + 1 < h; /* rows 2iy-1 and 2iy+2 exist */
    int c0 = 2 * ix0 - 1, c1 = 2 * ix0 + 1;
    int g = b * cout * ho * wo + 2 * iy * wo; /* row 2iy of channel co */
    for (int co = 0; co < cout; co++, g += ho * wo) {
        /* dy rows 2iy-1+ky (ky = 0..3), columns from 2ix0-1 (v) and 2ix0+1 (u) */
        float16 v0 = top ? dc_load16(dy + g - wo, c0, wo) : zero;
        float16 u0 = top ? dc_load16(dy + g - wo, c1, wo) : zero;
        float16 v1 = dc_load16(dy + g, c0, wo), u1 = dc_load16(dy + g, c1, wo);
        float16 v2 = dc_load16(dy + g + wo, c0, wo), u2 = dc_load16(dy + g + wo, c1, wo);
        float16 v3 = bottom ? dc_load16(dy + g + 2 * wo, c0, wo) : zero;
        float16 u3 = bottom ? dc_load16(dy + g + 2 * wo, c1, wo) : zero;
        for (int c = 0; c < DC_CI; c++) {
            float16 k = vload16(0, w + (ci0 + min(c, last)) * ld + co * 16);
            float8 a = dc_row_taps(acc[c], k.s0123, v0, u0);
            a = dc_row_taps(a, k.s4567, v1, u1);
            a = dc_row_taps(a, k.s89ab, v2, u2);
            acc[c] = dc_row_taps(a, k.scdef, v3, u3);
        }
    }
    int left = wd - ix0;
    for (int c = 0; c <= last; c++)
        store8(dx + ((b * cin + ci0 + c) * h + iy) * wd + ix0, acc[c], left);
}

/* a[kx] += X0 times, b[kx] += X1 times the 4 dy column sets of one kernel row (see
 * dc_row_taps): two input channels share the dy loads. */
inline void dc_wgrad_row2(float8 *a, float8 *b, float8 X0, float8 X1, float16 v, float16 u)
{
    float8 t0 = v.even, t1 = v.odd, t2 = u.even, t3 = u.odd;
    a[0] += X0 * t0;
    a[1] += X0 * t1;
    a[2] += X0 * t2;
    a[3] += X0 * t3;
    b[0] += X1 * t0;
    b[1] += X1 * t1;
    b[2] += X1 * t2;
    b[3] += X1 * t3;
}

/* dW, k4 s2 p1: dw[ci, co, ky, kx] += sum over b, iy, ix of
 * x[b, ci, iy, ix] * dy[b, co, 2iy-1+ky, 2ix-1+kx]. Global (Cout, ceil(Cin / 2)): one
 * work-item per output channel and pair of input channels (the second one repeats the first
 * when Cin is odd, and is not stored), their 16 taps in vector accumulators over chunks of 8
 * input columns. */
__kernel void deconv_k4s2_backward_w(VIEW(x), VIEW(dy), VIEW(dw), int n, int cin, int h,
                                     int wd, int cout, int ld)
{
    PTR(x); PTR(dy); PTR(dw);
    int co = GID0, ci0 = 2 * (int)get_global_id(1);
    if (co >= cout || ci0 >= cin)
        return;
    int ci1 = min(ci0 + 1, cin - 1);
    int ho = 2 * h, wo = 2 * wd;
    float8 a[16], c[16];
    for (int t = 0; t < 16; t++) {
        a[t] = (float8)(0.0f);
        c[t] = a[t];
    }
    for (int b = 0; b < n; b++) {
        __global const float *x0 = x + (b * cin + ci0) * h * wd;
        __global const float *x1 = x + (b * cin + ci1) * h * wd;
        __global const float *g = dy + (b * cout + co) * ho * wo; /* row 2iy */
        for (int iy = 0; iy < h; iy++, x0 += wd, x1 += wd, g += 2 * wo) {
            bool top = iy > 0, bottom = iy + 1 < h; /* rows 2iy-1 and 2iy+2 exist */
            for (int ix0 = 0; ix0 < wd; ix0 += 8) {
                /* 0 past the row: no contribution */
                float8 X0 = load8(x0 + ix0, wd - ix0), X1 = load8(x1 + ix0, wd - ix0);
                int c0 = 2 * ix0 - 1, c1 = 2 * ix0 + 1;
                if (top)
                    dc_wgrad_row2(a, c, X0, X1, dc_load16(g - wo, c0, wo),
                                  dc_load16(g - wo, c1, wo));
                dc_wgrad_row2(a + 4, c + 4, X0, X1, dc_load16(g, c0, wo), dc_load16(g, c1, wo));
                dc_wgrad_row2(a + 8, c + 8, X0, X1, dc_load16(g + wo, c0, wo),
                              dc_load16(g + wo, c1, wo));
                if (bottom)
                    dc_wgrad_row2(a + 12, c + 12, X0, X1, dc_load16(g + 2 * wo, c0, wo),
                                  dc_load16(g + 2 * wo, c1, wo));
            }
        }
    }
    __global float *o = dw + ci0 * ld + co * 16;
    for (int t = 0; t < 16; t++)
        o[t] += hsum8(a[t]);
    if (ci1 != ci0) {
        o = dw + ci1 * ld + co * 16;
        for (int t = 0; t < 16; t++)
            o[t] += hsum8(c[t]);
    }
}
