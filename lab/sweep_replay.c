// SPDX-License-Identifier: MIT
/*
 * splitnic sweep --packet --replay FILE.json: a recorded packet sweep's MEASURED points (its
 * --json) predicted again, by this build's cost model with this run's --profile, without a lab
 * or root. The measurements are the file's, figure for figure; the MODELED figures, the
 * planner's choice and the model's ranking are computed now, from each op's CPU time and the
 * NIC's suffixes as the file recorded them (cpu_op_us, nic_suffix_us; an older file without
 * them: timed in process now, on this machine). What it answers: how a profile from another
 * calibration, or a change to the model, would have predicted the same measurements.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "exec/kexec.h"
#include "lab/plan_measure.h"
#include "lab/sweep_pk.h"

static const char *const t_key[PROTO_T_COUNT] = {"total", "rx",	  "queue", "host",
						 "pack",  "xfer", "nic",   "tx"};

/* A number of the file: a JSON number, or NAN (null, absent: a point without answers). */
static double num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static uint64_t count(const json_t *o, const char *key, bool *bad)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		*bad = true;
		return 0;
	}
	return (uint64_t)json_integer_value(v);
}

/* One split's "measured" object into pt; false when a count is missing or inconsistent. */
static bool point_of(const json_t *meas, double offered, struct sweep_point *pt)
{
	const json_t *srv = json_object_get(meas, "server_mean_ns"),
		     *s50 = json_object_get(meas, "server_p50_ns");
	bool bad = !json_is_object(meas);

	pt->done = true;
	pt->load = offered;
	pt->p50 = num(meas, "p50_us");
	pt->p99 = num(meas, "p99_us");
	pt->mean = num(meas, "mean_us");
	pt->thr = num(meas, "throughput_rps");
	pt->requests = count(meas, "requests", &bad);
	pt->responses = count(meas, "responses", &bad);
	pt->errors = count(meas, "errors", &bad);
	pt->busy = count(meas, "busy", &bad);
	pt->timeouts = count(meas, "timeouts", &bad);
	pt->ex_nic = count(meas, "answered_by_nic", &bad);
	pt->ex_fallback = count(meas, "host_fallback", &bad);
	pt->spread = fmax(0, num(meas, "p50_spread"));
	pt->ans_spread = fmax(0, num(meas, "answered_spread"));
	for (unsigned k = 0; k < PROTO_T_COUNT; k++) {
		pt->srv[k] = srv ? num(srv, t_key[k]) : NAN;
		pt->srv_p50[k] = s50 ? num(s50, t_key[k]) : NAN;
	}
	return !bad && pt->responses <= pt->requests &&
	       pt->ex_nic + pt->ex_fallback <= pt->requests;
}

/* The split a point names ("k"): its candidate's index, or -1. */
static int cand_of(const struct pk *p, const json_t *s)
{
	const json_t *k = json_object_get(s, "k");

	for (uint32_t j = 0; json_is_integer(k) && j < p->n_cand; j++)
		if ((json_int_t)p->cand[j].k == json_integer_value(k))
			return (int)j;
	return -1;
}

/* The splits of one load's points into ro->splits (each once); -EINVAL after a message when one
 * is not a split of m where the NIC can take over. */
static int splits_of(const json_t *ld, const char *path, const struct model *m,
		     struct sweep_pk_opts *ro)
{
	const size_t max = sizeof(ro->splits) / sizeof(ro->splits[0]);
	const json_t *s;
	size_t i;

	json_array_foreach(json_object_get(ld, "splits"), i, s)
	{
		const json_t *k = json_object_get(s, "k");
		const json_int_t v = json_is_integer(k) ? json_integer_value(k) : -1;
		uint32_t j = 0;

		if (v < 0 || v > (json_int_t)m->n_layers ||
		    ((uint32_t)v < m->n_layers && !kexec_nic_handoff_ok(m, (uint32_t)v))) {
			fprintf(
			    stderr,
			    "splitnic sweep: --replay %s: a point whose split (\"k\") is not one "
			    "of %s's\n",
			    path, m->name);
			return -EINVAL;
		}
		while (j < ro->n_splits && ro->splits[j] != (uint32_t)v)
			j++;
		if (j == ro->n_splits && j < max)
			ro->splits[ro->n_splits++] = (uint32_t)v;
	}
	return 0;
}

/* The rates, the loads and the splits of the file into ro (the sweep's options as recorded),
 * checked against model m. 0, or -EINVAL after a message naming what is wrong. */
static int replay_shape(const json_t *root, const char *path, const struct model *m,
			struct sweep_pk_opts *ro)
{
	const json_t *rates = json_object_get(root, "rates"), *r, *ld;
	const char *model = json_string_value(json_object_get(root, "model"));
	const char *mode = json_string_value(json_object_get(root, "mode"));
	size_t b, l;

	if (!model || strcmp(model, m->name)) {
		fprintf(stderr, "splitnic sweep: --replay %s: a sweep of model '%s', not of %s\n",
			path, model ? model : "(none)", m->name);
		return -EINVAL;
	}
	if (!mode || strcmp(mode, "packet") || !json_is_array(rates) || !json_array_size(rates) ||
	    json_array_size(rates) > SWEEP_MAX_BW) {
		fprintf(stderr,
			"splitnic sweep: --replay %s: not the --json of a packet sweep (mode "
			"\"packet\", 1 to %d link rates)\n",
			path, SWEEP_MAX_BW);
		return -EINVAL;
	}
	ro->n_rate = (uint32_t)json_array_size(rates);
	ro->n_load = 0;
	ro->n_splits = 0;
	json_array_foreach(rates, b, r)
	{
		const json_t *g = json_object_get(r, "link_gbps"),
			     *loads = json_object_get(r, "loads");

		ro->rate[b] = json_is_number(g) ? json_number_value(g) : 0;
		if (!json_is_array(loads) || !json_array_size(loads) ||
		    json_array_size(loads) > SWEEP_MAX_LOAD ||
		    (b && json_array_size(loads) != ro->n_load) || !(ro->rate[b] >= 0)) {
			fprintf(stderr,
				"splitnic sweep: --replay %s: link rate %zu: 1 to %d loads, as "
				"many at every rate\n",
				path, b + 1, SWEEP_MAX_LOAD);
			return -EINVAL;
		}
		ro->n_load = (uint32_t)json_array_size(loads);
		json_array_foreach(loads, l, ld)
		{
			if (splits_of(ld, path, m, ro))
				return -EINVAL;
		}
	}
	for (uint32_t k = 0; k < ro->n_load; k++)
		ro->load_rel[k] = false;
	return 0;
}

/* The ops' CPU times and the NIC's suffixes the recorded predictions priced (cpu_op_us,
 * nic_suffix_us) into p->pm; false when the file has none (an older sweep) or not m's count. */
static bool timings_of(const json_t *root, struct pk *p)
{
	const json_t *ops = json_object_get(root, "cpu_op_us"),
		     *suf = json_object_get(root, "nic_suffix_us");
	const uint32_t n = p->m->n_layers;
	struct plan_measured *pm = &p->pm;

	if (json_array_size(ops) != n || json_array_size(suf) != n + 1)
		return false;
	pm->cpu_op_s = calloc(n, sizeof(double));
	pm->nic_suffix_s = calloc(n + 1, sizeof(double));
	if (!pm->cpu_op_s || !pm->nic_suffix_s) {
		plan_measured_free(pm);
		return false;
	}
	pm->n = n;
	pm->cpu_total_s = 0;
	for (uint32_t k = 0; k <= n; k++) {
		const json_t *v = json_array_get(suf, k);

		pm->nic_suffix_s[k] = json_is_number(v) ? json_number_value(v) * 1e-6 : NAN;
		if (k == n)
			break;
		v = json_array_get(ops, k);
		if (!json_is_number(v) || !(json_number_value(v) >= 0)) {
			plan_measured_free(pm);
			return false;
		}
		pm->cpu_op_s[k] = json_number_value(v) * 1e-6;
		pm->cpu_total_s += pm->cpu_op_s[k];
	}
	return true;
}

int pk_replay_load(struct pk *p, struct sweep_pk_opts *ro)
{
	json_error_t je;
	json_t *root = json_load_file(ro->replay, 0, &je), *r, *ld, *s;
	const char *plat;
	size_t b, l, i;
	int ret = -EINVAL;

	if (!root) {
		fprintf(stderr, "splitnic sweep: --replay %s: line %d: %s\n", ro->replay, je.line,
			je.text);
		return -EINVAL;
	}
	if (replay_shape(root, ro->replay, p->m, ro))
		goto out;
	plat = json_string_value(json_object_get(root, "platform"));
	if (plat && (!strcmp(plat, "emu") || !strcmp(plat, "lcore")))
		ro->platform = !strcmp(plat, "emu") ? "emu" : "lcore";
	/* the recorded servers' polling, which the model prices */
	if (json_is_number(json_object_get(root, "poll_nic_sleep_us")))
		p->pr.v[SPLIT_P_POLL_NIC] = num(root, "poll_nic_sleep_us") * 1e-6;
	if (json_is_number(json_object_get(root, "poll_host_sleep_us")))
		p->pr.v[SPLIT_P_POLL_HOST] = num(root, "poll_host_sleep_us") * 1e-6;
	ret = pk_candidates(p);
	if (ret)
		goto out;
	timings_of(root, p);
	json_array_foreach(json_object_get(root, "rates"), b, r)
	{
		p->cap[b] = fmax(0, num(r, "all_host_capacity_rps"));
		json_array_foreach(json_object_get(r, "loads"), l, ld)
		{
			const double offered = num(ld, "offered_rps");

			if (!(offered > 0)) {
				fprintf(stderr,
					"splitnic sweep: --replay %s: rate %zu, load %zu: no "
					"\"offered_rps\"\n",
					ro->replay, b + 1, l + 1);
				ret = -EINVAL;
				goto out;
			}
			p->load[b][l] = offered;
			json_array_foreach(json_object_get(ld, "splits"), i, s)
			{
				const int j = cand_of(p, s);

				if (j < 0 || !point_of(json_object_get(s, "measured"), offered,
						       &p->cand[j].pt[b * SWEEP_MAX_LOAD + l])) {
					fprintf(stderr,
						"splitnic sweep: --replay %s: rate %zu, load %zu, "
						"point %zu: its \"measured\" counts are missing or "
						"do not add up\n",
						ro->replay, b + 1, l + 1, i + 1);
					ret = -EINVAL;
					goto out;
				}
			}
		}
	}
	ret = 0;
out:
	json_decref(root);
	return ret;
}
