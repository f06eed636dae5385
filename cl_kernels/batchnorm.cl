/* Batch normalisation over (N, HW) per channel; tensors are (N, C, HW).
 * The statistics kernels run one work-group per channel (local size a power
 * of two) and reduce with wg_sum(). The mean is taken of x - shift, with shift
 * the channel's first value, and the variance of the centred values in a
 * second pass, so values far from zero (1000 +- 1) keep their precision.
 * A channel is read as chunks of 8 values: chunk (b, k) holds values
 * k*8 ... k*8 + 7 of image b (fewer in the last chunk of a row when HW is not
 * a multiple of 8), with float8 arithmetic and the lanes past the row masked
 * out. When the group has no more work-items than images (the host's choice
 * for batches of 16 or more), work-item l takes the whole rows of images
 * l, l + L, ...; else it takes chunks l, l + L, ... in (b, k) order. */

/* Position of a work-item in the chunks of one channel: image b, chunk k of
 * cps per row, and the step L = dq rows + dr chunks to its next chunk. */
typedef struct bn_iter {
    int b, k, cps, dq, dr;
} bn_iter;

inline bn_iter bn_begin(int hw)
{
    bn_iter it;
    int l = (int)get_local_id(0), wg = (int)get_local_size(0);
    it.cps = (hw + 7) / 8;
    it.b = l / it.cps;
    it.k = l - it.b * it.cps;
    it.dq = wg / it.cps;
    it.dr = wg - it.dq * it.cps;
    return it;
}

inline void bn_next(bn_iter *it)
{
    it->b += it->dq;
    it->k += it->dr;
    if (it->k >= it->cps) {
        it->k -= it->cps;
        it->b++;
    }
}

/* Expand BODY(j, left) for every chunk of channel ch this work-item takes, with j the
 * index of its first value in the tensor and left the values from there to the end of
 * its row (the constant 8 for whole chunks in the row mode). BODY is the name of a
 * function-like macro of two parameters defined by the caller (OpenCL C 1.2 has no
 * variadic macros). */
#define BN_FOR_CHUNKS(n, c, hw, ch, BODY)                                                    \
    if ((int)get_local_size(0) <= (n)) {                                                     \
        for (int b_ = (int)get_local_id(0); b_ < (n); b_ += (int)get_local_size(0)) {        \
            int row_ = (b_ * (c) + (ch)) * (hw), k_ = 0;                                     \
            for (; k_ + 8 <= (hw); k_ += 8) /* whole chunks */                               \
                BODY(row_ + k_, 8)                                                           \
            if (k_ < (hw))                                                                   \
                BODY(row_ + k_, (hw) - k_)                                                   \
        }                                                                                    \
    } else {                                                                                 \
        for (bn_iter it_ = bn_begin(hw); it_.b < (n); bn_next(&it_))                         \
            BODY((it_.b * (c) + (ch)) * (hw) + it_.k * 8, (hw) - it_.k * 8)                  \
    }

/* Lanes of a chunk that lie inside its row. */
inline int8 bn_lanes(int left) { return (int8)(0, 1, 2, 3, 4, 5, 6, 7) < (int8)(left); }

/* Statistics of channel ch over m = n*hw values of x (N, C, HW): the shift,
 * the mean of x - shift and the biased variance, for every work-item. */
inline void bn_channel_stats(__global const float *x, int n, int c, int hw, int ch,
                             __local float *scratch, float *shift, float *dmean, float *var)
{
    int m = n * hw;
    float sh = x[ch * hw];
    float8 s = (float8)(0.0f);
#define SUM_SHIFTED(j, left)                                                                 \
    s += select((float8)(0.0f), load8(x + (j), left) - sh, bn_lanes(left));
    BN_FOR_CHUNKS(n, c, hw, ch, SUM_SHIFTED)
#undef SUM_SHIFTED
    float dm = wg_sum(hsum8(s), scratch) / (float)m;
    float8 q = (float8)(0.0f);
#define SUM_SQUARES(j, left)                                                                 \
    {                                                                                        \
        float8 t_ = select((float8)(0.0f), (load8(x + (j), left) - sh) - dm, bn_lanes(left)); \
        q = fma(t_, t_, q);                                                                  \
    }
    BN_FOR_CHUNKS(n, c, hw, ch, SUM_SQUARES)
#undef SUM_SQUARES
    *var = wg_sum(hsum8(q), scratch) / (float)m;
    *shift = sh;
    *dmean = dm;
}

/* Body of the backward reductions: s_dy8 += dy, s_dyxh8 += dy * xhat over a chunk, with
 * x, dy, mu (mean) and is (inverse standard deviation) in scope; bn_load gives 0 past
 * the row. */
#define BN_SUM_DY(j, left)                                                                   \
    {                                                                                        \
        float8 g_ = load8(dy + (j), left);                                                   \
        s_dy8 += g_;                                                                         \
        s_dyxh8 = fma(g_, (load8(x + (j), left) - mu) * is, s_dyxh8);                        \
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
    int ch = (int)get_group_id(0), l = (int)get_local_id(0);
    int m = n * hw;
    float sh, dm, v;
    bn_channel_stats(x, n, c, hw, ch, scratch, &sh, &dm, &v);
    float invstd = 1.0f / sqrt(v + eps);
    float g = gamma[ch] * invstd, b = beta[ch];
    /* every read of x by other work-items finished inside bn_channel_stats */
#define NORMALISE(j, left) store8(y + (j), ((load8(x + (j), left) - sh) - dm) * g + b, left);
    BN_FOR_CHUNKS(n, c, hw, ch, NORMALISE)
#undef NORMALISE
    if (l == 0) {
        float mean = sh + dm;
        float unbiased = v * ((float)m / (float)(m - 1));
        rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * mean;
        rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * unbiased;
        smean[ch] = mean;
        sinvstd[ch] = invstd;
    }
}

/* x, y: (N, C, HW), y may alias x; gamma, beta, rmean, rvar: (C).
 * Global (ceil(HW / 8), N*C): one work-item per chunk of 8 values of a row. */
__kernel void bn_forward_eval(VIEW(x), VIEW(gamma), VIEW(beta), VIEW(rmean), VIEW(rvar),
                              VIEW(y), int rows, int c, int hw, float eps)
{
    PTR(x); PTR(gamma); PTR(beta); PTR(rmean); PTR(rvar); PTR(y);
    int k = (int)get_global_id(0), row = (int)get_global_id(1);
    if (k * 8 >= hw || row >= rows)
        return;
    int ch = row % c, left = hw - k * 8;
    float g = gamma[ch] / sqrt(rvar[ch] + eps);
    float8 xv = load8(x + row * hw + k * 8, left);
    store8(y + row * hw + k * 8, (xv - rmean[ch]) * g + beta[ch], left);
}

/* x, dy, dx: (N, C, HW), dx may alias dy; gamma, smean, sinvstd, dgamma, dbeta: (C).
 * One work-group per channel: sums of dy and dy * xhat, then
 * dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)). */
__kernel void bn_backward(VIEW(x), VIEW(gamma), VIEW(smean), VIEW(sinvstd), VIEW(dy), VIEW(dx),
                          VIEW(dgamma), VIEW(dbeta), int n, int c, int hw,
                          __local float *scratch)
{
    PTR(x); PTR(gamma); PTR(smean); PTR(sinvstd); PTR(dy); PTR(dx); PTR(dgamma); PTR(dbeta);
    int ch = (int)get_group_id(0), l = (int)get_local_id(0);
    int m = n * hw;
    float mu = smean[ch], is = sinvstd[ch];
    float8 s_dy8 = (float8)(0.0f), s_dyxh8 = (float8)(0.0f);
    BN_FOR_CHUNKS(n, c, hw, ch, BN_SUM_DY)
    float s_dy = wg_sum(hsum8(s_dy8), scratch);
    float s_dyxh = wg_sum(hsum8(s_dyxh8), scratch);
    float k = gamma[ch] * is, a = s_dy / (float)m, b = s_dyxh / (float)m;
    /* every read of dy by other work-items finished before the reductions */
#define INPUT_GRAD(j, left)                                                                  \
    store8(dx + (j), k * (load8(dy + (j), left) - a - (load8(x + (j), left) - mu) * is * b), \
             left);
    BN_FOR_CHUNKS(n, c, hw, ch, INPUT_GRAD)
#undef INPUT_GRAD
    if (l == 0) {
        dgamma[ch] += s_dyxh;
        dbeta[ch] += s_dy;
    }
}

/* ---- synchronised batch norm (statistics over several replicas) ------------------------
 * The host gathers every replica's per-channel mean and biased variance (bn_stats), combines
 * them, and the kernels below finish the forward with the combined statistics; in backward,
 * bn_backward_reduce gives the replica's sums of dy and dy * xhat, the host sums them over
 * the replicas and bn_backward_apply computes dx from the totals. */

/* stats: (2, C) combined mean and biased variance; rmean, rvar, smean, sinvstd: (C).
 * One work-item per channel. unbias = M / (M - 1) for the M values of all replicas. */
__kernel void bn_sync_finish(VIEW(stats), VIEW(rmean), VIEW(rvar), VIEW(smean), VIEW(sinvstd),
                             int c, float momentum, float unbias, float eps)
{
    PTR(stats); PTR(rmean); PTR(rvar); PTR(smean); PTR(sinvstd);
    int ch = GID0;
    if (ch >= c)
        return;
    float mean = stats[ch], v = stats[c + ch];
    smean[ch] = mean;
    sinvstd[ch] = 1.0f / sqrt(v + eps);
    if (momentum > 0.0f) {
        rmean[ch] = (1.0f - momentum) * rmean[ch] + momentum * mean;
        rvar[ch] = (1.0f - momentum) * rvar[ch] + momentum * (v * unbias);
    }
}

/* x, y: (N, C, HW), y may alias x; gamma, beta, smean, sinvstd: (C).
 * Global (ceil(HW / 8), N*C): y = gamma * (x - mean) * invstd + beta. */
__kernel void bn_forward_apply(VIEW(x), VIEW(gamma), VIEW(beta), VIEW(smean), VIEW(sinvstd),
                               VIEW(y), int rows, int c, int hw)
{
    PTR(x); PTR(gamma); PTR(beta); PTR(smean); PTR(sinvstd); PTR(y);
    int k = (int)get_global_id(0), row = (int)get_global_id(1);
    if (k * 8 >= hw || row >= rows)
        return;
    int ch = row % c, left = hw - k * 8;
    float g = gamma[ch] * sinvstd[ch];
    float8 xv = load8(x + row * hw + k * 8, left);
    store8(y + row * hw + k * 8, (xv - smean[ch]) * g + beta[ch], left);
}

/* x, dy: (N, C, HW); smean, sinvstd, dgamma, dbeta: (C); sums: (2, C).
 * One work-group per channel: sums = (sum dy, sum dy * xhat) of this replica;
 * dbeta += sum dy, dgamma += sum dy * xhat. */
__kernel void bn_backward_reduce(VIEW(x), VIEW(smean), VIEW(sinvstd), VIEW(dy), VIEW(sums),
                                 VIEW(dgamma), VIEW(dbeta), int n, int c, int hw,
                                 __local float *scratch)
{
    PTR(x); PTR(smean); PTR(sinvstd); PTR(dy); PTR(sums); PTR(dgamma); PTR(dbeta);
    int ch = (int)get_group_id(0);
    float mu = smean[ch], is = sinvstd[ch];
    float8 s_dy8 = (float8)(0.0f), s_dyxh8 = (float8)(0.0f);
    BN_FOR_CHUNKS(n, c, hw, ch, BN_SUM_DY)
    float s_dy = wg_sum(hsum8(s_dy8), scratch);
    float s_dyxh = wg_sum(hsum8(s_dyxh8), scratch);
    if (get_local_id(0) == 0) {
        sums[ch] = s_dy;
        sums[c + ch] = s_dyxh;
        dgamma[ch] += s_dyxh;
        dbeta[ch] += s_dy;
    }
}

/* x, dy, dx: (N, C, HW), dx may alias dy; gamma, smean, sinvstd: (C); sums: (2, C) totals
 * over all replicas of M values per channel (inv_m = 1 / M).
 * Global (ceil(HW / 8), N*C): dx = gamma * invstd * (dy - sum dy / M - xhat * sum dy*xhat / M). */
__kernel void bn_backward_apply(VIEW(x), VIEW(gamma), VIEW(smean), VIEW(sinvstd), VIEW(dy),
                                VIEW(dx), VIEW(sums), int rows, int c, int hw, float inv_m)
{
    PTR(x); PTR(gamma); PTR(smean); PTR(sinvstd); PTR(dy); PTR(dx); PTR(sums);
    int k = (int)get_global_id(0), row = (int)get_global_id(1);
    if (k * 8 >= hw || row >= rows)
        return;
    int ch = row % c, left = hw - k * 8, j = row * hw + k * 8;
    float mu = smean[ch], is = sinvstd[ch];
    float kk = gamma[ch] * is, a = sums[ch] * inv_m, b = sums[c + ch] * inv_m;
    float8 g = load8(dy + j, left), xv = load8(x + j, left);
    store8(dx + j, kk * (g - a - (xv - mu) * is * b), left);
}

/* ---- GPU variant: two-stage reductions ----------------------------------------------------
 * The m = N*HW values of a channel, in (image, position) order, are cut into `splits`
 * contiguous ranges; one work-group per (channel, range) reduces its range (stage 1,
 * global (C * local, splits)) into part (splits, C, 2), and one work-item per channel
 * combines the ranges (stage 2). Every value is read by a different work-item of the
 * group, neighbours reading neighbours. */

/* First and one-past-last flattened index of range s of `splits` over m values. */
inline int bn_range_lo(int m, int s, int splits) { return (int)((long)m * s / splits); }

/* Element j of channel ch in x (N, C, HW): j = b * hw + p. */
inline int bn_at(int j, int c, int hw, int ch)
{
    int b = j / hw;
    return (b * c + ch) * hw + (j - b * hw);
}

/* x: (N, C, HW); part: (splits, C, 2) = (mean of the range's x - shift, sum of squared
 * deviations from that mean), shift being the channel's first value. Values far from zero
 * keep their precision: the shift takes their offset, the second pass their spread. */
__kernel void bn_partial_stats(VIEW(x), VIEW(part), int n, int c, int hw, int splits,
                               __local float *scratch)
{
    PTR(x); PTR(part);
    int ch = (int)get_group_id(0), s = (int)get_group_id(1);
    int l = (int)get_local_id(0), L = (int)get_local_size(0);
    int m = n * hw, lo = bn_range_lo(m, s, splits), hi = bn_range_lo(m, s + 1, splits);
    float sh = x[ch * hw];
    float sum = 0.0f;
    for (int j = lo + l; j < hi; j += L)
        sum += x[bn_at(j, c, hw, ch)] - sh;
    float mean = wg_sum(sum, scratch) / (float)(hi - lo);
    float q = 0.0f;
    for (int j = lo + l; j < hi; j += L) {
        float t = (x[bn_at(j, c, hw, ch)] - sh) - mean;
        q = fma(t, t, q);
    }
    float m2 = wg_sum(q, scratch);
    if (l == 0) {
        part[(s * c + ch) * 2] = mean;
        part[(s * c + ch) * 2 + 1] = m2;
    }
}

/* part: (splits, C, 2) from bn_partial_stats of x over m values per channel; mean, var:
 * (C) the channel's mean and biased variance (Chan et al.'s combination of the ranges).
 * One work-item per channel. */
__kernel void bn_combine_stats(VIEW(x), VIEW(part), VIEW(mean_out), VIEW(var_out), int m,
                               int c, int hw, int splits)
{
    PTR(x); PTR(part); PTR(mean_out); PTR(var_out);
    int ch = GID0;
    if (ch >= c)
        return;
    float mean = 0.0f;
    for (int s = 0; s < splits; s++) {
        int cnt = bn_range_lo(m, s + 1, splits) - bn_range_lo(m, s, splits);
        mean = fma((float)cnt / (float)m, part[(s * c + ch) * 2], mean);
    }
    float m2 = 0.0f;
    for (int s = 0; s < splits; s++) {
        int cnt = bn_range_lo(m, s + 1, splits) - bn_range_lo(m, s, splits);
        float dm = part[(s * c + ch) * 2] - mean;
        m2 += part[(s * c + ch) * 2 + 1] + (float)cnt * dm * dm;
    }
    mean_out[ch] = x[ch * hw] + mean;
    var_out[ch] = m2 / (float)m;
}

/* x, dy: (N, C, HW); smean, sinvstd: (C); part: (splits, C, 2) = the range's sums of dy
 * and dy * xhat. */
__kernel void bn_partial_grad(VIEW(x), VIEW(smean), VIEW(sinvstd), VIEW(dy), VIEW(part), int n,
                              int c, int hw, int splits, __local float *scratch)
{
    PTR(x); PTR(smean); PTR(sinvstd); PTR(dy); PTR(part);
    int ch = (int)get_group_id(0), s = (int)get_group_id(1);
    int l = (int)get_local_id(0), L = (int)get_local_size(0);
    int m = n * hw, lo = bn_range_lo(m, s, splits), hi = bn_range_lo(m, s + 1, splits);
    float mu = smean[ch], is = sinvstd[ch];
    float s_dy = 0.0f, s_dyxh = 0.0f;
    for (int j = lo + l; j < hi; j += L) {
        int i = bn_at(j, c, hw, ch);
        float g = dy[i];
        s_dy += g;
        s_dyxh = fma(g, (x[i] - mu) * is, s_dyxh);
    }
    s_dy = wg_sum(s_dy, scratch);
    s_dyxh = wg_sum(s_dyxh, scratch);
    if (l == 0) {
        part[(s * c + ch) * 2] = s_dy;
        part[(s * c + ch) * 2 + 1] = s_dyxh;
    }
}

/* part: (splits, C, 2) from bn_partial_grad; sums: (2, C) = totals of dy and dy * xhat;
 * dbeta += sum dy, dgamma += sum dy * xhat. One work-item per channel. */
__kernel void bn_combine_grad(VIEW(part), VIEW(sums), VIEW(dgamma), VIEW(dbeta), int c,
                              int splits)
{
    PTR(part); PTR(sums); PTR(dgamma); PTR(dbeta);
    int ch = GID0;
    if (ch >= c)
        return;
    float s_dy = 0.0f, s_dyxh = 0.0f;
    for (int s = 0; s < splits; s++) {
        s_dy += part[(s * c + ch) * 2];
        s_dyxh += part[(s * c + ch) * 2 + 1];
    }
    sums[ch] = s_dy;
    sums[c + ch] = s_dyxh;
    dgamma[ch] += s_dyxh;
    dbeta[ch] += s_dy;
}

/* bn_forward_apply and bn_backward_apply with one work-item per value: global N*C*HW. */
__kernel void bn_forward_apply1(VIEW(x), VIEW(gamma), VIEW(beta), VIEW(smean), VIEW(sinvstd),
                                VIEW(y), int total, int c, int hw)
{
    PTR(x); PTR(gamma); PTR(beta); PTR(smean); PTR(sinvstd); PTR(y);
    int i = GID0;
    if (i >= total)
        return;
    int ch = (i / hw) % c;
    y[i] = (x[i] - smean[ch]) * (gamma[ch] * sinvstd[ch]) + beta[ch];
}

__kernel void bn_backward_apply1(VIEW(x), VIEW(gamma), VIEW(smean), VIEW(sinvstd), VIEW(dy),
                                 VIEW(dx), VIEW(sums), int total, int c, int hw, float inv_m)
{
    PTR(x); PTR(gamma); PTR(smean); PTR(sinvstd); PTR(dy); PTR(dx); PTR(sums);
    int i = GID0;
    if (i >= total)
        return;
    int ch = (i / hw) % c;
    float is = sinvstd[ch];
    float xh = (x[i] - smean[ch]) * is;
    dx[i] = gamma[ch] * is * (dy[i] - sums[ch] * inv_m - xh * (sums[c + ch] * inv_m));
}
