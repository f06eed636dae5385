/**
 * @file xgraph.h
 * @brief The exporter's input: a sub-network as a small inference graph with
 *        host weights, already in the form the .tflite file will hold:
 *        NHWC tensors, batch norm folded into convolution weights and biases,
 *        elastic kernels baked into plain depthwise weights, channels sliced,
 *        activations fused where TensorFlow Lite can fuse them.
 *
 * Built for MobileNetV3 sub-networks by runtime/export/mbv3_graph.h (from a
 * trained supernet by ofa_supernet_extract(), runtime/classify/extract.h; with
 * random values by runtime/profile/synth.h), written by the .tflite writer
 * (runtime/export/tflite.h).
 *
 * Stereo depth networks are graphs of the same kind with two inputs (left and
 * right views) and one or more outputs (disparity maps): xgraph::n_inputs and
 * xgraph::outputs list them, and their correlation is a pattern of builtins
 * (xgraph_add_correlation()).
 *
 * Layouts (TensorFlow Lite's):
 *  - activations NHWC (rank 4) or (N, units) (rank 2);
 *  - XG_CONV and XG_TCONV weights OHWI (Cout, KH, KW, Cin), bias (Cout);
 *  - XG_DWCONV weights (1, KH, KW, C) with depth multiplier 1, bias (C);
 *  - XG_FC weights (units, in), bias (units) or none.
 * Padding: `same` means TensorFlow Lite's SAME (out = ceil(in / stride), the
 * odd pixel of padding after); otherwise VALID. Where a layer's padding is
 * not SAME, an XG_PAD op with explicit zero padding precedes it and the
 * layer is VALID.
 */
#ifndef MANTA_EXPORT_XGRAPH_H
#define MANTA_EXPORT_XGRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

typedef enum xg_kind {
    XG_CONV,   /**< in0 -> out; weights, bias; kh, kw, stride, same, act */
    XG_DWCONV, /**< in0 -> out; weights, bias; kh, kw, stride, same, act */
    XG_PAD,    /**< in0 -> out; pad[4] = top, bottom, left, right (zeros) */
    XG_ADD,    /**< in0 + in1 -> out (same shape) */
    /** in0 * in1 -> out (in0's shape): in1 of the same shape (the correlation) or broadcast
     *  along its dims of 1 ((N,1,1,C): channel scaling) */
    XG_MUL,
    XG_HSWISH,  /**< in0 -> out */
    XG_MEAN,    /**< in0 (N,H,W,C) -> out (N,1,1,C): mean over H and W */
    XG_RESHAPE, /**< in0 -> out: same elements, out's shape */
    XG_FC,      /**< in0 (N, in) -> out (N, units); weights, bias (may be NULL); act */
    XG_SOFTMAX, /**< in0 (N, K) -> out (N, K), beta 1 */
    /** in0 (N, H, W, Cin) -> out (N, OH, OW, Cout): transposed convolution, TFLite's
     *  TRANSPOSE_CONV (the adjoint of a CONV with these kh, kw, stride, same, mapping out to
     *  in: out's size must be one that convolution maps to in's); weights OHWI (Cout, KH,
     *  KW, Cin), bias (Cout) or NULL; no fused activation. k4 s2 SAME is PyTorch's
     *  ConvTranspose2d k4 s2 p1 (out = 2 in). */
    XG_TCONV,
    XG_CONCAT,     /**< ins[0 .. n_ins-1] (N, H, W, C_i) -> out (N, H, W, sum C_i) */
    XG_LEAKY_RELU, /**< in0 -> out: x >= 0 ? x : alpha * x */
    XG_MEAN_C,     /**< in0 (N, H, W, C) -> out (N, H, W, 1): mean over the channels */
    XG_SLICE,      /**< in0 (N, H, W, C) -> out = in0[begin .. begin + size) (rank 4) */
    /** in0 (N, H, W, C) -> out (N, OH, OW, C): bilinear with half-pixel centres, the training
     *  side's upsampling (runtime/nn/upsample.h, PyTorch's align_corners=False):
     *  src = max(0, (o + 0.5) * in / out - 0.5), i0 = floor(src), i1 = min(i0 + 1, in - 1),
     *  separably along H and W; TFLite's RESIZE_BILINEAR with half_pixel_centers. */
    XG_RESIZE,
    /** in0 -> out (same shape): the identity on values; in an int8 file a QUANTIZE of in0
     *  into out's quantization (xgraph_quant_shared(), export/quant.h). Int8 graphs only. */
    XG_REQUANT
} xg_kind;

typedef enum xg_act {
    XG_ACT_NONE = 0,
    XG_ACT_RELU = 1,
    XG_ACT_RELU6 = 3 /**< values match TFLite's ActivationFunctionType */
} xg_act;

#define XG_NAME_MAX 48
#define XG_MAX_INPUTS 64 /**< inputs of one XG_CONCAT (the engine's limit per operator) */
#define XG_MAX_IO 8      /**< model inputs and outputs of a multi-input graph */

typedef struct xg_tensor {
    int rank;               /**< 2 or 4 */
    int shape[4];           /**< NHWC, or (N, units) */
    char name[XG_NAME_MAX]; /**< "stem", "u2.b1.dw", "logits", ... */
} xg_tensor;

typedef struct xg_op {
    xg_kind kind;
    int in0, in1, out;  /**< tensor indices; in1 = -1 when unused */
    int kh, kw, stride; /**< convolutions (square stride) */
    bool same;          /**< SAME padding (else VALID) */
    int pad[4];         /**< XG_PAD: top, bottom, left, right */
    xg_act act;         /**< fused activation of CONV, DWCONV, FC */
    float *weights;     /**< owned; layout per kind (see file comment) */
    size_t n_weights;
    float *bias; /**< owned; NULL when none */
    size_t n_bias;
    int n_ins;              /**< XG_CONCAT: number of inputs (1 .. XG_MAX_INPUTS) */
    int ins[XG_MAX_INPUTS]; /**< XG_CONCAT: the inputs in order; in0 == ins[0], in1 == -1 */
    float alpha;            /**< XG_LEAKY_RELU: slope below 0 */
    int begin[4], size[4];  /**< XG_SLICE: NHWC start and extent */
} xg_op;

/** How an image becomes the model's input (stored in the .tflite metadata). */
typedef struct xg_preprocess {
    int resolution;        /**< square input side (classification) */
    int channels;          /**< 1 or 3 */
    float mean[3], std[3]; /**< input = (pixel / 255 - mean) / std, per channel */
    int n_labels;
    char **labels; /**< (n_labels) owned class names */
    /** A stereo graph's: "stereo" (written as the metadata's "task"; "" writes none) */
    char task[16];
    char space[64];   /**< the search space's name ("" writes none) */
    float disp_scale; /**< output value per pixel of disparity at the input's size
                            *  (written as "disparity_scale" when > 0) */
    float max_disp;   /**< largest disparity the network was trained for, in pixels of
                            *  the input (written as "max_disp" when > 0) */
} xg_preprocess;

typedef struct xgraph {
    int n_tensors, n_ops;
    xg_tensor *tensors; /**< owned */
    xg_op *ops;         /**< owned, in execution order */
    int input;          /**< tensor index of the image (1, R, R, C) (classification) */
    int logits;         /**< tensor index of the classifier output (1, K) (classification) */
    int output;         /**< tensor index of the probabilities (1, K) (classification) */
    /** A graph with n_inputs > 0 (stereo: left and right views) has the model inputs
     *  inputs[0 .. n_inputs-1] (rank 4) and the model outputs outputs[0 .. n_outputs-1]
     *  (n_outputs >= 1) instead of input, logits and output, which are then unused. */
    int n_inputs, inputs[XG_MAX_IO];
    int n_outputs, outputs[XG_MAX_IO];
    char description[128];
    char arch_json[2048]; /**< the sub-network in OFA's encoding */
    xg_preprocess pre;
    /** The writer stores float32 constants of equal shape and values once: one tensor and
     *  one buffer that every operator having them reads (a stereo network's encoder, whose
     *  layers run on the left and the right view with the same weights). Off: one per op. */
    bool share_weights;
    /** int8 export: NULL for a float32 file; else (n_tensors) calibrated ranges, owned
     *  (xgraph_calibrate(), export/quant.h): tflite_write() then writes a fully int8 file
     *  (TFLite's quantization spec; classification graphs). */
    float *qmin, *qmax;
} xgraph;

/** Release everything a graph owns; the struct is zeroed. NULL is allowed. */
void xgraph_free(xgraph *g);

/**
 * Append a tensor / op (growing the arrays). The op takes ownership of its
 * weights and bias. Return the new index, or -1 (with @p err) when out of
 * memory or when an index is out of range.
 */
int xgraph_add_tensor(xgraph *g, int rank, const int *shape, const char *name, manta_err *err);

/** xgraph_add_tensor() of a (1, @p h, @p w, @p c) tensor (one image, NHWC). */
int xgraph_add_nhwc(xgraph *g, int h, int w, int c, const char *name, manta_err *err);

/** Output side of a convolution of kernel @p k and @p stride, padded k / 2 on each side (the
 *  graphs' convolutions): (in + 2 (k / 2) - k) / stride + 1. */
int xgraph_conv_size(int in, int k, int stride);
int xgraph_add_op(xgraph *g, const xg_op *op, manta_err *err);

/**
 * Check a graph before it is evaluated or written: tensor indices in range,
 * ranks and dims, each op's output shape as TensorFlow Lite infers it from its
 * inputs (SAME / VALID windows, padding, broadcasts), weight and bias counts,
 * kernel sizes and strides (>= 1), fused activations (CONV, DWCONV, FC, ADD,
 * MUL only), every tensor written once and before it is read, the input
 * (rank 4) and the logits and output tensors (rank 2, same shape); for a graph
 * with n_inputs > 0, the inputs (rank 4, distinct) and outputs (written,
 * distinct, not inputs) instead.
 * @return MANTA_OK or MANTA_ERR_INVALID_ARG with a message naming the op or tensor.
 */
manta_status xgraph_validate(const xgraph *g, manta_err *err);

/**
 * Append the correlation of @p left and @p right (both (N, H, W, C) tensors of
 * @p g) as TFLite builtins, in the one form the engine fuses (engine/fuse_impl.h),
 * written from the training side's definition (runtime/nn/correlation.h):
 *   out[n][y][x][i] = (1/C) * sum_c left[n][y][x][c] * right[n][y][x - d_i][c],
 *   d_i = i * stride, i = 0 .. D-1, D = max_disp / stride + 1,
 * the right features zero outside the image. Operators, in order:
 *   PAD    right by P = (D-1) * stride columns before W -> "<name>/pad" (N, H, W+P, C);
 *   for each i: SLICE "<name>/pad" at (0, 0, P - d_i, 0), size (N, H, W, C) -> "<name>/d<i>";
 *               MUL left * "<name>/d<i>" -> "<name>/d<i>/mul";
 *               MEAN over the channels -> "<name>/d<i>/mean" (N, H, W, 1);
 *   CONCATENATION of the D means along the channels -> "<name>" (N, H, W, D).
 * @param max_disp >= 0; @p stride >= 1; D at most XG_MAX_INPUTS.
 * @return the output tensor's index, or -1 (with @p err: bad tensors or
 *         parameters, out of memory).
 */
int xgraph_add_correlation(xgraph *g, int left, int right, int max_disp, int stride,
                           const char *name, manta_err *err);

/**
 * Evaluate the graph on the host in double precision and return the values of
 * chosen tensors (the reference for tests and export checks of any graph).
 * @param inputs one array per model input (the graph's inputs[] in order, or
 *               its input alone for a classification graph), NHWC.
 * @param n_want number of tensors wanted; @p want their indices;
 * @param values one array per wanted tensor, as many floats as it holds.
 * @return as xgraph_reference().
 */
manta_status xgraph_reference_tensors(const xgraph *g, const float *const *inputs, int n_want,
                                      const int *want, float *const *values, manta_err *err);

/**
 * Evaluate the graph on the host in double precision (a plain reference, for
 * tests and for checking an export): @p input (R*R*C, NHWC) -> @p logits (K).
 * The graph is checked with xgraph_validate() first. Padding follows
 * TensorFlow Lite exactly (SAME: out = ceil(in / stride), half the padding
 * before, the odd pixel after); fused activations are applied.
 * Classification graphs only (see xgraph_reference_tensors() for any graph).
 * @param input  as many floats as the input tensor holds.
 * @param logits as many floats as the logits tensor holds.
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (see xgraph_validate()), MANTA_ERR_NO_MEMORY.
 */
manta_status xgraph_reference(const xgraph *g, const float *input, float *logits, manta_err *err);

#endif
