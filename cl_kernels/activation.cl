/* Element-wise activations, forward and backward.
 * Forward: y = f(x). Backward: dx = dy * f'(x), from the forward input x.
 * All tensors are flat (n elements); y may alias x (in place). */

inline float act_apply(int kind, float v)
{
    switch (kind) {
    case 1: return fmax(v, 0.0f);                                   /* relu */
    case 2: return clamp(v, 0.0f, 6.0f);                            /* relu6 */
    case 3: return v * clamp(v + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f); /* h-swish */
    case 4: return clamp(v + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f);     /* h-sigmoid */
    case 5: return 1.0f / (1.0f + exp(-v));                         /* sigmoid */
    default: return v;                                              /* identity */
    }
}

inline float act_grad(int kind, float v)
{
    switch (kind) {
    case 1: return v > 0.0f ? 1.0f : 0.0f;
    case 2: return (v > 0.0f && v < 6.0f) ? 1.0f : 0.0f;
    case 3: return v < -3.0f ? 0.0f : (v > 3.0f ? 1.0f : (2.0f * v + 3.0f) * (1.0f / 6.0f));
    case 4: return (v > -3.0f && v < 3.0f) ? (1.0f / 6.0f) : 0.0f;
    case 5: { float s = 1.0f / (1.0f + exp(-v)); return s * (1.0f - s); }
    default: return 1.0f;
    }
}

/* x, y: (n) */
__kernel void act_forward(VIEW(x), VIEW(y), int n, int kind)
{
    PTR(x); PTR(y);
    int i = GID0;
    if (i < n)
        y[i] = act_apply(kind, x[i]);
}

/* x: (n) forward input; dy, dx: (n); dx may alias dy. */
__kernel void act_backward(VIEW(x), VIEW(dy), VIEW(dx), int n, int kind)
{
    PTR(x); PTR(dy); PTR(dx);
    int i = GID0;
    if (i < n)
        dx[i] = dy[i] * act_grad(kind, x[i]);
}
