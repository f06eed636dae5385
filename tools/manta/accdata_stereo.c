/* manta acc-dataset --ckpt STEREO.ckpt: the held-out EPE and bad-3 of sampled sub-networks
 * of a trained stereo supernet (BN re-calibrated on the run's training pairs, then the
 * run's held-out pairs, as manta eval --ckpt scores one) as the EPE data set (JSON lines)
 * that manta acc-fit trains the stereo predictor on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "accdata.h"
#include "stereo_cmd.h"

/* Sample i of the seeded sequence (one input size: the crop). */
static void sample_arch(const void *space, uint64_t seed, bool mixed, long i, ofa_arch *a)
{
    manta_rng rng;
    manta_rng_seed(&rng, seed, 0xacc0 + (uint64_t)i);
    if (mixed)
        stereo_arch_sample_mixed(space, &rng, a);
    else
        stereo_arch_sample(space, &rng, a);
}

static manta_status load_dataset(const char *path, const void *space, accp_dataset *ds,
                                 manta_err *err)
{
    return accp_dataset_load_stereo(path, space, ds, err);
}

typedef struct sdataset_opts {
    acc_opts c;
    long pairs, recal;
} sdataset_opts;

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, sdataset_opts *o)
{
    *o = (sdataset_opts){.c = {.count = 100, .seed = 1}, .pairs = 200, .recal = 200};
    const opt_def defs[] = {
        {.name = "pairs",
         .kind = OPT_LONG,
         .dest = &o->pairs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "held-out pairs per sample (default 200)"},
        {.name = "recal-pairs",
         .kind = OPT_LONG,
         .dest = &o->recal,
         .lo = 0,
         .hi = 1e7,
         .metavar = "N",
         .help = "training pairs for BN re-calibration (default 200; 0: none, the running "
                 "statistics)"},
        {.name = NULL},
    };
    return acc_opts_parse(
        argc, argv, &o->c, defs,
        "--ckpt STEREO.ckpt --out DATA.jsonl [--count N] [--pairs N]\n"
        "                         [--recal-pairs N] [--seed N] [--sampling mixed|uniform]\n"
        "                         [--resume] [--device SPEC] [--json]",
        "Samples sub-networks of the trained stereo supernet (encoder kernels, expand\n"
        "ratios and depths, decoder widths) and measures each one as manta eval --ckpt\n"
        "does: batch norm re-calibrated on --recal-pairs of the run's training pairs\n"
        "(default 200), then EPE (px) and bad-3 (%) on the run's first --pairs held-out\n"
        "procedural pairs (default 200, the same pairs for every sample) at the crop.\n"
        "Sub-networks are drawn from --seed (default 1); --sampling mixed (the default)\n"
        "draws each one's encoder genes from weights drawn for it, so that the set spans\n"
        "nearly all-smallest to nearly all-largest sub-networks; uniform draws every gene\n"
        "alike. The file (header with \"task\":\"stereo\", then one JSON line per sample\n"
        "with the architecture, \"dw\" included, \"epe\" and \"bad3\"; docs/search.md) is\n"
        "rewritten after every sample; --resume keeps the samples of an existing file\n"
        "and measures the rest. manta acc-fit trains the EPE predictor on it.\n",
        "the trained stereo supernet");
}

int cmd_acc_dataset_stereo(int argc, char **argv)
{
    sdataset_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 1)
        return rc;
    stereo_cmd_ckpt c;
    accp_dataset ds;
    memset(&ds, 0, sizeof ds);
    rc = 1;
    if (!stereo_cmd_ckpt_open("acc-dataset", o.c.ckpt, o.c.device, &c))
        goto out;
    accp_dataset_init_stereo(&ds, &c.sp);
    if (o.c.resume && !acc_resume(&o.c, &c.sp, sample_arch, load_dataset, &ds))
        goto out;
    const long count = (long)ds.n > o.c.count ? (long)ds.n : o.c.count, first = (long)ds.n;
    const double t0 = cmd_now();
    manta_err err = {0};
    manta_status st = MANTA_OK;
    for (long i = first; i < count; i++) {
        ofa_arch a;
        sample_arch(&c.sp, (uint64_t)o.c.seed, o.c.mixed, i, &a);
        stereo_scores all, noc;
        if ((st = stereo_cmd_ckpt_heldout(&c, &a, o.pairs, o.recal, &all, &noc, &err)) !=
                MANTA_OK ||
            (st = accp_dataset_add_stereo(&ds, &a, all.epe, all.bad3, &err)) != MANTA_OK ||
            (st = accp_dataset_save(&ds, o.c.out, &err)) != MANTA_OK) {
            cmd_error("acc-dataset", st, &err);
            goto out;
        }
        const double el = cmd_now() - t0, per = el / (double)(i - first + 1);
        if (o.c.json)
            printf("{\"sample\":%ld,\"of\":%ld,\"epe\":%.5f,\"bad3\":%.4f,\"elapsed_s\":%.1f,"
                   "\"eta_s\":%.1f}\n",
                   i + 1, count, all.epe, all.bad3, el, per * (double)(count - i - 1));
        else
            fprintf(stderr,
                    "acc-dataset: sample %ld/%ld  EPE %.3f px  bad-3 %.2f%%  %.1f s/sample  "
                    "ETA %.0f s\n",
                    i + 1, count, all.epe, all.bad3, per, per * (double)(count - i - 1));
        fflush(stdout);
    }
    if (count == first && (st = accp_dataset_save(&ds, o.c.out, &err)) != MANTA_OK) {
        cmd_error("acc-dataset", st, &err);
        goto out;
    }
    double mean, lo, hi;
    acc_value_range(&ds, &mean, &lo, &hi);
    if (o.c.json) {
        printf("{\"out\":");
        cmd_json_str(stdout, o.c.out);
        printf(",\"task\":\"stereo\",\"space\":");
        cmd_json_str(stdout, c.sp.name);
        printf(",\"samples\":%zu,\"measured\":%ld,\"pairs\":%ld,\"recal_pairs\":%ld,"
               "\"mean_epe\":%.5f,\"min_epe\":%.5f,\"max_epe\":%.5f,\"seconds\":%.1f,",
               ds.n, count - first, o.pairs, o.recal, mean, lo, hi, cmd_now() - t0);
        cmd_json_provenance(stdout, c.dev);
        printf("}\n");
    } else
        printf("%s: %zu samples of %s (%ld measured now, %ld held-out pairs each, %ld for "
               "re-calibration); EPE mean %.3f px, range %.3f..%.3f px; %.1f s\n",
               o.c.out, ds.n, c.sp.name, count - first, o.pairs, o.recal, mean, lo, hi,
               cmd_now() - t0);
    rc = 0;
out:
    accp_dataset_free(&ds);
    stereo_cmd_ckpt_close(&c);
    return rc;
}
