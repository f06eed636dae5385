#include "ofa/elastic.h"

#include "nn/launch.h"

static manta_status check(mcl_dev *d, int c, int big_k, int k)
{
    if (c < 1 || k < 1 || k > big_k || (big_k - k) % 2 != 0)
        return manta_err_set(mcl_err(d), MANTA_ERR_INVALID_ARG,
                             "elastic kernel: cannot make %dx%d from %dx%d for %d channels", k, k,
                             big_k, big_k, c);
    NN_CHECK_INT(d, (size_t)c * big_k * big_k, "elastic kernel weights");
    return MANTA_OK;
}

manta_status ofa_ktrans_forward(mcl_dev *d, int c, int big_k, int k, mview w, mview m, mview wk)
{
    manta_status st = check(d, c, big_k, k);
    if (st != MANTA_OK)
        return st;
    mcl_launch L;
    mcl_launch_begin(&L, d, "elastic", "ktrans_forward");
    mcl_arg_view(&L, w);
    mcl_arg_view(&L, m);
    mcl_arg_view(&L, wk);
    mcl_arg_int(&L, c);
    mcl_arg_int(&L, big_k);
    mcl_arg_int(&L, k);
    return mcl_launch_run(&L, 1, (size_t[]){(size_t)c * k * k}, NULL);
}

manta_status ofa_ktrans_backward(mcl_dev *d, int c, int big_k, int k, mview w, mview m,
                                 mview dwk, mview dw, mview dm)
{
    manta_status st = check(d, c, big_k, k);
    if (st != MANTA_OK)
        return st;
    mcl_launch L;
    mcl_launch_begin(&L, d, "elastic", "ktrans_backward_m");
    mcl_arg_view(&L, w);
    mcl_arg_view(&L, dwk);
    mcl_arg_view(&L, dm);
    mcl_arg_int(&L, c);
    mcl_arg_int(&L, big_k);
    mcl_arg_int(&L, k);
    st = mcl_launch_run(&L, 1, (size_t[]){(size_t)k * k * k * k}, NULL);
    if (st != MANTA_OK)
        return st;
    mcl_launch_begin(&L, d, "elastic", "ktrans_backward_w");
    mcl_arg_view(&L, m);
    mcl_arg_view(&L, dwk);
    mcl_arg_view(&L, dw);
    mcl_arg_int(&L, c);
    mcl_arg_int(&L, big_k);
    mcl_arg_int(&L, k);
    return mcl_launch_run(&L, 1, (size_t[]){(size_t)c * k * k}, NULL);
}
