/* Data movement of the stereo graphs: slices (SLICE, STRIDED_SLICE) and
 * bilinear resizing (RESIZE_BILINEAR). */
#include <string.h>

#include "engine/kernels_util_impl.h"

mengine_status mengine_k_slice_bytes(const mengine_k_dims *id, const void *in,
                                     const int32_t begin[4], const int32_t stride[4],
                                     const mengine_k_dims *od, void *out, size_t elem)
{
    if (!id || !in || !begin || !stride || !od || !out || !elem || !mengine_k_dims_ok(id) ||
        !mengine_k_dims_ok(od))
        return MENGINE_ERR_ARG;
    const int32_t idim[4] = {id->n, id->h, id->w, id->c}, odim[4] = {od->n, od->h, od->w, od->c};
    for (int i = 0; i < 4; i++)
        if (begin[i] < 0 || stride[i] < 1 ||
            (int64_t)begin[i] + (int64_t)(odim[i] - 1) * stride[i] >= idim[i])
            return MENGINE_ERR_ARG;
    const size_t ic = (size_t)id->c * elem, irow = (size_t)id->w * ic, iimg = (size_t)id->h * irow;
    const size_t oc = (size_t)od->c * elem, cstep = (size_t)stride[3] * elem;
    const unsigned char *src = in;
    unsigned char *dst = out;
    for (int32_t n = 0; n < od->n; n++) {
        const unsigned char *img = src + ((size_t)begin[0] + (size_t)n * stride[0]) * iimg;
        for (int32_t h = 0; h < od->h; h++) {
            const unsigned char *row = img + ((size_t)begin[1] + (size_t)h * stride[1]) * irow;
            for (int32_t w = 0; w < od->w; w++) {
                const unsigned char *px =
                    row + ((size_t)begin[2] + (size_t)w * stride[2]) * ic + (size_t)begin[3] * elem;
                if (stride[3] == 1) {
                    memcpy(dst, px, oc);
                    dst += oc;
                } else {
                    for (int32_t c = 0; c < od->c; c++, dst += elem)
                        memcpy(dst, px + (size_t)c * cstep, elem);
                }
            }
        }
    }
    return MENGINE_OK;
}

mengine_status mengine_k_slice_f32(const mengine_k_dims *id, const float *in,
                                   const int32_t begin[4], const int32_t stride[4],
                                   const mengine_k_dims *od, float *out)
{
    return mengine_k_slice_bytes(id, in, begin, stride, od, out, sizeof *out);
}

/* floor and ceil of a value >= -1 (no library call). */
static int32_t floor_i(float v)
{
    const int32_t i = (int32_t)v;
    return (float)i > v ? i - 1 : i;
}

static int32_t ceil_i(float v)
{
    const int32_t i = (int32_t)v;
    return (float)i < v ? i + 1 : i;
}

/* Source coordinate of output index @p o as TFLite computes it, its two
 * neighbours and the weight of the second. */
static void source(int32_t o, float scale, int half, int32_t in, int32_t *i0, int32_t *i1,
                   float *frac)
{
    const float v = half ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
    const int32_t lo = floor_i(v), hi = ceil_i(v);
    *i0 = lo > 0 ? lo : 0;
    *i1 = hi < in - 1 ? hi : in - 1;
    *frac = v - (float)*i0;
}

mengine_status mengine_k_resize_bilinear_f32(const mengine_k_dims *id, const float *in,
                                             int align_corners, int half_pixel_centers,
                                             const mengine_k_dims *od, float *out)
{
    if (!id || !in || !od || !out || !mengine_k_dims_ok(id) || !mengine_k_dims_ok(od) ||
        od->n != id->n || od->c != id->c || (align_corners && half_pixel_centers))
        return MENGINE_ERR_ARG;
    const float sh = align_corners && od->h > 1 ? (float)(id->h - 1) / (float)(od->h - 1)
                                                : (float)id->h / (float)od->h;
    const float sw = align_corners && od->w > 1 ? (float)(id->w - 1) / (float)(od->w - 1)
                                                : (float)id->w / (float)od->w;
    const size_t C = (size_t)id->c, irow = (size_t)id->w * C;
    for (int32_t n = 0; n < od->n; n++) {
        const float *img = in + (size_t)n * id->h * irow;
        for (int32_t y = 0; y < od->h; y++) {
            int32_t y0, y1;
            float fy;
            source(y, sh, half_pixel_centers, id->h, &y0, &y1, &fy);
            const float *r0 = img + (size_t)y0 * irow, *r1 = img + (size_t)y1 * irow;
            for (int32_t x = 0; x < od->w; x++) {
                int32_t x0, x1;
                float fx;
                source(x, sw, half_pixel_centers, id->w, &x0, &x1, &fx);
                const float w00 = (1.0f - fy) * (1.0f - fx), w01 = (1.0f - fy) * fx;
                const float w10 = fy * (1.0f - fx), w11 = fy * fx;
                const float *a = r0 + (size_t)x0 * C, *b = r0 + (size_t)x1 * C;
                const float *c = r1 + (size_t)x0 * C, *d = r1 + (size_t)x1 * C;
                for (size_t k = 0; k < C; k++)
                    out[k] = a[k] * w00 + c[k] * w10 + b[k] * w01 + d[k] * w11;
                out += C;
            }
        }
    }
    return MENGINE_OK;
}
