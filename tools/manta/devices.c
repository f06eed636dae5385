/* manta devices [--json]: platforms and devices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"

int cmd_devices(int argc, char **argv)
{
    bool json = false;
    const opt_def defs[] = {
        {.name = "json", .kind = OPT_FLAG, .dest = &json, .help = "one JSON document"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta devices",
        "[--json]",
        "Lists every OpenCL platform and device with its index, type, compute units,\n"
        "memory, the limits manta's launches obey (local memory, work-group size and\n"
        "extents, largest buffer, preferred float vector width), the kernel variants it\n"
        "runs (cpu or gpu) and its OpenCL C version. Select one elsewhere with\n"
        "--device INDEX|TYPE|NAME or MANTA_DEVICE.\n\n"
        "Environment: MANTA_DEVICE_LIMITS=local=32k,wg=256,items=256x256x64,alloc=256m,\n"
        "mem=2g,vec=4 clamps every device's limits (any subset: a small GPU's profile on a\n"
        "large device); MANTA_KERNELS=cpu|gpu|auto picks the kernel variants (auto: cpu on\n"
        "CPU devices, gpu on every other).\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    mcl_device_list *list = malloc(sizeof *list);
    if (!list)
        return 1;
    manta_err err;
    manta_err_clear(&err);
    manta_status st = mcl_enumerate(list, &err);
    if (st != MANTA_OK) {
        cmd_error("devices", st, &err);
        free(list);
        return 1;
    }
    size_t sel = 0;
    manta_err sel_err;
    manta_err_clear(&sel_err);
    manta_status sel_st = mcl_select(list, NULL, &sel, &sel_err);
    int have_sel = sel_st == MANTA_OK;
    mcl_variant variant[MCL_MAX_DEVICES];
    for (size_t i = 0; i < list->count && st == MANTA_OK; i++)
        st = mcl_choose_variant(&list->dev[i], MCL_VARIANT_AUTO, &variant[i], &err);
    if (st != MANTA_OK) {
        cmd_error("devices", st, &err);
        free(list);
        return 1;
    }
    if (json) {
        printf("{");
        cmd_json_version(stdout);
        printf(",\"devices\":[");
        for (size_t i = 0; i < list->count; i++) {
            const mcl_device_info *d = &list->dev[i];
            printf("%s{\"index\":%zu,\"platform\":", i ? "," : "", d->index);
            cmd_json_str(stdout, d->platform_name);
            printf(",\"platform_index\":%u,\"name\":", d->platform_index);
            cmd_json_str(stdout, d->name);
            printf(",\"vendor\":");
            cmd_json_str(stdout, d->vendor);
            printf(",\"type\":\"%s\",\"compute_units\":%u,\"global_mem\":%llu,"
                   "\"local_mem\":%llu,\"max_alloc\":%llu,\"max_work_group\":%zu,"
                   "\"max_work_item\":[%zu,%zu,%zu],\"vector_width\":%u,\"kernels\":\"%s\","
                   "\"clamped\":",
                   mcl_type_name(d->type), d->compute_units, d->global_mem, d->local_mem,
                   d->max_alloc, d->max_work_group, d->max_work_item[0], d->max_work_item[1],
                   d->max_work_item[2], d->vector_width, mcl_variant_name(variant[i]));
            cmd_json_str(stdout, d->clamped);
            printf(",\"version\":");
            cmd_json_str(stdout, d->device_version);
            printf(",\"opencl_c\":");
            cmd_json_str(stdout, d->c_version);
            printf(",\"driver\":");
            cmd_json_str(stdout, d->driver_version);
            printf(",\"selected\":%s}", have_sel && sel == i ? "true" : "false");
        }
        printf("]}\n");
    } else {
        unsigned last = (unsigned)-1;
        for (size_t i = 0; i < list->count; i++) {
            const mcl_device_info *d = &list->dev[i];
            if (d->platform_index != last) {
                printf("platform %u: %s (%s)\n", d->platform_index, d->platform_name,
                       d->platform_version);
                last = d->platform_index;
            }
            printf("  %c[%zu] %s  type=%s  compute units=%u  memory=%.1f GiB  %s  driver %s\n"
                   "       limits: local=%llu KiB  work-group=%zu (%zu x %zu x %zu)  "
                   "max alloc=%.2f GiB  float vector=%u  kernels=%s%s%s%s\n",
                   have_sel && sel == i ? '*' : ' ', d->index, d->name, mcl_type_name(d->type),
                   d->compute_units, d->global_mem / 1073741824.0, d->c_version, d->driver_version,
                   d->local_mem / 1024, d->max_work_group, d->max_work_item[0], d->max_work_item[1],
                   d->max_work_item[2], d->max_alloc / 1073741824.0, d->vector_width,
                   mcl_variant_name(variant[i]),
                   d->clamped[0] ? "  (clamped by MANTA_DEVICE_LIMITS=" : "", d->clamped,
                   d->clamped[0] ? ")" : "");
        }
        printf("(* = selected by MANTA_DEVICE or default)\n");
    }
    free(list);
    if (!have_sel) { /* the list is shown, and why no device is marked */
        cmd_error("devices", sel_st, &sel_err);
        return 1;
    }
    return 0;
}
