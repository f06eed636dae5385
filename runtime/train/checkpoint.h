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

#include <stddef.h>

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
manta_status ckpt_add_f32_device(ckpt_writer *w, const char *name, mcl_dev *d, mview src,
                                 size_t n);

/**
 * Copy float32 section @p name into the device view @p dst ((n) floats),
 * in 256 KiB chunks through a host staging buffer. On an error after the
 * first chunk the view holds part of the data.
 * @return as ckpt_read_f32() (no device, or no buffer for values, is "no
 *         destination"), or the device's status with its message when a
 *         write fails.
 */
manta_status ckpt_read_f32_device(ckpt_reader *r, const char *name, mcl_dev *d, mview dst,
                                  size_t n, manta_err *err);

#endif
