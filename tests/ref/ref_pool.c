#include "ref_pool.h"

void ref_avgpool(size_t nc, size_t hw, const double *x, double *y)
{
    for (size_t r = 0; r < nc; r++) {
        double s = 0;
        for (size_t i = 0; i < hw; i++)
            s += x[r * hw + i];
        y[r] = s / (double)hw;
    }
}

void ref_scale(size_t nc, size_t hw, const double *x, const double *s, double *y)
{
    for (size_t r = 0; r < nc; r++)
        for (size_t i = 0; i < hw; i++)
            y[r * hw + i] = x[r * hw + i] * s[r];
}
