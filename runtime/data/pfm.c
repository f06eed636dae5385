#include "data/pfm.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/le.h"

/* Largest side accepted. */
#define PFM_MAX_SIDE (1 << 20)

/* Skip whitespace at p (bounded by end). */
static size_t skip_space(const char *b, size_t p, size_t end)
{
    while (p < end && isspace((unsigned char)b[p]))
        p++;
    return p;
}

/* A decimal integer in [1, PFM_MAX_SIDE] at p; -1 when there is none. */
static long read_side(const char *b, size_t *p, size_t end)
{
    long v = 0;
    size_t q = *p;
    while (q < end && isdigit((unsigned char)b[q]) && v <= PFM_MAX_SIDE)
        v = v * 10 + (b[q++] - '0');
    if (q == *p || v < 1 || v > PFM_MAX_SIDE)
        return -1;
    *p = q;
    return v;
}

manta_status pfm_read(const char *path, float **data, int *height, int *width, int *channels,
                      manta_err *err)
{
    *data = NULL;
    *height = *width = *channels = 0;
    char *b = NULL;
    size_t len = 0;
    MANTA_TRY(manta_file_read(path, PFM_MAX_BYTES, &b, &len, err));
    manta_status st = MANTA_OK;
    /* the header lies in the first bytes; bound the text scan */
    const size_t hend = len < 256 ? len : 256;
    size_t p = 0;
    int ch = 0;
    long w = -1, h = -1;
    double scale = 0.0;
    if (len >= 2 && b[0] == 'P' && (b[1] == 'F' || b[1] == 'f'))
        ch = b[1] == 'F' ? 3 : 1;
    if (!ch) {
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s: not a PFM file (no \"PF\" or \"Pf\" header)",
                           path);
        goto done;
    }
    p = skip_space(b, 2, hend);
    if (p > 2)
        w = read_side(b, &p, hend);
    size_t q = skip_space(b, p, hend);
    if (w > 0 && q > p) {
        p = q;
        h = read_side(b, &p, hend);
    }
    if (w < 1 || h < 1) {
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: PFM header has no valid width and height (each in [1, %d])", path,
                           PFM_MAX_SIDE);
        goto done;
    }
    q = skip_space(b, p, hend);
    {
        /* the scale: copy its characters out, so that parsing cannot run into the floats */
        char num[64];
        size_t n = 0;
        while (q + n < hend && n < sizeof num - 1 && !isspace((unsigned char)b[q + n]))
            n++;
        memcpy(num, b + q, n);
        num[n] = '\0';
        char *endp = NULL;
        scale = n > 0 && q > p ? strtod(num, &endp) : 0.0;
        if (n == 0 || q == p || !endp || *endp != '\0' || !isfinite(scale) || scale == 0.0 ||
            q + n >= hend || !isspace((unsigned char)b[q + n])) {
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: PFM scale '%s' is not a nonzero number followed by one "
                               "whitespace byte",
                               path, num);
            goto done;
        }
        p = q + n + 1; /* exactly one whitespace byte ends the header */
    }
    {
        const size_t count = (size_t)w * (size_t)h * (size_t)ch;
        const size_t have = len - p;
        if (count > have / 4 || have != count * 4) {
            st = manta_err_set(err, MANTA_ERR_FORMAT,
                               "%s: %zu bytes of float data, expected %zu (%ldx%ld, %d channel%s)",
                               path, have, count * 4, w, h, ch, ch == 1 ? "" : "s");
            goto done;
        }
        float *out = malloc(count * sizeof *out);
        if (!out) {
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %zu floats", path,
                               count);
            goto done;
        }
        const int little = scale < 0.0;
        const size_t row = (size_t)w * ch;
        const unsigned char *src = (const unsigned char *)b + p;
        for (long y = 0; y < h; y++) { /* file row y is image row h - 1 - y */
            const unsigned char *s = src + (size_t)y * row * 4;
            float *d = out + (size_t)(h - 1 - y) * row;
            for (size_t i = 0; i < row; i++) {
                const unsigned char *v = s + 4 * i;
                uint32_t u = little ? manta_le_get32(v)
                                    : (uint32_t)v[0] << 24 | (uint32_t)v[1] << 16 |
                                          (uint32_t)v[2] << 8 | v[3];
                memcpy(&d[i], &u, 4);
            }
        }
        *data = out;
        *height = (int)h;
        *width = (int)w;
        *channels = ch;
    }
done:
    free(b);
    return st;
}

manta_status pfm_write(const char *path, const float *data, int height, int width, int channels,
                       manta_err *err)
{
    if (channels != 1 && channels != 3)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: PFM channels is %d (must be 1 or 3)",
                             path, channels);
    if (height < 1 || width < 1 || height > PFM_MAX_SIDE || width > PFM_MAX_SIDE)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: PFM size %dx%d is outside [1, %d] per side", path, width, height,
                             PFM_MAX_SIDE);
    char head[64];
    int hl =
        snprintf(head, sizeof head, "P%c\n%d %d\n-1\n", channels == 3 ? 'F' : 'f', width, height);
    const size_t row = (size_t)width * channels, count = row * (size_t)height;
    const size_t total = (size_t)hl + count * 4;
    unsigned char *buf = malloc(total);
    if (!buf)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %zu bytes", path,
                             total);
    memcpy(buf, head, (size_t)hl);
    unsigned char *dst = buf + hl;
    for (int y = 0; y < height; y++) { /* bottom row first */
        const float *s = data + (size_t)(height - 1 - y) * row;
        for (size_t i = 0; i < row; i++) {
            uint32_t u;
            memcpy(&u, &s[i], 4);
            manta_le_put32(dst, u);
            dst += 4;
        }
    }
    manta_status st = manta_file_write_atomic(path, buf, total, err);
    free(buf);
    return st;
}
