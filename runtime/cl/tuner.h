/**
 * @file tuner.h
 * @brief CLBlast's tuner programs (Debian package clblast-utils): finding
 *        them, running one on a device with its output in a log file,
 *        following that log, and reading the results it wrote.
 *
 * A tuner (clblast_tuner_xgemm, clblast_tuner_copy_pad, ...) times a random
 * sample of one kernel's parameter space at one problem size and writes
 * clblast_<family>_32.json into its working folder, one file per kernel
 * variant that found a result. `manta tune` runs one per kernel, then times
 * the best results itself at the shapes manta runs (cl/tune_time.h) and
 * chooses (mcl_tune_choose() of cl/tune.h). The tuners are separate processes:
 * the calling process keeps running CLBlast's defaults.
 */
#ifndef MANTA_CL_TUNER_H
#define MANTA_CL_TUNER_H

#include <stddef.h>

#include "cl/tune.h"

/** Most kernel variants (result files) of one tuner that are read. */
#define MCL_TUNER_VARIANTS 8

/**
 * The folder of the colon-separated list @p path_list (as PATH) that holds
 * @p programs[0] as an executable; every other program of @p programs must be
 * there too.
 * @param programs @p n >= 1 file names
 * @param dir      receives the folder (@p cap bytes)
 * @return MANTA_ERR_UNSUPPORTED when no folder holds programs[0] (the tuners
 *         are not installed), MANTA_ERR_IO naming the first other program
 *         missing from that folder, MANTA_ERR_INVALID_ARG for no programs.
 */
manta_status mcl_tuner_find(const char *path_list, const char *const *programs, size_t n, char *dir,
                            size_t cap, manta_err *err);

/** What a tuner's log says so far. */
typedef struct mcl_tuner_log {
    size_t found[MCL_TUNER_VARIANTS]; /**< "Found N configuration(s)" per kernel variant */
    size_t n_found;                   /**< entries of @c found */
    size_t done;                      /**< configuration lines (timed or failed) */
    double best;                      /**< best GFLOPS or GB/s of a result that matched */
    char unit[8];                     /**< "GFLOPS" or "GB/s" */
    char last[256];                   /**< the last non-empty line */
} mcl_tuner_log;

/**
 * Read the log a tuner wrote (or is writing) at @p path; colour sequences are
 * ignored. A missing or unreadable file reads as an empty log.
 */
void mcl_tuner_log_read(const char *path, mcl_tuner_log *out);

/** Called while a tuner runs with what its log says so far. */
typedef void (*mcl_tuner_progress_fn)(void *ctx, const mcl_tuner_log *log, double elapsed_s);

/** One run of a tuner. */
typedef struct mcl_tuner_run {
    const char *program;            /**< path of the tuner */
    const char *dir;                /**< working folder: results go there, output to dir/log.txt */
    unsigned platform;              /**< OpenCL platform index (-platform) */
    unsigned device;                /**< device index within the platform (-device) */
    size_t m, n, k;                 /**< problem size; k == 0: the tuner takes no -k */
    double fraction;                /**< -fraction: 1 explores every configuration, F one in F */
    int runs;                       /**< -runs: timed runs per configuration */
    double limit_s;                 /**< the tuner is killed after this long */
    double report_s;                /**< @c progress every report_s seconds; 0: never */
    mcl_tuner_progress_fn progress; /**< may be NULL */
    void *ctx;                      /**< passed to @c progress */
} mcl_tuner_run;

/**
 * Run a tuner in single precision and wait for it.
 * @return MANTA_OK when it exited with status 0; MANTA_ERR_IO when it cannot
 *         be started or waited for; MANTA_ERR_BLAS when it failed, was killed
 *         or ran past the limit (the message names the program, the cause, the
 *         log's last line and the log's path).
 */
manta_status mcl_tuner_exec(const mcl_tuner_run *r, manta_err *err);

/**
 * The results a tuner wrote into @p dir (every clblast_*_32.json, at most
 * MCL_TUNER_VARIANTS files) as up to @p max distinct candidates, fastest (by
 * the tuner's time) first: the best result of each kernel variant (the Xgemm
 * tuner has two kernel designs, GEMMK 0 and 1), then the next fastest.
 * @param kernel the CLBlast kernel the tuner tunes ("Xgemm")
 * @param device the device name the tuner must have run on
 * @param max    1 .. MCL_TUNE_MAX_CANDIDATES
 * @param count  receives the number of candidates; 0 when no configuration
 *               ran correctly (no result file)
 * @return MANTA_ERR_IO when the folder cannot be read, MANTA_ERR_FORMAT for a
 *         malformed file or one of another kernel, MANTA_ERR_UNSUPPORTED for
 *         one made on another device, MANTA_ERR_INVALID_ARG for a bad @p max.
 */
manta_status mcl_tuner_results(const char *dir, const char *kernel, const char *device, size_t max,
                               mcl_tune_kernel *out, size_t *count, manta_err *err);

/** One kernel to tune with mcl_tuner_tune(). */
typedef struct mcl_tuner_job {
    const char *program;         /**< path of the tuner */
    const char *kernel;          /**< the CLBlast kernel it tunes ("XgemmDirect") */
    const char *dir;             /**< its folder, created: the run there, the count in dir.count */
    const mcl_device_info *info; /**< the device */
    size_t m, n, k;              /**< problem size; k == 0: the tuner takes no -k */
    size_t budget;               /**< configurations to run: a random sample of about that many */
    int runs;                    /**< timed runs per configuration */
    size_t max;                  /**< candidates wanted, 1 .. MCL_TUNE_MAX_CANDIDATES */
    double limit_s;              /**< each run of the tuner is killed after this long */
    double report_s;             /**< @c progress every report_s seconds; 0: never */
    /** Called once the sample is known: @p expect of @p total configurations; may be NULL. */
    void (*start)(void *ctx, size_t expect, size_t total);
    mcl_tuner_progress_fn progress; /**< may be NULL */
    void *ctx;                      /**< passed to @c start and @c progress */
} mcl_tuner_job;

/** What mcl_tuner_tune() did. */
typedef struct mcl_tuner_done {
    size_t total;   /**< configurations the tuner counted */
    size_t expect;  /**< configurations of the sample */
    double seconds; /**< the tuning run (after the count) */
    double best;    /**< GEMM kernels: GFLOPS of the first candidate at the tuner's size;
                          else the log's best GB/s */
    char unit[8];   /**< "GFLOPS" or "GB/s" */
} mcl_tuner_done;

/**
 * Tune one kernel: run the tuner once to count its configurations (a huge
 * fraction explores none), then on a random sample of about j->budget of them
 * (every one when there are fewer), and read its results (mcl_tuner_results()).
 * @return as mcl_tuner_exec() and mcl_tuner_results(); MANTA_ERR_IO when a
 *         folder cannot be created; MANTA_ERR_UNSUPPORTED when the tuner counts
 *         no configuration for the device, or no configuration ran correctly
 *         (naming the log). The folders stay (their logs explain failures).
 */
manta_status mcl_tuner_tune(const mcl_tuner_job *j, mcl_tune_kernel *out, size_t *count,
                            mcl_tuner_done *done, manta_err *err);

#endif
