/* mon_options_default() (server.h), the same in every build. */
#include "core/env.h"
#include "monitor_http/server.h"

void mon_options_default(mon_options *o)
{
    *o = (mon_options){.listen = "127.0.0.1:8080",
                       .token = manta_env_get(MANTA_ENV_MONITOR_TOKEN),
                       .poll_s = 0.5,
                       .max_connections = 64,
                       .per_ip_connections = 16,
                       .timeout_s = 30,
                       .events_max_s = 300};
    mon_alert_opts_default(&o->alerts);
}
