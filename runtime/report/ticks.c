/* The axes' ticks of `manta report`'s plots (ticks.h). */
#include "report/ticks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double rep_nice_number(double x, bool round)
{
    if (!(x > 0) || !isfinite(x))
        return 0;
    double e = floor(log10(x)), p = pow(10, e), f = x / p, nf;
    if (round)
        nf = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    else
        nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return nf * p;
}

bool rep_nice_ticks(double lo, double hi, int target, plot_ticks *t)
{
    if (!isfinite(lo) || !isfinite(hi))
        return false;
    if (lo > hi) {
        double s = lo;
        lo = hi, hi = s;
    }
    double mag = fmax(fabs(lo), fabs(hi));
    if (hi - lo <= mag * 1e-12) { /* empty: widen around the value */
        double c = 0.5 * (lo + hi), w = c == 0 ? 1 : 0.1 * fabs(c);
        lo = c - w, hi = c + w;
    }
    if (target < 3)
        target = 3;
    if (target > PLOT_MAX_TICKS)
        target = PLOT_MAX_TICKS;
    double step = rep_nice_number(rep_nice_number(hi - lo, false) / (target - 1), true);
    double a = 0, b = 0;
    int n = 0;
    for (int tries = 0; tries < 8; tries++) {
        a = floor(lo / step + 1e-9) * step;
        b = ceil(hi / step - 1e-9) * step;
        n = (int)lround((b - a) / step) + 1;
        if (n <= PLOT_MAX_TICKS && n <= 2 * target)
            break;
        step = rep_nice_number(step * 1.5, false); /* the next nice step up */
    }
    if (n > PLOT_MAX_TICKS)
        n = PLOT_MAX_TICKS;
    t->lo = a;
    t->step = step;
    t->n = n < 2 ? 2 : n;
    for (int i = 0; i < t->n; i++) {
        double v = a + i * step;
        t->v[i] = fabs(v) < step * 1e-9 ? 0 : v;
    }
    t->hi = t->v[t->n - 1];
    int d = (int)-floor(log10(step) + 1e-9);
    t->decimals = d < 0 ? 0 : d > 12 ? 12 : d;
    return true;
}

void rep_format_tick(double v, const plot_ticks *t, char *buf, size_t cap)
{
    if (fabs(v) >= 1e7)
        snprintf(buf, cap, "%g", v);
    else
        snprintf(buf, cap, "%.*f", t->decimals, v);
    /* "-0", "-0.00": a zero that printf signed */
    const char *p = buf[0] == '-' ? buf + 1 : NULL;
    if (p && strspn(p, "0.") == strlen(p))
        memmove(buf, buf + 1, strlen(buf));
}
