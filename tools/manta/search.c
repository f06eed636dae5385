/* manta search: OFA's evolutionary search for the sub-network of highest
 * predicted accuracy under a latency budget (and optionally arena, flash and
 * MACs budgets), with its Pareto front. Latency comes from a board's latency
 * table, accuracy from the accuracy predictor, MACs from the space's
 * description, and arena and file size exactly from the engine's planner on
 * the .tflite the exporter would write for the candidate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "core/fileio.h"
#include "core/strbuf.h"
#include "export/tflite.h"
#include "profile/latency_table.h"
#include "profile/synth.h"
#include "rundata.h"
#include "search/acc_predictor.h"
#include "search/evolution.h"
#include "train/trainstate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta search --ckpt FILE --lut LUT.json --acc-model MODEL.accp --latency-ms X\n"
            "                    [--max-arena-kb A] [--max-flash-kb F] [--max-macs M]\n"
            "                    [--board NAME] [--out DIR] [--seed N] [--population N]\n"
            "                    [--generations N] [--parents F] [--mutate-prob F]\n"
            "                    [--no-uniform-seeds]\n"
            "                    [--rerank K [--rerank-spread G] [--rerank-any-res]\n"
            "                    [--rerank-seeds U|all] [--rerank-images N]\n"
            "                    [--recal-images N] [--device SPEC]] [--json] [--quiet]\n\n"
            "OFA's evolutionary search (population 100, top 25%% as parents, half the children\n"
            "by mutation with probability 0.1 per gene, half by crossover, 500 generations)\n"
            "for the sub-network of the checkpoint's space with the highest predicted top-1\n"
            "whose predicted latency (the table's sum of layers plus its overhead) is at most\n"
            "X ms. --max-arena-kb and --max-flash-kb bound the engine's arena and the .tflite\n"
            "size, computed exactly for each candidate by writing and planning its model;\n"
            "--max-macs bounds multiply-accumulates. The same --seed gives the same result.\n"
            "The first population starts with the uniform sub-networks (one kernel, expand\n"
            "ratio and depth everywhere, at each resolution) that meet the budget, random ones\n"
            "fill the rest, so the search starts from the best uniform network the predictor\n"
            "sees; --no-uniform-seeds starts from random ones only, as OFA.\n"
            "--board NAME refuses a table measured on another device.\n\n"
            "--rerank K measures K of the fittest sub-networks the search found on the\n"
            "validation split through the supernet (batch norm re-calibrated on\n"
            "--recal-images training images, default 2000, then the first --rerank-images\n"
            "validation images, default 10000; as manta acc-dataset) and chooses the one of\n"
            "highest measured top-1 (ties: the higher predicted): the predictor's errors of a\n"
            "few tenths of a point are as large as the differences among the best\n"
            "candidates. The K are the fittest, then each next fittest that differs in at\n"
            "least G genes (resolution, depths, kernels, expand ratios; default 1) from every\n"
            "one taken, taken from each input resolution in turn (the predictor errs most\n"
            "between resolutions), or from all alike with --rerank-any-res. The U (default\n"
            "3) uniform sub-networks within budget that the predictor rates highest are\n"
            "measured too when not among the K, so the choice is never below the best of\n"
            "them on validation (0: none; all: every uniform one within budget, so never\n"
            "below the best uniform sub-network on validation, at the cost of measuring\n"
            "each (81 for cpu-default; no more than the population); none with\n"
            "--no-uniform-seeds). Needs an OpenCL device (--device, as manta eval).\n\n"
            "Writes DIR/arch.json (the best sub-network, OFA's encoding; for manta export),\n"
            "DIR/front.csv and DIR/front.svg (the Pareto front of predicted top-1 against\n"
            "predicted latency) and DIR/search.json (settings and results, with each\n"
            "re-ranked candidate's figures); DIR defaults to runs/search.\n");
}

/* ---- exact arena and file size, cached by sub-network ---- */

typedef struct size_entry {
    ofa_arch arch;
    size_t arena, file;
    int used;
} size_entry;

typedef struct ctx {
    const ofa_space *sp;
    const lat_table *lut;
    const accp_model *acc;
    const xg_preprocess *pre;
    int need_sizes; /* arena or flash constrained: compute for every candidate */
    size_entry *cache;
    size_t n_cache, cap_cache; /* cap a power of two */
    long built;
} ctx;

static uint64_t arch_hash(const ofa_arch *a)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *p = (const unsigned char *)a;
    for (size_t i = 0; i < sizeof *a; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The arena and .tflite size of sub-network a, exported with the run's preprocessing. */
static manta_status sizes_of(ctx *c, const ofa_arch *a, size_t *arena, size_t *file,
                             manta_err *err)
{
    if (c->n_cache * 2 >= c->cap_cache) {
        size_t cap = c->cap_cache ? c->cap_cache * 2 : 1024;
        size_entry *n = calloc(cap, sizeof *n);
        if (!n)
            return manta_err_set(err, MANTA_ERR_NO_MEMORY, "search: out of memory");
        for (size_t i = 0; i < c->cap_cache; i++)
            if (c->cache[i].used) {
                size_t j = (size_t)arch_hash(&c->cache[i].arch) & (cap - 1);
                while (n[j].used)
                    j = (j + 1) & (cap - 1);
                n[j] = c->cache[i];
            }
        free(c->cache);
        c->cache = n;
        c->cap_cache = cap;
    }
    size_t j = (size_t)arch_hash(a) & (c->cap_cache - 1);
    while (c->cache[j].used) {
        if (!memcmp(&c->cache[j].arch, a, sizeof *a)) {
            *arena = c->cache[j].arena;
            *file = c->cache[j].file;
            return MANTA_OK;
        }
        j = (j + 1) & (c->cap_cache - 1);
    }
    xgraph g;
    const synth_opts so = {0, true};
    MANTA_TRY(synth_arch_graph(c->sp, a, c->pre, &so, &g, err));
    uint8_t *data = NULL;
    size_t size = 0;
    tflite_report rep;
    manta_status st = tflite_write(&g, &data, &size, &rep, err);
    xgraph_free(&g);
    free(data);
    if (st != MANTA_OK)
        return st;
    c->built++;
    c->cache[j] = (size_entry){*a, rep.arena_bytes, rep.file_bytes, 1};
    c->n_cache++;
    *arena = rep.arena_bytes;
    *file = rep.file_bytes;
    return MANTA_OK;
}

static manta_status measure(void *vc, const ofa_arch *a, evo_figures *f, manta_err *err)
{
    ctx *c = vc;
    MANTA_TRY(lat_predict(c->lut, a, &f->v[EVO_LATENCY], err));
    ofa_desc d;
    MANTA_TRY(ofa_describe(c->sp, a, &d, err));
    f->v[EVO_MACS] = d.macs;
    if (c->need_sizes) {
        size_t arena, file;
        MANTA_TRY(sizes_of(c, a, &arena, &file, err));
        f->v[EVO_ARENA] = (double)arena;
        f->v[EVO_FLASH] = (double)file;
    }
    return MANTA_OK;
}

static manta_status fitness(void *vc, const ofa_arch *a, double *acc, manta_err *err)
{
    ctx *c = vc;
    return accp_predict(c->acc, a, acc, err);
}

typedef struct progress {
    int on, json;
    double t0;
} progress;

static void on_generation(void *vp, int gen, int gens, const evo_point *best)
{
    progress *p = vp;
    if (!p->on || (gen % 25 != 0 && gen != gens && gen != 1))
        return;
    double el = cmd_now() - p->t0, eta = el / gen * (gens - gen);
    if (p->json)
        printf("{\"generation\":%d,\"generations\":%d,\"best_top1\":%.5f,\"best_latency_ms\":%.4f,"
               "\"elapsed_s\":%.2f,\"eta_s\":%.2f}\n",
               gen, gens, best->acc, best->f.v[EVO_LATENCY], el, eta);
    else
        fprintf(stderr, "search: generation %d/%d  best predicted top-1 %.2f%% at %.3f ms  "
                        "%.1f s, ETA %.1f s\n",
                gen, gens, 100 * best->acc, best->f.v[EVO_LATENCY], el, eta);
    fflush(stdout);
}

static int parse_double(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "manta search: %s needs a number in [%g, %g], got '%s'\n", opt, lo, hi,
                v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

/* "NAME (manta engine, ...)" or "NAME": the name part of a table's device. */
static int same_board(const char *device, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(device, name, n) && (device[n] == 0 || device[n] == ' ');
}

/* A JSON string (quotes, backslashes and control characters escaped). */
static void put_str(manta_strbuf *b, const char *s)
{
    manta_strbuf_printf(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            manta_strbuf_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            manta_strbuf_printf(b, "\\u%04x", (unsigned char)*s);
        else
            manta_strbuf_printf(b, "%c", *s);
    }
    manta_strbuf_printf(b, "\"");
}

/* ---- re-ranking on the validation split ---- */

/* Measure the search's top candidates on the validation split through the
 * supernet of @p l (BN re-calibrated on @p recal training images, then
 * @p images validation images); val[i] gets top[i]'s top-1 and *chosen the
 * index of the highest (the first, i.e. the higher predicted, on ties).
 * Prints a one-line error and returns false on failure. */
static bool rerank_top(run_ckpt *l, const evo_result *r, long images, long recal,
                       const progress *pg, double *val, size_t *chosen)
{
    const double t0 = cmd_now();
    *chosen = 0;
    for (size_t i = 0; i < r->n_top; i++) {
        eval_source rs = run_ckpt_recal_source(l), es = run_ckpt_eval_source(l, false, NULL);
        manta_status st = ofa_trainer_evaluate(l->trainer, &r->top[i].arch, eval_source_batch,
                                               &rs, recal, eval_source_batch, &es, images, &val[i],
                                               NULL);
        if (st != MANTA_OK) {
            cmd_error("search", st, mcl_err(l->dev));
            return false;
        }
        if (val[i] > val[*chosen])
            *chosen = i;
        const double el = cmd_now() - t0, eta = el / (double)(i + 1) * (double)(r->n_top - i - 1);
        if (pg->json)
            printf("{\"rerank\":%zu,\"of\":%zu,\"predicted_top1\":%.5f,\"validation_top1\":%.5f,"
                   "\"elapsed_s\":%.2f,\"eta_s\":%.2f}\n",
                   i + 1, r->n_top, r->top[i].acc, val[i], el, eta);
        else if (pg->on)
            fprintf(stderr, "search: re-rank %zu/%zu  predicted top-1 %.2f%%  validation %.2f%%  "
                            "%.1f s, ETA %.1f s\n",
                    i + 1, r->n_top, 100 * r->top[i].acc, 100 * val[i], el, eta);
        fflush(stdout);
    }
    return true;
}

int cmd_search(int argc, char **argv)
{
    const char *ckpt = NULL, *lut_path = NULL, *acc_path = NULL, *out = "runs/search";
    const char *board = NULL, *device = NULL;
    double latency = 0, arena_kb = 0, flash_kb = 0, macs = 0;
    long rerank = 0, spread = 1, rerank_images = 10000, recal = 2000, rerank_seeds = 3;
    evo_config c;
    evo_config_default(&c);
    c.top_by_res = 1;
    int json = 0, quiet = 0, uniform_seeds = 1, all_seeds = 0;
    long x;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--no-uniform-seeds")) {
            uniform_seeds = 0;
        } else if (!strcmp(a, "--rerank-any-res")) {
            c.top_by_res = 0;
        } else if (!strcmp(a, "--ckpt") && v) {
            ckpt = v, i++;
        } else if (!strcmp(a, "--lut") && v) {
            lut_path = v, i++;
        } else if (!strcmp(a, "--acc-model") && v) {
            acc_path = v, i++;
        } else if (!strcmp(a, "--out") && v) {
            out = v, i++;
        } else if (!strcmp(a, "--board") && v) {
            board = v, i++;
        } else if (!strcmp(a, "--device") && v) {
            device = v, i++;
        } else if (!strcmp(a, "--rerank") || !strcmp(a, "--rerank-spread") ||
                   !strcmp(a, "--rerank-images") || !strcmp(a, "--recal-images") ||
                   !strcmp(a, "--rerank-seeds")) {
            long *dst = !strcmp(a, "--rerank")          ? &rerank
                        : !strcmp(a, "--rerank-spread") ? &spread
                        : !strcmp(a, "--rerank-images") ? &rerank_images
                        : !strcmp(a, "--rerank-seeds")  ? &rerank_seeds
                                                        : &recal;
            const bool small = dst == &rerank || dst == &spread || dst == &rerank_seeds;
            if (dst == &rerank_seeds && v && !strcmp(v, "all")) {
                all_seeds = 1;
            } else if (!cmd_parse_long("search", a, v,
                                       dst == &rerank || dst == &rerank_seeds ? 0 : 1,
                                       small ? 1000 : 1L << 30, dst)) {
                if (dst == &rerank_seeds)
                    fprintf(stderr, "manta search: --rerank-seeds also takes 'all'\n");
                return 2;
            } else if (dst == &rerank_seeds) {
                all_seeds = 0; /* the last --rerank-seeds counts */
            }
            i++;
        } else if (!strcmp(a, "--latency-ms") || !strcmp(a, "--max-arena-kb") ||
                   !strcmp(a, "--max-flash-kb") || !strcmp(a, "--max-macs")) {
            double *dst = a[2] == 'l' ? &latency : a[6] == 'a' ? &arena_kb
                                                   : a[6] == 'f' ? &flash_kb
                                                                 : &macs;
            if (!parse_double(a, v, 1e-9, 1e18, dst))
                return 2;
            i++;
        } else if (!strcmp(a, "--parents") || !strcmp(a, "--mutate-prob")) {
            if (!parse_double(a, v, 0, 1, a[2] == 'p' ? &c.parent_ratio : &c.mutate_prob))
                return 2;
            i++;
        } else if (!strcmp(a, "--seed") || !strcmp(a, "--population") ||
                   !strcmp(a, "--generations")) {
            if (!cmd_parse_long("search", a, v, a[2] == 's' ? 0 : 1, 1L << 24, &x))
                return 2;
            i++;
            if (a[2] == 's')
                c.seed = (uint64_t)x;
            else if (a[2] == 'p')
                c.population = (int)x, c.init_tries = 100 * (int)x;
            else
                c.generations = (int)x;
        } else {
            fprintf(stderr, "manta search: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!ckpt || !lut_path || !acc_path || latency <= 0) {
        fprintf(stderr, "manta search: --ckpt FILE, --lut LUT.json, --acc-model MODEL.accp and "
                        "--latency-ms X are required (see --help)\n");
        return 2;
    }
    c.keep_top = (int)rerank;
    c.top_min_genes = (int)spread;
    c.budget[EVO_LATENCY] = latency;
    c.budget[EVO_ARENA] = arena_kb * 1024;
    c.budget[EVO_FLASH] = flash_kb * 1024;
    c.budget[EVO_MACS] = macs;
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    train_meta meta;
    manta_status st = trainstate_peek(ckpt, &sp, &meta, &err);
    if (st != MANTA_OK) {
        cmd_error("search", st, &err);
        return 1;
    }
    lat_table lut;
    memset(&lut, 0, sizeof lut);
    accp_model acc;
    memset(&acc, 0, sizeof acc);
    if ((st = lat_table_load(lut_path, &sp, &lut, &err)) != MANTA_OK ||
        (st = lat_table_check_complete(&lut, &err)) != MANTA_OK) {
        fprintf(stderr, "manta search: %s\n", manta_err_msg(&err, st));
        lat_table_free(&lut);
        return 1;
    }
    if (board && !same_board(lut.device, board)) {
        fprintf(stderr,
                "manta search: %s was measured on device '%s' (CPU '%s'), not on board '%s'; "
                "profile the board with manta-profile\n",
                lut_path, lut.device, lut.cpu, board);
        lat_table_free(&lut);
        return 1;
    }
    if ((st = accp_load(acc_path, &sp, &acc, &err)) != MANTA_OK) {
        cmd_error("search", st, &err);
        lat_table_free(&lut);
        return 1;
    }
    /* the supernet on the device, opened before the search so that a bad device fails fast */
    run_ckpt rk;
    memset(&rk, 0, sizeof rk);
    if (rerank > 0) {
        if (!run_ckpt_open("search", ckpt, device, &rk)) {
            lat_table_free(&lut);
            accp_free(&acc);
            return 1;
        }
        if (rk.data.split.n_val == 0) {
            fprintf(stderr, "manta search: --rerank needs validation images; %s was trained "
                            "with --val 0\n", ckpt);
            run_ckpt_close(&rk);
            lat_table_free(&lut);
            accp_free(&acc);
            return 1;
        }
        if (rerank_images > rk.data.split.n_val)
            rerank_images = rk.data.split.n_val;
    }
    /* the export's preprocessing (labels, normalisation), so that file sizes are exact */
    run_data rd;
    int rc = 1;
    double *val = NULL; /* (r.n_top) validation top-1 of the re-ranked candidates */
    ofa_arch *seeds = NULL; /* the uniform sub-networks, seeds of the search */
    size_t chosen = 0;
    if (!run_data_load(meta.data, sp.in_channels, meta.val, meta.seed, false, &rd)) {
        run_ckpt_close(&rk);
        lat_table_free(&lut);
        accp_free(&acc);
        return 1;
    }
    xg_preprocess pre = {0};
    pre.channels = sp.in_channels;
    for (int ch = 0; ch < sp.in_channels; ch++) {
        pre.mean[ch] = rd.aug_eval.mean[ch];
        pre.std[ch] = rd.aug_eval.std[ch];
    }
    pre.n_labels = rd.train.classes;
    pre.labels = rd.train.class_names;
    ctx cx = {&sp, &lut, &acc, &pre, arena_kb > 0 || flash_kb > 0, NULL, 0, 0, 0};
    progress pg = {!quiet, json, cmd_now()};
    evo_callbacks cb = {measure, &cx, fitness, &cx, on_generation, &pg};
    evo_result r;
    memset(&r, 0, sizeof r);
    char path[1200], enc[2048];
    if ((st = manta_file_mkdir_p(out, &err)) != MANTA_OK) {
        cmd_error("search", st, &err);
        goto done;
    }
    /* every uniform sub-network, as seeds of the first population */
    if (uniform_seeds) {
        if (!(seeds = malloc((size_t)(sp.n_res * sp.n_d * sp.n_e * sp.n_ks) * sizeof *seeds))) {
            fprintf(stderr, "manta search: out of memory\n");
            goto done;
        }
        for (int ri = 0; ri < sp.n_res; ri++)
            for (int di = 0; di < sp.n_d; di++)
                for (int ei = 0; ei < sp.n_e; ei++)
                    for (int ki = 0; ki < sp.n_ks; ki++)
                        ofa_arch_uniform(&sp, sp.ks[ki], sp.e[ei], sp.d[di], sp.res[ri],
                                         &seeds[c.n_seeds++]);
        c.seeds = seeds;
        /* the uniform ones re-measured beside the K: all, or the U fittest */
        if (rerank > 0)
            c.top_seeds = all_seeds ? c.n_seeds : (int)rerank_seeds;
    }
    if ((st = evo_search(&sp, &c, &cb, &r, &err)) != MANTA_OK) {
        fprintf(stderr, "manta search: %s\n", manta_err_msg(&err, st));
        goto done;
    }
    if (rerank > 0) {
        if (!(val = calloc(r.n_top, sizeof *val))) {
            fprintf(stderr, "manta search: out of memory\n");
            goto done;
        }
        if (!rerank_top(&rk, &r, rerank_images, recal, &pg, val, &chosen))
            goto done;
        r.best = r.top[chosen];
    }
    const double search_s = cmd_now() - pg.t0;
    /* exact arena and file size of the front and the best (when not computed already) */
    for (size_t i = 0; i <= r.n_front; i++) {
        evo_point *p = i < r.n_front ? &r.front[i] : &r.best;
        size_t arena, file;
        if ((st = sizes_of(&cx, &p->arch, &arena, &file, &err)) != MANTA_OK) {
            cmd_error("search", st, &err);
            goto done;
        }
        p->f.v[EVO_ARENA] = (double)arena;
        p->f.v[EVO_FLASH] = (double)file;
    }
    if ((st = ofa_arch_to_json(&sp, &r.best.arch, enc, sizeof enc, &err)) != MANTA_OK) {
        cmd_error("search", st, &err);
        goto done;
    }
    {
        char text[2100];
        snprintf(text, sizeof text, "%s\n", enc);
        snprintf(path, sizeof path, "%s/arch.json", out);
        if ((st = manta_file_write_atomic(path, text, strlen(text), &err)) != MANTA_OK) {
            cmd_error("search", st, &err);
            goto done;
        }
    }
    char title[256];
    snprintf(title, sizeof title, "%s: predicted top-1 vs latency on %.60s (budget %.4g ms)",
             sp.name, lut.device, latency);
    snprintf(path, sizeof path, "%s/front.csv", out);
    if ((st = evo_write_front_csv(&r, &sp, path, &err)) == MANTA_OK) {
        snprintf(path, sizeof path, "%s/front.svg", out);
        st = evo_write_front_svg(&r, title, path, &err);
    }
    if (st != MANTA_OK) {
        cmd_error("search", st, &err);
        goto done;
    }
    {
        manta_strbuf b = {0};
        /* "version" is the format's: manta's own provenance goes in an object of its
         * own (the device is the re-rank's, none without --rerank) */
        char prov[4096];
        cmd_json_provenance_str(prov, sizeof prov, rk.dev);
        manta_strbuf_printf(&b,
                            "{\"format\":\"manta-search\",\"version\":1,\"provenance\":{%s},"
                            "\"space\":",
                            prov);
        put_str(&b, sp.name);
        manta_strbuf_printf(&b, ",\"ckpt\":");
        put_str(&b, ckpt);
        manta_strbuf_printf(&b, ",\"lut\":");
        put_str(&b, lut_path);
        manta_strbuf_printf(&b, ",\"device\":");
        put_str(&b, lut.device);
        manta_strbuf_printf(&b, ",\"acc_model\":");
        put_str(&b, acc_path);
        manta_strbuf_printf(&b,
                            ",\"seed\":%llu,\"population\":%d,\"generations\":%d,"
                            "\"parent_ratio\":%g,\"mutate_prob\":%g,\"uniform_seeds\":%d,"
                            "\"uniform_within_budget\":%zu,\"budget\":{\"max_latency_ms\":%g,"
                            "\"max_arena_bytes\":%g,\"max_flash_bytes\":%g,\"max_macs\":%g},",
                            (unsigned long long)c.seed, c.population, c.generations, c.parent_ratio,
                            c.mutate_prob, c.n_seeds, r.n_seeds_in, latency, c.budget[EVO_ARENA],
                            c.budget[EVO_FLASH], macs);
        /* before "best", so that a reader taking the last "predicted_top1" gets the best's */
        if (rerank > 0) {
            manta_strbuf_printf(&b,
                                "\"rerank\":{\"spread_genes\":%ld,\"by_resolution\":%d,"
                                "\"uniform_added\":%zu,"
                                "\"images\":%ld,\"recal_images\":%ld,\"chosen\":%zu,"
                                "\"candidates\":[",
                                spread, c.top_by_res, r.n_top_seeds, rerank_images, recal,
                                chosen + 1);
            for (size_t i = 0; i < r.n_top; i++) {
                char e2[2048];
                if ((st = ofa_arch_to_json(&sp, &r.top[i].arch, e2, sizeof e2, &err)) != MANTA_OK)
                    break;
                manta_strbuf_printf(&b,
                                    "%s{\"arch\":%s,\"predicted_top1\":%.6f,"
                                    "\"validation_top1\":%.6f,\"predicted_latency_ms\":%.6f}",
                                    i ? "," : "", e2, r.top[i].acc, val[i],
                                    r.top[i].f.v[EVO_LATENCY]);
            }
            manta_strbuf_printf(&b, "]},");
        } else {
            manta_strbuf_printf(&b, "\"rerank\":null,");
        }
        manta_strbuf_printf(&b,
                            "\"best\":{\"arch\":%s,\"predicted_top1\":%.6f,"
                            "\"predicted_latency_ms\":%.6f,"
                            "\"macs\":%.0f,\"arena_bytes\":%.0f,\"file_bytes\":%.0f},"
                            "\"front_points\":%zu,\"evaluated\":%ld,\"measured\":%ld,"
                            "\"rejected\":%ld,\"models_planned\":%ld,\"seconds\":%.2f}\n",
                            enc, r.best.acc, r.best.f.v[EVO_LATENCY], r.best.f.v[EVO_MACS],
                            r.best.f.v[EVO_ARENA], r.best.f.v[EVO_FLASH], r.n_front, r.evaluated,
                            r.measured, r.rejected, cx.built, search_s);
        snprintf(path, sizeof path, "%s/search.json", out);
        st = st != MANTA_OK ? st
             : b.oom ? manta_err_set(&err, MANTA_ERR_NO_MEMORY, "search: out of memory")
                   : manta_file_write_atomic(path, b.p, b.n, &err);
        if (st == MANTA_OK && json)
            fputs(b.p, stdout);
        manta_strbuf_free(&b);
        if (st != MANTA_OK) {
            cmd_error("search", st, &err);
            goto done;
        }
    }
    if (!json) {
        printf("best sub-network under %.4g ms: %s\n", latency, enc);
        printf("  predicted top-1 %.2f%%, predicted latency %.3f ms (%s), %.2f M MACs, "
               "arena %.1f KiB, file %.1f KiB\n",
               100 * r.best.acc, r.best.f.v[EVO_LATENCY], lut.device, r.best.f.v[EVO_MACS] / 1e6,
               r.best.f.v[EVO_ARENA] / 1024, r.best.f.v[EVO_FLASH] / 1024);
        if (rerank > 0)
            printf("  validation top-1 %.2f%%: the best of %zu of the fittest candidates (%ld or "
                   "more genes apart) and %zu uniform %s measured on %ld validation images; "
                   "predicted rank %zu%s\n",
                   100 * val[chosen], r.n_top - r.n_top_seeds, spread, r.n_top_seeds,
                   r.n_top_seeds == 1 ? "one" : "ones", rerank_images, chosen + 1,
                   chosen >= r.n_top - r.n_top_seeds ? " (a uniform one)" : "");
        printf("  %ld candidates evaluated (%ld over budget), %zu on the Pareto front; %.1f s\n",
               r.evaluated, r.rejected, r.n_front, search_s);
        printf("  wrote %s/arch.json, front.csv, front.svg, search.json\n", out);
    }
    rc = 0;
done:
    free(val);
    free(seeds);
    if (rerank > 0)
        run_ckpt_close(&rk);
    evo_result_free(&r);
    free(cx.cache);
    run_data_free(&rd);
    lat_table_free(&lut);
    accp_free(&acc);
    return rc;
}
