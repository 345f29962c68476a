/* SPDX-License-Identifier: MIT */
/*
 * conf/reload.h — the bookkeeping of a server's reloads, shared by the DPDK servers' reloader
 * (dpdk/reloader.c: splitnic-host's and splitnic-nic's) and splitnic serve's (serve/models.c),
 * and the file check that keeps an unchanged model: any thread asks (SIGHUP, telemetry,
 * POST /-/reload) and gets a ticket; one reloader thread takes every ask made so far and serves
 * them with one reload (conf_reload_run); whoever asked waits until its ticket is done and reads
 * the outcome.
 * libc and GCC atomics: no lock, so a signal-driven ask never waits.
 */
#ifndef CONF_RELOAD_H
#define CONF_RELOAD_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct conf_reload {
	int asked, started, done; /* atomic: reloads asked for, begun, finished */
	int status;		  /* the last one's: 0 or -errno */
	char msg[256];		  /* ... and what it says */
};

/* Ask for a reload: its ticket (1, 2, ...). */
int conf_reload_ask(struct conf_reload *t);

/* The reloader: the last ticket asked and not yet begun, now begun (the asks that came meanwhile
 * are served by this one reload); 0 when there is none. */
int conf_reload_take(struct conf_reload *t);

/* The reloader, at the end of a reload: its outcome, said on stdout as "WHO: reload: ...". */
void conf_reload_finish(struct conf_reload *t, const char *who, int status, const char *fmt,
			va_list ap);

/* The reloader, after the reload begun for ticket `asked`: every ticket up to it done. */
void conf_reload_served(struct conf_reload *t, int asked);

/* Is ticket n done? */
int conf_reload_is_done(const struct conf_reload *t, int n);

/* Reloads finished so far. */
int conf_reload_count(const struct conf_reload *t);

/* A done ticket's outcome: the last reload's status, its message copied to msg. */
int conf_reload_outcome(const struct conf_reload *t, char *msg, size_t len);

/* The same file as when it was loaded (device, inode, size and modification time)? A reload
 * keeps a model whose file this says is unchanged. */
bool conf_reload_same_file(const struct stat *x, const struct stat *y);

/* A model file as loaded at start, for conf_reload_same_file: zeroed where path is NULL or stat
 * fails (never the same file again). */
void conf_reload_stat(const char *path, struct stat *st);

/* The ids of the n models a reload would serve: 0 where no two are the same, else -EINVAL with
 * "model id ID given twice" in err. */
int conf_reload_ids_unique(const uint32_t *id, uint32_t n, char *err, size_t errlen);

/* The reloader thread's pause while it waits on the packet loop. */
void conf_reload_sleep_us(long us);

/* The reloader thread's life until stop(arg): the asks made so far served by one once(arg) (which
 * ends with conf_reload_finish), a pause of idle_us between looks when none is waiting. */
void conf_reload_run(struct conf_reload *t, bool (*stop)(void *arg), void (*once)(void *arg),
		     void *arg, long idle_us);

#endif /* CONF_RELOAD_H */
