/* What manta acc-dataset's two forms share (accdata.c: classification checkpoints,
 * accdata_stereo.c: stereo ones): the options every form takes, --resume's check that a
 * file's samples are the first of the sequence asked for, and the summary's range. */
#ifndef MANTA_TOOLS_ACCDATA_H
#define MANTA_TOOLS_ACCDATA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/opts.h"
#include "search/acc_predictor.h"

/** The options of every form of manta acc-dataset. */
typedef struct acc_opts {
    const char *ckpt, *out, *device, *sampling;
    long count, seed;
    bool json, resume;
    bool mixed; /**< --sampling mixed (set by acc_opts_parse()) */
} acc_opts;

/** Parses argv with the shared options around @p task_defs (the form's own, NULL-name
 *  terminated, at most 4: listed after --count), @p synopsis and @p about as in opt_cmd,
 *  @p ckpt_help the --ckpt line; @p o holds the defaults on entry (--sampling: "mixed"
 *  when NULL). Checks that --ckpt and --out are given and that --out can be written.
 *  @return 1 to run, else the exit status (0 after --help, 2 after printing why). */
int acc_opts_parse(int argc, char **argv, acc_opts *o, const opt_def *task_defs,
                   const char *synopsis, const char *about, const char *ckpt_help);

/** Sub-network @p i of the seeded sequence of @p space (an ofa_space or a stereo_space,
 *  as the form has it) into @p a. */
typedef void (*acc_sample_fn)(const void *space, uint64_t seed, bool mixed, long i, ofa_arch *a);
/** The data set of the file @p path for @p space into @p ds (accp_dataset_load() or its
 *  stereo form). */
typedef manta_status (*acc_load_fn)(const char *path, const void *space, accp_dataset *ds,
                                    manta_err *err);

/** --resume: the samples of an existing o->out into @p ds (initialised, empty) when they
 *  are the first of the sequence @p o asks for (nothing when the file does not exist).
 *  @return false after printing why not (the file's error, or the first sample that is
 *  not the sequence's). */
bool acc_resume(const acc_opts *o, const void *space, acc_sample_fn sample, acc_load_fn load,
                accp_dataset *ds);

/** Mean, least and greatest value of @p ds's samples (all 0 when it has none). */
void acc_value_range(const accp_dataset *ds, double *mean, double *lo, double *hi);

#endif
