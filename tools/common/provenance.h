/**
 * @file provenance.h
 * @brief The version of the programs in tools/ (the VERSION file) and the git
 *        revision they were built from, for `--version` and the provenance members
 *        every `--json` output carries.
 */
#ifndef MANTA_TOOLS_PROVENANCE_H
#define MANTA_TOOLS_PROVENANCE_H

#include <stdio.h>

/** "0.4.0": the VERSION file's, at build time. */
const char *tool_version(void);

/** `git describe --always --dirty --abbrev=12` at build time; "unknown" outside a git checkout. */
const char *tool_git_revision(void);

/** Write `"version":"0.4.0","git":"<rev>"` to @p f: JSON object members, without braces and
 *  without a comma before or after. */
void tool_json_version(FILE *f);

/** Write "<prog> 0.4.0 (git <rev>)" and a newline to @p f (the first line of --version). */
void tool_print_version(FILE *f, const char *prog);

#endif
