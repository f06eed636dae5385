#include "cl/tune.h"

#include <clblast_c.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"

#define TUNE_FORMAT "manta-clblast-tuning"
#define TUNE_VERSION 1
/* Largest file read: tuner files list every configuration they timed. */
#define TUNE_MAX_FILE ((size_t)64 << 20)

/* ---- the kernels manta applies, with their parameters ------------------ */

typedef struct known_param {
    const char *name;
    size_t lo, hi; /* accepted range */
} known_param;

typedef struct known_kernel {
    const char *kernel;
    size_t count;
    known_param p[16];
} known_kernel;

#define SZ(n)      \
    {              \
        n, 1, 4096 \
    } /* a size or count: zero would divide by zero */
#define SW(n)   \
    {           \
        n, 0, 1 \
    } /* a switch */

/* CLBlast 1.5's single-precision kernels that GEMM uses and their
 * parameters (its database entries; CLBlastOverrideParameters wants all). */
static const known_kernel known[] = {
    {"Xgemm",
     16,
     {SW("GEMMK"), SZ("KREG"), SZ("KWG"), SZ("KWI"), SZ("MDIMA"), SZ("MDIMC"), SZ("MWG"),
      SZ("NDIMB"), SZ("NDIMC"), SZ("NWG"), SW("SA"), SW("SB"), SW("STRM"), SW("STRN"), SZ("VWM"),
      SZ("VWN")}},
    {"XgemmDirect",
     10,
     {SZ("KWID"), SZ("MDIMAD"), SZ("MDIMCD"), SZ("NDIMBD"), SZ("NDIMCD"), SW("PADA"), SW("PADB"),
      SZ("VWMD"), SZ("VWND"), SZ("WGD")}},
    {"Copy", 4, {SZ("COPY_DIMX"), SZ("COPY_DIMY"), SZ("COPY_VW"), SZ("COPY_WPT")}},
    {"Pad", 4, {SZ("PAD_DIMX"), SZ("PAD_DIMY"), SZ("PAD_WPTX"), SZ("PAD_WPTY")}},
    {"Transpose", 4, {SZ("TRA_DIM"), SW("TRA_PAD"), SW("TRA_SHUFFLE"), SZ("TRA_WPT")}},
    {"Padtranspose", 3, {SW("PADTRA_PAD"), SZ("PADTRA_TILE"), SZ("PADTRA_WPT")}},
    {"GemmRoutine", 1, {{"XGEMM_MIN_INDIRECT_SIZE", 0, 65536}}},
};
#define N_KNOWN (sizeof known / sizeof known[0])

#undef SZ
#undef SW

static const known_kernel *find_known(const char *kernel)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strcmp(known[i].kernel, kernel) == 0)
            return &known[i];
    return NULL;
}

const char *mcl_tune_kernel_of_family(const char *family)
{
    static const struct {
        const char *prefix;
        const char *kernel;
        int exact;
    } map[] = {
        {"xgemm_direct_", "XgemmDirect", 0},
        {"xgemm_", "Xgemm", 0},
        {"copy", "Copy", 1},
        {"pad", "Pad", 1},
        {"transpose", "Transpose", 1},
        {"padtranspose", "Padtranspose", 1},
        {"gemm_routine", "GemmRoutine", 1},
    };
    if (!family)
        return NULL;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t n = strlen(map[i].prefix);
        if (map[i].exact
                ? strcmp(family, map[i].prefix) == 0
                : strncmp(family, map[i].prefix, n) == 0 && family[n] >= '0' && family[n] <= '9')
            return map[i].kernel;
    }
    return NULL;
}

static size_t value_of(const mcl_tune_kernel *k, const char *name)
{
    for (size_t i = 0; i < k->count; i++)
        if (strcmp(k->names[i], name) == 0)
            return k->values[i];
    return 0;
}

static bool multiple(size_t x, size_t y) { return y != 0 && x % y == 0; }

/* The divisibility rules CLBlast's tuners impose, for both GEMMK variants:
 * without them work-item counts are fractional and results silently wrong. */
static const char *broken_rule(const mcl_tune_kernel *k)
{
#define V(n) value_of(k, n)
    if (strcmp(k->kernel, "Xgemm") == 0) {
        if (!multiple(V("KWG"), V("KWI")))
            return "KWG must be a multiple of KWI";
        if (!multiple(V("MWG"), V("MDIMC") * V("VWM")) ||
            !multiple(V("MWG"), V("MDIMA") * V("VWM")))
            return "MWG must be a multiple of MDIMC*VWM and MDIMA*VWM";
        if (!multiple(V("NWG"), V("NDIMC") * V("VWN")) ||
            !multiple(V("NWG"), V("NDIMB") * V("VWN")))
            return "NWG must be a multiple of NDIMC*VWN and NDIMB*VWN";
    } else if (strcmp(k->kernel, "XgemmDirect") == 0) {
        size_t wgd = V("WGD"), mc = V("MDIMCD"), nc = V("NDIMCD");
        if (!multiple(wgd, V("KWID")))
            return "WGD must be a multiple of KWID";
        if (!multiple(wgd, mc * V("VWMD")) || !multiple(wgd, V("MDIMAD") * V("VWMD")))
            return "WGD must be a multiple of MDIMCD*VWMD and MDIMAD*VWMD";
        if (!multiple(wgd, nc * V("VWND")) || !multiple(wgd, V("NDIMBD") * V("VWND")))
            return "WGD must be a multiple of NDIMCD*VWND and NDIMBD*VWND";
        if (!multiple(wgd, mc * nc / V("MDIMAD")) || !multiple(wgd, mc * nc / V("NDIMBD")))
            return "WGD must be a multiple of MDIMCD*NDIMCD/MDIMAD and MDIMCD*NDIMCD/NDIMBD";
    }
    return NULL;
#undef V
}

manta_status mcl_tune_kernel_check(const mcl_tune_kernel *k, manta_err *err)
{
    const known_kernel *kk = find_known(k->kernel);
    if (!kk)
        return manta_err_set(err, MANTA_ERR_FORMAT, "unknown CLBlast kernel '%.*s'", MCL_TUNE_NAME,
                             k->kernel);
    if (k->count != kk->count)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "kernel '%s' needs %zu parameters, the set has %zu", kk->kernel,
                             kk->count, k->count);
    for (size_t j = 0; j < kk->count; j++) {
        const known_param *p = &kk->p[j];
        size_t seen = 0, at = 0;
        for (size_t i = 0; i < k->count; i++)
            if (strcmp(k->names[i], p->name) == 0)
                seen++, at = i;
        if (seen != 1)
            return manta_err_set(err, MANTA_ERR_FORMAT, "kernel '%s': parameter %s %s", kk->kernel,
                                 p->name, seen ? "given twice" : "missing");
        if (k->values[at] < p->lo || k->values[at] > p->hi)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "kernel '%s': parameter %s=%zu out of range [%zu, %zu]",
                                 kk->kernel, p->name, k->values[at], p->lo, p->hi);
    }
    const char *rule = broken_rule(k);
    if (rule)
        return manta_err_set(err, MANTA_ERR_FORMAT, "kernel '%s': %s", kk->kernel, rule);
    return MANTA_OK;
}

/* ---- keys and paths ------------------------------------------------------- */

void mcl_tune_key_of(const mcl_device_info *info, mcl_tune_key *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->platform, sizeof out->platform, "%s", info->platform_name);
    snprintf(out->device, sizeof out->device, "%s", info->name);
    snprintf(out->driver, sizeof out->driver, "%s", info->driver_version);
    snprintf(out->clblast, sizeof out->clblast, "%d.%d.%d", CLBLAST_VERSION_MAJOR,
             CLBLAST_VERSION_MINOR, CLBLAST_VERSION_PATCH);
}

bool mcl_tune_key_equal(const mcl_tune_key *a, const mcl_tune_key *b)
{
    return strcmp(a->platform, b->platform) == 0 && strcmp(a->device, b->device) == 0 &&
           strcmp(a->driver, b->driver) == 0 && strcmp(a->clblast, b->clblast) == 0;
}

manta_status mcl_tune_path(const char *cache_dir, const mcl_tune_key *key, char *path, size_t cap,
                           manta_err *err)
{
    if (!cache_dir || !*cache_dir)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "no cache folder for the tuning file (set MANTA_CACHE_DIR or HOME)");
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    /* The name says which device; the hash separates same-named devices of
     * different platforms. Driver and CLBlast versions are checked inside, so
     * a stale file is found and reported instead of silently skipped. */
    unsigned char h[4];
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    crypto_generichash_update(&st, (const unsigned char *)key->platform, strlen(key->platform) + 1);
    crypto_generichash_update(&st, (const unsigned char *)key->device, strlen(key->device) + 1);
    crypto_generichash_final(&st, h, sizeof h);
    char hex[2 * sizeof h + 1];
    sodium_bin2hex(hex, sizeof hex, h, sizeof h);
    char name[41];
    size_t n = 0;
    for (const char *s = key->device; *s && n < sizeof name - 1; s++) {
        char c = *s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (ok)
            name[n++] = c;
        else if (n > 0 && name[n - 1] != '-')
            name[n++] = '-';
    }
    while (n > 0 && name[n - 1] == '-')
        n--;
    name[n] = '\0';
    int w =
        snprintf(path, cap, "%s/clblast-tuning-%s%s%s.json", cache_dir, name, n ? "-" : "", hex);
    if (w < 0 || (size_t)w >= cap)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "cache folder path too long: '%s'",
                             cache_dir);
    return MANTA_OK;
}

/* ---- reading JSON ------------------------------------------------------------ */

static manta_status read_json(const char *path, cJSON **out, manta_err *err)
{
    *out = NULL;
    char *text;
    size_t n;
    MANTA_TRY(manta_file_read(path, TUNE_MAX_FILE, &text, &n, err));
    cJSON *root = cJSON_ParseWithLength(text, n);
    free(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return manta_err_set(err, MANTA_ERR_FORMAT, "'%s' is not a JSON object", path);
    }
    *out = root;
    return MANTA_OK;
}

static const char *get_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_whole(double v, double hi) { return v >= 0 && v <= hi && v == floor(v); }

/* Copy the number-valued members of @p params into @p k (PRECISION skipped). */
static manta_status get_params(const cJSON *params, mcl_tune_kernel *k, const char *path,
                               manta_err *err)
{
    if (!cJSON_IsObject(params))
        return manta_err_set(err, MANTA_ERR_FORMAT, "'%s': parameters of '%s' are not an object",
                             path, k->kernel);
    k->count = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, params)
    {
        if (!p->string || strcmp(p->string, "PRECISION") == 0)
            continue;
        if (!cJSON_IsNumber(p) || !is_whole(p->valuedouble, 1e9))
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "'%s': parameter '%.40s' of '%s' is not a whole number", path,
                                 p->string, k->kernel);
        if (strlen(p->string) >= MCL_TUNE_NAME || k->count == MCL_TUNE_MAX_PARAMS)
            return manta_err_set(err, MANTA_ERR_FORMAT,
                                 "'%s': too many or too long parameter names for '%s'", path,
                                 k->kernel);
        snprintf(k->names[k->count], MCL_TUNE_NAME, "%s", p->string);
        k->values[k->count] = (size_t)p->valuedouble;
        k->count++;
    }
    return MANTA_OK;
}

static size_t get_size_str(const cJSON *o, const char *key)
{
    const char *s = get_str(o, key);
    if (!s)
        return 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    return end != s && *end == '\0' ? (size_t)v : 0;
}

typedef struct ranked {
    const cJSON *r;
    double t;
} ranked;

static int cmp_ranked(const void *a, const void *b)
{
    double x = ((const ranked *)a)->t, y = ((const ranked *)b)->t;
    return (x > y) - (x < y);
}

manta_status mcl_tune_parse_tuner_ranked(const char *path, mcl_tune_kernel *out, size_t max,
                                         size_t *count, char *device, size_t device_cap,
                                         manta_err *err)
{
    *count = 0;
    if (device && device_cap)
        device[0] = '\0';
    if (max == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "no room for results of '%s'", path);
    cJSON *root;
    manta_status st = read_json(path, &root, err);
    if (st != MANTA_OK)
        return st;
    const char *family = get_str(root, "kernel_family");
    const char *precision = get_str(root, "precision");
    const char *kernel = mcl_tune_kernel_of_family(family);
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
    int n = cJSON_IsArray(results) ? cJSON_GetArraySize(results) : 0;
    if (!family || !kernel) {
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "'%s': no CLBlast tuner result manta uses (kernel_family '%.40s')", path,
                           family ? family : "missing");
    } else if (!precision || strcmp(precision, "32") != 0) {
        st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': precision '%.20s', manta tunes 32 only",
                           path, precision ? precision : "missing");
    } else if (n <= 0) {
        st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': no results", path);
    }
    ranked *order = st == MANTA_OK ? malloc((size_t)n * sizeof *order) : NULL;
    if (st == MANTA_OK && !order)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory reading '%s'", path);
    int m = 0;
    const cJSON *r;
    if (st == MANTA_OK) {
        cJSON_ArrayForEach(r, results)
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(r, "time");
            if (!cJSON_IsNumber(t) || !(t->valuedouble >= 0) || !isfinite(t->valuedouble)) {
                st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': a result without a valid time",
                                   path);
                break;
            }
            order[m].r = r;
            order[m++].t = t->valuedouble;
        }
    }
    if (st == MANTA_OK)
        qsort(order, (size_t)m, sizeof *order, cmp_ranked); /* ties: any order */
    size_t got = 0;
    for (int i = 0; st == MANTA_OK && i < m && got < max; i++) {
        mcl_tune_kernel *k = &out[got];
        memset(k, 0, sizeof *k);
        snprintf(k->kernel, sizeof k->kernel, "%s", kernel);
        snprintf(k->family, sizeof k->family, "%.*s", MCL_TUNE_NAME - 1, family);
        st = get_params(cJSON_GetObjectItemCaseSensitive(order[i].r, "parameters"), k, path, err);
        if (st != MANTA_OK)
            break;
        k->time_ms = order[i].t;
        k->m = get_size_str(root, "arg_m");
        k->n = get_size_str(root, "arg_n");
        k->k = get_size_str(root, "arg_k");
        manta_err why;
        if (mcl_tune_kernel_check(k, &why) != MANTA_OK)
            st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': %s", path, why.msg);
        got++;
    }
    if (st == MANTA_OK) {
        const char *dev = get_str(root, "device");
        if (device && device_cap)
            snprintf(device, device_cap, "%s", dev ? dev : "");
        *count = got;
    }
    free(order);
    cJSON_Delete(root);
    return st;
}

manta_status mcl_tune_parse_tuner(const char *path, mcl_tune_kernel *out, char *device,
                                  size_t device_cap, manta_err *err)
{
    size_t n = 0;
    memset(out, 0, sizeof *out);
    return mcl_tune_parse_tuner_ranked(path, out, 1, &n, device, device_cap, err);
}

/* ---- sets ---------------------------------------------------------------------- */

const mcl_tune_kernel *mcl_tune_set_find(const mcl_tune_set *set, const char *kernel)
{
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->k[i].kernel, kernel) == 0)
            return &set->k[i];
    return NULL;
}

manta_status mcl_tune_set_put(mcl_tune_set *set, const mcl_tune_kernel *k, manta_err *err)
{
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->k[i].kernel, k->kernel) == 0) {
            set->k[i] = *k;
            return MANTA_OK;
        }
    if (set->count == MCL_TUNE_MAX_KERNELS)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "tuning set full at kernel '%.*s'",
                             MCL_TUNE_NAME, k->kernel);
    set->k[set->count++] = *k;
    return MANTA_OK;
}

/* ---- tuning files ------------------------------------------------------------ */

manta_status mcl_tune_save(const char *path, const mcl_tune_key *key, const mcl_tune_set *set,
                           const char *note, manta_err *err)
{
    for (size_t i = 0; i < set->count; i++) {
        manta_err why;
        if (mcl_tune_kernel_check(&set->k[i], &why) != MANTA_OK)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "not saving '%s': %s", path, why.msg);
    }
    cJSON *root = cJSON_CreateObject();
    cJSON *kernels = root ? cJSON_AddArrayToObject(root, "kernels") : NULL;
    bool ok = kernels && cJSON_AddStringToObject(root, "format", TUNE_FORMAT) &&
              cJSON_AddNumberToObject(root, "version", TUNE_VERSION) &&
              cJSON_AddStringToObject(root, "platform", key->platform) &&
              cJSON_AddStringToObject(root, "device", key->device) &&
              cJSON_AddStringToObject(root, "driver", key->driver) &&
              cJSON_AddStringToObject(root, "clblast", key->clblast) &&
              (!note || cJSON_AddStringToObject(root, "note", note));
    for (size_t i = 0; ok && i < set->count; i++) {
        const mcl_tune_kernel *k = &set->k[i];
        cJSON *o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(kernels, o);
        ok = ok && cJSON_AddStringToObject(o, "kernel", k->kernel) &&
             cJSON_AddStringToObject(o, "family", k->family) &&
             cJSON_AddNumberToObject(o, "time_ms", k->time_ms) &&
             cJSON_AddNumberToObject(o, "m", (double)k->m) &&
             cJSON_AddNumberToObject(o, "n", (double)k->n) &&
             cJSON_AddNumberToObject(o, "k", (double)k->k);
        cJSON *p = ok ? cJSON_AddObjectToObject(o, "parameters") : NULL;
        ok = ok && p;
        for (size_t j = 0; ok && j < k->count; j++)
            ok = cJSON_AddNumberToObject(p, k->names[j], (double)k->values[j]) != NULL;
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory writing '%s'", path);
    /* The text and a final newline, as the file holds them. */
    size_t len = strlen(text);
    text[len] = '\n';
    manta_status st = manta_file_write_atomic(path, text, len + 1, err);
    free(text);
    return st;
}

static manta_status load_kernel(const cJSON *o, mcl_tune_kernel *k, const char *path,
                                manta_err *err)
{
    memset(k, 0, sizeof *k);
    const char *kernel = get_str(o, "kernel");
    if (!kernel || !find_known(kernel))
        return manta_err_set(err, MANTA_ERR_FORMAT, "'%s': unknown kernel '%.40s'", path,
                             kernel ? kernel : "(missing)");
    snprintf(k->kernel, sizeof k->kernel, "%s", kernel);
    const char *family = get_str(o, "family");
    snprintf(k->family, sizeof k->family, "%.*s", MCL_TUNE_NAME - 1, family ? family : "");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "time_ms");
    k->time_ms = cJSON_IsNumber(t) && isfinite(t->valuedouble) ? t->valuedouble : 0;
    const char *dims[3] = {"m", "n", "k"};
    size_t *dst[3] = {&k->m, &k->n, &k->k};
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, dims[i]);
        *dst[i] = cJSON_IsNumber(v) && is_whole(v->valuedouble, 1e9) ? (size_t)v->valuedouble : 0;
    }
    manta_status st = get_params(cJSON_GetObjectItemCaseSensitive(o, "parameters"), k, path, err);
    if (st != MANTA_OK)
        return st;
    manta_err why;
    if (mcl_tune_kernel_check(k, &why) != MANTA_OK)
        return manta_err_set(err, MANTA_ERR_FORMAT, "'%s': %s", path, why.msg);
    return MANTA_OK;
}

manta_status mcl_tune_load(const char *path, const mcl_tune_key *expect, mcl_tune_set *out,
                           manta_err *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root;
    manta_status st = read_json(path, &root, err);
    if (st != MANTA_OK)
        return st;
    const char *format = get_str(root, "format");
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
    mcl_tune_key key;
    memset(&key, 0, sizeof key);
    const char *fields[4] = {"platform", "device", "driver", "clblast"};
    char *dst[4] = {key.platform, key.device, key.driver, key.clblast};
    size_t cap[4] = {sizeof key.platform, sizeof key.device, sizeof key.driver, sizeof key.clblast};
    bool have_key = true;
    for (int i = 0; i < 4; i++) {
        const char *s = get_str(root, fields[i]);
        if (!s || strlen(s) >= cap[i])
            have_key = false;
        else
            snprintf(dst[i], cap[i], "%s", s);
    }
    if (!format || strcmp(format, TUNE_FORMAT) != 0)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s' is not a manta CLBlast tuning file", path);
    else if (!cJSON_IsNumber(version) || version->valuedouble != TUNE_VERSION)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': unsupported tuning file version", path);
    else if (!have_key)
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "'%s': platform, device, driver or clblast missing", path);
    else if (!mcl_tune_key_equal(&key, expect))
        st = manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                           "'%s' was tuned for '%s' on '%s' (driver %s, CLBlast %s), not for '%s' "
                           "on '%s' (driver %s, CLBlast %s)",
                           path, key.device, key.platform, key.driver, key.clblast, expect->device,
                           expect->platform, expect->driver, expect->clblast);
    else if (!cJSON_IsArray(kernels) || cJSON_GetArraySize(kernels) == 0 ||
             cJSON_GetArraySize(kernels) > MCL_TUNE_MAX_KERNELS)
        st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': kernels must be a list of 1 to %d entries",
                           path, MCL_TUNE_MAX_KERNELS);
    const cJSON *o;
    if (st == MANTA_OK) {
        cJSON_ArrayForEach(o, kernels)
        {
            mcl_tune_kernel k;
            st = load_kernel(o, &k, path, err);
            if (st == MANTA_OK && mcl_tune_set_find(out, k.kernel))
                st = manta_err_set(err, MANTA_ERR_FORMAT, "'%s': kernel '%s' listed twice", path,
                                   k.kernel);
            if (st == MANTA_OK)
                st = mcl_tune_set_put(out, &k, err);
            if (st != MANTA_OK)
                break;
        }
    }
    cJSON_Delete(root);
    if (st != MANTA_OK)
        memset(out, 0, sizeof *out);
    return st;
}

/* ---- applying ------------------------------------------------------------------- */

manta_status mcl_tune_apply(cl_device_id device, const mcl_tune_set *set, manta_err *err)
{
    for (size_t i = 0; i < set->count; i++) {
        manta_err why;
        if (mcl_tune_kernel_check(&set->k[i], &why) != MANTA_OK)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG, "not applying tuning: %s", why.msg);
    }
    for (size_t i = 0; i < set->count; i++) {
        const mcl_tune_kernel *k = &set->k[i];
        const char *names[MCL_TUNE_MAX_PARAMS];
        for (size_t j = 0; j < k->count; j++)
            names[j] = k->names[j];
        CLBlastStatusCode s = CLBlastOverrideParameters(device, k->kernel, CLBlastPrecisionSingle,
                                                        k->count, names, k->values);
        if (s != CLBlastSuccess)
            return manta_err_set(err, MANTA_ERR_BLAS,
                                 "CLBlastOverrideParameters for kernel '%s' failed with CLBlast "
                                 "status %d%s",
                                 k->kernel, (int)s,
                                 i ? " (kernels before it are already overridden)" : "");
    }
    return MANTA_OK;
}

void mcl_tune_autoload(const char *cache_dir, const mcl_device_info *info, mcl_tuning *out)
{
    memset(out, 0, sizeof *out);
    if (!cache_dir || !*cache_dir)
        return;
    mcl_tune_key key;
    mcl_tune_key_of(info, &key);
    manta_err err;
    manta_err_clear(&err);
    if (mcl_tune_path(cache_dir, &key, out->path, sizeof out->path, &err) != MANTA_OK) {
        out->path[0] = '\0';
        snprintf(out->warning, sizeof out->warning, "CLBlast tuning not applied: %.900s", err.msg);
        return;
    }
    if (access(out->path, F_OK) != 0)
        return; /* not tuned: CLBlast's defaults */
    mcl_tune_set *set = malloc(sizeof *set);
    if (!set) {
        snprintf(out->warning, sizeof out->warning, "CLBlast tuning not applied: out of memory");
        return;
    }
    manta_status st = mcl_tune_load(out->path, &key, set, &err);
    if (st == MANTA_OK)
        st = mcl_tune_apply(info->id, set, &err);
    if (st == MANTA_OK) {
        out->active = true;
        out->kernels = (unsigned)set->count;
    } else {
        snprintf(out->warning, sizeof out->warning,
                 "CLBlast tuning file ignored (run 'manta tune' to re-tune): %.900s", err.msg);
    }
    free(set);
}

/* ---- the choice ---------------------------------------------------------------- */

static uint64_t cube(size_t t) { return (uint64_t)t * (uint64_t)t * (uint64_t)t; }

bool mcl_tune_runs_direct(uint64_t mnk, size_t threshold) { return mnk < cube(threshold); }

double mcl_tune_rel_time(const double *before, size_t n_shapes, const mcl_tune_option *o)
{
    double sum = 0;
    for (size_t i = 0; i < n_shapes; i++)
        sum += before[i] / o->gflops[i];
    return sum;
}

size_t mcl_tune_fastest(const double *before, size_t n_shapes, const mcl_tune_option *o,
                        size_t from, size_t n)
{
    size_t b = from;
    for (size_t i = from + 1; i < n; i++)
        if (mcl_tune_rel_time(before, n_shapes, &o[i]) < mcl_tune_rel_time(before, n_shapes, &o[b]))
            b = i;
    return b;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The threshold T that sends the @p n_direct smallest of the @p n sorted sizes
 * to the direct kernel: sorted[n_direct-1] < T^3 <= sorted[n_direct]. */
static size_t threshold_for(const uint64_t *sorted, size_t n, size_t n_direct, size_t t_default)
{
    size_t t, n_def = 0;
    for (size_t s = 0; s < n; s++)
        n_def += sorted[s] < cube(t_default);
    if (t_default > 0 && n_def == n_direct) {
        t = t_default; /* no evidence to move it for other sizes */
    } else if (n_direct == 0) {
        t = (size_t)floor(cbrt((double)sorted[0]) / 2);
    } else if (n_direct == n) {
        t = (size_t)ceil(2 * cbrt((double)sorted[n - 1]));
    } else {
        t = (size_t)floor(
            sqrt(cbrt((double)sorted[n_direct - 1]) * cbrt((double)sorted[n_direct])));
        while (t > 0 && cube(t) > sorted[n_direct])
            t--;
    }
    while (t < MCL_TUNE_ALL_DIRECT && n_direct > 0 && cube(t) <= sorted[n_direct - 1])
        t++;
    return t > MCL_TUNE_ALL_DIRECT ? MCL_TUNE_ALL_DIRECT : t;
}

manta_status mcl_tune_choose(const uint64_t *mnk, const double *before, size_t n_shapes,
                             size_t t_default, const mcl_tune_option *dopt, size_t nd,
                             const mcl_tune_option *iopt, size_t ni, mcl_tune_choice *out,
                             manta_err *err)
{
    if (n_shapes == 0 || n_shapes > MCL_TUNE_MAX_SHAPES || nd == 0 || ni == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "tuning choice: %zu shapes (1 .. %d), %zu direct and %zu indirect "
                             "options (at least 1 each)",
                             n_shapes, MCL_TUNE_MAX_SHAPES, nd, ni);
    uint64_t sorted[MCL_TUNE_MAX_SHAPES]; /* m*n*k: exact, so equal sizes group */
    memcpy(sorted, mnk, n_shapes * sizeof *sorted);
    qsort(sorted, n_shapes, sizeof sorted[0], cmp_u64);
    double best = INFINITY;
    size_t n_best = 0, d_best = 0, i_best = 0; /* direct: the n_best smallest sizes */
    for (size_t d = 0; d < nd; d++)
        for (size_t ii = 0; ii < ni; ii++)
            for (size_t j = 0; j <= n_shapes; j++) {
                if (j > 0 && j < n_shapes && sorted[j] == sorted[j - 1])
                    continue;
                double cost = 0;
                bool harm = false;
                for (size_t s = 0; s < n_shapes; s++) {
                    double g =
                        j > 0 && mnk[s] <= sorted[j - 1] ? dopt[d].gflops[s] : iopt[ii].gflops[s];
                    cost += before[s] / g;
                    harm |= g < (1 - MCL_TUNE_TOLERANCE) * before[s];
                }
                if (!harm && cost < best - 1e-9)
                    best = cost, n_best = j, d_best = d, i_best = ii;
            }
    if (n_best == 0) /* the direct kernel serves no shape */
        d_best = mcl_tune_fastest(before, n_shapes, dopt, 0, nd);
    if (n_best == n_shapes)
        i_best = mcl_tune_fastest(before, n_shapes, iopt, 0, ni);
    memset(out, 0, sizeof *out);
    out->direct = d_best;
    out->indirect = i_best;
    out->threshold = threshold_for(sorted, n_shapes, n_best, t_default);
    for (size_t s = 0; s < n_shapes; s++) {
        out->runs_direct[s] = mcl_tune_runs_direct(mnk[s], out->threshold);
        out->gflops[s] = out->runs_direct[s] ? dopt[d_best].gflops[s] : iopt[i_best].gflops[s];
    }
    return MANTA_OK;
}

manta_status mcl_tune_set_threshold(mcl_tune_set *set, size_t threshold, manta_err *err)
{
    mcl_tune_kernel k;
    memset(&k, 0, sizeof k);
    snprintf(k.kernel, sizeof k.kernel, "GemmRoutine");
    snprintf(k.family, sizeof k.family, "manta");
    snprintf(k.names[0], sizeof k.names[0], "XGEMM_MIN_INDIRECT_SIZE");
    k.values[0] = threshold;
    k.count = 1;
    return mcl_tune_set_put(set, &k, err);
}

manta_status mcl_tune_choice_set(const mcl_tune_choice *ch, const mcl_tune_option *dopt,
                                 const mcl_tune_option *iopt, const mcl_tune_set *helpers,
                                 mcl_tune_set *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    const mcl_tune_option *d = &dopt[ch->direct], *i = &iopt[ch->indirect];
    manta_status st = MANTA_OK;
    if (d->tuned)
        st = mcl_tune_set_put(out, &d->k, err);
    if (st == MANTA_OK && i->tuned)
        st = mcl_tune_set_put(out, &i->k, err);
    for (size_t h = 0; st == MANTA_OK && i->helpers && helpers && h < helpers->count; h++)
        st = mcl_tune_set_put(out, &helpers->k[h], err);
    return st == MANTA_OK ? mcl_tune_set_threshold(out, ch->threshold, err) : st;
}
