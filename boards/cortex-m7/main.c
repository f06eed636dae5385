/* The Cortex-M7 image: the model linked in as a C array (manta export --c-array: model.c / model.h),
 * the engine prepared on a static arena of exactly MODEL_ARENA_SIZE bytes, one inference on a zero
 * input (float32 or int8 models). A real application fills the input from its sensor and reads the
 * class; here the result is left in manta_result for a debugger. No allocation, no I/O; built with
 * MCU_SEMIHOSTING (the image QEMU runs, mps2_an500.ld), it also prints manta_result as one line and
 * exits through Arm semihosting. */
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "mcu.h"
#include "model.h"

/* Output values kept in manta_result */
#define MCU_OUT_MAX 16

/** Outcome of the run, for a debugger: status (0 = ok, else the failing step), top-1 class, the
 *  arena bytes the engine used (this 32-bit build's records are smaller than those of the 64-bit
 *  host that sized MODEL_ARENA_SIZE) and its tensor and operator records, the deepest stack use,
 *  and the first n_out output values: an int8 model's raw int8 values, a float32 model's in
 *  millionths (rounded). */
volatile struct {
    int32_t status;
    int32_t top1;
    uint32_t arena_used;
    uint32_t records;
    uint32_t stack_used;
    int32_t n_out;
    int32_t out[MCU_OUT_MAX];
} manta_result = {-1, -1, 0, 0, 0, 0, {0}};

/* The engine's arena: records, activations and kernel scratch (MODEL_ARENA_SIZE is exact for a 64-bit
 * build of the engine, an upper bound for this 32-bit one unless an int8 CONV_2D above 1x1 sits at the
 * arena's peak: the DSP path's 2 patch rows are not in the exporting host's figure; run() returns 3). */
static uint8_t arena[MODEL_ARENA_SIZE] __attribute__((aligned(MENGINE_ARENA_ALIGN)));

static mengine_model model;
static mengine engine;

#ifdef MODEL_INT8
/* An int8 model (model.h says so): only the int8 operators of the classification networks are
 * named, so the image links no float32 kernel (--gc-sections). */
static const mengine_op *const ops[] = {&mengine_op_conv_2d_int8,
                                        &mengine_op_depthwise_conv_2d_int8,
                                        &mengine_op_fully_connected_int8,
                                        &mengine_op_add_int8,
                                        &mengine_op_mul_int8,
                                        &mengine_op_pad_int8,
                                        &mengine_op_reshape_int8,
                                        &mengine_op_mean_int8,
                                        &mengine_op_hard_swish_int8,
                                        &mengine_op_softmax_int8};
static const mengine_op_resolver resolver = {ops, sizeof ops / sizeof ops[0]};
#define LOAD(m, msg) \
    mengine_model_load_ops(m, model_data, MODEL_DATA_SIZE, &resolver, NULL, msg, sizeof msg)
#else
#define LOAD(m, msg) mengine_model_load(m, model_data, MODEL_DATA_SIZE, NULL, msg, sizeof msg)
#endif

static int32_t run(void)
{
    char msg[96];
    if (LOAD(&model, msg) != MENGINE_OK)
        return 1;
    if (mengine_init(&engine, &model, arena, sizeof arena) != MENGINE_OK)
        return 2;
    if (mengine_prepare(&engine, msg, sizeof msg) != MENGINE_OK)
        return 3;
    mengine_view in, out;
    if (mengine_input(&engine, 0, &in) != MENGINE_OK || !in.data)
        return 4;
    const int q8 = in.type == MENGINE_INT8; /* an int8 model (manta export --int8) */
    for (size_t i = 0; i < in.count; i++) {
        if (q8)
            ((int8_t *)in.data)[i] = (int8_t)in.zero_point; /* real 0 */
        else
            in.data[i] = 0.0f;
    }
    if (mengine_invoke(&engine) != MENGINE_OK)
        return 5;
    mengine_stats st;
    if (mengine_get_stats(&engine, &st) == MENGINE_OK) {
        manta_result.arena_used = (uint32_t)st.arena_used;
        manta_result.records = (uint32_t)st.records_bytes;
    }
    if (mengine_output(&engine, 0, &out) != MENGINE_OK || !out.cdata || !out.count)
        return 6;
    const int8_t *oq = (const int8_t *)out.cdata;
    size_t best = 0;
    for (size_t i = 1; i < out.count; i++)
        if (q8 ? oq[i] > oq[best] : out.cdata[i] > out.cdata[best])
            best = i;
    manta_result.top1 = (int32_t)best;
    for (size_t i = 0; i < out.count && i < MCU_OUT_MAX; i++) {
        const float v = out.cdata[i] * 1e6f;
        manta_result.out[i] = q8 ? oq[i] : (int32_t)(v < 0.0f ? v - 0.5f : v + 0.5f);
        manta_result.n_out = (int32_t)i + 1;
    }
    return 0;
}

#ifdef MCU_SEMIHOSTING
/* Arm semihosting call @p op with @p arg (BKPT 0xAB on M-profile). */
static void semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
}

/* @p v in decimal at @p p (a minus sign for a negative one); returns the end. */
static char *put_int(char *p, int32_t v)
{
    char t[12];
    int n = 0;
    uint32_t u = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    do
        t[n++] = (char)('0' + u % 10u);
    while ((u /= 10u) != 0u);
    if (v < 0)
        *p++ = '-';
    while (n > 0)
        *p++ = t[--n];
    return p;
}

static char *put_str(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

/* One line, "manta-mcu: status S top1 T arena_used A records R stack_used K out V1 V2 ...",
 * then exit (QEMU's exit status 0 for status 0, else 1). */
static void report(void)
{
    char line[160 + MCU_OUT_MAX * 12], *p = line;
    p = put_int(put_str(p, "manta-mcu: status "), manta_result.status);
    p = put_int(put_str(p, " top1 "), manta_result.top1);
    p = put_int(put_str(p, " arena_used "), (int32_t)manta_result.arena_used);
    p = put_int(put_str(p, " records "), (int32_t)manta_result.records);
    p = put_int(put_str(p, " stack_used "), (int32_t)manta_result.stack_used);
    p = put_str(p, " out");
    for (int32_t i = 0; i < manta_result.n_out; i++)
        p = put_int(put_str(p, " "), manta_result.out[i]);
    p = put_str(p, "\n");
    *p = '\0';
    semihost(0x04u, line); /* SYS_WRITE0 */
    /* SYS_EXIT: ADP_Stopped_ApplicationExit, or ADP_Stopped_RunTimeErrorUnknown */
    semihost(0x18u, (const void *)(uintptr_t)(manta_result.status == 0 ? 0x20026u : 0x20023u));
}
#endif

int main(void)
{
    manta_result.status = run();
    manta_result.stack_used = mcu_stack_used();
#ifdef MCU_SEMIHOSTING
    report();
#endif
    return 0;
}
