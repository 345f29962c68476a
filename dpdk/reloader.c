// SPDX-License-Identifier: MIT
/* The reloader thread of both DPDK servers (dpdk/reloader.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_lcore.h>

#include "dpdk/reloader.h"

#define RELOAD_IDLE_POLL_US 20000 /* between looks for a reload to do */
#define RELOAD_WAIT_POLL_US 10000 /* between looks at a ticket waited on */

bool dpdk_reloader_stopping(const struct dpdk_reloader *d)
{
	return __atomic_load_n(&d->quit, __ATOMIC_ACQUIRE) || d->stopped(d->arg);
}

void dpdk_reloader_finish(struct dpdk_reloader *d, int status, const char *fmt, ...)
{
	va_list ap;

	if (status)
		__atomic_add_fetch(&d->failed, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	conf_reload_finish(&d->t, d->who, status, fmt, ap);
	va_end(ap);
}

static bool stopping(void *arg)
{
	return dpdk_reloader_stopping(arg);
}

static void once(void *arg)
{
	struct dpdk_reloader *d = arg;

	d->once(d->arg);
}

static void *reload_main(void *arg)
{
	struct dpdk_reloader *d = arg;

	conf_reload_run(&d->t, stopping, once, d, RELOAD_IDLE_POLL_US);
	return NULL;
}

int dpdk_reloader_start(struct dpdk_reloader *d, char *err, size_t errlen)
{
	char name[32];
	int ret;

	snprintf(name, sizeof(name), "%s-reload", d->who);
	ret = rte_ctrl_thread_create(&d->thr, name, NULL, reload_main, d);
	if (ret) {
		snprintf(err, errlen, "reloader thread: %s", strerror(-ret));
		return ret;
	}
	d->running = true;
	return 0;
}

int dpdk_reloader_ask(struct dpdk_reloader *d)
{
	return conf_reload_ask(&d->t);
}

int dpdk_reloader_wait(struct dpdk_reloader *d, int n, char *msg, size_t len)
{
	for (long t = 0; !conf_reload_is_done(&d->t, n); t += RELOAD_WAIT_POLL_US) {
		if (t > d->wait_us) {
			snprintf(msg, len, "reload %d not done yet", n);
			return -ETIMEDOUT;
		}
		conf_reload_sleep_us(RELOAD_WAIT_POLL_US);
	}
	return conf_reload_outcome(&d->t, msg, len);
}

int dpdk_reload_ask(const struct dpdk_server *s, void *srv)
{
	struct dpdk_reloader *d = s->reloader(srv);

	return d ? dpdk_reloader_ask(d) : 0;
}

int dpdk_reload_wait(const struct dpdk_server *s, void *srv, char *msg, size_t len)
{
	struct dpdk_reloader *d = s->reloader(srv);

	if (!d) {
		snprintf(msg, len, "%s", s->no_reload);
		return -ENOTSUP;
	}
	return dpdk_reloader_wait(d, dpdk_reloader_ask(d), msg, len);
}

void dpdk_reloader_figures(const struct dpdk_reloader *d, uint64_t *version, uint64_t *done,
			   uint64_t *failed)
{
	*version = d ? __atomic_load_n(&d->version, __ATOMIC_RELAXED) : 1;
	*done = d ? (uint64_t)conf_reload_count(&d->t) : 0;
	*failed = d ? __atomic_load_n(&d->failed, __ATOMIC_RELAXED) : 0;
}

void dpdk_reloader_stop(struct dpdk_reloader *d)
{
	__atomic_store_n(&d->quit, true, __ATOMIC_RELEASE);
	if (d->running)
		pthread_join(d->thr, NULL);
	d->running = false;
}
