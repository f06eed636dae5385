/* manta-infer: the "manta_preprocess" metadata of a model (JSON written by
 * the exporter, runtime/export/tflite.h), read with a small JSON parser so
 * that the program needs nothing beyond the engine, TurboJPEG and libc. */
#ifndef MANTA_INFER_META_H
#define MANTA_INFER_META_H

#include <stddef.h>

/** Longest JSON text accepted, and longest label kept (longer ones are cut). */
#define META_MAX_TEXT (1u << 20)
#define META_LABEL_MAX 128

typedef struct infer_meta {
    int resolution;    /**< 0 when absent */
    int channels;      /**< 0 when absent */
    int n_mean, n_std; /**< values read (at most 3) */
    float mean[3], std[3];
    int n_labels;
    char **labels;     /**< (n_labels) owned */
    int logits_tensor; /**< -1 when absent */
} infer_meta;

/**
 * Parse the metadata JSON (@p size bytes, not 0-terminated). Unknown keys are
 * skipped. On failure @p why receives a one-line reason.
 * @return 0 on success, -1 on malformed JSON, wrong types or out of memory.
 */
int meta_parse(const char *text, size_t size, infer_meta *m, char *why, size_t why_cap);

/** Release the labels; the struct is zeroed. */
void meta_free(infer_meta *m);

#endif
