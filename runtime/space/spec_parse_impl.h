/**
 * @file spec_parse_impl.h
 * @brief Internal: the pieces of search-space spec parsing that the
 *        classification reader (space/ofa_space.c) and the stereo reader
 *        (space/stereo_space.c) share, so both name fields in their messages the
 *        same way ("space.units[2]: \"act\" must be ...").
 *
 * Every getter takes the object to read (NULL or a non-object: the member is
 * absent), the member's key and the context that starts its message ("space",
 * "space.stem", ...), and answers MANTA_ERR_FORMAT with that message.
 */
#ifndef MANTA_SPACE_SPEC_PARSE_H
#define MANTA_SPACE_SPEC_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "space/ofa_space.h"

/** Built-ins named when a spec file cannot be read by ofa_space_load(). */
#define OFA_SPEC_BUILTINS "cpu-default, mbv3-w1.0"

/** Set the list @p dst of *@p n values to the @p count values of @p src. */
void ofa_spec_set_list(int *n, int *dst, const int *src, int count);

/** Copy @p n unit specs field by field (copies of initialisers may carry
 *  indeterminate padding). */
void ofa_spec_copy_units(ofa_unit_spec *dst, const ofa_unit_spec *src, int n);

/** Reads an integer member in [@p lo, @p hi] into *@p out. */
typedef manta_status (*ofa_spec_int_fn)(const cJSON *o, const char *key, int lo, int hi, int *out,
                                        const char *ctx, manta_err *err);

/** The classification reader's integer getter: "CTX: \"KEY\" must be an integer" or
 *  "CTX: \"KEY\" is V, outside [LO, HI]". */
manta_status ofa_spec_int(const cJSON *o, const char *key, int lo, int hi, int *out,
                          const char *ctx, manta_err *err);

/** An activation: "relu" or "h-swish", and "leaky-relu" when @p leaky_too. */
manta_status ofa_spec_act(const cJSON *o, const char *key, bool leaky_too, nn_act *out,
                          const char *ctx, manta_err *err);

/** A list of 1..@p cap integers in [@p lo, @p hi] (ascending when @p ascending). */
manta_status ofa_spec_list(const cJSON *o, const char *key, int cap, int lo, int hi, bool ascending,
                           int *n, int *dst, const char *ctx, manta_err *err);

/** "kernel_sizes" (1..9), "expand_ratios" (1..8) and "depths" (1..OFA_MAX_DEPTH):
 *  ascending lists of 1 to OFA_MAX_CHOICES values. */
manta_status ofa_spec_choices(const cJSON *j, int *n_ks, int *ks, int *n_e, int *e, int *n_d,
                              int *d, manta_err *err);

/** "format" must be "manta-ofa-space". */
manta_status ofa_spec_format(const cJSON *j, manta_err *err);

/** "name": a non-empty string shorter than @p cap, copied into @p name. */
manta_status ofa_spec_name(const cJSON *j, char *name, size_t cap, manta_err *err);

/**
 * "units": a list of @p min_units to OFA_MAX_UNITS unit objects (width, stride,
 * act "relu" or "h-swish", se), their integers read by @p get_int. *@p n_units
 * is the list's length, also on error.
 */
manta_status ofa_spec_units(const cJSON *j, int min_units, ofa_spec_int_fn get_int,
                            ofa_unit_spec *unit, int *n_units, manta_err *err);

/** Reads a parsed spec document into @p out. */
typedef manta_status (*ofa_spec_parse_fn)(const cJSON *j, void *out, manta_err *err);

/** Zero @p out (@p size bytes), parse the JSON text @p json and read it with @p parse
 *  ("space: not valid JSON near '...'" when it is not JSON). */
manta_status ofa_spec_parse_text(const char *json, ofa_spec_parse_fn parse, void *out, size_t size,
                                 manta_err *err);

/** Read the spec file @p path into *@p buf (malloc'd); the message of a failure
 *  points at the built-ins @p builtins. */
manta_status ofa_spec_read_file(const char *path, const char *builtins, char **buf, manta_err *err);

/** ofa_spec_read_file(), then ofa_spec_parse_text(), its messages prefixed with
 *  "PATH: ". */
manta_status ofa_spec_load_file(const char *path, const char *builtins, ofa_spec_parse_fn parse,
                                void *out, size_t size, manta_err *err);

#endif
