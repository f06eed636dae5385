#include "profile/common.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

manta_status prof_space_hash(const ofa_space *s, char out[PROF_HASH_LEN], manta_err *err)
{
    char *json = NULL;
    MANTA_TRY(ofa_space_to_json(s, &json, err));
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    free(json);
    snprintf(out, PROF_HASH_LEN, "fnv1a64:%016" PRIx64, h);
    return MANTA_OK;
}

char *prof_format_double(char buf[40], double v)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 40, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

bool prof_json_add_number(cJSON *o, const char *name, double v)
{
    char buf[40];
    return cJSON_AddRawToObject(o, name, prof_format_double(buf, v)) != NULL;
}
