/**
 * @file tune.h
 * @brief Per-device CLBlast tuning: read the JSON files CLBlast's tuners
 *        write, choose between tuned and CLBlast's own parameters from
 *        measurements, keep the chosen parameters in one file per device in
 *        the cache folder, and apply them with CLBlastOverrideParameters().
 *
 * `manta tune` runs the tuners (separate programs from clblast-utils) and
 * stores a tuning file; mcl_open() applies it (mcl_tune_autoload()) so every
 * later run uses the tuned kernels. The file is keyed by platform, device
 * name, driver version and CLBlast version: after a driver or CLBlast upgrade
 * it no longer matches and is ignored with a warning until re-tuned.
 *
 * Nothing here is global in manta. CLBlast itself keeps overrides per
 * cl_device_id for the rest of the process (its parameter database), so once
 * a device was opened with tuning, later opens of the same device in the
 * same process also run tuned.
 */
#ifndef MANTA_CL_TUNE_H
#define MANTA_CL_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cl/blas.h"
#include "cl/cl.h"

/** Most parameters one CLBlast kernel takes (Xgemm has 16). */
#define MCL_TUNE_MAX_PARAMS 20
/** Most kernels one tuning file holds (7 are known). */
#define MCL_TUNE_MAX_KERNELS 8
/** Longest kernel, family or parameter name, including the terminator. */
#define MCL_TUNE_NAME 32

/** The parameters of one CLBlast kernel (single precision). */
typedef struct mcl_tune_kernel {
    char kernel[MCL_TUNE_NAME]; /**< CLBlast's name: "Xgemm", "XgemmDirect", "Copy", ... */
    char family[MCL_TUNE_NAME]; /**< the tuner's kernel_family: "xgemm_12", "pad", ... */
    size_t count;               /**< parameters in names/values */
    char names[MCL_TUNE_MAX_PARAMS][MCL_TUNE_NAME];
    size_t values[MCL_TUNE_MAX_PARAMS];
    double time_ms; /**< best time (or, for GemmRoutine, score) the tuner measured; 0: unknown */
    size_t m, n, k; /**< the tuner's problem size (0 where the tuner has none) */
} mcl_tune_kernel;

/** A tuned parameter set: at most one entry per kernel. */
typedef struct mcl_tune_set {
    size_t count;
    mcl_tune_kernel k[MCL_TUNE_MAX_KERNELS];
} mcl_tune_set;

/** What a tuning file is valid for. */
typedef struct mcl_tune_key {
    char platform[128]; /**< platform name */
    char device[256];   /**< device name */
    char driver[128];   /**< driver version */
    char clblast[32];   /**< CLBlast version manta was built against, "1.5.3" */
} mcl_tune_key;

/** The key of a device. */
void mcl_tune_key_of(const mcl_device_info *info, mcl_tune_key *out);

/** True when two keys name the same platform, device, driver and CLBlast. */
bool mcl_tune_key_equal(const mcl_tune_key *a, const mcl_tune_key *b);

/**
 * The tuning file of a device in @p cache_dir:
 * `clblast-tuning-<device name>-<hash of platform and device>.json`.
 * One file per device; driver and CLBlast versions are checked inside.
 * @return MANTA_ERR_INVALID_ARG when @p cache_dir is empty or the path does
 *         not fit in @p cap.
 */
manta_status mcl_tune_path(const char *cache_dir, const mcl_tune_key *key, char *path, size_t cap,
                           manta_err *err);

/**
 * CLBlast's kernel name for a tuner's kernel_family ("xgemm_direct_2" ->
 * "XgemmDirect"); NULL when the family is not one manta applies.
 */
const char *mcl_tune_kernel_of_family(const char *family);

/**
 * Check that @p k names a known kernel with exactly its parameters, each in
 * range (sizes >= 1, switches 0 or 1). A file that passes cannot make
 * CLBlast divide by zero.
 * @return MANTA_ERR_FORMAT naming the kernel and the first bad parameter.
 */
manta_status mcl_tune_kernel_check(const mcl_tune_kernel *k, manta_err *err);

/**
 * Read one JSON file written by a CLBlast tuner (clblast_<family>_32.json):
 * the result with the lowest time, its parameters without PRECISION, the
 * problem size. The device the tuner ran on is written to @p device (may be
 * NULL) so the caller can check it tuned the intended device.
 * @return MANTA_ERR_IO when unreadable, MANTA_ERR_FORMAT when malformed, not
 *         single precision, of an unknown family or without results.
 */
manta_status mcl_tune_parse_tuner(const char *path, mcl_tune_kernel *out, char *device,
                                  size_t device_cap, manta_err *err);

/**
 * Like mcl_tune_parse_tuner(), for the @p max results with the lowest times,
 * fastest first, in out[0 .. *count-1]. Each returned result is checked
 * (mcl_tune_kernel_check()); a bad one makes the file malformed.
 */
manta_status mcl_tune_parse_tuner_ranked(const char *path, mcl_tune_kernel *out, size_t max,
                                         size_t *count, char *device, size_t device_cap,
                                         manta_err *err);

/** Add @p k to @p set, replacing an entry of the same kernel. */
manta_status mcl_tune_set_put(mcl_tune_set *set, const mcl_tune_kernel *k, manta_err *err);

/** The entry for @p kernel, or NULL. */
const mcl_tune_kernel *mcl_tune_set_find(const mcl_tune_set *set, const char *kernel);

/**
 * Write a tuning file atomically (manta_file_write_atomic() of core/fileio.h).
 * @param note free text stored with the file (how it was made); may be NULL.
 */
manta_status mcl_tune_save(const char *path, const mcl_tune_key *key, const mcl_tune_set *set,
                           const char *note, manta_err *err);

/**
 * Read and validate a tuning file for @p expect.
 * @return MANTA_ERR_IO when it cannot be read, MANTA_ERR_FORMAT when it is
 *         malformed or holds bad parameters, MANTA_ERR_UNSUPPORTED when it was
 *         made for another device, driver or CLBlast version (the message
 *         names both).
 */
manta_status mcl_tune_load(const char *path, const mcl_tune_key *expect, mcl_tune_set *out,
                           manta_err *err);

/**
 * Override CLBlast's single-precision parameters on @p device with every
 * kernel of @p set (each is checked first; nothing is applied when one fails
 * the check). The next GEMM recompiles with them.
 * @return MANTA_ERR_BLAS naming the kernel and CLBlast's status.
 */
manta_status mcl_tune_apply(cl_device_id device, const mcl_tune_set *set, manta_err *err);

/**
 * What mcl_open() does: when caching is on (@p cache_dir non-empty) and a
 * tuning file exists for @p info, load, check and apply it. Never fails: a
 * missing file leaves @p out inactive with no warning; an unreadable,
 * corrupt or foreign file, or a failed override, leaves it inactive with the
 * reason in out->warning (the library prints nothing).
 */
void mcl_tune_autoload(const char *cache_dir, const mcl_device_info *info, mcl_tuning *out);

/* ---- choosing between CLBlast's parameters and tuned ones -------------------- */

/** Most GEMM shapes a choice weighs. */
#define MCL_TUNE_MAX_SHAPES 16
/** Most tuned candidates of one GEMM kernel that are timed. */
#define MCL_TUNE_MAX_CANDIDATES 4

/** Kernel-selection threshold that sends every GEMM to the indirect kernel
 *  (CLBlast runs the direct kernel when m*n*k < T^3). */
#define MCL_TUNE_ALL_INDIRECT 0
/** Kernel-selection threshold that sends every GEMM to the direct kernel (the
 *  largest XGEMM_MIN_INDIRECT_SIZE a tuning file holds). */
#define MCL_TUNE_ALL_DIRECT MCL_SGEMM_ALWAYS_DIRECT

/** A choice may make no shape slower than this fraction below "before": the
 *  timing noise of a shared machine, not a trade worth making (one kernel switch
 *  point serves every GEMM, also the shapes not timed). */
#define MCL_TUNE_TOLERANCE 0.10

/** One way to run the direct or the indirect GEMM kernel, with its speed at
 *  each shape measured with that kernel forced. */
typedef struct mcl_tune_option {
    bool tuned;        /**< false: CLBlast's own parameters; true: those of @c k */
    bool helpers;      /**< with the tuned Copy/Pad/Transpose/Padtranspose kernels */
    mcl_tune_kernel k; /**< XgemmDirect or Xgemm, when tuned */
    double gflops[MCL_TUNE_MAX_SHAPES]; /**< GFLOP/s per shape */
} mcl_tune_option;

/** What mcl_tune_choose() chose: what goes into the tuning file. */
typedef struct mcl_tune_choice {
    size_t direct;                         /**< index of the chosen direct option */
    size_t indirect;                       /**< index of the chosen indirect option */
    size_t threshold;                      /**< the direct kernel runs when m*n*k < threshold^3 */
    bool runs_direct[MCL_TUNE_MAX_SHAPES]; /**< shape i runs the direct kernel */
    double gflops[MCL_TUNE_MAX_SHAPES];    /**< GFLOP/s per shape with the choice */
} mcl_tune_choice;

/** CLBlast's rule: a GEMM of @p mnk = m*n*k multiply-adds runs the direct
 *  kernel when mnk < @p threshold^3. */
bool mcl_tune_runs_direct(uint64_t mnk, size_t threshold);

/** The summed time of @p o over @p n_shapes shapes relative to @p before
 *  (GFLOP/s per shape): n_shapes when it is as fast as before everywhere. */
double mcl_tune_rel_time(const double *before, size_t n_shapes, const mcl_tune_option *o);

/** The index in [@p from, @p n) of the option with the least mcl_tune_rel_time();
 *  ties keep the first. @p from when the range is empty. */
size_t mcl_tune_fastest(const double *before, size_t n_shapes, const mcl_tune_option *o,
                        size_t from, size_t n);

/**
 * Choose the direct option, the indirect option and the threshold below which
 * the direct kernel runs, minimising the summed time relative to @p before
 * without making any shape slower than MCL_TUNE_TOLERANCE allows.
 *
 * One threshold decides for every GEMM (direct when m*n*k < T^3), so shapes of
 * equal m*n*k go together. T stays CLBlast's own (@p t_default) when that splits
 * the shapes alike; else it is put between the sizes it separates (geometric
 * mean of their cube roots), at half the smallest cube root when every shape
 * runs indirect and at twice the largest when all run direct, never above
 * MCL_TUNE_ALL_DIRECT. A kernel that no shape uses keeps the option that is
 * fastest over all shapes: it serves other sizes. Ties keep option 0
 * (CLBlast's parameters, by convention).
 *
 * @param mnk       m*n*k of each shape
 * @param before    GFLOP/s of each shape with CLBlast's defaults
 * @param n_shapes  1 .. MCL_TUNE_MAX_SHAPES
 * @param t_default CLBlast's own threshold (0: unknown)
 * @param dopt      @p nd >= 1 direct options, each timed with the direct kernel forced
 * @param iopt      @p ni >= 1 indirect options, each timed with the indirect kernel forced
 * @return MANTA_ERR_INVALID_ARG when a count is out of range.
 */
manta_status mcl_tune_choose(const uint64_t *mnk, const double *before, size_t n_shapes,
                             size_t t_default, const mcl_tune_option *dopt, size_t nd,
                             const mcl_tune_option *iopt, size_t ni, mcl_tune_choice *out,
                             manta_err *err);

/** Put the kernel-selection threshold into @p set (kernel GemmRoutine,
 *  parameter XGEMM_MIN_INDIRECT_SIZE), replacing one it holds. */
manta_status mcl_tune_set_threshold(mcl_tune_set *set, size_t threshold, manta_err *err);

/**
 * The tuning set of a choice: the chosen options' tuned kernels, the @p helpers
 * when the chosen indirect option was timed with them, and the threshold.
 * CLBlast's parameters (untuned options) are left out.
 */
manta_status mcl_tune_choice_set(const mcl_tune_choice *ch, const mcl_tune_option *dopt,
                                 const mcl_tune_option *iopt, const mcl_tune_set *helpers,
                                 mcl_tune_set *out, manta_err *err);

#endif
