// SPDX-License-Identifier: MIT
/*
 * splitnic-host: telemetry endpoints (/splitnic/host/stats, latency, models) and the counters
 * written at exit.
 */
#include <stdio.h>

#include <rte_telemetry.h>

#include "host/host_dpdk.h"

static const char *const counter_names[HOST_C__COUNT] = {
    "rx_frames",
    "rx_not_udp",
    "rx_bad_ip",
    "rx_other_port",
    "rx_rejected",
    "rx_other_type",
    "not_allowed",
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
    "error_draining",
    "error_internal",
    "errors_sent",
    "activations",
    "activation_dgrams",
    "answered_nic",
    "answered_host",
    "late_notices",
    "nic_errors",
    "fallback_forced",
    "fallback_link_down",
    "fallback_window_full",
    "fallback_timeout",
    "fallback_nic_error",
    "fallback_nic_suspect",
    "tx_drop",
    "tx_nombuf",
    "link_down_events",
    "port_restarts",
    "health_answered",
    "health_dropped",
};

static const char *const hist_names[HOST_H__COUNT] = {"server_total_us", "queue_us",
						      "nic_round_trip_us"};

static uint64_t rd(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static void stats_each(struct host_app *a, void (*put)(void *arg, const char *key, uint64_t v),
		       void *arg)
{
	struct proto_reasm_stats ra;
	uint64_t batches = 0, reqs = 0, fbs = 0, cns = 0, gfb = 0;
	char key[64];

	for (unsigned i = 0; i < HOST_C__COUNT; i++)
		put(arg, counter_names[i], rd(&a->c[i]));
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++) {
		snprintf(key, sizeof(key), "verdict_%s", v ? proto_verdict_name(v) : "ok");
		put(arg, key, rd(&a->verdicts[v]));
	}
	proto_reasm_stats(a->ra, &ra);
	for (unsigned v = 0; v < PROTO_RA__COUNT; v++) {
		snprintf(key, sizeof(key), "reasm_%s", proto_ra_verdict_name(v));
		put(arg, key, ra.verdicts[v]);
	}
	put(arg, "reasm_expired", ra.expired);
	for (unsigned i = 0; i < (a->n_workers ? a->n_workers : 1); i++) {
		batches += rd(&a->w[i].batches);
		reqs += rd(&a->w[i].reqs);
		fbs += rd(&a->w[i].fallbacks);
		cns += rd(&a->w[i].compute_ns);
		for (uint32_t k = 0; k < a->n_models; k++)
			gfb += host_stage_gpu_fallbacks(&a->w[i].st[k]);
	}
	put(arg, "worker_batches", batches);
	put(arg, "worker_requests", reqs);
	put(arg, "worker_fallback_requests", fbs);
	put(arg, "worker_compute_ns", cns);
	put(arg, "gpu_fallback_requests", gfb);
	put(arg, "in_use", host_reqtab_in_use(&a->tab));
	put(arg, "in_flight_nic", host_nic_in_flight(&a->nic));
	for (uint32_t k = 0; k < a->n_models; k++) {
		snprintf(key, sizeof(key), "queued_%s", a->hm[k].m->name);
		put(arg, key, rte_ring_count(a->q[k]));
	}
	put(arg, "link_up", a->nic.link_up);
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

static void tel_put(void *arg, const char *key, uint64_t v)
{
	rte_tel_data_add_dict_u64(arg, key, v);
}

static int tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
	rte_tel_data_start_dict(d);
	if (host_g)
		stats_each(host_g, tel_put, d);
	return 0;
}

static void hist_add(struct rte_tel_data *d, const char *name, const struct host_hist *h)
{
	struct rte_tel_data *arr = rte_tel_data_alloc();

	if (!arr)
		return;
	rte_tel_data_start_array(arr, RTE_TEL_U64_VAL);
	for (unsigned b = 0; b < HOST_HIST_BUCKETS; b++)
		rte_tel_data_add_array_u64(arr, rd(&h->b[b]));
	rte_tel_data_add_dict_container(d, name, arr, 0);
}

static int tel_latency(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct host_hist comp = {0};

	rte_tel_data_start_dict(d);
	if (!host_g)
		return 0;
	for (unsigned i = 0; i < HOST_H__COUNT; i++)
		hist_add(d, hist_names[i], &host_g->h[i]);
	for (unsigned i = 0; i < (host_g->n_workers ? host_g->n_workers : 1); i++)
		for (unsigned b = 0; b < HOST_HIST_BUCKETS; b++)
			comp.b[b] += rd(&host_g->w[i].h_compute.b[b]);
	hist_add(d, "host_batch_compute_us", &comp);
	return 0;
}

static int tel_models(const char *cmd, const char *params, struct rte_tel_data *d)
{
	char key[96];

	rte_tel_data_start_dict(d);
	for (uint32_t i = 0; host_g && i < host_g->n_models; i++) {
		snprintf(key, sizeof(key), "%s:%s:%u", host_g->hm[i].m->name,
			 host_mode_name(host_g->hm[i].mode), host_g->hm[i].split);
		rte_tel_data_add_dict_u64(d, key, host_g->hm[i].model_id);
	}
	return 0;
}

static void file_put(void *arg, const char *key, uint64_t v)
{
	fprintf(arg, "%s %lu\n", key, (unsigned long)v);
}

void host_telemetry_register(void)
{
	rte_telemetry_register_cmd("/splitnic/host/stats", tel_stats,
				   "splitnic-host counters by reason, parser verdicts, reassembly");
	rte_telemetry_register_cmd(
	    "/splitnic/host/latency", tel_latency,
	    "splitnic-host latency histograms: bucket b = [2^(b-1), 2^b) us");
	rte_telemetry_register_cmd("/splitnic/host/models", tel_models,
				   "models served: name:mode:split -> model id");
}

void host_stats_write(struct host_app *a, FILE *f)
{
	stats_each(a, file_put, f);
}
