/**
 * @file stereo_graph.h
 * @brief The one builder of stereo sub-network inference graphs (export/xgraph.h): batch 1,
 *        NHWC, batch norm folded, the form the exporter writes (stereo/extract.h) and the
 *        profiler times (profile/synth.h). As export/mbv3_graph.h for classification, the
 *        values of weights and biases come from a weight source (::sgraph_source), so the
 *        graph's structure does not depend on where they come from. Host code only.
 *
 * @par Layers
 * A sub-network of a stereo space (space/stereo_space.h) at an input of H x W is a sequence
 * of layers (sgraph_arch_layers()), in the order the graph runs them; each reads the outputs
 * of earlier layers (::sgraph_layer.src) and becomes these operators:
 * @verbatim
 * inputs   "left" (1, H, W, 3), "right" (1, H, W, 3)
 * stem     the left view's "stem", then the right view's "r.stem": export/mbv3_graph.h's
 *          stem (its operators are named "stem" on both views)
 * blocks   units 1..corr_after_unit, each block on the left view ("u1.b1") then on the
 *          right view ("r.u1.b1"): mbv3_graph.h's blocks, the same weights
 * corr     xgraph_add_correlation() of the views' last shared tensors ("corr")
 * redir    CONV 1x1 + bias, LEAKY_RELU of the left view's ("redir", "redir.leaky")
 * concat   CONCATENATION [corr, redir] ("corr.concat"), then the other units' blocks
 * pred     CONV 3x3 + bias of the last unit's output to 1 channel ("d<L>.pred")
 * per decoder level, coarse to fine (k = its output scale 1/2^k):
 *   deconv   TRANSPOSE_CONV k4 s2 + bias, LEAKY_RELU ("d<k>.deconv", "d<k>.deconv.leaky")
 *   upsample RESIZE_BILINEAR x2 of the coarser prediction ("d<k>.upsample")
 *   concat   CONCATENATION [skip, upsampled, deconv] ("d<k>.concat")
 *   conv     CONV 3x3 + bias, LEAKY_RELU ("d<k>.conv", "d<k>.conv.leaky")
 *   pred     CONV 3x3 + bias to 1 channel ("d<k>.pred")
 * output   "d0.pred" (1, H, W, 1)
 * @endverbatim
 * The skip of a level is the left path's last tensor at its scale (the left image at full
 * resolution). The graph's metadata: task "stereo", the space's name, channels 3, mean 0,
 * std 1, disparity scale 1, max_disp the space's, share_weights (the two views' layers have
 * the same weights, stored once), arch_json the sub-network with "dw".
 */
#ifndef MANTA_EXPORT_STEREO_GRAPH_H
#define MANTA_EXPORT_STEREO_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "export/mbv3_graph.h"
#include "export/xgraph.h"
#include "space/stereo_space.h"

/** Most layers of one stereo sub-network: two stems, every slot on two views, the
 *  correlation, redirect and their concatenation, the coarsest prediction, 5 per level. */
#define SGRAPH_MAX_LAYERS (2 + 2 * OFA_MAX_SLOTS + 3 + 1 + 5 * STEREO_MAX_LEVELS)

/** Left-image and right-image inputs as ::sgraph_layer.src values. */
#define SGRAPH_SRC_LEFT (-1)
#define SGRAPH_SRC_RIGHT (-2)

/** Kinds of layers (see the file comment for their operators). */
typedef enum sgraph_type {
    SGRAPH_STEM,     /**< an encoder stem (one view) */
    SGRAPH_BLOCK,    /**< an encoder MBConv block (one view) */
    SGRAPH_CORR,     /**< the correlation of the two views */
    SGRAPH_REDIR,    /**< the 1x1 redirect of the left features + leaky ReLU */
    SGRAPH_CONCAT,   /**< a channel concatenation (2 or 3 inputs) */
    SGRAPH_DECONV,   /**< a transposed convolution k4 s2 + leaky ReLU */
    SGRAPH_UPSAMPLE, /**< bilinear x2 resize of a prediction */
    SGRAPH_CONV,     /**< a decoder 3x3 convolution + leaky ReLU */
    SGRAPH_PRED      /**< a 3x3 convolution to 1 channel (a prediction) */
} sgraph_type;

/** One layer: its kind, shapes and inputs. */
typedef struct sgraph_layer {
    sgraph_type type;
    char where[48];       /**< "stem", "r.stem", "u1.b1", "r.u1.b1", "corr", "redir", "corr.concat",
                         "d3.pred", "d2.deconv", "d2.upsample", "d2.concat", "d2.conv", ... */
    mbv3_layer enc;       /**< SGRAPH_STEM and SGRAPH_BLOCK: the encoder layer (slot set) */
    int view;             /**< encoder layers: 0 left, 1 right; else 0 */
    int level;            /**< decoder layers: the level (0 = the coarsest); -1 for the others and
                         the coarsest prediction */
    int in_h, in_w, in_c; /**< the (first) input; a concatenation: its output size, in_c
                               the sum of n_in parts */
    int out_h, out_w, out_c;
    int n_in;        /**< inputs: 1, 2 (correlation, its concatenation), 3 (a level's) */
    int in_cs[3];    /**< channels of each input */
    int src[3];      /**< each input: an earlier layer's index, or SGRAPH_SRC_LEFT/RIGHT */
    int kernel;      /**< convolutions' kernel (4 for the deconvolution), else 0 */
    int corr_disp;   /**< SGRAPH_CORR: the largest displacement, in columns */
    int corr_stride; /**< SGRAPH_CORR: the displacement step */
} sgraph_layer;

/** The weights and bias of a redirect or decoder operator, for a source to fill. */
typedef struct sgraph_request {
    const sgraph_layer *layer; /**< SGRAPH_REDIR, SGRAPH_DECONV, SGRAPH_CONV, SGRAPH_PRED */
    xg_kind kind;              /**< XG_CONV or XG_TCONV */
    int k, cin, cout;          /**< kernel size, input and output channels */
    float *weights;            /**< (n_weights) zeros: OHWI (cout, k, k, cin) */
    size_t n_weights;
    float *bias; /**< (n_bias = cout) zeros */
    size_t n_bias;
} sgraph_request;

/**
 * Fill r->weights and r->bias (owned by the builder). Called once per operator with weights.
 * @return MANTA_OK, or an error set in @p err (the build stops with it).
 */
typedef manta_status (*sgraph_fill_fn)(void *ctx, const sgraph_request *r, manta_err *err);

/** Where values come from: @c encoder fills the stems and blocks (its request's layer is
 *  ::sgraph_layer.enc), @c fill the redirect and the decoder, each with @c ctx. A NULL
 *  function leaves its values 0. */
typedef struct sgraph_source {
    mbv3_fill_fn encoder;
    sgraph_fill_fn fill;
    void *ctx;
} sgraph_source;

/**
 * The layers of sub-network @p a of space @p s at an input of @p h x @p w (multiples of
 * 2^n_levels; the crop for what is exported), in graph order (see the file comment).
 * @param out array of ::SGRAPH_MAX_LAYERS layers, filled.
 * @param n   number written.
 * @return MANTA_ERR_INVALID_ARG when @p a is not of @p s (stereo_arch_validate()'s message)
 *         or the size is not a positive multiple of 2^n_levels.
 */
manta_status sgraph_arch_layers(const stereo_space *s, const ofa_arch *a, int h, int w,
                                sgraph_layer *out, int *n, manta_err *err);

/**
 * Append the operators of layer @p l to @p g, reading tensors @p in (l->n_in of them, of
 * the shapes the layer describes), with values from @p src.
 * @return the layer's output tensor, or -1 with @p err set; @p g then holds the operators
 *         added before the failure (free it with xgraph_free()).
 */
int sgraph_layer_ops(xgraph *g, const sgraph_layer *l, const int *in, const sgraph_source *src,
                     manta_err *err);

/**
 * The graph of sub-network @p a of @p s at @p h x @p w: inputs "left" and "right", every
 * layer of sgraph_arch_layers(), the finest prediction the one output, and the metadata of
 * the file comment.
 * @param out      initialised here; free with xgraph_free(). Empty on error.
 * @param first_op NULL, or an array of ::SGRAPH_MAX_LAYERS + 1 entries: layer i is
 *                 operators [first_op[i], first_op[i + 1]) and first_op[n] the count.
 * @param n_layers NULL, or receives the number of layers.
 * @return as sgraph_arch_layers(); MANTA_ERR_NO_MEMORY; the source's error.
 */
manta_status sgraph_arch_graph(const stereo_space *s, const ofa_arch *a, int h, int w,
                               const sgraph_source *src, xgraph *out, int *first_op, int *n_layers,
                               manta_err *err);

#endif
