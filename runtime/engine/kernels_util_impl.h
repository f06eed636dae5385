/* Helpers shared by the kernel files (not part of the public API). */
#ifndef MANTA_ENGINE_KERNELS_UTIL_H
#define MANTA_ENGINE_KERNELS_UTIL_H

#include <stddef.h>

#include "engine/kernels_impl.h"

#if defined(__GNUC__)
#define MK_ALWAYS_INLINE inline __attribute__((always_inline))
/* One copy of a rarely run helper: not inlined into, nor cloned for, each caller with
 * constant arguments (keeps the border and tail code of specialised kernels small). */
#if defined(__clang__)
#define MK_NOCLONE __attribute__((noinline))
#else
#define MK_NOCLONE __attribute__((noinline, noclone))
#endif
#else
#define MK_ALWAYS_INLINE inline
#define MK_NOCLONE
#endif

/* GNU C vector extensions (GCC, clang: every target, lowered to scalar code
 * where there is no SIMD) for the register-blocked convolution micro-kernels;
 * GCC does not keep a 4 x 8 block of scalar accumulators in vector registers.
 * Build with -DMK_VECTOR_EXT=0 for plain C99. */
#ifndef MK_VECTOR_EXT
#if defined(__GNUC__)
#define MK_VECTOR_EXT 1
#else
#define MK_VECTOR_EXT 0
#endif
#endif

/* out[p][co] = clamp(bias[co] + in[p] . w[co], lo, hi) for p < npix, co < CO: in (npix, C),
 * w (CO, C), bias (CO) or NULL, out (npix, CO); dot products over the contiguous C, 8
 * output channels at a time (kernels_conv.c; the 1x1 convolution over few pixels and
 * the fully connected layer). */
void mengine_k_gemm_nt_f32(size_t npix, int C, int CO, const float *in, const float *w,
                           const float *bias, float lo, float hi, float *out);

/* One value through a fused activation. */
static inline float mengine_k_act1(float v, mengine_k_act act)
{
    switch (act) {
    case MK_ACT_RELU: return v < 0.0f ? 0.0f : v;
    case MK_ACT_RELU_N1_TO_1: return v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
    case MK_ACT_RELU6: return v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v);
    case MK_ACT_NONE: break;
    }
    return v;
}

static inline int mengine_k_act_ok(mengine_k_act act)
{
    return act >= MK_ACT_NONE && act <= MK_ACT_RELU6;
}

static inline int mengine_k_dims_ok(const mengine_k_dims *d)
{
    return d && d->n > 0 && d->h > 0 && d->w > 0 && d->c > 0;
}

static inline size_t mengine_k_dims_count(const mengine_k_dims *d)
{
    return (size_t)d->n * (size_t)d->h * (size_t)d->w * (size_t)d->c;
}

static inline int mengine_k_min(int a, int b) { return a < b ? a : b; }
static inline int mengine_k_max(int a, int b) { return a > b ? a : b; }

#endif
