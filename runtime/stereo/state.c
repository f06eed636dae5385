#include "stereo/state.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "train/checkpoint.h"

#define FORMAT "manta-stereo-train"

/* The "meta" JSON of @p m with the space of @p s (malloc'd into *out). */
static manta_status meta_json(const stereo_space *s, const stereo_meta *m, char **out,
                              manta_err *err)
{
    char *space = NULL;
    MANTA_TRY(stereo_space_to_json(s, &space, err));
    cJSON *j = cJSON_CreateObject(), *sp = cJSON_Parse(space);
    free(space);
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, m->seed);
    bool ok = j && sp && cJSON_AddStringToObject(j, "format", FORMAT) &&
              cJSON_AddNumberToObject(j, "version", 1) &&
              cJSON_AddStringToObject(j, "schedule", m->preset) &&
              cJSON_AddNumberToObject(j, "batch", m->batch) &&
              cJSON_AddStringToObject(j, "seed", seed) &&
              cJSON_AddNumberToObject(j, "step", (double)m->step) &&
              cJSON_AddBoolToObject(j, "has_teacher", m->has_teacher) &&
              cJSON_AddStringToObject(j, "data", m->data) &&
              cJSON_AddNumberToObject(j, "train_pairs", (double)m->train_pairs);
    if (ok) {
        cJSON_AddItemToObject(j, "space", sp);
        sp = NULL;
    }
    *out = ok ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    cJSON_Delete(sp);
    return *out ? MANTA_OK
                : manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint metadata: out of memory");
}

manta_status stereo_state_save(const char *path, stereo_trainer *t, mcl_dev *d,
                               const stereo_meta *m, manta_err *err)
{
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    char *meta = NULL;
    MANTA_TRY(meta_json(stereo_net_space(stereo_trainer_net(t)), m, &meta, err));
    ckpt_writer *w = NULL;
    manta_status st = ckpt_writer_begin(path, NULL, &w, err);
    if (st == MANTA_OK)
        st = ckpt_add_json(w, "meta", meta);
    if (st == MANTA_OK)
        st = ckpt_add_f32_device(w, "params", d, sl.params, sl.n_params);
    if (st == MANTA_OK)
        st = ckpt_add_f32_device(w, "momentum", d, sl.momentum, sl.n_params);
    if (st == MANTA_OK)
        st = ckpt_add_f32_device(w, "bn_state", d, sl.state, sl.n_state);
    if (st == MANTA_OK && m->has_teacher)
        st = ckpt_add_f32_device(w, "teacher", d, stereo_trainer_teacher(t), sl.n_params);
    free(meta);
    if (st == MANTA_OK)
        return ckpt_writer_commit(w);
    if (w)
        ckpt_writer_abort(w);
    return st;
}

static manta_status read_meta(ckpt_reader *r, const char *path, stereo_space *sp,
                              stereo_meta *m, manta_err *err)
{
    char *text = NULL;
    size_t len = 0;
    MANTA_TRY(ckpt_read_json(r, "meta", &text, &len, err));
    cJSON *j = cJSON_Parse(text);
    free(text);
    const char *f = manta_json_string(j, "format"), *preset = manta_json_string(j, "schedule");
    const char *seed = manta_json_string(j, "seed"), *data = manta_json_string(j, "data");
    const cJSON *space = manta_json_object(j, "space");
    int batch = 0;
    double step = 0, pairs = 0;
    bool teacher = false;
    if (!f || strcmp(f, FORMAT) != 0 || !preset || !seed || !data || !space ||
        !manta_json_int(j, "batch", 1, INT_MAX, &batch) ||
        !manta_json_number(j, "step", 0, 0x1p53, &step) ||
        !manta_json_number(j, "train_pairs", 1, 0x1p53, &pairs) ||
        !manta_json_bool(j, "has_teacher", &teacher)) {
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: not a manta stereo training checkpoint (its metadata lacks "
                             "fields)",
                             path);
    }
    memset(m, 0, sizeof *m);
    snprintf(m->preset, sizeof m->preset, "%s", preset);
    snprintf(m->data, sizeof m->data, "%s", data);
    m->batch = batch;
    m->seed = strtoull(seed, NULL, 10);
    m->step = (long)step;
    m->train_pairs = (long)pairs;
    m->has_teacher = teacher;
    char *stext = cJSON_PrintUnformatted(space);
    manta_status st = stext ? stereo_space_parse(stext, sp, err)
                            : manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    free(stext);
    cJSON_Delete(j);
    return st;
}

manta_status stereo_state_peek(const char *path, stereo_space *space, stereo_meta *m,
                               manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    manta_status st = read_meta(r, path, space, m, err);
    ckpt_close(r);
    return st;
}

manta_status stereo_state_load(const char *path, stereo_trainer *t, mcl_dev *d, stereo_meta *m,
                               manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    stereo_space sp;
    ofa_slabs sl;
    stereo_net_slabs(stereo_trainer_net(t), &sl);
    manta_status st = read_meta(r, path, &sp, m, err);
    if (st == MANTA_OK)
        st = ckpt_read_f32_device(r, "params", d, sl.params, sl.n_params, err);
    if (st == MANTA_OK)
        st = ckpt_read_f32_device(r, "momentum", d, sl.momentum, sl.n_params, err);
    if (st == MANTA_OK)
        st = ckpt_read_f32_device(r, "bn_state", d, sl.state, sl.n_state, err);
    if (st == MANTA_OK && m->has_teacher)
        st = ckpt_read_f32_device(r, "teacher", d, stereo_trainer_teacher(t), sl.n_params, err);
    if (st == MANTA_OK)
        stereo_trainer_set_has_teacher(t, m->has_teacher);
    ckpt_close(r);
    return st;
}
