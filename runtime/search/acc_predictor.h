/**
 * @file acc_predictor.h
 * @brief OFA's accuracy predictor: a one-hot encoding of a sub-network, an
 *        MLP trained with Adam on (architecture, top-1) pairs, prediction,
 *        RMSE, model files; and the accuracy data set (JSON lines).
 *
 * @par Encoding (OFA's MobileNetArchEncoder, as used with its AccuracyDataset)
 * A vector of n_res + S * n_ks + S * n_e values, S = units x max depth slots:
 * @verbatim
 *   [0, n_res)                          one-hot of the resolution's index in the space's list
 *   [n_res + i*n_ks, ... + n_ks)        slot i's kernel one-hot (i = u * max_depth + j)
 *   [n_res + S*n_ks + i*n_e, ... + n_e) slot i's expand-ratio one-hot
 * @endverbatim
 * A slot skipped by its unit's depth (j >= d[u]) is all zeros in both parts.
 * For the ImageNet space: 25 + 20*3 + 20*3 = 145 values; for cpu-default
 * 3 + 60 + 60 = 123. (OFA's older tutorial ArchManager orders the same
 * blocks kernel, expand, resolution; the values per block are the same.)
 *
 * @par Stereo encoding (a stereo space, space/stereo_space.h)
 * A vector of S * n_ks + S * n_e + U * n_d + L * n_dr values, S = units x max depth
 * slots, U units, L decoder levels, n_dr decoder width ratios (no resolution part: a
 * stereo space has one input size, its crop):
 * @verbatim
 *   [i*n_ks, ... + n_ks)                 slot i's kernel one-hot (i = u * max_depth + j)
 *   [S*n_ks + i*n_e, ... + n_e)          slot i's expand-ratio one-hot
 *   [S*(n_ks+n_e) + u*n_d, ... + n_d)    unit u's depth one-hot
 *   [S*(n_ks+n_e) + U*n_d + l*n_dr, ...) decoder level l's width one-hot (coarse to fine;
 *                                        the index of dw[l] among stereo_dec_width(s, l, .))
 * @endverbatim
 * A slot skipped by its unit's depth is all zeros in the kernel and expand parts, as
 * above; the depth is also given explicitly, since the decoder's skips make a unit's
 * depth matter beyond its slots. For stereo-cpu: 24*3 + 24*3 + 6*3 + 5*3 = 177 values;
 * for the tiny test space (tests/data/stereo_tiny.json) 6*2 + 6*2 + 3*2 + 3*2 = 36.
 * A stereo predictor predicts the held-out EPE in px (lower is better; the search
 * minimises it by maximising -EPE, search/candidates.h); its base is the training
 * set's mean EPE.
 *
 * @par Model (OFA's AccuracyPredictor)
 * Linear(n_in, H) + ReLU, then (L - 1) x [Linear(H, H) + ReLU], then
 * Linear(H, 1) without bias, plus a fixed base accuracy: the mean top-1 of
 * the training set. OFA: H = 400, L = 3. Weights use PyTorch's nn.Linear
 * layout and initialisation: W (out, in) row-major and b (out), both uniform
 * in +-1/sqrt(in). Parameters lie in one array, layer by layer: W_0, b_0,
 * W_1, b_1, ..., W_{L-1}, b_{L-1}, W_L (1, H).
 *
 * @par Training
 * Mean squared error of (prediction - top1) over mini-batches drawn in a
 * seeded random order each epoch; Adam (beta 0.9, 0.999, eps 1e-8) with
 * L2 weight decay added to the gradient as torch.optim.Adam does, on every
 * parameter. Plain single-threaded loops in a fixed order: the same seed,
 * data and build give bit-identical models.
 *
 * @par Model file
 * A checkpoint container (core/container.h: versioned, CRC-checked, written
 * atomically) with sections "meta" (JSON: format "manta-acc-predictor",
 * version 1, the space's name and hash, n_in, hidden, layers, base_acc,
 * encoding), "space" (the space spec, JSON) and "params" (float32).
 *
 * @par Data set file (JSON lines)
 * An optional header line {"format":"manta-acc-dataset","version":1,
 * "space":{"name":...,"hash":...}}, then one sample per line:
 * {"arch":{"ks":[...],"e":[...],"d":[...],"r":[28]},"top1":0.87,"r":28}.
 * top1 is a fraction in [0, 1]; the top-level "r" is optional but must
 * equal the architecture's (which may then omit its own); other fields
 * (top5, loss, ...) are ignored. Blank lines are skipped.
 * A stereo data set's header adds "task":"stereo" (its space hash is
 * prof_stereo_space_hash()) and its samples carry the decoder widths and EPE
 * instead of top-1:
 * {"arch":{"ks":[..],"e":[..],"d":[..],"r":[64],"dw":[..]},"epe":1.93,"bad3":12.5,"r":64}
 * with "epe" (px, finite, >= 0) required and "bad3" (% of pixels off by more
 * than 3 px) optional. A file of the other task is refused by its header, or
 * by its first sample when it has none ("top1" where "epe" is expected).
 */
#ifndef MANTA_SEARCH_ACC_PREDICTOR_H
#define MANTA_SEARCH_ACC_PREDICTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "profile/common.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/** Most hidden layers and widest hidden layer a model may have. */
#define ACCP_MAX_LAYERS 8
#define ACCP_MAX_HIDDEN 4096
/** Longest encoding: resolutions + slots x (kernel + expand choices), and for a stereo
 *  space units x depth choices + decoder levels x width choices. */
#define ACCP_MAX_FEATURES                                                                  \
    (OFA_MAX_RES + 2 * OFA_MAX_SLOTS * OFA_MAX_CHOICES + OFA_MAX_UNITS * OFA_MAX_CHOICES + \
     OFA_MAX_DEC_LEVELS * OFA_MAX_CHOICES)
/** Model file format version. */
#define ACCP_FORMAT_VERSION 1
/** Largest data set file read. */
#define ACCP_DATASET_FILE_MAX ((size_t)256 << 20)

/* ---- encoding ----------------------------------------------------------------------- */

/** Length of the encoding of space @p s (see the file comment). */
int accp_feature_dim(const ofa_space *s);

/**
 * Encode sub-network @p a into @p x ((accp_feature_dim(s)) floats, 0 or 1).
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s (the value named).
 */
manta_status accp_encode(const ofa_space *s, const ofa_arch *a, float *x, manta_err *err);

/** Length of the stereo encoding of space @p s (see "Stereo encoding"). */
int accp_stereo_feature_dim(const stereo_space *s);

/**
 * Encode stereo sub-network @p a into @p x ((accp_stereo_feature_dim(s)) floats, 0 or 1).
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s (stereo_arch_validate()'s message).
 */
manta_status accp_stereo_encode(const stereo_space *s, const ofa_arch *a, float *x, manta_err *err);

/* ---- data set ----------------------------------------------------------------------- */

/** One measured sub-network. */
typedef struct accp_sample {
    ofa_arch arch;
    /** what the predictor learns: top-1, a fraction in [0, 1] (classification), or the
     *  EPE in px (stereo) */
    double value;
    double bad3; /**< stereo: bad-3 in %, when measured; NAN otherwise */
} accp_sample;

/** Samples of one space. Initialise with accp_dataset_init() or accp_dataset_init_stereo(),
 *  free with accp_dataset_free(). */
typedef struct accp_dataset {
    ofa_space space;          /**< the space (of a stereo set, stereo_space_ofa_view()) */
    bool stereo;              /**< a stereo data set: @c stereo_spec is its space */
    stereo_space stereo_spec; /**< a stereo data set's space (a copy) */
    size_t n, cap;
    accp_sample *s; /**< (n) samples, owned */
} accp_dataset;

/** An empty data set of space @p s (copied). Cannot fail. */
void accp_dataset_init(accp_dataset *d, const ofa_space *s);
/** An empty data set of stereo space @p s (copied). Cannot fail. */
void accp_dataset_init_stereo(accp_dataset *d, const stereo_space *s);
/** Free the samples; NULL is allowed. */
void accp_dataset_free(accp_dataset *d);

/**
 * Append a sample.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of the data set's space or
 *         @p top1 is not in [0, 1]; MANTA_ERR_NO_MEMORY.
 */
manta_status accp_dataset_add(accp_dataset *d, const ofa_arch *a, double top1, manta_err *err);

/**
 * Append a sample to a stereo data set: EPE @p epe (px) and bad-3 @p bad3 (%; NAN: not
 * measured).
 * @return MANTA_ERR_INVALID_ARG when the set is not a stereo one, @p a is not of its space,
 *         @p epe is negative or not finite, or @p bad3 is outside [0, 100];
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status accp_dataset_add_stereo(accp_dataset *d, const ofa_arch *a, double epe, double bad3,
                                     manta_err *err);

/**
 * Parse JSON-lines text (format in the file comment) into @p d, initialised
 * for space @p s. Every line is validated against @p s.
 * @param what name in messages (a path); NULL: "data set".
 * @return MANTA_ERR_FORMAT "<what>:<line>: ..." naming the field (not JSON,
 *         "arch" missing, a value not of the space, "top1" outside [0, 1],
 *         "r" disagreeing, a header of another space or format version);
 *         MANTA_ERR_NO_MEMORY. @p d is left empty on error.
 */
manta_status accp_dataset_parse(const char *text, const char *what, const ofa_space *s,
                                accp_dataset *d, manta_err *err);

/** accp_dataset_parse() of the file @p path; MANTA_ERR_IO when it cannot be read. */
manta_status accp_dataset_load(const char *path, const ofa_space *s, accp_dataset *d,
                               manta_err *err);

/** accp_dataset_parse() of a stereo data set (the stereo sample format above) of space
 *  @p s; errors as there ("epe" missing or negative, "dw" not the space's, ...). */
manta_status accp_dataset_parse_stereo(const char *text, const char *what, const stereo_space *s,
                                       accp_dataset *d, manta_err *err);

/** accp_dataset_parse_stereo() of the file @p path; MANTA_ERR_IO when it cannot be read. */
manta_status accp_dataset_load_stereo(const char *path, const stereo_space *s, accp_dataset *d,
                                      manta_err *err);

/** Write the header and one line per sample to @p path atomically; MANTA_ERR_IO. */
manta_status accp_dataset_save(const accp_dataset *d, const char *path, manta_err *err);

/**
 * Split @p d at random (seeded) into @p train (about round(frac * n) samples)
 * and @p test (the rest); both are initialised here and owned by the caller.
 * The samples of one sub-network (the same depths, kernels and expand ratios
 * in the slots in use, at whatever resolution) land on one side together, so
 * that the held-out RMSE is of sub-networks the predictor has not seen:
 * sub-networks are drawn in seeded order and go to @p train while it holds
 * fewer than round(frac * n) samples. OFA uses frac = 0.8.
 * @return MANTA_ERR_INVALID_ARG when @p frac is outside [0, 1]; MANTA_ERR_NO_MEMORY.
 */
manta_status accp_dataset_split(const accp_dataset *d, double frac, uint64_t seed,
                                accp_dataset *train, accp_dataset *test, manta_err *err);

/* ---- model -------------------------------------------------------------------------- */

/** Shape and training settings. */
typedef struct accp_config {
    int hidden;          /**< hidden width (OFA: 400) */
    int layers;          /**< hidden layers (OFA: 3) */
    double lr;           /**< Adam learning rate (OFA: 1e-3) */
    double weight_decay; /**< L2 added to the gradient (OFA: 1e-4) */
    int batch;           /**< mini-batch size */
    int epochs;          /**< passes over the training set */
    uint64_t seed;       /**< initial weights and batch order */
    /** Optional (NULL): told after each epoch (1-based) with the epoch's mean training loss
     *  (MSE over its mini-batches, before each step). */
    void (*progress)(void *ctx, int epoch, int epochs, double train_mse);
    void *progress_ctx;
} accp_config;

/** OFA's settings: hidden 400, 3 layers, Adam 1e-3, weight decay 1e-4; and ours: batch 256,
 *  100 epochs, seed 0, no progress callback. */
void accp_config_default(accp_config *c);

/** A predictor. Create with accp_init() / accp_init_stereo() or accp_load() /
 *  accp_load_stereo(), free with accp_free(). */
typedef struct accp_model {
    ofa_space space;                /**< the space it encodes (a copy; of a stereo predictor,
                                         stereo_space_ofa_view(), which carries its name) */
    bool stereo;                    /**< a stereo predictor (of EPE): @c stereo_spec is its space */
    stereo_space stereo_spec;       /**< a stereo predictor's space (a copy) */
    char space_hash[PROF_HASH_LEN]; /**< prof_space_hash() of it (prof_stereo_space_hash()) */
    int n_in, hidden, layers;
    double base_acc; /**< added to the MLP output */
    size_t n_params;
    float *params; /**< (n_params), layout in the file comment; owned */
} accp_model;

/**
 * Allocate a model for space @p s with the shape of @p c, weights initialised
 * from c->seed as nn.Linear does, base accuracy 0.
 * @return MANTA_ERR_INVALID_ARG for a hidden width outside [1, ACCP_MAX_HIDDEN]
 *         or layers outside [1, ACCP_MAX_LAYERS]; MANTA_ERR_NO_MEMORY.
 */
manta_status accp_init(accp_model *m, const ofa_space *s, const accp_config *c, manta_err *err);
/** accp_init() of a stereo predictor (the stereo encoding) for space @p s. */
manta_status accp_init_stereo(accp_model *m, const stereo_space *s, const accp_config *c,
                              manta_err *err);

/** Free the parameters; NULL is allowed. */
void accp_free(accp_model *m);

/** What accp_train() reports. */
typedef struct accp_report {
    int epochs;        /**< epochs run */
    long steps;        /**< optimizer steps */
    double train_rmse; /**< after training, over the training set */
    double valid_rmse; /**< over the validation set; -1 without one */
} accp_report;

/**
 * Train @p m on @p train: base accuracy := mean value (top-1, or EPE) of @p train, then
 * c->epochs epochs of Adam on the MSE (settings in the file comment). The
 * model's shape must match @p c (hidden, layers); its weights are the start.
 * @param valid optional held-out set for the report (NULL: none).
 * @param rep   filled when not NULL.
 * @return MANTA_ERR_INVALID_ARG for an empty training set, a data set of
 *         another space, a shape other than the model's, batch or epochs
 *         < 1, or a learning rate that is not positive; MANTA_ERR_NO_MEMORY
 *         (scratch of about 6 x batch x hidden + 3 x n_params floats).
 */
manta_status accp_train(accp_model *m, const accp_dataset *train, const accp_dataset *valid,
                        const accp_config *c, accp_report *rep, manta_err *err);

/**
 * Predicted top-1 of @p a (a stereo predictor: EPE in px): the MLP output plus the base.
 * Uses no heap; safe to call from several threads on one model.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of the model's space.
 */
manta_status accp_predict(const accp_model *m, const ofa_arch *a, double *acc, manta_err *err);

/**
 * Root mean squared error of the predictions over @p d.
 * @return MANTA_ERR_INVALID_ARG for an empty set or one of another space.
 */
manta_status accp_rmse(const accp_model *m, const accp_dataset *d, double *rmse, manta_err *err);

/** Save @p m to @p path (checkpoint container, atomic); errors name the path. */
manta_status accp_save(const accp_model *m, const char *path, manta_err *err);

/**
 * Load a model saved by accp_save() and check it belongs to space @p s.
 * @param m initialised on success, empty on error.
 * @return MANTA_ERR_IO / MANTA_ERR_FORMAT / MANTA_ERR_UNSUPPORTED from the
 *         container (corrupt, truncated, other version); MANTA_ERR_FORMAT
 *         "<path>: a predictor of space 'mbv3-w1.0' (hash ...), not
 *         'cpu-default' (hash ...)", for a meta field missing or out of
 *         range, or parameters that do not fit the shape; MANTA_ERR_NO_MEMORY.
 */
manta_status accp_load(const char *path, const ofa_space *s, accp_model *m, manta_err *err);

/** accp_load() of a stereo predictor of space @p s (meta "task": "stereo", encoding
 *  "onehot-k-e-d-dw-v1"); a classification predictor or one of another space is refused
 *  (MANTA_ERR_FORMAT naming both). */
manta_status accp_load_stereo(const char *path, const stereo_space *s, accp_model *m,
                              manta_err *err);

#endif
