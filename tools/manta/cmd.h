/* Sub-commands of the `manta` program. Each takes the arguments after its
 * name (argv[0] is the sub-command) and returns the process exit status. */
#ifndef MANTA_TOOLS_CMD_H
#define MANTA_TOOLS_CMD_H

#include <stdio.h>

#include "cl/cl.h"
#include "space/ofa_space.h"

int cmd_devices(int argc, char **argv);
int cmd_train(int argc, char **argv);
/** manta train on a stereo space (train_stereo.c); cmd_train() hands it the command. */
int cmd_train_stereo(int argc, char **argv);
int cmd_train_tiny(int argc, char **argv);
int cmd_eval(int argc, char **argv);
/** manta eval of a stereo checkpoint (eval_stereo.c); cmd_eval() hands it the command. */
int cmd_eval_stereo(int argc, char **argv);
/** manta eval of an exported stereo model (eval_stereo_model.c); cmd_eval() hands it the
 *  command. */
int cmd_eval_stereo_model(int argc, char **argv);
int cmd_export(int argc, char **argv);
/** manta export of a stereo checkpoint (export_stereo.c); cmd_export() hands it the command. */
int cmd_export_stereo(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_arch(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_acc_dataset(int argc, char **argv);
/** manta acc-dataset --ckpt STEREO.ckpt (accdata_stereo.c). */
int cmd_acc_dataset_stereo(int argc, char **argv);
int cmd_acc_fit(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_stereo_data(int argc, char **argv);
/** `manta bench allreduce` (tools/manta/dist.c); argv[1] is "allreduce". */
int cmd_bench_allreduce(int argc, char **argv);
int cmd_tune(int argc, char **argv);
/** `manta kernels` (tools/manta/kernels.c): the embedded OpenCL programs. */
int cmd_kernels(int argc, char **argv);
/** `manta ckpt-diff` (tools/manta/ckptdiff.c): float32 sections of two checkpoints compared. */
int cmd_ckpt_diff(int argc, char **argv);
/** `manta events` (tools/manta/events.c): scalars of TensorBoard event files, read back with
 *  every record's CRC checked. */
int cmd_events(int argc, char **argv);
/** `manta launch` (tools/manta/launch.c): start N local ranks of a distributed command. */
int cmd_launch(int argc, char **argv);
/** `manta rendezvous` (tools/manta/rendezvous.c): the elastic rendezvous service. */
int cmd_rendezvous(int argc, char **argv);
/** `manta report` (tools/manta/report.c): a run's plots as PNG and SVG (cairo) and an HTML
 *  page with them and the key figures. Not in board builds (MANTA_NO_REPORT). */
int cmd_report(int argc, char **argv);
/** `manta monitor` (tools/manta/monitor.c): the training monitor over run folders. */
int cmd_monitor(int argc, char **argv);
/** `manta version` and `manta --version` (tools/manta/version.c): version, git revision,
 *  the OpenCL headers' target and CLBlast's version. */
int cmd_version(int argc, char **argv);

/** Enumerate and open the device chosen by @p spec (NULL: MANTA_DEVICE, then 0) for command
 *  @p cmd ("eval"). Prints a one-line error ("manta <cmd>: ...") naming the cause and returns
 *  NULL on failure. */
mcl_dev *cmd_open_device(const char *cmd, const char *spec);
/** cmd_open_device() with options for mcl_open() (NULL: the defaults). */
mcl_dev *cmd_open_device_with(const char *cmd, const char *spec, const mcl_options *opt);

/** Monotonic clock in seconds. */
double cmd_now(void);

/** A sub-network: "max", "min" or a file in OFA's encoding; prints a
 *  one-line error and returns 0 when it cannot be read or is outside @p sp. */
int cmd_load_arch(const char *cmd, const ofa_space *sp, const char *arg, ofa_arch *a);

/** The whole file in a 16-byte-aligned buffer (free()), or NULL. */
void *cmd_read_aligned(const char *path, size_t *size);

/** Print "manta <what>: <msg>" to stderr for a failed call; @p what is the command
 *  ("export"), optionally followed by the step ("tune: timing SGEMM"). */
void cmd_error(const char *what, manta_status st, const manta_err *err);

/* ---- JSON output (tools/manta/version.c) ---- */

/** Write @p s to @p f as a JSON string: quoted, with '"', '\\' and control
 *  characters escaped. */
void cmd_json_str(FILE *f, const char *s);

/** Write the provenance members of a JSON object to @p f, without braces and
 *  without a comma before or after:
 *  `"version":"0.4.0","git":"<rev>","device":"<name>","driver":"<driver version>"`.
 *  version is the VERSION file's, git the revision the program was built from
 *  (`git describe --always --dirty`; "unknown" outside a git checkout); device and
 *  driver are mcl_info(@p d)'s name and driver version, left out when @p d is NULL.
 *  Every --json output of manta carries them; a JSON-lines output on its first or
 *  its summary line. For example:
 *  `printf("{\"top1\":%.5f,", top1); cmd_json_provenance(stdout, d); printf("}\n");` */
void cmd_json_provenance(FILE *f, const mcl_dev *d);

/** cmd_json_provenance() without a device: `"version":"0.4.0","git":"<rev>"`, for
 *  outputs made without OpenCL. */
void cmd_json_version(FILE *f);

/** The members of cmd_json_provenance() as a string in @p buf (@p size bytes with the
 *  terminating NUL, truncated when longer; 4096 always suffice); returns their
 *  length, as snprintf does. */
size_t cmd_json_provenance_str(char *buf, size_t size, const mcl_dev *d);

#endif
