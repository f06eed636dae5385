/**
 * @file stats.h
 * @brief Order statistics of timings and rates on the host: one comparator of doubles and
 *        the median of a sorted array, for the programs' and the libraries' medians.
 */
#ifndef MANTA_CORE_STATS_H
#define MANTA_CORE_STATS_H

#include <stddef.h>

/** qsort() comparator of doubles, ascending (NaNs compare equal to everything). */
int manta_cmp_double(const void *a, const void *b);

/** Sort the @p n values of @p v ascending, in place, and return their median: the middle
 *  value, or the mean of the two middle ones for even @p n; 0 for @p n 0. */
double manta_sort_median(double *v, size_t n);

#endif
