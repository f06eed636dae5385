/* What the commands taking a stereo checkpoint share: the sub-network argument and the
 * run's re-calibration pairs. */
#include "stereo_cmd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/fileio.h"
#include "data/stereo_folder.h"
#include "engine/engine.h"
#include "export/tflite.h"
#include "export/tflite_meta.h"

/* The value of option @p name ("--ckpt") in argv, before "--"; NULL when absent. */
static const char *arg_value(int argc, char **argv, const char *name)
{
    const size_t len = strlen(name);
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (!strcmp(argv[i], name) && i + 1 < argc)
            return argv[i + 1];
        if (!strncmp(argv[i], name, len) && argv[i][len] == '=')
            return argv[i] + len + 1;
    }
    return NULL;
}

bool stereo_cmd_ckpt_arg(int argc, char **argv)
{
    const char *v = arg_value(argc, argv, "--ckpt");
    stereo_space sp;
    stereo_meta m;
    manta_err err = {0};
    return v && stereo_state_peek(v, &sp, &m, &err) == MANTA_OK;
}

/* Whether the file at @p path is a model whose metadata says "task": "stereo". */
static bool model_is_stereo(const char *path)
{
    size_t size = 0;
    void *file = cmd_read_aligned(path, &size);
    mengine_model model;
    const uint8_t *text = NULL;
    size_t text_size = 0;
    tflite_meta meta;
    manta_err err = {0};
    char msg[256];
    bool stereo = false;
    if (file && size > 0 &&
        mengine_model_load(&model, file, size, NULL, msg, sizeof msg) == MENGINE_OK &&
        mengine_model_metadata(&model, TFLITE_META_PREPROCESS, &text, &text_size) == MENGINE_OK &&
        tflite_meta_parse((const char *)text, text_size, &meta, &err) == MANTA_OK) {
        stereo = !strcmp(meta.task, "stereo");
        tflite_meta_free(&meta);
    }
    free(file);
    return stereo;
}

bool stereo_cmd_model_arg(int argc, char **argv)
{
    const char *model = arg_value(argc, argv, "--model");
    return model && (model_is_stereo(model) || stereo_cmd_ckpt_arg(argc, argv));
}

bool stereo_cmd_is_stereo_data(const char *path)
{
    if (!strcmp(path, "synthetic"))
        return true;
    stereo_set set;
    manta_err err = {0};
    if (stereo_folder_open(path, STEREO_LAYOUT_AUTO, &set, &err) != MANTA_OK)
        return false;
    stereo_set_free(&set);
    return true;
}

/* A JSON member "name": number, or null when not finite. */
static void json_num(const char *name, double v, int decimals)
{
    if (isfinite(v))
        printf("\"%s\":%.*f,", name, decimals, v);
    else
        printf("\"%s\":null,", name);
}

void stereo_cmd_print_scores(const char *what, const stereo_scores *s, bool json, int indent)
{
    if (s->pixels == 0 && !json) {
        printf("%*s%-4s no pixel with a ground-truth disparity: no figures\n", indent, "", what);
        return;
    }
    if (json) {
        printf("\"%s\":{", what);
        json_num("epe", s->epe, 6);
        json_num("bad1", s->bad1, 4);
        json_num("bad2", s->bad2, 4);
        json_num("bad3", s->bad3, 4);
        json_num("d1", s->d1, 4);
        printf("\"pixels\":%ld}", s->pixels);
        return;
    }
    printf("%*s%-4s EPE %.3f px  bad-1 %.2f%%  bad-2 %.2f%%  bad-3 %.2f%%  D1 %.2f%%  (%ld "
           "pixels)\n",
           indent, "", what, s->epe, s->bad1, s->bad2, s->bad3, s->d1, s->pixels);
}

bool stereo_cmd_help_arg(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return true;
    return false;
}

manta_status stereo_cmd_arch(const stereo_space *sp, const char *arg, ofa_arch *a, manta_err *err)
{
    if (!strcmp(arg, "max")) {
        stereo_arch_max(sp, a);
        return MANTA_OK;
    }
    if (!strcmp(arg, "min")) {
        stereo_arch_min(sp, a);
        return MANTA_OK;
    }
    char *text = NULL;
    size_t len;
    manta_status st = manta_file_read(arg, 1 << 20, &text, &len, err);
    if (st == MANTA_OK)
        st = stereo_arch_parse(sp, text, a, err);
    free(text);
    return st;
}

manta_status stereo_recal_open(const stereo_meta *m, const stereo_space *sp, const char *recal_data,
                               bool photos, stereo_recal_src *r, manta_err *err)
{
    memset(r, 0, sizeof *r);
    const char *rd = recal_data ? recal_data : m->data;
    r->src = (stereo_source){.kind = STEREO_SOURCE_SYNTH, .count = m->train_pairs};
    stereo_synth_opts_default(&r->src.synth, sp->crop_w, sp->crop_h, (float)sp->max_disp, m->seed);
    r->folder = strcmp(rd, "synthetic") != 0;
    if (!r->folder || photos)
        MANTA_TRY(stereo_state_photos(m, sp, &r->photos, NULL, err));
    r->src.synth.photos = r->photos.count > 0 ? &r->photos : NULL;
    if (!r->folder)
        return MANTA_OK;
    manta_err ferr = {0};
    if (stereo_folder_open(rd, STEREO_LAYOUT_AUTO, &r->set, &ferr) != MANTA_OK) {
        photo_bank_free(&r->photos);
        r->folder = false;
        return manta_err_set(err, MANTA_ERR_IO,
                             "re-calibration data%s: %s (--recal-data D: another folder, or "
                             "synthetic)",
                             recal_data ? "" : " (the run's training folder)", ferr.msg);
    }
    r->src = (stereo_source){.kind = STEREO_SOURCE_FOLDER, .count = r->set.count, .set = &r->set};
    return MANTA_OK;
}

void stereo_recal_close(stereo_recal_src *r)
{
    if (r->folder)
        stereo_set_free(&r->set);
    photo_bank_free(&r->photos);
    memset(r, 0, sizeof *r);
}

bool stereo_cmd_ckpt_open(const char *cmd, const char *path, const char *device, stereo_cmd_ckpt *c)
{
    memset(c, 0, sizeof *c);
    manta_err err = {0};
    ofa_schedule sched;
    manta_status st = stereo_state_peek(path, &c->sp, &c->m, &err);
    if (st == MANTA_OK)
        st = stereo_schedule_preset(&c->sp, c->m.preset, c->m.batch, 1, &sched, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta %s: %s\n", cmd, err.msg);
        return false;
    }
    if (!(c->dev = cmd_open_device(cmd, device)))
        return false;
    if ((st = stereo_trainer_create(c->dev, &c->sp, &sched, c->m.seed, &c->t)) != MANTA_OK)
        err = *mcl_err(c->dev);
    if (st == MANTA_OK)
        st = stereo_state_load(path, c->t, c->dev, &c->m, &err);
    if (st == MANTA_OK &&
        (st = stereo_recal_open(&c->m, &c->sp, NULL, true, &c->rs, &err)) == MANTA_OK)
        c->have_rs = true;
    if (st == MANTA_OK && (st = stereo_batch_alloc(&c->b, c->m.batch, c->sp.crop_h, c->sp.crop_w,
                                                   stereo_preds(&c->sp), &err)) == MANTA_OK)
        c->have_b = true;
    if (st != MANTA_OK) {
        fprintf(stderr, "manta %s: %s\n", cmd, err.msg);
        return false;
    }
    return true;
}

manta_status stereo_cmd_ckpt_heldout(stereo_cmd_ckpt *c, const ofa_arch *a, long pairs, long recal,
                                     stereo_scores *all, stereo_scores *noc, manta_err *err)
{
    stereo_source eval_src;
    stereo_heldout_source(&c->sp, c->m.seed, pairs, &eval_src);
    eval_src.synth.photos = c->rs.photos.count > 0 ? &c->rs.photos : NULL;
    stereo_metrics mt = {0};
    manta_status st =
        stereo_trainer_evaluate(c->t, a, &c->b, stereo_ordered_batch, &c->rs.src, recal,
                                stereo_ordered_batch, &eval_src, pairs, &mt, NULL);
    if (st != MANTA_OK) {
        *err = *mcl_err(c->dev);
        return st;
    }
    stereo_metrics_scores(&mt, all, noc);
    return MANTA_OK;
}

void stereo_cmd_ckpt_close(stereo_cmd_ckpt *c)
{
    if (c->have_b)
        stereo_batch_free(&c->b);
    if (c->have_rs)
        stereo_recal_close(&c->rs);
    stereo_trainer_destroy(c->t);
    if (c->dev)
        mcl_close(c->dev);
    memset(c, 0, sizeof *c);
}

/* Sub-networks a step of the presets at most (the trainer's results buffer). */
#define AUTO_SUBNETS 4

/* @p bytes as "12.3 MB" or "4.56 GB" into @p buf (32 bytes). */
static const char *fmt_bytes(char *buf, unsigned long long bytes)
{
    if (bytes < 1000000000ull)
        snprintf(buf, 32, "%.1f MB", bytes / 1e6);
    else
        snprintf(buf, 32, "%.2f GB", bytes / 1e9);
    return buf;
}

int stereo_cmd_auto_batch(mcl_dev *d, const stereo_space *sp, int n_dev)
{
    const mcl_device_info *in = mcl_info(d);
    int per;
    stereo_mem m;
    manta_status st = stereo_trainer_pick_batch(d, sp, AUTO_SUBNETS, 64 / n_dev, in->global_mem,
                                                in->max_alloc, &per, &m);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: --batch auto: %s\n", manta_err_msg(mcl_err(d), st));
        return 0;
    }
    char b1[32], b2[32], b3[32], b4[32];
    if (per == 0) {
        if (m.unit_bytes > in->max_alloc)
            fprintf(stderr,
                    "manta train: --batch auto: device '%s' cannot train %s at batch 1: its %s "
                    "need one buffer of %s, above the device's largest allocation of %s\n",
                    in->name, sp->name, m.unit_what, fmt_bytes(b1, m.unit_bytes),
                    fmt_bytes(b2, in->max_alloc));
        else
            fprintf(stderr,
                    "manta train: --batch auto: device '%s' cannot train %s at batch 1: %s of "
                    "buffers, above 95%% of the device's global memory of %s\n",
                    in->name, sp->name, fmt_bytes(b1, m.bytes), fmt_bytes(b2, in->global_mem));
        return 0;
    }
    printf("--batch auto: %d pair(s) per step%s on '%s': %s planned of its %s (batch %d %s), "
           "the largest buffer %s (%s) of its largest allocation %s\n",
           per * n_dev, n_dev > 1 ? " (per device x devices)" : "", in->name,
           fmt_bytes(b1, m.bytes), fmt_bytes(b2, in->global_mem), per + 1,
           per == 64 / n_dev ? "is above --batch's 64" : "would not fit",
           fmt_bytes(b3, m.unit_bytes), m.unit_what, fmt_bytes(b4, in->max_alloc));
    fflush(stdout);
    return per * n_dev;
}

bool stereo_cmd_batch_arg(const char *arg, int *batch, bool *is_auto)
{
    if (!strcmp(arg, "auto")) {
        *is_auto = true;
        return true;
    }
    char *end;
    long b = strtol(arg, &end, 10);
    if (end == arg || *end || b < 1 || b > 64) {
        fprintf(stderr, "manta train: --batch: '%s' is not a batch of 1 to 64 pairs or auto\n",
                arg);
        return false;
    }
    *batch = (int)b;
    return true;
}

const char stereo_cmd_train_about[] =
    "Trains the stereo depth supernet with progressive shrinking (full network, then\n"
    "elastic kernel, depth and expand ratio; the full network's disparity distilled into\n"
    "the sub-networks), the multi-scale L1 disparity loss with its weight moving from the\n"
    "coarse predictions to the finest. Pairs: procedural (layered textured shapes,\n"
    "sub-pixel disparity, occlusions; manta stereo-data writes the same ones) or a KITTI /\n"
    "Middlebury folder (random crops, colour jitter per view). Photographs (--textures\n"
    "DIR of JPEG / PNG files; 'default', the default when installed: Debian's\n"
    "mate-backgrounds nature photographs; 'none': procedural textures alone) make a third\n"
    "of the procedural pairs with photographic textures and a third from single\n"
    "photographs (their colour regions the layers of the disparity field, disocclusions\n"
    "filled from another photograph); the folder is kept in the checkpoint for --resume\n"
    "and manta eval. Never use the views of stereo pairs as textures. Every phase's end\n"
    "evaluates the largest and the smallest sub-network on held-out pairs (EPE, bad-3,\n"
    "D1; --val-data: crops of a folder's pairs, each placed by its index, batch norm\n"
    "re-calibrated on the training data) and writes a checkpoint; metrics.jsonl has\n"
    "every figure, and a new TensorBoard event file in DIR (or --tensorboard) the\n"
    "scalars (train/*, val/*, rank<R>/*). latest.ckpt is also written every\n"
    "--ckpt-every steps and on a stop: --stop-after N, or SIGINT/SIGTERM (after the\n"
    "step under way; exit status 130); --resume continues it exactly.\n\n"
    "Fine-tuning: --init CKPT (a checkpoint of manta train on the same stereo space)\n"
    "loads its parameters and batch-norm statistics into a new run (step 0, fresh\n"
    "momentum, its own --out), by default on the finetune schedule: one phase of 200\n"
    "steps sampling every kernel size, depth, expand ratio and decoder width (four\n"
    "sub-networks a step, the largest first and the smallest last), distilling from\n"
    "the initial network's largest sub-network, learning rate 0.003, no width\n"
    "re-organisation, so every sub-network keeps working. --mix R with --data DIR puts\n"
    "round(R x batch) procedural pairs first in every batch, the rest the folder's\n"
    "crops (so that a small folder does not make the network forget the general case).\n\n"
    "--devices and ranks ('manta launch -n N -- manta train --space stereo-cpu ...') as\n"
    "for classification: --batch is the global batch, a multiple of ranks x devices;\n"
    "--mode data (every replica the same sub-networks, batch norm synchronised) or\n"
    "subnet (each rank its own sub-networks). Rank 0 writes checkpoints and metrics.\n";
