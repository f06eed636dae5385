/* manta report RUN_DIR: plots of a run a person would rather look at than read (PNG and
 * SVG, drawn with cairo) and one HTML page with all of them and the key figures: the
 * training curves per phase, the sampled sub-networks' sizes, per-rank throughput, the
 * search's accuracy against latency with its Pareto front, the chosen and the uniform
 * sub-networks, and the latency table's predicted against measured latency. It draws what
 * RUN_DIR (or the options) holds and says in one line per missing input what it skipped.
 * The inputs are found and read by the library (report/inputs.h), the figures and the page
 * written by the report's part of the program (tools/manta-report/report.h); this file is
 * the command: options, messages, exit status. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/fileio.h"
#include "manta-report/plot.h"
#include "manta-report/report.h"
#include "report/inputs.h"

typedef struct report_opts {
    const char *run, *out, *metrics, *search, *latency;
    bool json, quiet;
} report_opts;

static int parse_args(int argc, char **argv, report_opts *o)
{
    *o = (report_opts){0};
    const opt_def defs[] = {
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o->out,
         .metavar = "DIR",
         .help = "where the plots and index.html go (default RUN_DIR/report)"},
        {.name = "metrics",
         .kind = OPT_STRING,
         .dest = &o->metrics,
         .metavar = "FILE",
         .help = "training metrics (default RUN_DIR/[supernet/]metrics.jsonl)"},
        {.name = "search",
         .kind = OPT_STRING,
         .dest = &o->search,
         .metavar = "FILE",
         .help = "search.json or its folder (default RUN_DIR/[search/]search.json)"},
        {.name = "latency",
         .kind = OPT_STRING,
         .dest = &o->latency,
         .metavar = "FILE",
         .help = "the table's validation CSV (default RUN_DIR/validate.csv)"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "one JSON line: folder, files written, skipped"},
        {.name = "quiet", .kind = OPT_FLAG, .dest = &o->quiet, .help = "print errors only"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta report",
        "[RUN_DIR] [--out DIR] [--metrics FILE] [--search FILE] [--latency FILE]\n"
        "                    [--json] [--quiet]",
        "Plots of a run as PNG and SVG, drawn with cairo, and DIR/index.html showing them\n"
        "all with the key figures (final losses, phase-end validation, the chosen\n"
        "sub-network with its predicted accuracy and latency):\n"
        "  training.png    loss, batch top-1 (EPE for stereo runs), learning rate and\n"
        "                  images/s against step; phases shaded and named; validation\n"
        "                  top-1 (held-out EPE) of the largest and smallest sub-network\n"
        "                  at each phase's end\n"
        "  subnets.png     MACs and parameters of the sub-networks sampled (mean, smallest,\n"
        "                  largest) against step, when the progress records carry \"subnets\"\n"
        "  throughput.png  images/s, step time and time waiting for data and the\n"
        "                  allreduce of each rank, when the progress records carry \"ranks\"\n"
        "  search.png      the search's Pareto front (predicted top-1 against predicted\n"
        "                  latency), the re-ranked candidates predicted and measured,\n"
        "                  the uniform sub-networks, the chosen one and the budget\n"
        "  latency.png     the latency table's predicted against measured latency of\n"
        "                  whole sub-networks, with +-10% lines\n"
        "RUN_DIR is a training folder (metrics.jsonl) or a demo folder (supernet/,\n"
        "search/, validate.csv); what is missing is skipped with one line saying so.\n"
        "--search also takes the folder of search.json (front.csv is read beside it).\n"
        "--latency takes the CSV of manta-profile --validate K --csv F (or of manta\n"
        "profile --lut T --csv F), its summary (--json, F.json beside the CSV), or the\n"
        "latency table (validate.csv and validate.json beside it).\n"
        "Without RUN_DIR, name the inputs and --out DIR. Every file is replaced\n"
        "atomically. Exit status 1 when an input cannot be read or nothing is found.\n",
        defs,
        0,
        1};
    int first;
    opt_result res = opt_parse(&cmd, argc, argv, &first);
    if (res != OPT_OK)
        return res == OPT_HELP ? 0 : 2;
    o->run = first < argc ? argv[first] : NULL;
    if (!o->run && !o->metrics && !o->search && !o->latency) {
        fprintf(stderr, "manta report: give RUN_DIR, or --metrics, --search or --latency with "
                        "--out DIR (see --help)\n");
        return 2;
    }
    if (!o->run && !o->out) {
        fprintf(stderr, "manta report: --out DIR is needed without RUN_DIR\n");
        return 2;
    }
    return 1;
}

static void print_json(const report *r)
{
    printf("{\"out\":");
    cmd_json_str(stdout, r->out);
    printf(",\"files\":[");
    for (int i = 0; i < r->n_plots; i++)
        printf("%s\"%s.png\",\"%s.svg\"", i ? "," : "", r->plots[i].stem, r->plots[i].stem);
    printf("%s\"index.html\"],\"skipped\":[", r->n_plots ? "," : "");
    for (int i = 0; i < r->in.n_skipped; i++) {
        if (i)
            printf(",");
        cmd_json_str(stdout, r->in.skipped[i]);
    }
    printf("],");
    cmd_json_version(stdout);
    printf("}\n");
}

int cmd_report(int argc, char **argv)
{
    report *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "manta report: out of memory\n");
        return 1;
    }
    report_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 1) {
        free(r);
        return rc;
    }
    rc = 1;
    r->run = o.run;
    if (o.out)
        snprintf(r->out, sizeof r->out, "%s", o.out);
    else
        snprintf(r->out, sizeof r->out, "%s/report", o.run);
    const rep_input_opts io = {
        .run = o.run, .metrics = o.metrics, .search = o.search, .latency = o.latency};
    manta_err err;
    manta_err_clear(&err);
    manta_status st = rep_inputs_load(&io, &r->in, &err);
    const manta_run_history *t = &r->in.train;
    if (r->in.have_metrics && t->malformed > 0)
        fprintf(stderr,
                "manta report: warning: %s: %ld of %ld lines are not JSON objects and were "
                "skipped (the first: line %ld)\n",
                r->in.metrics_path, t->malformed, t->lines, t->first_malformed);
    if (st == MANTA_OK)
        st = manta_file_mkdir_p(r->out, &err);
    if (st == MANTA_OK)
        st = report_figures(r, &err);
    if (st == MANTA_OK)
        st = report_html(r, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta report: %s\n", err.msg);
        goto out;
    }
    if (o.json)
        print_json(r);
    else if (!o.quiet) {
        for (int i = 0; i < r->in.n_skipped; i++)
            printf("skipped %s\n", r->in.skipped[i]);
        for (int i = 0; i < r->n_plots; i++)
            printf("wrote %s/%s.png and .svg: %s\n", r->out, r->plots[i].stem, r->plots[i].title);
        printf("wrote %s/index.html\n", r->out);
    }
    rc = 0;
out:
    rep_inputs_free(&r->in);
    free(r);
    /* cairo's font caches, so that leak checkers see no leak; no cairo object is alive here */
    plot_release_static();
    return rc;
}
