/**
 * @file json.h
 * @brief Typed, checked getters over cJSON objects for the readers of manta's
 *        JSON formats (checkpoint metadata, predictor and data set headers).
 *
 * Each getter answers "is it there, of this type, in this range?" and leaves
 * the error message to the caller, who knows the file and the field's role.
 * Every getter accepts a NULL or non-object @p o (the member is then absent),
 * so a chain of look-ups needs one check at the end. Members are looked up by
 * exact (case-sensitive) name.
 */
#ifndef MANTA_CORE_JSON_H
#define MANTA_CORE_JSON_H

#include <stdbool.h>

#include <cjson/cJSON.h>

/** Member @p key of @p o when it is a string, else NULL (owned by @p o). */
const char *manta_json_string(const cJSON *o, const char *key);

/** Member @p key of @p o when it is an object, else NULL. */
const cJSON *manta_json_object(const cJSON *o, const char *key);

/**
 * Member @p key of @p o when it is an array of @p n items (@p n < 0: of any
 * length), else NULL.
 */
const cJSON *manta_json_array(const cJSON *o, const char *key, int n);

/**
 * Member @p key of @p o as a number in [@p lo, @p hi].
 * @param out written only on success.
 * @return false when absent, not a number or out of range.
 */
bool manta_json_number(const cJSON *o, const char *key, double lo, double hi, double *out);

/**
 * Item @p v (a member or an array element; NULL allowed) as an integer in
 * [@p lo, @p hi]: a number with no fractional part.
 * @param out written only on success.
 * @return false when @p v is NULL, not a number, not whole or out of range.
 */
bool manta_json_int_item(const cJSON *v, int lo, int hi, int *out);

/** Member @p key of @p o as an integer in [@p lo, @p hi], as manta_json_int_item(). */
bool manta_json_int(const cJSON *o, const char *key, int lo, int hi, int *out);

/**
 * Member @p key of @p o as a boolean (JSON true or false).
 * @param out written only on success.
 * @return false when absent or not a boolean.
 */
bool manta_json_bool(const cJSON *o, const char *key, bool *out);

#endif
