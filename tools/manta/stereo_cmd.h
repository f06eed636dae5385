/* What the stereo commands share (eval_stereo.c, export_stereo.c, train_stereo.c): the
 * sub-network argument, the run's re-calibration pairs and the training batch. */
#ifndef MANTA_TOOLS_STEREO_CMD_H
#define MANTA_TOOLS_STEREO_CMD_H

#include <stdbool.h>

#include "data/photo_bank.h"
#include "data/stereo_metrics.h"
#include "cl/cl.h"
#include "export/xgraph.h"
#include "stereo/state.h"
#include "stereo/train.h"

/** Whether the --ckpt of argv is a stereo training checkpoint (the command then takes its
 *  stereo form). */
bool stereo_cmd_ckpt_arg(int argc, char **argv);
/** Whether argv has --model and the model is a stereo one (its metadata's task), or argv's
 *  --ckpt is a stereo checkpoint: manta eval then takes its stereo model form. */
bool stereo_cmd_model_arg(int argc, char **argv);
/** Whether @p path is a folder of stereo pairs (KITTI or Middlebury layout) or "synthetic". */
bool stereo_cmd_is_stereo_data(const char *path);
/** The figures of one region, @p what ("all", "noc"): a JSON member (each figure null where
 *  no pixel counted) or a line of text (@p indent spaces first). */
void stereo_cmd_print_scores(const char *what, const stereo_scores *s, bool json, int indent);

/** Whether argv asks for --help (or -h) before "--". */
bool stereo_cmd_help_arg(int argc, char **argv);

/** "max", "min" or a file in OFA's encoding with "dw" into @p a. @return the reader's or the
 *  parser's error (naming the file or the member). */
manta_status stereo_cmd_arch(const stereo_space *sp, const char *arg, ofa_arch *a, manta_err *err);

/** The pairs of a run's batch-norm re-calibration: its training data (generated pairs with
 *  the run's photographs, or its folder), or @p recal_data's. */
typedef struct stereo_recal_src {
    stereo_source src; /**< what stereo_ordered_batch() and stereo_infer_set_recal() take */
    stereo_set set;    /**< the folder's, when it is one */
    photo_bank photos; /**< the run's photographs, when loaded (count 0: none) */
    bool folder;
} stereo_recal_src;

/**
 * Open the re-calibration pairs of run @p m of space @p sp: @p recal_data (NULL: the run's
 * training data; "synthetic" or a KITTI / Middlebury folder). The run's photographs are
 * loaded for generated pairs, and also when @p photos is true (the held-out pairs use them).
 * @p r must stay where it is while used (its source points into it).
 * @return the folder's or the photographs' errors, one line.
 */
manta_status stereo_recal_open(const stereo_meta *m, const stereo_space *sp, const char *recal_data,
                               bool photos, stereo_recal_src *r, manta_err *err);
/** Release what stereo_recal_open() opened (a zeroed @p r is allowed). */
void stereo_recal_close(stereo_recal_src *r);

/** A stereo checkpoint's supernet on a device, for scoring sub-networks on the run's
 *  held-out pairs as manta eval --ckpt does (acc-dataset, search --rerank). */
typedef struct stereo_cmd_ckpt {
    stereo_space sp;
    stereo_meta m;
    mcl_dev *dev;
    stereo_trainer *t;
    stereo_recal_src rs; /**< the run's re-calibration pairs (its training data) */
    stereo_batch b;      /**< a batch of the run's size at the crop */
    bool have_rs, have_b;
} stereo_cmd_ckpt;

/** Open checkpoint @p path on device @p device (cmd_open_device()): its space, settings,
 *  trainer, re-calibration pairs and a batch. @return false after printing one line
 *  ("manta CMD: ..."); @p c can be closed in any case. */
bool stereo_cmd_ckpt_open(const char *cmd, const char *path, const char *device,
                          stereo_cmd_ckpt *c);

/**
 * Score sub-network @p a on the run's first @p pairs held-out procedural pairs
 * (stereo_heldout_source(), the run's photographs) at the crop, batch norm re-calibrated on
 * @p recal of its training pairs: stereo_trainer_evaluate(), as manta eval --ckpt with its
 * default data. The same pairs for every call.
 * @return stereo_trainer_evaluate()'s errors (the device's message copied into @p err).
 */
manta_status stereo_cmd_ckpt_heldout(stereo_cmd_ckpt *c, const ofa_arch *a, long pairs, long recal,
                                     stereo_scores *all, stereo_scores *noc, manta_err *err);

/** Release what stereo_cmd_ckpt_open() opened (a zeroed @p c is allowed). */
void stereo_cmd_ckpt_close(stereo_cmd_ckpt *c);

/** manta train --batch auto for stereo: the largest batch (at most 64) whose planned buffers
 *  fit the first device @p d of @p n_dev (95% of its global memory, each piece within its
 *  largest allocation), said in one line on stdout; 0 (said in one line on stderr) when batch
 *  1 does not fit or the plan fails. */
int stereo_cmd_auto_batch(mcl_dev *d, const stereo_space *sp, int n_dev);
/** manta train --batch's value for stereo: "auto" (sets @p is_auto) or 1 to 64 (sets
 *  @p batch). @return false, said in one line, otherwise. */
bool stereo_cmd_batch_arg(const char *arg, int *batch, bool *is_auto);

/** manta train --help's description of stereo training (the options table's text). */
extern const char stereo_cmd_train_about[];

/** manta export --int8 on a stereo checkpoint: the calibration's options. */
typedef struct stereo_cmd_int8 {
    long calib;         /**< generated training pairs for the ranges */
    const char *method; /**< "minmax", "percentile" or "auto" */
    double pct;         /**< the percentile method's clip */
    long val;           /**< held-out pairs scoring the int8 file (auto picks by them) */
} stereo_cmd_int8;

/** What the calibration measured: the int8 EPE on the held-out pairs of each method tried
 *  (-1: not measured) and the method kept. */
typedef struct stereo_cmd_int8_result {
    double epe_minmax, epe_percentile;
    char picked[16];
} stereo_cmd_int8_result;

/**
 * Calibrate stereo graph @p g (at @p h x @p w, from the re-calibrated supernet) for an int8
 * file: xgraph_quant_prepare(), the ranges from pairs 0 .. o->calib - 1 of @p train (the
 * run's training pairs) through the graph's float reference, by o->method (auto: min/max and
 * the percentile both, the one of the lower int8 EPE on o->val held-out pairs of the run
 * kept), then xgraph_quant_shared(). g->qmin / g->qmax set for tflite_write().
 * @return the generator's, the calibration's or the writer's errors.
 */
manta_status stereo_cmd_int8_calibrate(xgraph *g, const stereo_space *sp, const stereo_meta *m,
                                       const stereo_source *train, const photo_bank *photos, int h,
                                       int w, const stereo_cmd_int8 *o, stereo_cmd_int8_result *res,
                                       manta_err *err);

#endif
