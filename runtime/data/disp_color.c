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
