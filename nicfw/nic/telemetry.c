// SPDX-License-Identifier: MIT
/* splitnic-nic's telemetry and counters (nicfw/nic/nic.h); docs/operator-guide.md lists the keys.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "dpdk/metrics.h"
#include "dpdk/reloader.h"
#include "nicfw/emu/exec_emu.h"
#include "nicfw/nic/nic.h"

static void stats_each(struct nic *n, void (*put)(void *arg, const char *key, uint64_t v),
		       void *arg)
{
	uint64_t c[NICFW_C__COUNT], verd[PROTO_VERDICT__COUNT];
	struct proto_reasm_stats ra;
	struct rte_eth_stats es;
	uint64_t version, reloads, failed;
	char key[64];

	nicfw_disp_counters(n->disp, c, verd);
	for (unsigned i = 0; i < NICFW_C__COUNT; i++)
		put(arg, nicfw_disp_counter_name(i), c[i]);
	for (unsigned v = 0; v < PROTO_VERDICT__COUNT; v++) {
		snprintf(key, sizeof(key), "verdict_%s", v ? proto_verdict_name(v) : "ok");
		put(arg, key, verd[v]);
	}
	nicfw_disp_reasm_stats(n->disp, &ra);
	for (unsigned v = 0; v < PROTO_RA__COUNT; v++) {
		snprintf(key, sizeof(key), "reasm_%s", proto_ra_verdict_name(v));
		put(arg, key, ra.verdicts[v]);
	}
	put(arg, "reasm_expired", ra.expired);
	put(arg, "queued", nicfw_disp_pending(n->disp));
	put(arg, "tx_drop_wire", __atomic_load_n(&n->tx_drop[0], __ATOMIC_RELAXED));
	put(arg, "tx_drop_host", __atomic_load_n(&n->tx_drop[1], __ATOMIC_RELAXED));
	put(arg, "link_down_drop_wire", __atomic_load_n(&n->link_down_drop[0], __ATOMIC_RELAXED));
	put(arg, "link_down_drop_host", __atomic_load_n(&n->link_down_drop[1], __ATOMIC_RELAXED));
	put(arg, "backlogged_host", __atomic_load_n(&n->backlogged[1], __ATOMIC_RELAXED));
	dpdk_reloader_figures(nic_reloader(n), &version, &reloads, &failed);
	put(arg, "models", __atomic_load_n(&n->n_map, __ATOMIC_RELAXED));
	put(arg, "models_version", version);
	put(arg, "reloads", reloads);
	put(arg, "reload_failures", failed);
	for (int p = 0; p < 2; p++) {
		const char *pn = p ? "host" : "wire";

		if (rte_eth_stats_get(n->port_id[p], &es))
			continue;
		snprintf(key, sizeof(key), "%s_ipackets", pn);
		put(arg, key, es.ipackets);
		snprintf(key, sizeof(key), "%s_opackets", pn);
		put(arg, key, es.opackets);
		snprintf(key, sizeof(key), "%s_imissed", pn);
		put(arg, key, es.imissed);
		snprintf(key, sizeof(key), "%s_ierrors", pn);
		put(arg, key, es.ierrors);
		snprintf(key, sizeof(key), "%s_oerrors", pn);
		put(arg, key, es.oerrors);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Where slot i's chain runs, for tel_models: its lcores ("1,2"; "main": the inline runner, on
 * the main lcore between packet-loop turns) and the handlers they ran for it. */
static void chain_where(struct nic *n, uint32_t i, struct rte_tel_data *d)
{
	unsigned lc[NICFW_LCORE_MAX_RUNNERS];
	const int chain = nicfw_exec_lcore_chain(&n->x[i]);
	char key[32], on[NICFW_LCORE_MAX_RUNNERS * 4 + 8] = "";
	uint64_t handled;
	uint32_t nl;
	size_t len = 0;

	if (n->o.emu || chain < 0)
		return;
	nl = nicfw_lcore_where(n->lc, (uint32_t)chain, lc, &handled);
	for (uint32_t j = 0; j < nl && len < sizeof(on); j++) {
		char one[16] = "main";

		if (lc[j] != RTE_MAX_LCORE)
			snprintf(one, sizeof(one), "%u", lc[j]);
		len += (size_t)snprintf(on + len, sizeof(on) - len, "%s%s", j ? "," : "", one);
	}
	snprintf(key, sizeof(key), "m%u_lcores", i);
	rte_tel_data_add_dict_string(d, key, on);
	snprintf(key, sizeof(key), "m%u_handlers", i);
	rte_tel_data_add_dict_u64(d, key, handled);
}

/*
 * The models, keyed m<i>_<what> as in /splitnic/nic/timing: DPDK's dictionary keys take only
 * letters, digits, '_' and '/', so a model's name (fmnist-bmlp) is a value, never a key.
 */
static int tel_models(void *srv, const char *params, struct rte_tel_data *d)
{
	struct nic *n = srv;
	uint64_t version, done, failed;
	char key[32];

	pthread_mutex_lock(&n->rd_lock);
	rte_tel_data_add_dict_u64(d, "models", n->n_map);
	for (uint32_t j = 0; j < n->n_map; j++) {
		const uint32_t i = n->map[j];

		snprintf(key, sizeof(key), "m%u_name", i);
		rte_tel_data_add_dict_string(d, key, n->m[i]->name);
		snprintf(key, sizeof(key), "m%u_file", i);
		rte_tel_data_add_dict_string(d, key, n->sl[i].path);
		snprintf(key, sizeof(key), "m%u_id", i);
		rte_tel_data_add_dict_u64(d, key, n->sl[i].id);
		snprintf(key, sizeof(key), "m%u_first_op", i);
		rte_tel_data_add_dict_u64(d, key, n->sl[i].first);
		snprintf(key, sizeof(key), "m%u_ops", i);
		rte_tel_data_add_dict_u64(d, key, n->m[i]->n_layers - n->sl[i].first);
		chain_where(n, i, d);
	}
	pthread_mutex_unlock(&n->rd_lock);
	dpdk_reloader_figures(nic_reloader(n), &version, &done, &failed);
	rte_tel_data_add_dict_u64(d, "models_version", version);
	return 0;
}

/* One model's timing figures (docs/operator-guide.md, "Calibrating the NIC"); names are keys. */
static void timing_each(struct nic *n, uint32_t i,
			void (*put)(void *arg, const char *key, uint64_t v), void *arg)
{
	const struct nicfw_disp_timing *t = nicfw_disp_timing(n->disp, i);
	const uint64_t reqs = __atomic_load_n(&t->requests, __ATOMIC_RELAXED);
	const uint32_t k = reqs < NICFW_DISP_SAMPLES ? (uint32_t)reqs : NICFW_DISP_SAMPLES;
	struct nicfw_exec_emu_stats st;
	uint32_t *v = malloc((k ? k : 1) * sizeof(*v));
	static const struct {
		const char *key;
		uint32_t per_mille;
	} pct[] = {{"nic_ns_p50", 500}, {"nic_ns_p90", 900}, {"nic_ns_p99", 990}};

	put(arg, "model_id", n->sl[i].id);
	put(arg, "executors", n->o.executors);
	put(arg, "requests", reqs);
	put(arg, "nic_ns_mean", reqs ? __atomic_load_n(&t->ns_sum, __ATOMIC_RELAXED) / reqs : 0);
	put(arg, "samples", k);
	if (v) {
		for (uint32_t j = 0; j < k; j++)
			v[j] = __atomic_load_n(&t->ns[j], __ATOMIC_RELAXED);
		qsort(v, k, sizeof(*v), cmp_u32);
		for (size_t j = 0; j < sizeof(pct) / sizeof(pct[0]); j++)
			put(arg, pct[j].key,
			    k ? v[(uint64_t)(k - 1) * pct[j].per_mille / 1000] : 0);
		put(arg, "nic_ns_min", k ? v[0] : 0);
		put(arg, "nic_ns_max", k ? v[k - 1] : 0);
		free(v);
	}
	if (n->o.emu) {
		nicfw_exec_emu_stats(&n->x[i], &st);
		put(arg, "modeled_ns_per_request", st.modeled_ns);
		put(arg, "modeled_warmup_requests", st.warmed);
		put(arg, "compute_ns_max", st.compute_ns_max);
		put(arg, "overruns", st.overruns);
		put(arg, "late_releases", st.late);
		put(arg, "late_ns_max", st.late_ns_max);
	}
}

/* Keys of model i's figures: PREFIXm<i>_<key> (DPDK's keys are flat: letters, digits, _). */
struct model_put {
	void (*put)(void *arg, const char *key, uint64_t v);
	void *arg;
	const char *prefix;
	uint32_t model;
};

static void put_model_key(void *arg, const char *key, uint64_t v)
{
	const struct model_put *mp = arg;
	char k[64];

	snprintf(k, sizeof(k), "%sm%u_%s", mp->prefix, mp->model, key);
	mp->put(mp->arg, k, v);
}

static void timing_all(struct nic *n, const char *prefix,
		       void (*put)(void *arg, const char *key, uint64_t v), void *arg)
{
	pthread_mutex_lock(&n->rd_lock);
	for (uint32_t j = 0; j < n->n_map; j++) {
		struct model_put mp = {put, arg, prefix, n->map[j]};

		timing_each(n, n->map[j], put_model_key, &mp);
	}
	pthread_mutex_unlock(&n->rd_lock);
}

static void tel_put(void *arg, const char *key, uint64_t v)
{
	rte_tel_data_add_dict_u64(arg, key, v);
}

static int tel_timing(void *srv, const char *params, struct rte_tel_data *d)
{
	struct nic *n = srv;
	char key[32];

	rte_tel_data_add_dict_string(d, "platform", n->o.emu ? "emu" : "lcore");
	pthread_mutex_lock(&n->rd_lock);
	rte_tel_data_add_dict_u64(d, "models", n->n_map);
	for (uint32_t j = 0; j < n->n_map; j++) {
		snprintf(key, sizeof(key), "m%u_name", n->map[j]);
		rte_tel_data_add_dict_string(d, key, n->m[n->map[j]]->name);
	}
	pthread_mutex_unlock(&n->rd_lock);
	timing_all(n, "", tel_put, d);
	return 0;
}

const struct dpdk_tel_cmd nic_tel_cmds[NIC_N_TEL_CMDS] = {
    {"/splitnic/nic/models", "models held: m<i>_name, _id, _first_op, _ops", tel_models},
    {"/splitnic/nic/timing",
     "per model (m0_*, ...): NIC time per request measured, submit to result; emu: modeled "
     "time (modeled)",
     tel_timing},
};

/* Slot k holds a model served or draining: nic_slot_load sets sl[k] last, the reloader clears
 * it under rd_lock before it frees the model. */
static bool held(const struct nic *n, uint32_t k)
{
	return n->sl[k].path && n->m[k];
}

/* Adds slot k's NIC times (a version of `name`) to h, sum. */
static void hist_add(const struct nicfw_disp_timing *t, uint64_t *h, uint64_t *sum)
{
	for (uint32_t b = 0; b < NICFW_DISP_HIST; b++)
		h[b] += __atomic_load_n(&t->hist[b], __ATOMIC_RELAXED);
	*sum += __atomic_load_n(&t->ns_sum, __ATOMIC_RELAXED);
}

/* Per model name, the NIC time of every RESPONSE (submit to result): stage "nic", summed over
 * its versions (served, draining, and gone: n->gone), so that it only grows across reloads. */
static void metrics_hist(void *srv, metrics_hist_put put, void *arg)
{
	struct nic *n = srv;
	const char *names[NICFW_DISP_MAX_MODELS + NIC_HISTS];
	uint32_t nn = 0;

	pthread_mutex_lock(&n->rd_lock);
	for (uint32_t k = 0; k < NICFW_DISP_MAX_MODELS + NIC_HISTS; k++) {
		const char *name = k < NICFW_DISP_MAX_MODELS
				       ? (held(n, k) ? n->m[k]->name : NULL)
				       : n->gone[k - NICFW_DISP_MAX_MODELS].name;
		uint32_t j;

		for (j = 0; name && name[0] && j < nn && strcmp(names[j], name); j++)
			;
		if (name && name[0] && j == nn)
			names[nn++] = name;
	}
	for (uint32_t j = 0; j < nn; j++) {
		uint64_t h[NICFW_DISP_HIST] = {0}, sum = 0;

		for (uint32_t k = 0; k < NICFW_DISP_MAX_MODELS; k++)
			if (held(n, k) && !strcmp(n->m[k]->name, names[j]))
				hist_add(nicfw_disp_timing(n->disp, k), h, &sum);
		for (uint32_t g = 0; g < NIC_HISTS; g++)
			if (!strcmp(n->gone[g].name, names[j])) {
				for (uint32_t b = 0; b < NICFW_DISP_HIST; b++)
					h[b] += n->gone[g].hist[b];
				sum += n->gone[g].ns_sum;
			}
		put(arg, names[j], "nic", h, NICFW_DISP_HIST, sum);
	}
	pthread_mutex_unlock(&n->rd_lock);
}

static const char *metrics_model(void *srv, unsigned i)
{
	struct nic *n = srv;
	const char *name;

	pthread_mutex_lock(&n->rd_lock);
	name = i < NICFW_DISP_MAX_MODELS && n->m[i] ? n->m[i]->name : NULL;
	pthread_mutex_unlock(&n->rd_lock);
	return name;
}

static const char *const gauges[] = {"queued", "models", "models_version", NULL};

const struct dpdk_metrics_ops nic_metrics_ops = {metrics_hist, metrics_model, gauges};

void nic_counters(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg)
{
	stats_each(srv, put, arg);
}

void nic_report(void *srv, void (*put)(void *arg, const char *key, uint64_t v), void *arg)
{
	stats_each(srv, put, arg);
	timing_all(srv, "timing_", put, arg);
}
