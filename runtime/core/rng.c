#include "core/rng.h"

#include <math.h>

uint64_t manta_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

void manta_rng_seed(manta_rng *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1u) | 1u;
    manta_rng_u32(r);
    r->state += seed;
    manta_rng_u32(r);
}

uint32_t manta_rng_u32(manta_rng *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

uint32_t manta_rng_below(manta_rng *r, uint32_t n)
{
    uint32_t threshold = (uint32_t)(-n) % n;
    for (;;) {
        uint32_t v = manta_rng_u32(r);
        if (v >= threshold)
            return v % n;
    }
}

float manta_rng_uniform(manta_rng *r)
{
    return (float)(manta_rng_u32(r) >> 8) * (1.0f / 16777216.0f);
}

float manta_rng_normal(manta_rng *r)
{
    float u1 = manta_rng_uniform(r), u2 = manta_rng_uniform(r);
    if (u1 < 1e-7f)
        u1 = 1e-7f;
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}

void manta_rng_fill_normal(manta_rng *r, float *p, size_t n, float std)
{
    for (size_t i = 0; i < n; i++)
        p[i] = std * manta_rng_normal(r);
}

void manta_rng_fill_uniform(manta_rng *r, float *p, size_t n, float bound)
{
    for (size_t i = 0; i < n; i++)
        p[i] = bound * (2.0f * manta_rng_uniform(r) - 1.0f);
}
