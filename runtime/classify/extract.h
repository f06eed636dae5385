/**
 * @file extract.h
 * @brief The active sub-network of a supernet as an inference graph
 *        (export/xgraph.h): batch 1, NHWC, batch norm folded into the
 *        convolutions (running statistics, so re-calibrate first), elastic
 *        kernels baked, expanded channels sliced, h-sigmoid folded into the
 *        squeeze-and-excite layers.
 *
 * The graph is built by mbv3_arch_graph() (export/mbv3_graph.h: operators,
 * names, padding), with the supernet as its weight source, so it is the
 * graph the profiler and the search build (profile/synth.h) with other values.
 * Squeeze-and-excite: s = h_sigmoid(z) = relu6(z + 3) / 6 is exported as the
 * expand layer with bias + 3 and a fused RELU6, and the 1/6 is folded into
 * the projection weights that read x * s, so no extra op runs.
 * Padding: stride-1 layers and stride-2 layers on odd sizes are SAME; a
 * stride-2 layer on an even size gets an explicit PAD of k/2 on every side
 * and VALID (TensorFlow Lite's SAME would pad one pixel less before).
 */
#ifndef MANTA_CLASSIFY_EXTRACT_H
#define MANTA_CLASSIFY_EXTRACT_H

#include "export/xgraph.h"
#include "classify/supernet.h"

/**
 * Build @p out for the sub-network set by ofa_supernet_set_arch(), from the
 * current parameters and batch-norm running statistics. @p pre (resolution is
 * taken from the architecture) is copied into the graph; labels are copied.
 * @param out initialised here; free with xgraph_free(). Empty on error.
 * @return MANTA_ERR_INVALID_ARG when no sub-network is selected; the device's
 *         error when the parameters cannot be read; MANTA_ERR_NO_MEMORY;
 *         MANTA_ERR_INTERNAL when a layer of the graph is not the one the
 *         supernet runs.
 */
manta_status ofa_supernet_extract(ofa_supernet *n, const xg_preprocess *pre, xgraph *out,
                                  manta_err *err);

#endif
