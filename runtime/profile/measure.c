#include "profile/measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "core/rng.h"
#include "export/quant.h"
#include "export/tflite.h"
#include "profile/synth.h"

/* Seeds of the profiler's draws: the sub-networks covering every key, the calibration
 * sub-networks, the order of the visits; and the stream of the validation sub-networks
 * (their seed is the caller's). */
#define SEED_COVER 0xc04e5
#define SEED_CALIB 0xca11b
#define SEED_ORDER 0x5eed
#define SEED_VALIDATE_STREAM 0x7a11d
#define SEED_INT8_CALIB 0x18ca1

/* The stereo space of table @p t, or NULL for a classification table. */
static const stereo_space *stereo_of(const lat_table *t)
{
    return t->stereo ? &t->stereo_spec : NULL;
}

/* The keyed layers of @p a in table @p t's space. */
static manta_status arch_layers(const lat_table *t, const ofa_arch *a, lat_layer *L, int *m,
                                manta_err *err)
{
    return t->stereo ? lat_stereo_arch_layers(&t->stereo_spec, a, L, m, err)
                     : lat_arch_layers(&t->space, a, L, m, err);
}

/* A random sub-network of @p s, or of stereo space @p ss when not NULL. */
static void sample(const ofa_space *s, const stereo_space *ss, manta_rng *rng, ofa_arch *a)
{
    if (ss)
        stereo_arch_sample(ss, rng, a);
    else
        ofa_arch_sample(s, rng, a);
}

void lat_items_free(lat_item *it, size_t n)
{
    for (size_t i = 0; it && i < n; i++) {
        free(it[i].ms);
        free(it[i].seg);
    }
    free(it);
}

manta_status lat_int8_calibrate(xgraph *g, uint64_t seed, manta_err *err)
{
    const xg_tensor *in = &g->tensors[g->input];
    size_t count = 1;
    for (int i = 0; i < in->rank; i++)
        count *= (size_t)in->shape[i];
    float *x = malloc(count * LAT_INT8_CALIB_IMAGES * sizeof *x);
    if (!x)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory for calibration");
    manta_rng rng;
    manta_rng_seed(&rng, seed, SEED_INT8_CALIB);
    for (size_t i = 0; i < count * LAT_INT8_CALIB_IMAGES; i++)
        x[i] = 2.0f * manta_rng_uniform(&rng) - 1.0f;
    manta_status st = xgraph_calibrate(g, x, LAT_INT8_CALIB_IMAGES, XG_CALIB_MINMAX, 0, err);
    free(x);
    return st;
}

manta_status lat_item_open(const ofa_space *s, lat_item *it, pt_model *m, manta_err *err)
{
    if (it->int8 && it->stereo)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "profile: int8 models are classification ones (no int8 stereo "
                             "export)");
    xgraph g;
    const synth_opts so = {it->seed, false};
    if (it->stereo)
        MANTA_TRY(it->layer ? prof_synth_stereo_layer_graph(it->layer, &so, &g, err)
                            : prof_synth_stereo_graph(it->stereo, &it->arch, &so, &g, it->bound,
                                                      &it->nl, err));
    else
        MANTA_TRY(it->layer ? prof_synth_layer_graph(s, it->layer, &so, &g, err)
                            : prof_synth_arch_graph_layers(s, &it->arch, NULL, &so, &g, it->bound,
                                                           &it->nl, err));
    uint8_t *data = NULL;
    size_t size = 0;
    manta_status st = it->int8 ? lat_int8_calibrate(&g, it->seed, err) : MANTA_OK;
    if (st == MANTA_OK)
        st = tflite_write(&g, &data, &size, NULL, err);
    xgraph_free(&g);
    if (st != MANTA_OK)
        return st;
    char msg[512] = "";
    if (pt_open(m, data, size, it->seed, msg, sizeof msg) != 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "%s", msg);
    return MANTA_OK;
}

/* Append @p k runs (@p ms, and @p seg with layers) to @p it's timings. */
static manta_status append_runs(lat_item *it, const double *ms, const double *seg, size_t k,
                                manta_err *err)
{
    if (it->n + k > it->cap_) {
        size_t cap = (it->n + k) * 2;
        double *g = realloc(it->ms, cap * sizeof *g);
        if (g)
            it->ms = g;
        double *h = g && it->layers ? realloc(it->seg, cap * (size_t)it->nl * sizeof *h) : NULL;
        if (h)
            it->seg = h;
        if (!g || (it->layers && !h))
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
        it->cap_ = cap;
    }
    memcpy(it->ms + it->n, ms, k * sizeof *ms);
    if (it->layers)
        memcpy(it->seg + it->n * (size_t)it->nl, seg, k * (size_t)it->nl * sizeof *seg);
    it->n += k;
    return MANTA_OK;
}

/* One visit of @p it: open its model, time it with @p v, append the runs. */
static manta_status visit(const ofa_space *s, lat_item *it, const pt_opts *v, manta_err *err)
{
    pt_model m;
    double *ms = NULL, *seg = NULL;
    size_t k = 0;
    char msg[512] = "";
    manta_status st = lat_item_open(s, it, &m, err);
    if (st == MANTA_OK) {
        int rc = it->layers
                     ? pt_time_layers(&m, v, it->bound, it->nl, &seg, &ms, &k, msg, sizeof msg)
                     : pt_time(&m, v, &ms, &k, msg, sizeof msg);
        pt_close(&m);
        if (rc != 0)
            st = manta_err_set(err, MANTA_ERR_INTERNAL, "%s", msg);
    }
    if (st != MANTA_OK && it->layer) {
        char why[MANTA_ERR_MSG_MAX];
        snprintf(why, sizeof why, "%s", err ? err->msg : "");
        st = manta_err_set(err, st, "layer '%s': %s", it->layer->key, why);
    }
    if (st == MANTA_OK)
        st = append_runs(it, ms, seg, k, err);
    free(ms);
    free(seg);
    return st;
}

manta_status lat_measure(const ofa_space *s, lat_item *it, size_t n, const lat_measure_opts *o,
                         manta_err *err)
{
    const int passes = o->passes;
    if (passes < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "profile: %d passes, at least 1", passes);
    for (size_t i = 0; i < n; i++)
        it[i].int8 = o->int8;
    pt_opts v = o->t;
    v.min_runs = (o->t.min_runs + passes - 1) / passes;
    v.min_time_s = o->t.min_time_s / passes;
    v.max_runs = o->t.max_runs / passes > v.min_runs ? o->t.max_runs / passes : v.min_runs;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    manta_rng rng;
    manta_rng_seed(&rng, SEED_ORDER, 0x0dd);
    const size_t total = (size_t)passes * n;
    for (int pass = 0; pass < passes; pass++)
        for (size_t v_i = 0; v_i < n; v_i++) {
            if (v_i == 0 && pass > 0) /* a new random order each pass after the first */
                for (size_t j = n - 1; j > 0; j--) {
                    size_t r = manta_rng_below(&rng, (uint32_t)(j + 1)), x = order[j];
                    order[j] = order[r];
                    order[r] = x;
                }
            lat_item *one = &it[order[v_i]];
            if (o->progress)
                o->progress(o->progress_ctx, (size_t)pass * n + v_i, total,
                            one->layer ? one->layer->key : "sub-network");
            manta_status st = visit(s, one, &v, err);
            if (st != MANTA_OK) {
                free(order);
                return st;
            }
        }
    free(order);
    if (o->progress)
        o->progress(o->progress_ctx, total, total, "");
    for (size_t i = 0; i < n; i++)
        MANTA_TRY(lat_stats_from_samples(it[i].ms, it[i].n, &it[i].st, err));
    return MANTA_OK;
}

manta_status lat_fit_overhead(lat_table *t, const lat_item *cal, size_t nc, double *median,
                              manta_err *err)
{
    t->overhead_ms = 0;
    *median = 0;
    if (nc == 0)
        return MANTA_OK;
    double *diff = calloc(nc, sizeof *diff);
    if (!diff)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
    for (size_t i = 0; i < nc; i++) {
        double sum;
        manta_status st = lat_predict(t, &cal[i].arch, &sum, err);
        if (st != MANTA_OK) {
            free(diff);
            return st;
        }
        diff[i] = cal[i].st.p10_ms - sum;
    }
    *median = lat_median(diff, nc);
    t->overhead_ms = *median > 0 ? *median : 0;
    free(diff);
    return MANTA_OK;
}

/* The lower decile of an invocation with no work; 0 when it cannot be measured. */
static double empty_invoke_ms(const pt_opts *t)
{
    double out = 0;
    xgraph g;
    if (prof_synth_empty_graph(8, 8, 16, &g, NULL) != MANTA_OK)
        return 0;
    uint8_t *data = NULL;
    size_t size = 0, k = 0;
    pt_model m;
    double *ms = NULL;
    char msg[256];
    lat_stats st;
    if (tflite_write(&g, &data, &size, NULL, NULL) == MANTA_OK &&
        pt_open(&m, data, size, 1, msg, sizeof msg) == 0) {
        if (pt_time(&m, t, &ms, &k, msg, sizeof msg) == 0 &&
            lat_stats_from_samples(ms, k, &st, NULL) == MANTA_OK)
            out = st.p10_ms;
        free(ms);
        pt_close(&m);
    }
    xgraph_free(&g);
    return out;
}

/* Items for @p nc calibration sub-networks (seeds 1000 + first ..), drawn in order. */
static void calib_items(const ofa_space *s, const stereo_space *ss, lat_item *it, size_t nc,
                        size_t first)
{
    manta_rng rng;
    manta_rng_seed(&rng, SEED_CALIB, 7);
    for (size_t i = 0; i < nc; i++) {
        sample(s, ss, &rng, &it[i].arch);
        it[i].stereo = ss;
        it[i].seed = 1000 + first + i;
    }
}

/* Each key timed alone as a one-layer model. */
static manta_status profile_layers(const ofa_space *s, const lat_profile_opts *o,
                                   const lat_layer *keys, size_t n, lat_table *t,
                                   lat_profile_report *rep, manta_err *err)
{
    const size_t nc = (size_t)o->calib, total = n + nc;
    lat_item *it = calloc(total ? total : 1, sizeof *it);
    if (!it)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
    for (size_t i = 0; i < n; i++) {
        it[i].layer = &keys[i];
        it[i].stereo = stereo_of(t);
        it[i].seed = i + 1;
    }
    calib_items(s, stereo_of(t), it + n, nc, 0);
    manta_status st = lat_measure(s, it, total, &o->m, err);
    for (size_t i = 0; i < n && st == MANTA_OK; i++)
        st = lat_table_set(t, keys[i].key, &it[i].st, err);
    if (st == MANTA_OK)
        st = lat_fit_overhead(t, it + n, nc, &rep->overhead_median_ms, err);
    lat_items_free(it, total);
    return st;
}

/* Key pools of in-network profiling: every run's time of each key, pooled over the networks
 * that hold it, and the sum and count of its per-network lower deciles. */
typedef struct key_pool {
    size_t n;
    double **t;     /* (n) pooled times of each key */
    size_t *cnt;    /* times pooled (after the counting round: expected) */
    size_t *fill;   /* times pooled so far */
    size_t *n_ctx;  /* networks holding the key */
    double *p10sum; /* sum of the per-network lower deciles */
} key_pool;

static void key_pool_free(key_pool *p)
{
    for (size_t k = 0; p->t && k < p->n; k++)
        free(p->t[k]);
    free(p->t);
    free(p->cnt);
    free(p->fill);
    free(p->n_ctx);
    free(p->p10sum);
}

static bool key_pool_init(key_pool *p, size_t n)
{
    const size_t m = n ? n : 1;
    *p = (key_pool){n,
                    calloc(m, sizeof *p->t),
                    calloc(m, sizeof *p->cnt),
                    calloc(m, sizeof *p->fill),
                    calloc(m, sizeof *p->n_ctx),
                    calloc(m, sizeof *p->p10sum)};
    return p->t && p->cnt && p->fill && p->n_ctx && p->p10sum;
}

/* The table index of each keyed layer of network @p it into @p key_of, and its layers into
 * @p L (::LAT_MAX_ARCH_LAYERS). */
static manta_status network_keys(const ofa_space *s, const lat_table *t, const lat_item *it,
                                 lat_layer *L, long *key_of, manta_err *err)
{
    int m = 0;
    (void)s;
    MANTA_TRY(arch_layers(t, &it->arch, L, &m, err));
    if (m != it->nl)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "profile: %d layers, %d layer bounds", m,
                             it->nl);
    for (int j = 0; j < m; j++) {
        const lat_entry *e = lat_table_find(t, L[j].key);
        key_of[j] = e ? (long)(e - t->entry) : -1;
        if (key_of[j] < 0)
            return manta_err_set(err, MANTA_ERR_INTERNAL, "profile: '%s' not enumerated", L[j].key);
    }
    return MANTA_OK;
}

/* Pool the layer times of the @p na networks by key (a counting round, then a copying round
 * that also takes each network's lower decile of each of its keys). */
static manta_status pool_keys(const ofa_space *s, const lat_table *t, const lat_item *it, size_t na,
                              key_pool *p, lat_layer *L, manta_err *err)
{
    long key_of[LAT_MAX_ARCH_LAYERS];
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < na; i++) {
            MANTA_TRY(network_keys(s, t, &it[i], L, key_of, err));
            for (int j = 0; j < it[i].nl; j++) {
                const size_t k = (size_t)key_of[j];
                if (round == 0) {
                    p->cnt[k] += it[i].n;
                    continue;
                }
                double *col = p->t[k] + p->fill[k];
                for (size_t r = 0; r < it[i].n; r++)
                    col[r] = it[i].seg[r * (size_t)it[i].nl + (size_t)j];
                /* this network's decile; sorts the new samples in place, which the pool allows */
                lat_stats cs;
                MANTA_TRY(lat_stats_from_samples(col, it[i].n, &cs, err));
                p->p10sum[k] += cs.p10_ms;
                p->n_ctx[k]++;
                p->fill[k] += it[i].n;
            }
        }
        for (size_t k = 0; round == 0 && k < p->n; k++)
            if (!(p->t[k] = malloc((p->cnt[k] ? p->cnt[k] : 1) * sizeof **p->t)))
                return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
    }
    return MANTA_OK;
}

/* Each key's entry from its pool, less one clock reading @p clock_ms. */
static manta_status set_pooled(lat_table *t, const lat_layer *keys, const key_pool *p,
                               double clock_ms, manta_err *err)
{
    for (size_t k = 0; k < p->n; k++) {
        if (!p->cnt[k])
            return manta_err_set(err, MANTA_ERR_INTERNAL, "profile: no timing of '%s'",
                                 keys[k].key);
        lat_stats st;
        MANTA_TRY(lat_stats_from_samples(p->t[k], p->cnt[k], &st, err));
        st.median_ms = st.median_ms > clock_ms ? st.median_ms - clock_ms : 0;
        const double p10 = p->p10sum[k] / (double)p->n_ctx[k]; /* averaged over the networks */
        st.p10_ms = p10 > clock_ms ? p10 - clock_ms : 0;
        st.mean_ms = st.mean_ms > clock_ms ? st.mean_ms - clock_ms : 0;
        MANTA_TRY(lat_table_set(t, keys[k].key, &st, err));
    }
    return MANTA_OK;
}

/* The layers CSV of in-network profiling (see lat_profile_opts). */
static manta_status layers_csv(const ofa_space *s, const lat_table *t, const lat_item *it,
                               size_t na, double clock_ms, lat_layer *L, manta_strbuf *b,
                               manta_err *err)
{
    (void)s;
    manta_strbuf_printf(b, "network,layer,where,p10_ms,median_ms,table_p10_ms,runs,key\n");
    for (size_t i = 0; i < na; i++) {
        int m = 0;
        MANTA_TRY(arch_layers(t, &it[i].arch, L, &m, err));
        double *col = malloc((it[i].n + 1) * sizeof *col);
        if (!col)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
        for (int j = 0; j < m; j++) {
            for (size_t r = 0; r < it[i].n; r++)
                col[r] = it[i].seg[r * (size_t)m + (size_t)j];
            const lat_entry *e = lat_table_find(t, L[j].key);
            lat_stats cs;
            if (lat_stats_from_samples(col, it[i].n, &cs, NULL) != MANTA_OK)
                continue;
            manta_strbuf_printf(b, "%zu,%d,%s,%.6f,%.6f,%.6f,%zu,%s\n", i, j, L[j].where,
                                cs.p10_ms - clock_ms, cs.median_ms - clock_ms, e ? e->st.p10_ms : 0,
                                it[i].n, L[j].key);
        }
        free(col);
    }
    return b->oom ? manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory") : MANTA_OK;
}

/* Each key timed inside the sub-networks that cover it (see the file comment). */
static manta_status profile_net(const ofa_space *s, const lat_profile_opts *o,
                                const lat_layer *keys, size_t n, lat_table *t,
                                lat_profile_report *rep, manta_err *err)
{
    ofa_arch *archs = NULL;
    size_t na = 0;
    MANTA_TRY(t->stereo
                  ? lat_stereo_cover_archs(&t->stereo_spec, o->cover, SEED_COVER, &archs, &na, err)
                  : lat_cover_archs(s, o->cover, SEED_COVER, &archs, &na, err));
    const lat_stats zero = {0, 0, 0, 1, 0};
    manta_status st = MANTA_OK;
    for (size_t i = 0; i < n && st == MANTA_OK; i++) /* the table's keys in enumeration order */
        st = lat_table_set(t, keys[i].key, &zero, err);
    const size_t nc = (size_t)o->calib, total = na + nc;
    lat_item *it = st == MANTA_OK ? calloc(total, sizeof *it) : NULL;
    lat_layer *L = malloc(LAT_MAX_ARCH_LAYERS * sizeof *L);
    key_pool pool;
    if (!key_pool_init(&pool, n) || !L || (st == MANTA_OK && !it))
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "profile: out of memory");
    if (st == MANTA_OK) {
        for (size_t i = 0; i < na; i++) {
            it[i].arch = archs[i];
            it[i].stereo = stereo_of(t);
            it[i].layers = true;
            it[i].seed = 1000 + i;
        }
        calib_items(s, stereo_of(t), it + na, nc, na);
        rep->networks = na;
        rep->clock_ms = pt_clock_cost_ms(o->m.t.clock);
        st = lat_measure(s, it, total, &o->m, err);
    }
    if (st == MANTA_OK)
        st = pool_keys(s, t, it, na, &pool, L, err);
    if (st == MANTA_OK)
        st = set_pooled(t, keys, &pool, rep->clock_ms, err);
    if (st == MANTA_OK && o->layers_csv)
        st = layers_csv(s, t, it, na, rep->clock_ms, L, o->layers_csv, err);
    if (st == MANTA_OK)
        st = lat_fit_overhead(t, it + na, nc, &rep->overhead_median_ms, err);
    key_pool_free(&pool);
    free(L);
    lat_items_free(it, total);
    free(archs);
    return st;
}

/* A table of the models @p o times: float32 ones, or int8 ones with o->int8. */
static manta_status check_dtype(const lat_table *t, const lat_measure_opts *o, manta_err *err)
{
    const lat_dtype d = o->int8 ? LAT_DTYPE_INT8 : LAT_DTYPE_F32;
    if (t->dtype != d)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "profile: %s latency table (\"dtype\": \"%s\"), %s models measured",
                             t->dtype == LAT_DTYPE_INT8 ? "an int8" : "a float32",
                             lat_dtype_name(t->dtype), lat_dtype_name(d));
    return MANTA_OK;
}

manta_status lat_profile(const ofa_space *s, const lat_profile_opts *o, lat_table *t,
                         lat_profile_report *rep, manta_err *err)
{
    memset(rep, 0, sizeof *rep);
    if (o->calib < 0 || (o->method == LAT_METHOD_NET && o->cover < 1))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "profile: calib %d, cover %d: need calib >= 0, cover >= 1", o->calib,
                             o->cover);
    MANTA_TRY(check_dtype(t, &o->m, err));
    lat_layer *keys = NULL;
    size_t n = 0;
    if (t->stereo)
        s = &t->space;
    MANTA_TRY(t->stereo ? lat_stereo_enumerate(&t->stereo_spec, &keys, &n, err)
                        : lat_enumerate(s, &keys, &n, err));
    rep->keys = n;
    rep->calib = (size_t)o->calib;
    rep->empty_ms = empty_invoke_ms(&o->m.t);
    manta_status st = o->method == LAT_METHOD_NET ? profile_net(s, o, keys, n, t, rep, err)
                                                  : profile_layers(s, o, keys, n, t, rep, err);
    free(keys);
    return st;
}

manta_status lat_validate(const ofa_space *s, const lat_table *t, size_t k, uint64_t seed,
                          const lat_measure_opts *o, lat_agreement *ag, manta_strbuf *csv,
                          manta_err *err)
{
    if (k < 2)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "validate: %zu networks, at least 2", k);
    MANTA_TRY(check_dtype(t, o, err));
    double *pred = malloc(k * sizeof *pred), *meas = malloc(k * sizeof *meas);
    lat_item *it = calloc(k, sizeof *it);
    manta_status st = MANTA_OK;
    if (!pred || !meas || !it)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "validate: out of memory");
    manta_rng rng;
    manta_rng_seed(&rng, seed, SEED_VALIDATE_STREAM);
    for (size_t i = 0; i < k && st == MANTA_OK; i++) {
        sample(s, stereo_of(t), &rng, &it[i].arch);
        it[i].stereo = stereo_of(t);
        it[i].seed = 5000 + i;
        st = lat_predict(t, &it[i].arch, &pred[i], err);
    }
    if (st == MANTA_OK)
        st = lat_measure(s, it, k, o, err);
    for (size_t i = 0; i < k && st == MANTA_OK; i++)
        meas[i] = it[i].st.p10_ms;
    if (st == MANTA_OK)
        st = lat_agreement_compute(pred, meas, k, 0.10, ag, err);
    if (st == MANTA_OK && csv) {
        manta_strbuf_printf(csv,
                            "index,predicted_ms,measured_ms,measured_median_ms,error_pct,arch\n");
        for (size_t i = 0; i < k && st == MANTA_OK; i++) {
            char enc[1024];
            st = t->stereo ? stereo_arch_to_json(&t->stereo_spec, &it[i].arch, enc, sizeof enc, err)
                           : ofa_arch_to_json(s, &it[i].arch, enc, sizeof enc, err);
            if (st != MANTA_OK)
                break;
            manta_strbuf_printf(csv, "%zu,%.6f,%.6f,%.6f,%.3f,", i, pred[i], meas[i],
                                it[i].st.median_ms, 100 * (pred[i] - meas[i]) / meas[i]);
            manta_strbuf_csv_str(csv, enc);
            manta_strbuf_printf(csv, "\n");
        }
        if (st == MANTA_OK && csv->oom)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "validate: out of memory");
    }
    free(pred);
    free(meas);
    lat_items_free(it, k);
    return st;
}

static manta_status measure_arch(const ofa_space *s, const stereo_space *ss, const ofa_arch *a,
                                 const lat_measure_opts *o, lat_stats *st, size_t *arena,
                                 size_t *file, manta_err *err)
{
    lat_item it;
    memset(&it, 0, sizeof it);
    it.arch = *a;
    it.stereo = ss;
    it.seed = 1;
    it.int8 = o->int8;
    pt_model m;
    MANTA_TRY(lat_item_open(s, &it, &m, err));
    *arena = m.arena_bytes;
    *file = m.size;
    pt_close(&m);
    manta_status r = lat_measure(s, &it, 1, o, err);
    if (r == MANTA_OK)
        *st = it.st;
    free(it.ms);
    free(it.seg);
    return r;
}

manta_status lat_measure_arch(const ofa_space *s, const ofa_arch *a, const lat_measure_opts *o,
                              lat_stats *st, size_t *arena, size_t *file, manta_err *err)
{
    return measure_arch(s, NULL, a, o, st, arena, file, err);
}

manta_status lat_measure_arch_stereo(const stereo_space *s, const ofa_arch *a,
                                     const lat_measure_opts *o, lat_stats *st, size_t *arena,
                                     size_t *file, manta_err *err)
{
    ofa_space view;
    stereo_space_ofa_view(s, &view);
    return measure_arch(&view, s, a, o, st, arena, file, err);
}

void lat_host_cpu(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    int cores = 0;
    bool have = false;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9))
            cores++;
        const char *c = strchr(line, ':');
        if (!have && c &&
            (!strncmp(line, "model name", 10) || !strncmp(line, "Model", 5) ||
             !strncmp(line, "Hardware", 8))) {
            c++;
            while (*c == ' ' || *c == '\t')
                c++;
            snprintf(out, cap, "%.*s", (int)strcspn(c, "\n"), c);
            have = true;
        }
    }
    if (f)
        fclose(f);
    struct utsname u;
    if (!have && uname(&u) == 0)
        snprintf(out, cap, "%.200s", u.machine);
    if (cores > 0) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, " (%d logical CPUs)", cores);
    }
}
