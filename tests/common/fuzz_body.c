/* The fuzz body. The input is copied into a buffer of exactly its size, so
 * that the address sanitizer sees any read past the end. Invoke runs only
 * when the arena is at most FUZZ_MAX_ARENA and the work bound
 *   (sum of activation elements) x max(largest constant, largest activation)
 * is at most FUZZ_MAX_WORK: every kernel does at most that many
 * multiply-adds (a window never covers more than a whole tensor), so a single
 * input cannot stall the fuzzer with a legitimately huge model. */
#include "fuzz_body.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void finding(const char *what, const char *msg)
{
    fprintf(stderr, "fuzz finding: %s: %s\n", what, msg ? msg : "");
    abort();
}

/* Touch every byte of a metadata entry (the sanitizer checks the bounds). */
static unsigned touch(const mengine_model *m, const char *name)
{
    const uint8_t *p;
    size_t n;
    unsigned sum = 0;
    if (mengine_model_metadata(m, name, &p, &n) != MENGINE_OK)
        finding("metadata lookup failed on a verified model", name);
    for (size_t i = 0; i < n; i++)
        sum += p[i];
    return sum;
}

fuzz_outcome fuzz_engine_one(const uint8_t *data, size_t size, char *msg, size_t msg_cap)
{
    char local[256];
    if (!msg || msg_cap == 0) {
        msg = local;
        msg_cap = sizeof local;
    }
    msg[0] = '\0';
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return FUZZ_REJECTED;
    if (size)
        memcpy(copy, data, size);
    mengine_model m;
    fuzz_outcome out = FUZZ_REJECTED;
    mengine_status st = mengine_model_load(&m, copy, size, NULL, msg, msg_cap);
    if (st != MENGINE_OK) {
        if (!msg[0])
            finding("rejection without a message", mengine_status_str(st));
        free(copy);
        return FUZZ_REJECTED;
    }
    volatile unsigned sink = touch(&m, "manta_preprocess") + touch(&m, "OfflineMemoryAllocation");
    (void)sink;
    const size_t ws = mengine_plan_work_size(&m);
    void *work = malloc(ws ? ws : 1);
    size_t need = 0;
    st = work ? mengine_arena_size(&m, work, ws, &need, msg, msg_cap) : MENGINE_ERR_ARENA;
    free(work);
    if (st != MENGINE_OK) {
        if (!msg[0])
            finding("arena size failed without a message", mengine_status_str(st));
        free(copy);
        return FUZZ_REJECTED; /* e.g. an offline plan whose buffers overlap */
    }
    if (need > FUZZ_MAX_ARENA) {
        free(copy);
        return FUZZ_PREPARED;
    }
    uint8_t *arena = aligned_alloc(MENGINE_ARENA_ALIGN, (need + 15) & ~(size_t)15);
    mengine e;
    if (!arena) {
        free(copy);
        return FUZZ_PREPARED;
    }
    if (mengine_init(&e, &m, arena, need) != MENGINE_OK)
        finding("init failed on a loaded model", "");
    if (mengine_prepare(&e, msg, msg_cap) != MENGINE_OK)
        finding("prepare failed with the arena mengine_arena_size() asked for", msg);
    double acts = 0, largest = 0;
    for (size_t t = 0; t < m.n_tensors; t++) {
        mengine_view v;
        if (mengine_tensor(&e, t, &v) != MENGINE_OK)
            finding("no view of a tensor", "");
        if (v.data) {
            acts += (double)v.count;
            for (size_t i = 0; i < v.count; i++) /* inputs: deterministic values */
                if (v.type == MENGINE_INT8)
                    ((int8_t *)v.data)[i] = (int8_t)((int)(i % 13) * 19 - 114);
                else
                    v.data[i] = (float)((int)(i % 13) - 6) * 0.25f;
        }
        largest = (double)v.count > largest ? (double)v.count : largest;
    }
    out = FUZZ_PREPARED;
    if (acts * largest <= FUZZ_MAX_WORK) {
        if (mengine_invoke(&e) != MENGINE_OK)
            finding("invoke failed on a prepared model", "");
        /* again with XNNPACK's requantization (int8 models: other kernels and arithmetic) */
        if (mengine_set_requant(&e, MENGINE_REQUANT_FP32) != MENGINE_OK ||
            mengine_invoke(&e) != MENGINE_OK)
            finding("invoke with fp32 requantization failed on a prepared model", "");
        for (size_t i = 0; i < mengine_output_count(&e); i++) {
            mengine_view v;
            if (mengine_output(&e, i, &v) != MENGINE_OK)
                finding("no view of an output", "");
        }
        out = FUZZ_RAN;
    }
    free(arena);
    free(copy);
    return out;
}
