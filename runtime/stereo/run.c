/* The settings and data of a stereo training run: option checks, a new run's settings, its
 * folders, photographs, schedule and the sources of its pairs (stereo/run.h). */
#include "stereo/run.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *stereo_run_conflict(const stereo_run_opts *o)
{
    if (o->init && o->resume)
        return "--init starts a new run from a checkpoint and --resume continues one: give one "
               "of them (a fine-tuning run stopped with --stop-after continues with --resume "
               "alone)";
    if (o->mix >= 0 && !strcmp(o->data, "synthetic") && !o->resume)
        return "--mix R mixes procedural pairs into a folder's, and the run has no folder: give "
               "--data DIR (without it every pair is procedural)";
    if (o->schedule && !strcmp(o->schedule, "finetune") && !o->init && !o->resume)
        return "--schedule finetune continues a trained supernet: give --init CKPT (a stereo "
               "checkpoint of manta train)";
    return NULL;
}

const char *stereo_run_textures(const stereo_run_opts *o, bool procedural, bool *missing)
{
    *missing = false;
    if (o->textures)
        return strcmp(o->textures, "none") != 0 ? o->textures : NULL;
    if (!procedural)
        return NULL;
    struct stat st;
    if (stat(photo_bank_dir("default"), &st) == 0 && S_ISDIR(st.st_mode))
        return "default";
    *missing = true;
    return NULL;
}

manta_status stereo_run_meta_new(const stereo_run_opts *o, const stereo_space *sp, stereo_meta *m,
                                 stereo_meta *init, bool *missing, manta_err *err)
{
    memset(m, 0, sizeof *m);
    memset(init, 0, sizeof *init);
    snprintf(m->preset, sizeof m->preset, "%s", o->schedule ? o->schedule : "");
    snprintf(m->data, sizeof m->data, "%s", o->data);
    m->batch = o->batch;
    m->seed = (uint64_t)o->seed;
    m->train_pairs = o->train_pairs;
    snprintf(m->val_data, sizeof m->val_data, "synthetic");
    m->lr_scale = o->lr_scale;
    m->mix = o->mix > 0 ? o->mix : 0;
    snprintf(m->init, sizeof m->init, "%s", o->init ? o->init : "");
    const bool procedural = strcmp(m->data, "synthetic") == 0 || m->mix > 0;
    const char *tx = stereo_run_textures(o, procedural, missing);
    snprintf(m->textures, sizeof m->textures, "%s", tx ? tx : "");
    if (tx && o->textures && !procedural)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "--textures gives photographs to procedural pairs; the run "
                             "trains on the folder %s (--data synthetic, or --mix R for "
                             "procedural pairs among the folder's, to use them)",
                             m->data);
    if (o->init) { /* before anything is written */
        manta_err e = {0};
        manta_status st = stereo_state_peek_init(o->init, sp, init, &e);
        if (st != MANTA_OK)
            return manta_err_set(err, st, "--init: %s", e.msg);
    }
    return MANTA_OK;
}

manta_status stereo_run_data_open(stereo_run_data *d, const stereo_space *sp, const stereo_meta *m,
                                  manta_err *err)
{
    memset(d, 0, sizeof *d);
    if (strcmp(m->data, "synthetic") != 0) {
        MANTA_TRY(stereo_folder_open(m->data, STEREO_LAYOUT_AUTO, &d->set, err));
        d->have_set = true;
    }
    if (strcmp(m->val_data, "synthetic") != 0) {
        MANTA_TRY(stereo_folder_open(m->val_data, STEREO_LAYOUT_AUTO, &d->val_set, err));
        d->have_val_set = true;
        for (int i = 0; i < d->val_set.count; i++)
            if (!d->val_set.disp[i])
                return manta_err_set(err, MANTA_ERR_FORMAT,
                                     "%s: pair %s has no disparity map to evaluate against",
                                     m->val_data, d->val_set.name[i]);
    }
    /* kept in the checkpoint: a resumed run makes the same pairs */
    return stereo_state_photos(m, sp, &d->photos, &d->report, err);
}

manta_status stereo_run_plan(stereo_run_data *d, const stereo_space *sp, const stereo_meta *m,
                             long eval_pairs, ofa_schedule *sched, manta_err *err)
{
    const long pairs = d->have_set ? d->set.count : m->train_pairs;
    manta_status st = stereo_schedule_preset(
        sp, m->preset, m->batch, pairs / m->batch > 0 ? pairs / m->batch : 1, sched, err);
    for (int i = 0; i < sched->n_phases; i++) /* kept in the checkpoint */
        sched->phase[i].lr *= (float)m->lr_scale;
    d->train = (stereo_source){.kind = d->have_set ? STEREO_SOURCE_FOLDER : STEREO_SOURCE_SYNTH,
                               .count = pairs,
                               .set = d->have_set ? &d->set : NULL};
    stereo_synth_opts_default(&d->train.synth, sp->crop_w, sp->crop_h, (float)sp->max_disp,
                              m->seed);
    const photo_bank *photos = d->photos.count > 0 ? &d->photos : NULL;
    d->train.synth.photos = photos; /* also the phase ends' re-calibration pairs */
    d->gen = (stereo_source){.kind = STEREO_SOURCE_SYNTH, .count = m->train_pairs};
    stereo_synth_opts_default(&d->gen.synth, sp->crop_w, sp->crop_h, (float)sp->max_disp, m->seed);
    d->gen.synth.photos = photos;
    if (d->have_val_set) {
        d->eval = (stereo_source){
            .kind = STEREO_SOURCE_FOLDER, .count = d->val_set.count, .set = &d->val_set};
    } else {
        stereo_heldout_source(sp, m->seed, eval_pairs, &d->eval);
        d->eval.synth.photos = photos;
    }
    return st;
}

stereo_steps stereo_run_steps(const stereo_run_data *d, const stereo_space *sp,
                              const stereo_meta *m)
{
    return (stereo_steps){.space = sp,
                          .seed = m->seed,
                          .train = &d->train,
                          .gen = &d->gen,
                          .mix = m->mix,
                          .folder = d->have_set};
}

manta_status stereo_run_evaluate(stereo_trainer *t, stereo_batch *b, const stereo_space *sp,
                                 stereo_run_data *d, long recal_pairs, long eval_pairs,
                                 stereo_scores big[2], stereo_scores small[2], manta_err *err)
{
    ofa_arch a[2];
    stereo_arch_max(sp, &a[0]);
    stereo_arch_min(sp, &a[1]);
    stereo_scores *out[2] = {big, small};
    for (int i = 0; i < 2; i++) {
        stereo_metrics m = {0};
        MANTA_TRY(stereo_steps_resize(b, sp->crop_h, sp->crop_w, err));
        MANTA_TRY(stereo_trainer_evaluate(t, &a[i], b, stereo_ordered_batch, &d->train, recal_pairs,
                                          stereo_ordered_batch, &d->eval, eval_pairs, &m, NULL));
        stereo_metrics_scores(&m, &out[i][0], &out[i][1]);
    }
    return MANTA_OK;
}

int stereo_run_dead_taps(const stereo_space *sp, const stereo_meta *m, int *h, int *w, char *what,
                         size_t cap)
{
    *h = sp->crop_h, *w = sp->crop_w; /* a folder's pairs train at the crop alone */
    if (strcmp(m->data, "synthetic") == 0)
        stereo_space_plan_size(sp, h, w);
    return stereo_space_dead_taps(sp, *h, *w, what, cap);
}

manta_status stereo_run_replicas(mcl_dev *const *devs, int n_dev, const stereo_space *sp,
                                 const ofa_schedule *sched, stereo_meta *m, dp_mode mode,
                                 ring_comm *ring, const char *resume, const char *init,
                                 dp_trainer **out, manta_err *err)
{
    MANTA_TRY(stereo_dp_create(devs, n_dev, sp, sched, m->seed, mode, ring, out, err));
    for (int i = 0; resume && i < n_dev; i++) /* every replica */
        MANTA_TRY(stereo_state_load(resume, dp_replica(*out, i), devs[i], m, err));
    for (int i = 0; !resume && init && i < n_dev; i++)
        MANTA_TRY(stereo_state_init(init, dp_replica(*out, i), devs[i], err));
    return MANTA_OK;
}

void stereo_run_data_free(stereo_run_data *d)
{
    if (d->have_set)
        stereo_set_free(&d->set);
    if (d->have_val_set)
        stereo_set_free(&d->val_set);
    photo_bank_free(&d->photos);
    d->have_set = d->have_val_set = false;
}
