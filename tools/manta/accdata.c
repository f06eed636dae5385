/* manta acc-dataset: top-1 of sampled sub-networks of a trained supernet (BN
 * re-calibration, validation split) as an accuracy data set (JSON lines);
 * manta acc-fit: OFA's accuracy predictor trained on it, with the RMSE on a
 * held-out share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "profile/common.h"
#include "rundata.h"
#include "accdata.h"
#include "classify/trainstate.h"
#include "stereo_cmd.h"

/* ---- acc-dataset ------------------------------------------------------------------- */

/* Sample i: sub-network i / n_res of the seeded sequence at resolution i % n_res. */
static void sample_arch(const void *space, uint64_t seed, bool mixed, long i, ofa_arch *a)
{
    const ofa_space *sp = space;
    manta_rng rng;
    manta_rng_seed(&rng, seed, 0xacc0 + (uint64_t)(i / sp->n_res));
    if (mixed)
        ofa_arch_sample_mixed(sp, &rng, a);
    else
        ofa_arch_sample(sp, &rng, a);
    a->r = sp->res[i % sp->n_res];
}

static manta_status load_dataset(const char *path, const void *space, accp_dataset *ds,
                                 manta_err *err)
{
    return accp_dataset_load(path, space, ds, err);
}

typedef struct dataset_opts {
    acc_opts c;
    long images, recal;
} dataset_opts;

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_dataset(int argc, char **argv, dataset_opts *o)
{
    *o = (dataset_opts){.c = {.count = 100, .seed = 1}, .images = 1000, .recal = 2000};
    const opt_def defs[] = {
        {.name = "images",
         .kind = OPT_LONG,
         .dest = &o->images,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "validation images per sample (default 1000)"},
        {.name = "recal-images",
         .kind = OPT_LONG,
         .dest = &o->recal,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "training images for BN re-calibration (default 2000)"},
        {.name = NULL},
    };
    return acc_opts_parse(
        argc, argv, &o->c, defs,
        "--ckpt FILE --out DATA.jsonl [--count N] [--images N]\n"
        "                         [--recal-images N] [--seed N] [--sampling mixed|uniform]\n"
        "                         [--resume] [--device SPEC] [--json]",
        "Samples sub-networks of the trained supernet and measures each one's top-1 as\n"
        "OFA does for its accuracy predictor: batch norm re-calibrated on --recal-images\n"
        "training images (default 2000), then --images images of the validation split\n"
        "(default 1000, the same images for every sample). Sub-networks are drawn from\n"
        "--seed (default 1) and each is measured at the space's resolutions in turn, so\n"
        "--count N samples (default 100) cover every resolution alike. --sampling mixed\n"
        "(the default) draws each sub-network's genes from weights drawn for it, so that\n"
        "the set spans nearly all-smallest to nearly all-largest sub-networks, where the\n"
        "search's budgets lead; uniform draws every gene alike, as OFA (sub-networks\n"
        "near the middle size). The file (header +\n"
        "one JSON line per sample, see docs/search.md) is rewritten after every sample;\n"
        "--resume keeps the samples of an existing file and measures the rest.\n",
        "the trained supernet");
}

/* Measure samples ds->n .. count - 1 of @p l's supernet on @p n_img validation images,
 * saving the file after each; false after printing why not. */
static bool measure_samples(const dataset_opts *o, run_ckpt *l, long count, long n_img, double t0,
                            accp_dataset *ds)
{
    manta_err err;
    manta_err_clear(&err);
    const long first = (long)ds->n;
    for (long i = first; i < count; i++) {
        ofa_arch a;
        sample_arch(&l->space, (uint64_t)o->c.seed, o->c.mixed, i, &a);
        /* as manta eval and export */
        eval_source rs = run_ckpt_recal_source(l), es = run_ckpt_eval_source(l, false, NULL);
        double top1 = 0;
        manta_status st = ofa_trainer_evaluate(l->trainer, &a, eval_source_batch, &rs, o->recal,
                                               eval_source_batch, &es, n_img, &top1, NULL);
        if (st != MANTA_OK) {
            cmd_error("acc-dataset", st, mcl_err(l->dev));
            return false;
        }
        if ((st = accp_dataset_add(ds, &a, top1, &err)) != MANTA_OK ||
            (st = accp_dataset_save(ds, o->c.out, &err)) != MANTA_OK) {
            cmd_error("acc-dataset", st, &err);
            return false;
        }
        const double el = cmd_now() - t0, per = el / (double)(i - first + 1);
        if (o->c.json)
            printf("{\"sample\":%ld,\"of\":%ld,\"r\":%d,\"top1\":%.5f,\"elapsed_s\":%.1f,"
                   "\"eta_s\":%.1f}\n",
                   i + 1, count, a.r, top1, el, per * (double)(count - i - 1));
        else
            fprintf(stderr,
                    "acc-dataset: sample %ld/%ld  r %d  top-1 %.2f%%  %.1f s/sample  "
                    "ETA %.0f s\n",
                    i + 1, count, a.r, 100 * top1, per, per * (double)(count - i - 1));
        fflush(stdout);
    }
    if (count == first) {
        manta_status st = accp_dataset_save(ds, o->c.out, &err);
        if (st != MANTA_OK) {
            cmd_error("acc-dataset", st, &err);
            return false;
        }
    }
    return true;
}

int cmd_acc_dataset(int argc, char **argv)
{
    if (stereo_cmd_ckpt_arg(argc, argv))
        return cmd_acc_dataset_stereo(argc, argv);
    dataset_opts o;
    int rc = parse_dataset(argc, argv, &o);
    if (rc == 0 && stereo_cmd_help_arg(argc, argv)) { /* the stereo checkpoints' options too */
        char *help[] = {argv[0], "--help", NULL};
        printf("\nA stereo checkpoint (manta train --space stereo-...) takes these options "
               "instead:\n\n");
        return cmd_acc_dataset_stereo(2, help);
    }
    if (rc != 1)
        return rc;
    run_ckpt l;
    if (!run_ckpt_open("acc-dataset", o.c.ckpt, o.c.device, &l))
        return 1;
    accp_dataset ds;
    accp_dataset_init(&ds, &l.space);
    rc = 1;
    if (o.c.resume && !acc_resume(&o.c, &l.space, sample_arch, load_dataset, &ds))
        goto out;
    const long count = (long)ds.n > o.c.count ? (long)ds.n : o.c.count, first = (long)ds.n;
    const long avail = l.data.split.n_val;
    const long n_img = o.images > avail ? avail : o.images;
    if (n_img <= 0) {
        fprintf(stderr, "manta acc-dataset: %s has no validation images (trained with --val 0)\n",
                l.meta.data);
        goto out;
    }
    const double t0 = cmd_now();
    if (!measure_samples(&o, &l, count, n_img, t0, &ds))
        goto out;
    double mean, lo, hi;
    acc_value_range(&ds, &mean, &lo, &hi);
    if (o.c.json) {
        printf("{\"out\":");
        cmd_json_str(stdout, o.c.out);
        printf(",\"samples\":%zu,\"measured\":%ld,\"images\":%ld,\"recal_images\":%ld,"
               "\"mean_top1\":%.5f,\"min_top1\":%.5f,\"max_top1\":%.5f,\"seconds\":%.1f,",
               ds.n, count - first, n_img, o.recal, mean, lo, hi, cmd_now() - t0);
        cmd_json_provenance(stdout, l.dev);
        printf("}\n");
    } else
        printf("%s: %zu samples (%ld measured now, %ld validation images each, %ld for "
               "re-calibration); top-1 mean %.2f%%, range %.2f..%.2f%%; %.1f s\n",
               o.c.out, ds.n, count - first, n_img, o.recal, 100 * mean, 100 * lo, 100 * hi,
               cmd_now() - t0);
    rc = 0;
out:
    accp_dataset_free(&ds);
    run_ckpt_close(&l);
    return rc;
}

/* ---- acc-fit ------------------------------------------------------------------------- */

typedef struct fit_progress {
    int json, quiet;
    double t0;
    double scale;     /* 100 (top-1 fractions to points) or 1 (EPE in px) */
    const char *unit; /* "points" or "px" */
} fit_progress;

static void fit_progress_fn(void *ctx, int epoch, int epochs, double mse)
{
    fit_progress *p = ctx;
    if (p->quiet || (epoch % 10 != 0 && epoch != epochs && epoch != 1))
        return;
    double el = cmd_now() - p->t0;
    if (p->json)
        printf("{\"epoch\":%d,\"epochs\":%d,\"train_rmse_%s\":%.4f,\"elapsed_s\":%.2f}\n", epoch,
               epochs, p->unit, p->scale * sqrt(mse), el);
    else
        fprintf(stderr, "acc-fit: epoch %d/%d  train RMSE %.3f %s  %.1f s, ETA %.1f s\n", epoch,
                epochs, p->scale * sqrt(mse), p->unit, el, el / epoch * (epochs - epoch));
    fflush(stdout);
}

typedef struct fit_opts {
    const char *data, *out, *ckpt, *space;
    double split;
    long seed;
    bool json, quiet;
    accp_config c;
} fit_opts;

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_fit(int argc, char **argv, fit_opts *o)
{
    *o = (fit_opts){.space = "cpu-default", .split = 0.8, .seed = 1};
    accp_config_default(&o->c);
    const opt_def defs[] = {
        {.name = "samples",
         .kind = OPT_STRING,
         .dest = &o->data,
         .metavar = "DATA.jsonl",
         .help = "the accuracy data set (manta acc-dataset)"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o->out,
         .metavar = "MODEL.accp",
         .help = "the predictor to write"},
        {.name = "ckpt",
         .kind = OPT_STRING,
         .dest = &o->ckpt,
         .metavar = "FILE",
         .help = "the space of this checkpoint"},
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &o->space,
         .metavar = "S",
         .help = "or this space (default cpu-default)"},
        {.name = "epochs",
         .kind = OPT_INT,
         .dest = &o->c.epochs,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "passes over the training share (default 100)"},
        {.name = "batch",
         .kind = OPT_INT,
         .dest = &o->c.batch,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "mini-batch size (default 256)"},
        {.name = "hidden",
         .kind = OPT_INT,
         .dest = &o->c.hidden,
         .lo = 1,
         .hi = ACCP_MAX_HIDDEN,
         .metavar = "N",
         .help = "units per hidden layer (default 400)"},
        {.name = "layers",
         .kind = OPT_INT,
         .dest = &o->c.layers,
         .lo = 1,
         .hi = ACCP_MAX_LAYERS,
         .metavar = "N",
         .help = "hidden layers (default 3)"},
        {.name = "lr",
         .kind = OPT_DOUBLE,
         .dest = &o->c.lr,
         .lo = 1e-12,
         .hi = 10,
         .metavar = "X",
         .help = "Adam's learning rate (default 1e-3)"},
        {.name = "weight-decay",
         .kind = OPT_DOUBLE,
         .dest = &o->c.weight_decay,
         .lo = 0,
         .hi = 10,
         .metavar = "X",
         .help = "L2 weight decay (default 1e-4)"},
        {.name = "split",
         .kind = OPT_DOUBLE,
         .dest = &o->split,
         .lo = 0,
         .hi = 1,
         .metavar = "F",
         .help = "share that trains, the rest held out (default 0.8)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &o->seed,
         .lo = 0,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "seed of the split, weights and batches (default 1)"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "progress and summary as JSON lines"},
        {.name = "quiet", .kind = OPT_FLAG, .dest = &o->quiet, .help = "no progress"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta acc-fit",
        "--samples DATA.jsonl --out MODEL.accp [--ckpt FILE | --space S]\n"
        "                     [--epochs N] [--batch N] [--hidden N] [--layers N] [--lr X]\n"
        "                     [--weight-decay X] [--split F] [--seed N] [--json]",
        "Trains OFA's accuracy predictor on an accuracy data set: one-hot encoding of\n"
        "resolution, kernels and expand ratios; an MLP of --layers hidden layers of\n"
        "--hidden units (default 3 x 400) plus a base accuracy (the training mean);\n"
        "Adam (--lr 1e-3, --weight-decay 1e-4), --batch (default 256) for --epochs\n"
        "(default 100). A seeded --split share (default 0.8, as OFA) trains, the rest\n"
        "is held out and its RMSE reported; a sub-network's samples at its several\n"
        "resolutions stay on one side. The space is the checkpoint's (--ckpt) or\n"
        "--space (default cpu-default). The model file is what manta search reads.\n\n"
        "A stereo checkpoint or space (--space stereo-cpu, a stereo spec) takes an EPE\n"
        "data set (manta acc-dataset --ckpt STEREO.ckpt) and fits the same MLP to the\n"
        "held-out EPE on the stereo encoding (kernel, expand ratio per slot, depth per\n"
        "unit, width per decoder level; no resolution), the base being the training\n"
        "mean EPE; RMSE in px. manta search minimises the predicted EPE.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!o->data || !o->out) {
        fprintf(stderr, "manta acc-fit: --samples DATA.jsonl and --out MODEL.accp are required\n");
        return 2;
    }
    if (!out_check_file("manta acc-fit", "out", o->out))
        return 2;
    return 1;
}

/* The space of acc-fit: the checkpoint's or --space's, stereo or not, into @p sp / @p ssp
 * (*stereo says which); false after printing why not. */
static bool fit_space(const fit_opts *o, ofa_space *sp, stereo_space *ssp, bool *stereo)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st = MANTA_OK;
    *stereo = false;
    if (o->ckpt) {
        stereo_meta sm;
        if (stereo_state_peek(o->ckpt, ssp, &sm, &err) == MANTA_OK) {
            *stereo = true;
            stereo_space_ofa_view(ssp, sp);
            return true;
        }
        train_meta meta;
        return run_ckpt_peek("acc-fit", o->ckpt, sp, &meta);
    }
    if ((st = stereo_spec_is_stereo(o->space, stereo, &err)) == MANTA_OK) {
        if (*stereo && (st = stereo_space_load(o->space, ssp, &err)) == MANTA_OK)
            stereo_space_ofa_view(ssp, sp);
        else if (!*stereo)
            st = ofa_space_load(o->space, sp, &err);
    }
    if (st != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        return false;
    }
    return true;
}

int cmd_acc_fit(int argc, char **argv)
{
    fit_opts o;
    int rc = parse_fit(argc, argv, &o);
    if (rc != 1)
        return rc;
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    stereo_space ssp;
    bool stereo;
    if (!fit_space(&o, &sp, &ssp, &stereo))
        return 1;
    manta_status st;
    accp_dataset all, train, test;
    accp_dataset_init(&all, &sp);
    accp_dataset_init(&train, &sp);
    accp_dataset_init(&test, &sp);
    accp_model m;
    memset(&m, 0, sizeof m);
    rc = 1;
    if ((st = stereo ? accp_dataset_load_stereo(o.data, &ssp, &all, &err)
                     : accp_dataset_load(o.data, &sp, &all, &err)) != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        goto out;
    }
    accp_dataset_free(&train);
    accp_dataset_free(&test);
    if ((st = accp_dataset_split(&all, o.split, (uint64_t)o.seed, &train, &test, &err)) !=
        MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        goto out;
    }
    if (train.n == 0) {
        fprintf(stderr, "manta acc-fit: %s: no samples to train on (%zu in the file, split %g)\n",
                o.data, all.n, o.split);
        goto out;
    }
    o.c.seed = (uint64_t)o.seed;
    /* top-1 fractions are reported in points, EPE in px */
    const double k = stereo ? 1 : 100;
    const char *unit = stereo ? "px" : "points";
    fit_progress fp = {o.json, o.quiet, cmd_now(), k, unit};
    o.c.progress = fit_progress_fn;
    o.c.progress_ctx = &fp;
    accp_report rep;
    if ((st = stereo ? accp_init_stereo(&m, &ssp, &o.c, &err) : accp_init(&m, &sp, &o.c, &err)) !=
            MANTA_OK ||
        (st = accp_train(&m, &train, test.n ? &test : NULL, &o.c, &rep, &err)) != MANTA_OK ||
        (st = accp_save(&m, o.out, &err)) != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        goto out;
    }
    /* the spread a predictor has to beat: RMSE of always answering the training mean */
    double base_rmse = -1;
    if (test.n) {
        double s2 = 0;
        for (size_t i = 0; i < test.n; i++)
            s2 += (test.s[i].value - m.base_acc) * (test.s[i].value - m.base_acc);
        base_rmse = sqrt(s2 / (double)test.n);
    }
    if (o.json) {
        printf("{\"model\":");
        cmd_json_str(stdout, o.out);
        if (stereo)
            printf(",\"task\":\"stereo\"");
        printf(",\"samples\":%zu,\"train\":%zu,\"held_out\":%zu,\"epochs\":%d,\"hidden\":%d,"
               "\"layers\":%d,\"%s\":%.5f,\"train_rmse_%s\":%.4f,"
               "\"held_out_rmse_%s\":%.4f,\"mean_predictor_rmse_%s\":%.4f,"
               "\"seconds\":%.2f,",
               all.n, train.n, test.n, rep.epochs, o.c.hidden, o.c.layers,
               stereo ? "base_epe" : "base_acc", m.base_acc, unit, k * rep.train_rmse, unit,
               test.n ? k * rep.valid_rmse : -1.0, unit, test.n ? k * base_rmse : -1.0,
               cmd_now() - fp.t0);
        cmd_json_version(stdout);
        printf("}\n");
    } else {
        if (stereo)
            printf("%s: %dx%d MLP on %zu samples (%zu held out), base EPE %.3f px; RMSE "
                   "train %.3f px",
                   o.out, o.c.layers, o.c.hidden, train.n, test.n, m.base_acc, rep.train_rmse);
        else
            printf("%s: %dx%d MLP on %zu samples (%zu held out), base accuracy %.2f%%; RMSE "
                   "train %.3f points",
                   o.out, o.c.layers, o.c.hidden, train.n, test.n, 100 * m.base_acc,
                   100 * rep.train_rmse);
        if (test.n)
            printf(", held-out %.3f %s (answering the mean: %.3f)", k * rep.valid_rmse, unit,
                   k * base_rmse);
        printf("; %.1f s\n", cmd_now() - fp.t0);
    }
    rc = 0;
out:
    accp_free(&m);
    accp_dataset_free(&all);
    accp_dataset_free(&train);
    accp_dataset_free(&test);
    return rc;
}
