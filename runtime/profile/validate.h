/**
 * @file validate.h
 * @brief How well predicted latencies match measured ones: the figures
 *        `manta-profile --validate` reports (mean and largest absolute
 *        percentage error, share within a tolerance, Kendall's tau, RMSE),
 *        and the median used for the fixed overhead.
 */
#ifndef MANTA_PROFILE_VALIDATE_H
#define MANTA_PROFILE_VALIDATE_H

#include <stddef.h>

#include "core/status.h"

/** Agreement of @c n predictions with measurements. Percentages are of the measured value. */
typedef struct lat_agreement {
    size_t n;
    double mean_abs_pct; /**< mean of |pred - meas| / meas * 100 */
    double max_abs_pct;  /**< largest of the same */
    double mean_pct;     /**< mean signed (pred - meas) / meas * 100: the bias */
    double within;       /**< share (0..1) with |pred - meas| / meas <= tol */
    double tol;          /**< the tolerance used (0.10 for +-10 %) */
    double kendall_tau;  /**< Kendall's tau-b of the two rankings; 0 when undefined */
    double rmse;         /**< root mean squared error, in the values' unit */
    double max_abs;      /**< largest |pred - meas| */
} lat_agreement;

/**
 * Compare @p pred with @p meas (@p n values each, measured ones > 0).
 * Kendall's tau-b counts concordant and discordant pairs over all n(n-1)/2
 * pairs with the tie correction (tau-b); O(n^2).
 * @return MANTA_ERR_INVALID_ARG for n < 2, a tolerance below 0, or a value
 *         that is not finite or a measurement that is not positive (named by index).
 */
manta_status lat_agreement_compute(const double *pred, const double *meas, size_t n, double tol,
                                   lat_agreement *out, manta_err *err);

/**
 * The median of @p n values (copied, not reordered): the mean of the middle
 * two for an even count. @return 0 for n == 0.
 */
double lat_median(const double *v, size_t n);

#endif
