#include "data/stereo_batch.h"

#include <stdlib.h>
#include <string.h>

#include "data/stereo_metrics.h"

void stereo_batch_free(stereo_batch *b)
{
    free(b->left);
    free(b->right);
    free(b->mask);
    for (int l = 0; l < STEREO_BATCH_MAX_LEVELS; l++)
        free(b->gt[l]);
    stereo_pair_free(&b->pair);
    stereo_pair_free(&b->crop);
    memset(b, 0, sizeof *b);
}

manta_status stereo_batch_alloc(stereo_batch *b, int n, int height, int width, int levels,
                                manta_err *err)
{
    memset(b, 0, sizeof *b);
    if (n < 1 || levels < 1 || levels > STEREO_BATCH_MAX_LEVELS || height < 1 || width < 1 ||
        height > STEREO_MAX_SIDE || width > STEREO_MAX_SIDE)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo batch: %d pairs of %dx%d with %d levels is out of range", n,
                             width, height, levels);
    int f = 1 << (levels - 1);
    if (height % f || width % f)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo batch: %dx%d is not a multiple of %d (%d scale levels)", width,
                             height, f, levels);
    b->n = n, b->height = height, b->width = width, b->levels = levels;
    size_t plane = (size_t)height * (size_t)width;
    b->left = malloc((size_t)n * STEREO_CHANNELS * plane * sizeof(float));
    b->right = malloc((size_t)n * STEREO_CHANNELS * plane * sizeof(float));
    b->mask = malloc((size_t)n * plane);
    bool ok = b->left && b->right && b->mask;
    for (int l = 0; l < levels && ok; l++) {
        b->gt[l] = malloc((size_t)n * (plane >> (2 * l)) * sizeof(float));
        ok = b->gt[l] != NULL;
    }
    manta_status st =
        ok ? stereo_pair_alloc(&b->crop, height, width, err)
           : manta_err_set(err, MANTA_ERR_NO_MEMORY,
                           "stereo batch: out of memory for %d pairs of %dx%d", n, width, height);
    if (st != MANTA_OK)
        stereo_batch_free(b);
    return st;
}

/* Pair @p i of @p src, at the batch's size, into b->crop (augmented when @p aug). */
static manta_status one_pair(stereo_batch *b, const stereo_source *src, long i,
                             const stereo_aug_params *aug, manta_rng *rng, manta_err *err)
{
    stereo_pair *raw = &b->pair;
    if (src->kind == STEREO_SOURCE_SYNTH) {
        stereo_synth_opts o = src->synth;
        o.width = b->width, o.height = b->height;
        if (!aug) /* as generated */
            return stereo_synth_generate(&o, src->base + (uint64_t)i, &b->crop, err);
        if (raw->height != b->height || raw->width != b->width) {
            stereo_pair_free(raw);
            MANTA_TRY(stereo_pair_alloc(raw, b->height, b->width, err));
        }
        MANTA_TRY(stereo_synth_generate(&o, src->base + (uint64_t)i, raw, err));
    } else {
        if (!aug)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "stereo batch: pairs of a folder need a crop (augmentation)");
        stereo_pair_free(raw);
        MANTA_TRY(stereo_folder_load(src->set, (int)i, raw, err));
        if (raw->height < b->height || raw->width < b->width)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "%s: %dx%d is smaller than the batch's %dx%d", src->set->left[i],
                                 raw->width, raw->height, b->width, b->height);
    }
    stereo_aug_params a = *aug;
    a.crop_h = b->height, a.crop_w = b->width;
    return stereo_aug_apply(&a, raw, rng, &b->crop, err);
}

manta_status stereo_batch_fill_range(stereo_batch *b, const stereo_source *src, int first,
                                     int count, const long *idx, const stereo_aug_params *aug,
                                     manta_rng *rng, manta_err *err)
{
    if (first < 0 || count < 0 || first > b->n || count > b->n - first)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo batch: pairs %d .. %d of a batch of %d", first,
                             first + count - 1, b->n);
    if (src->count < 1 || (src->kind == STEREO_SOURCE_FOLDER && !src->set))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "stereo batch: the source has no pairs");
    size_t plane = (size_t)b->height * (size_t)b->width, views = STEREO_CHANNELS * plane;
    if (first == 0)
        b->has_noc = true;
    for (int j = 0; j < count; j++) {
        const int k = first + j;
        long i = idx[j] % src->count;
        i = i < 0 ? i + src->count : i;
        MANTA_TRY(one_pair(b, src, i, aug, rng, err));
        const stereo_pair *p = &b->crop;
        memcpy(b->left + (size_t)k * views, p->left, views * sizeof(float));
        memcpy(b->right + (size_t)k * views, p->right, views * sizeof(float));
        memcpy(b->mask + (size_t)k * plane, p->mask, plane);
        b->has_noc = b->has_noc && p->has_noc;
        for (int l = 0; l < b->levels; l++)
            MANTA_TRY(stereo_disp_downsample(p->disp, p->mask, b->height, b->width, l,
                                             b->gt[l] + (size_t)k * (plane >> (2 * l)), err));
        if (k < (int)(sizeof b->index / sizeof b->index[0]))
            b->index[k] = i;
    }
    return MANTA_OK;
}

manta_status stereo_batch_fill(stereo_batch *b, const stereo_source *src, const long *idx,
                               const stereo_aug_params *aug, manta_rng *rng, manta_err *err)
{
    return stereo_batch_fill_range(b, src, 0, b->n, idx, aug, rng, err);
}
