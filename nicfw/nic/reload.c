// SPDX-License-Identifier: MIT
/*
 * splitnic-nic: models loaded, replaced and unloaded while the packet loop runs (nicfw/nic/nic.h,
 * "reload.c"), the way splitnic-host does it (conf/reload.h's tickets: SIGHUP, the telemetry
 * command /splitnic/nic/reload, POST /-/reload). One reload, on the reloader's thread (a DPDK
 * control thread, never the packet loop's):
 *
 *   1. the command line and its configuration file (--config) read again;
 *   2. each --model kept when it names the same file (same path, id and first op; same device,
 *      inode, size and modification time), else loaded into a free slot: the model, its
 *      executor (the emulator; on the lcore platform a chain added to the running runners, with
 *      the executors spread over the worker lcores as at start) and the dispatcher's slot
 *      (nicfw_disp_slot_set), which the packet loop does not poll yet;
 *   3. the new map (the slots named, in --model order) and the HEALTH report's models handed to
 *      the packet loop, which applies them between two turns (nic_reload_apply: no allocation,
 *      no lock): from then on new requests go to the new slots;
 *   4. each slot no longer named answers the requests it holds on its version (the dispatcher
 *      polls it until none is left), then the reloader frees its executor and model (under
 *      rd_lock, which telemetry and metrics readers take); on the lcore platform its chain is
 *      removed, and freed once every runner has passed a quiescent point (nicfw_lcore_remove):
 *      the reloader waits for that before it says the reload is done.
 *
 * A reload that fails before step 3 (the options, a model file, no free slot, an input larger
 * than the buffers set at start) frees what it loaded and changes nothing: the models served
 * stay, and the message names the file and the cause.
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
#include "nicfw/nic/nic.h"

#define RELOAD_POLL_US 1000
#define RELOAD_DRAIN_S 30 /* a slot drains at most this long; then it is left until exit */
#define RELOAD_APPLY_S 5  /* the packet loop applies a change within this */

struct nic_reload {
	struct nic *n;
	struct dpdk_reloader d; /* the thread, the tickets, the version served, the failures */
	char *path[NICFW_DISP_MAX_MODELS]; /* each slot's file, owned (NULL: free) */
	struct stat st[NICFW_DISP_MAX_MODELS];
	bool stuck[NICFW_DISP_MAX_MODELS]; /* did not drain: freed at exit */
};

/* One server per process: the state outlives a telemetry thread still waiting at exit. */
static struct nic_reload reloader;

static bool loop_over(void *arg)
{
	const struct nic_reload *r = arg;

	return __atomic_load_n(&r->n->loop_over, __ATOMIC_ACQUIRE);
}

static int parse_opts(void *o, int argc, char **argv)
{
	return nic_opts_parse(o, argc, argv);
}

/* The packet loop applies the change in chg_*: 0, or -ECANCELED / -ETIMEDOUT. */
static int hand_over(struct nic_reload *r)
{
	struct nic *n = r->n;
	const uint32_t want = __atomic_add_fetch(&n->chg_asked, 1, __ATOMIC_ACQ_REL);

	for (long t = 0; __atomic_load_n(&n->chg_done, __ATOMIC_ACQUIRE) != want;
	     t += RELOAD_POLL_US) {
		if (dpdk_reloader_stopping(&r->d))
			return -ECANCELED;
		if (t > RELOAD_APPLY_S * 1000000L)
			return -ETIMEDOUT;
		conf_reload_sleep_us(RELOAD_POLL_US);
	}
	return 0;
}

/* Slot k's NIC times kept under its model's name (rd_lock held). */
static void hist_keep(struct nic *n, uint32_t k)
{
	const struct nicfw_disp_timing *t = nicfw_disp_timing(n->disp, k);
	struct nic_hist *g = NULL;

	if (!n->m[k] || !t->requests)
		return;
	for (uint32_t i = 0; i < NIC_HISTS && !g; i++)
		if (!n->gone[i].name[0] || !strcmp(n->gone[i].name, n->m[k]->name))
			g = &n->gone[i];
	if (!g)
		return; /* more names than kept: its figures leave the metrics */
	snprintf(g->name, sizeof(g->name), "%s", n->m[k]->name);
	for (uint32_t b = 0; b < NICFW_DISP_HIST; b++)
		g->hist[b] += t->hist[b];
	g->ns_sum += t->ns_sum;
}

/* Slot k's model, executor and dispatcher slot freed (not polled), under rd_lock. */
static void slot_free(struct nic_reload *r, uint32_t k)
{
	pthread_mutex_lock(&r->n->rd_lock);
	hist_keep(r->n, k);
	nic_slot_free(r->n, k);
	nicfw_disp_slot_clear(r->n->disp, k);
	pthread_mutex_unlock(&r->n->rd_lock);
	free(r->path[k]);
	r->path[k] = NULL;
}

/* --model i of o into a free slot: its number, or -errno with err. */
static int slot_load(struct nic_reload *r, const struct nic_opts *o, uint32_t i,
		     const struct stat *st, char *err, size_t errlen)
{
	struct nic *n = r->n;
	struct nicfw_disp_model md;
	uint32_t k;
	int ret;

	for (k = 0; k < NICFW_DISP_MAX_MODELS && (r->path[k] || r->stuck[k]); k++)
		;
	if (k == NICFW_DISP_MAX_MODELS) {
		snprintf(err, errlen, "%s: no free model slot (%d, old versions still draining)",
			 o->model_path[i], NICFW_DISP_MAX_MODELS);
		return -ENOSPC;
	}
	r->path[k] = strdup(o->model_path[i]);
	if (!r->path[k])
		return -ENOMEM;
	r->st[k] = *st;
	/* no reader looks at a slot the map does not name: no lock while it loads */
	ret = nic_slot_load(n, k, r->path[k], o->id_given[i], o->model_id[i], o->first[i], &md,
			    "nic: reload", err, errlen);
	if (!ret) {
		char why[256];

		ret = nicfw_disp_slot_set(n->disp, k, &md, why, sizeof(why));
		if (ret)
			snprintf(err, errlen, "%s: %s", o->model_path[i], why);
	}
	if (ret) {
		slot_free(r, k);
		return ret;
	}
	return (int)k;
}

static void reload_once(void *arg)
{
	struct nic_reload *r = arg;
	struct nic *n = r->n;
	uint8_t slots[NICFW_DISP_MAX_MODELS], old[NICFW_DISP_MAX_MODELS];
	uint32_t ids[NICFW_DISP_MAX_MODELS];
	bool fresh[NICFW_DISP_MAX_MODELS] = {false}, kept[NICFW_DISP_MAX_MODELS] = {false};
	uint32_t ns = 0, n_old = n->n_map, loaded = 0, gone = 0;
	struct conf_args v;
	struct nic_opts o;
	char err[384];
	int ret = 0;

	memcpy(old, n->map, sizeof(old));
	/* 1. the options again, as at start */
	if (dpdk_server_reread(&nic_conf, parse_opts, &o, &v, err, sizeof(err))) {
		dpdk_reloader_finish(&r->d, -EINVAL, "failed: %s; still serving version %lu", err,
				     (unsigned long)r->d.version);
		return;
	}
	for (uint32_t i = 0; !ret && i < o.n_models; i++) {
		struct stat st;
		uint32_t j;

		if (stat(o.model_path[i], &st)) {
			ret = -errno;
			snprintf(err, sizeof(err), "%.300s: %s", o.model_path[i], strerror(errno));
			break;
		}
		for (j = 0; j < n_old; j++) {
			const struct nic_slot *s = &n->sl[old[j]];

			if (!kept[old[j]] && !strcmp(r->path[old[j]], o.model_path[i]) &&
			    s->id_given == o.id_given[i] &&
			    (!s->id_given || s->id == o.model_id[i]) &&
			    s->first_asked == o.first[i] &&
			    conf_reload_same_file(&r->st[old[j]], &st))
				break;
		}
		if (j < n_old) {
			kept[old[j]] = true;
			slots[ns++] = old[j];
			continue;
		}
		ret = slot_load(r, &o, i, &st, err, sizeof(err));
		if (ret >= 0) {
			fresh[ret] = true;
			slots[ns++] = (uint8_t)ret;
			loaded++;
			ret = 0;
		}
	}
	for (uint32_t i = 0; i < ns; i++)
		ids[i] = n->sl[slots[i]].id;
	if (!ret)
		ret = conf_reload_ids_unique(ids, ns, err, sizeof(err));
	conf_args_free(&v);
	if (!ret)
		ret = nic_health_models(n, slots, ns, &n->chg_health, err, sizeof(err));
	if (ret) {
		for (uint32_t k = 0; k < NICFW_DISP_MAX_MODELS; k++)
			if (fresh[k])
				slot_free(r, k);
		dpdk_reloader_finish(&r->d, ret, "failed: %s; still serving version %lu", err,
				     (unsigned long)r->d.version);
		return;
	}
	/* 3. the new map to the packet loop; readers see it at once */
	memcpy(n->chg_map, slots, sizeof(slots));
	n->chg_n = ns;
	pthread_mutex_lock(&n->rd_lock);
	memcpy(n->map, slots, sizeof(slots));
	n->n_map = ns;
	pthread_mutex_unlock(&n->rd_lock);
	__atomic_store_n(&r->d.version, r->d.version + 1, __ATOMIC_RELAXED);
	ret = hand_over(r);
	if (ret) {
		dpdk_reloader_finish(
		    &r->d, ret,
		    "version %lu handed to the packet loop, %s; the old version(s) stay "
		    "until exit",
		    (unsigned long)r->d.version,
		    ret == -ETIMEDOUT
			? "which had not taken it after 5 s (it will at its next turn)"
			: "which stopped");
		return;
	}
	/* 4. the slots no longer named answer what they hold, then are freed */
	for (uint32_t i = 0; i < n_old; i++) {
		const uint32_t k = old[i];

		if (kept[k])
			continue;
		gone++;
		for (long t = 0;
		     nicfw_disp_slot_polled(n->disp, k) && t < RELOAD_DRAIN_S * 1000000L;
		     t += RELOAD_POLL_US) {
			if (dpdk_reloader_stopping(&r->d)) {
				dpdk_reloader_finish(&r->d, -ECANCELED,
						     "version %lu: the server stopped while %s "
						     "drained",
						     (unsigned long)r->d.version, r->path[k]);
				return;
			}
			conf_reload_sleep_us(RELOAD_POLL_US);
		}
		if (nicfw_disp_slot_polled(n->disp, k)) {
			printf("nic: reload: %s (slot %u) still holds requests after %d s: left "
			       "until exit\n",
			       r->path[k], k, RELOAD_DRAIN_S);
			r->stuck[k] = true;
			continue;
		}
		slot_free(r, k);
	}
	/* the chains removed: freed once no runner can be in them (microseconds) */
	for (long t = 0; n->lc && nicfw_lcore_reclaim(n->lc) && t < RELOAD_DRAIN_S * 1000000L;
	     t += RELOAD_POLL_US) {
		if (dpdk_reloader_stopping(&r->d)) {
			dpdk_reloader_finish(
			    &r->d, -ECANCELED,
			    "version %lu: the server stopped while old chains drained",
			    (unsigned long)r->d.version);
			return;
		}
		conf_reload_sleep_us(RELOAD_POLL_US);
	}
	dpdk_reloader_finish(&r->d, 0, "version %lu: %u model(s): %u loaded, %u unloaded, %u kept",
			     (unsigned long)r->d.version, ns, loaded, gone, ns - loaded);
}

void nic_reload_apply(struct nic *n)
{
	const uint32_t want = __atomic_load_n(&n->chg_asked, __ATOMIC_ACQUIRE);

	nicfw_disp_map(n->disp, n->chg_map, n->chg_n);
	n->health.n_models = n->chg_health.n_models;
	memcpy(n->health.model, n->chg_health.model, sizeof(n->health.model));
	__atomic_store_n(&n->chg_done, want, __ATOMIC_RELEASE);
}

int nic_reload_setup(struct nic *n, char *err, size_t errlen)
{
	struct nic_reload *r = &reloader;
	int ret;

	r->n = n;
	r->d = (struct dpdk_reloader){.who = "nic",
				      .wait_us = (RELOAD_DRAIN_S + RELOAD_APPLY_S + 60) * 1000000L,
				      .stopped = loop_over,
				      .once = reload_once,
				      .arg = r,
				      .version = 1};
	for (uint32_t i = 0; i < n->n_map; i++) {
		const uint32_t k = n->map[i];

		r->path[k] = strdup(n->sl[k].path);
		conf_reload_stat(r->path[k], &r->st[k]);
		if (!r->path[k]) {
			snprintf(err, errlen, "reloader: out of memory");
			return -ENOMEM;
		}
		n->sl[k].path = r->path[k];
	}
	ret = dpdk_reloader_start(&r->d, err, errlen);
	if (ret)
		return ret;
	n->reload = r;
	return 0;
}

struct dpdk_reloader *nic_reloader(void *srv)
{
	struct nic *n = srv;

	return n->reload ? &n->reload->d : NULL;
}

void nic_reload_teardown(struct nic *n)
{
	struct nic_reload *r = n->reload;

	if (!r)
		return;
	dpdk_reloader_stop(&r->d);
	for (uint32_t k = 0; k < NICFW_DISP_MAX_MODELS; k++)
		n->sl[k].path = NULL; /* the paths stay: a telemetry reader may hold one */
}
