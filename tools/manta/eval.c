/* manta eval: top-1 of a sub-network of a trained supernet checkpoint, after
 * OFA's BN re-calibration, on the validation split or the test set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "rundata.h"
#include "train/trainstate.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: manta eval --ckpt FILE [--arch max|min|ARCH] [--split val|test]\n"
               "                  [--images N] [--recal-images N] [--device SPEC] [--json]\n\n"
               "Re-calibrates batch norm on --recal-images training images (default 2000, with\n"
               "training augmentation, as OFA) and reports top-1 of the sub-network on the\n"
               "validation split (default) or the official test set. ARCH is a file holding\n"
               "OFA's encoding {\"ks\":[..],\"e\":[..],\"d\":[..],\"r\":[R]}.\n");
}

static int load_arch(const ofa_space *sp, const char *arg, ofa_arch *a)
{
    if (!strcmp(arg, "max") || !strcmp(arg, "min")) {
        (arg[1] == 'a' ? ofa_arch_max : ofa_arch_min)(sp, 0, a);
        return 1;
    }
    FILE *f = fopen(arg, "rb");
    if (!f) {
        fprintf(stderr, "manta eval: %s: cannot open\n", arg);
        return 0;
    }
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    manta_err err;
    manta_err_clear(&err);
    if (ofa_arch_parse(sp, buf, a, &err) != MANTA_OK) {
        fprintf(stderr, "manta eval: %s: %s\n", arg, err.msg);
        return 0;
    }
    return 1;
}

int cmd_eval(int argc, char **argv)
{
    const char *ckpt = NULL, *arch_arg = "max", *split = "val", *device = NULL;
    long images = -1, recal = 2000;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--ckpt") && v) {
            ckpt = v, i++;
        } else if (!strcmp(a, "--arch") && v) {
            arch_arg = v, i++;
        } else if (!strcmp(a, "--split") && v && (!strcmp(v, "val") || !strcmp(v, "test"))) {
            split = v, i++;
        } else if (!strcmp(a, "--device") && v) {
            device = v, i++;
        } else if ((!strcmp(a, "--images") || !strcmp(a, "--recal-images")) && v &&
                   strtol(v, &end, 10) >= 0 && end != v && !*end) {
            *(a[2] == 'i' ? &images : &recal) = strtol(v, NULL, 10);
            i++;
        } else {
            fprintf(stderr, "manta eval: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!ckpt) {
        fprintf(stderr, "manta eval: --ckpt FILE is required (see --help)\n");
        return 2;
    }
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    train_meta meta;
    manta_status st = trainstate_peek(ckpt, &sp, &meta, &err);
    if (st != MANTA_OK) {
        cmd_error("eval", st, &err);
        return 1;
    }
    ofa_arch a;
    if (!load_arch(&sp, arch_arg, &a))
        return 1;
    run_data rd;
    if (!run_data_load(meta.data, sp.in_channels, meta.val, meta.seed, false, &rd))
        return 1;
    int test = !strcmp(split, "test");
    if (test && rd.test.count == 0) {
        fprintf(stderr, "manta eval: %s has no test set\n", meta.data);
        run_data_free(&rd);
        return 1;
    }
    int rc = 1;
    ofa_trainer *t = NULL;
    int *scratch = malloc((size_t)meta.batch * sizeof *scratch);
    mcl_dev *d = cmd_open_device(device);
    ofa_schedule sched;
    if (!d || !scratch)
        goto out;
    st = ofa_schedule_preset(&sp, meta.preset, meta.batch, 1, &sched, &err);
    if (st != MANTA_OK) {
        cmd_error("eval", st, &err);
        goto out;
    }
    st = ofa_trainer_create(d, &sp, &sched, meta.seed, &t);
    if (st != MANTA_OK) {
        cmd_error("eval", st, mcl_err(d));
        goto out;
    }
    st = trainstate_load(ckpt, t, d, &meta, &err);
    if (st != MANTA_OK) {
        cmd_error("eval", st, &err);
        goto out;
    }
    eval_source rs = {&rd.train, rd.split.train, rd.split.n_train, meta.batch, &rd.aug_train,
                      {0, 0}, scratch};
    eval_source es = {test ? &rd.test : &rd.train, test ? NULL : rd.split.val,
                      test ? rd.test.count : rd.split.n_val, meta.batch, &rd.aug_eval, {0, 0},
                      scratch};
    manta_rng_seed(&rs.rng, meta.seed, 0xeca1);
    long n = images < 0 || images > es.count ? es.count : images;
    double top1 = 0;
    st = ofa_trainer_evaluate(t, &a, eval_source_batch, &rs, recal, eval_source_batch, &es, n,
                              &top1);
    if (st != MANTA_OK) {
        cmd_error("eval", st, mcl_err(d));
        goto out;
    }
    char enc[2048];
    ofa_arch_to_json(&sp, &a, enc, sizeof enc, NULL);
    if (json)
        printf("{\"ckpt\":\"%s\",\"split\":\"%s\",\"images\":%ld,\"arch\":%s,\"top1\":%.5f}\n",
               ckpt, split, n, enc, top1);
    else
        printf("%s: %s top-1 %.2f%% on %ld %s images\n", ckpt, arch_arg, 100 * top1, n,
               test ? "test" : "validation");
    rc = 0;
out:
    free(scratch);
    ofa_trainer_destroy(t);
    mcl_close(d);
    run_data_free(&rd);
    return rc;
}
