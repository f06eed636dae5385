#include "stereo/steps.h"

#include <math.h>
#include <stdlib.h>

#include "core/rng.h"
#include "data/stereo_augment.h"

int stereo_steps_generated(const stereo_steps *s, int n)
{
    return s->folder && s->gen && s->mix > 0 ? (int)lround(s->mix * n) : 0;
}

manta_status stereo_steps_resize(stereo_batch *b, int h, int w, manta_err *err)
{
    if (h == b->height && w == b->width)
        return MANTA_OK;
    const int n = b->n, levels = b->levels;
    stereo_batch_free(b);
    return stereo_batch_alloc(b, n, h, w, levels, err);
}

manta_status stereo_steps_batch(const stereo_steps *s, long step, stereo_batch *b, manta_err *err)
{
    manta_rng rng;
    manta_rng_seed(&rng, s->seed, (uint64_t)step * 2 + 1);
    const int n_crops = s->folder ? 1 : stereo_space_n_crops(s->space);
    int h, w;
    stereo_space_crop(s->space, n_crops > 1 ? (int)manta_rng_below(&rng, (uint32_t)n_crops) : 0, &h,
                      &w);
    MANTA_TRY(stereo_steps_resize(b, h, w, err));
    const int n = b->n, gen = stereo_steps_generated(s, n);
    long *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    if (!idx)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "stereo steps: out of memory");
    for (int k = 0; k < n; k++)
        idx[k] =
            (long)(manta_rng_u32(&rng) % (uint32_t)(k < gen ? s->gen->count : s->train->count));
    stereo_aug_params aug;
    stereo_aug_params_default(&aug, h, w);
    manta_status st = MANTA_OK;
    if (gen > 0)
        st = stereo_batch_fill_range(b, s->gen, 0, gen, idx, &aug, &rng, err);
    if (st == MANTA_OK)
        st = stereo_batch_fill_range(b, s->train, gen, n - gen, idx + gen, &aug, &rng, err);
    free(idx);
    return st;
}
