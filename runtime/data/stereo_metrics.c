#include "data/stereo_metrics.h"

#include <math.h>
#include <string.h>

#include "data/disp_color.h"

static void add_pixel(stereo_err_sums *s, double err, double gt)
{
    s->abs_err += err;
    s->pixels++;
    s->bad1 += err > 1.0;
    s->bad2 += err > 2.0;
    s->bad3 += err > 3.0;
    s->d1 += err > 3.0 && err > 0.05 * gt;
}

void stereo_metrics_add(stereo_metrics *m, const float *pred, const stereo_pair *gt)
{
    size_t n = (size_t)gt->height * (size_t)gt->width;
    for (size_t i = 0; i < n; i++) {
        if (!(gt->mask[i] & STEREO_VALID))
            continue;
        double err = isfinite(pred[i]) ? fabs((double)pred[i] - gt->disp[i]) : INFINITY;
        add_pixel(&m->all, err, gt->disp[i]);
        if (gt->has_noc && (gt->mask[i] & STEREO_NOC))
            add_pixel(&m->noc, err, gt->disp[i]);
    }
    m->pairs++;
    m->pairs_noc += gt->has_noc;
}

static void scores(const stereo_err_sums *s, stereo_scores *out)
{
    out->pixels = s->pixels;
    if (s->pixels == 0) {
        out->epe = out->bad1 = out->bad2 = out->bad3 = out->d1 = NAN;
        return;
    }
    double n = (double)s->pixels;
    out->epe = s->abs_err / n;
    out->bad1 = 100.0 * (double)s->bad1 / n;
    out->bad2 = 100.0 * (double)s->bad2 / n;
    out->bad3 = 100.0 * (double)s->bad3 / n;
    out->d1 = 100.0 * (double)s->d1 / n;
}

void stereo_metrics_scores(const stereo_metrics *m, stereo_scores *all, stereo_scores *noc)
{
    scores(&m->all, all);
    scores(&m->noc, noc);
}

manta_status stereo_disp_downsample(const float *disp, const uint8_t *mask, int height, int width,
                                    int level, float *out, manta_err *err)
{
    if (level < 0 || level > 15)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "disparity pyramid: level %d is outside [0, 15]", level);
    int f = 1 << level;
    if (height < f || width < f || height % f || width % f)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "disparity pyramid: %dx%d is not a multiple of %d (level %d)", width,
                             height, f, level);
    int oh = height / f, ow = width / f;
    for (int y = 0; y < oh; y++)
        for (int x = 0; x < ow; x++) {
            double sum = 0.0;
            int count = 0;
            for (int dy = 0; dy < f; dy++) {
                size_t row = (size_t)(y * f + dy) * (size_t)width + (size_t)(x * f);
                for (int dx = 0; dx < f; dx++)
                    if (mask[row + (size_t)dx] & STEREO_VALID) {
                        sum += disp[row + (size_t)dx];
                        count++;
                    }
            }
            out[(size_t)y * (size_t)ow + (size_t)x] = count ? (float)(sum / count) : 0.0f;
        }
    return MANTA_OK;
}

/* The colour of t in [0, 1] on a piecewise-linear map through the stops. */
void stereo_disp_colorize(const float *disp, const uint8_t *mask, int height, int width,
                          float max_disp, uint8_t *rgb)
{
    size_t count = (size_t)height * (size_t)width;
    data_disp_colorize(disp, count, max_disp, rgb);
    for (size_t i = 0; mask && i < count; i++)
        if (!(mask[i] & STEREO_VALID))
            memset(rgb + 3 * i, 0, 3);
}

void stereo_error_colorize(const float *pred, const stereo_pair *gt, uint8_t *rgb)
{
    /* error bands: below 1, 1-2, 2-3, 3-5, over 5 px */
    static const double upper[] = {1.0, 2.0, 3.0, 5.0};
    static const uint8_t band[][3] = {
        {0, 0, 0}, {40, 90, 255}, {40, 200, 60}, {250, 220, 0}, {230, 30, 30}};
    static const uint8_t no_gt[3] = {64, 64, 64};
    size_t count = (size_t)gt->height * (size_t)gt->width;
    for (size_t i = 0; i < count; i++) {
        uint8_t *o = rgb + 3 * i;
        if (!(gt->mask[i] & STEREO_VALID)) {
            memcpy(o, no_gt, 3);
            continue;
        }
        double err = isfinite(pred[i]) ? fabs((double)pred[i] - gt->disp[i]) : INFINITY;
        int b = 0;
        while (b < 4 && err >= upper[b])
            b++;
        memcpy(o, band[b], 3);
    }
}
