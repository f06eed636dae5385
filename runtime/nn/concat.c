#include "nn/concat.h"

#include "nn/launch.h"

static manta_status check_shape(mcl_dev *d, const char *op, const nn_concat_shape *s)
{
    MANTA_TRY(nn_need_shape(d, op, s));
    NN_CHECK_FIELDS(d, op, NN_FIELD(s, n, 1), NN_FIELD(s, c, 1), NN_FIELD(s, hw, 1),
                    NN_FIELD(s, c_offset, 0));
    if ((long long)s->c_offset + s->c > s->c_total)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: slice c_offset + c = %d + %d exceeds c_total = %d", op,
                             s->c_offset, s->c, s->c_total);
    NN_CHECK_INT(d, (size_t)s->n * (size_t)s->c_total * (size_t)s->hw, "concat joined size");
    return MANTA_OK;
}

/* Copy (or add) N blocks of C*HW values from @p src to @p dst, image b at
 * b * src_stride and b * dst_stride. */
static manta_status copy_blocks(mcl_dev *d, const nn_concat_shape *s, mview src, mview dst,
                                size_t src_stride, size_t dst_stride, bool add)
{
    const bool one = mcl_get_variant(d) == MCL_VARIANT_GPU;
    size_t count = (size_t)s->c * (size_t)s->hw;
    mcl_launch L;
    mcl_launch_begin(&L, d, "concat", one ? "concat_copy_1" : "concat_copy");
    mcl_arg_view(&L, src);
    mcl_arg_view(&L, dst);
    nn_arg_ints(&L, (const int[]){s->n, (int)count, (int)src_stride, (int)dst_stride, add}, 5);
    mcl_launch_output(&L, count * (size_t)s->n);
    size_t items = one ? count : (count + 7) / 8;
    return mcl_launch_run(&L, 2, (size_t[]){items, (size_t)s->n}, NULL);
}

manta_status nn_concat_forward(mcl_dev *d, const nn_concat_shape *s, mview src, mview dst)
{
    static const char op[] = "concat forward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_buffers2(d, op, "src", src, "dst", dst));
    size_t hw = (size_t)s->hw;
    return copy_blocks(d, s, src, mview_at(dst, (size_t)s->c_offset * hw), (size_t)s->c * hw,
                       (size_t)s->c_total * hw, false);
}

manta_status nn_concat_backward(mcl_dev *d, const nn_concat_shape *s, mview ddst, mview dsrc,
                                bool accumulate)
{
    static const char op[] = "concat backward";
    MANTA_TRY(check_shape(d, op, s));
    MANTA_TRY(nn_need_buffers2(d, op, "ddst", ddst, "dsrc", dsrc));
    size_t hw = (size_t)s->hw;
    return copy_blocks(d, s, mview_at(ddst, (size_t)s->c_offset * hw), dsrc,
                       (size_t)s->c_total * hw, (size_t)s->c * hw, accumulate);
}
