/**
 * @file json.h
 * @brief JSON output of the programs in tools/: the one string writer.
 */
#ifndef MANTA_TOOLS_JSON_H
#define MANTA_TOOLS_JSON_H

#include <stdio.h>

/**
 * Write @p s to @p f as a JSON string: in double quotes, with '"' and '\\'
 * escaped by a backslash and control characters (below 0x20) as \\u00XX;
 * every other byte as it is (UTF-8 passes through).
 */
void json_put_str(FILE *f, const char *s);

#endif
