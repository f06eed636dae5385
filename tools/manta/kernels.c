/* manta kernels list|dump|build: the embedded OpenCL programs of cl_kernels/,
 * as the runtime builds them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cl/sources.h"
#include "cmd.h"
#include "common/opts.h"

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    size_t n = strlen(text);
    int ok = f && fwrite(text, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "manta kernels: %s: cannot write: %s\n", path, strerror(errno));
    return ok;
}

static int dump(const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "manta kernels: %s: cannot create: %s\n", dir, strerror(errno));
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/options", dir);
    if (!write_file(path, MCL_BUILD_OPTIONS "\n"))
        return 1;
    for (size_t i = 0; i < mcl_sources_count; i++) {
        const char *name = mcl_sources[i].name;
        if (strcmp(name, "common") == 0)
            continue;
        char *text;
        manta_err err;
        manta_err_clear(&err);
        manta_status st = mcl_program_source(name, &text, &err);
        if (st != MANTA_OK) {
            cmd_error("kernels", st, &err);
            return 1;
        }
        snprintf(path, sizeof path, "%s/%s.cl", dir, name);
        int ok = write_file(path, text);
        free(text);
        if (!ok)
            return 1;
    }
    return 0;
}

static int build_all(const char *device)
{
    mcl_options opt = {.no_cache = true, .no_tuning = true};
    mcl_dev *d = cmd_open_device_with("kernels", device, &opt);
    if (!d)
        return 1;
    manta_status st;
    const mcl_device_info *di = mcl_info(d);
    printf("device: %s (%s, driver %s)\n", di->name, di->c_version, di->driver_version);
    int failed = 0;
    for (size_t i = 0; i < mcl_sources_count; i++) {
        const char *name = mcl_sources[i].name;
        if (strcmp(name, "common") == 0)
            continue;
        char *text = NULL, *log = NULL;
        cl_program prog = NULL;
        st = mcl_program_source(name, &text, mcl_err(d));
        if (st == MANTA_OK)
            st = mcl_build(d, name, text, MCL_BUILD_OPTIONS, &prog, &log);
        if (st == MANTA_OK) {
            printf("  ok      %s\n", name);
            clReleaseProgram(prog);
        } else {
            printf("  FAILED  %s: %s\n", name, manta_err_msg(mcl_err(d), st));
            failed++;
        }
        free(text);
        free(log);
    }
    printf("%d of %zu programs failed to build\n", failed, mcl_sources_count - 1);
    mcl_close(d);
    return failed ? 1 : 0;
}

int cmd_kernels(int argc, char **argv)
{
    const char *device = NULL;
    const opt_def defs[] = {
        {.name = "device",
         .kind = OPT_STRING,
         .dest = &device,
         .metavar = "SPEC",
         .help = "with build: the OpenCL device (default: MANTA_DEVICE, else 0)"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta kernels",
        "list | dump DIR | build [--device SPEC]",
        "The OpenCL programs embedded from cl_kernels/, each the shared preamble\n"
        "(common.cl) followed by one file, built with the options '" MCL_BUILD_OPTIONS "'.\n\n"
        "  list    the programs and their build options\n"
        "  dump    write DIR/PROGRAM.cl (the source exactly as the runtime builds it)\n"
        "          and DIR/options (the build options), for offline compilers\n"
        "  build   build every program from source on a device (no program cache) and\n"
        "          print each one's result: a portability check of a new device; exit\n"
        "          status 1 when any fails (its build log's first error shown)\n",
        defs,
        1,
        2};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    const char *sub = argv[first], *arg = argc - first > 1 ? argv[first + 1] : NULL;
    if (!strcmp(sub, "list") && !arg) {
        for (size_t i = 0; i < mcl_sources_count; i++)
            if (strcmp(mcl_sources[i].name, "common") != 0)
                printf("%-12s %s\n", mcl_sources[i].name, MCL_BUILD_OPTIONS);
        return 0;
    }
    if (!strcmp(sub, "dump") && arg)
        return dump(arg);
    if (!strcmp(sub, "build") && !arg)
        return build_all(device);
    fprintf(stderr, "manta kernels: bad arguments (usage: manta kernels list | dump DIR | "
                    "build [--device SPEC])\n");
    return 2;
}
