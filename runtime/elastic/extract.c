#include "elastic/extract.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ofa_bn_fold(const ofa_host_values *v, const ofa_bn *b, int o, float *scale, float *shift)
{
    float s = v->p[b->gamma + (size_t)o] / sqrtf(v->st[b->rvar + (size_t)o] + OFA_BN_EPS);
    *scale = s;
    *shift = v->p[b->beta + (size_t)o] - v->st[b->rmean + (size_t)o] * s;
}

void ofa_fill_conv_bn(const ofa_host_values *v, const mbv3_request *r, size_t w_off, size_t ld,
                      const ofa_bn *bn)
{
    const int k = r->k, cin = r->cin;
    for (int o = 0; o < r->cout; o++) {
        float scale = 1.0f, shift = 0.0f;
        if (bn)
            ofa_bn_fold(v, bn, o, &scale, &shift);
        for (int i = 0; i < cin; i++)
            for (int ky = 0; ky < k; ky++)
                for (int kx = 0; kx < k; kx++)
                    r->weights[(((size_t)o * k + ky) * k + kx) * cin + i] =
                        v->p[w_off + (size_t)o * ld + ((size_t)i * k + ky) * k + kx] * scale *
                        r->in_scale;
        if (bn)
            r->bias[o] = shift;
    }
}

void ofa_fill_dwconv_bn(const ofa_host_values *v, const mbv3_request *r, const float *w,
                        const ofa_bn *bn)
{
    const int k = r->k, ch = r->cout;
    for (int i = 0; i < ch; i++) {
        float scale, shift;
        ofa_bn_fold(v, bn, i, &scale, &shift);
        for (int t = 0; t < k * k; t++)
            r->weights[(size_t)t * ch + i] = w[(size_t)i * k * k + t] * scale;
        r->bias[i] = shift;
    }
}

/* A squeeze-and-excite 1x1 from weights at @p w (rows of stride @p ld) and bias at @p b. */
static void se_from(const ofa_host_values *v, const mbv3_request *r, size_t w, size_t ld, size_t b)
{
    for (int o = 0; o < r->cout; o++) {
        for (int i = 0; i < r->cin; i++)
            r->weights[(size_t)o * r->cin + i] = v->p[w + (size_t)o * ld + (size_t)i];
        r->bias[o] = v->p[b + (size_t)o];
    }
}

/* The active depthwise kernel of a slot: the stored largest one, or its transformed centre
 * (OFA's chain K -> ... -> k), for @p ch channels; NULL when out of memory. */
static float *active_kernel(const ofa_host_values *v, const ofa_mbconv *p, int ki, int ch)
{
    const int kmax = p->ks[p->n_ks - 1];
    float *cur = malloc((size_t)ch * kmax * kmax * sizeof *cur);
    if (!cur)
        return NULL;
    memcpy(cur, v->p + p->dw_w, (size_t)ch * kmax * kmax * sizeof *cur);
    for (int i = p->n_ks - 2; i >= ki; i--) {
        const int big = p->ks[i + 1], k = p->ks[i], kk = k * k, off = big / 2 - k / 2;
        const float *m = v->p + p->kmat[i];
        float *next = malloc((size_t)ch * kk * sizeof *next);
        if (!next) {
            free(cur);
            return NULL;
        }
        for (int q = 0; q < ch; q++)
            for (int a = 0; a < kk; a++) {
                float sum = 0;
                for (int b = 0; b < kk; b++)
                    sum += cur[(size_t)q * big * big + (size_t)(off + b / k) * big + off + b % k] *
                           m[a * kk + b];
                next[(size_t)q * kk + a] = sum;
            }
        free(cur);
        cur = next;
    }
    return cur;
}

manta_status ofa_mbconv_fill(const ofa_host_values *v, const ofa_mbconv *p, int ki,
                             const mbv3_request *r, manta_err *err)
{
    switch (r->part) {
    case MBV3_EXPAND: ofa_fill_conv_bn(v, r, p->e_w, (size_t)p->in_c, &p->e_bn); return MANTA_OK;
    case MBV3_DW: {
        float *kw = active_kernel(v, p, ki, r->cout);
        if (!kw)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "export: out of memory");
        ofa_fill_dwconv_bn(v, r, kw, &p->d_bn);
        free(kw);
        return MANTA_OK;
    }
    case MBV3_SE_REDUCE: se_from(v, r, p->se_r_w, (size_t)p->mid_max, p->se_r_b); return MANTA_OK;
    case MBV3_SE_EXPAND: se_from(v, r, p->se_e_w, (size_t)p->se_max, p->se_e_b); return MANTA_OK;
    case MBV3_PROJECT:
        ofa_fill_conv_bn(v, r, p->p_w, (size_t)p->mid_max, &p->p_bn);
        return MANTA_OK;
    case MBV3_CONV:
    case MBV3_FC: break;
    }
    return manta_err_set(err, MANTA_ERR_INTERNAL, "export: an MBConv slot has no operator %d",
                         (int)r->part);
}
