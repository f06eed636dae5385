/* Zero padding (PAD): each input row of C values is copied to its place and
 * only the rest of the output is cleared. */
#include <string.h>

#include "engine/kernels_util_impl.h"

mengine_status mengine_k_pad_f32(const mengine_k_dims *id, const float *in, const int32_t before[4],
                                 const mengine_k_dims *od, float *out)
{
    if (!id || !in || !before || !od || !out || !mengine_k_dims_ok(id) || !mengine_k_dims_ok(od))
        return MENGINE_ERR_ARG;
    const int32_t idim[4] = {id->n, id->h, id->w, id->c}, odim[4] = {od->n, od->h, od->w, od->c};
    for (int i = 0; i < 4; i++)
        if (before[i] < 0 || before[i] > odim[i] || idim[i] > odim[i] - before[i])
            return MENGINE_ERR_ARG;
    /* Zeros only where no input lands: whole padded batches and rows, the columns before
     * and after each row's run of input pixels (with the channel padding inside it). */
    const size_t oc = (size_t)od->c, orow = (size_t)od->w * oc, oimg = (size_t)od->h * orow;
    const size_t ic = (size_t)id->c, row = ic * sizeof *in;
    const size_t lead = (size_t)before[2] * oc + (size_t)before[3];
    const size_t run = ((size_t)id->w - 1) * oc + ic; /* from the first input value of a row */
    for (int32_t n = 0; n < od->n; n++) {
        float *img = out + (size_t)n * oimg;
        const int32_t in_n = n - before[0];
        if (in_n < 0 || in_n >= id->n) {
            memset(img, 0, oimg * sizeof *out);
            continue;
        }
        for (int32_t h = 0; h < od->h; h++) {
            float *dst = img + (size_t)h * orow;
            const int32_t in_h = h - before[1];
            if (in_h < 0 || in_h >= id->h) {
                memset(dst, 0, orow * sizeof *out);
                continue;
            }
            const float *src = in + ((size_t)in_n * id->h + (size_t)in_h) * id->w * ic;
            memset(dst, 0, lead * sizeof *out);
            if (oc == ic) { /* the row's pixels are contiguous on both sides: one copy */
                memcpy(dst + lead, src, run * sizeof *out);
            } else { /* channel padding: zero the run, then copy the pixels into it */
                memset(dst + lead, 0, run * sizeof *out);
                for (int32_t w = 0; w < id->w; w++)
                    memcpy(dst + lead + (size_t)w * oc, src + (size_t)w * ic, row);
            }
            memset(dst + lead + run, 0, (orow - lead - run) * sizeof *out);
        }
    }
    return MENGINE_OK;
}
