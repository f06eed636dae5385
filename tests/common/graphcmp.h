/**
 * @file graphcmp.h
 * @brief Tests: two export graphs (export/xgraph.h) compared by structure.
 */
#ifndef MANTA_TESTS_GRAPHCMP_H
#define MANTA_TESTS_GRAPHCMP_H

#include "export/xgraph.h"

/**
 * Fail the current test unless @p a and @p b have the same tensors (names,
 * ranks, shapes), the same operators in the same order (kind, inputs,
 * output, kernel, stride, SAME, padding, fused activation, weight and bias
 * counts, a bias or none, concatenated inputs, leaky slope, slice), the same
 * input, logits and output tensors (and inputs and outputs lists),
 * description, architecture and preprocessing (labels included). Values of
 * weights and biases are not compared. The first difference is named.
 */
void tu_assert_same_graph(const xgraph *a, const xgraph *b);

#endif
