/* Bilinear upsampling by an integer factor f, align_corners=False (see runtime/nn/upsample.h).
 * x, dx: (P, H, W) planes (P = N*C); y, dy: (P, f*H, f*W).
 * Output o of an axis of n inputs reads the source coordinate max(0, (o + 0.5)/f - 0.5)
 * = num / (2f) with num = 2*o + 1 - f: taps i0 = num / (2f) (0 when num < 0),
 * i1 = min(i0 + 1, n - 1), weights 1 - lambda and lambda, lambda = (num mod 2f) / (2f)
 * (0 when num < 0): exact integers, the same in the forward and the backward.
 * The backward gathers: dx[i] sums dy[o] times the weight o gives i over the 2f outputs
 * o in [f*(i-1) + f/2, f*(i+1) + f/2) whose first tap is i - 1 or i (clamped to the
 * axis: the outputs clamped to source 0 fall in the range of i = 0). No atomics.
 * CPU variant (*_rows): a work-item per row, looping along it. GPU variant (*1): a
 * work-item per value. */

/* First tap of output o (axis of n inputs, factor f); *i1 the second, *lam its weight. */
inline int up_taps(int o, int n, int f, int *i1, float *lam)
{
    int num = 2 * o + 1 - f, f2 = 2 * f;
    int i0 = num < 0 ? 0 : num / f2;
    *lam = num < 0 ? 0.0f : (float)(num - i0 * f2) / (float)f2;
    *i1 = min(i0 + 1, n - 1);
    return i0;
}

/* The weight output o gives input i along an axis of n inputs. */
inline float up_weight(int o, int i, int n, int f)
{
    int i1;
    float lam;
    int i0 = up_taps(o, n, f, &i1, &lam);
    return (i0 == i ? 1.0f - lam : 0.0f) + (i1 == i ? lam : 0.0f);
}

/* Value (oy, ox) of the upsampled plane xp (h, w). */
inline float up_value(__global const float *xp, int h, int w, int f, int oy, int ox)
{
    int y1, x1;
    float ly, lx;
    int y0 = up_taps(oy, h, f, &y1, &ly), x0 = up_taps(ox, w, f, &x1, &lx);
    __global const float *r0 = xp + y0 * w, *r1 = xp + y1 * w;
    float top = (1.0f - lx) * r0[x0] + lx * r0[x1];
    float bot = (1.0f - lx) * r1[x0] + lx * r1[x1];
    return (1.0f - ly) * top + ly * bot;
}

/* Gradient at input (iy, ix) of a plane from dyp (f*h, f*w). */
inline float up_gather(__global const float *dyp, int h, int w, int f, int iy, int ix)
{
    int ow = w * f, hf = f / 2;
    int ylo = max(0, f * (iy - 1) + hf), yhi = min(h * f, f * (iy + 1) + hf);
    int xlo = max(0, f * (ix - 1) + hf), xhi = min(ow, f * (ix + 1) + hf);
    float acc = 0.0f;
    for (int oy = ylo; oy < yhi; oy++) {
        float wy = up_weight(oy, iy, h, f);
        if (wy == 0.0f)
            continue;
        __global const float *r = dyp + oy * ow;
        float row = 0.0f;
        for (int ox = xlo; ox < xhi; ox++) {
            float wx = up_weight(ox, ix, w, f);
            if (wx != 0.0f)
                row = fma(wx, r[ox], row);
        }
        acc = fma(wy, row, acc);
    }
    return acc;
}

/* ---- CPU variant: global (f*H, P) output rows (forward) or (H, P) input rows ---- */

__kernel void upsample_forward_rows(VIEW(x), VIEW(y), int planes, int h, int w, int f,
                                    float scale)
{
    PTR(x); PTR(y);
    int oy = (int)get_global_id(0), p = (int)get_global_id(1);
    int oh = h * f, ow = w * f;
    if (oy >= oh || p >= planes)
        return;
    __global const float *xp = x + p * h * w;
    __global float *yr = y + (p * oh + oy) * ow;
    int y1;
    float ly;
    int y0 = up_taps(oy, h, f, &y1, &ly);
    __global const float *r0 = xp + y0 * w, *r1 = xp + y1 * w;
    for (int ox = 0; ox < ow; ox++) {
        int x1;
        float lx;
        int x0 = up_taps(ox, w, f, &x1, &lx);
        float top = (1.0f - lx) * r0[x0] + lx * r0[x1];
        float bot = (1.0f - lx) * r1[x0] + lx * r1[x1];
        yr[ox] = scale * ((1.0f - ly) * top + ly * bot);
    }
}

__kernel void upsample_backward_rows(VIEW(dy), VIEW(dx), int planes, int h, int w, int f,
                                     float scale)
{
    PTR(dy); PTR(dx);
    int iy = (int)get_global_id(0), p = (int)get_global_id(1);
    if (iy >= h || p >= planes)
        return;
    __global const float *dyp = dy + p * (h * f) * (w * f);
    __global float *dxr = dx + (p * h + iy) * w;
    for (int ix = 0; ix < w; ix++)
        dxr[ix] = scale * up_gather(dyp, h, w, f, iy, ix);
}

/* ---- GPU variant: one work-item per value, x fastest; global P*fH*fW or P*H*W ---- */

__kernel void upsample_forward1(VIEW(x), VIEW(y), int planes, int h, int w, int f, float scale)
{
    PTR(x); PTR(y);
    int g = GID0, oh = h * f, ow = w * f;
    if (g >= planes * oh * ow)
        return;
    int ox = g % ow, t = g / ow, oy = t % oh, p = t / oh;
    y[g] = scale * up_value(x + p * h * w, h, w, f, oy, ox);
}

__kernel void upsample_backward1(VIEW(dy), VIEW(dx), int planes, int h, int w, int f,
                                 float scale)
{
    PTR(dy); PTR(dx);
    int g = GID0;
    if (g >= planes * h * w)
        return;
    int ix = g % w, t = g / w, iy = t % h, p = t / h;
    dx[g] = scale * up_gather(dy + p * (h * f) * (w * f), h, w, f, iy, ix);
}
