/**
 * @file dataset.h
 * @brief A labelled image set held in host memory, whatever file format it
 *        came from (IDX, JPEG folders), and the seeded train/validation split.
 *
 * Representation
 * --------------
 * Every image is stored as 8-bit pixels in HWC order (row-major rows of
 * interleaved channels: RGBRGB... or one gray byte per pixel), the order
 * decoders produce. Images lie back to back in one block, image i at byte
 * offset[i] with height[i] x width[i] x channels bytes. Sizes may differ from
 * image to image: JPEG folders are decoded once at load time and each image is
 * resized so that its shorter side equals a "stored size" (36 px by default,
 * see jpeg_folder.h), which keeps a whole data set small; IDX sets have one
 * fixed size. Augmentation (augment.h) crops and resizes from this store to the
 * resolution a training step asks for.
 *
 * Ownership: a ::dataset owns all its arrays (malloc'd); data_set_free()
 * releases them. A loaded set is never modified by the data pipeline, so any
 * number of threads may read one concurrently (the prefetch thread does).
 */
#ifndef MANTA_DATA_DATASET_H
#define MANTA_DATA_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "data/idx.h"

/** A labelled image set. All arrays are owned by the struct. */
typedef struct dataset {
    int count;          /**< number of images */
    int channels;       /**< 1 (gray) or 3 (RGB) */
    int classes;        /**< number of classes; labels lie in [0, classes) */
    char **class_names; /**< (classes) NUL-terminated names, index = label */
    uint8_t *pixels; /**< all images back to back; image i is (height[i], width[i], channels) HWC */
    size_t *offset;  /**< (count) byte offset of image i in pixels */
    int *height;     /**< (count) rows of image i */
    int *width;      /**< (count) columns of image i */
    int32_t *labels; /**< (count) class index of image i */
    int stored_size; /**< shorter side shared by every image, or 0 when it varies */
} dataset;

/** Images OFA holds out of the training set for validation. */
#define DATASET_OFA_VAL_COUNT 10000

/** The ten Fashion-MNIST class names, in label order ("T-shirt/top" ... "Ankle boot"). */
extern const char *const data_set_fashion_mnist_classes[10];

/** Pixels of image @p i: (height[i], width[i], channels) HWC, owned by @p d.
 *  @p i must be in [0, count) (not checked). Thread-safety: reentrant. */
static inline const uint8_t *dataset_image(const dataset *d, int i)
{
    return d->pixels + d->offset[i];
}

/**
 * Allocate a set of @p count images of one size @p h x @p w with @p channels
 * channels and @p classes classes named "0", "1", ...: pixels and labels are
 * zeroed for the caller to fill (synthetic data, tests, other loaders).
 * @return MANTA_ERR_INVALID_ARG for a size, channel or class count out of
 *         range, MANTA_ERR_NO_MEMORY; on error @p out is zeroed.
 * Thread-safety: reentrant.
 */
manta_status data_set_init_fixed(dataset *out, int count, int h, int w, int channels, int classes,
                                 manta_err *err);

/**
 * Turn a loaded IDX set into a one-channel dataset. The image block is moved,
 * not copied: on success @p s is left empty (as after data_idx_free()). On error
 * @p s is untouched and @p out is zeroed.
 * @param names   class names in label order (copied), or NULL for "0", "1", ...
 * @param n_names number of names; when @p names is given it is the class count
 *                and every label must be below it (else MANTA_ERR_FORMAT).
 * Thread-safety: reentrant.
 */
manta_status data_set_from_idx(idx_set *s, const char *const *names, int n_names, dataset *out,
                               manta_err *err);

/**
 * Load "<dir>/<split>-{images-idx3,labels-idx1}-ubyte.gz" (split "train" or
 * "t10k") as a Fashion-MNIST dataset: 28x28 gray, the ten official class
 * names. Errors are those of data_idx_load() (file named in the message).
 * Free with data_set_free(). Thread-safety: reentrant.
 */
manta_status data_set_load_fashion_mnist(const char *dir, const char *split, dataset *out,
                                         manta_err *err);

/** A train/validation partition: two sorted arrays of image indices. */
typedef struct data_split {
    int *train; /**< (n_train) ascending indices, owned */
    int n_train;
    int *val; /**< (n_val) ascending indices, owned */
    int n_val;
} data_split;

/**
 * Hold @p n_val images of @p d out for validation, the way OFA does: a
 * permutation of [0, count) drawn from @p seed, whose first n_val entries
 * form the validation set and the rest the training set (both then sorted).
 * The same (count, n_val, seed) always gives the same split; the two sets are
 * disjoint and together cover every image.
 * @param n_val in [0, count] (else MANTA_ERR_INVALID_ARG).
 * Free with data_set_split_free(). Thread-safety: reentrant.
 */
manta_status data_set_split(const dataset *d, int n_val, uint64_t seed, data_split *out,
                            manta_err *err);

/** Release a split's arrays; the struct is zeroed. NULL is allowed. */
void data_set_split_free(data_split *s);

/**
 * Per-channel mean and standard deviation of x/255 over the images
 * @p index[0..n) (all images when @p index is NULL and @p n is 0), for the
 * normalisation in augment.h. @p mean and @p std receive channels values.
 * @return MANTA_ERR_INVALID_ARG for an index out of range or an empty set.
 * Thread-safety: reentrant (reads @p d only).
 */
manta_status data_set_channel_stats(const dataset *d, const int *index, int n, float *mean,
                                    float *std, manta_err *err);

/** Release every array; the struct is zeroed. NULL is allowed. No other
 *  thread may be reading the set (stop prefetchers first). */
void data_set_free(dataset *d);

#endif
