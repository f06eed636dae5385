/* manta acc-dataset: top-1 of sampled sub-networks of a trained supernet (BN
 * re-calibration, validation split) as an accuracy data set (JSON lines);
 * manta acc-fit: OFA's accuracy predictor trained on it, with the RMSE on a
 * held-out share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "profile/common.h"
#include "rundata.h"
#include "search/acc_predictor.h"
#include "train/trainstate.h"

/* ---- acc-dataset ------------------------------------------------------------------- */

static void usage_dataset(FILE *f)
{
    fprintf(f,
            "usage: manta acc-dataset --ckpt FILE --out DATA.jsonl [--count N] [--images N]\n"
            "                         [--recal-images N] [--seed N] [--sampling mixed|uniform]\n"
            "                         [--resume] [--device SPEC] [--json]\n\n"
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
            "--resume keeps the samples of an existing file and measures the rest.\n");
}

/* Sample i: sub-network i / n_res of the seeded sequence at resolution i % n_res. */
static void sample_arch(const ofa_space *sp, uint64_t seed, bool mixed, long i, ofa_arch *a)
{
    manta_rng rng;
    manta_rng_seed(&rng, seed, 0xacc0 + (uint64_t)(i / sp->n_res));
    if (mixed)
        ofa_arch_sample_mixed(sp, &rng, a);
    else
        ofa_arch_sample(sp, &rng, a);
    a->r = sp->res[i % sp->n_res];
}

int cmd_acc_dataset(int argc, char **argv)
{
    const char *ckpt = NULL, *out = NULL, *device = NULL;
    long count = 100, images = 1000, recal = 2000, seed = 1;
    int json = 0, resume = 0;
    bool mixed = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_dataset(stdout);
            return 0;
        } else if (!strcmp(a, "--sampling") && v && (!strcmp(v, "mixed") || !strcmp(v, "uniform"))) {
            mixed = v[0] == 'm', i++;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--resume")) {
            resume = 1;
        } else if (!strcmp(a, "--ckpt") && v) {
            ckpt = v, i++;
        } else if (!strcmp(a, "--out") && v) {
            out = v, i++;
        } else if (!strcmp(a, "--device") && v) {
            device = v, i++;
        } else if (!strcmp(a, "--count") || !strcmp(a, "--images") ||
                   !strcmp(a, "--recal-images") || !strcmp(a, "--seed")) {
            long *dst = a[2] == 'c' ? &count : a[2] == 'i' ? &images : a[2] == 'r' ? &recal : &seed;
            if (!cmd_parse_long("acc-dataset", a, v, a[2] == 's' ? 0 : 1, 1L << 30, dst))
                return 2;
            i++;
        } else {
            fprintf(stderr, "manta acc-dataset: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!ckpt || !out) {
        fprintf(stderr, "manta acc-dataset: --ckpt FILE and --out DATA.jsonl are required\n");
        return 2;
    }
    run_ckpt l;
    if (!run_ckpt_open("acc-dataset", ckpt, device, &l))
        return 1;
    manta_err err;
    manta_err_clear(&err);
    accp_dataset ds;
    accp_dataset_init(&ds, &l.space);
    int rc = 1;
    if (resume) {
        FILE *f = fopen(out, "r");
        if (f) {
            fclose(f);
            manta_status st = accp_dataset_load(out, &l.space, &ds, &err);
            if (st != MANTA_OK) {
                cmd_error("acc-dataset", st, &err);
                run_ckpt_close(&l);
                return 1;
            }
            for (size_t i = 0; i < ds.n; i++) { /* the same sequence, or a different run */
                ofa_arch a;
                sample_arch(&l.space, (uint64_t)seed, mixed, (long)i, &a);
                if (memcmp(&a, &ds.s[i].arch, sizeof a) != 0) {
                    fprintf(stderr,
                            "manta acc-dataset: %s: sample %zu is not sub-network %zu of seed "
                            "%ld, %s sampling; resume with the seed and --sampling that wrote "
                            "it, or write a new file\n",
                            out, i + 1, i + 1, seed, mixed ? "mixed" : "uniform");
                    accp_dataset_free(&ds);
                    run_ckpt_close(&l);
                    return 1;
                }
            }
        }
    }
    if ((long)ds.n > count)
        count = (long)ds.n;
    const long avail = l.data.split.n_val;
    const long n_img = images > avail ? avail : images;
    if (n_img <= 0) {
        fprintf(stderr, "manta acc-dataset: %s has no validation images (trained with --val 0)\n",
                l.meta.data);
        accp_dataset_free(&ds);
        run_ckpt_close(&l);
        return 1;
    }
    const double t0 = cmd_now();
    const long first = (long)ds.n;
    for (long i = first; i < count; i++) {
        ofa_arch a;
        sample_arch(&l.space, (uint64_t)seed, mixed, i, &a);
        /* as manta eval and export */
        eval_source rs = run_ckpt_recal_source(&l), es = run_ckpt_eval_source(&l, false, NULL);
        double top1 = 0;
        manta_status st = ofa_trainer_evaluate(l.trainer, &a, eval_source_batch, &rs, recal,
                                               eval_source_batch, &es, n_img, &top1, NULL);
        if (st != MANTA_OK) {
            cmd_error("acc-dataset", st, mcl_err(l.dev));
            goto out;
        }
        if ((st = accp_dataset_add(&ds, &a, top1, &err)) != MANTA_OK ||
            (st = accp_dataset_save(&ds, out, &err)) != MANTA_OK) {
            cmd_error("acc-dataset", st, &err);
            goto out;
        }
        const double el = cmd_now() - t0, per = el / (double)(i - first + 1);
        if (json)
            printf("{\"sample\":%ld,\"of\":%ld,\"r\":%d,\"top1\":%.5f,\"elapsed_s\":%.1f,"
                   "\"eta_s\":%.1f}\n",
                   i + 1, count, a.r, top1, el, per * (double)(count - i - 1));
        else
            fprintf(stderr, "acc-dataset: sample %ld/%ld  r %d  top-1 %.2f%%  %.1f s/sample  "
                            "ETA %.0f s\n",
                    i + 1, count, a.r, 100 * top1, per, per * (double)(count - i - 1));
        fflush(stdout);
    }
    if (count == first) {
        manta_status st = accp_dataset_save(&ds, out, &err);
        if (st != MANTA_OK) {
            cmd_error("acc-dataset", st, &err);
            goto out;
        }
    }
    {
        double mean = 0, lo = 1, hi = 0;
        for (size_t i = 0; i < ds.n; i++) {
            mean += ds.s[i].top1;
            lo = fmin(lo, ds.s[i].top1);
            hi = fmax(hi, ds.s[i].top1);
        }
        mean = ds.n ? mean / (double)ds.n : 0;
        if (json) {
            printf("{\"out\":");
            cmd_json_str(stdout, out);
            printf(",\"samples\":%zu,\"measured\":%ld,\"images\":%ld,\"recal_images\":%ld,"
                   "\"mean_top1\":%.5f,\"min_top1\":%.5f,\"max_top1\":%.5f,\"seconds\":%.1f,",
                   ds.n, count - first, n_img, recal, mean, lo, hi, cmd_now() - t0);
            cmd_json_provenance(stdout, l.dev);
            printf("}\n");
        } else
            printf("%s: %zu samples (%ld measured now, %ld validation images each, %ld for "
                   "re-calibration); top-1 mean %.2f%%, range %.2f..%.2f%%; %.1f s\n",
                   out, ds.n, count - first, n_img, recal, 100 * mean, 100 * lo, 100 * hi,
                   cmd_now() - t0);
    }
    rc = 0;
out:
    accp_dataset_free(&ds);
    run_ckpt_close(&l);
    return rc;
}

/* ---- acc-fit ------------------------------------------------------------------------- */

static void usage_fit(FILE *f)
{
    fprintf(f,
            "usage: manta acc-fit --data DATA.jsonl --out MODEL.accp [--ckpt FILE | --space S]\n"
            "                     [--epochs N] [--batch N] [--hidden N] [--layers N] [--lr X]\n"
            "                     [--weight-decay X] [--split F] [--seed N] [--json]\n\n"
            "Trains OFA's accuracy predictor on an accuracy data set: one-hot encoding of\n"
            "resolution, kernels and expand ratios; an MLP of --layers hidden layers of\n"
            "--hidden units (default 3 x 400) plus a base accuracy (the training mean);\n"
            "Adam (--lr 1e-3, --weight-decay 1e-4), --batch (default 256) for --epochs\n"
            "(default 100). A seeded --split share (default 0.8, as OFA) trains, the rest\n"
            "is held out and its RMSE reported; a sub-network's samples at its several\n"
            "resolutions stay on one side. The space is the checkpoint's (--ckpt) or\n"
            "--space (default cpu-default). The model file is what manta search reads.\n");
}

typedef struct fit_progress {
    int json, quiet;
    double t0;
} fit_progress;

static void fit_progress_fn(void *ctx, int epoch, int epochs, double mse)
{
    fit_progress *p = ctx;
    if (p->quiet || (epoch % 10 != 0 && epoch != epochs && epoch != 1))
        return;
    double el = cmd_now() - p->t0;
    if (p->json)
        printf("{\"epoch\":%d,\"epochs\":%d,\"train_rmse_points\":%.4f,\"elapsed_s\":%.2f}\n",
               epoch, epochs, 100 * sqrt(mse), el);
    else
        fprintf(stderr, "acc-fit: epoch %d/%d  train RMSE %.3f points  %.1f s, ETA %.1f s\n",
                epoch, epochs, 100 * sqrt(mse), el, el / epoch * (epochs - epoch));
    fflush(stdout);
}

static int parse_double(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "manta acc-fit: %s needs a number in [%g, %g], got '%s'\n", opt, lo, hi,
                v ? v : "");
        return 0;
    }
    *out = x;
    return 1;
}

int cmd_acc_fit(int argc, char **argv)
{
    const char *data = NULL, *out = NULL, *ckpt = NULL, *space = "cpu-default";
    accp_config c;
    accp_config_default(&c);
    double split = 0.8;
    long seed = 0, x;
    int json = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage_fit(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--data") && v) {
            data = v, i++;
        } else if (!strcmp(a, "--out") && v) {
            out = v, i++;
        } else if (!strcmp(a, "--ckpt") && v) {
            ckpt = v, i++;
        } else if (!strcmp(a, "--space") && v) {
            space = v, i++;
        } else if (!strcmp(a, "--epochs") || !strcmp(a, "--batch") || !strcmp(a, "--hidden") ||
                   !strcmp(a, "--layers") || !strcmp(a, "--seed")) {
            long hi = !strcmp(a, "--hidden")   ? ACCP_MAX_HIDDEN
                      : !strcmp(a, "--layers") ? ACCP_MAX_LAYERS
                                               : 1L << 30;
            if (!cmd_parse_long("acc-fit", a, v, !strcmp(a, "--seed") ? 0 : 1, hi, &x))
                return 2;
            i++;
            if (!strcmp(a, "--epochs"))
                c.epochs = (int)x;
            else if (!strcmp(a, "--batch"))
                c.batch = (int)x;
            else if (!strcmp(a, "--hidden"))
                c.hidden = (int)x;
            else if (!strcmp(a, "--layers"))
                c.layers = (int)x;
            else
                seed = x;
        } else if (!strcmp(a, "--lr") || !strcmp(a, "--weight-decay") || !strcmp(a, "--split")) {
            double *dst = !strcmp(a, "--lr") ? &c.lr : !strcmp(a, "--split") ? &split
                                                                              : &c.weight_decay;
            if (!parse_double(a, v, !strcmp(a, "--lr") ? 1e-12 : 0, !strcmp(a, "--split") ? 1 : 10,
                              dst))
                return 2;
            i++;
        } else {
            fprintf(stderr, "manta acc-fit: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!data || !out) {
        fprintf(stderr, "manta acc-fit: --data DATA.jsonl and --out MODEL.accp are required\n");
        return 2;
    }
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    manta_status st;
    if (ckpt) {
        train_meta meta;
        st = trainstate_peek(ckpt, &sp, &meta, &err);
    } else {
        st = ofa_space_load(space, &sp, &err);
    }
    if (st != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        return 1;
    }
    accp_dataset all, train, test;
    accp_dataset_init(&all, &sp);
    accp_dataset_init(&train, &sp);
    accp_dataset_init(&test, &sp);
    accp_model m;
    memset(&m, 0, sizeof m);
    int rc = 1;
    if ((st = accp_dataset_load(data, &sp, &all, &err)) != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        goto out;
    }
    accp_dataset_free(&train);
    accp_dataset_free(&test);
    if ((st = accp_dataset_split(&all, split, (uint64_t)seed, &train, &test, &err)) != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        goto out;
    }
    if (train.n == 0) {
        fprintf(stderr, "manta acc-fit: %s: no samples to train on (%zu in the file, split %g)\n",
                data, all.n, split);
        goto out;
    }
    c.seed = (uint64_t)seed;
    fit_progress fp = {json, quiet, cmd_now()};
    c.progress = fit_progress_fn;
    c.progress_ctx = &fp;
    accp_report rep;
    if ((st = accp_init(&m, &sp, &c, &err)) != MANTA_OK ||
        (st = accp_train(&m, &train, test.n ? &test : NULL, &c, &rep, &err)) != MANTA_OK ||
        (st = accp_save(&m, out, &err)) != MANTA_OK) {
        cmd_error("acc-fit", st, &err);
        goto out;
    }
    /* the spread a predictor has to beat: RMSE of always answering the training mean */
    double base_rmse = -1;
    if (test.n) {
        double s2 = 0;
        for (size_t i = 0; i < test.n; i++)
            s2 += (test.s[i].top1 - m.base_acc) * (test.s[i].top1 - m.base_acc);
        base_rmse = sqrt(s2 / (double)test.n);
    }
    if (json) {
        printf("{\"model\":");
        cmd_json_str(stdout, out);
        printf(",\"samples\":%zu,\"train\":%zu,\"held_out\":%zu,\"epochs\":%d,\"hidden\":%d,"
               "\"layers\":%d,\"base_acc\":%.5f,\"train_rmse_points\":%.4f,"
               "\"held_out_rmse_points\":%.4f,\"mean_predictor_rmse_points\":%.4f,"
               "\"seconds\":%.2f,",
               all.n, train.n, test.n, rep.epochs, c.hidden, c.layers, m.base_acc,
               100 * rep.train_rmse, test.n ? 100 * rep.valid_rmse : -1.0,
               test.n ? 100 * base_rmse : -1.0, cmd_now() - fp.t0);
        cmd_json_version(stdout);
        printf("}\n");
    } else {
        printf("%s: %dx%d MLP on %zu samples (%zu held out), base accuracy %.2f%%; RMSE "
               "train %.3f points",
               out, c.layers, c.hidden, train.n, test.n, 100 * m.base_acc, 100 * rep.train_rmse);
        if (test.n)
            printf(", held-out %.3f points (answering the mean: %.3f)", 100 * rep.valid_rmse,
                   100 * base_rmse);
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
