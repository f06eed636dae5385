/* Element-wise kernels: activations, broadcast ADD / MUL, concatenation copy.
 * These may run in place, so out and in are not restrict-qualified. */
#include <math.h>
#include <string.h>

#include "engine/kernels_util.h"

void mk_act_f32(float *x, size_t n, mk_act act)
{
    size_t i;
    switch (act) {
    case MK_ACT_RELU:
        for (i = 0; i < n; i++)
            x[i] = x[i] < 0.0f ? 0.0f : x[i];
        break;
    case MK_ACT_RELU_N1_TO_1:
        for (i = 0; i < n; i++)
            x[i] = x[i] < -1.0f ? -1.0f : (x[i] > 1.0f ? 1.0f : x[i]);
        break;
    case MK_ACT_RELU6:
        for (i = 0; i < n; i++)
            x[i] = x[i] < 0.0f ? 0.0f : (x[i] > 6.0f ? 6.0f : x[i]);
        break;
    case MK_ACT_NONE: break;
    }
}

mengine_status mk_relu_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] < 0.0f ? 0.0f : in[i];
    return MENGINE_OK;
}

mengine_status mk_relu6_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] < 0.0f ? 0.0f : (in[i] > 6.0f ? 6.0f : in[i]);
    return MENGINE_OK;
}

mengine_status mk_hard_swish_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++) {
        float x = in[i], r = x + 3.0f;
        r = r < 0.0f ? 0.0f : (r > 6.0f ? 6.0f : r);
        out[i] = x * r * (1.0f / 6.0f);
    }
    return MENGINE_OK;
}

mengine_status mk_logistic_f32(const float *in, float *out, size_t n)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        out[i] = 1.0f / (1.0f + expf(-in[i]));
    return MENGINE_OK;
}

mengine_status mk_leaky_relu_f32(const float *in, float *out, size_t n, float alpha)
{
    if (!in || !out)
        return MENGINE_ERR_ARG;
    for (size_t i = 0; i < n; i++)
        out[i] = in[i] >= 0.0f ? in[i] : alpha * in[i];
    return MENGINE_OK;
}

enum binop { BIN_ADD, BIN_MUL };

/* Strides of a broadcast operand: 0 along dims of size 1 that the output repeats. */
static void bcast_strides(const mk_dims *d, const mk_dims *o, size_t s[4])
{
    size_t sc = 1, sw = (size_t)d->c, sh = sw * (size_t)d->w, sn = sh * (size_t)d->h;
    s[0] = d->n == o->n ? sn : 0;
    s[1] = d->h == o->h ? sh : 0;
    s[2] = d->w == o->w ? sw : 0;
    s[3] = d->c == o->c ? sc : 0;
}

static int bcast_ok(const mk_dims *d, const mk_dims *o)
{
    return (d->n == o->n || d->n == 1) && (d->h == o->h || d->h == 1) &&
           (d->w == o->w || d->w == 1) && (d->c == o->c || d->c == 1);
}

/* One output row of C values; either operand may be a single broadcast value. */
static void bin_row(enum binop op, const float *a, size_t sa, const float *b, size_t sb, float *out,
                    size_t c)
{
    size_t i;
    if (op == BIN_ADD) {
        if (sa && sb)
            for (i = 0; i < c; i++)
                out[i] = a[i] + b[i];
        else if (sb)
            for (i = 0; i < c; i++)
                out[i] = a[0] + b[i];
        else if (sa)
            for (i = 0; i < c; i++)
                out[i] = a[i] + b[0];
        else
            for (i = 0; i < c; i++)
                out[i] = a[0] + b[0];
    } else {
        if (sa && sb)
            for (i = 0; i < c; i++)
                out[i] = a[i] * b[i];
        else if (sb)
            for (i = 0; i < c; i++)
                out[i] = a[0] * b[i];
        else if (sa)
            for (i = 0; i < c; i++)
                out[i] = a[i] * b[0];
        else
            for (i = 0; i < c; i++)
                out[i] = a[0] * b[0];
    }
}

static mengine_status binary(enum binop op, const mk_dims *ad, const float *a, const mk_dims *bd,
                             const float *b, const mk_dims *od, float *out, mk_act act)
{
    if (!a || !b || !out || !mk_dims_ok(ad) || !mk_dims_ok(bd) || !mk_dims_ok(od) ||
        !bcast_ok(ad, od) || !bcast_ok(bd, od) || !mk_act_ok(act))
        return MENGINE_ERR_ARG;
    size_t sa[4], sb[4];
    bcast_strides(ad, od, sa);
    bcast_strides(bd, od, sb);
    const size_t c = (size_t)od->c, total = mk_dims_count(od);
    if (mk_dims_count(ad) == total && mk_dims_count(bd) == total) {
        /* same shapes: the whole tensor is one row */
        bin_row(op, a, 1, b, 1, out, total);
        mk_act_f32(out, total, act);
        return MENGINE_OK;
    }
    for (int32_t n = 0; n < od->n; n++)
        for (int32_t h = 0; h < od->h; h++)
            for (int32_t w = 0; w < od->w; w++) {
                const float *pa = a + n * sa[0] + h * sa[1] + w * sa[2];
                const float *pb = b + n * sb[0] + h * sb[1] + w * sb[2];
                float *po = out + (((size_t)n * od->h + h) * od->w + w) * c;
                bin_row(op, pa, sa[3], pb, sb[3], po, c);
                mk_act_f32(po, c, act);
            }
    return MENGINE_OK;
}

mengine_status mk_add_f32(const mk_dims *a_dims, const float *a, const mk_dims *b_dims,
                          const float *b, const mk_dims *out_dims, float *out, mk_act act)
{
    return binary(BIN_ADD, a_dims, a, b_dims, b, out_dims, out, act);
}

mengine_status mk_mul_f32(const mk_dims *a_dims, const float *a, const mk_dims *b_dims,
                          const float *b, const mk_dims *out_dims, float *out, mk_act act)
{
    return binary(BIN_MUL, a_dims, a, b_dims, b, out_dims, out, act);
}

mengine_status mk_concat_part_f32(const float *in, size_t outer, size_t in_chunk, float *out,
                                  size_t out_chunk, size_t offset)
{
    if (!in || !out || offset > out_chunk || in_chunk > out_chunk - offset)
        return MENGINE_ERR_ARG;
    for (size_t o = 0; o < outer; o++)
        memcpy(out + o * out_chunk + offset, in + o * in_chunk, in_chunk * sizeof *in);
    return MENGINE_OK;
}
