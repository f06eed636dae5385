#include "ref_linear.h"

#include <stddef.h>

void ref_linear_forward(int n, int in, int out, int ld, const double *x, const double *w,
                        const double *b, double *y)
{
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double s = b ? b[o] : 0;
            for (int i = 0; i < in; i++)
                s += x[(size_t)r * in + i] * w[(size_t)o * ld + i];
            y[(size_t)r * out + o] = s;
        }
}
