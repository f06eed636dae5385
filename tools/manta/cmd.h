/* Sub-commands of the `manta` program. Each takes the arguments after its
 * name (argv[0] is the sub-command) and returns the process exit status. */
#ifndef MANTA_TOOLS_CMD_H
#define MANTA_TOOLS_CMD_H

#include "cl/cl.h"
#include "ofa/space.h"

int cmd_devices(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_train_tiny(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_arch(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_acc_dataset(int argc, char **argv);
int cmd_acc_fit(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_image(int argc, char **argv);
/** `manta bench allreduce` (tools/manta/dist.c); argv[1] is "allreduce". */
int cmd_bench_allreduce(int argc, char **argv);
int cmd_tune(int argc, char **argv);
/** `manta kernels` (tools/manta/kernels.c): the embedded OpenCL programs. */
int cmd_kernels(int argc, char **argv);
/** `manta ckpt-diff` (tools/manta/ckptdiff.c): float32 sections of two checkpoints compared. */
int cmd_ckpt_diff(int argc, char **argv);
/** `manta launch` (tools/manta/launch.c): start N local ranks of a distributed command. */
int cmd_launch(int argc, char **argv);

/** Enumerate and open the device chosen by @p spec (NULL: MANTA_DEVICE, then 0).
 *  Prints a one-line error naming the cause and returns NULL on failure. */
mcl_dev *cmd_open_device(const char *spec);

/** Parse @p v as an integer in [lo, hi] for option @p opt of command @p cmd;
 *  prints a one-line error and returns 0 when it is not one. */
int cmd_parse_long(const char *cmd, const char *opt, const char *v, long lo, long hi, long *out);

/** Monotonic clock in seconds. */
double cmd_now(void);

/** A sub-network: "max", "min" or a file in OFA's encoding; prints a
 *  one-line error and returns 0 when it cannot be read or is outside @p sp. */
int cmd_load_arch(const char *cmd, const ofa_space *sp, const char *arg, ofa_arch *a);

/** The whole file in a 16-byte-aligned buffer (free()), or NULL. */
void *cmd_read_aligned(const char *path, size_t *size);

/** Print "manta: <msg>" to stderr for a failed call. */
void cmd_error(const char *what, manta_status st, const manta_err *err);

#endif
