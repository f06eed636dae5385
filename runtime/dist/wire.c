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
    const uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep the top payload bits, quiet */
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    if (ax >= 0x477ff000u) /* 65520 and above (ties to even go up from 65504): infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {    /* below 2^-14: a subnormal half or zero */
        if (ax <= 0x33000000u) /* at most 2^-25, half the smallest subnormal: ties to 0 */
            return (uint16_t)sign;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const int shift = 126 - (int)(ax >> 23); /* 14 .. 24 */
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    const uint32_t r = ax - 0x38000000u; /* exponent rebiased from 127 to 15 */
    uint32_t q = r >> 13;
    const uint32_t rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u)))
        q++; /* a carry into the exponent is right, up to infinity */
    return (uint16_t)(sign | q);
}

float dist_fp16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        const float v = (float)m * 0x1p-24f; /* exact */
        return float_of(bits_of(v) | sign);
    }
    if (e == 31)
        return float_of(sign | 0x7f800000u | (m << 13));
    return float_of(sign | ((e + 112u) << 23) | (m << 13));
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
    if (w == DIST_WIRE_FP16 || w == DIST_WIRE_BF16) {
        for (size_t i = 0; i < n; i++) {
            const uint16_t h =
                w == DIST_WIRE_FP16 ? dist_fp16_from_f32(x[i]) : dist_bf16_from_f32(x[i]);
            memcpy(out + 2 * i, &h, 2);
            if (residual)
                residual[i] +=
                    x[i] - (w == DIST_WIRE_FP16 ? dist_fp16_to_f32(h) : dist_bf16_to_f32(h));
        }
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
    if (w == DIST_WIRE_FP16 || w == DIST_WIRE_BF16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, in + 2 * i, 2);
            const float v = w == DIST_WIRE_FP16 ? dist_fp16_to_f32(h) : dist_bf16_to_f32(h);
            y[i] = add ? v + y[i] : v / div;
        }
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

void dist_fixed_encode(const float *x, size_t n, int k, int32_t *q)
{
    for (size_t i = 0; i < n; i++)
        q[i] = (int32_t)lrint(ldexp((double)x[i], k));
}

void dist_fixed_decode(const int32_t *q, size_t n, int k, double div, float *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (float)(ldexp((double)q[i], -k) / div);
}

void dist_fixed_add(int32_t *q, const int32_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        q[i] = (int32_t)((uint32_t)q[i] + (uint32_t)p[i]);
}
