/* manta eval --ckpt STEREO.ckpt: EPE, bad-1/2/3 and D1 (all and non-occluded pixels) of a
 * sub-network of a trained stereo supernet, on its run's held-out procedural pairs or a
 * folder of pairs, with colour-mapped disparity and error images of a few pairs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "core/fileio.h"
#include "core/stats.h"
#include "data/png_io.h"
#include "stereo/infer.h"
#include "stereo/state.h"
#include "stereo_cmd.h"

typedef struct ev_opts {
    const char *ckpt, *arch, *data, *recal_data, *out, *device;
    long pairs, recal, show;
    bool json;
} ev_opts;

/* How the forward time was taken. */
typedef struct ev_timing {
    double ms;     /* median forward time per pair */
    long forwards; /* forwards the median is over */
    int batch;     /* pairs per forward */
    bool whole;    /* whole pairs of a folder, padded; else batches at the network's size */
    bool again;    /* every pair had its own size: the last one's forward run once more */
    int min_h, min_w, max_h, max_w; /* the sizes the network ran at */
} ev_timing;

/* The left view of @p p as interleaved RGB bytes. */
static void left_rgb(const stereo_pair *p, uint8_t *rgb)
{
    size_t plane = (size_t)p->height * (size_t)p->width;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            float x = p->left[(size_t)c * plane + i];
            rgb[3 * i + (size_t)c] = (uint8_t)(x <= 0 ? 0 : x >= 1 ? 255 : x * 255.0f + 0.5f);
        }
}

/* Four PNGs of pair @p p (number @p index) at its size: left view, true and predicted
 * disparity, error. */
static manta_status write_images(const ev_opts *o, const stereo_space *sp, const stereo_pair *p,
                                 long index, const float *pred, manta_err *err)
{
    size_t plane = (size_t)p->height * (size_t)p->width;
    uint8_t *rgb = malloc(3 * plane);
    if (!rgb)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "images: out of memory");
    static const char *const kinds[] = {"left", "gt", "pred", "error"};
    manta_status st = MANTA_OK;
    for (int i = 0; i < 4 && st == MANTA_OK; i++) {
        if (i == 0)
            left_rgb(p, rgb);
        else if (i == 3)
            stereo_error_colorize(pred, p, rgb);
        else
            stereo_disp_colorize(i == 1 ? p->disp : pred, i == 1 ? p->mask : NULL, p->height,
                                 p->width, (float)sp->max_disp, rgb);
        char path[1200];
        snprintf(path, sizeof path, "%s/%04ld_%s.png", o->out, index, kinds[i]);
        st = mpng_write_rgb8(path, rgb, p->height, p->width, err);
    }
    free(rgb);
    return st;
}

/* Median over 5 runs (after one) of an eval-mode forward of the sub-network set last and
 * the input there, per pair, in ms. */
static manta_status time_forward(mcl_dev *d, stereo_trainer *t, ev_timing *tm)
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
    const stereo_space *sp = stereo_net_space(n);
    *tm = (ev_timing){.ms = manta_sort_median(ms, 5) / stereo_net_batch(n),
                      .forwards = 5,
                      .batch = stereo_net_batch(n),
                      .min_h = sp->crop_h,
                      .max_h = sp->crop_h,
                      .min_w = sp->crop_w,
                      .max_w = sp->crop_w};
    return MANTA_OK;
}

/* The run's held-out pairs, generated at the network's size: evaluated as the trainer does
 * at a phase's end (batches of the checkpoint's), the figures into *mt. */
static manta_status run_synthetic(const ev_opts *o, mcl_dev *d, stereo_trainer *t,
                                  const stereo_space *sp, const stereo_meta *m, const ofa_arch *a,
                                  stereo_source *recal_src, const photo_bank *photos,
                                  stereo_metrics *mt, ev_timing *tm, manta_err *err)
{
    stereo_source eval_src;
    stereo_heldout_source(sp, m->seed, o->pairs, &eval_src);
    eval_src.synth.photos = photos; /* the run's photographs, or NULL */
    stereo_batch b;
    float *pred = malloc((size_t)o->pairs * sp->crop_h * sp->crop_w * sizeof *pred);
    manta_status st =
        pred ? stereo_batch_alloc(&b, m->batch, sp->crop_h, sp->crop_w, stereo_preds(sp), err)
             : manta_err_set(err, MANTA_ERR_NO_MEMORY, "eval: out of memory");
    if (st == MANTA_OK && (st = stereo_trainer_evaluate(t, a, &b, stereo_ordered_batch, recal_src,
                                                        o->recal, stereo_ordered_batch, &eval_src,
                                                        o->pairs, mt, pred)) != MANTA_OK)
        *err = *mcl_err(d);
    if (st == MANTA_OK && (st = time_forward(d, t, tm)) != MANTA_OK)
        *err = *mcl_err(d);
    /* images of the first pairs: fill their batch again (deterministic) */
    if (st == MANTA_OK && o->out && o->show > 0) {
        st = manta_file_mkdir_p(o->out, err);
        size_t plane = (size_t)sp->crop_h * sp->crop_w;
        for (long i = 0; i < o->show && i < o->pairs && st == MANTA_OK; i++) {
            int count, k = (int)(i % b.n);
            if (k == 0)
                st = stereo_ordered_batch(&eval_src, i / b.n, &b, &count, err);
            /* a view of pair k of the batch (not owned) */
            stereo_pair p = {.height = b.height,
                             .width = b.width,
                             .left = b.left + (size_t)k * STEREO_CHANNELS * plane,
                             .disp = b.gt[0] + (size_t)k * plane,
                             .mask = b.mask + (size_t)k * plane,
                             .has_noc = b.has_noc};
            if (st == MANTA_OK)
                st = write_images(o, sp, &p, i, pred + (size_t)i * plane, err);
        }
    }
    if (pred) /* the batch was allocated (or zeroed by a failed allocation) */
        stereo_batch_free(&b);
    free(pred);
    return st;
}

/* The predictions of the first pairs of a folder, kept until every pair has run. */
typedef struct kept_preds {
    long show, n;
    float **pred;
} kept_preds;

static manta_status keep_pred(void *ctx, long index, const stereo_pair *p, const float *pred,
                              const stereo_infer_run *run, manta_err *err)
{
    (void)run;
    kept_preds *k = ctx;
    if (index >= k->show)
        return MANTA_OK;
    size_t bytes = (size_t)p->height * (size_t)p->width * sizeof *pred;
    if (!(k->pred[k->n] = malloc(bytes)))
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "images: out of memory");
    memcpy(k->pred[k->n++], pred, bytes);
    return MANTA_OK;
}

/* The pairs of a folder, whole (stereo/infer.h): BN re-calibrated on training pairs at each
 * padded size, every pair padded, run alone at its padded size and scored over all its valid
 * pixels; the images written only once every pair has run. */
static manta_status run_folder(const ev_opts *o, mcl_dev *d, stereo_trainer *t,
                               const stereo_space *sp, const stereo_meta *m, const ofa_arch *a,
                               stereo_source *recal_src, stereo_metrics *mt, ev_timing *tm,
                               long *evaluated, manta_err *err)
{
    stereo_set set;
    MANTA_TRY(stereo_folder_open(o->data, STEREO_LAYOUT_AUTO, &set, err));
    const long pairs = o->pairs < set.count ? o->pairs : set.count;
    kept_preds kept = {.show = o->out ? (o->show < pairs ? o->show : pairs) : 0};
    kept.pred = calloc((size_t)kept.show + 1, sizeof *kept.pred);
    stereo_batch b;
    stereo_infer *inf = NULL;
    stereo_infer_summary sum = {0};
    manta_status st =
        kept.pred ? stereo_batch_alloc(&b, m->batch, sp->crop_h, sp->crop_w, stereo_preds(sp), err)
                  : manta_err_set(err, MANTA_ERR_NO_MEMORY, "eval: out of memory");
    const bool recal = st == MANTA_OK;
    if (recal && (st = stereo_trainer_recalibrate(t, a, &b, stereo_ordered_batch, recal_src,
                                                  o->recal)) != MANTA_OK)
        *err = *mcl_err(d);
    if (st == MANTA_OK)
        st = stereo_infer_create(d, stereo_trainer_net(t), a, &inf, err);
    if (st == MANTA_OK) /* and again at each size the pairs run at */
        stereo_infer_set_recal(inf, recal_src, o->recal);
    if (st == MANTA_OK)
        st = stereo_infer_folder(inf, &set, pairs, mt, keep_pred, &kept, &sum, err);
    stereo_infer_destroy(inf);
    if (recal) { /* the supernet's statistics back */
        manta_status rs = stereo_trainer_restore_bn(t);
        if (st == MANTA_OK && rs != MANTA_OK)
            *err = *mcl_err(d), st = rs;
        stereo_batch_free(&b);
    }
    *tm = (ev_timing){.ms = sum.ms_median,
                      .forwards = sum.timed,
                      .batch = 1,
                      .whole = true,
                      .again = sum.pairs > 0 && sum.sizes == sum.pairs,
                      .min_h = sum.min_h,
                      .min_w = sum.min_w,
                      .max_h = sum.max_h,
                      .max_w = sum.max_w};
    *evaluated = sum.pairs;
    if (st == MANTA_OK && kept.show > 0)
        st = manta_file_mkdir_p(o->out, err);
    for (long i = 0; i < kept.n && st == MANTA_OK; i++) {
        stereo_pair p;
        st = stereo_folder_load(&set, (int)i, &p, err);
        if (st == MANTA_OK)
            st = write_images(o, sp, &p, i, kept.pred[i], err);
        stereo_pair_free(&p);
    }
    for (long i = 0; i < kept.n; i++)
        free(kept.pred[i]);
    free(kept.pred);
    stereo_set_free(&set);
    return st;
}

/* Evaluate with the trainer of the checkpoint; the figures into *all and *noc. */
static manta_status run(const ev_opts *o, mcl_dev *d, stereo_trainer *t, const stereo_space *sp,
                        const stereo_meta *m, const ofa_arch *a, stereo_scores *all,
                        stereo_scores *noc, ev_timing *tm, long *evaluated, manta_err *err)
{
    /* re-calibration on the run's training data (crops of a folder's pairs, as the trainer's
     * phase ends take them) unless --recal-data says otherwise; the run's photographs also
     * where the held-out pairs are made */
    stereo_recal_src rs;
    MANTA_TRY(stereo_recal_open(m, sp, o->recal_data, strcmp(o->data, "synthetic") == 0, &rs, err));
    stereo_metrics mt = {0};
    manta_status st;
    *evaluated = o->pairs;
    if (strcmp(o->data, "synthetic") != 0)
        st = run_folder(o, d, t, sp, m, a, &rs.src, &mt, tm, evaluated, err);
    else
        st = run_synthetic(o, d, t, sp, m, a, &rs.src, rs.photos.count > 0 ? &rs.photos : NULL, &mt,
                           tm, err);
    stereo_metrics_scores(&mt, all, noc);
    stereo_recal_close(&rs);
    return st;
}

int cmd_eval_stereo(int argc, char **argv)
{
    ev_opts o = {.arch = "max", .data = "synthetic", .pairs = 200, .recal = 200, .show = 4};
    const opt_def defs[] = {
        {.name = "ckpt",
         .kind = OPT_STRING,
         .dest = &o.ckpt,
         .metavar = "FILE",
         .help = "a checkpoint of manta train on a stereo space (required)"},
        {.name = "arch",
         .kind = OPT_STRING,
         .dest = &o.arch,
         .metavar = "ARCH",
         .help = "max (default), min or a file in OFA's encoding"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &o.data,
         .metavar = "D",
         .help = "synthetic (default: the run's held-out pairs) or a KITTI / Middlebury folder"},
        {.name = "pairs",
         .kind = OPT_LONG,
         .dest = &o.pairs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "pairs evaluated (default 200; a folder: at most its pairs)"},
        {.name = "recal-pairs",
         .kind = OPT_LONG,
         .dest = &o.recal,
         .lo = 0,
         .hi = 1e7,
         .metavar = "N",
         .help =
             "training pairs for BN re-calibration (default 200; 0: none, the running statistics)"},
        {.name = "recal-data",
         .kind = OPT_STRING,
         .dest = &o.recal_data,
         .metavar = "D",
         .help = "pairs for BN re-calibration: synthetic or a KITTI / Middlebury folder "
                 "(default: the run's training data)"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o.out,
         .metavar = "DIR",
         .help = "write left view, true and predicted disparity and error PNGs there"},
        {.name = "show",
         .kind = OPT_LONG,
         .dest = &o.show,
         .lo = 0,
         .hi = 1000,
         .metavar = "K",
         .help = "pairs written to --out (default 4; 0: none)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o.device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o.json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta eval",
        "--ckpt STEREO.ckpt [--arch max|min|ARCH] [--data D] [--pairs N] [--out DIR]\n"
        "                  [--recal-data D] [--json]",
        "Disparity quality of a sub-network of a trained stereo supernet: its batch-norm\n"
        "statistics re-calibrated on pairs of the run's training data (or --recal-data's) at\n"
        "the network's size, then EPE (mean absolute error, px), bad-1/2/3 (% of pixels off by\n"
        "more than 1, 2, 3 px) and D1 (% off by more than 3 px and 5%) over every valid pixel\n"
        "and over the non-occluded ones, on the run's held-out procedural pairs (the network's\n"
        "size) or on the whole pairs of a folder: each padded at the bottom and the right to\n"
        "the next multiple of 2^levels (its last row and column repeated), run alone on a\n"
        "network of that size, the prediction cropped back and scored at every pixel of the\n"
        "pair. The forward time per pair is a median: held-out pairs in batches at the\n"
        "network's size; a folder's pairs one at a time at their padded size (--json:\n"
        "\"timed\"), the first forward at each size left out (when every pair has its own\n"
        "size, one more forward of the last pair). --out writes, at the pairs' size,\n"
        "colour-mapped disparities (dark blue = 0 to dark red = max_disp) and an error map\n"
        "(black < 1 px, blue 1-2, green 2-3, yellow 3-5, red > 5, gray: no ground truth);\n"
        "after every pair has run, nothing when one fails.\n",
        defs,
        0,
        0};
    int first;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK)
        return pr == OPT_HELP ? 0 : 2;
    if (!o.ckpt) {
        fprintf(stderr, "manta eval: --ckpt FILE is required\n");
        return 2;
    }
    if (o.out && !out_check_dir("manta eval", "out", o.out))
        return 2;
    manta_err err = {0};
    stereo_space sp;
    stereo_meta m;
    ofa_schedule sched;
    ofa_arch a;
    manta_status st = stereo_state_peek(o.ckpt, &sp, &m, &err);
    if (st == MANTA_OK)
        st = stereo_schedule_preset(&sp, m.preset, m.batch, 1, &sched, &err);
    if (st == MANTA_OK)
        st = stereo_cmd_arch(&sp, o.arch, &a, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta eval: %s\n", err.msg);
        return 1;
    }
    mcl_dev *d = cmd_open_device("eval", o.device);
    if (!d)
        return 1;
    stereo_trainer *t = NULL;
    stereo_scores all, noc;
    ev_timing tm = {0};
    long evaluated = 0;
    st = stereo_trainer_create(d, &sp, &sched, m.seed, &t);
    if (st != MANTA_OK)
        err = *mcl_err(d);
    if (st == MANTA_OK)
        st = stereo_state_load(o.ckpt, t, d, &m, &err);
    if (st == MANTA_OK)
        st = run(&o, d, t, &sp, &m, &a, &all, &noc, &tm, &evaluated, &err);
    stereo_trainer_destroy(t);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta eval: %s\n", err.msg);
        mcl_close(d);
        return 1;
    }
    if (all.pixels == 0 && !o.out) {
        fprintf(stderr,
                "manta eval: no pixel of %s has a ground-truth disparity: nothing to "
                "score (--out DIR writes the predictions)\n",
                o.data);
        mcl_close(d);
        return 1;
    }
    if (all.pixels == 0)
        fprintf(stderr,
                "manta eval: no pixel of %s has a ground-truth disparity: predictions "
                "only, no figures\n",
                o.data);
    char arch[1024] = "";
    stereo_arch_to_json(&sp, &a, arch, sizeof arch, &err);
    if (o.json) {
        printf("{\"ckpt\":");
        cmd_json_str(stdout, o.ckpt);
        printf(",\"space\":");
        cmd_json_str(stdout, sp.name);
        printf(",\"height\":%d,\"width\":%d,\"max_disp\":%d,\"arch\":%s,\"data\":", sp.crop_h,
               sp.crop_w, sp.max_disp, arch);
        cmd_json_str(stdout, o.data);
        printf(",");
        stereo_cmd_print_scores("all", &all, true, 0);
        printf(",");
        stereo_cmd_print_scores("noc", &noc, true, 0);
        printf(",\"pairs\":%ld,\"whole\":%s,\"batch\":%d,\"ms_per_pair\":%.4f,"
               "\"timed\":{\"input\":\"%s\",\"batch\":%d,\"forwards\":%ld,"
               "\"min_width\":%d,\"min_height\":%d,\"max_width\":%d,\"max_height\":%d,"
               "\"last_again\":%s},",
               evaluated, tm.whole ? "true" : "false", m.batch, tm.ms,
               tm.whole ? "whole pairs, padded" : "held-out batches", tm.batch, tm.forwards,
               tm.min_w, tm.min_h, tm.max_w, tm.max_h, tm.again ? "true" : "false");
        cmd_json_provenance(stdout, d);
        printf("}\n");
    } else {
        printf("%s, sub-network %s, %s data (%ld pairs%s)\n", sp.name, arch, o.data, evaluated,
               tm.whole ? ", whole" : "");
        stereo_cmd_print_scores("all", &all, false, 0);
        stereo_cmd_print_scores("noc", &noc, false, 0);
        char size[64];
        if (tm.min_w == tm.max_w && tm.min_h == tm.max_h)
            snprintf(size, sizeof size, "%dx%d", tm.max_w, tm.max_h);
        else
            snprintf(size, sizeof size, "%dx%d to %dx%d", tm.min_w, tm.min_h, tm.max_w, tm.max_h);
        if (tm.whole)
            printf("forward %.3f ms per pair (one pair at a time at its padded size, %s; %s)\n",
                   tm.ms, size,
                   tm.again ? "every pair has its own size: one more forward of the last"
                            : "median after the first forward at each size");
        else
            printf("forward %.3f ms per pair (batches of %d at %s, median of %ld)\n", tm.ms,
                   tm.batch, size, tm.forwards);
        if (o.out)
            printf("images of %ld pairs in %s\n", o.show < evaluated ? o.show : evaluated, o.out);
    }
    mcl_close(d);
    return 0;
}
