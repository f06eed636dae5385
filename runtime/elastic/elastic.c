#include "elastic/elastic.h"

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

/* Launch @p kernel of cl_kernels/elastic.cl over @p items work-items: every kernel there takes
 * two views read, the view written, then (c, big_k, k). */
static manta_status ktrans_run(mcl_dev *d, const char *kernel, mview a, mview b, mview out, int c,
                               int big_k, int k, size_t items)
{
    mcl_launch L;
    mcl_launch_begin(&L, d, "elastic", kernel);
    mcl_arg_views(&L, (mview[]){a, b, out}, 3);
    mcl_arg_int(&L, c);
    mcl_arg_int(&L, big_k);
    mcl_arg_int(&L, k);
    return mcl_launch_run(&L, 1, (size_t[]){items}, NULL);
}

manta_status ofa_ktrans_forward(mcl_dev *d, int c, int big_k, int k, mview w, mview m, mview wk)
{
    MANTA_TRY(check(d, c, big_k, k));
    return ktrans_run(d, "ktrans_forward", w, m, wk, c, big_k, k, (size_t)c * k * k);
}

manta_status ofa_ktrans_backward(mcl_dev *d, int c, int big_k, int k, mview w, mview m, mview dwk,
                                 mview dw, mview dm)
{
    MANTA_TRY(check(d, c, big_k, k));
    MANTA_TRY(ktrans_run(d, "ktrans_backward_m", w, dwk, dm, c, big_k, k, (size_t)k * k * k * k));
    return ktrans_run(d, "ktrans_backward_w", m, dwk, dw, c, big_k, k, (size_t)c * k * k);
}
