/* manta: the host program (devices, train, bench). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "core/clock.h"
#include "core/env.h"

static const struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} cmds[] = {
    {"devices", cmd_devices, "list OpenCL platforms and devices"},
    {"train", cmd_train, "train an OFA supernet with progressive shrinking"},
    {"eval", cmd_eval, "top-1 of a sub-network of a trained supernet, or of a .tflite model"},
    {"export", cmd_export, "a sub-network as a TensorFlow Lite file (and C array)"},
    {"train-tiny", cmd_train_tiny, "train the small fixed CNN (a quick runtime check)"},
    {"arch", cmd_arch, "sub-networks of a search space: sample, max, min, describe"},
    {"profile", cmd_profile, "latency of sub-networks on an OpenCL device (CPU: manta-profile)"},
    {"acc-dataset", cmd_acc_dataset, "top-1 of sampled sub-networks: the accuracy data set"},
    {"acc-fit", cmd_acc_fit, "train the accuracy predictor on an accuracy data set"},
    {"search", cmd_search, "evolutionary search under latency / arena / flash budgets"},
    {"image", cmd_image, "one image of a data set as a JPEG (for manta-infer)"},
    {"stereo-data", cmd_stereo_data, "procedural stereo pairs written as a KITTI-layout folder"},
    {"bench", cmd_bench, "benchmarks: 'manta bench ops|train|memory|allreduce'"},
    {"kernels", cmd_kernels, "the embedded OpenCL programs: list, dump, build on a device"},
    {"tune", cmd_tune, "tune CLBlast's GEMM for a device (applied on every later run)"},
    {"launch", cmd_launch,
     "start N local ranks of a distributed command (like torchrun --standalone)"},
    {"rendezvous", cmd_rendezvous, "the rendezvous service of elastic training (--elastic)"},
    {"ckpt-diff", cmd_ckpt_diff, "largest differences between the tensors of two checkpoints"},
    {"events", cmd_events, "scalars of TensorBoard event files, every record's CRC checked"},
#ifndef MANTA_NO_REPORT
    {"report", cmd_report,
     "plots of a run (PNG, SVG) and one HTML page: training, search, latency"},
#endif
    {"monitor", cmd_monitor, "live page, JSON API and Prometheus metrics of training runs"},
    {"version", cmd_version, "version, git revision, OpenCL headers' target, CLBlast (--version)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: manta COMMAND [OPTIONS]\n"
               "       manta --version | --help | --help-env\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-12s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n'manta COMMAND --help' describes a command's options;\n"
               "'manta --help-env' lists the MANTA_* environment variables.\n");
}

/* @p text after @p indent spaces, words wrapped before column 100. */
static void print_wrapped(FILE *f, int indent, const char *text)
{
    int col = fprintf(f, "%*s", indent, "");
    while (*text) {
        size_t n = strcspn(text, " ");
        if (col > indent && col + 1 + (int)n > 100)
            col = fprintf(f, "\n%*s", indent, "") - 1;
        else if (col > indent)
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", (int)n, text);
        text += n;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

/* manta --help-env: the table of core/env.h. */
static void usage_env(FILE *f)
{
    fprintf(f, "The MANTA_* environment variables manta reads (runtime/core/env.c):\n");
    const char *group = "";
    for (int i = 0; i < MANTA_ENV_COUNT; i++) {
        const manta_env_desc *d = manta_env_describe((manta_env_var)i);
        if (strcmp(d->group, group) != 0) {
            group = d->group;
            fprintf(f, "\n%s:\n", group);
        }
        char line[512];
        fprintf(f, "  %s\n", d->name);
        snprintf(line, sizeof line, "%s.", d->meaning);
        print_wrapped(f, 6, line);
        snprintf(line, sizeof line, "Unset: %s.", d->unset);
        print_wrapped(f, 6, line);
    }
    fprintf(f,
            "\nDistributed jobs also read torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,\n"
            "MASTER_PORT, TORCHELASTIC_RUN_ID and SLURM's variables (docs/distributed.md).\n");
}

double cmd_now(void) { return manta_now(); }

int cmd_load_arch(const char *cmd, const ofa_space *sp, const char *arg, ofa_arch *a)
{
    if (!strcmp(arg, "max") || !strcmp(arg, "min")) {
        (arg[1] == 'a' ? ofa_arch_max : ofa_arch_min)(sp, 0, a);
        return 1;
    }
    size_t n = 0;
    errno = 0;
    char *buf = cmd_read_aligned(arg, &n);
    if (!buf) {
        fprintf(stderr,
                "manta %s: --arch %s: cannot read: %s (give max, min or a file in OFA's "
                "encoding)\n",
                cmd, arg, errno ? strerror(errno) : "not a regular file");
        return 0;
    }
    manta_err err;
    manta_err_clear(&err);
    manta_status st = ofa_arch_parse(sp, buf, a, &err);
    free(buf);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta %s: %s: %s\n", cmd, arg, err.msg);
        return 0;
    }
    return 1;
}

void *cmd_read_aligned(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    long n = -1;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        if (f)
            fclose(f);
        return NULL;
    }
    char *buf = aligned_alloc(16, ((size_t)n + 16) / 16 * 16);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0'; /* text files can be parsed in place */
    *size = (size_t)n;
    return buf;
}

void cmd_error(const char *what, manta_status st, const manta_err *err)
{
    fprintf(stderr, "manta %s: %s\n", what, manta_err_msg(err, st));
}

mcl_dev *cmd_open_device(const char *cmd, const char *spec)
{
    return cmd_open_device_with(cmd, spec, NULL);
}

mcl_dev *cmd_open_device_with(const char *cmd, const char *spec, const mcl_options *opt)
{
    mcl_device_list *list = malloc(sizeof *list);
    if (!list) {
        fprintf(stderr, "manta %s: out of memory\n", cmd);
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
        st = mcl_open(&list->dev[idx], opt, &d, &err);
    if (st != MANTA_OK)
        cmd_error(cmd, st, &err);
    free(list);
    return d;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--help-env") == 0) {
        usage_env(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(argc - 1, argv + 1);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0)
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "manta: unknown command '%s' (see 'manta --help')\n", argv[1]);
    return 2;
}
