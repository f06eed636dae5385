#include "dist/override.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy @p v (when given) into the field @p dst of @p cap bytes, refusing a longer value. */
static manta_status set_str(char *dst, size_t cap, const char *flag, const char *v, manta_err *err)
{
    if (!v || !*v)
        return MANTA_OK;
    if (strlen(v) >= cap)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "%s: longer than %zu characters", flag,
                             cap - 1);
    memcpy(dst, v, strlen(v) + 1);
    return MANTA_OK;
}

/* "HOST" or "HOST:PORT" into the master address and port. */
static manta_status set_master(dist_config *c, const char *v, manta_err *err)
{
    /* "[v6]:port" and "[v6]": the host inside the brackets; a bare IPv6 address (two colons
     * or more) has no port; otherwise HOST[:PORT], split at the last colon */
    const char *colon = strrchr(v, ':');
    size_t skip = 0;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (!close || (close[1] && close[1] != ':'))
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "--master '%s': expected [IPv6] or [IPv6]:PORT", v);
        skip = 1;
        colon = close[1] ? close + 1 : NULL;
    } else if (colon && strchr(v, ':') != colon) {
        colon = NULL;
    }
    size_t host = (colon ? (size_t)(colon - v) : strlen(v)) - 2 * skip;
    if (host == 0)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG, "--master '%s': no host", v);
    if (host >= sizeof c->master_addr)
        return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                             "--master: host longer than %zu characters",
                             sizeof c->master_addr - 1);
    if (colon) {
        char *end = NULL;
        errno = 0;
        long port = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || *end || errno || port < 1 || port > 65535)
            return manta_err_set(err, MANTA_ERR_INVALID_ARG,
                                 "--master port needs an integer in [1, 65535], got '%s'",
                                 colon + 1);
        c->master_port = (int)port;
    }
    memcpy(c->master_addr, v + skip, host);
    c->master_addr[host] = '\0';
    return MANTA_OK;
}

manta_status dist_config_override(dist_config *c, const dist_override *o, manta_err *err)
{
    if (o->world_size > 0)
        c->world_size = o->world_size;
    if (o->rank >= 0)
        c->rank = o->rank;
    if (o->timeout_s > 0)
        c->timeout_s = o->timeout_s;
    if (o->rdzv_bind_all)
        c->rdzv_bind_all = 1;
    manta_status st = o->master && *o->master ? set_master(c, o->master, err) : MANTA_OK;
    if (st == MANTA_OK)
        st = set_str(c->iface, sizeof c->iface, "--iface", o->iface, err);
    if (st == MANTA_OK)
        st = set_str(c->ring_addr, sizeof c->ring_addr, "--ring-addr", o->ring_addr, err);
    if (st == MANTA_OK)
        st = set_str(c->job_id, sizeof c->job_id, "--job", o->job_id, err);
    if (st == MANTA_OK && o->secret_file)
        st = dist_config_secret_file(c, o->secret_file, err);
    return st;
}
