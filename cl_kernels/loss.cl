/* Softmax cross-entropy losses, fused forward and backward. One work-group
 * per row of k logits (local size a power of two). With m the row maximum and
 * lz = log(sum exp(z - m)), -log softmax(z)_i = (m - z_i) + lz, which keeps
 * the loss of a confident row accurate. The gradient row is
 * dl = beta * dl + scale * (softmax(z) - target); dl is not read when beta is 0. */

/* Maximum of v over the work-group, returned to every work-item (as wg_sum). */
inline float wg_max(float v, __local float *scratch)
{
    int l = (int)get_local_id(0);
    scratch[l] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = (int)get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s)
            scratch[l] = fmax(scratch[l], scratch[l + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float r = scratch[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    return r;
}

/* Row maximum m and lz = log(sum exp(z - m)) of z (k), for every work-item. */
inline void row_logsumexp(__global const float *z, int k, __local float *scratch, float *m,
                          float *lz)
{
    int l = (int)get_local_id(0), wg = (int)get_local_size(0);
    float mx = -INFINITY;
    for (int i = l; i < k; i += wg)
        mx = fmax(mx, z[i]);
    mx = wg_max(mx, scratch);
    float se = 0.0f;
    for (int i = l; i < k; i += wg)
        se += exp(z[i] - mx);
    *lz = log(wg_sum(se, scratch));
    *m = mx;
}

inline void store_grad(__global float *dl, int i, float g, float beta)
{
    dl[i] = beta == 0.0f ? g : beta * dl[i] + g;
}

/* logits, dlogits: (n, k); labels, losses: (n). Target (1 - smoothing) *
 * onehot(label) + smoothing / k. A label that is not an integer in [0, k) is
 * never used as an index: its row gets a NaN loss and NaN gradients. */
__kernel void xent_forward_backward(VIEW(logits), VIEW(labels), VIEW(losses), VIEW(dlogits),
                                    int k, float smoothing, float scale, float beta,
                                    __local float *scratch)
{
    PTR(logits); PTR(labels); PTR(losses); PTR(dlogits);
    int r = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    __global const float *z = logits + (size_t)r * (size_t)k;
    __global float *dl = dlogits + (size_t)r * (size_t)k;
    float m, lz;
    row_logsumexp(z, k, scratch, &m, &lz);
    float lab = labels[r];
    bool valid = lab >= 0.0f && lab < (float)k && lab == floor(lab);
    int t = valid ? (int)lab : -1;
    float bad = valid ? 0.0f : NAN;
    float off = smoothing / (float)k, on = 1.0f - smoothing + off;
    float acc = 0.0f;
    for (int i = l; i < k; i += wg) {
        float nlp = (m - z[i]) + lz; /* -log p_i */
        float ti = i == t ? on : off;
        if (ti != 0.0f)
            acc += ti * nlp;
        store_grad(dl, i, scale * (exp(-nlp) - ti) + bad, beta);
    }
    acc = wg_sum(acc, scratch);
    if (l == 0)
        losses[r] = acc + bad;
}

/* logits, teacher, dlogits: (n, k); losses: (n). Target softmax(teacher). */
__kernel void soft_xent_forward_backward(VIEW(logits), VIEW(teacher), VIEW(losses),
                                         VIEW(dlogits), int k, float scale, float beta,
                                         __local float *scratch)
{
    PTR(logits); PTR(teacher); PTR(losses); PTR(dlogits);
    int r = (int)get_group_id(0), l = (int)get_local_id(0), wg = (int)get_local_size(0);
    __global const float *z = logits + (size_t)r * (size_t)k;
    __global const float *zt = teacher + (size_t)r * (size_t)k;
    __global float *dl = dlogits + (size_t)r * (size_t)k;
    float m, lz, mt, lt;
    row_logsumexp(z, k, scratch, &m, &lz);
    row_logsumexp(zt, k, scratch, &mt, &lt);
    float acc = 0.0f;
    for (int i = l; i < k; i += wg) {
        float nlp = (m - z[i]) + lz;
        float ti = exp((zt[i] - mt) - lt);
        if (ti != 0.0f)
            acc += ti * nlp;
        store_grad(dl, i, scale * (exp(-nlp) - ti), beta);
    }
    acc = wg_sum(acc, scratch);
    if (l == 0)
        losses[r] = acc;
}
