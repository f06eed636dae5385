/* manta ckpt-diff: compare the float32 sections of two checkpoints (tests of
 * data-parallel training: replicas on several devices or ranks against one
 * device, equal within float tolerance), or one section of each (--section A:B:
 * a fine-tuning run's teacher against its initial checkpoint's parameters). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/json.h"
#include "train/checkpoint.h"

/* What a checkpoint is: its metadata's "format" ("" without metadata), its space's
 * "name" and the space's JSON text (NULL without one; malloc'd). */
typedef struct ckpt_kind {
    char format[64], space_name[64];
    char *space;
} ckpt_kind;

static void kind_read(ckpt_reader *r, ckpt_kind *k)
{
    memset(k, 0, sizeof *k);
    char *text = NULL;
    manta_err err;
    if (!ckpt_has(r, "meta") || ckpt_read_json(r, "meta", &text, NULL, &err) != MANTA_OK)
        return;
    cJSON *j = cJSON_Parse(text);
    free(text);
    const char *f = manta_json_string(j, "format");
    const cJSON *sp = manta_json_object(j, "space");
    const char *name = sp ? manta_json_string(sp, "name") : NULL;
    snprintf(k->format, sizeof k->format, "%s", f ? f : "");
    snprintf(k->space_name, sizeof k->space_name, "%s", name ? name : "");
    k->space = sp ? cJSON_PrintUnformatted(sp) : NULL;
    cJSON_Delete(j);
}

/* Checkpoints of different kinds or spaces have nothing to compare: one line naming the
 * difference, false. */
static bool kinds_match(const char *const path[2], const ckpt_kind k[2])
{
    if (strcmp(k[0].format, k[1].format) != 0) {
        fprintf(stderr, "manta ckpt-diff: %s is %s%s%s, %s is %s%s%s: nothing to compare\n",
                path[0], *k[0].format ? "a '" : "a checkpoint without metadata", k[0].format,
                *k[0].format ? "' checkpoint" : "", path[1],
                *k[1].format ? "a '" : "a checkpoint without metadata", k[1].format,
                *k[1].format ? "' checkpoint" : "");
        return false;
    }
    if ((k[0].space == NULL) != (k[1].space == NULL) ||
        (k[0].space && strcmp(k[0].space, k[1].space) != 0)) {
        fprintf(stderr,
                "manta ckpt-diff: %s and %s were trained in different search spaces "
                "('%s' and '%s'%s)\n",
                path[0], path[1], k[0].space_name, k[1].space_name,
                strcmp(k[0].space_name, k[1].space_name) ? "" : ", whose specs differ");
        return false;
    }
    return true;
}

/* Every float32 section of each file is in the other with the same length: else one line
 * per section that is not, false. */
static bool sections_match(const char *const path[2], ckpt_reader *const r[2])
{
    bool ok = true;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < ckpt_num_sections(r[k]); i++) {
            ckpt_section_info si;
            uint64_t nb;
            if (!ckpt_section_at(r[k], i, &si) || si.type != CKPT_F32)
                continue;
            if (ckpt_find(r[1 - k], si.name, CKPT_F32, &nb, NULL) != MANTA_OK) {
                fprintf(stderr, "manta ckpt-diff: float32 section '%s' is in %s, not in %s\n",
                        si.name, path[k], path[1 - k]);
                ok = false;
            } else if (k == 0 && nb != si.count) {
                fprintf(stderr, "manta ckpt-diff: section '%s' holds %zu floats in %s, %zu in %s\n",
                        si.name, (size_t)si.count, path[0], (size_t)nb, path[1]);
                ok = false;
            }
        }
    return ok;
}

int cmd_ckpt_diff(int argc, char **argv)
{
    double tol = -1;
    bool json = false;
    const char *section = NULL;
    const opt_def defs[] = {
        {.name = "tol",
         .kind = OPT_DOUBLE,
         .dest = &tol,
         .lo = 0,
         .hi = DBL_MAX,
         .metavar = "T",
         .help = "exit status 1 when a section's |a-b|/|a| exceeds T"},
        {.name = "section",
         .kind = OPT_STRING,
         .dest = &section,
         .metavar = "A[:B]",
         .help = "compare only section A of the first with section B (default A) of the second"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta ckpt-diff",
        "A.ckpt B.ckpt [--section A[:B]] [--tol T] [--json]",
        "Largest absolute and relative (to the largest magnitude) difference, and the relative\n"
        "L2 norm |a-b|/|a|, of every float32 section present in both checkpoints (--section:\n"
        "of one section of each, e.g. params:teacher). With --tol, exits 1 when a section's\n"
        "|a-b|/|a| exceeds T. Exits 1 without comparing when the checkpoints are of different\n"
        "kinds (classification, stereo) or search spaces, or when a float32 section is in one\n"
        "only or of another length in the other.\n",
        defs,
        2,
        2};
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
    ckpt_kind kind[2];
    kind_read(r[0], &kind[0]);
    kind_read(r[1], &kind[1]);
    bool same = kinds_match(path, kind);
    free(kind[0].space), free(kind[1].space);
    if (!same || (!section && !sections_match(path, r)))
        goto out;
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
            fprintf(stderr,
                    "manta ckpt-diff: %s has no float32 section '%s' of %zu floats "
                    "(those of %s's '%s')\n",
                    path[1], other, (size_t)si.count, path[0], si.name);
            goto out;
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
            double m =
                fabs((double)a[j]) > fabs((double)b[j]) ? fabs((double)a[j]) : fabs((double)b[j]);
            maxmag = m > maxmag ? m : maxmag;
        }
        double rel = maxmag > 0 ? maxabs / maxmag : maxabs;
        double l2 = sa > 0 ? sqrt(se / sa) : sqrt(se);
        if (tol >= 0 && !(l2 <= tol))
            bad = 1;
        if (json)
            printf("%s{\"name\":\"%s\",\"count\":%zu,\"max_abs\":%.3e,\"max_rel\":%.3e,\"l2_rel\":%"
                   ".3e,"
                   "\"at\":%zu}",
                   first_row ? "" : ",", label, n, maxabs, rel, l2, at);
        else
            printf(
                "%-10s %10zu floats  max |a-b| %.3e (element %zu)  relative %.3e  |a-b|/|a| %.3e\n",
                label, n, maxabs, at, rel, l2);
        first_row = 0;
    }
    if (!compared) {
        if (json)
            printf("]}\n");
        if (section)
            fprintf(stderr, "manta ckpt-diff: %s has no float32 section '%s'\n", path[0], want[0]);
        else
            fprintf(stderr, "manta ckpt-diff: %s holds no float32 section: nothing to compare\n",
                    path[0]);
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
