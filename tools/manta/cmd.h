/* Sub-commands of the `manta` program. Each takes the arguments after its
 * name (argv[0] is the sub-command) and returns the process exit status. */
#ifndef MANTA_TOOLS_CMD_H
#define MANTA_TOOLS_CMD_H

#include "cl/cl.h"

int cmd_devices(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_arch(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/** Enumerate and open the device chosen by @p spec (NULL: MANTA_DEVICE, then 0).
 *  Prints a one-line error naming the cause and returns NULL on failure. */
mcl_dev *cmd_open_device(const char *spec);

/** Print "manta: <msg>" to stderr for a failed call. */
void cmd_error(const char *what, manta_status st, const manta_err *err);

#endif
