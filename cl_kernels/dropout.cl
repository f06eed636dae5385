/* Inverted dropout with a counter-based mask (see runtime/nn/dropout.h). */

/* A 32-bit mix of (seed, i): the lowbias32 finaliser over a seeded counter. */
inline uint drop_hash(uint seed_lo, uint seed_hi, uint i)
{
    uint x = i * 0x9E3779B9u ^ seed_lo;
    x ^= x >> 16; x *= 0x7feb352du;
    x ^= x >> 15; x *= 0x846ca68bu;
    x ^= x >> 16;
    x ^= seed_hi;
    x ^= x >> 16; x *= 0x7feb352du;
    x ^= x >> 15; x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* x, y: (n). threshold = p * 2^32; scale = 1 / (1 - p); element i uses the mask bit of
 * index off + i (a shard of a larger tensor). */
__kernel void dropout_apply(VIEW(x), VIEW(y), int n, uint threshold, float scale, uint seed_lo,
                            uint seed_hi, uint off)
{
    PTR(x); PTR(y);
    int i = GID0;
    if (i < n)
        y[i] = drop_hash(seed_lo, seed_hi, (uint)i + off) >= threshold ? x[i] * scale : 0.0f;
}
