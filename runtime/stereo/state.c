#include "stereo/state.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "train/checkpoint.h"

#define FORMAT "manta-stereo-train"

/* "train_pairs", "val_data", with photographs "textures", "lr_scale", with generated
 * pairs mixed into a folder's "mix", and for a fine-tuning run "init", after the common
 * members. */
static bool put_meta(cJSON *j, const void *user)
{
    const stereo_meta *m = user;
    return cJSON_AddNumberToObject(j, "train_pairs", (double)m->train_pairs) &&
           cJSON_AddStringToObject(j, "val_data", m->val_data) &&
           (!m->textures[0] || cJSON_AddStringToObject(j, "textures", m->textures)) &&
           cJSON_AddNumberToObject(j, "lr_scale", m->lr_scale > 0 ? m->lr_scale : 1.0) &&
           (!(m->mix > 0) || cJSON_AddNumberToObject(j, "mix", m->mix)) &&
           (!m->init[0] || cJSON_AddStringToObject(j, "init", m->init));
}

static bool get_meta(const cJSON *j, void *user)
{
    stereo_meta *m = user;
    double pairs = 0;
    if (!manta_json_number(j, "train_pairs", 1, 0x1p53, &pairs))
        return false;
    m->train_pairs = (long)pairs;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "val_data");
    if (v && !cJSON_IsString(v))
        return false;
    const char *val = v ? v->valuestring : "synthetic";
    if (strlen(val) >= sizeof m->val_data)
        return false;
    snprintf(m->val_data, sizeof m->val_data, "%s", val);
    const cJSON *tx = cJSON_GetObjectItemCaseSensitive(j, "textures");
    if (tx && (!cJSON_IsString(tx) || strlen(tx->valuestring) >= sizeof m->textures))
        return false;
    snprintf(m->textures, sizeof m->textures, "%s", tx ? tx->valuestring : "");
    if (!manta_json_number(j, "lr_scale", DBL_TRUE_MIN, 1000, &m->lr_scale))
        m->lr_scale = 1.0; /* absent (older files) or out of range */
    m->mix = 0;
    if (cJSON_GetObjectItemCaseSensitive(j, "mix") && !manta_json_number(j, "mix", 0, 1, &m->mix))
        return false;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "init");
    if (in && (!cJSON_IsString(in) || strlen(in->valuestring) >= sizeof m->init))
        return false;
    snprintf(m->init, sizeof m->init, "%s", in ? in->valuestring : "");
    return true;
}

/* The slabs of @p t's network and, when @p has_teacher, its teacher. */
static ckpt_train_slabs train_slabs(stereo_trainer *t, bool has_teacher)
{
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    return (ckpt_train_slabs){.params = sl.params,
                              .momentum = sl.momentum,
                              .state = sl.state,
                              .teacher = stereo_trainer_teacher(t),
                              .n_params = sl.n_params,
                              .n_state = sl.n_state,
                              .has_teacher = has_teacher};
}

manta_status stereo_state_save(const char *path, stereo_trainer *t, mcl_dev *d,
                               const stereo_meta *m, manta_err *err)
{
    char *space = NULL, *meta = NULL;
    MANTA_TRY(stereo_space_to_json(stereo_net_space(stereo_trainer_net(t)), &space, err));
    MANTA_TRY(train_ckpt_meta_json(FORMAT, &m->run, put_meta, m, space, &meta, err));
    ckpt_train_slabs sl = train_slabs(t, m->has_teacher);
    sl.ef = m->ef;
    sl.n_ef = m->n_ef;
    manta_status st = train_ckpt_save_train(path, meta, NULL, 0, d, &sl, err);
    free(meta);
    return st;
}

static manta_status read_meta(ckpt_reader *r, const char *path, stereo_space *sp, stereo_meta *m,
                              manta_err *err)
{
    char *space = NULL;
    memset(m, 0, sizeof *m);
    MANTA_TRY(train_ckpt_meta_read(r, path, FORMAT, "stereo training", get_meta, m, &m->run, &space,
                                   err));
    manta_status st = stereo_space_parse(space, sp, err);
    free(space);
    return st;
}

/* What read_state() reads into, and the trainer of a load (NULL: a peek). */
typedef struct state_args {
    stereo_space *space;
    stereo_meta *m;
    stereo_trainer *t;
} state_args;

static manta_status read_state(ckpt_reader *r, const char *path, void *user,
                               ckpt_train_slabs *slabs, manta_err *err)
{
    state_args *a = user;
    MANTA_TRY(read_meta(r, path, a->space, a->m, err));
    if (slabs)
        *slabs = train_slabs(a->t, a->m->has_teacher);
    return MANTA_OK;
}

manta_status stereo_state_peek(const char *path, stereo_space *space, stereo_meta *m,
                               manta_err *err)
{
    state_args a = {space, m, NULL};
    return train_ckpt_read_train(path, read_state, &a, false, NULL, err);
}

manta_status stereo_state_load(const char *path, stereo_trainer *t, mcl_dev *d, stereo_meta *m,
                               manta_err *err)
{
    stereo_space sp;
    state_args a = {&sp, m, t};
    MANTA_TRY(train_ckpt_read_train(path, read_state, &a, true, d, err));
    stereo_trainer_set_has_teacher(t, m->has_teacher);
    return MANTA_OK;
}

/* Refuse @p path, whose space @p got was read, when it is not @p want: names differ, or
 * the same name with other settings (their spec text differs). */
static manta_status same_space(const char *path, const stereo_space *got, const stereo_space *want,
                               manta_err *err)
{
    if (strcmp(got->name, want->name) != 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "%s: a checkpoint of space '%s'; the run's space is '%s'", path,
                             got->name, want->name);
    char *a = NULL, *b = NULL;
    manta_status st = stereo_space_to_json(got, &a, err);
    if (st == MANTA_OK)
        st = stereo_space_to_json(want, &b, err);
    if (st == MANTA_OK && strcmp(a, b) != 0)
        st = manta_err_set(err, MANTA_ERR_INVALID_ARG,
                           "%s: a checkpoint of space '%s' with other settings than the run's "
                           "space of that name (layers, crops or choices differ)",
                           path, got->name);
    free(a);
    free(b);
    return st;
}

/* Open @p path as an initial network of @p want: its settings into @p m, the open reader
 * into *@p out (closed on error). */
static manta_status open_init(const char *path, const stereo_space *want, stereo_meta *m,
                              ckpt_reader **out, manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    stereo_space got;
    manta_status st = read_meta(r, path, &got, m, err);
    if (st == MANTA_ERR_FORMAT) { /* say what it is when it is another kind of run's */
        char format[64];
        manta_err e = {0};
        if (train_ckpt_meta_format(r, format, sizeof format, &e) == MANTA_OK &&
            !strcmp(format, "manta-ofa-train"))
            manta_err_set(err, st,
                          "%s: a classification training checkpoint (manta-ofa-train); "
                          "fine-tuning needs a stereo training checkpoint (manta-stereo-train, "
                          "written by manta train --space stereo-...)",
                          path);
    }
    if (st == MANTA_OK)
        st = same_space(path, &got, want, err);
    if (st != MANTA_OK) {
        ckpt_close(r);
        return st;
    }
    *out = r;
    return MANTA_OK;
}

manta_status stereo_state_peek_init(const char *path, const stereo_space *space, stereo_meta *m,
                                    manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(open_init(path, space, m, &r, err));
    ckpt_close(r);
    return MANTA_OK;
}

manta_status stereo_state_init(const char *path, stereo_trainer *t, mcl_dev *d, manta_err *err)
{
    ckpt_reader *r = NULL;
    stereo_meta m;
    MANTA_TRY(open_init(path, stereo_net_space(stereo_trainer_net(t)), &m, &r, err));
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    manta_status st = train_ckpt_read_f32_device(r, "params", d, sl.params, sl.n_params, err);
    if (st == MANTA_OK)
        st = train_ckpt_read_f32_device(r, "bn_state", d, sl.state, sl.n_state, err);
    ckpt_close(r);
    if (st != MANTA_OK)
        return st;
    st = mcl_fill(d, sl.momentum, 0.0f, sl.n_params);
    if (st == MANTA_OK)
        st = stereo_trainer_snapshot_teacher(t);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "fine-tuning from %s: %s", path, mcl_err(d)->msg);
    return MANTA_OK;
}

manta_status stereo_state_photos(const stereo_meta *m, const stereo_space *s, photo_bank *out,
                                 photo_bank_report *report, manta_err *err)
{
    memset(out, 0, sizeof *out);
    if (report)
        memset(report, 0, sizeof *report);
    if (!m->textures[0])
        return MANTA_OK;
    photo_bank_opts o;
    photo_bank_opts_for_pairs(&o, s->crop_w, s->crop_h);
    manta_err e = {0};
    manta_status st = photo_bank_load(photo_bank_dir(m->textures), &o, out, report, &e);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "the run's --textures folder %s", e.msg);
    return MANTA_OK;
}
