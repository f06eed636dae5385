#include "classify/trainstate.h"

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

#define FORMAT "manta-ofa-train"

/* "val" and "lr_scale" (1 when not positive) after the common members. */
static bool put_meta(cJSON *j, const void *user)
{
    const train_meta *m = user;
    return cJSON_AddNumberToObject(j, "val", m->val) &&
           cJSON_AddNumberToObject(j, "lr_scale", m->lr_scale > 0 ? m->lr_scale : 1.0);
}

static bool get_meta(const cJSON *j, void *user)
{
    train_meta *m = user;
    if (!manta_json_int(j, "val", 0, INT_MAX, &m->val))
        return false;
    if (!manta_json_number(j, "lr_scale", DBL_TRUE_MIN, HUGE_VAL, &m->lr_scale))
        m->lr_scale = 1.0; /* absent (older files) or not positive */
    return true;
}

/* The slabs of @p t's supernet and, when @p has_teacher, its teacher. */
static ckpt_train_slabs train_slabs(ofa_trainer *t, bool has_teacher)
{
    ofa_slabs sl;
    ofa_supernet_slabs(ofa_trainer_net(t), &sl);
    return (ckpt_train_slabs){.params = sl.params,
                              .momentum = sl.momentum,
                              .state = sl.state,
                              .teacher = ofa_trainer_teacher(t),
                              .n_params = sl.n_params,
                              .n_state = sl.n_state,
                              .has_teacher = has_teacher};
}

manta_status trainstate_save(const char *path, ofa_trainer *t, mcl_dev *d, const train_meta *m,
                             manta_err *err)
{
    char *space = NULL, *meta = NULL;
    MANTA_TRY(ofa_space_to_json(ofa_supernet_space(ofa_trainer_net(t)), &space, err));
    MANTA_TRY(train_ckpt_meta_json(FORMAT, &m->run, put_meta, m, space, &meta, err));
    const int64_t loader[4] = {m->loader.epoch, m->loader.pos, (int64_t)m->loader.rng.state,
                               (int64_t)m->loader.rng.inc};
    ckpt_train_slabs sl = train_slabs(t, m->has_teacher);
    sl.ef = m->ef;
    sl.n_ef = m->n_ef;
    manta_status st = train_ckpt_save_train(path, meta, loader, 4, d, &sl, err);
    free(meta);
    return st;
}

static manta_status read_meta(ckpt_reader *r, const char *path, ofa_space *sp, train_meta *m,
                              manta_err *err)
{
    char *space = NULL;
    memset(m, 0, sizeof *m);
    MANTA_TRY(train_ckpt_meta_read(r, path, FORMAT, "training", get_meta, m, &m->run, &space, err));
    manta_status st = ofa_space_parse(space, sp, err);
    free(space);
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

/* What read_state() reads into, and the trainer of a load (NULL: a peek). */
typedef struct state_args {
    ofa_space *space;
    train_meta *m;
    ofa_trainer *t;
} state_args;

static manta_status read_state(ckpt_reader *r, const char *path, void *user,
                               ckpt_train_slabs *slabs, manta_err *err)
{
    state_args *a = user;
    MANTA_TRY(read_meta(r, path, a->space, a->m, err));
    if (!slabs)
        return MANTA_OK;
    const ofa_space *sp = a->space, *own = ofa_supernet_space(ofa_trainer_net(a->t));
    int batch = ofa_trainer_schedule(a->t)->batch;
    if (strcmp(sp->name, own->name) != 0 || sp->n_units != own->n_units || a->m->batch != batch)
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: checkpoint of space '%s' with batch %d, this run has '%s' with "
                             "batch %d",
                             path, sp->name, a->m->batch, own->name, batch);
    *slabs = train_slabs(a->t, a->m->has_teacher);
    return MANTA_OK;
}

manta_status trainstate_peek(const char *path, ofa_space *space, train_meta *m, manta_err *err)
{
    state_args a = {space, m, NULL};
    return train_ckpt_read_train(path, read_state, &a, false, NULL, err);
}

manta_status trainstate_load(const char *path, ofa_trainer *t, mcl_dev *d, train_meta *m,
                             manta_err *err)
{
    ofa_space sp;
    state_args a = {&sp, m, t};
    MANTA_TRY(train_ckpt_read_train(path, read_state, &a, true, d, err));
    ofa_trainer_set_has_teacher(t, m->has_teacher);
    return MANTA_OK;
}
