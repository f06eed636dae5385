/* The model verifier: each kind of broken file gets its own error code, and
 * no input (truncated, corrupted) makes the reader touch memory outside the
 * file. Files are copied into buffers of exactly their size so that the
 * address sanitizer catches any read past the end. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "common/tflbuild.h"

/* ---- helpers ---- */

static uint32_t r32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t r16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void w32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void w16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* First occurrence of @p pat in @p f, or NULL. */
static uint8_t *find_bytes(uint8_t *f, size_t n, const char *pat, size_t len)
{
    for (size_t i = 0; i + len <= n; i++)
        if (memcmp(f + i, pat, len) == 0)
            return f + i;
    return NULL;
}

static uint32_t vtable_of(const uint8_t *f, uint32_t table)
{
    return (uint32_t)((int64_t)table - (int32_t)r32(f + table));
}

/* Position of field @p id of the table at @p table (0 when absent). */
static uint32_t field_at(const uint8_t *f, uint32_t table, int id)
{
    uint32_t vt = vtable_of(f, table);
    if (4u + 2u * (unsigned)id >= r16(f + vt))
        return 0;
    uint16_t fo = r16(f + vt + 4 + 2 * id);
    return fo ? table + fo : 0;
}

/* conv 3x3 -> relu -> fully connected -> softmax, with names and a description. */
static void build_base(tb_model *m)
{
    static float w[4 * 3 * 3 * 2], fc[3 * 64], b[4];
    const int32_t din[4] = {1, 4, 4, 2}, dw[4] = {4, 3, 3, 2}, db[1] = {4};
    const int32_t dact[4] = {1, 4, 4, 4}, dfc[2] = {3, 64}, dout[2] = {1, 3};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)((int)(i % 7) - 3) * 0.1f;
    for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++)
        fc[i] = (float)((int)(i % 5) - 2) * 0.05f;
    tb_init(m);
    int32_t in = tb_tensor_f32(m, "image", 4, din, NULL);
    int32_t tw = tb_tensor_f32(m, "conv/w", 4, dw, w), tb = tb_tensor_f32(m, "conv/b", 1, db, b);
    int32_t c1 = tb_tensor_f32(m, "conv", 4, dact, NULL),
            r1 = tb_tensor_f32(m, "relu", 4, dact, NULL);
    int32_t tf = tb_tensor_f32(m, "fc/w", 2, dfc, fc),
            f1 = tb_tensor_f32(m, "logits", 2, dout, NULL);
    int32_t out = tb_tensor_f32(m, "probs", 2, dout, NULL);
    const int32_t conv_in[3] = {in, tw, tb}, fc_in[3] = {r1, tf, -1};
    tb_opts co = {.type = 1, .padding = 0, .stride_w = 1, .stride_h = 1};
    tb_opts so = {.type = 9, .beta = 1.0f}, fo = {.type = 8};
    tb_op_add(m, MENGINE_OP_CONV_2D, 1, 3, conv_in, c1, &co);
    tb_op_add(m, MENGINE_OP_RELU, 1, 1, &c1, r1, NULL);
    tb_op_add(m, MENGINE_OP_FULLY_CONNECTED, 6, 3, fc_in, f1, &fo);
    tb_op_add(m, MENGINE_OP_SOFTMAX, 1, 1, &f1, out, &so);
    tb_io(m, 1, &in, 1, &out);
}

static uint8_t *base_file(size_t *size)
{
    tb_model m;
    build_base(&m);
    uint8_t *f = tb_finish(&m, size);
    tb_release(&m);
    return f;
}

/* Load a copy of @p n bytes in an exact-size buffer. */
static mengine_status load_copy(const uint8_t *f, size_t n, const mengine_verify_opts *o, char *msg,
                                size_t cap)
{
    mengine_model m;
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, f, n);
    mengine_status st = mengine_model_load(&m, copy, n, o, msg, cap);
    free(copy);
    return st;
}

static void expect_file(const uint8_t *f, size_t n, const mengine_verify_opts *o,
                        mengine_status want, const char *in_msg)
{
    char msg[256];
    mengine_status st = load_copy(f, n, o, msg, sizeof msg);
    if (st != want)
        fail_msg("expected %s, got %s: %s", mengine_status_str(want), mengine_status_str(st), msg);
    if (want != MENGINE_OK && !msg[0])
        fail_msg("no message for %s", mengine_status_str(st));
    if (in_msg && !strstr(msg, in_msg))
        fail_msg("message '%s' does not mention '%s'", msg, in_msg);
}

static void expect_model(const tb_model *m, mengine_status want, const char *in_msg)
{
    size_t n;
    uint8_t *f = tb_finish(m, &n);
    expect_file(f, n, NULL, want, in_msg);
    free(f);
}

/* ---- structure ---- */

static void test_valid_base_loads(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    expect_file(f, n, NULL, MENGINE_OK, NULL);
    free(f);
}

static void test_truncated(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    expect_file(f, 7, NULL, MENGINE_ERR_TRUNCATED, "header");
    expect_file(f, 0, NULL, MENGINE_ERR_TRUNCATED, NULL);
    for (size_t k = 0; k < n; k++) { /* every prefix is rejected, none read past its end */
        char msg[256];
        assert_int_not_equal(load_copy(f, k, NULL, msg, sizeof msg), MENGINE_OK);
    }
    free(f);
}

static void test_bad_identifier(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    f[4] = 'X';
    expect_file(f, n, NULL, MENGINE_ERR_IDENTIFIER, "TFL3");
    free(f);
}

static void test_offset_out_of_bounds(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    const uint32_t root = r32(f);
    w32(f, (uint32_t)n + 8); /* root beyond the end */
    expect_file(f, n, NULL, MENGINE_ERR_OFFSET, "outside");
    w32(f, root);
    const uint32_t sg = field_at(f, root, 2); /* Model.subgraphs */
    assert_true(sg != 0);
    const uint32_t keep = r32(f + sg);
    w32(f + sg, 0x7ffffff0u);
    expect_file(f, n, NULL, MENGINE_ERR_OFFSET, NULL);
    w32(f + sg, 0); /* zero offset */
    expect_file(f, n, NULL, MENGINE_ERR_OFFSET, NULL);
    w32(f + sg, keep);
    expect_file(f, n, NULL, MENGINE_OK, NULL);
    free(f);
}

static void test_misaligned_offset(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    const uint32_t root = r32(f);
    w32(f, root + 2); /* root table not 4-aligned */
    expect_file(f, n, NULL, MENGINE_ERR_ALIGNMENT, "aligned");
    w32(f, root);
    const uint32_t sg = field_at(f, root, 2);
    w32(f + sg, r32(f + sg) + 2); /* subgraphs vector not 4-aligned */
    expect_file(f, n, NULL, MENGINE_ERR_ALIGNMENT, "vector");
    free(f);
}

static void test_vtable_out_of_bounds(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    const uint32_t root = r32(f), vt = vtable_of(f, root);
    const uint32_t soff = r32(f + root);
    w32(f + root, (uint32_t)((int64_t)root - (int64_t)n - 64)); /* vtable past the end */
    expect_file(f, n, NULL, MENGINE_ERR_VTABLE, "vtable");
    w32(f + root, soff);
    const uint16_t vsize = r16(f + vt);
    w16(f + vt, 5); /* odd vtable size */
    expect_file(f, n, NULL, MENGINE_ERR_VTABLE, NULL);
    w16(f + vt, vsize);
    w16(f + vt + 4, 0xfff0); /* Model.version outside the table */
    expect_file(f, n, NULL, MENGINE_ERR_VTABLE, "outside the table");
    free(f);
}

static void test_unterminated_string(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    static const char desc[] = "manta test model";
    uint8_t *at = find_bytes(f, n, desc, sizeof desc - 1);
    assert_non_null(at);
    assert_int_equal(at[sizeof desc - 1], 0);
    at[sizeof desc - 1] = 'X';
    expect_file(f, n, NULL, MENGINE_ERR_STRING, "terminator");
    free(f);
}

static void test_vector_length_overflow(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    const uint32_t root = r32(f), sg = field_at(f, root, 2);
    const uint32_t vec = sg + r32(f + sg);
    w32(f + vec, 0x40000000u); /* 2^30 offsets: 4 GiB, overflows 32 bits */
    expect_file(f, n, NULL, MENGINE_ERR_VECTOR, "past the end");
    free(f);
}

static void test_deep_nesting(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    const mengine_verify_opts shallow = {2, 0}, few = {0, 3};
    expect_file(f, n, &shallow, MENGINE_ERR_DEPTH, "deep");
    expect_file(f, n, &few, MENGINE_ERR_LIMIT, NULL);
    free(f);
}

/* ---- meaning ---- */

static void test_opcode_index_out_of_range(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.op[1].opcode = 9;
    expect_model(&m, MENGINE_ERR_OPCODE_INDEX, "operator 1");
    tb_release(&m);
}

static void test_tensor_index_out_of_range(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.op[2].in[1] = 99;
    expect_model(&m, MENGINE_ERR_TENSOR_INDEX, "99");
    m.op[2].in[1] = -7; /* only -1 means absent */
    expect_model(&m, MENGINE_ERR_TENSOR_INDEX, NULL);
    tb_release(&m);
    build_base(&m);
    m.out[0] = 40; /* model output */
    expect_model(&m, MENGINE_ERR_TENSOR_INDEX, "output");
    tb_release(&m);
}

static void test_buffer_index_out_of_range(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.t[1].buffer = 77;
    expect_model(&m, MENGINE_ERR_BUFFER_INDEX, "conv/w");
    tb_release(&m);
}

static void test_buffer_size_mismatch(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    const float few[5] = {0};
    m.t[1].buffer = (uint32_t)tb_buffer_add(&m, few, sizeof few);
    expect_model(&m, MENGINE_ERR_BUFFER_SIZE, "conv/w");
    tb_release(&m);
    build_base(&m); /* buffer 0 must be empty */
    m.buf[0].data = malloc(4);
    assert_non_null(m.buf[0].data);
    memset(m.buf[0].data, 0, 4);
    m.buf[0].bytes = 4;
    expect_model(&m, MENGINE_ERR_BUFFER_SIZE, "sentinel");
    tb_release(&m);
}

static void test_unsupported_op(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.code[m.op[1].opcode] = 17; /* MAX_POOL_2D */
    expect_model(&m, MENGINE_ERR_UNSUPPORTED_OP, "17");
    m.code[m.op[1].opcode] = 32; /* CUSTOM */
    expect_model(&m, MENGINE_ERR_UNSUPPORTED_OP, NULL);
    m.code[m.op[1].opcode] = 300; /* beyond the enum */
    expect_model(&m, MENGINE_ERR_UNSUPPORTED_OP, NULL);
    tb_release(&m);
}

static void test_unsupported_op_version(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.code_version[m.op[0].opcode] = 9;
    expect_model(&m, MENGINE_ERR_OP_VERSION, "CONV_2D");
    m.code_version[m.op[0].opcode] = 0;
    expect_model(&m, MENGINE_ERR_OP_VERSION, NULL);
    tb_release(&m);
}

static void test_unsupported_type(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.t[4].type = 9; /* INT8 */
    expect_model(&m, MENGINE_ERR_TYPE, "relu");
    m.t[4].type = 2; /* INT32 activation */
    expect_model(&m, MENGINE_ERR_TYPE, "constant");
    tb_release(&m);
}

static void test_bad_shapes(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.t[3].dims[2] = 3; /* conv output 4x3 instead of 4x4 */
    expect_model(&m, MENGINE_ERR_SHAPE, "expected [1, 4, 4, 4]");
    tb_release(&m);
    build_base(&m);
    m.t[0].rank = 5;
    m.t[0].dims[4] = 1;
    expect_model(&m, MENGINE_ERR_SHAPE, "rank 5");
    m.t[0].rank = 4;
    m.t[0].dims[1] = 0;
    expect_model(&m, MENGINE_ERR_SHAPE, "dimension 1");
    tb_release(&m);
    build_base(&m);
    m.t[1].dims[3] = 3; /* filter input channels (and buffer size stays) */
    expect_model(&m, MENGINE_ERR_BUFFER_SIZE, NULL);
    tb_release(&m);
}

static void test_bad_options(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.op[0].o.stride_w = 0;
    expect_model(&m, MENGINE_ERR_OPTIONS, "strides");
    m.op[0].o.stride_w = 1;
    m.op[0].o.act = 4; /* TANH */
    expect_model(&m, MENGINE_ERR_OPTIONS, "activation");
    m.op[0].o.act = 0;
    m.op[0].o.dilation_h = 2;
    expect_model(&m, MENGINE_ERR_OPTIONS, "dilation");
    m.op[0].o.dilation_h = 0;
    m.op[0].o.type = 2; /* DepthwiseConv2DOptions on a CONV_2D */
    expect_model(&m, MENGINE_ERR_OPTIONS, "union type");
    m.op[0].o.type = 1;
    m.op[3].o.type = 0; /* SOFTMAX without options: beta 0 */
    expect_model(&m, MENGINE_ERR_OPTIONS, "beta");
    tb_release(&m);
}

static void test_graph_errors(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.op[1].in[0] = 4; /* relu reads its own output */
    expect_model(&m, MENGINE_ERR_GRAPH, "before any operator writes it");
    tb_release(&m);
    build_base(&m);
    m.op[1].out[0] = 3; /* conv and relu both write tensor 3 */
    m.op[2].in[0] = 3;
    expect_model(&m, MENGINE_ERR_GRAPH, "already written");
    tb_release(&m);
    build_base(&m);
    m.op[1].out[0] = 1; /* writes a constant */
    expect_model(&m, MENGINE_ERR_GRAPH, "constant");
    tb_release(&m);
    build_base(&m);
    m.out[0] = 0; /* the input is also the output */
    expect_model(&m, MENGINE_ERR_GRAPH, "both");
    tb_release(&m);
    build_base(&m);
    m.op[0].in[2] = -1; /* CONV_2D without bias: TFLite refuses it */
    expect_model(&m, MENGINE_ERR_GRAPH, "bias");
    m.op[0].n_in = 2;
    expect_model(&m, MENGINE_ERR_GRAPH, "bias");
    tb_release(&m);
    build_base(&m);
    m.op[0].n_out = 2;
    m.op[0].out[1] = 5;
    expect_model(&m, MENGINE_ERR_GRAPH, "2 outputs");
    tb_release(&m);
}

static void test_schema_version_and_subgraph(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    m.version = 2;
    expect_model(&m, MENGINE_ERR_VERSION, "version 2");
    m.version = 3;
    m.n_op = 0;
    expect_model(&m, MENGINE_ERR_SUBGRAPH, "operators");
    tb_release(&m);
}

static void test_offline_plan_format(void **state)
{
    (void)state;
    tb_model m;
    build_base(&m);
    int32_t offsets[TB_MAX_TENSORS];
    for (int i = 0; i < m.n_t; i++)
        offsets[i] = -1;
    offsets[3] = 6; /* not a multiple of 4 */
    tb_offline(&m, offsets);
    expect_model(&m, MENGINE_ERR_PLAN, "tensor 3");
    tb_release(&m);
    build_base(&m);
    tb_offline(&m, offsets);
    int32_t *plan = (int32_t *)(void *)m.buf[m.offline_buffer].data;
    plan[0] = 2; /* format version */
    expect_model(&m, MENGINE_ERR_PLAN, "header");
    tb_release(&m);
}

/* in (1, 3, 3, 2) -> PAD (rank-4 paddings) -> out; @p pads as written. */
static void pad_model(tb_model *m, const int32_t *pads, int pad_rows, int type,
                      const int32_t *out_dims)
{
    const int32_t din[4] = {1, 3, 3, 2}, dp[2] = {pad_rows, 2};
    tb_init(m);
    int32_t ins[2];
    ins[0] = tb_tensor_f32(m, "in", 4, din, NULL);
    ins[1] = tb_tensor_buf(m, "paddings", type, 2, dp,
                           (uint32_t)tb_buffer_add(m, pads, (size_t)pad_rows * 2 * sizeof *pads));
    int32_t out = tb_tensor_f32(m, "out", 4, out_dims, NULL);
    tb_opts o = {.type = 22};
    tb_op_add(m, MENGINE_OP_PAD, 1, 2, ins, out, &o);
    tb_io(m, 1, ins, 1, &out);
}

static void test_pad_rules(void **state)
{
    (void)state;
    tb_model m;
    const int32_t good[8] = {0, 0, 0, 1, 1, 0, 0, 0}, d_good[4] = {1, 4, 4, 2};
    pad_model(&m, good, 4, 2, d_good);
    expect_model(&m, MENGINE_OK, NULL);
    m.op[0].o.type = 0; /* PadOptions are optional */
    expect_model(&m, MENGINE_OK, NULL);
    m.op[0].o.type = 21; /* MulOptions */
    expect_model(&m, MENGINE_ERR_OPTIONS, "union type");
    m.op[0].o.type = 22;
    m.t[2].dims[1] = 5; /* output shape does not follow the paddings */
    expect_model(&m, MENGINE_ERR_SHAPE, "expected [1, 4, 4, 2]");
    m.t[2].dims[1] = 4;
    m.op[0].n_in = 1; /* no paddings */
    expect_model(&m, MENGINE_ERR_GRAPH, "paddings");
    m.op[0].n_in = 2;
    m.t[1].type = 0; /* FLOAT32 paddings */
    expect_model(&m, MENGINE_ERR_TYPE, "INT32");
    m.t[1].type = 2;
    m.t[1].buffer = 0; /* not a constant */
    expect_model(&m, MENGINE_ERR_TYPE, NULL);
    tb_release(&m);
    const int32_t neg[8] = {0, 0, -1, 2, 0, 0, 0, 0}, d_neg[4] = {1, 4, 3, 2};
    pad_model(&m, neg, 4, 2, d_neg);
    expect_model(&m, MENGINE_ERR_OPTIONS, "negative");
    tb_release(&m);
    const int32_t rows3[6] = {0, 0, 1, 1, 0, 0}; /* [3, 2] for a rank-4 input */
    const int32_t d3[4] = {1, 5, 3, 2};
    pad_model(&m, rows3, 3, 2, d3);
    expect_model(&m, MENGINE_ERR_TYPE, "[4, 2]");
    tb_release(&m);
    const int32_t huge[8] = {0, 0, 0x7ffffff0, 0x7ffffff0, 0, 0, 0, 0}, d_h[4] = {1, 1, 3, 2};
    pad_model(&m, huge, 4, 2, d_h);
    expect_model(&m, MENGINE_ERR_SHAPE, "too large");
    tb_release(&m);
}

/* Flip bytes of a valid model: every result is either rejected or runs cleanly. */
/* One SLICE (or STRIDED_SLICE when @p end is given) of a (1, 4, 6, 3) input. */
static void slice_model(tb_model *m, const int32_t *begin, const int32_t *size, const int32_t *end,
                        const int32_t *strides, const int32_t *out_dims, const tb_opts *o)
{
    const int32_t din[4] = {1, 4, 6, 3};
    tb_init(m);
    int32_t ins[4];
    ins[0] = tb_tensor_f32(m, "features", 4, din, NULL);
    ins[1] = tb_tensor_i32(m, "begin", 4, begin);
    if (end) {
        ins[2] = tb_tensor_i32(m, "end", 4, end);
        ins[3] = tb_tensor_i32(m, "strides", 4, strides);
    } else {
        ins[2] = tb_tensor_i32(m, "size", 4, size);
    }
    const int32_t out = tb_tensor_f32(m, "out", 4, out_dims, NULL);
    tb_op_add(m, end ? MENGINE_OP_STRIDED_SLICE : MENGINE_OP_SLICE, 1, end ? 4 : 3, ins, out, o);
    tb_io(m, 1, ins, 1, &out);
}

static void test_slice_rules(void **state)
{
    (void)state;
    tb_model m;
    const int32_t b_ok[4] = {0, 1, 2, 0}, s_ok[4] = {1, 3, 4, 3}, o_ok[4] = {1, 3, 4, 3};
    slice_model(&m, b_ok, s_ok, NULL, NULL, o_ok, NULL);
    expect_model(&m, MENGINE_OK, NULL);
    tb_release(&m);
    /* running past the tensor: operator index and field named */
    const int32_t s_past[4] = {1, 3, 5, 3}, o_past[4] = {1, 3, 5, 3};
    slice_model(&m, b_ok, s_past, NULL, NULL, o_past, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE,
                 "operator 0 (SLICE): begin[2] + size[2] = 7 runs past dim 2 of the input (6)");
    tb_release(&m);
    const int32_t b_neg[4] = {0, 0, -1, 0};
    slice_model(&m, b_neg, s_ok, NULL, NULL, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE, "operator 0 (SLICE): begin[2] = -1 lies outside dim 2");
    tb_release(&m);
    const int32_t s_zero[4] = {1, 3, 0, 3};
    slice_model(&m, b_ok, s_zero, NULL, NULL, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE, "size[2] = 0");
    tb_release(&m);
    /* the output must be the slice's shape; -1 takes the rest of the dim */
    const int32_t s_rest[4] = {-1, 3, -1, 3}, o_wrong[4] = {1, 3, 3, 3};
    slice_model(&m, b_ok, s_rest, NULL, NULL, o_wrong, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE, "expected [1, 3, 4, 3]");
    tb_release(&m);
    /* begin with a value per dim of the input */
    slice_model(&m, b_ok, s_ok, NULL, NULL, o_ok, NULL);
    m.t[1].dims[0] = 3;
    m.buf[m.t[1].buffer].bytes = 12;
    expect_model(&m, MENGINE_ERR_SHAPE, "input 1 (begin");
    tb_release(&m);
    /* begin must be a constant */
    slice_model(&m, b_ok, s_ok, NULL, NULL, o_ok, NULL);
    m.t[1].buffer = 0;
    expect_model(&m, MENGINE_ERR_TYPE, "INT32 is only supported for constant");
    tb_release(&m);
}

static void test_strided_slice_rules(void **state)
{
    (void)state;
    tb_model m;
    const int32_t b[4] = {0, 0, 1, 0}, e[4] = {1, 4, 6, 3}, st[4] = {1, 2, 2, 1};
    const int32_t o_ok[4] = {1, 2, 3, 3};
    slice_model(&m, b, NULL, e, st, o_ok, NULL);
    expect_model(&m, MENGINE_OK, NULL);
    tb_release(&m);
    const int32_t e_past[4] = {1, 4, 7, 3};
    slice_model(&m, b, NULL, e_past, st, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE,
                 "operator 0 (STRIDED_SLICE): end[2] = 7 runs past dim 2 of the input (6)");
    tb_release(&m);
    const int32_t b_past[4] = {0, 4, 1, 0};
    slice_model(&m, b_past, NULL, e, st, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE, "begin[1] = 4 lies outside dim 1 (4)");
    tb_release(&m);
    const int32_t e_empty[4] = {1, 4, 1, 3};
    slice_model(&m, b, NULL, e_empty, st, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_SHAPE, "empty slice");
    tb_release(&m);
    const int32_t st_zero[4] = {1, 0, 2, 1}, st_neg[4] = {1, -1, 2, 1};
    slice_model(&m, b, NULL, e, st_zero, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_OPTIONS, "strides[1] = 0");
    tb_release(&m);
    slice_model(&m, b, NULL, e, st_neg, o_ok, NULL);
    expect_model(&m, MENGINE_ERR_UNSUPPORTED, "strides[1] = -1");
    tb_release(&m);
    const tb_opts ellipsis = {.type = 32, .ellipsis_mask = 1};
    slice_model(&m, b, NULL, e, st, o_ok, &ellipsis);
    expect_model(&m, MENGINE_ERR_UNSUPPORTED, "ellipsis_mask");
    tb_release(&m);
    /* shrink_axis drops dim 0 */
    const tb_opts shrink = {.type = 32, .shrink_axis_mask = 1};
    slice_model(&m, b, NULL, e, st, o_ok, &shrink);
    expect_model(&m, MENGINE_ERR_SHAPE, "expected [2, 3, 3]");
    tb_release(&m);
}

static void test_stereo_op_rules(void **state)
{
    (void)state;
    tb_model m;
    /* RESIZE_BILINEAR: both flags, a size of the wrong length, an output of another size */
    const int32_t din[4] = {1, 3, 4, 2}, dout[4] = {1, 6, 8, 2}, size[2] = {6, 8};
    for (int k = 0; k < 3; k++) {
        tb_init(&m);
        int32_t ins[2];
        ins[0] = tb_tensor_f32(&m, "in", 4, din, NULL);
        ins[1] = tb_tensor_i32(&m, "size", k == 1 ? 1 : 2, size);
        const int32_t wrong[4] = {1, 6, 7, 2};
        const int32_t out = tb_tensor_f32(&m, "out", 4, k == 2 ? wrong : dout, NULL);
        const tb_opts o = {.type = 15, .align_corners = k == 0, .half_pixel_centers = 1};
        tb_op_add(&m, MENGINE_OP_RESIZE_BILINEAR, 3, 2, ins, out, &o);
        tb_io(&m, 1, ins, 1, &out);
        expect_model(&m, k == 0 ? MENGINE_ERR_OPTIONS : MENGINE_ERR_SHAPE,
                     k == 0   ? "align_corners and half_pixel_centers"
                     : k == 1 ? "has 1 values, expected 2"
                              : "expected [1, 6, 8, 2]");
        tb_release(&m);
    }
    /* TRANSPOSE_CONV k4 s2 SAME: an output shape that stride and padding do not give */
    static float w[2 * 4 * 4 * 3], bias[2];
    for (int k = 0; k < 2; k++) {
        const int32_t tin[4] = {1, 3, 4, 3}, dw[4] = {2, 4, 4, 3}, db[1] = {2};
        const int32_t shape[4] = {1, 6, k ? 9 : 8, 2};
        tb_init(&m);
        int32_t ins[4];
        ins[0] = tb_tensor_i32(&m, "shape", 4, shape);
        ins[1] = tb_tensor_f32(&m, "w", 4, dw, w);
        ins[2] = tb_tensor_f32(&m, "in", 4, tin, NULL);
        ins[3] = tb_tensor_f32(&m, "b", 1, db, bias);
        const int32_t out = tb_tensor_f32(&m, "up", 4, shape, NULL);
        const tb_opts o = {.type = 49, .padding = 0, .stride_w = 2, .stride_h = 2};
        tb_op_add(&m, MENGINE_OP_TRANSPOSE_CONV, 3, 4, ins, out, &o);
        tb_io(&m, 1, &ins[2], 1, &out);
        expect_model(&m, k ? MENGINE_ERR_SHAPE : MENGINE_OK,
                     k ? "a 6x9 output with these strides and padding needs 3x5" : NULL);
        tb_release(&m);
    }
    /* CONCATENATION along the channels of inputs that differ in width */
    for (int k = 0; k < 2; k++) {
        const int32_t a[4] = {1, 3, 4, 2}, b[4] = {1, 3, k ? 5 : 4, 1}, o[4] = {1, 3, 4, 3};
        tb_init(&m);
        int32_t ins[2];
        ins[0] = tb_tensor_f32(&m, "a", 4, a, NULL);
        ins[1] = tb_tensor_f32(&m, "b", 4, b, NULL);
        const int32_t out = tb_tensor_f32(&m, "cat", 4, o, NULL);
        const tb_opts co = {.type = 10, .axis = 3};
        tb_op_add(&m, MENGINE_OP_CONCATENATION, 1, 2, ins, out, &co);
        tb_io(&m, 2, ins, 1, &out);
        expect_model(&m, k ? MENGINE_ERR_SHAPE : MENGINE_OK,
                     k ? "input 1 (tensor 1 'b') differs from the output outside axis 3" : NULL);
        tb_release(&m);
    }
    /* MEAN over the channels with dims kept is (N, H, W, 1); over H alone is refused */
    for (int k = 0; k < 3; k++) {
        const int32_t in[4] = {1, 3, 4, 5}, kept[4] = {1, 3, 4, 1}, axes[1] = {k == 2 ? 1 : 3};
        const int32_t wrong[4] = {1, 3, 4, 5};
        tb_init(&m);
        int32_t ins[2];
        ins[0] = tb_tensor_f32(&m, "x", 4, in, NULL);
        ins[1] = tb_tensor_i32(&m, "axes", 1, axes);
        const int32_t out = tb_tensor_f32(&m, "mean", 4, k == 1 ? wrong : kept, NULL);
        const tb_opts mo = {.type = 27, .keep_dims = 1};
        tb_op_add(&m, MENGINE_OP_MEAN, 1, 2, ins, out, &mo);
        tb_io(&m, 1, ins, 1, &out);
        expect_model(&m,
                     k == 0   ? MENGINE_OK
                     : k == 1 ? MENGINE_ERR_SHAPE
                              : MENGINE_ERR_UNSUPPORTED,
                     k == 1   ? "expected [1, 3, 4, 1]"
                     : k == 2 ? "{3} (C)"
                              : NULL);
        tb_release(&m);
    }
    /* a model cannot name the engine's fused correlation */
    build_base(&m);
    m.code[1] = MENGINE_FUSED_CORRELATION; /* the RELU's code */
    expect_model(&m, MENGINE_ERR_UNSUPPORTED_OP, "builtin code -2");
    tb_release(&m);
}

static void test_corrupted_files_are_safe(void **state)
{
    (void)state;
    size_t n;
    uint8_t *f = base_file(&n);
    manta_rng rng;
    manta_rng_seed(&rng, 99, 1);
    int accepted = 0;
    for (size_t iter = 0; iter < 3 * n; iter++) {
        uint8_t *copy = malloc(n);
        assert_non_null(copy);
        memcpy(copy, f, n);
        if (iter < n) {
            copy[iter] ^= 0xff; /* every byte once */
        } else {
            for (int k = 0; k < 4; k++)
                copy[manta_rng_below(&rng, (uint32_t)n)] = (uint8_t)manta_rng_u32(&rng);
        }
        mengine_model m;
        char msg[128];
        if (mengine_model_load(&m, copy, n, NULL, msg, sizeof msg) == MENGINE_OK) {
            size_t ws = mengine_plan_work_size(&m), need;
            void *work = malloc(ws);
            assert_non_null(work);
            if (mengine_arena_size(&m, work, ws, &need, msg, sizeof msg) == MENGINE_OK &&
                need < (64u << 20)) {
                void *arena = aligned_alloc(16, (need + 15) & ~(size_t)15);
                mengine e;
                mengine_view v;
                assert_non_null(arena);
                assert_int_equal(mengine_init(&e, &m, arena, need), MENGINE_OK);
                assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_OK);
                for (size_t i = 0; i < mengine_input_count(&e); i++) {
                    assert_int_equal(mengine_input(&e, i, &v), MENGINE_OK);
                    memset(v.data, 0, v.count * sizeof(float));
                }
                assert_int_equal(mengine_invoke(&e), MENGINE_OK);
                accepted++;
                free(arena);
            }
            free(work);
        }
        free(copy);
    }
    print_message("# %d of %zu corrupted models still valid and run\n", accepted, 3 * n);
    free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_base_loads),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_identifier),
        cmocka_unit_test(test_offset_out_of_bounds),
        cmocka_unit_test(test_misaligned_offset),
        cmocka_unit_test(test_vtable_out_of_bounds),
        cmocka_unit_test(test_unterminated_string),
        cmocka_unit_test(test_vector_length_overflow),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_opcode_index_out_of_range),
        cmocka_unit_test(test_tensor_index_out_of_range),
        cmocka_unit_test(test_buffer_index_out_of_range),
        cmocka_unit_test(test_buffer_size_mismatch),
        cmocka_unit_test(test_unsupported_op),
        cmocka_unit_test(test_unsupported_op_version),
        cmocka_unit_test(test_unsupported_type),
        cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_graph_errors),
        cmocka_unit_test(test_schema_version_and_subgraph),
        cmocka_unit_test(test_offline_plan_format),
        cmocka_unit_test(test_pad_rules),
        cmocka_unit_test(test_slice_rules),
        cmocka_unit_test(test_strided_slice_rules),
        cmocka_unit_test(test_stereo_op_rules),
        cmocka_unit_test(test_corrupted_files_are_safe),
    };
    return cmocka_run_group_tests_name("engine verifier", tests, NULL, NULL);
}
