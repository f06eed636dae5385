#include "train/checkpoint.h"

/* A device view as the source or the destination of a streamed section. */
typedef struct dev_view {
    mcl_dev *d;
    mview v;
} dev_view;

static manta_status from_device(void *user, size_t first, float *dst, size_t k, manta_err *err)
{
    const dev_view *s = user;
    manta_status st = mcl_read(s->d, mview_at(s->v, first), dst, k);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "reading the device failed: %s",
                             manta_err_msg(mcl_err(s->d), st));
    return MANTA_OK;
}

static manta_status to_device(void *user, size_t first, const float *src, size_t k,
                              manta_err *err)
{
    const dev_view *s = user;
    manta_status st = mcl_write(s->d, mview_at(s->v, first), src, k);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "writing the device failed: %s",
                             manta_err_msg(mcl_err(s->d), st));
    return MANTA_OK;
}

manta_status ckpt_add_f32_device(ckpt_writer *w, const char *name, mcl_dev *d, mview src, size_t n)
{
    dev_view s = {d, src};
    return ckpt_add_f32_stream(w, name, n, d && src.mem ? from_device : NULL, &s);
}

manta_status ckpt_read_f32_device(ckpt_reader *r, const char *name, mcl_dev *d, mview dst, size_t n,
                                  manta_err *err)
{
    dev_view s = {d, dst};
    return ckpt_read_f32_stream(r, name, n, d && dst.mem ? to_device : NULL, &s, err);
}
