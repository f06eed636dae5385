#include "data/disp_color.h"

#include <math.h>
#include <string.h>

/* The colour at t in [0, 1] along @p n stops. */
static void ramp(double t, const uint8_t (*stops)[3], int n, uint8_t *rgb)
{
    t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
    double p = t * (n - 1);
    int i = (int)p < n - 1 ? (int)p : n - 2;
    double f = p - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (uint8_t)lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]));
}

void data_disp_colorize(const float *disp, size_t count, float max_disp, uint8_t *rgb)
{
    static const uint8_t stops[][3] = {{0, 0, 128},   {0, 64, 255}, {0, 200, 255}, {64, 255, 128},
                                       {255, 230, 0}, {255, 80, 0}, {128, 0, 0}};
    const int n = (int)(sizeof stops / sizeof stops[0]);
    for (size_t i = 0; i < count; i++) {
        uint8_t *o = rgb + 3 * i;
        if (!isfinite(disp[i])) {
            memset(o, 0, 3);
            continue;
        }
        ramp(max_disp > 0.0f ? disp[i] / max_disp : 0.0, stops, n, o);
    }
}

void data_disp_resize(const float *in, int ih, int iw, float *out, int oh, int ow, float scale)
{
    for (int y = 0; y < oh; y++) {
        double sy = fmax(0.0, (y + 0.5) * ih / oh - 0.5);
        int y0 = (int)sy, y1 = y0 + 1 < ih ? y0 + 1 : ih - 1;
        double fy = sy - y0;
        for (int x = 0; x < ow; x++) {
            double sx = fmax(0.0, (x + 0.5) * iw / ow - 0.5);
            int x0 = (int)sx, x1 = x0 + 1 < iw ? x0 + 1 : iw - 1;
            double fx = sx - x0;
            double top = in[(size_t)y0 * iw + x0] * (1 - fx) + in[(size_t)y0 * iw + x1] * fx;
            double bot = in[(size_t)y1 * iw + x0] * (1 - fx) + in[(size_t)y1 * iw + x1] * fx;
            out[(size_t)y * ow + x] = (float)((top * (1 - fy) + bot * fy) * scale);
        }
    }
}
