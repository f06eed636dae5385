/* Batch normalisation over (N, HW) per channel; tensors are (N, C, HW).
 * The statistics kernels run one work-group per channel (local size a power
 * of two) and reduce with wg_sum(). The mean is taken of x - shift, with shift
 * the channel's first value, and the variance of the centred values in a
 * second pass, so values far from zero (1000 +- 1) keep their precision. */

/* Flat offset of the i-th value (over N*HW) of channel ch. */
inline int bn_index(int i, int ch, int c, int hw)
{
    int b = i / hw;
    return (b * c + ch) * hw + (i - b * hw);
}

/* Statistics of channel ch over m = n*hw values of x (N, C, HW): the shift,
 * the mean of x - shift and the biased variance, for every work-item. */
inline void bn_channel_stats(__global const float *x, int n, int c, int hw, int ch,
                             __local float *scratch, float *shift, float *dmean, float *var)
{
    int m = n * hw, l = (int)get_local_id(0), wg = (int)get_local_size(0);
    float sh = x[ch * hw];
    float s = 0.0f;
    for (int i = l; i < m; i += wg)
        s += x[bn_index(i, ch, c, hw)] - sh;
    float dm = wg_sum(s, scratch) / (float)m;
    float q = 0.0f;
    for (int i = l; i < m; i += wg) {
        float t = (x[bn_index(i, ch, c, hw)] - sh) - dm;
        q += t * t;
    }
    *var = wg_sum(q, scratch) / (float)m;
    *shift = sh;
    *dmean = dm;
}

/* x: (N, C, HW); mean, var: (C). One work-group per channel. */
__kernel void bn_stats(VIEW(x), VIEW(mean), VIEW(var), int n, int c, int hw,
                       __local float *scratch)
{
    PTR(x); PTR(mean); PTR(var);
    int ch = (int)get_group_id(0);
    float sh, dm, v;
    bn_channel_stats(x, n, c, hw, ch, scratch, &sh, &dm, &v);
    if (get_local_id(0) == 0) {
        mean[ch] = sh + dm;
        var[ch] = v;
    }
}

/* x, y: (N, C, HW), y may alias x; gamma, beta, rmean, rvar, smean, sinvstd: (C).
 * One work-group per channel. Requires n * hw > 1 (unbiased variance). */
__kernel void bn_forward_train(VIEW(x), VIEW(gamma), VIEW(beta), VIEW(rmean), VIEW(rvar),
                               VIEW(y), VIEW(smean), VIEW(sinvstd), int n, int c, int hw,
                               float momentum, float eps, __local float *scratch)
{
    PTR(x); PTR(gamma); PTR(beta); PTR(rmean); PTR(rvar); PTR(y); PTR(smean); PTR(sinvstd);
    int ch = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    int m = n * hw;
    float sh, dm, v;
    bn_channel_stats(x, n, c, hw, ch, scratch, &sh, &dm, &v);
    float invstd = 1.0f / sqrt(v + eps);
    float g = gamma[ch] * invstd, b = beta[ch];
    /* every read of x by other work-items finished inside bn_channel_stats */
    for (int i = l; i < m; i += wg) {
        int j = bn_index(i, ch, c, hw);
        y[j] = ((x[j] - sh) - dm) * g + b;
    }
    if (l == 0) {
        float mean = sh + dm;
        float unbiased = v * ((float)m / (float)(m - 1));
        rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * mean;
        rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * unbiased;
        smean[ch] = mean;
        sinvstd[ch] = invstd;
    }
}

/* x, y: (N, C, HW), y may alias x; gamma, beta, rmean, rvar: (C). One item per value. */
__kernel void bn_forward_eval(VIEW(x), VIEW(gamma), VIEW(beta), VIEW(rmean), VIEW(rvar),
                              VIEW(y), int total, int c, int hw, float eps)
{
    PTR(x); PTR(gamma); PTR(beta); PTR(rmean); PTR(rvar); PTR(y);
    int i = GID0;
    if (i >= total)
        return;
    int ch = (i / hw) % c;
    float g = gamma[ch] / sqrt(rvar[ch] + eps);
    y[i] = (x[i] - rmean[ch]) * g + beta[ch];
}

/* x, dy, dx: (N, C, HW), dx may alias dy; gamma, smean, sinvstd, dgamma, dbeta: (C).
 * One work-group per channel: sums of dy and dy * xhat, then
 * dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)). */
__kernel void bn_backward(VIEW(x), VIEW(gamma), VIEW(smean), VIEW(sinvstd), VIEW(dy), VIEW(dx),
                          VIEW(dgamma), VIEW(dbeta), int n, int c, int hw,
                          __local float *scratch)
{
    PTR(x); PTR(gamma); PTR(smean); PTR(sinvstd); PTR(dy); PTR(dx); PTR(dgamma); PTR(dbeta);
    int ch = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    int m = n * hw;
    float mu = smean[ch], is = sinvstd[ch];
    float s_dy = 0.0f, s_dyxh = 0.0f;
    for (int i = l; i < m; i += wg) {
        int j = bn_index(i, ch, c, hw);
        float g = dy[j];
        s_dy += g;
        s_dyxh += g * ((x[j] - mu) * is);
    }
    s_dy = wg_sum(s_dy, scratch);
    s_dyxh = wg_sum(s_dyxh, scratch);
    float k = gamma[ch] * is, a = s_dy / (float)m, b = s_dyxh / (float)m;
    /* every read of dy by other work-items finished before the reductions */
    for (int i = l; i < m; i += wg) {
        int j = bn_index(i, ch, c, hw);
        dx[j] = k * (dy[j] - a - (x[j] - mu) * is * b);
    }
    if (l == 0) {
        dgamma[ch] += s_dyxh;
        dbeta[ch] += s_dy;
    }
}
