/**
 * @file checkpoint.h
 * @brief Training checkpoints: the checkpoint container (core/container.h)
 *        with float32 sections streamed from and to device views.
 *
 * A training state is stored as sections such as "params", "grads",
 * "momentum", "bn_state" (float32, read from device views) and "meta" (JSON:
 * step, schedule, search space). docs/checkpoint.md lists the conventions.
 * Every container function (ckpt_writer_begin(), ckpt_open(), ...) is
 * available through this header.
 */
#ifndef MANTA_TRAIN_CHECKPOINT_H
#define MANTA_TRAIN_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cl/cl.h"
#include "core/container.h"
#include "core/status.h"

/**
 * Append a float32 section read from the device view @p src ((n) floats),
 * in chunks through a host staging buffer of 256 KiB, so a slab of any size
 * is stored without a host copy of it. Waits for work queued before on @p d
 * (the reads are blocking, in queue order).
 * @return as ckpt_add_f32() (no device, or no buffer for values, is "no
 *         data"), or the device's status with its message when a read fails
 *         ("checkpoint X: section 'params': reading the device failed: ...").
 */
manta_status train_ckpt_add_f32_device(ckpt_writer *w, const char *name, mcl_dev *d, mview src,
                                       size_t n);

/**
 * Copy float32 section @p name into the device view @p dst ((n) floats),
 * in 256 KiB chunks through a host staging buffer. On an error after the
 * first chunk the view holds part of the data.
 * @return as ckpt_read_f32() (no device, or no buffer for values, is "no
 *         destination"), or the device's status with its message when a
 *         write fails.
 */
manta_status train_ckpt_read_f32_device(ckpt_reader *r, const char *name, mcl_dev *d, mview dst,
                                        size_t n, manta_err *err);

/**
 * The float32 sections of a training run's state on the device: "params" and
 * "momentum" ((n_params) floats each), "bn_state" ((n_state) floats) and, when
 * @p has_teacher, "teacher" ((n_params) floats), in that order.
 */
typedef struct ckpt_train_slabs {
    mview params, momentum, state, teacher;
    size_t n_params, n_state;
    bool has_teacher;
    const float *ef; /**< host floats written as section "ef_residual" when n_ef > 0 (the int8
                          error feedback of every rank, train/dp.h); not read by the loads */
    size_t n_ef;
} ckpt_train_slabs;

/**
 * Write a training checkpoint atomically to @p path: the JSON section "meta"
 * (@p meta), the int64 section "loader" ((n_loader) values) when @p loader is
 * not NULL, then the slabs of @p s read from @p d (train_ckpt_add_f32_device()),
 * then "ef_residual" when s->n_ef > 0.
 * On an error the file at @p path is left as it was.
 */
manta_status train_ckpt_save_train(const char *path, const char *meta, const int64_t *loader,
                                   size_t n_loader, mcl_dev *d, const ckpt_train_slabs *s,
                                   manta_err *err);

/** Read the slabs of @p s (as train_ckpt_save_train() writes them) into their views on @p d. */
manta_status train_ckpt_read_train_slabs(ckpt_reader *r, mcl_dev *d, const ckpt_train_slabs *s,
                                         manta_err *err);

/**
 * Reads a training checkpoint's settings from @p r (the file @p path) into the
 * caller's structs at @p user; when @p slabs is not NULL (a load), also checks
 * them against the run and sets *@p slabs to the views to fill.
 */
typedef manta_status (*ckpt_state_fn)(ckpt_reader *r, const char *path, void *user,
                                      ckpt_train_slabs *slabs, manta_err *err);

/**
 * Open the training checkpoint @p path and call @p read on it; when @p load,
 * then read the slabs it set into their views on @p d (train_ckpt_read_train_slabs()).
 */
manta_status train_ckpt_read_train(const char *path, ckpt_state_fn read, void *user, bool load,
                                   mcl_dev *d, manta_err *err);

/**
 * The settings every training checkpoint's "meta" carries, declared as members
 * of ckpt_run_meta and, under the same names, of the run-specific meta structs
 * (classify/trainstate.h, stereo/state.h), which overlay them with a ckpt_run_meta
 * in an anonymous union: preset (the schedule preset), batch, seed, step (the
 * next step to train), has_teacher and data (the data source); ef and n_ef are
 * not in the JSON: the saves write them as ckpt_train_slabs.ef (the int8 error
 * feedback of every rank, NULL / 0 when there is none; train_ckpt_read_ef()).
 */
#define CKPT_RUN_META_FIELDS \
    char preset[16];         \
    int batch;               \
    uint64_t seed;           \
    long step;               \
    int has_teacher;         \
    char data[512];          \
    float *ef;               \
    size_t n_ef;

typedef struct ckpt_run_meta {
    CKPT_RUN_META_FIELDS
} ckpt_run_meta;

/**
 * The int8 error feedback a checkpoint holds (section "ef_residual", every rank's, in rank
 * order): *@p out malloc'd with *@p n floats, or NULL and 0 when the checkpoint has none.
 */
manta_status train_ckpt_read_ef(const char *path, float **out, size_t *n, manta_err *err);

struct cJSON;

/** Adds a run's own members to a "meta" document; false when out of memory. */
typedef bool (*ckpt_meta_put_fn)(struct cJSON *meta, const void *user);
/** Reads (and checks) a run's own members of a "meta" document; false when one
 *  is missing or out of range. */
typedef bool (*ckpt_meta_get_fn)(const struct cJSON *meta, void *user);

/**
 * The "meta" JSON of a training checkpoint (malloc'd into *@p out): "format"
 * (@p format), "version" 1, "schedule", "batch", "seed" (a string, exact
 * beyond 2^53), "step", "has_teacher", "data", the members @p put adds, and
 * "space", the JSON text @p space (malloc'd; always freed here).
 */
manta_status train_ckpt_meta_json(const char *format, const ckpt_run_meta *m, ckpt_meta_put_fn put,
                                  const void *user, char *space, char **out, manta_err *err);

/**
 * Read the "meta" section of @p r written by train_ckpt_meta_json() with @p format:
 * its common settings into @p m, the run's own members by @p get, and the
 * "space" member as JSON text (malloc'd) into *@p space.
 * @return MANTA_ERR_FORMAT "PATH: not a manta KIND checkpoint (its metadata
 *         lacks fields)" when the format differs or a field is missing (@p kind
 *         names the checkpoint, "training" or "stereo training").
 */
manta_status train_ckpt_meta_read(ckpt_reader *r, const char *path, const char *format,
                                  const char *kind, ckpt_meta_get_fn get, void *user,
                                  ckpt_run_meta *m, char **space, manta_err *err);

/**
 * The "format" member of the "meta" section of @p r into @p out
 * (@p size bytes, at least 1): "manta-ofa-train" (a classification run),
 * "manta-stereo-train" (a stereo run), ...; "" when the section has none (or is not an
 * object), so a caller can say what a checkpoint it refuses is.
 * @return ckpt_read_json()'s errors (no "meta" section, damaged).
 */
manta_status train_ckpt_meta_format(ckpt_reader *r, char *out, size_t size, manta_err *err);

#endif
