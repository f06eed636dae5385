/* A float vector of MK_VL lanes for the convolution kernels (not part of the
 * public API). The type is the target's own where one pays: AVX (8 lanes, FMA
 * when __FMA__), NEON (4 lanes, FMA on AArch64); else GNU C vectors of 4
 * (SSE on x86, scalar code where the target has no SIMD); with MK_VECTOR_EXT=0,
 * plain C99: one lane, a float. The operations keep the scalar semantics of
 * the reference kernels (clamping preserves NaN and infinities). */
#ifndef MANTA_ENGINE_KERNELS_SIMD_H
#define MANTA_ENGINE_KERNELS_SIMD_H

#include <math.h>
#include <string.h>

#include "engine/kernels_util_impl.h"

#if MK_VECTOR_EXT && defined(__AVX__)
#include <immintrin.h>
#define MK_SIMD_AVX 1
#define MK_VL 8
typedef __m256 mengine_k_vf;
#elif MK_VECTOR_EXT && defined(__ARM_NEON)
#include <arm_neon.h>
#define MK_SIMD_NEON 1
#define MK_VL 4
typedef float32x4_t mengine_k_vf;
#elif MK_VECTOR_EXT && defined(__SSE__)
#include <xmmintrin.h>
#define MK_SIMD_SSE 1
#define MK_VL 4
typedef __m128 mengine_k_vf;
#elif MK_VECTOR_EXT
#define MK_VL 4
typedef float mengine_k_vf __attribute__((vector_size(16)));
#else
#define MK_VL 1
typedef float mengine_k_vf;
#endif

static inline mengine_k_vf mengine_k_vload(const float *p)
{
    mengine_k_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void mengine_k_vstore(float *p, mengine_k_vf v) { memcpy(p, &v, sizeof v); }

static inline mengine_k_vf mengine_k_vset1(float x)
{
#if MK_VL == 1
    return x;
#elif defined(MK_SIMD_AVX)
    return _mm256_set1_ps(x);
#elif defined(MK_SIMD_NEON)
    return vdupq_n_f32(x);
#elif defined(MK_SIMD_SSE)
    return _mm_set1_ps(x);
#else
    const mengine_k_vf v = {x, x, x, x};
    return v;
#endif
}

/* acc + a * b */
static inline mengine_k_vf mengine_k_vfma(mengine_k_vf acc, mengine_k_vf a, mengine_k_vf b)
{
#if defined(MK_SIMD_AVX) && defined(__FMA__)
    return _mm256_fmadd_ps(a, b, acc);
#elif defined(MK_SIMD_NEON) && defined(__aarch64__)
    return vfmaq_f32(acc, a, b);
#else
    return acc + a * b;
#endif
}

/* v < lo ? lo : (v > hi ? hi : v), per lane */
static inline mengine_k_vf mengine_k_vclamp(mengine_k_vf v, mengine_k_vf lo, mengine_k_vf hi)
{
#if defined(MK_SIMD_AVX)
    return _mm256_min_ps(hi, _mm256_max_ps(lo, v)); /* (lo > v ? lo : v), (hi < v ? hi : v) */
#elif defined(MK_SIMD_SSE)
    return _mm_min_ps(hi, _mm_max_ps(lo, v));
#elif defined(MK_SIMD_NEON)
    return vminq_f32(hi, vmaxq_f32(lo, v));
#elif MK_VL == 1
    return v < lo ? lo : (v > hi ? hi : v);
#else
    float x[4], l[4], h[4];
    mengine_k_vstore(x, v), mengine_k_vstore(l, lo), mengine_k_vstore(h, hi);
    for (int i = 0; i < 4; i++)
        x[i] = x[i] < l[i] ? l[i] : (x[i] > h[i] ? h[i] : x[i]);
    return mengine_k_vload(x);
#endif
}

/* Sum of the lanes. */
static inline float mengine_k_vsum(mengine_k_vf v)
{
#if MK_VL == 1
    return v;
#else
    float x[MK_VL];
    mengine_k_vstore(x, v);
    float s = 0.0f;
    for (int i = 0; i < MK_VL; i++)
        s += x[i];
    return s;
#endif
}

/* out[0..3] = the lane sums of a, b, c, d. */
static inline void mengine_k_vsum4(mengine_k_vf a, mengine_k_vf b, mengine_k_vf c, mengine_k_vf d,
                                   float *out)
{
#if defined(MK_SIMD_AVX)
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
#elif defined(MK_SIMD_NEON) && defined(__aarch64__)
    vst1q_f32(out, vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)));
#else
    out[0] = mengine_k_vsum(a), out[1] = mengine_k_vsum(b), out[2] = mengine_k_vsum(c),
    out[3] = mengine_k_vsum(d);
#endif
}

/* s[j] = the lane sum of a[j], j < 8 (a transposing reduction: one vector of
 * sums on AVX, two on NEON and SSE). */
static inline void mengine_k_vsum8(const mengine_k_vf a[8], float *s)
{
#if defined(MK_SIMD_AVX)
    const __m256 g0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
    const __m256 g1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
    /* g0 = lanes 0-3 sums of a0..a3 | lanes 4-7 sums of a0..a3; g1 the same for a4..a7 */
    _mm256_storeu_ps(s, _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20),
                                      _mm256_permute2f128_ps(g0, g1, 0x31)));
#elif defined(MK_SIMD_NEON) && defined(__aarch64__)
    vst1q_f32(s, vpaddq_f32(vpaddq_f32(a[0], a[1]), vpaddq_f32(a[2], a[3])));
    vst1q_f32(s + 4, vpaddq_f32(vpaddq_f32(a[4], a[5]), vpaddq_f32(a[6], a[7])));
#elif defined(MK_SIMD_SSE)
    for (int h = 0; h < 8; h += 4) {
        const __m128 s1 =
            _mm_add_ps(_mm_unpacklo_ps(a[h], a[h + 1]), _mm_unpackhi_ps(a[h], a[h + 1]));
        const __m128 s2 =
            _mm_add_ps(_mm_unpacklo_ps(a[h + 2], a[h + 3]), _mm_unpackhi_ps(a[h + 2], a[h + 3]));
        _mm_storeu_ps(s + h, _mm_add_ps(_mm_movelh_ps(s1, s2), _mm_movehl_ps(s2, s1)));
    }
#else
    for (int j = 0; j < 8; j++)
        s[j] = mengine_k_vsum(a[j]);
#endif
}

/* The clamp bounds of a fused activation (NONE: -inf, +inf). */
static inline void mengine_k_act_bounds(mengine_k_act act, float *lo, float *hi)
{
    *lo = -INFINITY, *hi = INFINITY;
    if (act == MK_ACT_RELU || act == MK_ACT_RELU6)
        *lo = 0.0f;
    if (act == MK_ACT_RELU6)
        *hi = 6.0f;
    if (act == MK_ACT_RELU_N1_TO_1)
        *lo = -1.0f, *hi = 1.0f;
}

#endif
