#include "data/dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"

const char *const data_set_fashion_mnist_classes[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot",
};

/* PCG stream of the split permutation (any fixed odd-making value). */
#define SPLIT_STREAM 0x73706c6974ULL /* "split" */

/* Allocate names (copies of @p names, or decimal numbers when NULL). */
static char **make_names(const char *const *names, int classes)
{
    char **out = calloc((size_t)classes, sizeof *out);
    if (!out)
        return NULL;
    for (int k = 0; k < classes; k++) {
        char num[16];
        snprintf(num, sizeof num, "%d", k);
        out[k] = strdup(names ? names[k] : num);
        if (!out[k]) {
            for (int j = 0; j < k; j++)
                free(out[j]);
            free(out);
            return NULL;
        }
    }
    return out;
}

/* Allocate offset/height/width/labels for count images of one size. */
static int alloc_index(dataset *d, int count, int h, int w, int channels)
{
    d->offset = malloc((size_t)count * sizeof *d->offset);
    d->height = malloc((size_t)count * sizeof *d->height);
    d->width = malloc((size_t)count * sizeof *d->width);
    d->labels = calloc((size_t)count, sizeof *d->labels);
    if (!d->offset || !d->height || !d->width || !d->labels)
        return 0;
    size_t sz = (size_t)h * w * channels;
    for (int i = 0; i < count; i++) {
        d->offset[i] = (size_t)i * sz;
        d->height[i] = h;
        d->width[i] = w;
    }
    d->count = count;
    d->channels = channels;
    d->stored_size = h < w ? h : w;
    return 1;
}

manta_status data_set_init_fixed(dataset *out, int count, int h, int w, int channels, int classes,
                                 manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (count <= 0 || h <= 0 || w <= 0 || h > 65535 || w > 65535)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "dataset: %d images of %dx%d: count and sides must be positive", count,
                             h, w);
    if (channels != 1 && channels != 3)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "dataset: channels is %d (must be 1 or 3)",
                             channels);
    if (classes <= 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "dataset: classes is %d (must be > 0)",
                             classes);
    size_t bytes = (size_t)count * h * w * channels;
    out->pixels = calloc(bytes, 1);
    out->class_names = make_names(NULL, classes);
    out->classes = classes;
    if (!out->pixels || !out->class_names || !alloc_index(out, count, h, w, channels)) {
        data_set_free(out);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "dataset: out of memory for %zu bytes",
                             bytes);
    }
    return MANTA_OK;
}

manta_status data_set_from_idx(idx_set *s, const char *const *names, int n_names, dataset *out,
                               manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (!s->images || s->count <= 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "dataset: the IDX set is empty");
    int classes = names ? n_names : s->classes;
    if (names && (n_names <= 0 || s->classes > n_names))
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "dataset: IDX labels reach %d but only %d class names were given",
                             s->classes - 1, n_names);
    out->class_names = make_names(names, classes);
    out->classes = classes;
    if (!out->class_names || !alloc_index(out, s->count, s->rows, s->cols, 1)) {
        data_set_free(out);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "dataset: out of memory for %d images",
                             s->count);
    }
    for (int i = 0; i < s->count; i++)
        out->labels[i] = s->labels[i];
    out->pixels = s->images; /* (count, rows, cols) is HWC with one channel */
    s->images = NULL;
    data_idx_free(s);
    return MANTA_OK;
}

manta_status data_set_load_fashion_mnist(const char *dir, const char *split, dataset *out,
                                         manta_err *err)
{
    idx_set s;
    memset(out, 0, sizeof *out);
    manta_status st = data_idx_load_split(dir, split, &s, err);
    if (st != MANTA_OK)
        return st;
    st = data_set_from_idx(&s, data_set_fashion_mnist_classes, 10, out, err);
    data_idx_free(&s);
    return st;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

manta_status data_set_split(const dataset *d, int n_val, uint64_t seed, data_split *out,
                            manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (n_val < 0 || n_val > d->count)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "dataset split: %d validation images asked of a set of %d", n_val,
                             d->count);
    int n = d->count;
    int *perm = malloc((size_t)n * sizeof *perm);
    out->val = malloc((size_t)(n_val > 0 ? n_val : 1) * sizeof *out->val);
    out->train = malloc((size_t)(n - n_val > 0 ? n - n_val : 1) * sizeof *out->train);
    if (!perm || !out->val || !out->train) {
        free(perm);
        data_set_split_free(out);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY,
                             "dataset split: out of memory for %d indices", n);
    }
    for (int i = 0; i < n; i++)
        perm[i] = i;
    manta_rng r;
    manta_rng_seed(&r, seed, SPLIT_STREAM);
    for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int j = (int)manta_rng_below(&r, (uint32_t)i + 1);
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    memcpy(out->val, perm, (size_t)n_val * sizeof *perm);
    memcpy(out->train, perm + n_val, (size_t)(n - n_val) * sizeof *perm);
    free(perm);
    out->n_val = n_val;
    out->n_train = n - n_val;
    qsort(out->val, (size_t)out->n_val, sizeof *out->val, cmp_int);
    qsort(out->train, (size_t)out->n_train, sizeof *out->train, cmp_int);
    return MANTA_OK;
}

void data_set_split_free(data_split *s)
{
    if (!s)
        return;
    free(s->train);
    free(s->val);
    memset(s, 0, sizeof *s);
}

manta_status data_set_channel_stats(const dataset *d, const int *index, int n, float *mean,
                                    float *std, manta_err *err)
{
    int total = index ? n : d->count;
    if (total <= 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "dataset stats: no images given");
    double s1[3] = {0, 0, 0}, s2[3] = {0, 0, 0};
    double px = 0;
    const int c = d->channels;
    for (int k = 0; k < total; k++) {
        int i = index ? index[k] : k;
        if (i < 0 || i >= d->count)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "dataset stats: index %d at position %d is outside [0, %d)", i, k,
                                 d->count);
        const uint8_t *p = dataset_image(d, i);
        size_t np = (size_t)d->height[i] * d->width[i];
        for (size_t q = 0; q < np; q++)
            for (int ch = 0; ch < c; ch++) {
                double v = p[q * c + ch] / 255.0;
                s1[ch] += v;
                s2[ch] += v * v;
            }
        px += (double)np;
    }
    for (int ch = 0; ch < c; ch++) {
        double m = s1[ch] / px, var = s2[ch] / px - m * m;
        mean[ch] = (float)m;
        std[ch] = (float)sqrt(var > 0 ? var : 0);
    }
    return MANTA_OK;
}

void data_set_free(dataset *d)
{
    if (!d)
        return;
    if (d->class_names)
        for (int k = 0; k < d->classes; k++)
            free(d->class_names[k]);
    free(d->class_names);
    free(d->pixels);
    free(d->offset);
    free(d->height);
    free(d->width);
    free(d->labels);
    memset(d, 0, sizeof *d);
}
