/* manta eval: top-1 of a sub-network of a trained supernet checkpoint, after
 * OFA's BN re-calibration, on the validation split or the test set. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "engine_run.h"
#include "rundata.h"
#include "stereo/state.h"
#include "stereo_cmd.h"

typedef struct eval_opts {
    const char *ckpt, *arch, *split, *device, *model, *data, *predictions, *dump;
    long images, recal;
    bool json;
} eval_opts;

static const char *const SPLITS[] = {"val", "test", NULL};

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, eval_opts *o)
{
    *o = (eval_opts){.arch = "max", .split = "val", .images = -1, .recal = 2000};
    bool recal_seen = false;
    const opt_def defs[] = {
        {.name = "ckpt",
         .kind = OPT_STRING,
         .dest = &o->ckpt,
         .metavar = "FILE",
         .help = "training checkpoint"},
        {.name = "arch",
         .kind = OPT_STRING,
         .dest = &o->arch,
         .metavar = "ARCH",
         .help = "max (default), min or a file in OFA's encoding"},
        {.name = "split",
         .kind = OPT_STRING,
         .dest = &o->split,
         .metavar = "val|test",
         .help = "validation split (default) or the official test set",
         .choices = SPLITS},
        {.name = "images",
         .kind = OPT_LONG,
         .dest = &o->images,
         .lo = 1,
         .hi = 1e18,
         .metavar = "N",
         .help = "evaluate the first N images (default all)"},
        {.name = "recal-images",
         .kind = OPT_LONG,
         .dest = &o->recal,
         .lo = 1,
         .hi = 1e18,
         .metavar = "N",
         .help = "images for BN re-calibration (default 2000)",
         .seen = &recal_seen},
        {.name = "dump",
         .kind = OPT_STRING,
         .dest = &o->dump,
         .metavar = "DIR",
         .help = "with --model: DIR/inputs.bin, outputs.bin, labels.bin (raw tensors per image)"},
        {.name = "model",
         .kind = OPT_STRING,
         .dest = &o->model,
         .metavar = "MODEL",
         .help = "an exported model, run in the inference engine"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &o->data,
         .metavar = "D",
         .help = "with --model alone: the data set (default fashion-mnist)"},
        {.name = "predictions",
         .kind = OPT_STRING,
         .dest = &o->predictions,
         .metavar = "FILE",
         .help = "with --model: each image's label and answer (CSV)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o->device,
         .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o->json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta eval",
        "--ckpt FILE [--arch max|min|ARCH] [--split val|test]\n"
        "                  [--images N] [--recal-images N] [--device SPEC] [--json]\n"
        "       manta eval --model MODEL.tflite [--ckpt FILE --arch ARCH] [--data D]\n"
        "                  [--predictions FILE.csv] ...",
        "Re-calibrates batch norm on --recal-images training images (default 2000, with\n"
        "training augmentation, as OFA) and reports top-1 of the sub-network on the\n"
        "validation split (default) or the official test set. ARCH is a file holding\n"
        "OFA's encoding {\"ks\":[..],\"e\":[..],\"d\":[..],\"r\":[R]}.\n"
        "With --model, the exported file runs in the inference engine on the same\n"
        "images; with --ckpt too, the supernet's sub-network runs beside it and the\n"
        "largest logit difference is reported. --predictions writes the engine's\n"
        "answer for every image (CSV: image,label,predicted), for paired comparisons\n"
        "of two models on the same images. These are the options of a classification\n"
        "checkpoint; a stereo one's follow.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!o->model && !o->ckpt) {
        fprintf(stderr, "manta eval: --ckpt FILE or --model FILE is required (see --help)\n");
        return 2;
    }
    if (!o->model && o->predictions) {
        fprintf(stderr, "manta eval: --predictions needs --model\n");
        return 2;
    }
    if (o->model && !o->ckpt && (o->device || recal_seen)) {
        fprintf(stderr,
                "manta eval: --%s goes with --ckpt (--model alone runs the exported file in "
                "the inference engine, on the CPU)\n",
                o->device ? "device" : "recal-images");
        return 2;
    }
    if (o->ckpt && o->data) {
        fprintf(stderr, "manta eval: --data goes with --model alone (a checkpoint names its data "
                        "set)\n");
        return 2;
    }
    if (o->predictions && !out_check_file("manta eval", "predictions", o->predictions))
        return 2;
    return 1;
}

/* Top-1 (and logits) of a .tflite model in the engine over an eval source;
 * with pairs (2 ints per image, or NULL) each image's label and prediction. */
static bool engine_eval(engine_run *r, eval_source *es, long n, int classes, float *images,
                        float *labels, float *logits, int *pairs, double *top1, FILE **dump)
{
    mengine_view in, out;
    const int R = r->meta.resolution, C = r->meta.channels;
    if (mengine_input(&r->engine, 0, &in) != MENGINE_OK ||
        mengine_tensor(&r->engine, (size_t)r->meta.logits_tensor, &out) != MENGINE_OK ||
        in.count != (size_t)R * R * C || out.count != (size_t)classes) {
        fprintf(stderr,
                "manta eval: the model's input or logits do not match %dx%dx%d and %d "
                "classes\n",
                R, R, C, classes);
        return false;
    }
    long seen = 0, correct = 0;
    for (long b = 0; seen < n; b++) {
        int count = 0;
        if (eval_source_batch(es, b, R, images, labels, &count) != MANTA_OK || count <= 0)
            break;
        for (int i = 0; i < count && seen < n; i++, seen++) {
            const float *img = images + (size_t)i * C * R * R; /* NCHW -> NHWC */
            const int q8 = in.type == MENGINE_INT8; /* an int8 model: the input quantized */
            for (int c = 0; c < C; c++)
                for (int p = 0; p < R * R; p++) {
                    const float x = img[(size_t)c * R * R + p];
                    if (!q8) {
                        in.data[(size_t)p * C + c] = x;
                        continue;
                    }
                    const float v = x / in.scale;
                    const long k = (long)(v >= 0 ? v + 0.5f : v - 0.5f) + in.zero_point;
                    ((int8_t *)in.data)[(size_t)p * C + c] = (int8_t)(k < -128  ? -128
                                                                      : k > 127 ? 127
                                                                                : k);
                }
            /* the input as the engine sees it, before its memory is reused */
            if (dump && fwrite(in.data, q8 ? 1 : 4, in.count, dump[0]) != in.count) {
                fprintf(stderr, "manta eval: writing the dump failed\n");
                return false;
            }
            if (mengine_invoke(&r->engine) != MENGINE_OK) {
                fprintf(stderr, "manta eval: the engine failed on image %ld\n", seen);
                return false;
            }
            float lg[1024];
            for (int k = 0; k < classes && k < 1024; k++)
                lg[k] = out.type == MENGINE_INT8
                            ? out.scale * (float)(((const int8_t *)out.cdata)[k] - out.zero_point)
                            : out.cdata[k];
            int best = 0;
            for (int k = 1; k < classes; k++)
                best = lg[k] > lg[best] ? k : best;
            if (dump) { /* raw input and model output tensors, and the label */
                mengine_view o;
                const int32_t label = (int32_t)labels[i];
                mengine_output(&r->engine, 0, &o);
                const size_t eo = o.type == MENGINE_INT8 ? 1 : 4;
                if (fwrite(o.cdata, eo, o.count, dump[1]) != o.count ||
                    fwrite(&label, 4, 1, dump[2]) != 1) {
                    fprintf(stderr, "manta eval: writing the dump failed\n");
                    return false;
                }
            }
            correct += best == (int)labels[i];
            if (pairs) {
                pairs[2 * seen] = (int)labels[i];
                pairs[2 * seen + 1] = best;
            }
            memcpy(logits + (size_t)seen * classes, lg, (size_t)classes * sizeof *logits);
        }
    }
    *top1 = seen ? (double)correct / (double)seen : 0;
    return true;
}

/* Writes "image,label,predicted" for n images; false after printing why. */
static bool write_predictions(const char *path, const int *pairs, long n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "manta eval: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    fprintf(f, "image,label,predicted\n");
    for (long i = 0; i < n; i++)
        fprintf(f, "%ld,%d,%d\n", i, pairs[2 * i], pairs[2 * i + 1]);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok) {
        fprintf(stderr, "manta eval: writing %s failed: %s\n", path, strerror(errno));
        remove(path);
    }
    return ok;
}

/* manta eval --model: the engine alone, or beside the supernet. */
static int eval_model(const eval_opts *o)
{
    const char *model = o->model, *ckpt = o->ckpt, *pred_path = o->predictions;
    const bool test = !strcmp(o->split, "test");
    engine_run r;
    if (!engine_run_open("eval", model, &r))
        return 1;
    if (o->data && stereo_cmd_is_stereo_data(o->data)) {
        fprintf(stderr, "manta eval: %s is a classification model: it takes no stereo data (%s)\n",
                model, o->data);
        engine_run_close(&r);
        return 2;
    }
    run_ckpt rk;
    memset(&rk, 0, sizeof rk);
    bool ok = ckpt ? run_ckpt_open("eval", ckpt, o->device, &rk)
                   : run_data_load("eval", o->data ? o->data : "fashion-mnist", r.meta.channels,
                                   10000, 1, false, &rk.data);
    bool usage = ok && ckpt && !run_ckpt_check_recal("eval", &rk, o->recal);
    if (usage)
        run_ckpt_close(&rk);
    if (!ok || usage) {
        engine_run_close(&r);
        return usage ? 2 : 1;
    }
    int rc = 1, classes = rk.data.train.classes, B = ckpt ? rk.meta.batch : 64;
    const int R = r.meta.resolution;
    long avail = test ? rk.data.test.count : rk.data.split.n_val;
    long n = o->images < 0 || o->images > avail ? avail : o->images;
    int *scratch = rk.scratch ? rk.scratch : malloc((size_t)B * sizeof *scratch);
    float *img = malloc((size_t)B * r.meta.channels * R * R * sizeof *img);
    float *lab = malloc((size_t)B * sizeof *lab);
    float *le = malloc((size_t)(n ? n : 1) * classes * sizeof *le);
    float *ls = malloc((size_t)(n ? n : 1) * classes * sizeof *ls);
    int *pairs = pred_path ? malloc((size_t)(n ? n : 1) * 2 * sizeof *pairs) : NULL;
    double top_engine = 0, top_net = 0, diff = 0;
    if (!scratch || !img || !lab || !le || !ls || (pred_path && !pairs) ||
        (test && rk.data.test.count == 0)) {
        fprintf(stderr, "manta eval: %s\n",
                test ? "the data set has no test split" : "out of memory");
        goto out;
    }
    aug_params aug = rk.data.aug_eval; /* the model's own normalisation */
    for (int c = 0; c < r.meta.channels && c < r.meta.n_mean && c < r.meta.n_std; c++) {
        aug.mean[c] = r.meta.mean[c];
        aug.std[c] = r.meta.std[c];
    }
    rk.scratch = scratch;
    rk.meta.batch = B;
    eval_source es = run_ckpt_eval_source(&rk, test, &aug);
    FILE *dump[3] = {NULL, NULL, NULL};
    if (o->dump) {
        static const char *const names[3] = {"inputs.bin", "outputs.bin", "labels.bin"};
        for (int k = 0; k < 3; k++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", o->dump, names[k]);
            if (!(dump[k] = fopen(path, "wb")))
                fprintf(stderr, "manta eval: cannot write %s\n", path);
        }
    }
    const bool dump_ok = !o->dump || (dump[0] && dump[1] && dump[2]);
    const bool eval_ok = dump_ok && engine_eval(&r, &es, n, classes, img, lab, le, pairs,
                                                &top_engine, o->dump ? dump : NULL);
    for (int k = 0; k < 3; k++)
        if (dump[k])
            fclose(dump[k]);
    if (!eval_ok)
        goto out;
    if (ckpt) {
        ofa_arch a;
        if (!cmd_load_arch("eval", &rk.space, o->arch, &a))
            goto out;
        if (a.r != R) {
            fprintf(stderr,
                    "manta eval: the model's resolution %d differs from the sub-network's %d\n", R,
                    a.r);
            goto out;
        }
        eval_source rs = run_ckpt_recal_source(&rk), es2 = run_ckpt_eval_source(&rk, test, &aug);
        manta_status st = ofa_trainer_evaluate(rk.trainer, &a, eval_source_batch, &rs, o->recal,
                                               eval_source_batch, &es2, n, &top_net, ls);
        if (st != MANTA_OK) {
            cmd_error("eval", st, mcl_err(rk.dev));
            goto out;
        }
        for (long i = 0; i < n * classes; i++) {
            double dd = le[i] > ls[i] ? le[i] - ls[i] : ls[i] - le[i];
            diff = dd > diff ? dd : diff;
        }
    }
    if (pred_path && !write_predictions(pred_path, pairs, n))
        goto out;
    if (o->json) {
        printf("{\"model\":");
        cmd_json_str(stdout, model);
        printf(",\"split\":\"%s\",\"images\":%ld,\"top1\":%.5f", test ? "test" : "val", n,
               top_engine);
        if (ckpt)
            printf(",\"supernet_top1\":%.5f,\"max_logit_diff\":%.3g", top_net, diff);
        printf(",");
        cmd_json_provenance(stdout, ckpt ? rk.dev : NULL); /* the engine alone: no device */
        printf("}\n");
    } else {
        printf("%s: top-1 %.2f%% on %ld %s images (inference engine)\n", model, 100 * top_engine, n,
               test ? "test" : "validation");
        if (ckpt)
            printf("%s %s: top-1 %.2f%% (training runtime); largest logit difference %.3g\n", ckpt,
                   o->arch, 100 * top_net, diff);
    }
    rc = 0;
out:
    free(img), free(lab), free(le), free(ls), free(pairs);
    if (ckpt)
        run_ckpt_close(&rk);
    else {
        free(scratch);
        run_data_free(&rk.data);
    }
    engine_run_close(&r);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    if (stereo_cmd_model_arg(argc, argv)) /* a stereo model, or any model with a stereo run */
        return cmd_eval_stereo_model(argc, argv);
    if (stereo_cmd_ckpt_arg(argc, argv))
        return cmd_eval_stereo(argc, argv);
    eval_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr == 0 && stereo_cmd_help_arg(argc, argv)) { /* the stereo checkpoints' options too */
        char *help[] = {argv[0], "--help", NULL};
        printf("\nA stereo checkpoint (manta train --space stereo-...) takes these options "
               "instead:\n\n");
        int rc = cmd_eval_stereo(2, help);
        printf("\nAn exported stereo model (manta export --ckpt STEREO.ckpt) takes these:\n\n");
        return rc ? rc : cmd_eval_stereo_model(2, help);
    }
    if (pr != 1)
        return pr;
    if (o.model)
        return eval_model(&o);
    const char *ckpt = o.ckpt, *split = o.split;
    run_ckpt rk;
    if (!run_ckpt_open("eval", ckpt, o.device, &rk))
        return 1;
    int rc = 1, test = !strcmp(split, "test");
    ofa_arch a;
    if (!run_ckpt_check_recal("eval", &rk, o.recal)) {
        rc = 2;
        goto out;
    }
    if (!cmd_load_arch("eval", &rk.space, o.arch, &a))
        goto out;
    if (test && rk.data.test.count == 0) {
        fprintf(stderr, "manta eval: %s has no test set\n", rk.meta.data);
        goto out;
    }
    eval_source rs = run_ckpt_recal_source(&rk), es = run_ckpt_eval_source(&rk, test, NULL);
    long n = o.images < 0 || o.images > es.count ? es.count : o.images;
    double top1 = 0;
    manta_status st = ofa_trainer_evaluate(rk.trainer, &a, eval_source_batch, &rs, o.recal,
                                           eval_source_batch, &es, n, &top1, NULL);
    if (st != MANTA_OK) {
        cmd_error("eval", st, mcl_err(rk.dev));
        goto out;
    }
    char enc[2048];
    ofa_arch_to_json(&rk.space, &a, enc, sizeof enc, NULL);
    if (o.json) {
        printf("{\"ckpt\":");
        cmd_json_str(stdout, ckpt);
        printf(",\"split\":\"%s\",\"images\":%ld,\"arch\":%s,\"top1\":%.5f,", split, n, enc, top1);
        cmd_json_provenance(stdout, rk.dev);
        printf("}\n");
    } else
        printf("%s: %s top-1 %.2f%% on %ld %s images\n", ckpt, o.arch, 100 * top1, n,
               test ? "test" : "validation");
    rc = 0;
out:
    run_ckpt_close(&rk);
    return rc;
}
