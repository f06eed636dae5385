/* manta eval --ckpt STEREO.ckpt: EPE, bad-1/2/3 and D1 (all and non-occluded pixels) of a
 * sub-network of a trained stereo supernet, on its run's held-out procedural pairs or a
 * folder of pairs, with colour-mapped disparity and error images of a few pairs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/fileio.h"
#include "data/png_io.h"
#include "stereo/state.h"

typedef struct ev_opts {
    const char *ckpt, *arch, *data, *images, *device;
    long pairs, recal, show;
    bool json;
} ev_opts;

/* The left view of pair @p k of @p b as interleaved RGB bytes. */
static void left_rgb(const stereo_batch *b, int k, uint8_t *rgb)
{
    size_t plane = (size_t)b->height * (size_t)b->width;
    const float *v = b->left + (size_t)k * 3 * plane;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            float x = v[(size_t)c * plane + i];
            rgb[3 * i + (size_t)c] = (uint8_t)(x <= 0 ? 0 : x >= 1 ? 255 : x * 255.0f + 0.5f);
        }
}

/* Four PNGs of pair @p k of the last batch: left view, true and predicted disparity, error. */
static manta_status write_images(const ev_opts *o, const stereo_space *sp,
                                 const stereo_batch *b, int k, long index, const float *pred,
                                 manta_err *err)
{
    size_t plane = (size_t)b->height * (size_t)b->width;
    uint8_t *rgb = malloc(3 * plane);
    if (!rgb)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "images: out of memory");
    stereo_pair gt = {.height = b->height, .width = b->width,
                      .disp = b->gt[0] + (size_t)k * plane, .mask = b->mask + (size_t)k * plane,
                      .has_noc = b->has_noc};
    static const char *const kinds[] = {"left", "gt", "pred", "error"};
    manta_status st = MANTA_OK;
    for (int i = 0; i < 4 && st == MANTA_OK; i++) {
        if (i == 0)
            left_rgb(b, k, rgb);
        else if (i == 3)
            stereo_error_colorize(pred, &gt, rgb);
        else
            stereo_disp_colorize(i == 1 ? gt.disp : pred, i == 1 ? gt.mask : NULL, b->height,
                                 b->width, (float)sp->max_disp, rgb);
        char path[1200];
        snprintf(path, sizeof path, "%s/%04ld_%s.png", o->images, index, kinds[i]);
        st = mpng_write_rgb8(path, rgb, b->height, b->width, err);
    }
    free(rgb);
    return st;
}

static void print_scores(const char *what, const stereo_scores *s, bool json)
{
    if (json) {
        printf("\"%s\":{\"epe\":%.6f,\"bad1\":%.4f,\"bad2\":%.4f,\"bad3\":%.4f,\"d1\":%.4f,"
               "\"pixels\":%ld}",
               what, s->epe, s->bad1, s->bad2, s->bad3, s->d1, s->pixels);
        return;
    }
    printf("%-4s EPE %.3f px  bad-1 %.2f%%  bad-2 %.2f%%  bad-3 %.2f%%  D1 %.2f%%  (%ld pixels)\n",
           what, s->epe, s->bad1, s->bad2, s->bad3, s->d1, s->pixels);
}

/* Median over 5 runs (after one) of an eval-mode forward of the sub-network set last and
 * the input there, per pair, in ms. */
static manta_status time_forward(mcl_dev *d, stereo_trainer *t, double *ms_per_pair)
{
    stereo_net *n = stereo_trainer_net(t);
    ofa_slabs sl;
    stereo_net_slabs(n, &sl);
    double ms[5];
    for (int i = -1; i < 5; i++) {
        double t0 = cmd_now();
        MANTA_TRY(stereo_net_forward(n, sl.params, OFA_BN_EVAL));
        MANTA_TRY(mcl_finish(d));
        if (i >= 0)
            ms[i] = (cmd_now() - t0) * 1e3;
    }
    for (int i = 1; i < 5; i++) /* insertion sort */
        for (int j = i; j > 0 && ms[j] < ms[j - 1]; j--) {
            double x = ms[j];
            ms[j] = ms[j - 1], ms[j - 1] = x;
        }
    *ms_per_pair = ms[2] / stereo_net_batch(n);
    return MANTA_OK;
}

/* Evaluate with the trainer of the checkpoint; the figures into *all and *noc. */
static manta_status run(const ev_opts *o, mcl_dev *d, stereo_trainer *t, const stereo_space *sp,
                        const stereo_meta *m, const ofa_arch *a, stereo_scores *all,
                        stereo_scores *noc, double *ms_per_pair, manta_err *err)
{
    stereo_source eval_src, recal_src;
    stereo_set set = {0};
    bool folder = strcmp(o->data, "synthetic") != 0;
    if (folder) {
        MANTA_TRY(stereo_folder_open(o->data, STEREO_LAYOUT_AUTO, &set, err));
        eval_src = (stereo_source){.kind = STEREO_SOURCE_FOLDER, .count = set.count, .set = &set};
    } else {
        stereo_heldout_source(sp, m->seed, o->pairs, &eval_src);
    }
    recal_src = (stereo_source){.kind = STEREO_SOURCE_SYNTH, .count = m->train_pairs};
    stereo_synth_opts_default(&recal_src.synth, sp->crop_w, sp->crop_h, (float)sp->max_disp,
                              m->seed);
    long pairs = folder && o->pairs > set.count ? set.count : o->pairs;
    stereo_batch b;
    float *pred = malloc((size_t)pairs * sp->crop_h * sp->crop_w * sizeof *pred);
    manta_status st = pred ? stereo_batch_alloc(&b, m->batch, sp->crop_h, sp->crop_w,
                                                stereo_preds(sp), err)
                           : manta_err_set(err, MANTA_ERR_NO_MEMORY, "eval: out of memory");
    stereo_metrics mt = {0};
    if (st == MANTA_OK &&
        (st = stereo_trainer_evaluate(t, a, &b, stereo_ordered_batch, &recal_src, o->recal,
                                      stereo_ordered_batch, &eval_src, pairs, &mt, pred)) !=
            MANTA_OK)
        *err = *mcl_err(d);
    stereo_metrics_scores(&mt, all, noc);
    if (st == MANTA_OK)
        st = time_forward(d, t, ms_per_pair);
    /* images of the first pairs: fill their batch again (deterministic) */
    if (st == MANTA_OK && o->images && o->show > 0) {
        st = manta_file_mkdir_p(o->images, err);
        size_t plane = (size_t)sp->crop_h * sp->crop_w;
        for (long i = 0; i < o->show && i < pairs && st == MANTA_OK; i++) {
            int count;
            if (i % b.n == 0)
                st = stereo_ordered_batch(&eval_src, i / b.n, &b, &count, err);
            if (st == MANTA_OK)
                st = write_images(o, sp, &b, (int)(i % b.n), i, pred + (size_t)i * plane, err);
        }
    }
    if (pred) /* the batch was allocated (or zeroed by a failed allocation) */
        stereo_batch_free(&b);
    free(pred);
    if (folder)
        stereo_set_free(&set);
    return st;
}

int cmd_eval_stereo(int argc, char **argv)
{
    ev_opts o = {.arch = "max", .data = "synthetic", .pairs = 200, .recal = 200, .show = 4};
    const opt_def defs[] = {
        {.name = "ckpt", .kind = OPT_STRING, .dest = &o.ckpt, .metavar = "FILE",
         .help = "a checkpoint of manta train on a stereo space (required)"},
        {.name = "arch", .kind = OPT_STRING, .dest = &o.arch, .metavar = "ARCH",
         .help = "max (default), min or a file in OFA's encoding"},
        {.name = "data", .kind = OPT_STRING, .dest = &o.data, .metavar = "D",
         .help = "synthetic (default: the run's held-out pairs) or a KITTI / Middlebury folder"},
        {.name = "pairs", .kind = OPT_LONG, .dest = &o.pairs, .lo = 1, .hi = 1e7, .metavar = "N",
         .help = "pairs evaluated (default 200; a folder: at most its pairs)"},
        {.name = "recal-pairs", .kind = OPT_LONG, .dest = &o.recal, .lo = 0, .hi = 1e7,
         .metavar = "N", .help = "training pairs for BN re-calibration (default 200)"},
        {.name = "images", .kind = OPT_STRING, .dest = &o.images, .metavar = "DIR",
         .help = "write left view, true and predicted disparity and error PNGs there"},
        {.name = "show", .kind = OPT_LONG, .dest = &o.show, .lo = 0, .hi = 1000, .metavar = "K",
         .help = "pairs written to --images (default 4)"},
        {.name = "device", .kind = OPT_STRING, .dest = &o.device, .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o.json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta eval",
        "--ckpt STEREO.ckpt [--arch max|min|ARCH] [--data D] [--pairs N] [--images DIR]\n"
        "                  [--json]",
        "Disparity quality of a sub-network of a trained stereo supernet: its batch-norm\n"
        "statistics re-calibrated on training pairs, then EPE (mean absolute error, px),\n"
        "bad-1/2/3 (% of pixels off by more than 1, 2, 3 px) and D1 (% off by more than 3 px\n"
        "and 5%) over every valid pixel and over the non-occluded ones, on the run's held-out\n"
        "procedural pairs or crops (the network's size) of a folder's pairs. --images writes\n"
        "colour-mapped disparities (dark blue = 0 to dark red = max_disp) and an error map\n"
        "(black < 1 px, blue 1-2, green 2-3, yellow 3-5, red > 5, gray: no ground truth).\n",
        defs, 0, 0};
    int first;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK)
        return pr == OPT_HELP ? 0 : 2;
    if (!o.ckpt) {
        fprintf(stderr, "manta eval: --ckpt FILE is required\n");
        return 2;
    }
    manta_err err = {0};
    stereo_space sp;
    stereo_meta m;
    ofa_schedule sched;
    ofa_arch a;
    manta_status st = stereo_state_peek(o.ckpt, &sp, &m, &err);
    if (st == MANTA_OK)
        st = stereo_schedule_preset(&sp, m.preset, m.batch, 1, &sched, &err);
    if (st == MANTA_OK && !strcmp(o.arch, "max"))
        stereo_arch_max(&sp, &a);
    else if (st == MANTA_OK && !strcmp(o.arch, "min"))
        stereo_arch_min(&sp, &a);
    else if (st == MANTA_OK) {
        char *text = NULL;
        size_t len;
        st = manta_file_read(o.arch, 1 << 20, &text, &len, &err);
        if (st == MANTA_OK)
            st = stereo_arch_parse(&sp, text, &a, &err);
        free(text);
    }
    if (st != MANTA_OK) {
        fprintf(stderr, "manta eval: %s\n", err.msg);
        return 1;
    }
    mcl_dev *d = cmd_open_device(o.device);
    if (!d)
        return 1;
    stereo_trainer *t = NULL;
    stereo_scores all, noc;
    double ms = 0;
    st = stereo_trainer_create(d, &sp, &sched, m.seed, &t);
    if (st != MANTA_OK)
        err = *mcl_err(d);
    if (st == MANTA_OK)
        st = stereo_state_load(o.ckpt, t, d, &m, &err);
    if (st == MANTA_OK)
        st = run(&o, d, t, &sp, &m, &a, &all, &noc, &ms, &err);
    stereo_trainer_destroy(t);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta eval: %s\n", err.msg);
        mcl_close(d);
        return 1;
    }
    char arch[1024] = "";
    stereo_arch_to_json(&sp, &a, arch, sizeof arch, &err);
    if (o.json) {
        printf("{\"ckpt\":");
        cmd_json_str(stdout, o.ckpt);
        printf(",\"space\":");
        cmd_json_str(stdout, sp.name);
        printf(",\"height\":%d,\"width\":%d,\"max_disp\":%d,\"arch\":%s,\"data\":",
               sp.crop_h, sp.crop_w, sp.max_disp, arch);
        cmd_json_str(stdout, o.data);
        printf(",");
        print_scores("all", &all, true);
        printf(",");
        print_scores("noc", &noc, true);
        printf(",\"batch\":%d,\"ms_per_pair\":%.4f,", m.batch, ms);
        cmd_json_provenance(stdout, d);
        printf("}\n");
    } else {
        printf("%s, sub-network %s, %s data\n", sp.name, arch, o.data);
        print_scores("all", &all, false);
        print_scores("noc", &noc, false);
        printf("forward %.3f ms per pair (batches of %d, median of 5)\n", ms, m.batch);
        if (o.images)
            printf("images of %ld pairs in %s\n", o.show, o.images);
    }
    mcl_close(d);
    return 0;
}
