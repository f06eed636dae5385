/* manta version: the version and git revision of the program, and the
 * provenance members that every --json output carries. */
#include <clblast_c.h>
#include <stdbool.h>
#include <stdio.h>

#include "cmd.h"
#include "common/json.h"
#include "common/opts.h"
#include "common/provenance.h"

/* The OpenCL API version the headers were set to (CL_TARGET_OPENCL_VERSION 120: "1.2"). */
#define OPENCL_TARGET_MAJOR (CL_TARGET_OPENCL_VERSION / 100)
#define OPENCL_TARGET_MINOR (CL_TARGET_OPENCL_VERSION / 10 % 10)

void cmd_json_str(FILE *f, const char *s) { json_put_str(f, s); }

/* The provenance members, written to @p f. */
static void provenance(FILE *f, const mcl_dev *d)
{
    tool_json_version(f);
    if (d) {
        const mcl_device_info *di = mcl_info(d);
        fputs(",\"device\":", f);
        json_put_str(f, di->name);
        fputs(",\"driver\":", f);
        json_put_str(f, di->driver_version);
    }
}

size_t cmd_json_provenance_str(char *buf, size_t size, const mcl_dev *d)
{
    /* mcl_device_info bounds the name (256) and driver version (128); a
     * character takes 6 bytes at most escaped */
    char text[4096] = "";
    long len = 0;
    FILE *f = fmemopen(text, sizeof text, "w");
    if (f) {
        provenance(f, d);
        len = ftell(f);
        fclose(f);
    }
    if (size > 0)
        snprintf(buf, size, "%s", text);
    return len > 0 ? (size_t)len : 0;
}

void cmd_json_provenance(FILE *f, const mcl_dev *d) { provenance(f, d); }

void cmd_json_version(FILE *f) { cmd_json_provenance(f, NULL); }

int cmd_version(int argc, char **argv)
{
    bool json = false;
    const opt_def defs[] = {
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta version",
        "[--json]   (also: manta --version)",
        "Prints manta's version, the git revision it was built from ('-dirty':\n"
        "with uncommitted changes; 'unknown': not built from a git checkout), the\n"
        "OpenCL version its headers target and the CLBlast it was built against.\n"
        "Every --json output of manta carries the same version and git members.\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    if (json) {
        printf("{");
        cmd_json_version(stdout);
        printf(",\"opencl_target\":\"%d.%d\",\"clblast\":\"%d.%d.%d\"}\n", OPENCL_TARGET_MAJOR,
               OPENCL_TARGET_MINOR, CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR,
               CLBLAST_VERSION_PATCH);
        return 0;
    }
    tool_print_version(stdout, "manta");
    printf("OpenCL headers target %d.%d, CLBlast %d.%d.%d", OPENCL_TARGET_MAJOR,
           OPENCL_TARGET_MINOR, CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR,
           CLBLAST_VERSION_PATCH);
#if defined(__clang__)
    printf(", built with %s", __VERSION__);
#elif defined(__GNUC__)
    printf(", built with gcc %s", __VERSION__);
#endif
    printf("\n");
    return 0;
}
