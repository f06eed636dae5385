/* JPEG decoding (TurboJPEG), resizing and normalisation for manta-infer.
 *
 * The resize is the training pipeline's filter (runtime/data/resample.h):
 * output sample o of an axis of `in` samples resized to `out` sits at
 * c = (o + 0.5) * in / out; with s = max(1, in / out), input i weighs
 * max(0, 1 - |i + 0.5 - c| / s), normalised over the samples inside the image.
 * It is written again here so that manta-infer links nothing of the data
 * pipeline; tests/unit/test_infer_image.c checks that both give the same bytes. */
#include "image.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef MANTA_INFER_NO_JPEG
#include <turbojpeg.h>
#endif

typedef struct taps {
    int n;      /* taps per output */
    int *first; /* (out) */
    float *w;   /* (out, n) */
} taps;

static void window(double c, double support, int in, int *lo, int *hi)
{
    int a = (int)floor(c - support + 0.5), b = (int)floor(c + support + 0.5);
    *lo = a < 0 ? 0 : a;
    *hi = b > in ? in : b;
    if (*hi <= *lo) {
        *lo = (int)fmin(fmax(floor(c), 0), in - 1);
        *hi = *lo + 1;
    }
}

static int taps_make(taps *t, int in, int out)
{
    if (in < 1 || out < 1 || in > 65535 || out > 65535)
        return -1;
    const double scale = (double)in / out, fs = scale > 1.0 ? scale : 1.0;
    int n = 1;
    for (int o = 0; o < out; o++) {
        int lo, hi;
        window((o + 0.5) * scale, fs, in, &lo, &hi);
        n = hi - lo > n ? hi - lo : n;
    }
    t->n = n;
    t->first = malloc((size_t)out * sizeof *t->first);
    t->w = calloc((size_t)out * n, sizeof *t->w);
    if (!t->first || !t->w)
        return -1;
    for (int o = 0; o < out; o++) {
        const double c = (o + 0.5) * scale;
        int lo, hi;
        double sum = 0;
        window(c, fs, in, &lo, &hi);
        t->first[o] = lo + n <= in ? lo : in - n;
        for (int i = lo; i < hi; i++)
            sum += fmax(0.0, 1.0 - fabs(i + 0.5 - c) / fs);
        for (int i = lo; i < hi; i++) {
            const double x = fmax(0.0, 1.0 - fabs(i + 0.5 - c) / fs);
            t->w[(size_t)o * n + (i - t->first[o])] = (float)(sum > 0 ? x / sum : 1.0 / (hi - lo));
        }
    }
    return 0;
}

static uint8_t to_u8(float v)
{
    v += 0.5f;
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

int image_resize_u8(const uint8_t *src, int h, int w, int c, uint8_t *dst, int oh, int ow)
{
    taps tx = {0}, ty = {0};
    float *tmp = malloc((size_t)h * ow * c * sizeof *tmp);
    int rc = -1;
    if (tmp && taps_make(&tx, w, ow) == 0 && taps_make(&ty, h, oh) == 0) {
        for (int y = 0; y < h; y++)
            for (int o = 0; o < ow; o++) {
                const float *wt = tx.w + (size_t)o * tx.n;
                const uint8_t *p = src + ((size_t)y * w + tx.first[o]) * c;
                for (int ch = 0; ch < c; ch++) {
                    float s = 0;
                    for (int k = 0; k < tx.n; k++)
                        s += wt[k] * p[k * c + ch];
                    tmp[((size_t)y * ow + o) * c + ch] = s;
                }
            }
        const size_t row = (size_t)ow * c;
        for (int o = 0; o < oh; o++) {
            const float *wt = ty.w + (size_t)o * ty.n;
            const float *base = tmp + (size_t)ty.first[o] * row;
            for (size_t j = 0; j < row; j++) {
                float s = 0;
                for (int k = 0; k < ty.n; k++)
                    s += wt[k] * base[(size_t)k * row + j];
                dst[(size_t)o * row + j] = to_u8(s);
            }
        }
        rc = 0;
    }
    free(tmp);
    free(tx.first), free(tx.w), free(ty.first), free(ty.w);
    return rc;
}

static int fail(char *why, size_t cap, const char *what, const char *detail)
{
    snprintf(why, cap, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    for (char *p = why; *p; p++) /* one line */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return -1;
}

#ifdef MANTA_INFER_NO_JPEG
/* Built for a system without libjpeg-turbo (boards/riscv64.mk): raw input tensors only. */
int image_decode_jpeg(const uint8_t *jpeg, size_t size, int channels, uint8_t **pix, int *h, int *w,
                      char *why, size_t why_cap)
{
    (void)jpeg, (void)size, (void)channels, (void)h, (void)w;
    *pix = NULL;
    return fail(why, why_cap,
                "this manta-infer is built without libjpeg-turbo (MANTA_INFER_NO_JPEG): give a raw "
                "float32 input tensor with --raw (manta-infer MODEL IMAGE.jpg --dump-input FILE "
                "writes one on another machine)",
                NULL);
}
#else
int image_decode_jpeg(const uint8_t *jpeg, size_t size, int C, uint8_t **out, int *oh, int *ow,
                      char *why, size_t why_cap)
{
    *out = NULL;
    if (C != 1 && C != 3) {
        char d[64];
        snprintf(d, sizeof d, "the model takes %d channels", C);
        return fail(why, why_cap, "images can feed 1-channel (gray) or 3-channel (RGB) models", d);
    }
    if (size < 4 || jpeg[0] != 0xff || jpeg[1] != 0xd8)
        return fail(why, why_cap, "not a JPEG file (no start-of-image marker)", NULL);
    if (size > 0x7fffffffu)
        return fail(why, why_cap, "file larger than 2 GiB", NULL);
    tjhandle tj = tjInitDecompress();
    if (!tj)
        return fail(why, why_cap, "TurboJPEG initialisation failed", tjGetErrorStr2(NULL));
    int w, h, subsamp, cs, rc = -1;
    uint8_t *pix = NULL;
    if (tjDecompressHeader3(tj, jpeg, (unsigned long)size, &w, &h, &subsamp, &cs) != 0) {
        fail(why, why_cap, "not a valid JPEG header", tjGetErrorStr2(tj));
        goto done;
    }
    if (cs == TJCS_CMYK || cs == TJCS_YCCK) {
        fail(why, why_cap, "CMYK JPEG: only gray and colour (YCbCr) JPEGs are supported", NULL);
        goto done;
    }
    if (w < 1 || h < 1 || (uint64_t)w * (uint64_t)h > IMAGE_MAX_PIXELS) {
        fail(why, why_cap, "image size out of range (at most 64 Mpixels)", NULL);
        goto done;
    }
    pix = malloc((size_t)w * h * C);
    if (!pix) {
        fail(why, why_cap, "out of memory for the decoded image", NULL);
        goto done;
    }
    if (tjDecompress2(tj, jpeg, (unsigned long)size, pix, w, 0, h, C == 1 ? TJPF_GRAY : TJPF_RGB,
                      TJFLAG_STOPONWARNING) != 0) {
        fail(why, why_cap,
             tjGetErrorCode(tj) == TJERR_WARNING ? "corrupt or truncated JPEG" : "cannot decode",
             tjGetErrorStr2(tj));
        free(pix);
        pix = NULL;
        goto done;
    }
    *out = pix, *oh = h, *ow = w;
    rc = 0;
done:
    tjDestroy(tj);
    return rc;
}
#endif

int image_load_jpeg(const uint8_t *jpeg, size_t size, int r, const image_norm *n, float *out,
                    char *why, size_t why_cap)
{
    const int C = n->channels;
    int w, h, rc = -1;
    uint8_t *pix = NULL, *rs = NULL;
    if (image_decode_jpeg(jpeg, size, C, &pix, &h, &w, why, why_cap) != 0)
        return -1;
    /* shorter side to r, the other keeps the aspect ratio; then the centred square */
    int oh, ow;
    if (h <= w) {
        oh = r;
        ow = (int)fmax(1.0, floor((double)w * r / h + 0.5));
    } else {
        ow = r;
        oh = (int)fmax(1.0, floor((double)h * r / w + 0.5));
    }
    if ((uint64_t)oh * (uint64_t)ow > IMAGE_MAX_PIXELS || !(rs = malloc((size_t)oh * ow * C)) ||
        image_resize_u8(pix, h, w, C, rs, oh, ow) != 0) {
        fail(why, why_cap, "out of memory for the resized image", NULL);
        goto done;
    }
    const int y0 = (oh - r) / 2, x0 = (ow - r) / 2;
    for (int y = 0; y < r; y++)
        for (int x = 0; x < r; x++)
            for (int c = 0; c < C; c++) {
                const float v = rs[(((size_t)(y + y0)) * ow + (size_t)(x + x0)) * C + c] / 255.0f;
                out[((size_t)y * r + x) * C + c] = (v - n->mean[c]) / n->std[c];
            }
    rc = 0;
done:
    free(pix);
    free(rs);
    return rc;
}
