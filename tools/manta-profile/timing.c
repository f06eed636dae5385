#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"

double pt_now(pt_clock c)
{
    struct timespec ts;
    clock_gettime(c == PT_CPU ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void pt_close(pt_model *p)
{
    free(p->data);
    free(p->arena);

    memset(p, 0, sizeof *p);
}

int pt_open(pt_model *p, uint8_t *data, size_t size, uint64_t seed, char *msg, size_t cap)
{
    memset(p, 0, sizeof *p);
    p->data = data;
    p->size = size;
    if (mengine_model_load(&p->m, data, size, NULL, msg, cap) != MENGINE_OK) {
        pt_close(p);
        return -1;
    }
    size_t ws = mengine_plan_work_size(&p->m);
    void *work = aligned_alloc(16, (ws + 15) / 16 * 16);
    if (!work) {
        snprintf(msg, cap, "out of memory for the planner (%zu bytes)", ws);
        pt_close(p);
        return -1;
    }
    mengine_status st = mengine_arena_size(&p->m, work, ws, &p->arena_bytes, msg, cap);
    free(work);
    if (st != MENGINE_OK) {
        pt_close(p);
        return -1;
    }
    p->arena = aligned_alloc(MENGINE_ARENA_ALIGN,
                             (p->arena_bytes + MENGINE_ARENA_ALIGN - 1) / MENGINE_ARENA_ALIGN *
                                 MENGINE_ARENA_ALIGN);
    if (!p->arena) {
        snprintf(msg, cap, "out of memory for an arena of %zu bytes", p->arena_bytes);
        pt_close(p);
        return -1;
    }
    memset(p->arena, 0, p->arena_bytes);
    mengine_view in;
    if (mengine_init(&p->e, &p->m, p->arena, p->arena_bytes) != MENGINE_OK ||
        mengine_prepare(&p->e, msg, cap) != MENGINE_OK ||
        mengine_input(&p->e, 0, &in) != MENGINE_OK) {
        if (msg && cap && !msg[0])
            snprintf(msg, cap, "the engine cannot prepare the model");
        pt_close(p);
        return -1;
    }
    manta_rng rng;
    manta_rng_seed(&rng, seed, 0x71e);
    for (size_t i = 0; i < in.count; i++)
        in.data[i] = 2.0f * manta_rng_uniform(&rng) - 1.0f;
    return 0;
}

int pt_time(pt_model *p, const pt_opts *o, double **ms, size_t *n, char *msg, size_t cap)
{
    *ms = NULL;
    *n = 0;
    const double w0 = pt_now(o->clock);
    for (int i = 0; i < o->warmup || pt_now(o->clock) - w0 < o->warmup_s; i++)
        if (mengine_invoke(&p->e) != MENGINE_OK) {
            snprintf(msg, cap, "the engine failed to run the model");
            return -1;
        }
    size_t max = o->max_runs > 0 ? (size_t)o->max_runs : 1, count = 0;
    double *t = malloc(max * sizeof *t), total = 0;
    if (!t) {
        snprintf(msg, cap, "out of memory for %zu timings", max);
        return -1;
    }
    while (count < max && (count < (size_t)o->min_runs || total < o->min_time_s)) {
        double a = pt_now(o->clock);
        mengine_status st = mengine_invoke(&p->e);
        double b = pt_now(o->clock);
        if (st != MENGINE_OK) {
            free(t);
            snprintf(msg, cap, "the engine failed to run the model");
            return -1;
        }
        t[count++] = (b - a) * 1e3;
        total += b - a;
    }
    *ms = t;
    *n = count;
    return 0;
}
