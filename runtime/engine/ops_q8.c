/* int8 operator registrations: each runs its float registration's prepare
 * (called directly: mengine_opf_*_prepare(), so that a table of int8 operators links
 * no float32 eval) first (inputs, options and shapes, with INT8 where that one wants FLOAT32 and
 * INT32 biases: ops.c's need_float()), then checks the quantization of every
 * tensor against TensorFlow Lite's spec and computes the fixed-point
 * parameters into node->p.q8. Per-channel multipliers are computed at run
 * time into the operator's scratch (with the kernel's work), so nothing
 * outlives prepare but the node. Kernels: kernels_q8.c. */
#include <string.h>

#include "engine/ops_impl.h"

/* ---- prepare helpers ---- */

static mengine_status tensor_at(const mop_ctx *c, const fb_vec *v, uint32_t i, mtensor_info *ti)
{
    return mengine_model_tensor(c->r, c->m, (uint32_t)fb_vec_i32(c->r, v, i), ti);
}

/* Input @p i (present: the float prepare checked it) and the output. */
static mengine_status q_in(const mop_ctx *c, uint32_t i, mtensor_info *ti)
{
    return tensor_at(c, &c->inputs, i, ti);
}

static mengine_status q_out(const mop_ctx *c, mtensor_info *ti)
{
    return tensor_at(c, &c->outputs, 0, ti);
}

static int present(const mop_ctx *c, uint32_t i)
{
    return i < c->inputs.n && fb_vec_i32(c->r, &c->inputs, i) >= 0;
}

static float scale_at(const mop_ctx *c, const mtensor_info *ti, uint32_t i)
{
    const uint32_t u = rd_u32(c->r->base + ti->q_scales + 4 * i);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Weights: symmetric (zero point 0, checked for per-channel by the reader), @p n_q scales
 * along @p dim (1: per-tensor allowed when @p per_tensor_ok). */
static mengine_status q_weights(const mop_ctx *c, const mtensor_info *w, int32_t dim,
                                int32_t channels, int per_tensor_ok)
{
    if (w->zero_point != 0)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "weights (tensor %u '%s'): zero_point %d (symmetric: 0)", w->index,
                               w->name, (int)w->zero_point);
    if (w->n_q == 1 && per_tensor_ok)
        return MENGINE_OK;
    if (w->n_q != (uint32_t)channels || w->q_dim != dim)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "weights (tensor %u '%s'): %u scales along dimension %d, expected "
                               "%d along dimension %d",
                               w->index, w->name, w->n_q, (int)w->q_dim, (int)channels, (int)dim);
    return MENGINE_OK;
}

/* Bias: INT32 with scale[c] = input_scale * weight_scale[c] (relative tolerance 1e-5), zero
 * points 0 (checked by the reader). Sets q->bias. */
static mengine_status q_bias(const mop_ctx *c, const mtensor_info *in, const mtensor_info *w,
                             const mtensor_info *b, int32_t channels, mengine_kq_params *q)
{
    if (b->type != MENGINE_INT32 || !b->data || b->n_q == 0)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "bias (tensor %u '%s') is not a quantized INT32 constant", b->index,
                               b->name);
    if (b->n_q != 1 && b->n_q != (uint32_t)channels)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "bias (tensor %u '%s'): %u scales for %d channels", b->index,
                               b->name, b->n_q, (int)channels);
    for (int32_t k = 0; k < channels; k++) {
        const double want =
            (double)in->scale * (double)scale_at(c, w, w->n_q > 1 ? (uint32_t)k : 0);
        const double got = (double)scale_at(c, b, b->n_q > 1 ? (uint32_t)k : 0);
        const double d = got > want ? got - want : want - got;
        if (d > 1e-5 * (got < want ? got : want))
            return mengine_op_fail(c, MENGINE_ERR_TYPE,
                                   "bias (tensor %u '%s'): scale[%d] is not input_scale x "
                                   "weight_scale[%d]",
                                   b->index, b->name, (int)k, (int)k);
    }
    q->bias = (uint32_t)(b->data - c->m->data);
    return MENGINE_OK;
}

/* The same quantization on input @p in and output @p out (PAD, RESHAPE). */
static mengine_status q_same(const mop_ctx *c, const mtensor_info *in, const mtensor_info *out)
{
    if (in->scale != out->scale || in->zero_point != out->zero_point)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "output (tensor %u '%s') must have the input's scale and "
                               "zero_point",
                               out->index, out->name);
    return MENGINE_OK;
}

static float f32_le(const uint8_t *b)
{
    const uint32_t u =
        (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static const int32_t *bias_data(const mengine *e, const mengine_kq_params *q)
{
    return q->bias ? (const int32_t *)(const void *)(e->model.data + q->bias) : NULL;
}

static const mtensor *in_rec(const mengine *e, const mnode *n, uint32_t i)
{
    return node_input(e, n, i);
}

static mengine_k_dims dims4q(const mtensor *t)
{
    if (t->rank == 4) { /* the convolutions' tensors: no loop */
        const mengine_k_dims r4 = {t->dims[0], t->dims[1], t->dims[2], t->dims[3]};
        return r4;
    }
    int32_t d[4] = {1, 1, 1};
    for (uint32_t i = 0; i < t->rank; i++)
        d[4 - t->rank + i] = t->dims[i];
    mengine_k_dims r = {d[0], d[1], d[2], d[3]};
    return r;
}

#define I8(p) ((const int8_t *)(const void *)(p))
#define O8(p) ((int8_t *)(void *)(p))

/* ---- CONV_2D and DEPTHWISE_CONV_2D ---- */

static mengine_status q_conv_common(const mop_ctx *c, mnode *node, int dw)
{
    mtensor_info in, f, b, out;
    mengine_status st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_in(c, 1, &f);
    if (st == MENGINE_OK)
        st = q_in(c, 2, &b);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    mengine_k_act act;
    if (dw) {
        const mengine_k_dw_params k = node->p.dw;
        q.stride_h = k.stride_h, q.stride_w = k.stride_w, q.pad_h = k.pad_h, q.pad_w = k.pad_w;
        q.multiplier = k.multiplier;
        act = k.act;
    } else {
        const mengine_k_conv_params k = node->p.conv;
        q.stride_h = k.stride_h, q.stride_w = k.stride_w, q.pad_h = k.pad_h, q.pad_w = k.pad_w;
        act = k.act;
    }
    const int32_t cout = out.dims[3];
    st = q_weights(c, &f, dw ? 3 : 0, cout, 1);
    if (st == MENGINE_OK)
        st = q_bias(c, &in, &f, &b, cout, &q);
    if (st != MENGINE_OK)
        return st;
    q.in_zp = in.zero_point;
    q.out_zp = out.zero_point;
    q.in_scale = in.scale;
    q.out_scale = out.scale;
    q.wscales = f.q_scales;
    q.n_wscales = f.n_q;
    mengine_kq_act_range(act, out.scale, out.zero_point, &q.act_min, &q.act_max);
    node->p.q8 = q;
    const mengine_k_dims fd = {f.dims[0], f.dims[1], f.dims[2], f.dims[3]};
    const size_t scratch = mengine_kq_conv_get_buffer_size(&fd, dw);
    if (scratch > 0x7fffffffu)
        return mengine_op_fail(c, MENGINE_ERR_LIMIT, "scratch of %zu bytes (limit 2 GiB)", scratch);
    node->scratch_bytes = (uint32_t)scratch;
    return MENGINE_OK;
}

static mengine_status q_conv_prepare(const mop_ctx *c, mnode *node)
{
    mengine_status st = mengine_opf_conv_prepare(c, node);
    return st == MENGINE_OK ? q_conv_common(c, node, 0) : st;
}

static mengine_status q_dw_prepare(const mop_ctx *c, mnode *node)
{
    mengine_status st = mengine_opf_dw_prepare(c, node);
    return st == MENGINE_OK ? q_conv_common(c, node, 1) : st;
}

/* Per-channel multipliers into the scratch: [mult (C) | shift (C) | kernel work]; with fp32
 * requantization the float scales in place of mult (returned, else NULL). */
static const float *q_multipliers(const mengine *e, const mnode *n, int32_t channels)
{
    const mengine_kq_params *q = &n->p.q8;
    int32_t *mult = (int32_t *)(void *)n->scratch;
    if (e->requant == MENGINE_REQUANT_FP32) {
        float *fs = (float *)(void *)n->scratch;
        for (int32_t c = 0; c < channels; c++) /* XNNPACK's: in float, in this order */
            fs[c] = q->in_scale *
                    f32_le(e->model.data + q->wscales + 4 * (q->n_wscales > 1 ? (uint32_t)c : 0)) /
                    q->out_scale;
        return fs;
    }
    mengine_kq_channel_multipliers(q->in_scale, e->model.data + q->wscales, q->n_wscales,
                                   q->out_scale, channels, mult, mult + channels);
    return NULL;
}

static mengine_status q_conv_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *f = in_rec(e, n, 1), *out = &e->tensors[n->output];
    const mengine_k_dims id = dims4q(in), fd = dims4q(f), od = dims4q(out);
    int32_t *mult = (int32_t *)(void *)n->scratch;
    const float *fs = q_multipliers(e, n, od.c);
    return mengine_kq_conv2d_s8(&n->p.q8, mult, mult + od.c, fs, mult + 2 * od.c, &id,
                                I8(in->cdata), &fd, I8(f->cdata), bias_data(e, &n->p.q8), &od,
                                O8(out->data));
}

static mengine_status q_dw_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *f = in_rec(e, n, 1), *out = &e->tensors[n->output];
    const mengine_k_dims id = dims4q(in), fd = dims4q(f), od = dims4q(out);
    int32_t *mult = (int32_t *)(void *)n->scratch;
    const float *fs = q_multipliers(e, n, od.c);
    return mengine_kq_depthwise_conv_s8(&n->p.q8, mult, mult + od.c, fs, mult + 2 * od.c, &id,
                                        I8(in->cdata), &fd, I8(f->cdata), bias_data(e, &n->p.q8),
                                        &od, O8(out->data));
}

/* ---- FULLY_CONNECTED (per-tensor weights) ---- */

static mengine_status q_fc_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, w, b, out;
    mengine_status st = mengine_opf_fc_prepare(c, node);
    const mengine_k_act act = node->p.misc.act;
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_in(c, 1, &w);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    if (w.n_q != 1)
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED,
                               "weights (tensor %u '%s'): per-channel FULLY_CONNECTED weights are "
                               "not supported (one scale)",
                               w.index, w.name);
    st = q_weights(c, &w, 0, w.dims[0], 1);
    if (st == MENGINE_OK && present(c, 2)) {
        st = q_in(c, 2, &b);
        if (st == MENGINE_OK)
            st = q_bias(c, &in, &w, &b, w.dims[0], &q);
    }
    if (st != MENGINE_OK)
        return st;
    q.in_zp = in.zero_point;
    q.out_zp = out.zero_point;
    /* TFLite's GetQuantizedConvolutionMultipler: in double */
    const double real = (double)in.scale * (double)w.scale / (double)out.scale;
    mengine_kq_quantize_multiplier(real, &q.mult, &q.shift);
    mengine_kq_act_range(act, out.scale, out.zero_point, &q.act_min, &q.act_max);
    q.in_scale = in.scale; /* fp32 requantization: in_scale * w_scale / out_scale in float */
    q.out_scale = out.scale;
    q.beta = w.scale;
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_fc_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *w = in_rec(e, n, 1), *out = &e->tensors[n->output];
    const int32_t units = w->dims[0], depth = w->dims[1];
    const mengine_kq_params *q = &n->p.q8;
    const float fs =
        e->requant == MENGINE_REQUANT_FP32 ? q->in_scale * q->beta / q->out_scale : 0.0f;
    return mengine_kq_fully_connected_s8(q, fs, (int32_t)(in->count / (uint32_t)depth), depth,
                                         units, I8(in->cdata), I8(w->cdata), bias_data(e, &n->p.q8),
                                         O8(out->data));
}

/* ---- ADD, MUL ---- */

static mengine_status q_binary_prepare(const mop_ctx *c, mnode *node, int add)
{
    mtensor_info a, b, out;
    mengine_status st = mengine_opf_binary_prepare(c, node);
    const mengine_k_act act = node->p.misc.act;
    if (st == MENGINE_OK)
        st = q_in(c, 0, &a);
    if (st == MENGINE_OK)
        st = q_in(c, 1, &b);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    q.in_zp = a.zero_point;
    q.in2_zp = b.zero_point;
    q.out_zp = out.zero_point;
    if (add) { /* TFLite's add.cc: left shift 20, inputs rescaled to twice the larger scale */
        const double twice_max = 2.0 * (double)(a.scale > b.scale ? a.scale : b.scale);
        mengine_kq_quantize_multiplier((double)a.scale / twice_max, &q.mult1, &q.shift1);
        mengine_kq_quantize_multiplier((double)b.scale / twice_max, &q.mult2, &q.shift2);
        mengine_kq_quantize_multiplier(twice_max / ((double)(1 << 20) * (double)out.scale), &q.mult,
                                       &q.shift);
        if (q.shift1 > 0 || q.shift2 > 0 || q.shift > 0)
            return mengine_op_fail(c, MENGINE_ERR_TYPE,
                                   "output scale too small for the inputs' (multiplier above 1)");
    } else {
        mengine_kq_quantize_multiplier((double)a.scale * (double)b.scale / (double)out.scale,
                                       &q.mult, &q.shift);
    }
    mengine_kq_act_range(act, out.scale, out.zero_point, &q.act_min, &q.act_max);
    q.in_scale = a.scale; /* fp32 requantization (XNNPACK's arithmetic) */
    q.beta = b.scale;
    q.out_scale = out.scale;
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_add_prepare(const mop_ctx *c, mnode *node)
{
    return q_binary_prepare(c, node, 1);
}

static mengine_status q_mul_prepare(const mop_ctx *c, mnode *node)
{
    return q_binary_prepare(c, node, 0);
}

static mengine_status q_add_eval(const mengine *e, const mnode *n)
{
    const mtensor *a = in_rec(e, n, 0), *b = in_rec(e, n, 1), *out = &e->tensors[n->output];
    const mengine_k_dims ad = dims4q(a), bd = dims4q(b), od = dims4q(out);
    if (e->requant == MENGINE_REQUANT_FP32)
        return mengine_kq_add_s8_xnn(&n->p.q8, &ad, I8(a->cdata), &bd, I8(b->cdata), &od,
                                     O8(out->data));
    return mengine_kq_add_s8(&n->p.q8, &ad, I8(a->cdata), &bd, I8(b->cdata), &od, O8(out->data));
}

static mengine_status q_mul_eval(const mengine *e, const mnode *n)
{
    const mtensor *a = in_rec(e, n, 0), *b = in_rec(e, n, 1), *out = &e->tensors[n->output];
    const mengine_k_dims ad = dims4q(a), bd = dims4q(b), od = dims4q(out);
    if (e->requant == MENGINE_REQUANT_FP32)
        return mengine_kq_mul_s8_xnn(&n->p.q8, &ad, I8(a->cdata), &bd, I8(b->cdata), &od,
                                     O8(out->data));
    return mengine_kq_mul_s8(&n->p.q8, &ad, I8(a->cdata), &bd, I8(b->cdata), &od, O8(out->data));
}

/* ---- PAD, RESHAPE ---- */

static mengine_status q_pad_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_opf_pad_prepare(c, node);
    int32_t before[4];
    memcpy(before, node->p.pad.before, sizeof before);
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st == MENGINE_OK)
        st = q_same(c, &in, &out);
    if (st != MENGINE_OK)
        return st;
    memset(&node->p.q8, 0, sizeof node->p.q8);
    memcpy(node->p.q8.before, before, sizeof before);
    node->p.q8.out_zp = out.zero_point;
    return MENGINE_OK;
}

static mengine_status q_pad_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *out = &e->tensors[n->output];
    const mengine_k_dims id = dims4q(in), od = dims4q(out);
    return mengine_kq_pad_s8(&id, I8(in->cdata), n->p.q8.before, &od, O8(out->data),
                             (int8_t)n->p.q8.out_zp);
}

static mengine_status q_reshape_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_opf_reshape_prepare(c, node);
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st == MENGINE_OK && in.type != MENGINE_INT8)
        return mengine_op_fail(c, MENGINE_ERR_TYPE, "input (tensor %u '%s') is not INT8", in.index,
                               in.name);
    return st == MENGINE_OK ? q_same(c, &in, &out) : st;
}

static mengine_status q_reshape_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *out = &e->tensors[n->output];
    if ((const void *)out->data != (const void *)in->cdata)
        memmove(out->data, in->cdata, (size_t)in->count);
    return MENGINE_OK;
}

/* ---- MEAN over H and W, or over C ---- */

static mengine_status q_mean_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_opf_mean_prepare(c, node);
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    const int32_t axis = node->p.misc.axis; /* 0: over H and W, 3: over C */
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    q.multiplier = axis; /* kept for eval (unused otherwise by MEAN) */
    q.in_zp = in.zero_point;
    q.out_zp = out.zero_point;
    mengine_kq_quantize_multiplier((double)in.scale / (double)out.scale, &q.mult, &q.shift);
    q.in_scale = in.scale; /* fp32 requantization */
    q.out_scale = out.scale;
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_mean_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *out = &e->tensors[n->output];
    const mengine_k_dims id = dims4q(in);
    if (n->p.q8.multiplier == 3) /* over the channels (kernels_q8_stereo.c) */
        return mengine_kq_mean_c_s8(&n->p.q8, out->count, id.c, I8(in->cdata), O8(out->data));
    if (e->requant == MENGINE_REQUANT_FP32)
        return mengine_kq_mean_hw_s8_fp32(&n->p.q8, &id, I8(in->cdata), O8(out->data));
    return mengine_kq_mean_hw_s8(&n->p.q8, &id, I8(in->cdata), O8(out->data));
}

/* ---- HARD_SWISH ---- */

static mengine_status q_hswish_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_opf_unary_prepare(c, node);
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
    if (!mengine_kq_hard_swish_params(in.scale, out.scale, &q))
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "output scale below input_scale / 128 (TFLite refuses it)");
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_hswish_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *out = &e->tensors[n->output];
    return mengine_kq_hard_swish_s8(&n->p.q8, I8(in->cdata), O8(out->data), in->count);
}

/* ---- SOFTMAX ---- */

static mengine_status q_softmax_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = mengine_opf_softmax_prepare(c, node);
    const float beta = node->p.misc.value;
    if (st == MENGINE_OK)
        st = q_in(c, 0, &in);
    if (st == MENGINE_OK)
        st = q_out(c, &out);
    if (st != MENGINE_OK)
        return st;
    const float d = out.scale - 1.0f / 256.0f;
    if (out.zero_point != -128 || d > 0.001f / 256.0f || d < -0.001f / 256.0f)
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "output (tensor %u '%s') must have scale 1/256 and zero_point "
                               "-128 (TFLite's int8 SOFTMAX)",
                               out.index, out.name);
    mengine_kq_params q;
    memset(&q, 0, sizeof q);
    q.in_zp = in.zero_point;
    q.in_scale = in.scale;
    q.beta = beta;
    node->p.q8 = q;
    return MENGINE_OK;
}

static mengine_status q_softmax_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = in_rec(e, n, 0), *out = &e->tensors[n->output];
    const size_t cols = (size_t)in->dims[in->rank - 1];
    return mengine_kq_softmax_s8(&n->p.q8, in->count / cols, cols, I8(in->cdata), O8(out->data));
}

/* ---- registrations ---- */

const mengine_op mengine_op_conv_2d_int8 = {
    MENGINE_OP_CONV_2D | MOP_INT8, 6, 1, MOP_SHARE_NONE, q_conv_prepare, q_conv_eval};
const mengine_op mengine_op_depthwise_conv_2d_int8 = {
    MENGINE_OP_DEPTHWISE_CONV_2D | MOP_INT8, 6, 2, MOP_SHARE_NONE, q_dw_prepare, q_dw_eval};
const mengine_op mengine_op_fully_connected_int8 = {
    MENGINE_OP_FULLY_CONNECTED | MOP_INT8, 9, 8, MOP_SHARE_NONE, q_fc_prepare, q_fc_eval};
const mengine_op mengine_op_add_int8 = {
    MENGINE_OP_ADD | MOP_INT8, 4, 11, MOP_SHARE_INPLACE, q_add_prepare, q_add_eval};
const mengine_op mengine_op_mul_int8 = {
    MENGINE_OP_MUL | MOP_INT8, 4, 21, MOP_SHARE_INPLACE, q_mul_prepare, q_mul_eval};
const mengine_op mengine_op_pad_int8 = {
    MENGINE_OP_PAD | MOP_INT8, 2, 22, MOP_SHARE_NONE, q_pad_prepare, q_pad_eval};
const mengine_op mengine_op_reshape_int8 = {
    MENGINE_OP_RESHAPE | MOP_INT8, 1, 17, MOP_SHARE_ALIAS, q_reshape_prepare, q_reshape_eval};
const mengine_op mengine_op_mean_int8 = {
    MENGINE_OP_MEAN | MOP_INT8, 3, 27, MOP_SHARE_NONE, q_mean_prepare, q_mean_eval};
const mengine_op mengine_op_hard_swish_int8 = {
    MENGINE_OP_HARD_SWISH | MOP_INT8, 1, 91, MOP_SHARE_INPLACE, q_hswish_prepare, q_hswish_eval};
const mengine_op mengine_op_softmax_int8 = {
    MENGINE_OP_SOFTMAX | MOP_INT8, 3, 9, MOP_SHARE_NONE, q_softmax_prepare, q_softmax_eval};
