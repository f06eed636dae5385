#include "cl/slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Keep @p v in *@p a (count *@p n, capacity *@p cap); false when out of host memory. */
static bool keep(void **a, size_t *n, size_t *cap, size_t size, const void *v)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 256;
        void *m = realloc(*a, c * size);
        if (!m)
            return false;
        *a = m, *cap = c;
    }
    memcpy((char *)*a + *n * size, v, size);
    (*n)++;
    return true;
}

static size_t add_life(mlayout *l, size_t n, unsigned first, unsigned last)
{
    size_t off = l->total;
    size_t len = (n + MLAYOUT_ALIGN - 1) / MLAYOUT_ALIGN * MLAYOUT_ALIGN;
    l->total += len;
    if (!l->record || l->cuts_lost)
        return off;
    void *cuts = l->cuts, *life = l->life;
    bool ok = keep(&cuts, &l->n_cuts, &l->cap_cuts, sizeof *l->cuts, &off);
    l->cuts = cuts;
    if (ok && l->lives) {
        mlayout_life t = {.off = off, .n = len, .first = first, .last = last};
        ok = keep(&life, &l->n_life, &l->cap_life, sizeof t, &t);
        l->life = life;
    }
    l->cuts_lost = !ok;
    return off;
}

size_t mlayout_add(mlayout *l, size_t n) { return add_life(l, n, l->phase, MLAYOUT_END); }
size_t mlayout_add_temp(mlayout *l, size_t n) { return add_life(l, n, l->phase, l->phase); }
size_t mlayout_add_always(mlayout *l, size_t n) { return add_life(l, n, 0, MLAYOUT_END); }
size_t mlayout_add_unused(mlayout *l, size_t n) { return add_life(l, n, 1, 0); }
void mlayout_phase(mlayout *l) { l->phase++; }

void mlayout_free(mlayout *l)
{
    free(l->cuts);
    l->cuts = NULL;
    l->n_cuts = l->cap_cuts = 0;
    free(l->life);
    l->life = NULL;
    l->n_life = l->cap_life = 0;
}

static bool holds(const mlayout_life *t) { return t->first <= t->last && t->n > 0; }

static bool overlap(const mlayout_life *a, const mlayout_life *b)
{
    return holds(a) && holds(b) && a->first <= b->last && b->first <= a->last;
}

/* A tensor to place: its size, birth and index in the layout. */
typedef struct pack_item {
    size_t n, off, i;
    unsigned first;
} pack_item;

/* The order of placement: largest first, then the earlier born, then layout order. */
static int by_size(const void *pa, const void *pb)
{
    const pack_item *a = pa, *b = pb;
    if (a->n != b->n)
        return a->n > b->n ? -1 : 1;
    if (a->first != b->first)
        return a->first < b->first ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* A planned place [lo, hi). */
typedef struct span {
    size_t lo, hi;
} span;

static int by_lo(const void *pa, const void *pb)
{
    const span *a = pa, *b = pb;
    if (a->lo != b->lo)
        return a->lo < b->lo ? -1 : 1;
    return a->hi < b->hi ? -1 : a->hi > b->hi;
}

void mlayout_pack_free(mlayout_pack *p)
{
    free(p->lo);
    free(p->at);
    free(p->life);
    free(p->cuts);
    memset(p, 0, sizeof *p);
}

manta_status mlayout_pack_plan(const mlayout *l, mlayout_pack *p)
{
    memset(p, 0, sizeof *p);
    const size_t n = l->n_life;
    if (!l->lives || l->cuts_lost || n == 0 || n != l->n_cuts)
        return MANTA_ERR_INVALID_ARG;
    pack_item *order = malloc(n * sizeof *order);
    span *busy = malloc(n * sizeof *busy);
    p->lo = malloc(n * sizeof *p->lo);
    p->at = malloc(n * sizeof *p->at);
    p->cuts = malloc(n * sizeof *p->cuts);
    p->life = malloc(n * sizeof *p->life);
    bool *placed = calloc(n, sizeof *placed);
    manta_status st = order && busy && p->lo && p->at && p->cuts && p->life && placed
                          ? MANTA_OK
                          : MANTA_ERR_NO_MEMORY;
    for (size_t i = 0; i < n && st == MANTA_OK; i++) {
        const mlayout_life *t = &l->life[i];
        order[i] = (pack_item){.n = t->n, .off = t->off, .i = i, .first = t->first};
        p->lo[i] = t->off, p->at[i] = 0, p->life[i] = *t;
    }
    if (st == MANTA_OK)
        qsort(order, n, sizeof *order, by_size);
    for (size_t k = 0; k < n && st == MANTA_OK; k++) {
        const size_t i = order[k].i;
        const mlayout_life *t = &l->life[i];
        if (!holds(t))
            continue;
        size_t m = 0;
        for (size_t j = 0; j < n; j++)
            if (placed[j] && overlap(t, &l->life[j]))
                busy[m++] = (span){p->at[j], p->at[j] + l->life[j].n};
        qsort(busy, m, sizeof *busy, by_lo);
        size_t at = 0;
        for (size_t j = 0; j < m && busy[j].lo < at + t->n; j++)
            at = busy[j].hi > at ? busy[j].hi : at;
        p->at[i] = at;
        placed[i] = true;
        p->total = at + t->n > p->total ? at + t->n : p->total;
    }
    if (st == MANTA_OK) { /* cuts: the places' starts that no place spans */
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (placed[i])
                busy[m++] = (span){p->at[i], p->at[i] + l->life[i].n};
        qsort(busy, m, sizeof *busy, by_lo);
        size_t end = 0;
        for (size_t j = 0; j < m; j++) {
            if (busy[j].lo >= end && (!p->n_cuts || p->cuts[p->n_cuts - 1] != busy[j].lo))
                p->cuts[p->n_cuts++] = busy[j].lo;
            end = busy[j].hi > end ? busy[j].hi : end;
        }
        p->n = n;
    }
    free(order);
    free(busy);
    free(placed);
    if (st != MANTA_OK)
        mlayout_pack_free(p);
    return st;
}

size_t mlayout_pack_map(const mlayout_pack *p, size_t off)
{
    if (!p->n || off < p->lo[0])
        return off;
    size_t lo = 0, hi = p->n - 1; /* the last tensor starting at or before off */
    while (lo < hi) {
        size_t mid = (lo + hi + 1) / 2;
        if (p->lo[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return p->at[lo] + (off - p->lo[lo]);
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
