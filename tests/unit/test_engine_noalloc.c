/* The engine never allocates. This binary is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free (see the
 * Makefile), so every allocation call made from the statically linked code
 * (tests, libmanta, libmanta_engine) goes through the wrappers below; while
 * `guarded` is set, any such call aborts the program.
 *
 * Defining malloc itself in the test is not workable: cmocka, stdio and the
 * address sanitizer need the real allocator in the same process. The link
 * wrap catches exactly the references the engine library makes, which the
 * nm check (tests/integration/engine_noalloc.sh) also rules out statically. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/testutil_host.h"
#include "common/tflbuild.h"
#include "common/xgrand.h"
#include "export/quant.h"
#include "export/tflite.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static volatile int guarded;
static size_t calls;

static void forbidden(const char *what)
{
    static const char head[] = "engine called the allocator: ";
    ssize_t r = write(2, head, sizeof head - 1);
    r = write(2, what, strlen(what));
    r = write(2, "\n", 1);
    (void)r;
    abort();
}

void *__wrap_malloc(size_t n)
{
    calls++;
    if (guarded)
        forbidden("malloc");
    return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    calls++;
    if (guarded)
        forbidden("calloc");
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    calls++;
    if (guarded)
        forbidden("realloc");
    return __real_realloc(p, n);
}

void __wrap_free(void *p)
{
    calls++;
    if (guarded && p)
        forbidden("free");
    __real_free(p);
}

/* conv 3x3 -> depthwise 3x3 -> mean -> fully connected -> softmax */
static void build(tb_model *m, float *w, float *dw, float *fc)
{
    const int32_t d_in[4] = {1, 9, 9, 3}, d_w[4] = {8, 3, 3, 3}, d_a[4] = {1, 9, 9, 8};
    const int32_t d_dw[4] = {1, 3, 3, 8}, d_g[2] = {1, 8}, d_fc[2] = {5, 8}, d_o[2] = {1, 5};
    const int32_t axes[2] = {1, 2}, d_b[1] = {8};
    static const float bias[8] = {0.1f, -0.1f, 0.2f, -0.2f, 0.3f, -0.3f, 0.0f, 0.05f};
    tb_init(m);
    int32_t in = tb_tensor_f32(m, "in", 4, d_in, NULL), tw = tb_tensor_f32(m, "w", 4, d_w, w);
    int32_t a = tb_tensor_f32(m, "a", 4, d_a, NULL), tdw = tb_tensor_f32(m, "dw", 4, d_dw, dw);
    int32_t b = tb_tensor_f32(m, "b", 4, d_a, NULL), ax = tb_tensor_i32(m, "axes", 2, axes);
    int32_t g = tb_tensor_f32(m, "g", 2, d_g, NULL), tfc = tb_tensor_f32(m, "fc", 2, d_fc, fc);
    int32_t l = tb_tensor_f32(m, "l", 2, d_o, NULL), out = tb_tensor_f32(m, "out", 2, d_o, NULL);
    int32_t tb = tb_tensor_f32(m, "bias", 1, d_b, bias);
    const tb_opts conv = {.type = 1, .stride_w = 1, .stride_h = 1, .act = 3};
    const tb_opts dwo = {.type = 2, .stride_w = 1, .stride_h = 1, .depth_multiplier = 1};
    const tb_opts mean = {.type = 27}, fco = {.type = 8}, soft = {.type = 9, .beta = 1.0f};
    const int32_t i_conv[3] = {in, tw, tb}, i_dw[3] = {a, tdw, tb}, i_mean[2] = {b, ax};
    const int32_t i_fc[2] = {g, tfc};
    tb_op_add(m, MENGINE_OP_CONV_2D, 1, 3, i_conv, a, &conv);
    tb_op_add(m, MENGINE_OP_DEPTHWISE_CONV_2D, 1, 3, i_dw, b, &dwo);
    tb_op_add(m, MENGINE_OP_MEAN, 1, 2, i_mean, g, &mean);
    tb_op_add(m, MENGINE_OP_FULLY_CONNECTED, 6, 2, i_fc, l, &fco);
    tb_op_add(m, MENGINE_OP_SOFTMAX, 1, 1, &l, out, &soft);
    tb_io(m, 1, &in, 1, &out);
}

static void test_wrap_is_active(void **state)
{
    (void)state;
    size_t before = calls;
    void *p = malloc(16);
    assert_non_null(p);
    free(p);
    assert_int_equal(calls, before + 2);
}

static void test_engine_runs_without_allocator(void **state)
{
    (void)state;
    static float w[8 * 27], dw[72], fc[40], x[243];
    manta_rng rng;
    manta_rng_seed(&rng, 41, 1);
    for (size_t i = 0; i < 243; i++)
        x[i] = manta_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < 216; i++)
        w[i] = manta_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < 72; i++)
        dw[i] = manta_rng_uniform(&rng) - 0.5f;
    for (size_t i = 0; i < 40; i++)
        fc[i] = manta_rng_uniform(&rng) - 0.5f;
    tb_model m;
    build(&m, w, dw, fc);
    size_t size;
    uint8_t *file = tb_finish(&m, &size);
    uint8_t *bad = malloc(size);
    assert_non_null(bad);
    memcpy(bad, file, size);
    bad[4] = 'X';
    static _Alignas(16) uint8_t work[1 << 16], arena[1 << 18];

    mengine_model mm, mb;
    mengine e;
    mengine_view in, out;
    size_t need = 0;
    char msg[256];
    mengine_status st[8];
    float sum = 0;
    calls = 0;
    guarded = 1;
    st[0] = mengine_model_load(&mm, file, size, NULL, msg, sizeof msg);
    st[1] = mengine_arena_size(&mm, work, sizeof work, &need, msg, sizeof msg);
    st[2] = mengine_init(&e, &mm, arena, need);
    st[3] = mengine_prepare(&e, msg, sizeof msg);
    st[4] = mengine_input(&e, 0, &in);
    if (st[4] == MENGINE_OK)
        memcpy(in.data, x, sizeof x);
    st[5] = mengine_invoke(&e);
    st[6] = mengine_output(&e, 0, &out);
    if (st[6] == MENGINE_OK)
        for (size_t i = 0; i < out.count; i++)
            sum += out.cdata[i];
    st[7] = mengine_model_load(&mb, bad, size, NULL, msg, sizeof msg);
    guarded = 0;

    assert_int_equal(calls, 0);
    for (int i = 0; i < 7; i++)
        if (st[i] != MENGINE_OK)
            fail_msg("step %d: %s (%s)", i, mengine_status_str(st[i]), msg);
    assert_int_equal(st[7], MENGINE_ERR_IDENTIFIER);
    assert_true(need <= sizeof arena);
    assert_int_equal(out.count, 5);
    assert_true(sum > 0.999f && sum < 1.001f);
    free(bad);
    free(file);
    tb_release(&m);
}

/* An int8 model (every int8 operator of the classification export) runs without it too. */
static void test_int8_runs_without_allocator(void **state)
{
    (void)state;
    manta_rng rng;
    manta_rng_seed(&rng, 77, 1);
    xgraph g;
    manta_err err;
    const xgr_opts o = {11, 3, 5, 6};
    assert_int_equal(xgr_random(&g, &rng, &o, &err), MANTA_OK);
    const size_t nin = (size_t)11 * 11 * 3;
    float imgs[4 * 11 * 11 * 3];
    for (size_t i = 0; i < 4 * nin; i++)
        imgs[i] = manta_rng_uniform(&rng) - 0.5f;
    assert_int_equal(xgraph_calibrate(&g, imgs, 4, XG_CALIB_MINMAX, 0, &err), MANTA_OK);
    uint8_t *file;
    size_t size;
    assert_int_equal(tflite_write(&g, &file, &size, NULL, &err), MANTA_OK);
    static _Alignas(16) uint8_t work[1 << 16], arena[1 << 18];
    mengine_model mm;
    mengine e;
    mengine_view in, out;
    size_t need = 0;
    char msg[256];
    mengine_status st[7];
    calls = 0;
    guarded = 1;
    st[0] = mengine_model_load(&mm, file, size, NULL, msg, sizeof msg);
    st[1] = mengine_arena_size(&mm, work, sizeof work, &need, msg, sizeof msg);
    st[2] = mengine_init(&e, &mm, arena, need);
    st[3] = mengine_prepare(&e, msg, sizeof msg);
    st[4] = mengine_input(&e, 0, &in);
    if (st[4] == MENGINE_OK)
        memset(in.data, 3, in.count);
    st[5] = mengine_invoke(&e);
    st[6] = mengine_output(&e, 0, &out);
    guarded = 0;
    assert_int_equal(calls, 0);
    for (int i = 0; i < 7; i++)
        if (st[i] != MENGINE_OK)
            fail_msg("step %d: %s (%s)", i, mengine_status_str(st[i]), msg);
    assert_int_equal(in.type, MENGINE_INT8);
    assert_int_equal(out.type, MENGINE_INT8);
    int sum = 0;
    for (size_t i = 0; i < out.count; i++)
        sum += ((const int8_t *)out.cdata)[i] + 128;
    assert_true(sum >= 256 - (int)out.count && sum <= 256 + (int)out.count); /* probabilities */
    free(file);
    xgraph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_is_active),
        cmocka_unit_test(test_engine_runs_without_allocator),
        cmocka_unit_test(test_int8_runs_without_allocator),
    };
    return cmocka_run_group_tests_name("engine without allocator", tests, NULL, NULL);
}
