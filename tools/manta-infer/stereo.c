/* manta-infer on a stereo model: each view decoded (JPEG, or PNG where libpng is built in),
 * resized to the model's input size with the training pipeline's triangle filter, scaled to
 * [0, 1] (the metadata's mean and std); the finest disparity resized back to the left
 * image's size (bilinear, half-pixel centres) and multiplied by the width ratio, so that it
 * is in the image's pixels; written as a 16-bit PNG in KITTI's convention (d * 256) and a
 * colour-mapped one. */
#include "stereo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "common/provenance.h"
#include "core/stats.h"
#include "data/disp_color.h"
#include "image.h"
#ifndef MANTA_INFER_NO_PNG
#include "data/png_io.h"
#endif

#define WARMUP 3

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Read a whole file; NULL with a reason. */
static uint8_t *slurp(const char *path, size_t *n, char *why, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, cap, "cannot open");
        return NULL;
    }
    uint8_t *buf = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && len < 0x7fffffffL && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len + 1)) != NULL && fread(buf, 1, (size_t)len, f) == (size_t)len)
        *n = (size_t)len;
    else {
        free(buf);
        buf = NULL;
        snprintf(why, cap, "cannot read");
    }
    fclose(f);
    return buf;
}

/* Decode an image file to RGB bytes (h, w, 3). */
static uint8_t *decode(const char *path, int *h, int *w, char *why, size_t cap)
{
    size_t n = 0;
    uint8_t *data = slurp(path, &n, why, cap), *pix = NULL;
    if (!data)
        return NULL;
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n >= 8 && !memcmp(data, png_sig, 8)) {
#ifdef MANTA_INFER_NO_PNG
        snprintf(why, cap,
                 "a PNG file: this manta-infer is built without libpng (a board "
                 "file without BOARD_INFER_PNG_LIBS, MANTA_INFER_NO_PNG): give JPEG files");
#else
        manta_err err = {0};
        if (mpng_read_u8(path, 3, &pix, h, w, &err) != MANTA_OK) {
            snprintf(why, cap, "%.400s", err.msg);
            pix = NULL;
        }
#endif
    } else if (image_decode_jpeg(data, n, 3, &pix, h, w, why, cap) != 0)
        pix = NULL;
    free(data);
    return pix;
}

/* The view @p path into the model's input @p v (1, mh, mw, 3): decoded, resized, normalised;
 * its size into *h, *w. */
static int load_view(const char *path, const tflite_meta *meta, mengine_view *v, int *h, int *w,
                     char *why, size_t cap)
{
    const int mh = v->dims[1], mw = v->dims[2];
    uint8_t *pix = decode(path, h, w, why, cap), *rs = NULL;
    if (!pix)
        return -1;
    int rc = -1;
    if (!(rs = malloc((size_t)mh * mw * 3)) || image_resize_u8(pix, *h, *w, 3, rs, mh, mw) != 0)
        snprintf(why, cap, "out of memory for the resized image");
    else {
        for (size_t i = 0; i < (size_t)mh * mw; i++)
            for (int c = 0; c < 3; c++) {
                const float mean = c < meta->n_mean ? meta->mean[c] : 0.0f;
                const float std = c < meta->n_std && meta->std[c] > 0.0f ? meta->std[c] : 1.0f;
                const float x = (rs[3 * i + (size_t)c] / 255.0f - mean) / std;
                if (v->type == MENGINE_INT8) { /* quantized with the file's: half away, saturated */
                    const double q = (double)x / v->scale,
                                 r = q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5);
                    const double k = r + v->zero_point;
                    ((int8_t *)v->data)[3 * i + (size_t)c] = (int8_t)(k < -128  ? -128
                                                                      : k > 127 ? 127
                                                                                : k);
                } else
                    v->data[3 * i + (size_t)c] = x;
            }
        rc = 0;
    }
    free(pix);
    free(rs);
    return rc;
}

/* Write the 16-bit KITTI PNG (d * 256, clamped to [0, 65535]) or the colour map. */
static int write_outputs(const stereo_infer_opts *o, const float *d, int h, int w, float max_disp)
{
    const size_t n = (size_t)h * w;
#ifdef MANTA_INFER_NO_PNG
    (void)d, (void)n, (void)max_disp;
    if (o->out || o->color)
        return fprintf(stderr,
                       "manta-infer: %s: this manta-infer is built without libpng "
                       "(MANTA_INFER_NO_PNG): no PNG output\n",
                       o->out ? o->out : o->color),
               -1;
    return 0;
#else
    manta_err err = {0};
    if (o->out) {
        uint16_t *px = malloc(n * sizeof *px);
        if (!px)
            return fprintf(stderr, "manta-infer: out of memory\n"), -1;
        for (size_t i = 0; i < n; i++) {
            const double v = isfinite(d[i]) ? d[i] * 256.0 + 0.5 : 0.0;
            px[i] = (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
        }
        manta_status st = mpng_write_gray16(o->out, px, h, w, &err);
        free(px);
        if (st != MANTA_OK)
            return fprintf(stderr, "manta-infer: %s\n", err.msg), -1;
    }
    if (o->color) {
        uint8_t *rgb = malloc(3 * n);
        if (!rgb)
            return fprintf(stderr, "manta-infer: out of memory\n"), -1;
        data_disp_colorize(d, n, max_disp, rgb);
        manta_status st = mpng_write_rgb8(o->color, rgb, h, w, &err);
        free(rgb);
        if (st != MANTA_OK)
            return fprintf(stderr, "manta-infer: %s\n", err.msg), -1;
    }
    return 0;
#endif
}

/* min, p10, median, p90 of n invocations after a warm-up. */
static int bench(mengine *e, int n, double *stat)
{
    double *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return fprintf(stderr, "manta-infer: out of memory for %d timings\n", n), -1;
    for (int i = 0; i < WARMUP; i++)
        mengine_invoke(e);
    for (int i = 0; i < n; i++) {
        const double t0 = now_ms();
        mengine_invoke(e);
        t[i] = now_ms() - t0;
    }
    stat[1] = manta_sort_median(t, (size_t)n); /* sorts t */
    stat[0] = t[0];
    for (int q = 0; q < 2; q++) {
        int k = (int)((q ? 0.1 : 0.9) * n + 0.999999) - 1;
        stat[2 + q] = t[k < 0 ? 0 : k >= n ? n - 1 : k];
    }
    free(t);
    return 0;
}

int stereo_infer_run(const stereo_infer_opts *o, mengine *e, const mengine_model *m,
                     const tflite_meta *meta, size_t model_bytes, size_t arena_bytes)
{
    mengine_view in[2], out;
    mengine_input(e, 0, &in[0]);
    mengine_input(e, 1, &in[1]);
    mengine_output(e, 0, &out);
    if (in[0].rank != 4 || in[0].dims[3] != 3 ||
        memcmp(in[0].dims, in[1].dims, sizeof in[0].dims) || out.rank != 4 ||
        out.dims[1] != in[0].dims[1] || out.dims[2] != in[0].dims[2] || out.dims[3] != 1)
        return fprintf(stderr,
                       "manta-infer: %s: not a stereo model (two (1, H, W, 3) inputs "
                       "and a (1, H, W, 1) output)\n",
                       o->model),
               1;
    if (o->n_images != 2 && (o->n_images || (!o->bench && !o->stats)))
        return fprintf(stderr,
                       "manta-infer: %s is a stereo model: give a left and a right "
                       "image (%d given)\n",
                       o->model, o->n_images),
               2;
    const int mh = in[0].dims[1], mw = in[0].dims[2];
    const float scale = meta->disp_scale > 0.0f ? meta->disp_scale : 1.0f;
    int h = mh, w = mw, hr = 0, wr = 0;
    float *disp = NULL;
    double t_load = 0, t_inv = 0, dmin = 0, dmax = 0, dmean = 0;
    char why[512];
    const int q8 = in[0].type == MENGINE_INT8; /* an int8 model: int8 views, an int8 output */
    const size_t esize = q8 ? 1 : sizeof(float),
                 oesize = out.type == MENGINE_INT8 ? 1 : sizeof(float);
    for (int k = 0; k < 2; k++)
        memset(in[k].data, 0, in[k].count * esize);
    if (o->n_images == 2) {
        const double t0 = now_ms();
        if (load_view(o->images[0], meta, &in[0], &h, &w, why, sizeof why) != 0)
            return fprintf(stderr, "manta-infer: %s: %s\n", o->images[0], why), 1;
        if (load_view(o->images[1], meta, &in[1], &hr, &wr, why, sizeof why) != 0)
            return fprintf(stderr, "manta-infer: %s: %s\n", o->images[1], why), 1;
        if (hr != h || wr != w)
            return fprintf(stderr, "manta-infer: %s: %dx%d, the left image %s is %dx%d\n",
                           o->images[1], wr, hr, o->images[0], w, h),
                   1;
        t_load = now_ms() - t0;
        if (o->dump_input) {
            FILE *f = fopen(o->dump_input, "wb");
            int bad = !f;
            for (int k = 0; k < 2 && !bad; k++)
                bad = fwrite(in[k].data, esize, in[k].count, f) != in[k].count;
            if ((f && fclose(f) != 0) || bad)
                return fprintf(stderr, "manta-infer: %s: cannot write the input tensors\n",
                               o->dump_input),
                       1;
        }
        const double t1 = now_ms();
        if (mengine_invoke(e) != MENGINE_OK)
            return fprintf(stderr, "manta-infer: %s: invoke failed\n", o->model), 1;
        t_inv = now_ms() - t1;
        if (o->dump_output) {
            FILE *f = fopen(o->dump_output, "wb");
            const size_t n = (size_t)mh * mw;
            const int bad = !f || fwrite(out.cdata, oesize, n, f) != n;
            if ((f && fclose(f) != 0) || bad)
                return fprintf(stderr, "manta-infer: %s: cannot write the output tensor\n",
                               o->dump_output),
                       1;
        }
        /* back to the left image's size, in its pixels */
        float *deq = NULL; /* an int8 output, dequantized */
        if (!(disp = malloc((size_t)h * w * sizeof *disp)) ||
            (oesize == 1 && !(deq = malloc((size_t)mh * mw * sizeof *deq)))) {
            free(disp);
            return fprintf(stderr, "manta-infer: out of memory\n"), 1;
        }
        for (size_t i = 0; deq && i < (size_t)mh * mw; i++)
            deq[i] = out.scale * (float)(((const int8_t *)out.cdata)[i] - out.zero_point);
        data_disp_resize(deq ? deq : out.cdata, mh, mw, disp, h, w, (float)w / (float)mw / scale);
        free(deq);
        dmin = dmax = disp[0];
        for (size_t i = 0; i < (size_t)h * w; i++) {
            dmin = fmin(dmin, disp[i]);
            dmax = fmax(dmax, disp[i]);
            dmean += disp[i];
        }
        dmean /= (double)h * w;
        const float max_disp = meta->max_disp > 0.0f ? meta->max_disp * w / mw : (float)dmax;
        if (write_outputs(o, disp, h, w, max_disp) != 0) {
            free(disp);
            return 1;
        }
    }
    double bst[4] = {0};
    if (o->bench && bench(e, o->bench, bst) != 0) {
        free(disp);
        return 1;
    }
    mengine_stats es;
    mengine_get_stats(e, &es);
    if (o->json) {
        printf("{");
        tool_json_version(stdout);
        printf(", \"model\": ");
        json_put_str(stdout, o->model);
        printf(", \"task\": \"stereo\", \"model_width\": %d, \"model_height\": %d", mw, mh);
        if (disp) {
            printf(", \"left\": ");
            json_put_str(stdout, o->images[0]);
            printf(", \"right\": ");
            json_put_str(stdout, o->images[1]);
            printf(", \"width\": %d, \"height\": %d, \"disparity\": {\"min\": %.4f, \"max\": "
                   "%.4f, \"mean\": %.4f}, \"ms\": {\"load\": %.3f, \"invoke\": %.3f}",
                   w, h, dmin, dmax, dmean, t_load, t_inv);
        }
        if (o->bench)
            printf(", \"bench\": {\"runs\": %d, \"min_ms\": %.4f, \"p10_ms\": %.4f, "
                   "\"median_ms\": %.4f, \"p90_ms\": %.4f}",
                   o->bench, bst[0], bst[3], bst[1], bst[2]);
        if (o->stats)
            printf(", \"stats\": {\"model_bytes\": %zu, \"arena_bytes\": %zu, "
                   "\"activation_bytes\": %zu, \"operators\": %u, \"fused_correlations\": %zu, "
                   "\"fused_ops\": %zu, \"folded_pads\": %zu}",
                   model_bytes, arena_bytes, es.activation_bytes, m->n_ops, es.fused_correlations,
                   es.fused_ops, es.folded_pads);
        printf(", \"errors\": 0}\n");
    } else {
        if (disp)
            printf("%s + %s: %dx%d (run at %dx%d): disparity min %.3f, max %.3f, mean %.3f px; "
                   "load %.2f ms, invoke %.2f ms\n",
                   o->images[0], o->images[1], w, h, mw, mh, dmin, dmax, dmean, t_load, t_inv);
        if (o->bench)
            printf("latency over %d runs (after %d warm-up): min %.4f ms, p10 %.4f ms, median "
                   "%.4f ms, p90 %.4f ms\n",
                   o->bench, WARMUP, bst[0], bst[3], bst[1], bst[2]);
        if (o->stats)
            printf("model %zu bytes, arena %zu bytes (activations %zu), %u operators; "
                   "correlation fused: %s (%zu, standing for %zu operators); PADs folded into "
                   "convolutions: %zu\n",
                   model_bytes, arena_bytes, es.activation_bytes, m->n_ops,
                   es.fused_correlations ? "yes" : "no", es.fused_correlations, es.fused_ops,
                   es.folded_pads);
    }
    free(disp);
    return 0;
}
