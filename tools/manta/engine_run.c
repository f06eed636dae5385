#include "engine_run.h"

#include "cmd.h"
#include "export/tflite.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool engine_run_open(const char *cmd, const char *path, engine_run *r)
{
    memset(r, 0, sizeof *r);
    errno = 0;
    r->file = cmd_read_aligned(path, &r->size);
    char msg[256] = "";
    if (!r->file || r->size == 0) {
        fprintf(stderr, "manta %s: %s: cannot read the model: %s\n", cmd, path,
                r->file ? "empty file"
                : errno ? strerror(errno)
                        : "not a regular file");
        engine_run_close(r);
        return false;
    }
    mengine_status st = mengine_model_load(&r->model, r->file, r->size, NULL, msg, sizeof msg);
    if (st == MENGINE_OK) {
        size_t ws = mengine_plan_work_size(&r->model);
        void *work = aligned_alloc(16, (ws + 15) / 16 * 16 + 16);
        st = work ? mengine_arena_size(&r->model, work, ws, &r->arena_size, msg, sizeof msg)
                  : MENGINE_ERR_ARENA;
        free(work);
    }
    if (st == MENGINE_OK && !(r->arena = aligned_alloc(16, (r->arena_size + 15) / 16 * 16 + 16)))
        st = MENGINE_ERR_ARENA;
    if (st == MENGINE_OK)
        st = mengine_init(&r->engine, &r->model, r->arena, r->arena_size);
    if (st == MENGINE_OK)
        st = mengine_prepare(&r->engine, msg, sizeof msg);
    if (st != MENGINE_OK) {
        fprintf(stderr, "manta %s: %s: %s\n", cmd, path, msg[0] ? msg : mengine_status_str(st));
        engine_run_close(r);
        return false;
    }
    const uint8_t *meta = NULL;
    size_t meta_size = 0;
    manta_err err;
    manta_err_clear(&err);
    if (mengine_model_metadata(&r->model, TFLITE_META_PREPROCESS, &meta, &meta_size) !=
            MENGINE_OK ||
        tflite_meta_parse((const char *)meta, meta_size, &r->meta, &err) != MANTA_OK) {
        fprintf(stderr, "manta %s: %s: no usable manta_preprocess metadata%s%s\n", cmd, path,
                err.msg[0] ? ": " : "", err.msg);
        engine_run_close(r);
        return false;
    }
    return true;
}

void engine_run_close(engine_run *r)
{
    tflite_meta_free(&r->meta);
    free(r->arena);
    free(r->file);
    memset(r, 0, sizeof *r);
}
