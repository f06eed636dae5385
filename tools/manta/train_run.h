/* manta train: the options and the state of one invocation, shared by train.c
 * (the command: options, the job, data, devices and trainers set up) and
 * train_loop.c (the classification task of the training driver, train/driver.h: the
 * steps, progress, checkpoints and evaluations). */
#ifndef MANTA_TOOLS_TRAIN_RUN_H
#define MANTA_TOOLS_TRAIN_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "core/tfevents.h"
#include "data/prefetch.h"
#include "dist/ring.h"
#include "job.h"
#include "monitor_http/server.h"
#include "rundata.h"
#include "train/dp.h"
#include "classify/ofa_train.h"
#include "classify/trainstate.h"

/* What the command line says (on --resume, the checkpoint's settings replace some). */
typedef struct train_opts {
    const char *space, *data, *schedule, *out;
    const char *tensorboard; /* folder of the event file (NULL: out) */
    job_opts job;            /* devices, --mode, the distributed job, the monitor */
    int batch, log_every, val, eval_images, recal_images, channels;
    long ckpt_every, stop_after;
    unsigned long long seed;
    double lr_scale;
    dp_mode mode;
    long bucket_kib; /* gradient bucket size (KiB) */
    bool json, resume, no_overlap;
    bool elastic; /* --elastic: membership from a manta rendezvous service */
} train_opts;

struct train_elastic;

/* Resolution of the batch (epoch, batch): that of global step epoch * per_epoch + batch. */
typedef struct res_ctx {
    const ofa_trainer *t;
    long per_epoch;
} res_ctx;

/* One invocation: its settings, data, devices, trainer and outputs. */
typedef struct train_run {
    train_opts o;
    dist_config cfg;
    int rank, quiet; /* only rank 0 talks, except for errors */
    char host[256], out_dir[1024], latest[1100];
    ofa_space sp;
    train_meta meta;
    run_data rd;
    bool have_data;
    ofa_schedule sched;
    double work[OFA_MAX_PHASES]; /* per step of each phase, for the ETA */
    long per_epoch, start, total;
    mcl_dev *devs[JOB_MAX_DEVICES];
    int n_dev, replicas;
    mcl_dev *d; /* the first device */
    ring_comm *ring;
    dp_trainer *dp;
    ofa_trainer *t; /* the first replica */
    loader_state ls;
    res_ctx rctx;
    prefetch *pf;
    FILE *metrics;
    manta_tfevents *events;   /* rank 0; NULL after a failed write (warned once) */
    mon_server *monitor;      /* rank 0 with --monitor */
    struct train_elastic *el; /* --elastic: the membership state (train_elastic.c) */
    bool outputs_taken;       /* --elastic: metrics.jsonl was begun by an earlier rank 0 */
    bool join_pending;        /* --elastic: a new rank waits; the ring re-forms after the step */
} train_run;

/** train_loop()'s status when the ring failed under --elastic: the job goes on without the
 *  failed rank (train_elastic()). */
#define TRAIN_REFORM (-1)

/** The replicas of r->devs on r->ring (ofa_dp_create()) and, without --elastic, the
 *  checkpoint of --resume; false after printing the error. */
bool train_replicas(train_run *r);
/** Rank 0: the output folder, metrics.jsonl and the event file (once); false after printing. */
bool train_outputs_open(train_run *r);
/** (Re)start the data loader's thread at r->ls; false after printing. */
bool train_prefetch_start(train_run *r);
/** Rank 0: the job record and, with --monitor, the monitor (once); false after printing. */
bool train_monitor_start(train_run *r);
/** What runs: a text header, or the first JSON line (rank 0). */
void train_print_start(const train_run *r);
/** Elastic training (--elastic): generations formed by the rendezvous service, each trained
 *  through train_loop() until the schedule ends or a rank fails; the exit status. */
int train_elastic(train_run *r);
/** --elastic, rank 0 at a step boundary: whether the rendezvous service said that a new rank
 *  waits (never blocks). */
bool train_elastic_poll(train_run *r);
/** --elastic: keep the state after @p done steps as this rank's snapshot (train_elastic.c). */
manta_status train_elastic_snapshot(train_run *r, long done, manta_err *err);

/** Print "manta train: MSG" on stderr and (rank 0) add the error record of docs/monitor.md
 *  for it after @p step steps (-1: unknown); the record's rank is the one the message names
 *  other than this one (a peer that failed), else this rank. */
void train_fail(train_run *r, long step, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** Train from r->start to the end of the schedule through the training driver, or until
 *  --stop-after or SIGINT/SIGTERM (handlers installed here: job_stop_signals()),
 *  checkpointing and stopping after the step under way. Returns the exit status: 0, 1
 *  after an error (printed, and its record), 130 after a signal. */
int train_loop(train_run *r);

#endif
