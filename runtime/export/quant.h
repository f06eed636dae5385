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
 * Run @p n images through @p g (a classification graph) and set g->qmin and
 * g->qmax (replacing earlier ones).
 * @param images n images of the input's shape (R, R, C), NHWC, one after the other.
 * @param pct    XG_CALIB_PERCENTILE: the upper percentile in (50, 100], e.g. 99.99.
 * @return MANTA_OK, MANTA_ERR_INVALID_ARG (n < 1, bad pct, or xgraph_validate()),
 *         MANTA_ERR_NO_MEMORY.
 */
manta_status xgraph_calibrate(xgraph *g, const float *images, int n, xg_calib method, double pct,
                              manta_err *err);

#endif
