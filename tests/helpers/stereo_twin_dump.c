/* Writes what tools/bench/torch_stereo.py compares with: one stereo sub-network's forward
 * and one training step's gradients as the runtime computes them, as float32 files.
 *
 * Usage: stereo_twin_dump SPACE ARCH OUTDIR [CKPT|-] [ROUND] [PAIRS]
 *   SPACE  a space file or built-in name (stereo_space_load());
 *   ARCH   max, min, sample:SEED or a file with the architecture's JSON;
 *   CKPT   a manta stereo checkpoint whose "params" and "bn_state" are loaded; without one
 *          (or "-"), the network's initial weights with every parameter moved by a little
 *          noise (batch-norm scales and shifts, biases and kernel matrices included) and
 *          batch-norm statistics moved by three training forwards on random pairs;
 *   ROUND  the loss round (default 0); PAIRS the batch (default 2).
 *
 * OUTDIR receives: space.json, arch.json; net.ckpt (sections "meta", "params", "bn_state":
 * the state the passes ran with, in the checkpoint format); input.f32 (2N, 3, H, W: the
 * left views then the right ones, values in [0, 1]); gt<p>.f32 (N, 1, H >> l, W >> l) for
 * every prediction p (l = P - 1 - p; 0 and values above max_disp are invalid pixels);
 * eval<p>.f32: every prediction of a forward with running batch-norm statistics;
 * train<p>.f32, grads.f32 (the parameter slab's layout) and loss.f32 (P x [loss, EPE,
 * valid]): a forward on batch statistics (running ones untouched), the round's multi-scale
 * L1 loss (weights normalised to sum 1, as the trainer) and the backward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/cl.h"
#include "cl/slab.h"
#include "core/container.h"
#include "core/rng.h"
#include "nn/disp_loss.h"
#include "stereo/net.h"
#include "train/checkpoint.h"

#define TRY(x)                      \
    do {                            \
        if ((st = (x)) != MANTA_OK) \
            goto fail;              \
    } while (0)

static int write_file(const char *dir, const char *name, const void *data, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "stereo_twin_dump: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = 0;
    fclose(f);
    return s;
}

/* Download @p n floats of @p v into OUTDIR/name. */
static manta_status dump(mcl_dev *d, mview v, size_t n, const char *dir, const char *name)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    if (!h)
        return MANTA_ERR_NO_MEMORY;
    manta_status st = mcl_read(d, v, h, n);
    if (st == MANTA_OK && write_file(dir, name, h, n * sizeof *h))
        st = MANTA_ERR_IO;
    free(h);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: stereo_twin_dump SPACE ARCH OUTDIR [CKPT|-] [ROUND] [PAIRS]\n");
        return 2;
    }
    const char *dir = argv[3], *ckpt = argc > 4 && strcmp(argv[4], "-") ? argv[4] : NULL;
    const int round = argc > 5 ? atoi(argv[5]) : 0, N = argc > 6 ? atoi(argv[6]) : 2;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = MANTA_OK;
    stereo_space s;
    ofa_arch a;
    mcl_dev *d = NULL;
    stereo_net *n = NULL;
    mcl_device_list *list = malloc(sizeof *list);
    float *host = NULL, *gt = NULL;
    char *text = NULL, buf[8192];
    if (!list)
        return 1;
    if ((st = stereo_space_load(argv[1], &s, &err)) != MANTA_OK)
        goto fail_err;
    if (round < 0 || round >= s.n_rounds || N < 1) {
        fprintf(stderr, "stereo_twin_dump: round %d (the space has %d) or pairs %d\n", round,
                s.n_rounds, N);
        return 2;
    }
    if (!strcmp(argv[2], "max"))
        stereo_arch_max(&s, &a);
    else if (!strcmp(argv[2], "min"))
        stereo_arch_min(&s, &a);
    else if (!strncmp(argv[2], "sample:", 7)) {
        manta_rng r;
        manta_rng_seed(&r, strtoull(argv[2] + 7, NULL, 10), 0x7a1);
        stereo_arch_sample(&s, &r, &a);
    } else {
        char *j = read_text(argv[2]);
        if (!j) {
            fprintf(stderr, "stereo_twin_dump: cannot read %s\n", argv[2]);
            return 2;
        }
        st = stereo_arch_parse(&s, j, &a, &err);
        free(j);
        if (st != MANTA_OK)
            goto fail_err;
    }
    if ((st = stereo_space_to_json(&s, &text, &err)) != MANTA_OK)
        goto fail_err;
    if (write_file(dir, "space.json", text, strlen(text)))
        return 1;
    if ((st = stereo_arch_to_json(&s, &a, buf, sizeof buf, &err)) != MANTA_OK)
        goto fail_err;
    if (write_file(dir, "arch.json", buf, strlen(buf)))
        return 1;

    size_t idx = 0;
    if ((st = mcl_enumerate(list, &err)) != MANTA_OK ||
        (st = mcl_select(list, NULL, &idx, &err)) != MANTA_OK ||
        (st = mcl_open(&list->dev[idx], NULL, &d, &err)) != MANTA_OK)
        goto fail_err;
    TRY(stereo_net_create(d, &s, N, 7, &n));
    TRY(stereo_net_set_arch(n, &a));
    ofa_slabs sl;
    stereo_net_slabs(n, &sl);
    int H, W;
    stereo_net_size(n, &H, &W);
    const size_t in_len = (size_t)2 * N * 3 * H * W;
    const int P = stereo_preds(&s), L = s.n_levels;
    size_t big = sl.n_params > in_len ? sl.n_params : in_len;
    big = sl.n_state > big ? sl.n_state : big;
    host = malloc(big * sizeof *host);
    gt = malloc((size_t)N * H * W * sizeof *gt);
    if (!host || !gt)
        return 1;
    manta_rng r;
    manta_rng_seed(&r, 11, 0x7b);
    if (ckpt) {
        ckpt_reader *cr;
        if ((st = ckpt_open(ckpt, &cr, &err)) != MANTA_OK)
            goto fail_err;
        st = train_ckpt_read_f32_device(cr, "params", d, sl.params, sl.n_params, &err);
        if (st == MANTA_OK)
            st = train_ckpt_read_f32_device(cr, "bn_state", d, sl.state, sl.n_state, &err);
        ckpt_close(cr);
        if (st != MANTA_OK)
            goto fail_err;
    } else {
        TRY(mcl_read(d, sl.params, host, sl.n_params));
        for (size_t i = 0; i < sl.n_params; i++)
            host[i] += 0.1f * (manta_rng_uniform(&r) - 0.5f);
        TRY(mcl_write(d, sl.params, host, sl.n_params));
        for (int k = 0; k < 3; k++) {
            for (size_t i = 0; i < in_len; i++)
                host[i] = manta_rng_uniform(&r);
            TRY(mcl_write(d, stereo_net_input(n), host, in_len));
            TRY(stereo_net_forward(n, sl.params, OFA_BN_TRAIN));
        }
    }
    /* the state the passes run with, for the twin */
    ckpt_writer *w;
    char path[4096];
    snprintf(path, sizeof path, "%s/net.ckpt", dir);
    snprintf(buf, sizeof buf,
             "{\"pairs\": %d, \"height\": %d, \"width\": %d, \"round\": %d, \"n_params\": %zu, "
             "\"n_decay\": %zu, \"n_state\": %zu}",
             N, H, W, round, sl.n_params, sl.n_decay, sl.n_state);
    if ((st = ckpt_writer_begin(path, NULL, &w, &err)) != MANTA_OK)
        goto fail_err;
    ckpt_add_json(w, "meta", buf);
    train_ckpt_add_f32_device(w, "params", d, sl.params, sl.n_params);
    train_ckpt_add_f32_device(w, "bn_state", d, sl.state, sl.n_state);
    if ((st = ckpt_writer_commit(w)) != MANTA_OK)
        goto fail_err;

    for (size_t i = 0; i < in_len; i++)
        host[i] = manta_rng_uniform(&r);
    if (write_file(dir, "input.f32", host, in_len * sizeof *host))
        return 1;
    TRY(mcl_write(d, stereo_net_input(n), host, in_len));
    TRY(stereo_net_forward(n, sl.params, OFA_BN_EVAL));
    for (int p = 0; p < P; p++) {
        const int l = L - p;
        snprintf(path, sizeof path, "eval%d.f32", p);
        TRY(dump(d, stereo_net_pred(n, p), (size_t)N * (H >> l) * (W >> l), dir, path));
    }

    TRY(mcl_fill(d, sl.grads, 0.0f, sl.n_params));
    TRY(stereo_net_forward(n, sl.params, OFA_BN_BATCH_ONLY));
    /* ground truth per prediction, the loss and its gradients on the device */
    nn_disp_loss_shape fs = {N, H, W};
    size_t scr = nn_disp_loss_scratch_floats(d, &fs) + 1;
    mslab ws;
    TRY(mslab_create(d, &ws, (size_t)N * H * W + (size_t)P * NN_DISP_LOSS_RESULT + scr,
                     "twin loss"));
    mview vgt = mslab_view(&ws, 0), vres = mslab_view(&ws, (size_t)N * H * W);
    mview vscr = mslab_view(&ws, (size_t)N * H * W + (size_t)P * NN_DISP_LOSS_RESULT);
    double sum = 0;
    for (int p = 0; p < P; p++)
        sum += s.loss_w[round][p];
    TRY(mcl_fill(d, vres, 0.0f, (size_t)P * NN_DISP_LOSS_RESULT));
    for (int p = 0; p < P; p++) {
        const int l = L - p;
        const size_t len = (size_t)N * (H >> l) * (W >> l);
        for (size_t i = 0; i < len; i++) {
            float u = manta_rng_uniform(&r);
            gt[i] = u < 0.1f ? 0.0f : 1.2f * (float)s.max_disp * manta_rng_uniform(&r);
        }
        snprintf(path, sizeof path, "gt%d.f32", p);
        if (write_file(dir, path, gt, len * sizeof *gt))
            return 1;
        const float wt = (float)(s.loss_w[round][p] / sum);
        if (wt <= 0.0f)
            continue;
        TRY(mcl_write(d, vgt, gt, len));
        nn_disp_loss_shape ps = {N, H >> l, W >> l};
        nn_disp_loss_params lp = {NN_DISP_LOSS_L1, wt, (float)s.max_disp, 0.0f};
        TRY(nn_disp_loss(d, &ps, &lp, stereo_net_pred(n, p), vgt,
                         mview_at(vres, (size_t)p * NN_DISP_LOSS_RESULT), stereo_net_dpred(n, p),
                         vscr));
    }
    for (int p = 0; p < P; p++) {
        const int l = L - p;
        snprintf(path, sizeof path, "train%d.f32", p);
        TRY(dump(d, stereo_net_pred(n, p), (size_t)N * (H >> l) * (W >> l), dir, path));
    }
    TRY(stereo_net_backward(n));
    TRY(dump(d, sl.grads, sl.n_params, dir, "grads.f32"));
    TRY(dump(d, vres, (size_t)P * NN_DISP_LOSS_RESULT, dir, "loss.f32"));
    mslab_destroy(d, &ws);
    stereo_net_destroy(n);
    mcl_close(d);
    free(list), free(host), free(gt), free(text);
    printf("stereo_twin_dump: %s, %s: %dx%d, %d pairs, %zu parameters -> %s\n", s.name, buf, W, H,
           N, sl.n_params, dir);
    return 0;
fail:
    fprintf(stderr, "stereo_twin_dump: %s\n", d ? mcl_err(d)->msg : "failed");
    return 1;
fail_err:
    fprintf(stderr, "stereo_twin_dump: %s\n", err.msg);
    return 1;
}
