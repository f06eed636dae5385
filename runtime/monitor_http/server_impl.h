/**
 * @file server_impl.h
 * @brief Internal to runtime/monitor_http/: the fields of a running server
 *        (server.h), shared by server.c (start, stop, the answers) and
 *        server_poll.c (the poll thread). Not for callers outside the folder.
 */
#ifndef MANTA_MONITOR_HTTP_SERVER_IMPL_H
#define MANTA_MONITOR_HTTP_SERVER_IMPL_H

#include <pthread.h>
#include <stdbool.h>

#include <sodium.h>

#include "monitor/alerts.h"
#include "monitor/model.h"
#include "monitor_http/server.h"

struct MHD_Daemon;

/* One run folder: its model under its mutex, and the alerts that held at the last poll. */
typedef struct run_slot {
    char dir[1024], path[1100], name[128];
    mon_model *m;
    pthread_mutex_t mu;
    mon_alert prev[MON_MAX_ALERTS];
    int n_prev;
} run_slot;

struct mon_server {
    mon_options o;
    char *on_alert;
    bool need_token;
    unsigned char token_hash[crypto_generichash_BYTES];
    char addr[64];
    int port;
    int n;
    run_slot *runs;
    struct MHD_Daemon *d;
    pthread_t poller;
    bool poller_started;
    pthread_mutex_t mu; /* guards stop and tick */
    pthread_cond_t cv;  /* tick changed or stop */
    bool stop;
    unsigned long long tick;
};

/**
 * The poll thread's body (@p arg: the ::mon_server): reads every run now, then
 * every o.poll_s seconds, until s->stop; runs the on_alert command for each
 * alert that newly holds. Returns NULL.
 */
void *mon_poller(void *arg);

#endif
