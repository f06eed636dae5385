/**
 * @file tflite_meta.h
 * @brief Read the "manta_preprocess" metadata of an exported model (the JSON
 *        object tflite.h writes): input resolution and channels, the
 *        normalisation, the class labels and the logits tensor.
 *
 * The reader is a small bounded recursive-descent JSON parser that needs only
 * the C library (and core/status.c), so that the board program manta-infer,
 * which links nothing else of the runtime, compiles it in beside the engine;
 * the host program reads the same metadata through libmanta.a. The text comes
 * from a model file and is treated as hostile: every read is bounded by its
 * end, nesting by TFLITE_META_MAX_DEPTH, its size by TFLITE_META_MAX_TEXT.
 *
 * Accepted: objects, arrays, strings (escapes; \\u as UTF-8, lone surrogates
 * as U+FFFD), numbers, true / false / null. Keys other than "resolution",
 * "channels", "mean", "std", "labels", "logits_tensor" and a stereo model's
 * "height", "width", "task", "space", "disparity_scale" and "max_disp" are
 * skipped whatever their value.
 */
#ifndef MANTA_EXPORT_TFLITE_META_H
#define MANTA_EXPORT_TFLITE_META_H

#include <stddef.h>

#include "core/status.h"

/** Longest JSON text accepted. */
#define TFLITE_META_MAX_TEXT (1u << 20)
/** Room for a label including its NUL: longer labels are cut. */
#define TFLITE_META_LABEL_MAX 128
/** Deepest nesting of skipped arrays and objects. */
#define TFLITE_META_MAX_DEPTH 32

/** The preprocessing a model asks for. */
typedef struct tflite_meta {
    int resolution;    /**< input side in pixels; 0 when absent */
    int channels;      /**< input channels; 0 when absent */
    int n_mean, n_std; /**< values read into mean and std (at most 3 each) */
    float mean[3];     /**< per channel, on pixel / 255 */
    float std[3];      /**< per channel */
    int n_labels;      /**< entries of labels */
    char **labels;     /**< (n_labels) owned, NUL-terminated, UTF-8 */
    int logits_tensor; /**< tensor index of the logits; -1 when absent */
    int height, width; /**< a stereo model's input size; 0 when absent */
    char task[16];     /**< "stereo" for a stereo model; "" when absent (classification) */
    char space[64];    /**< the search space's name; "" when absent */
    float disp_scale;  /**< output value per pixel of disparity; 0 when absent */
    float max_disp;    /**< a stereo model's largest disparity, input pixels; 0 when absent */
} tflite_meta;

/**
 * Parse the metadata JSON: @p size bytes at @p text (not NUL-terminated).
 * Integers must be whole numbers in [-1, 1e6]; "mean" and "std" arrays of at
 * most 3 numbers; "labels" an array of strings.
 * @param text the JSON; NULL (no metadata) fails as text that is not an object.
 * @param m    filled on success; on failure it holds no labels and
 *             logits_tensor -1 (tflite_meta_free() is still allowed).
 * @param err  on failure one line: the reason, followed for text that starts as an
 *             object by " at byte N" (may be NULL).
 * @return MANTA_OK; MANTA_ERR_FORMAT for malformed JSON, wrong types or text
 *         over TFLITE_META_MAX_TEXT; MANTA_ERR_NO_MEMORY.
 * Thread-safety: reentrant.
 */
manta_status tflite_meta_parse(const char *text, size_t size, tflite_meta *m, manta_err *err);

/** Release the labels; the struct is zeroed. */
void tflite_meta_free(tflite_meta *m);

#endif
