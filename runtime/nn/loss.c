#include "nn/loss.h"

#include "nn/launch.h"

static manta_status check_shape(mcl_dev *d, int n, int k, const char *op)
{
    NN_CHECK_POS(d, op, "n", n);
    NN_CHECK_POS(d, op, "k", k);
    NN_CHECK_INT(d, (size_t)n * (size_t)k, "loss logits size n*k");
    return MANTA_OK;
}

/* One work-group per row of k logits, with its scratch. */
static manta_status run_per_row(mcl_launch *L, mcl_dev *d, int n, int k)
{
    (void)d;
    size_t wg = nn_reduce_wg(L, (size_t)k);
    mcl_arg_local(L, wg * sizeof(float));
    mcl_launch_output(L, (size_t)n * ((size_t)k + 1)); /* dlogits and the losses */
    return mcl_launch_run(L, 1, (size_t[]){(size_t)n * wg}, (size_t[]){wg});
}

manta_status nn_xent_forward_backward(mcl_dev *d, int n, int k, float smoothing, mview logits,
                                      mview labels, mview losses, mview dlogits, float scale,
                                      float beta)
{
    MANTA_TRY(check_shape(d, n, k, "xent_forward_backward"));
    if (!(smoothing >= 0.0f && smoothing < 1.0f))
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "xent_forward_backward: smoothing %g outside [0, 1)",
                             (double)smoothing);
    mcl_launch L;
    mcl_launch_begin(&L, d, "loss", "xent_forward_backward");
    mcl_arg_views(&L, (mview[]){logits, labels, losses, dlogits}, 4);
    mcl_arg_int(&L, k);
    mcl_arg_float(&L, smoothing);
    mcl_arg_float(&L, scale);
    mcl_arg_float(&L, beta);
    return run_per_row(&L, d, n, k);
}

manta_status nn_soft_xent_forward_backward(mcl_dev *d, int n, int k, mview logits,
                                           mview teacher_logits, mview losses, mview dlogits,
                                           float scale, float beta)
{
    MANTA_TRY(check_shape(d, n, k, "soft_xent_forward_backward"));
    mcl_launch L;
    mcl_launch_begin(&L, d, "loss", "soft_xent_forward_backward");
    mcl_arg_views(&L, (mview[]){logits, teacher_logits, losses, dlogits}, 4);
    mcl_arg_int(&L, k);
    mcl_arg_float(&L, scale);
    mcl_arg_float(&L, beta);
    return run_per_row(&L, d, n, k);
}
