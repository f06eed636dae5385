/* manta export --ckpt STEREO.ckpt: a sub-network of a trained stereo supernet as a
 * TensorFlow Lite file (two views in, the finest disparity out), batch norm re-calibrated
 * as manta eval does (the same pairs, the same count), at the space's crop or --size; the
 * written file read back and run in the engine against the device network on a held-out
 * pair. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "core/fileio.h"
#include "export/tflite.h"
#include "stereo/extract.h"
#include "stereo/infer.h"
#include "stereo_cmd.h"

typedef struct sx_opts {
    const char *ckpt, *arch, *out, *c_dir, *size, *recal_data, *device;
    long recal;
    bool json, int8;
    stereo_cmd_int8 q; /* --int8's calibration */
} sx_opts;

/* "WxH" into *w, *h; false when it is not two positive integers. */
static bool parse_size(const char *s, int *w, int *h)
{
    char x, end;
    return sscanf(s, "%d%c%d%c", w, &x, h, &end) == 3 && (x == 'x' || x == 'X') && *w > 0 && *h > 0;
}

/* Held-out pair 0 of the run, generated at h x w: (2, 3, h, w) into a new array. */
static float *check_pair(const stereo_space *sp, const stereo_meta *m, const photo_bank *photos,
                         int h, int w, manta_err *err)
{
    stereo_source src;
    stereo_heldout_source(sp, m->seed, 1, &src);
    src.synth.width = w, src.synth.height = h;
    src.synth.photos = photos && photos->count > 0 ? photos : NULL;
    stereo_pair p = {0};
    const size_t view = 3 * (size_t)h * w;
    float *views = malloc(2 * view * sizeof *views);
    manta_status st = views ? stereo_pair_alloc(&p, h, w, err)
                            : manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of memory");
    if (st == MANTA_OK)
        st = stereo_synth_generate(&src.synth, src.base, &p, err);
    if (st == MANTA_OK) {
        memcpy(views, p.left, view * sizeof *views);
        memcpy(views + view, p.right, view * sizeof *views);
    }
    stereo_pair_free(&p);
    if (st != MANTA_OK) {
        free(views);
        return NULL;
    }
    return views;
}

/* Everything after the device is open; 0, or 1 with the message printed. */
static int run(const sx_opts *o, mcl_dev *d, const stereo_space *sp, stereo_meta *m,
               const ofa_arch *a, int h, int w)
{
    manta_err err = {0};
    ofa_schedule sched;
    stereo_trainer *t = NULL;
    stereo_recal_src rs = {0};
    stereo_batch b = {0};
    bool have_b = false;
    stereo_infer *inf = NULL;
    xgraph g;
    memset(&g, 0, sizeof g);
    void *file = NULL;
    size_t size = 0;
    float *views = NULL;
    tflite_report rep;
    stereo_export_diff diff;
    manta_status st = stereo_schedule_preset(sp, m->preset, m->batch, 1, &sched, &err);
    if (st == MANTA_OK && (st = stereo_trainer_create(d, sp, &sched, m->seed, &t)) != MANTA_OK)
        err = *mcl_err(d);
    if (st == MANTA_OK)
        st = stereo_state_load(o->ckpt, t, d, m, &err);
    if (st == MANTA_OK)
        st = stereo_recal_open(m, sp, o->recal_data, true, &rs, &err);
    if (st == MANTA_OK)
        st = stereo_batch_alloc(&b, m->batch, sp->crop_h, sp->crop_w, stereo_preds(sp), &err);
    have_b = st == MANTA_OK;
    /* re-calibrated as manta eval does: the run's training pairs (or --recal-data's), in
     * its batches at the crop */
    if (st == MANTA_OK && (st = stereo_trainer_recalibrate(t, a, &b, stereo_ordered_batch, &rs.src,
                                                           o->recal)) != MANTA_OK)
        err = *mcl_err(d);
    stereo_net *net = stereo_trainer_net(t);
    if (st == MANTA_OK && (h != sp->crop_h || w != sp->crop_w)) {
        /* at another size: a network of that size, re-calibrated there (stereo/infer.h) */
        st = stereo_infer_create(d, net, a, &inf, &err);
        if (st == MANTA_OK) {
            stereo_infer_set_recal(inf, &rs.src, o->recal);
            st = stereo_infer_net(inf, h, w, &net, &err);
        }
    }
    if (st == MANTA_OK)
        st = stereo_net_extract(net, &g, &err);
    stereo_cmd_int8_result qr;
    if (st == MANTA_OK && o->int8) {
        st = stereo_cmd_int8_calibrate(&g, sp, m, &rs.src, &rs.photos, h, w, &o->q, &qr, &err);
        if (st == MANTA_OK && !o->json)
            fprintf(stderr,
                    "manta export: int8 ranges from %ld training pairs, %s kept (held-out EPE on "
                    "%ld pairs: minmax %.4f, percentile %g %.4f; -1: not measured)\n",
                    o->q.calib, qr.picked, o->q.val, qr.epe_minmax, o->q.pct, qr.epe_percentile);
    }
    if (st == MANTA_OK && o->c_dir)
        st = manta_file_mkdir_p(o->c_dir, &err);
    if (st == MANTA_OK)
        st = tflite_write_file(&g, o->out, o->c_dir, &rep, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta export: %s\n", err.msg);
        goto out;
    }
    /* read back what was written and run it in the engine against the device network */
    file = cmd_read_aligned(o->out, &size);
    views = check_pair(sp, m, &rs.photos, h, w, &err);
    st = !file    ? manta_err_set(&err, MANTA_ERR_IO, "%s: cannot read back", o->out)
         : !views ? MANTA_ERR_NO_MEMORY
                  : stereo_export_check(net, file, size, views, &diff, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta export: checking the written file: %s\n", err.msg);
        goto out;
    }
    if (o->json) {
        printf("{\"model\":");
        cmd_json_str(stdout, o->out);
        printf(",\"task\":\"stereo\",\"space\":");
        cmd_json_str(stdout, sp->name);
        printf(",\"arch\":%s,\"height\":%d,\"width\":%d,\"file_bytes\":%zu,\"arena_bytes\":%zu,"
               "\"weight_bytes\":%zu,\"ops\":%d,\"tensors\":%d,\"fused_correlations\":%zu,"
               "\"recal_pairs\":%ld,\"check\":{\"max_abs_diff\":%.3g,\"rel_l2\":%.3g,"
               "\"mean_disparity\":%.4f},",
               g.arch_json, h, w, rep.file_bytes, rep.arena_bytes, rep.weights_bytes, rep.n_ops,
               rep.n_tensors, diff.fused_correlations, o->recal, diff.max_abs, diff.rel_l2,
               diff.mean_disp);
        if (o->int8)
            printf("\"int8\":true,\"calib_pairs\":%ld,\"calib_method\":\"%s\",\"val_pairs\":%ld,"
                   "\"val_epe_minmax\":%.4f,\"val_epe_percentile\":%.4f,",
                   o->q.calib, qr.picked, o->q.val, qr.epe_minmax, qr.epe_percentile);
        cmd_json_provenance(stdout, d);
        printf("}\n");
    } else
        printf("%s: %dx%d, %d ops, %.1f KiB file (%.1f KiB weights, the encoder's stored once "
               "for both views), arena %.1f KiB; correlation fused: %zu; engine vs device on "
               "a held-out pair: max |diff| %.2g px, relative L2 %.2g (mean disparity %.3f px)\n",
               o->out, w, h, rep.n_ops, rep.file_bytes / 1024.0, rep.weights_bytes / 1024.0,
               rep.arena_bytes / 1024.0, diff.fused_correlations, diff.max_abs, diff.rel_l2,
               diff.mean_disp);
out:
    free(views);
    free(file);
    xgraph_free(&g);
    stereo_infer_destroy(inf);
    if (t)
        stereo_trainer_restore_bn(t);
    if (have_b)
        stereo_batch_free(&b);
    stereo_recal_close(&rs);
    stereo_trainer_destroy(t);
    return st == MANTA_OK ? 0 : 1;
}

int cmd_export_stereo(int argc, char **argv)
{
    sx_opts o = {.arch = "max",
                 .recal = 200,
                 .q = {.calib = 100, .method = "auto", .pct = 99.99, .val = 20}};
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
         .help = "max (default), min or a file in OFA's encoding with \"dw\""},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o.out,
         .metavar = "MODEL.tflite",
         .help = "the model file (required)"},
        {.name = "c-array",
         .kind = OPT_STRING,
         .dest = &o.c_dir,
         .metavar = "DIR",
         .help = "also write DIR/model.{c,h}"},
        {.name = "size",
         .kind = OPT_STRING,
         .dest = &o.size,
         .metavar = "WxH",
         .help = "the model's input size (default: the space's crop), re-calibrated there"},
        {.name = "recal-pairs",
         .kind = OPT_LONG,
         .dest = &o.recal,
         .lo = 0,
         .hi = 10000000,
         .metavar = "N",
         .help = "training pairs for BN re-calibration (default 200, as manta "
                 "eval; 0: none, the running statistics)"},
        {.name = "recal-data",
         .kind = OPT_STRING,
         .dest = &o.recal_data,
         .metavar = "D",
         .help = "pairs for BN re-calibration: synthetic or a KITTI / Middlebury folder "
                 "(default: the run's training data)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o.device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "int8",
         .kind = OPT_FLAG,
         .dest = &o.int8,
         .help = "a fully int8 file (TFLite's quantization spec), calibrated"},
        {.name = "calib",
         .kind = OPT_LONG,
         .dest = &o.q.calib,
         .lo = 1,
         .hi = 100000,
         .metavar = "N",
         .help = "with --int8: generated training pairs for the ranges (default 100)"},
        {.name = "calib-method",
         .kind = OPT_STRING,
         .dest = &o.q.method,
         .metavar = "M",
         .help = "with --int8: minmax, percentile or auto (default: the lower held-out EPE)"},
        {.name = "percentile",
         .kind = OPT_DOUBLE,
         .dest = &o.q.pct,
         .lo = 50.0001,
         .hi = 100,
         .metavar = "P",
         .help = "with --int8: the percentile method's clip (default 99.99)"},
        {.name = "calib-val",
         .kind = OPT_LONG,
         .dest = &o.q.val,
         .lo = 0,
         .hi = 100000,
         .metavar = "N",
         .help = "with --int8: held-out pairs scoring the methods (default 20; 0: none, minmax or "
                 "percentile only)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o.json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta export",
        "--ckpt STEREO.ckpt --arch max|min|ARCH --out MODEL.tflite\n"
        "                    [--size WxH] [--c-array DIR] [--recal-pairs N] [--recal-data D]\n"
        "                    [--int8 [--calib N] [--calib-method minmax|percentile|auto]\n"
        "                    [--percentile P] [--calib-val N]] [--device SPEC] [--json]",
        "Writes a stereo sub-network as a float32 TensorFlow Lite file: inputs \"left\" and\n"
        "\"right\" (1, H, W, 3), RGB in [0, 1]; output the finest disparity (1, H, W, 1) in\n"
        "pixels of the input. Batch norm is re-calibrated as manta eval does (--recal-pairs\n"
        "of the run's training data, default 200) and folded into the convolutions; the\n"
        "encoder's weights, shared by the two views, are stored once; the correlation is\n"
        "the builtin pattern the engine fuses. The size is the space's crop, or --size WxH\n"
        "(sides multiples of 2^levels; re-calibrated at that size: docs/stereo.md, \"Sizes\").\n"
        "The written file is read back and run in the engine against the device network\n"
        "on a held-out pair (max |diff|, relative L2, whether the correlation was fused).\n"
        "--int8 writes a fully int8 file instead (per-channel int8 weights, int8 activations,\n"
        "inputs and output, int32 biases; CONCATENATION inputs of the output's quantization,\n"
        "through a QUANTIZE where needed): ranges from --calib generated training pairs\n"
        "through the network; auto keeps minmax or percentile by the int8 EPE on --calib-val\n"
        "held-out pairs (docs/stereo.md, \"int8\").\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!o.ckpt || !o.out) {
        fprintf(stderr, "manta export: --ckpt FILE and --out MODEL.tflite are required\n");
        return 2;
    }
    if (o.int8 && strcmp(o.q.method, "minmax") && strcmp(o.q.method, "percentile") &&
        strcmp(o.q.method, "auto")) {
        fprintf(stderr, "manta export: --calib-method %s (minmax, percentile or auto)\n",
                o.q.method);
        return 2;
    }
    if (o.int8 && !strcmp(o.q.method, "auto") && o.q.val < 1) {
        fprintf(stderr, "manta export: --calib-method auto picks on held-out pairs: --calib-val "
                        "at least 1\n");
        return 2;
    }
    if (!out_check_file("manta export", "out", o.out) ||
        (o.c_dir && !out_check_dir("manta export", "c-array", o.c_dir)))
        return 2;
    manta_err err = {0};
    stereo_space sp;
    stereo_meta m;
    ofa_arch a;
    manta_status st = stereo_state_peek(o.ckpt, &sp, &m, &err);
    if (st == MANTA_OK)
        st = stereo_cmd_arch(&sp, o.arch, &a, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta export: %s\n", err.msg);
        return 1;
    }
    int w = sp.crop_w, h = sp.crop_h;
    if (o.size) {
        const int mult = 1 << sp.n_levels;
        stereo_space at = sp;
        manta_err verr = {0};
        bool ok = parse_size(o.size, &w, &h);
        at.crop_w = w, at.crop_h = h, at.n_crops = 0;
        if (!ok || w % mult || h % mult || stereo_space_validate(&at, &verr) != MANTA_OK) {
            fprintf(stderr, "manta export: --size %s: %s (sides multiples of %d%s%s)\n", o.size,
                    ok ? "not a size the network runs" : "expected WxH", mult,
                    verr.msg[0] ? "; " : "", verr.msg);
            return 2;
        }
    }
    mcl_dev *d = cmd_open_device("export", o.device);
    if (!d)
        return 1;
    int rc = run(&o, d, &sp, &m, &a, h, w);
    mcl_close(d);
    return rc;
}
