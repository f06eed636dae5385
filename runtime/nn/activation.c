#include "nn/activation.h"

#include "nn/launch.h"

const char *nn_act_name(nn_act a)
{
    switch (a) {
    case NN_ACT_NONE: return "none";
    case NN_ACT_RELU: return "relu";
    case NN_ACT_RELU6: return "relu6";
    case NN_ACT_HSWISH: return "h-swish";
    case NN_ACT_HSIGMOID: return "h-sigmoid";
    case NN_ACT_SIGMOID: return "sigmoid";
    }
    return "?";
}

manta_status nn_act_forward(mcl_dev *d, nn_act a, mview x, mview y, size_t n)
{
    NN_CHECK_INT(d, n, "activation size");
    mcl_launch L;
    mcl_launch_begin(&L, d, "activation", "act_forward");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, y);
    mcl_arg_int(&L, (int)n);
    mcl_arg_int(&L, (int)a);
    return mcl_launch_run(&L, 1, (size_t[]){n}, NULL);
}

manta_status nn_act_backward(mcl_dev *d, nn_act a, mview x, mview dy, mview dx, size_t n)
{
    NN_CHECK_INT(d, n, "activation size");
    mcl_launch L;
    mcl_launch_begin(&L, d, "activation", "act_backward");
    mcl_arg_view(&L, x);
    mcl_arg_view(&L, dy);
    mcl_arg_view(&L, dx);
    mcl_arg_int(&L, (int)n);
    mcl_arg_int(&L, (int)a);
    return mcl_launch_run(&L, 1, (size_t[]){n}, NULL);
}
