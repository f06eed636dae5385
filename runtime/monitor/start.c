/* mon_server_start_run() (server.h): the monitor of one run folder, as a trainer starts it. */
#include <stdio.h>

#include "monitor/server.h"

manta_status mon_server_start_run(const char *prog, const char *listen, const char *dir,
                                  mon_server **out, manta_err *err)
{
    mon_options o;
    mon_options_default(&o);
    o.listen = listen;
    const char *dirs[1] = {dir};
    MANTA_TRY(mon_server_start(&o, dirs, 1, out, err));
    char url[128];
    mon_server_url(*out, url, sizeof url);
    fprintf(stderr, "%s: monitor at %s%s\n", prog ? prog : "manta", url,
            o.token && *o.token ? "?token=..." : "");
    return MANTA_OK;
}
