#include "search/candidates.h"

#include <stdlib.h>

manta_status search_candidate_measure(void *ctx, const ofa_arch *a, evo_figures *f, manta_err *err)
{
    search_candidates *c = ctx;
    MANTA_TRY(lat_predict(c->lut, a, &f->v[EVO_LATENCY], err));
    if (c->stereo) {
        stereo_desc *d = malloc(sizeof *d); /* about 20 KB: not on the stack */
        if (!d)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
        manta_status st = stereo_describe(c->stereo, a, d, err);
        f->v[EVO_MACS] = d->macs;
        free(d);
        MANTA_TRY(st);
    } else {
        ofa_desc d;
        MANTA_TRY(ofa_describe(c->space, a, &d, err));
        f->v[EVO_MACS] = d.macs;
    }
    if (c->need_sizes) {
        size_t arena, file;
        MANTA_TRY(search_sizes_get(&c->sizes, a, &arena, &file, err));
        f->v[EVO_ARENA] = (double)arena;
        f->v[EVO_FLASH] = (double)file;
    }
    return MANTA_OK;
}

manta_status search_candidate_fitness(void *ctx, const ofa_arch *a, double *acc, manta_err *err)
{
    const search_candidates *c = ctx;
    MANTA_TRY(accp_predict(c->acc, a, acc, err));
    if (c->acc->stereo)
        *acc = -*acc; /* minus the predicted EPE */
    return MANTA_OK;
}
