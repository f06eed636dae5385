/**
 * @file extract.h
 * @brief The active sub-network of a stereo net (stereo/net.h), at the network's present
 *        size, as an export graph (export/xgraph.h) for the .tflite writer: batch norm
 *        folded with the network's present statistics (re-calibrate first), elastic
 *        kernels baked, channels and decoder widths sliced.
 *
 * The graph is export/stereo_graph.h's (sgraph_arch_graph()), built with this network's
 * values as the weight source (as classify/extract.h is mbv3_graph.h's), so the profiler's
 * synthetic graphs have its structure: inputs "left" and "right" (1, H, W, 3), RGB in
 * [0, 1]; the encoder on both views with shared weights, the correlation, the redirect,
 * the other units, the decoder; the output "d0.pred" (1, H, W, 1), the finest disparity in
 * pixels of the input. Metadata: task "stereo", the space's name, channels 3, mean 0, std 1
 * (input = pixel / 255), disparity scale 1, max_disp the space's; arch_json the
 * sub-network with "dw".
 */
#ifndef MANTA_STEREO_EXTRACT_H
#define MANTA_STEREO_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

#include "export/xgraph.h"
#include "stereo/net.h"

/**
 * The graph of the active sub-network of @p n at its present size (stereo_net_size()),
 * values read from the device (parameters and batch-norm statistics).
 * @param out initialised here; free with xgraph_free(). Empty on error.
 * @return MANTA_ERR_INVALID_ARG before an architecture was set; MANTA_ERR_NO_MEMORY;
 *         the device's errors (the message in @p err).
 */
manta_status stereo_net_extract(stereo_net *n, xgraph *out, manta_err *err);

/** How an exported model and the device network agree on one pair. */
typedef struct stereo_export_diff {
    double max_abs;            /**< largest |engine - device| of the finest disparity, px */
    double rel_l2;             /**< ||engine - device||_2 / ||device||_2 */
    double mean_disp;          /**< mean of the device network's disparity, px */
    size_t fused_correlations; /**< correlations the engine runs as one kernel */
} stereo_export_diff;

/**
 * Run the model @p data (@p size bytes, 16-byte aligned: a written stereo_net_extract()
 * graph of @p n) in the inference engine and the active sub-network of @p n on the device
 * (eval mode, its present statistics) on the same pair, and compare their finest
 * disparities. @p views: (2, 3, H, W) at the network's size, the left view then the right
 * one, values as stereo_net_input() takes them (every pair of the device batch gets it;
 * the input tensor is overwritten).
 * @return MANTA_ERR_FORMAT (the engine refuses the model, or its inputs or output are not
 *         the network's size); MANTA_ERR_NO_MEMORY; the device's errors.
 */
manta_status stereo_export_check(stereo_net *n, const uint8_t *data, size_t size,
                                 const float *views, stereo_export_diff *out, manta_err *err);

#endif
