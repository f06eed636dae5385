/* Progressive shrinking as data: the presets follow OFA's phases, steps are
 * located across phase boundaries, sampling depends on (seed, step, k) alone
 * and stays inside the phase's choices, and the per-step work estimate behind
 * `manta train`'s ETA adds up as documented. */
#include <stdlib.h>
#include <string.h>

#include "common/testutil.h"
#include "train/schedule.h"

static int in_list(int v, const int *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] == v)
            return 1;
    return 0;
}

/* The CPU-sized space and its preset @p name at batch 64 on Fashion-MNIST's
 * 50,000 training images (781 steps an epoch). */
static void cpu_default_preset(const char *name, ofa_space *sp, ofa_schedule *s)
{
    manta_err e;
    ofa_space_cpu_default(sp);
    if (ofa_schedule_preset(sp, name, 64, 781, s, &e) != MANTA_OK)
        fail_msg("%s", e.msg);
}

static void test_presets_follow_ofa(void **state)
{
    (void)state;
    ofa_space sp;
    ofa_space_cpu_default(&sp);
    const char *names[] = {"full", "kernel", "depth-1", "depth-2", "expand-1", "expand-2"};
    const int subnets[] = {1, 1, 2, 2, 4, 4};
    const char *presets[] = {"smoke", "quick", "full"};
    long total[3];
    for (int p = 0; p < 3; p++) {
        ofa_schedule s;
        manta_err e;
        assert_int_equal(ofa_schedule_preset(&sp, presets[p], 64, 781, &s, &e), MANTA_OK);
        assert_int_equal(s.n_phases, 6);
        assert_int_equal(s.batch, 64);
        long sum = 0;
        for (int i = 0; i < 6; i++) {
            const ofa_phase *ph = &s.phase[i];
            assert_string_equal(ph->name, names[i]);
            assert_int_equal(ph->subnets, subnets[i]);
            assert_int_equal(ph->distill, i > 0);
            /* the sandwich rule: full's expand phases only */
            assert_int_equal(ph->sandwich, p == 2 && i >= 4);
            assert_true(ph->steps >= 1 && ph->lr > 0);
            sum += ph->steps;
        }
        /* the first phase trains the largest network only; the last one all */
        assert_int_equal(s.phase[0].n_ks, 1);
        assert_int_equal(s.phase[0].ks[0], sp.ks[sp.n_ks - 1]);
        assert_int_equal(s.phase[0].e[0], sp.e[sp.n_e - 1]);
        assert_int_equal(s.phase[0].d[0], sp.d[sp.n_d - 1]);
        assert_int_equal(s.phase[5].n_ks, sp.n_ks);
        assert_int_equal(s.phase[5].n_e, sp.n_e);
        assert_int_equal(s.phase[5].n_d, sp.n_d);
        assert_int_equal(s.phase[1].n_e, 1); /* kernel: expand and depth still fixed */
        assert_int_equal(s.phase[1].n_d, 1);
        assert_int_equal(s.phase[4].n_e, 2); /* expand-1: the two largest ratios */
        assert_int_equal(s.phase[4].reorder, 0);
        assert_int_equal(s.phase[5].reorder, 1);
        assert_int_equal(ofa_schedule_total_steps(&s), sum);
        total[p] = sum;
    }
    assert_int_equal(total[0], 18); /* smoke: 3 steps a phase */
    assert_true(total[0] < total[1] && total[1] < total[2]);

    ofa_schedule s;
    manta_err e;
    assert_int_equal(ofa_schedule_preset(&sp, "fast", 64, 781, &s, &e), MANTA_ERR_INVALID_ARG);
    assert_non_null(strstr(e.msg, "fast"));
    assert_int_equal(ofa_schedule_preset(&sp, "full", 0, 781, &s, &e), MANTA_ERR_INVALID_ARG);
    assert_int_equal(ofa_schedule_preset(&sp, "full", 64, 0, &s, &e), MANTA_ERR_INVALID_ARG);
    /* one expand ratio: the width phases sort without groups to keep */
    sp.n_e = 1;
    assert_int_equal(ofa_schedule_preset(&sp, "smoke", 64, 781, &s, &e), MANTA_OK);
    assert_int_equal(s.phase[4].reorder, 0);
    assert_int_equal(s.phase[5].reorder, 0);
}

static void test_locate_crosses_phase_boundaries(void **state)
{
    (void)state;
    ofa_space sp;
    ofa_schedule s;
    cpu_default_preset("quick", &sp, &s);
    long start = 0, in = -1;
    for (int i = 0; i < s.n_phases; i++) {
        assert_int_equal(ofa_schedule_locate(&s, start, &in), i);
        assert_int_equal(in, 0);
        assert_int_equal(ofa_schedule_locate(&s, start + s.phase[i].steps - 1, &in), i);
        assert_int_equal(in, s.phase[i].steps - 1);
        start += s.phase[i].steps;
    }
    assert_int_equal(ofa_schedule_locate(&s, start, &in), -1);
    assert_int_equal(ofa_schedule_locate(&s, -1, &in), -1);
}

static void test_sampling_is_deterministic_and_inside_the_phase(void **state)
{
    (void)state;
    ofa_space sp;
    ofa_schedule s;
    cpu_default_preset("full", &sp, &s);
    int seen_res[OFA_MAX_RES] = {0};
    for (long step = 0; step < 300; step++) {
        int r = ofa_sample_resolution(&sp, 5, step);
        assert_int_equal(r, ofa_sample_resolution(&sp, 5, step));
        for (int i = 0; i < sp.n_res; i++)
            seen_res[i] += sp.res[i] == r;
    }
    for (int i = 0; i < sp.n_res; i++) /* uniform: about 100 each */
        assert_in_range(seen_res[i], 60, 140);

    for (int p = 0; p < s.n_phases; p++) {
        const ofa_phase *ph = &s.phase[p];
        int differ = 0;
        for (long step = 0; step < 20; step++)
            for (int k = 0; k < ph->subnets; k++) {
                ofa_arch a, b, c;
                ofa_sample_subnet(&sp, ph, 5, step, k, 28, &a);
                ofa_sample_subnet(&sp, ph, 5, step, k, 28, &b);
                ofa_sample_subnet(&sp, ph, 6, step, k, 28, &c);
                assert_memory_equal(&a, &b, sizeof a);
                if (ph->sandwich && (k == 0 || k == ph->subnets - 1)) {
                    /* the phase's largest first, its smallest last, whatever the seed */
                    ofa_arch x;
                    const int big = k == 0;
                    ofa_arch_uniform(&sp, ph->ks[big ? ph->n_ks - 1 : 0],
                                     ph->e[big ? ph->n_e - 1 : 0], ph->d[big ? ph->n_d - 1 : 0], 28,
                                     &x);
                    assert_memory_equal(&a, &x, sizeof a);
                    assert_memory_equal(&a, &c, sizeof a);
                }
                differ += memcmp(&a, &c, sizeof a) != 0;
                assert_int_equal(a.r, 28);
                for (int i = 0; i < ofa_slots(&sp); i++) {
                    assert_true(in_list(a.ks[i], ph->ks, ph->n_ks));
                    assert_true(in_list(a.e[i], ph->e, ph->n_e));
                }
                for (int u = 0; u < sp.n_units; u++)
                    assert_true(in_list(a.d[u], ph->d, ph->n_d));
            }
        /* the seed matters wherever the phase has a choice */
        assert_true(p == 0 ? differ == 0 : differ > 0);
    }
}

/* Mean over the space's resolutions of what the layers of the largest or
 * smallest network write in one forward pass. */
static double mean_activations(const ofa_space *sp, int largest)
{
    ofa_desc *d = malloc(sizeof *d);
    assert_non_null(d);
    double sum = 0;
    for (int i = 0; i < sp->n_res; i++) {
        ofa_arch a;
        manta_err e;
        (largest ? ofa_arch_max : ofa_arch_min)(sp, sp->res[i], &a);
        assert_int_equal(ofa_describe(sp, &a, d, &e), MANTA_OK);
        for (int l = 0; l < d->n; l++)
            sum += (double)d->layer[l].out_h * d->layer[l].out_w * d->layer[l].out_c;
    }
    free(d);
    return sum / sp->n_res;
}

static void test_work_per_step_adds_up(void **state)
{
    (void)state;
    ofa_space sp;
    ofa_schedule s;
    manta_err e;
    cpu_default_preset("full", &sp, &s);
    double work[OFA_MAX_PHASES];
    assert_int_equal(ofa_schedule_work(&sp, &s, 16, work, &e), MANTA_OK);
    const double big = mean_activations(&sp, 1), small = mean_activations(&sp, 0);
    assert_true(small < big);
    /* first phase: forward and backward of the largest network, no teacher */
    assert_float_equal(work[0], 3 * big, 1e-9 * big);
    /* elastic kernel: padding keeps every shape, so only the teacher is added */
    assert_float_equal(work[1], 3 * big + big, 1e-9 * big);
    for (int p = 2; p < s.n_phases; p++) {
        const double k = s.phase[p].subnets;
        assert_true(work[p] >= big + 3 * k * small && work[p] < big + 3 * k * big);
    }
    assert_true(work[4] > work[3]); /* four sub-networks a step instead of two */
    double again[OFA_MAX_PHASES];
    assert_int_equal(ofa_schedule_work(&sp, &s, 16, again, &e), MANTA_OK);
    assert_memory_equal(work, again, sizeof(double) * (size_t)s.n_phases);

    assert_int_equal(ofa_schedule_work(&sp, &s, 0, work, &e), MANTA_ERR_INVALID_ARG);
    /* a schedule made for another space: kernel 7 is not in this one */
    ofa_space narrow = sp;
    narrow.n_ks = 2;
    assert_int_equal(ofa_schedule_work(&narrow, &s, 4, work, &e), MANTA_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_presets_follow_ofa),
        cmocka_unit_test(test_locate_crosses_phase_boundaries),
        cmocka_unit_test(test_sampling_is_deterministic_and_inside_the_phase),
        cmocka_unit_test(test_work_per_step_adds_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
