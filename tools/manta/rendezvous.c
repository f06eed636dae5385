/* manta rendezvous: the elastic rendezvous service of a job (dist/elastic.h). It forms the
 * ring of every generation of `manta train --elastic` ranks; it holds no training state,
 * so it can run anywhere and be restarted from its --state file. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "common/opts.h"
#include "dist/elastic.h"
#include "dist/override.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void print_event(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "manta %s\n", line);
    fflush(stderr);
}

int cmd_rendezvous(int argc, char **argv)
{
    const char *nnodes = NULL, *state = NULL;
    double settle = 1.0, last_call = 5.0;
    int expect = 0;
    dist_override net = DIST_OVERRIDE_NONE;
    bool bind_all = false;
    const opt_def defs[] = {
        {.name = "nnodes",
         .kind = OPT_STRING,
         .dest = &nnodes,
         .metavar = "MIN:MAX",
         .help = "ranks of the job (default: PET_NNODES, else WORLD_SIZE)"},
        {.name = "master",
         .kind = OPT_STRING,
         .dest = &net.master,
         .metavar = "HOST[:PORT]",
         .help = "address to listen on (default MASTER_ADDR:MASTER_PORT)"},
        {.name = "job",
         .kind = OPT_STRING,
         .dest = &net.job_id,
         .metavar = "ID",
         .help = "job id (default MANTA_JOB_ID)"},
        {.name = "secret-file",
         .kind = OPT_STRING,
         .dest = &net.secret_file,
         .metavar = "PATH",
         .help = "the job's shared secret (default MANTA_SECRET[_FILE])"},
        {.name = "rdzv-bind-all",
         .kind = OPT_FLAG,
         .dest = &bind_all,
         .help = "listen on every address"},
        {.name = "timeout",
         .kind = OPT_DOUBLE,
         .dest = &net.timeout_s,
         .lo = 0.001,
         .hi = 86400,
         .metavar = "S",
         .help = "a round without MIN ranks after S seconds stops the job (default "
                 "MANTA_TIMEOUT, else 60)"},
        {.name = "settle",
         .kind = OPT_DOUBLE,
         .dest = &settle,
         .lo = 0,
         .hi = 3600,
         .metavar = "S",
         .help = "after a failure, form the ring S seconds after the last rank came back "
                 "(default 1)"},
        {.name = "last-call",
         .kind = OPT_DOUBLE,
         .dest = &last_call,
         .lo = 0,
         .hi = 3600,
         .metavar = "S",
         .help = "the first ring: with MIN ranks, form it S seconds after the last joined "
                 "(default 5)"},
        {.name = "expect",
         .kind = OPT_INT,
         .dest = &expect,
         .lo = 0,
         .hi = DIST_MAX_WORLD,
         .metavar = "N",
         .help = "the first ring forms as soon as N ranks joined (default 0: MAX)"},
        {.name = "state",
         .kind = OPT_STRING,
         .dest = &state,
         .metavar = "FILE",
         .help = "the service's file: written after every round, read at start (a restart "
                 "knows the running ring)"},
        {.name = NULL},
    };
    const opt_cmd cmd = {
        "manta rendezvous",
        "[--nnodes MIN:MAX] [OPTIONS]",
        "The rendezvous service of elastic training ('manta train --elastic'): ranks\n"
        "join it, it forms each generation's ring, and after a rank died it forms the\n"
        "next one from the ranks that come back (and new ones). The first ring forms when\n"
        "MAX (or --expect) ranks joined, or MIN and no other for --last-call seconds; a\n"
        "later one --settle seconds after the last rank came back; new ranks that arrive\n"
        "while a ring trains enter at its next step boundary. Fewer than MIN ranks within "
        "--timeout stop the job (exit 1,\n"
        "one line saying why). 'manta launch --nnodes MIN:MAX' starts one; on other hosts\n"
        "run it where every rank can reach it (MASTER_ADDR:MASTER_PORT of the ranks).\n",
        defs,
        0,
        0};
    int first;
    opt_result r = opt_parse(&cmd, argc, argv, &first);
    if (r != OPT_OK)
        return r == OPT_HELP ? 0 : 2;
    net.rdzv_bind_all = bind_all;
    dist_config cfg;
    dist_config_init(&cfg);
    manta_err err;
    manta_err_clear(&err);
    int mn = 0, mx = 0;
    if (dist_config_from_env(&cfg, NULL, NULL, &err) != MANTA_OK ||
        dist_config_override(&cfg, &net, &err) != MANTA_OK ||
        (nnodes && dist_parse_nnodes("--nnodes", nnodes, &mn, &mx, &err) != MANTA_OK)) {
        fprintf(stderr, "manta rendezvous: %s\n", err.msg);
        return 2;
    }
    if (!nnodes) {
        mn = cfg.min_nodes ? cfg.min_nodes : cfg.world_size;
        mx = cfg.max_nodes ? cfg.max_nodes : cfg.world_size;
    }
    cfg.event = print_event;
    const dist_elastic_opts eo = {.min_ranks = mn,
                                  .max_ranks = mx,
                                  .settle_s = settle,
                                  .last_call_s = last_call,
                                  .expect = expect,
                                  .timeout_s = cfg.timeout_s,
                                  .state_path = state};
    dist_elastic_server *s;
    manta_status st = dist_elastic_server_open(&cfg, &eo, &s, &err);
    memset(cfg.key, 0, sizeof cfg.key);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta rendezvous: %s\n", manta_err_msg(&err, st));
        return 1;
    }
    fprintf(stderr, "manta rendezvous: job '%s' on %s port %d%s, %d to %d ranks\n", cfg.job_id,
            cfg.master_addr, cfg.master_port,
            cfg.rdzv_bind_all ? " (bound to every address of its family)" : "", mn, mx);
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    st = dist_elastic_server_run(s, &stop_flag, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    dist_elastic_server_close(s);
    if (st != MANTA_OK) {
        fprintf(stderr, "manta rendezvous: %s\n", manta_err_msg(&err, st));
        return 1;
    }
    return 0;
}
