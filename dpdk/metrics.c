// SPDX-License-Identifier: MIT
/* The DPDK servers' metrics endpoint (dpdk/metrics.h). One server per process, as telemetry. */
#include <errno.h>
#include <stdio.h>

#include <rte_lcore.h>

#include "dpdk/metrics.h"
#include "dpdk/reloader.h"

enum { M_STARTING = 0, M_READY, M_DRAINING };

static struct {
	const struct dpdk_server *s;
	void *srv;
	struct metrics_http *http;
	int state; /* atomic */
	struct metrics_keys keys;
} dm;

static int spawn_ctrl(pthread_t *t, void *(*fn)(void *), void *arg)
{
	return -rte_ctrl_thread_create(t, "metrics", NULL, fn, arg);
}

static const char *model_name(void *srv, unsigned i)
{
	return dm.s->metrics->model_name(srv, i);
}

static void write_metrics(void *arg, struct metrics_buf *b)
{
	const struct dpdk_metrics_ops *ops = dm.s->metrics;

	dm.keys.who = dm.s->who;
	dm.keys.arg = dm.srv;
	dm.keys.model_name = ops && ops->model_name ? model_name : NULL;
	dm.keys.gauges = ops ? ops->gauges : NULL;
	dm.s->counters(dm.srv, metrics_keys_put, &dm.keys);
	metrics_keys_write(&dm.keys, b);
	if (ops && ops->histograms)
		metrics_latency(b, dm.s->who, ops->histograms, dm.srv);
	metrics_ready(b, dm.s->who, __atomic_load_n(&dm.state, __ATOMIC_ACQUIRE) == M_READY);
	(void)arg;
}

static int reload(void *arg, char *msg, size_t len)
{
	(void)arg;
	return dpdk_reload_wait(dm.s, dm.srv, msg, len);
}

static const char *not_ready(void *arg)
{
	static const char *const why[] = {"starting", NULL, "draining"};

	(void)arg;
	return why[__atomic_load_n(&dm.state, __ATOMIC_ACQUIRE)];
}

int dpdk_metrics_start(const struct dpdk_server *s, void *srv, const struct dpdk_run *run,
		       char *err, size_t errlen)
{
	const struct metrics_src src = {
	    .write = write_metrics, .not_ready = not_ready, .reload = s->reloader ? reload : NULL};

	if (!run->metrics_port)
		return 0;
	dm.s = s;
	dm.srv = srv;
	dm.state = M_STARTING;
	dm.http =
	    metrics_http_start(run->metrics_addr, run->metrics_port, &src, spawn_ctrl, err, errlen);
	if (!dm.http)
		return -EINVAL;
	printf("%s: metrics on http://%s:%u/metrics\n", s->who,
	       run->metrics_addr ? run->metrics_addr : "0.0.0.0", metrics_http_port(dm.http));
	return 0;
}

void dpdk_metrics_ready(void)
{
	__atomic_store_n(&dm.state, M_READY, __ATOMIC_RELEASE);
}

void dpdk_metrics_draining(void)
{
	__atomic_store_n(&dm.state, M_DRAINING, __ATOMIC_RELEASE);
}

void dpdk_metrics_stop(void)
{
	metrics_http_stop(dm.http);
	dm.http = NULL;
	metrics_keys_free(&dm.keys);
}
