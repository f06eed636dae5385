/* Data sets of a training or evaluation run, as the command line names them:
 * the Debian Fashion-MNIST (default), an IDX folder, or a JPEG folder with one
 * subfolder per class (either DIR/train + DIR/test, or DIR alone). */
#ifndef MANTA_TOOLS_RUNDATA_H
#define MANTA_TOOLS_RUNDATA_H

#include <stdbool.h>

#include "data/augment.h"
#include "cl/cl.h"
#include "data/dataset.h"
#include "classify/trainstate.h"

typedef struct run_data {
    char source[512]; /* what --data named */
    dataset train;    /* the training images (train and validation split) */
    dataset test;     /* official test set; count 0 when there is none */
    data_split split; /* train / validation indices into `train` */
    aug_params aug_train, aug_eval;
} run_data;

/**
 * Load the data set @p spec ("fashion-mnist" or a folder) with @p channels
 * (JPEG only; IDX is gray), holding out @p val images of the training set
 * (seeded), for command @p cmd ("train"). Prints a one-line error ("manta <cmd>: ...")
 * and returns false on failure.
 */
bool run_data_load(const char *cmd, const char *spec, int channels, int val, uint64_t seed,
                   bool verbose, run_data *out);
void run_data_free(run_data *d);

/** A batch source for ofa_trainer_evaluate(): images of one index list in order. */
typedef struct eval_source {
    const dataset *data;
    const int *index; /* NULL: every image in order */
    int count;
    int batch;
    const aug_params *aug;
    manta_rng rng; /* training-mode augmentation draws (re-calibration) */
    int *scratch;  /* (batch) */
} eval_source;

/** The ofa_batch_fn over an eval_source. */
manta_status eval_source_batch(void *ctx, long index, int r, float *images, float *labels,
                               int *count);

/* A training checkpoint opened for evaluation or export: its settings and
 * search space, its data set, the device and a trainer holding its weights. */
typedef struct run_ckpt {
    ofa_space space;
    train_meta meta;
    run_data data;
    mcl_dev *dev;
    ofa_trainer *trainer;
    int *scratch; /* (batch) image indices for the eval sources */
} run_ckpt;

/**
 * trainstate_peek() of @p path for sub-command @p cmd ("export"). On failure prints one
 * line and returns false: for a stereo training checkpoint, that @p cmd covers
 * classification checkpoints and what to use instead; else the reader's error.
 */
bool run_ckpt_peek(const char *cmd, const char *path, ofa_space *space, train_meta *meta);

/**
 * Open checkpoint @p path for sub-command @p cmd. Prints a one-line error and returns false on
 * failure (everything opened so far is released).
 */
bool run_ckpt_open(const char *cmd, const char *path, const char *device, run_ckpt *r);
void run_ckpt_close(run_ckpt *r);

/**
 * Whether @p recal images (--recal-images) make at least one of @p r's batches, which BN
 * re-calibration needs; else one line naming the option, the value and the batch.
 */
bool run_ckpt_check_recal(const char *cmd, const run_ckpt *r, long recal);

/** OFA's BN re-calibration source: the training split with training
 *  augmentation, seeded from the run's seed. */
eval_source run_ckpt_recal_source(run_ckpt *r);
/** The validation split (or the test set when @p test) in eval mode with
 *  normalisation @p aug (NULL: the data set's). */
eval_source run_ckpt_eval_source(run_ckpt *r, bool test, const aug_params *aug);

#endif
