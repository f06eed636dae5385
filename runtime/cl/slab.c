#include "cl/slab.h"

size_t mlayout_add(mlayout *l, size_t n)
{
    size_t off = l->total;
    l->total += (n + MLAYOUT_ALIGN - 1) / MLAYOUT_ALIGN * MLAYOUT_ALIGN;
    return off;
}

manta_status mslab_create(mcl_dev *d, mslab *s, size_t floats, const char *name)
{
    s->mem = NULL;
    s->floats = floats;
    s->name = name;
    manta_status st = mcl_alloc(d, floats * sizeof(float), name, &s->mem);
    if (st != MANTA_OK)
        return st;
    st = mcl_fill(d, mslab_view(s, 0), 0.0f, floats);
    if (st != MANTA_OK) {
        mcl_free(d, s->mem);
        s->mem = NULL;
    }
    return st;
}

void mslab_destroy(mcl_dev *d, mslab *s)
{
    mcl_free(d, s->mem);
    s->mem = NULL;
    s->floats = 0;
}
