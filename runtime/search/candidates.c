#include "search/candidates.h"

manta_status search_candidate_measure(void *ctx, const ofa_arch *a, evo_figures *f, manta_err *err)
{
    search_candidates *c = ctx;
    MANTA_TRY(lat_predict(c->lut, a, &f->v[EVO_LATENCY], err));
    ofa_desc d;
    MANTA_TRY(ofa_describe(c->space, a, &d, err));
    f->v[EVO_MACS] = d.macs;
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
    return accp_predict(c->acc, a, acc, err);
}
