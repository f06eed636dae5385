/**
 * @file state.h
 * @brief The state of a stereo supernet training run in one checkpoint
 *        (train/checkpoint.h's container): parameters, momentum, batch-norm statistics,
 *        the teacher once it exists, the next step and the run's settings with the whole
 *        search space, so a run resumes exactly and a sub-network is evaluated from the
 *        file alone.
 *
 * Sections: "meta" (JSON: format "manta-stereo-train", version 1, schedule preset, batch,
 * seed, next step, teacher flag, data source, training pairs, evaluation data, the
 * photographs' folder when the procedural pairs use one, and the space as its spec
 * object), "params", "momentum", "bn_state" and, once it exists, "teacher" (float32).
 * The data order needs no section: the pairs of a step are a function of (seed, step).
 */
#ifndef MANTA_STEREO_STATE_H
#define MANTA_STEREO_STATE_H

#include <stdint.h>

#include "data/photo_bank.h"
#include "stereo/train.h"
#include "train/checkpoint.h"

typedef struct stereo_meta {
    union {
        ckpt_run_meta run; /**< the common settings (data: "synthetic" or the folder given) */
        struct {
            CKPT_RUN_META_FIELDS
        };
    };
    long train_pairs;  /**< pairs of the training set (synthetic: generator indices) */
    char val_data[512]; /**< pairs of the phase-end evaluations: "synthetic" (held-out
                         *  procedural pairs; also a checkpoint without the member) or a folder */
    char textures[512]; /**< photographs of the procedural pairs (data/photo_bank.h): "" for
                         *  none (also a checkpoint without the member), "default" or a folder */
    double lr_scale;    /**< every phase's learning rate multiplied by it (1: also a
                         *  checkpoint without the member) */
} stereo_meta;

/** Write the run state atomically to @p path. */
manta_status stereo_state_save(const char *path, stereo_trainer *t, mcl_dev *d,
                               const stereo_meta *m, manta_err *err);

/** Read a checkpoint's settings and space (no device needed).
 *  @return MANTA_ERR_FORMAT naming the file when it is not a stereo training checkpoint. */
manta_status stereo_state_peek(const char *path, stereo_space *space, stereo_meta *m,
                               manta_err *err);

/** Restore parameters, momentum, statistics and teacher into @p t (created for the
 *  checkpoint's space and batch) and the settings into @p m. */
manta_status stereo_state_load(const char *path, stereo_trainer *t, mcl_dev *d, stereo_meta *m,
                               manta_err *err);

/**
 * The photographs of a run's procedural pairs (@p m->textures: "default" or a folder,
 * data/photo_bank.h) into @p out, each at least the space's crop in size: every source of
 * procedural pairs of the run (training, held-out evaluation, BN re-calibration) borrows
 * them, so a resumed run and `manta eval` make the same pairs. A run without photographs
 * leaves @p out zeroed. @p report (may be NULL): what the load found (skipped files).
 * @return photo_bank_load()'s errors, one line naming the folder as the run's
 *         ("the run's --textures folder DIR: ..."; a folder that is gone among them).
 */
manta_status stereo_state_photos(const stereo_meta *m, const stereo_space *s, photo_bank *out,
                                 photo_bank_report *report, manta_err *err);

#endif
