/**
 * @file mbv3_graph.h
 * @brief The one builder of MobileNetV3 sub-network inference graphs
 *        (export/xgraph.h): batch 1, NHWC, batch norm folded, the form the
 *        exporter writes (classify/extract.h), the profiler times and the search
 *        sizes (profile/synth.h). The values of weights and biases come from
 *        a weight source (::mbv3_source), so the graph's structure does not
 *        depend on where they come from. Host code only (no OpenCL).
 *
 * @par Layers
 * A sub-network is a sequence of layers (mbv3_arch_layers()), the keyed
 * layers of profile/latency_table.h. Each becomes these operators, named
 * after the layer's ::mbv3_layer.where prefix W where one is shown:
 * @verbatim
 * stem        [PAD] CONV KxK [HARD_SWISH]                 "stem"
 * block       [CONV 1x1 "W.expand" [HARD_SWISH]]           (no expand in the first block)
 *             [PAD] DEPTHWISE KxK "W.dw" [HARD_SWISH]
 *             [MEAN "W.se.pool", CONV 1x1 + RELU "W.se.reduce",
 *              CONV 1x1 + RELU6 "W.se.expand", MUL "W.se"]    (squeeze-and-excite)
 *             CONV 1x1 "W.project", [ADD "W.add"]          (identity skip)
 * head        CONV 1x1 "head.expand", HARD_SWISH
 * pool        MEAN "head.pool" -> (1, 1, 1, C)
 * mix         [RESHAPE "head.flatten"] FULLY_CONNECTED "head.mix" (no bias), HARD_SWISH
 * classifier  [RESHAPE "head.flatten"] FULLY_CONNECTED "logits", SOFTMAX "probabilities"
 * @endverbatim
 * The RESHAPE of the mix and the classifier flattens a 4-D input to (1, C)
 * and is left out when the input is already 2-D. A HARD_SWISH after an
 * operator "X" writes "X.hswish" (a leaky ReLU, a stereo stem's, LEAKY_RELU
 * "X.leaky"); ReLU is fused into its operator, and so is no activation.
 *
 * @par Padding
 * A KxK layer of stride 1, or of stride 2 on an input whose sides are both
 * odd, or 1x1, is SAME (it equals the training padding k/2). A stride-2 KxK
 * layer on an input with an even side gets an explicit PAD "X.pad" of k/2
 * on every side and is VALID (TensorFlow Lite's SAME would pad one pixel less
 * before). Inputs may be non-square (in_h x in_w: stereo encoders).
 *
 * @par Squeeze-and-excite
 * s = h_sigmoid(z) = relu6(z + 3) / 6 is the expand layer with bias + 3
 * (added by the builder to the bias the source gives) and a fused RELU6; the
 * 1/6 belongs to the projection that reads x * s, whose request carries it
 * as ::mbv3_request.in_scale, so no extra operator runs.
 */
#ifndef MANTA_EXPORT_MBV3_GRAPH_H
#define MANTA_EXPORT_MBV3_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "export/xgraph.h"
#include "space/ofa_space.h"

/** Most layers one sub-network has: stem, first block, the slots, 4 head layers. */
#define MBV3_MAX_LAYERS (2 + OFA_MAX_SLOTS + 4)

/** Kinds of layers (see the file comment for their operators). */
typedef enum mbv3_layer_type {
    MBV3_STEM,      /**< KxK dense convolution + activation */
    MBV3_BLOCK,     /**< the first block or an MBConv block */
    MBV3_HEAD,      /**< 1x1 convolution + h-swish */
    MBV3_POOL,      /**< global average pool */
    MBV3_MIX,       /**< feature mix: fully connected (no bias) + h-swish */
    MBV3_CLASSIFIER /**< fully connected + softmax */
} mbv3_layer_type;

/** One layer: its kind and shapes. */
typedef struct mbv3_layer {
    mbv3_layer_type type;
    char where[48]; /**< "stem", "first", "u2.b1", "head", "pool", "mix", "classifier";
                         the prefix of a block's operator names */
    int slot;       /**< MBV3_BLOCK from mbv3_arch_layers(): its slot in the encoding
                         (unit * max_depth + block); -1 for the first block, the other
                         layers and blocks not taken from a sub-network */
    int in_h, in_w, in_c;
    int out_h, out_w, out_c;
    int mid;    /**< MBV3_BLOCK: expanded channels (== in_c without expand); else 0 */
    int kernel; /**< stem / depthwise kernel; 1 for 1x1 layers, 0 for pool and classifier */
    int stride;
    bool has_expand; /**< MBV3_BLOCK: a 1x1 expand convolution comes first */
    bool idskip;     /**< MBV3_BLOCK: identity skip */
    bool se;         /**< MBV3_BLOCK: squeeze-and-excite */
    int se_mid;      /**< SE reduced channels make_divisible(mid / 4, 8); 0 without SE */
    nn_act act;      /**< activation (MBV3_BLOCK: of expand and depthwise) */
} mbv3_layer;

/** Which operator of a layer a request fills. */
typedef enum mbv3_part {
    MBV3_CONV,      /**< the stem's KxK or the head's 1x1 convolution */
    MBV3_EXPAND,    /**< a block's 1x1 expand convolution */
    MBV3_DW,        /**< a block's depthwise convolution */
    MBV3_SE_REDUCE, /**< squeeze-and-excite: 1x1 mid -> se_mid (+ bias, ReLU) */
    MBV3_SE_EXPAND, /**< squeeze-and-excite: 1x1 se_mid -> mid (+ bias, h-sigmoid) */
    MBV3_PROJECT,   /**< a block's 1x1 projection */
    MBV3_FC         /**< the feature mix's or the classifier's fully connected layer */
} mbv3_part;

/**
 * The weights and bias of one operator, for a source to fill. Batch norm
 * after a convolution is the source's to fold in (the graph has none).
 */
typedef struct mbv3_request {
    const mbv3_layer *layer; /**< the layer the operator belongs to */
    mbv3_part part;
    xg_kind kind;   /**< XG_CONV, XG_DWCONV or XG_FC: the layout of weights */
    int k;          /**< kernel size (1 for 1x1 convolutions and XG_FC) */
    int cin, cout;  /**< input and output channels (depthwise: both the channel count) */
    float in_scale; /**< what the operator's input is multiplied by against training:
                         1/6 for a projection after squeeze-and-excite (the graph's
                         h-sigmoid leaves out its division), else 1. A source of trained
                         values multiplies its weights by it; random values may ignore it */
    float *weights; /**< (n_weights) zeros on entry: OHWI (cout, k, k, cin) for XG_CONV,
                         (1, k, k, cout) for XG_DWCONV, (cout, cin) for XG_FC */
    size_t n_weights;
    float *bias; /**< (n_bias = cout) zeros on entry; NULL for the feature mix */
    size_t n_bias;
} mbv3_request;

/**
 * Fill r->weights and r->bias (owned by the builder; only their values are
 * the source's). Called once per operator with weights, in graph order.
 * @return MANTA_OK, or an error set in @p err (the build stops with it).
 */
typedef manta_status (*mbv3_fill_fn)(void *ctx, const mbv3_request *r, manta_err *err);

/** Where values come from: @c fill with its context; NULL @c fill leaves every value 0. */
typedef struct mbv3_source {
    mbv3_fill_fn fill;
    void *ctx;
} mbv3_source;

/**
 * The layers of sub-network @p a of space @p s, in network order: stem,
 * first block, one block per active slot, head, pool, [mix,] classifier
 * (derived from ofa_describe(), so shapes agree with it).
 * @param out array of ::MBV3_MAX_LAYERS layers, filled.
 * @param n   number written.
 * @return MANTA_ERR_INVALID_ARG when @p a is not an architecture of @p s
 *         (ofa_arch_validate()'s message); MANTA_ERR_INTERNAL when the
 *         description has an unexpected form.
 */
manta_status mbv3_arch_layers(const ofa_space *s, const ofa_arch *a, mbv3_layer *out, int *n,
                              manta_err *err);

/**
 * Append the operators of layer @p l to @p g, reading tensor @p x (the
 * layer's input: (1, in_h, in_w, in_c), or for the mix and the classifier
 * (1, 1, 1, in_c) or (1, in_c)), with values from @p src. For the
 * classifier, g->logits and g->output are set.
 * @return the layer's output tensor, or -1 with @p err set (out of memory,
 *         an index out of range, or the source's error); @p g then holds the
 *         operators added before the failure (free it with xgraph_free()).
 */
int mbv3_graph_layer(xgraph *g, const mbv3_layer *l, int x, const mbv3_source *src, manta_err *err);

/**
 * The graph of sub-network @p a of space @p s: input (1, R, R, C) "input",
 * then every layer of mbv3_arch_layers(); description "manta OFA sub-network
 * of space NAME", arch_json OFA's encoding of @p a.
 * @param pre      copied into the graph (labels copied, a NULL label as "");
 *                 resolution and channels are set from @p a and @p s. NULL: none
 *                 (zeros, no labels).
 * @param out      initialised here; free with xgraph_free(). Empty on error.
 * @param first_op NULL, or an array of ::MBV3_MAX_LAYERS + 1 entries: layer i
 *                 is operators [first_op[i], first_op[i + 1]) and first_op[n]
 *                 the operator count.
 * @param n_layers NULL, or receives the number of layers.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s; MANTA_ERR_NO_MEMORY;
 *         the source's error.
 */
manta_status mbv3_arch_graph(const ofa_space *s, const ofa_arch *a, const xg_preprocess *pre,
                             const mbv3_source *src, xgraph *out, int *first_op, int *n_layers,
                             manta_err *err);

#endif
