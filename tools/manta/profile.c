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
#include "ofa/supernet.h"
#include "profile/latency_table.h"
#include "profile/validate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: manta profile --device SPEC [--space S] [--count K] [--seed N] [--runs N]\n"
            "                     [--min-time-ms T] [--lut LUT.json] [--csv FILE] [--json]\n\n"
            "Times K random sub-networks (default 20, drawn from --seed, default 1) end to\n"
            "end on an OpenCL device: the supernet's forward pass in eval mode at batch 1,\n"
            "weights from the space's initialisation (speed does not depend on training),\n"
            "3 warm-up runs, then the median of at least --runs runs (default 10) and\n"
            "--min-time-ms (default 200) of runs, each waited for with clFinish. With --lut,\n"
            "the table's predictions are compared with the measurements (mean and largest\n"
            "absolute %% error, share within +-10%%, Kendall's tau). --csv writes arch,\n"
            "median, mean and runs per sub-network. The CPU inference engine is profiled\n"
            "per layer by the board program manta-profile.\n");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cmd_profile(int argc, char **argv)
{
    const char *device = NULL, *space = "cpu-default", *lut_path = NULL, *csv_path = NULL;
    long count = 20, seed = 1, runs = 10, min_ms = 200;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--device") && v) {
            device = v, i++;
        } else if (!strcmp(a, "--space") && v) {
            space = v, i++;
        } else if (!strcmp(a, "--lut") && v) {
            lut_path = v, i++;
        } else if (!strcmp(a, "--csv") && v) {
            csv_path = v, i++;
        } else if (!strcmp(a, "--count") || !strcmp(a, "--seed") || !strcmp(a, "--runs") ||
                   !strcmp(a, "--min-time-ms")) {
            long *dst = a[2] == 'c' ? &count : a[2] == 's' ? &seed : a[2] == 'r' ? &runs : &min_ms;
            if (!cmd_parse_long("profile", a, v, a[2] == 'c' || a[2] == 'r' ? 1 : 0, 1000000, dst))
                return 2;
            i++;
        } else {
            fprintf(stderr, "manta profile: bad option or value '%s' (see --help)\n", a);
            return 2;
        }
    }
    if (!device) {
        fprintf(stderr, "manta profile: --device SPEC is required (an OpenCL device, see 'manta "
                        "devices'); the CPU engine is profiled with manta-profile\n");
        return 2;
    }
    manta_err err;
    manta_err_clear(&err);
    ofa_space sp;
    manta_status st = ofa_space_load(space, &sp, &err);
    if (st != MANTA_OK) {
        cmd_error("profile", st, &err);
        return 1;
    }
    lat_table lut;
    memset(&lut, 0, sizeof lut);
    if (lut_path && ((st = lat_table_load(lut_path, &sp, &lut, &err)) != MANTA_OK ||
                     (st = lat_table_check_complete(&lut, &err)) != MANTA_OK)) {
        fprintf(stderr, "manta profile: %s\n", manta_err_msg(&err, st));
        lat_table_free(&lut);
        return 1;
    }
    int rc = 1;
    mcl_dev *d = cmd_open_device(device);
    ofa_supernet *n = NULL;
    double *ms = malloc((size_t)(runs > 100000 ? 100000 : runs) * 64 * sizeof *ms);
    double *med = calloc((size_t)count, sizeof *med), *pred = calloc((size_t)count, sizeof *pred);
    ofa_arch *arch = calloc((size_t)count, sizeof *arch);
    FILE *csv = NULL;
    if (!d)
        goto out;
    if (!ms || !med || !pred || !arch) {
        fprintf(stderr, "manta profile: out of memory\n");
        goto out;
    }
    const size_t cap = (size_t)(runs > 100000 ? 100000 : runs) * 64;
    if ((st = ofa_supernet_create(d, &sp, 1, 1, &n)) != MANTA_OK) {
        cmd_error("profile", st, mcl_err(d));
        goto out;
    }
    if (csv_path && !(csv = fopen(csv_path, "w"))) {
        fprintf(stderr, "manta profile: %s: cannot write: %s\n", csv_path, strerror(errno));
        goto out;
    }
    if (csv)
        fprintf(csv, "index,median_ms,mean_ms,runs,predicted_ms,arch\n");
    ofa_slabs sl;
    ofa_supernet_slabs(n, &sl);
    manta_rng rng;
    manta_rng_seed(&rng, (uint64_t)seed, 0x7a11d);
    const double t0 = cmd_now();
    for (long k = 0; k < count; k++) {
        ofa_arch_sample(&sp, &rng, &arch[k]);
        if ((st = ofa_supernet_set_arch(n, &arch[k])) != MANTA_OK) {
            cmd_error("profile", st, mcl_err(d));
            goto out;
        }
        size_t got = 0;
        double total = 0, sum = 0;
        for (int w = 0; w < 3 + (int)cap && (st == MANTA_OK); w++) {
            double a = cmd_now();
            st = ofa_supernet_forward(n, sl.params, OFA_BN_EVAL);
            if (st == MANTA_OK)
                st = mcl_finish(d);
            double b = cmd_now();
            if (w < 3)
                continue;
            ms[got++] = (b - a) * 1e3;
            total += b - a;
            sum += (b - a) * 1e3;
            if ((long)got >= runs && total * 1e3 >= (double)min_ms)
                break;
        }
        if (st != MANTA_OK) {
            cmd_error("profile", st, mcl_err(d));
            goto out;
        }
        qsort(ms, got, sizeof *ms, cmp_double);
        med[k] = got % 2 ? ms[got / 2] : 0.5 * (ms[got / 2 - 1] + ms[got / 2]);
        if (lut_path && (st = lat_predict(&lut, &arch[k], &pred[k], &err)) != MANTA_OK) {
            cmd_error("profile", st, &err);
            goto out;
        }
        char enc[1024];
        ofa_arch_to_json(&sp, &arch[k], enc, sizeof enc, NULL);
        if (csv) {
            fprintf(csv, "%ld,%.6f,%.6f,%zu,%.6f,\"", k, med[k], sum / (double)got, got,
                    lut_path ? pred[k] : 0.0);
            for (const char *c = enc; *c; c++) {
                if (*c == '"')
                    fputc('"', csv);
                fputc(*c, csv);
            }
            fputs("\"\n", csv);
        }
        const double el = cmd_now() - t0;
        if (json)
            printf("{\"index\":%ld,\"arch\":%s,\"median_ms\":%.6f,\"runs\":%zu}\n", k, enc, med[k],
                   got);
        else
            fprintf(stderr, "profile: sub-network %ld/%ld  %.3f ms (median of %zu)  ETA %.0f s\n",
                    k + 1, count, med[k], got, el / (double)(k + 1) * (double)(count - k - 1));
    }
    if (lut_path && count >= 2) {
        lat_agreement ag;
        if ((st = lat_agreement_compute(pred, med, (size_t)count, 0.10, &ag, &err)) != MANTA_OK) {
            cmd_error("profile", st, &err);
            goto out;
        }
        if (json) {
            printf("{\"networks\":%ld,\"lut\":", count);
            cmd_json_str(stdout, lut_path);
            printf(",\"mean_abs_pct\":%.4f,\"max_abs_pct\":%.4f,\"within_10pct\":%.4f,"
                   "\"kendall_tau\":%.4f,\"rmse_ms\":%.6f,",
                   ag.mean_abs_pct, ag.max_abs_pct, ag.within, ag.kendall_tau, ag.rmse);
            cmd_json_provenance(stdout, d);
            printf("}\n");
        } else
            printf("%s on %s: %ld sub-networks; table %s: mean |error| %.2f%%, max %.2f%%, "
                   "within +-10%%: %.1f%%, Kendall tau %.3f\n",
                   space, mcl_info(d)->name, count, lut_path, ag.mean_abs_pct, ag.max_abs_pct,
                   100 * ag.within, ag.kendall_tau);
    } else {
        double lo = med[0], hi = med[0];
        for (long k = 1; k < count; k++)
            lo = med[k] < lo ? med[k] : lo, hi = med[k] > hi ? med[k] : hi;
        if (json) { /* the summary line: the range, and where it was measured */
            printf("{\"networks\":%ld,\"min_ms\":%.6f,\"max_ms\":%.6f,", count, lo, hi);
            cmd_json_provenance(stdout, d);
            printf("}\n");
        } else {
            printf("%s on %s: %ld sub-networks, %.3f .. %.3f ms (median per sub-network)\n", space,
                   mcl_info(d)->name, count, lo, hi);
        }
    }
    rc = 0;
out:
    if (csv && fclose(csv) != 0 && rc == 0) {
        fprintf(stderr, "manta profile: %s: write failed\n", csv_path);
        rc = 1;
    }
    free(ms), free(med), free(pred), free(arch);
    ofa_supernet_destroy(n);
    mcl_close(d);
    lat_table_free(&lut);
    return rc;
}
