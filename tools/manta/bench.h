/* manta bench: what bench.c (ops, and the dispatch) and bench_train.c share. */
#ifndef MANTA_TOOLS_BENCH_H
#define MANTA_TOOLS_BENCH_H

#include <stdbool.h>
#include <stdio.h>

#include "cl/cl.h"

/** Room for the launches of one op call or one training step. */
#define BENCH_LOG_CAP 4096

/** `manta bench train` (bench_train.c); argv[0] is "train". */
int bench_train(int argc, char **argv);
/** `manta bench train --space stereo-...` (bench_train_stereo.c): @p twin_dir (may be NULL)
 *  receives space.json and arch.json for tools/bench/torch_stereo.py --train-speed. */
int bench_train_stereo(const char *space_name, const char *arch_arg, int batch, int steps,
                       const char *device, const char *twin_dir, bool json);
/** `manta bench memory` (bench_train_stereo.c): a stereo training step's planned device
 *  memory per batch, and --batch auto's choice; argv[0] is "memory". */
int bench_memory(int argc, char **argv);

/** One launch record as a JSON object: kernel, global and local sizes per
 *  dimension, work-items, values written (0: not stated); CLBlast's GEMMs
 *  with their m, n, k. */
void bench_print_launch(FILE *f, const mcl_launch_record *r);

#endif
