/**
 * @file ticks.h
 * @brief The axes of `manta report`'s plots: round tick values ("nice
 *        numbers": 1, 2 or 5 times a power of ten) covering a data range, and
 *        their labels. Plain arithmetic, no drawing (the plots themselves are
 *        tools/manta-report/plot.h's, with cairo).
 */
#ifndef MANTA_REPORT_TICKS_H
#define MANTA_REPORT_TICKS_H

#include <stdbool.h>
#include <stddef.h>

#define PLOT_MAX_TICKS 16 /**< ticks per axis */

/** An axis' ticks: round values covering a range. */
typedef struct plot_ticks {
    double lo, hi;            /**< the axis' range: the first and last tick */
    double step;              /**< between ticks: 1, 2 or 5 times a power of ten */
    int n;                    /**< ticks (2 .. PLOT_MAX_TICKS) */
    double v[PLOT_MAX_TICKS]; /**< their values, rising, from lo to hi */
    int decimals;             /**< digits after the point that tell the ticks apart */
} plot_ticks;

/**
 * The "nice number" near @p x > 0 (Heckbert, Graphics Gems I): 1, 2, 5 or 10
 * times a power of ten; rounded to the nearest of them when @p round is true,
 * else the smallest of them not below @p x. Returns 0 for x <= 0 or non-finite x.
 */
double rep_nice_number(double x, bool round);

/**
 * Ticks for data in [@p lo, @p hi] (either order): about @p target ticks
 * (clamped to 3 .. PLOT_MAX_TICKS) at a nice step, the first at or below the
 * data's lowest value and the last at or above its highest. An empty range
 * (lo == hi) is widened around the value (by 1 at 0, else by a tenth of its
 * size); a range whose ends differ in less than the 12th significant digit is
 * treated as empty too.
 * @return false (and @p t untouched) when @p lo or @p hi is not finite.
 */
bool rep_nice_ticks(double lo, double hi, int target, plot_ticks *t);

/**
 * The label of tick value @p v of @p t into @p buf (@p cap bytes): t->decimals
 * digits after the point ("0.25", "1500"), with "-0" written as "0", and in
 * %g form ("2e+07") for magnitudes of 1e7 and more.
 */
void rep_format_tick(double v, const plot_ticks *t, char *buf, size_t cap);

#endif
