#include "nn/activation.h"

#include <math.h>
#include <stdio.h>

#include "nn/launch.h"

/* Kernel name suffix of an activation (cl_kernels/activation.cl); NULL for
 * a value outside the enum. */
static const char *kernel_suffix(nn_act a)
{
    switch (a) {
    case NN_ACT_NONE: return "none";
    case NN_ACT_RELU: return "relu";
    case NN_ACT_RELU6: return "relu6";
    case NN_ACT_HSWISH: return "hswish";
    case NN_ACT_HSIGMOID: return "hsigmoid";
    case NN_ACT_SIGMOID: return "sigmoid";
    case NN_ACT_LEAKY_RELU: return "leaky_relu";
    }
    return NULL;
}

/* Work-items per group: each takes 8 values. */
#define ACT_GROUP 64

/* Every kernel takes the leaky ReLU's slope after n (the others ignore it). The general
 * kernels act_<pass> (one value per work-item, the activation as their last argument)
 * serve the GPU variant, whose devices want a work-item per value, and values outside
 * the enum; the CPU variant runs act_<pass>_<name> (8 values per work-item). */
static bool general(const mcl_dev *d, nn_act a)
{
    return !kernel_suffix(a) || mcl_get_variant(d) == MCL_VARIANT_GPU;
}

static void act_begin(mcl_launch *L, mcl_dev *d, const char *pass, nn_act a)
{
    char name[40];
    if (general(d, a))
        snprintf(name, sizeof name, "act_%s", pass);
    else
        snprintf(name, sizeof name, "act_%s_%s", pass, kernel_suffix(a));
    mcl_launch_begin(L, d, "activation", name);
}

static manta_status act_run(mcl_launch *L, mcl_dev *d, nn_act a, size_t n)
{
    if (general(d, a)) {
        mcl_arg_int(L, (int)a);
        return nn_run_per_value(L, n);
    }
    mcl_launch_output(L, n);
    return mcl_launch_run(L, 1, (size_t[]){(n + 7) / 8}, (size_t[]){nn_group_cap(L, ACT_GROUP)});
}

static manta_status check_slope(mcl_dev *d, const char *op, float slope)
{
    if (isfinite(slope))
        return MANTA_OK;
    return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                         "%s: leaky ReLU slope %g is not a finite number", op, (double)slope);
}

manta_status nn_act_forward_slope(mcl_dev *d, nn_act a, float slope, mview x, mview y, size_t n)
{
    NN_CHECK_INT(d, n, "activation size");
    MANTA_TRY(check_slope(d, "activation forward", slope));
    mcl_launch L;
    act_begin(&L, d, "forward", a);
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, y);
    mcl_arg_int(&L, (int)n);
    mcl_arg_float(&L, slope);
    return act_run(&L, d, a, n);
}

manta_status nn_act_backward_slope(mcl_dev *d, nn_act a, float slope, mview x, mview dy, mview dx,
                                   size_t n)
{
    NN_CHECK_INT(d, n, "activation size");
    MANTA_TRY(check_slope(d, "activation backward", slope));
    mcl_launch L;
    act_begin(&L, d, "backward", a);
    mcl_arg_views(&L, (mview[]){x, dy, dx}, 3);
    mcl_arg_int(&L, (int)n);
    mcl_arg_float(&L, slope);
    return act_run(&L, d, a, n);
}

manta_status nn_act_forward(mcl_dev *d, nn_act a, mview x, mview y, size_t n)
{
    return nn_act_forward_slope(d, a, NN_ACT_LEAKY_SLOPE, x, y, n);
}

bool nn_act_grad_from_output(nn_act a)
{
    /* a positive leaky slope keeps the sign: y > 0 exactly where x > 0 */
    return a == NN_ACT_RELU || a == NN_ACT_RELU6 ||
           (a == NN_ACT_LEAKY_RELU && NN_ACT_LEAKY_SLOPE > 0.0f);
}

manta_status nn_act_backward(mcl_dev *d, nn_act a, mview x, mview dy, mview dx, size_t n)
{
    return nn_act_backward_slope(d, a, NN_ACT_LEAKY_SLOPE, x, dy, dx, n);
}
