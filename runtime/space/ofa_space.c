#include "space/ofa_space.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/json.h"
#include "space/spec_parse_impl.h"

/* Largest search-space spec file read. */
#define SPACE_FILE_MAX ((size_t)1 << 20)

int ofa_make_divisible(double v, int divisor)
{
    int nv = (int)(v + divisor / 2.0) / divisor * divisor;
    if (nv < divisor)
        nv = divisor;
    if (nv < 0.9 * v)
        nv += divisor;
    return nv;
}

void ofa_spec_set_list(int *n, int *dst, const int *src, int count)
{
    *n = count;
    memcpy(dst, src, (size_t)count * sizeof *src);
}

void ofa_spec_copy_units(ofa_unit_spec *dst, const ofa_unit_spec *src, int n)
{
    /* field by field: copies of initialisers may carry indeterminate padding */
    for (int i = 0; i < n; i++) {
        dst[i].width = src[i].width;
        dst[i].stride = src[i].stride;
        dst[i].act = src[i].act;
        dst[i].se = src[i].se;
    }
}

static void common_choices(ofa_space *s)
{
    ofa_spec_set_list(&s->n_ks, s->ks, (const int[]){3, 5, 7}, 3);
    ofa_spec_set_list(&s->n_e, s->e, (const int[]){3, 4, 6}, 3);
    ofa_spec_set_list(&s->n_d, s->d, (const int[]){2, 3, 4}, 3);
    s->max_depth = 4;
    s->n_units = 5;
    s->stem_kernel = 3;
    s->stem_act = NN_ACT_HSWISH;
    s->first_act = NN_ACT_RELU;
    s->stem_stride1_max_res = 64;
}

void ofa_space_cpu_default(ofa_space *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "cpu-default");
    common_choices(s);
    s->in_channels = 1;
    s->classes = 10;
    ofa_spec_set_list(&s->n_res, s->res, (const int[]){24, 28, 32}, 3);
    s->stem_width = 16;
    s->first_width = 16;
    const ofa_unit_spec u[5] = {{16, 2, NN_ACT_RELU, false},
                                {24, 2, NN_ACT_RELU, true},
                                {40, 2, NN_ACT_HSWISH, false},
                                {64, 2, NN_ACT_HSWISH, true},
                                {96, 2, NN_ACT_HSWISH, true}};
    ofa_spec_copy_units(s->unit, u, 5);
    s->head_expand = 384;
    s->head_mix = 0;
    s->dropout = 0.1f;
}

void ofa_space_mbv3_w10(ofa_space *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "mbv3-w1.0");
    common_choices(s);
    s->in_channels = 3;
    s->classes = 1000;
    s->n_res = 0;
    for (int r = 128; r <= 224; r += 4)
        s->res[s->n_res++] = r;
    s->stem_width = 16;
    s->first_width = 16;
    const ofa_unit_spec u[5] = {{24, 2, NN_ACT_RELU, false},
                                {40, 2, NN_ACT_RELU, true},
                                {80, 2, NN_ACT_HSWISH, false},
                                {112, 1, NN_ACT_HSWISH, true},
                                {160, 2, NN_ACT_HSWISH, true}};
    ofa_spec_copy_units(s->unit, u, 5);
    s->head_expand = 960;
    s->head_mix = 1280;
    s->dropout = 0.1f;
}

/* ---- JSON ------------------------------------------------------------------------ */

manta_status ofa_spec_int(const cJSON *o, const char *key, int lo, int hi, int *out,
                          const char *ctx, manta_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be an integer", ctx, key);
    if (v->valueint < lo || v->valueint > hi)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" is %d, outside [%d, %d]", ctx, key,
                             v->valueint, lo, hi);
    *out = v->valueint;
    return MANTA_OK;
}

manta_status ofa_spec_act(const cJSON *o, const char *key, bool leaky_too, nn_act *out,
                          const char *ctx, manta_err *err)
{
    const char *s = manta_json_string(o, key);
    if (s && !strcmp(s, "relu"))
        *out = NN_ACT_RELU;
    else if (s && !strcmp(s, "h-swish"))
        *out = NN_ACT_HSWISH;
    else if (s && leaky_too && !strcmp(s, "leaky-relu"))
        *out = NN_ACT_LEAKY_RELU;
    else
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be \"relu\"%s or \"h-swish\"",
                             ctx, key, leaky_too ? ", \"leaky-relu\"" : "");
    return MANTA_OK;
}

manta_status ofa_spec_list(const cJSON *o, const char *key, int cap, int lo, int hi, bool ascending,
                           int *n, int *dst, const char *ctx, manta_err *err)
{
    const cJSON *a = manta_json_array(o, key, -1);
    int count = cJSON_GetArraySize(a);
    if (!a || count < 1 || count > cap)
        return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"%s\" must be a list of 1 to %d values",
                             ctx, key, cap);
    for (int i = 0; i < count; i++)
        if (!manta_json_int_item(cJSON_GetArrayItem(a, i), lo, hi, &dst[i]) ||
            (ascending && i > 0 && dst[i] <= dst[i - 1]))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "%s: \"%s\"[%d] must be an integer in [%d, %d]%s", ctx, key, i, lo,
                                 hi, ascending ? ", ascending" : "");
    *n = count;
    return MANTA_OK;
}

manta_status ofa_spec_choices(const cJSON *j, int *n_ks, int *ks, int *n_e, int *e, int *n_d,
                              int *d, manta_err *err)
{
    MANTA_TRY(
        ofa_spec_list(j, "kernel_sizes", OFA_MAX_CHOICES, 1, 9, true, n_ks, ks, "space", err));
    MANTA_TRY(ofa_spec_list(j, "expand_ratios", OFA_MAX_CHOICES, 1, 8, true, n_e, e, "space", err));
    return ofa_spec_list(j, "depths", OFA_MAX_CHOICES, 1, OFA_MAX_DEPTH, true, n_d, d, "space",
                         err);
}

manta_status ofa_spec_format(const cJSON *j, manta_err *err)
{
    const char *fmt = manta_json_string(j, "format");
    if (!fmt || strcmp(fmt, "manta-ofa-space") != 0)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"format\" must be \"manta-ofa-space\"");
    return MANTA_OK;
}

manta_status ofa_spec_name(const cJSON *j, char *name, size_t cap, manta_err *err)
{
    const char *v = manta_json_string(j, "name");
    if (!v || !*v || strlen(v) >= cap)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"name\" must be a short string");
    snprintf(name, cap, "%s", v);
    return MANTA_OK;
}

manta_status ofa_spec_units(const cJSON *j, int min_units, ofa_spec_int_fn get_int,
                            ofa_unit_spec *unit, int *n_units, manta_err *err)
{
    const cJSON *units = manta_json_array(j, "units", -1);
    *n_units = cJSON_GetArraySize(units);
    if (!units || *n_units < min_units || *n_units > OFA_MAX_UNITS)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"units\" must list %d to %d units",
                             min_units, OFA_MAX_UNITS);
    for (int u = 0; u < *n_units; u++) {
        const cJSON *o = cJSON_GetArrayItem(units, u);
        char ctx[32];
        snprintf(ctx, sizeof ctx, "space.units[%d]", u);
        MANTA_TRY(get_int(o, "width", 1, 4096, &unit[u].width, ctx, err));
        MANTA_TRY(get_int(o, "stride", 1, 2, &unit[u].stride, ctx, err));
        MANTA_TRY(ofa_spec_act(o, "act", false, &unit[u].act, ctx, err));
        if (!manta_json_bool(o, "se", &unit[u].se))
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: \"se\" must be true or false", ctx);
    }
    return MANTA_OK;
}

manta_status ofa_spec_parse_text(const char *json, ofa_spec_parse_fn parse, void *out, size_t size,
                                 manta_err *err)
{
    memset(out, 0, size);
    cJSON *j = cJSON_Parse(json);
    if (!j)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: not valid JSON near '%.20s'",
                             cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "");
    manta_status st = parse(j, out, err);
    cJSON_Delete(j);
    return st;
}

manta_status ofa_spec_read_file(const char *path, const char *builtins, char **buf, manta_err *err)
{
    manta_err why;
    manta_status st = manta_file_read(path, SPACE_FILE_MAX, buf, NULL, &why);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "%s (give a file or a built-in: %s)", why.msg, builtins);
    return MANTA_OK;
}

manta_status ofa_spec_load_file(const char *path, const char *builtins, ofa_spec_parse_fn parse,
                                void *out, size_t size, manta_err *err)
{
    char *buf;
    MANTA_TRY(ofa_spec_read_file(path, builtins, &buf, err));
    manta_status st = ofa_spec_parse_text(buf, parse, out, size, err);
    free(buf);
    if (st != MANTA_OK && err) {
        char msg[MANTA_ERR_MSG_MAX];
        snprintf(msg, sizeof msg, "%s", err->msg);
        manta_err_set(err, st, "%s: %s", path, msg);
    }
    return st;
}

static manta_status parse_obj(const cJSON *j, void *out, manta_err *err)
{
    ofa_space *s = out;
    MANTA_TRY(ofa_spec_format(j, err));
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(j, "task");
    if (task && cJSON_IsString(task) && !strcmp(task->valuestring, "stereo"))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"task\" is \"stereo\": a stereo space, read by "
                             "stereo_space_load() (space/stereo_space.h), not by the "
                             "classification loader");
    if (task && (!cJSON_IsString(task) || strcmp(task->valuestring, "classification") != 0))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "space: \"task\" must be \"classification\" or absent (or "
                             "\"stereo\", for stereo_space_load())");
    int version;
    MANTA_TRY(ofa_spec_int(j, "version", 1, 1, &version, "space", err));
    MANTA_TRY(ofa_spec_name(j, s->name, sizeof s->name, err));
    MANTA_TRY(ofa_spec_int(j, "input_channels", 1, 3, &s->in_channels, "space", err));
    if (s->in_channels == 2)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space: \"input_channels\" must be 1 or 3");
    MANTA_TRY(ofa_spec_int(j, "classes", 2, 100000, &s->classes, "space", err));
    MANTA_TRY(ofa_spec_list(j, "resolutions", OFA_MAX_RES, 8, 1024, true, &s->n_res, s->res,
                            "space", err));
    MANTA_TRY(ofa_spec_choices(j, &s->n_ks, s->ks, &s->n_e, s->e, &s->n_d, s->d, err));
    for (int i = 0; i < s->n_ks; i++)
        if (s->ks[i] % 2 == 0)
            return manta_err_set(err, MANTA_ERR_FORMAT, "space: kernel size %d is not odd",
                                 s->ks[i]);
    s->max_depth = s->d[s->n_d - 1];

    const cJSON *stem = cJSON_GetObjectItemCaseSensitive(j, "stem");
    MANTA_TRY(ofa_spec_int(stem, "width", 1, 4096, &s->stem_width, "space.stem", err));
    MANTA_TRY(ofa_spec_int(stem, "kernel", 1, 9, &s->stem_kernel, "space.stem", err));
    MANTA_TRY(ofa_spec_int(stem, "stride1_max_res", 0, 100000, &s->stem_stride1_max_res,
                           "space.stem", err));
    MANTA_TRY(ofa_spec_act(stem, "act", false, &s->stem_act, "space.stem", err));
    const cJSON *first = cJSON_GetObjectItemCaseSensitive(j, "first_block");
    MANTA_TRY(ofa_spec_int(first, "width", 1, 4096, &s->first_width, "space.first_block", err));
    MANTA_TRY(ofa_spec_act(first, "act", false, &s->first_act, "space.first_block", err));

    MANTA_TRY(ofa_spec_units(j, 1, ofa_spec_int, s->unit, &s->n_units, err));
    const cJSON *head = cJSON_GetObjectItemCaseSensitive(j, "head");
    MANTA_TRY(ofa_spec_int(head, "expand", 1, 100000, &s->head_expand, "space.head", err));
    MANTA_TRY(ofa_spec_int(head, "mix", 0, 100000, &s->head_mix, "space.head", err));
    const cJSON *dr = cJSON_GetObjectItemCaseSensitive(head, "dropout");
    if (!cJSON_IsNumber(dr) || dr->valuedouble < 0 || dr->valuedouble >= 1)
        return manta_err_set(err, MANTA_ERR_FORMAT, "space.head: \"dropout\" must be in [0, 1)");
    s->dropout = (float)dr->valuedouble;
    return MANTA_OK;
}

manta_status ofa_space_parse(const char *json, ofa_space *out, manta_err *err)
{
    return ofa_spec_parse_text(json, parse_obj, out, sizeof *out, err);
}

manta_status ofa_space_load(const char *path_or_name, ofa_space *out, manta_err *err)
{
    if (!strcmp(path_or_name, "cpu-default")) {
        ofa_space_cpu_default(out);
        return MANTA_OK;
    }
    if (!strcmp(path_or_name, "mbv3-w1.0")) {
        ofa_space_mbv3_w10(out);
        return MANTA_OK;
    }
    return ofa_spec_load_file(path_or_name, OFA_SPEC_BUILTINS, parse_obj, out, sizeof *out, err);
}

static const char *act_json(nn_act a) { return a == NN_ACT_RELU ? "relu" : "h-swish"; }

manta_status ofa_space_to_json(const ofa_space *s, char **out, manta_err *err)
{
    *out = NULL;
    cJSON *j = cJSON_CreateObject();
    cJSON *stem = cJSON_CreateObject(), *first = cJSON_CreateObject(), *head = cJSON_CreateObject();
    cJSON *units = cJSON_CreateArray();
    if (!j || !stem || !first || !head || !units) {
        cJSON_Delete(j), cJSON_Delete(stem), cJSON_Delete(first), cJSON_Delete(head);
        cJSON_Delete(units);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "space '%s': out of memory", s->name);
    }
    cJSON_AddStringToObject(j, "format", "manta-ofa-space");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "name", s->name);
    cJSON_AddNumberToObject(j, "input_channels", s->in_channels);
    cJSON_AddNumberToObject(j, "classes", s->classes);
    cJSON_AddItemToObject(j, "resolutions", cJSON_CreateIntArray(s->res, s->n_res));
    cJSON_AddItemToObject(j, "kernel_sizes", cJSON_CreateIntArray(s->ks, s->n_ks));
    cJSON_AddItemToObject(j, "expand_ratios", cJSON_CreateIntArray(s->e, s->n_e));
    cJSON_AddItemToObject(j, "depths", cJSON_CreateIntArray(s->d, s->n_d));
    cJSON_AddNumberToObject(stem, "width", s->stem_width);
    cJSON_AddNumberToObject(stem, "kernel", s->stem_kernel);
    cJSON_AddNumberToObject(stem, "stride1_max_res", s->stem_stride1_max_res);
    cJSON_AddStringToObject(stem, "act", act_json(s->stem_act));
    cJSON_AddItemToObject(j, "stem", stem);
    cJSON_AddNumberToObject(first, "width", s->first_width);
    cJSON_AddStringToObject(first, "act", act_json(s->first_act));
    cJSON_AddItemToObject(j, "first_block", first);
    for (int u = 0; u < s->n_units; u++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "width", s->unit[u].width);
        cJSON_AddNumberToObject(o, "stride", s->unit[u].stride);
        cJSON_AddStringToObject(o, "act", act_json(s->unit[u].act));
        cJSON_AddBoolToObject(o, "se", s->unit[u].se);
        cJSON_AddItemToArray(units, o);
    }
    cJSON_AddItemToObject(j, "units", units);
    cJSON_AddNumberToObject(head, "expand", s->head_expand);
    cJSON_AddNumberToObject(head, "mix", s->head_mix);
    cJSON_AddNumberToObject(head, "dropout", (double)s->dropout);
    cJSON_AddItemToObject(j, "head", head);
    *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!*out)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "space '%s': out of memory", s->name);
    return MANTA_OK;
}

/* ---- architectures ------------------------------------------------------------------ */

static int pick_res(const ofa_space *s, int r, bool largest)
{
    return r > 0 ? r : s->res[largest ? s->n_res - 1 : 0];
}

static void arch_fill(const ofa_space *s, int r, int ks, int e, int d, ofa_arch *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < ofa_slots(s); i++) {
        a->ks[i] = ks;
        a->e[i] = e;
    }
    for (int u = 0; u < s->n_units; u++)
        a->d[u] = d;
    a->r = r;
}

void ofa_arch_max(const ofa_space *s, int r, ofa_arch *a)
{
    arch_fill(s, pick_res(s, r, true), s->ks[s->n_ks - 1], s->e[s->n_e - 1], s->d[s->n_d - 1], a);
}

void ofa_arch_min(const ofa_space *s, int r, ofa_arch *a)
{
    arch_fill(s, pick_res(s, r, false), s->ks[0], s->e[0], s->d[0], a);
}

void ofa_arch_uniform(const ofa_space *s, int k, int e, int d, int r, ofa_arch *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < ofa_slots(s); i++) {
        a->ks[i] = k;
        a->e[i] = e;
    }
    for (int u = 0; u < s->n_units; u++)
        a->d[u] = d;
    a->r = r;
}

bool ofa_arch_same_blocks(const ofa_space *s, const ofa_arch *a, const ofa_arch *b)
{
    for (int u = 0; u < s->n_units; u++) {
        if (a->d[u] != b->d[u])
            return false;
        for (int j = 0; j < a->d[u]; j++) {
            int i = u * s->max_depth + j;
            if (a->ks[i] != b->ks[i] || a->e[i] != b->e[i])
                return false;
        }
    }
    return true;
}

void ofa_arch_sample(const ofa_space *s, manta_rng *rng, ofa_arch *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 0; i < ofa_slots(s); i++) {
        a->ks[i] = s->ks[manta_rng_below(rng, (uint32_t)s->n_ks)];
        a->e[i] = s->e[manta_rng_below(rng, (uint32_t)s->n_e)];
    }
    for (int u = 0; u < s->n_units; u++)
        a->d[u] = s->d[manta_rng_below(rng, (uint32_t)s->n_d)];
    a->r = s->res[manta_rng_below(rng, (uint32_t)s->n_res)];
}

/* A point uniform on the simplex of @p n weights (normalised exponential
 * draws), written as cumulative sums into @p cum (cum[n - 1] = 1). */
static void simplex_cdf(manta_rng *rng, int n, double *cum)
{
    double sum = 0;
    for (int i = 0; i < n; i++) {
        /* uniform in (0, 1]: log never sees 0 */
        double u = 1.0 - (double)manta_rng_u32(rng) / 4294967296.0;
        sum += -log(u);
        cum[i] = sum;
    }
    for (int i = 0; i < n; i++)
        cum[i] /= sum;
}

static int draw_cdf(manta_rng *rng, const double *cum, int n)
{
    double u = (double)manta_rng_u32(rng) / 4294967296.0;
    int i = 0;
    while (i < n - 1 && u >= cum[i])
        i++;
    return i;
}

void ofa_arch_sample_mixed(const ofa_space *s, manta_rng *rng, ofa_arch *a)
{
    double ck[OFA_MAX_CHOICES], ce[OFA_MAX_CHOICES], cd[OFA_MAX_CHOICES];
    memset(a, 0, sizeof *a);
    simplex_cdf(rng, s->n_ks, ck);
    simplex_cdf(rng, s->n_e, ce);
    simplex_cdf(rng, s->n_d, cd);
    for (int i = 0; i < ofa_slots(s); i++) {
        a->ks[i] = s->ks[draw_cdf(rng, ck, s->n_ks)];
        a->e[i] = s->e[draw_cdf(rng, ce, s->n_e)];
    }
    for (int u = 0; u < s->n_units; u++)
        a->d[u] = s->d[draw_cdf(rng, cd, s->n_d)];
    a->r = s->res[manta_rng_below(rng, (uint32_t)s->n_res)];
}

static bool in_list(int v, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v)
            return true;
    return false;
}

manta_status ofa_arch_validate(const ofa_space *s, const ofa_arch *a, manta_err *err)
{
    for (int i = 0; i < ofa_slots(s); i++) {
        if (!in_list(a->ks[i], s->ks, s->n_ks))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "architecture: ks[%d] = %d is not a kernel size of space '%s'", i,
                                 a->ks[i], s->name);
        if (!in_list(a->e[i], s->e, s->n_e))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "architecture: e[%d] = %d is not an expand ratio of space '%s'", i,
                                 a->e[i], s->name);
    }
    for (int u = 0; u < s->n_units; u++)
        if (!in_list(a->d[u], s->d, s->n_d))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "architecture: d[%d] = %d is not a depth of space '%s'", u,
                                 a->d[u], s->name);
    if (!in_list(a->r, s->res, s->n_res))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "architecture: resolution %d is not one of space '%s'", a->r, s->name);
    return MANTA_OK;
}

static size_t put_list(char *buf, size_t cap, size_t pos, const char *key, const int *v, int n)
{
    pos += (size_t)snprintf(buf + (pos < cap ? pos : cap), pos < cap ? cap - pos : 0, "%s\"%s\":[",
                            pos > 1 ? "," : "", key);
    for (int i = 0; i < n; i++)
        pos += (size_t)snprintf(buf + (pos < cap ? pos : cap), pos < cap ? cap - pos : 0, "%s%d",
                                i ? "," : "", v[i]);
    pos += (size_t)snprintf(buf + (pos < cap ? pos : cap), pos < cap ? cap - pos : 0, "]");
    return pos;
}

manta_status ofa_arch_to_json(const ofa_space *s, const ofa_arch *a, char *buf, size_t cap,
                              manta_err *err)
{
    if (cap < 2)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "architecture JSON: buffer too small");
    size_t pos = (size_t)snprintf(buf, cap, "{");
    pos = put_list(buf, cap, pos, "ks", a->ks, ofa_slots(s));
    pos = put_list(buf, cap, pos, "e", a->e, ofa_slots(s));
    pos = put_list(buf, cap, pos, "d", a->d, s->n_units);
    pos = put_list(buf, cap, pos, "r", &a->r, 1);
    pos += (size_t)snprintf(buf + (pos < cap ? pos : cap), pos < cap ? cap - pos : 0, "}");
    if (pos >= cap)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "architecture JSON needs %zu bytes, buffer has %zu", pos + 1, cap);
    return MANTA_OK;
}

static manta_status read_ints(const cJSON *j, const char *key, int n, int *dst, manta_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (cJSON_IsNumber(a) && n == 1) { /* "r": 32 as well as "r": [32] */
        dst[0] = a->valueint;
        return MANTA_OK;
    }
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "architecture: \"%s\" must be a list of %d integers", key, n);
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(v))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "architecture: \"%s\"[%d] is not a number", key, i);
        dst[i] = v->valueint;
    }
    return MANTA_OK;
}

manta_status ofa_arch_parse(const ofa_space *s, const char *json, ofa_arch *a, manta_err *err)
{
    memset(a, 0, sizeof *a);
    cJSON *j = cJSON_Parse(json);
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "architecture: not a JSON object");
    }
    manta_status st = read_ints(j, "ks", ofa_slots(s), a->ks, err);
    if (st == MANTA_OK)
        st = read_ints(j, "e", ofa_slots(s), a->e, err);
    if (st == MANTA_OK)
        st = read_ints(j, "d", s->n_units, a->d, err);
    if (st == MANTA_OK)
        st = read_ints(j, "r", 1, &a->r, err);
    cJSON_Delete(j);
    return st == MANTA_OK ? ofa_arch_validate(s, a, err) : st;
}

/* ---- description ---------------------------------------------------------------------- */

static int conv_out(int in, int k, int stride) { return (in + 2 * (k / 2) - k) / stride + 1; }

static ofa_layer *add_layer(ofa_desc *d, const char *name, ofa_layer_kind kind, int h, int w,
                            int cin, int cout, int k, int stride, bool bn, nn_act act)
{
    ofa_layer *l = &d->layer[d->n++];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->kind = kind;
    l->in_h = h, l->in_w = w, l->in_c = cin, l->out_c = cout;
    l->kernel = k, l->stride = stride, l->bn = bn, l->act = act;
    l->out_h = kind == OFA_L_POOL || kind == OFA_L_LINEAR ? 1 : conv_out(h, k, stride);
    l->out_w = kind == OFA_L_POOL || kind == OFA_L_LINEAR ? 1 : conv_out(w, k, stride);
    double out_px = (double)l->out_h * l->out_w;
    switch (kind) {
    case OFA_L_CONV:
        l->macs = out_px * cout * cin * k * k;
        l->params = (long)cout * cin * k * k;
        break;
    case OFA_L_DWCONV:
        l->macs = out_px * cout * k * k;
        l->params = (long)cout * k * k;
        break;
    case OFA_L_LINEAR:
        l->macs = (double)cin * cout;
        l->params = (long)cin * cout + cout;
        break;
    default: break;
    }
    if (bn)
        l->params += 2L * cout;
    d->macs += l->macs;
    d->params += l->params;
    return l;
}

manta_status ofa_describe(const ofa_space *s, const ofa_arch *a, ofa_desc *d, manta_err *err)
{
    memset(d, 0, sizeof *d);
    manta_status st = ofa_arch_validate(s, a, err);
    if (st != MANTA_OK)
        return st;
    int h = a->r, stride = a->r <= s->stem_stride1_max_res ? 1 : 2;
    ofa_layer *l = add_layer(d, "stem", OFA_L_CONV, h, h, s->in_channels, s->stem_width,
                             s->stem_kernel, stride, true, s->stem_act);
    h = l->out_h;
    int c = s->stem_width;
    add_layer(d, "first.dw", OFA_L_DWCONV, h, h, c, c, 3, 1, true, s->first_act);
    l = add_layer(d, "first.project", OFA_L_CONV, h, h, c, s->first_width, 1, 1, true, NN_ACT_NONE);
    l->residual = c == s->first_width;
    c = s->first_width;
    char name[48];
    for (int u = 0; u < s->n_units; u++) {
        const ofa_unit_spec *us = &s->unit[u];
        for (int j = 0; j < a->d[u]; j++) {
            int slot = u * s->max_depth + j, k = a->ks[slot];
            int st1 = j == 0 ? us->stride : 1;
            int mid = ofa_make_divisible((double)c * a->e[slot], 8);
            snprintf(name, sizeof name, "u%d.b%d.expand", u + 1, j + 1);
            add_layer(d, name, OFA_L_CONV, h, h, c, mid, 1, 1, true, us->act);
            snprintf(name, sizeof name, "u%d.b%d.dw", u + 1, j + 1);
            l = add_layer(d, name, OFA_L_DWCONV, h, h, mid, mid, k, st1, true, us->act);
            h = l->out_h;
            if (us->se) {
                int se = ofa_make_divisible(mid / 4.0, 8);
                snprintf(name, sizeof name, "u%d.b%d.se", u + 1, j + 1);
                l = add_layer(d, name, OFA_L_SE, h, h, mid, mid, 1, 1, false, NN_ACT_HSIGMOID);
                l->macs = 2.0 * mid * se;
                l->params = 2L * mid * se + se + mid;
                d->macs += l->macs;
                d->params += l->params;
            }
            snprintf(name, sizeof name, "u%d.b%d.project", u + 1, j + 1);
            l = add_layer(d, name, OFA_L_CONV, h, h, mid, us->width, 1, 1, true, NN_ACT_NONE);
            l->residual = st1 == 1 && c == us->width;
            c = us->width;
        }
    }
    add_layer(d, "head.expand", OFA_L_CONV, h, h, c, s->head_expand, 1, 1, true, NN_ACT_HSWISH);
    c = s->head_expand;
    add_layer(d, "head.pool", OFA_L_POOL, h, h, c, c, 1, 1, false, NN_ACT_NONE);
    if (s->head_mix > 0) {
        l = add_layer(d, "head.mix", OFA_L_CONV, 1, 1, c, s->head_mix, 1, 1, false, NN_ACT_HSWISH);
        c = s->head_mix;
    }
    add_layer(d, "classifier", OFA_L_LINEAR, 1, 1, c, s->classes, 1, 1, false, NN_ACT_NONE);
    return MANTA_OK;
}
