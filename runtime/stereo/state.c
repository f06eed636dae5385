#include "stereo/state.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "train/checkpoint.h"

#define FORMAT "manta-stereo-train"

/* "train_pairs", "val_data", with photographs "textures", and "lr_scale" after the common
 * members. */
static bool put_meta(cJSON *j, const void *user)
{
    const stereo_meta *m = user;
    return cJSON_AddNumberToObject(j, "train_pairs", (double)m->train_pairs) &&
           cJSON_AddStringToObject(j, "val_data", m->val_data) &&
           (!m->textures[0] || cJSON_AddStringToObject(j, "textures", m->textures)) &&
           cJSON_AddNumberToObject(j, "lr_scale", m->lr_scale > 0 ? m->lr_scale : 1.0);
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
    return true;
}

/* The slabs of @p t's network and, when @p has_teacher, its teacher. */
static ckpt_train_slabs train_slabs(stereo_trainer *t, bool has_teacher)
{
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    return (ckpt_train_slabs){sl.params, sl.momentum, sl.state, stereo_trainer_teacher(t),
                              sl.n_params, sl.n_state, has_teacher};
}

manta_status stereo_state_save(const char *path, stereo_trainer *t, mcl_dev *d,
                               const stereo_meta *m, manta_err *err)
{
    char *space = NULL, *meta = NULL;
    MANTA_TRY(stereo_space_to_json(stereo_net_space(stereo_trainer_net(t)), &space, err));
    MANTA_TRY(ckpt_meta_json(FORMAT, &m->run, put_meta, m, space, &meta, err));
    ckpt_train_slabs sl = train_slabs(t, m->has_teacher);
    manta_status st = ckpt_save_train(path, meta, NULL, 0, d, &sl, err);
    free(meta);
    return st;
}

static manta_status read_meta(ckpt_reader *r, const char *path, stereo_space *sp,
                              stereo_meta *m, manta_err *err)
{
    char *space = NULL;
    memset(m, 0, sizeof *m);
    MANTA_TRY(ckpt_meta_read(r, path, FORMAT, "stereo training", get_meta, m, &m->run, &space,
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
    return ckpt_read_train(path, read_state, &a, false, NULL, err);
}

manta_status stereo_state_load(const char *path, stereo_trainer *t, mcl_dev *d, stereo_meta *m,
                               manta_err *err)
{
    stereo_space sp;
    state_args a = {&sp, m, t};
    MANTA_TRY(ckpt_read_train(path, read_state, &a, true, d, err));
    stereo_trainer_set_has_teacher(t, m->has_teacher);
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
