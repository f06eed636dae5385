/**
 * @file prometheus.h
 * @brief The training monitor's Prometheus metrics (/metrics, text format
 *        0.0.4), written from the models of one or more runs (model.h);
 *        docs/monitor.md lists the names, types and labels.
 */
#ifndef MANTA_MONITOR_PROMETHEUS_H
#define MANTA_MONITOR_PROMETHEUS_H

#include "core/strbuf.h"
#include "monitor/model.h"

/**
 * Prometheus text format 0.0.4 of the models @p m[0 .. n-1] (borrowed)
 * appended to @p b (owned by the caller; an allocation that fails is kept in
 * its state, core/strbuf.h): one `# HELP` and `# TYPE` per metric, then a
 * sample per run (label `run`) and, for the per-rank metrics, per rank and
 * device (labels `rank`, `device`). A series whose value the run has not
 * written is left out. @p now (seconds since the epoch) dates the alerts and
 * the ranks' heartbeats. Nothing here changes a model.
 */
void mon_prometheus(const mon_model *const *m, int n, double now, manta_strbuf *b);

#endif
