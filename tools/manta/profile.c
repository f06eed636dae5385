/* manta profile: latency of sub-networks on an OpenCL device, through the
 * training runtime (the supernet's forward pass in eval mode at batch 1), for
 * boards whose GPU runs inference. The CPU inference engine is profiled per
 * layer by the board program manta-profile; this command times whole
 * sub-networks (the OpenCL runtime has no one-layer models), and with --lut
 * compares them with a latency table's predictions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "common/outpath.h"
#include "core/strbuf.h"
#include "classify/supernet.h"
#include "profile/latency_table.h"
#include "profile/validate.h"

typedef struct profile_opts {
    const char *device, *space, *lut, *csv;
    long count, seed, runs, min_ms;
    bool json;
} profile_opts;

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
static int parse_args(int argc, char **argv, profile_opts *o)
{
    *o = (profile_opts){.space = "cpu-default", .count = 20, .seed = 1, .runs = 10, .min_ms = 200};
    const opt_def defs[] = {
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o->device,
         .metavar = "SPEC",
         .help = "the OpenCL device (required; see 'manta devices')"},
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &o->space,
         .metavar = "S",
         .help = "spec file or built-in name (default cpu-default)"},
        {.name = "count",
         .kind = OPT_LONG,
         .dest = &o->count,
         .lo = 1,
         .hi = 1000000,
         .metavar = "K",
         .help = "random sub-networks (default 20)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &o->seed,
         .lo = 0,
         .hi = 1000000,
         .metavar = "N",
         .help = "seed of the sub-networks (default 1)"},
        {.name = "runs",
         .kind = OPT_LONG,
         .dest = &o->runs,
         .lo = 1,
         .hi = 1000000,
         .metavar = "N",
         .help = "timed runs per sub-network, at least (default 10)"},
        {.name = "min-time-ms",
         .kind = OPT_LONG,
         .dest = &o->min_ms,
         .lo = 0,
         .hi = 1000000,
         .metavar = "T",
         .help = "timed time per sub-network, at least (default 200; 0: --runs runs only)"},
        {.name = "lut",
         .kind = OPT_STRING,
         .dest = &o->lut,
         .metavar = "LUT.json",
         .help = "compare the table's predictions with the measurements"},
        {.name = "csv",
         .kind = OPT_STRING,
         .dest = &o->csv,
         .metavar = "FILE",
         .help = "index, median, mean, runs, prediction and arch per sub-network"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "a JSON line per sub-network and a summary line"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta profile",
        "--device SPEC [--space S] [--count K] [--seed N] [--runs N]\n"
        "                     [--min-time-ms T] [--lut LUT.json] [--csv FILE] [--json]",
        "Times K random sub-networks (default 20, drawn from --seed, default 1) end to\n"
        "end on an OpenCL device: the supernet's forward pass in eval mode at batch 1,\n"
        "weights from the space's initialisation (speed does not depend on training),\n"
        "3 warm-up runs, then the median of at least --runs runs (default 10) and\n"
        "--min-time-ms (default 200) of runs, each waited for with clFinish. With --lut,\n"
        "the table's predictions are compared with the measurements (mean and largest\n"
        "absolute % error, share within +-10%, Kendall's tau). --csv writes arch,\n"
        "median, mean and runs per sub-network. The CPU inference engine is profiled\n"
        "per layer by the board program manta-profile.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!o->device) {
        fprintf(stderr, "manta profile: --device SPEC is required (an OpenCL device, see 'manta "
                        "devices'); the CPU engine is profiled with manta-profile\n");
        return 2;
    }
    if (o->csv && !out_check_file("manta profile", "csv", o->csv))
        return 2;
    return 1;
}

/* Time the sub-network @p n is set to: 3 warm-up runs, then runs until o->runs and
 * o->min_ms are reached (at most @p cap, the size of @p ms); @p got runs into @p ms, their
 * sum in ms into @p sum. */
static manta_status time_subnet(const profile_opts *o, mcl_dev *d, ofa_supernet *n,
                                const ofa_slabs *sl, size_t cap, double *ms, size_t *got,
                                double *sum)
{
    manta_status st = MANTA_OK;
    double total = 0;
    *got = 0;
    *sum = 0;
    for (int w = 0; w < 3 + (int)cap && (st == MANTA_OK); w++) {
        double a = cmd_now();
        st = ofa_supernet_forward(n, sl->params, OFA_BN_EVAL);
        if (st == MANTA_OK)
            st = mcl_finish(d);
        double b = cmd_now();
        if (w < 3)
            continue;
        ms[(*got)++] = (b - a) * 1e3;
        total += b - a;
        *sum += (b - a) * 1e3;
        if ((long)*got >= o->runs && total * 1e3 >= (double)o->min_ms)
            break;
    }
    return st;
}

/* The summary: the table's agreement with the medians @p med (with --lut and two or more
 * sub-networks), else their range. */
static bool print_summary(const profile_opts *o, const mcl_dev *d, const double *med,
                          const double *pred)
{
    const long count = o->count;
    if (o->lut && count >= 2) {
        manta_err err;
        manta_err_clear(&err);
        lat_agreement ag;
        manta_status st = lat_agreement_compute(pred, med, (size_t)count, 0.10, &ag, &err);
        if (st != MANTA_OK) {
            cmd_error("profile", st, &err);
            return false;
        }
        if (o->json) {
            printf("{\"networks\":%ld,\"lut\":", count);
            cmd_json_str(stdout, o->lut);
            printf(",\"mean_abs_pct\":%.4f,\"max_abs_pct\":%.4f,\"within_10pct\":%.4f,"
                   "\"kendall_tau\":%.4f,\"rmse_ms\":%.6f,",
                   ag.mean_abs_pct, ag.max_abs_pct, ag.within, ag.kendall_tau, ag.rmse);
            cmd_json_provenance(stdout, d);
            printf("}\n");
        } else
            printf("%s on %s: %ld sub-networks; table %s: mean |error| %.2f%%, max %.2f%%, "
                   "within +-10%%: %.1f%%, Kendall tau %.3f\n",
                   o->space, mcl_info(d)->name, count, o->lut, ag.mean_abs_pct, ag.max_abs_pct,
                   100 * ag.within, ag.kendall_tau);
        return true;
    }
    double lo = med[0], hi = med[0];
    for (long k = 1; k < count; k++)
        lo = med[k] < lo ? med[k] : lo, hi = med[k] > hi ? med[k] : hi;
    if (o->json) { /* the summary line: the range, and where it was measured */
        printf("{\"networks\":%ld,\"min_ms\":%.6f,\"max_ms\":%.6f,", count, lo, hi);
        cmd_json_provenance(stdout, d);
        printf("}\n");
    } else {
        printf("%s on %s: %ld sub-networks, %.3f .. %.3f ms (median per sub-network)\n", o->space,
               mcl_info(d)->name, count, lo, hi);
    }
    return true;
}

/* One CSV line: index, median, mean, runs, prediction, the arch quoted. */
static void csv_line(FILE *csv, long k, double med, double mean, size_t got, double pred,
                     const char *enc)
{
    manta_strbuf b = {0};
    manta_strbuf_printf(&b, "%ld,%.6f,%.6f,%zu,%.6f,", k, med, mean, got, pred);
    manta_strbuf_csv_str(&b, enc);
    manta_strbuf_printf(&b, "\n");
    if (!b.oom)
        fputs(b.p, csv);
    manta_strbuf_free(&b);
}

/* Time o->count sub-networks drawn from o->seed on the supernet @p n: medians into @p med,
 * the table's predictions (with --lut) into @p pred; false after printing why not. */
static bool profile_all(const profile_opts *o, const ofa_space *sp, const lat_table *lut,
                        mcl_dev *d, ofa_supernet *n, FILE *csv, double *med, double *pred)
{
    const size_t cap = (size_t)(o->runs > 100000 ? 100000 : o->runs) * 64;
    double *ms = malloc(cap * sizeof *ms);
    if (!ms) {
        fprintf(stderr, "manta profile: out of memory\n");
        return false;
    }
    manta_err err;
    manta_err_clear(&err);
    ofa_slabs sl;
    ofa_supernet_slabs(n, &sl);
    manta_rng rng;
    manta_rng_seed(&rng, (uint64_t)o->seed, 0x7a11d);
    const double t0 = cmd_now();
    manta_status st = MANTA_OK;
    for (long k = 0; k < o->count && st == MANTA_OK; k++) {
        ofa_arch arch;
        size_t got = 0;
        double sum = 0;
        ofa_arch_sample(sp, &rng, &arch);
        if ((st = ofa_supernet_set_arch(n, &arch)) != MANTA_OK ||
            (st = time_subnet(o, d, n, &sl, cap, ms, &got, &sum)) != MANTA_OK) {
            cmd_error("profile", st, mcl_err(d));
            break;
        }
        med[k] = lat_median(ms, got);
        if (o->lut && (st = lat_predict(lut, &arch, &pred[k], &err)) != MANTA_OK) {
            cmd_error("profile", st, &err);
            break;
        }
        char enc[1024];
        ofa_arch_to_json(sp, &arch, enc, sizeof enc, NULL);
        if (csv)
            csv_line(csv, k, med[k], sum / (double)got, got, o->lut ? pred[k] : 0.0, enc);
        const double el = cmd_now() - t0;
        if (o->json)
            printf("{\"index\":%ld,\"arch\":%s,\"median_ms\":%.6f,\"runs\":%zu}\n", k, enc, med[k],
                   got);
        else
            fprintf(stderr, "profile: sub-network %ld/%ld  %.3f ms (median of %zu)  ETA %.0f s\n",
                    k + 1, o->count, med[k], got,
                    el / (double)(k + 1) * (double)(o->count - k - 1));
    }
    free(ms);
    return st == MANTA_OK;
}

int cmd_profile(int argc, char **argv)
{
    profile_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 1)
        return rc;
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    manta_status st = ofa_space_load(o.space, &sp, &err);
    if (st != MANTA_OK) {
        cmd_error("profile", st, &err);
        return 1;
    }
    lat_table lut;
    memset(&lut, 0, sizeof lut);
    if (o.lut && ((st = lat_table_load(o.lut, &sp, &lut, &err)) != MANTA_OK ||
                  (st = lat_table_check_complete(&lut, &err)) != MANTA_OK)) {
        fprintf(stderr, "manta profile: %s\n", manta_err_msg(&err, st));
        lat_table_free(&lut);
        return 1;
    }
    rc = 1;
    mcl_dev *d = cmd_open_device("profile", o.device);
    ofa_supernet *n = NULL;
    double *med = calloc((size_t)o.count, sizeof *med);
    double *pred = calloc((size_t)o.count, sizeof *pred);
    FILE *csv = NULL;
    if (!d)
        goto out;
    if (!med || !pred) {
        fprintf(stderr, "manta profile: out of memory\n");
        goto out;
    }
    if ((st = ofa_supernet_create(d, &sp, 1, 1, &n)) != MANTA_OK) {
        cmd_error("profile", st, mcl_err(d));
        goto out;
    }
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        fprintf(stderr, "manta profile: %s: cannot write: %s\n", o.csv, strerror(errno));
        goto out;
    }
    if (csv)
        fprintf(csv, "index,median_ms,mean_ms,runs,predicted_ms,arch\n");
    if (profile_all(&o, &sp, &lut, d, n, csv, med, pred) && print_summary(&o, d, med, pred))
        rc = 0;
out:
    if (csv && fclose(csv) != 0 && rc == 0) {
        fprintf(stderr, "manta profile: %s: write failed\n", o.csv);
        rc = 1;
    }
    free(med), free(pred);
    ofa_supernet_destroy(n);
    mcl_close(d);
    lat_table_free(&lut);
    return rc;
}
