/* A .tflite model loaded into the inference engine by the host program:
 * the file in a 16-byte-aligned buffer, verified, with its exact arena. */
#ifndef MANTA_TOOLS_ENGINE_RUN_H
#define MANTA_TOOLS_ENGINE_RUN_H

#include <stdbool.h>

#include "engine/engine.h"
#include "export/tflite_meta.h"

typedef struct engine_run {
    void *file; /* the model bytes, 16-byte aligned */
    size_t size;
    void *arena;
    size_t arena_size;
    mengine_model model;
    mengine engine;
    tflite_meta meta; /* "manta_preprocess" metadata */
} engine_run;

/** Load, verify and prepare @p path; prints a one-line error ("manta <cmd>: ...") and returns
 *  false on failure. */
bool engine_run_open(const char *cmd, const char *path, engine_run *r);
void engine_run_close(engine_run *r);

#endif
