/* manta eval --model STEREO.tflite: EPE, bad-1/2/3 and D1 (all and non-occluded pixels) of an
 * exported stereo model run in the inference engine, on a KITTI / Middlebury folder or, with
 * --ckpt, on the run's held-out procedural pairs at the model's size, the training runtime's
 * figures on the same pairs beside them (the sub-network and the size from the model's
 * metadata, batch norm re-calibrated as manta export does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd.h"
#include "common/opts.h"
#include "data/disp_color.h"
#include "data/resample.h"
#include "engine_run.h"
#include "export/tflite.h"
#include "stereo/infer.h"
#include "stereo_cmd.h"

typedef struct sm_opts {
    const char *model, *ckpt, *data, *recal_data, *device;
    long pairs, recal;
    bool json;
} sm_opts;

/* The engine with its two inputs and its output, (1, mh, mw, 3) and (1, mh, mw, 1). */
typedef struct sm_engine {
    engine_run r;
    mengine_view in[2], out;
    int mh, mw;
    uint8_t *u8, *small; /* (H, W, 3) and (mh, mw, 3): a view resized as manta-infer does */
    float *deq;          /* (mh, mw): an int8 output dequantized */
    size_t u8_cap;
} sm_engine;

/* What the runs measured. */
typedef struct sm_result {
    stereo_metrics engine, runtime;
    long pairs;
    bool resized;    /* some pair was not of the model's size */
    double max_diff; /* largest |engine - runtime| disparity, px */
} sm_result;

/* Element @p i of input @p v := @p x (an int8 input: quantized with its scale and zero point,
 * half away from zero, saturated, as manta-infer does). */
static void put_in(mengine_view *v, size_t i, float x)
{
    if (v->type != MENGINE_INT8) {
        v->data[i] = x;
        return;
    }
    const double q = (double)x / v->scale,
                 r = (q >= 0 ? floor(q + 0.5) : -floor(-q + 0.5)) + v->zero_point;
    ((int8_t *)v->data)[i] = (int8_t)(r < -128 ? -128 : r > 127 ? 127 : r);
}

/* View @p chw, (3, h, w) in [0, 1], into the engine's input @p v: as it is at the model's
 * size; else as manta-infer feeds an image file (8-bit, resized with the data pipeline's
 * filter). The metadata's mean and std applied. */
static manta_status load_view(sm_engine *e, const float *chw, int h, int w, mengine_view *v,
                              manta_err *err)
{
    const tflite_meta *m = &e->r.meta;
    const size_t plane = (size_t)h * w, mplane = (size_t)e->mh * e->mw;
    float mean[3], inv[3];
    for (int c = 0; c < 3; c++) {
        mean[c] = c < m->n_mean ? m->mean[c] : 0.0f;
        inv[c] = 1.0f / (c < m->n_std && m->std[c] > 0.0f ? m->std[c] : 1.0f);
    }
    if (h == e->mh && w == e->mw) {
        for (size_t i = 0; i < plane; i++)
            for (int c = 0; c < 3; c++)
                put_in(v, 3 * i + (size_t)c, (chw[(size_t)c * plane + i] - mean[c]) * inv[c]);
        return MANTA_OK;
    }
    if (e->u8_cap < 3 * plane) {
        free(e->u8);
        if (!(e->u8 = malloc(3 * plane)))
            return e->u8_cap = 0, manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of memory");
        e->u8_cap = 3 * plane;
    }
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            const float x = chw[(size_t)c * plane + i] * 255.0f + 0.5f;
            e->u8[3 * i + (size_t)c] = (uint8_t)(x <= 0 ? 0 : x >= 255 ? 255 : x);
        }
    MANTA_TRY(data_rs_resize_u8(e->u8, h, w, 3, e->small, e->mh, e->mw, err));
    for (size_t i = 0; i < mplane; i++)
        for (int c = 0; c < 3; c++)
            put_in(v, 3 * i + (size_t)c, (e->small[3 * i + (size_t)c] / 255.0f - mean[c]) * inv[c]);
    return MANTA_OK;
}

/* The engine's finest disparity of pair @p p into @p pred, (H, W) of the pair, in its pixels:
 * at another size resized back and multiplied by the width ratio, as manta-infer does. */
static manta_status engine_pair(sm_engine *e, const stereo_pair *p, float *pred, manta_err *err)
{
    MANTA_TRY(load_view(e, p->left, p->height, p->width, &e->in[0], err));
    MANTA_TRY(load_view(e, p->right, p->height, p->width, &e->in[1], err));
    if (mengine_invoke(&e->r.engine) != MENGINE_OK)
        return manta_err_set(err, MANTA_ERR_INTERNAL, "the inference engine failed");
    const float scale = e->r.meta.disp_scale > 0.0f ? e->r.meta.disp_scale : 1.0f;
    const float *o = e->out.cdata;
    if (e->out.type == MENGINE_INT8) { /* dequantized into e->deq */
        for (size_t i = 0; i < (size_t)e->mh * e->mw; i++)
            e->deq[i] =
                e->out.scale * (float)(((const int8_t *)e->out.cdata)[i] - e->out.zero_point);
        o = e->deq;
    }
    data_disp_resize(o, e->mh, e->mw, pred, p->height, p->width,
                     (float)p->width / (float)e->mw / scale);
    return MANTA_OK;
}

/* The engine on pairs 0 .. pairs - 1 of folder @p dir (at most its count). */
static manta_status run_folder(const sm_opts *o, sm_engine *e, sm_result *res, manta_err *err)
{
    stereo_set set;
    MANTA_TRY(stereo_folder_open(o->data, STEREO_LAYOUT_AUTO, &set, err));
    manta_status st = MANTA_OK;
    for (long i = 0; i < o->pairs && i < set.count && st == MANTA_OK; i++) {
        stereo_pair p;
        if ((st = stereo_folder_load(&set, (int)i, &p, err)) != MANTA_OK)
            break;
        float *pred = malloc((size_t)p.height * p.width * sizeof *pred);
        st = pred ? engine_pair(e, &p, pred, err)
                  : manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of memory");
        if (st == MANTA_OK) {
            stereo_metrics_add(&res->engine, pred, &p);
            res->resized |= p.height != e->mh || p.width != e->mw;
            res->pairs++;
        }
        free(pred);
        stereo_pair_free(&p);
    }
    stereo_set_free(&set);
    return st;
}

/* The model's "arch" as JSON (malloc'd), its "r" left out when @p drop_r (the model's height,
 * not the crop's); NULL when the metadata has none. */
static char *meta_arch(const sm_engine *e, bool drop_r)
{
    const uint8_t *text = NULL;
    size_t size = 0;
    mengine_model_metadata(&e->r.model, TFLITE_META_PREPROCESS, &text, &size);
    cJSON *root = text ? cJSON_ParseWithLength((const char *)text, size) : NULL;
    cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "arch");
    char *json = NULL;
    if (cJSON_IsObject(arch)) {
        if (drop_r)
            cJSON_DeleteItemFromObjectCaseSensitive(arch, "r");
        json = cJSON_PrintUnformatted(arch);
    }
    cJSON_Delete(root);
    return json;
}

/* The model's sub-network of space @p sp into @p a. */
static manta_status model_arch(const sm_engine *e, const stereo_space *sp, ofa_arch *a,
                               manta_err *err)
{
    char *json = meta_arch(e, true);
    if (!json)
        return manta_err_set(err, MANTA_ERR_FORMAT, "no sub-network (\"arch\") in its metadata");
    manta_status st = stereo_arch_parse(sp, json, a, err);
    free(json);
    return st;
}

/* The checkpoint's trainer re-calibrated as manta export does, and the engine and the runtime
 * on held-out pairs 0 .. pairs - 1 of the run at the model's size. */
static manta_status run_heldout(const sm_opts *o, sm_engine *e, mcl_dev *d, const stereo_space *sp,
                                stereo_meta *m, const ofa_arch *a, sm_result *res, manta_err *err)
{
    ofa_schedule sched;
    stereo_trainer *t = NULL;
    stereo_recal_src rs = {0};
    stereo_batch b = {0};
    bool have_b = false;
    stereo_infer *inf = NULL;
    const size_t plane = (size_t)e->mh * e->mw;
    float *pe = malloc(plane * sizeof *pe), *pr = malloc(plane * sizeof *pr);
    stereo_pair p = {0};
    manta_status st = pe && pr ? stereo_schedule_preset(sp, m->preset, m->batch, 1, &sched, err)
                               : manta_err_set(err, MANTA_ERR_NO_MEMORY, "out of memory");
    if (st == MANTA_OK && (st = stereo_trainer_create(d, sp, &sched, m->seed, &t)) != MANTA_OK)
        *err = *mcl_err(d);
    if (st == MANTA_OK)
        st = stereo_state_load(o->ckpt, t, d, m, err);
    if (st == MANTA_OK)
        st = stereo_recal_open(m, sp, o->recal_data, true, &rs, err);
    if (st == MANTA_OK)
        st = stereo_batch_alloc(&b, m->batch, sp->crop_h, sp->crop_w, stereo_preds(sp), err);
    have_b = st == MANTA_OK;
    if (st == MANTA_OK && (st = stereo_trainer_recalibrate(t, a, &b, stereo_ordered_batch, &rs.src,
                                                           o->recal)) != MANTA_OK)
        *err = *mcl_err(d);
    if (st == MANTA_OK)
        st = stereo_infer_create(d, stereo_trainer_net(t), a, &inf, err);
    if (st == MANTA_OK && (e->mh != sp->crop_h || e->mw != sp->crop_w))
        stereo_infer_set_recal(inf, &rs.src, o->recal); /* at the model's size, as export */
    stereo_source src;
    stereo_heldout_source(sp, m->seed, o->pairs, &src);
    src.synth.width = e->mw, src.synth.height = e->mh;
    src.synth.photos = rs.photos.count > 0 ? &rs.photos : NULL;
    if (st == MANTA_OK)
        st = stereo_pair_alloc(&p, e->mh, e->mw, err);
    for (long i = 0; i < o->pairs && st == MANTA_OK; i++) {
        char name[64];
        snprintf(name, sizeof name, "held-out pair %ld", i);
        if ((st = stereo_synth_generate(&src.synth, src.base + (uint64_t)i, &p, err)) != MANTA_OK ||
            (st = engine_pair(e, &p, pe, err)) != MANTA_OK ||
            (st = stereo_infer_pair(inf, &p, name, pr, NULL, err)) != MANTA_OK)
            break;
        stereo_metrics_add(&res->engine, pe, &p);
        stereo_metrics_add(&res->runtime, pr, &p);
        for (size_t k = 0; k < plane; k++) {
            const double dd = fabs((double)pe[k] - pr[k]);
            res->max_diff = dd > res->max_diff || isnan(dd) ? dd : res->max_diff;
        }
        res->pairs++;
    }
    stereo_pair_free(&p);
    stereo_infer_destroy(inf);
    if (t)
        stereo_trainer_restore_bn(t);
    if (have_b)
        stereo_batch_free(&b);
    stereo_recal_close(&rs);
    stereo_trainer_destroy(t);
    free(pe);
    free(pr);
    return st;
}

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, sm_opts *o)
{
    *o = (sm_opts){.pairs = 200, .recal = 200};
    bool recal_seen = false;
    const opt_def defs[] = {
        {.name = "model",
         .kind = OPT_STRING,
         .dest = &o->model,
         .metavar = "MODEL",
         .help = "a stereo model of manta export (required)"},
        {.name = "ckpt",
         .kind = OPT_STRING,
         .dest = &o->ckpt,
         .metavar = "FILE",
         .help = "the stereo checkpoint it was exported from: its held-out pairs, the runtime "
                 "beside the engine"},
        {.name = "data",
         .kind = OPT_STRING,
         .dest = &o->data,
         .metavar = "DIR",
         .help = "without --ckpt: a KITTI / Middlebury folder (pairs resized to the model's "
                 "input)"},
        {.name = "pairs",
         .kind = OPT_LONG,
         .dest = &o->pairs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "pairs evaluated (default 200; a folder: at most its pairs)"},
        {.name = "recal-pairs",
         .kind = OPT_LONG,
         .dest = &o->recal,
         .lo = 0,
         .hi = 1e7,
         .metavar = "N",
         .help = "with --ckpt: the runtime's BN re-calibration pairs, as the export's (default "
                 "200; 0: none, the running statistics)",
         .seen = &recal_seen},
        {.name = "recal-data",
         .kind = OPT_STRING,
         .dest = &o->recal_data,
         .metavar = "D",
         .help = "with --ckpt: the runtime's BN re-calibration data, as the export's (default: "
                 "the run's training data)"},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o->device,
         .metavar = "SPEC",
         .help = "with --ckpt: OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &o->json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta eval",
        "--model STEREO.tflite [--ckpt STEREO.ckpt] [--data DIR] [--pairs N] [--json]",
        "Disparity quality of an exported stereo model run in the inference engine: EPE,\n"
        "bad-1/2/3 and D1 over every valid pixel and over the non-occluded ones, as manta\n"
        "eval --ckpt prints them. With --data DIR, on the pairs of a KITTI / Middlebury\n"
        "folder: a pair of another size than the model's input is resized to it as\n"
        "manta-infer does (8-bit views, the data pipeline's triangle filter), and the\n"
        "disparity resized back to the pair's size (bilinear) and multiplied by the width\n"
        "ratio, then scored at every pixel of the pair. With --ckpt, on the run's held-out\n"
        "procedural pairs generated at the model's size, and the training runtime's\n"
        "figures on the same pairs beside them: the sub-network and the size are the\n"
        "model's (its metadata), batch norm re-calibrated as manta export does\n"
        "(--recal-pairs and --recal-data as given to the export); the largest disparity\n"
        "difference between the two is reported.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!o->model) {
        fprintf(stderr, "manta eval: --model FILE is required\n");
        return 2;
    }
    if (!o->ckpt && !o->data) {
        fprintf(stderr,
                "manta eval: %s: a stereo model is scored on --data DIR (a KITTI / "
                "Middlebury folder) or on the held-out pairs of --ckpt STEREO.ckpt\n",
                o->model);
        return 2;
    }
    if (o->ckpt && o->data) {
        fprintf(stderr, "manta eval: --data goes without --ckpt (with --ckpt the run's held-out "
                        "pairs are scored)\n");
        return 2;
    }
    if (!o->ckpt && (o->device || o->recal_data || recal_seen)) {
        fprintf(stderr, "manta eval: --%s goes with --ckpt\n",
                o->device       ? "device"
                : o->recal_data ? "recal-data"
                                : "recal-pairs");
        return 2;
    }
    return 1;
}

/* The figures as text or JSON. */
static void print_result(const sm_opts *o, const sm_engine *e, const stereo_space *sp,
                         const char *arch, const sm_result *res, mcl_dev *d)
{
    stereo_scores all, noc, rall = {0}, rnoc = {0};
    stereo_metrics_scores(&res->engine, &all, &noc);
    if (o->ckpt)
        stereo_metrics_scores(&res->runtime, &rall, &rnoc);
    const double epe_diff = fabs(all.epe - rall.epe);
    if (o->json) {
        printf("{\"model\":");
        cmd_json_str(stdout, o->model);
        printf(",\"task\":\"stereo\",\"space\":");
        cmd_json_str(stdout, e->r.meta.space);
        printf(",\"arch\":%s,\"height\":%d,\"width\":%d,\"data\":", arch[0] ? arch : "null", e->mh,
               e->mw);
        cmd_json_str(stdout, o->ckpt ? "held-out" : o->data);
        printf(",\"pairs\":%ld,\"resized\":%s,", res->pairs, res->resized ? "true" : "false");
        stereo_cmd_print_scores("all", &all, true, 0);
        printf(",");
        stereo_cmd_print_scores("noc", &noc, true, 0);
        printf(",");
        if (o->ckpt) {
            printf("\"ckpt\":");
            cmd_json_str(stdout, o->ckpt);
            printf(",\"runtime\":{");
            stereo_cmd_print_scores("all", &rall, true, 0);
            printf(",");
            stereo_cmd_print_scores("noc", &rnoc, true, 0);
            printf("},\"epe_diff\":%.3g,\"max_disparity_diff\":%.3g,", epe_diff, res->max_diff);
        }
        cmd_json_provenance(stdout, d);
        printf("}\n");
        return;
    }
    printf("%s: %s, sub-network %s, %dx%d; %ld %s%s\n", o->model, sp ? sp->name : e->r.meta.space,
           arch[0] ? arch : "(not in the metadata)", e->mw, e->mh, res->pairs,
           o->ckpt ? "held-out pairs of " : "pairs of ", o->ckpt ? o->ckpt : o->data);
    if (res->resized)
        printf("(pairs of another size resized to the model's input and the disparity back, "
               "as manta-infer does)\n");
    printf("inference engine:\n");
    stereo_cmd_print_scores("all", &all, false, 2);
    stereo_cmd_print_scores("noc", &noc, false, 2);
    if (o->ckpt) {
        printf("training runtime:\n");
        stereo_cmd_print_scores("all", &rall, false, 2);
        stereo_cmd_print_scores("noc", &rnoc, false, 2);
        printf("EPE difference %.3g px; largest disparity difference %.3g px\n", epe_diff,
               res->max_diff);
    }
}

int cmd_eval_stereo_model(int argc, char **argv)
{
    sm_opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 1)
        return pr;
    sm_engine e = {0};
    if (!engine_run_open("eval", o.model, &e.r))
        return 1;
    int rc = 1;
    mcl_dev *d = NULL;
    manta_err err = {0};
    sm_result res = {0};
    stereo_space sp;
    stereo_meta m;
    ofa_arch a;
    char arch[1024] = "";
    if (strcmp(e.r.meta.task, "stereo") != 0) {
        fprintf(stderr, "manta eval: %s is a classification model: it takes no stereo data (%s)\n",
                o.model, o.ckpt ? o.ckpt : o.data);
        rc = 2;
        goto out;
    }
    if (mengine_input(&e.r.engine, 0, &e.in[0]) != MENGINE_OK ||
        mengine_input(&e.r.engine, 1, &e.in[1]) != MENGINE_OK ||
        mengine_output(&e.r.engine, 0, &e.out) != MENGINE_OK || e.in[0].rank != 4 ||
        e.in[0].dims[3] != 3 || memcmp(e.in[0].dims, e.in[1].dims, sizeof e.in[0].dims) ||
        e.out.rank != 4 || e.out.dims[1] != e.in[0].dims[1] || e.out.dims[2] != e.in[0].dims[2] ||
        e.out.dims[3] != 1) {
        fprintf(stderr,
                "manta eval: %s: not a stereo model (two (1, H, W, 3) inputs and a (1, H, W, 1) "
                "output)\n",
                o.model);
        goto out;
    }
    e.mh = (int)e.in[0].dims[1], e.mw = (int)e.in[0].dims[2];
    if (!(e.small = malloc((size_t)e.mh * e.mw * 3)) ||
        !(e.deq = malloc((size_t)e.mh * e.mw * sizeof *e.deq))) {
        fprintf(stderr, "manta eval: out of memory\n");
        goto out;
    }
    char *json = meta_arch(&e, false); /* as the model has it: "r" its height */
    snprintf(arch, sizeof arch, "%s", json ? json : "");
    free(json);
    manta_status st;
    if (o.ckpt) {
        if ((st = stereo_state_peek(o.ckpt, &sp, &m, &err)) != MANTA_OK) {
            fprintf(stderr, "manta eval: %s (a stereo model takes the stereo run it came from)\n",
                    err.msg);
            rc = st == MANTA_ERR_FORMAT ? 2 : 1; /* another kind of checkpoint: usage */
            goto out;
        }
        if (strcmp(sp.name, e.r.meta.space) != 0) {
            fprintf(stderr, "manta eval: %s is a model of space %s, %s a run of %s\n", o.model,
                    e.r.meta.space[0] ? e.r.meta.space : "(none)", o.ckpt, sp.name);
            rc = 2;
            goto out;
        }
        if (model_arch(&e, &sp, &a, &err) != MANTA_OK) {
            fprintf(stderr, "manta eval: %s: %s\n", o.model, err.msg);
            goto out;
        }
        if (!(d = cmd_open_device("eval", o.device)))
            goto out;
        st = run_heldout(&o, &e, d, &sp, &m, &a, &res, &err);
    } else
        st = run_folder(&o, &e, &res, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta eval: %s\n", err.msg);
        goto out;
    }
    if (res.engine.all.pixels == 0) {
        fprintf(stderr,
                "manta eval: no pixel of %s has a ground-truth disparity: nothing to score\n",
                o.ckpt ? o.ckpt : o.data);
        goto out;
    }
    print_result(&o, &e, o.ckpt ? &sp : NULL, arch, &res, d);
    rc = 0;
out:
    if (d)
        mcl_close(d);
    free(e.u8);
    free(e.small);
    free(e.deq);
    engine_run_close(&e.r);
    return rc;
}
