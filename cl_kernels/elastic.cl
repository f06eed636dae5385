/* OFA elastic kernel: transformed centre crops of depthwise weights. */

/* w (C, K, K), m (kk, kk) with kk = k*k, wk (C, k, k). One work-item per output. */
__kernel void ktrans_forward(VIEW(w), VIEW(m), VIEW(wk), int c, int big_k, int k)
{
    PTR(w); PTR(m); PTR(wk);
    int kk = k * k, gid = GID0;
    if (gid >= c * kk)
        return;
    int ch = gid / kk, i = gid % kk, off = big_k / 2 - k / 2;
    __global const float *src = w + ch * big_k * big_k;
    float s = 0.0f;
    for (int j = 0; j < kk; j++)
        s += src[(off + j / k) * big_k + off + j % k] * m[i * kk + j];
    wk[gid] = s;
}

/* dm (kk, kk) += sum_c dwk[c, i] * centre(w)[c, j]. One work-item per (i, j). */
__kernel void ktrans_backward_m(VIEW(w), VIEW(dwk), VIEW(dm), int c, int big_k, int k)
{
    PTR(w); PTR(dwk); PTR(dm);
    int kk = k * k, gid = GID0;
    if (gid >= kk * kk)
        return;
    int i = gid / kk, j = gid % kk, off = big_k / 2 - k / 2;
    int src = (off + j / k) * big_k + off + j % k;
    float s = 0.0f;
    for (int ch = 0; ch < c; ch++)
        s += dwk[ch * kk + i] * w[ch * big_k * big_k + src];
    dm[gid] += s;
}

/* centre(dw)[c, j] += sum_i dwk[c, i] * m[i, j]. One work-item per (c, j). */
__kernel void ktrans_backward_w(VIEW(m), VIEW(dwk), VIEW(dw), int c, int big_k, int k)
{
    PTR(m); PTR(dwk); PTR(dw);
    int kk = k * k, gid = GID0;
    if (gid >= c * kk)
        return;
    int ch = gid / kk, j = gid % kk, off = big_k / 2 - k / 2;
    float s = 0.0f;
    for (int i = 0; i < kk; i++)
        s += dwk[ch * kk + i] * m[i * kk + j];
    dw[ch * big_k * big_k + (off + j / k) * big_k + off + j % k] += s;
}
