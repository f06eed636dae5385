#include "profile/common.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* "fnv1a64:..." of @p json, freed here. */
static void hash_json(char *json, char out[PROF_HASH_LEN])
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)json; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    free(json);
    snprintf(out, PROF_HASH_LEN, "fnv1a64:%016" PRIx64, h);
}

manta_status prof_space_hash(const ofa_space *s, char out[PROF_HASH_LEN], manta_err *err)
{
    char *json = NULL;
    MANTA_TRY(ofa_space_to_json(s, &json, err));
    hash_json(json, out);
    return MANTA_OK;
}

manta_status prof_stereo_space_hash(const stereo_space *s, char out[PROF_HASH_LEN], manta_err *err)
{
    char *json = NULL;
    MANTA_TRY(stereo_space_to_json(s, &json, err));
    hash_json(json, out);
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
