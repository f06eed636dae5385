#include "data/stereo_pair.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

manta_status stereo_pair_alloc(stereo_pair *p, int height, int width, manta_err *err)
{
    memset(p, 0, sizeof *p);
    if (height < 1 || width < 1 || height > STEREO_MAX_SIDE || width > STEREO_MAX_SIDE)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo pair: size %dx%d is outside [1, %d] per side", width, height,
                             STEREO_MAX_SIDE);
    size_t n = (size_t)height * width;
    p->left = calloc(n * STEREO_CHANNELS, sizeof *p->left);
    p->right = calloc(n * STEREO_CHANNELS, sizeof *p->right);
    p->disp = calloc(n, sizeof *p->disp);
    p->mask = calloc(n, sizeof *p->mask);
    if (!p->left || !p->right || !p->disp || !p->mask) {
        stereo_pair_free(p);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                             "stereo pair: out of memory for %dx%d pixels", width, height);
    }
    p->height = height;
    p->width = width;
    return MANTA_OK;
}

void stereo_pair_free(stereo_pair *p)
{
    if (!p)
        return;
    free(p->left);
    free(p->right);
    free(p->disp);
    free(p->mask);
    memset(p, 0, sizeof *p);
}

void stereo_gamma_init(stereo_gamma *g, float gamma)
{
    if (!(gamma > 0.0f))
        gamma = 1.0f;
    for (int k = 0; k <= STEREO_GAMMA_SEGMENTS; k++)
        g->v[k] = gamma == 1.0f ? (float)k / STEREO_GAMMA_SEGMENTS
                                : powf((float)k / STEREO_GAMMA_SEGMENTS, gamma);
    g->v[STEREO_GAMMA_SEGMENTS + 1] = 1.0f;
}

void stereo_tone(float *x, size_t n, float gain, float bias, const stereo_gamma *g)
{
    for (size_t i = 0; i < n; i++)
        x[i] = stereo_gamma_apply(g, gain * x[i] + bias);
}
