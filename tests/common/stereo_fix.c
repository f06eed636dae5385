#include "common/stereo_fix.h"

#include <stdio.h>

int tu_stereo_tiny_load(tu_stereo_tiny *f, int batch)
{
    manta_err e = {0};
    if (stereo_space_load("tests/data/stereo_tiny.json", &f->sp, &e) != MANTA_OK ||
        stereo_batch_alloc(&f->b, batch, f->sp.crop_h, f->sp.crop_w, stereo_preds(&f->sp), &e) !=
            MANTA_OK) {
        fprintf(stderr, "setup: %s\n", e.msg);
        return -1;
    }
    f->src = (stereo_source){.kind = STEREO_SOURCE_SYNTH, .count = 1000};
    stereo_synth_opts_default(&f->src.synth, f->sp.crop_w, f->sp.crop_h, (float)f->sp.max_disp, 5);
    return 0;
}

void tu_stereo_tiny_free(tu_stereo_tiny *f) { stereo_batch_free(&f->b); }

ofa_schedule tu_stereo_one_phase(int batch, long steps, float lr)
{
    ofa_schedule s = {
        .n_phases = 1, .batch = batch, .kd_ratio = 1.0f, .momentum = 0.9f, .weight_decay = 3e-5f};
    snprintf(s.preset, sizeof s.preset, "test");
    ofa_phase *p = &s.phase[0];
    snprintf(p->name, sizeof p->name, "full");
    p->n_ks = 1, p->ks[0] = 5;
    p->n_e = 1, p->e[0] = 3;
    p->n_d = 1, p->d[0] = 2;
    p->subnets = 1, p->steps = steps, p->warmup_steps = 2, p->lr = lr, p->reorder = -1;
    return s;
}
