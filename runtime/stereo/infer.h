/**
 * @file infer.h
 * @brief Run a sub-network of a trained stereo net on whole pairs of any size (KITTI's
 *        1242 x 375, Middlebury's scenes of their own sizes), not crops of the training size.
 *
 * The network takes inputs whose sides are multiples of 2^L (L the space's n_levels: every
 * stride-2 stage halves them and the decoder doubles them back). A pair of H x W is
 * therefore padded to PH x PW, the next multiples of 2^L (stereo_pad_size()), run alone
 * (batch 1) in eval mode on a network made for PH x PW (for forward passes only:
 * stereo_net_create_forward_only(), no gradient buffers), and the finest prediction, (PH, PW),
 * is cropped back to its top-left H x W: the prediction of every pixel of the pair.
 *
 * Padding goes at the bottom and at the right and repeats the last row and the last column
 * (edge replication; stereo_pad_planes()). At the bottom and the right, every pixel of the
 * pair keeps its coordinates, so the prediction needs no shift to line up with the ground
 * truth; disparities are horizontal shifts from the left view to the right one, and columns
 * added at the right of both views only give the rightmost pixels' matches more room.
 * Repeating the edge rather than padding with zeros adds no artificial step in brightness
 * that the convolutions near the border would respond to. The padded pixels are never scored.
 *
 * One network is kept and made again only when the padded size changes (pairs of one size
 * share it). Each time, the source network's parameters and batch-norm statistics are copied
 * into it: their slab layouts depend on the channels only, not on the input size, and the
 * runner checks that the two networks' parameter, decayed-parameter and state counts agree
 * (and refuses otherwise). The source is typically the trainer's network right after
 * stereo_trainer_recalibrate() (stereo/train.h).
 */
#ifndef MANTA_STEREO_INFER_H
#define MANTA_STEREO_INFER_H

#include <stdbool.h>

#include "data/stereo_batch.h"
#include "data/stereo_folder.h"
#include "data/stereo_metrics.h"
#include "stereo/net.h"

/**
 * The size a pair of @p height x @p width is run at by a network of @p n_levels stride-2
 * stages: each side rounded up to the next multiple of 2^n_levels (a side that is one
 * already stays). @p n_levels in [0, 15]; sides >= 1.
 */
void stereo_pad_size(int height, int width, int n_levels, int *padded_h, int *padded_w);

/**
 * Pad @p c planes @p src, (c, h, w), into @p dst, (c, ph, pw) with ph >= h and pw >= w:
 * dst[k][y][x] = src[k][min(y, h - 1)][min(x, w - 1)] (the last column repeated at the right
 * of every row, then the last row, so padded, repeated at the bottom). @p src and @p dst do
 * not overlap.
 */
void stereo_pad_planes(const float *src, int c, int h, int w, int ph, int pw, float *dst);

/** The top-left @p h x @p w of the (ph, pw) plane @p src into @p dst, (h, w). */
void stereo_crop_plane(const float *src, int ph, int pw, int h, int w, float *dst);

typedef struct stereo_infer stereo_infer;

/**
 * A runner of sub-network @p a of @p src on whole pairs (see the file comment). @p src is
 * borrowed: its parameters and batch-norm statistics are read each time a network for a new
 * padded size is made, so they must stay as they are while the runner is used, and @p src
 * must outlive it. Nothing is allocated on the device before the first pair.
 * @return MANTA_ERR_INVALID_ARG naming the gene of @p a that is not one of the space's
 *         choices (its "r" is ignored: each network's is its own height); MANTA_ERR_NO_MEMORY.
 */
manta_status stereo_infer_create(mcl_dev *d, stereo_net *src, const ofa_arch *a, stereo_infer **out,
                                 manta_err *err);
/** Most pairs a batch of a re-calibration at sizes beyond the source network's
 *  (stereo_infer_set_recal()). */
#define STEREO_RECAL_BATCH 8

/** Fewest pairs of a re-calibration at a size (stereo_infer_recal_pairs()). */
#define STEREO_RECAL_MIN_PAIRS 8

/**
 * Re-calibrate batch norm at every size the runner makes a network for, on pairs of @p src
 * (borrowed: it must outlive the runner; generated pairs or a folder's, the run's training
 * data) before the first pair of that size runs: the running statistics are those of inputs
 * of that size. The source network's statistics, re-calibrated at the crop, do not fit other
 * sizes: the deep layers' maps of a crop are a few pixels across, nearly every pixel near a
 * border whose zero padding its kernels read, while the maps of a larger input are mostly
 * interior, so their activations have other means and variances (docs/stereo.md, "Sizes").
 * Each re-calibration pair has the size of the pair that made the network (a folder's
 * pairs: crops of at most that size) and is padded as that pair is; there are
 * stereo_infer_recal_pairs() of them, pairs 0, 1, ... of the source. Where the source
 * network can run the size (up to the largest of its space's crops: stereo_net_set_size()),
 * the re-calibration runs on it, in its batches, as training normalises, and overwrites its
 * batch-norm statistics (its size is put back): restore them afterwards if they matter
 * (stereo_trainer_restore_bn()); beyond that, on a network made for the size (for the
 * re-calibration only, beside the runner's) in batches of up to STEREO_RECAL_BATCH pairs,
 * as many as the device's largest buffer and a quarter of its memory take (at least one),
 * pooled (stereo_net_recal_begin_pooled()). One pair at a time, each pair normalised by its
 * own statistics, every layer's statistics would miss the spread between pairs that the
 * earlier layers pass on at inference, and deep sub-networks then saturated on pairs unlike
 * the re-calibration's (docs/stereo.md, "Sizes"). The pairs of a re-calibration are rounded
 * up to whole batches. @p pairs 0 turns it off (the source's statistics are used as they
 * are).
 */
void stereo_infer_set_recal(stereo_infer *r, const stereo_source *src, long pairs);
/** Pairs of a re-calibration at @p padded_h x @p padded_w for @p pairs at the crop of
 *  @p s: as many pixels as those, at least STEREO_RECAL_MIN_PAIRS, at most @p pairs. */
long stereo_infer_recal_pairs(const stereo_space *s, long pairs, int padded_h, int padded_w);

/**
 * The runner's network for pairs of @p height x @p width, as the first such pair would make
 * it (padded to the next multiples of 2^n_levels, batch 1, the source's parameters, batch
 * norm re-calibrated at that size when stereo_infer_set_recal() asked for it), kept when it
 * exists already; for an export at that size (stereo/extract.h). *net belongs to the runner:
 * valid until a pair of another padded size runs or the runner is destroyed.
 * @return as stereo_infer_pair() (its errors name the size).
 */
manta_status stereo_infer_net(stereo_infer *r, int height, int width, stereo_net **net,
                              manta_err *err);

/** Release @p r, its network and buffers (NULL is allowed); the source is not touched. */
void stereo_infer_destroy(stereo_infer *r);

/** How one pair ran. */
typedef struct stereo_infer_run {
    int padded_h, padded_w; /**< the network's input size */
    double ms;              /**< the forward alone (upload and read-back not counted), ms */
    bool new_size;          /**< the network was made for this pair (its first forward at
                                 this size: program builds, first-call set-up) */
} stereo_infer_run;

/**
 * The finest disparity of every pixel of @p pair into @p pred, (H, W) of the pair: padded,
 * run at the padded size, cropped back. @p name names the pair in errors, which are one line
 * of the form "<name> (WxH, padded to PWxPH): <what is wrong>", e.g. a device buffer that
 * cannot hold that size (the device's message names the buffer and the limit), or a pair too
 * small for the network (the space's refusal of that size). @p out may be NULL.
 * @return MANTA_ERR_INVALID_ARG, MANTA_ERR_NO_MEMORY, the device's errors.
 */
manta_status stereo_infer_pair(stereo_infer *r, const stereo_pair *pair, const char *name,
                               float *pred, stereo_infer_run *out, manta_err *err);

/**
 * One more forward of the last pair (its input is still on the device), timed: for a timing
 * when every pair was the first of its size. @return MANTA_ERR_INVALID_ARG before any pair.
 */
manta_status stereo_infer_time_again(stereo_infer *r, double *ms, manta_err *err);

/** Called after each pair of stereo_infer_folder() with its index, the loaded pair, its
 *  (H, W) prediction (valid during the call only) and how it ran. */
typedef manta_status (*stereo_infer_pair_fn)(void *ctx, long index, const stereo_pair *pair,
                                             const float *pred, const stereo_infer_run *run,
                                             manta_err *err);

/** What stereo_infer_folder() ran. */
typedef struct stereo_infer_summary {
    long pairs;                     /**< pairs run and scored */
    long timed;                     /**< forwards the median is over */
    double ms_median;               /**< median forward time of a pair, ms */
    int sizes;                      /**< networks made (padded sizes met in turn) */
    int min_h, min_w, max_h, max_w; /**< the smallest and largest padded sides timed */
} stereo_infer_summary;

/**
 * Pairs 0 .. @p pairs - 1 of @p set (at most its count), each loaded (stereo_folder_load()),
 * predicted whole (stereo_infer_pair()), scored over all its pixels with ground truth
 * (stereo_metrics_add() into @p m) and handed to @p each (may be NULL). The median forward
 * time leaves out the first forward at each padded size; when every pair was the first of its
 * size, it is one more forward of the last pair (stereo_infer_time_again()).
 * @return the first error (the loader's naming the file, stereo_infer_pair()'s naming the
 *         pair, @p each's); @p m then holds the pairs before it.
 */
manta_status stereo_infer_folder(stereo_infer *r, const stereo_set *set, long pairs,
                                 stereo_metrics *m, stereo_infer_pair_fn each, void *ctx,
                                 stereo_infer_summary *out, manta_err *err);

#endif
