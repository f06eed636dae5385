#include "search/acc_predictor.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/container.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/rng.h"
#include "core/strbuf.h"

/* ---- encoding ------------------------------------------------------------------------ */

int accp_feature_dim(const ofa_space *s) { return s->n_res + ofa_slots(s) * (s->n_ks + s->n_e); }

static int index_of(int v, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v)
            return i;
    return -1;
}

manta_status accp_encode(const ofa_space *s, const ofa_arch *a, float *x, manta_err *err)
{
    MANTA_TRY(ofa_arch_validate(s, a, err));
    int dim = accp_feature_dim(s), slots = ofa_slots(s);
    memset(x, 0, (size_t)dim * sizeof *x);
    x[index_of(a->r, s->res, s->n_res)] = 1;
    int k0 = s->n_res, e0 = s->n_res + slots * s->n_ks;
    for (int i = 0; i < slots; i++) {
        if (i % s->max_depth >= a->d[i / s->max_depth])
            continue; /* skipped by depth: all zero */
        x[k0 + i * s->n_ks + index_of(a->ks[i], s->ks, s->n_ks)] = 1;
        x[e0 + i * s->n_e + index_of(a->e[i], s->e, s->n_e)] = 1;
    }
    return MANTA_OK;
}

int accp_stereo_feature_dim(const stereo_space *s)
{
    return s->n_units * s->max_depth * (s->n_ks + s->n_e) + s->n_units * s->n_d +
           s->n_levels * s->n_dec_ratios;
}

manta_status accp_stereo_encode(const stereo_space *s, const ofa_arch *a, float *x, manta_err *err)
{
    MANTA_TRY(stereo_arch_validate(s, a, err));
    const int slots = s->n_units * s->max_depth;
    memset(x, 0, (size_t)accp_stereo_feature_dim(s) * sizeof *x);
    const int e0 = slots * s->n_ks, d0 = e0 + slots * s->n_e, w0 = d0 + s->n_units * s->n_d;
    for (int i = 0; i < slots; i++) {
        if (i % s->max_depth >= a->d[i / s->max_depth])
            continue; /* skipped by depth: all zero */
        x[i * s->n_ks + index_of(a->ks[i], s->ks, s->n_ks)] = 1;
        x[e0 + i * s->n_e + index_of(a->e[i], s->e, s->n_e)] = 1;
    }
    for (int u = 0; u < s->n_units; u++)
        x[d0 + u * s->n_d + index_of(a->d[u], s->d, s->n_d)] = 1;
    for (int l = 0; l < s->n_levels; l++) {
        int c = 0; /* validated: one of the level's widths (two ratios may round alike) */
        while (c < s->n_dec_ratios && stereo_dec_width(s, l, c) != a->dw[l])
            c++;
        x[w0 + l * s->n_dec_ratios + c] = 1;
    }
    return MANTA_OK;
}

/* Indices of the non-zero features of an encoding (at most 1 + 2 * slots). */
static int active_features(const float *x, int dim, int *idx)
{
    int n = 0;
    for (int i = 0; i < dim; i++)
        if (x[i] != 0)
            idx[n++] = i;
    return n;
}

/* ---- data set ------------------------------------------------------------------------ */

void accp_dataset_init(accp_dataset *d, const ofa_space *s)
{
    memset(d, 0, sizeof *d);
    d->space = *s;
}

void accp_dataset_init_stereo(accp_dataset *d, const stereo_space *s)
{
    memset(d, 0, sizeof *d);
    stereo_space_ofa_view(s, &d->space);
    d->stereo = true;
    d->stereo_spec = *s;
}

/* The data set's architecture check: its task's. */
static manta_status dataset_validate(const accp_dataset *d, const ofa_arch *a, manta_err *err)
{
    return d->stereo ? stereo_arch_validate(&d->stereo_spec, a, err)
                     : ofa_arch_validate(&d->space, a, err);
}

/* The space hash of a data set (of its task). */
static manta_status dataset_hash(const accp_dataset *d, char out[PROF_HASH_LEN], manta_err *err)
{
    return d->stereo ? prof_stereo_space_hash(&d->stereo_spec, out, err)
                     : prof_space_hash(&d->space, out, err);
}

/* Append without checks beyond the memory. */
static manta_status dataset_push(accp_dataset *d, const ofa_arch *a, double value, double bad3,
                                 manta_err *err)
{
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 256;
        accp_sample *p = realloc(d->s, cap * sizeof *p);
        if (!p)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                                 "accuracy data set: out of memory for %zu samples", cap);
        d->s = p;
        d->cap = cap;
    }
    d->s[d->n].arch = *a;
    d->s[d->n].value = value;
    d->s[d->n].bad3 = bad3;
    d->n++;
    return MANTA_OK;
}

manta_status accp_dataset_add_stereo(accp_dataset *d, const ofa_arch *a, double epe, double bad3,
                                     manta_err *err)
{
    if (!d->stereo)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "accuracy sample: an EPE sample for the classification data set of "
                             "space '%s'",
                             d->space.name);
    MANTA_TRY(dataset_validate(d, a, err));
    if (!(epe >= 0 && isfinite(epe)))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo sample: epe %g is not a finite number of px >= 0", epe);
    if (!isnan(bad3) && !(bad3 >= 0 && bad3 <= 100))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "stereo sample: bad3 %g is not a percentage in [0, 100]", bad3);
    return dataset_push(d, a, epe, bad3, err);
}

void accp_dataset_free(accp_dataset *d)
{
    if (!d)
        return;
    free(d->s);
    d->s = NULL;
    d->n = d->cap = 0;
}

manta_status accp_dataset_add(accp_dataset *d, const ofa_arch *a, double top1, manta_err *err)
{
    if (d->stereo) /* the value is an EPE */
        return accp_dataset_add_stereo(d, a, top1, NAN, err);
    MANTA_TRY(ofa_arch_validate(&d->space, a, err));
    if (!(top1 >= 0 && top1 <= 1))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "accuracy sample: top1 %g is not a fraction in [0, 1]", top1);
    return dataset_push(d, a, top1, NAN, err);
}

static manta_status read_int_list(const cJSON *o, const char *key, int n, int *dst, const char *ctx,
                                  manta_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(v) && n == 1) { /* "r": 28 as well as "r": [28] */
        if (!manta_json_int_item(v, INT_MIN, INT_MAX, dst))
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be an integer", ctx, key);
        return MANTA_OK;
    }
    const cJSON *a = manta_json_array(o, key, n);
    if (!a)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be a list of %d integers", ctx,
                             key, n);
    int i = 0;
    for (const cJSON *x = a->child; x; x = x->next, i++)
        if (!manta_json_int_item(x, INT_MIN, INT_MAX, &dst[i]))
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\"[%d] is not an integer", ctx,
                                 key, i);
    return MANTA_OK;
}

static manta_status parse_header(const cJSON *j, const char *ctx, const accp_dataset *d,
                                 manta_err *err)
{
    const ofa_space *s = &d->space;
    const char *fmt = manta_json_string(j, "format");
    if (!fmt || strcmp(fmt, "manta-acc-dataset") != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"format\" must be \"manta-acc-dataset\"",
                             ctx);
    int version;
    if (!manta_json_int(j, "version", 1, 1, &version))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"version\" must be 1", ctx);
    const cJSON *sp = manta_json_object(j, "space");
    const char *name = manta_json_string(sp, "name"), *hash = manta_json_string(sp, "hash");
    if (!name || !hash)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: \"space\" must hold \"name\" and \"hash\" strings", ctx);
    const char *task = manta_json_string(j, "task");
    const bool stereo = task && !strcmp(task, "stereo");
    if (stereo != d->stereo)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: a %s data set (space '%s'), not one of %s space '%s'", ctx,
                             stereo ? "stereo (EPE)" : "classification (top-1)", name,
                             d->stereo ? "the stereo" : "the classification", s->name);
    char want[PROF_HASH_LEN];
    MANTA_TRY(dataset_hash(d, want, err));
    if (strcmp(name, s->name) != 0 || strcmp(hash, want) != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: samples of space '%s' (hash %s), not '%s' (hash %s)", ctx, name,
                             hash, s->name, want);
    return MANTA_OK;
}

static manta_status parse_sample(const cJSON *j, const char *ctx, accp_dataset *d, manta_err *err)
{
    const ofa_space *s = &d->space;
    const cJSON *arch = manta_json_object(j, "arch");
    if (!arch)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: missing \"arch\" (an object)", ctx);
    ofa_arch a;
    memset(&a, 0, sizeof a);
    MANTA_TRY(read_int_list(arch, "ks", ofa_slots(s), a.ks, ctx, err));
    MANTA_TRY(read_int_list(arch, "e", ofa_slots(s), a.e, ctx, err));
    MANTA_TRY(read_int_list(arch, "d", s->n_units, a.d, ctx, err));
    const cJSON *top_r = cJSON_GetObjectItemCaseSensitive(j, "r");
    int r = 0;
    if (top_r)
        MANTA_TRY(read_int_list(j, "r", 1, &r, ctx, err));
    if (cJSON_GetObjectItemCaseSensitive(arch, "r")) {
        MANTA_TRY(read_int_list(arch, "r", 1, &a.r, ctx, err));
        if (top_r && r != a.r)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: \"r\" is %d but the architecture's resolution is %d", ctx, r,
                                 a.r);
    } else if (top_r) {
        a.r = r;
    } else {
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: no resolution (\"r\")", ctx);
    }
    if (d->stereo)
        MANTA_TRY(read_int_list(arch, "dw", d->stereo_spec.n_levels, a.dw, ctx, err));
    manta_status st = dataset_validate(d, &a, err);
    if (st != MANTA_OK) {
        char msg[MANTA_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: %s", ctx, msg);
    }
    if (d->stereo) {
        double epe, bad3 = NAN;
        if (!manta_json_number(j, "epe", -HUGE_VAL, HUGE_VAL, &epe))
            return manta_err_set(
                err, MANTA_ERR_FORMAT, "%s: \"epe\" missing or not a number%s", ctx,
                cJSON_GetObjectItemCaseSensitive(j, "top1") ? " (a classification sample: \"top1\")"
                                                            : "");
        if (!(epe >= 0))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: \"epe\" is %g, not a number of px >= 0", ctx, epe);
        if (cJSON_GetObjectItemCaseSensitive(j, "bad3") &&
            (!manta_json_number(j, "bad3", 0, 100, &bad3)))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: \"bad3\" is not a percentage in [0, 100]", ctx);
        return accp_dataset_add_stereo(d, &a, epe, bad3, err);
    }
    double top1;
    if (!manta_json_number(j, "top1", -HUGE_VAL, HUGE_VAL, &top1))
        return manta_err_set(
            err, MANTA_ERR_FORMAT, "%s: \"top1\" missing or not a number%s", ctx,
            cJSON_GetObjectItemCaseSensitive(j, "epe") ? " (a stereo sample: \"epe\")" : "");
    if (!(top1 >= 0 && top1 <= 1))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: \"top1\" is %g, not a fraction in [0, 1]%s", ctx, top1,
                             top1 > 1 && top1 <= 100 ? " (a percentage?)" : "");
    return accp_dataset_add(d, &a, top1, err);
}

/* Parse into @p d, initialised for its space. */
static manta_status parse_lines(const char *text, const char *what, accp_dataset *d, manta_err *err)
{
    if (!what)
        what = "data set";
    manta_status st = MANTA_OK;
    int line = 0;
    bool first = true;
    for (const char *p = text; *p && st == MANTA_OK;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        line++;
        const char *q = p;
        p = end ? end + 1 : p + len;
        while (len > 0 && (q[len - 1] == '\r' || q[len - 1] == ' ' || q[len - 1] == '\t'))
            len--;
        while (len > 0 && (*q == ' ' || *q == '\t')) {
            q++;
            len--;
        }
        if (len == 0)
            continue;
        char ctx[300];
        snprintf(ctx, sizeof ctx, "%.250s:%d", what, line);
        const char *stop = NULL;
        cJSON *j = cJSON_ParseWithLengthOpts(q, len, &stop, 0);
        if (!j || !cJSON_IsObject(j) || (size_t)(stop - q) != len) {
            cJSON_Delete(j);
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: not a JSON object on one line", ctx);
            break;
        }
        if (first && cJSON_GetObjectItemCaseSensitive(j, "format"))
            st = parse_header(j, ctx, d, err);
        else
            st = parse_sample(j, ctx, d, err);
        first = false;
        cJSON_Delete(j);
    }
    if (st != MANTA_OK)
        accp_dataset_free(d);
    return st;
}

manta_status accp_dataset_parse(const char *text, const char *what, const ofa_space *s,
                                accp_dataset *d, manta_err *err)
{
    accp_dataset_init(d, s);
    return parse_lines(text, what, d, err);
}

manta_status accp_dataset_parse_stereo(const char *text, const char *what, const stereo_space *s,
                                       accp_dataset *d, manta_err *err)
{
    accp_dataset_init_stereo(d, s);
    return parse_lines(text, what, d, err);
}

/* Read @p path into @p d, initialised for its space (emptied on error). */
static manta_status load_lines(const char *path, accp_dataset *d, manta_err *err)
{
    char *text;
    MANTA_TRY(manta_file_read(path, ACCP_DATASET_FILE_MAX, &text, NULL, err));
    manta_status st = parse_lines(text, path, d, err);
    free(text);
    return st;
}

manta_status accp_dataset_load(const char *path, const ofa_space *s, accp_dataset *d,
                               manta_err *err)
{
    accp_dataset_init(d, s);
    return load_lines(path, d, err);
}

manta_status accp_dataset_load_stereo(const char *path, const stereo_space *s, accp_dataset *d,
                                      manta_err *err)
{
    accp_dataset_init_stereo(d, s);
    return load_lines(path, d, err);
}

manta_status accp_dataset_save(const accp_dataset *d, const char *path, manta_err *err)
{
    char hash[PROF_HASH_LEN];
    MANTA_TRY(dataset_hash(d, hash, err));
    cJSON *h = cJSON_CreateObject(), *sp = NULL;
    char *header = NULL;
    if (h && cJSON_AddStringToObject(h, "format", "manta-acc-dataset") &&
        cJSON_AddNumberToObject(h, "version", 1) &&
        (!d->stereo || cJSON_AddStringToObject(h, "task", "stereo")) &&
        (sp = cJSON_AddObjectToObject(h, "space")) &&
        cJSON_AddStringToObject(sp, "name", d->space.name) &&
        cJSON_AddStringToObject(sp, "hash", hash))
        header = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    manta_strbuf b = {0};
    if (header)
        manta_strbuf_printf(&b, "%s\n", header);
    free(header);
    for (size_t i = 0; header && i < d->n; i++) {
        char arch[1024], num[40], num3[40];
        const accp_sample *x = &d->s[i];
        manta_status st =
            d->stereo ? stereo_arch_to_json(&d->stereo_spec, &x->arch, arch, sizeof arch, err)
                      : ofa_arch_to_json(&d->space, &x->arch, arch, sizeof arch, err);
        if (st != MANTA_OK) {
            manta_strbuf_free(&b);
            return st;
        }
        if (!d->stereo)
            manta_strbuf_printf(&b, "{\"arch\":%s,\"top1\":%s,\"r\":%d}\n", arch,
                                prof_format_double(num, x->value), x->arch.r);
        else if (isnan(x->bad3))
            manta_strbuf_printf(&b, "{\"arch\":%s,\"epe\":%s,\"r\":%d}\n", arch,
                                prof_format_double(num, x->value), x->arch.r);
        else
            manta_strbuf_printf(&b, "{\"arch\":%s,\"epe\":%s,\"bad3\":%s,\"r\":%d}\n", arch,
                                prof_format_double(num, x->value),
                                prof_format_double(num3, x->bad3), x->arch.r);
    }
    if (!header || b.oom) {
        manta_strbuf_free(&b);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    manta_status st = manta_file_write_atomic(path, b.p, b.n, err);
    manta_strbuf_free(&b);
    return st;
}

manta_status accp_dataset_split(const accp_dataset *d, double frac, uint64_t seed,
                                accp_dataset *train, accp_dataset *test, manta_err *err)
{
    *train = *d; /* the space and task; the samples are added below */
    train->n = train->cap = 0;
    train->s = NULL;
    *test = *train;
    if (!(frac >= 0 && frac <= 1))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "data set split: fraction %g is outside [0, 1]", frac);
    size_t n = d->n ? d->n : 1;
    size_t *group = malloc(n * sizeof *group), *order = malloc(n * sizeof *order);
    if (!group || !order) {
        free(group);
        free(order);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "data set split: out of memory");
    }
    /* group[i]: the first sample of sample i's sub-network; order: the groups' leaders */
    size_t n_groups = 0;
    for (size_t i = 0; i < d->n; i++) {
        group[i] = i;
        for (size_t j = 0; j < i; j++)
            if (group[j] == j && ofa_arch_same_blocks(&d->space, &d->s[i].arch, &d->s[j].arch) &&
                !memcmp(d->s[i].arch.dw, d->s[j].arch.dw, sizeof d->s[i].arch.dw)) {
                group[i] = j;
                break;
            }
        if (group[i] == i)
            order[n_groups++] = i;
    }
    manta_rng rng;
    manta_rng_seed(&rng, seed, 0x5eed);
    for (size_t i = n_groups; i > 1; i--) {
        size_t j = manta_rng_below(&rng, (uint32_t)i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    /* whole groups in shuffled order: to training until it holds its share, then held out */
    size_t n_train = (size_t)llround(frac * (double)d->n);
    manta_status st = MANTA_OK;
    for (size_t g = 0; g < n_groups && st == MANTA_OK; g++) {
        accp_dataset *side = train->n < n_train ? train : test;
        for (size_t i = order[g]; i < d->n && st == MANTA_OK; i++)
            if (group[i] == order[g])
                st = dataset_push(side, &d->s[i].arch, d->s[i].value, d->s[i].bad3, err);
    }
    free(group);
    free(order);
    if (st != MANTA_OK) {
        accp_dataset_free(train);
        accp_dataset_free(test);
    }
    return st;
}

/* ---- model --------------------------------------------------------------------------- */

void accp_config_default(accp_config *c)
{
    memset(c, 0, sizeof *c);
    c->hidden = 400;
    c->layers = 3;
    c->lr = 1e-3;
    c->weight_decay = 1e-4;
    c->batch = 256;
    c->epochs = 100;
    c->seed = 0;
}

/* One linear layer: W (out, in) at params + w, bias (out) at params + b (if any). */
typedef struct lin {
    int in, out;
    size_t w, b;
    bool bias;
} lin;

/* Layers 0 .. layers (the last is the output layer (1, hidden), no bias); returns n_params. */
static size_t layout(int n_in, int hidden, int layers, lin *L)
{
    size_t off = 0;
    for (int l = 0; l <= layers; l++) {
        L[l].in = l == 0 ? n_in : hidden;
        L[l].out = l < layers ? hidden : 1;
        L[l].bias = l < layers;
        L[l].w = off;
        off += (size_t)L[l].in * (size_t)L[l].out;
        L[l].b = off;
        if (L[l].bias)
            off += (size_t)L[l].out;
    }
    return off;
}

static manta_status check_shape(int hidden, int layers, const char *ctx, manta_err *err)
{
    if (hidden < 1 || hidden > ACCP_MAX_HIDDEN)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: hidden width %d outside [1, %d]", ctx,
                             hidden, ACCP_MAX_HIDDEN);
    if (layers < 1 || layers > ACCP_MAX_LAYERS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: %d hidden layers, outside [1, %d]",
                             ctx, layers, ACCP_MAX_LAYERS);
    return MANTA_OK;
}

/* A model of space @p s, or of stereo space @p ss when it is not NULL (@p s then unused). */
static manta_status model_alloc(accp_model *m, const ofa_space *s, const stereo_space *ss,
                                int hidden, int layers, manta_err *err)
{
    memset(m, 0, sizeof *m);
    if (ss) {
        m->stereo = true;
        m->stereo_spec = *ss;
        stereo_space_ofa_view(ss, &m->space);
        MANTA_TRY(prof_stereo_space_hash(ss, m->space_hash, err));
        m->n_in = accp_stereo_feature_dim(ss);
    } else {
        m->space = *s;
        MANTA_TRY(prof_space_hash(s, m->space_hash, err));
        m->n_in = accp_feature_dim(s);
    }
    m->hidden = hidden;
    m->layers = layers;
    lin L[ACCP_MAX_LAYERS + 1];
    m->n_params = layout(m->n_in, hidden, layers, L);
    m->params = calloc(m->n_params, sizeof *m->params);
    if (!m->params)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                             "accuracy predictor: out of memory for %zu parameters", m->n_params);
    return MANTA_OK;
}

static manta_status init_model(accp_model *m, const ofa_space *s, const stereo_space *ss,
                               const accp_config *c, manta_err *err)
{
    memset(m, 0, sizeof *m);
    MANTA_TRY(check_shape(c->hidden, c->layers, "accuracy predictor", err));
    MANTA_TRY(model_alloc(m, s, ss, c->hidden, c->layers, err));
    lin L[ACCP_MAX_LAYERS + 1];
    layout(m->n_in, m->hidden, m->layers, L);
    manta_rng rng;
    manta_rng_seed(&rng, c->seed, 0xacc);
    for (int l = 0; l <= m->layers; l++) {
        float bound = 1.0f / sqrtf((float)L[l].in);
        manta_rng_fill_uniform(&rng, m->params + L[l].w, (size_t)L[l].in * (size_t)L[l].out, bound);
        if (L[l].bias)
            manta_rng_fill_uniform(&rng, m->params + L[l].b, (size_t)L[l].out, bound);
    }
    return MANTA_OK;
}

manta_status accp_init(accp_model *m, const ofa_space *s, const accp_config *c, manta_err *err)
{
    return init_model(m, s, NULL, c, err);
}

manta_status accp_init_stereo(accp_model *m, const stereo_space *s, const accp_config *c,
                              manta_err *err)
{
    return init_model(m, NULL, s, c, err);
}

/* Encode @p a for model @p m (its task's encoding). */
static manta_status model_encode(const accp_model *m, const ofa_arch *a, float *x, manta_err *err)
{
    return m->stereo ? accp_stereo_encode(&m->stereo_spec, a, x, err)
                     : accp_encode(&m->space, a, x, err);
}

void accp_free(accp_model *m)
{
    if (!m)
        return;
    free(m->params);
    m->params = NULL;
    m->n_params = 0;
}

/* Sum of a[i] * b[i] with four partial sums (fixed order: deterministic). */
static float dot(const float *a, const float *b, int n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* First layer on a sparse input: h = relu(W x + b), x given by its non-zero entries. */
static void first_layer(const float *P, const lin *L, const int *idx, const float *xv, int nnz,
                        float *h)
{
    const float *W = P + L->w, *b = P + L->b;
    for (int o = 0; o < L->out; o++) {
        const float *row = W + (size_t)o * (size_t)L->in;
        float s = 0;
        for (int k = 0; k < nnz; k++)
            s += row[idx[k]] * xv[k];
        s += b[o];
        h[o] = s > 0 ? s : 0;
    }
}

/* Dense layer: y = W x (+ b), ReLU when relu. */
static void dense_layer(const float *P, const lin *L, const float *x, float *y, bool relu)
{
    const float *W = P + L->w;
    for (int o = 0; o < L->out; o++) {
        float s = dot(W + (size_t)o * (size_t)L->in, x, L->in);
        if (L->bias)
            s += P[L->b + (size_t)o];
        y[o] = relu && s < 0 ? 0 : s;
    }
}

/* MLP output (without the base accuracy) for one encoding. */
static float forward_one(const accp_model *m, const lin *L, const float *x, float *h0, float *h1)
{
    int idx[ACCP_MAX_FEATURES];
    float xv[ACCP_MAX_FEATURES];
    int nnz = active_features(x, m->n_in, idx);
    for (int k = 0; k < nnz; k++)
        xv[k] = x[idx[k]];
    first_layer(m->params, &L[0], idx, xv, nnz, h0);
    for (int l = 1; l < m->layers; l++) {
        dense_layer(m->params, &L[l], h0, h1, true);
        float *t = h0;
        h0 = h1;
        h1 = t;
    }
    float y;
    dense_layer(m->params, &L[m->layers], h0, &y, false);
    return y;
}

static manta_status same_space(const accp_model *m, const accp_dataset *d, const char *what,
                               manta_err *err)
{
    char hash[PROF_HASH_LEN];
    MANTA_TRY(dataset_hash(d, hash, err));
    if (d->stereo != m->stereo || strcmp(hash, m->space_hash) != 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "accuracy predictor of space '%s' (hash %s) given %s of space '%s' "
                             "(hash %s)",
                             m->space.name, m->space_hash, what, d->space.name, hash);
    return MANTA_OK;
}

manta_status accp_predict(const accp_model *m, const ofa_arch *a, double *acc, manta_err *err)
{
    float x[ACCP_MAX_FEATURES], h0[ACCP_MAX_HIDDEN], h1[ACCP_MAX_HIDDEN];
    MANTA_TRY(model_encode(m, a, x, err));
    lin L[ACCP_MAX_LAYERS + 1];
    layout(m->n_in, m->hidden, m->layers, L);
    *acc = m->base_acc + (double)forward_one(m, L, x, h0, h1);
    return MANTA_OK;
}

manta_status accp_rmse(const accp_model *m, const accp_dataset *d, double *rmse, manta_err *err)
{
    *rmse = -1;
    MANTA_TRY(same_space(m, d, "a data set", err));
    if (d->n == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "accuracy predictor: RMSE of no samples");
    double sum = 0;
    for (size_t i = 0; i < d->n; i++) {
        double p;
        MANTA_TRY(accp_predict(m, &d->s[i].arch, &p, err));
        sum += (p - d->s[i].value) * (p - d->s[i].value);
    }
    *rmse = sqrt(sum / (double)d->n);
    return MANTA_OK;
}

/* Training scratch: encodings and activations of one batch, gradients, Adam moments. */
typedef struct trainbuf {
    float *x;                    /* (n_samples, n_in) encodings of the training set */
    float *act[ACCP_MAX_LAYERS]; /* (B, H) post-ReLU activations of the hidden layers */
    float *g0, *g1;              /* (B, H) gradients w.r.t. activations */
    float *out;                  /* (B) outputs */
    float *grad, *m1, *m2;       /* (n_params) */
    size_t *order;               /* (n_samples) */
} trainbuf;

static void trainbuf_free(trainbuf *t, int layers)
{
    free(t->x);
    for (int l = 0; l < layers; l++)
        free(t->act[l]);
    free(t->g0);
    free(t->g1);
    free(t->out);
    free(t->grad);
    free(t->m1);
    free(t->m2);
    free(t->order);
}

/* One step on samples order[0 .. B): accumulate the MSE gradient into t->grad; returns the loss. */
static double batch_grad(const accp_model *m, const lin *L, trainbuf *t, const accp_dataset *d,
                         const size_t *order, int B)
{
    const int H = m->hidden, NL = m->layers;
    const float *P = m->params;
    int idx[ACCP_MAX_FEATURES];
    float xv[ACCP_MAX_FEATURES];
    /* forward */
    for (int b = 0; b < B; b++) {
        const float *x = t->x + order[b] * (size_t)m->n_in;
        int nnz = active_features(x, m->n_in, idx);
        for (int k = 0; k < nnz; k++)
            xv[k] = x[idx[k]];
        first_layer(P, &L[0], idx, xv, nnz, t->act[0] + (size_t)b * H);
        for (int l = 1; l < NL; l++)
            dense_layer(P, &L[l], t->act[l - 1] + (size_t)b * H, t->act[l] + (size_t)b * H, true);
        dense_layer(P, &L[NL], t->act[NL - 1] + (size_t)b * H, &t->out[b], false);
    }
    /* loss = mean (out + base - y)^2; d loss / d out = 2 (out + base - y) / B */
    double loss = 0;
    float *G = t->g0, *Gn = t->g1;
    const float *WL = P + L[NL].w;
    float *dWL = t->grad + L[NL].w;
    for (int b = 0; b < B; b++) {
        double r = (double)t->out[b] + m->base_acc - d->s[order[b]].value;
        loss += r * r;
        float go = (float)(2.0 * r / B);
        const float *a = t->act[NL - 1] + (size_t)b * H;
        float *g = G + (size_t)b * H;
        for (int i = 0; i < H; i++) {
            dWL[i] += go * a[i];
            g[i] = a[i] > 0 ? go * WL[i] : 0;
        }
    }
    /* hidden layers NL-1 .. 1: G holds d loss / d (pre-activation) of layer l */
    for (int l = NL - 1; l >= 1; l--) {
        const float *W = P + L[l].w;
        float *dW = t->grad + L[l].w, *db = t->grad + L[l].b;
        for (int b = 0; b < B; b++) {
            const float *a = t->act[l - 1] + (size_t)b * H, *g = G + (size_t)b * H;
            float *gn = Gn + (size_t)b * H;
            memset(gn, 0, (size_t)H * sizeof *gn);
            for (int o = 0; o < H; o++) {
                float go = g[o];
                if (go == 0)
                    continue;
                db[o] += go;
                float *dw = dW + (size_t)o * H;
                const float *w = W + (size_t)o * H;
                for (int i = 0; i < H; i++) {
                    dw[i] += go * a[i];
                    gn[i] += go * w[i];
                }
            }
            for (int i = 0; i < H; i++)
                if (!(a[i] > 0))
                    gn[i] = 0;
        }
        float *tmp = G;
        G = Gn;
        Gn = tmp;
    }
    /* first layer: sparse input */
    float *dW0 = t->grad + L[0].w, *db0 = t->grad + L[0].b;
    for (int b = 0; b < B; b++) {
        const float *x = t->x + order[b] * (size_t)m->n_in, *g = G + (size_t)b * H;
        int nnz = active_features(x, m->n_in, idx);
        for (int o = 0; o < H; o++) {
            float go = g[o];
            if (go == 0)
                continue;
            db0[o] += go;
            float *dw = dW0 + (size_t)o * (size_t)m->n_in;
            for (int k = 0; k < nnz; k++)
                dw[idx[k]] += go * x[idx[k]];
        }
    }
    return loss;
}

manta_status accp_train(accp_model *m, const accp_dataset *train, const accp_dataset *valid,
                        const accp_config *c, accp_report *rep, manta_err *err)
{
    if (rep) {
        memset(rep, 0, sizeof *rep);
        rep->valid_rmse = -1;
    }
    MANTA_TRY(same_space(m, train, "a training set", err));
    if (valid)
        MANTA_TRY(same_space(m, valid, "a validation set", err));
    if (train->n == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "accuracy predictor: empty training set");
    if (c->hidden != m->hidden || c->layers != m->layers)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "accuracy predictor: config shape %d x %d differs from the model's "
                             "%d x %d",
                             c->layers, c->hidden, m->layers, m->hidden);
    if (c->batch < 1 || c->epochs < 1 || !(c->lr > 0) || !(c->weight_decay >= 0))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "accuracy predictor: batch %d, epochs %d, lr %g, weight decay %g "
                             "(need batch, epochs >= 1, lr > 0, decay >= 0)",
                             c->batch, c->epochs, c->lr, c->weight_decay);
    const int H = m->hidden;
    const size_t N = train->n;
    const int B = (size_t)c->batch < N ? c->batch : (int)N;
    lin L[ACCP_MAX_LAYERS + 1];
    layout(m->n_in, H, m->layers, L);

    trainbuf t;
    memset(&t, 0, sizeof t);
    bool ok = (t.x = malloc(N * (size_t)m->n_in * sizeof *t.x)) &&
              (t.g0 = malloc((size_t)B * H * sizeof *t.g0)) &&
              (t.g1 = malloc((size_t)B * H * sizeof *t.g1)) &&
              (t.out = malloc((size_t)B * sizeof *t.out)) &&
              (t.grad = malloc(m->n_params * sizeof *t.grad)) &&
              (t.m1 = calloc(m->n_params, sizeof *t.m1)) &&
              (t.m2 = calloc(m->n_params, sizeof *t.m2)) && (t.order = malloc(N * sizeof *t.order));
    for (int l = 0; ok && l < m->layers; l++)
        ok = (t.act[l] = malloc((size_t)B * H * sizeof *t.act[l])) != NULL;
    if (!ok) {
        trainbuf_free(&t, m->layers);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                             "accuracy predictor: out of memory for training scratch");
    }
    double sum = 0;
    manta_status st = MANTA_OK;
    for (size_t i = 0; i < N && st == MANTA_OK; i++) {
        st = model_encode(m, &train->s[i].arch, t.x + i * (size_t)m->n_in, err);
        sum += train->s[i].value;
        t.order[i] = i;
    }
    if (st != MANTA_OK) {
        trainbuf_free(&t, m->layers);
        return st;
    }
    m->base_acc = sum / (double)N;

    manta_rng rng;
    manta_rng_seed(&rng, c->seed, 0xba7c);
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    double b1t = 1, b2t = 1;
    long steps = 0;
    for (int ep = 0; ep < c->epochs; ep++) {
        double loss = 0;
        for (size_t i = N; i > 1; i--) {
            size_t j = manta_rng_below(&rng, (uint32_t)i);
            size_t tmp = t.order[i - 1];
            t.order[i - 1] = t.order[j];
            t.order[j] = tmp;
        }
        for (size_t start = 0; start < N; start += (size_t)B) {
            int nb = (int)(N - start < (size_t)B ? N - start : (size_t)B);
            memset(t.grad, 0, m->n_params * sizeof *t.grad);
            loss += batch_grad(m, L, &t, train, t.order + start, nb);
            /* Adam with L2 weight decay added to the gradient (torch.optim.Adam) */
            steps++;
            b1t *= b1;
            b2t *= b2;
            const float lr_t = (float)(c->lr / (1 - b1t)), wd = (float)c->weight_decay;
            const float c2 = (float)(1 / sqrt(1 - b2t)), fb1 = (float)b1, fb2 = (float)b2;
            float *p = m->params, *g = t.grad, *m1 = t.m1, *m2 = t.m2;
            for (size_t k = 0; k < m->n_params; k++) {
                float gk = g[k] + wd * p[k];
                m1[k] = fb1 * m1[k] + (1 - fb1) * gk;
                m2[k] = fb2 * m2[k] + (1 - fb2) * gk * gk;
                p[k] -= lr_t * m1[k] / (sqrtf(m2[k]) * c2 + (float)eps);
            }
        }
        if (c->progress)
            c->progress(c->progress_ctx, ep + 1, c->epochs, loss / (double)N);
    }
    trainbuf_free(&t, m->layers);
    if (rep) {
        rep->epochs = c->epochs;
        rep->steps = steps;
        MANTA_TRY(accp_rmse(m, train, &rep->train_rmse, err));
        if (valid && valid->n)
            MANTA_TRY(accp_rmse(m, valid, &rep->valid_rmse, err));
    }
    return MANTA_OK;
}

/* ---- model files --------------------------------------------------------------------- */

/* The encoding's name in a model file. */
static const char *encoding_name(bool stereo)
{
    return stereo ? "onehot-k-e-d-dw-v1" : "onehot-r-k-e-v1";
}

manta_status accp_save(const accp_model *m, const char *path, manta_err *err)
{
    char *space_json = NULL, *meta_json = NULL;
    if (m->stereo)
        MANTA_TRY(stereo_space_to_json(&m->stereo_spec, &space_json, err));
    else
        MANTA_TRY(ofa_space_to_json(&m->space, &space_json, err));
    cJSON *j = cJSON_CreateObject(), *sp = NULL;
    bool ok = j && cJSON_AddStringToObject(j, "format", "manta-acc-predictor") &&
              cJSON_AddNumberToObject(j, "version", ACCP_FORMAT_VERSION) &&
              (!m->stereo || cJSON_AddStringToObject(j, "task", "stereo")) &&
              (sp = cJSON_AddObjectToObject(j, "space")) &&
              cJSON_AddStringToObject(sp, "name", m->space.name) &&
              cJSON_AddStringToObject(sp, "hash", m->space_hash) &&
              cJSON_AddNumberToObject(j, "n_in", m->n_in) &&
              cJSON_AddNumberToObject(j, "hidden", m->hidden) &&
              cJSON_AddNumberToObject(j, "layers", m->layers) &&
              prof_json_add_number(j, "base_acc", m->base_acc) &&
              cJSON_AddStringToObject(j, "encoding", encoding_name(m->stereo));
    if (ok)
        meta_json = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!meta_json) {
        free(space_json);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    ckpt_writer *w;
    manta_status st = ckpt_writer_begin(path, NULL, &w, err);
    if (st == MANTA_OK) {
        ckpt_add_json(w, "meta", meta_json);
        ckpt_add_json(w, "space", space_json);
        ckpt_add_f32(w, "params", m->params, m->n_params);
        st = ckpt_writer_commit(w);
    }
    free(space_json);
    free(meta_json);
    return st;
}

static manta_status meta_int(const cJSON *j, const char *key, int *out, const char *path,
                             manta_err *err)
{
    if (!manta_json_int(j, key, INT_MIN, INT_MAX, out))
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: meta \"%s\" missing or not an integer",
                             path, key);
    return MANTA_OK;
}

static manta_status load_meta(const char *text, const char *path, const ofa_space *s,
                              const stereo_space *ss, accp_model *m, manta_err *err)
{
    cJSON *j = cJSON_Parse(text);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: meta is not a JSON object", path);
    }
    manta_status st = MANTA_OK;
    const char *fmt = manta_json_string(j, "format"), *enc = manta_json_string(j, "encoding");
    const char *task = manta_json_string(j, "task");
    const bool stereo = task && !strcmp(task, "stereo"), want_stereo = ss != NULL;
    const char *want_name = ss ? ss->name : s->name, *want_enc = encoding_name(want_stereo);
    const cJSON *sp = manta_json_object(j, "space");
    const char *name = manta_json_string(sp, "name"), *hash = manta_json_string(sp, "hash");
    double ver = -1.0, base_acc = 0; /* version: -1 when absent or not a number */
    (void)manta_json_number(j, "version", -HUGE_VAL, HUGE_VAL, &ver);
    char want[PROF_HASH_LEN];
    int n_in = 0, hidden = 0, layers = 0;
    const int dim = ss ? accp_stereo_feature_dim(ss) : accp_feature_dim(s);
    if (!fmt || strcmp(fmt, "manta-acc-predictor") != 0)
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: not an accuracy predictor (meta \"format\" is not "
                           "\"manta-acc-predictor\")",
                           path);
    else if (ver != ACCP_FORMAT_VERSION)
        st = manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                           "%s: predictor format version %g, this build reads %d", path, ver,
                           ACCP_FORMAT_VERSION);
    else if (!name || !hash)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: meta \"space\" lacks \"name\" or \"hash\"",
                           path);
    else if (stereo != want_stereo)
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: a predictor of %s space '%s', not of the %s space '%s'", path,
                           stereo ? "the stereo (EPE)" : "the classification (top-1)", name,
                           want_stereo ? "stereo" : "classification", want_name);
    else if ((st = ss ? prof_stereo_space_hash(ss, want, err) : prof_space_hash(s, want, err)) !=
             MANTA_OK)
        ;
    else if (strcmp(name, want_name) != 0 || strcmp(hash, want) != 0)
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: a predictor of space '%s' (hash %s), not '%s' (hash %s)", path,
                           name, hash, want_name, want);
    else if (!enc || strcmp(enc, want_enc) != 0)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: meta \"encoding\" is not \"%s\"", path,
                           want_enc);
    else if (!manta_json_number(j, "base_acc", -DBL_MAX, DBL_MAX, &base_acc))
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: meta \"base_acc\" missing or not a number",
                           path);
    else if ((st = meta_int(j, "n_in", &n_in, path, err)) == MANTA_OK &&
             (st = meta_int(j, "hidden", &hidden, path, err)) == MANTA_OK &&
             (st = meta_int(j, "layers", &layers, path, err)) == MANTA_OK) {
        if (n_in != dim)
            st =
                manta_err_set(err, MANTA_ERR_FORMAT, "%s: %d input features, space '%s' encodes %d",
                              path, n_in, want_name, dim);
        else if ((st = check_shape(hidden, layers, path, err)) != MANTA_OK)
            st = MANTA_ERR_FORMAT;
        else if ((st = model_alloc(m, s, ss, hidden, layers, err)) == MANTA_OK)
            m->base_acc = base_acc;
    }
    cJSON_Delete(j);
    return st;
}

static manta_status load_model(const char *path, const ofa_space *s, const stereo_space *ss,
                               accp_model *m, manta_err *err)
{
    memset(m, 0, sizeof *m);
    ckpt_reader *r;
    MANTA_TRY(ckpt_open(path, &r, err));
    char *meta = NULL;
    manta_status st = ckpt_read_json(r, "meta", &meta, NULL, err);
    if (st == MANTA_OK)
        st = load_meta(meta, path, s, ss, m, err);
    if (st == MANTA_OK)
        st = ckpt_read_f32(r, "params", m->params, m->n_params, err);
    for (size_t i = 0; st == MANTA_OK && i < m->n_params; i++)
        if (!isfinite(m->params[i]))
            st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: parameter %zu is not finite", path, i);
    free(meta);
    ckpt_close(r);
    if (st != MANTA_OK)
        accp_free(m);
    return st;
}

manta_status accp_load(const char *path, const ofa_space *s, accp_model *m, manta_err *err)
{
    return load_model(path, s, NULL, m, err);
}

manta_status accp_load_stereo(const char *path, const stereo_space *s, accp_model *m,
                              manta_err *err)
{
    return load_model(path, NULL, s, m, err);
}
