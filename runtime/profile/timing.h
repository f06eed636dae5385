/**
 * @file timing.h
 * @brief Timing models in the inference engine, the instrument of the
 *        latency profiler: warm-up runs, then single invocations timed one by
 *        one until enough runs and enough total time have passed. One thread;
 *        the clock is the monotonic wall clock or the thread's CPU time.
 */
#ifndef MANTA_PROFILE_TIMING_H
#define MANTA_PROFILE_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "profile/latency_table.h"

/** Layer boundaries pt_time_layers() takes at most. */
#define PT_MAX_BOUNDS (LAT_MAX_ARCH_LAYERS + 1)

/** What a timing reads. */
typedef enum pt_clock {
    PT_WALL, /**< the monotonic wall clock */
    PT_CPU,  /**< the calling thread's CPU time (excludes time it is not run) */
} pt_clock;

/** How a model is timed. */
typedef struct pt_opts {
    int warmup;        /**< untimed runs first (at least) */
    double warmup_s;   /**< ... and at least this long */
    int min_runs;      /**< timed runs: at least */
    int max_runs;      /**< ... at most */
    double min_time_s; /**< ... and until their total reaches this */
    pt_clock clock;
} pt_opts;

/** A model loaded into the engine with its own arena. */
typedef struct pt_model {
    uint8_t *data; /**< owned, 16-byte aligned */
    size_t size;
    size_t arena_bytes;
    void *arena; /**< owned */
    mengine_model m;
    mengine e;
} pt_model;

/**
 * Take @p data (malloc'd by tflite_write(); freed by pt_close() or on failure), verify and
 * prepare it with an arena of the exact size, fill the input with values uniform in [-1, 1)
 * from @p seed (an int8 input: those values quantized with its scale and zero point).
 * @return 0, or -1 with a message in @p msg (@p cap bytes).
 */
int pt_open(pt_model *p, uint8_t *data, size_t size, uint64_t seed, char *msg, size_t cap);

/** Free the model and arena of @p p and clear it. */
void pt_close(pt_model *p);

/**
 * Time @p p: @p ms receives malloc'd timings in milliseconds (free()), @p n their count.
 * @return 0, or -1 (out of memory or the engine failed) with a message.
 */
int pt_time(pt_model *p, const pt_opts *o, double **ms, size_t *n, char *msg, size_t cap);

/**
 * Time @p p with the clock read at the start of every keyed layer: layer j is operators
 * [bound[j], bound[j + 1]) of the model, j < nl. @p seg receives malloc'd (runs, nl) layer
 * times in milliseconds, @p tot each run's total (from bound[0] to bound[nl]), @p n the runs.
 * @return 0, or -1 with a message.
 */
int pt_time_layers(pt_model *p, const pt_opts *o, const int *bound, int nl, double **seg,
                   double **tot, size_t *n, char *msg, size_t cap);

/**
 * What one reading of clock @p c costs in milliseconds (the median of many back-to-back
 * readings): each layer time from pt_time_layers() includes about one.
 */
double pt_clock_cost_ms(pt_clock c);

/**
 * Keep the calling thread on the CPU it runs on now (Linux; elsewhere nothing).
 * @return the CPU, or -1 when the affinity could not be set.
 */
int pt_pin_cpu(void);

/** Seconds on clock @p c (from an arbitrary origin). */
double pt_now(pt_clock c);

/** "wall clock" or "thread CPU time": the name of @p c in reports. */
const char *pt_clock_name(pt_clock c);

#endif
