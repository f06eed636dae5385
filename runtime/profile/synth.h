/**
 * @file synth.h
 * @brief Inference graphs (export/xgraph.h) of layers and sub-networks with
 *        weights of the right shapes but no training: what the latency
 *        profiler times and what the search writes to learn a candidate's
 *        exact arena and file size. Host code only (no OpenCL).
 *
 * A sub-network's graph is built by the exporter's own builder,
 * mbv3_arch_graph() (runtime/export/mbv3_graph.h), with random values or
 * zeros as its weight source, so it has exactly the operators, tensors,
 * names, shapes and padding that ofa_supernet_extract() (runtime/classify/
 * extract.h) produces for it: the stem convolution (+ HARD_SWISH), the first
 * block, each MBConv block (1x1 expand [+ HARD_SWISH], [PAD] depthwise
 * [+ HARD_SWISH], squeeze-and-excite as MEAN, 1x1 + RELU, 1x1 + RELU6, MUL,
 * 1x1 projection, ADD for the identity skip), the head (1x1 + HARD_SWISH,
 * MEAN, RESHAPE, [FULLY_CONNECTED + HARD_SWISH], FULLY_CONNECTED, SOFTMAX).
 * Padding: SAME, or an explicit PAD of k/2 before a stride-2 layer on an
 * even size. Only the values of weights and biases differ, so a written
 * .tflite has the same size and the engine plans the same arena.
 *
 * A layer's graph (prof_synth_layer_graph()) is the operators of one keyed layer
 * (latency_table.h) of a sub-network, from the same builder
 * (mbv3_graph_layer()), on an input of the layer's shape: a stem, an MBConv
 * block, the head convolution, the pool (MEAN), the feature mix (RESHAPE,
 * FULLY_CONNECTED, HARD_SWISH) or the classifier (RESHAPE, FULLY_CONNECTED,
 * SOFTMAX). The layers of a
 * sub-network, each applied to the output of the one before, are its whole
 * graph: the sum of the keyed layers' operators is the network's. A graph
 * must end in two distinct (1, K) tensors (logits and output), so a layer
 * that ends in a 4-D tensor is followed by a RESHAPE to (1, H*W*C) and the
 * output by a second RESHAPE: both share their input's buffer in the engine
 * and cost no copy. (Likewise the classifier of a space with a feature mix
 * reads a 4-D input in its own graph, so a RESHAPE flattens it first.)
 */
#ifndef MANTA_PROFILE_SYNTH_H
#define MANTA_PROFILE_SYNTH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "export/xgraph.h"
#include "profile/latency_table.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/** How weights are filled. */
typedef struct synth_opts {
    uint64_t seed; /**< random weights: uniform in +-sqrt(3 / fan-in), biases in +-0.1 */
    bool zeros;    /**< all weights and biases 0 (faster; for sizes and plans only) */
} synth_opts;

/**
 * The graph of sub-network @p a of space @p s (see the file comment).
 * @param pre preprocessing copied into the graph (labels copied; resolution
 *            and channels set from @p a and @p s); NULL: none (mean 0, std 1
 *            written by the exporter, no labels).
 * @param out initialised here; free with xgraph_free().
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s; MANTA_ERR_NO_MEMORY.
 */
manta_status prof_synth_arch_graph(const ofa_space *s, const ofa_arch *a, const xg_preprocess *pre,
                                   const synth_opts *o, xgraph *out, manta_err *err);

/**
 * prof_synth_arch_graph() that also tells where each keyed layer's operators lie:
 * layer i of lat_arch_layers(s, a) is operators [first_op[i], first_op[i + 1])
 * of the graph (in the order the exporter writes them and the engine runs
 * them), and first_op[n] is the operator count.
 * @param first_op array of ::LAT_MAX_ARCH_LAYERS + 1 entries, filled on success.
 * @param n        receives the number of keyed layers.
 */
manta_status prof_synth_arch_graph_layers(const ofa_space *s, const ofa_arch *a,
                                          const xg_preprocess *pre, const synth_opts *o,
                                          xgraph *out, int *first_op, int *n, manta_err *err);

/**
 * The one-layer graph of @p l (from lat_arch_layers() or lat_enumerate() on
 * space @p s): input (1, in_h, in_w, in_c), the layer's operators, and the
 * RESHAPE tail described in the file comment.
 * @param out initialised here; free with xgraph_free().
 * @return MANTA_ERR_INVALID_ARG for a layer whose parameters do not form a
 *         valid graph (the message names the key); MANTA_ERR_NO_MEMORY.
 */
manta_status prof_synth_layer_graph(const ofa_space *s, const lat_layer *l, const synth_opts *o,
                                    xgraph *out, manta_err *err);

/**
 * The graph of stereo sub-network @p a of @p s at its crop, from the exporter's builder
 * (sgraph_arch_graph(), export/stereo_graph.h) with synthetic values: the operators,
 * tensors, names and metadata stereo_net_extract() writes. A layer shared by the two views
 * gets the same values on both (drawn from a stream of its name without "r."), so the
 * file stores them once as an exported one does. Layer i of lat_stereo_arch_layers() is
 * operators [first_op[i], first_op[i + 1]) (@p first_op NULL: not wanted; else
 * ::LAT_MAX_ARCH_LAYERS + 1 entries), @p n (NULL allowed) the layer count.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s; MANTA_ERR_NO_MEMORY.
 */
manta_status prof_synth_stereo_graph(const stereo_space *s, const ofa_arch *a, const synth_opts *o,
                                     xgraph *out, int *first_op, int *n, manta_err *err);

/**
 * The one-layer graph of stereo layer @p l (from lat_stereo_arch_layers() or
 * lat_stereo_enumerate()): l->n_in inputs (1, in_h, in_w, in_cs[i]) (the correlation's two
 * of in_c channels), the layer's operators, its output the model's output.
 * @return MANTA_ERR_INVALID_ARG naming the key when the layer is not a stereo one or its
 *         graph is not valid; MANTA_ERR_NO_MEMORY.
 */
manta_status prof_synth_stereo_layer_graph(const lat_layer *l, const synth_opts *o, xgraph *out,
                                           manta_err *err);

/**
 * The empty graph: input (1, h, w, c), RESHAPE to (1, h*w*c), RESHAPE again.
 * What an invocation costs with no work (the tail every layer graph has).
 */
manta_status prof_synth_empty_graph(int h, int w, int c, xgraph *out, manta_err *err);

#endif
