/* manta events: read TensorBoard event files back (runtime/core/tfevents.h), checking the
 * CRCs of every record, and print their scalars: the last value of every tag, or every
 * point. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/json.h"
#include "common/opts.h"
#include "core/tfevents.h"

/* Largest event file read (the reader holds it whole). */
#define EVENTS_MAX_BYTES ((size_t)1 << 30)

/* Index in @p log of the last point of each tag, in order of first appearance: @p last
 * receives them, the return value their count. */
static size_t last_points(const manta_tfevents_log *log, size_t *last)
{
    size_t n = 0;
    for (size_t i = 0; i < log->n_points; i++) {
        size_t k = 0;
        while (k < n && strcmp(log->points[last[k]].tag, log->points[i].tag) != 0)
            k++;
        last[k] = i;
        n += k == n;
    }
    return n;
}

static void print_point(const manta_tfevents_point *p, size_t count, bool json, bool first)
{
    if (json) {
        printf("%s{\"tag\":", first ? "" : ",");
        json_put_str(stdout, p->tag);
        printf(",\"step\":%lld,\"wall_time\":%.3f,\"value\":%.9g", (long long)p->step, p->wall_time,
               (double)p->value);
        if (count)
            printf(",\"points\":%zu", count);
        printf("}");
        return;
    }
    printf("%-32s step %8lld  %.6g", p->tag, (long long)p->step, (double)p->value);
    if (count)
        printf("  (%zu points)", count);
    printf("\n");
}

/* Points of @p log with the tag of point @p i. */
static size_t tag_count(const manta_tfevents_log *log, size_t i)
{
    size_t c = 0;
    for (size_t j = 0; j < log->n_points; j++)
        c += strcmp(log->points[j].tag, log->points[i].tag) == 0;
    return c;
}

int cmd_events(int argc, char **argv)
{
    bool json = false, all = false;
    const char *prefix = NULL;
    const opt_def defs[] = {
        {.name = "all",
         .kind = OPT_FLAG,
         .dest = &all,
         .help = "every point, not the last per tag"},
        {.name = "tag",
         .kind = OPT_STRING,
         .dest = &prefix,
         .metavar = "PREFIX",
         .help = "only the tags that start with PREFIX (e.g. rank1/)"},
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document per file"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta events",
        "FILE... [--all] [--tag PREFIX] [--json]",
        "Reads TensorBoard event files (manta train writes them beside metrics.jsonl), checking\n"
        "both CRCs of every record and that every Event is a well-formed protocol buffer, and\n"
        "prints the last value of every scalar tag with its step and how many points it has\n"
        "(--all: every point, in file order). A damaged file is named with the record and what\n"
        "is wrong, and the exit status is 1.\n",
        defs,
        1,
        -1};
    int first;
    opt_result res = opt_parse(&cmd, argc, argv, &first);
    if (res != OPT_OK)
        return res == OPT_HELP ? 0 : 2;
    int rc = 0;
    for (int f = first; f < argc; f++) {
        manta_tfevents_log log;
        manta_err err;
        manta_err_clear(&err);
        manta_status st = manta_tfevents_read(argv[f], EVENTS_MAX_BYTES, &log, &err);
        if (st != MANTA_OK) {
            cmd_error("events", st, &err);
            rc = 1;
            continue;
        }
        size_t *last = malloc((log.n_points ? log.n_points : 1) * sizeof *last);
        if (!last) {
            fprintf(stderr, "manta events: out of memory\n");
            manta_tfevents_log_free(&log);
            return 1;
        }
        size_t n = all ? log.n_points : last_points(&log, last);
        if (json) {
            printf("{\"file\":");
            json_put_str(stdout, argv[f]);
            printf(",\"records\":%zu,\"file_version\":", log.n_records);
            json_put_str(stdout, log.file_version ? log.file_version : "");
            printf(",\"scalars\":[");
        } else {
            printf("%s: %zu records, %s\n", argv[f], log.n_records,
                   log.file_version ? log.file_version : "no file_version");
        }
        bool first_row = true;
        for (size_t k = 0; k < n; k++) {
            size_t i = all ? k : last[k];
            if (prefix && strncmp(log.points[i].tag, prefix, strlen(prefix)) != 0)
                continue;
            print_point(&log.points[i], all ? 0 : tag_count(&log, i), json, first_row);
            first_row = false;
        }
        if (json)
            printf("]}\n");
        free(last);
        manta_tfevents_log_free(&log);
    }
    return rc;
}
