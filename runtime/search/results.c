#include "search/results.h"

#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/strbuf.h"

/* @p s as a JSON string (manta_strbuf_json_str()'s escaping). */
static void put_str(FILE *f, const char *s)
{
    manta_strbuf b = {0};
    manta_strbuf_json_str(&b, s);
    fputs(b.p && !b.oom ? b.p : "\"\"", f);
    manta_strbuf_free(&b);
}

/* The architecture in @p r's encoding: OFA's, with "dw" for a stereo search. */
static manta_status arch_json(const search_report *w, const ofa_arch *a, char *buf, size_t cap,
                              manta_err *err)
{
    const stereo_space *ss = w->result->stereo;
    return ss ? stereo_arch_to_json(ss, a, buf, cap, err)
              : ofa_arch_to_json(w->space, a, buf, cap, err);
}

/* The re-rank's settings and candidates: "rerank":{...}, or "rerank":null, */
static manta_status put_rerank(FILE *f, const search_report *w, manta_err *err)
{
    const evo_config *c = w->config;
    const evo_result *r = w->result;
    if (c->keep_top <= 0) {
        fprintf(f, "\"rerank\":null,");
        return MANTA_OK;
    }
    const bool st = r->stereo != NULL;
    fprintf(f,
            "\"rerank\":{\"spread_genes\":%d,\"by_resolution\":%d,\"uniform_added\":%zu,"
            "\"%s\":%ld,\"%s\":%ld,\"chosen\":%zu,\"candidates\":[",
            c->top_min_genes, c->top_by_res, r->n_top_seeds, st ? "pairs" : "images",
            w->rerank_images, st ? "recal_pairs" : "recal_images", w->recal_images, w->chosen + 1);
    for (size_t i = 0; i < r->n_top; i++) {
        char e2[2048];
        MANTA_TRY(arch_json(w, &r->top[i].arch, e2, sizeof e2, err));
        if (st)
            fprintf(f,
                    "%s{\"arch\":%s,\"predicted_epe\":%.6f,\"heldout_epe\":%.6f,"
                    "\"predicted_latency_ms\":%.6f}",
                    i ? "," : "", e2, -r->top[i].acc, w->val[i], r->top[i].f.v[EVO_LATENCY]);
        else
            fprintf(f,
                    "%s{\"arch\":%s,\"predicted_top1\":%.6f,\"validation_top1\":%.6f,"
                    "\"predicted_latency_ms\":%.6f}",
                    i ? "," : "", e2, r->top[i].acc, w->val[i], r->top[i].f.v[EVO_LATENCY]);
    }
    fprintf(f, "]},");
    return MANTA_OK;
}

manta_status search_json_put(FILE *f, const search_report *w, manta_err *err)
{
    const evo_config *c = w->config;
    const evo_result *r = w->result;
    char enc[2048];
    MANTA_TRY(arch_json(w, &r->best.arch, enc, sizeof enc, err));
    /* "version" is the format's: the program's own goes in "provenance" */
    fprintf(f, "{\"format\":\"manta-search\",\"version\":1,\"provenance\":{%s},%s%s\"space\":",
            w->provenance ? w->provenance : "", r->stereo ? "\"task\":\"stereo\"," : "",
            w->int8 ? "\"dtype\":\"int8\"," : "");
    put_str(f, w->space->name);
    const char *const names[][2] = {
        {"ckpt", w->ckpt}, {"lut", w->lut}, {"device", w->device}, {"acc_model", w->acc_model}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fprintf(f, ",\"%s\":", names[i][0]);
        put_str(f, names[i][1] ? names[i][1] : "");
    }
    fprintf(f,
            ",\"seed\":%llu,\"population\":%d,\"generations\":%d,\"parent_ratio\":%g,"
            "\"mutate_prob\":%g,\"uniform_seeds\":%d,\"uniform_within_budget\":%zu,"
            "\"budget\":{\"max_latency_ms\":%g,\"max_arena_bytes\":%g,\"max_flash_bytes\":%g,"
            "\"max_macs\":%g},",
            (unsigned long long)c->seed, c->population, c->generations, c->parent_ratio,
            c->mutate_prob, c->n_seeds, r->n_seeds_in, c->budget[EVO_LATENCY], c->budget[EVO_ARENA],
            c->budget[EVO_FLASH], c->budget[EVO_MACS]);
    /* before "best", so that a reader taking the last "predicted_top1" gets the best's */
    MANTA_TRY(put_rerank(f, w, err));
    fprintf(f,
            "\"best\":{\"arch\":%s,\"%s\":%.6f,\"predicted_latency_ms\":%.6f,"
            "\"macs\":%.0f,\"arena_bytes\":%.0f,\"file_bytes\":%.0f},\"front_points\":%zu,"
            "\"evaluated\":%ld,\"measured\":%ld,\"rejected\":%ld,\"models_planned\":%ld,"
            "\"seconds\":%.2f}\n",
            enc, r->stereo ? "predicted_epe" : "predicted_top1",
            r->stereo ? -r->best.acc : r->best.acc, r->best.f.v[EVO_LATENCY], r->best.f.v[EVO_MACS],
            r->best.f.v[EVO_ARENA], r->best.f.v[EVO_FLASH], r->n_front, r->evaluated, r->measured,
            r->rejected, w->models_planned, w->seconds);
    return MANTA_OK;
}

/* DIR/search.json, and with @p copy the same there. */
static manta_status write_search_json(const search_report *w, const char *dir, FILE *copy,
                                      manta_err *err)
{
    char *text = NULL, path[1200];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
    manta_status st = search_json_put(f, w, err);
    if (fclose(f) != 0 && st == MANTA_OK)
        st = manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
    snprintf(path, sizeof path, "%s/search.json", dir);
    if (st == MANTA_OK)
        st = manta_file_write_atomic(path, text, len, err);
    if (st == MANTA_OK && copy)
        fputs(text, copy);
    free(text);
    return st;
}

manta_status search_results_write(const search_report *w, const char *dir, FILE *copy,
                                  manta_err *err)
{
    char path[1200], text[2100], title[256];
    MANTA_TRY(manta_file_mkdir_p(dir, err));
    MANTA_TRY(arch_json(w, &w->result->best.arch, text, 2048, err));
    strcat(text, "\n");
    snprintf(path, sizeof path, "%s/arch.json", dir);
    MANTA_TRY(manta_file_write_atomic(path, text, strlen(text), err));
    snprintf(title, sizeof title, "%s: predicted %s vs latency on %.60s (budget %.4g ms)",
             w->space->name, w->result->stereo ? "EPE" : "top-1", w->device ? w->device : "",
             w->config->budget[EVO_LATENCY]);
    snprintf(path, sizeof path, "%s/front.csv", dir);
    MANTA_TRY(evo_write_front_csv(w->result, w->space, path, err));
    snprintf(path, sizeof path, "%s/front.svg", dir);
    MANTA_TRY(evo_write_front_svg(w->result, title, path, err));
    return write_search_json(w, dir, copy, err);
}

manta_status search_uniform_seeds(const ofa_space *s, ofa_arch **seeds, int *n, manta_err *err)
{
    *n = 0;
    *seeds = malloc((size_t)(s->n_res * s->n_d * s->n_e * s->n_ks) * sizeof **seeds);
    if (!*seeds)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
    for (int ri = 0; ri < s->n_res; ri++)
        for (int di = 0; di < s->n_d; di++)
            for (int ei = 0; ei < s->n_e; ei++)
                for (int ki = 0; ki < s->n_ks; ki++)
                    ofa_arch_uniform(s, s->ks[ki], s->e[ei], s->d[di], s->res[ri],
                                     &(*seeds)[(*n)++]);
    return MANTA_OK;
}

manta_status search_uniform_seeds_stereo(const stereo_space *s, ofa_arch **seeds, int *n,
                                         manta_err *err)
{
    *n = 0;
    *seeds = malloc((size_t)(s->n_dec_ratios * s->n_d * s->n_e * s->n_ks) * sizeof **seeds);
    if (!*seeds)
        return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
    ofa_space v;
    stereo_space_ofa_view(s, &v);
    for (int wi = 0; wi < s->n_dec_ratios; wi++)
        for (int di = 0; di < s->n_d; di++)
            for (int ei = 0; ei < s->n_e; ei++)
                for (int ki = 0; ki < s->n_ks; ki++) {
                    ofa_arch *a = &(*seeds)[(*n)++];
                    ofa_arch_uniform(&v, s->ks[ki], s->e[ei], s->d[di], s->crop_h, a);
                    stereo_arch_set_dec(s, NULL, wi, a);
                }
    return MANTA_OK;
}

manta_status search_results_size(search_sizes *sizes, evo_result *r, manta_err *err)
{
    for (size_t i = 0; i <= r->n_front; i++) {
        evo_point *p = i < r->n_front ? &r->front[i] : &r->best;
        size_t arena, file;
        MANTA_TRY(search_sizes_get(sizes, &p->arch, &arena, &file, err));
        p->f.v[EVO_ARENA] = (double)arena;
        p->f.v[EVO_FLASH] = (double)file;
    }
    return MANTA_OK;
}
