/* manta train --space stereo-...: progressive-shrinking training of the stereo depth
 * supernet (runtime/stereo/train.h) on one device, on procedural pairs or a folder of
 * pairs, with progress lines, evaluations of the largest and smallest sub-networks on
 * held-out pairs at every phase's end, checkpoints and exact resume. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/fileio.h"
#include "stereo/state.h"

typedef struct st_opts {
    const char *space, *schedule, *device, *out, *data;
    int batch, log_every;
    long train_pairs, eval_pairs, recal_pairs, stop_after, seed;
    bool resume, json;
} st_opts;

typedef struct st_run {
    st_opts o;
    stereo_space sp;
    stereo_meta meta;
    ofa_schedule sched;
    mcl_dev *d;
    stereo_trainer *t;
    stereo_set set;
    bool have_set;
    stereo_source train_src, eval_src;
    stereo_batch b;
    FILE *metrics;
    char dir[1024];
} st_run;

/* The pairs of step @p step: drawn from (seed, step), so a resumed run sees the same. */
static manta_status step_batch(st_run *r, long step, manta_err *err)
{
    manta_rng rng;
    manta_rng_seed(&rng, r->meta.seed, (uint64_t)step * 2 + 1);
    long idx[64];
    for (int k = 0; k < r->b.n; k++)
        idx[k] = (long)(manta_rng_u32(&rng) % (uint32_t)r->train_src.count);
    stereo_aug_params aug;
    stereo_aug_params_default(&aug, r->sp.crop_h, r->sp.crop_w);
    return stereo_batch_fill(&r->b, &r->train_src, idx, &aug, &rng, err);
}

/* EPE, bad-3 and D1 of sub-network @p a on the held-out pairs. */
static manta_status evaluate(st_run *r, const ofa_arch *a, stereo_scores *all, stereo_scores *noc)
{
    stereo_metrics m = {0};
    MANTA_TRY(stereo_trainer_evaluate(r->t, a, &r->b, stereo_ordered_batch, &r->train_src,
                                      r->o.recal_pairs, stereo_ordered_batch, &r->eval_src,
                                      r->o.eval_pairs, &m, NULL));
    stereo_metrics_scores(&m, all, noc);
    return MANTA_OK;
}

static manta_status save(st_run *r, const char *name, long next_step, manta_err *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", r->dir, name);
    r->meta.step = next_step;
    r->meta.has_teacher = stereo_trainer_has_teacher(r->t);
    return stereo_state_save(path, r->t, r->d, &r->meta, err);
}

/* End of phase @p ph (after step @p step): evaluations and a checkpoint. */
static manta_status phase_end(st_run *r, int ph, long step, manta_err *err)
{
    ofa_arch big, small;
    stereo_arch_max(&r->sp, &big);
    stereo_arch_min(&r->sp, &small);
    stereo_scores ab, nb, as, ns;
    MANTA_TRY(evaluate(r, &big, &ab, &nb));
    MANTA_TRY(evaluate(r, &small, &as, &ns));
    char name[64];
    snprintf(name, sizeof name, "phase-%d-%s.ckpt", ph + 1, r->sched.phase[ph].name);
    MANTA_TRY(save(r, name, step + 1, err));
    MANTA_TRY(save(r, "latest.ckpt", step + 1, err));
    printf("phase %d/%d %s done: held-out EPE largest %.3f px (bad-3 %.2f%%, D1 %.2f%%), smallest "
           "%.3f px (bad-3 %.2f%%, D1 %.2f%%) (%s/%s)\n",
           ph + 1, r->sched.n_phases, r->sched.phase[ph].name, ab.epe, ab.bad3, ab.d1, as.epe,
           as.bad3, as.d1, r->dir, name);
    fprintf(r->metrics,
            "{\"event\":\"phase_end\",\"phase\":%d,\"name\":\"%s\",\"step\":%ld,"
            "\"largest\":{\"epe\":%.5f,\"bad3\":%.4f,\"d1\":%.4f,\"epe_noc\":%.5f},"
            "\"smallest\":{\"epe\":%.5f,\"bad3\":%.4f,\"d1\":%.4f,\"epe_noc\":%.5f}}\n",
            ph + 1, r->sched.phase[ph].name, step + 1, ab.epe, ab.bad3, ab.d1, nb.epe, as.epe,
            as.bad3, as.d1, ns.epe);
    fflush(r->metrics);
    return MANTA_OK;
}

static int train_loop(st_run *r)
{
    manta_err err = {0};
    const long total = ofa_schedule_total_steps(&r->sched), start = r->meta.step;
    double t0 = cmd_now(), last = t0;
    long since = 0;
    for (long step = start; step < total; step++) {
        stereo_step_result res;
        manta_status st = step_batch(r, step, &err);
        if (st == MANTA_OK && (st = stereo_trainer_step(r->t, step, &r->b, &res)) != MANTA_OK)
            err = *mcl_err(r->d);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta train: step %ld: %s\n", step, err.msg);
            return 1;
        }
        if (!isfinite(res.loss)) { /* diverged: stop before a checkpoint keeps it */
            fprintf(stderr,
                    "manta train: the loss is not a number at step %ld (phase %d); the last "
                    "checkpoint in %s is from before it\n",
                    step + 1, res.phase + 1, r->dir);
            return 1;
        }
        since++;
        long in_phase;
        int ph = ofa_schedule_locate(&r->sched, step, &in_phase);
        bool phase_done = in_phase == r->sched.phase[ph].steps - 1;
        if ((step + 1) % r->o.log_every == 0 || phase_done || step + 1 == total) {
            double now = cmd_now(), rate = since * r->o.batch / (now - last + 1e-9);
            printf("phase %d/%d %-8s step %6ld/%ld  loss %.4f  EPE %.3f px  round %d  lr %.4f  "
                   "%.1f pairs/s  ETA %.0f s\n",
                   ph + 1, r->sched.n_phases, r->sched.phase[ph].name, step + 1, total, res.loss,
                   res.epe, res.round + 1, res.lr, rate,
                   (double)(total - step - 1) * r->o.batch / (rate + 1e-9));
            fprintf(r->metrics,
                    "{\"event\":\"step\",\"step\":%ld,\"phase\":%d,\"loss\":%.6f,\"kd_loss\":%.6f,"
                    "\"epe\":%.5f,\"round\":%d,\"lr\":%.6f,\"pairs_per_s\":%.3f}\n",
                    step + 1, ph + 1, res.loss, res.kd_loss, res.epe, res.round + 1, res.lr, rate);
            fflush(stdout);
            last = now, since = 0;
        }
        if (phase_done && phase_end(r, ph, step, &err) != MANTA_OK) {
            fprintf(stderr, "manta train: %s\n", err.msg[0] ? err.msg : mcl_err(r->d)->msg);
            return 1;
        }
        if (r->o.stop_after > 0 && step + 1 - start >= r->o.stop_after && !phase_done &&
            step + 1 < total) {
            if (save(r, "latest.ckpt", step + 1, &err) != MANTA_OK) {
                fprintf(stderr, "manta train: %s\n", err.msg);
                return 1;
            }
            printf("stopped after %ld steps; resume with --resume (%s/latest.ckpt)\n",
                   r->o.stop_after, r->dir);
            return 0;
        }
    }
    printf("trained %ld steps in %.1f s; checkpoints in %s\n", total - start,
           cmd_now() - t0, r->dir);
    return 0;
}

/* Space, schedule, sources, device, trainer and outputs. */
static bool setup(st_run *r)
{
    manta_err err = {0};
    char latest[1200];
    snprintf(r->dir, sizeof r->dir, "%s", r->o.out);
    snprintf(latest, sizeof latest, "%s/latest.ckpt", r->dir);
    manta_status st = r->o.resume ? stereo_state_peek(latest, &r->sp, &r->meta, &err)
                                  : stereo_space_load(r->o.space, &r->sp, &err);
    if (st == MANTA_OK && !r->o.resume) {
        snprintf(r->meta.preset, sizeof r->meta.preset, "%s", r->o.schedule);
        snprintf(r->meta.data, sizeof r->meta.data, "%s", r->o.data);
        r->meta.batch = r->o.batch;
        r->meta.seed = (uint64_t)r->o.seed;
        r->meta.train_pairs = r->o.train_pairs;
    }
    r->o.batch = r->meta.batch;
    if (st == MANTA_OK && strcmp(r->meta.data, "synthetic") != 0) {
        st = stereo_folder_open(r->meta.data, STEREO_LAYOUT_AUTO, &r->set, &err);
        r->have_set = st == MANTA_OK;
    }
    if (st == MANTA_OK) {
        long pairs = r->have_set ? r->set.count : r->meta.train_pairs;
        st = stereo_schedule_preset(&r->sp, r->meta.preset, r->meta.batch,
                                    pairs / r->meta.batch > 0 ? pairs / r->meta.batch : 1,
                                    &r->sched, &err);
        r->train_src = (stereo_source){.kind = r->have_set ? STEREO_SOURCE_FOLDER
                                                           : STEREO_SOURCE_SYNTH,
                                       .count = pairs, .set = r->have_set ? &r->set : NULL};
        stereo_synth_opts_default(&r->train_src.synth, r->sp.crop_w, r->sp.crop_h,
                                  (float)r->sp.max_disp, r->meta.seed);
        stereo_heldout_source(&r->sp, r->meta.seed, r->o.eval_pairs, &r->eval_src);
    }
    if (st == MANTA_OK)
        st = stereo_batch_alloc(&r->b, r->meta.batch, r->sp.crop_h, r->sp.crop_w,
                                stereo_preds(&r->sp), &err);
    if (st == MANTA_OK)
        st = manta_file_mkdir_p(r->dir, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        return false;
    }
    if (!(r->d = cmd_open_device(r->o.device)))
        return false;
    st = stereo_trainer_create(r->d, &r->sp, &r->sched, r->meta.seed, &r->t);
    if (st == MANTA_OK && r->o.resume)
        st = stereo_state_load(latest, r->t, r->d, &r->meta, &err);
    else if (st != MANTA_OK)
        err = *mcl_err(r->d);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta train: %s\n", err.msg);
        return false;
    }
    char mpath[1200];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", r->dir);
    if (!(r->metrics = fopen(mpath, r->o.resume ? "a" : "w"))) {
        perror(mpath);
        return false;
    }
    return true;
}

int cmd_train_stereo(int argc, char **argv)
{
    st_run *r = calloc(1, sizeof *r);
    if (!r)
        return 1;
    r->o = (st_opts){.space = "stereo-cpu", .schedule = "quick", .out = "runs/stereo",
                     .data = "synthetic", .batch = 8, .log_every = 10, .train_pairs = 20000,
                     .eval_pairs = 200, .recal_pairs = 200, .seed = 1};
    static const char *const presets[] = {"smoke", "quick", "full", NULL};
    const opt_def defs[] = {
        {.name = "space", .kind = OPT_STRING, .dest = &r->o.space, .metavar = "S",
         .help = "stereo-cpu (default), stereo-gpu or a spec file with \"task\": \"stereo\""},
        {.name = "schedule", .kind = OPT_STRING, .dest = &r->o.schedule, .choices = presets,
         .metavar = "smoke|quick|full", .help = "progressive-shrinking preset (default quick)"},
        {.name = "data", .kind = OPT_STRING, .dest = &r->o.data, .metavar = "D",
         .help = "synthetic (default: procedural pairs) or a KITTI / Middlebury folder"},
        {.name = "train-pairs", .kind = OPT_LONG, .dest = &r->o.train_pairs, .lo = 1,
         .hi = 1e9, .metavar = "N", .help = "synthetic training set size (default 20000)"},
        {.name = "eval-pairs", .kind = OPT_LONG, .dest = &r->o.eval_pairs, .lo = 1, .hi = 1e7,
         .metavar = "N", .help = "held-out synthetic pairs per evaluation (default 200)"},
        {.name = "recal-pairs", .kind = OPT_LONG, .dest = &r->o.recal_pairs, .lo = 0,
         .hi = 1e7, .metavar = "N", .help = "pairs for BN re-calibration (default 200)"},
        {.name = "batch", .kind = OPT_INT, .dest = &r->o.batch, .lo = 1, .hi = 64,
         .metavar = "N", .help = "pairs per step (default 8)"},
        {.name = "device", .kind = OPT_STRING, .dest = &r->o.device, .metavar = "SPEC",
         .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = "out", .kind = OPT_STRING, .dest = &r->o.out, .metavar = "DIR",
         .help = "checkpoints and metrics.jsonl (default runs/stereo)"},
        {.name = "seed", .kind = OPT_LONG, .dest = &r->o.seed, .lo = 0, .hi = 1e15,
         .metavar = "S", .help = "seed of weights, data and sampling (default 1)"},
        {.name = "log-every", .kind = OPT_INT, .dest = &r->o.log_every, .lo = 1, .hi = 1 << 30,
         .metavar = "N", .help = "a progress line every N steps (default 10)"},
        {.name = "stop-after", .kind = OPT_LONG, .dest = &r->o.stop_after, .lo = 1, .hi = 1e12,
         .metavar = "N", .help = "stop after N steps, saving latest.ckpt (to --resume)"},
        {.name = "resume", .kind = OPT_FLAG, .dest = &r->o.resume,
         .help = "continue DIR/latest.ckpt exactly (its settings replace the options)"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta train",
        "--space stereo-cpu|stereo-gpu|SPEC [--schedule smoke|quick|full] [--data D]\n"
        "                   [--batch N] [--out DIR] [--resume] [OPTIONS]",
        "Trains the stereo depth supernet with progressive shrinking (full network, then\n"
        "elastic kernel, depth and expand ratio; the full network's disparity distilled into\n"
        "the sub-networks), the multi-scale L1 disparity loss with its weight moving from the\n"
        "coarse predictions to the finest. Pairs: procedural (layered textured shapes,\n"
        "sub-pixel disparity, occlusions; manta stereo-data writes the same ones) or a KITTI /\n"
        "Middlebury folder (random crops, colour jitter per view). Every phase's end\n"
        "evaluates the largest and the smallest sub-network on held-out pairs (EPE, bad-3,\n"
        "D1) and writes a checkpoint; metrics.jsonl has every figure.\n",
        defs, 0, 0};
    int first, rc = 2;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK) {
        free(r);
        return pr == OPT_HELP ? 0 : 2;
    }
    rc = setup(r) ? train_loop(r) : 1;
    if (r->metrics)
        fclose(r->metrics);
    stereo_trainer_destroy(r->t);
    stereo_batch_free(&r->b);
    if (r->have_set)
        stereo_set_free(&r->set);
    if (r->d)
        mcl_close(r->d);
    free(r);
    return rc;
}
