/* The Cortex-M7 image: the model linked in as a C array (manta export --c-array: model.c / model.h),
 * the engine prepared on a static arena of exactly MODEL_ARENA_SIZE bytes, one inference on a zero
 * input (float32 or int8 models). A real application fills the input from its sensor and reads the class; here the result is
 * left in manta_result for a debugger. No allocation, no I/O. */
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "model.h"

/** Outcome of the run, for a debugger: status (0 = ok, else the failing step), top-1 class. */
volatile struct {
    int32_t status;
    int32_t top1;
} manta_result = {-1, -1};

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
    if (mengine_output(&engine, 0, &out) != MENGINE_OK || !out.cdata || !out.count)
        return 6;
    const int8_t *oq = (const int8_t *)out.cdata;
    size_t best = 0;
    for (size_t i = 1; i < out.count; i++)
        if (q8 ? oq[i] > oq[best] : out.cdata[i] > out.cdata[best])
            best = i;
    manta_result.top1 = (int32_t)best;
    return 0;
}

int main(void)
{
    manta_result.status = run();
    return 0;
}
