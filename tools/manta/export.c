/* manta export: a sub-network of a trained supernet as a TensorFlow Lite file
 * (and optionally a C array), after BN re-calibration, checked by running the
 * written file in the inference engine against the graph's reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "core/fileio.h"
#include "export/tflite.h"
#include "rundata.h"
#include "stereo_cmd.h"

int cmd_export(int argc, char **argv)
{
    if (stereo_cmd_ckpt_arg(argc, argv))
        return cmd_export_stereo(argc, argv);
    const char *ckpt = NULL, *arch_arg = "max", *out = NULL, *c_dir = NULL, *device = NULL;
    long recal = 2000;
    bool json = false;
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
        "                    [--c-array DIR] [--recal-images N] [--device SPEC] [--json]",
        "Writes the sub-network as a float32 TensorFlow Lite file: batch norm folded into\n"
        "the convolutions (statistics re-calibrated on --recal-images training images,\n"
        "default 2000), elastic kernels baked, channels sliced; with the engine's memory\n"
        "plan (TFLM's OfflineMemoryAllocation) and the input preprocessing and labels as\n"
        "metadata. --c-array also writes DIR/model.{c,h}: the model as an aligned\n"
        "const array and its exact arena size (MODEL_ARENA_SIZE) for boards.\n",
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
