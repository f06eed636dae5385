/* int8 registrations of the stereo operators (TRANSPOSE_CONV, CONCATENATION,
 * LEAKY_RELU, RESIZE_BILINEAR, SLICE, STRIDED_SLICE, QUANTIZE int8 -> int8) and the
 * fused int8 correlation. As ops_q8.c: each runs its float registration's prepare
 * first (inputs INT8, the transposed convolution's bias INT32), then checks the
 * quantization against TensorFlow Lite's (the operators that do not requantize:
 * the output's scale and zero point are the inputs') and computes the fixed-point
 * parameters. Kernels: kernels_q8_stereo.c. */
#include <string.h>

#include "engine/kernels_q8_stereo_impl.h"
#include "engine/ops_impl.h"

#define I8(p) ((const int8_t *)(const void *)(p))
#define O8(p) ((int8_t *)(void *)(p))

static mengine_status tensor_at(const mop_ctx *c, const fb_vec *v, uint32_t i, mtensor_info *ti)
{
    return mengine_model_tensor(c->r, c->m, (uint32_t)fb_vec_i32(c->r, v, i), ti);
}

static mengine_status q_in(const mop_ctx *c, uint32_t i, mtensor_info *ti)
{
    return tensor_at(c, &c->inputs, i, ti);
}

static mengine_status q_out(const mop_ctx *c, mtensor_info *ti)
{
    return tensor_at(c, &c->outputs, 0, ti);
}

static float scale_at(const mop_ctx *c, const mtensor_info *ti, uint32_t i)
{
    const uint32_t u = rd_u32(c->r->base + ti->q_scales + 4 * i);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Output @p out must have input @p in's scale and zero point (TFLite's int8 kernels of
 * these operators do not requantize). */
static mengine_status q_same(const mop_ctx *c, const mtensor_info *in, const mtensor_info *out)
{
    if (in->scale != out->scale || in->zero_point != out->zero_point)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "input (tensor %u '%s') and output (tensor %u '%s') must have the "
                               "same scale and zero_point",
                               in->index, in->name, out->index, out->name);
    return MENGINE_OK;
}

static mengine_k_dims dims4q(const mtensor *t)
{
    int32_t d[4] = {1, 1, 1, 1};
    for (uint32_t i = 0; i < t->rank; i++)
        d[4 - t->rank + i] = t->dims[i];
    const mengine_k_dims r = {d[0], d[1], d[2], d[3]};
    return r;
}

/* ---- TRANSPOSE_CONV: inputs (output_shape, weights, input, bias?) ---- */

static mengine_status q_tconv_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info f, in, b, out;
    mengine_status st = mengine_op_transpose_conv.prepare(c, node);
    const mengine_k_conv_params k = node->p.conv;
    if (st == MENGINE_OK)
        st = q_in(c, 1, &f);
    if (st == MENGINE_OK)
        st = q_in(c, 2, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    const int32_t cout = out.dims[3];
    if (f.zero_point != 0)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "weights (tensor %u '%s'): zero_point %d (symmetric: 0)", f.index,
                               f.name, (int)f.zero_point);
    if (f.n_q != 1 && (f.n_q != (uint32_t)cout || f.q_dim != 0))
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "weights (tensor %u '%s'): %u scales along dimension %d, expected "
                               "%d along dimension 0",
                               f.index, f.name, f.n_q, (int)f.q_dim, (int)cout);
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    if (c->inputs.n > 3 && fb_vec_i32(c->r, &c->inputs, 3) >= 0) {
        if ((st = q_in(c, 3, &b)) != MENGINE_OK)
            return st;
        if (b.type != MENGINE_INT32 || !b.data || (b.n_q != 1 && b.n_q != (uint32_t)cout))
            return mengine_op_fail(c, MENGINE_ERR_TYPE,
                                   "bias (tensor %u '%s') is not a quantized INT32 constant of "
                                   "one scale or one per output channel",
                                   b.index, b.name);
        for (int32_t ch = 0; ch < cout; ch++) {
            const double want =
                (double)in.scale * (double)scale_at(c, &f, f.n_q > 1 ? (uint32_t)ch : 0);
            const double got = (double)scale_at(c, &b, b.n_q > 1 ? (uint32_t)ch : 0);
            const double d = got > want ? got - want : want - got;
            if (d > 1e-5 * (got < want ? got : want))
                return mengine_op_fail(c, MENGINE_ERR_TYPE,
                                       "bias (tensor %u '%s'): scale[%d] is not input_scale x "
                                       "weight_scale[%d]",
                                       b.index, b.name, (int)ch, (int)ch);
        }
        q.bias = (uint32_t)(b.data - c->m->data);
    }
    q.stride_h = k.stride_h, q.stride_w = k.stride_w, q.pad_h = k.pad_h, q.pad_w = k.pad_w;
    q.in_zp = in.zero_point;
    q.out_zp = out.zero_point;
    q.in_scale = in.scale;
    q.out_scale = out.scale;
    q.wscales = f.q_scales;
    q.n_wscales = f.n_q;
    mengine_kq_act_range(k.act, out.scale, out.zero_point, &q.act_min, &q.act_max);
    node->p.q8 = q;
    const mengine_k_dims fd = {f.dims[0], f.dims[1], f.dims[2], f.dims[3]};
    const mengine_k_dims od = {out.dims[0], out.dims[1], out.dims[2], out.dims[3]};
    const size_t scratch =
        mengine_kq_transpose_conv_get_buffer_size(&fd, &od, k.stride_h, k.stride_w);
    if (scratch > 0x7fffffffu)
        return mengine_op_fail(c, MENGINE_ERR_LIMIT, "scratch of %zu bytes (limit 2 GiB)", scratch);
    node->scratch_bytes = (uint32_t)scratch;
    return MENGINE_OK;
}

static mengine_status q_tconv_eval(const mengine *e, const mnode *n)
{
    const mtensor *f = node_input(e, n, 1), *in = node_input(e, n, 2);
    const mtensor *out = &e->tensors[n->output];
    const mengine_kq_params *q = &n->p.q8;
    const mengine_k_dims id = dims4q(in), fd = dims4q(f), od = dims4q(out);
    int32_t *mult = (int32_t *)(void *)n->scratch;
    mengine_kq_channel_multipliers(q->in_scale, e->model.data + q->wscales, q->n_wscales,
                                   q->out_scale, od.c, mult, mult + od.c);
    const int32_t *bias = q->bias ? (const int32_t *)(const void *)(e->model.data + q->bias) : NULL;
    return mengine_kq_transpose_conv_s8(q, mult, mult + od.c, mult + 2 * od.c, &id, I8(in->cdata),
                                        &fd, I8(f->cdata), bias, &od, O8(out->data));
}

/* ---- LEAKY_RELU ---- */

static mengine_status q_leaky_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_op_leaky_relu.prepare(c, node);
    const float alpha = node->p.misc.value;
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    q.in_zp = in.zero_point;
    q.out_zp = out.zero_point;
    /* TFLite's LeakyReluPrepare: both multipliers in double */
    mengine_kq_quantize_multiplier((double)in.scale / (double)out.scale, &q.mult, &q.shift);
    const double am = (double)in.scale * (double)alpha / (double)out.scale;
    if (am > 0.0)
        mengine_kq_quantize_multiplier(am, &q.mult1, &q.shift1);
    else if (am < 0.0) { /* a negative slope: the multiplier of -am, negated */
        mengine_kq_quantize_multiplier(-am, &q.mult1, &q.shift1);
        q.mult1 = -q.mult1;
    }
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_leaky_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = &e->tensors[n->output];
    return mengine_kq_leaky_relu_s8(&n->p.q8, I8(in->cdata), O8(out->data), in->count);
}

/* ---- RESIZE_BILINEAR (the input's quantization) ---- */

static mengine_status q_resize_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_op_resize_bilinear.prepare(c, node);
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st == MENGINE_OK)
        st = q_same(c, &in, &out);
    if (st == MENGINE_OK && (node->p.misc.axis & 1))
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED, "int8 with align_corners");
    return st;
}

static mengine_status q_resize_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = &e->tensors[n->output];
    const mengine_k_dims id = dims4q(in), od = dims4q(out);
    return mengine_kq_resize_bilinear_s8(&id, I8(in->cdata), (n->p.misc.axis & 2) != 0, &od,
                                         O8(out->data));
}

/* ---- SLICE, STRIDED_SLICE (the input's quantization) ---- */

static mengine_status q_slice_common(const mop_ctx *c, mnode *node, mengine_status st)
{
    mtensor_info in, out;
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    return st == MENGINE_OK ? q_same(c, &in, &out) : st;
    (void)node;
}

static mengine_status q_slice_prepare(const mop_ctx *c, mnode *node)
{
    return q_slice_common(c, node, mengine_op_slice.prepare(c, node));
}

static mengine_status q_strided_slice_prepare(const mop_ctx *c, mnode *node)
{
    return q_slice_common(c, node, mengine_op_strided_slice.prepare(c, node));
}

static mengine_status q_slice_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = &e->tensors[n->output];
    const mengine_k_dims id = dims4q(in);
    int32_t stride[4], odim[4];
    uint32_t j = 0;
    for (int i = 0; i < 4; i++) { /* as ops.c's slice_eval */
        const int lead = i < 4 - (int)in->rank, shrunk = n->p.slice.stride[i] == 0;
        stride[i] = shrunk ? 1 : n->p.slice.stride[i];
        odim[i] = lead || shrunk || j >= out->rank ? 1 : out->dims[j++];
    }
    const mengine_k_dims od = {odim[0], odim[1], odim[2], odim[3]};
    return mengine_kq_slice_s8(&id, I8(in->cdata), n->p.slice.begin, stride, &od, O8(out->data));
}

/* ---- CONCATENATION: every input of the output's quantization (TFLite's int8 kernel) ---- */

static mengine_status q_concat_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_op_concatenation.prepare(c, node);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    for (uint32_t i = 0; st == MENGINE_OK && i < c->inputs.n; i++)
        if ((st = q_in(c, i, &in)) == MENGINE_OK)
            st = q_same(c, &in, &out);
    if (st == MENGINE_OK && node->p.misc.act != MK_ACT_NONE)
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED, "int8 with a fused activation");
    return st;
}

static mengine_status q_concat_eval(const mengine *e, const mnode *n)
{
    const mtensor *out = &e->tensors[n->output];
    const int32_t axis = n->p.misc.axis;
    size_t outer = 1, inner = 1, offset = 0;
    for (int32_t k = 0; k < axis; k++)
        outer *= (size_t)out->dims[k];
    for (uint32_t k = (uint32_t)axis + 1; k < out->rank; k++)
        inner *= (size_t)out->dims[k];
    const size_t out_chunk = (size_t)out->dims[axis] * inner;
    int8_t *y = O8(out->data);
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        const mtensor *in = node_input(e, n, i);
        const size_t chunk = (size_t)in->dims[axis] * inner;
        if (offset + chunk > out_chunk)
            return MENGINE_ERR_ARG;
        for (size_t o = 0; o < outer; o++)
            memcpy(y + o * out_chunk + offset, I8(in->cdata) + o * chunk, chunk);
        offset += chunk;
    }
    return MENGINE_OK;
}

/* ---- QUANTIZE: an int8 tensor into another int8 quantization ---- */

static mengine_status q_quantize_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    if (c->inputs.n != 1)
        return mengine_op_fail(c, MENGINE_ERR_GRAPH, "%u inputs, expected 1", c->inputs.n);
    if (in.type != MENGINE_INT8 || in.data)
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED,
                               "input (tensor %u '%s') is not an INT8 activation (only int8 -> "
                               "int8 requantization is supported)",
                               in.index, in.name);
    int same = in.rank == out.rank;
    for (uint32_t i = 0; same && i < in.rank; i++)
        same = in.dims[i] == out.dims[i];
    if (!same)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "output (tensor %u '%s') differs in shape from the input", out.index,
                               out.name);
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    q.in_zp = in.zero_point;
    q.out_zp = out.zero_point;
    mengine_kq_quantize_multiplier((double)in.scale / (double)out.scale, &q.mult, &q.shift);
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_quantize_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = &e->tensors[n->output];
    return mengine_kq_requantize_s8(&n->p.q8, I8(in->cdata), O8(out->data), in->count);
}

/* ---- the fused int8 correlation (fuse.c) ---- */

static mengine_status q_not_a_file_op(const mop_ctx *c, mnode *node)
{
    (void)node;
    return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED_OP, "not an operator of a model");
}

static mengine_status q_corr_eval(const mengine *e, const mnode *n)
{
    const mtensor *l = &e->tensors[n->p.corr8.left], *r = &e->tensors[n->p.corr8.right];
    const mtensor *out = &e->tensors[n->output];
    const mengine_k_dims ld = dims4q(l), rd = dims4q(r), od = dims4q(out);
    return mengine_kq_correlation_s8(&n->p.corr8.k, &ld, I8(l->cdata), &rd, I8(r->cdata), &od,
                                     O8(out->data));
}

/* ---- registrations ---- */

const mengine_op mengine_op_transpose_conv_int8 = {
    MENGINE_OP_TRANSPOSE_CONV | MOP_INT8, 4, 49, MOP_SHARE_NONE, q_tconv_prepare, q_tconv_eval};
const mengine_op mengine_op_concatenation_int8 = {
    MENGINE_OP_CONCATENATION | MOP_INT8, 4, 10, MOP_SHARE_NONE, q_concat_prepare, q_concat_eval};
const mengine_op mengine_op_leaky_relu_int8 = {
    MENGINE_OP_LEAKY_RELU | MOP_INT8, 2, 75, MOP_SHARE_INPLACE, q_leaky_prepare, q_leaky_eval};
const mengine_op mengine_op_resize_bilinear_int8 = {
    MENGINE_OP_RESIZE_BILINEAR | MOP_INT8, 4, 15, MOP_SHARE_NONE, q_resize_prepare, q_resize_eval};
const mengine_op mengine_op_slice_int8 = {
    MENGINE_OP_SLICE | MOP_INT8, 4, 48, MOP_SHARE_NONE, q_slice_prepare, q_slice_eval};
const mengine_op mengine_op_strided_slice_int8 = {MENGINE_OP_STRIDED_SLICE | MOP_INT8,
                                                  4,
                                                  32,
                                                  MOP_SHARE_NONE,
                                                  q_strided_slice_prepare,
                                                  q_slice_eval};
const mengine_op mengine_op_quantize_int8 = {
    MENGINE_OP_QUANTIZE | MOP_INT8, 2, 0, MOP_SHARE_INPLACE, q_quantize_prepare, q_quantize_eval};
const mengine_op mengine_op_correlation_int8 = {
    MENGINE_FUSED_CORRELATION_INT8, 0, 0, MOP_SHARE_NONE, q_not_a_file_op, q_corr_eval};
