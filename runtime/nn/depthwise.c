#include "nn/depthwise.h"

#include <stdio.h>

#include "nn/launch.h"

/* Largest work-group of the dw reduction (a power of two). */
#define DW_REDUCE_GROUP 128

int nn_dw_out_h(const nn_dw_shape *s) { return nn_window_out(s->h, s->k, s->stride, s->pad); }

int nn_dw_out_w(const nn_dw_shape *s) { return nn_window_out(s->w, s->k, s->stride, s->pad); }

double nn_dw_macs(const nn_dw_shape *s)
{
    return (double)s->n * s->c * nn_dw_out_h(s) * nn_dw_out_w(s) * s->k * s->k;
}

/* Check @p s and the sizes the kernels index with int. */
static manta_status check_shape(mcl_dev *d, const char *op, const nn_dw_shape *s)
{
    if (!s)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG, "%s: shape is NULL", op);
    NN_CHECK_FIELD_MIN(d, op, s, n, 1);
    NN_CHECK_FIELD_MIN(d, op, s, c, 1);
    NN_CHECK_FIELD_MIN(d, op, s, h, 1);
    NN_CHECK_FIELD_MIN(d, op, s, w, 1);
    NN_CHECK_FIELD_MIN(d, op, s, k, 1);
    NN_CHECK_FIELD_MIN(d, op, s, stride, 1);
    NN_CHECK_FIELD_MIN(d, op, s, pad, 0);
    if (nn_dw_out_h(s) < 1 || nn_dw_out_w(s) < 1)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "%s: kernel size k = %d exceeds the padded input "
                             "(h + 2*pad = %lld, w + 2*pad = %lld)",
                             op, s->k, (long long)s->h + 2LL * s->pad,
                             (long long)s->w + 2LL * s->pad);
    /* Factors below 2^31 keep every product of two within 64 bits. */
    size_t planes = (size_t)s->n * (size_t)s->c;
    size_t hw = (size_t)s->h * (size_t)s->w;
    size_t hw_o = (size_t)nn_dw_out_h(s) * (size_t)nn_dw_out_w(s);
    NN_CHECK_INT(d, (size_t)s->k * (size_t)s->k, "depthwise kernel taps");
    NN_CHECK_INT(d, planes, "depthwise planes");
    NN_CHECK_INT(d, hw, "depthwise input plane");
    NN_CHECK_INT(d, hw_o, "depthwise output plane");
    NN_CHECK_INT(d, planes * hw, "depthwise input size");
    NN_CHECK_INT(d, planes * hw_o, "depthwise output size");
    NN_CHECK_INT(d, (size_t)s->c * (size_t)s->k * (size_t)s->k, "depthwise weight size");
    return MANTA_OK;
}

/* Kernel @p pass ("dw_forward", "dw_backward_dx"), specialised for s->k and
 * s->stride where a specialised copy exists. */
static void kernel_name(char *buf, size_t len, const char *pass, const nn_dw_shape *s)
{
    bool special = (s->k == 3 || s->k == 5 || s->k == 7) && (s->stride == 1 || s->stride == 2);
    if (special)
        snprintf(buf, len, "%s_k%d_s%d", pass, s->k, s->stride);
    else
        snprintf(buf, len, "%s", pass);
}

/* The shape arguments every depthwise kernel takes after its three views. */
static void shape_args(mcl_launch *L, const nn_dw_shape *s)
{
    mcl_arg_int(L, s->n);
    mcl_arg_int(L, s->c);
    mcl_arg_int(L, s->h);
    mcl_arg_int(L, s->w);
    mcl_arg_int(L, s->k);
    mcl_arg_int(L, s->stride);
    mcl_arg_int(L, s->pad);
    mcl_arg_int(L, nn_dw_out_h(s));
    mcl_arg_int(L, nn_dw_out_w(s));
}

manta_status nn_dw_forward(mcl_dev *d, const nn_dw_shape *s, mview x, mview w, mview y)
{
    static const char op[] = "depthwise forward";
    manta_status st = check_shape(d, op, s);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "x", x);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "w", w);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "y", y);
    if (st != MANTA_OK)
        return st;
    char name[32];
    kernel_name(name, sizeof name, "dw_forward", s);
    mcl_launch L;
    mcl_launch_begin(&L, d, "depthwise", name);
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, w);
    mcl_arg_view(&L, y);
    shape_args(&L, s);
    size_t total = (size_t)s->n * (size_t)s->c * (size_t)nn_dw_out_h(s) * (size_t)nn_dw_out_w(s);
    return mcl_launch_run(&L, 1, (size_t[]){total}, NULL);
}

/* dx: (N, C, H, W), overwritten, from dy (N, C, Ho, Wo) and w (C, K, K). */
static manta_status backward_dx(mcl_dev *d, const nn_dw_shape *s, mview w, mview dy, mview dx)
{
    char name[32];
    kernel_name(name, sizeof name, "dw_backward_dx", s);
    mcl_launch L;
    mcl_launch_begin(&L, d, "depthwise", name);
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, w);
    mcl_arg_view(&L, dx);
    shape_args(&L, s);
    size_t total = (size_t)s->n * (size_t)s->c * (size_t)s->h * (size_t)s->w;
    return mcl_launch_run(&L, 1, (size_t[]){total}, NULL);
}

/* dw (C, K, K) += reduction over (N, Ho, Wo); x (N, C, H, W), dy (N, C, Ho, Wo). */
static manta_status backward_w(mcl_dev *d, const nn_dw_shape *s, mview x, mview dy, mview dw)
{
    /* A power of two covering the output rows, within the group limits. */
    size_t rows = (size_t)s->n * (size_t)nn_dw_out_h(s);
    size_t max_group = mcl_info(d)->max_work_group;
    size_t group = 1;
    while (group < rows && group * 2 <= DW_REDUCE_GROUP && group * 2 <= max_group)
        group *= 2;
    mcl_launch L;
    mcl_launch_begin(&L, d, "depthwise", "dw_backward_w");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, dw);
    shape_args(&L, s);
    mcl_arg_local(&L, group * sizeof(float));
    size_t global = (size_t)s->c * (size_t)s->k * (size_t)s->k * group;
    return mcl_launch_run(&L, 1, (size_t[]){global}, (size_t[]){group});
}

manta_status nn_dw_backward(mcl_dev *d, const nn_dw_shape *s, mview x, mview w, mview dy,
                            mview dx, mview dw)
{
    static const char op[] = "depthwise backward";
    manta_status st = check_shape(d, op, s);
    if (st == MANTA_OK)
        st = nn_need_buffer(d, op, "dy", dy);
    if (st == MANTA_OK && dw.mem)
        st = nn_need_buffer(d, op, "x", x);
    if (st == MANTA_OK && dx.mem)
        st = nn_need_buffer(d, op, "w", w);
    if (st == MANTA_OK && dw.mem)
        st = backward_w(d, s, x, dy, dw);
    if (st == MANTA_OK && dx.mem)
        st = backward_dx(d, s, w, dy, dx);
    return st;
}
