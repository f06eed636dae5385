#include "train/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

/* The largest n values of a sorted list. */
static void top(const int *list, int count, int n, int *out_n, int *out)
{
    if (n > count)
        n = count;
    *out_n = n;
    memcpy(out, list + count - n, (size_t)n * sizeof *list);
}

static void add_phase(ofa_schedule *s, const ofa_space *sp, const char *name, int n_ks, int n_e,
                      int n_d, int subnets, long steps, float lr, int reorder, int distill)
{
    ofa_phase *p = &s->phase[s->n_phases++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    top(sp->ks, sp->n_ks, n_ks, &p->n_ks, p->ks);
    top(sp->e, sp->n_e, n_e, &p->n_e, p->e);
    top(sp->d, sp->n_d, n_d, &p->n_d, p->d);
    p->subnets = subnets;
    p->steps = steps > 0 ? steps : 1;
    p->warmup_steps = p->steps / 20;
    p->lr = lr;
    /* the groups kept lie below the largest expand ratio: a space of fewer ratios keeps
     * fewer (one ratio: a plain sort, nothing to nest) */
    p->reorder = reorder >= sp->n_e ? sp->n_e - 1 : reorder;
    p->distill = distill;
}

manta_status ofa_schedule_preset(const ofa_space *sp, const char *preset, int batch,
                                 long steps_per_epoch, ofa_schedule *s, manta_err *err)
{
    memset(s, 0, sizeof *s);
    /* epochs and learning rates (per 2048 images) of each phase: full, kernel,
     * depth-1, depth-2, expand-1, expand-2. OFA's rates (32 GPUs x 64 images)
     * unless a preset says otherwise. */
    double ep[6];
    float lr[6] = {2.6f, 0.96f, 0.08f, 0.24f, 0.08f, 0.24f};
    int sandwich = 0;
    if (!strcmp(preset, "smoke")) {
        for (int i = 0; i < 6; i++)
            ep[i] = 3.0 / (double)steps_per_epoch; /* 3 steps */
    } else if (!strcmp(preset, "quick")) {
        /* 3.15 epochs in all, most of them in the first phase, whose network
         * is the teacher of the others: 10.6 minutes on a 2-core CPU with
         * PoCL (docs/benchmarks.md). The later phases are too short for OFA's
         * small rates to train the small sub-networks (0.24 / 0.08: smallest
         * 77.4% validation top-1 after expand-2, 1.3 / 0.6: 79.1%); from one
         * first-phase checkpoint, kernel / later rates of 0.96 / 0.6-1.3 gave
         * 86.0% / 81.3% test top-1 (largest / smallest), 0.24 / 0.6-1.3
         * 85.6% / 82.3%, 0.24 / 0.3-0.65 86.6% / 80.1% (docs/ofa.md). */
        const double q[6] = {2.3, 0.2, 0.1, 0.2, 0.1, 0.25};
        const float ql[6] = {2.6f, 0.96f, 0.6f, 1.3f, 0.6f, 1.3f};
        memcpy(ep, q, sizeof ep);
        memcpy(lr, ql, sizeof lr);
    } else if (!strcmp(preset, "full")) {
        /* OFA's 180 / 125 / 25 / 125 / 25 / 125 epochs, the first phase
         * divided by 7.5, the last by 12.5 and the others by 25 to 31; the
         * expand phases by the sandwich rule (docs/ofa.md, docs/benchmarks.md) */
        const double f[6] = {24, 4, 1, 4, 1, 10};
        memcpy(ep, f, sizeof ep);
        sandwich = 1;
    } else {
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "schedule '%s': unknown (smoke, quick, full)", preset);
    }
    if (batch < 1 || steps_per_epoch < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "schedule: batch %d and %ld steps per epoch", batch, steps_per_epoch);
    snprintf(s->preset, sizeof s->preset, "%s", preset);
    s->batch = batch;
    s->kd_ratio = 1.0f;
    s->label_smoothing = 0.1f;
    s->momentum = 0.9f;
    s->weight_decay = 3e-5f;
    /* learning rates scale linearly with the batch size */
    const float per_image = (float)batch / 2048.0f;
    const long spe = steps_per_epoch;
#define STEPS(i) ((long)(ep[i] * (double)spe + 0.5))
    add_phase(s, sp, "full", 1, 1, 1, 1, STEPS(0), lr[0] * per_image, -1, 0);
    add_phase(s, sp, "kernel", sp->n_ks, 1, 1, 1, STEPS(1), lr[1] * per_image, -1, 1);
    add_phase(s, sp, "depth-1", sp->n_ks, 1, 2, 2, STEPS(2), lr[2] * per_image, -1, 1);
    add_phase(s, sp, "depth-2", sp->n_ks, 1, sp->n_d, 2, STEPS(3), lr[3] * per_image, -1, 1);
    add_phase(s, sp, "expand-1", sp->n_ks, 2, sp->n_d, 4, STEPS(4), lr[4] * per_image, 0, 1);
    add_phase(s, sp, "expand-2", sp->n_ks, sp->n_e, sp->n_d, 4, STEPS(5), lr[5] * per_image, 1, 1);
    s->phase[4].sandwich = s->phase[5].sandwich = sandwich;
#undef STEPS
    return MANTA_OK;
}

long ofa_schedule_total_steps(const ofa_schedule *s)
{
    long t = 0;
    for (int i = 0; i < s->n_phases; i++)
        t += s->phase[i].steps;
    return t;
}

int ofa_schedule_locate(const ofa_schedule *s, long step, long *in_phase)
{
    for (int i = 0; i < s->n_phases && step >= 0; i++) {
        if (step < s->phase[i].steps) {
            *in_phase = step;
            return i;
        }
        step -= s->phase[i].steps;
    }
    *in_phase = 0;
    return -1;
}

int ofa_sample_resolution(const ofa_space *space, uint64_t seed, long step)
{
    manta_rng r;
    manta_rng_seed(&r, manta_splitmix64(seed ^ manta_splitmix64((uint64_t)step)), 0x7e5);
    return space->res[manta_rng_below(&r, (uint32_t)space->n_res)];
}

int ofa_sandwich_role(const ofa_phase *p, int k)
{
    if (!p->sandwich)
        return 0;
    return k == 0 && p->subnets >= 2 ? 1 : k == p->subnets - 1 && p->subnets >= 3 ? -1 : 0;
}

void ofa_sample_subnet(const ofa_space *space, const ofa_phase *p, uint64_t seed, long step, int k,
                       int r, ofa_arch *a)
{
    const int role = ofa_sandwich_role(p, k);
    if (role != 0) {
        /* the phase's largest, or its smallest (lists ascend) */
        const int big = role > 0;
        ofa_arch_uniform(space, p->ks[big ? p->n_ks - 1 : 0], p->e[big ? p->n_e - 1 : 0],
                         p->d[big ? p->n_d - 1 : 0], r, a);
        return;
    }
    manta_rng g;
    manta_rng_seed(&g, manta_splitmix64(seed ^ manta_splitmix64((uint64_t)step * 64 + (uint64_t)k)),
                   0x5ab);
    memset(a, 0, sizeof *a);
    for (int i = 0; i < ofa_slots(space); i++) {
        a->ks[i] = p->ks[manta_rng_below(&g, (uint32_t)p->n_ks)];
        a->e[i] = p->e[manta_rng_below(&g, (uint32_t)p->n_e)];
    }
    for (int u = 0; u < space->n_units; u++)
        a->d[u] = p->d[manta_rng_below(&g, (uint32_t)p->n_d)];
    a->r = r;
}

/* Activation elements the layers of @p a write in one forward pass. */
static manta_status activations(const ofa_space *space, const ofa_arch *a, ofa_desc *d, double *out,
                                manta_err *err)
{
    manta_status st = ofa_describe(space, a, d, err);
    *out = 0;
    for (int l = 0; st == MANTA_OK && l < d->n; l++)
        *out += (double)d->layer[l].out_h * d->layer[l].out_w * d->layer[l].out_c;
    return st;
}

manta_status ofa_schedule_work(const ofa_space *space, const ofa_schedule *s, int samples,
                               double *work, manta_err *err)
{
    if (samples < 1)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "schedule work: %d samples", samples);
    ofa_desc *d = malloc(sizeof *d);
    if (!d)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "schedule work: out of memory");
    manta_status st = MANTA_OK;
    double teacher = 0, x; /* the largest network's, mean over resolutions */
    ofa_arch a;
    for (int i = 0; i < space->n_res && st == MANTA_OK; i++) {
        ofa_arch_max(space, space->res[i], &a);
        st = activations(space, &a, d, &x, err);
        teacher += x / space->n_res;
    }
    for (int p = 0; p < s->n_phases && st == MANTA_OK; p++) {
        const ofa_phase *ph = &s->phase[p];
        double sub = 0;
        for (int i = 0; i < space->n_res && st == MANTA_OK; i++)
            for (int j = 0; j < samples && st == MANTA_OK; j++)
                for (int k = 0; k < ph->subnets && st == MANTA_OK; k++) {
                    ofa_sample_subnet(space, ph, 0, j, k, space->res[i], &a);
                    st = activations(space, &a, d, &x, err);
                    sub += x;
                }
        sub /= (double)space->n_res * samples * ph->subnets;
        work[p] = 3.0 * ph->subnets * sub + (ph->distill ? teacher : 0);
    }
    free(d);
    return st;
}
