/* manta export: a sub-network of a trained supernet as a TensorFlow Lite file
 * (and optionally a C array), after BN re-calibration, checked by running the
 * written file in the inference engine against the graph's reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/fileio.h"
#include "export/tflite.h"
#include "rundata.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: manta export --ckpt FILE --arch max|min|ARCH --out MODEL.tflite\n"
               "                    [--c-array DIR] [--recal-images N] [--device SPEC] [--json]\n\n"
               "Writes the sub-network as a float32 TensorFlow Lite file: batch norm folded into\n"
               "the convolutions (statistics re-calibrated on --recal-images training images,\n"
               "default 2000), elastic kernels baked, channels sliced; with the engine's memory\n"
               "plan (TFLM's OfflineMemoryAllocation) and the input preprocessing and labels as\n"
               "metadata. --c-array also writes DIR/model.{c,h}: the model as an aligned\n"
               "const array and its exact arena size (MODEL_ARENA_SIZE) for boards.\n");
}

int cmd_export(int argc, char **argv)
{
    const char *ckpt = NULL, *arch_arg = "max", *out = NULL, *c_dir = NULL, *device = NULL;
    long recal = 2000;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--ckpt") && v) {
            ckpt = v, i++;
        } else if (!strcmp(a, "--arch") && v) {
            arch_arg = v, i++;
        } else if (!strcmp(a, "--out") && v) {
            out = v, i++;
        } else if (!strcmp(a, "--c-array") && v) {
            c_dir = v, i++;
        } else if (!strcmp(a, "--device") && v) {
            device = v, i++;
        } else if (!strcmp(a, "--recal-images")) {
            if (!cmd_parse_long("export", a, v, 1, 1L << 30, &recal))
                return 2;
            i++;
        } else {
            fprintf(stderr, "manta export: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!ckpt || !out) {
        fprintf(stderr, "manta export: --ckpt FILE and --out MODEL.tflite are required\n");
        return 2;
    }
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
        cmd_error("export check", st, &err);
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
