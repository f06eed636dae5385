/* The shared parts of manta acc-dataset's two forms (accdata.h). */
#include "accdata.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common/outpath.h"

static const char *const SAMPLINGS[] = {"mixed", "uniform", NULL};

enum { ACC_TASK_DEFS = 4, ACC_DEFS = 3 + ACC_TASK_DEFS + 5 + 1 };

int acc_opts_parse(int argc, char **argv, acc_opts *o, const opt_def *task_defs,
                   const char *synopsis, const char *about, const char *ckpt_help)
{
    if (!o->sampling)
        o->sampling = "mixed";
    opt_def defs[ACC_DEFS];
    int n = 0;
    defs[n++] = (opt_def){
        .name = "ckpt", .kind = OPT_STRING, .dest = &o->ckpt, .metavar = "FILE", .help = ckpt_help};
    defs[n++] = (opt_def){.name = "out",
                          .kind = OPT_STRING,
                          .dest = &o->out,
                          .metavar = "DATA.jsonl",
                          .help = "the data set to write"};
    defs[n++] = (opt_def){.name = "count",
                          .kind = OPT_LONG,
                          .dest = &o->count,
                          .lo = 1,
                          .hi = 1 << 30,
                          .metavar = "N",
                          .help = "samples (default 100)"};
    for (int i = 0; i < ACC_TASK_DEFS && task_defs[i].name; i++)
        defs[n++] = task_defs[i];
    defs[n++] = (opt_def){.name = "seed",
                          .kind = OPT_LONG,
                          .dest = &o->seed,
                          .lo = 0,
                          .hi = 1 << 30,
                          .metavar = "N",
                          .help = "seed of the sub-networks (default 1)"};
    defs[n++] = (opt_def){.name = "sampling",
                          .kind = OPT_STRING,
                          .dest = &o->sampling,
                          .metavar = "S",
                          .help = "how genes are drawn: mixed (default) or uniform",
                          .choices = SAMPLINGS};
    defs[n++] = (opt_def){.name = "resume",
                          .kind = OPT_FLAG,
                          .dest = &o->resume,
                          .help = "keep the samples of an existing file, measure the rest"};
    defs[n++] = (opt_def){.name = "device",
                          .kind = OPT_STRING,
                          .dest = &o->device,
                          .metavar = "SPEC",
                          .help = "OpenCL device (default: MANTA_DEVICE, else 0)"};
    defs[n++] = (opt_def){.name = "json",
                          .kind = OPT_FLAG,
                          .dest = &o->json,
                          .help = "progress and summary as JSON lines"};
    defs[n] = (opt_def){.name = NULL};
    const opt_cmd cmd = {"manta acc-dataset", synopsis, about, defs, 0, 0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    o->mixed = !strcmp(o->sampling, "mixed");
    if (!o->ckpt || !o->out) {
        fprintf(stderr, "manta acc-dataset: --ckpt FILE and --out DATA.jsonl are required\n");
        return 2;
    }
    if (!out_check_file("manta acc-dataset", "out", o->out))
        return 2;
    return 1;
}

bool acc_resume(const acc_opts *o, const void *space, acc_sample_fn sample, acc_load_fn load,
                accp_dataset *ds)
{
    FILE *f = fopen(o->out, "r");
    if (!f)
        return true;
    fclose(f);
    manta_err err = {0};
    manta_status st = load(o->out, space, ds, &err);
    if (st != MANTA_OK) {
        cmd_error("acc-dataset", st, &err);
        return false;
    }
    for (size_t i = 0; i < ds->n; i++) { /* the same sequence, or a different run */
        ofa_arch a;
        sample(space, (uint64_t)o->seed, o->mixed, (long)i, &a);
        if (memcmp(&a, &ds->s[i].arch, sizeof a) != 0) {
            fprintf(stderr,
                    "manta acc-dataset: %s: sample %zu is not sub-network %zu of seed %ld, %s "
                    "sampling; resume with the seed and --sampling that wrote it, or write a "
                    "new file\n",
                    o->out, i + 1, i + 1, o->seed, o->mixed ? "mixed" : "uniform");
            return false;
        }
    }
    return true;
}

void acc_value_range(const accp_dataset *ds, double *mean, double *lo, double *hi)
{
    double sum = 0, l = INFINITY, h = -INFINITY;
    for (size_t i = 0; i < ds->n; i++) {
        sum += ds->s[i].value;
        l = fmin(l, ds->s[i].value);
        h = fmax(h, ds->s[i].value);
    }
    *mean = ds->n ? sum / (double)ds->n : 0;
    *lo = ds->n ? l : 0;
    *hi = ds->n ? h : 0;
}
