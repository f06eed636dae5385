/* The fused correlation of the stereo graphs: for every pixel of the left
 * features and every displacement, the mean over the channels of the product
 * with the right features at a shifted column (zero outside them). NHWC makes
 * each of these a dot product of two contiguous rows of C values. */
#include "engine/kernels_simd_impl.h"

/* sum_c a[c] * b[c], in vectors of MK_VL lanes and a scalar tail. */
static float dot(const float *restrict a, const float *restrict b, int32_t n)
{
    int32_t c = 0;
    float s = 0.0f;
#if MK_VL > 1
    if (n >= MK_VL) {
        mengine_k_vf acc = mengine_k_vset1(0.0f);
        for (; c + MK_VL <= n; c += MK_VL)
            acc = mengine_k_vfma(acc, mengine_k_vload(a + c), mengine_k_vload(b + c));
        s = mengine_k_vsum(acc);
    }
#endif
    for (; c < n; c++)
        s += a[c] * b[c];
    return s;
}

mengine_status mengine_k_correlation_f32(const mengine_k_corr_params *p, const mengine_k_dims *ld,
                                         const float *l, const mengine_k_dims *rd, const float *r,
                                         const mengine_k_dims *od, float *out)
{
    if (!p || !ld || !l || !rd || !r || !od || !out || !mengine_k_dims_ok(ld) ||
        !mengine_k_dims_ok(rd) || !mengine_k_dims_ok(od) || rd->n != ld->n || rd->h != ld->h ||
        rd->c != ld->c || od->n != ld->n || od->h != ld->h || od->w != ld->w)
        return MENGINE_ERR_ARG;
    const int32_t C = ld->c, D = od->c, W = ld->w, WR = rd->w;
    const float count = (float)C;
    for (int32_t n = 0; n < ld->n; n++)
        for (int32_t y = 0; y < ld->h; y++) {
            const size_t row = (size_t)n * ld->h + (size_t)y;
            const float *lrow = l + row * (size_t)W * C, *rrow = r + row * (size_t)WR * C;
            float *orow = out + row * (size_t)W * D;
            for (int32_t x = 0; x < W; x++) {
                const float *px = lrow + (size_t)x * C;
                for (int32_t k = 0; k < D; k++) {
                    const int64_t xr = (int64_t)x + p->offset + (int64_t)k * p->step;
                    orow[(size_t)x * D + k] =
                        xr < 0 || xr >= WR ? 0.0f : dot(px, rrow + (size_t)xr * C, C) / count;
                }
            }
        }
    return MENGINE_OK;
}
