/**
 * @file reorder.h
 * @brief Host-side pieces of OFA's elastic-width re-organisation: channels ranked by an
 *        importance (descending, inside groups, so the channels a narrower sub-network
 *        already uses stay in front), and the permutations that move a tensor's rows or
 *        column blocks accordingly. Used by the MBConv slots (elastic/mbconv.h) and the
 *        stereo decoder (stereo/net.h) on host copies of their parameter slabs.
 *
 * Thread-safety: reentrant; nothing is kept between calls.
 */
#ifndef MANTA_ELASTIC_REORDER_H
#define MANTA_ELASTIC_REORDER_H

/** A channel and its importance (e.g. the L1 norm of the weights that read it). */
typedef struct ofa_importance {
    double value;
    int index;
} ofa_importance;

/**
 * Sort @p imp[0..n) by descending value (equal values by index) inside the groups that
 * end at @p bounds[0..n_bounds) (ascending; bounds above n are taken as n) and at n, then
 * write perm[new] = old index (@p perm: n entries).
 */
void ofa_sort_groups(ofa_importance *imp, int n, const int *bounds, int n_bounds, int *perm);

/** Permute @p count rows of @p row floats starting at @p base: new row i = old row
 *  perm[i]. @p tmp: count * row floats of scratch. */
void ofa_permute_rows(float *base, int count, int row, const int *perm, float *tmp);

/**
 * Permute @p count column blocks of @p block floats in each of @p rows rows of a matrix
 * with row stride @p ld starting at @p base: in every row, new block i = old block
 * perm[i] (block 1: single columns). @p tmp: count * block floats of scratch.
 */
void ofa_permute_cols(float *base, int rows, int ld, int count, int block, const int *perm,
                      float *tmp);

#endif
