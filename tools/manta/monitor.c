/* manta monitor RUN_DIR...: the training monitor (runtime/monitor_http/server.h) over run folders,
 * finished, in progress, or copied from other machines, until SIGINT/SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "common/opts.h"
#include "core/clock.h"
#include "monitor_http/server.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static const char ABOUT[] =
    "Serves the live page, the JSON API and Prometheus /metrics of one or more training\n"
    "runs (side by side) from their folders' metrics.jsonl, which it follows as they grow\n"
    "(docs/monitor.md). `manta train --monitor [ADDR:]PORT` serves the same during a run.\n\n"
    "Endpoints: / (the page), /api/runs, /api/run?run=K, /api/metrics?run=K&since=N,\n"
    "/api/ranks?run=K, /api/events?run=K&since=N (server-sent events), /metrics\n"
    "(Prometheus), /healthz. --listen defaults to 127.0.0.1:8080; ADDR 0.0.0.0 or any\n"
    "address beyond loopback needs the token MANTA_MONITOR_TOKEN (at least 8 characters),\n"
    "which every request but /healthz must then carry (Authorization: Bearer TOKEN, or\n"
    "?token=TOKEN: open http://ADDR:PORT/?token=TOKEN); with the variable set it is always\n"
    "required. Port 0 picks a free port (printed).\n\n"
    "Alerts (on the page, in /api/run, and given to --on-alert CMD as JSON on standard\n"
    "input when they start to hold): the loss is not a number; the loss grew in N\n"
    "consecutive reports of a phase; a rank's images/s is PCT % below the median; no new\n"
    "record for SEC seconds while the run is not over; a rank's heartbeat is older than\n"
    "--rank-timeout, or an error record names it.\n";

int cmd_monitor(int argc, char **argv)
{
    mon_options mo;
    mon_options_default(&mo);
    const char *listen = "127.0.0.1:8080";
    bool json = false;
    const opt_def defs[] = {
        {.name = "listen",
         .kind = OPT_STRING,
         .dest = &listen,
         .metavar = "[ADDR:]PORT",
         .help = "address and port (default 127.0.0.1:8080; port 0: any free one)"},
        {.name = "on-alert",
         .kind = OPT_STRING,
         .dest = &mo.on_alert,
         .metavar = "CMD",
         .help = "run CMD (sh -c) with each new alert as JSON on its standard input"},
        {.name = "alert-grow",
         .kind = OPT_INT,
         .dest = &mo.alerts.grow,
         .lo = 1,
         .hi = 1e6,
         .metavar = "N",
         .help = "alert when the loss grows for N reports of a phase (default 5)"},
        {.name = "alert-slow",
         .kind = OPT_DOUBLE,
         .dest = &mo.alerts.slow_pct,
         .lo = 1,
         .hi = 99,
         .metavar = "PCT",
         .help = "alert for a rank PCT % below the median images/s (default 25)"},
        {.name = "alert-stall",
         .kind = OPT_DOUBLE,
         .dest = &mo.alerts.stall_s,
         .lo = 1,
         .hi = 1e7,
         .metavar = "SEC",
         .help = "alert after SEC s without a record (default 300)"},
        {.name = "rank-timeout",
         .kind = OPT_DOUBLE,
         .dest = &mo.alerts.rank_timeout_s,
         .lo = 1,
         .hi = 1e7,
         .metavar = "SEC",
         .help = "a rank whose heartbeat is older is dead (default 120)"},
        {.name = "poll",
         .kind = OPT_DOUBLE,
         .dest = &mo.poll_s,
         .lo = 0.05,
         .hi = 60,
         .metavar = "SEC",
         .help = "seconds between two reads of the files (default 0.5)"},
        {.name = "max-connections",
         .kind = OPT_INT,
         .dest = &mo.max_connections,
         .lo = 1,
         .hi = 1024,
         .metavar = "N",
         .help = "connections at once (default 64)"},
        {.name = "per-ip",
         .kind = OPT_INT,
         .dest = &mo.per_ip_connections,
         .lo = 1,
         .hi = 1024,
         .metavar = "N",
         .help = "connections at once from one address (default 16)"},
        {.name = "json",
         .kind = OPT_FLAG,
         .dest = &json,
         .help = "print the address as one JSON line ({\"url\":...,\"port\":...})"},
        {.name = NULL},
    };
    const opt_cmd cmd = {"manta monitor", "RUN_DIR... [OPTIONS]", ABOUT, defs, 1, MON_MAX_RUNS};
    int first;
    opt_result pr = opt_parse(&cmd, argc, argv, &first);
    if (pr != OPT_OK)
        return pr == OPT_HELP ? 0 : 2;
    mo.listen = listen;
    const char *dirs[MON_MAX_RUNS];
    int n = 0;
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr,
                    "manta monitor: %s: not a folder (a run's --out folder, whose "
                    "metrics.jsonl may not exist yet)\n",
                    argv[i]);
            return 2;
        }
        dirs[n++] = argv[i];
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    manta_err err;
    manta_err_clear(&err);
    mon_server *s = NULL;
    manta_status st = mon_server_start(&mo, dirs, n, &s, &err);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta monitor: %s\n", err.msg);
        return st == MANTA_ERR_INVALID_ARG ? 2 : 1;
    }
    char url[128];
    mon_server_url(s, url, sizeof url);
    const bool tok = mo.token && *mo.token;
    if (json)
        printf("{\"url\":\"%s\",\"port\":%d,\"runs\":%d,\"token\":%s}\n", url, mon_server_port(s),
               n, tok ? "true" : "false");
    else
        printf("manta monitor: %d run(s) at %s%s (Ctrl-C stops)\n", n, url,
               tok ? "?token=..." : "");
    fflush(stdout);
    while (!stop_requested)
        manta_sleep(0.2);
    mon_server_stop(s);
    return 0;
}
