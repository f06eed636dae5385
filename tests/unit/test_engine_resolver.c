/* Operator tables (mengine_op_resolver): a model runs the same with a table
 * naming exactly its operators as with every operator; an operator outside
 * the table is refused at load, naming it; the all-operators table names every
 * builtin of the enum once. And when each operator's prepare and eval run:
 * once per operator in mengine_model_load() (the verifier's dry run),
 * mengine_arena_size() and mengine_prepare(), never in mengine_invoke(), whose
 * every call runs each eval once. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil_host.h"
#include "common/tflbuild.h"
#include "engine/ops_impl.h"

/* conv 3x3 -> depthwise 3x3 -> mean -> fully connected -> softmax */
enum { N_OPS = 5 };

static uint8_t *build(size_t *size)
{
    static float w[8 * 27], dw[72], fc[40], bias[8];
    manta_rng rng;
    manta_rng_seed(&rng, 17, 1);
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = manta_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < sizeof dw / sizeof dw[0]; i++)
        dw[i] = manta_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < sizeof fc / sizeof fc[0]; i++)
        fc[i] = manta_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < sizeof bias / sizeof bias[0]; i++)
        bias[i] = 0.1f * (float)i - 0.3f;
    const int32_t d_in[4] = {1, 9, 9, 3}, d_w[4] = {8, 3, 3, 3}, d_a[4] = {1, 9, 9, 8};
    const int32_t d_dw[4] = {1, 3, 3, 8}, d_g[2] = {1, 8}, d_fc[2] = {5, 8}, d_o[2] = {1, 5};
    const int32_t axes[2] = {1, 2}, d_b[1] = {8};
    tb_model m;
    tb_init(&m);
    int32_t in = tb_tensor_f32(&m, "in", 4, d_in, NULL), tw = tb_tensor_f32(&m, "w", 4, d_w, w);
    int32_t a = tb_tensor_f32(&m, "a", 4, d_a, NULL), tdw = tb_tensor_f32(&m, "dw", 4, d_dw, dw);
    int32_t b = tb_tensor_f32(&m, "b", 4, d_a, NULL), ax = tb_tensor_i32(&m, "axes", 2, axes);
    int32_t g = tb_tensor_f32(&m, "g", 2, d_g, NULL), tfc = tb_tensor_f32(&m, "fc", 2, d_fc, fc);
    int32_t l = tb_tensor_f32(&m, "l", 2, d_o, NULL), out = tb_tensor_f32(&m, "out", 2, d_o, NULL);
    int32_t tb = tb_tensor_f32(&m, "bias", 1, d_b, bias);
    const tb_opts conv = {.type = 1, .stride_w = 1, .stride_h = 1, .act = 3};
    const tb_opts dwo = {.type = 2, .stride_w = 1, .stride_h = 1, .depth_multiplier = 1};
    const tb_opts mean = {.type = 27}, fco = {.type = 8}, soft = {.type = 9, .beta = 1.0f};
    const int32_t i_conv[3] = {in, tw, tb}, i_dw[3] = {a, tdw, tb}, i_mean[2] = {b, ax};
    const int32_t i_fc[2] = {g, tfc};
    tb_op_add(&m, MENGINE_OP_CONV_2D, 1, 3, i_conv, a, &conv);
    tb_op_add(&m, MENGINE_OP_DEPTHWISE_CONV_2D, 1, 3, i_dw, b, &dwo);
    tb_op_add(&m, MENGINE_OP_MEAN, 1, 2, i_mean, g, &mean);
    tb_op_add(&m, MENGINE_OP_FULLY_CONNECTED, 6, 2, i_fc, l, &fco);
    tb_op_add(&m, MENGINE_OP_SOFTMAX, 1, 1, &l, out, &soft);
    tb_io(&m, 1, &in, 1, &out);
    uint8_t *file = tb_finish(&m, size);
    tb_release(&m);
    return file;
}

/* Load @p file with @p ops (NULL: mengine_model_load()), prepare, run once on
 * a fixed input; the probabilities go to @p probs (5). */
static void run(const uint8_t *file, size_t size, const mengine_op_resolver *ops, float *probs)
{
    static _Alignas(16) uint8_t work[1 << 16], arena[1 << 18];
    mengine_model m;
    mengine e;
    mengine_view in, out;
    size_t need;
    char msg[256];
    mengine_status st = ops ? mengine_model_load_ops(&m, file, size, ops, NULL, msg, sizeof msg)
                            : mengine_model_load(&m, file, size, NULL, msg, sizeof msg);
    if (st != MENGINE_OK)
        fail_msg("load: %s", msg);
    assert_int_equal(mengine_arena_size(&m, work, sizeof work, &need, msg, sizeof msg), MENGINE_OK);
    assert_true(need <= sizeof arena);
    assert_int_equal(mengine_init(&e, &m, arena, need), MENGINE_OK);
    assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(mengine_input(&e, 0, &in), MENGINE_OK);
    for (size_t i = 0; i < in.count; i++)
        in.data[i] = (float)((int)(i % 11) - 5) * 0.1f;
    assert_int_equal(mengine_invoke(&e), MENGINE_OK);
    assert_int_equal(mengine_output(&e, 0, &out), MENGINE_OK);
    assert_int_equal(out.count, 5);
    memcpy(probs, out.cdata, 5 * sizeof(float));
}

static void test_table_of_the_model_operators(void **state)
{
    (void)state;
    static const mengine_op *const ops[] = {
        &mengine_op_softmax, NULL,
        &mengine_op_conv_2d, &mengine_op_depthwise_conv_2d,
        &mengine_op_mean,    &mengine_op_fully_connected,
        &mengine_op_conv_2d,
    };
    const mengine_op_resolver table = {ops, sizeof ops / sizeof ops[0]};
    size_t size;
    uint8_t *file = build(&size);
    float all[5], few[5], listed[5];
    run(file, size, NULL, all);
    run(file, size, &table, few);
    run(file, size, &mengine_all_ops, listed);
    assert_memory_equal(all, few, sizeof all);
    assert_memory_equal(all, listed, sizeof all);
    free(file);
}

static void test_operator_outside_the_table(void **state)
{
    (void)state;
    static const mengine_op *const ops[] = {&mengine_op_conv_2d, &mengine_op_depthwise_conv_2d,
                                            &mengine_op_fully_connected, &mengine_op_softmax};
    const mengine_op_resolver table = {ops, sizeof ops / sizeof ops[0]};
    const mengine_op_resolver none = {NULL, 0};
    size_t size;
    uint8_t *file = build(&size);
    mengine_model m;
    char msg[256];
    assert_int_equal(mengine_model_load_ops(&m, file, size, &table, NULL, msg, sizeof msg),
                     MENGINE_ERR_UNSUPPORTED_OP);
    assert_non_null(strstr(msg, "operator 2: MEAN (builtin code 40) is not supported"));
    assert_non_null(strstr(msg, "operator table"));
    assert_null(m.data);
    assert_int_equal(mengine_model_load_ops(&m, file, size, &none, NULL, msg, sizeof msg),
                     MENGINE_ERR_UNSUPPORTED_OP);
    assert_non_null(strstr(msg, "operator 0: CONV_2D"));
    assert_int_equal(mengine_model_load_ops(&m, file, size, NULL, NULL, msg, sizeof msg),
                     MENGINE_ERR_ARG);
    assert_true(msg[0] != '\0');
    free(file);
}

static void test_all_operators_table(void **state)
{
    (void)state;
    static const int32_t builtins[] = {
        MENGINE_OP_ADD,
        MENGINE_OP_AVERAGE_POOL_2D,
        MENGINE_OP_CONCATENATION,
        MENGINE_OP_CONV_2D,
        MENGINE_OP_DEPTHWISE_CONV_2D,
        MENGINE_OP_FULLY_CONNECTED,
        MENGINE_OP_LOGISTIC,
        MENGINE_OP_MUL,
        MENGINE_OP_RELU,
        MENGINE_OP_RELU6,
        MENGINE_OP_RESHAPE,
        MENGINE_OP_SOFTMAX,
        MENGINE_OP_PAD,
        MENGINE_OP_MEAN,
        MENGINE_OP_TRANSPOSE_CONV,
        MENGINE_OP_LEAKY_RELU,
        MENGINE_OP_HARD_SWISH,
        MENGINE_OP_SLICE,
        MENGINE_OP_STRIDED_SLICE,
        MENGINE_OP_RESIZE_BILINEAR,
        MENGINE_FUSED_CORRELATION,
    };
    const size_t n = sizeof builtins / sizeof builtins[0];
    /* and the int8 registrations (their builtin codes carry the engine's int8 flag) */
    static const mengine_op *const int8_ops[] = {&mengine_op_add_int8,
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
                                                 &mengine_op_correlation_int8};
    const size_t n8 = sizeof int8_ops / sizeof int8_ops[0];
    assert_int_equal(mengine_all_ops.n_ops, n + n8);
    for (size_t i = 0; i < n8; i++) {
        int found = 0;
        for (size_t k = 0; k < mengine_all_ops.n_ops; k++)
            found += mengine_all_ops.ops[k] == int8_ops[i];
        assert_int_equal(found, 1);
    }
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t k = 0; k < mengine_all_ops.n_ops; k++)
            found += mengine_all_ops.ops[k]->builtin == builtins[i];
        assert_int_equal(found, 1);
        assert_string_not_equal(mengine_op_name(builtins[i]), "UNKNOWN");
    }
    assert_string_equal(mengine_op_name(MENGINE_OP_HARD_SWISH), "HARD_SWISH");
    assert_string_equal(mengine_op_name(MENGINE_OP_QUANTIZE), "QUANTIZE");
    assert_string_equal(mengine_op_name(5), "UNKNOWN");
}

/* ---- when prepare and eval run: the model's registrations wrapped by counters ---- */

static mop_reg wrapped[N_OPS];
static const mop_reg *original[N_OPS];
static unsigned prepares, evals;

static const mop_reg *original_of(int32_t builtin)
{
    for (size_t i = 0; i < N_OPS; i++)
        if (original[i]->builtin == builtin)
            return original[i];
    fail_msg("builtin %d not wrapped", (int)builtin);
    return NULL;
}

static mengine_status counting_prepare(const mop_ctx *c, mnode *node)
{
    prepares++;
    return original_of(c->builtin)->prepare(c, node);
}

static mengine_status counting_eval(const mengine *e, const mnode *node)
{
    evals++;
    return original_of(node->reg->builtin)->eval(e, node);
}

static void observe(void *ctx, uint32_t op)
{
    (void)ctx;
    (void)op;
}

static void test_prepare_runs_once_per_call_and_never_at_invoke(void **state)
{
    (void)state;
    static _Alignas(16) uint8_t work[1 << 16], arena[1 << 18];
    const mop_reg *model_ops[N_OPS] = {&mengine_op_conv_2d, &mengine_op_depthwise_conv_2d,
                                       &mengine_op_mean, &mengine_op_fully_connected,
                                       &mengine_op_softmax};
    const mengine_op *table_ops[N_OPS];
    for (size_t i = 0; i < N_OPS; i++) {
        original[i] = model_ops[i];
        wrapped[i] = *model_ops[i];
        wrapped[i].prepare = counting_prepare;
        wrapped[i].eval = counting_eval;
        table_ops[i] = &wrapped[i];
    }
    const mengine_op_resolver table = {table_ops, N_OPS};
    size_t size, need;
    uint8_t *file = build(&size);
    mengine_model m;
    mengine e;
    char msg[256];
    float counted[5], plain[5];
    prepares = evals = 0;
    assert_int_equal(mengine_model_load_ops(&m, file, size, &table, NULL, msg, sizeof msg),
                     MENGINE_OK);
    assert_int_equal(prepares, N_OPS);
    assert_int_equal(mengine_arena_size(&m, work, sizeof work, &need, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(prepares, 2 * N_OPS);
    assert_int_equal(mengine_init(&e, &m, arena, need), MENGINE_OK);
    assert_int_equal(prepares, 2 * N_OPS);
    assert_int_equal(mengine_prepare(&e, msg, sizeof msg), MENGINE_OK);
    assert_int_equal(prepares, 3 * N_OPS);
    assert_int_equal(evals, 0);
    for (unsigned k = 1; k <= 3; k++) {
        assert_int_equal(mengine_invoke(&e), MENGINE_OK);
        assert_int_equal(evals, k * N_OPS);
    }
    assert_int_equal(mengine_invoke_observed(&e, observe, NULL), MENGINE_OK);
    assert_int_equal(evals, 4 * N_OPS);
    assert_int_equal(prepares, 3 * N_OPS);
    /* the wrapped operators compute what the plain ones do */
    run(file, size, &table, counted);
    run(file, size, NULL, plain);
    assert_memory_equal(counted, plain, sizeof plain);
    free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_of_the_model_operators),
        cmocka_unit_test(test_operator_outside_the_table),
        cmocka_unit_test(test_all_operators_table),
        cmocka_unit_test(test_prepare_runs_once_per_call_and_never_at_invoke),
    };
    return cmocka_run_group_tests_name("engine operator tables", tests, NULL, NULL);
}
