/* Per-channel bias (see runtime/nn/bias.h): y (N, C, HW) += bias[c], and the bias
 * gradient, the sum of dy (N, C, HW) over N and HW per channel. */

/* GPU variant: global N*C*HW, one work-item per value. */
__kernel void bias_add(VIEW(y), VIEW(bias), int c, int hw, int total)
{
    PTR(y); PTR(bias);
    int i = GID0;
    if (i < total)
        y[i] += bias[(i / hw) % c];
}

/* CPU variant: global (ceil(HW / 8), N*C): 8 values of row r = n * C + c per work-item. */
__kernel void bias_add_rows(VIEW(y), VIEW(bias), int c, int hw, int rows)
{
    PTR(y); PTR(bias);
    int i = GID0 * 8, r = (int)get_global_id(1);
    if (i >= hw || r >= rows)
        return;
    __global float *p = y + r * hw + i;
    int left = hw - i;
    store8(p, load8(p, left) + (float8)(bias[r % c]), left);
}

/* Bias gradient: part[s * C + co] = the sum of range s (of `splits` equal ranges) of
 * channel co's N*HW values of dy (N, C, HW); with `add`, part += that sum instead (one
 * range: part is the bias gradient itself). One work-group per (s, co), group s * C + co;
 * the local size a power of two with as many floats in scratch (1 on CPUs: one work-item
 * sums its whole range). */
__kernel void bias_grad_partial(VIEW(dy), VIEW(part), int n, int c, int hw, int splits,
                                int add, __local float *scratch)
{
    PTR(dy); PTR(part);
    int g = (int)get_group_id(0), l = (int)get_local_id(0), L = (int)get_local_size(0);
    int co = g % c, s = g / c;
    if (s >= splits) /* whole groups only: the condition is uniform within a group */
        return;
    long total = (long)n * hw;
    int lo = (int)(total * s / splits), hi = (int)(total * (s + 1) / splits);
    float acc = 0.0f;
    for (int r = lo + l; r < hi; r += L) {
        int bb = r / hw;
        acc += dy[(bb * c + co) * hw + (r - bb * hw)];
    }
    acc = wg_sum(acc, scratch);
    if (l == 0)
        part[s * c + co] = add ? part[s * c + co] + acc : acc;
}
