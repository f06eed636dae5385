/* Element-wise activations, forward and backward.
 * Forward: y = f(x). Backward: dx = dy * f'(x), from the forward input x.
 * All tensors are flat (n elements); y may alias x (in place).
 * One kernel per activation (act_forward_<name>, act_backward_<name>), each
 * work-item taking a chunk of 8 values with float8 arithmetic (the last
 * chunk masked), and general ones taking the activation as an argument.
 * Every kernel takes `slope`, the negative slope of the leaky ReLU; the other
 * activations ignore it. */

inline float8 act_apply_relu(float8 v, float slope) { return fmax(v, 0.0f); }
inline float8 act_apply_relu6(float8 v, float slope) { return clamp(v, 0.0f, 6.0f); }
inline float8 act_apply_hswish(float8 v, float slope)
{
    return v * clamp(v + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f);
}
inline float8 act_apply_hsigmoid(float8 v, float slope)
{
    return clamp(v + 3.0f, 0.0f, 6.0f) * (1.0f / 6.0f);
}
inline float8 act_apply_sigmoid(float8 v, float slope) { return 1.0f / (1.0f + exp(-v)); }
inline float8 act_apply_leaky_relu(float8 v, float slope) { return select(v * slope, v, v > 0.0f); }
inline float8 act_apply_none(float8 v, float slope) { return v; }

inline float8 act_grad_relu(float8 v, float slope)
{
    return select((float8)(0.0f), (float8)(1.0f), v > 0.0f);
}
inline float8 act_grad_relu6(float8 v, float slope)
{
    return select((float8)(0.0f), (float8)(1.0f), v > 0.0f && v < 6.0f);
}
inline float8 act_grad_hswish(float8 v, float slope)
{
    float8 mid = (2.0f * v + 3.0f) * (1.0f / 6.0f);
    return select(select(mid, (float8)(1.0f), v > 3.0f), (float8)(0.0f), v < -3.0f);
}
inline float8 act_grad_hsigmoid(float8 v, float slope)
{
    return select((float8)(0.0f), (float8)(1.0f / 6.0f), v > -3.0f && v < 3.0f);
}
inline float8 act_grad_sigmoid(float8 v, float slope)
{
    float8 s = 1.0f / (1.0f + exp(-v));
    return s * (1.0f - s);
}
/* slope at 0 as well, as PyTorch's */
inline float8 act_grad_leaky_relu(float8 v, float slope)
{
    return select((float8)(slope), (float8)(1.0f), v > 0.0f);
}
inline float8 act_grad_none(float8 v, float slope) { return (float8)(1.0f); }

/* x, y: (n); global ceil(n / 8). x: (n) forward input; dy, dx: (n); dx may
 * alias dy. */
#define ACT_KERNELS(NAME)                                                                    \
    __kernel void act_forward_##NAME(VIEW(x), VIEW(y), int n, float slope)                   \
    {                                                                                        \
        PTR(x); PTR(y);                                                                      \
        int i = GID0 * 8;                                                                    \
        if (i < n)                                                                           \
            store8(y + i, act_apply_##NAME(load8(x + i, n - i), slope), n - i);              \
    }                                                                                        \
    __kernel void act_backward_##NAME(VIEW(x), VIEW(dy), VIEW(dx), int n, float slope)       \
    {                                                                                        \
        PTR(x); PTR(dy); PTR(dx);                                                            \
        int i = GID0 * 8;                                                                    \
        if (i < n)                                                                           \
            store8(dx + i,                                                                   \
                   load8(dy + i, n - i) * act_grad_##NAME(load8(x + i, n - i), slope),       \
                   n - i);                                                                   \
    }

ACT_KERNELS(none)
ACT_KERNELS(relu)
ACT_KERNELS(relu6)
ACT_KERNELS(hswish)
ACT_KERNELS(hsigmoid)
ACT_KERNELS(sigmoid)
ACT_KERNELS(leaky_relu)

/* General kernels: one work-item per value, the activation (nn_act) as kind. */
inline float8 act_apply(int kind, float8 v, float slope)
{
    switch (kind) {
    case 1: return act_apply_relu(v, slope);
    case 2: return act_apply_relu6(v, slope);
    case 3: return act_apply_hswish(v, slope);
    case 4: return act_apply_hsigmoid(v, slope);
    case 5: return act_apply_sigmoid(v, slope);
    case 6: return act_apply_leaky_relu(v, slope);
    default: return v;
    }
}

inline float8 act_grad(int kind, float8 v, float slope)
{
    switch (kind) {
    case 1: return act_grad_relu(v, slope);
    case 2: return act_grad_relu6(v, slope);
    case 3: return act_grad_hswish(v, slope);
    case 4: return act_grad_hsigmoid(v, slope);
    case 5: return act_grad_sigmoid(v, slope);
    case 6: return act_grad_leaky_relu(v, slope);
    default: return (float8)(1.0f);
    }
}

/* x, y: (n) */
__kernel void act_forward(VIEW(x), VIEW(y), int n, float slope, int kind)
{
    PTR(x); PTR(y);
    int i = GID0;
    if (i < n)
        y[i] = act_apply(kind, (float8)(x[i]), slope).s0;
}

/* x: (n) forward input; dy, dx: (n); dx may alias dy. */
__kernel void act_backward(VIEW(x), VIEW(dy), VIEW(dx), int n, float slope, int kind)
{
    PTR(x); PTR(dy); PTR(dx);
    int i = GID0;
    if (i < n)
        dx[i] = dy[i] * act_grad(kind, (float8)(x[i]), slope).s0;
}
