#include "rundata.h"

#include <stdlib.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "data/jpeg_folder.h"

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool load_jpeg(const char *cmd, const char *dir, int channels, const dataset *match,
                      dataset *out, bool verbose)
{
    jpeg_folder_opts o;
    jpeg_folder_opts_default(&o);
    o.channels = channels;
    o.threads = 2;
    o.match_classes = match;
    jpeg_folder_report rep;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = jpeg_folder_load(dir, &o, out, &rep, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta %s: %s\n", cmd, manta_err_msg(&err, st));
        return false;
    }
    if (rep.failed > 0 || rep.warned > 0) {
        fprintf(stderr,
                "manta %s: warning: %s: %d of %d JPEG files skipped, %d decoded with "
                "warnings\n",
                cmd, dir, rep.failed, rep.files, rep.warned);
        for (int i = 0; i < rep.reported; i++)
            fprintf(stderr, "manta %s: warning:   %s\n", cmd, rep.failures[i]);
    }
    if (verbose)
        printf("data: %s: %d images, %d classes\n", dir, rep.loaded, out->classes);
    return true;
}

bool run_data_load(const char *cmd, const char *spec, int channels, int val, uint64_t seed,
                   bool verbose, run_data *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->source, sizeof d->source, "%s", spec);
    manta_err err;
    manta_err_clear(&err);
    manta_status st = MANTA_OK;
    char path[1100];
    const char *dir = !strcmp(spec, "fashion-mnist") ? IDX_FASHION_MNIST_DIR : spec;
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    if (!strcmp(spec, "fashion-mnist") || is_file(path)) {
        st = data_set_load_fashion_mnist(dir, "train", &d->train, &err);
        if (st == MANTA_OK)
            st = data_set_load_fashion_mnist(dir, "t10k", &d->test, &err);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta %s: %s\n", cmd, manta_err_msg(&err, st));
            run_data_free(d);
            return false;
        }
    } else if (!is_dir(dir)) {
        fprintf(stderr,
                "manta %s: %s: not a folder (give 'fashion-mnist', an IDX folder or "
                "a JPEG folder with one subfolder per class)\n",
                cmd, dir);
        return false;
    } else {
        char train_dir[1100], test_dir[1100];
        snprintf(train_dir, sizeof train_dir, "%s/train", dir);
        snprintf(test_dir, sizeof test_dir, "%s/test", dir);
        bool split_dirs = is_dir(train_dir);
        if (!load_jpeg(cmd, split_dirs ? train_dir : dir, channels, NULL, &d->train, verbose) ||
            (split_dirs && is_dir(test_dir) &&
             !load_jpeg(cmd, test_dir, channels, &d->train, &d->test, verbose))) {
            run_data_free(d);
            return false;
        }
    }
    if (val >= d->train.count)
        val = d->train.count / 10;
    st = data_set_split(&d->train, val, seed, &d->split, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta %s: %s\n", cmd, manta_err_msg(&err, st));
        run_data_free(d);
        return false;
    }
    data_aug_params_default(&d->aug_train, AUG_TRAIN, d->train.channels);
    data_aug_params_default(&d->aug_eval, AUG_EVAL, d->train.channels);
    if (strcmp(spec, "fashion-mnist") != 0 && !is_file(path)) {
        /* other data: normalise with its own statistics */
        float mean[3], std[3];
        st = data_set_channel_stats(&d->train, d->split.train, d->split.n_train, mean, std, &err);
        if (st != MANTA_OK) {
            fprintf(stderr, "manta %s: %s\n", cmd, manta_err_msg(&err, st));
            run_data_free(d);
            return false;
        }
        for (int c = 0; c < d->train.channels; c++) {
            d->aug_train.mean[c] = d->aug_eval.mean[c] = mean[c];
            d->aug_train.std[c] = d->aug_eval.std[c] = std[c];
        }
    }
    return true;
}

void run_data_free(run_data *d)
{
    data_set_split_free(&d->split);
    data_set_free(&d->train);
    data_set_free(&d->test);
}

manta_status eval_source_batch(void *ctx, long index, int r, float *images, float *labels,
                               int *count)
{
    eval_source *s = ctx;
    long first = index * s->batch;
    int n =
        first >= s->count ? 0 : (int)(s->count - first < s->batch ? s->count - first : s->batch);
    *count = n;
    if (n == 0)
        return MANTA_OK;
    for (int i = 0; i < s->batch; i++) { /* pad the last batch with its first image */
        long k = first + (i < n ? i : 0);
        s->scratch[i] = s->index ? s->index[k] : (int)k;
    }
    return data_aug_batch(s->aug, s->data, s->scratch, s->batch, r, &s->rng, images, labels, NULL);
}

/* What a command that takes classification checkpoints says of a stereo one. */
static const char *stereo_instead(const char *cmd)
{
    if (!strcmp(cmd, "acc-dataset") || !strcmp(cmd, "acc-fit") || !strcmp(cmd, "search"))
        return "this form of the command is for classification; it takes a stereo checkpoint "
               "through --ckpt (see --help)";
    return "manta eval --ckpt and manta arch take stereo checkpoints";
}

bool run_ckpt_peek(const char *cmd, const char *path, ofa_space *space, train_meta *meta)
{
    manta_err err;
    manta_err_clear(&err);
    manta_status st = trainstate_peek(path, space, meta, &err);
    if (st == MANTA_OK)
        return true;
    char format[64] = "";
    ckpt_reader *r = NULL;
    manta_err e;
    manta_err_clear(&e);
    if (st == MANTA_ERR_FORMAT && ckpt_open(path, &r, &e) == MANTA_OK) {
        train_ckpt_meta_format(r, format, sizeof format, &e);
        ckpt_close(r);
    }
    if (!strcmp(format, "manta-stereo-train"))
        fprintf(stderr,
                "manta %s: %s is a stereo training checkpoint (manta-stereo-train); manta %s "
                "takes a classification one (manta-ofa-train): %s\n",
                cmd, path, cmd, stereo_instead(cmd));
    else
        fprintf(stderr, "manta %s: %s\n", cmd, manta_err_msg(&err, st));
    return false;
}

bool run_ckpt_open(const char *cmd, const char *path, const char *device, run_ckpt *r)
{
    memset(r, 0, sizeof *r);
    manta_err err;
    manta_err_clear(&err);
    manta_status st;
    if (!run_ckpt_peek(cmd, path, &r->space, &r->meta))
        return false;
    if (!run_data_load(cmd, r->meta.data, r->space.in_channels, r->meta.val, r->meta.seed, false,
                       &r->data))
        return false;
    ofa_schedule sched;
    if (!(r->scratch = malloc((size_t)r->meta.batch * sizeof *r->scratch)) ||
        !(r->dev = cmd_open_device(cmd, device))) {
        run_ckpt_close(r);
        return false;
    }
    if ((st = ofa_schedule_preset(&r->space, r->meta.preset, r->meta.batch, 1, &sched, &err)) !=
            MANTA_OK ||
        (st = ofa_trainer_create(r->dev, &r->space, &sched, r->meta.seed, &r->trainer)) !=
            MANTA_OK ||
        (st = trainstate_load(path, r->trainer, r->dev, &r->meta, &err)) != MANTA_OK) {
        fprintf(stderr, "manta %s: %s\n", cmd,
                manta_err_msg(err.code != MANTA_OK ? &err : mcl_err(r->dev), st));
        run_ckpt_close(r);
        return false;
    }
    return true;
}

bool run_ckpt_check_recal(const char *cmd, const run_ckpt *r, long recal)
{
    if (recal >= r->meta.batch)
        return true;
    fprintf(stderr,
            "manta %s: --recal-images %ld is fewer than one batch of %d (the checkpoint's "
            "batch), which BN re-calibration needs\n",
            cmd, recal, r->meta.batch);
    return false;
}

void run_ckpt_close(run_ckpt *r)
{
    ofa_trainer_destroy(r->trainer);
    mcl_close(r->dev);
    free(r->scratch);
    run_data_free(&r->data);
    memset(r, 0, sizeof *r);
}

eval_source run_ckpt_recal_source(run_ckpt *r)
{
    eval_source s = {&r->data.train, r->data.split.train, r->data.split.n_train,
                     r->meta.batch,  &r->data.aug_train,  {0, 0},
                     r->scratch};
    manta_rng_seed(&s.rng, r->meta.seed, 0xeca1);
    return s;
}

eval_source run_ckpt_eval_source(run_ckpt *r, bool test, const aug_params *aug)
{
    eval_source s = {test ? &r->data.test : &r->data.train,
                     test ? NULL : r->data.split.val,
                     test ? r->data.test.count : r->data.split.n_val,
                     r->meta.batch,
                     aug ? aug : &r->data.aug_eval,
                     {0, 0},
                     r->scratch};
    return s;
}
