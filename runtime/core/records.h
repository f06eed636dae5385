/**
 * @file records.h
 * @brief The run records of a training run's metrics.jsonl: one struct per
 *        record kind, the writer of each (one JSON object a line) and the one
 *        reader (a line into a tagged record).
 *
 * Every record manta writes into metrics.jsonl goes through the writers here
 * and every reader of those files (the monitor, `manta report`) parses lines
 * with manta_rec_parse(). docs/monitor.md ("metrics.jsonl records") lists
 * every kind and member; the job record carries the schema version
 * (::MANTA_REC_SCHEMA).
 *
 * Phases are numbered one way: `"phase_index"`, counted from 0, with the
 * phase's name in `"phase"`. Files of schema 0 (before the version) wrote the
 * stereo trainer's `"phase"` as a number counted from 1 and its phase ends'
 * name in `"name"`; the reader turns those into the same fields
 * (phase_index = phase - 1).
 *
 * Numbers: the writers print each member with a fixed precision (listed in
 * docs/monitor.md); a non-finite value of a required member is written as the
 * JSON string "NaN", "Infinity" or "-Infinity", an optional member that is
 * NaN as `null` (or left out where documented). The reader accepts JSON
 * numbers, those strings and the bare tokens C's printf writes (`nan`,
 * `-nan`, `inf`, `-inf`) that files of schema 0 may hold.
 *
 * Strings are fixed-size, NUL-terminated arrays; a longer value is cut short
 * by the reader. Writers escape strings as JSON. No function here keeps
 * state: every call works on what it is given.
 */
#ifndef MANTA_CORE_RECORDS_H
#define MANTA_CORE_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/status.h"
#include "core/strbuf.h"

/** Schema version the writers follow (the job record's "schema"; files without one: 0). */
#define MANTA_REC_SCHEMA 1
/** Bytes of a short name (task, space, schedule, mode, phase), with the NUL. */
#define MANTA_REC_NAME_MAX 64
/** Bytes of a longer text (host, data, checkpoint path, device), with the NUL. */
#define MANTA_REC_TEXT_MAX 256
/** Bytes of an error record's message, with the NUL. */
#define MANTA_REC_MESSAGE_MAX MANTA_ERR_MSG_MAX
/** Most devices a job record lists (more are not read). */
#define MANTA_REC_MAX_DEVICES 64
/** Most phases a job record lists (more are not read). */
#define MANTA_REC_MAX_PHASES 16
/** Most ranks a progress record's "ranks" holds when read (more are not read). */
#define MANTA_REC_MAX_RANKS 4096

/** The kinds of record. */
typedef enum manta_rec_kind {
    MANTA_REC_UNKNOWN =
        0,               /**< a JSON object of a kind not known here (or lacking its key members) */
    MANTA_REC_JOB,       /**< `"event":"job"`: the first record of every invocation */
    MANTA_REC_PROGRESS,  /**< classification progress (no "event"; "step" and "loss") */
    MANTA_REC_STEP,      /**< `"event":"step"`: stereo progress */
    MANTA_REC_EVAL,      /**< `"eval":"val"`: classification validation at a phase's end */
    MANTA_REC_PHASE_END, /**< `"event":"phase_end"`: stereo evaluation at a phase's end */
    MANTA_REC_CHECKPOINT, /**< `"event":"checkpoint"` */
    MANTA_REC_ERROR,      /**< `"event":"error"`: an error stopped the job */
    MANTA_REC_STOPPED,    /**< `"event":"stopped"`: --stop-after, SIGINT or SIGTERM */
    MANTA_REC_DONE,       /**< `"event":"done"`: the end of the schedule */
    MANTA_REC_MEMBERSHIP  /**< `"event":"membership"`: an elastic job's ring formed again */
} manta_rec_kind;

/** One phase of the job record's schedule. */
typedef struct manta_rec_phase {
    char name[MANTA_REC_NAME_MAX]; /**< "full", "kernel", ... */
    long steps;                    /**< steps of the phase */
    int subnets;                   /**< sub-networks sampled per step */
    double lr;                     /**< learning rate (written with %g) */
    bool distill;                  /**< distillation from the largest sub-network */
} manta_rec_phase;

/** `{"event":"job","schema":1,"time":T,...}`: what an invocation trains, and where. */
typedef struct manta_rec_job {
    int schema;  /**< schema version (written: MANTA_REC_SCHEMA; read: 0 when absent) */
    double time; /**< Unix time, seconds (%.3f) */
    char task[MANTA_REC_NAME_MAX];     /**< "classification" or "stereo" */
    char space[MANTA_REC_TEXT_MAX];    /**< the search space's name */
    char schedule[MANTA_REC_NAME_MAX]; /**< the schedule preset */
    char data[MANTA_REC_TEXT_MAX];     /**< the data ("fashion-mnist", "synthetic", a folder) */
    long steps;                        /**< steps of the schedule (-1 read when absent) */
    long start_step;                   /**< first step of this invocation, 0-based */
    int batch, world_size, devices_per_rank,
        replicas;                  /**< global batch, ranks, devices, replicas */
    char mode[MANTA_REC_NAME_MAX]; /**< "data" or "subnet" */
    char host[MANTA_REC_TEXT_MAX]; /**< rank 0's host */
    int n_devices;                 /**< entries of devices and device_bytes */
    char devices[MANTA_REC_MAX_DEVICES][MANTA_REC_TEXT_MAX]; /**< rank 0's device names */
    unsigned long long device_bytes[MANTA_REC_MAX_DEVICES];  /**< bytes live on each then */
    int n_phases;                                            /**< entries of phases */
    manta_rec_phase phases[MANTA_REC_MAX_PHASES];            /**< the schedule */
} manta_rec_job;

/**
 * One rank's figures of a progress record's last step. Strings "" and NaN
 * numbers stand for null (the other ranks' device and host are not known to
 * rank 0; ring_bytes_per_s is null with one rank).
 */
typedef struct manta_rec_rank {
    int rank;                                        /**< its number */
    char device[MANTA_REC_TEXT_MAX];                 /**< its first device ("" : null) */
    char host[MANTA_REC_TEXT_MAX];                   /**< its host ("" : null) */
    double images_per_s;                             /**< samples per second (%.2f) */
    double compute_s, data_wait_s, allreduce_wait_s; /**< seconds of the step (%.6f) */
    double ring_bytes_per_s; /**< allreduce bytes per second of wait (%.0f) */
    double heartbeat;        /**< Unix time the rank was last heard of (%.3f) */
    double step_ms;          /**< the rank's step time, milliseconds (%.1f);
                                                  NaN: left out (older files may hold it) */
} manta_rec_rank;

/** The sizes of the sub-networks trained since the previous progress record. */
typedef struct manta_rec_subnets {
    long n;                                     /**< how many; 0: the member is absent; -1:
                                                  present without "n" (read only) */
    double macs_mean, macs_min, macs_max;       /**< MACs of one image (%.0f) */
    double params_mean, params_min, params_max; /**< parameters (%.0f) */
} manta_rec_subnets;

/**
 * Classification progress: `{"step":S,"steps":N,"phase":"kernel","phase_index":1,
 * "loss":L,"batch_top1":T,"r":R,"lr":LR,"images_per_s":I,"data_wait":W,"step_ms":M,
 * "eta_s":E,"time":T,"subnets":{...},"ranks":[...]}`.
 */
typedef struct manta_rec_progress {
    long step;                      /**< steps done, counted from 1 */
    long steps;                     /**< steps of the schedule (-1 read when absent) */
    char phase[MANTA_REC_NAME_MAX]; /**< the last step's phase name */
    int phase_index;                /**< its index, from 0 (-1 read when not known) */
    double loss;                    /**< mean loss of the window (%.5f) */
    double batch_top1;              /**< batch top-1 of the window (%.4f) */
    int r;                          /**< resolution of the last step */
    double lr;                      /**< learning rate of the last step (%.6f) */
    double images_per_s;            /**< %.1f */
    double data_wait;               /**< share of the window waiting for data (%.4f) */
    double step_ms;                 /**< mean step time, milliseconds (%.1f) */
    double eta_s;                   /**< time left, seconds (%.0f) */
    double time;                    /**< Unix time (%.3f); NaN: left out (the --json line) */
    manta_rec_subnets subnets;      /**< n == 0: left out; "n" written when n > 0 */
    const manta_rec_rank *ranks; /**< (n_ranks) by rank; writers borrow it; n_ranks 0: left out */
    int n_ranks;                 /**< entries of ranks */
} manta_rec_progress;

/**
 * Stereo progress: `{"event":"step","step":S,"phase":"kernel","phase_index":1,"loss":L,
 * "kd_loss":K,"epe":E,"round":R,"lr":LR,"pairs_per_s":P,"time":T,"ranks":[...]}`.
 */
typedef struct manta_rec_step {
    long step;                      /**< steps done, counted from 1 */
    char phase[MANTA_REC_NAME_MAX]; /**< the step's phase name ("" read from schema 0) */
    int phase_index;                /**< its index, from 0 */
    double loss, kd_loss;           /**< the step's loss and its distillation part (%.6f) */
    double epe;                     /**< the finest prediction's end-point error, pixels (%.5f) */
    int round;                      /**< the loss weights' round, counted from 1 */
    double lr;                      /**< %.6f */
    double pairs_per_s;             /**< %.3f */
    double time;                    /**< Unix time (%.3f) */
    const manta_rec_rank *ranks;    /**< as in manta_rec_progress */
    int n_ranks;                    /**< entries of ranks */
} manta_rec_step;

/**
 * Classification validation at a phase's end: `{"eval":"val","phase":"kernel",
 * "phase_index":1,"step":S,"max_top1":A,"min_top1":B}` (largest, smallest sub-network).
 */
typedef struct manta_rec_eval {
    char phase[MANTA_REC_NAME_MAX]; /**< the phase that ended */
    int phase_index;                /**< its index, from 0 (-1 read from schema 0) */
    long step;                      /**< steps done */
    double max_top1, min_top1;      /**< top-1 of the largest and smallest (%.4f) */
} manta_rec_eval;

/** A stereo evaluation's figures on the held-out pairs. */
typedef struct manta_rec_scores {
    double epe;     /**< end-point error, pixels (%.5f) */
    double bad3;    /**< % of pixels off by more than 3 px (%.4f) */
    double d1;      /**< KITTI's D1, % (%.4f) */
    double epe_noc; /**< EPE of the non-occluded pixels (%.5f) */
} manta_rec_scores;

/**
 * Stereo evaluation at a phase's end: `{"event":"phase_end","phase":"kernel",
 * "phase_index":1,"name":"kernel","step":S,"largest":{SCORES},"smallest":{SCORES}}`
 * ("name" repeats "phase" for readers of schema 0).
 */
typedef struct manta_rec_phase_end {
    char phase[MANTA_REC_NAME_MAX];     /**< the phase that ended */
    int phase_index;                    /**< its index, from 0 */
    long step;                          /**< steps done */
    manta_rec_scores largest, smallest; /**< the largest and smallest sub-network's */
} manta_rec_phase_end;

/** `{"event":"checkpoint","time":T,"step":S,"path":"phase-1-full.ckpt"}`. */
typedef struct manta_rec_checkpoint {
    double time;                   /**< Unix time (%.3f) */
    long step;                     /**< the step the checkpoint resumes at */
    char path[MANTA_REC_TEXT_MAX]; /**< its name in the run's folder */
} manta_rec_checkpoint;

/** `{"event":"error","time":T,"step":S,"rank":R,"host":"...","message":"..."}`. */
typedef struct manta_rec_error {
    double time;                         /**< Unix time (%.3f) */
    long step;                           /**< steps done, -1: unknown */
    int rank;                            /**< the rank that failed (-1 read when absent) */
    char host[MANTA_REC_TEXT_MAX];       /**< rank 0's host */
    char message[MANTA_REC_MESSAGE_MAX]; /**< one line */
} manta_rec_error;

/** `{"event":"stopped","time":T,"step":S,"signal":B}`. */
typedef struct manta_rec_stopped {
    double time; /**< Unix time (%.3f) */
    long step;   /**< steps done; --resume continues there */
    bool signal; /**< SIGINT / SIGTERM (false: --stop-after) */
} manta_rec_stopped;

/** `{"event":"done","time":T,"step":S,"seconds":X}`. */
typedef struct manta_rec_done {
    double time;    /**< Unix time (%.3f) */
    long step;      /**< steps of the schedule */
    double seconds; /**< this invocation's training time (%.1f) */
} manta_rec_done;

/** `{"event":"membership","time":T,"generation":G,"world":W,"was":P,"step":S,"cause":"...",
 *  "state_bytes":B}`: generation G of an elastic job formed with W ranks (P before; 0 for
 *  the first), continuing after S steps. */
typedef struct manta_rec_membership {
    double time;                    /**< Unix time (%.3f) */
    long generation;                /**< from 1 */
    int world, was;                 /**< ranks now and in the generation before (0: none) */
    long step;                      /**< steps done when the ring formed */
    char cause[MANTA_REC_NAME_MAX]; /**< "start", "failure" (a rank died or stalled), "join" */
    long long state_bytes;          /**< bytes of state sent to new ranks (0: none) */
} manta_rec_membership;

/**
 * A record of any kind. The writer reads the member of @c kind; the reader
 * fills it. A parsed record owns its progress or step record's ranks array:
 * manta_rec_free() releases it.
 */
typedef struct manta_rec {
    manta_rec_kind kind; /**< which member holds the record */
    union {
        manta_rec_job job;
        manta_rec_progress progress;
        manta_rec_step step;
        manta_rec_eval eval;
        manta_rec_phase_end phase_end;
        manta_rec_checkpoint checkpoint;
        manta_rec_error error;
        manta_rec_stopped stopped;
        manta_rec_done done;
        manta_rec_membership membership;
    };
} manta_rec;

/** Short name of a kind ("job", "progress", ..., "unknown"). Never NULL. */
const char *manta_rec_kind_name(manta_rec_kind k);

/** @name Writers
 *  Each appends its record @p r as one JSON object (no newline) to @p b, the
 *  members in the order and precision of docs/monitor.md; @p r (and the ranks
 *  it points to) is read, not kept. They cannot fail: an append that runs out
 *  of memory sets b->oom (core/strbuf.h), which the caller checks. */
/** @{ */
void manta_rec_job_json(const manta_rec_job *r, manta_strbuf *b);
void manta_rec_progress_json(const manta_rec_progress *r, manta_strbuf *b);
void manta_rec_step_json(const manta_rec_step *r, manta_strbuf *b);
void manta_rec_eval_json(const manta_rec_eval *r, manta_strbuf *b);
void manta_rec_phase_end_json(const manta_rec_phase_end *r, manta_strbuf *b);
void manta_rec_checkpoint_json(const manta_rec_checkpoint *r, manta_strbuf *b);
void manta_rec_error_json(const manta_rec_error *r, manta_strbuf *b);
void manta_rec_stopped_json(const manta_rec_stopped *r, manta_strbuf *b);
void manta_rec_done_json(const manta_rec_done *r, manta_strbuf *b);
void manta_rec_membership_json(const manta_rec_membership *r, manta_strbuf *b);
/** @} */

/**
 * Append @p r (the member its kind names) as one JSON object to @p b.
 * @return MANTA_ERR_INVALID_ARG for MANTA_REC_UNKNOWN or a kind out of range
 *         (nothing appended), else MANTA_OK (check b->oom).
 */
manta_status manta_rec_json(const manta_rec *r, manta_strbuf *b, manta_err *err);

/**
 * Write @p r as one line (the JSON object and a newline) to @p f and flush it.
 * @return MANTA_ERR_INVALID_ARG as manta_rec_json(); MANTA_ERR_NO_MEMORY
 *         (nothing written); MANTA_ERR_IO when the write or the flush fails.
 */
manta_status manta_rec_write(FILE *f, const manta_rec *r, manta_err *err);

/**
 * Copy the line @p in (@p n bytes) to @p out with the bare non-finite numbers
 * C's printf writes (`nan`, `-nan`, `inf`, `-inf`, `infinity`, any case)
 * outside strings replaced by the JSON strings "NaN", "Infinity" and
 * "-Infinity", so that it parses as JSON. @p out holds at least 4 @p n + 1
 * bytes; it is NUL-terminated. @return the length written.
 */
size_t manta_rec_clean(const char *in, size_t n, char *out);

/**
 * Read one line of metrics.jsonl (@p n bytes, no newline needed; surrounding
 * blanks allowed; bare non-finite tokens accepted as manta_rec_clean() reads
 * them) into @p out. Unknown members are ignored; a member that is absent or
 * of another type reads as NaN (numbers), -1 (counts, steps, indices), "" or
 * false. A JSON object of no known kind, or a progress line without "step" or
 * "loss", gives MANTA_REC_UNKNOWN and MANTA_OK.
 * @param out zero-initialised or an earlier result (its ranks are freed first).
 * @return MANTA_ERR_FORMAT ("not a JSON object") when the line does not parse
 *         as a JSON object or holds a NUL; MANTA_ERR_NO_MEMORY. @p out is then
 *         of kind MANTA_REC_UNKNOWN.
 */
manta_status manta_rec_parse(const char *line, size_t n, manta_rec *out, manta_err *err);

/** Free what a parsed @p r owns (a progress or step record's ranks) and zero it. NULL allowed. */
void manta_rec_free(manta_rec *r);

#endif
