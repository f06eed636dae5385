/**
 * @file trainstate.h
 * @brief The complete state of a supernet training run in one checkpoint
 *        (runtime/train/checkpoint.h format): parameters, momentum, batch-norm
 *        statistics, the teacher, the next step, the data loader's position and
 *        RNG, and the run's settings including the whole search space, so a run
 *        can be resumed exactly and a sub-network evaluated from the file alone.
 *
 * Sections: "meta" (JSON: format "manta-ofa-train", version, schedule preset,
 * batch, seed, next step, teacher flag, data source, validation count, and
 * the search space as its spec object), "loader" (int64: epoch, position, rng
 * state, rng stream), "params", "momentum", "bn_state" and, once it exists,
 * "teacher" (float32).
 */
#ifndef MANTA_CLASSIFY_TRAINSTATE_H
#define MANTA_CLASSIFY_TRAINSTATE_H

#include "data/loader.h"
#include "train/checkpoint.h"
#include "classify/ofa_train.h"

typedef struct train_meta {
    union {
        ckpt_run_meta run; /**< the common settings (data: as given on the command line) */
        struct {
            CKPT_RUN_META_FIELDS
        };
    };
    int val;             /**< validation images held out */
    double lr_scale;     /**< factor on every phase's learning rate (1 when absent from the file) */
    loader_state loader; /**< data order and augmentation position of `step` */
} train_meta;

/** Write the run state atomically to @p path. */
manta_status trainstate_save(const char *path, ofa_trainer *t, mcl_dev *d, const train_meta *m,
                             manta_err *err);

/** Read a checkpoint's settings and search space (verifies the whole file). */
manta_status trainstate_peek(const char *path, ofa_space *space, train_meta *m, manta_err *err);

/**
 * Restore parameters, momentum, statistics and teacher into @p t (created for
 * the checkpoint's space and batch), and the settings into @p m.
 */
manta_status trainstate_load(const char *path, ofa_trainer *t, mcl_dev *d, train_meta *m,
                             manta_err *err);

#endif
