/* Fully connected layer and softmax. */
#include <math.h>

#include "engine/kernels_util.h"

mengine_status mk_fully_connected_f32(mk_act act, size_t batches, size_t in_depth, size_t units,
                                      const float *in, const float *w, const float *bias,
                                      float *out)
{
    if (!in || !w || !out || !batches || !in_depth || !units || !mk_act_ok(act))
        return MENGINE_ERR_ARG;
    for (size_t b = 0; b < batches; b++) {
        const float *restrict x = in + b * in_depth;
        float *restrict y = out + b * units;
        for (size_t u = 0; u < units; u++)
            y[u] = mk_act1(mk_dot(x, w + u * in_depth, in_depth) + (bias ? bias[u] : 0.0f), act);
    }
    return MENGINE_OK;
}

mengine_status mk_softmax_f32(size_t rows, size_t cols, float beta, const float *in, float *out)
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
