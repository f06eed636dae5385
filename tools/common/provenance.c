#include "provenance.h"

#include "json.h"
#include "version.h" /* generated: MANTA_VERSION, MANTA_GIT_REVISION */

const char *tool_version(void) { return MANTA_VERSION; }

const char *tool_git_revision(void) { return MANTA_GIT_REVISION; }

void tool_json_version(FILE *f)
{
    fputs("\"version\":", f);
    json_put_str(f, MANTA_VERSION);
    fputs(",\"git\":", f);
    json_put_str(f, MANTA_GIT_REVISION);
}

void tool_print_version(FILE *f, const char *prog)
{
    fprintf(f, "%s %s (git %s)\n", prog, MANTA_VERSION, MANTA_GIT_REVISION);
}
