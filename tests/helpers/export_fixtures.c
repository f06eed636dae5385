/* Writes the fixtures of tests/integration/export_infer.sh into a folder:
 * models (the colour classifier, random RGB and gray networks, broken
 * copies) and JPEGs made with tjCompress2 (solid colours of several shapes,
 * gray, CMYK, truncated, not a JPEG, empty).
 * Usage: export_fixtures DIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "common/xgrand.h"
#include "export/tflite.h"

static int write_bytes(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "export_fixtures: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* A w x h JPEG of one colour (plus a little texture), pixel format pf, maybe cut short. */
static int jpeg(const char *dir, const char *name, int w, int h, int pf, const unsigned char *rgb,
                long cut)
{
    const int ps = tjPixelSize[pf];
    unsigned char *pix = malloc((size_t)w * h * ps), *out = NULL;
    unsigned long size = 0;
    tjhandle tj = tjInitCompress();
    int rc = 1;
    if (!pix || !tj)
        goto done;
    for (int i = 0; i < w * h; i++)
        for (int c = 0; c < ps; c++)
            pix[(size_t)i * ps + c] = (unsigned char)(rgb[c] ^ ((i * 7 + c) & 3));
    if (tjCompress2(tj, pix, w, 0, h, pf, &out, &size, pf == TJPF_GRAY ? TJSAMP_GRAY : TJSAMP_444,
                    95, 0) != 0) {
        fprintf(stderr, "export_fixtures: %s: %s\n", name, tjGetErrorStr2(tj));
        goto done;
    }
    /* cut > 0: keep that many bytes; cut < 0: drop -cut bytes from the end */
    const unsigned long keep = cut > 0   ? (unsigned long)cut
                               : cut < 0 ? size - (unsigned long)-cut
                                         : size;
    rc = write_bytes(dir, name, out, keep < size ? keep : size);
done:
    tjFree(out);
    free(pix);
    if (tj)
        tjDestroy(tj);
    return rc;
}

static int model(const char *dir, const char *name, xgraph *g)
{
    char path[4096];
    manta_err err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    manta_status st = tflite_write_file(g, path, NULL, NULL, &err);
    xgraph_free(g);
    if (st != MANTA_OK)
        fprintf(stderr, "export_fixtures: %s: %s\n", path, manta_err_msg(&err, st));
    return st != MANTA_OK;
}

/* A copy of model @p from whose first (1, 8, 8, 3) shape vector says (1, 7, 8, 3):
 * structurally sound, but the convolution's output shape no longer follows. */
static int bad_shape(const char *dir, const char *from, const char *to)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, from);
    FILE *f = fopen(path, "rb");
    unsigned char buf[1 << 16];
    const size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    static const int32_t shape[5] = {4, 1, 8, 8, 3};
    for (size_t i = 0; i + sizeof shape <= n; i += 4)
        if (memcmp(buf + i, shape, sizeof shape) == 0) {
            const int32_t seven = 7;
            memcpy(buf + i + 8, &seven, 4);
            return write_bytes(dir, to, buf, n);
        }
    fprintf(stderr, "export_fixtures: no (1, 8, 8, 3) shape in %s\n", path);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: export_fixtures DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    manta_err err;
    manta_rng rng;
    xgraph g;
    int bad = 0;
    manta_rng_seed(&rng, 77, 1);
    if (xgr_color_classifier(&g, 8, &err) != MANTA_OK)
        return fprintf(stderr, "export_fixtures: %s\n", err.msg), 1;
    bad |= model(dir, "color.tflite", &g);
    bad |= bad_shape(dir, "color.tflite", "badshape.tflite");
    /* labels that JSON must escape, read back by manta-infer's own parser */
    if (xgr_color_classifier(&g, 8, &err) != MANTA_OK)
        return fprintf(stderr, "export_fixtures: %s\n", err.msg), 1;
    free(g.pre.labels[0]);
    g.pre.labels[0] = strdup("r\xc3\xa9"
                             "d \"q\" \\ \t/");
    bad |= !g.pre.labels[0] || model(dir, "escaped.tflite", &g);
    const xgr_opts rgb = {12, 3, 5, 4}, gray = {9, 1, 4, 3};
    if (xgr_random(&g, &rng, &rgb, &err) != MANTA_OK)
        return fprintf(stderr, "export_fixtures: %s\n", err.msg), 1;
    bad |= model(dir, "random_rgb.tflite", &g);
    if (xgr_random(&g, &rng, &gray, &err) != MANTA_OK)
        return fprintf(stderr, "export_fixtures: %s\n", err.msg), 1;
    bad |= model(dir, "random_gray.tflite", &g);

    static const unsigned char red[4] = {250, 10, 10, 0}, green[4] = {10, 240, 20, 0},
                               blue[4] = {20, 20, 230, 0}, mid[4] = {128, 0, 0, 0},
                               cmyk[4] = {10, 200, 200, 10};
    bad |= jpeg(dir, "red.jpg", 40, 30, TJPF_RGB, red, 0);
    bad |= jpeg(dir, "green.jpg", 17, 64, TJPF_RGB, green, 0);      /* tall */
    bad |= jpeg(dir, "blue.jpg", 5, 5, TJPF_RGB, blue, 0);          /* enlarged */
    bad |= jpeg(dir, "gray.jpg", 33, 21, TJPF_GRAY, mid, 0);        /* 1 channel */
    bad |= jpeg(dir, "cmyk.jpg", 16, 16, TJPF_CMYK, cmyk, 0);       /* 4 channels */
    bad |= jpeg(dir, "truncated.jpg", 64, 64, TJPF_RGB, red, -200); /* inside the scan */
    bad |= jpeg(dir, "header_only.jpg", 64, 64, TJPF_RGB, red, 300);
    static const unsigned char png[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    bad |= write_bytes(dir, "notjpeg.jpg", png, sizeof png);
    bad |= write_bytes(dir, "empty.jpg", png, 0);
    return bad;
}
