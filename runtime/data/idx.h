/**
 * @file idx.h
 * @brief IDX image/label files (MNIST, Fashion-MNIST), plain or gzip.
 *
 * Images: magic 0x00000803, count, rows, cols, then count*rows*cols bytes.
 * Labels: magic 0x00000801, count, then count bytes. Big-endian headers.
 * Files ending in .gz are inflated with zlib; others are read as they are.
 */
#ifndef MANTA_DATA_IDX_H
#define MANTA_DATA_IDX_H

#include <stdint.h>

#include "core/status.h"

/** A labelled set of single-channel 8-bit images, owned by the struct. */
typedef struct idx_set {
    int count;
    int rows, cols;
    int classes;     /**< max label + 1 */
    uint8_t *images; /**< (count, rows, cols), row-major */
    uint8_t *labels; /**< (count) */
} idx_set;

/** Where Debian's dataset-fashion-mnist installs the files. */
#define IDX_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/**
 * Load an images file and its labels file. Checks magic numbers, that the
 * counts agree, that the data is complete and that the sizes are sane.
 * On error nothing is allocated and @p err names the file and the problem.
 * Free with data_idx_free().
 */
manta_status data_idx_load(const char *images_path, const char *labels_path, idx_set *out,
                           manta_err *err);

/**
 * Load "<dir>/<split>-images-idx3-ubyte.gz" and "<dir>/<split>-labels-idx1-ubyte.gz"
 * (split "train" or "t10k"), the layout of the MNIST family.
 */
manta_status data_idx_load_split(const char *dir, const char *split, idx_set *out, manta_err *err);

/** Fashion-MNIST's training-set pixel mean and standard deviation (of x/255). */
#define IDX_FASHION_MEAN 0.2860f
#define IDX_FASHION_STD 0.3530f

/**
 * Gather samples @p index[0..n) into a batch: images (n, 1, rows, cols) as
 * (x/255 - mean) / std, labels (n) as float class indices. Indices must be
 * in [0, count).
 */
void data_idx_batch(const idx_set *s, const int *index, int n, float mean, float std, float *images,
                    float *labels);

/** Release the arrays; the struct is zeroed. NULL is allowed. */
void data_idx_free(idx_set *s);

#endif
