// SPDX-License-Identifier: MIT
/*
 * splitnic-host: telemetry commands (/splitnic/host/latency, models) and the counters (the
 * skeleton's /splitnic/host/stats and the stats file at exit): every worker's counters, summed.
 */
#include <stdio.h>

#include <rte_telemetry.h>

#include "dpdk/metrics.h"
#include "dpdk/reloader.h"
#include "host/host_dpdk.h"

static const char *const counter_names[HOST_C__COUNT] = {
    "rx_frames",
    "rx_not_udp",
    "rx_bad_ip",
    "rx_other_port",
    "rx_rejected",
    "rx_other_type",
    "not_allowed",
    "notice_not_from_nic",
    "notice_mismatch",
    "notice_bad_cookie",
    "fragments",
    "requests",
    "accepted",
    "error_unknown_model",
    "error_bad_shape",
    "error_bad_request",
    "error_busy_queue",
    "error_busy_table",
    "error_busy_reasm",
    "error_too_large",
    "error_reply_larger",
    "error_draining",
    "error_internal",
    "errors_sent",
    "errors_rate_limited",
    "activations",
    "activation_dgrams",
    "answered_nic",
    "answered_host",
    "late_notices",
    "nic_errors",
    "nic_refused_layer",
    "fallback_forced",
    "fallback_link_down",
    "fallback_window_full",
    "fallback_timeout",
    "fallback_nic_error",
    "fallback_nic_suspect",
    "spread",
    "spread_drop",
    "tx_drop",
    "tx_nombuf",
    "link_down_events",
    "port_restarts",
    "health_answered",
    "health_dropped",
    "refused_larger_reply",
};

static const char *const hist_names[HOST_H__COUNT] = {"server_total_us", "queue_us",
						      "nic_round_trip_us", "host_batch_compute_us"};

static uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void stats_each(struct host_app *a, void (*put)(void *arg, const char *key, uint64_t v),
		       void *arg)
{
	uint64_t sum[HOST_C__COUNT] = {0}, verd[PROTO_VERDICT__COUNT] = {0},
		 ra[PROTO_RA__COUNT] = {0};
	uint64_t batches = 0, reqs = 0, fbs = 0, cns = 0, gfb = 0, expired = 0, dbl = 0;
	uint64_t version, reloads, failed; /* the reloader's (its failures not among the keys) */
	uint64_t in_use = 0, in_flight = 0, queued[HOST_MAX_MODELS] = {0};
	struct proto_reasm_stats rs;
	struct rte_eth_stats es;
	char key[64];

	for (unsigned i = 0; i < a->n_workers; i++) {
		struct host_worker *w = &a->w[i];

		for (unsigned c = 0; c < HOST_C__COUNT; c++)
			sum[c] += rd(&w->c[c]);
		for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++)
			verd[v] += rd(&w->verdicts[v]);
		proto_reasm_stats(w->ra, &rs);
		for (unsigned v = 0; v < PROTO_RA__COUNT; v++)
			ra[v] += rs.verdicts[v];
		expired += rs.expired;
		batches += rd(&w->batches);
		reqs += rd(&w->reqs);
		fbs += rd(&w->fallbacks);
		cns += rd(&w->compute_ns);
		dbl += rd(&w->tab.double_puts);
		in_use += w->tab.slots - __atomic_load_n(&w->tab.n_free, __ATOMIC_RELAXED);
		for (uint32_t k = 0; k < host_slots(a); k++) {
			if (!host_slot_on(a, k))
				continue;
			gfb += host_stage_gpu_fallbacks(&w->st[k]);
			in_flight += host_remote_in_flight(&w->nic[k]);
			queued[k] += __atomic_load_n(&w->q[k].n, __ATOMIC_RELAXED);
		}
	}
	for (unsigned c = 0; c < HOST_C__COUNT; c++)
		put(arg, counter_names[c], sum[c]);
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++) {
		snprintf(key, sizeof(key), "verdict_%s", v ? proto_verdict_name(v) : "ok");
		put(arg, key, verd[v]);
	}
	for (unsigned v = 0; v < PROTO_RA__COUNT; v++) {
		snprintf(key, sizeof(key), "reasm_%s", proto_ra_verdict_name(v));
		put(arg, key, ra[v]);
	}
	put(arg, "reasm_expired", expired);
	put(arg, "worker_batches", batches);
	put(arg, "worker_requests", reqs);
	put(arg, "worker_fallback_requests", fbs);
	put(arg, "worker_compute_ns", cns);
	for (unsigned i = 0; i < a->n_workers; i++) {
		snprintf(key, sizeof(key), "worker%u_requests", i);
		put(arg, key, rd(&a->w[i].reqs));
	}
	put(arg, "workers", a->n_workers);
	put(arg, "queue_pairs", a->nq);
	put(arg, "gpu_fallback_requests", gfb);
	put(arg, "double_free_refused", dbl);
	put(arg, "in_use", in_use);
	put(arg, "in_flight_nic", in_flight);
	for (uint32_t k = 0; k < host_slots(a); k++) {
		if (!host_slot_on(a, k))
			continue;
		snprintf(key, sizeof(key), "m%u_queued", k); /* /splitnic/host/models names m<k> */
		put(arg, key, queued[k]);
	}
	put(arg, "link_up", a->link_up);
	dpdk_reloader_figures(host_reloader(a), &version, &reloads, &failed);
	put(arg, "models", host_map(a)->n);
	put(arg, "models_version", version);
	put(arg, "reloads", reloads);
	if (!rte_eth_stats_get(a->port, &es)) { /* DPDK's own count of the frames in and out */
		put(arg, "port_ipackets", es.ipackets);
		put(arg, "port_opackets", es.opackets);
		put(arg, "port_imissed", es.imissed);
	}
	if (a->inproc.disp) {
		uint64_t nc[NICFW_C__COUNT];

		nicfw_disp_counters(a->inproc.disp, nc, NULL);
		for (unsigned i = 0; i < NICFW_C__COUNT; i++) {
			snprintf(key, sizeof(key), "inproc_nic_%s", nicfw_disp_counter_name(i));
			put(arg, key, nc[i]);
		}
		put(arg, "inproc_nic_tx_drop", rd(&a->inproc.tx_drop));
	}
}

static int tel_latency(void *srv, const char *params, struct rte_tel_data *d)
{
	const struct host_app *a = srv;

	for (unsigned h = 0; h < HOST_H__COUNT; h++) {
		struct rte_tel_data *arr = rte_tel_data_alloc();

		if (!arr)
			return 0;
		rte_tel_data_start_array(arr, RTE_TEL_U64_VAL);
		for (unsigned b = 0; b < HOST_HIST_BUCKETS; b++) {
			uint64_t v = 0;

			for (unsigned i = 0; i < a->n_workers; i++)
				for (uint32_t k = 0; k < HOST_MAX_HISTS; k++)
					v += rd(&a->w[i].h[k][h].b[b]);
			rte_tel_data_add_array_u64(arr, v);
		}
		rte_tel_data_add_dict_container(d, hist_names[h], arr, 0);
	}
	return 0;
}

/*
 * The models, keyed m<i>_<what> (m<i>_queued in /splitnic/host/stats is the same i): DPDK's
 * dictionary keys take only letters, digits, '_' and '/', so names and modes are values.
 */
static int tel_models(void *srv, const char *params, struct rte_tel_data *d)
{
	struct host_app *a = srv;
	const struct host_map *mp;
	char key[32];

	host_read_begin(a);
	mp = host_map(a);
	rte_tel_data_add_dict_u64(d, "models", mp->n);
	rte_tel_data_add_dict_u64(d, "epoch", __atomic_load_n(&a->epoch, __ATOMIC_RELAXED));
	for (uint32_t j = 0; j < mp->n; j++) {
		const uint32_t i = mp->slot[j];

		snprintf(key, sizeof(key), "m%u_name", i);
		rte_tel_data_add_dict_string(d, key, a->hm[i].m->name);
		snprintf(key, sizeof(key), "m%u_id", i);
		rte_tel_data_add_dict_u64(d, key, a->hm[i].model_id);
		snprintf(key, sizeof(key), "m%u_mode", i);
		rte_tel_data_add_dict_string(d, key, host_mode_name(a->hm[i].mode));
		snprintf(key, sizeof(key), "m%u_split", i);
		rte_tel_data_add_dict_u64(d, key, a->hm[i].split);
	}
	host_read_end(a);
	return 0;
}

const struct dpdk_tel_cmd host_tel_cmds[HOST_N_TEL_CMDS] = {
    {"/splitnic/host/latency", "splitnic-host latency histograms: bucket b = [2^(b-1), 2^b) us",
     tel_latency},
    {"/splitnic/host/models", "models served: m<i>_name, _id, _mode, _split", tel_models},
};

/* The latency histograms per model name and stage, summed over the workers (a name's stay after
 * its model is unloaded). */
static void metrics_hist(void *srv, metrics_hist_put put, void *arg)
{
	static const char *const stage[HOST_H__COUNT] = {"total", "queue", "nic_round_trip",
							 "host_batch_compute"};
	const struct host_app *a = srv;
	const uint32_t n = __atomic_load_n(&a->n_hist, __ATOMIC_ACQUIRE);

	for (uint32_t k = 0; k < n; k++)
		for (unsigned h = 0; h < HOST_H__COUNT; h++) {
			uint64_t b[HOST_HIST_BUCKETS] = {0}, sum = 0;

			for (unsigned i = 0; i < a->n_workers; i++) {
				for (unsigned j = 0; j < HOST_HIST_BUCKETS; j++)
					b[j] += rd(&a->w[i].h[k][h].b[j]);
				sum += rd(&a->w[i].h[k][h].sum_ns);
			}
			put(arg, a->hist_name[k], stage[h], b, HOST_HIST_BUCKETS, sum);
		}
}

static const char *metrics_model(void *srv, unsigned i)
{
	const struct host_app *a = srv;

	/* called inside host_counters' read */
	return i < host_slots(a) && host_slot_on(a, i) ? a->hm[i].m->name : NULL;
}

static const char *const gauges[] = {"workers",	      "queue_pairs",	"in_use",
				     "in_flight_nic", "queued",		"link_up",
				     "models",	      "models_version", NULL};

const struct dpdk_metrics_ops host_metrics_ops = {metrics_hist, metrics_model, gauges};

void host_counters(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg)
{
	host_read_begin(srv);
	stats_each(srv, put, arg);
	host_read_end(srv);
}
