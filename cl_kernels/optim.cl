/* Optimizer updates over whole parameter slabs. */

/* p, g, m: (n). Weight decay for i < n_decay only. */
__kernel void sgd_step(VIEW(p), VIEW(g), VIEW(m), int n_decay, int n, float lr, float grad_scale,
                       float momentum, float wd, int nesterov)
{
    PTR(p); PTR(g); PTR(m);
    int i = GID0;
    if (i >= n)
        return;
    float gi = grad_scale * g[i];
    if (i < n_decay)
        gi += wd * p[i];
    float mi = momentum * m[i] + gi;
    m[i] = mi;
    p[i] -= lr * (nesterov ? gi + momentum * mi : mi);
}
