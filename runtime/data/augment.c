#include "data/augment.h"

#include <stdlib.h>
#include <string.h>

#include "data/resample.h"

void data_aug_params_default(aug_params *p, aug_mode mode, int channels)
{
    static const float im_mean[3] = AUG_IMAGENET_MEAN, im_std[3] = AUG_IMAGENET_STD;
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->pad = AUG_DEFAULT_PAD;
    p->pad_kind = AUG_PAD_ZERO;
    p->flip = true;
    for (int c = 0; c < 3; c++) {
        p->mean[c] = channels == 1 ? IDX_FASHION_MEAN : im_mean[c];
        p->std[c] = channels == 1 ? IDX_FASHION_STD : im_std[c];
    }
}

void data_aug_sample_view(const aug_params *p, int h, int w, manta_rng *rng, aug_view *v)
{
    int side = h < w ? h : w;
    v->side = side;
    if (p->mode != AUG_TRAIN) {
        v->y0 = (h - side) / 2;
        v->x0 = (w - side) / 2;
        v->flip = false;
        return;
    }
    int pad = p->pad > 0 ? p->pad : 0;
    v->y0 = (int)manta_rng_below(rng, (uint32_t)(h + 2 * pad - side + 1)) - pad;
    v->x0 = (int)manta_rng_below(rng, (uint32_t)(w + 2 * pad - side + 1)) - pad;
    v->flip = p->flip ? (manta_rng_u32(rng) >> 31) != 0 : false;
}

static manta_status check_params(const aug_params *p, int c, int r, manta_err *err)
{
    if (c != 1 && c != 3)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "augment: channels is %d (must be 1 or 3)",
                             c);
    if (r < 1 || r > AUG_MAX_RESOLUTION)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "augment: resolution %d is outside [1, %d]", r, AUG_MAX_RESOLUTION);
    if (p->pad < 0 || p->pad > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "augment: pad is %d (must be >= 0)",
                             p->pad);
    for (int ch = 0; ch < c; ch++)
        if (!(p->std[ch] > 0.0f))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "augment: std[%d] is %g (must be > 0)",
                                 ch, (double)p->std[ch]);
    return MANTA_OK;
}

/* Working memory reused across the images of a batch. */
typedef struct scratch {
    rs_taps taps; /* side -> r, shared by both axes (the view is square) */
    int side, r;  /* what taps was made for (0: none) */
    float *tmp;   /* (side, c, r) after the horizontal pass */
    size_t tmp_cap;
} scratch;

static void scratch_free(scratch *s)
{
    data_rs_taps_free(&s->taps);
    free(s->tmp);
    memset(s, 0, sizeof *s);
}

static manta_status scratch_prepare(scratch *s, int side, int c, int r, manta_err *err)
{
    if (s->side != side || s->r != r) {
        data_rs_taps_free(&s->taps);
        s->side = s->r = 0;
        manta_status st = data_rs_taps_make(&s->taps, side, r, err);
        if (st != MANTA_OK)
            return st;
        s->side = side;
        s->r = r;
    }
    size_t need = (size_t)side * c * r;
    if (need > s->tmp_cap) {
        float *t = realloc(s->tmp, need * sizeof *t);
        if (!t)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                 "augment: out of memory for a %dx%d view", side, r);
        s->tmp = t;
        s->tmp_cap = need;
    }
    return MANTA_OK;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The view must lie inside the image padded by p->pad on every side. */
static manta_status check_view(const aug_params *p, int h, int w, const aug_view *v, manta_err *err)
{
    int pad = p->pad;
    if (v->side < 1 || v->y0 < -pad || v->x0 < -pad || v->y0 + v->side > h + pad ||
        v->x0 + v->side > w + pad)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "augment: view (y0 %d, x0 %d, side %d) leaves the %dx%d image padded "
                             "by %d",
                             v->y0, v->x0, v->side, h, w, pad);
    return MANTA_OK;
}

/* Render with prepared scratch (taps for v->side -> r). */
static void render(const aug_params *p, const uint8_t *img, int h, int w, int c, const aug_view *v,
                   int r, scratch *s, float *out)
{
    const rs_taps *t = &s->taps;
    const int side = v->side, T = t->taps;
    const bool edge = p->pad_kind == AUG_PAD_EDGE;
    /* Horizontal pass: every row of the view -> (side, c, r). */
    for (int j = 0; j < side; j++) {
        int y = v->y0 + j;
        float *trow = s->tmp + (size_t)j * c * r;
        if (y < 0 || y >= h) {
            if (!edge) {
                memset(trow, 0, (size_t)c * r * sizeof *trow);
                continue;
            }
            y = clampi(y, 0, h - 1);
        }
        const uint8_t *row = img + (size_t)y * w * c;
        for (int o = 0; o < r; o++) {
            const float *wt = t->w + (size_t)o * T;
            const int xs = v->x0 + t->first[o];
            const int dst = v->flip ? r - 1 - o : o;
            for (int ch = 0; ch < c; ch++) {
                float acc = 0;
                if (xs >= 0 && xs + T <= w) { /* fully inside: the common case */
                    const uint8_t *px = row + (size_t)xs * c + ch;
                    for (int k = 0; k < T; k++)
                        acc += wt[k] * px[k * c];
                } else {
                    for (int k = 0; k < T; k++) {
                        int x = xs + k;
                        if (x < 0 || x >= w) {
                            if (!edge)
                                continue;
                            x = clampi(x, 0, w - 1);
                        }
                        acc += wt[k] * row[(size_t)x * c + ch];
                    }
                }
                trow[(size_t)ch * r + dst] = acc;
            }
        }
    }
    /* Vertical pass and normalisation: (side, c, r) -> (c, r, r). */
    for (int ch = 0; ch < c; ch++) {
        const float scale = 1.0f / (255.0f * p->std[ch]), shift = p->mean[ch] / p->std[ch];
        float *plane = out + (size_t)ch * r * r;
        for (int o = 0; o < r; o++) {
            const float *wt = t->w + (size_t)o * T;
            const float *base = s->tmp + (size_t)t->first[o] * c * r + (size_t)ch * r;
            float *orow = plane + (size_t)o * r;
            for (int x = 0; x < r; x++) {
                float acc = 0;
                for (int k = 0; k < T; k++)
                    acc += wt[k] * base[(size_t)k * c * r + x];
                orow[x] = acc * scale - shift;
            }
        }
    }
}

manta_status data_aug_render(const aug_params *p, const uint8_t *img, int h, int w, int c,
                             const aug_view *v, int r, float *out, manta_err *err)
{
    manta_status st = check_params(p, c, r, err);
    if (st == MANTA_OK && (h < 1 || w < 1))
        st = manta_err_set(err, MANTA_ERR_INVALID_ARG, "augment: image is %dx%d", h, w);
    if (st == MANTA_OK)
        st = check_view(p, h, w, v, err);
    if (st != MANTA_OK)
        return st;
    scratch s = {0};
    st = scratch_prepare(&s, v->side, c, r, err);
    if (st == MANTA_OK)
        render(p, img, h, w, c, v, r, &s, out);
    scratch_free(&s);
    return st;
}

manta_status data_aug_batch(const aug_params *p, const dataset *d, const int *index, int n, int r,
                            manta_rng *rng, float *images, float *labels, manta_err *err)
{
    const int c = d->channels;
    manta_status st = check_params(p, c, r, err);
    if (st != MANTA_OK)
        return st;
    if (n < 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "augment: batch of %d images", n);
    for (int b = 0; b < n; b++)
        if (index[b] < 0 || index[b] >= d->count)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "augment: image index %d at batch position %d is outside [0, %d)",
                                 index[b], b, d->count);
    scratch s = {0};
    const size_t per = (size_t)c * r * r;
    for (int b = 0; b < n && st == MANTA_OK; b++) {
        const int i = index[b];
        const int h = d->height[i], w = d->width[i];
        aug_view v;
        data_aug_sample_view(p, h, w, rng, &v);
        st = scratch_prepare(&s, v.side, c, r, err);
        if (st != MANTA_OK)
            break;
        render(p, dataset_image(d, i), h, w, c, &v, r, &s, images + (size_t)b * per);
        if (labels)
            labels[b] = (float)d->labels[i];
    }
    scratch_free(&s);
    return st;
}
