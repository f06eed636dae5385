#include "tflbuild.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/flatbuf.h"

void tb_init(tb_model *m)
{
    memset(m, 0, sizeof *m);
    m->version = 3;
    m->n_buf = 1;
}

void tb_release(tb_model *m)
{
    for (int i = 0; i < m->n_buf; i++)
        free(m->buf[i].data);
    m->n_buf = 0;
}

int tb_buffer_add(tb_model *m, const void *data, size_t bytes)
{
    assert_true(m->n_buf < TB_MAX_BUFFERS);
    tb_buffer *b = &m->buf[m->n_buf];
    b->data = malloc(bytes ? bytes : 1);
    assert_non_null(b->data);
    if (bytes)
        memcpy(b->data, data, bytes);
    b->bytes = bytes;
    return m->n_buf++;
}

int tb_tensor_buf(tb_model *m, const char *name, int type, int rank, const int32_t *dims,
                  uint32_t buffer)
{
    assert_true(m->n_t < TB_MAX_TENSORS && rank >= 0 && rank <= 8);
    tb_tensor *t = &m->t[m->n_t];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->rank = rank;
    if (rank)
        memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    t->buffer = buffer;
    return m->n_t++;
}

int tb_tensor_f32(tb_model *m, const char *name, int rank, const int32_t *dims, const float *data)
{
    uint32_t buffer = 0;
    if (data) {
        size_t count = 1;
        for (int i = 0; i < rank; i++)
            count *= (size_t)dims[i];
        buffer = (uint32_t)tb_buffer_add(m, data, count * sizeof *data);
    }
    return tb_tensor_buf(m, name, 0, rank, dims, buffer);
}

int tb_tensor_i32(tb_model *m, const char *name, int n, const int32_t *values)
{
    const int32_t dims[1] = {n};
    uint32_t buffer = (uint32_t)tb_buffer_add(m, values, (size_t)n * sizeof *values);
    return tb_tensor_buf(m, name, 2, 1, dims, buffer);
}

uint32_t tb_code(tb_model *m, int32_t builtin, int32_t version)
{
    for (int i = 0; i < m->n_code; i++)
        if (m->code[i] == builtin && m->code_version[i] == version)
            return (uint32_t)i;
    assert_true(m->n_code < TB_MAX_CODES);
    m->code[m->n_code] = builtin;
    m->code_version[m->n_code] = version;
    return (uint32_t)m->n_code++;
}

int tb_op_add(tb_model *m, int32_t builtin, int32_t version, int n_in, const int32_t *in,
              int32_t out, const tb_opts *o)
{
    assert_true(m->n_op < TB_MAX_OPS && n_in <= TB_MAX_IO);
    tb_op *op = &m->op[m->n_op];
    memset(op, 0, sizeof *op);
    op->opcode = tb_code(m, builtin, version);
    op->n_in = n_in;
    memcpy(op->in, in, (size_t)n_in * sizeof *in);
    op->n_out = 1;
    op->out[0] = out;
    if (o)
        op->o = *o;
    return m->n_op++;
}

void tb_io(tb_model *m, int n_in, const int32_t *in, int n_out, const int32_t *out)
{
    assert_true(n_in <= TB_MAX_IO && n_out <= TB_MAX_IO);
    memcpy(m->in, in, (size_t)n_in * sizeof *in);
    memcpy(m->out, out, (size_t)n_out * sizeof *out);
    m->n_in = n_in;
    m->n_out = n_out;
}

void tb_offline(tb_model *m, const int32_t *offsets)
{
    int32_t plan[3 + TB_MAX_TENSORS] = {1, 1, m->n_t};
    memcpy(plan + 3, offsets, (size_t)m->n_t * sizeof *offsets);
    m->offline_buffer = tb_buffer_add(m, plan, (size_t)(3 + m->n_t) * sizeof *plan);
}

/* ---- serialisation ---- */

#define OK(call)                                              \
    do {                                                      \
        if ((call) != MANTA_OK)                               \
            fail_msg("flatbuffer builder: %s", mfb_error(b)); \
    } while (0)

static mfb_ref options(mfb_builder *b, const tb_opts *o)
{
    mfb_ref r = 0;
    const int dw = o->dilation_w ? o->dilation_w : 1, dh = o->dilation_h ? o->dilation_h : 1;
    OK(mfb_start_table(b));
    switch (o->type) {
    case 1: /* Conv2DOptions */
        OK(mfb_add_i8(b, 0, (int8_t)o->padding, 0));
        OK(mfb_add_i32(b, 1, o->stride_w, 0));
        OK(mfb_add_i32(b, 2, o->stride_h, 0));
        OK(mfb_add_i8(b, 3, (int8_t)o->act, 0));
        OK(mfb_add_i32(b, 4, dw, 1));
        OK(mfb_add_i32(b, 5, dh, 1));
        break;
    case 2: /* DepthwiseConv2DOptions */
        OK(mfb_add_i8(b, 0, (int8_t)o->padding, 0));
        OK(mfb_add_i32(b, 1, o->stride_w, 0));
        OK(mfb_add_i32(b, 2, o->stride_h, 0));
        OK(mfb_add_i32(b, 3, o->depth_multiplier, 0));
        OK(mfb_add_i8(b, 4, (int8_t)o->act, 0));
        OK(mfb_add_i32(b, 5, dw, 1));
        OK(mfb_add_i32(b, 6, dh, 1));
        break;
    case 5: /* Pool2DOptions */
        OK(mfb_add_i8(b, 0, (int8_t)o->padding, 0));
        OK(mfb_add_i32(b, 1, o->stride_w, 0));
        OK(mfb_add_i32(b, 2, o->stride_h, 0));
        OK(mfb_add_i32(b, 3, o->filter_w, 0));
        OK(mfb_add_i32(b, 4, o->filter_h, 0));
        OK(mfb_add_i8(b, 5, (int8_t)o->act, 0));
        break;
    case 8: /* FullyConnectedOptions */
        OK(mfb_add_i8(b, 0, (int8_t)o->act, 0));
        OK(mfb_add_i8(b, 1, (int8_t)o->weights_format, 0));
        OK(mfb_add_bool(b, 2, o->keep_dims, 0));
        break;
    case 9: OK(mfb_add_f32(b, 0, o->beta, 0.0f)); break;
    case 10: /* ConcatenationOptions */
        OK(mfb_add_i32(b, 0, o->axis, 0));
        OK(mfb_add_i8(b, 1, (int8_t)o->act, 0));
        break;
    case 11: /* AddOptions */
    case 21: /* MulOptions */ OK(mfb_add_i8(b, 0, (int8_t)o->act, 0)); break;
    case 27: OK(mfb_add_bool(b, 0, o->keep_dims, 0)); break;
    case 49: /* TransposeConvOptions */
        OK(mfb_add_i8(b, 0, (int8_t)o->padding, 0));
        OK(mfb_add_i32(b, 1, o->stride_w, 0));
        OK(mfb_add_i32(b, 2, o->stride_h, 0));
        OK(mfb_add_i8(b, 3, (int8_t)o->act, 0));
        break;
    case 75: OK(mfb_add_f32(b, 0, o->alpha, 0.0f)); break;
    case 15: /* ResizeBilinearOptions: new_height, new_width (deprecated), then these */
        OK(mfb_add_bool(b, 2, o->align_corners, 0));
        OK(mfb_add_bool(b, 3, o->half_pixel_centers, 0));
        break;
    case 32: /* StridedSliceOptions */
        OK(mfb_add_i32(b, 0, o->begin_mask, 0));
        OK(mfb_add_i32(b, 1, o->end_mask, 0));
        OK(mfb_add_i32(b, 2, o->ellipsis_mask, 0));
        OK(mfb_add_i32(b, 3, o->new_axis_mask, 0));
        OK(mfb_add_i32(b, 4, o->shrink_axis_mask, 0));
        OK(mfb_add_bool(b, 5, o->offset, 0));
        break;
    default: break; /* ReshapeOptions, HardSwishOptions, SliceOptions: empty */
    }
    OK(mfb_end_table(b, &r));
    return r;
}

uint8_t *tb_finish(const tb_model *m, size_t *size)
{
    mfb_builder fb, *b = &fb;
    mfb_ref bufs[TB_MAX_BUFFERS], tensors[TB_MAX_TENSORS], ops[TB_MAX_OPS], codes[TB_MAX_CODES];
    mfb_ref v, v_in, v_out, v_t, v_op, name, sg, v_sg, v_codes, v_bufs, meta = 0, v_meta = 0;
    mfb_ref root, desc;
    assert_int_equal(mfb_init(b, 256), MANTA_OK);

    for (int i = 0; i < m->n_buf; i++) {
        mfb_ref data = 0;
        if (m->buf[i].bytes)
            OK(mfb_create_vector(b, m->buf[i].data, m->buf[i].bytes, 1, 16, &data));
        OK(mfb_start_table(b));
        OK(mfb_add_ref(b, 0, data));
        OK(mfb_end_table(b, &bufs[i]));
    }
    for (int i = 0; i < m->n_t; i++) {
        const tb_tensor *t = &m->t[i];
        OK(mfb_create_vector(b, t->dims, (size_t)t->rank, 4, 4, &v));
        OK(mfb_create_string(b, t->name, strlen(t->name), &name));
        OK(mfb_start_table(b));
        OK(mfb_add_ref(b, 0, v));
        OK(mfb_add_i8(b, 1, (int8_t)t->type, 0));
        OK(mfb_add_u32(b, 2, t->buffer, 0));
        OK(mfb_add_ref(b, 3, name));
        OK(mfb_end_table(b, &tensors[i]));
    }
    for (int i = 0; i < m->n_op; i++) {
        const tb_op *op = &m->op[i];
        mfb_ref opt = op->o.type ? options(b, &op->o) : 0;
        OK(mfb_create_vector(b, op->in, (size_t)op->n_in, 4, 4, &v_in));
        OK(mfb_create_vector(b, op->out, (size_t)op->n_out, 4, 4, &v_out));
        OK(mfb_start_table(b));
        OK(mfb_add_u32(b, 0, op->opcode, 0));
        OK(mfb_add_ref(b, 1, v_in));
        OK(mfb_add_ref(b, 2, v_out));
        OK(mfb_add_u8(b, 3, (uint8_t)op->o.type, 0));
        OK(mfb_add_ref(b, 4, opt));
        OK(mfb_end_table(b, &ops[i]));
    }
    OK(mfb_create_ref_vector(b, tensors, (size_t)m->n_t, &v_t));
    OK(mfb_create_ref_vector(b, ops, (size_t)m->n_op, &v_op));
    OK(mfb_create_vector(b, m->in, (size_t)m->n_in, 4, 4, &v_in));
    OK(mfb_create_vector(b, m->out, (size_t)m->n_out, 4, 4, &v_out));
    OK(mfb_create_string(b, "main", 4, &name));
    OK(mfb_start_table(b));
    OK(mfb_add_ref(b, 0, v_t));
    OK(mfb_add_ref(b, 1, v_in));
    OK(mfb_add_ref(b, 2, v_out));
    OK(mfb_add_ref(b, 3, v_op));
    OK(mfb_add_ref(b, 4, name));
    OK(mfb_end_table(b, &sg));
    OK(mfb_create_ref_vector(b, &sg, 1, &v_sg));

    for (int i = 0; i < m->n_code; i++) {
        OK(mfb_start_table(b));
        OK(mfb_add_i8(b, 0, (int8_t)(m->code[i] < 127 ? m->code[i] : 127), 0));
        OK(mfb_add_i32(b, 2, m->code_version[i], 1));
        OK(mfb_add_i32(b, 3, m->code[i], 0));
        OK(mfb_end_table(b, &codes[i]));
    }
    OK(mfb_create_ref_vector(b, codes, (size_t)m->n_code, &v_codes));
    OK(mfb_create_ref_vector(b, bufs, (size_t)m->n_buf, &v_bufs));
    if (m->offline_buffer) {
        static const char key[] = "OfflineMemoryAllocation";
        OK(mfb_create_string(b, key, sizeof key - 1, &name));
        OK(mfb_start_table(b));
        OK(mfb_add_ref(b, 0, name));
        OK(mfb_add_u32(b, 1, (uint32_t)m->offline_buffer, 0));
        OK(mfb_end_table(b, &meta));
        OK(mfb_create_ref_vector(b, &meta, 1, &v_meta));
    }
    OK(mfb_create_string(b, "manta test model", 16, &desc));
    OK(mfb_start_table(b));
    OK(mfb_add_u32(b, 0, m->version, 0));
    OK(mfb_add_ref(b, 1, v_codes));
    OK(mfb_add_ref(b, 2, v_sg));
    OK(mfb_add_ref(b, 3, desc));
    OK(mfb_add_ref(b, 4, v_bufs));
    OK(mfb_add_ref(b, 6, v_meta));
    OK(mfb_end_table(b, &root));
    OK(mfb_finish(b, root, "TFL3"));

    size_t n;
    const uint8_t *data = mfb_data(b, &n);
    assert_non_null(data);
    assert_true(mfb_alignment(b) <= 16);
    uint8_t *copy = aligned_alloc(16, (n + 15) & ~(size_t)15);
    assert_non_null(copy);
    memcpy(copy, data, n);
    mfb_free(b);
    *size = n;
    return copy;
}

/* ---- running ---- */

void tb_run_open(tb_run *r, const tb_model *m) { tb_run_open_ops(r, m, &mengine_all_ops); }

void tb_run_open_ops(tb_run *r, const tb_model *m, const mengine_op_resolver *ops)
{
    char msg[256];
    memset(r, 0, sizeof *r);
    r->file = tb_finish(m, &r->size);
    mengine_status st = mengine_model_load_ops(&r->m, r->file, r->size, ops, NULL, msg, sizeof msg);
    if (st != MENGINE_OK)
        fail_msg("load: %s: %s", mengine_status_str(st), msg);
    size_t ws = mengine_plan_work_size(&r->m);
    void *work = malloc(ws);
    assert_non_null(work);
    st = mengine_arena_size(&r->m, work, ws, &r->arena_size, msg, sizeof msg);
    free(work);
    if (st != MENGINE_OK)
        fail_msg("arena size: %s: %s", mengine_status_str(st), msg);
    r->arena = aligned_alloc(MENGINE_ARENA_ALIGN, (r->arena_size + 15) & ~(size_t)15);
    assert_non_null(r->arena);
    assert_int_equal(mengine_init(&r->e, &r->m, r->arena, r->arena_size), MENGINE_OK);
    st = mengine_prepare(&r->e, msg, sizeof msg);
    if (st != MENGINE_OK)
        fail_msg("prepare: %s: %s", mengine_status_str(st), msg);
}

void tb_run_input(tb_run *r, size_t i, const float *x, size_t n)
{
    mengine_view v;
    assert_int_equal(mengine_input(&r->e, i, &v), MENGINE_OK);
    assert_int_equal(v.count, n);
    assert_non_null(v.data);
    memcpy(v.data, x, n * sizeof *x);
}

void tb_run_invoke(tb_run *r)
{
    mengine_status st = mengine_invoke(&r->e);
    if (st != MENGINE_OK)
        fail_msg("invoke: %s", mengine_status_str(st));
}

void tb_run_output(tb_run *r, size_t i, double *y, size_t n)
{
    mengine_view v;
    assert_int_equal(mengine_output(&r->e, i, &v), MENGINE_OK);
    assert_int_equal(v.count, n);
    for (size_t k = 0; k < n; k++)
        y[k] = v.cdata[k];
}

void tb_run_close(tb_run *r)
{
    free(r->arena);
    free(r->file);
    memset(r, 0, sizeof *r);
}

void tb_rand(manta_rng *rng, float *f, double *d, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        f[i] = (float)(lo + (hi - lo) * (double)manta_rng_uniform(rng));
        d[i] = f[i];
    }
}
