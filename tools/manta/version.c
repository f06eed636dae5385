/* manta version: the version and git revision of the program, and the
 * provenance members that every --json output carries. */
#include <clblast_c.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "version.h" /* generated: MANTA_VERSION, MANTA_GIT_REVISION */

/* The OpenCL API version the headers were set to (CL_TARGET_OPENCL_VERSION 120: "1.2"). */
#define OPENCL_TARGET_MAJOR (CL_TARGET_OPENCL_VERSION / 100)
#define OPENCL_TARGET_MINOR (CL_TARGET_OPENCL_VERSION / 10 % 10)

void cmd_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 32)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* Appends @p s at *at in buf (@p size bytes), escaped as inside a JSON string
 * when @p esc; counts every byte, stores those that fit before the final NUL. */
static void append(char *buf, size_t size, size_t *at, const char *s, bool esc)
{
    for (; *s; s++) {
        char piece[8] = {*s, '\0'};
        if (esc && (*s == '"' || *s == '\\'))
            snprintf(piece, sizeof piece, "\\%c", *s);
        else if (esc && (unsigned char)*s < 32)
            snprintf(piece, sizeof piece, "\\u%04x", (unsigned char)*s);
        for (const char *p = piece; *p; p++, (*at)++)
            if (*at + 1 < size)
                buf[*at] = *p;
    }
}

/* Appends the member ,"key":"value" (without the comma when first). */
static void member(char *buf, size_t size, size_t *at, const char *key, const char *value)
{
    append(buf, size, at, *at ? ",\"" : "\"", false);
    append(buf, size, at, key, false);
    append(buf, size, at, "\":\"", false);
    append(buf, size, at, value, true);
    append(buf, size, at, "\"", false);
}

size_t cmd_json_provenance_str(char *buf, size_t size, const mcl_dev *d)
{
    size_t at = 0;
    member(buf, size, &at, "version", MANTA_VERSION);
    member(buf, size, &at, "git", MANTA_GIT_REVISION);
    if (d) {
        const mcl_device_info *di = mcl_info(d);
        member(buf, size, &at, "device", di->name);
        member(buf, size, &at, "driver", di->driver_version);
    }
    if (size > 0)
        buf[at < size ? at : size - 1] = '\0';
    return at;
}

void cmd_json_provenance(FILE *f, const mcl_dev *d)
{
    /* mcl_device_info bounds the name (256) and driver version (128); a
     * character takes 6 bytes at most escaped */
    char buf[4096];
    cmd_json_provenance_str(buf, sizeof buf, d);
    fputs(buf, f);
}

void cmd_json_version(FILE *f)
{
    cmd_json_provenance(f, NULL);
}

int cmd_version(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: manta version [--json]   (also: manta --version)\n\n"
                   "Prints manta's version, the git revision it was built from ('-dirty':\n"
                   "with uncommitted changes; 'unknown': not built from a git checkout), the\n"
                   "OpenCL version its headers target and the CLBlast it was built against.\n"
                   "Every --json output of manta carries the same version and git members.\n");
            return 0;
        } else {
            fprintf(stderr, "manta version: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    if (json) {
        printf("{");
        cmd_json_version(stdout);
        printf(",\"opencl_target\":\"%d.%d\",\"clblast\":\"%d.%d.%d\"}\n", OPENCL_TARGET_MAJOR,
               OPENCL_TARGET_MINOR, CLBLAST_VERSION_MAJOR, CLBLAST_VERSION_MINOR,
               CLBLAST_VERSION_PATCH);
        return 0;
    }
    printf("manta %s (git %s)\n", MANTA_VERSION, MANTA_GIT_REVISION);
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
