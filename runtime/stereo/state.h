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
 * photographs' folder when the procedural pairs use one, the share of generated pairs
 * mixed into a folder's ("mix", when not 0), the checkpoint a fine-tuning run started from
 * ("init", when it did) and the space as its spec object), "params", "momentum",
 * "bn_state" and, once it exists, "teacher" (float32).
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
    long train_pairs;   /**< pairs of the training set (synthetic: generator indices) */
    char val_data[512]; /**< pairs of the phase-end evaluations: "synthetic" (held-out
                         *  procedural pairs; also a checkpoint without the member) or a folder */
    char textures[512]; /**< photographs of the procedural pairs (data/photo_bank.h): "" for
                         *  none (also a checkpoint without the member), "default" or a folder */
    double lr_scale;    /**< every phase's learning rate multiplied by it (1: also a
                         *  checkpoint without the member) */
    double mix;         /**< share of each batch's pairs generated (the rest the data
                         *  folder's), in [0, 1]: 0 also a checkpoint without the member */
    char init[512];     /**< the checkpoint a fine-tuning run started from
                         *  (stereo_state_init()); "" for a run from scratch (also a
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
 * Read checkpoint @p path as the initial network of a fine-tuning run of @p space (no
 * device needed): its settings into @p m (the initial run's: its step, schedule, data).
 * @return one line naming the file: the container's errors (a file missing or damaged);
 *         MANTA_ERR_FORMAT when it is not a stereo training checkpoint (a classification
 *         training checkpoint is called one, and a stereo checkpoint asked for);
 *         MANTA_ERR_INVALID_ARG when its space is not @p space (naming both; the same name
 *         with other settings said as such).
 */
manta_status stereo_state_peek_init(const char *path, const stereo_space *space, stereo_meta *m,
                                    manta_err *err);

/**
 * Start a fine-tuning run from checkpoint @p path: its parameters and batch-norm
 * statistics into @p t (a new trainer of the run's schedule, for the checkpoint's space:
 * checked as stereo_state_peek_init() does), zero momentum, and the teacher snapshot the
 * loaded parameters (stereo_trainer_snapshot_teacher(): a distilling phase distils from
 * the initial network from its first step). The checkpoint's momentum, teacher and
 * settings are not used: the run's step, schedule and data are the caller's.
 * @return as stereo_state_peek_init(); the device's errors.
 */
manta_status stereo_state_init(const char *path, stereo_trainer *t, mcl_dev *d, manta_err *err);

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
