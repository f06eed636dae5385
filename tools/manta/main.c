/* manta: the host program (devices, train, bench). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    {"devices", cmd_devices, "list OpenCL platforms and devices"},
    {"train", cmd_train, "train the small fixed CNN on Fashion-MNIST"},
    {"arch", cmd_arch, "sub-networks of a search space: sample, max, min, describe"},
    {"bench", cmd_bench, "benchmarks: 'manta bench ops'"},
    {"tune", cmd_tune, "tune CLBlast's GEMM for a device (applied on every later run)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: manta COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n'manta COMMAND --help' describes a command's options.\n"
               "Environment: MANTA_DEVICE (device index, type or name), MANTA_CACHE_DIR "
               "(program-binary and tuning cache), MANTA_NO_TUNING=1 (ignore the tuning file).\n");
}

void cmd_error(const char *what, manta_status st, const manta_err *err)
{
    fprintf(stderr, "manta: %s: %s\n", what, manta_err_msg(err, st));
}

mcl_dev *cmd_open_device(const char *spec)
{
    mcl_device_list *list = malloc(sizeof *list);
    if (!list) {
        fprintf(stderr, "manta: out of memory\n");
        return NULL;
    }
    manta_err err;
    manta_err_clear(&err);
    size_t idx = 0;
    mcl_dev *d = NULL;
    manta_status st = mcl_enumerate(list, &err);
    if (st == MANTA_OK)
        st = mcl_select(list, spec, &idx, &err);
    if (st == MANTA_OK)
        st = mcl_open(&list->dev[idx], NULL, &d, &err);
    if (st != MANTA_OK)
        cmd_error("device", st, &err);
    free(list);
    return d;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "manta: unknown command '%s' (see 'manta --help')\n", argv[1]);
    return 2;
}
