/**
 * @file common.h
 * @brief Helpers shared by the profiler and the search: the identity of a
 *        search space (a hash of its spec, stored in latency tables,
 *        predictor models and data sets so that files of another space are
 *        refused) and numbers written so that they read back exactly.
 */
#ifndef MANTA_PROFILE_COMMON_H
#define MANTA_PROFILE_COMMON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "core/status.h"
#include "space/ofa_space.h"
#include "space/stereo_space.h"

/** Bytes of a space hash string, terminator included ("fnv1a64:" + 16 hex digits). */
#define PROF_HASH_LEN 32

/**
 * Hash of the spec of @p s: FNV-1a (64 bit) of the canonical JSON that
 * ofa_space_to_json() writes, as "fnv1a64:0123456789abcdef". Two spaces get
 * the same hash exactly when every field of their specs (name included) is
 * equal.
 * @param out filled with the NUL-terminated hash.
 * @return MANTA_ERR_NO_MEMORY when the JSON cannot be built.
 */
manta_status prof_space_hash(const ofa_space *s, char out[PROF_HASH_LEN], manta_err *err);

/** prof_space_hash() of a stereo space: of the JSON stereo_space_to_json() writes. */
manta_status prof_stereo_space_hash(const stereo_space *s, char out[PROF_HASH_LEN], manta_err *err);

/**
 * Write @p v into @p buf with the fewest digits (15 to 17, "%.*g") that read
 * back as exactly @p v. @return buf.
 */
char *prof_format_double(char buf[40], double v);

/**
 * Add number @p v to JSON object @p o as @p name, written with the fewest
 * digits (15 to 17) that read back as exactly @p v (cJSON's own printing can
 * be one unit in the last place off). @p v must be finite.
 * @return false when out of memory.
 */
bool prof_json_add_number(cJSON *o, const char *name, double v);

#endif
