/* manta search: OFA's evolutionary search for the sub-network of highest
 * predicted accuracy under a latency budget (and optionally arena, flash and
 * MACs budgets), with its Pareto front. Latency comes from a board's latency
 * table, accuracy from the accuracy predictor, MACs from the space's
 * description, and arena and file size exactly from the engine's planner on
 * the .tflite the exporter would write for the candidate (search/sizes.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/fileio.h"
#include "profile/latency_table.h"
#include "rundata.h"
#include "search/acc_predictor.h"
#include "search/candidates.h"
#include "search/evolution.h"
#include "search/results.h"
#include "search/sizes.h"
#include "classify/trainstate.h"
#include "search_cmd.h"
#include "stereo_cmd.h"

/* ---- what the search reads ---- */

typedef struct search_inputs {
    ofa_space sp;       /* the space (a stereo one's stereo_space_ofa_view()) */
    bool stereo;        /* a stereo search: ssp is its space */
    stereo_space ssp;   /* ... */
    stereo_cmd_ckpt sk; /* a stereo --rerank: the supernet on the device */
    bool have_sk;
    train_meta meta;
    lat_table lut;
    accp_model acc;
    run_ckpt rk; /* with --rerank: the supernet on the device */
    bool have_rk, have_rd;
    run_data rd;       /* the export's preprocessing (labels, normalisation) ... */
    xg_preprocess pre; /* ... so that file sizes are exact */
} search_inputs;

static void close_inputs(search_inputs *in)
{
    if (in->have_sk)
        stereo_cmd_ckpt_close(&in->sk);
    if (in->have_rk)
        run_ckpt_close(&in->rk);
    if (in->have_rd)
        run_data_free(&in->rd);
    lat_table_free(&in->lut);
    accp_free(&in->acc);
}

/* "NAME (manta engine, ...)" or "NAME": the name part of a table's device. */
static int same_board(const char *device, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(device, name, n) && (device[n] == 0 || device[n] == ' ');
}

/* Open the checkpoint's space, the table, the predictor, the supernet (--rerank) and the
 * data's preprocessing; false after printing why not (close_inputs() in any case). */
/* The stereo search's space (--ckpt's or --space's), table, predictor and (--rerank) supernet;
 * false after printing why not. */
static bool open_stereo_inputs(search_opts *o, search_inputs *in)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st = MANTA_OK;
    stereo_meta sm;
    in->stereo = true;
    if (o->int8) {
        fprintf(stderr, "manta search: --int8 is a classification search's (no int8 stereo "
                        "export yet)\n");
        return false;
    }
    if (o->ckpt)
        st = stereo_state_peek(o->ckpt, &in->ssp, &sm, &err);
    else
        st = stereo_space_load(o->space, &in->ssp, &err);
    if (st == MANTA_OK) {
        stereo_space_ofa_view(&in->ssp, &in->sp);
        if ((st = lat_table_load_stereo(o->lut, &in->ssp, &in->lut, &err)) == MANTA_OK)
            st = lat_table_check_complete(&in->lut, &err);
    }
    if (st != MANTA_OK) {
        fprintf(stderr, "manta search: %s\n", manta_err_msg(&err, st));
        return false;
    }
    if (o->board && !same_board(in->lut.device, o->board)) {
        fprintf(stderr,
                "manta search: %s was measured on device '%s' (CPU '%s'), not on board '%s'; "
                "profile the board with manta-profile\n",
                o->lut, in->lut.device, in->lut.cpu, o->board);
        return false;
    }
    if ((st = accp_load_stereo(o->acc, &in->ssp, &in->acc, &err)) != MANTA_OK) {
        cmd_error("search", st, &err);
        return false;
    }
    if (o->images_seen) {
        fprintf(stderr, "manta search: --rerank-images and --recal-images are a classification "
                        "search's; a stereo one takes --rerank-pairs and --recal-pairs\n");
        return false;
    }
    if (o->rerank > 0) {
        if (!(in->have_sk = stereo_cmd_ckpt_open("search", o->ckpt, o->device, &in->sk)))
            return false;
        o->rerank_images = o->rerank_pairs; /* what search.json reports */
        o->recal = o->recal_pairs;
    }
    return true;
}

static bool open_inputs(search_opts *o, search_inputs *in)
{
    memset(in, 0, sizeof *in);
    manta_err err;
    manta_err_clear(&err);
    bool stereo = false;
    if (o->space) {
        if (stereo_spec_is_stereo(o->space, &stereo, &err) != MANTA_OK || !stereo) {
            fprintf(stderr, "manta search: --space %s: %s\n", o->space,
                    stereo ? err.msg : "not a stereo space (a classification search takes --ckpt)");
            return false;
        }
    }
    if (o->space || stereo_state_peek(o->ckpt, &in->ssp, &(stereo_meta){0}, &err) == MANTA_OK)
        return open_stereo_inputs(o, in);
    if (!run_ckpt_peek("search", o->ckpt, &in->sp, &in->meta))
        return false;
    if (o->pairs_seen) {
        fprintf(stderr, "manta search: --rerank-pairs and --recal-pairs are a stereo search's; "
                        "a classification one takes --rerank-images and --recal-images\n");
        return false;
    }
    manta_status st;
    if ((st = lat_table_load_dtype(o->lut, &in->sp, o->int8 ? LAT_DTYPE_INT8 : LAT_DTYPE_F32,
                                   &in->lut, &err)) != MANTA_OK ||
        (st = lat_table_check_complete(&in->lut, &err)) != MANTA_OK) {
        fprintf(stderr, "manta search: %s\n", manta_err_msg(&err, st));
        return false;
    }
    if (o->board && !same_board(in->lut.device, o->board)) {
        fprintf(stderr,
                "manta search: %s was measured on device '%s' (CPU '%s'), not on board '%s'; "
                "profile the board with manta-profile\n",
                o->lut, in->lut.device, in->lut.cpu, o->board);
        return false;
    }
    if ((st = accp_load(o->acc, &in->sp, &in->acc, &err)) != MANTA_OK) {
        cmd_error("search", st, &err);
        return false;
    }
    /* the supernet on the device, opened before the search so that a bad device fails fast */
    if (o->rerank > 0) {
        if (!(in->have_rk = run_ckpt_open("search", o->ckpt, o->device, &in->rk)))
            return false;
        if (in->rk.data.split.n_val == 0) {
            fprintf(stderr,
                    "manta search: --rerank needs validation images; %s was trained "
                    "with --val 0\n",
                    o->ckpt);
            return false;
        }
        if (o->rerank_images > in->rk.data.split.n_val)
            o->rerank_images = in->rk.data.split.n_val;
    }
    const ofa_space *sp = &in->sp;
    if (!(in->have_rd = run_data_load("search", in->meta.data, sp->in_channels, in->meta.val,
                                      in->meta.seed, false, &in->rd)))
        return false;
    in->pre.channels = sp->in_channels;
    for (int ch = 0; ch < sp->in_channels; ch++) {
        in->pre.mean[ch] = in->rd.aug_eval.mean[ch];
        in->pre.std[ch] = in->rd.aug_eval.std[ch];
    }
    in->pre.n_labels = in->rd.train.classes;
    in->pre.labels = in->rd.train.class_names;
    return true;
}

/* ---- the search's callbacks ---- */

typedef struct progress {
    int on, json;
    double t0;
    bool stereo; /* the fitness is minus the predicted EPE */
} progress;

static void on_generation(void *vp, int gen, int gens, const evo_point *best)
{
    progress *p = vp;
    if (!p->on || (gen % 25 != 0 && gen != gens && gen != 1))
        return;
    double el = cmd_now() - p->t0, eta = el / gen * (gens - gen);
    if (p->json && p->stereo)
        printf("{\"generation\":%d,\"generations\":%d,\"best_epe\":%.5f,\"best_latency_ms\":%.4f,"
               "\"elapsed_s\":%.2f,\"eta_s\":%.2f}\n",
               gen, gens, -best->acc, best->f.v[EVO_LATENCY], el, eta);
    else if (p->json)
        printf("{\"generation\":%d,\"generations\":%d,\"best_top1\":%.5f,\"best_latency_ms\":%.4f,"
               "\"elapsed_s\":%.2f,\"eta_s\":%.2f}\n",
               gen, gens, best->acc, best->f.v[EVO_LATENCY], el, eta);
    else if (p->stereo)
        fprintf(stderr,
                "search: generation %d/%d  best predicted EPE %.3f px at %.3f ms  "
                "%.1f s, ETA %.1f s\n",
                gen, gens, -best->acc, best->f.v[EVO_LATENCY], el, eta);
    else
        fprintf(stderr,
                "search: generation %d/%d  best predicted top-1 %.2f%% at %.3f ms  "
                "%.1f s, ETA %.1f s\n",
                gen, gens, 100 * best->acc, best->f.v[EVO_LATENCY], el, eta);
    fflush(stdout);
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
        manta_status st =
            ofa_trainer_evaluate(l->trainer, &r->top[i].arch, eval_source_batch, &rs, recal,
                                 eval_source_batch, &es, images, &val[i], NULL);
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
            fprintf(stderr,
                    "search: re-rank %zu/%zu  predicted top-1 %.2f%%  validation %.2f%%  "
                    "%.1f s, ETA %.1f s\n",
                    i + 1, r->n_top, 100 * r->top[i].acc, 100 * val[i], el, eta);
        fflush(stdout);
    }
    return true;
}

/* rerank_top() of a stereo search: held-out EPE of each (the lowest is chosen). */
static bool rerank_top_stereo(stereo_cmd_ckpt *c, const evo_result *r, long pairs, long recal,
                              const progress *pg, double *val, size_t *chosen)
{
    const double t0 = cmd_now();
    *chosen = 0;
    for (size_t i = 0; i < r->n_top; i++) {
        manta_err err = {0};
        stereo_scores all, noc;
        manta_status st =
            stereo_cmd_ckpt_heldout(c, &r->top[i].arch, pairs, recal, &all, &noc, &err);
        if (st != MANTA_OK) {
            cmd_error("search", st, &err);
            return false;
        }
        val[i] = all.epe;
        if (val[i] < val[*chosen])
            *chosen = i;
        const double el = cmd_now() - t0, eta = el / (double)(i + 1) * (double)(r->n_top - i - 1);
        if (pg->json)
            printf("{\"rerank\":%zu,\"of\":%zu,\"predicted_epe\":%.5f,\"heldout_epe\":%.5f,"
                   "\"elapsed_s\":%.2f,\"eta_s\":%.2f}\n",
                   i + 1, r->n_top, -r->top[i].acc, val[i], el, eta);
        else if (pg->on)
            fprintf(stderr,
                    "search: re-rank %zu/%zu  predicted EPE %.3f px  held-out %.3f px  "
                    "%.1f s, ETA %.1f s\n",
                    i + 1, r->n_top, -r->top[i].acc, val[i], el, eta);
        fflush(stdout);
    }
    return true;
}

/* ---- results ---- */

/* A finished search: what the summary needs. */
typedef struct outcome {
    const search_opts *o;
    const search_inputs *in;
    const evo_result *r;
    double *val;   /* (r->n_top) with --rerank: validation top-1 of the re-ranked */
    size_t chosen; /* with --rerank: index of the chosen among them */
    double seconds;
    char enc[2048]; /* the best sub-network in OFA's encoding */
} outcome;

/* DIR/arch.json, front.csv, front.svg and search.json (with --json also on standard output). */
static manta_status write_results(const outcome *w, long built, manta_err *err)
{
    const search_opts *o = w->o;
    char prov[4096];
    cmd_json_provenance_str(prov, sizeof prov,
                            w->in->have_rk   ? w->in->rk.dev
                            : w->in->have_sk ? w->in->sk.dev
                                             : NULL);
    const search_report rep = {.space = &w->in->sp,
                               .config = &o->c,
                               .result = w->r,
                               .provenance = prov,
                               .ckpt = o->ckpt ? o->ckpt : o->space,
                               .lut = o->lut,
                               .device = w->in->lut.device,
                               .acc_model = o->acc,
                               .val = w->val,
                               .chosen = w->chosen,
                               .rerank_images = o->rerank_images,
                               .recal_images = o->recal,
                               .models_planned = built,
                               .seconds = w->seconds,
                               .int8 = o->int8};
    return search_results_write(&rep, o->out, o->json ? stdout : NULL, err);
}

static void print_summary_stereo(const outcome *w)
{
    const search_opts *o = w->o;
    const evo_result *r = w->r;
    printf("best sub-network of %s under %.4g ms: %s\n", w->in->ssp.name, o->latency, w->enc);
    printf("  predicted EPE %.3f px, predicted latency %.3f ms (%s), %.2f M MACs, "
           "arena %.1f KiB, file %.1f KiB\n",
           -r->best.acc, r->best.f.v[EVO_LATENCY], w->in->lut.device, r->best.f.v[EVO_MACS] / 1e6,
           r->best.f.v[EVO_ARENA] / 1024, r->best.f.v[EVO_FLASH] / 1024);
    if (o->rerank > 0)
        printf("  held-out EPE %.3f px: the lowest of %zu of the fittest candidates (%ld or "
               "more genes apart) and %zu uniform %s measured on %ld held-out pairs; "
               "predicted rank %zu%s\n",
               w->val[w->chosen], r->n_top - r->n_top_seeds, o->spread, r->n_top_seeds,
               r->n_top_seeds == 1 ? "one" : "ones", o->rerank_pairs, w->chosen + 1,
               w->chosen >= r->n_top - r->n_top_seeds ? " (a uniform one)" : "");
    printf("  %ld candidates evaluated (%ld over budget), %zu on the Pareto front; %.1f s\n",
           r->evaluated, r->rejected, r->n_front, w->seconds);
    printf("  wrote %s/arch.json, front.csv, front.svg, search.json\n", o->out);
}

static void print_summary(const outcome *w)
{
    const search_opts *o = w->o;
    const evo_result *r = w->r;
    if (w->in->stereo) {
        print_summary_stereo(w);
        return;
    }
    printf("best sub-network under %.4g ms%s: %s\n", o->latency, o->int8 ? " (int8)" : "", w->enc);
    printf("  predicted top-1 %.2f%%, predicted latency %.3f ms (%s), %.2f M MACs, "
           "arena %.1f KiB, file %.1f KiB\n",
           100 * r->best.acc, r->best.f.v[EVO_LATENCY], w->in->lut.device,
           r->best.f.v[EVO_MACS] / 1e6, r->best.f.v[EVO_ARENA] / 1024,
           r->best.f.v[EVO_FLASH] / 1024);
    if (o->rerank > 0)
        printf("  validation top-1 %.2f%%: the best of %zu of the fittest candidates (%ld or "
               "more genes apart) and %zu uniform %s measured on %ld validation images; "
               "predicted rank %zu%s\n",
               100 * w->val[w->chosen], r->n_top - r->n_top_seeds, o->spread, r->n_top_seeds,
               r->n_top_seeds == 1 ? "one" : "ones", o->rerank_images, w->chosen + 1,
               w->chosen >= r->n_top - r->n_top_seeds ? " (a uniform one)" : "");
    printf("  %ld candidates evaluated (%ld over budget), %zu on the Pareto front; %.1f s\n",
           r->evaluated, r->rejected, r->n_front, w->seconds);
    printf("  wrote %s/arch.json, front.csv, front.svg, search.json\n", o->out);
}

/* ---- the command ---- */

/* Search, re-rank, size and write; false after printing why not. */
static bool search(search_opts *o, search_inputs *in, search_candidates *cx, evo_result *r,
                   outcome *w)
{
    manta_err err;
    manta_err_clear(&err);
    progress pg = {!o->quiet, o->json, cmd_now(), in->stereo};
    evo_callbacks cb = {
        search_candidate_measure, cx, search_candidate_fitness, cx, on_generation, &pg};
    manta_status st = evo_search(&in->sp, &o->c, &cb, r, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta search: %s\n", manta_err_msg(&err, st));
        return false;
    }
    if (o->rerank > 0) {
        if (!(w->val = calloc(r->n_top, sizeof *w->val))) {
            fprintf(stderr, "manta search: out of memory\n");
            return false;
        }
        if (in->stereo
                ? !rerank_top_stereo(&in->sk, r, o->rerank_pairs, o->recal_pairs, &pg, w->val,
                                     &w->chosen)
                : !rerank_top(&in->rk, r, o->rerank_images, o->recal, &pg, w->val, &w->chosen))
            return false;
        r->best = r->top[w->chosen];
    }
    w->seconds = cmd_now() - pg.t0;
    /* DIR is made once there are results */
    if ((st = search_results_size(&cx->sizes, r, &err)) == MANTA_OK &&
        (st = in->stereo ? stereo_arch_to_json(&in->ssp, &r->best.arch, w->enc, sizeof w->enc, &err)
                         : ofa_arch_to_json(&in->sp, &r->best.arch, w->enc, sizeof w->enc, &err)) ==
            MANTA_OK)
        st = write_results(w, cx->sizes.built, &err);
    if (st != MANTA_OK) {
        cmd_error("search", st, &err);
        return false;
    }
    if (!o->json)
        print_summary(w);
    return true;
}

int cmd_search(int argc, char **argv)
{
    search_opts o;
    int rc = search_parse_args(argc, argv, &o);
    if (rc != 1)
        return rc;
    search_inputs in;
    ofa_arch *seeds = NULL; /* the uniform sub-networks, seeds of the search */
    evo_result r;
    memset(&r, 0, sizeof r);
    outcome w = {.o = &o, .in = &in, .r = &r};
    search_candidates cx = {.space = &in.sp,
                            .lut = &in.lut,
                            .acc = &in.acc,
                            .need_sizes = o.arena_kb > 0 || o.flash_kb > 0};
    search_sizes_init(&cx.sizes, &in.sp, &in.pre);
    cx.sizes.int8 = o.int8;
    rc = 1;
    if (open_inputs(&o, &in)) {
        if (in.stereo) {
            cx.stereo = &in.ssp;
            o.c.stereo = &in.ssp;
            search_sizes_init_stereo(&cx.sizes, &in.ssp);
        }
        if (!o.no_uniform) {
            manta_err err;
            if ((in.stereo ? search_uniform_seeds_stereo(&in.ssp, &seeds, &o.c.n_seeds, &err)
                           : search_uniform_seeds(&in.sp, &seeds, &o.c.n_seeds, &err)) != MANTA_OK)
                fprintf(stderr, "manta search: out of memory\n");
            o.c.seeds = seeds;
            /* the uniform ones re-measured beside the K: all, or the U fittest */
            if (seeds && o.rerank > 0)
                o.c.top_seeds = o.all_seeds ? o.c.n_seeds : (int)o.seeds_u;
        }
        if ((o.no_uniform || seeds) && search(&o, &in, &cx, &r, &w))
            rc = 0;
    }
    free(w.val);
    free(seeds);
    evo_result_free(&r);
    search_sizes_free(&cx.sizes);
    close_inputs(&in);
    return rc;
}
