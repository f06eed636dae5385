/**
 * @file alerts.h
 * @brief The training monitor's alerts: what holds for a run at a given time,
 *        computed from its model (model.h) and the thresholds the model was
 *        created with (docs/monitor.md, "Alerts").
 *
 * Kinds: `error` (an error record stopped the job), `loss_nan` (a report's
 * loss was not a number; stays), `loss_growing` (the loss grew in `grow`
 * consecutive reports of one phase), `rank_slow` (a rank's images/s more than
 * `slow_pct` % below the median of two or more ranks), `rank_dead` (a rank's
 * heartbeat older than `rank_timeout_s` while the run is not over), `stalled`
 * (no new record for `stall_s` while the run is not over). The model's reader
 * keeps the counts these need; nothing here changes a model.
 */
#ifndef MANTA_MONITOR_ALERTS_H
#define MANTA_MONITOR_ALERTS_H

/** Most alerts one call reports. */
#define MON_MAX_ALERTS 64

/** One model (model.h). Opaque. */
typedef struct mon_model mon_model;

/** Thresholds of the alerts (docs/monitor.md, "Alerts"). */
typedef struct mon_alert_opts {
    int grow;              /**< loss grew for this many consecutive reports of a phase (>= 1) */
    double slow_pct;       /**< a rank's images/s below the median by more than this % */
    double stall_s;        /**< no new record for this many seconds while the run is not over */
    double rank_timeout_s; /**< a rank's heartbeat older than this while the run is not over */
} mon_alert_opts;

/** The defaults into @p o: grow 5, slow 25 %, stall 300 s, rank timeout 120 s. */
void mon_alert_opts_default(mon_alert_opts *o);

/** One alert. Strings are NUL-terminated and may be cut short. */
typedef struct mon_alert {
    char kind[16]; /**< "loss_nan", "loss_growing", "rank_slow", "rank_dead", "stalled", "error" */
    int rank;      /**< the rank concerned, or -1 */
    long step;     /**< the step it concerns, or -1 */
    char message[256]; /**< one line for a person */
} mon_alert;

/**
 * The alerts that hold for @p m at time @p now (seconds since the epoch), at
 * most ::MON_MAX_ALERTS, written to @p out (room for ::MON_MAX_ALERTS, owned
 * by the caller), in the order of the kinds above. Never fails.
 * @return how many were written.
 */
int mon_model_alerts(const mon_model *m, double now, mon_alert *out);

#endif
