#include "train/optim.h"

#include <math.h>

#include "nn/launch.h"

manta_status optim_sgd_step(mcl_dev *d, const optim_sgd *o, float lr, float grad_scale,
                            mview params, mview grads, mview mom, size_t n_decay, size_t n)
{
    NN_CHECK_INT(d, n, "parameter count");
    if (n_decay > n)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "optimizer: %zu decayed parameters of %zu", n_decay, n);
    mcl_launch L;
    mcl_launch_begin(&L, d, "optim", "sgd_step");
    mcl_arg_views(&L, (mview[]){params, grads, mom}, 3);
    mcl_arg_int(&L, (int)n_decay);
    mcl_arg_int(&L, (int)n);
    mcl_arg_float(&L, lr);
    mcl_arg_float(&L, grad_scale);
    mcl_arg_float(&L, o->momentum);
    mcl_arg_float(&L, o->weight_decay);
    mcl_arg_int(&L, o->nesterov ? 1 : 0);
    return mcl_launch_run(&L, 1, (size_t[]){n}, NULL);
}

float train_lr_at(const lr_schedule *s, long step)
{
    if (step < 0 || step >= s->total_steps)
        return 0.0f;
    if (step < s->warmup_steps)
        return s->base_lr * (float)(step + 1) / (float)s->warmup_steps;
    double t = (double)(step - s->warmup_steps);
    double span = (double)(s->total_steps - s->warmup_steps);
    return (float)(0.5 * s->base_lr * (1.0 + cos(3.14159265358979323846 * t / span)));
}
