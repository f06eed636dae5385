/**
 * @file cl.h
 * @brief The OpenCL device layer: enumeration, selection, one open device with
 *        its context and in-order queue, programs built once per device and
 *        cached on disk as binaries, counted buffer creation, typed launches.
 *
 * One ::mcl_dev belongs to one host thread at a time (OpenCL kernel arguments
 * are not thread safe). Several devices may be open in one process; nothing
 * here is global. Every OpenCL status is checked; failures return a
 * ::manta_status and leave a one-line message in mcl_err().
 */
#ifndef MANTA_CL_CL_H
#define MANTA_CL_CL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/** What one OpenCL device is, as reported by its platform. */
typedef struct mcl_device_info {
    size_t index;            /**< position in the enumeration (all platforms) */
    unsigned platform_index; /**< platform number */
    unsigned device_index;   /**< device number within its platform */
    cl_platform_id platform;
    cl_device_id id;
    cl_device_type type;
    char platform_name[128];
    char platform_version[128];
    char name[256];
    char vendor[128];
    char driver_version[128];
    char device_version[128]; /**< "OpenCL 1.2 ..." */
    char c_version[128];      /**< "OpenCL C 1.2 ..." */
    unsigned compute_units;
    unsigned long long global_mem; /**< bytes */
    unsigned long long local_mem;  /**< bytes */
    unsigned long long max_alloc;  /**< bytes, largest single buffer */
    size_t max_work_group;         /**< work-items of one work-group, any kernel */
    size_t max_work_item[3];       /**< largest work-group extent along dims 0, 1, 2 */
    unsigned vector_width;         /**< preferred float vector width (1, 2, 4, 8, 16) */
    unsigned base_align;           /**< bytes a sub-buffer's origin must be a multiple of
                                          (CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8; at least 4) */
    /** The clamps of MANTA_DEVICE_LIMITS applied to the limits above, as given
     *  ("local=32k,wg=256"); "" when the device reports its own limits. */
    char clamped[128];
} mcl_device_info;

/** Most devices one enumeration reports. */
#define MCL_MAX_DEVICES 64

/** All devices of all platforms, in platform then device order. */
typedef struct mcl_device_list {
    size_t count;
    mcl_device_info dev[MCL_MAX_DEVICES];
} mcl_device_list;

/** Short name of a device type: "gpu", "cpu", "accelerator" or "other". */
const char *mcl_type_name(cl_device_type type);

/** Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"); never NULL. */
const char *mcl_error_name(cl_int code);

/**
 * List every device of every platform, with its limits: local memory, the
 * work-group and work-item extents, the largest allocation, global memory
 * and the preferred float vector width. When the environment variable
 * MANTA_DEVICE_LIMITS is set, every device's limits are clamped to it (see
 * mcl_limits_clamp()): a large device then behaves, for every launch and
 * allocation manta makes, like a small GPU.
 * @return MANTA_ERR_NO_PLATFORM when no platform (ICD) is installed,
 *         MANTA_ERR_NO_DEVICE when platforms exist but report no device,
 *         MANTA_ERR_INVALID_ARG naming MANTA_DEVICE_LIMITS and the entry when
 *         that variable is malformed.
 */
manta_status mcl_enumerate(mcl_device_list *out, manta_err *err);

/**
 * Clamp the limits of @p info to @p spec, a comma-separated list of
 * KEY=VALUE: local (local memory, bytes), wg (work-items per group),
 * items (work-group extents, AxBxC), alloc (largest buffer, bytes),
 * mem (global memory, bytes), vec (preferred float vector width). Byte
 * values take a k, m or g suffix (powers of 1024). A limit only ever
 * shrinks: a value above the device's own leaves it as it is. Records
 * @p spec in info->clamped. Example: "local=32k,wg=256,alloc=256m".
 * @return MANTA_ERR_INVALID_ARG naming the entry when @p spec is malformed
 *         (unknown key, missing or zero value, bad suffix); @p info is then
 *         unchanged.
 */
manta_status mcl_limits_clamp(mcl_device_info *info, const char *spec, manta_err *err);

/**
 * Choose one device. @p spec is an index ("1"), a type ("gpu", "cpu",
 * "accelerator") or a case-insensitive substring of the device or platform
 * name. NULL or "" falls back to the MANTA_DEVICE environment variable, then
 * to device 0.
 * @return MANTA_ERR_NO_DEVICE naming the spec when nothing matches.
 */
manta_status mcl_select(const mcl_device_list *list, const char *spec, size_t *index,
                        manta_err *err);

/** Options for mcl_open(); zero-initialise for the defaults. */
typedef struct mcl_options {
    /** Program-binary cache folder; NULL: $MANTA_CACHE_DIR, else
     *  $XDG_CACHE_HOME/manta, else $HOME/.cache/manta. */
    const char *cache_dir;
    bool no_cache; /**< build every program from source, write nothing (and
                     *   apply no tuning file: it lives in the cache folder) */
    /** Do not apply the CLBlast tuning file of the device (also when the
     *  environment variable MANTA_NO_TUNING is set to anything but "" or "0"). */
    bool no_tuning;
    /** Kernel variants: MCL_VARIANT_AUTO (0) picks by device type, else
     *  the environment variable MANTA_KERNELS (cpu|gpu) when set. */
    int variant;
} mcl_options;

/**
 * The family of kernel variants an open device runs where CPUs and GPUs want
 * different ones (cl_kernels/ and runtime/nn/ hold both): the CPU variants
 * use few work-items with long vectorised loops, the GPU variants spread
 * every reduction over thousands of work-items (two-stage reductions, GEMMs
 * over N*H*W). Both compute the same values to float rounding.
 */
typedef enum mcl_variant {
    MCL_VARIANT_AUTO = 0, /**< CPU devices: cpu; every other type: gpu */
    MCL_VARIANT_CPU = 1,
    MCL_VARIANT_GPU = 2
} mcl_variant;

/** "cpu" or "gpu" ("auto" for MCL_VARIANT_AUTO). */
const char *mcl_variant_name(mcl_variant v);

/**
 * The variant mcl_open() gives @p info for @p requested (an mcl_variant):
 * CPU or GPU when asked for, else the environment variable MANTA_KERNELS
 * (cpu, gpu, auto), else by device type (CPU devices: cpu, others: gpu).
 * @return MANTA_ERR_INVALID_ARG naming MANTA_KERNELS when it holds anything else.
 */
manta_status mcl_choose_variant(const mcl_device_info *info, int requested, mcl_variant *out,
                                manta_err *err);

/**
 * CLBlast tuning of an open device: whether mcl_open() found and applied a
 * tuning file written by `manta tune` (see cl/tune.h).
 */
typedef struct mcl_tuning {
    bool active;      /**< tuned parameters were applied */
    unsigned kernels; /**< CLBlast kernels they override */
    char path[1200];  /**< the file looked for; "" when caching or tuning is off */
    /** Why a file that exists was not applied (corrupt, made for another
     *  device, driver or CLBlast version, rejected by CLBlast); "" when none.
     *  The library never prints it: show it to the user where it matters. */
    char warning[MANTA_ERR_MSG_MAX];
} mcl_tuning;

/** Counters of one open device, for tests and progress lines. */
typedef struct mcl_stats {
    unsigned long programs_compiled;    /**< built from source */
    unsigned long programs_cached;      /**< loaded from the disk cache */
    unsigned long buffers_created;      /**< clCreateBuffer calls that succeeded */
    unsigned long long bytes_allocated; /**< bytes in live buffers */
    unsigned long launches;             /**< kernels enqueued through mcl_launch */
    bool blas_tuned;                    /**< CLBlast runs with a tuning file (mcl_get_tuning) */
} mcl_stats;

/** An open device: context, queue, program and kernel caches. Opaque. */
typedef struct mcl_dev mcl_dev;

/**
 * Open a device for computing. On failure *out is NULL and the message is in
 * @p err. Release with mcl_close(). When the cache folder holds a CLBlast
 * tuning file for the device it is applied before any GEMM; a bad file is
 * ignored (see mcl_get_tuning()) and never makes the open fail.
 */
manta_status mcl_open(const mcl_device_info *info, const mcl_options *opt, mcl_dev **out,
                      manta_err *err);

/** Release every kernel, program, queue and context of @p d. NULL is allowed. */
void mcl_close(mcl_dev *d);

/** The error record of @p d: the message of its last failed call. */
manta_err *mcl_err(mcl_dev *d);
const mcl_device_info *mcl_info(const mcl_dev *d);
cl_context mcl_context(const mcl_dev *d);
/** The device's in-order queue (CLBlast takes its address). */
cl_command_queue *mcl_queue(mcl_dev *d);
void mcl_get_stats(const mcl_dev *d, mcl_stats *out);
/** The CLBlast tuning state of @p d, set once by mcl_open(). */
const mcl_tuning *mcl_get_tuning(const mcl_dev *d);
/** The cache folder of @p d; "" when caching is off. */
const char *mcl_cache_dir(const mcl_dev *d);
/** The kernel variants @p d runs (never MCL_VARIANT_AUTO), fixed at mcl_open(). */
mcl_variant mcl_get_variant(const mcl_dev *d);

/** Default of mcl_blas_index_limit(): CLBlast's kernels index operands with int. */
#define MCL_BLAS_INDEX_LIMIT ((size_t)INT_MAX)

/**
 * Floats from the start of its buffer within which a GEMM operand is passed to CLBlast as
 * it is (offset and last element below the limit); beyond it, mcl_sgemm() passes a
 * sub-buffer that starts at the operand. MCL_BLAS_INDEX_LIMIT unless lowered by
 * mcl_set_blas_index_limit().
 */
size_t mcl_blas_index_limit(const mcl_dev *d);

/** Lower (or restore) the limit of mcl_blas_index_limit() for @p d: tests use it to run
 *  the sub-buffer path on small buffers. A value of 0 or above MCL_BLAS_INDEX_LIMIT
 *  restores the default. */
void mcl_set_blas_index_limit(mcl_dev *d, size_t floats);

/** One kernel launch as recorded by a launch log (see mcl_set_launch_log()). */
typedef struct mcl_launch_record {
    const char *kernel; /**< kernel name (static storage), or "sgemm" for CLBlast */
    unsigned dims;      /**< 1 to 3; 0 for a CLBlast call */
    size_t global[3];   /**< work-items per dimension, as enqueued (rounded up) */
    size_t local[3];    /**< work-group extents; 0 when the implementation picks */
    size_t items;       /**< product of global (for CLBlast: 0, not known) */
    size_t outputs;     /**< values the launch writes, when the launcher says
                            *   (mcl_launch_output()); 0 when not stated */
    size_t gemm[3];     /**< CLBlast: m, n, k; else 0 */
} mcl_launch_record;

/** A caller-owned array that mcl_launch_run() and mcl_sgemm() append to. */
typedef struct mcl_launch_log {
    mcl_launch_record *rec;
    size_t cap;     /**< entries of rec */
    size_t count;   /**< entries written (at most cap) */
    size_t dropped; /**< launches past cap, not recorded */
} mcl_launch_log;

/**
 * Record every later launch of @p d into @p log (NULL stops recording). The
 * log stays owned by the caller and must outlive the recording.
 */
void mcl_set_launch_log(mcl_dev *d, mcl_launch_log *log);

/** Append one record to @p d's launch log, if one is set (for cl/blas.c). */
void mcl_log_launch(mcl_dev *d, const mcl_launch_record *r);

/** Record an OpenCL failure in the device error and return the mapped status. */
manta_status mcl_fail(mcl_dev *d, cl_int code, const char *what);

/* ---- programs and kernels ---------------------------------------------- */

/**
 * Build (or load from the disk cache) a program from @p source with
 * @p options, for @p d. The cache key hashes platform, device, driver version,
 * options and source. A compile failure returns MANTA_ERR_BUILD with the first
 * line of the build log in the message; the whole log goes to @p log (may be
 * NULL) as a malloc'd string the caller frees.
 * The returned program is owned by the caller (clReleaseProgram).
 */
manta_status mcl_build(mcl_dev *d, const char *name, const char *source, const char *options,
                       cl_program *out, char **log);

/** Options every embedded program of cl_kernels/ is built with, on every device. */
#define MCL_BUILD_OPTIONS "-cl-std=CL1.2"

/**
 * The source of embedded program @p program (a file name of cl_kernels/
 * without ".cl", not "common") exactly as mcl_kernel() builds it: the shared
 * preamble, a `#line 1 "<program>.cl"` directive, then the file. *text is a
 * malloc'd string the caller frees.
 * @return MANTA_ERR_INVALID_ARG for an unknown program, MANTA_ERR_NO_MEMORY.
 */
manta_status mcl_program_source(const char *program, char **text, manta_err *err);

/**
 * Kernel @p kernel of the embedded program @p program (a file name of
 * cl_kernels/ without ".cl"), built on first use with the shared preamble.
 * The kernel is owned by @p d and valid until mcl_close().
 */
manta_status mcl_kernel(mcl_dev *d, const char *program, const char *kernel, cl_kernel *out);

/* ---- memory -------------------------------------------------------------- */

/** A float32 region of a device buffer: the buffer and an offset in floats. */
typedef struct mview {
    cl_mem mem;
    size_t off;
} mview;

/** The view @p floats elements further into the same buffer. */
static inline mview mview_at(mview v, size_t floats)
{
    v.off += floats;
    return v;
}

/**
 * Create a read-write buffer of @p bytes. Checks the size against the
 * device's largest allocation and global memory first and returns
 * MANTA_ERR_DEVICE_MEMORY naming @p what and the sizes when it cannot fit.
 */
manta_status mcl_alloc(mcl_dev *d, size_t bytes, const char *what, cl_mem *out);

/** Release a buffer from mcl_alloc() (NULL allowed) and update the counters. */
void mcl_free(mcl_dev *d, cl_mem mem);

/** Blocking copies between host and a view; @p n is a count of floats. */
manta_status mcl_write(mcl_dev *d, mview dst, const float *src, size_t n);
manta_status mcl_read(mcl_dev *d, mview src, float *dst, size_t n);
/** Copy @p n floats between views (enqueued, in order). */
manta_status mcl_copy(mcl_dev *d, mview dst, mview src, size_t n);
/** The most floats one clEnqueueFillBuffer of mcl_fill() covers (1 GiB). NVIDIA's driver
 *  (580, H100) spins without end in clEnqueueFillBuffer over 11.6 GB, where 8.7 GB works. */
#define MCL_FILL_CHUNK ((size_t)1 << 28)
/** Set @p n floats of a view to @p value (enqueued, in fills of at most MCL_FILL_CHUNK). */
manta_status mcl_fill(mcl_dev *d, mview dst, float value, size_t n);
/** Wait for everything enqueued on the device's queue. */
manta_status mcl_finish(mcl_dev *d);

/* ---- typed kernel launches ---------------------------------------------- */

/**
 * A kernel launch being assembled. Arguments are appended in order with the
 * typed setters; the first failure is kept and reported by mcl_launch_run(),
 * so call sites need one check:
 * @code
 *   mcl_launch L;
 *   mcl_launch_begin(&L, d, "activation", "relu_forward");
 *   mcl_arg_view(&L, x); mcl_arg_view(&L, y); mcl_arg_int(&L, n);
 *   return mcl_launch_run(&L, 1, (size_t[]){n}, NULL);
 * @endcode
 */
typedef struct mcl_launch {
    mcl_dev *d;
    cl_kernel k;
    const char *name;
    cl_uint next;
    manta_status st;
    cl_int cl_status;
    size_t wg_max;      /**< work-items per group this kernel allows on the device */
    size_t wg_auto;     /**< most work-items mcl_launch_run() gives a group when not told (0: the
                             driver chooses): set on CPU devices, whose work-groups hold every
                             work-item's private arrays on one thread's stack */
    size_t local_bytes; /**< __local bytes: the kernel's own plus mcl_arg_local()'s */
    size_t outputs;     /**< values written, for the launch log (mcl_launch_output()) */
} mcl_launch;

void mcl_launch_begin(mcl_launch *L, mcl_dev *d, const char *program, const char *kernel);
/** A view takes two kernel arguments: `__global float *p, uint p_off`. */
void mcl_arg_view(mcl_launch *L, mview v);
/** The views @p v[0 .. n-1] in order (mcl_arg_view() for each). */
void mcl_arg_views(mcl_launch *L, const mview *v, size_t n);
void mcl_arg_int(mcl_launch *L, int v);
void mcl_arg_uint(mcl_launch *L, uint32_t v);
void mcl_arg_float(mcl_launch *L, float v);
/** A `__local` scratch argument of @p bytes. */
void mcl_arg_local(mcl_launch *L, size_t bytes);
/** State how many values the launch writes (for the launch log only). */
void mcl_launch_output(mcl_launch *L, size_t values);
/**
 * Most work-items one group of this kernel may have on the device: the
 * device's (clamped) work-group limit and the kernel's own
 * (CL_KERNEL_WORK_GROUP_SIZE, lower on GPUs for kernels using many
 * registers). 1 when the kernel could not be created (the launch then fails
 * with that error).
 */
size_t mcl_launch_wg_max(const mcl_launch *L);
/**
 * Enqueue. @p global is rounded up to a multiple of @p local (NULL: the
 * implementation picks, or for a kernel with a wg_auto a group of divisors of
 * @p global within it). Kernels guard their own bounds. A @p local that
 * does not fit the device's limits (work-items per group, per dimension, or
 * __local memory with the kernel's own) returns MANTA_ERR_UNSUPPORTED with a
 * message naming the kernel, the device, the limit and the value.
 */
manta_status mcl_launch_run(mcl_launch *L, unsigned dims, const size_t *global,
                            const size_t *local);

#endif
