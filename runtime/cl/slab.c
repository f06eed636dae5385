#include "cl/slab.h"

#include <stdint.h>
#include <stdlib.h>

size_t mlayout_add(mlayout *l, size_t n)
{
    size_t off = l->total;
    l->total += (n + MLAYOUT_ALIGN - 1) / MLAYOUT_ALIGN * MLAYOUT_ALIGN;
    if (l->record && !l->cuts_lost) {
        if (l->n_cuts == l->cap_cuts) {
            size_t cap = l->cap_cuts ? 2 * l->cap_cuts : 256;
            size_t *c = realloc(l->cuts, cap * sizeof *c);
            if (!c) {
                l->cuts_lost = true;
                return off;
            }
            l->cuts = c, l->cap_cuts = cap;
        }
        l->cuts[l->n_cuts++] = off;
    }
    return off;
}

void mlayout_free(mlayout *l)
{
    free(l->cuts);
    l->cuts = NULL;
    l->n_cuts = l->cap_cuts = 0;
}

static manta_status create_one(mcl_dev *d, cl_mem *mem, size_t floats, const char *name)
{
    *mem = NULL;
    manta_status st = mcl_alloc(d, floats * sizeof(float), name, mem);
    if (st != MANTA_OK)
        return st;
    mview v = {*mem, 0};
    st = mcl_fill(d, v, 0.0f, floats);
    if (st != MANTA_OK) {
        mcl_free(d, *mem);
        *mem = NULL;
    }
    return st;
}

manta_status mslab_create(mcl_dev *d, mslab *s, size_t floats, const char *name)
{
    s->floats = floats;
    s->name = name;
    s->n_pieces = 0;
    return create_one(d, &s->mem, floats, name);
}

int mslab_split(size_t floats, const size_t *cuts, size_t n_cuts, size_t max_piece, size_t *lo,
                size_t *too_long, size_t *too_long_floats)
{
    *too_long = *too_long_floats = 0;
    size_t start = 0, k = 0; /* k: the first cut after start */
    int n = 0;
    while (1) {
        if (n == MSLAB_MAX_PIECES)
            return 0;
        lo[n++] = start;
        if (floats - start <= max_piece)
            return n;
        while (k < n_cuts && cuts[k] <= start)
            k++;
        size_t best = start;
        while (k < n_cuts && cuts[k] - start <= max_piece)
            best = cuts[k++];
        if (best == start || best >= floats) {
            *too_long = start;
            *too_long_floats = (k < n_cuts && cuts[k] < floats ? cuts[k] : floats) - start;
            return 0;
        }
        start = best;
    }
}

size_t mcl_piece_floats(const mcl_dev *d)
{
    unsigned long long f = mcl_info(d)->max_alloc / sizeof(float);
    const unsigned long long cap = (unsigned long long)UINT32_MAX - 15;
    return (size_t)(f < cap ? f : cap);
}

manta_status mslab_create_split(mcl_dev *d, mslab *s, size_t floats, const size_t *cuts,
                                size_t n_cuts, size_t max_piece, const char *name)
{
    if (!max_piece)
        max_piece = mcl_piece_floats(d);
    if (floats <= max_piece)
        return mslab_create(d, s, floats, name);
    s->floats = floats;
    s->name = name;
    s->n_pieces = 0;
    s->mem = NULL;
    size_t bad, bad_floats;
    int n = mslab_split(floats, cuts, n_cuts, max_piece, s->piece_lo, &bad, &bad_floats);
    if (n == 0 && bad_floats)
        return manta_err_set(mcl_err(d), MANTA_ERR_DEVICE_MEMORY,
                             "device '%s': %s: %zu bytes at float %zu of %zu cannot be split (one "
                             "tensor, or the slots' shared gradient region) and exceed the largest "
                             "buffer of %zu bytes (the device's largest allocation, "
                             "CL_DEVICE_MAX_MEM_ALLOC_SIZE%s, or 2^32 floats); use a smaller batch "
                             "or resolution",
                             mcl_info(d)->name, name, bad_floats * sizeof(float), bad, floats,
                             max_piece * sizeof(float), mcl_info(d)->clamped[0] ? ", clamped" : "");
    if (n == 0)
        return manta_err_set(mcl_err(d), MANTA_ERR_DEVICE_MEMORY,
                             "device '%s': %s: %zu bytes would need more than %d buffers of at "
                             "most %zu bytes; use a smaller batch or resolution",
                             mcl_info(d)->name, name, floats * sizeof(float), MSLAB_MAX_PIECES,
                             max_piece * sizeof(float));
    for (int i = 0; i < n; i++) {
        size_t len = (i + 1 < n ? s->piece_lo[i + 1] : floats) - s->piece_lo[i];
        manta_status st = create_one(d, &s->piece[i], len, name);
        if (st != MANTA_OK)
            return st; /* mslab_destroy() releases the pieces made */
        s->n_pieces = i + 1;
        s->mem = s->piece[0];
    }
    s->mem = s->piece[0];
    return MANTA_OK;
}

void mslab_destroy(mcl_dev *d, mslab *s)
{
    if (s->n_pieces > 1) {
        for (int i = 0; i < s->n_pieces; i++)
            mcl_free(d, s->piece[i]);
    } else {
        mcl_free(d, s->mem);
    }
    s->mem = NULL;
    s->floats = 0;
    s->n_pieces = 0;
}
