/**
 * @file fuzz_body.h
 * @brief One fuzz input through the engine: verify, metadata lookup, arena
 *        sizing, prepare and (when cheap enough) invoke. Shared by the
 *        libFuzzer target (tools/fuzz/fuzz_engine.c) and the regression test
 *        over tests/data/fuzz/. C99, engine API only.
 */
#ifndef MANTA_TESTS_FUZZ_BODY_H
#define MANTA_TESTS_FUZZ_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"

/** Largest arena the fuzz body allocates (bytes). */
#define FUZZ_MAX_ARENA ((size_t)8 << 20)
/** Bound on work per invoke: activation elements x the largest tensor (see fuzz_body.c). */
#define FUZZ_MAX_WORK 200000000.0

/** What happened to an input. */
typedef enum fuzz_outcome {
    FUZZ_REJECTED = 0, /**< the verifier or the planner refused it, with a message */
    FUZZ_PREPARED,     /**< accepted and prepared; not run (arena or work above the caps) */
    FUZZ_RAN           /**< accepted, prepared and invoked */
} fuzz_outcome;

/**
 * Run one input. Aborts (a finding) when the engine breaks one of its own
 * promises: a rejection without a message, mengine_arena_size() disagreeing
 * with mengine_prepare(), or invoke failing on a prepared model.
 * @param msg receives the engine's message (may be NULL).
 */
fuzz_outcome fuzz_engine_one(const uint8_t *data, size_t size, char *msg, size_t msg_cap);

#endif
