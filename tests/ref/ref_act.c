#include "ref_act.h"

#include <math.h>

static double relu6(double v) { return v < 0 ? 0 : (v > 6 ? 6 : v); }

double ref_act_slope(int kind, double slope, double x)
{
    switch (kind) {
    case 1: return x > 0 ? x : 0;
    case 2: return relu6(x);
    case 3: return x * relu6(x + 3) / 6;
    case 4: return relu6(x + 3) / 6;
    case 5: return 1 / (1 + exp(-x));
    case 6: return x > 0 ? x : slope * x;
    default: return x;
    }
}

double ref_act(int kind, double x) { return ref_act_slope(kind, 0.1, x); }

void ref_act_forward_slope(int kind, double slope, const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = ref_act_slope(kind, slope, x[i]);
}

void ref_act_forward(int kind, const double *x, double *y, size_t n)
{
    ref_act_forward_slope(kind, 0.1, x, y, n);
}
