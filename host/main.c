// SPDX-License-Identifier: MIT
/*
 * splitnic-host (man/splitnic-host.8): the host's DPDK application, run by the DPDK servers'
 * skeleton (dpdk/server.h). This file loads the models (FILE[:MODE[:SPLIT]], a split or a plan
 * file), sets up the workers' state and the port, launches the worker lcores and tears it all
 * down: the skeleton's operations. host/host_dpdk.h tells the lcore model and the other files.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpdk/server.h"
#include "host/host_dpdk.h"
#include "kernels/kern.h"
#include "split/split.h"

/* --- set-up -------------------------------------------------------------------------------- */

static int load_models(struct host_app *a, uint32_t *max_in, uint32_t *max_act, uint32_t *max_cls,
		       char *err, size_t errlen)
{
	int ret;

	*max_in = *max_act = *max_cls = 1;
	for (uint32_t i = 0; i < a->o.n_models; i++) {
		struct host_model *hm = &a->hm[i];

		ret = host_load_model(hm, (char *)a->o.model_spec[i], &a->o.batch, err, errlen);
		if (ret)
			return ret;
		a->n_models++;
		host_slot_hist(a, i);
		a->slot_on[i] = 1;
		*max_in = RTE_MAX(*max_in, hm->in_bytes);
		*max_act = RTE_MAX(*max_act, hm->act_bytes);
		*max_cls = RTE_MAX(*max_cls, hm->classes);
		printf("host: model %s id %#x: %s, host ops 0..%u%s, input %s %ux%ux%u, %u "
		       "classes, batches of %u at most (wait %lu us)\n",
		       hm->m->name, hm->model_id, host_mode_name(hm->mode),
		       hm->split ? hm->split - 1 : 0,
		       hm->mode == HOST_MODE_HOST_ONLY ? " (whole model)" : ", the NIC the rest",
		       hm->in_fmt == PROTO_FMT_U8 ? "u8" : "f32", hm->in_c, hm->in_h, hm->in_w,
		       hm->classes, hm->batch.max_batch,
		       (unsigned long)(hm->batch.max_delay_ns / 1000));
		for (uint32_t s = 0; s < hm->n_stages; s++)
			printf("host:   stage %u: %s ops %u..%u\n", s,
			       kexec_kind_name(hm->stage[s].kind), hm->stage[s].first,
			       hm->stage[s].last - 1);
		if (hm->mode != HOST_MODE_HOST_ONLY)
			printf("host:   NIC stage ops %u..%u over packets, activation %u bits (%u "
			       "bytes)\n",
			       hm->split, hm->m->n_layers - 1, hm->act_count, hm->act_bytes);
	}
	return 0;
}

/* Every lcore is a worker but the in-process NIC's (the last worker lcore, if there is one). */
static void count_workers(struct host_app *a)
{
	unsigned l;

	a->inproc.lcore = RTE_MAX_LCORE;
	a->n_workers = 1;
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (a->o.inproc)
			a->inproc.lcore = l;
	}
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l != a->inproc.lcore && a->n_workers < HOST_MAX_WORKERS)
			a->n_workers++;
	}
}

/* A worker's own state: request table, queues, reassembly, stages, NIC executors, rings, TX
 * queue and templates. */
static int worker_setup(struct host_app *a, struct host_worker *w, uint32_t max_in,
			uint32_t max_act, uint32_t max_cls, char *err, size_t errlen)
{
	const uint32_t slots = a->n_models * (a->o.queue + a->o.window) + 2 * HOST_MAX_BATCH;
	struct proto_reasm_config rac = {HOST_REASM_SLOTS, max_in, 1000000000ull};
	char name[RTE_RING_NAMESIZE];
	int ret;

	w->a = a;
	w->rxq = w->id < a->nq ? (int32_t)w->id : -1;
	w->txq = w->rxq;
	ret = host_reqtab_init(&w->tab, slots, max_act, max_cls);
	w->held = calloc(slots, sizeof(*w->held));
	w->body = calloc(max_cls, 8);
	w->ra = proto_reasm_create(&rac);
	if (ret || !w->held || !w->body || !w->ra)
		goto err_nomem;
	for (uint32_t k = 0; k < a->n_models; k++) {
		ret = host_slot_setup(a, w, k, err, errlen);
		if (ret)
			return ret;
	}
	snprintf(name, sizeof(name), "snhost_in%u", w->id);
	w->in = rte_ring_create(name, HOST_RING, rte_socket_id(), RING_F_SC_DEQ);
	if (!w->in)
		goto err_ring;
	if (w->txq < 0) {
		struct host_worker *owner = &a->w[w->id % a->nq];

		snprintf(name, sizeof(name), "snhost_tx%u", w->id);
		w->tx_via = rte_ring_create(name, HOST_RING, rte_socket_id(),
					    RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (!w->tx_via)
			goto err_ring;
		owner->fed[owner->n_fed++] = w;
	}
	return host_tx_setup(w, err, errlen);
err_ring:
	snprintf(err, errlen, "worker %u: rings: %s", w->id, rte_strerror(rte_errno));
	return -ENOMEM;
err_nomem:
	snprintf(err, errlen, "worker %u: request table of %u slots: out of memory", w->id, slots);
	return -ENOMEM;
}

static int host_setup(void *srv, char *err, size_t errlen)
{
	struct host_app *a = srv;
	uint32_t max_in, max_act, max_cls, mbufs;
	int ret;

	ret = load_models(a, &max_in, &max_act, &max_cls, err, errlen);
	if (ret)
		return ret;
	a->max_in = max_in;
	a->max_act = max_act;
	a->max_cls = max_cls;
	{
		uint8_t all[HOST_MAX_MODELS];

		for (uint32_t k = 0; k < a->n_models; k++)
			all[k] = (uint8_t)k;
		a->map = host_map_build(a->hm, all, a->n_models);
		if (!a->map)
			return -ENOMEM;
	}
	count_workers(a);
	proto_trust_set_rate(&a->o.trust, a->o.error_rate,
			     a->o.error_burst ? a->o.error_burst : a->o.error_rate);
	a->w = rte_zmalloc("snhost_workers", sizeof(*a->w) * a->n_workers, RTE_CACHE_LINE_SIZE);
	if (!a->w)
		return -ENOMEM;
	for (unsigned i = 0; i < a->n_workers; i++)
		a->w[i].id = i;
	mbufs = a->n_workers * (HOST_RX_DESC + HOST_TX_DESC + a->n_models * a->o.queue +
				4 * HOST_BURST + HOST_TXQ) +
		(a->o.inproc ? 2048 : 0) + 2048;
	a->pool = rte_pktmbuf_pool_create("snhost_pool", RTE_MAX(mbufs, 8191u), 256,
					  RTE_ALIGN(sizeof(uint64_t), RTE_MBUF_PRIV_ALIGN),
					  RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	if (!a->pool) {
		snprintf(err, errlen, "mbuf pool: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	ret = host_port_init(a, err, errlen);
	if (ret)
		return ret;
	a->tsc0 = rte_get_tsc_cycles();
	a->ns_per_cyc = 1e9 / (double)rte_get_tsc_hz();
	host_health_setup(a);
	for (unsigned i = 0; i < a->n_workers; i++) {
		ret = worker_setup(a, &a->w[i], max_in, max_act, max_cls, err, errlen);
		if (ret)
			return ret;
	}
	for (uint32_t k = 0; k < a->n_models; k++)
		for (uint32_t s = 0; s < a->w[0].st[k].front.n; s++)
			if (a->w[0].st[k].front.x[s].note[0])
				printf("host: model %s: %s (counted: gpu_fallback_requests)\n",
				       a->hm[k].m->name, a->w[0].st[k].front.x[s].note);
	if (a->o.inproc) {
		ret = host_inproc_setup(a, err, errlen);
		if (ret)
			return ret;
	} else {
		ret = host_reload_setup(a, err, errlen);
		if (ret)
			return ret;
	}
	printf("host: %u worker lcore(s), port %u with %u queue pair(s), requests spread: %s; "
	       "per worker: %u slots, queue %u per model, NIC window %u, timeout %lu us, batch %u "
	       "(wait %lu us); UDP checksums %s\n",
	       a->n_workers, a->port, a->nq, a->spread_by, a->w[0].tab.slots, a->o.queue,
	       a->o.window, (unsigned long)(a->o.nic_timeout_ns / 1000), a->o.batch.max_batch,
	       (unsigned long)(a->o.batch.max_delay_ns / 1000),
	       a->udp_offload ? "offloaded to the port" : "in software, from templates");
	return 0;
}

static void free_ring(struct rte_ring *r)
{
	struct rte_mbuf *mb;

	while (r && !rte_ring_dequeue(r, (void **)&mb))
		rte_pktmbuf_free(mb);
	rte_ring_free(r);
}

static bool host_teardown(void *srv)
{
	struct host_app *a = srv;

	host_reload_teardown(a);
	a->workers_stop = true;
	rte_eal_mp_wait_lcore();
	if (a->pool && rte_eth_dev_count_avail()) {
		if (a->started)
			rte_eth_dev_stop(a->port);
		rte_eth_dev_close(a->port);
	}
	host_inproc_teardown(a);
	for (unsigned i = 0; a->w && i < a->n_workers; i++) {
		struct host_worker *w = &a->w[i];

		for (uint32_t k = 0; k < a->n_models; k++)
			host_slot_fini(w, k);
		free_ring(w->in);
		free_ring(w->tx_via);
		proto_reasm_destroy(w->ra);
		host_reqtab_fini(&w->tab);
		free(w->held);
		free(w->body);
		rte_free(w->txb);
	}
	rte_free(a->w);
	for (uint32_t k = 0; k < a->n_models; k++)
		model_free(a->hm[k].m);
	free(a->map);
	rte_mempool_free(a->pool);
	return true;
}

/* --- the skeleton's operations (dpdk/server.h) --------------------------------------------- */

static int host_options(void *srv, int argc, char **argv, struct dpdk_run *run)
{
	struct host_app *a = srv;
	int ret = host_opts_parse(&a->o, argc, argv);

	if (!ret)
		kern_precision_set_default(kern_precision_from_name(a->o.precision));
	*run = a->o.run;
	return ret;
}

/* Worker 0 is the main lcore; the others and the in-process NIC's get theirs. */
static void host_start(void *srv)
{
	struct host_app *a = srv;
	unsigned l, i = 1;

	a->w[0].lcore = rte_get_main_lcore();
	RTE_LCORE_FOREACH_WORKER(l)
	{
		if (l == a->inproc.lcore) {
			rte_eal_remote_launch(host_inproc_main, a, l);
		} else if (i < a->n_workers) {
			a->w[i].lcore = l;
			rte_eal_remote_launch(host_worker_main, &a->w[i], l);
			i++;
		}
	}
	printf("host: serving UDP %u on port %u as %u.%u.%u.%u; telemetry /splitnic/host/stats\n",
	       a->o.udp_port, a->port, a->o.ip >> 24, (a->o.ip >> 16) & 0xff, (a->o.ip >> 8) & 0xff,
	       a->o.ip & 0xff);
}

/* Worker 0's turn, on the main lcore: its own work, the link, and the in-process NIC when it has
 * no lcore of its own. */
static uint32_t host_step(void *srv)
{
	struct host_app *a = srv;
	const uint64_t now = host_now_ns(a);
	uint32_t work;

	host_link_check(a, now);
	work = host_worker_step(&a->w[0], now);
	if (a->o.inproc && a->inproc.lcore == RTE_MAX_LCORE)
		work += host_inproc_step(a);
	return work;
}

/* SIGINT/SIGTERM: new REQUESTs are refused (ERROR busy), HEALTH says draining. */
static void host_drain(void *srv)
{
	((struct host_app *)srv)->draining = true;
}

static uint32_t host_held(void *srv)
{
	return host_in_use(srv);
}

static void host_stop(void *srv, int sig)
{
	struct host_app *a = srv;

	a->workers_stop = true;
	rte_eal_mp_wait_lcore();
	printf("host: stopped, %u request(s) left in the tables\n", host_in_use(a));
}

static const struct dpdk_server host_server = {
    .who = "host",
    .conf = &host_conf,
    .stats_path = "/splitnic/host/stats",
    .stats_help = "splitnic-host counters by reason, parser verdicts, reassembly",
    .tel = host_tel_cmds,
    .n_tel = HOST_N_TEL_CMDS,
    .metrics = &host_metrics_ops,
    .options = host_options,
    .setup = host_setup,
    .start = host_start,
    .step = host_step,
    .drain = host_drain,
    .in_use = host_held,
    .stop = host_stop,
    .counters = host_counters,
    .teardown = host_teardown,
    .reloader = host_reloader,
    .no_reload = "no reload with --nic inproc: restart to change the models",
    .reload_path = "/splitnic/host/reload",
};

int main(int argc, char **argv)
{
	static struct host_app app;

	return dpdk_server_main(&host_server, &app, argc, argv);
}
