#include "ref_resize.h"

#include <math.h>
#include <stdlib.h>

/* Weight of input i for output o on an axis n -> m (unnormalised). */
static double tri(int i, int o, int n, int m)
{
    double scale = (double)n / m, fs = scale > 1 ? scale : 1;
    double c = (o + 0.5) * scale;
    double x = 1.0 - fabs(i + 0.5 - c) / fs;
    return x > 0 ? x : 0;
}

void ref_resize(const double *src, int h, int w, double *dst, int oh, int ow)
{
    for (int oy = 0; oy < oh; oy++)
        for (int ox = 0; ox < ow; ox++) {
            double sy = 0, sx = 0, acc = 0;
            for (int i = 0; i < h; i++)
                sy += tri(i, oy, h, oh);
            for (int j = 0; j < w; j++)
                sx += tri(j, ox, w, ow);
            for (int i = 0; i < h; i++)
                for (int j = 0; j < w; j++)
                    acc += tri(i, oy, h, oh) * tri(j, ox, w, ow) * src[i * w + j];
            dst[oy * ow + ox] = acc / (sy * sx);
        }
}

void ref_crop(const uint8_t *img, int h, int w, int c, int ch, int y0, int x0, int side, int edge,
              int flip, double *out)
{
    for (int i = 0; i < side; i++)
        for (int j = 0; j < side; j++) {
            int y = y0 + i, x = x0 + (flip ? side - 1 - j : j);
            double v;
            if (y >= 0 && y < h && x >= 0 && x < w) {
                v = img[(y * w + x) * c + ch];
            } else if (edge) {
                int yy = y < 0 ? 0 : y >= h ? h - 1 : y, xx = x < 0 ? 0 : x >= w ? w - 1 : x;
                v = img[(yy * w + xx) * c + ch];
            } else {
                v = 0;
            }
            out[i * side + j] = v;
        }
}
