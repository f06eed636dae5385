/* Zero padding (PAD): the output is cleared, then each input row of C values
 * is copied to its place. */
#include <string.h>

#include "engine/kernels_util.h"

mengine_status mk_pad_f32(const mk_dims *id, const float *in, const int32_t before[4],
                          const mk_dims *od, float *out)
{
    if (!id || !in || !before || !od || !out || !mk_dims_ok(id) || !mk_dims_ok(od))
        return MENGINE_ERR_ARG;
    const int32_t idim[4] = {id->n, id->h, id->w, id->c}, odim[4] = {od->n, od->h, od->w, od->c};
    for (int i = 0; i < 4; i++)
        if (before[i] < 0 || before[i] > odim[i] || idim[i] > odim[i] - before[i])
            return MENGINE_ERR_ARG;
    memset(out, 0, mk_dims_count(od) * sizeof *out);
    const size_t row = (size_t)id->c * sizeof *in;
    for (int32_t n = 0; n < id->n; n++)
        for (int32_t h = 0; h < id->h; h++) {
            const float *src = in + ((size_t)n * id->h + h) * id->w * id->c;
            float *dst =
                out + ((((size_t)(n + before[0]) * od->h + (size_t)(h + before[1])) * od->w +
                        (size_t)before[2]) *
                           od->c +
                       (size_t)before[3]);
            for (int32_t w = 0; w < id->w; w++)
                memcpy(dst + (size_t)w * od->c, src + (size_t)w * id->c, row);
        }
    return MENGINE_OK;
}
