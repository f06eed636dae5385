/**
 * @file rng.h
 * @brief Small deterministic random numbers (PCG32): weight init, sampling,
 *        data order, augmentation. The state is a plain value the caller owns,
 *        so it can be checkpointed and several streams can run side by side.
 */
#ifndef MANTA_CORE_RNG_H
#define MANTA_CORE_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct manta_rng {
    uint64_t state;
    uint64_t inc; /* odd; selects the stream */
} manta_rng;

/** Seed a generator; the same (seed, stream) always gives the same numbers. */
void manta_rng_seed(manta_rng *r, uint64_t seed, uint64_t stream);
/** Next 32 random bits. */
uint32_t manta_rng_u32(manta_rng *r);
/** Uniform integer in [0, n); n > 0 (unbiased). */
uint32_t manta_rng_below(manta_rng *r, uint32_t n);
/** Uniform float in [0, 1). */
float manta_rng_uniform(manta_rng *r);
/** Standard normal (Box-Muller). */
float manta_rng_normal(manta_rng *r);

/** Fill @p n floats with normal values of standard deviation @p std. */
void manta_rng_fill_normal(manta_rng *r, float *p, size_t n, float std);
/** Fill @p n floats uniformly from [-bound, bound). */
void manta_rng_fill_uniform(manta_rng *r, float *p, size_t n, float bound);

/** splitmix64: a well-mixed 64-bit hash of @p x (Steele et al.'s, with its increment),
 *  for deriving seeds from coordinates such as (seed, step, index). */
uint64_t manta_splitmix64(uint64_t x);

#endif
