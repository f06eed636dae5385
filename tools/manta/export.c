/* manta export: a sub-network of a trained supernet as a TensorFlow Lite file
 * (and optionally a C array), after BN re-calibration, checked by running the
 * written file in the inference engine against the graph's reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "core/fileio.h"
#include "export/quant.h"
#include "export/tflite.h"
#include "engine/engine.h"
#include "rundata.h"
#include "stereo_cmd.h"

/* n images of the training split at resolution r (the evaluation preprocessing), NHWC; NULL
 * after printing why. */
static float *calib_images(run_ckpt *rk, int r, int n, bool val)
{
    const int C = rk->space.in_channels, B = rk->meta.batch;
    eval_source es = {&rk->data.train,
                      val ? rk->data.split.val : rk->data.split.train,
                      val ? rk->data.split.n_val : rk->data.split.n_train,
                      B,
                      &rk->data.aug_eval,
                      {0, 0},
                      rk->scratch};
    float *out = malloc((size_t)n * r * r * C * sizeof *out);
    float *batch = malloc((size_t)B * r * r * C * sizeof *batch);
    float *labels = malloc((size_t)B * sizeof *labels);
    int seen = 0;
    for (long b = 0; out && batch && labels && seen < n; b++) {
        int count = 0;
        if (eval_source_batch(&es, b, r, batch, labels, &count) != MANTA_OK || count <= 0)
            break;
        for (int i = 0; i < count && seen < n; i++, seen++)
            for (int c = 0; c < C; c++)
                for (int p = 0; p < r * r; p++)
                    out[((size_t)seen * r * r + p) * C + c] =
                        batch[((size_t)i * C + c) * r * r + p];
    }
    free(batch);
    free(labels);
    if (!out || seen < n) {
        fprintf(stderr, "manta export: %d %s images for calibration, %d asked\n", seen,
                val ? "validation" : "training", n);
        free(out);
        return NULL;
    }
    return out;
}

/* Top-1 of a written int8 model in the engine on n validation images (-1 on failure). */
static double int8_val_top1(run_ckpt *rk, const uint8_t *model, size_t size, int r, int n)
{
    const int C = rk->space.in_channels, B = rk->meta.batch;
    eval_source es = {
        &rk->data.train, rk->data.split.val, rk->data.split.n_val, B, &rk->data.aug_eval,
        {0, 0},          rk->scratch};
    mengine_model m;
    mengine e;
    char msg[256];
    size_t need = 0;
    if (mengine_model_load(&m, model, size, NULL, msg, sizeof msg) != MENGINE_OK)
        return -1;
    void *work = malloc(mengine_plan_work_size(&m) + 16);
    if (!work || mengine_arena_size(&m, work, mengine_plan_work_size(&m) + 16, &need, msg,
                                    sizeof msg) != MENGINE_OK) {
        free(work);
        return -1;
    }
    free(work);
    void *arena = aligned_alloc(16, (need + 15) & ~(size_t)15);
    float *batch = malloc((size_t)B * r * r * C * sizeof *batch);
    float *labels = malloc((size_t)B * sizeof *labels);
    mengine_view in, out;
    long seen = 0, correct = 0;
    if (arena && batch && labels && mengine_init(&e, &m, arena, need) == MENGINE_OK &&
        mengine_prepare(&e, msg, sizeof msg) == MENGINE_OK &&
        mengine_input(&e, 0, &in) == MENGINE_OK && mengine_output(&e, 0, &out) == MENGINE_OK)
        for (long b = 0; seen < n; b++) {
            int count = 0;
            if (eval_source_batch(&es, b, r, batch, labels, &count) != MANTA_OK || count <= 0)
                break;
            for (int i = 0; i < count && seen < n; i++, seen++) {
                int8_t *q = (int8_t *)in.data;
                for (int c = 0; c < C; c++)
                    for (int p = 0; p < r * r; p++) {
                        const float v = batch[((size_t)i * C + c) * r * r + p] / in.scale;
                        const long k = lroundf(v) + in.zero_point;
                        q[(size_t)p * C + c] = (int8_t)(k < -128 ? -128 : k > 127 ? 127 : k);
                    }
                if (mengine_invoke(&e) != MENGINE_OK)
                    break;
                const int8_t *o = (const int8_t *)out.cdata;
                size_t best = 0;
                for (size_t k = 1; k < out.count; k++)
                    best = o[k] > o[best] ? k : best;
                correct += (int)best == (int)labels[i];
            }
        }
    free(arena);
    free(batch);
    free(labels);
    return seen ? (double)correct / (double)seen : -1;
}

int cmd_export(int argc, char **argv)
{
    if (stereo_cmd_ckpt_arg(argc, argv))
        return cmd_export_stereo(argc, argv);
    const char *ckpt = NULL, *arch_arg = "max", *out = NULL, *c_dir = NULL, *device = NULL;
    long recal = 2000, calib = 300, calib_val = 1000;
    const char *method = "auto";
    double pct = 99.99;
    bool json = false, int8 = false;
    const opt_def defs[] = {
        {.name = "ckpt",
         .kind = OPT_STRING,
         .dest = &ckpt,
         .metavar = "FILE",
         .help = "training checkpoint (required)"},
        {.name = "arch",
         .kind = OPT_STRING,
         .dest = &arch_arg,
         .metavar = "ARCH",
         .help = "max (default), min or a file in OFA's encoding"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &out,
         .metavar = "MODEL.tflite",
         .help = "the model file (required)"},
        {.name = "c-array",
         .kind = OPT_STRING,
         .dest = &c_dir,
         .metavar = "DIR",
         .help = "also write DIR/model.{c,h}"},
        {.name = "recal-images",
         .kind = OPT_LONG,
         .dest = &recal,
         .lo = 1,
         .hi = 1L << 30,
         .metavar = "N",
         .help = "images for BN re-calibration (default 2000)"},
        {.name = "int8",
         .kind = OPT_FLAG,
         .dest = &int8,
         .help = "a fully int8 file (TFLite's quantization spec), calibrated"},
        {.name = "calib",
         .kind = OPT_LONG,
         .dest = &calib,
         .lo = 1,
         .hi = 100000,
         .metavar = "N",
         .help = "with --int8: training images for the activation ranges (default 300)"},
        {.name = "calib-method",
         .kind = OPT_STRING,
         .dest = &method,
         .metavar = "M",
         .help = "with --int8: minmax, percentile or auto (default: the better on validation)"},
        {.name = "percentile",
         .kind = OPT_DOUBLE,
         .dest = &pct,
         .lo = 50.0001,
         .hi = 100,
         .metavar = "P",
         .help = "with --int8: the percentile method's clip (default 99.99)"},
        {.name = "calib-val",
         .kind = OPT_LONG,
         .dest = &calib_val,
         .lo = 1,
         .hi = 1000000,
         .metavar = "N",
         .help = "with --calib-method auto: validation images that pick (default 1000)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta export",
        "--ckpt FILE --arch max|min|ARCH --out MODEL.tflite\n"
        "                    [--c-array DIR] [--recal-images N] [--int8 [--calib N]\n"
        "                    [--calib-method minmax|percentile|auto]] [--device SPEC] [--json]",
        "Writes the sub-network as a float32 TensorFlow Lite file: batch norm folded into\n"
        "the convolutions (statistics re-calibrated on --recal-images training images,\n"
        "default 2000), elastic kernels baked, channels sliced; with the engine's memory\n"
        "plan (TFLM's OfflineMemoryAllocation) and the input preprocessing and labels as\n"
        "metadata. --c-array also writes DIR/model.{c,h}: the model as an aligned\n"
        "const array and its exact arena size (MODEL_ARENA_SIZE) for boards.\n"
        "--int8 writes a fully int8 file instead (per-channel int8 weights, int8\n"
        "activations, input and output, int32 biases): activation ranges from --calib\n"
        "training images through the folded float graph, by min/max or a percentile;\n"
        "auto keeps the one of the better top-1 on --calib-val validation images.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r == OPT_HELP && stereo_cmd_help_arg(argc, argv)) { /* the stereo checkpoints' too */
        char *help[] = {argv[0], "--help", NULL};
        printf("\nA stereo checkpoint (manta train --space stereo-...) takes these options "
               "instead:\n\n");
        return cmd_export_stereo(2, help);
    }
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    const bool m_min = !strcmp(method, "minmax"), m_pct = !strcmp(method, "percentile"),
               m_auto = !strcmp(method, "auto");
    if (!m_min && !m_pct && !m_auto) {
        fprintf(stderr, "manta export: --calib-method %s (minmax, percentile or auto)\n", method);
        return 2;
    }
    if (!ckpt || !out) {
        fprintf(stderr, "manta export: --ckpt FILE and --out MODEL.tflite are required\n");
        return 2;
    }
    if (!out_check_file("manta export", "out", out) ||
        (c_dir && !out_check_dir("manta export", "c-array", c_dir)))
        return 2;
    run_ckpt rk;
    if (!run_ckpt_open("export", ckpt, device, &rk))
        return 1;
    int rc = 1;
    xgraph g;
    memset(&g, 0, sizeof g);
    manta_err err;
    manta_err_clear(&err);
    manta_status st = MANTA_OK;
    ofa_arch a;
    if (!run_ckpt_check_recal("export", &rk, recal)) {
        rc = 2;
        goto out;
    }
    if (!cmd_load_arch("export", &rk.space, arch_arg, &a))
        goto out;
    eval_source rs = run_ckpt_recal_source(&rk);
    xg_preprocess pre = {0};
    pre.channels = rk.space.in_channels;
    for (int c = 0; c < rk.space.in_channels; c++) {
        pre.mean[c] = rk.data.aug_eval.mean[c];
        pre.std[c] = rk.data.aug_eval.std[c];
    }
    pre.n_labels = rk.data.train.classes;
    pre.labels = rk.data.train.class_names;
    st = ofa_trainer_extract(rk.trainer, &a, eval_source_batch, &rs, recal, &pre, &g, &err);
    const char *picked = NULL;
    double top_min = -1, top_pct = -1;
    if (st == MANTA_OK && int8) {
        float *imgs = calib_images(&rk, a.r, (int)calib, false);
        if (!imgs)
            goto out;
        const xg_calib first = m_pct ? XG_CALIB_PERCENTILE : XG_CALIB_MINMAX;
        st = xgraph_calibrate(&g, imgs, (int)calib, first, pct, &err);
        picked = m_pct ? "percentile" : "minmax";
        if (st == MANTA_OK && m_auto) { /* both, the better on validation images */
            uint8_t *d = NULL;
            size_t sz = 0;
            st = tflite_write(&g, &d, &sz, NULL, &err);
            if (st == MANTA_OK)
                top_min = int8_val_top1(&rk, d, sz, a.r, (int)calib_val);
            free(d);
            float *lo = g.qmin, *hi = g.qmax;
            g.qmin = g.qmax = NULL;
            if (st == MANTA_OK)
                st = xgraph_calibrate(&g, imgs, (int)calib, XG_CALIB_PERCENTILE, pct, &err);
            if (st == MANTA_OK)
                st = tflite_write(&g, &d, &sz, NULL, &err);
            if (st == MANTA_OK)
                top_pct = int8_val_top1(&rk, d, sz, a.r, (int)calib_val);
            if (st == MANTA_OK)
                free(d);
            if (st == MANTA_OK && top_min >= top_pct) {
                free(g.qmin), free(g.qmax);
                g.qmin = lo, g.qmax = hi;
            } else {
                free(lo), free(hi);
                picked = "percentile";
            }
            if (st == MANTA_OK && top_min >= top_pct)
                picked = "minmax";
            if (st == MANTA_OK)
                fprintf(stderr,
                        "manta export: int8 validation top-1 on %ld images: minmax %.2f%%, "
                        "percentile %g %.2f%%: %s kept\n",
                        calib_val, 100 * top_min, pct, 100 * top_pct, picked);
        }
        free(imgs);
    }
    tflite_report rep;
    if (st == MANTA_OK && c_dir)
        st = manta_file_mkdir_p(c_dir, &err);
    if (st == MANTA_OK)
        st = tflite_write_file(&g, out, c_dir, &rep, &err);
    if (st != MANTA_OK) {
        cmd_error("export", st, &err);
        goto out;
    }
    /* read back what was written and run it in the engine against the graph's reference */
    size_t size = 0;
    void *file = cmd_read_aligned(out, &size);
    double dl = 0, dp = 0;
    st = file ? tflite_check(&g, file, size, 1, &dl, &dp, &err)
              : manta_err_set(&err, MANTA_ERR_IO, "%s: cannot read back", out);
    free(file);
    if (st != MANTA_OK) {
        cmd_error("export: checking the written file", st, &err);
        goto out;
    }
    if (json) {
        printf("{\"model\":");
        cmd_json_str(stdout, out);
        printf(",\"arch\":%s,\"file_bytes\":%zu,\"arena_bytes\":%zu,\"weight_bytes\":%zu,"
               "\"ops\":%d,\"max_logit_diff\":%.3g,",
               g.arch_json, rep.file_bytes, rep.arena_bytes, rep.weights_bytes, rep.n_ops, dl);
        if (int8) {
            printf("\"int8\":true,\"calib_images\":%ld,\"calib_method\":\"%s\",", calib, picked);
            if (top_min >= 0)
                printf("\"val_top1_minmax\":%.4f,\"val_top1_percentile\":%.4f,", top_min, top_pct);
        }
        cmd_json_provenance(stdout, rk.dev);
        printf("}\n");
    } else
        printf("%s: %d ops, %.1f KiB file (%.1f KiB weights), arena %.1f KiB (peak planned "
               "memory); engine vs reference: max logit difference %.2g\n",
               out, rep.n_ops, rep.file_bytes / 1024.0, rep.weights_bytes / 1024.0,
               rep.arena_bytes / 1024.0, dl);
    rc = 0;
out:
    xgraph_free(&g);
    run_ckpt_close(&rk);
    return rc;
}
