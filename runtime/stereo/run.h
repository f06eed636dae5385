/**
 * @file run.h
 * @brief The settings and data of a stereo training run (manta train --space stereo-...): the
 *        checks of its options, a new run's settings (stereo_meta) with its photographs, and
 *        the sources of its pairs: the training folder or procedural pairs, the procedural
 *        pairs mixed into a folder's, the held-out pairs of the phase-end evaluations.
 */
#ifndef MANTA_STEREO_RUN_H
#define MANTA_STEREO_RUN_H

#include <stdbool.h>

#include "core/status.h"
#include "data/photo_bank.h"
#include "data/stereo_batch.h"
#include "data/stereo_folder.h"
#include "data/stereo_metrics.h"
#include "space/stereo_space.h"
#include "stereo/state.h"
#include "stereo/steps.h"
#include "stereo/train.h"
#include "train/dp.h"
#include "train/schedule.h"

/** The options of a run, as given. */
typedef struct stereo_run_opts {
    const char *schedule; /**< preset, or NULL: not given */
    const char *data;     /**< "synthetic" or a folder */
    const char *init;     /**< checkpoint to fine-tune, or NULL */
    const char *textures; /**< --textures: a folder, "default" or "none"; NULL: not given */
    int batch;
    long train_pairs, seed;
    double lr_scale, mix; /**< mix < 0: not given */
    bool resume;
} stereo_run_opts;

/** The data of a run: its folders, photographs and the sources of its pairs. */
typedef struct stereo_run_data {
    stereo_set set, val_set; /**< the training and validation folders, when opened */
    bool have_set, have_val_set;
    photo_bank photos;         /**< the procedural pairs' photographs (count 0: none) */
    photo_bank_report report;  /**< of loading @p photos */
    stereo_source train, eval; /**< the training pairs, the phase ends' evaluation pairs */
    stereo_source gen;         /**< --mix: the generated pairs among a folder's */
} stereo_run_data;

/** The first conflict among options @p o (one line for the user), or NULL when none. */
const char *stereo_run_conflict(const stereo_run_opts *o);

/**
 * The photographs of a run's procedural pairs: --textures DIR, none (NULL) for --textures
 * none, else "default" when @p procedural and the default set is installed; @p missing is set
 * when the default set was wanted but is not installed (procedural textures alone), else
 * cleared.
 */
const char *stereo_run_textures(const stereo_run_opts *o, bool procedural, bool *missing);

/**
 * A new run's settings in @p m (cleared first) from @p o: preset, data, batch, seed, pairs,
 * learning-rate scale, mix share, initial checkpoint and photographs (stereo_run_textures(),
 * @p missing as there); with @p o->init, that checkpoint's settings in @p init (zeroed
 * without), read for space @p sp (stereo_state_peek_init()).
 * @return MANTA_ERR_INVALID_ARG for --textures on a run without procedural pairs; the errors
 * of stereo_state_peek_init(), the message after "--init: ".
 */
manta_status stereo_run_meta_new(const stereo_run_opts *o, const stereo_space *sp, stereo_meta *m,
                                 stereo_meta *init, bool *missing, manta_err *err);

/**
 * Open the folders of @p m (data, val_data: each pair of the latter with its disparity map)
 * and load its photographs into @p d (zeroed), @p d->report describing them.
 * @return the errors of stereo_folder_open() and stereo_state_photos(), MANTA_ERR_FORMAT for
 * a validation pair without disparity; @p d can then be freed (stereo_run_data_free()).
 */
manta_status stereo_run_data_open(stereo_run_data *d, const stereo_space *sp, const stereo_meta *m,
                                  manta_err *err);

/**
 * The schedule of a run (@p m's preset, its learning rates scaled by @p m->lr_scale) into
 * @p sched, and the sources of @p d: training (the folder, or procedural pairs), generated
 * (--mix) and evaluation (the validation folder, or @p eval_pairs held-out procedural pairs),
 * the procedural ones with @p d's photographs. @return the errors of stereo_schedule_preset().
 */
manta_status stereo_run_plan(stereo_run_data *d, const stereo_space *sp, const stereo_meta *m,
                             long eval_pairs, ofa_schedule *sched, manta_err *err);

/** Where the pairs of the run's steps come from (stereo/steps.h); borrows @p d and @p sp. */
stereo_steps stereo_run_steps(const stereo_run_data *d, const stereo_space *sp,
                              const stereo_meta *m);

/**
 * The largest (@p big) and smallest (@p small) sub-networks of @p sp evaluated on @p d's
 * evaluation pairs (@p eval_pairs of them), batch norm re-calibrated on @p recal_pairs of its
 * training pairs, at the space's crop: [0] every pixel, [1] the non-occluded ones
 * (stereo_metrics_scores()). @p b is resized to the crop first (its errors in @p err).
 * @return the errors of stereo_steps_resize() and stereo_trainer_evaluate() (the latter in
 * mcl_err() of the trainer's device).
 */
manta_status stereo_run_evaluate(stereo_trainer *t, stereo_batch *b, const stereo_space *sp,
                                 stereo_run_data *d, long recal_pairs, long eval_pairs,
                                 stereo_scores big[2], stereo_scores small[2], manta_err *err);

/**
 * The taps of @p sp that see no real feature at the run's largest training crop (@p m's
 * data: the space's plan size for procedural pairs, its crop for a folder's), into @p h x
 * @p w: stereo_space_dead_taps() (@p what, @p cap as there).
 */
int stereo_run_dead_taps(const stereo_space *sp, const stereo_meta *m, int *h, int *w, char *what,
                         size_t cap);

/**
 * The run's replicas on @p devs (stereo_dp_create(), into @p out), every one loaded from
 * @p resume (a checkpoint, its settings into @p m) or, when @p resume is NULL, initialised
 * from @p init (a fine-tuning run; NULL: none). @return the errors of stereo_dp_create(),
 * stereo_state_load() and stereo_state_init(); @p out, when set, is then the caller's to free.
 */
manta_status stereo_run_replicas(mcl_dev *const *devs, int n_dev, const stereo_space *sp,
                                 const ofa_schedule *sched, stereo_meta *m, dp_mode mode,
                                 ring_comm *ring, const char *resume, const char *init,
                                 dp_trainer **out, manta_err *err);

/** Free the folders and photographs of @p d. */
void stereo_run_data_free(stereo_run_data *d);

#endif
