#include "train/checkpoint.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

/* A device view as the source or the destination of a streamed section. */
typedef struct dev_view {
    mcl_dev *d;
    mview v;
} dev_view;

static manta_status from_device(void *user, size_t first, float *dst, size_t k, manta_err *err)
{
    const dev_view *s = user;
    manta_status st = mcl_read(s->d, mview_at(s->v, first), dst, k);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "reading the device failed: %s",
                             manta_err_msg(mcl_err(s->d), st));
    return MANTA_OK;
}

static manta_status to_device(void *user, size_t first, const float *src, size_t k, manta_err *err)
{
    const dev_view *s = user;
    manta_status st = mcl_write(s->d, mview_at(s->v, first), src, k);
    if (st != MANTA_OK)
        return manta_err_set(err, st, "writing the device failed: %s",
                             manta_err_msg(mcl_err(s->d), st));
    return MANTA_OK;
}

manta_status train_ckpt_add_f32_device(ckpt_writer *w, const char *name, mcl_dev *d, mview src,
                                       size_t n)
{
    dev_view s = {d, src};
    return ckpt_add_f32_stream(w, name, n, d && src.mem ? from_device : NULL, &s);
}

manta_status train_ckpt_read_f32_device(ckpt_reader *r, const char *name, mcl_dev *d, mview dst,
                                        size_t n, manta_err *err)
{
    dev_view s = {d, dst};
    return ckpt_read_f32_stream(r, name, n, d && dst.mem ? to_device : NULL, &s, err);
}

manta_status train_ckpt_save_train(const char *path, const char *meta, const int64_t *loader,
                                   size_t n_loader, mcl_dev *d, const ckpt_train_slabs *s,
                                   manta_err *err)
{
    ckpt_writer *w = NULL;
    manta_status st = ckpt_writer_begin(path, NULL, &w, err);
    if (st == MANTA_OK)
        st = ckpt_add_json(w, "meta", meta);
    if (st == MANTA_OK && loader)
        st = ckpt_add_i64(w, "loader", loader, n_loader);
    if (st == MANTA_OK)
        st = train_ckpt_add_f32_device(w, "params", d, s->params, s->n_params);
    if (st == MANTA_OK)
        st = train_ckpt_add_f32_device(w, "momentum", d, s->momentum, s->n_params);
    if (st == MANTA_OK)
        st = train_ckpt_add_f32_device(w, "bn_state", d, s->state, s->n_state);
    if (st == MANTA_OK && s->has_teacher)
        st = train_ckpt_add_f32_device(w, "teacher", d, s->teacher, s->n_params);
    if (st == MANTA_OK && s->n_ef > 0)
        st = ckpt_add_f32(w, "ef_residual", s->ef, s->n_ef);
    if (st == MANTA_OK)
        return ckpt_writer_commit(w);
    if (w)
        ckpt_writer_abort(w);
    return st;
}

manta_status train_ckpt_read_train_slabs(ckpt_reader *r, mcl_dev *d, const ckpt_train_slabs *s,
                                         manta_err *err)
{
    MANTA_TRY(train_ckpt_read_f32_device(r, "params", d, s->params, s->n_params, err));
    MANTA_TRY(train_ckpt_read_f32_device(r, "momentum", d, s->momentum, s->n_params, err));
    MANTA_TRY(train_ckpt_read_f32_device(r, "bn_state", d, s->state, s->n_state, err));
    if (s->has_teacher)
        return train_ckpt_read_f32_device(r, "teacher", d, s->teacher, s->n_params, err);
    return MANTA_OK;
}

manta_status train_ckpt_read_ef(const char *path, float **out, size_t *n, manta_err *err)
{
    *out = NULL;
    *n = 0;
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    uint64_t count = 0;
    manta_status st = MANTA_OK;
    if (ckpt_has(r, "ef_residual") &&
        (st = ckpt_find(r, "ef_residual", CKPT_F32, &count, err)) == MANTA_OK && count > 0) {
        *out = malloc((size_t)count * sizeof **out);
        if (!*out)
            st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "checkpoint %s: out of memory", path);
        else if ((st = ckpt_read_f32(r, "ef_residual", *out, (size_t)count, err)) == MANTA_OK)
            *n = (size_t)count;
        if (st != MANTA_OK) {
            free(*out);
            *out = NULL;
        }
    }
    ckpt_close(r);
    return st;
}

manta_status train_ckpt_read_train(const char *path, ckpt_state_fn read, void *user, bool load,
                                   mcl_dev *d, manta_err *err)
{
    ckpt_reader *r = NULL;
    MANTA_TRY(ckpt_open(path, &r, err));
    ckpt_train_slabs sl = {0};
    manta_status st = read(r, path, user, load ? &sl : NULL, err);
    if (st == MANTA_OK && load)
        st = train_ckpt_read_train_slabs(r, d, &sl, err);
    ckpt_close(r);
    return st;
}

manta_status train_ckpt_meta_json(const char *format, const ckpt_run_meta *m, ckpt_meta_put_fn put,
                                  const void *user, char *space, char **out, manta_err *err)
{
    cJSON *j = cJSON_CreateObject(), *sp = cJSON_Parse(space);
    free(space);
    char seed[32];
    snprintf(seed, sizeof seed, "%" PRIu64, m->seed); /* exact beyond 2^53 */
    bool ok = j && sp && cJSON_AddStringToObject(j, "format", format) &&
              cJSON_AddNumberToObject(j, "version", 1) &&
              cJSON_AddStringToObject(j, "schedule", m->preset) &&
              cJSON_AddNumberToObject(j, "batch", m->batch) &&
              cJSON_AddStringToObject(j, "seed", seed) &&
              cJSON_AddNumberToObject(j, "step", (double)m->step) &&
              cJSON_AddBoolToObject(j, "has_teacher", m->has_teacher) &&
              cJSON_AddStringToObject(j, "data", m->data) && (!put || put(j, user));
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

/* Largest step read back: a long, and a whole number exactly as a double. */
#define STEP_MAX (LONG_MAX < 0x1p53 ? (double)LONG_MAX : 0x1p53)

manta_status train_ckpt_meta_read(ckpt_reader *r, const char *path, const char *format,
                                  const char *kind, ckpt_meta_get_fn get, void *user,
                                  ckpt_run_meta *m, char **space, manta_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *space = NULL;
    MANTA_TRY(ckpt_read_json(r, "meta", &text, &len, err));
    cJSON *j = cJSON_Parse(text);
    free(text);
    const char *f = manta_json_string(j, "format"), *preset = manta_json_string(j, "schedule");
    const char *seed = manta_json_string(j, "seed"), *data = manta_json_string(j, "data");
    const cJSON *sp = manta_json_object(j, "space");
    int batch = 0;
    double step = 0;
    bool teacher = false;
    if (!f || strcmp(f, format) != 0 || !preset || !seed || !data || !sp ||
        !manta_json_int(j, "batch", 1, INT_MAX, &batch) ||
        !manta_json_number(j, "step", 0, STEP_MAX, &step) ||
        !manta_json_bool(j, "has_teacher", &teacher) || (get && !get(j, user))) {
        cJSON_Delete(j);
        return manta_err_set(err, MANTA_ERR_FORMAT,
                             "%s: not a manta %s checkpoint (its metadata lacks fields)", path,
                             kind);
    }
    memset(m, 0, sizeof *m);
    snprintf(m->preset, sizeof m->preset, "%s", preset);
    snprintf(m->data, sizeof m->data, "%s", data);
    m->batch = batch;
    m->seed = strtoull(seed, NULL, 10);
    m->step = (long)step;
    m->has_teacher = teacher;
    *space = cJSON_PrintUnformatted(sp);
    cJSON_Delete(j);
    return *space ? MANTA_OK : manta_err_set(err, MANTA_ERR_NO_MEMORY, "%s: out of memory", path);
}

manta_status train_ckpt_meta_format(ckpt_reader *r, char *out, size_t size, manta_err *err)
{
    char *text = NULL;
    size_t len = 0;
    out[0] = '\0';
    MANTA_TRY(ckpt_read_json(r, "meta", &text, &len, err));
    cJSON *j = cJSON_Parse(text);
    free(text);
    const char *f = manta_json_string(j, "format");
    if (f)
        snprintf(out, size, "%s", f);
    cJSON_Delete(j);
    return MANTA_OK;
}
