// SPDX-License-Identifier: MIT
/* A server's reloads: tickets, the reloader thread's loop, the file and id checks. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conf/reload.h"

/* Ask for a reload: its ticket (1, 2, ...). */
int conf_reload_ask(struct conf_reload *t)
{
	return __atomic_add_fetch(&t->asked, 1, __ATOMIC_ACQ_REL);
}

/* The reloader: the last ticket asked and not yet begun, now begun (the asks that came meanwhile
 * are served by this one reload); 0 when there is none. */
int conf_reload_take(struct conf_reload *t)
{
	int asked = __atomic_load_n(&t->asked, __ATOMIC_ACQUIRE);

	if (asked == __atomic_load_n(&t->started, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&t->started, asked, __ATOMIC_RELEASE);
	return asked;
}

/* The reloader, at the end of a reload: its outcome, said on stdout as "WHO: reload: ...". */
void conf_reload_finish(struct conf_reload *t, const char *who, int status, const char *fmt,
			va_list ap)
{
	vsnprintf(t->msg, sizeof(t->msg), fmt, ap);
	t->status = status;
	printf("%s: reload: %s\n", who, t->msg);
	fflush(stdout);
	__atomic_add_fetch(&t->done, 1, __ATOMIC_RELEASE);
}

/* The reloader, after the reload begun for ticket `asked`: every ticket up to it done. */
void conf_reload_served(struct conf_reload *t, int asked)
{
	while (__atomic_load_n(&t->done, __ATOMIC_RELAXED) < asked)
		__atomic_add_fetch(&t->done, 1, __ATOMIC_RELEASE);
}

/* Is ticket n done? */
int conf_reload_is_done(const struct conf_reload *t, int n)
{
	return __atomic_load_n(&t->done, __ATOMIC_ACQUIRE) >= n;
}

/* Reloads finished so far. */
int conf_reload_count(const struct conf_reload *t)
{
	return __atomic_load_n(&t->done, __ATOMIC_RELAXED);
}

/* A done ticket's outcome: the last reload's status, its message copied to msg. */
int conf_reload_outcome(const struct conf_reload *t, char *msg, size_t len)
{
	snprintf(msg, len, "%s", t->msg);
	return t->status;
}

/* The same file as when it was loaded (device, inode, size and modification time)? A reload
 * keeps a model whose file this says is unchanged. */
bool conf_reload_same_file(const struct stat *x, const struct stat *y)
{
	return x->st_dev == y->st_dev && x->st_ino == y->st_ino && x->st_size == y->st_size &&
	       x->st_mtim.tv_sec == y->st_mtim.tv_sec && x->st_mtim.tv_nsec == y->st_mtim.tv_nsec;
}

/* A model file as loaded at start, for conf_reload_same_file: zeroed where path is NULL or stat
 * fails (never the same file again). */
void conf_reload_stat(const char *path, struct stat *st)
{
	if (!path || stat(path, st))
		memset(st, 0, sizeof(*st));
}

/* The ids of the n models a reload would serve: 0 where no two are the same, else -EINVAL with
 * "model id ID given twice" in err. */
int conf_reload_ids_unique(const uint32_t *id, uint32_t n, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++)
			if (id[i] == id[j]) {
				snprintf(err, errlen, "model id %#x given twice", id[i]);
				return -EINVAL;
			}
	return 0;
}

/* The reloader thread's pause while it waits on the packet loop. */
void conf_reload_sleep_us(long us)
{
	nanosleep(&(struct timespec){us / 1000000, us % 1000000 * 1000}, NULL);
}

/* The reloader thread's life until stop(arg): the asks made so far served by one once(arg) (which
 * ends with conf_reload_finish), a pause of idle_us between looks when none is waiting. */
void conf_reload_run(struct conf_reload *t, bool (*stop)(void *arg), void (*once)(void *arg),
		     void *arg, long idle_us)
{
	while (!stop(arg)) {
		int asked = conf_reload_take(t);

		if (!asked) {
			conf_reload_sleep_us(idle_us);
			continue;
		}
		once(arg);
		conf_reload_served(t, asked);
	}
}
