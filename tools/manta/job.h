/* manta train: what the classification and the stereo trainers share about a job: the
 * options of devices, data-parallel mode, the distributed job and the monitor; the job's
 * configuration (environment, then flags), its devices, the ring and the monitor. */
#ifndef MANTA_TOOLS_JOB_H
#define MANTA_TOOLS_JOB_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "cl/cl.h"
#include "core/records.h"
#include "core/strbuf.h"
#include "core/tfevents.h"
#include "dist/override.h"
#include "dist/ring.h"
#include "monitor_http/server.h"
#include "train/dp.h"
#include "train/schedule.h"

/** Most devices one process trains on (--devices). */
#define JOB_MAX_DEVICES 64

/** The job's options, as the command line gives them (job_opts_init() sets the defaults). */
typedef struct job_opts {
    const char *device, *devices; /* --device SPEC, --devices LIST */
    const char *mode;             /* --mode data|subnet */
    const char *compress;         /* --compress none|fp16|bf16|int8 */
    const char *aggregate;        /* --aggregate float|fixed */
    long sync_check;              /* --sync-check N: replica hash comparison every N steps */
    const char *monitor;          /* --monitor [ADDR:]PORT: rank 0 serves the live page */
    const char *on_alert;         /* --on-alert CMD */
    mon_alert_opts alerts;        /* --alert-grow, --alert-slow, --alert-stall */
    dist_override net;            /* --world, --rank, --master, ... over the environment's */
    bool bind_all, timeout_given;
} job_opts;

void job_opts_init(job_opts *j);

extern const char *const JOB_MODES[];
extern const char *const JOB_COMPRESS[];
extern const char *const JOB_AGGREGATE[];

/** The opt_def entries of a job_opts *j (tools/common/opts.h), for an option table. */
#define JOB_OPT_DEFS(j)                                                                           \
    {.name = "device",                                                                            \
     .kind = OPT_STRING,                                                                          \
     .dest = &(j)->device,                                                                        \
     .metavar = "SPEC",                                                                           \
     .help = "OpenCL device (default: MANTA_DEVICE, else 0)"},                                    \
        {.name = "devices",                                                                       \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->devices,                                                                   \
         .metavar = "LIST",                                                                       \
         .help = "several devices of this process: 'all' or a list such as '0,1'"},               \
        {.name = "mode",                                                                          \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->mode,                                                                      \
         .metavar = "data|subnet",                                                                \
         .help = "with several devices or ranks (default data; see above)",                       \
         .choices = JOB_MODES},                                                                   \
        {.name = "compress",                                                                      \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->compress,                                                                  \
         .metavar = "none|fp16|bf16|int8",                                                        \
         .help = "gradients on the ring: float32 (none, default), 16-bit, or int8 with error "    \
                 "feedback",                                                                      \
         .choices = JOB_COMPRESS},                                                                \
        {.name = "aggregate",                                                                     \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->aggregate,                                                                 \
         .metavar = "float|fixed",                                                                \
         .help = "fixed: exact int32 fixed-point gradient sums, the same bits in any rank order", \
         .choices = JOB_AGGREGATE},                                                               \
        {.name = "sync-check",                                                                    \
         .kind = OPT_LONG,                                                                        \
         .dest = &(j)->sync_check,                                                                \
         .lo = 0,                                                                                 \
         .hi = 0x1p40,                                                                            \
         .metavar = "N",                                                                          \
         .help = "compare the replicas' weight hashes every N steps (default 100; 0: at "         \
                 "checkpoints only)"},                                                            \
        {.name = "monitor",                                                                       \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->monitor,                                                                   \
         .metavar = "[ADDR:]PORT",                                                                \
         .help = "rank 0 serves the live monitor page and API (docs/monitor.md)"},                \
        {.name = "on-alert",                                                                      \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->on_alert,                                                                  \
         .metavar = "CMD",                                                                        \
         .help = "with --monitor: run CMD (sh -c) with each new alert as JSON on stdin"},         \
        {.name = "alert-grow",                                                                    \
         .kind = OPT_INT,                                                                         \
         .dest = &(j)->alerts.grow,                                                               \
         .lo = 1,                                                                                 \
         .hi = 1e6,                                                                               \
         .metavar = "N",                                                                          \
         .help = "alert when the loss grows for N reports of a phase (default 5)"},               \
        {.name = "alert-slow",                                                                    \
         .kind = OPT_DOUBLE,                                                                      \
         .dest = &(j)->alerts.slow_pct,                                                           \
         .lo = 1,                                                                                 \
         .hi = 99,                                                                                \
         .metavar = "PCT",                                                                        \
         .help = "alert for a rank PCT % below the median images/s (default 25)"},                \
        {.name = "alert-stall",                                                                   \
         .kind = OPT_DOUBLE,                                                                      \
         .dest = &(j)->alerts.stall_s,                                                            \
         .lo = 1,                                                                                 \
         .hi = 1e7,                                                                               \
         .metavar = "SEC",                                                                        \
         .help = "alert after SEC s without a record (default 300)"},                             \
        {.name = "world",                                                                         \
         .kind = OPT_INT,                                                                         \
         .dest = &(j)->net.world_size,                                                            \
         .lo = 1,                                                                                 \
         .hi = DIST_MAX_WORLD,                                                                    \
         .metavar = "N",                                                                          \
         .help = "ranks of the distributed job"},                                                 \
        {.name = "rank",                                                                          \
         .kind = OPT_INT,                                                                         \
         .dest = &(j)->net.rank,                                                                  \
         .lo = 0,                                                                                 \
         .hi = DIST_MAX_WORLD,                                                                    \
         .metavar = "R",                                                                          \
         .help = "this process's rank"},                                                          \
        {.name = "master",                                                                        \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->net.master,                                                                \
         .metavar = "HOST[:PORT]",                                                                \
         .help = "the rendezvous (rank 0's address)"},                                            \
        {.name = "iface",                                                                         \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->net.iface,                                                                 \
         .metavar = "NAME",                                                                       \
         .help = "network interface of the ring"},                                                \
        {.name = "ring-addr",                                                                     \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->net.ring_addr,                                                             \
         .metavar = "A",                                                                          \
         .help = "IPv4 or IPv6 address of this rank's ring listener"},                            \
        {.name = "job",                                                                           \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->net.job_id,                                                                \
         .metavar = "ID",                                                                         \
         .help = "job id"},                                                                       \
        {.name = "secret-file",                                                                   \
         .kind = OPT_STRING,                                                                      \
         .dest = &(j)->net.secret_file,                                                           \
         .metavar = "PATH",                                                                       \
         .help = "the job's shared secret"},                                                      \
        {.name = "rdzv-bind-all",                                                                 \
         .kind = OPT_FLAG,                                                                        \
         .dest = &(j)->bind_all,                                                                  \
         .help = "rank 0 listens for the rendezvous on every address"},                           \
    {                                                                                             \
        .name = "timeout", .kind = OPT_DOUBLE, .dest = &(j)->net.timeout_s, .lo = 0, .hi = 86400, \
        .metavar = "S", .help = "network deadline in seconds, in (0, 86400] (default 60)",        \
        .seen = &(j)->timeout_given                                                               \
    }

/** The data-parallel mode of --mode. */
dp_mode job_mode(const job_opts *j);

/** After parsing: check the options and make the job's configuration (the environment's,
 *  then the flags'). 0 after printing "CMD: ..." (exit status 2), else 1. */
int job_config(const char *cmd, job_opts *j, dist_config *cfg);

/** Print a ring event (dist_config's event callback). */
void job_print_event(void *ctx, const char *line);

/** Open the devices of --devices ("all" or a comma-separated list of specs), else the one of
 *  --device, into @p devs (JOB_MAX_DEVICES). How many were opened (0 after an error,
 *  printed). */
int job_open_devices(const char *cmd, const job_opts *j, mcl_dev **devs);

/** Join the job's ring (@p cfg of several ranks) into *ring; false after printing the error
 *  naming @p rank and @p host. */
bool job_join(const char *cmd, const dist_config *cfg, int rank, const char *host,
              ring_comm **ring);

/** Rank 0 with --monitor: serve the live page of run folder @p dir into *out (left NULL
 *  without --monitor); false after printing the error. */
bool job_monitor_start(const char *cmd, const job_opts *j, const char *dir, mon_server **out);

/** Read the run's last records and stop the monitor (NULL allowed). */
void job_monitor_stop(mon_server *m);

/** The end of a run's outputs: the monitor stopped (after its last read), metrics.jsonl and
 *  the event file closed (a failed close is a warning "CMD: warning: ..."). NULLs allowed. */
void job_outputs_close(const char *cmd, mon_server *monitor, FILE *metrics, manta_tfevents *events);

/** Leave the job: the data-parallel trainer, the ring and the @p n_dev devices freed, the
 *  job's key wiped from @p cfg. NULLs allowed. */
void job_leave(dp_trainer *dp, ring_comm *ring, mcl_dev **devs, int n_dev, dist_config *cfg);

/** Every rank, before a checkpoint (train_task.before_save): the int8 error feedback of all
 *  ranks (dp_ef_gather()) into rank 0's *@p ef (malloc'd once, the caller frees it) and
 *  *@p n; nothing for other encodings. */
manta_status job_ef_gather(dp_trainer *dp, int rank, float **ef, size_t *n, manta_err *err);

/** Every rank on --resume: this rank's int8 error feedback from checkpoint @p ckpt; a
 *  checkpoint without one (or of another world size) starts it from zero, with a line
 *  saying so. False after printing a read error. */
bool job_ef_resume(const char *cmd, dp_trainer *dp, const char *ckpt);

/** Where a job's records go (docs/monitor.md): rank 0's metrics.jsonl; its monitor. */
typedef struct job_log {
    const char *cmd;     /* "manta train": the prefix of messages */
    FILE *metrics;       /* rank 0's metrics.jsonl (NULL: none yet, or another rank) */
    int rank;            /* this rank */
    const char *host;    /* this host */
    mon_server *monitor; /* NULL: none */
} job_log;

/** Rank 0: record @p r into metrics.jsonl (core/records.h: one line, flushed); nothing on
 *  other ranks or without the file. A failed write is a warning ("CMD: warning: ..."). */
void job_write(const job_log *l, const manta_rec *r);

/** Print "CMD: MSG" on stderr and add the error record for it after @p step steps (-1:
 *  unknown); the record's rank is the one the message names other than this one (a peer
 *  that failed), else this rank. */
void job_fail(const job_log *l, long step, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** What the job record says of a run. */
typedef struct job_header {
    const char *task, *space, *schedule, *data;
    const ofa_schedule *sched;
    long start; /* the first step of this invocation */
    int batch, world_size, replicas;
    mcl_dev *const *devs;
    int n_dev;
    dp_mode mode;
} job_header;

/**
 * The "ranks" of a progress record (docs/monitor.md): every rank's figures of the last step of
 * @p dp (dp_rank_figures_get()), its samples per second from @p samples_per_rank and the step
 * before's time, the device of this rank's first replica @p dev (the others' are not known
 * here: ""), heartbeat @p now (Unix time: the ranks all took part in the step just
 * finished). *out receives an array the caller frees (NULL when out of memory).
 * @return the number of ranks in *out (0 when out of memory).
 */
int job_ranks(const dp_trainer *dp, const job_log *l, mcl_dev *dev, int samples_per_rank,
              double now, manta_rec_rank **out);

/** Scalars job_rank_scalars() writes per rank. */
#define JOB_RANK_SCALARS 4
/** Bytes of one of its tags. */
#define JOB_TAG_BYTES 48
/** Most per-rank scalars an event of a progress record holds (the first 64 ranks). */
#define JOB_RANK_TAGS (64 * JOB_RANK_SCALARS)

/**
 * TensorBoard scalars of every rank's last step (dp_rank_figures_get()):
 * `rank<R>/images_per_s`, `rank<R>/compute_s`, `rank<R>/data_wait_s`, `rank<R>/allreduce_wait_s`
 * into @p v, their tags kept in @p tags (cap entries each). @return how many were written.
 */
size_t job_rank_scalars(const dp_trainer *dp, int samples_per_rank, char (*tags)[JOB_TAG_BYTES],
                        manta_tfscalar *v, size_t cap);

/** Append @p n scalars of step @p step to the event file *ev (NULL: nothing); after a failed
 *  write, one warning ("CMD: warning: ...") and *ev is closed and set to NULL: training goes
 *  on without events. */
void job_events(manta_tfevents **ev, const char *cmd, long step, const manta_tfscalar *v, size_t n);

/** The job record (the first of an invocation), written once the networks exist:
 *  "device_bytes" holds the bytes of the buffers live on each device then (networks,
 *  batches, optimizer state). */
void job_record_job(const job_log *l, const job_header *h);

/** Catch SIGINT and SIGTERM from now on: the handler sets the flag whose address is returned
 *  (the training driver's stop request: train/driver.h), so that training checkpoints and
 *  stops after the step under way. */
volatile sig_atomic_t *job_stop_signals(void);

#endif
