/* manta search's options (search_args.c: the option table, its --help and its checks;
 * search.c: the command). */
#ifndef MANTA_TOOLS_SEARCH_CMD_H
#define MANTA_TOOLS_SEARCH_CMD_H

#include <stdbool.h>

#include "search/evolution.h"

typedef struct search_opts {
    const char *ckpt, *space, *lut, *acc, *out, *board, *device, *rerank_seeds;
    double latency, arena_kb, flash_kb, macs;
    long rerank, spread, rerank_images, recal, seeds_u;
    long rerank_pairs, recal_pairs; /* a stereo search's re-rank */
    bool all_seeds, json, quiet, no_uniform, any_res;
    bool int8;                    /* --int8: an int8 table, int8 arena and file sizes */
    bool images_seen, pairs_seen; /* --rerank-images / --recal-images; --rerank-pairs /
                                     --recal-pairs (a stereo search's) */
    evo_config c;
} search_opts;

/** manta search's options from argv into @p o, checked (the output folder included); the
 *  evolution's settings and budgets into o->c. @return 1 to run, else the exit status (0
 *  after --help, 2 after printing why not). */
int search_parse_args(int argc, char **argv, search_opts *o);

#endif
