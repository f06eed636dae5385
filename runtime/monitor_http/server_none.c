/* The monitor's server in builds without libmicrohttpd (board builds of manta): every
 * start fails with MANTA_ERR_UNSUPPORTED (server.h). */
#include "monitor_http/server.h"

struct mon_server {
    int port;
};

manta_status mon_server_start(const mon_options *o, const char *const *dirs, int n,
                              mon_server **out, manta_err *err)
{
    (void)o;
    (void)dirs;
    (void)n;
    if (out)
        *out = NULL;
    return manta_err_set(err, MANTA_ERR_UNSUPPORTED,
                         "monitor: this build has no HTTP server (board build without "
                         "libmicrohttpd); run `manta monitor` on the host");
}

int mon_server_port(const mon_server *s) { return s ? s->port : 0; }

void mon_server_url(const mon_server *s, char *buf, size_t cap)
{
    (void)s;
    if (cap)
        buf[0] = 0;
}

void mon_server_poll_now(mon_server *s) { (void)s; }

void mon_server_stop(mon_server *s) { (void)s; }
