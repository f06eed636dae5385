/* Operator registrations: {prepare, eval} per builtin, TFLM style, and their
 * set-up.
 *
 * prepare checks the operator against the model (inputs present, types,
 * ranks, shapes, options) and fills the node's parameters and scratch size;
 * the verifier runs it as a dry run, mengine_arena_size() for the scratch
 * sizes, mengine_prepare() keeps the node. eval runs the kernel on the tensor
 * records and never allocates. Shapes are checked exactly as TFLite infers
 * them, so eval can trust them. Each registration is its own object, so that
 * a build linked with section garbage collection keeps only the operators its
 * tables name. */
#include <float.h>
#include <stdarg.h>
#include <string.h>

#include "engine/ops_impl.h"

#define MAX_STRIDE 65536 /* keeps index arithmetic in 32 bits */

enum padding { PAD_SAME = 0, PAD_VALID = 1 };

/* ---- prepare helpers ---- */

/* Input @p i, or *present = 0 when missing or -1. */
static mengine_status opt_input(const mop_ctx *c, uint32_t i, mtensor_info *ti, int *present)
{
    *present = 0;
    if (i >= c->inputs.n || fb_vec_i32(c->r, &c->inputs, i) < 0)
        return MENGINE_OK;
    *present = 1;
    return mengine_model_tensor(c->r, c->m, (uint32_t)fb_vec_i32(c->r, &c->inputs, i), ti);
}

/* Input @p i, which must be present. */
static mengine_status need_input(const mop_ctx *c, uint32_t i, mtensor_info *ti, const char *what)
{
    int present;
    mengine_status st = opt_input(c, i, ti, &present);
    if (st == MENGINE_OK && !present)
        return mengine_op_fail(c, MENGINE_ERR_GRAPH, "input %u (%s) is missing", i, what);
    return st;
}

/* Input @p i (@p ti) must be FLOAT32; for an int8 registration (ops_q8.c, which runs
 * these checks too) INT8, and INT32 for the bias (input 2) of CONV_2D,
 * DEPTHWISE_CONV_2D and FULLY_CONNECTED. */
static mengine_status need_float(const mop_ctx *c, uint32_t i, const mtensor_info *ti,
                                 const char *what)
{
    const int q8 = c->reg && (c->reg->builtin & MOP_INT8);
    const int bias = q8 && ((i == 2 && (c->builtin == MENGINE_OP_CONV_2D ||
                                        c->builtin == MENGINE_OP_DEPTHWISE_CONV_2D ||
                                        c->builtin == MENGINE_OP_FULLY_CONNECTED)) ||
                            (i == 3 && c->builtin == MENGINE_OP_TRANSPOSE_CONV));
    const int want = bias ? MENGINE_INT32 : q8 ? MENGINE_INT8 : MENGINE_FLOAT32;
    if (ti->type != want)
        return mengine_op_fail(c, MENGINE_ERR_TYPE, "input %u (%s, tensor %u '%s') is not %s", i,
                               what, ti->index, ti->name,
                               bias ? "INT32"
                               : q8 ? "INT8"
                                    : "FLOAT32");
    return MENGINE_OK;
}

/* Input @p i, which must be present and FLOAT32. */
static mengine_status float_input(const mop_ctx *c, uint32_t i, mtensor_info *ti, const char *what)
{
    mengine_status st = need_input(c, i, ti, what);
    return st == MENGINE_OK ? need_float(c, i, ti, what) : st;
}

/* Optional FLOAT32 input @p i. */
static mengine_status opt_float_input(const mop_ctx *c, uint32_t i, mtensor_info *ti, int *present,
                                      const char *what)
{
    mengine_status st = opt_input(c, i, ti, present);
    return st == MENGINE_OK && *present ? need_float(c, i, ti, what) : st;
}

/* The bias of a convolution: TFLite refuses float CONV_2D without one and
 * crashes on DEPTHWISE_CONV_2D without one, so a model that omits it is not
 * portable and is rejected here too. */
static mengine_status conv_bias(const mop_ctx *c, mtensor_info *b)
{
    int present;
    mengine_status st = opt_input(c, 2, b, &present);
    if (st == MENGINE_OK && !present)
        return mengine_op_fail(
            c, MENGINE_ERR_GRAPH,
            "input 2 (bias) is missing: TFLite requires it for float convolutions");
    return st == MENGINE_OK ? need_float(c, 2, b, "bias") : st;
}

/* Constant INT32 vector input @p i (shape, axis). */
static mengine_status int_input(const mop_ctx *c, uint32_t i, mtensor_info *ti, const char *what)
{
    mengine_status st = need_input(c, i, ti, what);
    if (st == MENGINE_OK && (ti->type != MENGINE_INT32 || !ti->data || ti->rank > 1))
        return mengine_op_fail(c, MENGINE_ERR_TYPE,
                               "input %u (%s, tensor %u '%s') must be a constant INT32 vector", i,
                               what, ti->index, ti->name);
    return st;
}

static int32_t int_at(const mtensor_info *ti, uint32_t i) { return rd_i32(ti->data + 4 * i); }

/* The output (checked FLOAT32 activation by the verifier). */
static mengine_status output(const mop_ctx *c, mtensor_info *ti)
{
    return mengine_model_tensor(c->r, c->m, (uint32_t)fb_vec_i32(c->r, &c->outputs, 0), ti);
}

static mengine_status need_rank(const mop_ctx *c, const mtensor_info *ti, uint32_t rank,
                                const char *what)
{
    if (ti->rank != rank)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "%s (tensor %u '%s') has rank %u, expected %u",
                               what, ti->index, ti->name, ti->rank, rank);
    return MENGINE_OK;
}

/* "[1, 2, 3]" into @p buf (for messages). */
static const char *dims_str(const int32_t *dims, uint32_t rank, char *buf, size_t cap)
{
    mdiag d = {buf, cap};
    switch (rank) {
    case 0: mengine_diag_fail(&d, MENGINE_OK, "[]"); break;
    case 1: mengine_diag_fail(&d, MENGINE_OK, "[%d]", dims[0]); break;
    case 2: mengine_diag_fail(&d, MENGINE_OK, "[%d, %d]", dims[0], dims[1]); break;
    case 3: mengine_diag_fail(&d, MENGINE_OK, "[%d, %d, %d]", dims[0], dims[1], dims[2]); break;
    default:
        mengine_diag_fail(&d, MENGINE_OK, "[%d, %d, %d, %d]", dims[0], dims[1], dims[2], dims[3]);
        break;
    }
    return buf;
}

/* The output must have exactly @p dims. */
static mengine_status need_shape(const mop_ctx *c, const mtensor_info *out, const int32_t *dims,
                                 uint32_t rank)
{
    int same = out->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++)
        same = out->dims[i] == dims[i];
    if (!same) {
        char got[64], want[64];
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "output (tensor %u '%s') has shape %s, expected %s", out->index,
                               out->name, dims_str(out->dims, out->rank, got, sizeof got),
                               dims_str(dims, rank, want, sizeof want));
    }
    return MENGINE_OK;
}

/* The options table, checked to be of the operator's union type (*present = 0 if absent). */
static mengine_status options(const mop_ctx *c, int8_t type, fb_table *t, int *present)
{
    uint8_t got;
    mengine_status st = mengine_fb_u8(c->r, &c->op, OP_OPTIONS_TYPE, 0, &got);
    *present = 0;
    if (st != MENGINE_OK)
        return st;
    if (got == 0)
        return MENGINE_OK;
    if (got != (uint8_t)type)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "options of union type %u, expected %d",
                               (unsigned)got, (int)type);
    return mengine_fb_sub_table(c->r, &c->op, OP_OPTIONS, t, present);
}

/* Options that the operator cannot run without. */
static mengine_status need_options(const mop_ctx *c, int8_t type, fb_table *t)
{
    int present;
    mengine_status st = options(c, type, t, &present);
    if (st == MENGINE_OK && !present)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "builtin options missing");
    return st;
}

static mengine_status read_act(const mop_ctx *c, const fb_table *t, int present, unsigned id,
                               mengine_k_act *act)
{
    int8_t v = 0;
    mengine_status st = present ? mengine_fb_i8(c->r, t, id, 0, &v) : MENGINE_OK;
    if (st != MENGINE_OK)
        return st;
    if (v < MK_ACT_NONE || v > MK_ACT_RELU6)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS,
                               "fused activation %d unsupported (NONE, RELU, RELU_N1_TO_1, RELU6)",
                               v);
    *act = (mengine_k_act)v;
    return MENGINE_OK;
}

/* padding (field @p id), stride_w and stride_h (the two fields after it). */
static mengine_status read_window(const mop_ctx *c, const fb_table *t, unsigned id,
                                  enum padding *pad, int32_t *sh, int32_t *sw)
{
    int8_t p;
    mengine_status st = mengine_fb_i8(c->r, t, id, 0, &p);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, t, id + 1, 0, sw);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, t, id + 2, 0, sh);
    if (st != MENGINE_OK)
        return st;
    if (p != PAD_SAME && p != PAD_VALID)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "padding %d (SAME 0 or VALID 1)", p);
    if (*sh < 1 || *sw < 1 || *sh > MAX_STRIDE || *sw > MAX_STRIDE)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "strides %d x %d out of range (1 to %d)",
                               *sh, *sw, MAX_STRIDE);
    *pad = (enum padding)p;
    return MENGINE_OK;
}

static mengine_status no_dilation(const mop_ctx *c, const fb_table *t, unsigned id)
{
    int32_t dw, dh;
    mengine_status st = mengine_fb_i32(c->r, t, id, 1, &dw);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, t, id + 1, 1, &dh);
    if (st == MENGINE_OK && (dw != 1 || dh != 1))
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "dilation %d x %d unsupported (1 only)", dh,
                               dw);
    return st;
}

/* Output size of a window of @p k with stride @p s over @p in, as TFLite computes it. */
static int32_t window_out(int32_t in, int32_t k, int32_t s, enum padding pad)
{
    int64_t out = pad == PAD_SAME ? ((int64_t)in + s - 1) / s : ((int64_t)in - k + s) / s;
    return (int32_t)out;
}

/* Padding before: half the total, the odd one after. */
static int32_t pad_before(int32_t in, int32_t k, int32_t s, int32_t out)
{
    int64_t total = ((int64_t)out - 1) * s + k - in;
    return total > 0 ? (int32_t)(total / 2) : 0;
}

static int finite_float(float v) { return v >= -FLT_MAX && v <= FLT_MAX; }

/* ---- eval helpers ---- */

static const mtensor *out_rec(const mengine *e, const mnode *n) { return &e->tensors[n->output]; }

/* 4-D view of a record, dims right-aligned (a [B, C] tensor is (1, 1, B, C)). */
static mengine_k_dims dims4(const mtensor *t)
{
    if (t->rank == 4) { /* the common case, at every eval */
        const mengine_k_dims r4 = {t->dims[0], t->dims[1], t->dims[2], t->dims[3]};
        return r4;
    }
    int32_t d[4] = {1, 1, 1, 1};
    for (uint32_t i = 0; i < t->rank; i++)
        d[4 - t->rank + i] = t->dims[i];
    mengine_k_dims r = {d[0], d[1], d[2], d[3]};
    return r;
}

static const float *opt_data(const mtensor *t) { return t ? t->cdata : NULL; }

/* ---- CONV_2D ---- */

/* The input, filter, bias and output of CONV_2D and DEPTHWISE_CONV_2D: FLOAT32,
 * the bias present, ranks 4, 4 and 1. */
static mengine_status conv_tensors(const mop_ctx *c, mtensor_info *in, mtensor_info *f,
                                   mtensor_info *b, mtensor_info *out)
{
    mengine_status st = float_input(c, 0, in, "input");
    if (st == MENGINE_OK)
        st = float_input(c, 1, f, "filter");
    if (st == MENGINE_OK)
        st = conv_bias(c, b);
    if (st == MENGINE_OK)
        st = output(c, out);
    if (st == MENGINE_OK)
        st = need_rank(c, in, 4, "input");
    if (st == MENGINE_OK)
        st = need_rank(c, f, 4, "filter");
    if (st == MENGINE_OK)
        st = need_rank(c, b, 1, "bias");
    return st;
}

static mengine_status conv_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, f, b, out;
    fb_table o;
    enum padding pad;
    mengine_k_conv_params *p = &node->p.conv;
    mengine_status st = conv_tensors(c, &in, &f, &b, &out);
    if (st == MENGINE_OK)
        st = need_options(c, 1, &o);
    if (st == MENGINE_OK)
        st = read_window(c, &o, 0, &pad, &p->stride_h, &p->stride_w);
    if (st == MENGINE_OK)
        st = read_act(c, &o, 1, 3, &p->act);
    if (st == MENGINE_OK)
        st = no_dilation(c, &o, 4);
    if (st != MENGINE_OK)
        return st;
    if (f.dims[3] != in.dims[3])
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "filter has %d input channels, the input has %d", f.dims[3],
                               in.dims[3]);
    if (b.dims[0] != f.dims[0])
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "bias has %d values for %d output channels",
                               b.dims[0], f.dims[0]);
    const int32_t oh = window_out(in.dims[1], f.dims[1], p->stride_h, pad);
    const int32_t ow = window_out(in.dims[2], f.dims[2], p->stride_w, pad);
    if (oh < 1 || ow < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "filter %dx%d larger than the input %dx%d (VALID)", f.dims[1],
                               f.dims[2], in.dims[1], in.dims[2]);
    const int32_t want[4] = {in.dims[0], oh, ow, f.dims[0]};
    st = need_shape(c, &out, want, 4);
    if (st != MENGINE_OK)
        return st;
    p->pad_h = pad_before(in.dims[1], f.dims[1], p->stride_h, oh);
    p->pad_w = pad_before(in.dims[2], f.dims[2], p->stride_w, ow);
    const mengine_k_dims fd = {f.dims[0], f.dims[1], f.dims[2], f.dims[3]};
    const size_t scratch = mengine_k_conv2d_get_buffer_size_f32(&fd);
    if (scratch > 0x7fffffffu)
        return mengine_op_fail(c, MENGINE_ERR_LIMIT, "weight panel of %zu bytes (limit 2 GiB)",
                               scratch);
    node->scratch_bytes = (uint32_t)scratch;
    return MENGINE_OK;
}

static mengine_status conv_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *f = node_input(e, n, 1);
    const mtensor *b = node_input(e, n, 2), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in), fd = dims4(f), od = dims4(out);
    if (fd.h == 1 && fd.w == 1)
        return mengine_k_conv2d_1x1_f32(&n->p.conv, &id, in->cdata, &fd, f->cdata, b->cdata, &od,
                                        out->data, n->scratch);
    return mengine_k_conv2d_f32(&n->p.conv, &id, in->cdata, &fd, f->cdata, b->cdata, &od, out->data,
                                n->scratch);
}

/* ---- DEPTHWISE_CONV_2D ---- */

static mengine_status dw_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, f, b, out;
    fb_table o;
    int32_t dm;
    enum padding pad;
    mengine_k_dw_params *p = &node->p.dw;
    mengine_status st = conv_tensors(c, &in, &f, &b, &out);
    if (st == MENGINE_OK)
        st = need_options(c, 2, &o);
    if (st == MENGINE_OK)
        st = read_window(c, &o, 0, &pad, &p->stride_h, &p->stride_w);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, &o, 3, 0, &dm);
    if (st == MENGINE_OK)
        st = read_act(c, &o, 1, 4, &p->act);
    if (st == MENGINE_OK)
        st = no_dilation(c, &o, 5);
    if (st != MENGINE_OK)
        return st;
    const int32_t cin = in.dims[3], cout = f.dims[3];
    if (f.dims[0] != 1 || cout % cin != 0)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "filter [%d, %d, %d, %d] is not [1, KH, KW, M x %d input channels]",
                               f.dims[0], f.dims[1], f.dims[2], f.dims[3], cin);
    p->multiplier = cout / cin;
    if (dm != 0 && dm != p->multiplier)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "depth_multiplier %d, the shapes give %d",
                               dm, p->multiplier);
    if (b.dims[0] != cout)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "bias has %d values for %d output channels",
                               b.dims[0], cout);
    const int32_t oh = window_out(in.dims[1], f.dims[1], p->stride_h, pad);
    const int32_t ow = window_out(in.dims[2], f.dims[2], p->stride_w, pad);
    if (oh < 1 || ow < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "filter %dx%d larger than the input %dx%d (VALID)", f.dims[1],
                               f.dims[2], in.dims[1], in.dims[2]);
    const int32_t want[4] = {in.dims[0], oh, ow, cout};
    st = need_shape(c, &out, want, 4);
    p->pad_h = pad_before(in.dims[1], f.dims[1], p->stride_h, oh);
    p->pad_w = pad_before(in.dims[2], f.dims[2], p->stride_w, ow);
    return st;
}

static mengine_status dw_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *f = node_input(e, n, 1);
    const mtensor *b = node_input(e, n, 2), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in), fd = dims4(f), od = dims4(out);
    if (mengine_k_depthwise_conv_fast_ok(&n->p.dw, &fd))
        return mengine_k_depthwise_conv_fast_f32(&n->p.dw, &id, in->cdata, &fd, f->cdata, b->cdata,
                                                 &od, out->data);
    return mengine_k_depthwise_conv_f32(&n->p.dw, &id, in->cdata, &fd, f->cdata, b->cdata, &od,
                                        out->data);
}

/* ---- TRANSPOSE_CONV: inputs (output_shape, weights, input, bias?) ---- */

static mengine_status tconv_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info shape, f, in, b, out;
    fb_table o;
    int has_b;
    enum padding pad;
    mengine_k_conv_params *p = &node->p.conv;
    mengine_status st = int_input(c, 0, &shape, "output shape");
    if (st == MENGINE_OK)
        st = float_input(c, 1, &f, "filter");
    if (st == MENGINE_OK)
        st = float_input(c, 2, &in, "input");
    if (st == MENGINE_OK)
        st = opt_float_input(c, 3, &b, &has_b, "bias");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = need_rank(c, &in, 4, "input");
    if (st == MENGINE_OK)
        st = need_rank(c, &f, 4, "filter");
    if (st == MENGINE_OK && has_b)
        st = need_rank(c, &b, 1, "bias");
    if (st == MENGINE_OK)
        st = need_options(c, 49, &o);
    if (st == MENGINE_OK)
        st = read_window(c, &o, 0, &pad, &p->stride_h, &p->stride_w);
    if (st == MENGINE_OK)
        st = read_act(c, &o, 1, 3, &p->act);
    if (st != MENGINE_OK)
        return st;
    if (shape.count != 4)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "output shape has %u values, expected 4",
                               shape.count);
    const int32_t want[4] = {int_at(&shape, 0), int_at(&shape, 1), int_at(&shape, 2),
                             int_at(&shape, 3)};
    st = need_shape(c, &out, want, 4);
    if (st != MENGINE_OK)
        return st;
    if (f.dims[3] != in.dims[3] || f.dims[0] != out.dims[3] || out.dims[0] != in.dims[0])
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "filter [%d, %d, %d, %d] does not map %d to %d channels", f.dims[0],
                               f.dims[1], f.dims[2], f.dims[3], in.dims[3], out.dims[3]);
    if (has_b && b.dims[0] != f.dims[0])
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "bias has %d values for %d output channels",
                               b.dims[0], f.dims[0]);
    /* The input must be what a convolution with these parameters makes of the output. */
    const int32_t ih = window_out(out.dims[1], f.dims[1], p->stride_h, pad);
    const int32_t iw = window_out(out.dims[2], f.dims[2], p->stride_w, pad);
    if (ih != in.dims[1] || iw != in.dims[2])
        return mengine_op_fail(
            c, MENGINE_ERR_SHAPE,
            "input is %dx%d, a %dx%d output with these strides and padding needs %dx%d", in.dims[1],
            in.dims[2], out.dims[1], out.dims[2], ih, iw);
    p->pad_h = pad_before(out.dims[1], f.dims[1], p->stride_h, ih);
    p->pad_w = pad_before(out.dims[2], f.dims[2], p->stride_w, iw);
    const mengine_k_dims fd = {f.dims[0], f.dims[1], f.dims[2], f.dims[3]};
    const size_t scratch =
        mengine_k_transpose_conv_get_buffer_size_f32(&fd, p->stride_h, p->stride_w);
    if (scratch > 0x7fffffffu)
        return mengine_op_fail(c, MENGINE_ERR_LIMIT, "weight panel of %zu bytes (limit 2 GiB)",
                               scratch);
    node->scratch_bytes = (uint32_t)scratch;
    return MENGINE_OK;
}

static mengine_status tconv_eval(const mengine *e, const mnode *n)
{
    const mtensor *f = node_input(e, n, 1), *in = node_input(e, n, 2);
    const mtensor *b = n->n_inputs > 3 ? node_input(e, n, 3) : NULL, *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in), fd = dims4(f), od = dims4(out);
    return mengine_k_transpose_conv_f32(&n->p.conv, &id, in->cdata, &fd, f->cdata, opt_data(b), &od,
                                        out->data, n->scratch);
}

/* ---- AVERAGE_POOL_2D ---- */

static mengine_status pool_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    fb_table o;
    enum padding pad;
    mengine_k_pool_params *p = &node->p.pool;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = need_rank(c, &in, 4, "input");
    if (st == MENGINE_OK)
        st = need_options(c, 5, &o);
    if (st == MENGINE_OK)
        st = read_window(c, &o, 0, &pad, &p->stride_h, &p->stride_w);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, &o, 3, 0, &p->filter_w);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, &o, 4, 0, &p->filter_h);
    if (st == MENGINE_OK)
        st = read_act(c, &o, 1, 5, &p->act);
    if (st != MENGINE_OK)
        return st;
    if (p->filter_h < 1 || p->filter_w < 1 || p->filter_h > MAX_STRIDE || p->filter_w > MAX_STRIDE)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "filter %d x %d out of range (1 to %d)",
                               p->filter_h, p->filter_w, MAX_STRIDE);
    const int32_t oh = window_out(in.dims[1], p->filter_h, p->stride_h, pad);
    const int32_t ow = window_out(in.dims[2], p->filter_w, p->stride_w, pad);
    if (oh < 1 || ow < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "filter %dx%d larger than the input %dx%d (VALID)", p->filter_h,
                               p->filter_w, in.dims[1], in.dims[2]);
    const int32_t want[4] = {in.dims[0], oh, ow, in.dims[3]};
    p->pad_h = pad_before(in.dims[1], p->filter_h, p->stride_h, oh);
    p->pad_w = pad_before(in.dims[2], p->filter_w, p->stride_w, ow);
    return need_shape(c, &out, want, 4);
}

static mengine_status pool_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in), od = dims4(out);
    return mengine_k_avg_pool_f32(&n->p.pool, &id, in->cdata, &od, out->data);
}

/* ---- MEAN over H and W, or over C: inputs (data, axis) ---- */

static mengine_status mean_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, axis, out;
    fb_table o;
    int has_o;
    uint8_t keep = 0;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = int_input(c, 1, &axis, "axis");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = need_rank(c, &in, 4, "input");
    if (st == MENGINE_OK)
        st = options(c, 27, &o, &has_o);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_u8(c->r, &o, 0, 0, &keep);
    if (st != MENGINE_OK)
        return st;
    int mask = 0;
    for (uint32_t i = 0; i < axis.count; i++) {
        int32_t a = int_at(&axis, i);
        a = a < 0 ? a + 4 : a;
        mask |= a >= 0 && a < 4 ? 1 << a : 16;
    }
    if (axis.count == 1 && mask == 8) { /* over the channels: (N, H, W, 1) or (N, H, W) */
        const int32_t want[4] = {in.dims[0], in.dims[1], in.dims[2], 1};
        node->p.misc.axis = 3;
        return need_shape(c, &out, want, keep ? 4 : 3);
    }
    if (axis.count != 2 || mask != 6)
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED,
                               "only the mean over axes {1, 2} (H, W) or {3} (C) is supported");
    const int32_t keep_dims[4] = {in.dims[0], 1, 1, in.dims[3]};
    const int32_t flat[2] = {in.dims[0], in.dims[3]};
    node->p.misc.axis = 0;
    return keep ? need_shape(c, &out, keep_dims, 4) : need_shape(c, &out, flat, 2);
}

static mengine_status mean_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in);
    if (n->p.misc.axis == 3)
        return mengine_k_mean_c_f32(out->count, (size_t)id.c, in->cdata, out->data);
    return mengine_k_mean_hw_f32(&id, in->cdata, out->data);
}

/* ---- SLICE: inputs (data, begin, size); STRIDED_SLICE: (data, begin, end, strides) ---- */

#define MAX_SLICE_STRIDE 32767 /* kept in 16 bits in the node */

/* A constant INT32 vector input of one value per dim of @p in. */
static mengine_status per_dim_input(const mop_ctx *c, uint32_t i, const mtensor_info *in,
                                    mtensor_info *ti, const char *what)
{
    mengine_status st = int_input(c, i, ti, what);
    if (st == MENGINE_OK && ti->count != in->rank)
        return mengine_op_fail(
            c, MENGINE_ERR_SHAPE,
            "input %u (%s, tensor %u '%s') has %u values for an input of rank %u", i, what,
            ti->index, ti->name, ti->count, in->rank);
    return st;
}

/* The slice's parameters, right-aligned to 4 dims (leading dims: begin 0, stride 1). */
static void slice_params(mnode *node, uint32_t rank, const int32_t *begin, const int32_t *stride)
{
    for (uint32_t i = 0; i < 4; i++) {
        const int k = (int)i - (int)(4 - rank);
        node->p.slice.begin[i] = k >= 0 ? begin[k] : 0;
        node->p.slice.stride[i] = (int16_t)(k >= 0 ? stride[k] : 1);
    }
}

static mengine_status slice_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, begin, size, out;
    fb_table o;
    int has_o;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = per_dim_input(c, 1, &in, &begin, "begin");
    if (st == MENGINE_OK)
        st = per_dim_input(c, 2, &in, &size, "size");
    if (st == MENGINE_OK)
        st = options(c, 48, &o, &has_o);
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st != MENGINE_OK)
        return st;
    if (in.rank < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "input (tensor %u '%s') is a scalar", in.index,
                               in.name);
    int32_t b[MENGINE_MAX_DIMS], want[MENGINE_MAX_DIMS];
    const int32_t ones[MENGINE_MAX_DIMS] = {1, 1, 1, 1};
    for (uint32_t i = 0; i < in.rank; i++) {
        b[i] = int_at(&begin, i);
        const int32_t n = int_at(&size, i);
        if (b[i] < 0 || b[i] >= in.dims[i])
            return mengine_op_fail(c, MENGINE_ERR_SHAPE, "begin[%u] = %d lies outside dim %u (%d)",
                                   i, b[i], i, in.dims[i]);
        want[i] = n == -1 ? in.dims[i] - b[i] : n;
        if (want[i] < 1)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE, "size[%u] = %d (at least 1, or -1)", i, n);
        if (want[i] > in.dims[i] - b[i])
            return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                                   "begin[%u] + size[%u] = %d runs past dim %u of the input (%d)",
                                   i, i, (int)((int64_t)b[i] + want[i]), i, in.dims[i]);
    }
    slice_params(node, in.rank, b, ones);
    return need_shape(c, &out, want, in.rank);
}

static mengine_status strided_slice_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, begin, end, strides, out;
    fb_table o;
    int has_o;
    int32_t mask[5] = {0, 0, 0, 0, 0}; /* begin, end, ellipsis, new_axis, shrink_axis */
    uint8_t offset = 0;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = per_dim_input(c, 1, &in, &begin, "begin");
    if (st == MENGINE_OK)
        st = per_dim_input(c, 2, &in, &end, "end");
    if (st == MENGINE_OK)
        st = per_dim_input(c, 3, &in, &strides, "strides");
    if (st == MENGINE_OK)
        st = options(c, 32, &o, &has_o);
    for (unsigned k = 0; k < 5 && st == MENGINE_OK && has_o; k++)
        st = mengine_fb_i32(c->r, &o, k, 0, &mask[k]);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_u8(c->r, &o, 5, 0, &offset);
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st != MENGINE_OK)
        return st;
    if (in.rank < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "input (tensor %u '%s') is a scalar", in.index,
                               in.name);
    if (mask[2] || mask[3] || offset)
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED,
                               "ellipsis_mask, new_axis_mask and offset are not supported");
    int32_t b[MENGINE_MAX_DIMS], s[MENGINE_MAX_DIMS], want[MENGINE_MAX_DIMS];
    uint32_t rank = 0;
    for (uint32_t i = 0; i < in.rank; i++) {
        const int32_t d = in.dims[i];
        s[i] = int_at(&strides, i);
        if (s[i] < 1 || s[i] > MAX_SLICE_STRIDE)
            return mengine_op_fail(c, s[i] < 0 ? MENGINE_ERR_UNSUPPORTED : MENGINE_ERR_OPTIONS,
                                   "strides[%u] = %d (1 to %d supported)", i, s[i],
                                   MAX_SLICE_STRIDE);
        int64_t bi = mask[0] >> i & 1 ? 0 : int_at(&begin, i);
        int64_t ei = mask[1] >> i & 1 ? d : int_at(&end, i);
        bi += bi < 0 ? d : 0;
        if (bi < 0 || bi >= d)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE, "begin[%u] = %d lies outside dim %u (%d)",
                                   i, int_at(&begin, i), i, d);
        if (mask[4] >> i & 1)
            ei = bi + 1; /* shrink_axis: the one index begin, the dim dropped */
        ei += ei < 0 ? d : 0;
        if (ei > d)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                                   "end[%u] = %d runs past dim %u of the input (%d)", i,
                                   int_at(&end, i), i, d);
        if (ei <= bi)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                                   "end[%u] = %d is not after begin[%u] = %d: an empty slice", i,
                                   int_at(&end, i), i, int_at(&begin, i));
        b[i] = (int32_t)bi;
        if (mask[4] >> i & 1)
            s[i] = 0; /* one index: the node marks the axis with stride 0 */
        else
            want[rank++] = (int32_t)((ei - bi + s[i] - 1) / s[i]);
    }
    if (rank == 0)
        return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED, "every axis shrunk: a scalar output");
    slice_params(node, in.rank, b, s);
    return need_shape(c, &out, want, rank);
}

static mengine_status slice_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in);
    /* The output's 4-D extent: leading and shrunk axes (stride 0) take one index,
     * the others the output's dims in order. */
    int32_t stride[4], odim[4];
    uint32_t j = 0;
    for (int i = 0; i < 4; i++) {
        const int lead = i < 4 - (int)in->rank, shrunk = n->p.slice.stride[i] == 0;
        stride[i] = shrunk ? 1 : n->p.slice.stride[i];
        odim[i] = lead || shrunk || j >= out->rank ? 1 : out->dims[j++];
    }
    const mengine_k_dims od = {odim[0], odim[1], odim[2], odim[3]};
    return mengine_k_slice_f32(&id, in->cdata, n->p.slice.begin, stride, &od, out->data);
}

/* ---- RESIZE_BILINEAR: inputs (data (N, H, W, C), size INT32 [2]) ---- */

enum { RESIZE_ALIGN_CORNERS = 1, RESIZE_HALF_PIXEL = 2 };

static mengine_status resize_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, size, out;
    fb_table o;
    int has_o;
    uint8_t align = 0, half = 0;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = int_input(c, 1, &size, "size");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = need_rank(c, &in, 4, "input");
    if (st == MENGINE_OK)
        st = options(c, 15, &o, &has_o);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_u8(c->r, &o, 2, 0, &align);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_u8(c->r, &o, 3, 0, &half);
    if (st != MENGINE_OK)
        return st;
    if (align && half)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS,
                               "align_corners and half_pixel_centers are both set");
    if (size.count != 2)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "size (tensor %u) has %u values, expected 2",
                               size.index, size.count);
    const int32_t want[4] = {in.dims[0], int_at(&size, 0), int_at(&size, 1), in.dims[3]};
    if (want[1] < 1 || want[2] < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "size [%d, %d] is not positive", want[1],
                               want[2]);
    node->p.misc.axis = (align ? RESIZE_ALIGN_CORNERS : 0) | (half ? RESIZE_HALF_PIXEL : 0);
    return need_shape(c, &out, want, 4);
}

static mengine_status resize_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in), od = dims4(out);
    return mengine_k_resize_bilinear_f32(&id, in->cdata, n->p.misc.axis & RESIZE_ALIGN_CORNERS,
                                         (n->p.misc.axis & RESIZE_HALF_PIXEL) != 0, &od, out->data);
}

/* ---- the fused correlation (runtime/engine/fuse.c recognises the pattern) ---- */

static mengine_status not_a_file_op(const mop_ctx *c, mnode *node)
{
    (void)node;
    return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED_OP, "not an operator of a model");
}

static mengine_status corr_eval(const mengine *e, const mnode *n)
{
    const mtensor *l = &e->tensors[n->p.corr.left], *r = &e->tensors[n->p.corr.right];
    const mtensor *out = out_rec(e, n);
    const mengine_k_dims ld = dims4(l), rd = dims4(r), od = dims4(out);
    return mengine_k_correlation_f32(&n->p.corr.k, &ld, l->cdata, &rd, r->cdata, &od, out->data);
}

static mengine_status elided_eval(const mengine *e, const mnode *n)
{
    (void)e;
    (void)n;
    return MENGINE_OK;
}

/* ---- FULLY_CONNECTED: inputs (input, weights [units, depth], bias?) ---- */

static mengine_status fc_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, w, b, out;
    fb_table o;
    int has_b, has_o;
    int8_t format = 0;
    uint8_t keep = 0;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = float_input(c, 1, &w, "weights");
    if (st == MENGINE_OK)
        st = opt_float_input(c, 2, &b, &has_b, "bias");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = need_rank(c, &w, 2, "weights");
    if (st == MENGINE_OK && has_b)
        st = need_rank(c, &b, 1, "bias");
    if (st == MENGINE_OK)
        st = options(c, 8, &o, &has_o);
    if (st == MENGINE_OK)
        st = read_act(c, &o, has_o, 0, &node->p.misc.act);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_i8(c->r, &o, 1, 0, &format);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_u8(c->r, &o, 2, 0, &keep);
    if (st != MENGINE_OK)
        return st;
    if (format != 0)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS,
                               "weights format %d unsupported (DEFAULT only)", format);
    const int32_t units = w.dims[0], depth = w.dims[1];
    if (in.rank < 1 || in.count % (uint32_t)depth)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "input of %u values is not a whole number of rows of %d", in.count,
                               depth);
    if (has_b && b.dims[0] != units)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "bias has %d values for %d units", b.dims[0],
                               units);
    if (keep) {
        int32_t want[MENGINE_MAX_DIMS];
        if (in.dims[in.rank - 1] != depth)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                                   "keep_num_dims: input depth %d, weights take %d",
                                   in.dims[in.rank - 1], depth);
        memcpy(want, in.dims, sizeof want);
        want[in.rank - 1] = units;
        return need_shape(c, &out, want, in.rank);
    }
    const int32_t want[2] = {(int32_t)(in.count / (uint32_t)depth), units};
    return need_shape(c, &out, want, 2);
}

static mengine_status fc_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *w = node_input(e, n, 1);
    const mtensor *b = n->n_inputs > 2 ? node_input(e, n, 2) : NULL, *out = out_rec(e, n);
    const size_t depth = (size_t)w->dims[1];
    return mengine_k_fully_connected_f32(n->p.misc.act, in->count / depth, depth,
                                         (size_t)w->dims[0], in->cdata, w->cdata, opt_data(b),
                                         out->data);
}

/* ---- SOFTMAX ---- */

static mengine_status softmax_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    fb_table o;
    int has_o;
    float beta = 0.0f;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = options(c, 9, &o, &has_o);
    if (st == MENGINE_OK && has_o)
        st = mengine_fb_f32(c->r, &o, 0, 0.0f, &beta);
    if (st != MENGINE_OK)
        return st;
    if (!(beta > 0.0f) || !finite_float(beta))
        return mengine_op_fail(
            c, MENGINE_ERR_OPTIONS,
            "beta must be positive and finite (absent SoftmaxOptions mean beta 0)");
    node->p.misc.value = beta;
    return need_shape(c, &out, in.dims, in.rank);
}

static mengine_status softmax_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    const size_t cols = in->rank ? (size_t)in->dims[in->rank - 1] : 1;
    return mengine_k_softmax_f32(in->count / cols, cols, n->p.misc.value, in->cdata, out->data);
}

/* ---- RESHAPE: inputs (data, shape?) ---- */

static mengine_status reshape_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, shape, out;
    int has_shape;
    fb_table o;
    int has_o;
    (void)node;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = opt_input(c, 1, &shape, &has_shape);
    if (st == MENGINE_OK && has_shape)
        st = int_input(c, 1, &shape, "shape");
    if (st == MENGINE_OK)
        st = options(c, 17, &o, &has_o);
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st != MENGINE_OK)
        return st;
    if (out.count != in.count)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "output has %u values, the input %u",
                               out.count, in.count);
    if (has_shape) {
        int unknown = 0, ok = shape.count == out.rank;
        for (uint32_t i = 0; ok && i < shape.count; i++) {
            const int32_t v = int_at(&shape, i);
            unknown += v == -1;
            ok = v == out.dims[i] || (v == -1 && unknown == 1);
        }
        if (!ok)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                                   "shape input (tensor %u) does not match the output",
                                   shape.index);
    }
    return MENGINE_OK;
}

static mengine_status reshape_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    if (out->data != in->cdata) /* not sharing the input's buffer */
        memmove(out->data, in->cdata, (size_t)in->count * sizeof(float));
    return MENGINE_OK;
}

/* ---- PAD: inputs (data, paddings INT32 [rank, 2]); zeros only ---- */

static mengine_status pad_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, pads, out;
    fb_table o;
    int has_pads, has_o;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = opt_input(c, 1, &pads, &has_pads);
    if (st == MENGINE_OK)
        st = options(c, 22, &o, &has_o);
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st != MENGINE_OK)
        return st;
    if (!has_pads)
        return mengine_op_fail(c, MENGINE_ERR_GRAPH, "input 1 (paddings) is missing");
    if (c->inputs.n > 2)
        return mengine_op_fail(c, MENGINE_ERR_GRAPH,
                               "%u inputs, expected 2 (PADV2 is not supported)", c->inputs.n);
    if (in.rank < 1)
        return mengine_op_fail(c, MENGINE_ERR_SHAPE, "input (tensor %u '%s') is a scalar", in.index,
                               in.name);
    if (pads.type != MENGINE_INT32 || !pads.data || pads.rank != 2 ||
        pads.dims[0] != (int32_t)in.rank || pads.dims[1] != 2)
        return mengine_op_fail(
            c, MENGINE_ERR_TYPE,
            "input 1 (paddings, tensor %u '%s') must be a constant INT32 [%u, 2]", pads.index,
            pads.name, in.rank);
    int32_t want[MENGINE_MAX_DIMS];
    for (uint32_t i = 0; i < in.rank; i++) {
        const int32_t b = int_at(&pads, 2 * i), a = int_at(&pads, 2 * i + 1);
        if (b < 0 || a < 0)
            return mengine_op_fail(c, MENGINE_ERR_OPTIONS,
                                   "padding of dim %u is (%d, %d): negative", i, b, a);
        const int64_t d = (int64_t)in.dims[i] + b + a;
        if (d > 0x7fffffff)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE, "padded dim %u is too large", i);
        want[i] = (int32_t)d;
        node->p.pad.before[4 - in.rank + i] = b;
    }
    for (uint32_t i = 0; i < 4 - in.rank; i++)
        node->p.pad.before[i] = 0;
    return need_shape(c, &out, want, in.rank);
}

static mengine_status pad_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0), *out = out_rec(e, n);
    const mengine_k_dims id = dims4(in), od = dims4(out);
    return mengine_k_pad_f32(&id, in->cdata, n->p.pad.before, &od, out->data);
}

/* ---- CONCATENATION ---- */

static mengine_status concat_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    fb_table o;
    int32_t axis;
    mengine_status st = output(c, &out);
    if (st == MENGINE_OK)
        st = need_options(c, 10, &o);
    if (st == MENGINE_OK)
        st = mengine_fb_i32(c->r, &o, 0, 0, &axis);
    if (st == MENGINE_OK)
        st = read_act(c, &o, 1, 1, &node->p.misc.act);
    if (st != MENGINE_OK)
        return st;
    const int32_t rank = (int32_t)out.rank;
    if (axis < -rank || axis >= rank || rank == 0)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "axis %d out of range for rank %d", axis,
                               rank);
    axis = axis < 0 ? axis + rank : axis;
    node->p.misc.axis = axis;
    if (c->inputs.n == 0)
        return mengine_op_fail(c, MENGINE_ERR_GRAPH, "no inputs");
    int64_t sum = 0;
    for (uint32_t i = 0; i < c->inputs.n; i++) {
        st = float_input(c, i, &in, "data");
        if (st != MENGINE_OK)
            return st;
        int same = in.rank == out.rank;
        for (int32_t k = 0; same && k < rank; k++)
            same = k == axis || in.dims[k] == out.dims[k];
        if (!same)
            return mengine_op_fail(
                c, MENGINE_ERR_SHAPE,
                "input %u (tensor %u '%s') differs from the output outside axis %d", i, in.index,
                in.name, axis);
        sum += in.dims[axis];
    }
    if (sum != out.dims[axis])
        return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                               "inputs add up to %d along axis %d, the output has %d", (int)sum,
                               axis, out.dims[axis]);
    return MENGINE_OK;
}

static mengine_status concat_eval(const mengine *e, const mnode *n)
{
    const mtensor *out = out_rec(e, n);
    const int32_t axis = n->p.misc.axis;
    size_t outer = 1, inner = 1, offset = 0;
    for (int32_t k = 0; k < axis; k++)
        outer *= (size_t)out->dims[k];
    for (uint32_t k = (uint32_t)axis + 1; k < out->rank; k++)
        inner *= (size_t)out->dims[k];
    const size_t out_chunk = (size_t)out->dims[axis] * inner;
    for (uint32_t i = 0; i < n->n_inputs; i++) {
        const mtensor *in = node_input(e, n, i);
        const size_t chunk = (size_t)in->dims[axis] * inner;
        mengine_status st =
            mengine_k_concat_part_f32(in->cdata, outer, chunk, out->data, out_chunk, offset);
        if (st != MENGINE_OK)
            return st;
        offset += chunk;
    }
    mengine_k_act_f32(out->data, out->count, n->p.misc.act);
    return MENGINE_OK;
}

/* ---- ADD, MUL (broadcasting) ---- */

static mengine_status binary_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info a, b, out;
    fb_table o;
    int has_o;
    mengine_status st = float_input(c, 0, &a, "a");
    if (st == MENGINE_OK)
        st = float_input(c, 1, &b, "b");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st == MENGINE_OK)
        st = options(c, c->builtin == MENGINE_OP_ADD ? 11 : 21, &o, &has_o);
    if (st == MENGINE_OK)
        st = read_act(c, &o, has_o, 0, &node->p.misc.act);
    if (st != MENGINE_OK)
        return st;
    /* Right-aligned broadcast, as TFLite: each pair of dims equal or one of them 1. */
    const uint32_t rank = a.rank > b.rank ? a.rank : b.rank;
    int32_t want[MENGINE_MAX_DIMS];
    for (uint32_t i = 0; i < rank; i++) {
        const int32_t da = i + a.rank >= rank ? a.dims[i + a.rank - rank] : 1;
        const int32_t db = i + b.rank >= rank ? b.dims[i + b.rank - rank] : 1;
        if (da != db && da != 1 && db != 1)
            return mengine_op_fail(c, MENGINE_ERR_SHAPE,
                                   "dims %d and %d of the inputs do not broadcast", da, db);
        want[i] = da > db ? da : db;
    }
    return need_shape(c, &out, want, rank);
}

static mengine_status add_eval(const mengine *e, const mnode *n)
{
    const mtensor *a = node_input(e, n, 0), *b = node_input(e, n, 1), *out = out_rec(e, n);
    const mengine_k_dims ad = dims4(a), bd = dims4(b), od = dims4(out);
    return mengine_k_add_f32(&ad, a->cdata, &bd, b->cdata, &od, out->data, n->p.misc.act);
}

static mengine_status mul_eval(const mengine *e, const mnode *n)
{
    const mtensor *a = node_input(e, n, 0), *b = node_input(e, n, 1), *out = out_rec(e, n);
    const mengine_k_dims ad = dims4(a), bd = dims4(b), od = dims4(out);
    return mengine_k_mul_f32(&ad, a->cdata, &bd, b->cdata, &od, out->data, n->p.misc.act);
}

/* ---- unary: RELU, RELU6, LOGISTIC, HARD_SWISH, LEAKY_RELU ---- */

static mengine_status unary_prepare(const mop_ctx *c, mnode *node)
{
    mtensor_info in, out;
    mengine_status st = float_input(c, 0, &in, "input");
    if (st == MENGINE_OK)
        st = output(c, &out);
    if (st != MENGINE_OK)
        return st;
    if (c->builtin == MENGINE_OP_LEAKY_RELU || c->builtin == MENGINE_OP_HARD_SWISH) {
        fb_table o;
        int has_o;
        const int leaky = c->builtin == MENGINE_OP_LEAKY_RELU;
        node->p.misc.value = 0.0f;
        st = options(c, leaky ? 75 : 91, &o, &has_o);
        if (st == MENGINE_OK && has_o && leaky)
            st = mengine_fb_f32(c->r, &o, 0, 0.0f, &node->p.misc.value);
        if (st != MENGINE_OK)
            return st;
        if (!finite_float(node->p.misc.value))
            return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "alpha is not finite");
    }
    return need_shape(c, &out, in.dims, in.rank);
}

/* One eval per operator, each calling its kernel directly (no dispatch at run
 * time, and an operator table that names one of them links only its kernel). */
static mengine_status relu_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0);
    return mengine_k_relu_f32(in->cdata, out_rec(e, n)->data, in->count);
}

static mengine_status relu6_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0);
    return mengine_k_relu6_f32(in->cdata, out_rec(e, n)->data, in->count);
}

static mengine_status logistic_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0);
    return mengine_k_logistic_f32(in->cdata, out_rec(e, n)->data, in->count);
}

static mengine_status hard_swish_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0);
    return mengine_k_hard_swish_f32(in->cdata, out_rec(e, n)->data, in->count);
}

static mengine_status leaky_relu_eval(const mengine *e, const mnode *n)
{
    const mtensor *in = node_input(e, n, 0);
    return mengine_k_leaky_relu_f32(in->cdata, out_rec(e, n)->data, in->count, n->p.misc.value);
}

/* ---- registrations ---- */

/* Highest versions accepted: those whose float32 semantics the kernels implement. */
const mengine_op mengine_op_add = {MENGINE_OP_ADD, 4,       11, MOP_SHARE_INPLACE,
                                   binary_prepare, add_eval};
const mengine_op mengine_op_average_pool_2d = {
    MENGINE_OP_AVERAGE_POOL_2D, 3, 5, MOP_SHARE_NONE, pool_prepare, pool_eval};
const mengine_op mengine_op_concatenation = {
    MENGINE_OP_CONCATENATION, 3, 10, MOP_SHARE_NONE, concat_prepare, concat_eval};
const mengine_op mengine_op_conv_2d = {MENGINE_OP_CONV_2D, 3,        1, MOP_SHARE_NONE,
                                       conv_prepare,       conv_eval};
const mengine_op mengine_op_depthwise_conv_2d = {
    MENGINE_OP_DEPTHWISE_CONV_2D, 3, 2, MOP_SHARE_NONE, dw_prepare, dw_eval};
const mengine_op mengine_op_fully_connected = {
    MENGINE_OP_FULLY_CONNECTED, 9, 8, MOP_SHARE_NONE, fc_prepare, fc_eval};
const mengine_op mengine_op_logistic = {MENGINE_OP_LOGISTIC, 3, 0, MOP_SHARE_INPLACE, unary_prepare,
                                        logistic_eval};
const mengine_op mengine_op_mul = {MENGINE_OP_MUL, 4,       21, MOP_SHARE_INPLACE,
                                   binary_prepare, mul_eval};
const mengine_op mengine_op_relu = {MENGINE_OP_RELU, 3,        0, MOP_SHARE_INPLACE,
                                    unary_prepare,   relu_eval};
const mengine_op mengine_op_relu6 = {MENGINE_OP_RELU6, 3,         0, MOP_SHARE_INPLACE,
                                     unary_prepare,    relu6_eval};
const mengine_op mengine_op_reshape = {MENGINE_OP_RESHAPE, 1,           17, MOP_SHARE_ALIAS,
                                       reshape_prepare,    reshape_eval};
const mengine_op mengine_op_softmax = {MENGINE_OP_SOFTMAX, 3,           9, MOP_SHARE_NONE,
                                       softmax_prepare,    softmax_eval};
const mengine_op mengine_op_pad = {MENGINE_OP_PAD, 2, 22, MOP_SHARE_NONE, pad_prepare, pad_eval};
const mengine_op mengine_op_mean = {MENGINE_OP_MEAN, 3,        27, MOP_SHARE_NONE,
                                    mean_prepare,    mean_eval};
const mengine_op mengine_op_transpose_conv = {
    MENGINE_OP_TRANSPOSE_CONV, 4, 49, MOP_SHARE_NONE, tconv_prepare, tconv_eval};
const mengine_op mengine_op_leaky_relu = {
    MENGINE_OP_LEAKY_RELU, 2, 75, MOP_SHARE_INPLACE, unary_prepare, leaky_relu_eval};
const mengine_op mengine_op_hard_swish = {
    MENGINE_OP_HARD_SWISH, 1, 91, MOP_SHARE_INPLACE, unary_prepare, hard_swish_eval};
const mengine_op mengine_op_slice = {MENGINE_OP_SLICE, 4,         48, MOP_SHARE_NONE,
                                     slice_prepare,    slice_eval};
const mengine_op mengine_op_strided_slice = {
    MENGINE_OP_STRIDED_SLICE, 4, 32, MOP_SHARE_NONE, strided_slice_prepare, slice_eval};
const mengine_op mengine_op_resize_bilinear = {
    MENGINE_OP_RESIZE_BILINEAR, 3, 15, MOP_SHARE_NONE, resize_prepare, resize_eval};
const mengine_op mengine_op_correlation = {
    MENGINE_FUSED_CORRELATION, 0, 0, MOP_SHARE_NONE, not_a_file_op, corr_eval};
const mengine_op mengine_op_elided = {
    MENGINE_FUSED_CORRELATION - 1, 0, 0, MOP_SHARE_ELIDED, not_a_file_op, elided_eval};

/* The shared checks of the int8 registrations (ops_q8.c), called directly rather than through
 * the float32 registrations, so that an operator table naming only int8 operators links no
 * float32 eval or kernel. */
mengine_status mengine_opf_conv_prepare(const mop_ctx *c, mnode *node)
{
    return conv_prepare(c, node);
}
mengine_status mengine_opf_dw_prepare(const mop_ctx *c, mnode *node) { return dw_prepare(c, node); }
mengine_status mengine_opf_fc_prepare(const mop_ctx *c, mnode *node) { return fc_prepare(c, node); }
mengine_status mengine_opf_binary_prepare(const mop_ctx *c, mnode *node)
{
    return binary_prepare(c, node);
}
mengine_status mengine_opf_pad_prepare(const mop_ctx *c, mnode *node)
{
    return pad_prepare(c, node);
}
mengine_status mengine_opf_reshape_prepare(const mop_ctx *c, mnode *node)
{
    return reshape_prepare(c, node);
}
mengine_status mengine_opf_mean_prepare(const mop_ctx *c, mnode *node)
{
    return mean_prepare(c, node);
}
mengine_status mengine_opf_unary_prepare(const mop_ctx *c, mnode *node)
{
    return unary_prepare(c, node);
}
mengine_status mengine_opf_softmax_prepare(const mop_ctx *c, mnode *node)
{
    return softmax_prepare(c, node);
}

static const mengine_op *const ALL_OPS[] = {
    &mengine_op_add,
    &mengine_op_average_pool_2d,
    &mengine_op_concatenation,
    &mengine_op_conv_2d,
    &mengine_op_depthwise_conv_2d,
    &mengine_op_fully_connected,
    &mengine_op_logistic,
    &mengine_op_mul,
    &mengine_op_relu,
    &mengine_op_relu6,
    &mengine_op_reshape,
    &mengine_op_softmax,
    &mengine_op_pad,
    &mengine_op_mean,
    &mengine_op_transpose_conv,
    &mengine_op_leaky_relu,
    &mengine_op_hard_swish,
    &mengine_op_slice,
    &mengine_op_strided_slice,
    &mengine_op_resize_bilinear,
    &mengine_op_correlation,
    &mengine_op_add_int8,
    &mengine_op_conv_2d_int8,
    &mengine_op_depthwise_conv_2d_int8,
    &mengine_op_fully_connected_int8,
    &mengine_op_mul_int8,
    &mengine_op_reshape_int8,
    &mengine_op_softmax_int8,
    &mengine_op_pad_int8,
    &mengine_op_mean_int8,
    &mengine_op_hard_swish_int8,
    &mengine_op_transpose_conv_int8,
    &mengine_op_concatenation_int8,
    &mengine_op_leaky_relu_int8,
    &mengine_op_resize_bilinear_int8,
    &mengine_op_slice_int8,
    &mengine_op_strided_slice_int8,
    &mengine_op_quantize_int8,
    &mengine_op_correlation_int8,
};

const mengine_op_resolver mengine_all_ops = {ALL_OPS, sizeof ALL_OPS / sizeof ALL_OPS[0]};

/* ---- set-up ---- */

mengine_status mengine_op_fail(const mop_ctx *c, mengine_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    code = mengine_diag_op_vfail(c->r->d, c->index, c->builtin, code, fmt, ap);
    va_end(ap);
    return code;
}

/* The registration of @p builtin for float32 or (@p int8) int8 operators in @p ops, or NULL. */
static const mop_reg *find(const mengine_op_resolver *ops, int32_t builtin, int int8)
{
    for (size_t i = 0; i < ops->n_ops; i++)
        if (ops->ops[i] && ops->ops[i]->builtin == (int8 ? builtin | MOP_INT8 : builtin))
            return ops->ops[i];
    return NULL;
}

/* Whether operator @p c's (first) output is an INT8 tensor (0 when it cannot be read:
 * the verifier reports that on its own). */
static int output_int8(fbr *r, const mengine_model *m, const mop_ctx *c)
{
    mtensor_info ti;
    if (c->outputs.n < 1)
        return 0;
    const int32_t t = fb_vec_i32(r, &c->outputs, 0);
    if (t < 0 || (uint32_t)t >= m->n_tensors)
        return 0;
    mdiag quiet = {NULL, 0};
    fbr rr = *r;
    rr.d = &quiet;
    return mengine_model_tensor(&rr, m, (uint32_t)t, &ti) == MENGINE_OK && ti.type == MENGINE_INT8;
}

mengine_status mengine_op_bind(fbr *r, const mengine_model *m, uint32_t index, mop_ctx *c)
{
    uint32_t opcode;
    int32_t version;
    c->r = r;
    c->m = m;
    c->index = index;
    mengine_status st = mengine_model_operator(r, m, index, &c->op, &c->inputs, &c->outputs);
    if (st == MENGINE_OK)
        st = mengine_fb_u32(r, &c->op, OP_OPCODE, 0, &opcode);
    if (st != MENGINE_OK)
        return st;
    if (opcode >= m->n_opcodes)
        return mengine_diag_fail(
            r->d, MENGINE_ERR_OPCODE_INDEX,
            "operator %u: opcode index %u out of range (the model has %u codes)", index, opcode,
            m->n_opcodes);
    st = mengine_model_opcode(r, m, opcode, &c->builtin, &version);
    if (st != MENGINE_OK)
        return st;
    /* negative codes are the engine's own (fused kernels), never a file's operators */
    const int int8 = output_int8(r, m, c);
    c->reg = c->builtin >= 0 ? find(m->ops, c->builtin, int8) : NULL;
    if (!c->reg) {
        /* mengine_op_name() returns its one "UNKNOWN" string for every code it does not name */
        const char *name = mengine_op_name(c->builtin >= 0 ? c->builtin : -1);
        return mengine_diag_fail(
            r->d, MENGINE_ERR_UNSUPPORTED_OP,
            "operator %u: %s (builtin code %d)%s is not supported%s", index, name, (int)c->builtin,
            int8 ? " with an INT8 output" : "",
            name != mengine_op_name(-1) ? " (not in the engine's operator table)" : "");
    }
    if (version < 1 || version > c->reg->max_version)
        return mengine_op_fail(c, MENGINE_ERR_OP_VERSION, "version %d unsupported (1 to %d)",
                               (int)version, (int)c->reg->max_version);
    if (c->inputs.n > MENGINE_MAX_OP_INPUTS)
        return mengine_op_fail(c, MENGINE_ERR_LIMIT, "%u inputs (at most %u)", c->inputs.n,
                               (unsigned)MENGINE_MAX_OP_INPUTS);
    if (c->outputs.n != 1)
        return mengine_op_fail(c, MENGINE_ERR_GRAPH, "%u outputs, expected 1", c->outputs.n);
    return MENGINE_OK;
}

mengine_status mengine_op_prepare(const mop_ctx *c, mnode *node)
{
    uint8_t options_type;
    mengine_status st = mengine_fb_u8(c->r, &c->op, OP_OPTIONS_TYPE, 0, &options_type);
    if (st != MENGINE_OK)
        return st;
    if (options_type != 0 && options_type != (uint8_t)c->reg->options_type)
        return mengine_op_fail(c, MENGINE_ERR_OPTIONS, "options of union type %u, expected %d",
                               (unsigned)options_type, (int)c->reg->options_type);
    memset(node, 0, sizeof *node);
    node->reg = c->reg;
    node->inputs = c->inputs.pos;
    node->n_inputs = c->inputs.n;
    node->output = (uint32_t)fb_vec_i32(c->r, &c->outputs, 0);
    return c->reg->prepare(c, node);
}
