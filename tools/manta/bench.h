/* manta bench: what bench.c (ops, and the dispatch) and bench_train.c share. */
#ifndef MANTA_TOOLS_BENCH_H
#define MANTA_TOOLS_BENCH_H

#include <stdio.h>

#include "cl/cl.h"

/** Room for the launches of one op call or one training step. */
#define BENCH_LOG_CAP 4096

/** `manta bench train` (bench_train.c); argv[0] is "train". */
int bench_train(int argc, char **argv);

/** One launch record as a JSON object: kernel, global and local sizes per
 *  dimension, work-items, values written (0: not stated); CLBlast's GEMMs
 *  with their m, n, k. */
void bench_print_launch(FILE *f, const mcl_launch_record *r);

#endif
