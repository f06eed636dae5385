#include "data/resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Largest axis accepted: JPEG's own limit. */
#define RS_MAX_SIDE 65535

/* Input window [lo, hi) of output o: the samples the triangle can reach. */
static void window(double c, double support, int in, int *lo, int *hi)
{
    int a = (int)floor(c - support + 0.5), b = (int)floor(c + support + 0.5);
    *lo = a < 0 ? 0 : a;
    *hi = b > in ? in : b;
    if (*hi <= *lo) { /* cannot happen for in, out > 0; keep one sample */
        *lo = (int)fmin(fmax(floor(c), 0), in - 1);
        *hi = *lo + 1;
    }
}

manta_status data_rs_taps_make(rs_taps *t, int in, int out, manta_err *err)
{
    memset(t, 0, sizeof *t);
    if (in <= 0 || out <= 0 || in > RS_MAX_SIDE || out > RS_MAX_SIDE)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "resample: sizes %d -> %d out of range",
                             in, out);
    const double scale = (double)in / out;
    const double fs = scale > 1.0 ? scale : 1.0; /* filter scale = support of the triangle */
    int taps = 1;
    for (int o = 0; o < out; o++) {
        int lo, hi;
        window((o + 0.5) * scale, fs, in, &lo, &hi);
        if (hi - lo > taps)
            taps = hi - lo;
    }
    t->first = malloc((size_t)out * sizeof *t->first);
    t->w = calloc((size_t)out * taps, sizeof *t->w);
    if (!t->first || !t->w) {
        data_rs_taps_free(t);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "resample: out of memory for %d taps",
                             out * taps);
    }
    t->out = out;
    t->taps = taps;
    for (int o = 0; o < out; o++) {
        const double c = (o + 0.5) * scale;
        int lo, hi;
        window(c, fs, in, &lo, &hi);
        /* The window [first, first + taps) holds [lo, hi) and stays inside [0, in),
         * so readers may touch every tap; taps outside [lo, hi) weigh 0. */
        t->first[o] = lo + taps <= in ? lo : in - taps;
        double sum = 0;
        for (int i = lo; i < hi; i++)
            sum += fmax(0.0, 1.0 - fabs(i + 0.5 - c) / fs);
        float *w = t->w + (size_t)o * taps;
        for (int i = lo; i < hi; i++) {
            double x = fmax(0.0, 1.0 - fabs(i + 0.5 - c) / fs);
            w[i - t->first[o]] = (float)(sum > 0 ? x / sum : 1.0 / (hi - lo));
        }
    }
    return MANTA_OK;
}

void data_rs_taps_free(rs_taps *t)
{
    if (!t)
        return;
    free(t->first);
    free(t->w);
    memset(t, 0, sizeof *t);
}

static uint8_t to_u8(float v)
{
    v += 0.5f;
    if (v <= 0.0f)
        return 0;
    if (v >= 255.0f)
        return 255;
    return (uint8_t)v;
}

manta_status data_rs_resize_u8(const uint8_t *src, int h, int w, int c, uint8_t *dst, int oh,
                               int ow, manta_err *err)
{
    rs_taps tx, ty;
    manta_status st = data_rs_taps_make(&tx, w, ow, err);
    if (st != MANTA_OK)
        return st;
    st = data_rs_taps_make(&ty, h, oh, err);
    if (st != MANTA_OK) {
        data_rs_taps_free(&tx);
        return st;
    }
    float *tmp = malloc((size_t)h * ow * c * sizeof *tmp); /* (h, ow, c) */
    if (!tmp) {
        data_rs_taps_free(&tx);
        data_rs_taps_free(&ty);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "resample: out of memory for %dx%d", h, ow);
    }
    for (int y = 0; y < h; y++) {
        const uint8_t *row = src + (size_t)y * w * c;
        float *trow = tmp + (size_t)y * ow * c;
        for (int o = 0; o < ow; o++) {
            const float *wt = tx.w + (size_t)o * tx.taps;
            const uint8_t *p = row + (size_t)tx.first[o] * c;
            for (int ch = 0; ch < c; ch++) {
                float s = 0;
                for (int k = 0; k < tx.taps; k++)
                    s += wt[k] * p[k * c + ch];
                trow[o * c + ch] = s;
            }
        }
    }
    const size_t rowlen = (size_t)ow * c;
    for (int o = 0; o < oh; o++) {
        const float *wt = ty.w + (size_t)o * ty.taps;
        const float *base = tmp + (size_t)ty.first[o] * rowlen;
        uint8_t *drow = dst + (size_t)o * rowlen;
        for (size_t j = 0; j < rowlen; j++) {
            float s = 0;
            for (int k = 0; k < ty.taps; k++)
                s += wt[k] * base[(size_t)k * rowlen + j];
            drow[j] = to_u8(s);
        }
    }
    free(tmp);
    data_rs_taps_free(&tx);
    data_rs_taps_free(&ty);
    return MANTA_OK;
}
