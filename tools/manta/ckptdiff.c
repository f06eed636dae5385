/* manta ckpt-diff: compare the float32 sections of two checkpoints (tests of
 * data-parallel training: replicas on several devices or ranks against one
 * device, equal within float tolerance), or one section of each (--section A:B:
 * a fine-tuning run's teacher against its initial checkpoint's parameters). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "train/checkpoint.h"

int cmd_ckpt_diff(int argc, char **argv)
{
    double tol = -1;
    bool json = false;
    const char *section = NULL;
    const opt_def defs[] = {
        {.name = "tol", .kind = OPT_DOUBLE, .dest = &tol, .lo = 0, .hi = DBL_MAX, .metavar = "T",
         .help = "exit status 1 when a section's |a-b|/|a| exceeds T"},
        {.name = "section", .kind = OPT_STRING, .dest = &section, .metavar = "A[:B]",
         .help = "compare only section A of the first with section B (default A) of the second"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta ckpt-diff", "A.ckpt B.ckpt [--section A[:B]] [--tol T] [--json]",
        "Largest absolute and relative (to the largest magnitude) difference, and the relative\n"
        "L2 norm |a-b|/|a|, of every float32 section present in both checkpoints (--section:\n"
        "of one section of each, e.g. params:teacher). With --tol, exits 1 when a section's\n"
        "|a-b|/|a| exceeds T.\n",
        defs, 2, 2};
    int first;
    opt_result res = opt_parse(&cmd, argc, argv, &first);
    if (res != OPT_OK)
        return res == OPT_HELP ? 0 : 2;
    const char *path[2] = {argv[first], argv[first + 1]};
    char want[2][64] = {"", ""}; /* --section: the section of each file */
    if (section) {
        const char *colon = strchr(section, ':');
        size_t n0 = colon ? (size_t)(colon - section) : strlen(section);
        const char *b_name = colon ? colon + 1 : section;
        if (n0 == 0 || n0 >= sizeof want[0] || !*b_name || strlen(b_name) >= sizeof want[1]) {
            fprintf(stderr, "manta ckpt-diff: --section needs A or A:B (section names), got '%s'\n",
                    section);
            return 2;
        }
        memcpy(want[0], section, n0);
        snprintf(want[1], sizeof want[1], "%s", b_name);
    }
    manta_err err;
    manta_err_clear(&err);
    ckpt_reader *r[2] = {NULL, NULL};
    int rc = 1;
    float *a = NULL, *b = NULL;
    for (int k = 0; k < 2; k++) {
        manta_status st = ckpt_open(path[k], &r[k], &err);
        if (st != MANTA_OK) {
            cmd_error("ckpt-diff", st, &err);
            goto out;
        }
    }
    int bad = 0, first_row = 1, compared = 0;
    if (json)
        printf("{\"sections\":[");
    for (size_t i = 0; i < ckpt_num_sections(r[0]); i++) {
        ckpt_section_info si;
        uint64_t nb;
        if (!ckpt_section_at(r[0], i, &si) || si.type != CKPT_F32 ||
            (section && strcmp(si.name, want[0]) != 0))
            continue;
        const char *other = section ? want[1] : si.name;
        if (ckpt_find(r[1], other, CKPT_F32, &nb, NULL) != MANTA_OK || nb != si.count) {
            if (section) {
                fprintf(stderr, "manta ckpt-diff: %s has no float32 section '%s' of %zu floats "
                        "(those of %s's '%s')\n", path[1], other, (size_t)si.count, path[0],
                        si.name);
                goto out;
            }
            continue;
        }
        compared++;
        char label[140];
        const bool two = strcmp(si.name, other) != 0;
        snprintf(label, sizeof label, "%s%s%s", si.name, two ? ":" : "", two ? other : "");
        size_t n = (size_t)si.count;
        free(a), free(b);
        a = malloc((n ? n : 1) * sizeof *a);
        b = malloc((n ? n : 1) * sizeof *b);
        if (!a || !b) {
            fprintf(stderr, "manta ckpt-diff: out of memory\n");
            goto out;
        }
        manta_status st = ckpt_read_f32(r[0], si.name, a, n, &err);
        if (st == MANTA_OK)
            st = ckpt_read_f32(r[1], other, b, n, &err);
        if (st != MANTA_OK) {
            cmd_error("ckpt-diff", st, &err);
            goto out;
        }
        double maxabs = 0, maxmag = 0, se = 0, sa = 0;
        size_t at = 0;
        for (size_t j = 0; j < n; j++) {
            double e = fabs((double)a[j] - (double)b[j]);
            se += e * e;
            sa += (double)a[j] * (double)a[j];
            if (!(e <= maxabs)) { /* NaN counts as a difference */
                maxabs = isnan(e) ? INFINITY : e;
                at = j;
            }
            double m = fabs((double)a[j]) > fabs((double)b[j]) ? fabs((double)a[j]) : fabs((double)b[j]);
            maxmag = m > maxmag ? m : maxmag;
        }
        double rel = maxmag > 0 ? maxabs / maxmag : maxabs;
        double l2 = sa > 0 ? sqrt(se / sa) : sqrt(se);
        if (tol >= 0 && !(l2 <= tol))
            bad = 1;
        if (json)
            printf("%s{\"name\":\"%s\",\"count\":%zu,\"max_abs\":%.3e,\"max_rel\":%.3e,\"l2_rel\":%.3e,"
                   "\"at\":%zu}",
                   first_row ? "" : ",", label, n, maxabs, rel, l2, at);
        else
            printf("%-10s %10zu floats  max |a-b| %.3e (element %zu)  relative %.3e  |a-b|/|a| %.3e\n",
                   label, n, maxabs, at, rel, l2);
        first_row = 0;
    }
    if (section && !compared) {
        if (json)
            printf("]}\n");
        fprintf(stderr, "manta ckpt-diff: %s has no float32 section '%s'\n", path[0], want[0]);
        goto out;
    }
    if (json) {
        printf("],\"within_tol\":%s,", bad ? "false" : "true");
        cmd_json_version(stdout);
        printf("}\n");
    }
    rc = bad;
out:
    free(a), free(b);
    ckpt_close(r[0]);
    ckpt_close(r[1]);
    return rc;
}
