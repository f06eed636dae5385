/**
 * @file model_impl.h
 * @brief Internal to runtime/monitor/: the fields of a run's model (model.h),
 *        shared by the files that fill it (model.c, the reader) and those that
 *        answer from it (alerts.c, answers.c, prometheus.c). Not for callers
 *        outside the folder: they see the opaque ::mon_model of model.h.
 *
 * Absent numbers are NaN, absent steps and ranks -1, absent strings "".
 */
#ifndef MANTA_MONITOR_MODEL_IMPL_H
#define MANTA_MONITOR_MODEL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/records.h"
#include "monitor/model.h"

/* How the run ended, as its records say (ST_RUNNING: not yet). */
enum { ST_RUNNING, ST_DONE, ST_STOPPED, ST_FAILED };

/* The members of a progress record's "subnets" object: the sizes of the sub-networks sampled
 * since the previous report (docs/monitor.md). */
enum {
    SUB_N_NETS,
    SUB_MACS_MEAN,
    SUB_MACS_MIN,
    SUB_MACS_MAX,
    SUB_PARAMS_MEAN,
    SUB_PARAMS_MIN,
    SUB_PARAMS_MAX,
    SUB_N
};
#define MON_MAX_PHASES 16

typedef struct rank_row {
    int rank;
    char device[MANTA_REC_TEXT_MAX], host[MANTA_REC_TEXT_MAX];
    double images_per_s, compute_s, data_wait_s, allreduce_wait_s, ring_bytes_per_s, heartbeat;
    char error[MANTA_REC_MESSAGE_MAX];
} rank_row;

typedef struct val_row {
    char phase[MANTA_REC_NAME_MAX];
    long step;
    bool epe; /* stereo: end-point error in pixels; else top-1 */
    double largest, smallest;
} val_row;

struct mon_model {
    char name[128];
    mon_alert_opts ao;
    /* records: a ring of lines, oldest at head */
    char **rec;
    size_t *rec_len;
    size_t head, count, bytes;
    uint64_t last_seq, malformed, generation;
    /* the line being read */
    char *pend;
    size_t pend_n;
    bool skipping;
    /* the file */
    long long off;
    unsigned long long dev, ino;
    bool have_file;
    double activity;
    manta_rec *cur; /* the record being read (core/records.h) */
    /* job */
    char *job_json;
    char task[MANTA_REC_NAME_MAX], space[MANTA_REC_TEXT_MAX], schedule[MANTA_REC_NAME_MAX];
    long steps;
    int n_phases, world;
    char phase_name[MON_MAX_PHASES][MANTA_REC_NAME_MAX];
    long phase_steps[MON_MAX_PHASES];
    int phase_subnets[MON_MAX_PHASES];
    /* progress */
    bool have_progress;
    long step, reports;
    int phase; /* 0-based, -1 unknown */
    char cur_phase[MANTA_REC_NAME_MAX];
    double loss, batch_top1, lr, images_per_s, step_ms, data_wait, eta_s, epe;
    double subnets[SUB_N]; /* the last report's sampled sub-networks (NaN: not given) */
    double prev_loss;
    int grow_run, grow_phase;
    long nan_step, grow_step;
    /* checkpoints, validation, end */
    long ckpts, last_ckpt_step;
    long member_changes; /* elastic: times the ring formed again (world: its ranks now) */
    char last_ckpt[MANTA_REC_TEXT_MAX];
    val_row val[MON_MAX_VALS];
    int n_val;
    int state;
    char err_msg[MANTA_REC_MESSAGE_MAX];
    int err_rank;
    long err_step;
    /* ranks, sorted by rank */
    rank_row *ranks;
    int n_ranks;
};

/**
 * Whether rank row @p r of @p m counts as dead at @p now (seconds since the
 * epoch): an error record names it, or its heartbeat is older than the rank
 * timeout while the run is not over (alerts.c; the page, /api/ranks and
 * `manta_train_rank_up` agree with the `rank_dead` alert).
 */
bool mon_rank_dead(const mon_model *m, const rank_row *r, double now);

#endif
