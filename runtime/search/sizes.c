#include "search/sizes.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/tflite.h"
#include "profile/measure.h"
#include "profile/synth.h"

struct search_size_entry {
    ofa_arch arch;
    size_t arena, file;
    bool used;
};

/* FNV-1a over the architecture's bytes (ofa_arch is compared with memcmp, as here). */
static uint64_t arch_hash(const ofa_arch *a)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p = (const unsigned char *)a;
    for (size_t i = 0; i < sizeof *a; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

void search_sizes_init(search_sizes *c, const ofa_space *s, const xg_preprocess *pre)
{
    memset(c, 0, sizeof *c);
    c->space = s;
    c->pre = pre;
}

void search_sizes_init_stereo(search_sizes *c, const stereo_space *s)
{
    memset(c, 0, sizeof *c);
    c->stereo = s;
}

void search_sizes_free(search_sizes *c)
{
    if (!c)
        return;
    free(c->slot_);
    c->slot_ = NULL;
    c->n_ = c->cap_ = 0;
}

/* Double the slots (1024 at first) once half of them are used. */
static manta_status grow(search_sizes *c, manta_err *err)
{
    if (c->n_ * 2 < c->cap_)
        return MANTA_OK;
    size_t cap = c->cap_ ? c->cap_ * 2 : 1024;
    search_size_entry *n = calloc(cap, sizeof *n);
    if (!n)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
    for (size_t i = 0; i < c->cap_; i++)
        if (c->slot_[i].used) {
            size_t j = (size_t)arch_hash(&c->slot_[i].arch) & (cap - 1);
            while (n[j].used)
                j = (j + 1) & (cap - 1);
            n[j] = c->slot_[i];
        }
    free(c->slot_);
    c->slot_ = n;
    c->cap_ = cap;
    return MANTA_OK;
}

manta_status search_sizes_get(search_sizes *c, const ofa_arch *a, size_t *arena, size_t *file,
                              manta_err *err)
{
    MANTA_TRY(grow(c, err));
    size_t j = (size_t)arch_hash(a) & (c->cap_ - 1);
    while (c->slot_[j].used) {
        if (!memcmp(&c->slot_[j].arch, a, sizeof *a)) {
            *arena = c->slot_[j].arena;
            *file = c->slot_[j].file;
            return MANTA_OK;
        }
        j = (j + 1) & (c->cap_ - 1);
    }
    xgraph g;
    const synth_opts so = {0, true};
    /* a stereo file stores equal weight tensors once (the views' shared layers): zeros would
     * make distinct layers' tensors equal too, so a stereo graph gets random values */
    const synth_opts so_stereo = {1, false};
    /* int8: weights and calibration from seed 1, as manta-profile --int8 --arch (zeros would
     * give empty ranges) */
    const synth_opts so_int8 = {1, false};
    if (c->stereo && c->int8)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "search: int8 sizes are classification ones (no int8 stereo "
                             "export)");
    if (c->stereo)
        MANTA_TRY(prof_synth_stereo_graph(c->stereo, a, &so_stereo, &g, NULL, NULL, err));
    else
        MANTA_TRY(prof_synth_arch_graph(c->space, a, c->pre, c->int8 ? &so_int8 : &so, &g, err));
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report rep;
    manta_status st = c->int8 ? lat_int8_calibrate(&g, 1, err) : MANTA_OK;
    if (st == MANTA_OK)
        st = tflite_write(&g, &data, &size, &rep, err);
    xgraph_free(&g);
    free(data);
    if (st != MANTA_OK)
        return st;
    c->built++;
    c->slot_[j] = (search_size_entry){*a, rep.arena_bytes, rep.file_bytes, true};
    c->n_++;
    *arena = rep.arena_bytes;
    *file = rep.file_bytes;
    return MANTA_OK;
}
