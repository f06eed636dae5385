/* manta export --ckpt STEREO.ckpt --int8: the activation ranges of a stereo graph from
 * generated training pairs run through its float reference (batch norm folded: the
 * re-calibrated supernet), by min/max, by a percentile, or both with the one of the lower
 * int8 EPE on held-out pairs kept (as classification keeps the better validation top-1);
 * then TFLite's CONCATENATION constraints (xgraph_quant_shared()). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "export/quant.h"
#include "export/tflite.h"
#include "stereo/train.h"
#include "stereo_cmd.h"

/* Pairs 0 .. n - 1 of @p src at h x w as the graph's inputs (a pair: left then right, NHWC)
 * into a new array; with @p gt, also their finest ground truth ((n, h, w), 0: unknown). */
static float *pairs_nhwc(const stereo_source *src, int n, int h, int w, float **gt, manta_err *err)
{
    const size_t plane = (size_t)h * w, view = 3 * plane;
    stereo_batch b;
    stereo_source s = *src;
    float *x = malloc(2 * view * (size_t)n * sizeof *x);
    float *g = gt ? malloc(plane * (size_t)n * sizeof *g) : NULL;
    manta_status st = x && (g || !gt) ? stereo_batch_alloc(&b, 1, h, w, 1, err)
                                      : manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of memory");
    const bool have_b = st == MANTA_OK;
    for (int i = 0; i < n && st == MANTA_OK; i++) {
        int count = 0;
        st = stereo_ordered_batch(&s, i, &b, &count, err);
        for (int v = 0; v < 2 && st == MANTA_OK; v++) {
            const float *planes = v ? b.right : b.left;
            float *o = x + ((size_t)i * 2 + (size_t)v) * view;
            for (size_t p = 0; p < plane; p++)
                for (int c = 0; c < 3; c++)
                    o[3 * p + (size_t)c] = planes[(size_t)c * plane + p];
        }
        if (st == MANTA_OK && g)
            memcpy(g + (size_t)i * plane, b.gt[0], plane * sizeof *g);
    }
    if (have_b)
        stereo_batch_free(&b);
    if (st != MANTA_OK) {
        free(x);
        free(g);
        return NULL;
    }
    if (gt)
        *gt = g;
    return x;
}

/* EPE of int8 file @p file on @p n pairs @p x with ground truth @p gt (the engine's
 * output in pixels: the graph's disparity scale is 1); -1 when the engine fails. */
static double int8_epe(const uint8_t *file, size_t size, const float *x, const float *gt, int n,
                       int h, int w)
{
    mengine_model m;
    mengine e;
    char msg[256];
    size_t need = 0;
    if (mengine_model_load(&m, file, size, NULL, msg, sizeof msg) != MENGINE_OK)
        return -1;
    const size_t ws = mengine_plan_work_size(&m) + 16, plane = (size_t)h * w;
    void *work = malloc(ws);
    const int ok = work && mengine_arena_size(&m, work, ws, &need, msg, sizeof msg) == MENGINE_OK;
    free(work);
    void *arena = ok ? aligned_alloc(MENGINE_ARENA_ALIGN, (need + 15) & ~(size_t)15) : NULL;
    mengine_view in[2], out;
    double sum = 0;
    long valid = 0;
    int run = arena && mengine_init(&e, &m, arena, need) == MENGINE_OK &&
              mengine_prepare(&e, msg, sizeof msg) == MENGINE_OK &&
              mengine_input(&e, 0, &in[0]) == MENGINE_OK &&
              mengine_input(&e, 1, &in[1]) == MENGINE_OK &&
              mengine_output(&e, 0, &out) == MENGINE_OK && out.type == MENGINE_INT8 &&
              in[0].count == 3 * plane && out.count == plane;
    for (int i = 0; run && i < n; i++) {
        for (int v = 0; v < 2; v++) {
            const float *src = x + ((size_t)i * 2 + (size_t)v) * 3 * plane;
            for (size_t k = 0; k < 3 * plane; k++) {
                const long q = lroundf(src[k] / in[v].scale) + in[v].zero_point;
                ((int8_t *)in[v].data)[k] = (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
            }
        }
        if (mengine_invoke(&e) != MENGINE_OK) {
            run = 0;
            break;
        }
        const int8_t *o = (const int8_t *)out.cdata;
        for (size_t p = 0; p < plane; p++) {
            const float g = gt[(size_t)i * plane + p];
            if (!(g > 0.0f) || !isfinite(g))
                continue;
            sum += fabs((double)out.scale * (o[p] - out.zero_point) - g);
            valid++;
        }
    }
    free(arena);
    return run && valid > 0 ? sum / (double)valid : -1;
}

/* Ranges by @p method, then the shared ones. */
static manta_status calibrate(xgraph *g, const float *x, int n, xg_calib method, double pct,
                              manta_err *err)
{
    MANTA_TRY(xgraph_calibrate(g, x, n, method, pct, err));
    return xgraph_quant_shared(g, err);
}

/* The int8 EPE of @p g's ranges on the held-out pairs; -1 when it cannot be measured. */
static double graph_epe(const xgraph *g, const float *hx, const float *gt, int n, int h, int w,
                        manta_err *err)
{
    uint8_t *f = NULL;
    size_t size = 0;
    if (tflite_write(g, &f, &size, NULL, err) != MANTA_OK)
        return -1;
    const double e = int8_epe(f, size, hx, gt, n, h, w);
    free(f);
    return e;
}

manta_status stereo_cmd_int8_calibrate(xgraph *g, const stereo_space *sp, const stereo_meta *m,
                                       const stereo_source *train, const photo_bank *photos, int h,
                                       int w, const stereo_cmd_int8 *o, stereo_cmd_int8_result *res,
                                       manta_err *err)
{
    memset(res, 0, sizeof *res);
    res->epe_minmax = res->epe_percentile = -1;
    const bool m_auto = !strcmp(o->method, "auto"), m_pct = !strcmp(o->method, "percentile");
    if (!m_auto && !m_pct && strcmp(o->method, "minmax"))
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "--calib-method %s (minmax, percentile or auto)", o->method);
    MANTA_TRY(xgraph_quant_prepare(g, err));
    float *x = pairs_nhwc(train, (int)o->calib, h, w, NULL, err);
    if (!x)
        return err->code ? err->code : MANTA_ERR_NO_MEMORY;
    snprintf(res->picked, sizeof res->picked, "%s", m_pct ? "percentile" : "minmax");
    manta_status st =
        calibrate(g, x, (int)o->calib, m_pct ? XG_CALIB_PERCENTILE : XG_CALIB_MINMAX, o->pct, err);
    float *gt = NULL, *hx = NULL;
    if (st == MANTA_OK && (m_auto || o->val > 0)) { /* scored on held-out pairs */
        stereo_source ho;
        stereo_heldout_source(sp, m->seed, o->val, &ho);
        ho.synth.photos = photos && photos->count > 0 ? photos : NULL;
        hx = pairs_nhwc(&ho, (int)o->val, h, w, &gt, err);
        st = hx ? MANTA_OK : (err->code ? err->code : MANTA_ERR_NO_MEMORY);
    }
    if (st == MANTA_OK && hx) {
        double *mine = m_pct ? &res->epe_percentile : &res->epe_minmax;
        *mine = graph_epe(g, hx, gt, (int)o->val, h, w, err);
    }
    if (st == MANTA_OK && m_auto) { /* the percentile's too; the lower EPE kept */
        float *lo = g->qmin, *hi = g->qmax;
        g->qmin = g->qmax = NULL;
        st = calibrate(g, x, (int)o->calib, XG_CALIB_PERCENTILE, o->pct, err);
        if (st == MANTA_OK)
            res->epe_percentile = graph_epe(g, hx, gt, (int)o->val, h, w, err);
        if (st == MANTA_OK && res->epe_percentile >= 0 &&
            (res->epe_minmax < 0 || res->epe_percentile < res->epe_minmax)) {
            free(lo), free(hi);
            snprintf(res->picked, sizeof res->picked, "percentile");
        } else {
            free(g->qmin), free(g->qmax);
            g->qmin = lo, g->qmax = hi;
        }
    }
    free(x);
    free(hx);
    free(gt);
    return st;
}
