/* Plain-C double-precision reference for the channel concatenation of runtime/nn/concat.h. */
#ifndef MANTA_TESTS_REF_CONCAT_H
#define MANTA_TESTS_REF_CONCAT_H

#include "nn/concat.h"

/** dst[:, c_offset : c_offset + C] = src; src: (N, C, HW); dst: (N, C_total, HW), its
 *  other channels untouched. */
void ref_concat_forward(const nn_concat_shape *s, const double *src, double *dst);

#endif
