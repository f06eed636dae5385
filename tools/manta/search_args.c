/* manta search's options: the option table, its --help and the checks of the options
 * together (search_cmd.h); the command is search.c. */
#include <stdio.h>
#include <string.h>

#include "common/opts.h"
#include "common/outpath.h"
#include "search_cmd.h"

/* --rerank-seeds U|all: 'all', or U read by a table of this one option (the one number
 * parser). False after printing why not. */
static bool parse_rerank_seeds(search_opts *o)
{
    o->all_seeds = !strcmp(o->rerank_seeds, "all");
    if (o->all_seeds)
        return true;
    const opt_def defs[] = {
        {.name = "rerank-seeds", .kind = OPT_LONG, .dest = &o->seeds_u, .lo = 0, .hi = 1000},
        {.name = NULL},
    };
    const opt_cmd cmd = {"manta search", NULL, NULL, defs, 0, 0};
    char name[] = "manta search", opt[] = "--rerank-seeds";
    char *argv[] = {name, opt, (char *)o->rerank_seeds, NULL};
    int first;
    return opt_parse(&cmd, 3, argv, &first) == OPT_OK;
}

/* The options into @p o: 1 to run, else the exit status (0 after --help, 2). */
int search_parse_args(int argc, char **argv, search_opts *o)
{
    *o = (search_opts){.out = "runs/search",
                       .rerank_seeds = "3",
                       .spread = 1,
                       .rerank_images = 10000,
                       .recal = 2000,
                       .rerank_pairs = 200,
                       .recal_pairs = 200};
    evo_config_default(&o->c);
    long seed = 1; /* every command's seed defaults to 1 */
    bool pop_seen = false;
    /* the options that only --rerank uses: given without it, refused (with --rerank 0, as
     * DEMO_RERANK=0 gives, they are moot) */
    enum {
        RR_SPREAD,
        RR_ANY_RES,
        RR_SEEDS,
        RR_IMAGES,
        RR_RECAL,
        RR_PAIRS,
        RR_RECAL_PAIRS,
        RR_DEVICE,
        RR_N
    };
    bool rr_seen[RR_N] = {false}, rerank_seen = false;
    const opt_def defs[] = {
        {.name = "ckpt",
         .kind = OPT_STRING,
         .dest = &o->ckpt,
         .metavar = "FILE",
         .help = "the trained supernet (its space and data; classification or stereo)"},
        {.name = "space",
         .kind = OPT_STRING,
         .dest = &o->space,
         .metavar = "S",
         .help = "or a stereo space (stereo-cpu, a spec) searched without a checkpoint"},
        {.name = "lut",
         .kind = OPT_STRING,
         .dest = &o->lut,
         .metavar = "LUT.json",
         .help = "the board's latency table (manta-profile)"},
        {.name = "acc-model",
         .kind = OPT_STRING,
         .dest = &o->acc,
         .metavar = "FILE",
         .help = "the accuracy predictor (MODEL.accp of manta acc-fit)"},
        {.name = "latency-ms",
         .kind = OPT_DOUBLE,
         .dest = &o->latency,
         .lo = 1e-9,
         .hi = 1e18,
         .metavar = "X",
         .help = "latency budget: predicted latency at most X ms"},
        {.name = "max-arena-kb",
         .kind = OPT_DOUBLE,
         .dest = &o->arena_kb,
         .lo = 1e-9,
         .hi = 1e18,
         .metavar = "A",
         .help = "the engine's arena at most A KiB"},
        {.name = "max-flash-kb",
         .kind = OPT_DOUBLE,
         .dest = &o->flash_kb,
         .lo = 1e-9,
         .hi = 1e18,
         .metavar = "F",
         .help = "the .tflite file at most F KiB"},
        {.name = "max-macs",
         .kind = OPT_DOUBLE,
         .dest = &o->macs,
         .lo = 1e-9,
         .hi = 1e18,
         .metavar = "M",
         .help = "multiply-accumulates at most M"},
        {.name = "int8",
         .kind = OPT_FLAG,
         .dest = &o->int8,
         .help = "for the int8 export: an int8 table (manta-profile --int8), int8 arena and file"},
        {.name = "board",
         .kind = OPT_STRING,
         .dest = &o->board,
         .metavar = "NAME",
         .help = "refuse a table measured on another device"},
        {.name = "out",
         .kind = OPT_STRING,
         .dest = &o->out,
         .metavar = "DIR",
         .help = "where the results go (default runs/search)"},
        {.name = "seed",
         .kind = OPT_LONG,
         .dest = &seed,
         .lo = 0,
         .hi = 1 << 24,
         .metavar = "N",
         .help = "seed of the search (default 1)"},
        {.name = "population",
         .kind = OPT_INT,
         .dest = &o->c.population,
         .lo = 1,
         .hi = 1 << 24,
         .metavar = "N",
         .help = "population size (default 100)",
         .seen = &pop_seen},
        {.name = "generations",
         .kind = OPT_INT,
         .dest = &o->c.generations,
         .lo = 1,
         .hi = 1 << 24,
         .metavar = "N",
         .help = "generations (default 500)"},
        {.name = "parents",
         .kind = OPT_DOUBLE,
         .dest = &o->c.parent_ratio,
         .lo = 0,
         .hi = 1,
         .metavar = "F",
         .help = "share of the population kept as parents (default 0.25)"},
        {.name = "mutate-prob",
         .kind = OPT_DOUBLE,
         .dest = &o->c.mutate_prob,
         .lo = 0,
         .hi = 1,
         .metavar = "F",
         .help = "mutation probability per gene (default 0.1)"},
        {.name = "no-uniform-seeds",
         .kind = OPT_FLAG,
         .dest = &o->no_uniform,
         .help = "first population random only, as OFA"},
        {.name = "rerank",
         .kind = OPT_LONG,
         .dest = &o->rerank,
         .lo = 0,
         .hi = 1000,
         .metavar = "K",
         .help = "measure the K fittest on the validation split (default 0)",
         .seen = &rerank_seen},
        {.name = "rerank-spread",
         .kind = OPT_LONG,
         .dest = &o->spread,
         .lo = 1,
         .hi = 1000,
         .metavar = "G",
         .help = "with --rerank: at least G genes apart (default 1)",
         .seen = &rr_seen[RR_SPREAD]},
        {.name = "rerank-any-res",
         .kind = OPT_FLAG,
         .dest = &o->any_res,
         .help = "with --rerank: from all resolutions alike",
         .seen = &rr_seen[RR_ANY_RES]},
        {.name = "rerank-seeds",
         .kind = OPT_STRING,
         .dest = &o->rerank_seeds,
         .metavar = "U|all",
         .help = "with --rerank: uniform sub-networks measured too (default 3)",
         .seen = &rr_seen[RR_SEEDS]},
        {.name = "rerank-images",
         .kind = OPT_LONG,
         .dest = &o->rerank_images,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "with --rerank: validation images (default 10000)",
         .seen = &rr_seen[RR_IMAGES]},
        {.name = "recal-images",
         .kind = OPT_LONG,
         .dest = &o->recal,
         .lo = 1,
         .hi = 1 << 30,
         .metavar = "N",
         .help = "with --rerank: images for BN re-calibration (default 2000)",
         .seen = &rr_seen[RR_RECAL]},
        {.name = "rerank-pairs",
         .kind = OPT_LONG,
         .dest = &o->rerank_pairs,
         .lo = 1,
         .hi = 1e7,
         .metavar = "N",
         .help = "with --rerank, stereo: held-out pairs (default 200)",
         .seen = &rr_seen[RR_PAIRS]},
        {.name = "recal-pairs",
         .kind = OPT_LONG,
         .dest = &o->recal_pairs,
         .lo = 0,
         .hi = 1e7,
         .metavar = "N",
         .help = "with --rerank, stereo: training pairs for BN re-calibration (default 200; 0: "
                 "none, the running statistics)",
         .seen = &rr_seen[RR_RECAL_PAIRS]},
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &o->device,
         .metavar = "SPEC",
         .help = "with --rerank: OpenCL device (default: MANTA_DEVICE, else 0)",
         .seen = &rr_seen[RR_DEVICE]},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &o->json,
         .help = "progress as JSON lines, then search.json"},
        {.name = "quiet", .kind = OPT_FLAG, .dest = &o->quiet, .help = "no progress"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta search",
        "--ckpt FILE|--space S --lut LUT.json --acc-model MODEL.accp --latency-ms X\n"
        "                    [--max-arena-kb A] [--max-flash-kb F] [--max-macs M]\n"
        "                    [--int8] [--board NAME] [--out DIR] [--seed N]\n"
        "                    [--population N] [--generations N] [--parents F]\n"
        "                    [--mutate-prob F] [--no-uniform-seeds]\n"
        "                    [--rerank K [--rerank-spread G] [--rerank-any-res]\n"
        "                    [--rerank-seeds U|all] [--rerank-images N]\n"
        "                    [--recal-images N] [--rerank-pairs N] [--recal-pairs N]\n"
        "                    [--device SPEC]] [--json] [--quiet]",
        "OFA's evolutionary search (population 100, top 25% as parents, half the children\n"
        "by mutation with probability 0.1 per gene, half by crossover, 500 generations)\n"
        "for the sub-network of the checkpoint's space with the highest predicted top-1\n"
        "whose predicted latency (the table's sum of layers plus its overhead) is at most\n"
        "X ms. --max-arena-kb and --max-flash-kb bound the engine's arena and the .tflite\n"
        "size, computed exactly for each candidate by writing and planning its model;\n"
        "--max-macs bounds multiply-accumulates. The same --seed gives the same result.\n"
        "The first population starts with the uniform sub-networks (one kernel, expand\n"
        "ratio and depth everywhere, at each resolution) that meet the budget, random ones\n"
        "fill the rest, so the search starts from the best uniform network the predictor\n"
        "sees; --no-uniform-seeds starts from random ones only, as OFA.\n"
        "--board NAME refuses a table measured on another device.\n"
        "--int8 searches for the int8 export (manta export --int8): the table is an int8\n"
        "one (manta-profile --int8), arena and file size are those of the int8 file; the\n"
        "predictor's top-1 stays the float one (classification only).\n\n"
        "--rerank K measures K of the fittest sub-networks the search found on the\n"
        "validation split through the supernet (batch norm re-calibrated on\n"
        "--recal-images training images, default 2000, then the first --rerank-images\n"
        "validation images, default 10000; as manta acc-dataset) and chooses the one of\n"
        "highest measured top-1 (ties: the higher predicted): the predictor's errors of a\n"
        "few tenths of a point are as large as the differences among the best\n"
        "candidates. The K are the fittest, then each next fittest that differs in at\n"
        "least G genes (resolution, depths, kernels, expand ratios; default 1) from every\n"
        "one taken, taken from each input resolution in turn (the predictor errs most\n"
        "between resolutions), or from all alike with --rerank-any-res. The U (default\n"
        "3) uniform sub-networks within budget that the predictor rates highest are\n"
        "measured too when not among the K, so the choice is never below the best of\n"
        "them on validation (0: none; all: every uniform one within budget, so never\n"
        "below the best uniform sub-network on validation, at the cost of measuring\n"
        "each (81 for cpu-default; no more than the population); none with\n"
        "--no-uniform-seeds). Needs an OpenCL device (--device, as manta eval).\n\n"
        "Writes DIR/arch.json (the best sub-network, OFA's encoding; for manta export),\n"
        "DIR/front.csv and DIR/front.svg (the Pareto front of predicted top-1 against\n"
        "predicted latency) and DIR/search.json (settings and results, with each\n"
        "re-ranked candidate's figures); DIR defaults to runs/search.\n\n"
        "Stereo: a stereo checkpoint (or --space S, a stereo space, without --rerank)\n"
        "searches its space for the sub-network of lowest predicted EPE (the EPE\n"
        "predictor of manta acc-fit; the fitness is minus the EPE) under the stereo\n"
        "latency table of manta-profile --space S; the decoder widths are genes too,\n"
        "arena and flash are those of the exported stereo graph at the crop, and the\n"
        "uniform seeds have one width ratio in every decoder level as well. --rerank K\n"
        "scores the K fittest (and the U uniform ones) as manta eval --ckpt does: BN\n"
        "re-calibrated on --recal-pairs training pairs (default 200), then EPE on the\n"
        "run's first --rerank-pairs held-out pairs (default 200); the lowest measured\n"
        "EPE is chosen. arch.json then carries \"dw\"; search.json \"predicted_epe\"\n"
        "and \"heldout_epe\"; front.csv an epe column.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (!parse_rerank_seeds(o))
        return 2;
    if ((!o->ckpt && !o->space) || !o->lut || !o->acc || o->latency <= 0) {
        fprintf(stderr, "manta search: --ckpt FILE (or --space S), --lut LUT.json, --acc-model "
                        "MODEL.accp and --latency-ms X are required (see --help)\n");
        return 2;
    }
    if (o->ckpt && o->space) {
        fprintf(stderr, "manta search: --ckpt and --space both name the space; give one\n");
        return 2;
    }
    if (o->space && o->rerank > 0) {
        fprintf(stderr, "manta search: --rerank measures sub-networks of a trained supernet: "
                        "give --ckpt, not --space\n");
        return 2;
    }
    for (int i = 0; i < RR_N && !rerank_seen; i++)
        if (rr_seen[i]) {
            const opt_def *d = defs;
            while (d->seen != &rr_seen[i])
                d++;
            fprintf(stderr, "manta search: --%s is a setting of --rerank K, which is not given\n",
                    d->name);
            return 2;
        }
    if (!out_check_dir("manta search", "out", o->out))
        return 2;
    o->images_seen = rr_seen[RR_IMAGES] || rr_seen[RR_RECAL];
    o->pairs_seen = rr_seen[RR_PAIRS] || rr_seen[RR_RECAL_PAIRS];
    evo_config *c = &o->c;
    c->seed = (uint64_t)seed;
    if (pop_seen)
        c->init_tries = 100 * c->population;
    c->top_by_res = !o->any_res;
    c->keep_top = (int)o->rerank;
    c->top_min_genes = (int)o->spread;
    c->budget[EVO_LATENCY] = o->latency;
    c->budget[EVO_ARENA] = o->arena_kb * 1024;
    c->budget[EVO_FLASH] = o->flash_kb * 1024;
    c->budget[EVO_MACS] = o->macs;
    return 1;
}
