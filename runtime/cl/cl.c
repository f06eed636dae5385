#include "cl/cl.h"

#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/sources.h"
#include "cl/tune.h"
#include "core/env.h"
#include "core/fileio.h"

/* Most distinct kernels one device caches; the embedded files hold fewer. */
#define MCL_MAX_KERNELS 256
#define MCL_MAX_PROGRAMS 64
/* Largest cached program binary read back. */
#define MCL_MAX_CACHED_BINARY ((size_t)1 << 30)
/* Most work-items of one work-group of a launch without a local size on a CPU device. PoCL runs
 * a work-group as one function on a worker thread's stack (8 MiB) that holds every work-item's
 * private arrays, up to about 2.6 KB in our kernels (float8 accumulators); left to choose, it
 * takes groups of 4096, which overflowed the stack for stereo-gpu's deconvolution weight
 * gradient. Its CL_KERNEL_PRIVATE_MEM_SIZE (1024 for every kernel) cannot tell which kernels. A
 * small grid gets smaller groups, four per compute unit, as PoCL's own choice spreads it: one
 * group of a whole small grid left a worker idle (7% of a stereo training step's wall time). */
#define MCL_CPU_AUTO_GROUP 1024

typedef struct kernel_entry {
    const char *program; /* points at the embedded table (stable) */
    char name[64];
    cl_kernel k;
    size_t wg_max;       /* CL_KERNEL_WORK_GROUP_SIZE, within the device's limit */
    size_t local_static; /* CL_KERNEL_LOCAL_MEM_SIZE before any __local argument */
    size_t wg_auto;      /* most work-items of a launch without a local size; 0: the driver's */
} kernel_entry;

typedef struct program_entry {
    const char *name;
    cl_program prog;
} program_entry;

struct mcl_dev {
    mcl_device_info info;
    cl_context ctx;
    cl_command_queue queue;
    char cache_dir[1024]; /* empty: caching off */
    program_entry programs[MCL_MAX_PROGRAMS];
    size_t n_programs;
    kernel_entry kernels[MCL_MAX_KERNELS];
    size_t n_kernels;
    mcl_stats stats;
    mcl_tuning tuning;
    mcl_variant variant;
    mcl_launch_log *log;     /* NULL: launches are not recorded */
    size_t blas_index_limit; /* mcl_blas_index_limit() */
    manta_err err;
};

/* ---- names ---------------------------------------------------------------- */

const char *mcl_type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "gpu";
    if (t & CL_DEVICE_TYPE_CPU)
        return "cpu";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

const char *mcl_error_name(cl_int code)
{
    switch (code) {
        /* a table: one name per error code */
        // clang-format off
#define E(x) case x: return #x;
        E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
        E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        E(CL_OUT_OF_RESOURCES) E(CL_OUT_OF_HOST_MEMORY) E(CL_PROFILING_INFO_NOT_AVAILABLE)
        E(CL_MEM_COPY_OVERLAP) E(CL_IMAGE_FORMAT_MISMATCH) E(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        E(CL_BUILD_PROGRAM_FAILURE) E(CL_MAP_FAILURE) E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) E(CL_COMPILE_PROGRAM_FAILURE)
        E(CL_LINKER_NOT_AVAILABLE) E(CL_LINK_PROGRAM_FAILURE) E(CL_DEVICE_PARTITION_FAILED)
        E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE_TYPE)
        E(CL_INVALID_PLATFORM) E(CL_INVALID_DEVICE) E(CL_INVALID_CONTEXT)
        E(CL_INVALID_QUEUE_PROPERTIES) E(CL_INVALID_COMMAND_QUEUE) E(CL_INVALID_HOST_PTR)
        E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) E(CL_INVALID_IMAGE_SIZE)
        E(CL_INVALID_SAMPLER) E(CL_INVALID_BINARY) E(CL_INVALID_BUILD_OPTIONS)
        E(CL_INVALID_PROGRAM) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL_DEFINITION) E(CL_INVALID_KERNEL) E(CL_INVALID_ARG_INDEX)
        E(CL_INVALID_ARG_VALUE) E(CL_INVALID_ARG_SIZE) E(CL_INVALID_KERNEL_ARGS)
        E(CL_INVALID_WORK_DIMENSION) E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
        E(CL_INVALID_GLOBAL_OFFSET) E(CL_INVALID_EVENT_WAIT_LIST) E(CL_INVALID_EVENT)
        E(CL_INVALID_OPERATION) E(CL_INVALID_GL_OBJECT) E(CL_INVALID_BUFFER_SIZE)
        E(CL_INVALID_MIP_LEVEL) E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_PROPERTY)
        E(CL_INVALID_IMAGE_DESCRIPTOR) E(CL_INVALID_COMPILER_OPTIONS) E(CL_INVALID_LINKER_OPTIONS)
        E(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef E
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR";
    default: return "unknown OpenCL error";
        // clang-format on
    }
}

static manta_status map_cl(cl_int code)
{
    switch (code) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_INVALID_BUFFER_SIZE: return MANTA_ERR_DEVICE_MEMORY;
    case CL_OUT_OF_HOST_MEMORY: return MANTA_ERR_NO_MEMORY;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE: return MANTA_ERR_BUILD;
    default: return MANTA_ERR_OPENCL;
    }
}

manta_status mcl_fail(mcl_dev *d, cl_int code, const char *what)
{
    return manta_err_set(d ? &d->err : NULL, map_cl(code), "%s: %s (%d) on device '%s'", what,
                         mcl_error_name(code), (int)code, d ? d->info.name : "?");
}

/* ---- enumeration and selection ---------------------------------------------- */

static void dev_str(cl_device_id id, cl_device_info what, char *buf, size_t cap)
{
    buf[0] = '\0';
    if (clGetDeviceInfo(id, what, cap, buf, NULL) != CL_SUCCESS)
        snprintf(buf, cap, "?");
    buf[cap - 1] = '\0';
}

manta_status mcl_enumerate(mcl_device_list *out, manta_err *err)
{
    memset(out, 0, sizeof *out);
    cl_uint np = 0;
    cl_int rc = clGetPlatformIDs(0, NULL, &np);
    if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (rc == CL_SUCCESS && np == 0))
        return manta_err_set(err, MANTA_ERR_NO_PLATFORM,
                             "no OpenCL platform found: install an ICD (e.g. pocl-opencl-icd) "
                             "or check /etc/OpenCL/vendors");
    if (rc != CL_SUCCESS)
        return manta_err_set(err, MANTA_ERR_OPENCL, "clGetPlatformIDs: %s (%d)", mcl_error_name(rc),
                             (int)rc);
    cl_platform_id plats[16];
    if (np > 16)
        np = 16;
    rc = clGetPlatformIDs(np, plats, NULL);
    if (rc != CL_SUCCESS)
        return manta_err_set(err, MANTA_ERR_OPENCL, "clGetPlatformIDs: %s (%d)", mcl_error_name(rc),
                             (int)rc);
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0)
            continue;
        cl_device_id ids[MCL_MAX_DEVICES];
        if (nd > MCL_MAX_DEVICES)
            nd = MCL_MAX_DEVICES;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) != CL_SUCCESS)
            continue;
        for (cl_uint i = 0; i < nd && out->count < MCL_MAX_DEVICES; i++) {
            mcl_device_info *di = &out->dev[out->count];
            di->index = out->count;
            di->platform_index = p;
            di->device_index = i;
            di->platform = plats[p];
            di->id = ids[i];
            clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof di->platform_name,
                              di->platform_name, NULL);
            clGetPlatformInfo(plats[p], CL_PLATFORM_VERSION, sizeof di->platform_version,
                              di->platform_version, NULL);
            di->platform_name[sizeof di->platform_name - 1] = '\0';
            di->platform_version[sizeof di->platform_version - 1] = '\0';
            dev_str(ids[i], CL_DEVICE_NAME, di->name, sizeof di->name);
            dev_str(ids[i], CL_DEVICE_VENDOR, di->vendor, sizeof di->vendor);
            dev_str(ids[i], CL_DRIVER_VERSION, di->driver_version, sizeof di->driver_version);
            dev_str(ids[i], CL_DEVICE_VERSION, di->device_version, sizeof di->device_version);
            dev_str(ids[i], CL_DEVICE_OPENCL_C_VERSION, di->c_version, sizeof di->c_version);
            cl_uint cu = 0, vw = 0, align = 0;
            cl_ulong gm = 0, lm = 0, ma = 0;
            size_t wg = 0, items[3] = {1, 1, 1};
            clGetDeviceInfo(ids[i], CL_DEVICE_TYPE, sizeof di->type, &di->type, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof ma, &ma, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vw, &vw, NULL);
            clGetDeviceInfo(ids[i], CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align, &align, NULL);
            di->compute_units = cu;
            di->global_mem = gm;
            di->local_mem = lm;
            di->max_alloc = ma;
            di->max_work_group = wg;
            for (int k = 0; k < 3; k++)
                di->max_work_item[k] = items[k] ? items[k] : 1;
            di->vector_width = vw ? vw : 1;
            di->base_align = align / 8 > 4 ? align / 8 : 4;
            out->count++;
        }
    }
    if (out->count == 0)
        return manta_err_set(err, MANTA_ERR_NO_DEVICE,
                             "%u OpenCL platform(s) found but none reports a device", np);
    const char *clamp = manta_env_get(MANTA_ENV_DEVICE_LIMITS);
    for (size_t i = 0; clamp && *clamp && i < out->count; i++)
        MANTA_TRY(mcl_limits_clamp(&out->dev[i], clamp, err));
    return MANTA_OK;
}

/* A positive number with an optional k, m or g suffix (powers of 1024) in
 * [s, end); false when malformed, zero or too large. */
static bool parse_size(const char *s, const char *end, bool bytes, unsigned long long *out)
{
    unsigned long long v = 0;
    const char *p = s;
    for (; p < end && isdigit((unsigned char)*p); p++) {
        if (v > (~0ULL - 9) / 10)
            return false;
        v = v * 10 + (unsigned long long)(*p - '0');
    }
    if (p == s || v == 0)
        return false;
    if (p < end && bytes) {
        unsigned shift = 0;
        switch (tolower((unsigned char)*p)) {
        case 'k': shift = 10; break;
        case 'm': shift = 20; break;
        case 'g': shift = 30; break;
        default: return false;
        }
        if (v > (~0ULL >> shift))
            return false;
        v <<= shift;
        p++;
    }
    if (p != end)
        return false;
    *out = v;
    return true;
}

static void clamp_ull(unsigned long long *limit, unsigned long long v)
{
    if (v < *limit)
        *limit = v;
}

static void clamp_size(size_t *limit, unsigned long long v)
{
    if (v < *limit)
        *limit = (size_t)v;
}

manta_status mcl_limits_clamp(mcl_device_info *info, const char *spec, manta_err *err)
{
    mcl_device_info c = *info;
    const char *p = spec;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        int klen = eq ? (int)(eq - p) : (int)(end - p);
        bool ok = eq != NULL;
        unsigned long long v = 0;
        if (ok && klen == 5 && !strncmp(p, "items", 5)) {
            const char *q = eq + 1;
            for (int k = 0; k < 3 && ok; k++) {
                const char *x = k < 2 ? memchr(q, 'x', (size_t)(end - q)) : end;
                ok = x && parse_size(q, x, false, &v);
                if (ok)
                    clamp_size(&c.max_work_item[k], v);
                q = x ? x + 1 : end;
            }
        } else if (ok && parse_size(eq + 1, end, true, &v)) {
            if (klen == 5 && !strncmp(p, "local", 5))
                clamp_ull(&c.local_mem, v);
            else if (klen == 2 && !strncmp(p, "wg", 2))
                clamp_size(&c.max_work_group, v);
            else if (klen == 5 && !strncmp(p, "alloc", 5))
                clamp_ull(&c.max_alloc, v);
            else if (klen == 3 && !strncmp(p, "mem", 3))
                clamp_ull(&c.global_mem, v);
            else if (klen == 3 && !strncmp(p, "vec", 3) && v <= 16)
                c.vector_width = v < c.vector_width ? (unsigned)v : c.vector_width;
            else
                ok = false;
        } else {
            ok = false;
        }
        if (!ok)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "MANTA_DEVICE_LIMITS: bad entry '%.*s' (expected KEY=VALUE with "
                                 "KEY local, wg, items (AxBxC), alloc, mem or vec, and a positive "
                                 "VALUE, bytes with an optional k, m or g suffix)",
                                 (int)(end - p), p);
        p = *end ? end + 1 : end;
    }
    for (int k = 0; k < 3; k++)
        clamp_size(&c.max_work_item[k], c.max_work_group);
    snprintf(c.clamped, sizeof c.clamped, "%s", spec);
    *info = c;
    return MANTA_OK;
}

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return true;
    }
    return n == 0;
}

manta_status mcl_select(const mcl_device_list *list, const char *spec, size_t *index,
                        manta_err *err)
{
    const char *from = "--device";
    if (!spec || !*spec) {
        spec = manta_env_get(MANTA_ENV_DEVICE);
        from = "MANTA_DEVICE";
    }
    if (!spec || !*spec) {
        if (list->count == 0)
            return manta_err_set(err, MANTA_ERR_NO_DEVICE, "no OpenCL device available");
        *index = 0;
        return MANTA_OK;
    }
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(spec, &end, 10);
    if (end != spec && *end == '\0' && errno == 0) {
        if (v >= list->count)
            return manta_err_set(
                err, MANTA_ERR_NO_DEVICE,
                "%s '%s': device index out of range (%zu device(s); see 'manta devices')", from,
                spec, list->count);
        *index = (size_t)v;
        return MANTA_OK;
    }
    for (size_t i = 0; i < list->count; i++) {
        const mcl_device_info *di = &list->dev[i];
        if (strcmp(spec, mcl_type_name(di->type)) == 0 || contains_nocase(di->name, spec) ||
            contains_nocase(di->platform_name, spec)) {
            *index = i;
            return MANTA_OK;
        }
    }
    return manta_err_set(err, MANTA_ERR_NO_DEVICE,
                         "%s '%s': no device matches (give an index, a type gpu|cpu|accelerator, "
                         "or part of a name; see 'manta devices')",
                         from, spec);
}

/* ---- open / close ------------------------------------------------------------- */

static void choose_cache_dir(mcl_dev *d, const mcl_options *opt)
{
    d->cache_dir[0] = '\0';
    if (opt && opt->no_cache)
        return;
    const char *dir = opt ? opt->cache_dir : NULL;
    const char *env;
    if (dir)
        snprintf(d->cache_dir, sizeof d->cache_dir, "%s", dir);
    else if ((env = manta_env_get(MANTA_ENV_CACHE_DIR)) && *env)
        snprintf(d->cache_dir, sizeof d->cache_dir, "%s", env);
    else if ((env = getenv("XDG_CACHE_HOME")) && *env)
        snprintf(d->cache_dir, sizeof d->cache_dir, "%s/manta", env);
    else if ((env = getenv("HOME")) && *env)
        snprintf(d->cache_dir, sizeof d->cache_dir, "%s/.cache/manta", env);
    if (d->cache_dir[0] && manta_file_mkdir_p(d->cache_dir, NULL) != MANTA_OK)
        d->cache_dir[0] = '\0'; /* an unwritable cache only costs compile time */
}

manta_status mcl_choose_variant(const mcl_device_info *info, int requested, mcl_variant *out,
                                manta_err *err)
{
    mcl_variant v = MCL_VARIANT_AUTO;
    if (requested == MCL_VARIANT_CPU || requested == MCL_VARIANT_GPU) {
        v = (mcl_variant)requested;
    } else {
        const char *env = manta_env_get(MANTA_ENV_KERNELS);
        if (env && *env && strcmp(env, "auto") != 0) {
            if (strcmp(env, "cpu") == 0)
                v = MCL_VARIANT_CPU;
            else if (strcmp(env, "gpu") == 0)
                v = MCL_VARIANT_GPU;
            else
                return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                     "MANTA_KERNELS '%s': expected cpu, gpu or auto", env);
        }
    }
    if (v == MCL_VARIANT_AUTO)
        v = (info->type & CL_DEVICE_TYPE_CPU) ? MCL_VARIANT_CPU : MCL_VARIANT_GPU;
    *out = v;
    return MANTA_OK;
}

manta_status mcl_open(const mcl_device_info *info, const mcl_options *opt, mcl_dev **out,
                      manta_err *err)
{
    *out = NULL;
    if (sodium_init() < 0)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "libsodium failed to initialise");
    int major = 0, minor = 0;
    if (sscanf(info->c_version, "OpenCL C %d.%d", &major, &minor) != 2 || major * 10 + minor < 12)
        return manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                             "device '%s' reports '%s'; manta's kernels need OpenCL C 1.2 or later",
                             info->name, info->c_version);
    mcl_variant variant;
    MANTA_TRY(mcl_choose_variant(info, opt ? opt->variant : MCL_VARIANT_AUTO, &variant, err));
    mcl_dev *d = calloc(1, sizeof *d);
    if (!d)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory opening '%s'",
                             info->name);
    d->info = *info;
    d->variant = variant;
    d->blas_index_limit = MCL_BLAS_INDEX_LIMIT;
    cl_int rc;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)info->platform, 0};
    d->ctx = clCreateContext(props, 1, &info->id, NULL, NULL, &rc);
    if (rc != CL_SUCCESS) {
        manta_status st = mcl_fail(d, rc, "clCreateContext");
        if (err)
            *err = d->err;
        free(d);
        return st;
    }
    d->queue = clCreateCommandQueue(d->ctx, info->id, 0, &rc);
    if (rc != CL_SUCCESS) {
        manta_status st = mcl_fail(d, rc, "clCreateCommandQueue");
        if (err)
            *err = d->err;
        clReleaseContext(d->ctx);
        free(d);
        return st;
    }
    choose_cache_dir(d, opt);
    const char *no_tune = manta_env_get(MANTA_ENV_NO_TUNING);
    if (!(opt && opt->no_tuning) && !(no_tune && *no_tune && strcmp(no_tune, "0") != 0))
        mcl_tune_autoload(d->cache_dir, &d->info, &d->tuning);
    d->stats.blas_tuned = d->tuning.active;
    *out = d;
    return MANTA_OK;
}

void mcl_close(mcl_dev *d)
{
    if (!d)
        return;
    if (d->queue)
        clFinish(d->queue);
    for (size_t i = 0; i < d->n_kernels; i++)
        clReleaseKernel(d->kernels[i].k);
    for (size_t i = 0; i < d->n_programs; i++)
        clReleaseProgram(d->programs[i].prog);
    if (d->queue)
        clReleaseCommandQueue(d->queue);
    if (d->ctx)
        clReleaseContext(d->ctx);
    free(d);
}

manta_err *mcl_err(mcl_dev *d) { return &d->err; }
const mcl_device_info *mcl_info(const mcl_dev *d) { return &d->info; }
cl_context mcl_context(const mcl_dev *d) { return d->ctx; }
cl_command_queue *mcl_queue(mcl_dev *d) { return &d->queue; }
void mcl_get_stats(const mcl_dev *d, mcl_stats *out) { *out = d->stats; }
const mcl_tuning *mcl_get_tuning(const mcl_dev *d) { return &d->tuning; }
const char *mcl_cache_dir(const mcl_dev *d) { return d->cache_dir; }
mcl_variant mcl_get_variant(const mcl_dev *d) { return d->variant; }
void mcl_set_launch_log(mcl_dev *d, mcl_launch_log *log) { d->log = log; }

size_t mcl_blas_index_limit(const mcl_dev *d) { return d->blas_index_limit; }

void mcl_set_blas_index_limit(mcl_dev *d, size_t floats)
{
    d->blas_index_limit =
        floats == 0 || floats > MCL_BLAS_INDEX_LIMIT ? MCL_BLAS_INDEX_LIMIT : floats;
}

const char *mcl_variant_name(mcl_variant v)
{
    return v == MCL_VARIANT_CPU ? "cpu" : v == MCL_VARIANT_GPU ? "gpu" : "auto";
}

void mcl_log_launch(mcl_dev *d, const mcl_launch_record *r)
{
    mcl_launch_log *log = d->log;
    if (!log)
        return;
    if (log->count < log->cap)
        log->rec[log->count++] = *r;
    else
        log->dropped++;
}

/* ---- programs ------------------------------------------------------------------ */

static void cache_path(const mcl_dev *d, const char *name, const char *source, const char *options,
                       char *path, size_t cap)
{
    crypto_generichash_state st;
    unsigned char h[16];
    crypto_generichash_init(&st, NULL, 0, sizeof h);
    const char *parts[] = {d->info.platform_name,
                           d->info.platform_version,
                           d->info.name,
                           d->info.driver_version,
                           d->info.device_version,
                           options,
                           source};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        crypto_generichash_update(&st, (const unsigned char *)parts[i], strlen(parts[i]) + 1);
    crypto_generichash_final(&st, h, sizeof h);
    char hex[2 * sizeof h + 1];
    sodium_bin2hex(hex, sizeof hex, h, sizeof h);
    snprintf(path, cap, "%s/%s-%s.bin", d->cache_dir, name, hex);
}

/* A cached program binary: CACHE_MAGIC, the binary's BLAKE2b-256, then the binary. A file
 * cut short or damaged (a full disk, a crash while writing) fails the check and the source
 * is built again: drivers are not required to survive a damaged binary. */
#define CACHE_MAGIC "manta-cl-binary-1"
#define CACHE_HEAD (sizeof CACHE_MAGIC + 32)

/* Load a cached binary; NULL when absent or unusable (then the source is built). */
static cl_program load_cached(mcl_dev *d, const char *path, const char *options)
{
    char *file;
    size_t len;
    if (manta_file_read(path, MCL_MAX_CACHED_BINARY, &file, &len, NULL) != MANTA_OK)
        return NULL;
    cl_program prog = NULL;
    unsigned char h[32];
    const unsigned char *bin = (const unsigned char *)file + CACHE_HEAD;
    size_t n = len > CACHE_HEAD ? len - CACHE_HEAD : 0;
    if (n > 0 && memcmp(file, CACHE_MAGIC, sizeof CACHE_MAGIC) == 0 &&
        crypto_generichash(h, sizeof h, bin, n, NULL, 0) == 0 &&
        sodium_memcmp(h, file + sizeof CACHE_MAGIC, sizeof h) == 0) {
        const unsigned char *bins[1] = {bin};
        cl_int bst = CL_SUCCESS, rc;
        prog = clCreateProgramWithBinary(d->ctx, 1, &d->info.id, &n, bins, &bst, &rc);
        if (prog && (rc != CL_SUCCESS || bst != CL_SUCCESS ||
                     clBuildProgram(prog, 1, &d->info.id, options, NULL, NULL) != CL_SUCCESS)) {
            clReleaseProgram(prog);
            prog = NULL;
        }
    }
    free(file);
    return prog;
}

/* Write the program binary atomically, with its check; failures are ignored: the cache is an
 * optimisation. */
static void store_cached(cl_program prog, const char *path)
{
    size_t len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        len == 0)
        return;
    unsigned char *file = malloc(CACHE_HEAD + len);
    if (!file)
        return;
    unsigned char *bins[1] = {file + CACHE_HEAD};
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS) {
        memcpy(file, CACHE_MAGIC, sizeof CACHE_MAGIC);
        crypto_generichash(file + sizeof CACHE_MAGIC, 32, bins[0], len, NULL, 0);
        manta_file_write_atomic(path, file, CACHE_HEAD + len, NULL);
    }
    free(file);
}

static char *build_log(mcl_dev *d, cl_program prog)
{
    size_t n = 0;
    if (clGetProgramBuildInfo(prog, d->info.id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) != CL_SUCCESS)
        return NULL;
    char *log = malloc(n + 1);
    if (!log)
        return NULL;
    if (clGetProgramBuildInfo(prog, d->info.id, CL_PROGRAM_BUILD_LOG, n, log, NULL) != CL_SUCCESS)
        n = 0;
    log[n] = '\0';
    return log;
}

static bool span_has(const char *p, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (memcmp(p + i, word, w) == 0)
            return true;
    return false;
}

/* First line of the log that looks like a diagnostic, for a one-line error. */
static void first_error_line(const char *log, char *buf, size_t cap)
{
    const char *p = log, *pick = NULL;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (!pick && n > 0)
            pick = p;
        if (n > 0 && span_has(p, n, "error")) {
            pick = p;
            break;
        }
        p = eol ? eol + 1 : NULL;
    }
    if (!pick) {
        snprintf(buf, cap, "(empty build log)");
        return;
    }
    const char *eol = strchr(pick, '\n');
    int n = eol ? (int)(eol - pick) : (int)strlen(pick);
    snprintf(buf, cap, "%.*s", n, pick);
}

manta_status mcl_build(mcl_dev *d, const char *name, const char *source, const char *options,
                       cl_program *out, char **log)
{
    *out = NULL;
    if (log)
        *log = NULL;
    if (!options)
        options = "";
    char path[1100];
    if (d->cache_dir[0]) {
        cache_path(d, name, source, options, path, sizeof path);
        cl_program prog = load_cached(d, path, options);
        if (prog) {
            d->stats.programs_cached++;
            *out = prog;
            return MANTA_OK;
        }
    }
    cl_int rc;
    cl_program prog = clCreateProgramWithSource(d->ctx, 1, &source, NULL, &rc);
    if (rc != CL_SUCCESS)
        return mcl_fail(d, rc, "clCreateProgramWithSource");
    rc = clBuildProgram(prog, 1, &d->info.id, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char *text = build_log(d, prog);
        char line[512];
        first_error_line(text ? text : "", line, sizeof line);
        manta_err_set(&d->err, MANTA_ERR_BUILD, "program '%s' failed to build on '%s' (%s): %s",
                      name, d->info.name, mcl_error_name(rc), line);
        if (log)
            *log = text;
        else
            free(text);
        clReleaseProgram(prog);
        return MANTA_ERR_BUILD;
    }
    d->stats.programs_compiled++;
    if (d->cache_dir[0])
        store_cached(prog, path);
    *out = prog;
    return MANTA_OK;
}

manta_status mcl_program_source(const char *program, char **text, manta_err *err)
{
    *text = NULL;
    const mcl_source *src = mcl_source_find(program);
    const mcl_source *pre = mcl_source_find("common");
    if (!src || !pre || strcmp(program, "common") == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "no embedded OpenCL program '%s'",
                             program);
    size_t cap = pre->len + src->len + strlen(program) + 32;
    char *t = malloc(cap);
    if (!t)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of host memory assembling '%s'",
                             program);
    snprintf(t, cap, "%s\n#line 1 \"%s.cl\"\n%s", pre->text, program, src->text);
    *text = t;
    return MANTA_OK;
}

static manta_status get_program(mcl_dev *d, const char *program, cl_program *out)
{
    for (size_t i = 0; i < d->n_programs; i++)
        if (strcmp(d->programs[i].name, program) == 0) {
            *out = d->programs[i].prog;
            return MANTA_OK;
        }
    if (!mcl_source_find(program))
        return manta_err_set(&d->err, MANTA_ERR_INTERNAL, "no embedded OpenCL program '%s'",
                             program);
    if (d->n_programs == MCL_MAX_PROGRAMS)
        return manta_err_set(&d->err, MANTA_ERR_INTERNAL, "program table full at '%s'", program);
    char *text;
    MANTA_TRY(mcl_program_source(program, &text, &d->err));
    cl_program prog;
    manta_status st = mcl_build(d, program, text, MCL_BUILD_OPTIONS, &prog, NULL);
    free(text);
    if (st != MANTA_OK)
        return st;
    d->programs[d->n_programs].name = mcl_source_find(program)->name;
    d->programs[d->n_programs].prog = prog;
    d->n_programs++;
    *out = prog;
    return MANTA_OK;
}

/* The cached entry of @p kernel, created (with its limits queried) on first use. */
static manta_status kernel_entry_get(mcl_dev *d, const char *program, const char *kernel,
                                     const kernel_entry **out)
{
    for (size_t i = 0; i < d->n_kernels; i++) {
        kernel_entry *e = &d->kernels[i];
        if (strcmp(e->name, kernel) == 0 && strcmp(e->program, program) == 0) {
            *out = e;
            return MANTA_OK;
        }
    }
    if (d->n_kernels == MCL_MAX_KERNELS)
        return manta_err_set(&d->err, MANTA_ERR_INTERNAL, "kernel table full at '%s'", kernel);
    if (strlen(kernel) >= sizeof d->kernels[0].name)
        return manta_err_set(&d->err, MANTA_ERR_INVALID_ARG, "kernel name too long: '%s'", kernel);
    cl_program prog = NULL;
    manta_status st = get_program(d, program, &prog);
    if (st != MANTA_OK)
        return st;
    cl_int rc;
    cl_kernel k = clCreateKernel(prog, kernel, &rc);
    if (rc != CL_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "clCreateKernel '%s' of program '%s'", kernel, program);
        return mcl_fail(d, rc, what);
    }
    kernel_entry *e = &d->kernels[d->n_kernels++];
    e->program = mcl_source_find(program)->name;
    snprintf(e->name, sizeof e->name, "%s", kernel);
    e->k = k;
    size_t wg = 0;
    cl_ulong lm = 0;
    if (clGetKernelWorkGroupInfo(k, d->info.id, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL) !=
            CL_SUCCESS ||
        wg == 0)
        wg = d->info.max_work_group;
    clGetKernelWorkGroupInfo(k, d->info.id, CL_KERNEL_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    e->wg_max = wg < d->info.max_work_group ? wg : d->info.max_work_group;
    e->local_static = (size_t)lm;
    /* always given on a CPU device: PoCL would not heed a smaller MANTA_DEVICE_LIMITS either */
    e->wg_auto = !(d->info.type & CL_DEVICE_TYPE_CPU) ? 0
                 : e->wg_max < MCL_CPU_AUTO_GROUP     ? e->wg_max
                                                      : MCL_CPU_AUTO_GROUP;
    *out = e;
    return MANTA_OK;
}

manta_status mcl_kernel(mcl_dev *d, const char *program, const char *kernel, cl_kernel *out)
{
    const kernel_entry *e;
    *out = NULL;
    MANTA_TRY(kernel_entry_get(d, program, kernel, &e));
    *out = e->k;
    return MANTA_OK;
}

/* ---- memory ------------------------------------------------------------------- */

manta_status mcl_alloc(mcl_dev *d, size_t bytes, const char *what, cl_mem *out)
{
    *out = NULL;
    if (bytes == 0)
        bytes = 4; /* OpenCL forbids empty buffers; keep empty tensors valid */
    if (bytes > d->info.max_alloc)
        return manta_err_set(&d->err, MANTA_ERR_DEVICE_MEMORY,
                             "device '%s': %s needs one buffer of %zu bytes, above the device's "
                             "largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE%s) of %llu bytes; "
                             "use a smaller batch or resolution",
                             d->info.name, what, bytes, d->info.clamped[0] ? ", clamped" : "",
                             d->info.max_alloc);
    if (d->stats.bytes_allocated + bytes > d->info.global_mem)
        return manta_err_set(&d->err, MANTA_ERR_DEVICE_MEMORY,
                             "device '%s' out of memory for %s: %zu bytes requested, %llu of "
                             "%llu bytes (CL_DEVICE_GLOBAL_MEM_SIZE%s) already in use; use a "
                             "smaller batch or resolution",
                             d->info.name, what, bytes, d->stats.bytes_allocated,
                             d->info.global_mem, d->info.clamped[0] ? ", clamped" : "");
    cl_int rc;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &rc);
    if (rc != CL_SUCCESS) {
        char w[160];
        snprintf(w, sizeof w, "clCreateBuffer for %s (%zu bytes)", what, bytes);
        return mcl_fail(d, rc, w);
    }
    d->stats.buffers_created++;
    d->stats.bytes_allocated += bytes;
    *out = m;
    return MANTA_OK;
}

void mcl_free(mcl_dev *d, cl_mem mem)
{
    if (!mem)
        return;
    size_t bytes = 0;
    if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS &&
        bytes <= d->stats.bytes_allocated)
        d->stats.bytes_allocated -= bytes;
    clReleaseMemObject(mem);
}

manta_status mcl_write(mcl_dev *d, mview dst, const float *src, size_t n)
{
    if (n == 0)
        return MANTA_OK;
    cl_int rc = clEnqueueWriteBuffer(d->queue, dst.mem, CL_TRUE, dst.off * sizeof(float),
                                     n * sizeof(float), src, 0, NULL, NULL);
    return rc == CL_SUCCESS ? MANTA_OK : mcl_fail(d, rc, "clEnqueueWriteBuffer");
}

manta_status mcl_read(mcl_dev *d, mview src, float *dst, size_t n)
{
    if (n == 0)
        return MANTA_OK;
    cl_int rc = clEnqueueReadBuffer(d->queue, src.mem, CL_TRUE, src.off * sizeof(float),
                                    n * sizeof(float), dst, 0, NULL, NULL);
    return rc == CL_SUCCESS ? MANTA_OK : mcl_fail(d, rc, "clEnqueueReadBuffer");
}

manta_status mcl_copy(mcl_dev *d, mview dst, mview src, size_t n)
{
    if (n == 0)
        return MANTA_OK;
    cl_int rc = clEnqueueCopyBuffer(d->queue, src.mem, dst.mem, src.off * sizeof(float),
                                    dst.off * sizeof(float), n * sizeof(float), 0, NULL, NULL);
    return rc == CL_SUCCESS ? MANTA_OK : mcl_fail(d, rc, "clEnqueueCopyBuffer");
}

manta_status mcl_fill(mcl_dev *d, mview dst, float value, size_t n)
{
    for (size_t done = 0; done < n;) {
        size_t len = n - done < MCL_FILL_CHUNK ? n - done : MCL_FILL_CHUNK;
        cl_int rc = clEnqueueFillBuffer(d->queue, dst.mem, &value, sizeof value,
                                        (dst.off + done) * sizeof(float), len * sizeof(float), 0,
                                        NULL, NULL);
        if (rc != CL_SUCCESS)
            return mcl_fail(d, rc, "clEnqueueFillBuffer");
        done += len;
    }
    return MANTA_OK;
}

manta_status mcl_finish(mcl_dev *d)
{
    cl_int rc = clFinish(d->queue);
    return rc == CL_SUCCESS ? MANTA_OK : mcl_fail(d, rc, "clFinish");
}

/* ---- launches ------------------------------------------------------------------- */

void mcl_launch_begin(mcl_launch *L, mcl_dev *d, const char *program, const char *kernel)
{
    const kernel_entry *e = NULL;
    L->d = d;
    L->k = NULL;
    L->name = kernel;
    L->next = 0;
    L->cl_status = CL_SUCCESS;
    L->outputs = 0;
    L->st = kernel_entry_get(d, program, kernel, &e);
    L->k = e ? e->k : NULL;
    L->name = e ? e->name : kernel; /* stable storage for the launch log */
    L->wg_max = e ? e->wg_max : 1;
    L->wg_auto = e ? e->wg_auto : 0;
    L->local_bytes = e ? e->local_static : 0;
}

void mcl_launch_output(mcl_launch *L, size_t values) { L->outputs = values; }

size_t mcl_launch_wg_max(const mcl_launch *L) { return L->wg_max; }

static void set_arg(mcl_launch *L, size_t size, const void *value)
{
    if (L->st != MANTA_OK)
        return;
    cl_int rc = clSetKernelArg(L->k, L->next, size, value);
    if (rc != CL_SUCCESS) {
        char w[128];
        snprintf(w, sizeof w, "argument %u of kernel '%s'", (unsigned)L->next, L->name);
        L->st = mcl_fail(L->d, rc, w);
    }
    L->next++;
}

void mcl_arg_view(mcl_launch *L, mview v)
{
    if (L->st == MANTA_OK && v.off > UINT32_MAX) {
        L->st = manta_err_set(&L->d->err, MANTA_ERR_INVALID_ARG,
                              "kernel '%s': buffer offset %zu exceeds 32 bits", L->name, v.off);
        return;
    }
    cl_uint off = (cl_uint)v.off;
    set_arg(L, sizeof(cl_mem), &v.mem);
    set_arg(L, sizeof off, &off);
}

void mcl_arg_views(mcl_launch *L, const mview *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        mcl_arg_view(L, v[i]);
}

void mcl_arg_int(mcl_launch *L, int v)
{
    cl_int x = v;
    set_arg(L, sizeof x, &x);
}

void mcl_arg_uint(mcl_launch *L, uint32_t v)
{
    cl_uint x = v;
    set_arg(L, sizeof x, &x);
}

void mcl_arg_float(mcl_launch *L, float v)
{
    cl_float x = v;
    set_arg(L, sizeof x, &x);
}

void mcl_arg_local(mcl_launch *L, size_t bytes)
{
    L->local_bytes += bytes;
    set_arg(L, bytes, NULL);
}

/* MANTA_ERR_UNSUPPORTED when @p local does not fit the device's limits. */
static manta_status check_local(mcl_launch *L, unsigned dims, const size_t *local)
{
    const mcl_device_info *di = &L->d->info;
    const char *clamped = di->clamped[0] ? " (clamped by MANTA_DEVICE_LIMITS)" : "";
    size_t items = 1;
    for (unsigned i = 0; i < dims; i++) {
        if (local[i] == 0 || local[i] > di->max_work_item[i])
            return manta_err_set(&L->d->err, MANTA_ERR_UNSUPPORTED,
                                 "kernel '%s' on device '%s': work-group extent %zu along "
                                 "dimension %u exceeds the device's limit of %zu%s",
                                 L->name, di->name, local[i], i, di->max_work_item[i], clamped);
        items *= local[i];
    }
    if (items > L->wg_max)
        return manta_err_set(&L->d->err, MANTA_ERR_UNSUPPORTED,
                             "kernel '%s' on device '%s': work-group of %zu work-items exceeds "
                             "the limit of %zu for this kernel%s",
                             L->name, di->name, items, L->wg_max, clamped);
    if (L->local_bytes > di->local_mem)
        return manta_err_set(&L->d->err, MANTA_ERR_UNSUPPORTED,
                             "kernel '%s' on device '%s': %zu bytes of local memory exceed the "
                             "device's %llu%s",
                             L->name, di->name, L->local_bytes, di->local_mem, clamped);
    return MANTA_OK;
}

/* A work-group of at most @p cap work-items for @p global: along each dimension in turn the
 * largest divisor of its extent within what is left of @p cap and the device's extent @p most,
 * so the grid is not rounded up (kernels launched without a local size need not check their
 * bounds). */
static void auto_local(unsigned dims, const size_t *global, size_t cap, const size_t *most,
                       size_t *local)
{
    for (unsigned i = 0; i < dims; i++) {
        size_t l = global[i] < cap ? global[i] : cap;
        l = l < most[i] ? l : most[i];
        while (l > 1 && global[i] % l)
            l--;
        local[i] = l > 0 ? l : 1;
        cap /= local[i];
    }
}

manta_status mcl_launch_run(mcl_launch *L, unsigned dims, const size_t *global, const size_t *local)
{
    if (L->st != MANTA_OK)
        return L->st;
    if (dims < 1 || dims > 3)
        return manta_err_set(&L->d->err, MANTA_ERR_INTERNAL, "kernel '%s': %u dimensions", L->name,
                             dims);
    size_t chosen[3];
    if (!local && L->wg_auto) {
        for (unsigned i = 0; i < dims; i++)
            if (global[i] == 0)
                return MANTA_OK; /* empty tensor: nothing to do */
        /* at least four groups per compute unit where the grid has the work-items for them,
         * as PoCL's own choice keeps every worker busy on a small grid */
        size_t items = 1, cap = L->wg_auto;
        for (unsigned i = 0; i < dims; i++)
            items *= global[i];
        const size_t spread =
            items / (4 * (size_t)(L->d->info.compute_units ? L->d->info.compute_units : 1));
        cap = spread < cap ? (spread ? spread : 1) : cap;
        auto_local(dims, global, cap, L->d->info.max_work_item, chosen);
        local = chosen;
    }
    if (local)
        MANTA_TRY(check_local(L, dims, local));
    else if (L->local_bytes > L->d->info.local_mem)
        return check_local(L, 0, NULL);
    mcl_launch_record r = {L->name, dims, {1, 1, 1}, {0, 0, 0}, 1, L->outputs, {0, 0, 0}};
    for (unsigned i = 0; i < dims; i++) {
        r.global[i] = global[i];
        if (r.global[i] == 0)
            return MANTA_OK; /* empty tensor: nothing to do */
        if (local) {
            r.global[i] = (r.global[i] + local[i] - 1) / local[i] * local[i];
            r.local[i] = local[i];
        }
        r.items *= r.global[i];
    }
    cl_int rc =
        clEnqueueNDRangeKernel(L->d->queue, L->k, dims, NULL, r.global, local, 0, NULL, NULL);
    if (rc != CL_SUCCESS) {
        char w[128];
        snprintf(w, sizeof w, "launching kernel '%s'", L->name);
        return mcl_fail(L->d, rc, w);
    }
    L->d->stats.launches++;
    mcl_log_launch(L->d, &r);
    return MANTA_OK;
}
