/* Timing models in the inference engine: warm-up runs, then single
 * invocations timed one by one until enough runs and enough total time have
 * passed. One thread; the clock is the wall clock or the thread's CPU time. */
#ifndef MANTA_PROFILE_TIMING_H
#define MANTA_PROFILE_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

typedef enum pt_clock { PT_WALL, PT_CPU } pt_clock;

typedef struct pt_opts {
    int warmup;        /* untimed runs first (at least) */
    double warmup_s;   /* ... and at least this long */
    int min_runs;      /* timed runs: at least */
    int max_runs;      /* ... at most */
    double min_time_s; /* ... and until their total reaches this */
    pt_clock clock;
} pt_opts;

/* A model loaded into the engine with its own arena. */
typedef struct pt_model {
    uint8_t *data; /* owned, 16-byte aligned */
    size_t size;
    size_t arena_bytes;
    void *arena; /* owned */
    mengine_model m;
    mengine e;
} pt_model;

/* Take @p data (malloc'd by tflite_write(); freed by pt_close() or on failure), verify and
 * prepare it with an arena of the exact size, fill the input with values uniform in [-1, 1)
 * from @p seed. Returns 0, or -1 with a message in @p msg. */
int pt_open(pt_model *p, uint8_t *data, size_t size, uint64_t seed, char *msg, size_t cap);
void pt_close(pt_model *p);

/* Time @p p: @p ms receives malloc'd timings in milliseconds (free()), @p n their count.
 * Returns 0, or -1 (out of memory or the engine failed) with a message. */
int pt_time(pt_model *p, const pt_opts *o, double **ms, size_t *n, char *msg, size_t cap);

/* Seconds on @p c. */
double pt_now(pt_clock c);

#endif
