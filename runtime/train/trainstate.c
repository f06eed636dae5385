#include "train/trainstate.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "train/checkpoint.h"

static manta_status meta_json(const ofa_space *sp, const train_meta *m, char **out, manta_err *err)
{
    char *space = NULL;
    MANTA_TRY(ofa_space_to_json(sp, &space, err));
    cJSON *j = cJSON_CreateObject(), *sj = cJSON_Parse(space);
    free(space);
    if (!j || !sj) {
        cJSON_Delete(j), cJSON_Delete(sj);
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint metadata: out of memory");
    }
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)m->seed); /* exact beyond 2^53 */
    cJSON_AddStringToObject(j, "format", "manta-ofa-train");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "schedule", m->preset);
    cJSON_AddNumberToObject(j, "batch", m->batch);
    cJSON_AddStringToObject(j, "seed", seed);
    cJSON_AddNumberToObject(j, "step", (double)m->step);
    cJSON_AddBoolToObject(j, "has_teacher", m->has_teacher);
    cJSON_AddStringToObject(j, "data", m->data);
    cJSON_AddNumberToObject(j, "val", m->val);
    cJSON_AddNumberToObject(j, "lr_scale", m->lr_scale > 0 ? m->lr_scale : 1.0);
    cJSON_AddItemToObject(j, "space", sj);
    *out = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return *out ? MANTA_OK : manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint metadata: out of memory");
}

manta_status trainstate_save(const char *path, ofa_trainer *t, mcl_dev *d, const train_meta *m,
                             manta_err *err)
{
    ofa_slabs sl;
    ofa_supernet_slabs(ofa_trainer_net(t), &sl);
    char *meta = NULL;
    MANTA_TRY(meta_json(ofa_supernet_space(ofa_trainer_net(t)), m, &meta, err));
    ckpt_writer *w = NULL;
    manta_status st = ckpt_writer_begin(path, NULL, &w, err);
    const int64_t loader[4] = {m->loader.epoch, m->loader.pos, (int64_t)m->loader.rng.state,
                               (int64_t)m->loader.rng.inc};
    if (st == MANTA_OK)
        st = ckpt_add_json(w, "meta", meta);
    if (st == MANTA_OK)
        st = ckpt_add_i64(w, "loader", loader, 4);
    if (st == MANTA_OK)
        st = ckpt_add_f32_device(w, "params", d, sl.params, sl.n_params);
    if (st == MANTA_OK)
        st = ckpt_add_f32_device(w, "momentum", d, sl.momentum, sl.n_params);
    if (st == MANTA_OK)
        st = ckpt_add_f32_device(w, "bn_state", d, sl.state, sl.n_state);
    if (st == MANTA_OK && m->has_teacher)
        st = ckpt_add_f32_device(w, "teacher", d, ofa_trainer_teacher(t), sl.n_params);
    free(meta);
    if (st == MANTA_OK)
        return ckpt_writer_commit(w);
    if (w)
        ckpt_writer_abort(w);
    return st;
}

/* Largest step read back: a long, and a whole number exactly as a double. */
#define STEP_MAX (LONG_MAX < 0x1p53 ? (double)LONG_MAX : 0x1p53)

static manta_status read_meta(ckpt_reader *r, const char *path, ofa_space *sp, train_meta *m,
                              manta_err *err)
{
    char *text = NULL;
    size_t len = 0;
    MANTA_TRY(ckpt_read_json(r, "meta", &text, &len, err));
    cJSON *j = cJSON_Parse(text);
    free(text);
    manta_status st = MANTA_OK;
    const char *f = manta_json_string(j, "format"), *preset = manta_json_string(j, "schedule");
    const char *seed = manta_json_string(j, "seed"), *data = manta_json_string(j, "data");
    const cJSON *space = manta_json_object(j, "space");
    int batch = 0, val = 0;
    double step = 0;
    bool teacher = false;
    if (!f || strcmp(f, "manta-ofa-train") != 0 || !preset || !seed || !data || !space ||
        !manta_json_int(j, "batch", 1, INT_MAX, &batch) ||
        !manta_json_number(j, "step", 0, STEP_MAX, &step) ||
        !manta_json_int(j, "val", 0, INT_MAX, &val) ||
        !manta_json_bool(j, "has_teacher", &teacher)) {
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: not a manta training checkpoint (its metadata lacks fields)", path);
    }
    memset(m, 0, sizeof *m);
    snprintf(m->preset, sizeof m->preset, "%s", preset);
    snprintf(m->data, sizeof m->data, "%s", data);
    m->batch = batch;
    m->seed = strtoull(seed, NULL, 10);
    m->step = (long)step;
    m->val = val;
    m->has_teacher = teacher;
    if (!manta_json_number(j, "lr_scale", DBL_TRUE_MIN, HUGE_VAL, &m->lr_scale))
        m->lr_scale = 1.0; /* absent (older files) or not positive */
    char *stext = cJSON_PrintUnformatted(space);
    st = stext ? ofa_space_parse(stext, sp, err)
               : manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
    free(stext);
    cJSON_Delete(j);
    if (st != MANTA_OK)
        return st;
    int64_t loader[4];
    MANTA_TRY(ckpt_read_i64(r, "loader", loader, 4, err));
    m->loader.epoch = loader[0];
    m->loader.pos = loader[1];
    m->loader.rng.state = (uint64_t)loader[2];
    m->loader.rng.inc = (uint64_t)loader[3];
    return MANTA_OK;
}

manta_status trainstate_peek(const char *path, ofa_space *space, train_meta *m, manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    manta_status st = read_meta(r, path, space, m, err);
    ckpt_close(r);
    return st;
}

manta_status trainstate_load(const char *path, ofa_trainer *t, mcl_dev *d, train_meta *m,
                             manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    ofa_space sp;
    manta_status st = read_meta(r, path, &sp, m, err);
    ofa_slabs sl;
    ofa_supernet_slabs(ofa_trainer_net(t), &sl);
    const ofa_space *own = ofa_supernet_space(ofa_trainer_net(t));
    if (st == MANTA_OK && (strcmp(sp.name, own->name) != 0 || sp.n_units != own->n_units ||
                           m->batch != ofa_trainer_schedule(t)->batch))
        st = manta_err_set(err, MANTA_ERR_FORMAT,
                           "%s: checkpoint of space '%s' with batch %d, this run has '%s' with "
                           "batch %d", path, sp.name, m->batch, own->name,
                           ofa_trainer_schedule(t)->batch);
    if (st == MANTA_OK)
        st = ckpt_read_f32_device(r, "params", d, sl.params, sl.n_params, err);
    if (st == MANTA_OK)
        st = ckpt_read_f32_device(r, "momentum", d, sl.momentum, sl.n_params, err);
    if (st == MANTA_OK)
        st = ckpt_read_f32_device(r, "bn_state", d, sl.state, sl.n_state, err);
    if (st == MANTA_OK && m->has_teacher)
        st = ckpt_read_f32_device(r, "teacher", d, ofa_trainer_teacher(t), sl.n_params, err);
    if (st == MANTA_OK)
        ofa_trainer_set_has_teacher(t, m->has_teacher);
    ckpt_close(r);
    return st;
}
