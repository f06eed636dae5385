#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu */
#endif
#include "profile/timing.h"

#if defined(__linux__)
#include <sched.h>
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/rng.h"
#include "core/stats.h"

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

/* Values uniform in [-1, 1) into input @p in: as they are, or quantized with the tensor's
 * scale and zero point for an int8 input. */
static void fill_input(const mengine_view *in, manta_rng *rng)
{
    for (size_t i = 0; i < in->count; i++) {
        const float x = 2.0f * manta_rng_uniform(rng) - 1.0f;
        if (in->type != MENGINE_INT8) {
            in->data[i] = x;
            continue;
        }
        const float q = in->scale > 0 ? roundf(x / in->scale) + (float)in->zero_point : 0.0f;
        ((int8_t *)(void *)in->data)[i] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
    }
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
    p->arena = aligned_alloc(MENGINE_ARENA_ALIGN, (p->arena_bytes + MENGINE_ARENA_ALIGN - 1) /
                                                      MENGINE_ARENA_ALIGN * MENGINE_ARENA_ALIGN);
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
    fill_input(&in, &rng);
    for (size_t k = 1; k < mengine_input_count(&p->e); k++) /* a stereo model's other views */
        if (mengine_input(&p->e, k, &in) == MENGINE_OK)
            fill_input(&in, &rng);
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

int pt_pin_cpu(void)
{
#if defined(__linux__)
    int cpu = sched_getcpu();
    if (cpu < 0)
        return -1;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0 ? cpu : -1;
#else
    return -1;
#endif
}

double pt_clock_cost_ms(pt_clock c)
{
    enum { ROUNDS = 101, READS = 64 };
    double r[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        double a = pt_now(c), b = a;
        for (int k = 0; k < READS; k++)
            b = pt_now(c);
        r[i] = (b - a) / READS * 1e3;
    }
    return manta_sort_median(r, ROUNDS);
}

typedef struct seg_clock {
    const int *bound;
    int nb, next;
    pt_clock clock;
    double *t;
} seg_clock;

static void on_op(void *ctx, uint32_t op)
{
    seg_clock *c = ctx;
    if (c->next < c->nb && (uint32_t)c->bound[c->next] == op)
        c->t[c->next++] = pt_now(c->clock);
}

int pt_time_layers(pt_model *p, const pt_opts *o, const int *bound, int nl, double **seg,
                   double **tot, size_t *n, char *msg, size_t cap)
{
    *seg = *tot = NULL;
    *n = 0;
    if (nl < 1 || (size_t)bound[nl] != mengine_op_count(&p->e)) {
        snprintf(msg, cap, "layer bounds do not match the model's %zu operators",
                 mengine_op_count(&p->e));
        return -1;
    }
    double tb[PT_MAX_BOUNDS];
    if (nl + 1 > PT_MAX_BOUNDS) {
        snprintf(msg, cap, "%d layers: at most %d", nl, PT_MAX_BOUNDS - 1);
        return -1;
    }
    seg_clock sc = {bound, nl + 1, 0, o->clock, tb};
    const double w0 = pt_now(o->clock);
    for (int i = 0; i < o->warmup || pt_now(o->clock) - w0 < o->warmup_s; i++) {
        sc.next = 0;
        if (mengine_invoke_observed(&p->e, on_op, &sc) != MENGINE_OK) {
            snprintf(msg, cap, "the engine failed to run the model");
            return -1;
        }
    }
    size_t max = o->max_runs > 0 ? (size_t)o->max_runs : 1, count = 0;
    double *s = malloc(max * (size_t)nl * sizeof *s), *t = malloc(max * sizeof *t), total = 0;
    if (!s || !t) {
        free(s), free(t);
        snprintf(msg, cap, "out of memory for %zu timings", max * (size_t)nl);
        return -1;
    }
    while (count < max && (count < (size_t)o->min_runs || total < o->min_time_s)) {
        sc.next = 0;
        if (mengine_invoke_observed(&p->e, on_op, &sc) != MENGINE_OK || sc.next != nl + 1) {
            free(s), free(t);
            snprintf(msg, cap, "the engine failed to run the model");
            return -1;
        }
        for (int j = 0; j < nl; j++)
            s[count * (size_t)nl + (size_t)j] = (tb[j + 1] - tb[j]) * 1e3;
        t[count++] = (tb[nl] - tb[0]) * 1e3;
        total += tb[nl] - tb[0];
    }
    *seg = s;
    *tot = t;
    *n = count;
    return 0;
}

const char *pt_clock_name(pt_clock c) { return c == PT_CPU ? "thread CPU time" : "wall clock"; }
