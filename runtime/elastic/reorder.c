#include "elastic/reorder.h"

#include <stdlib.h>
#include <string.h>

static int by_importance(const void *a, const void *b)
{
    const ofa_importance *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? 1 : -1; /* descending */
    return x->index - y->index;              /* stable */
}

void ofa_sort_groups(ofa_importance *imp, int n, const int *bounds, int n_bounds, int *perm)
{
    int lo = 0;
    for (int g = 0; g <= n_bounds; g++) {
        int hi = g < n_bounds ? bounds[g] : n;
        if (hi > n)
            hi = n;
        if (hi > lo)
            qsort(imp + lo, (size_t)(hi - lo), sizeof *imp, by_importance);
        lo = hi > lo ? hi : lo;
    }
    for (int i = 0; i < n; i++)
        perm[i] = imp[i].index;
}

void ofa_permute_rows(float *base, int count, int row, const int *perm, float *tmp)
{
    memcpy(tmp, base, (size_t)count * row * sizeof *tmp);
    for (int i = 0; i < count; i++)
        memcpy(base + (size_t)i * row, tmp + (size_t)perm[i] * row, (size_t)row * sizeof *tmp);
}

void ofa_permute_cols(float *base, int rows, int ld, int count, int block, const int *perm,
                      float *tmp)
{
    const size_t b = (size_t)block;
    for (int r = 0; r < rows; r++) {
        float *row = base + (size_t)r * ld;
        memcpy(tmp, row, (size_t)count * b * sizeof *tmp);
        for (int i = 0; i < count; i++)
            memcpy(row + (size_t)i * b, tmp + (size_t)perm[i] * b, b * sizeof *tmp);
    }
}
