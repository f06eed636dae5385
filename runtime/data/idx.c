#include "data/idx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Largest dimension accepted from a header: keeps count*rows*cols in range. */
#define IDX_MAX_COUNT 100000000u
#define IDX_MAX_SIDE 65536u

typedef struct reader {
    gzFile f;
    const char *path;
} reader;

static manta_status rd_open(reader *r, const char *path, manta_err *err)
{
    r->path = path;
    r->f = gzopen(path, "rb"); /* also reads uncompressed files */
    if (!r->f)
        return manta_err_set(err, MANTA_ERR_IO, "%s: cannot open: %s", path,
                             errno ? strerror(errno) : "out of memory");
    return MANTA_OK;
}

static manta_status rd_bytes(reader *r, void *buf, size_t n, const char *what, manta_err *err)
{
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        int got = gzread(r->f, p, chunk);
        if (got < 0) {
            int zerr = 0;
            const char *m = gzerror(r->f, &zerr);
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: corrupt data reading %s: %s", r->path,
                                 what, m);
        }
        if (got == 0)
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: truncated: file ends inside %s",
                                 r->path, what);
        p += got;
        n -= (size_t)got;
    }
    return MANTA_OK;
}

static manta_status rd_u32(reader *r, uint32_t *v, const char *what, manta_err *err)
{
    unsigned char b[4];
    manta_status st = rd_bytes(r, b, 4, what, err);
    *v = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
    return st;
}

static manta_status read_header(reader *r, uint32_t magic, uint32_t *dims, int ndims,
                                manta_err *err)
{
    uint32_t m;
    manta_status st = rd_u32(r, &m, "the header", err);
    if (st != MANTA_OK)
        return st;
    if (m != magic)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: not an IDX %s file (magic 0x%08x, expected 0x%08x)", r->path,
                             ndims == 3 ? "image" : "label", m, magic);
    for (int i = 0; i < ndims && st == MANTA_OK; i++) {
        st = rd_u32(r, &dims[i], "the header", err);
        if (st == MANTA_OK && (dims[i] == 0 || dims[i] > (i == 0 ? IDX_MAX_COUNT : IDX_MAX_SIDE)))
            return manta_err_set(err, MANTA_ERR_FORMAT, "%s: dimension %d is %u (out of range)",
                                 r->path, i, dims[i]);
    }
    return st;
}

manta_status data_idx_load(const char *images_path, const char *labels_path, idx_set *out,
                           manta_err *err)
{
    memset(out, 0, sizeof *out);
    reader ri = {NULL, images_path}, rl = {NULL, labels_path};
    uint32_t idim[3], ldim[1];
    uint8_t *images = NULL, *labels = NULL;
    manta_status st = rd_open(&ri, images_path, err);
    if (st == MANTA_OK)
        st = rd_open(&rl, labels_path, err);
    if (st == MANTA_OK)
        st = read_header(&ri, 0x00000803u, idim, 3, err);
    if (st == MANTA_OK)
        st = read_header(&rl, 0x00000801u, ldim, 1, err);
    if (st == MANTA_OK && idim[0] != ldim[0])
        st = manta_err_set(err, MANTA_ERR_FORMAT, "%s has %u images but %s has %u labels",
                           images_path, idim[0], labels_path, ldim[0]);
    size_t n_img = 0;
    if (st == MANTA_OK) {
        n_img = (size_t)idim[0] * idim[1] * idim[2];
        images = malloc(n_img);
        labels = malloc(ldim[0]);
        if (!images || !labels)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory for %zu bytes",
                               images_path, n_img);
    }
    if (st == MANTA_OK)
        st = rd_bytes(&ri, images, n_img, "the image data", err);
    if (st == MANTA_OK)
        st = rd_bytes(&rl, labels, ldim[0], "the label data", err);
    if (ri.f)
        gzclose(ri.f);
    if (rl.f)
        gzclose(rl.f);
    if (st != MANTA_OK) {
        free(images);
        free(labels);
        return st;
    }
    int classes = 0;
    for (uint32_t i = 0; i < ldim[0]; i++)
        if (labels[i] + 1 > classes)
            classes = labels[i] + 1;
    out->count = (int)idim[0];
    out->rows = (int)idim[1];
    out->cols = (int)idim[2];
    out->classes = classes;
    out->images = images;
    out->labels = labels;
    return MANTA_OK;
}

manta_status data_idx_load_split(const char *dir, const char *split, idx_set *out, manta_err *err)
{
    char ip[1024], lp[1024];
    int a = snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, split);
    int b = snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, split);
    if (a < 0 || b < 0 || (size_t)a >= sizeof ip || (size_t)b >= sizeof lp)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "data directory path too long: %s", dir);
    return data_idx_load(ip, lp, out, err);
}

void data_idx_free(idx_set *s)
{
    if (!s)
        return;
    free(s->images);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

void data_idx_batch(const idx_set *s, const int *index, int n, float mean, float std, float *images,
                    float *labels)
{
    const size_t px = (size_t)s->rows * s->cols;
    const float scale = 1.0f / (255.0f * std), shift = mean / std;
    for (int b = 0; b < n; b++) {
        const uint8_t *src = s->images + (size_t)index[b] * px;
        float *dst = images + (size_t)b * px;
        for (size_t i = 0; i < px; i++)
            dst[i] = (float)src[i] * scale - shift;
        labels[b] = (float)s->labels[index[b]];
    }
}
