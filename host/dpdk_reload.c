// SPDX-License-Identifier: MIT
/*
 * splitnic-host: models loaded, replaced and unloaded while the workers run (host/host_dpdk.h,
 * "dpdk_reload.c"). One reload, on the reloader's thread (a DPDK control thread):
 *
 *   1. the command line and the configuration file read again (conf_argv, host_opts_parse);
 *   2. each --model kept when its spec and its file are the ones served (same text, same
 *      device, inode, size and modification time), else loaded into a free slot: the model, and
 *      on every worker its queue, host stages, NIC executor and templates (host_slot_setup),
 *      while the slot is off: no worker looks at it yet;
 *   3. the new slots switched on, then the new map published (one atomic store) and the epoch
 *      moved on: once every worker has begun a turn since (its model_epoch), none admits a
 *      request to a slot the map no longer names;
 *   4. each slot no longer named drains: its requests (queued, at the NIC, in the fallback,
 *      held) finish on that version, and the NIC's notices find it by model id; when no
 *      worker holds one (slot_reqs) it is switched off, the epoch moves on again, every worker
 *      begins a turn and no telemetry read is under way (a grace period): then its state and
 *      the old map are freed, and the slot is free again.
 *
 * The workers never wait and take no lock: they read the map and the slots' switches with
 * acquire loads and publish their epoch and their per-slot counts with release stores. A reload
 * that fails before step 3 (options, a model file, sizes beyond the buffers set at start, no
 * free slot) undoes what it loaded and changes nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rte_lcore.h>

#include "conf/reload.h"
#include "dpdk/reloader.h"
#include "host/host_dpdk.h"

#define RELOAD_POLL_US 1000
#define RELOAD_DRAIN_S 30 /* a slot drains at most this long, then the reload goes on */
#define RELOAD_EPOCH_S 5  /* every worker begins a turn within this */

struct host_reload {
	struct host_app *a;
	struct dpdk_reloader d;		 /* the thread, the tickets, the version served */
	char *spec[HOST_MAX_MODELS];	 /* each slot's --model as given (NULL: free) */
	const struct host_map *stale;	 /* a map replaced when the server stopped mid-way */
	struct stat st[HOST_MAX_MODELS]; /* each slot's model file when it was loaded */
};

static bool workers_stopped(void *arg)
{
	const struct host_reload *r = arg;

	return r->a->workers_stop;
}

/* Every worker has begun a turn at epoch e or later: 0, or -ECANCELED / -ETIMEDOUT. */
static int wait_workers(struct host_reload *r, uint64_t e)
{
	for (unsigned i = 0; i < r->a->n_workers; i++)
		for (long t = 0; __atomic_load_n(&r->a->w[i].model_epoch, __ATOMIC_ACQUIRE) < e;
		     t += RELOAD_POLL_US) {
			if (dpdk_reloader_stopping(&r->d))
				return -ECANCELED;
			if (t > RELOAD_EPOCH_S * 1000000L)
				return -ETIMEDOUT;
			conf_reload_sleep_us(RELOAD_POLL_US);
		}
	return 0;
}

static uint64_t next_epoch(struct host_app *a)
{
	return __atomic_add_fetch(&a->epoch, 1, __ATOMIC_SEQ_CST);
}

/* A grace period: every worker has begun a turn since now, no telemetry read is under way. */
static int grace(struct host_reload *r)
{
	int ret = wait_workers(r, next_epoch(r->a));

	while (!ret && __atomic_load_n(&r->a->readers, __ATOMIC_SEQ_CST))
		conf_reload_sleep_us(RELOAD_POLL_US);
	return ret;
}

static uint32_t slot_reqs(const struct host_app *a, uint32_t k)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < a->n_workers; i++)
		n += __atomic_load_n(&a->w[i].slot_reqs[k], __ATOMIC_ACQUIRE);
	return n;
}

/* Slot k's state on every worker and its model freed (the slot is off, after a grace period). */
static void slot_free(struct host_reload *r, uint32_t k)
{
	struct host_app *a = r->a;

	for (unsigned i = 0; i < a->n_workers; i++)
		host_slot_fini(&a->w[i], k);
	model_free(a->hm[k].m);
	memset(&a->hm[k], 0, sizeof(a->hm[k]));
	a->refusal_said[k] = false;
	free(r->spec[k]);
	r->spec[k] = NULL;
}

/* --model spec into free slot k: the model, checked against the buffers set at start, and its
 * state on every worker; the slot stays off. */
static int slot_load(struct host_reload *r, uint32_t k, const char *spec, const struct stat *st,
		     char *err, size_t errlen)
{
	struct host_app *a = r->a;
	struct host_model *hm = &a->hm[k];
	char *dup = strdup(spec);
	int ret;

	if (!dup)
		return -ENOMEM;
	ret = host_load_model(hm, dup, &a->o.batch, err, errlen);
	free(dup);
	if (ret) {
		memset(hm, 0, sizeof(*hm));
		return ret;
	}
	if (hm->in_bytes > a->max_in || hm->act_bytes > a->max_act || hm->classes > a->max_cls) {
		snprintf(err, errlen,
			 "%s: needs %u input, %u activation bytes and %u classes; the buffers set "
			 "at start hold %u, %u and %u: restart to serve it",
			 spec, hm->in_bytes, hm->act_bytes, hm->classes, a->max_in, a->max_act,
			 a->max_cls);
		ret = -E2BIG;
	}
	for (unsigned i = 0; !ret && i < a->n_workers; i++)
		ret = host_slot_setup(a, &a->w[i], k, err, errlen);
	r->spec[k] = strdup(spec);
	r->st[k] = *st;
	if (!ret && !r->spec[k])
		ret = -ENOMEM;
	if (ret)
		slot_free(r, k);
	else
		host_slot_hist(a, k);
	return ret;
}

static int parse_opts(void *o, int argc, char **argv)
{
	return host_opts_parse(o, argc, argv);
}

static void reload_once(void *arg)
{
	struct host_reload *r = arg;
	struct host_app *a = r->a;
	const struct host_map *old = host_map(a);
	uint8_t slots[HOST_MAX_MODELS];
	uint32_t ids[HOST_MAX_MODELS];
	bool fresh[HOST_MAX_MODELS] = {false}, kept[HOST_MAX_MODELS] = {false};
	uint32_t n = 0, loaded = 0, gone = 0, high;
	struct host_map *mp;
	struct conf_args v;
	struct host_opts o;
	char err[384];
	int ret;

	/* 1. the options again, as at start */
	if (dpdk_server_reread(&host_conf, parse_opts, &o, &v, err, sizeof(err))) {
		dpdk_reloader_finish(&r->d, -EINVAL, "failed: %s; still serving version %lu", err,
				     (unsigned long)r->d.version);
		return;
	}
	ret = 0;
	for (uint32_t i = 0; !ret && i < o.n_models; i++) {
		const char *spec = o.model_spec[i];
		size_t plen = RTE_MIN(strcspn(spec, ":"), conf_batch_at(spec));
		char path[4096];
		struct stat st;
		uint32_t k;

		snprintf(path, sizeof(path), "%.*s", (int)plen, spec);
		if (stat(path, &st)) {
			snprintf(err, sizeof(err), "%.300s: %s", path, strerror(errno));
			ret = -errno;
			break;
		}
		for (k = 0; k < old->n; k++) {
			const uint32_t s = old->slot[k];

			if (!kept[s] && r->spec[s] && !strcmp(r->spec[s], spec) &&
			    conf_reload_same_file(&r->st[s], &st))
				break;
		}
		if (k < old->n) {
			kept[old->slot[k]] = true;
			slots[n++] = old->slot[k];
			continue;
		}
		for (k = 0; k < HOST_MAX_MODELS && (r->spec[k] || host_slot_on(a, k)); k++)
			;
		if (k == HOST_MAX_MODELS) {
			snprintf(err, sizeof(err),
				 "%s: no free model slot (%d, old versions still draining)", spec,
				 HOST_MAX_MODELS);
			ret = -ENOSPC;
			break;
		}
		ret = slot_load(r, k, spec, &st, err, sizeof(err));
		if (!ret) {
			fresh[k] = true;
			slots[n++] = (uint8_t)k;
			loaded++;
		}
	}
	for (uint32_t i = 0; i < n; i++)
		ids[i] = a->hm[slots[i]].model_id;
	if (!ret)
		ret = conf_reload_ids_unique(ids, n, err, sizeof(err));
	conf_args_free(&v);
	mp = ret ? NULL : host_map_build(a->hm, slots, n);
	if (!mp) {
		for (uint32_t k = 0; k < HOST_MAX_MODELS; k++)
			if (fresh[k])
				slot_free(r, k);
		dpdk_reloader_finish(&r->d, ret ? ret : -ENOMEM,
				     "failed: %s; still serving version %lu",
				     ret ? err : "out of memory", (unsigned long)r->d.version);
		return;
	}
	/* 3. the new slots on, then the map that names them */
	high = host_slots(a);
	for (uint32_t k = 0; k < HOST_MAX_MODELS; k++)
		if (fresh[k]) {
			__atomic_store_n(&a->slot_on[k], 1, __ATOMIC_SEQ_CST);
			high = k + 1 > high ? k + 1 : high;
			printf("host: reload: model %s id %#x: %s, slot %u\n", a->hm[k].m->name,
			       a->hm[k].model_id, host_mode_name(a->hm[k].mode), k);
		}
	__atomic_store_n(&a->n_models, high, __ATOMIC_SEQ_CST);
	__atomic_store_n(&a->map, mp, __ATOMIC_SEQ_CST);
	__atomic_store_n(&r->d.version, r->d.version + 1, __ATOMIC_RELAXED);
	ret = wait_workers(r, next_epoch(a));
	if (ret)
		goto out_stopped;
	/* 4. the slots no longer named drain, then off */
	for (uint32_t i = 0; i < old->n; i++) {
		const uint32_t s = old->slot[i];

		if (kept[s])
			continue;
		for (long t = 0; slot_reqs(a, s) && t < RELOAD_DRAIN_S * 1000000L;
		     t += RELOAD_POLL_US) {
			ret = -ECANCELED;
			if (dpdk_reloader_stopping(&r->d))
				goto out_stopped;
			conf_reload_sleep_us(RELOAD_POLL_US);
		}
		if (slot_reqs(a, s))
			printf("host: reload: model %s (slot %u) still holds %u request(s) after "
			       "%d s: switched off\n",
			       a->hm[s].m->name, s, slot_reqs(a, s), RELOAD_DRAIN_S);
		__atomic_store_n(&a->slot_on[s], 0, __ATOMIC_SEQ_CST);
		gone++;
	}
	ret = grace(r);
	if (ret)
		goto out_stopped;
	for (uint32_t i = 0; i < old->n; i++)
		if (!kept[old->slot[i]])
			slot_free(r, old->slot[i]);
	free((void *)old);
	dpdk_reloader_finish(&r->d, 0, "version %lu: %u model(s): %u loaded, %u unloaded, %u kept",
			     (unsigned long)r->d.version, n, loaded, gone, n - loaded);
	return;
out_stopped:
	/* the workers stopped (or one never turned): what is left is freed at teardown (every
	 * slot, both maps) */
	r->stale = old;
	dpdk_reloader_finish(&r->d, ret, "version %lu published, the old one not freed: %s",
			     (unsigned long)r->d.version,
			     ret == -ETIMEDOUT ? "a worker did not turn" : "the server stopped");
}

int host_reload_setup(struct host_app *a, char *err, size_t errlen)
{
	struct host_reload *r = calloc(1, sizeof(*r));
	int ret;

	if (!r) {
		snprintf(err, errlen, "reloader: out of memory");
		return -ENOMEM;
	}
	r->a = a;
	r->d =
	    (struct dpdk_reloader){.who = "host",
				   .wait_us = (RELOAD_DRAIN_S + 2 * RELOAD_EPOCH_S + 30) * 1000000L,
				   .stopped = workers_stopped,
				   .once = reload_once,
				   .arg = r,
				   .version = 1};
	for (uint32_t k = 0; k < a->n_models; k++) {
		const char *spec = a->o.model_spec[k];
		char path[4096];

		snprintf(path, sizeof(path), "%.*s",
			 (int)RTE_MIN(strcspn(spec, ":"), conf_batch_at(spec)), spec);
		r->spec[k] = strdup(spec);
		conf_reload_stat(r->spec[k] ? path : NULL, &r->st[k]);
	}
	ret = dpdk_reloader_start(&r->d, err, errlen);
	if (ret) {
		for (uint32_t k = 0; k < HOST_MAX_MODELS; k++)
			free(r->spec[k]);
		free(r);
		return ret;
	}
	a->reload = r;
	return 0;
}

struct dpdk_reloader *host_reloader(void *srv)
{
	struct host_app *a = srv;

	return a->reload ? &a->reload->d : NULL;
}

void host_reload_teardown(struct host_app *a)
{
	struct host_reload *r = a->reload;

	if (!r)
		return;
	dpdk_reloader_stop(&r->d);
	for (uint32_t k = 0; k < HOST_MAX_MODELS; k++)
		free(r->spec[k]);
	free((void *)r->stale);
	free(r);
	a->reload = NULL;
}
