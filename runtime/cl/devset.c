#include "cl/devset.h"

#include <stdio.h>
#include <string.h>

manta_status mcl_select_many(const mcl_device_list *list, const char *specs, size_t *index,
                             size_t max, size_t *n, manta_err *err)
{
    *n = 0;
    if (!strcmp(specs, "all")) {
        for (size_t i = 0; i < list->count && i < max; i++)
            index[(*n)++] = i;
        return *n ? MANTA_OK
                  : manta_err_set(err, MANTA_ERR_NO_DEVICE, "--devices all: no OpenCL device");
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", specs);
    for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        size_t idx;
        manta_err why;
        manta_err_clear(&why);
        if (*n == max)
            return manta_err_set(err, MANTA_ERR_NO_DEVICE, "--devices: '%s': too many devices", t);
        manta_status st = mcl_select(list, t, &idx, &why);
        if (st != MANTA_OK)
            return manta_err_set(err, st, "--devices: '%s': %s", t, manta_err_msg(&why, st));
        for (size_t k = 0; k < *n; k++)
            if (index[k] == idx)
                return manta_err_set(err, MANTA_ERR_NO_DEVICE,
                                     "--devices: device %zu is listed twice", idx);
        index[(*n)++] = idx;
    }
    return *n ? MANTA_OK : manta_err_set(err, MANTA_ERR_NO_DEVICE, "--devices lists no device");
}
