/**
 * @file quant.h
 * @brief Post-training int8 calibration of an export graph (xgraph.h): the
 *        activation range of every tensor over calibration images run through
 *        the graph's float reference (xgraph_reference_tensors(): batch norm
 *        already folded, so the same function as the re-calibrated supernet),
 *        stored in xgraph::qmin / qmax for tflite_write() to write an int8 file.
 */
#ifndef MANTA_EXPORT_QUANT_H
#define MANTA_EXPORT_QUANT_H

#include "core/status.h"
#include "export/xgraph.h"

/** How a tensor's range is taken from its values over the calibration images. */
typedef enum xg_calib {
    XG_CALIB_MINMAX = 0,    /**< the smallest and largest value seen */
    XG_CALIB_PERCENTILE = 1 /**< the @c pct and 100 - @c pct percentiles of every value seen
                                 (4096-bin histograms over the min/max range: a second pass) */
} xg_calib;

/**
 * Run @p n samples through @p g and set g->qmin and g->qmax (replacing earlier ones).
 * @param images n samples one after the other; a sample is an image of the input's shape
 *               (R, R, C), NHWC, for a classification graph, and every model input in
 *               order (g->inputs[]: a stereo graph's left then right view, NHWC) for a
 *               graph with several.
 * @param pct    XG_CALIB_PERCENTILE: the upper percentile in (50, 100], e.g. 99.99.
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (n < 1, bad pct, or xgraph_validate()),
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status xgraph_calibrate(xgraph *g, const float *images, int n, xg_calib method, double pct,
                              manta_err *err);

/**
 * Make a graph's CONCATENATIONs quantizable as TFLite's int8 kernel wants (its inputs of its
 * output's scale and zero point), before xgraph_calibrate(): an input read by the
 * concatenation alone and written by an operator that requantizes (CONV, DWCONV, TCONV,
 * LEAKY_RELU, MEAN, MEAN_C, MUL, ADD) will take the concatenation's range itself
 * (xgraph_quant_shared()); any other (a model input, a tensor read elsewhere, a RESIZE's or
 * another CONCATENATION's output) is read through an XG_REQUANT inserted just before the
 * concatenation (output "<name>/q<k>"; a QUANTIZE in the file).
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (calibrated already, or xgraph_validate()),
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status xgraph_quant_prepare(xgraph *g, manta_err *err);

/**
 * After xgraph_calibrate() of a graph through xgraph_quant_prepare(): every input of a
 * CONCATENATION gets the concatenation's range, and the MULs of a correlation pattern
 * (xgraph_add_correlation()) the union of theirs, so that the engine's fused int8 kernel
 * runs them (one quantization for every displacement).
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (no ranges, or a concatenation input read
 *         elsewhere).
 */
manta_status xgraph_quant_shared(xgraph *g, manta_err *err);

#endif
