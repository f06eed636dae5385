/* The stereo unit tests' common fixture: the tiny space (tests/data/stereo_tiny.json), a
 * host batch at its crop, procedural pairs, and a one-phase schedule. */
#ifndef MANTA_TESTS_STEREO_FIX_H
#define MANTA_TESTS_STEREO_FIX_H

#include "stereo/train.h"

typedef struct tu_stereo_tiny {
    stereo_space sp;   /* tests/data/stereo_tiny.json */
    stereo_batch b;    /* batch pairs at the space's crop, every prediction's ground truth */
    stereo_source src; /* procedural pairs at the crop, seed 5, 1000 of them */
} tu_stereo_tiny;

/* Load the space, allocate the batch and describe the pairs; 0, or -1 with a line on
 * stderr. Free with tu_stereo_tiny_free(). */
int tu_stereo_tiny_load(tu_stereo_tiny *f, int batch);
void tu_stereo_tiny_free(tu_stereo_tiny *f);

/* One phase of @p steps steps at peak rate @p lr: the full network (kernel 5, expand 3,
 * depth 2: the tiny space's largest), one sub-network a step, no re-organisation. */
ofa_schedule tu_stereo_one_phase(int batch, long steps, float lr);

#endif
