/* Payload encodings of the ring (see wire.h). */
#include "dist/wire.h"

#include <math.h>
#include <string.h>

size_t dist_wire_elem_bytes(dist_wire w)
{
    switch (w) {
    case DIST_WIRE_FP16:
    case DIST_WIRE_BF16: return 2;
    case DIST_WIRE_INT8: return 1;
    case DIST_WIRE_F32:
    case DIST_WIRE_FIXED: break;
    }
    return 4;
}

size_t dist_wire_head_bytes(dist_wire w) { return w == DIST_WIRE_INT8 ? 4 : 0; }

size_t dist_wire_payload(dist_wire w, size_t len)
{
    return len ? dist_wire_head_bytes(w) + len * dist_wire_elem_bytes(w) : 0;
}

static uint32_t bits_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float float_of(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

uint16_t dist_fp16_from_f32(float f)
{
    /* branch-light round to nearest even (the classic float-to-half with a magic add for the
     * subnormal range); NaN becomes the quiet NaN 0x7e00 of its sign */
    const uint32_t inf = 255u << 23, f16max = (127u + 16u) << 23,
                   magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t x = bits_of(f);
    const uint32_t sign = x & 0x80000000u;
    x ^= sign;
    uint32_t o;
    if (x >= f16max) { /* 65536 and above, infinities, NaN */
        o = x > inf ? 0x7e00u : 0x7c00u;
    } else if (x < (113u << 23)) { /* below 2^-14: the add rounds at the subnormal half's ulp */
        o = bits_of(float_of(x) + float_of(magic)) - magic;
    } else {
        const uint32_t odd = (x >> 13) & 1u;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu + odd; /* rebias, round; a carry is right */
        o = x >> 13;
    }
    return (uint16_t)(o | (sign >> 16));
}

float dist_fp16_to_f32(uint16_t h)
{
    const uint32_t top = 0x7c00u << 13; /* the exponent field, moved to float's place */
    uint32_t o = ((uint32_t)h & 0x7fffu) << 13;
    const uint32_t e = o & top;
    o += (127u - 15u) << 23; /* rebias */
    if (e == top)            /* infinity, NaN */
        o += (128u - 16u) << 23;
    else if (e == 0) /* zero, subnormal: renormalise with a subtraction (exact) */
        o = bits_of(float_of(o + (1u << 23)) - float_of(113u << 23));
    return float_of(o | ((uint32_t)h & 0x8000u) << 16);
}

uint16_t dist_bf16_from_f32(float f)
{
    uint32_t x = bits_of(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

float dist_bf16_to_f32(uint16_t h) { return float_of((uint32_t)h << 16); }

float dist_maxabs(const float *x, size_t n)
{
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        if (a != a)
            return a;
        m = a > m ? a : m;
    }
    return m;
}

void dist_wire_encode(dist_wire w, const float *x, size_t n, unsigned char *out, float *residual)
{
    uint16_t *h = (uint16_t *)(void *)out; /* payloads start 4-aligned in the ring's buffers */
    if (w == DIST_WIRE_FP16) {
        for (size_t i = 0; i < n; i++)
            h[i] = dist_fp16_from_f32(x[i]);
        if (residual)
            for (size_t i = 0; i < n; i++)
                residual[i] += x[i] - dist_fp16_to_f32(h[i]);
        return;
    }
    if (w == DIST_WIRE_BF16) {
        for (size_t i = 0; i < n; i++)
            h[i] = dist_bf16_from_f32(x[i]);
        if (residual)
            for (size_t i = 0; i < n; i++)
                residual[i] += x[i] - dist_bf16_to_f32(h[i]);
        return;
    }
    if (w != DIST_WIRE_INT8 || n == 0)
        return;
    const float m = dist_maxabs(x, n), scale = m / 127.0f;
    const float inv = m > 0.0f ? 127.0f / m : 0.0f;
    memcpy(out, &scale, 4);
    signed char *q = (signed char *)(out + 4);
    for (size_t i = 0; i < n; i++) {
        float t = rintf(x[i] * inv);
        t = t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
        if (t != t) /* a NaN element (then scale is NaN too) */
            t = 0.0f;
        q[i] = (signed char)t;
        if (residual)
            residual[i] += x[i] - t * scale;
    }
}

void dist_wire_decode(dist_wire w, const unsigned char *in, size_t n, float *y, int add, float div)
{
    const uint16_t *h = (const uint16_t *)(const void *)in;
    if (w == DIST_WIRE_FP16 || w == DIST_WIRE_BF16) {
        const int half = w == DIST_WIRE_FP16;
        if (add && half)
            for (size_t i = 0; i < n; i++)
                y[i] = dist_fp16_to_f32(h[i]) + y[i];
        else if (add)
            for (size_t i = 0; i < n; i++)
                y[i] = dist_bf16_to_f32(h[i]) + y[i];
        else if (half)
            for (size_t i = 0; i < n; i++)
                y[i] = dist_fp16_to_f32(h[i]) / div;
        else
            for (size_t i = 0; i < n; i++)
                y[i] = dist_bf16_to_f32(h[i]) / div;
        return;
    }
    if (w != DIST_WIRE_INT8 || n == 0)
        return;
    float scale;
    memcpy(&scale, in, 4);
    const signed char *q = (const signed char *)(in + 4);
    for (size_t i = 0; i < n; i++) {
        const float v = (float)q[i] * scale;
        y[i] = add ? v + y[i] : v / div;
    }
}

int dist_fixed_shift(float maxabs, int world)
{
    int E = 0, L = 0;
    if (maxabs > 0.0f)
        (void)frexpf(maxabs, &E); /* maxabs = f * 2^E, f in [0.5, 1): maxabs < 2^E */
    while ((1 << L) < world)
        L++;
    return 30 - L - E;
}

/* 2^k as a float, or 0 when k is outside the normal range (then the double path runs). */
static float pow2f(int k)
{
    return k >= -126 && k <= 127 ? float_of((uint32_t)(k + 127) << 23) : 0;
}

void dist_fixed_encode(const float *x, size_t n, int k, int32_t *q)
{
    /* x * 2^k is exact in float unless it is subnormal (then rounded once, the same way on
     * every rank); |x * 2^k| <= 2^30 by the choice of k */
    const float s = pow2f(k);
    if (s != 0.0f) {
        for (size_t i = 0; i < n; i++)
            q[i] = (int32_t)lrintf(x[i] * s);
        return;
    }
    for (size_t i = 0; i < n; i++)
        q[i] = (int32_t)lrint(ldexp((double)x[i], k));
}

void dist_fixed_decode(const int32_t *q, size_t n, int k, double div, float *y)
{
    const float s = pow2f(-k);
    if (s != 0.0f && div == 1.0) { /* (float)q rounds once, the power of two scales exactly */
        for (size_t i = 0; i < n; i++)
            y[i] = (float)q[i] * s;
        return;
    }
    const double sd = ldexp(1.0, -k);
    for (size_t i = 0; i < n; i++)
        y[i] = (float)((double)q[i] * sd / div);
}

void dist_fixed_add(int32_t *q, const int32_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        q[i] = (int32_t)((uint32_t)q[i] + (uint32_t)p[i]);
}
