/* Fully connected layer and softmax. */
#include <math.h>

#include "engine/kernels_simd_impl.h"

mengine_status mengine_k_fully_connected_f32(mengine_k_act act, size_t batches, size_t in_depth,
                                             size_t units, const float *in, const float *w,
                                             const float *bias, float *out)
{
    if (!in || !w || !out || !batches || !in_depth || !units || !mengine_k_act_ok(act))
        return MENGINE_ERR_ARG;
    if (in_depth > 0x7fffffff || units > 0x7fffffff)
        return MENGINE_ERR_ARG;
    float lo, hi;
    mengine_k_act_bounds(act, &lo, &hi);
    mengine_k_gemm_nt_f32(batches, (int)in_depth, (int)units, in, w, bias, lo, hi, out);
    return MENGINE_OK;
}

mengine_status mengine_k_softmax_f32(size_t rows, size_t cols, float beta, const float *in,
                                     float *out)
{
    if (!in || !out || !cols)
        return MENGINE_ERR_ARG;
    for (size_t r = 0; r < rows; r++) {
        const float *x = in + r * cols;
        float *y = out + r * cols;
        float mx = x[0];
        for (size_t i = 1; i < cols; i++)
            mx = x[i] > mx ? x[i] : mx;
        float sum = 0.0f;
        for (size_t i = 0; i < cols; i++) {
            y[i] = expf(beta * (x[i] - mx));
            sum += y[i];
        }
        const float inv = 1.0f / sum;
        for (size_t i = 0; i < cols; i++)
            y[i] *= inv;
    }
    return MENGINE_OK;
}
