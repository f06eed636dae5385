/* Typed getters over cJSON objects (see json.h). */
#include "core/json.h"

#include <stddef.h>

/* Member @p key of @p o, or NULL (cJSON returns NULL for a NULL object). */
static const cJSON *member(const cJSON *o, const char *key)
{
    return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

const char *manta_json_string(const cJSON *o, const char *key)
{
    return cJSON_GetStringValue(member(o, key));
}

const cJSON *manta_json_object(const cJSON *o, const char *key)
{
    const cJSON *v = member(o, key);
    return cJSON_IsObject(v) ? v : NULL;
}

const cJSON *manta_json_array(const cJSON *o, const char *key, int n)
{
    const cJSON *v = member(o, key);
    return cJSON_IsArray(v) && (n < 0 || cJSON_GetArraySize(v) == n) ? v : NULL;
}

bool manta_json_number(const cJSON *o, const char *key, double lo, double hi, double *out)
{
    const cJSON *v = member(o, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return false;
    *out = v->valuedouble;
    return true;
}

bool manta_json_int_item(const cJSON *v, int lo, int hi, int *out)
{
    /* cJSON saturates valueint, so a whole number beyond int never equals it. */
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)v->valueint || v->valueint < lo ||
        v->valueint > hi)
        return false;
    *out = v->valueint;
    return true;
}

bool manta_json_int(const cJSON *o, const char *key, int lo, int hi, int *out)
{
    return manta_json_int_item(member(o, key), lo, hi, out);
}

bool manta_json_bool(const cJSON *o, const char *key, bool *out)
{
    const cJSON *v = member(o, key);
    if (!cJSON_IsBool(v))
        return false;
    *out = cJSON_IsTrue(v);
    return true;
}
