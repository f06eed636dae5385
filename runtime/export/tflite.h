/**
 * @file tflite.h
 * @brief Write an export graph (xgraph.h) as a TensorFlow Lite file: schema
 *        v3 ("TFL3"), float32, one subgraph, readable by LiteRT, TFLM and the
 *        manta engine.
 *
 * File contents:
 *  - operator codes with both deprecated_builtin_code and builtin_code (codes
 *    below 127), version 1 (FULLY_CONNECTED without bias: 6, bias input left out);
 *  - buffer 0 the empty sentinel, one buffer per constant tensor (data
 *    16-byte aligned, FlatBuffers force_align), then the metadata buffers;
 *  - tensors: the graph's tensors first, with the same indices (so the input,
 *    logits and output indices of the graph hold in the file), then the
 *    constants named "<op output>/weights", "/bias", "/paddings", "/axes",
 *    "/shape";
 *  - operators: CONV_2D and DEPTHWISE_CONV_2D (always with a bias: zeros when
 *    the graph has none, since LiteRT and the engine require one; depth
 *    multiplier 1), PAD (PadOptions, paddings INT32 [4, 2]), ADD, MUL,
 *    HARD_SWISH, MEAN (axes INT32 [1, 2], keep_dims true for an (N, 1, 1, C)
 *    output), RESHAPE (new_shape option and shape tensor), FULLY_CONNECTED,
 *    SOFTMAX (beta 1.0 written); strides are always written; for stereo graphs
 *    also TRANSPOSE_CONV (inputs output_shape INT32 [4], weights OHWI, input,
 *    bias; version 3 with the bias, 1 without; no fused activation),
 *    CONCATENATION (axis 3), LEAKY_RELU (alpha), MEAN over axis 3 (axes INT32
 *    [3], keep_dims), SLICE (begin and size INT32 [4], empty SliceOptions),
 *    RESIZE_BILINEAR (size INT32 [2], half_pixel_centers, version 3);
 *    constants "/output_shape", "/begin", "/size";
 *  - subgraph inputs [input], outputs [output] (the probabilities); the
 *    logits tensor is not a model output but stays readable after an
 *    invocation in the engine (SOFTMAX, the last operator, only reads it);
 *    a graph of several inputs: its inputs and outputs lists;
 *  - metadata "OfflineMemoryAllocation" (TFLM's format: int32 [1, 1, n
 *    tensors, offset per tensor], -1 for constants), the engine's own plan;
 *    and "manta_preprocess", a JSON object:
 *    {"version":1, "resolution":R, "channels":C, "mean":[..], "std":[..],
 *     "labels":[..], "input_tensor":i, "logits_tensor":l, "output_tensor":o,
 *     "arch":{..}} (arch: the graph's arch_json, or null); for a graph of
 *    several inputs "height" and "width" replace "resolution", and
 *    "input_tensors" and "output_tensors" (arrays) the three tensor indices.
 *
 * The offline plan is exact by construction: the file is first written with
 * every offset at -1, the engine plans that file, and the offsets are then
 * patched into the same bytes (same size, same layout). The engine's planner
 * reproduces its own plan from the metadata (tensors sharing a buffer have
 * equal offsets), so the arena size reported for the final file is the one
 * the engine computes for it.
 */
#ifndef MANTA_EXPORT_TFLITE_H
#define MANTA_EXPORT_TFLITE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "export/xgraph.h"

/** Metadata name of the preprocessing JSON. */
#define TFLITE_META_PREPROCESS "manta_preprocess"
/** Metadata name of the offline memory plan (TFLM). */
#define TFLITE_META_OFFLINE "OfflineMemoryAllocation"

/** What was written. */
typedef struct tflite_report {
    size_t file_bytes;       /**< size of the .tflite data */
    size_t arena_bytes;      /**< exact arena the engine needs (mengine_arena_size()) */
    size_t activation_bytes; /**< planned activations and scratch inside the arena */
    size_t weights_bytes;    /**< constant tensor data (weights, biases, int32 shapes) */
    int n_ops;               /**< operators */
    int n_tensors;           /**< tensors, constants included */
    /** tensor indices (a graph of several inputs: its first input and output, logits -1) */
    int input_tensor, logits_tensor, output_tensor;
    size_t fused_correlations; /**< correlation patterns the engine runs as one kernel */
} tflite_report;

/**
 * Serialise @p g, plan it with the engine and write the plan into it.
 * @param data receives the model, 16-byte aligned (release with free()).
 * @param size receives its size in bytes.
 * @param rep  filled on success (may be NULL).
 * @return MANTA_OK; MANTA_ERR_INVALID_ARG (the graph fails xgraph_validate());
 *         MANTA_ERR_FORMAT (the engine rejects the written model: message
 *         from its verifier); MANTA_ERR_NO_MEMORY; MANTA_ERR_INTERNAL.
 */
manta_status tflite_write(const xgraph *g, uint8_t **data, size_t *size, tflite_report *rep,
                          manta_err *err);

/**
 * tflite_write() to a file (replaced atomically: manta_file_write_atomic()
 * of core/fileio.h), and,
 * when @p c_array_dir is not NULL, the same bytes as C source (see
 * tflite_write_c_array()).
 * @return as tflite_write(), plus MANTA_ERR_IO naming the file.
 */
manta_status tflite_write_file(const xgraph *g, const char *path, const char *c_array_dir,
                               tflite_report *rep, manta_err *err);

/**
 * Write @p dir/model.h and @p dir/model.c, for boards without a file system:
 * @code
 *   #define MODEL_DATA_SIZE  <bytes>
 *   #define MODEL_ARENA_SIZE <bytes>   // exact for this engine build
 *   extern const unsigned char model_data[MODEL_DATA_SIZE];  // 16-byte aligned
 * @endcode
 * MODEL_ARENA_SIZE is what mengine_arena_size() returns on the host that
 * exported (64-bit); a 32-bit build of the engine has smaller records, so the
 * figure is then an upper bound, but for a build with the int8 path of Arm's DSP
 * extension: its int8 CONV_2D above 1x1 has 2 patch rows of scratch more
 * (mengine_kq_conv_get_buffer_size()), which can raise the peak (mengine_prepare()
 * then fails with MENGINE_ERR_ARENA). The directory must exist.
 * With @p int8 (a fully int8 model) model.h also defines MODEL_INT8 (1), so that a board
 * program can name only the int8 operators.
 * @param arena_bytes the arena size to write (tflite_report::arena_bytes).
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG, MANTA_ERR_IO naming the file.
 */
manta_status tflite_write_c_array(const uint8_t *data, size_t size, size_t arena_bytes, int int8,
                                  const char *dir, manta_err *err);

/**
 * Check a written model against its graph: run the engine on @p data and
 * xgraph_reference() on @p g with the same input (uniform in [-1, 1) from
 * @p seed) and return the largest absolute difference of the logits and of
 * the probabilities (the model output against the softmax of the reference
 * logits; -1 when the graph's output is not SOFTMAX of its logits). For a
 * graph of several inputs (xgraph::n_inputs > 0), every input is filled so,
 * one after the other, @p max_logit_diff is the largest difference over every
 * model output and @p max_prob_diff is -1.
 * @param data the model, 16-byte aligned (as tflite_write() returns it).
 * @return MANTA_OK, MANTA_ERR_FORMAT (the engine rejects the model or its
 *         shapes do not match the graph), MANTA_ERR_INVALID_ARG, MANTA_ERR_NO_MEMORY.
 */
manta_status tflite_check(const xgraph *g, const uint8_t *data, size_t size, uint64_t seed,
                          double *max_logit_diff, double *max_prob_diff, manta_err *err);

#endif
