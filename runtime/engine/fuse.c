/* Recognising the correlation pattern and the PADs that fold into a convolution (see
 * fuse_impl.h). */
#include "engine/fuse_impl.h"

#include <string.h>

/* Bind and prepare operator @p q into @p node; its builtin in *builtin. 0 on any failure. */
static int prep(fbr *r, const mengine_model *m, uint32_t q, int32_t builtin, mop_ctx *c,
                mnode *node)
{
    return q < m->n_ops && mengine_op_bind(r, m, q, c) == MENGINE_OK && c->builtin == builtin &&
           mengine_op_prepare(c, node) == MENGINE_OK;
}

static int32_t in_at(const fbr *r, const mop_ctx *c, uint32_t i)
{
    return i < c->inputs.n ? fb_vec_i32(r, &c->inputs, i) : -1;
}

/* Dims of tensor @p t (rank 4 required). */
static int dims4_of(fbr *r, const mengine_model *m, int32_t t, int32_t d[4])
{
    mtensor_info ti;
    if (t < 0 || mengine_model_tensor(r, m, (uint32_t)t, &ti) != MENGINE_OK || ti.rank != 4)
        return 0;
    for (int i = 0; i < 4; i++)
        d[i] = ti.dims[i];
    return 1;
}

static int same4(const int32_t *a, const int32_t *b)
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

/* An int8 MUL's quantization into @p k (@p first: the pattern's first MUL), or whether it is
 * the first's; @p swapped: the slice is input 0. The right zero point is the PAD's. */
static int mul_params(const mengine_kq_params *q, int swapped, int first, mengine_kq_corr_params *k)
{
    const int32_t lz = swapped ? q->in2_zp : q->in_zp, rz = swapped ? q->in_zp : q->in2_zp;
    if (rz != k->r_zp)
        return 0;
    if (first) {
        k->l_zp = lz, k->mul_mult = q->mult, k->mul_shift = q->shift, k->mul_zp = q->out_zp;
        k->mul_min = q->act_min, k->mul_max = q->act_max;
        return 1;
    }
    return k->l_zp == lz && k->mul_mult == q->mult && k->mul_shift == q->shift &&
           k->mul_zp == q->out_zp && k->mul_min == q->act_min && k->mul_max == q->act_max;
}

/* An int8 MEAN over @p C channels of the MULs' output: its quantization into @p k, or
 * whether it is the first's. */
static int mean_params(const mengine_kq_params *q, int32_t C, int first, mengine_kq_corr_params *k)
{
    int32_t mult, shift;
    if (q->in_zp != k->mul_zp)
        return 0;
    mengine_kq_mean_multiplier(q->mult, q->shift, C, &mult, &shift);
    if (first) {
        k->mean_mult = mult, k->mean_shift = shift, k->out_zp = q->out_zp;
        return 1;
    }
    return k->mean_mult == mult && k->mean_shift == shift && k->out_zp == q->out_zp;
}

int mengine_fuse_correlation(const mengine_model *m, const void *work, uint32_t first,
                             uint32_t *last, mnode *node)
{
    mdiag quiet = {0, 0};
    fbr r;
    mop_ctx c;
    mnode tmp;
    int32_t rd[4], td[4], ld[4], sd[4], dd[4], od[4];
    mengine_fbr_for_model(&r, m, &quiet);
    /* PAD: along W only */
    if (!prep(&r, m, first, MENGINE_OP_PAD, &c, &tmp))
        return 0;
    const int q8 =
        (c.reg->builtin & MOP_INT8) != 0; /* an int8 pattern (mengine_op_correlation_int8) */
    const int32_t *before = q8 ? tmp.p.q8.before : tmp.p.pad.before;
    const int32_t R = in_at(&r, &c, 0), T = (int32_t)tmp.output;
    const int32_t P = before[2];
    mengine_kq_corr_params k8;
    memset(&k8, 0, sizeof k8);
    k8.r_zp = tmp.p.q8.out_zp; /* the PAD's value: the right features' zero point */
    if (!dims4_of(&r, m, R, rd) || !dims4_of(&r, m, T, td) || before[0] || before[1] || before[3] ||
        td[0] != rd[0] || td[1] != rd[1] || td[3] != rd[3])
        return 0;
    int32_t L = -1, b0 = 0, step = 0;
    uint32_t k = 0, q = first + 1;
    for (;; k++, q += 3) {
        if (q >= m->n_ops || mengine_op_bind(&r, m, q, &c) != MENGINE_OK)
            return 0;
        if (c.builtin == MENGINE_OP_CONCATENATION)
            break;
        /* SLICE of T at (0, 0, b_k, 0), strides 1, the whole of N, H and C */
        if ((c.builtin != MENGINE_OP_SLICE && c.builtin != MENGINE_OP_STRIDED_SLICE) ||
            mengine_op_prepare(&c, &tmp) != MENGINE_OK || in_at(&r, &c, 0) != T)
            return 0;
        const int32_t S = (int32_t)tmp.output, b = tmp.p.slice.begin[2];
        if (!dims4_of(&r, m, S, sd) || tmp.p.slice.begin[0] || tmp.p.slice.begin[1] ||
            tmp.p.slice.begin[3] || sd[0] != td[0] || sd[1] != td[1] || sd[3] != td[3])
            return 0;
        for (int i = 0; i < 4; i++)
            if (tmp.p.slice.stride[i] != 1)
                return 0;
        if (k == 0)
            b0 = b;
        else if (k == 1)
            step = b - b0;
        else if ((int64_t)b != (int64_t)b0 + (int64_t)k * step)
            return 0;
        /* MUL of L and S_k, no activation (int8: one quantization for every k) */
        if (!prep(&r, m, q + 1, MENGINE_OP_MUL, &c, &tmp) || (!q8 && tmp.p.misc.act != MK_ACT_NONE))
            return 0;
        const int32_t a0 = in_at(&r, &c, 0), a1 = in_at(&r, &c, 1), M = (int32_t)tmp.output;
        const int32_t other = a0 == S ? a1 : a1 == S ? a0 : -1;
        if (other < 0 || other == S || (k > 0 && other != L))
            return 0;
        if (q8 && !mul_params(&tmp.p.q8, a0 == S, k == 0, &k8))
            return 0;
        L = other;
        if (k == 0 && (!dims4_of(&r, m, L, ld) || !same4(ld, sd)))
            return 0;
        if (k > 0 && !same4(ld, sd))
            return 0;
        /* MEAN of M_k over the channels, dims kept */
        if (!prep(&r, m, q + 2, MENGINE_OP_MEAN, &c, &tmp) ||
            (q8 ? tmp.p.q8.multiplier : tmp.p.misc.axis) != 3 || in_at(&r, &c, 0) != M ||
            !dims4_of(&r, m, (int32_t)tmp.output, dd))
            return 0;
        if (q8 && !mean_params(&tmp.p.q8, ld[3], k == 0, &k8))
            return 0;
    }
    /* CONCATENATION of E_0 .. E_{D-1} along the channels */
    const uint32_t D = k;
    if (D == 0 || mengine_op_prepare(&c, &tmp) != MENGINE_OK || tmp.p.misc.act != MK_ACT_NONE ||
        tmp.p.misc.axis != 3 || c.inputs.n != D || !dims4_of(&r, m, (int32_t)tmp.output, od) ||
        od[0] != ld[0] || od[1] != ld[1] || od[2] != ld[2] || od[3] != (int32_t)D)
        return 0;
    for (uint32_t i = 0; i < D; i++) {
        fb_table t;
        fb_vec ins, outs;
        if (mengine_model_operator(&r, m, first + 3 + 3 * i, &t, &ins, &outs) != MENGINE_OK ||
            outs.n != 1 || fb_vec_i32(&r, &outs, 0) != in_at(&r, &c, i))
            return 0;
    }
    /* The intermediates stay inside the pattern; L comes from before it. */
    for (uint32_t i = first; i < q; i++) {
        fb_table t;
        fb_vec ins, outs;
        if (mengine_model_operator(&r, m, i, &t, &ins, &outs) != MENGINE_OK || outs.n != 1 ||
            !mengine_plan_local(work, (uint32_t)fb_vec_i32(&r, &outs, 0), q))
            return 0;
    }
    if (mengine_plan_written_after(work, (uint32_t)L, first))
        return 0;
    *last = q;
    if (q8) {
        k8.offset = b0 - P;
        k8.step = step;
        node->p.corr8.left = (uint32_t)L;
        node->p.corr8.right = (uint32_t)R;
        node->p.corr8.k = k8;
        return 1;
    }
    node->p.corr.left = (uint32_t)L;
    node->p.corr.right = (uint32_t)R;
    node->p.corr.k.offset = b0 - P;
    node->p.corr.k.step = step;
    return 1;
}

static mengine_status folded_prepare(const mop_ctx *c, mnode *node)
{
    (void)node;
    return mengine_op_fail(c, MENGINE_ERR_UNSUPPORTED_OP, "not an operator of a file");
}

static mengine_status folded_eval(const mengine *e, const mnode *n)
{
    (void)e;
    (void)n;
    return MENGINE_OK;
}

const mengine_op mengine_op_pad_folded = {
    MENGINE_FUSED_CORRELATION - 2, 0, 0, MOP_SHARE_ELIDED, folded_prepare, folded_eval};

/* A prepared PAD's padding before (n, h, w, c): in the int8 parameters for an int8 PAD */
static const int32_t *pad_before(const mnode *pad)
{
    return pad->reg->builtin & MOP_INT8 ? pad->p.q8.before : pad->p.pad.before;
}

void mengine_fuse_pad_before(const mnode *pad, int32_t *h, int32_t *w)
{
    *h = pad_before(pad)[1], *w = pad_before(pad)[2];
}

void mengine_fuse_pad_into(mnode *conv, int32_t builtin, int32_t h, int32_t w)
{
    if (conv->reg->builtin & MOP_INT8) {
        conv->p.q8.pad_h += h, conv->p.q8.pad_w += w;
    } else if (builtin == MENGINE_OP_CONV_2D) {
        conv->p.conv.pad_h += h, conv->p.conv.pad_w += w;
    } else {
        conv->p.dw.pad_h += h, conv->p.dw.pad_w += w;
    }
}

int mengine_fuse_pad(const mengine_model *m, const void *work, uint32_t first, const mnode *pad,
                     int32_t *src)
{
    mdiag quiet = {0, 0};
    fbr r;
    mop_ctx c;
    mnode tmp;
    mtensor_info ti;
    int32_t xd[4], td[4], fd[4];
    mengine_fbr_for_model(&r, m, &quiet);
    const int32_t T = (int32_t)pad->output;
    if (first + 1 >= m->n_ops || mengine_op_bind(&r, m, first, &c) != MENGINE_OK ||
        c.builtin != MENGINE_OP_PAD)
        return 0;
    const int32_t X = in_at(&r, &c, 0);
    if (!dims4_of(&r, m, X, xd) || !dims4_of(&r, m, T, td) ||
        mengine_model_tensor(&r, m, (uint32_t)T, &ti) != MENGINE_OK ||
        (ti.type != MENGINE_FLOAT32 && ti.type != MENGINE_INT8) ||
        ((pad->reg->builtin & MOP_INT8) != 0) != (ti.type == MENGINE_INT8) || pad_before(pad)[0] ||
        pad_before(pad)[3] || xd[0] != td[0] || xd[3] != td[3] ||
        model_offline_offset(m, (uint32_t)T) >= 0)
        return 0;
    if (mengine_op_bind(&r, m, first + 1, &c) != MENGINE_OK ||
        (c.builtin != MENGINE_OP_CONV_2D && c.builtin != MENGINE_OP_DEPTHWISE_CONV_2D) ||
        mengine_op_prepare(&c, &tmp) != MENGINE_OK || in_at(&r, &c, 0) != T)
        return 0;
    for (uint32_t i = 1; i < c.inputs.n; i++)
        if (in_at(&r, &c, i) == T)
            return 0;
    if (c.builtin == MENGINE_OP_CONV_2D &&
        (!dims4_of(&r, m, in_at(&r, &c, 1), fd) || (fd[1] == 1 && fd[2] == 1)))
        return 0;
    if (!mengine_plan_local(work, (uint32_t)T, first + 1))
        return 0;
    *src = X;
    return 1;
}
