#include "data/stereo_augment.h"

#include <math.h>
#include <string.h>

void stereo_aug_params_default(stereo_aug_params *p, int crop_h, int crop_w)
{
    memset(p, 0, sizeof *p);
    p->crop_h = crop_h;
    p->crop_w = crop_w;
    p->brightness = 0.3f;
    p->contrast = 0.3f;
    p->gamma = 0.2f;
    p->per_view = true;
    p->vflip = false;
}

static manta_status check(const stereo_aug_params *p, const stereo_pair *in, const stereo_pair *out,
                          manta_err *err)
{
    if (!(p->brightness >= 0.0f && p->brightness <= 1.0f) ||
        !(p->contrast >= 0.0f && p->contrast <= 1.0f) || !(p->gamma >= 0.0f && p->gamma <= 1.0f))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo augment: brightness %g, contrast %g, gamma %g (each must be "
                             "in [0, 1])",
                             (double)p->brightness, (double)p->contrast, (double)p->gamma);
    if (!in || !in->left || !in->right || !in->disp || !in->mask)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "stereo augment: empty input pair");
    if (p->crop_h < 1 || p->crop_w < 1 || p->crop_h > in->height || p->crop_w > in->width)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo augment: crop %dx%d does not fit in the %dx%d pair", p->crop_w,
                             p->crop_h, in->width, in->height);
    if (!out || !out->left || !out->right || !out->disp || !out->mask || out->height != p->crop_h ||
        out->width != p->crop_w)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo augment: the output pair is %dx%d, the crop %dx%d",
                             out ? out->width : 0, out ? out->height : 0, p->crop_w, p->crop_h);
    return MANTA_OK;
}

/* Brightness, contrast and gamma drawn for one view. */
typedef struct jitter {
    float b, c, g;
} jitter;

static jitter draw(const stereo_aug_params *p, manta_rng *rng)
{
    jitter j;
    j.b = 1.0f + p->brightness * (2.0f * manta_rng_uniform(rng) - 1.0f);
    j.c = 1.0f + p->contrast * (2.0f * manta_rng_uniform(rng) - 1.0f);
    j.g = expf(p->gamma * (2.0f * manta_rng_uniform(rng) - 1.0f));
    return j;
}

static void apply_jitter(float *img, size_t plane, jitter j)
{
    double sum = 0.0;
    for (size_t i = 0; i < STEREO_CHANNELS * plane; i++)
        sum += img[i];
    const float m = (float)(sum / (double)(STEREO_CHANNELS * plane));
    stereo_gamma g;
    stereo_gamma_init(&g, j.g);
    stereo_tone(img, STEREO_CHANNELS * plane, j.b * j.c, j.b * m * (1.0f - j.c), &g);
}

manta_status stereo_aug_apply(const stereo_aug_params *p, const stereo_pair *in, manta_rng *rng,
                              stereo_pair *out, manta_err *err)
{
    MANTA_TRY(check(p, in, out, err));
    const int H = in->height, W = in->width, h = p->crop_h, w = p->crop_w;
    const int y0 = (int)manta_rng_below(rng, (uint32_t)(H - h + 1));
    const int x0 = (int)manta_rng_below(rng, (uint32_t)(W - w + 1));
    const bool flip = p->vflip && (manta_rng_u32(rng) >> 31) != 0;
    const jitter jl = draw(p, rng);
    const jitter jr = p->per_view ? draw(p, rng) : jl;
    const size_t ip = (size_t)H * W, op = (size_t)h * w;
    for (int y = 0; y < h; y++) {
        const size_t src = (size_t)(y0 + y) * W + x0;
        const size_t dst = (size_t)(flip ? h - 1 - y : y) * w;
        for (int c = 0; c < STEREO_CHANNELS; c++) {
            memcpy(out->left + c * op + dst, in->left + c * ip + src, sizeof(float) * w);
            memcpy(out->right + c * op + dst, in->right + c * ip + src, sizeof(float) * w);
        }
        memcpy(out->disp + dst, in->disp + src, sizeof(float) * w);
        memcpy(out->mask + dst, in->mask + src, (size_t)w);
    }
    out->has_noc = in->has_noc;
    apply_jitter(out->left, op, jl);
    apply_jitter(out->right, op, jr);
    return MANTA_OK;
}
