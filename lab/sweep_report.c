// SPDX-License-Identifier: MIT
/*
 * splitnic sweep --packet, its report: per link rate and offered load the MEASURED best split
 * (goodput first; ties within the rounds' spread), the planner's choice and its error, as a
 * table, as JSON (every figure under "predicted" MODELED) and as a plot.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/kexec.h"
#include "lab/sweep_pk.h"
#include "protocol/proto.h"
#include "split/calib.h"
#include "split/stats.h"
#include "split/verbs.h"

static double rel_err(double pred_s, double meas_us)
{
	return meas_us > 0 && isfinite(pred_s) ? (pred_s * 1e6 - meas_us) / meas_us : NAN;
}

static double answered_share(const struct sweep_point *pt)
{
	return pt->requests ? (double)pt->responses / (double)pt->requests : 0;
}

/* The objective's MEASURED value of a point (us): p50, or p99 for --objective p99. */
static double measured_value(const struct pk *p, const struct sweep_point *pt)
{
	return p->o->objective == SPLIT_OBJ_P99 ? pt->p99 : pt->p50;
}

/*
 * The MEASURED verdict at rate b, load l (goodput first): the splits that answer at least
 * SWEEP_MIN_ANSWERED of what was offered compete on the objective's value, the best and every
 * split within max(3%, the rounds' spread of either) of it are tied best; when none answers
 * that much, the split answering the largest share is best (ties within a point or the rounds'
 * range of the answered share of either). within5[j]:
 * split j is within 5% of the best (or the rounds' spread), or tied. Returns the best's index,
 * or UINT32_MAX when nothing was measured.
 */
struct pk_verdict {
	uint32_t best;
	bool goodput_met;	  /* some split answered at least SWEEP_MIN_ANSWERED */
	bool tie[SWEEP_MAX_CAND]; /* tied with the best */
	bool within5[SWEEP_MAX_CAND];
};

static void judge(const struct pk *p, uint32_t b, uint32_t l, struct pk_verdict *v)
{
	const uint32_t i = b * SWEEP_MAX_LOAD + l,
		       n = p->n_cand < SWEEP_MAX_CAND ? p->n_cand : SWEEP_MAX_CAND;
	const struct sweep_point *bp;

	memset(v, 0, sizeof(*v));
	v->best = UINT32_MAX;
	for (uint32_t j = 0; j < n; j++) {
		const struct sweep_point *pt = &p->cand[j].pt[i];

		if (pt->done && answered_share(pt) >= SWEEP_MIN_ANSWERED &&
		    measured_value(p, pt) > 0) {
			v->goodput_met = true;
			if (v->best == UINT32_MAX ||
			    measured_value(p, pt) < measured_value(p, &p->cand[v->best].pt[i]))
				v->best = j;
		}
	}
	for (uint32_t j = 0; j < n && !v->goodput_met; j++) {
		const struct sweep_point *pt = &p->cand[j].pt[i];

		if (pt->done && (v->best == UINT32_MAX ||
				 answered_share(pt) > answered_share(&p->cand[v->best].pt[i])))
			v->best = j;
	}
	if (v->best == UINT32_MAX)
		return;
	bp = &p->cand[v->best].pt[i];
	for (uint32_t j = 0; j < n; j++) {
		const struct sweep_point *pt = &p->cand[j].pt[i];
		const double sp = fmax(pt->spread, bp->spread);

		if (!pt->done)
			continue;
		if (v->goodput_met) {
			if (answered_share(pt) < SWEEP_MIN_ANSWERED || !(measured_value(p, pt) > 0))
				continue;
			v->tie[j] =
			    measured_value(p, pt) <= measured_value(p, bp) * (1 + fmax(0.03, sp));
			v->within5[j] =
			    measured_value(p, pt) <= measured_value(p, bp) * (1 + fmax(0.05, sp));
		} else {
			v->tie[j] = v->within5[j] =
			    answered_share(pt) >=
			    answered_share(bp) - fmax(0.01, fmax(pt->ans_spread, bp->ans_spread));
		}
	}
}

static uint32_t planner_index(const struct pk *p, uint32_t b, uint32_t l)
{
	for (uint32_t j = 0; j < p->n_cand; j++)
		if (p->cand[j].pt[b * SWEEP_MAX_LOAD + l].done && p->cand[j].k == p->plan_k[b][l])
			return j;
	return UINT32_MAX;
}

void pk_report_text(struct pk *p)
{
	const struct model *m = p->m;
	const uint32_t n_pts = p->n_cand * p->o->n_rate * p->o->n_load;
	double *errs = calloc(n_pts + 1, sizeof(double)), *perr = calloc(n_pts + 1, sizeof(double));
	double *uerr = calloc(n_pts + 1, sizeof(double)), ans_err = 0;
	uint32_t ne = 0, npe = 0, nue = 0, ok = 0, ok_host = 0, cases = 0;
	char name[48], name2[48];
	const char *val = p->o->objective == SPLIT_OBJ_P99 ? "p99" : "p50";

	printf("model %s: %u ops, the NIC can start at op %u; packet path (splitnic client -> "
	       "splitnic-nic %s -> splitnic-host -> NIC), MEASURED end to end by the client; "
	       "per-stage medians from the RESPONSE timing fields (MEASURED by the servers); pred: "
	       "the cost model's MODELED figures at that load (profile's packet-path curves; each "
	       "op's CPU time and the NIC's suffixes MEASURED in process before the servers "
	       "started, all ops on the CPU: %.1f us)\n",
	       m->name, m->n_layers, kexec_nic_first(m), p->o->platform, p->pm.cpu_total_s * 1e6);
	printf("servers' polling: the longest idle sleep splitnic-nic %.0f us, splitnic-host "
	       "%.0f us (0: --poll busy); a sleeping lcore wakes %.1f us late (%s)\n",
	       1e6 * p->pr.v[SPLIT_P_POLL_NIC], 1e6 * p->pr.v[SPLIT_P_POLL_HOST],
	       1e6 * p->pr.v[SPLIT_P_POLL_WAKE],
	       p->pr.v[SPLIT_P_CAL_TIME] > 0 ? "MEASURED by the calibration" : "the default");
	for (uint32_t b = 0; b < p->o->n_rate; b++) {
		for (uint32_t l = 0; l < p->o->n_load; l++) {
			const uint32_t pi = b * SWEEP_MAX_LOAD + l, pj = planner_index(p, b, l);
			uint32_t hj = UINT32_MAX;
			struct pk_verdict v;

			judge(p, b, l, &v);
			printf("\nlink %g Gbit/s", p->o->rate[b]);
			if (p->o->rate[b] > 0)
				printf(" (tc tbf, a %.0f B bucket)", pk_lab_burst(p->o->rate[b]));
			else
				printf(" (not shaped)");
			printf(", offered %.0f requests/s (Poisson)", p->load[b][l]);
			if (p->o->load_rel[l])
				printf(" = %gx the all-host capacity %.0f/s (measured)",
				       p->o->load[l], p->cap[b]);
			printf(
			    "\n%-22s %9s %9s %6s %6s %6s %6s %7s %8s %8s %8s %9s %9s %6s %6s %6s "
			    "%7s %s\n",
			    "split", "p50_us", "p99_us", "ans%", "nic%", "fb%", "sprd%", "host_us",
			    "pack_us", "nic_us", "net_us", "pred_p50*", "pred_p99*", "pans%*",
			    "pnic%*", "rho*", "err", "");
			for (uint32_t j = 0; j < p->n_cand; j++) {
				const struct sweep_point *pt = &p->cand[j].pt[pi];
				const double e = rel_err(pt->pred.p50, pt->p50);
				const double req = pt->requests ? (double)pt->requests : 1;

				if (!pt->done)
					continue;
				if (p->cand[j].k == m->n_layers)
					hj = j;
				if (isfinite(e)) {
					errs[ne++] = fabs(e);
					if (pt->pred.rho_max < 0.95 &&
					    answered_share(pt) >= SWEEP_MIN_ANSWERED)
						uerr[nue++] = fabs(e);
				}
				ans_err =
				    fmax(ans_err, fabs(pt->pred.answered - answered_share(pt)));
				printf(
				    "%-22s %9.1f %9.1f %6.1f %6.1f %6.1f %6.1f %7.1f %8.1f %8.1f "
				    "%8.1f %9.1f %9.1f %6.1f %6.1f %6.2f %6.1f%% %s%s%s\n",
				    pk_cand_name(p, p->cand[j].k, name, sizeof(name)), pt->p50,
				    pt->p99, 100 * answered_share(pt), 100 * pt->ex_nic / req,
				    100 * pt->ex_fallback / req, 100 * pt->spread,
				    pt->srv_p50[PT_HOST] / 1e3, pt->srv_p50[PT_PACK] / 1e3,
				    pt->srv_p50[PT_NIC] / 1e3,
				    (pt->p50 * 1e3 - pt->srv_p50[PT_TOTAL]) / 1e3,
				    pt->pred.p50 * 1e6, pt->pred.p99 * 1e6, 100 * pt->pred.answered,
				    100 * pt->pred.by_nic, pt->pred.rho_max, 100 * e,
				    j == v.best ? "measured-best "
				    : v.tie[j]	? "tied-best "
						: "",
				    j == pj ? "planner " : "",
				    answered_share(pt) < SWEEP_MIN_ANSWERED ? "(sheds)" : "");
			}
			if (v.best == UINT32_MAX)
				continue;
			if (pj == UINT32_MAX) {
				printf("SWEEP mode=packet model=%s gbps=%g load=%.1f planner=%s "
				       "planner_measured=no (not among --splits)\n",
				       m->name, p->o->rate[b], p->load[b][l],
				       pk_cand_name(p, p->plan_k[b][l], name, sizeof(name)));
				continue;
			}
			cases++;
			ok += v.within5[pj];
			ok_host += hj != UINT32_MAX && v.within5[hj];
			perr[npe] = fabs(rel_err(p->plan_pred[b][l].p50, p->cand[pj].pt[pi].p50));
			npe += isfinite(perr[npe]);
			printf(
			    "SWEEP mode=packet model=%s gbps=%g load=%.1f planner=%s "
			    "predicted_%s_us=%.1f measured_%s_us=%.1f planner_answered=%.1f%% "
			    "predicted_answered=%.1f%% best=%s best_us=%.1f best_answered=%.1f%% "
			    "goodput_met=%s within5=%s all_host_within5=%s best_is_all_host=%s "
			    "pred_err=%.1f%%\n",
			    m->name, p->o->rate[b], p->load[b][l],
			    pk_cand_name(p, p->plan_k[b][l], name, sizeof(name)), val,
			    1e6 * (p->o->objective == SPLIT_OBJ_P99 ? p->plan_pred[b][l].p99
								    : p->plan_pred[b][l].p50),
			    val, measured_value(p, &p->cand[pj].pt[pi]),
			    100 * answered_share(&p->cand[pj].pt[pi]),
			    100 * p->plan_pred[b][l].answered,
			    pk_cand_name(p, p->cand[v.best].k, name2, sizeof(name2)),
			    measured_value(p, &p->cand[v.best].pt[pi]),
			    100 * answered_share(&p->cand[v.best].pt[pi]),
			    v.goodput_met ? "yes" : "no", v.within5[pj] ? "yes" : "no",
			    hj == UINT32_MAX ? "-"
			    : v.within5[hj]  ? "yes"
					     : "no",
			    p->cand[v.best].k == m->n_layers ? "yes" : "no",
			    100 * rel_err(p->plan_pred[b][l].p50, p->cand[pj].pt[pi].p50));
		}
	}
	printf(
	    "\nans%%, nic%%, fb%%: MEASURED shares of the offered requests answered, answered by "
	    "the NIC, finished by the host's fallback; sprd%%: the rounds' relative range of the "
	    "p50; host_us .. nic_us: medians of the servers' RESPONSE timing fields; net_us: the "
	    "end-to-end p50 minus the servers' median total (the wire both ways and the host -> "
	    "NIC transfer: no server clock holds it); *: MODELED (pans%%, pnic%%: answered, by "
	    "the NIC; rho: the bottleneck's utilisation); err: (MODELED p50 - MEASURED p50) / "
	    "MEASURED p50. Best: goodput first (a split answering under %.0f%% is never best on "
	    "latency), ties within 3%% or the rounds' spread; when none answers that much, the "
	    "largest answered share, ties within a point or the rounds' range of the share "
	    "(JSON: answered_spread); within5: within 5%% of the best (or the spread)\n",
	    100 * SWEEP_MIN_ANSWERED);
	printf("SWEEPSUM mode=packet model=%s cases=%u planner_within5=%u all_host_within5=%u "
	       "median_abs_pred_err=%.1f%% median_abs_pred_err_unsaturated=%.1f%% "
	       "median_abs_pred_err_planner=%.1f%% max_answered_err=%.1f points=%u "
	       "unsaturated_points=%u\n",
	       m->name, cases, ok, ok_host, 100 * stats_median(errs, ne),
	       100 * stats_median(uerr, nue), 100 * stats_median(perr, npe), 100 * ans_err, ne,
	       nue);
	free(errs);
	free(perr);
	free(uerr);
}

/* A number, or null where there is none (no answers: no latency). */
static json_t *jreal(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *point_json(const struct pk *p, const struct pk_cand *c, const struct sweep_point *pt)
{
	static const char *const t_names[PROTO_T_COUNT] = {"total", "rx",   "queue", "host",
							   "pack",  "xfer", "nic",   "tx"};
	json_t *j = json_object(), *meas = json_object(), *srv = json_object(),
	       *srv50 = json_object(), *pred = json_object();
	char name[48];

	json_object_set_new(j, "split", json_string(pk_cand_name(p, c->k, name, sizeof(name))));
	json_object_set_new(j, "k", json_integer(c->k));
	json_object_set_new(meas, "p50_us", jreal(pt->p50));
	json_object_set_new(meas, "p99_us", jreal(pt->p99));
	json_object_set_new(meas, "mean_us", jreal(pt->mean));
	json_object_set_new(meas, "throughput_rps", jreal(pt->thr));
	json_object_set_new(meas, "requests", json_integer((json_int_t)pt->requests));
	json_object_set_new(meas, "responses", json_integer((json_int_t)pt->responses));
	json_object_set_new(meas, "errors", json_integer((json_int_t)pt->errors));
	json_object_set_new(meas, "busy", json_integer((json_int_t)pt->busy));
	json_object_set_new(meas, "timeouts", json_integer((json_int_t)pt->timeouts));
	json_object_set_new(meas, "answered_by_nic", json_integer((json_int_t)pt->ex_nic));
	json_object_set_new(meas, "host_fallback", json_integer((json_int_t)pt->ex_fallback));
	json_object_set_new(meas, "answered_share", jreal(answered_share(pt)));
	json_object_set_new(meas, "nic_share",
			    jreal(pt->requests ? (double)pt->ex_nic / (double)pt->requests : 0));
	json_object_set_new(
	    meas, "fallback_share",
	    jreal(pt->requests ? (double)pt->ex_fallback / (double)pt->requests : 0));
	json_object_set_new(meas, "unanswered_share", jreal(1 - answered_share(pt)));
	json_object_set_new(meas, "p50_spread", jreal(pt->spread));
	json_object_set_new(meas, "answered_spread", jreal(pt->ans_spread));
	for (unsigned k = 0; k < PROTO_T_COUNT; k++) {
		json_object_set_new(srv, t_names[k], jreal(pt->srv[k]));
		json_object_set_new(srv50, t_names[k], jreal(pt->srv_p50[k]));
	}
	json_object_set_new(meas, "server_mean_ns", srv);
	json_object_set_new(meas, "server_p50_ns", srv50);
	json_object_set_new(pred, "label", json_string("MODELED"));
	json_object_set_new(pred, "p50_us", jreal(pt->pred.p50 * 1e6));
	json_object_set_new(pred, "p99_us", jreal(pt->pred.p99 * 1e6));
	json_object_set_new(pred, "mean_us", jreal(pt->pred.mean * 1e6));
	json_object_set_new(pred, "throughput_rps", jreal(pt->pred.throughput));
	json_object_set_new(pred, "bottleneck_rho", jreal(pt->pred.rho_max));
	json_object_set_new(pred, "answered_share", jreal(pt->pred.answered));
	json_object_set_new(pred, "nic_share", jreal(pt->pred.by_nic));
	json_object_set_new(pred, "fallback_share", jreal(pt->pred.fallback));
	json_object_set_new(pred, "unanswered_share", jreal(pt->pred.shed));
	json_object_set_new(j, "measured", meas);
	json_object_set_new(j, "predicted", pred);
	return j;
}

/* The candidates measured at rate b, load l in the model's order (goodput first: those
 * MODELED to answer SWEEP_MIN_ANSWERED by the objective's value, then the rest by the share
 * they answer); their count. */
static uint32_t model_ranking(const struct pk *p, uint32_t b, uint32_t l, uint32_t *order)
{
	const uint32_t i = b * SWEEP_MAX_LOAD + l;
	const struct split_opts o = {.objective = p->o->objective,
				     .min_answered = SWEEP_MIN_ANSWERED};
	struct split_rank_key key[SWEEP_MAX_CAND];
	uint32_t n = 0, idx[SWEEP_MAX_CAND], ord[SWEEP_MAX_CAND];

	for (uint32_t j = 0; j < p->n_cand && j < SWEEP_MAX_CAND; j++) {
		const struct pk_cand *c = &p->cand[j];

		if (!c->pt[i].done)
			continue;
		split_rank_key(&o, &c->pt[i].pred, c->smax[b], c->plan.n_stages, &key[n]);
		idx[n++] = j;
	}
	split_rank_order(key, n, ord);
	for (uint32_t r = 0; r < n; r++)
		order[r] = idx[ord[r]];
	return n;
}

static const char pk_method[] =
    "MEASURED: end to end by splitnic client (open loop, Poisson arrivals), per stage by the "
    "servers' RESPONSE timing fields (means, ns); MODELED: every field under \"predicted\" "
    "(split_plan_pipeline, queues per stage)";

int pk_report_json(const struct pk *p)
{
	json_t *rates = json_array(), *root;
	char name[48];

	root = sweep_json_root(p->m->name, "packet", pk_method);
	json_object_set_new(root, "platform", json_string(p->o->platform));
	if (p->o->replay)
		json_object_set_new(root, "replayed_from", json_string(p->o->replay));
	{ /* what the MODELED figures priced the ops at (--replay takes them again) */
		json_t *ops = json_array(), *suf = json_array();

		for (uint32_t k = 0; k < p->pm.n; k++)
			json_array_append_new(ops, jreal(p->pm.cpu_op_s[k] * 1e6));
		for (uint32_t k = 0; p->pm.n && k <= p->pm.n; k++)
			json_array_append_new(suf, jreal(p->pm.nic_suffix_s[k] * 1e6));
		json_object_set_new(root, "cpu_op_us", ops);
		json_object_set_new(root, "nic_suffix_us", suf);
	}
	json_object_set_new(root, "poll_nic_sleep_us", jreal(1e6 * p->pr.v[SPLIT_P_POLL_NIC]));
	json_object_set_new(root, "poll_host_sleep_us", jreal(1e6 * p->pr.v[SPLIT_P_POLL_HOST]));
	json_object_set_new(root, "poll_wake_late_us", jreal(1e6 * p->pr.v[SPLIT_P_POLL_WAKE]));
	for (uint32_t b = 0; b < p->o->n_rate; b++) {
		json_t *rb = json_object(), *loads = json_array();

		json_object_set_new(rb, "link_gbps",
				    p->o->rate[b] > 0 ? json_real(p->o->rate[b]) : json_null());
		json_object_set_new(rb, "link_burst_bytes", jreal(pk_lab_burst(p->o->rate[b])));
		json_object_set_new(rb, "all_host_capacity_rps", jreal(p->cap[b]));
		for (uint32_t l = 0; l < p->o->n_load; l++) {
			json_t *lo = json_object(), *cands = json_array();

			json_t *best = json_array(), *rank = json_array();
			uint32_t order[SWEEP_MAX_CAND], n_order = model_ranking(p, b, l, order);
			const uint32_t pj = planner_index(p, b, l);
			struct pk_verdict v;

			judge(p, b, l, &v);
			json_object_set_new(lo, "offered_rps", jreal(p->load[b][l]));
			json_object_set_new(
			    lo, "planner",
			    json_string(pk_cand_name(p, p->plan_k[b][l], name, sizeof(name))));
			json_object_set_new(lo, "planner_predicted_p50_us",
					    jreal(p->plan_pred[b][l].p50 * 1e6));
			json_object_set_new(lo, "planner_predicted_answered",
					    jreal(p->plan_pred[b][l].answered));
			for (uint32_t j = 0; j < p->n_cand && j < SWEEP_MAX_CAND; j++)
				if (v.tie[j])
					json_array_append_new(
					    best, json_string(pk_cand_name(p, p->cand[j].k, name,
									   sizeof(name))));
			for (uint32_t r = 0; r < n_order; r++)
				json_array_append_new(
				    rank, json_string(pk_cand_name(p, p->cand[order[r]].k, name,
								   sizeof(name))));
			json_object_set_new(lo, "measured_best", best);
			json_object_set_new(lo, "modeled_ranking", rank);
			json_object_set_new(lo, "goodput_met", json_boolean(v.goodput_met));
			json_object_set_new(lo, "planner_within5",
					    pj == UINT32_MAX ? json_null()
							     : json_boolean(v.within5[pj]));
			for (uint32_t j = 0; j < p->n_cand; j++) {
				const struct sweep_point *pt =
				    &p->cand[j].pt[b * SWEEP_MAX_LOAD + l];

				if (!pt->done)
					continue;
				json_array_append_new(cands, point_json(p, &p->cand[j], pt));
			}
			json_object_set_new(lo, "splits", cands);
			json_array_append_new(loads, lo);
		}
		json_object_set_new(rb, "loads", loads);
		json_array_append_new(rates, rb);
	}
	json_object_set_new(root, "rates", rates);
	return sweep_json_write(root, p->o->json);
}

/* The figure (lab/sweep_plot.c): rows the loads, columns the link rates. */
int pk_report_plot(const struct pk *p)
{
	const uint32_t rows = p->o->n_load, cols = p->o->n_rate;
	struct sweep_plot_panel *pn = calloc((size_t)rows * cols, sizeof(*pn));
	char title[512];
	int ret;

	if (!pn)
		return -ENOMEM;
	for (uint32_t b = 0; b < cols; b++)
		for (uint32_t l = 0; l < rows; l++) {
			struct sweep_plot_panel *q = &pn[l * cols + b];
			const uint32_t pj = planner_index(p, b, l), i = b * SWEEP_MAX_LOAD + l;
			double scale = 1e-3; /* ns -> us */
			struct pk_verdict v;
			int at;

			judge(p, b, l, &v);
			for (uint32_t j = 0; p->o->normalize && j < p->n_cand; j++)
				if (p->cand[j].k == p->m->n_layers && p->cand[j].pt[i].p50 > 0)
					scale = 1 / (p->cand[j].pt[i].p50 * 1e3);
			at = snprintf(q->title, sizeof(q->title),
				      "link %g Gbit/s%s, %.0f requests/s", p->o->rate[b],
				      p->o->rate[b] > 0 ? "" : " (not shaped)", p->load[b][l]);
			if (p->o->load_rel[l] && at > 0 && (size_t)at < sizeof(q->title))
				snprintf(q->title + at, sizeof(q->title) - (size_t)at,
					 " (%gx all-host capacity)", p->o->load[l]);
			for (uint32_t j = 0; j < p->n_cand && q->n < SWEEP_MAX_CAND; j++) {
				const struct sweep_point *pt = &p->cand[j].pt[i];
				const double *m = pt->srv_p50;
				struct sweep_plot_bar *bar = &q->bar[q->n];

				if (!pt->done)
					continue;
				pk_cand_name(p, p->cand[j].k, bar->name, sizeof(bar->name));
				bar->part[0] = m[PT_HOST] * scale;
				bar->part[1] = m[PT_PACK] * scale;
				bar->part[2] = m[PT_NIC] * scale;
				bar->part[3] =
				    fmax(0, m[PT_TOTAL] - m[PT_HOST] - m[PT_PACK] - m[PT_NIC]) *
				    scale;
				bar->part[4] = fmax(0, pt->p50 * 1e3 - m[PT_TOTAL]) * scale;
				bar->p50 = isfinite(pt->p50) ? pt->p50 * 1e3 * scale : 0;
				bar->pred_p50 = pt->pred.p50 * 1e9 * scale;
				bar->answered = answered_share(pt);
				bar->by_nic =
				    pt->requests ? (double)pt->ex_nic / (double)pt->requests : 0;
				bar->planner = j == pj;
				bar->best = j < SWEEP_MAX_CAND && v.tie[j];
				q->n++;
			}
		}
	snprintf(title, sizeof(title),
		 "splitnic sweep --packet: %s, NIC platform %s (bars: MEASURED p50 by stage%s; "
		 "over each bar the shares answered / by the NIC)",
		 p->m->name, p->o->platform, p->o->normalize ? ", over the all-host p50" : "");
	ret = sweep_plot_write(p->o->plot, title, p->o->normalize ? "x all-host" : "us", pn, rows,
			       cols);
	free(pn);
	return ret ? -EIO : 0;
}
