/* SPDX-License-Identifier: MIT */
/*
 * dpdk/reloader.h — the reloader thread both DPDK servers run for their models (splitnic-host's
 * host/dpdk_reload.c, splitnic-nic's nicfw/nic/reload.c): a DPDK control thread, never a worker
 * lcore, that takes the reloads asked for so far (conf/reload.h's tickets: SIGHUP, the telemetry
 * command, POST /-/reload) and serves them with one call of the server's once(); once() ends
 * with dpdk_reloader_finish, the outcome said on stdout as "WHO: reload: ...". Whoever asked
 * waits off the lcores until its ticket is done (dpdk_reloader_wait). The version of the models
 * served, the reloads done and the ones that failed are read from any thread.
 */
#ifndef DPDK_RELOADER_H
#define DPDK_RELOADER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/reload.h"
#include "dpdk/server.h"

struct dpdk_reloader {
	/* set by the server before dpdk_reloader_start */
	const char *who; /* "host", "nic": the messages' prefix, the thread's WHO-reload */
	long wait_us;	 /* dpdk_reloader_wait gives up on a ticket after this long */
	bool (*stopped)(void *arg); /* the server stops: no reload is begun or waited on */
	void (*once)(void *arg);    /* one reload, ended by dpdk_reloader_finish */
	void *arg;

	pthread_t thr;
	bool running;
	bool quit;	      /* atomic */
	struct conf_reload t; /* the reloads asked for, begun, done, the last outcome */
	uint64_t version;     /* atomic: of the models served, 1 at start (set by the server) */
	uint64_t failed;      /* atomic: reloads that ended with an error */
};

/* The thread started: 0, or -errno with err. */
int dpdk_reloader_start(struct dpdk_reloader *d, char *err, size_t errlen);

/* The reloader asked to quit, or the server stops. */
bool dpdk_reloader_stopping(const struct dpdk_reloader *d);

/* The end of a reload: status 0 or -errno, and what it says (after "WHO: reload: "). */
void dpdk_reloader_finish(struct dpdk_reloader *d, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A reload asked for (atomics only, from any thread, a signal handler's too): its ticket. */
int dpdk_reloader_ask(struct dpdk_reloader *d);

/* Off the lcores: until ticket n is done (at most wait_us): its status, what it said in msg. */
int dpdk_reloader_wait(struct dpdk_reloader *d, int n, char *msg, size_t len);

/* A server's reload asked for (SIGHUP: atomics only): its ticket, 0 where it has no reloader
 * this run. */
int dpdk_reload_ask(const struct dpdk_server *s, void *srv);

/* A server's reload asked for and waited on, off the lcores (the telemetry command, POST
 * /-/reload): its status and what it said in msg; -ENOTSUP and s->no_reload where the server
 * has no reloader this run. */
int dpdk_reload_wait(const struct dpdk_server *s, void *srv, char *msg, size_t len);

/* The version served, the reloads done and failed (d NULL: no reloader: 1, 0, 0). */
void dpdk_reloader_figures(const struct dpdk_reloader *d, uint64_t *version, uint64_t *done,
			   uint64_t *failed);

/* The thread asked to quit and joined (when it runs). */
void dpdk_reloader_stop(struct dpdk_reloader *d);

#endif /* DPDK_RELOADER_H */
