/* SPDX-License-Identifier: MIT */
/*
 * dpdk/metrics.h — the DPDK servers' metrics endpoint (--metrics-port; metrics/metrics.h is the
 * responder, the exposition and the rule that names the counters): another reader of the
 * counters the server gives its stats telemetry command (struct dpdk_server's counters), with
 * its latency histograms and splitnic_<who>_ready. The responder runs on a DPDK control thread
 * (off the lcores' cores) and reads as telemetry does: per-lcore counters summed, loaded
 * relaxed; the packet path does nothing for it.
 *
 * Ready (/-/ready 200, splitnic_<who>_ready 1) from dpdk_metrics_ready() (the server has
 * started) until dpdk_metrics_draining() (the first SIGINT/SIGTERM: HEALTH says draining); else
 * 503 "starting" or "draining". /-/live answers 200 while the endpoint runs.
 */
#ifndef DPDK_METRICS_H
#define DPDK_METRICS_H

#include <stddef.h>

#include "dpdk/server.h"
#include "metrics/metrics.h"

/* What a server gives its metrics beside its counters. */
struct dpdk_metrics_ops {
	/* every latency histogram, per model and stage */
	void (*histograms)(void *srv, metrics_hist_put put, void *arg);
	/* the name of model i (what m<i>_ keys name), NULL past the last */
	const char *(*model_name)(void *srv, unsigned i);
	/* its counters' keys (after the m<i>_ prefix) that are gauges, NULL-terminated */
	const char *const *gauges;
};

/* The endpoint started for server s (state srv) when run names a port: 0, or -errno with a
 * message in err (the server does not start). */
int dpdk_metrics_start(const struct dpdk_server *s, void *srv, const struct dpdk_run *run,
		       char *err, size_t errlen);
void dpdk_metrics_ready(void);
void dpdk_metrics_draining(void);
/* The endpoint stopped (before srv goes away). */
void dpdk_metrics_stop(void);

#endif /* DPDK_METRICS_H */
