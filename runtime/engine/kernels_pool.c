/* Reductions over space: average pooling and the mean over H and W. */
#include "engine/kernels_simd_impl.h"

mengine_status mengine_k_avg_pool_f32(const mengine_k_pool_params *p, const mengine_k_dims *id,
                                      const float *in, const mengine_k_dims *od, float *out)
{
    if (!p || !in || !out || !mengine_k_dims_ok(id) || !mengine_k_dims_ok(od) || p->stride_h <= 0 ||
        p->stride_w <= 0 || p->pad_h < 0 || p->pad_w < 0 || p->filter_h <= 0 || p->filter_w <= 0 ||
        !mengine_k_act_ok(p->act) || od->n != id->n || od->c != id->c)
        return MENGINE_ERR_ARG;
    const int H = id->h, W = id->w, C = id->c;
    for (int n = 0; n < id->n; n++)
        for (int oh = 0; oh < od->h; oh++) {
            const int h0 = oh * p->stride_h - p->pad_h;
            const int hs = mengine_k_max(h0, 0), he = mengine_k_min(h0 + p->filter_h, H);
            for (int ow = 0; ow < od->w; ow++) {
                const int w0 = ow * p->stride_w - p->pad_w;
                const int ws = mengine_k_max(w0, 0), we = mengine_k_min(w0 + p->filter_w, W);
                float *restrict y = out + (((size_t)n * od->h + oh) * od->w + ow) * C;
                for (int c = 0; c < C; c++)
                    y[c] = 0.0f;
                for (int h = hs; h < he; h++)
                    for (int w = ws; w < we; w++) {
                        const float *restrict x = in + (((size_t)n * H + h) * W + w) * C;
                        for (int c = 0; c < C; c++)
                            y[c] += x[c];
                    }
                const int count = (he - hs) * (we - ws);
                if (count > 0) {
                    const float fc = (float)count;
                    for (int c = 0; c < C; c++)
                        y[c] /= fc;
                }
                mengine_k_act_f32(y, (size_t)C, p->act);
            }
        }
    return MENGINE_OK;
}

mengine_status mengine_k_mean_hw_f32(const mengine_k_dims *id, const float *in, float *out)
{
    if (!in || !out || !mengine_k_dims_ok(id))
        return MENGINE_ERR_ARG;
    const size_t hw = (size_t)id->h * id->w, C = (size_t)id->c;
    const float count = (float)hw;
    for (int n = 0; n < id->n; n++) {
        float *restrict y = out + (size_t)n * C;
        const float *restrict x = in + (size_t)n * hw * C;
        size_t c = 0;
        for (; c + MK_VL <= C; c += MK_VL) { /* one vector of channels over all pixels */
            mengine_k_vf s = mengine_k_vset1(0.0f);
            for (size_t i = 0; i < hw; i++)
                s = s + mengine_k_vload(x + i * C + c);
            mengine_k_vstore(y + c, s / mengine_k_vset1(count));
        }
        for (; c < C; c++) {
            float s = 0.0f;
            for (size_t i = 0; i < hw; i++)
                s += x[i * C + c];
            y[c] = s / count;
        }
    }
    return MENGINE_OK;
}

mengine_status mengine_k_mean_c_f32(size_t pixels, size_t channels, const float *in, float *out)
{
    if (!in || !out || !pixels || !channels)
        return MENGINE_ERR_ARG;
    const float count = (float)channels;
    for (size_t p = 0; p < pixels; p++) {
        const float *restrict x = in + p * channels;
        float s = 0.0f;
        for (size_t c = 0; c < channels; c++)
            s += x[c];
        out[p] = s / count;
    }
    return MENGINE_OK;
}
