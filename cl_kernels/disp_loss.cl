/* Masked disparity loss of one scale (see runtime/nn/disp_loss.h).
 * pred, gt, dpred: total values; part: 3 floats per partial sum (loss, |e|, count);
 * result: (loss, EPE, count). kind 0: L1, 1: smooth L1 (beta 1). A pixel is valid when
 * gt is finite, > 0 and (max_disp <= 0 or gt <= max_disp).
 * Stage 1 writes partial sums (disp_loss_partial: GPU, work-groups strided over the values,
 * wg_sum within a group; disp_loss_partial_rows: CPU, a work-item per contiguous range in
 * float8), stage 2 (disp_loss_reduce, one work-group) adds them into result, stage 3
 * (disp_loss_grad1: GPU, a work-item per value; disp_loss_grad_rows: CPU, per 8 values)
 * writes dpred = beta * dpred + weight * l'(e) / count on valid pixels (dpred not read when
 * beta is 0). */

#define DL_ARGS int total, int kind, float max_disp

inline bool dl_valid(float g, float max_disp)
{
    return isfinite(g) && g > 0.0f && (max_disp <= 0.0f || g <= max_disp);
}

inline int8 dl_valid8(float8 g, float max_disp)
{
    int8 v = isfinite(g) & (g > 0.0f);
    return max_disp > 0.0f ? v & (g <= max_disp) : v;
}

inline float dl_loss(float e, int kind)
{
    float a = fabs(e);
    return kind == 0 ? a : (a < 1.0f ? 0.5f * e * e : a - 0.5f);
}

inline float dl_grad(float e, int kind)
{
    return (kind == 0 || fabs(e) >= 1.0f) ? sign(e) : e;
}

/* Global groups * local; part[3 * group + (0, 1, 2)] = the group's sums. */
__kernel void disp_loss_partial(VIEW(pred), VIEW(gt), VIEW(part), DL_ARGS,
                                __local float *scratch)
{
    PTR(pred); PTR(gt); PTR(part);
    int l = (int)get_local_id(0), grp = (int)get_group_id(0);
    int L = (int)get_local_size(0), step = (int)get_num_groups(0) * L;
    float sl = 0.0f, se = 0.0f, sc = 0.0f;
    for (int i = grp * L + l; i < total; i += step) {
        float g = gt[i];
        if (dl_valid(g, max_disp)) {
            float e = pred[i] - g;
            sl += dl_loss(e, kind);
            se += fabs(e);
            sc += 1.0f;
        }
    }
    sl = wg_sum(sl, scratch);
    se = wg_sum(se, scratch);
    sc = wg_sum(sc, scratch);
    if (l == 0) {
        part[3 * grp] = sl;
        part[3 * grp + 1] = se;
        part[3 * grp + 2] = sc;
    }
}

/* Global parts; work-item t sums values [t * per, (t + 1) * per) (per a multiple of 8). */
__kernel void disp_loss_partial_rows(VIEW(pred), VIEW(gt), VIEW(part), DL_ARGS, int parts,
                                     int per)
{
    PTR(pred); PTR(gt); PTR(part);
    int t = GID0;
    if (t >= parts)
        return;
    int lo = t * per, hi = min(total, lo + per);
    float8 sl = (float8)(0.0f), se = (float8)(0.0f), sc = (float8)(0.0f);
    for (int i = lo; i < hi; i += 8) {
        int left = hi - i;
        float8 g = load8(gt + i, left), e = load8(pred + i, left) - g; /* lanes past: g 0 */
        int8 v = dl_valid8(g, max_disp);
        float8 a = fabs(e);
        float8 l = kind == 0 ? a : select(a - 0.5f, 0.5f * e * e, a < 1.0f);
        sl += select((float8)(0.0f), l, v);
        se += select((float8)(0.0f), a, v);
        sc += select((float8)(0.0f), (float8)(1.0f), v);
    }
    part[3 * t] = hsum8(sl);
    part[3 * t + 1] = hsum8(se);
    part[3 * t + 2] = hsum8(sc);
}

/* One work-group (local size a power of two, as many floats in scratch): result =
 * (weight * loss sum / count, |e| sum / count, count); 0, 0, 0 without a valid pixel. */
__kernel void disp_loss_reduce(VIEW(part), VIEW(result), int parts, float weight,
                               __local float *scratch)
{
    PTR(part); PTR(result);
    int l = (int)get_local_id(0), L = (int)get_local_size(0);
    float sl = 0.0f, se = 0.0f, sc = 0.0f;
    for (int k = l; k < parts; k += L) {
        sl += part[3 * k];
        se += part[3 * k + 1];
        sc += part[3 * k + 2];
    }
    sl = wg_sum(sl, scratch);
    se = wg_sum(se, scratch);
    sc = wg_sum(sc, scratch);
    if (l == 0) {
        result[0] = sc > 0.0f ? weight * sl / sc : 0.0f;
        result[1] = sc > 0.0f ? se / sc : 0.0f;
        result[2] = sc;
    }
}

/* weight / count from the result on the device (0 without a valid pixel). */
inline float dl_grad_scale(__global const float *result, float weight)
{
    float cnt = result[2];
    return cnt > 0.0f ? weight / cnt : 0.0f;
}

/* One work-item per value. Global total. */
__kernel void disp_loss_grad1(VIEW(pred), VIEW(gt), VIEW(result), VIEW(dpred), DL_ARGS,
                              float weight, float beta)
{
    PTR(pred); PTR(gt); PTR(result); PTR(dpred);
    int i = GID0;
    if (i >= total)
        return;
    float k = dl_grad_scale(result, weight), g = gt[i];
    float gr = dl_valid(g, max_disp) ? k * dl_grad(pred[i] - g, kind) : 0.0f;
    dpred[i] = beta == 0.0f ? gr : fma(beta, dpred[i], gr);
}

/* One work-item per 8 values. Global ceil(total / 8). */
__kernel void disp_loss_grad_rows(VIEW(pred), VIEW(gt), VIEW(result), VIEW(dpred), DL_ARGS,
                                  float weight, float beta)
{
    PTR(pred); PTR(gt); PTR(result); PTR(dpred);
    int i = 8 * GID0;
    if (i >= total)
        return;
    int left = total - i;
    float k = dl_grad_scale(result, weight);
    float8 g = load8(gt + i, left), e = load8(pred + i, left) - g;
    float8 s = sign(e);
    float8 d = kind == 0 ? s : select(s, e, fabs(e) < 1.0f);
    float8 gr = select((float8)(0.0f), k * d, dl_valid8(g, max_disp));
    if (beta != 0.0f)
        gr = fma((float8)(beta), load8(dpred + i, left), gr);
    store8(dpred + i, gr, left);
}
