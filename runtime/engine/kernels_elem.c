/* Element-wise kernels: activations, broadcast ADD / MUL, concatenation copy.
 * These may run in place, so out and in are not restrict-qualified. The loops
 * are written with the vectors of kernels_simd_impl.h: each vector is read before it
 * is written, which makes out == in safe; an auto-vectorised loop would need a
 * run-time overlap check, fail it in place and fall back to scalar code. */
#include <math.h>
#include <string.h>

#include "engine/kernels_simd_impl.h"

/* out[i] = clamp(in[i], lo, hi); in place allowed. */
static MK_NOCLONE void clamp_f32(const float *in, float *out, size_t n, float lo_s, float hi_s)
{
    const mengine_k_vf lo = mengine_k_vset1(lo_s), hi = mengine_k_vset1(hi_s);
    size_t i = 0;
    for (; i + MK_VL <= n; i += MK_VL)
        mengine_k_vstore(out + i, mengine_k_vclamp(mengine_k_vload(in + i), lo, hi));
    for (; i < n; i++)
        out[i] = in[i] < lo_s ? lo_s : (in[i] > hi_s ? hi_s : in[i]);
}

void mengine_k_act_f32(float *x, size_t n, mengine_k_act act)
{
    float lo, hi;
    if (act == MK_ACT_NONE)
        return;
    mengine_k_act_bounds(act, &lo, &hi);
    clamp_f32(x, x, n, lo, hi);
}

mengine_status mengine_k_relu_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    clamp_f32(in, out, n, 0.0f, INFINITY);
    return MENGINE_OK;
}

mengine_status mengine_k_relu6_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    clamp_f32(in, out, n, 0.0f, 6.0f);
    return MENGINE_OK;
}

mengine_status mengine_k_hard_swish_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    const mengine_k_vf three = mengine_k_vset1(3.0f), zero = mengine_k_vset1(0.0f),
                       six = mengine_k_vset1(6.0f);
    const mengine_k_vf sixth = mengine_k_vset1(1.0f / 6.0f);
    size_t i = 0;
    for (; i + MK_VL <= n; i += MK_VL) {
        const mengine_k_vf x = mengine_k_vload(in + i);
        mengine_k_vstore(out + i, x * mengine_k_vclamp(x + three, zero, six) * sixth);
    }
    for (; i < n; i++) {
        float x = in[i], r = x + 3.0f;
        r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
        out[i] = x * r * (1.0f / 6.0f);
    }
    return MENGINE_OK;
}

mengine_status mengine_k_logistic_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        out[i] = 1.0f / (1.0f + expf(-in[i]));
    return MENGINE_OK;
}

mengine_status mengine_k_leaky_relu_f32(const float *in, float *out, size_t n, float alpha)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    /* x >= 0 ? x : alpha x, lane by lane (in place as well) */
    const mengine_k_vf a = mengine_k_vset1(alpha);
    size_t i = 0;
    for (; i + MK_VL <= n; i += MK_VL) {
        const mengine_k_vf x = mengine_k_vload(in + i), ax = x * a;
#if defined(MK_SIMD_AVX)
        const mengine_k_vf y =
            _mm256_blendv_ps(ax, x, _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ));
#elif defined(MK_SIMD_NEON)
        const mengine_k_vf y = vbslq_f32(vcgeq_f32(x, vdupq_n_f32(0.0f)), x, ax);
#elif defined(MK_SIMD_SSE)
        const __m128 ge = _mm_cmpge_ps(x, _mm_setzero_ps());
        const mengine_k_vf y = _mm_or_ps(_mm_and_ps(ge, x), _mm_andnot_ps(ge, ax));
#else
        float xs[MK_VL], as[MK_VL];
        mengine_k_vstore(xs, x), mengine_k_vstore(as, ax);
        for (int l = 0; l < MK_VL; l++)
            xs[l] = xs[l] >= 0.0f ? xs[l] : as[l];
        const mengine_k_vf y = mengine_k_vload(xs);
#endif
        mengine_k_vstore(out + i, y);
    }
    for (; i < n; i++)
        out[i] = in[i] >= 0.0f ? in[i] : alpha * in[i];
    return MENGINE_OK;
}

enum binop { BIN_ADD, BIN_MUL };

/* Strides of a broadcast operand: 0 along dims of size 1 that the output repeats. */
static void bcast_strides(const mengine_k_dims *d, const mengine_k_dims *o, size_t s[4])
{
    size_t sc = 1, sw = (size_t)d->c, sh = sw * (size_t)d->w, sn = sh * (size_t)d->h;
    s[0] = d->n == o->n ? sn : 0;
    s[1] = d->h == o->h ? sh : 0;
    s[2] = d->w == o->w ? sw : 0;
    s[3] = d->c == o->c ? sc : 0;
}

static int bcast_ok(const mengine_k_dims *d, const mengine_k_dims *o)
{
    return (d->n == o->n || d->n == 1) && (d->h == o->h || d->h == 1) &&
           (d->w == o->w || d->w == 1) && (d->c == o->c || d->c == 1);
}

/* out[i] = clamp(a[i] op b[i]) for i < n, both operands contiguous; in place allowed. */
static MK_ALWAYS_INLINE void bin_vec(const int mul, const float *a, const float *b, float *out,
                                     size_t n, float lo_s, float hi_s)
{
    const mengine_k_vf lo = mengine_k_vset1(lo_s), hi = mengine_k_vset1(hi_s);
    size_t i = 0;
    for (; i + MK_VL <= n; i += MK_VL) {
        const mengine_k_vf x = mengine_k_vload(a + i), y = mengine_k_vload(b + i);
        mengine_k_vstore(out + i, mengine_k_vclamp(mul ? x * y : x + y, lo, hi));
    }
    for (; i < n; i++) {
        const float v = mul ? a[i] * b[i] : a[i] + b[i];
        out[i] = v < lo_s ? lo_s : (v > hi_s ? hi_s : v);
    }
}

/* One output row of C values; either operand may be a single broadcast value
 * (stride 0: a channel dim of 1, rare; scalar). */
static void bin_row(enum binop op, const float *a, size_t sa, const float *b, size_t sb, float *out,
                    size_t c, float lo, float hi)
{
    if (sa && sb) {
        if (op == BIN_ADD)
            bin_vec(0, a, b, out, c, lo, hi);
        else
            bin_vec(1, a, b, out, c, lo, hi);
        return;
    }
    for (size_t i = 0; i < c; i++) {
        const float x = a[sa ? i : 0], y = b[sb ? i : 0], v = op == BIN_ADD ? x + y : x * y;
        out[i] = v < lo ? lo : (v > hi ? hi : v);
    }
}

static MK_NOCLONE mengine_status binary(enum binop op, const mengine_k_dims *ad, const float *a,
                                        const mengine_k_dims *bd, const float *b,
                                        const mengine_k_dims *od, float *out, mengine_k_act act)
{
    if (!a || !b || !out || !mengine_k_dims_ok(ad) || !mengine_k_dims_ok(bd) ||
        !mengine_k_dims_ok(od) || !bcast_ok(ad, od) || !bcast_ok(bd, od) || !mengine_k_act_ok(act))
        return MENGINE_ERR_ARG;
    size_t sa[4], sb[4];
    bcast_strides(ad, od, sa);
    bcast_strides(bd, od, sb);
    const size_t c = (size_t)od->c, total = mengine_k_dims_count(od);
    float lo, hi;
    mengine_k_act_bounds(act, &lo, &hi);
    if (mengine_k_dims_count(ad) == total && mengine_k_dims_count(bd) == total) {
        /* same shapes: the whole tensor is one row */
        bin_row(op, a, 1, b, 1, out, total, lo, hi);
        return MENGINE_OK;
    }
    for (int32_t n = 0; n < od->n; n++)
        for (int32_t h = 0; h < od->h; h++)
            for (int32_t w = 0; w < od->w; w++) {
                const float *pa = a + n * sa[0] + h * sa[1] + w * sa[2];
                const float *pb = b + n * sb[0] + h * sb[1] + w * sb[2];
                float *po = out + (((size_t)n * od->h + h) * od->w + w) * c;
                bin_row(op, pa, sa[3], pb, sb[3], po, c, lo, hi);
            }
    return MENGINE_OK;
}

mengine_status mengine_k_add_f32(const mengine_k_dims *a_dims, const float *a,
                                 const mengine_k_dims *b_dims, const float *b,
                                 const mengine_k_dims *out_dims, float *out, mengine_k_act act)
{
    return binary(BIN_ADD, a_dims, a, b_dims, b, out_dims, out, act);
}

mengine_status mengine_k_mul_f32(const mengine_k_dims *a_dims, const float *a,
                                 const mengine_k_dims *b_dims, const float *b,
                                 const mengine_k_dims *out_dims, float *out, mengine_k_act act)
{
    return binary(BIN_MUL, a_dims, a, b_dims, b, out_dims, out, act);
}

mengine_status mengine_k_concat_part_f32(const float *in, size_t outer, size_t in_chunk, float *out,
                                         size_t out_chunk, size_t offset)
{
    if (!in || !out || offset > out_chunk || in_chunk > out_chunk - offset)
        return MENGINE_ERR_ARG;
    if (in_chunk <= 16) /* a few channels per pixel: no library call per pixel */
        for (size_t o = 0; o < outer; o++) {
            float *restrict d = out + o * out_chunk + offset;
            const float *restrict s = in + o * in_chunk;
            for (size_t k = 0; k < in_chunk; k++)
                d[k] = s[k];
        }
    else
        for (size_t o = 0; o < outer; o++)
            memcpy(out + o * out_chunk + offset, in + o * in_chunk, in_chunk * sizeof *in);
    return MENGINE_OK;
}
