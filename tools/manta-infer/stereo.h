/* manta-infer on a stereo model: a left and a right image in, the disparity out. */
#ifndef MANTA_INFER_STEREO_H
#define MANTA_INFER_STEREO_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/engine.h"
#include "export/tflite_meta.h"

/** What manta-infer was asked for a stereo model. */
typedef struct stereo_infer_opts {
    const char *model;
    char **images; /* left, right */
    int n_images;
    bool json, stats;
    int bench;
    const char *out, *color, *dump_input; /* may be NULL; checked before */
    const char *dump_output;              /* the output tensor as the engine gives it, or NULL */
} stereo_infer_opts;

/**
 * Run a prepared stereo model (two inputs (1, H, W, 3), one output (1, H, W, 1)) on the pair
 * and print what @p o asks for. @p meta: its metadata (zeroed when it has none).
 * @return the exit status: 0, 1 (an image, the model or an output file: one line on stderr),
 *         2 (usage: not two images).
 */
int stereo_infer_run(const stereo_infer_opts *o, mengine *e, const mengine_model *m,
                     const tflite_meta *meta, size_t model_bytes, size_t arena_bytes);

#endif
