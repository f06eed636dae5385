#include "profile/latency_table.h"

#include "core/fileio.h"
#include "core/rng.h"
#include "core/stats.h"
#include "export/mbv3_graph.h"
#include "export/stereo_graph.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keys come first in both keyed structs, so one index serves both. */
_Static_assert(offsetof(lat_layer, key) == 0, "lat_layer.key must be the first member");
_Static_assert(offsetof(lat_entry, key) == 0, "lat_entry.key must be the first member");

const char *lat_layer_type_name(lat_layer_type t)
{
    switch (t) {
    case LAT_STEM: return "Conv";
    case LAT_MBCONV: return "expanded_conv";
    case LAT_HEAD: return "Conv_1";
    case LAT_POOL: return "AvgPool2D";
    case LAT_MIX: return "Conv_2";
    case LAT_LOGITS: return "Logits";
    case LAT_CORR: return "Correlation";
    case LAT_REDIR: return "Redirect";
    case LAT_CONCAT: return "Concat";
    case LAT_DECONV: return "TransposeConv";
    case LAT_RESIZE: return "ResizeBilinear";
    case LAT_DEC_CONV: return "DecConv";
    case LAT_PRED: return "Pred";
    }
    return "?";
}

/* ---- key index: open addressing over an array of structs that start with a key ---- */

static uint64_t key_hash(const char *k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)k; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}

static const char *key_at(const void *base, size_t stride, size_t i)
{
    return (const char *)base + i * stride;
}

/* The slot holding @key, or the empty slot where it would go (n_slot is a power of 2). */
static size_t idx_probe(const uint32_t *slot, size_t n_slot, const void *base, size_t stride,
                        const char *key, bool *found)
{
    size_t mask = n_slot - 1, i = (size_t)key_hash(key) & mask;
    for (;;) {
        if (slot[i] == 0) {
            *found = false;
            return i;
        }
        if (!strcmp(key_at(base, stride, slot[i] - 1), key)) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* Rebuild the index of n items so that it stays at most half full after one more insert. */
static manta_status idx_reserve(uint32_t **slot, size_t *n_slot, const void *base, size_t stride,
                                size_t n, manta_err *err)
{
    if (*slot && 2 * (n + 1) <= *n_slot)
        return MANTA_OK;
    size_t ns = 64;
    while (ns < 2 * (n + 1))
        ns *= 2;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "latency table: out of memory for %zu keys",
                             n + 1);
    for (size_t i = 0; i < n; i++) {
        bool found;
        size_t at = idx_probe(s, ns, base, stride, key_at(base, stride, i), &found);
        s[at] = (uint32_t)(i + 1);
    }
    free(*slot);
    *slot = s;
    *n_slot = ns;
    return MANTA_OK;
}

/* ---- keys of a sub-network ---------------------------------------------------------- */

static void make_key(lat_layer *l)
{
    const char *t = lat_layer_type_name(l->type);
    switch (l->type) {
    case LAT_MBCONV:
        snprintf(
            l->key, sizeof l->key,
            "%s-input:%dx%dx%d-output:%dx%dx%d-expand:%d-kernel:%d-stride:%d-idskip:%d-se:%d-hs:%d",
            t, l->in_h, l->in_w, l->in_c, l->out_h, l->out_w, l->out_c, l->mid, l->kernel,
            l->stride, l->idskip, l->se, l->act == NN_ACT_HSWISH);
        break;
    case LAT_LOGITS:
        snprintf(l->key, sizeof l->key, "%s-input:%dx%dx%d-output:%d", t, l->in_h, l->in_w, l->in_c,
                 l->out_c);
        break;
    case LAT_CORR:
        snprintf(l->key, sizeof l->key, "%s-input:%dx%dx%d-output:%dx%dx%d-stride:%d", t, l->in_h,
                 l->in_w, l->in_c, l->out_h, l->out_w, l->out_c, l->corr_stride);
        break;
    case LAT_CONCAT: {
        char parts[48] = "";
        for (int i = 0, at = 0; i < l->n_in && at < (int)sizeof parts; i++)
            at +=
                snprintf(parts + at, sizeof parts - (size_t)at, "%s%d", i ? "+" : "", l->in_cs[i]);
        snprintf(l->key, sizeof l->key, "%s-input:%dx%dx%s-output:%dx%dx%d", t, l->in_h, l->in_w,
                 parts, l->out_h, l->out_w, l->out_c);
        break;
    }
    case LAT_DECONV:
    case LAT_DEC_CONV:
    case LAT_PRED:
        snprintf(l->key, sizeof l->key, "%s-input:%dx%dx%d-output:%dx%dx%d-kernel:%d%s", t, l->in_h,
                 l->in_w, l->in_c, l->out_h, l->out_w, l->out_c, l->kernel,
                 l->type == LAT_DECONV ? "-stride:2" : "");
        break;
    default:
        snprintf(l->key, sizeof l->key, "%s-input:%dx%dx%d-output:%dx%dx%d", t, l->in_h, l->in_w,
                 l->in_c, l->out_h, l->out_w, l->out_c);
        break;
    }
}

_Static_assert(LAT_MAX_ARCH_LAYERS >= MBV3_MAX_LAYERS, "a keyed layer per graph layer");
_Static_assert(LAT_MAX_ARCH_LAYERS >= SGRAPH_MAX_LAYERS, "a keyed layer per stereo layer");

manta_status lat_arch_layers(const ofa_space *s, const ofa_arch *a, lat_layer *out, int *n,
                             manta_err *err)
{
    static const lat_layer_type types[] = {
        [MBV3_STEM] = LAT_STEM, [MBV3_BLOCK] = LAT_MBCONV, [MBV3_HEAD] = LAT_HEAD,
        [MBV3_POOL] = LAT_POOL, [MBV3_MIX] = LAT_MIX,      [MBV3_CLASSIFIER] = LAT_LOGITS};
    *n = 0;
    mbv3_layer L[MBV3_MAX_LAYERS];
    int m = 0;
    MANTA_TRY(mbv3_arch_layers(s, a, L, &m, err));
    for (int i = 0; i < m; i++) {
        const mbv3_layer *g = &L[i];
        lat_layer *l = &out[i];
        memset(l, 0, sizeof *l);
        l->type = types[g->type];
        snprintf(l->where, sizeof l->where, "%s", g->where);
        l->r = a->r;
        l->in_h = g->in_h, l->in_w = g->in_w, l->in_c = g->in_c;
        l->out_h = g->out_h, l->out_w = g->out_w, l->out_c = g->out_c;
        l->mid = g->mid, l->kernel = g->kernel, l->stride = g->stride;
        l->has_expand = g->has_expand, l->idskip = g->idskip, l->se = g->se;
        l->se_mid = g->se_mid, l->act = g->act;
        make_key(l);
    }
    *n = m;
    return MANTA_OK;
}

/* The keyed layer of a stereo graph layer. */
static void from_sgraph(const sgraph_layer *g, int r, lat_layer *l)
{
    static const lat_layer_type types[] = {
        [SGRAPH_STEM] = LAT_STEM,       [SGRAPH_BLOCK] = LAT_MBCONV,  [SGRAPH_CORR] = LAT_CORR,
        [SGRAPH_REDIR] = LAT_REDIR,     [SGRAPH_CONCAT] = LAT_CONCAT, [SGRAPH_DECONV] = LAT_DECONV,
        [SGRAPH_UPSAMPLE] = LAT_RESIZE, [SGRAPH_CONV] = LAT_DEC_CONV, [SGRAPH_PRED] = LAT_PRED};
    memset(l, 0, sizeof *l);
    l->type = types[g->type];
    snprintf(l->where, sizeof l->where, "%s", g->where);
    l->r = r;
    l->in_h = g->in_h, l->in_w = g->in_w, l->in_c = g->in_c;
    l->out_h = g->out_h, l->out_w = g->out_w, l->out_c = g->out_c;
    l->kernel = g->kernel;
    l->stride = 1;
    l->n_in = g->n_in;
    for (int i = 0; i < g->n_in; i++)
        l->in_cs[i] = g->in_cs[i];
    if (g->type == SGRAPH_STEM || g->type == SGRAPH_BLOCK) {
        const mbv3_layer *e = &g->enc;
        l->mid = e->mid, l->stride = e->stride, l->has_expand = e->has_expand;
        l->idskip = e->idskip, l->se = e->se, l->se_mid = e->se_mid, l->act = e->act;
    }
    if (g->type == SGRAPH_CORR)
        l->stride = l->corr_stride = g->corr_stride;
    if (g->type == SGRAPH_DECONV)
        l->stride = 2;
    if (g->type == SGRAPH_REDIR || g->type == SGRAPH_CONV || g->type == SGRAPH_DECONV)
        l->act = NN_ACT_LEAKY_RELU;
    make_key(l);
}

manta_status lat_stereo_arch_layers(const stereo_space *s, const ofa_arch *a, lat_layer *out,
                                    int *n, manta_err *err)
{
    *n = 0;
    sgraph_layer *L = malloc(SGRAPH_MAX_LAYERS * sizeof *L);
    if (!L)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "latency keys: out of memory");
    int m = 0;
    manta_status st = sgraph_arch_layers(s, a, s->crop_h, s->crop_w, L, &m, err);
    for (int i = 0; i < m && st == MANTA_OK; i++)
        from_sgraph(&L[i], a->r, &out[i]);
    free(L);
    if (st == MANTA_OK)
        *n = m;
    return st;
}

manta_status lat_enumerate(const ofa_space *s, lat_layer **out, size_t *n, manta_err *err)
{
    *out = NULL;
    *n = 0;
    int n_ke = s->n_ks * s->n_e;
    size_t cap = (size_t)s->n_res * (size_t)n_ke * LAT_MAX_ARCH_LAYERS;
    lat_layer *all = malloc(cap * sizeof *all);
    lat_layer *per = malloc((size_t)n_ke * LAT_MAX_ARCH_LAYERS * sizeof *per);
    uint32_t *slot = NULL;
    size_t n_slot = 0, count = 0;
    manta_status st = MANTA_OK;
    if (!all || !per) {
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "latency keys: out of memory");
        goto done;
    }
    for (int ri = 0; ri < s->n_res && st == MANTA_OK; ri++) {
        /* uniform max-depth sub-networks: every slot shape at this resolution, each (k, e) */
        int n_layers = -1;
        for (int ke = 0; ke < n_ke && st == MANTA_OK; ke++) {
            ofa_arch a;
            ofa_arch_max(s, s->res[ri], &a);
            for (int i = 0; i < ofa_slots(s); i++) {
                a.ks[i] = s->ks[ke / s->n_e];
                a.e[i] = s->e[ke % s->n_e];
            }
            int m;
            st = lat_arch_layers(s, &a, per + (size_t)ke * LAT_MAX_ARCH_LAYERS, &m, err);
            if (st == MANTA_OK && n_layers >= 0 && m != n_layers)
                st = manta_err_set(err, MANTA_ERR_INTERNAL, "latency keys: layer count varies");
            n_layers = m;
        }
        for (int pos = 0; pos < n_layers && st == MANTA_OK; pos++)
            for (int ke = 0; ke < n_ke && st == MANTA_OK; ke++) {
                const lat_layer *l = &per[(size_t)ke * LAT_MAX_ARCH_LAYERS + (size_t)pos];
                st = idx_reserve(&slot, &n_slot, all, sizeof *all, count, err);
                if (st != MANTA_OK)
                    break;
                bool found;
                size_t at = idx_probe(slot, n_slot, all, sizeof *all, l->key, &found);
                if (found)
                    continue;
                all[count] = *l;
                slot[at] = (uint32_t)(++count);
            }
    }
done:
    free(per);
    free(slot);
    if (st != MANTA_OK) {
        free(all);
        return st;
    }
    lat_layer *shrunk = realloc(all, (count ? count : 1) * sizeof *all);
    *out = shrunk ? shrunk : all;
    *n = count;
    return MANTA_OK;
}

manta_status lat_stereo_enumerate(const stereo_space *s, lat_layer **out, size_t *n, manta_err *err)
{
    *out = NULL;
    *n = 0;
    const int n_ke = s->n_ks * s->n_e, nr = s->n_dec_ratios, n_arch = n_ke + nr * nr;
    lat_layer *all = malloc((size_t)n_arch * LAT_MAX_ARCH_LAYERS * sizeof *all);
    lat_layer *L = malloc(LAT_MAX_ARCH_LAYERS * sizeof *L);
    uint32_t *slot = NULL;
    size_t n_slot = 0, count = 0;
    manta_status st = all && L
                          ? MANTA_OK
                          : manta_err_set(err, MANTA_ERR_NO_MEMORY, "latency keys: out of memory");
    for (int v = 0; v < n_arch && st == MANTA_OK; v++) {
        ofa_arch a;
        stereo_arch_max(s, &a);
        if (v < n_ke) /* every slot at one (kernel, expand ratio), the largest depths */
            for (int i = 0; i < s->n_units * s->max_depth; i++) {
                a.ks[i] = s->ks[v / s->n_e];
                a.e[i] = s->e[v % s->n_e];
            }
        else { /* the levels alternating between two width choices */
            const int r1 = (v - n_ke) / nr, r2 = (v - n_ke) % nr;
            int ch[STEREO_MAX_LEVELS];
            for (int i = 0; i < s->n_levels; i++)
                ch[i] = i % 2 ? r2 : r1;
            stereo_arch_set_dec(s, ch, 0, &a);
        }
        int m = 0;
        st = lat_stereo_arch_layers(s, &a, L, &m, err);
        for (int j = 0; j < m && st == MANTA_OK; j++) {
            st = idx_reserve(&slot, &n_slot, all, sizeof *all, count, err);
            if (st != MANTA_OK)
                break;
            bool found;
            size_t at = idx_probe(slot, n_slot, all, sizeof *all, L[j].key, &found);
            if (found)
                continue;
            all[count] = L[j];
            slot[at] = (uint32_t)(++count);
        }
    }
    free(L);
    free(slot);
    if (st != MANTA_OK) {
        free(all);
        return st;
    }
    lat_layer *shrunk = realloc(all, (count ? count : 1) * sizeof *all);
    *out = shrunk ? shrunk : all;
    *n = count;
    return MANTA_OK;
}

/* A space of either task: @c o the classification space or a stereo space's view, @c st the
 * stereo space or NULL. */
typedef struct lspace {
    const ofa_space *o;
    const stereo_space *st;
    lat_dtype want; /* the dtype a parsed table must have */
} lspace;

static lspace table_space(const lat_table *t)
{
    return (lspace){&t->space, t->stereo ? &t->stereo_spec : NULL, t->dtype};
}

static manta_status ls_layers(const lspace *s, const ofa_arch *a, lat_layer *L, int *n,
                              manta_err *err)
{
    return s->st ? lat_stereo_arch_layers(s->st, a, L, n, err)
                 : lat_arch_layers(s->o, a, L, n, err);
}

static manta_status ls_enumerate(const lspace *s, lat_layer **out, size_t *n, manta_err *err)
{
    return s->st ? lat_stereo_enumerate(s->st, out, n, err) : lat_enumerate(s->o, out, n, err);
}

static manta_status ls_table_init(lat_table *t, const lspace *s, manta_err *err)
{
    return s->st ? lat_table_init_stereo(t, s->st, err) : lat_table_init(t, s->o, err);
}

/* Index of a key of @p keys (n) in the table @p t whose entries are those keys in order. */
static long key_index(const lat_table *t, const char *key)
{
    const lat_entry *e = lat_table_find(t, key);
    return e ? (long)(e - t->entry) : -1;
}

static bool arch_has_key(const lspace *ls, const ofa_arch *a, const char *key, lat_layer *L)
{
    int m = 0;
    if (ls_layers(ls, a, L, &m, NULL) != MANTA_OK)
        return false;
    for (int i = 0; i < m; i++)
        if (!strcmp(L[i].key, key))
            return true;
    return false;
}

/* Set one slot of @p a (resolution already the key's), or a stereo sub-network's widths of
 * one decoder level and the one before it, so that it produces @p key. */
static bool force_key(const lspace *ls, ofa_arch *a, const char *key, lat_layer *L)
{
    const ofa_space *s = ls->o;
    const stereo_space *ss = ls->st;
    for (int i = 0; ss && i < ss->n_levels; i++)
        for (int c = 0; c < ss->n_dec_ratios; c++)
            for (int c2 = 0; c2 < (i ? ss->n_dec_ratios : 1); c2++) {
                ofa_arch t = *a;
                t.dw[i] = stereo_dec_width(ss, i, c);
                if (i)
                    t.dw[i - 1] = stereo_dec_width(ss, i - 1, c2);
                if (arch_has_key(ls, &t, key, L)) {
                    *a = t;
                    return true;
                }
            }
    for (int u = 0; u < s->n_units; u++)
        for (int b = 0; b < s->max_depth; b++) {
            int depth = 0;
            for (int i = 0; i < s->n_d && !depth; i++)
                if (s->d[i] >= b + 1)
                    depth = s->d[i];
            if (!depth)
                continue;
            const int slot = u * s->max_depth + b;
            for (int k = 0; k < s->n_ks; k++)
                for (int e = 0; e < s->n_e; e++) {
                    ofa_arch t = *a;
                    if (t.d[u] < depth)
                        t.d[u] = depth;
                    t.ks[slot] = s->ks[k];
                    t.e[slot] = s->e[e];
                    if (arch_has_key(ls, &t, key, L)) {
                        *a = t;
                        return true;
                    }
                }
        }
    return false;
}

static manta_status cover_archs(const lspace *ls, int cover, uint64_t seed, ofa_arch **out,
                                size_t *n, manta_err *err)
{
    const ofa_space *s = ls->o;
    *out = NULL;
    *n = 0;
    if (cover < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "key cover: %d networks per key (>= 1)",
                             cover);
    lat_layer *keys = NULL, *L = malloc(LAT_MAX_ARCH_LAYERS * sizeof *L);
    size_t nk = 0, na = 0, cap = 0;
    long *count = NULL;
    ofa_arch *archs = NULL;
    lat_table t;
    memset(&t, 0, sizeof t);
    manta_status st = L ? ls_enumerate(ls, &keys, &nk, err)
                        : manta_err_set(err, MANTA_ERR_NO_MEMORY, "key cover: out of memory");
    if (st == MANTA_OK)
        st = ls_table_init(&t, ls, err);
    const lat_stats zero = {0, 0, 0, 1, 0};
    for (size_t i = 0; i < nk && st == MANTA_OK; i++)
        st = lat_table_set(&t, keys[i].key, &zero, err);
    if (st == MANTA_OK && !(count = calloc(nk ? nk : 1, sizeof *count)))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "key cover: out of memory");
    manta_rng rng;
    manta_rng_seed(&rng, seed, 0xc0fe);
    for (size_t i = 0; i < nk && st == MANTA_OK; i++)
        while (count[i] < cover && st == MANTA_OK) {
            ofa_arch a;
            if (ls->st)
                stereo_arch_sample(ls->st, &rng, &a);
            else
                ofa_arch_sample(s, &rng, &a);
            a.r = keys[i].r;
            if (!arch_has_key(ls, &a, keys[i].key, L) && !force_key(ls, &a, keys[i].key, L)) {
                st = manta_err_set(err, MANTA_ERR_INTERNAL,
                                   "key cover: no sub-network of space '%s' produces '%s'", s->name,
                                   keys[i].key);
                break;
            }
            if (na == cap) {
                size_t c2 = cap ? 2 * cap : 64;
                ofa_arch *g = realloc(archs, c2 * sizeof *g);
                if (!g) {
                    st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "key cover: out of memory");
                    break;
                }
                archs = g;
                cap = c2;
            }
            archs[na++] = a;
            int m = 0;
            st = ls_layers(ls, &a, L, &m, err);
            for (int j = 0; j < m && st == MANTA_OK; j++) {
                long k = key_index(&t, L[j].key);
                if (k < 0)
                    st = manta_err_set(err, MANTA_ERR_INTERNAL,
                                       "key cover: '%s' is not an enumerated key", L[j].key);
                else
                    count[k]++;
            }
        }
    free(count);
    free(keys);
    free(L);
    lat_table_free(&t);
    if (st != MANTA_OK) {
        free(archs);
        return st;
    }
    *out = archs;
    *n = na;
    return MANTA_OK;
}

manta_status lat_cover_archs(const ofa_space *s, int cover, uint64_t seed, ofa_arch **out,
                             size_t *n, manta_err *err)
{
    const lspace ls = {s, NULL, LAT_DTYPE_F32};
    return cover_archs(&ls, cover, seed, out, n, err);
}

manta_status lat_stereo_cover_archs(const stereo_space *s, int cover, uint64_t seed, ofa_arch **out,
                                    size_t *n, manta_err *err)
{
    ofa_space view;
    stereo_space_ofa_view(s, &view);
    const lspace ls = {&view, s, LAT_DTYPE_F32};
    return cover_archs(&ls, cover, seed, out, n, err);
}

/* ---- statistics ---------------------------------------------------------------------- */

manta_status lat_stats_from_samples(double *ms, size_t n, lat_stats *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "latency statistics: no samples");
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(ms[i]) || ms[i] < 0)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "latency statistics: sample %zu is %g (must be finite, >= 0)", i,
                                 ms[i]);
        sum += ms[i];
    }
    out->median_ms = manta_sort_median(ms, n);
    double mean = sum / (double)n, var = 0;
    for (size_t i = 0; i < n; i++)
        var += (ms[i] - mean) * (ms[i] - mean);
    const double q = LAT_PREDICT_QUANTILE * (double)(n - 1);
    const size_t k = (size_t)q;
    out->p10_ms = k + 1 < n ? ms[k] + (q - (double)k) * (ms[k + 1] - ms[k]) : ms[k];
    out->mean_ms = mean;
    out->variance_ms2 = var / (double)n;
    out->count = (long)n;
    return MANTA_OK;
}

static bool stats_ok(const lat_stats *st)
{
    return isfinite(st->median_ms) && st->median_ms >= 0 && isfinite(st->p10_ms) &&
           st->p10_ms >= 0 && isfinite(st->mean_ms) && st->mean_ms >= 0 &&
           isfinite(st->variance_ms2) && st->variance_ms2 >= 0 && st->count >= 1;
}

/* ---- the table ----------------------------------------------------------------------- */

const char *lat_dtype_name(lat_dtype d)
{
    return d == LAT_DTYPE_INT8 ? "int8" : d == LAT_DTYPE_ANY ? "any" : "float32";
}

manta_status lat_table_init(lat_table *t, const ofa_space *s, manta_err *err)
{
    memset(t, 0, sizeof *t);
    t->space = *s;
    return prof_space_hash(s, t->space_hash, err);
}

manta_status lat_table_init_stereo(lat_table *t, const stereo_space *s, manta_err *err)
{
    memset(t, 0, sizeof *t);
    t->stereo = true;
    t->stereo_spec = *s;
    stereo_space_ofa_view(s, &t->space);
    return prof_stereo_space_hash(s, t->space_hash, err);
}

void lat_table_free(lat_table *t)
{
    if (!t)
        return;
    free(t->entry);
    free(t->slot_);
    t->entry = NULL;
    t->slot_ = NULL;
    t->n = t->cap_ = t->n_slot_ = 0;
}

manta_status lat_table_set_meta(lat_table *t, const char *device, const char *cpu,
                                const char *cflags, const char *date, manta_err *err)
{
    const char *v[4] = {device, cpu, cflags, date};
    char *dst[4] = {t->device, t->cpu, t->cflags, t->date};
    static const char *const names[4] = {"device", "cpu", "compiler_flags", "date"};
    for (int i = 0; i < 4; i++)
        if (v[i] && strlen(v[i]) >= LAT_META_MAX)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "latency table: \"%s\" is longer than %d bytes", names[i],
                                 LAT_META_MAX - 1);
    for (int i = 0; i < 4; i++)
        if (v[i])
            snprintf(dst[i], LAT_META_MAX, "%s", v[i]);
    return MANTA_OK;
}

const lat_entry *lat_table_find(const lat_table *t, const char *key)
{
    if (!t->slot_)
        return NULL;
    bool found;
    size_t at = idx_probe(t->slot_, t->n_slot_, t->entry, sizeof *t->entry, key, &found);
    return found ? &t->entry[t->slot_[at] - 1] : NULL;
}

manta_status lat_table_set(lat_table *t, const char *key, const lat_stats *st, manta_err *err)
{
    size_t len = key ? strlen(key) : 0;
    if (len == 0 || len >= LAT_KEY_MAX)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "latency table: a key must have 1 to %d bytes (got %zu)",
                             LAT_KEY_MAX - 1, len);
    if (!stats_ok(st))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "latency table: layer '%s': statistics must be finite, >= 0, "
                             "count >= 1 (median %g, mean %g, variance %g, count %ld)",
                             key, st->median_ms, st->mean_ms, st->variance_ms2, st->count);
    MANTA_TRY(idx_reserve(&t->slot_, &t->n_slot_, t->entry, sizeof *t->entry, t->n, err));
    bool found;
    size_t at = idx_probe(t->slot_, t->n_slot_, t->entry, sizeof *t->entry, key, &found);
    if (found) {
        t->entry[t->slot_[at] - 1].st = *st;
        return MANTA_OK;
    }
    if (t->n == t->cap_) {
        size_t cap = t->cap_ ? 2 * t->cap_ : 256;
        lat_entry *e = realloc(t->entry, cap * sizeof *e);
        if (!e)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                 "latency table: out of memory for %zu entries", cap);
        t->entry = e;
        t->cap_ = cap;
    }
    lat_entry *e = &t->entry[t->n];
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, len + 1);
    e->st = *st;
    t->slot_[at] = (uint32_t)(++t->n);
    return MANTA_OK;
}

manta_status lat_table_check_complete(const lat_table *t, manta_err *err)
{
    lat_layer *all;
    size_t n, missing = 0, first = 0;
    const lspace ls = table_space(t);
    MANTA_TRY(ls_enumerate(&ls, &all, &n, err));
    for (size_t i = 0; i < n; i++)
        if (!lat_table_find(t, all[i].key) && missing++ == 0)
            first = i;
    manta_status st = MANTA_OK;
    if (missing)
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "latency table lacks %zu of %zu layer keys of space '%s', first: '%s'",
                           missing, n, t->space.name, all[first].key);
    free(all);
    return st;
}

manta_status lat_predict(const lat_table *t, const ofa_arch *a, double *ms, manta_err *err)
{
    *ms = 0;
    lat_layer layers[LAT_MAX_ARCH_LAYERS];
    int n;
    const lspace ls = table_space(t);
    MANTA_TRY(ls_layers(&ls, a, layers, &n, err));
    double sum = t->overhead_ms;
    for (int i = 0; i < n; i++) {
        const lat_entry *e = lat_table_find(t, layers[i].key);
        if (!e)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "latency table (device '%s') has no entry for layer %s: '%s'",
                                 t->device, layers[i].where, layers[i].key);
        sum += e->st.p10_ms;
    }
    *ms = sum;
    return MANTA_OK;
}

/* ---- JSON ---------------------------------------------------------------------------- */

manta_status lat_table_to_json(const lat_table *t, char **out, manta_err *err)
{
    *out = NULL;
    cJSON *j = cJSON_CreateObject(), *sp = NULL;
    bool ok = j && cJSON_AddStringToObject(j, "format", "manta-latency-table") &&
              cJSON_AddNumberToObject(j, "version", LAT_FORMAT_VERSION) &&
              (sp = cJSON_AddObjectToObject(j, "space")) &&
              cJSON_AddStringToObject(sp, "name", t->space.name) &&
              cJSON_AddStringToObject(sp, "hash", t->space_hash) &&
              cJSON_AddStringToObject(j, "device", t->device) &&
              cJSON_AddStringToObject(j, "cpu", t->cpu) &&
              cJSON_AddStringToObject(j, "compiler_flags", t->cflags) &&
              cJSON_AddStringToObject(j, "date", t->date) &&
              cJSON_AddStringToObject(j, "dtype", lat_dtype_name(t->dtype)) &&
              prof_json_add_number(j, "overhead_ms", t->overhead_ms);
    cJSON *layers = ok ? cJSON_AddObjectToObject(j, "layers") : NULL;
    ok = ok && layers;
    for (size_t i = 0; ok && i < t->n; i++) {
        const lat_entry *e = &t->entry[i];
        cJSON *o = cJSON_AddObjectToObject(layers, e->key);
        ok = o && prof_json_add_number(o, "p10_ms", e->st.p10_ms) &&
             prof_json_add_number(o, "median_ms", e->st.median_ms) &&
             prof_json_add_number(o, "mean_ms", e->st.mean_ms) &&
             prof_json_add_number(o, "variance_ms2", e->st.variance_ms2) &&
             cJSON_AddNumberToObject(o, "count", (double)e->st.count);
    }
    if (ok)
        *out = cJSON_Print(j);
    cJSON_Delete(j);
    if (!*out)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "latency table: out of memory for JSON");
    return MANTA_OK;
}

static const char *get_string(const cJSON *o, const char *key, const char *what, manta_err *err,
                              manta_status *st)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        *st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: missing \"%s\"", what, key);
        return NULL;
    }
    if (!cJSON_IsString(v)) {
        *st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be a string", what, key);
        return NULL;
    }
    if (strlen(v->valuestring) >= LAT_META_MAX) {
        *st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" is longer than %d bytes", what, key,
                            LAT_META_MAX - 1);
        return NULL;
    }
    return v->valuestring;
}

static manta_status get_number(const cJSON *o, const char *key, const char *what, const char *layer,
                               double *out, manta_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) {
        if (layer)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: layer '%s': \"%s\" missing or not a number", what, layer,
                                 key);
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" missing or not a number", what,
                             key);
    }
    *out = v->valuedouble;
    return MANTA_OK;
}

/* The table's "dtype" into t->dtype (absent: float32), checked against @p want. */
static manta_status parse_dtype(const cJSON *j, const char *what, lat_dtype want, lat_table *t,
                                manta_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    t->dtype = LAT_DTYPE_F32;
    if (v && cJSON_IsString(v) && !strcmp(v->valuestring, "int8"))
        t->dtype = LAT_DTYPE_INT8;
    else if (v && (!cJSON_IsString(v) || strcmp(v->valuestring, "float32") != 0))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"dtype\" must be \"float32\" or \"int8\"",
                             what);
    if (want != LAT_DTYPE_ANY && t->dtype != want)
        return manta_err_set(
            err, MANTA_ERR_FORMAT, "%s: %s latency table (\"dtype\": \"%s\"), %s one is needed",
            what, t->dtype == LAT_DTYPE_INT8 ? "an int8" : "a float32", lat_dtype_name(t->dtype),
            want == LAT_DTYPE_INT8 ? "an int8" : "a float32");
    return MANTA_OK;
}

static manta_status parse_obj(const cJSON *j, const char *what, lat_dtype want, lat_table *t,
                              manta_err *err)
{
    const ofa_space *s = &t->space;
    const lspace ls = table_space(t);
    manta_status st = MANTA_OK;
    if (!cJSON_IsObject(j))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: not a JSON object", what);
    const char *fmt = get_string(j, "format", what, err, &st);
    if (!fmt)
        return st;
    if (strcmp(fmt, "manta-latency-table") != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: \"format\" is \"%s\", not \"manta-latency-table\"", what, fmt);
    double version = 0;
    MANTA_TRY(get_number(j, "version", what, NULL, &version, err));
    if (version != LAT_FORMAT_VERSION && version != 1)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: format version %g, this build reads 1 to %d", what, version,
                             LAT_FORMAT_VERSION);

    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(j, "space");
    if (!cJSON_IsObject(sp))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: missing \"space\" (an object)", what);
    char sp_what[LAT_META_MAX + 16];
    snprintf(sp_what, sizeof sp_what, "%s: space", what);
    const char *name = get_string(sp, "name", sp_what, err, &st);
    if (!name)
        return st;
    const char *hash = get_string(sp, "hash", sp_what, err, &st);
    if (!hash)
        return st;
    if (strcmp(name, s->name) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: made for space '%s' (hash %s), not '%s' (hash %s)", what, name,
                             hash, s->name, t->space_hash);
    if (strcmp(hash, t->space_hash) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: space '%s' differs: the table's spec hash is %s, the given "
                             "spec's %s",
                             what, name, hash, t->space_hash);

    const char *meta[4];
    static const char *const meta_names[4] = {"device", "cpu", "compiler_flags", "date"};
    for (int i = 0; i < 4; i++)
        if (!(meta[i] = get_string(j, meta_names[i], what, err, &st)))
            return st;
    MANTA_TRY(lat_table_set_meta(t, meta[0], meta[1], meta[2], meta[3], err));
    MANTA_TRY(parse_dtype(j, what, want, t, err));
    MANTA_TRY(get_number(j, "overhead_ms", what, NULL, &t->overhead_ms, err));
    if (t->overhead_ms < 0)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"overhead_ms\" is negative (%g)", what,
                             t->overhead_ms);

    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
    if (!cJSON_IsObject(layers))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: missing \"layers\" (an object)", what);

    /* the keys the space produces, to refuse foreign ones */
    lat_layer *all;
    size_t n_all;
    MANTA_TRY(ls_enumerate(&ls, &all, &n_all, err));
    uint32_t *slot = NULL;
    size_t n_slot = 0;
    st = idx_reserve(&slot, &n_slot, all, sizeof *all, n_all, err);
    for (size_t i = 0; st == MANTA_OK && i < n_all; i++) {
        bool found;
        size_t at = idx_probe(slot, n_slot, all, sizeof *all, all[i].key, &found);
        slot[at] = (uint32_t)(i + 1);
    }
    for (const cJSON *o = layers->child; st == MANTA_OK && o; o = o->next) {
        const char *key = o->string;
        if (!key || !*key || strlen(key) >= LAT_KEY_MAX) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: a layer key is empty or too long", what);
            break;
        }
        bool known;
        idx_probe(slot, n_slot, all, sizeof *all, key, &known);
        if (!known) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: layer '%s' is not a layer of space '%s'",
                               what, key, s->name);
            break;
        }
        if (lat_table_find(t, key)) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: layer '%s' is listed twice", what, key);
            break;
        }
        if (!cJSON_IsObject(o)) {
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: layer '%s' is not an object", what, key);
            break;
        }
        lat_stats ls;
        double count = 0;
        if ((st = get_number(o, "median_ms", what, key, &ls.median_ms, err)) != MANTA_OK ||
            (st = version == 1 ? (ls.p10_ms = ls.median_ms, MANTA_OK)
                               : get_number(o, "p10_ms", what, key, &ls.p10_ms, err)) != MANTA_OK ||
            (st = get_number(o, "mean_ms", what, key, &ls.mean_ms, err)) != MANTA_OK ||
            (st = get_number(o, "variance_ms2", what, key, &ls.variance_ms2, err)) != MANTA_OK ||
            (st = get_number(o, "count", what, key, &count, err)) != MANTA_OK)
            break;
        if (count < 1 || count > 1e15 || count != floor(count)) {
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: layer '%s': \"count\" must be an integer >= 1 (got %g)", what,
                               key, count);
            break;
        }
        ls.count = (long)count;
        if (!stats_ok(&ls)) {
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: layer '%s': times and variance must be >= 0", what, key);
            break;
        }
        st = lat_table_set(t, key, &ls, err);
    }
    free(slot);
    free(all);
    return st;
}

static manta_status parse(const char *json, const char *what, const lspace *s, lat_table *t,
                          manta_err *err)
{
    if (!what)
        what = "latency table";
    MANTA_TRY(ls_table_init(t, s, err));
    const char *at = NULL;
    cJSON *j = cJSON_ParseWithOpts(json, &at, 0);
    if (!j) {
        lat_table_free(t);
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: not valid JSON near '%.20s'", what,
                             at ? at : "");
    }
    manta_status st = parse_obj(j, what, s->want, t, err);
    cJSON_Delete(j);
    if (st != MANTA_OK)
        lat_table_free(t);
    return st;
}

manta_status lat_table_parse(const char *json, const char *what, const ofa_space *s, lat_table *t,
                             manta_err *err)
{
    const lspace ls = {s, NULL, LAT_DTYPE_F32};
    return parse(json, what, &ls, t, err);
}

manta_status lat_table_parse_dtype(const char *json, const char *what, const ofa_space *s,
                                   lat_dtype want, lat_table *t, manta_err *err)
{
    const lspace ls = {s, NULL, want};
    return parse(json, what, &ls, t, err);
}

manta_status lat_table_parse_stereo(const char *json, const char *what, const stereo_space *s,
                                    lat_table *t, manta_err *err)
{
    const lspace ls = {NULL, s, LAT_DTYPE_F32};
    return parse(json, what, &ls, t, err);
}

static manta_status load(const char *path, const lspace *s, lat_table *t, manta_err *err)
{
    memset(t, 0, sizeof *t);
    char *text;
    MANTA_TRY(manta_file_read(path, LAT_FILE_MAX, &text, NULL, err));
    manta_status st = parse(text, path, s, t, err);
    free(text);
    return st;
}

manta_status lat_table_load(const char *path, const ofa_space *s, lat_table *t, manta_err *err)
{
    const lspace ls = {s, NULL, LAT_DTYPE_F32};
    return load(path, &ls, t, err);
}

manta_status lat_table_load_dtype(const char *path, const ofa_space *s, lat_dtype want,
                                  lat_table *t, manta_err *err)
{
    const lspace ls = {s, NULL, want};
    return load(path, &ls, t, err);
}

manta_status lat_table_load_stereo(const char *path, const stereo_space *s, lat_table *t,
                                   manta_err *err)
{
    const lspace ls = {NULL, s, LAT_DTYPE_F32};
    return load(path, &ls, t, err);
}

manta_status lat_table_save(const lat_table *t, const char *path, manta_err *err)
{
    char *text;
    MANTA_TRY(lat_table_to_json(t, &text, err));
    manta_status st = manta_file_write_atomic(path, text, strlen(text), err);
    free(text);
    return st;
}
