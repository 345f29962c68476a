// SPDX-License-Identifier: MIT
/*
 * splitnic sweep --packet: every split point of a model measured through the packet path.
 *
 * For each candidate (the NIC from op k, for every k where it can start, and all-host):
 * splitnic-nic and splitnic-host started in the namespaces of lab/sweep_lab.sh (or the
 * running servers of --servers), then for each link rate (tc tbf on the veth between them) and
 * each offered load: `splitnic client` open loop with Poisson arrivals for --duration seconds.
 * Recorded per point: end-to-end p50/p99/mean and throughput (the client's clock), the servers'
 * per-stage breakdown (medians and means of the RESPONSE timing fields), errors. Beside each, the
 * planner's MODELED prediction for that plan at that load (split_plan_pipeline) and its error; per
 * rate and load, the planner's own choice and how far its measured p50 is from the measured best.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/opts.h"
#include "exec/kexec.h"
#include "lab/plan_measure.h"
#include "lab/sweep.h"
#include "protocol/proto.h"
#include "split/calib.h"
#include "split/stats.h"
#include "split/verbs.h"

/* The lab's link: tbf counts a frame from its Ethernet header (14 + 20 + 8 bytes before the
 * UDP payload) and lets lab_burst() bytes through at once (lab/sweep_lab.sh): one full frame
 * and LAB_CATCHUP of the rate. tbf holds a frame until its tokens are there and sets a timer
 * for it; on this kind of machine the timer fires tens of microseconds late, and a bucket of
 * one frame throws the tokens of that lateness away at every frame: at 1 Gbit/s, where a
 * frame takes 12 us, the link passed 40% of its rate (a 12.6 KB request: 2,447/s against the
 * 6,315/s of a bucket with 100 us of catch-up). See docs/split-planning.md. */
#define LAB_FRAME    1600
#define LAB_CATCHUP  100e-6
#define LAB_OVERHEAD 42
#define UNSHAPED     1000.0 /* Gbit/s standing for an unshaped veth in the model */

enum pk_time { PT_TOTAL, PT_RX, PT_QUEUE, PT_HOST, PT_PACK, PT_XFER, PT_NIC, PT_TX };

struct pk_cand {
	uint32_t k;		   /* NIC from op k; m->n_layers: all-host */
	struct sweep_point *pt;	   /* [rate][load]: the medians over the rounds */
	struct sweep_point *rnd;   /* [rate][load][round] */
	struct split_plan plan;	   /* its stages */
	double smax[SWEEP_MAX_BW]; /* [rate]: its slowest server's service time (s) */
};

#define SWEEP_OP_ROUNDS 31 /* timed runs of each prefix for the cost model (their median) */

struct pk {
	const struct model *m;
	const struct sweep_pk_opts *o;
	struct split_profile pr;
	struct pk_cand *cand;
	uint32_t n_cand;
	double load[SWEEP_MAX_BW][SWEEP_MAX_LOAD]; /* absolute, per rate */
	double cap[SWEEP_MAX_BW];		   /* measured all-host capacity */
	uint32_t plan_k[SWEEP_MAX_BW][SWEEP_MAX_LOAD];
	struct split_load_pred plan_pred[SWEEP_MAX_BW][SWEEP_MAX_LOAD];
	struct sweep_lab lab;
	uint32_t points, points_done;
	uint64_t t_start;
	struct plan_measured pm; /* MEASURED in process before the servers start */
};

static volatile sig_atomic_t pk_stop;

static void on_signal(int sig)
{
	pk_stop = sig;
}

/* The servers for candidate c (NIC from op k, or all-host), in the lab. */
static int start_servers(struct pk *p, const struct pk_cand *c)
{
	const struct model *m = p->m;
	const uint32_t nf = kexec_nic_first(m);
	const bool all_host = c->k == m->n_layers, standalone = c->k == 0;
	char nic_model[4200], host_model[4200], execs[16];
	struct sweep_host_args host;
	char nic_opt[SWEEP_OPT_LEN];
	char *args[80] = {p->lab.dir,	 "--model", nic_model,	  "--notify-host",
			  "--executors", execs,	    "--platform", (char *)p->o->platform};
	size_t n = 8;

	/* all-host: splitnic-nic needs a model to start, but must not answer this one's REQUESTs
	 * (a model it can run whole would be stand-alone): it holds it under another id */
	snprintf(nic_model, sizeof(nic_model), "%s%s@%u", all_host ? "sweep-all-host=" : "",
		 p->o->model_path, all_host ? (nf < m->n_layers ? nf : 0) : c->k);
	snprintf(execs, sizeof(execs), "%u", p->o->executors);
	n = sweep_lab_words(args, n, 40, p->o->nic_opt, nic_opt);
	args[n++] = "--";
	if (!standalone) {
		if (all_host)
			snprintf(host_model, sizeof(host_model), "%s:host-only", p->o->model_path);
		else
			snprintf(host_model, sizeof(host_model), "%s:coproc:%u", p->o->model_path,
				 c->k);
		args[n++] = "--model";
		args[n++] = host_model;
		n = sweep_lab_host_args(args, n, 78, &p->pr, p->o->host_opt, &host);
	}
	args[n] = NULL;
	return sweep_lab_verb(&p->lab, "start", args);
}

/* ---- predictions --------------------------------------------------------------------------- */

static const char *cand_name(const struct pk *p, uint32_t k, char *buf, size_t len)
{
	if (k == p->m->n_layers)
		snprintf(buf, len, "all-host");
	else if (k == 0)
		snprintf(buf, len, "nic-alone");
	else
		snprintf(buf, len, "nic@%u:%s", k, model_op_name(p->m->layers[k].op));
	return buf;
}

/* The token bucket's depth (bytes) at r Gbit/s; 0: not shaped. */
static double lab_burst(double r)
{
	return r > 0 ? ceil(LAB_FRAME + r * 1e9 / 8 * LAB_CATCHUP) : 0;
}

/* The profile as the lab's link makes it at rate r (Gbit/s; 0: not shaped). */
static void lab_profile(const struct pk *p, double r, struct split_profile *pr)
{
	*pr = p->pr;
	if (p->o->servers)
		return;
	pr->v[SPLIT_P_LINK_OVERHEAD] = LAB_OVERHEAD;
	pr->v[SPLIT_P_LINK_BURST] = lab_burst(r);
}

static int predict(struct pk *p)
{
	const struct model *m = p->m;
	char err[512];

	for (uint32_t b = 0; b < p->o->n_rate; b++) {
		const double gbps = p->o->rate[b] > 0 ? p->o->rate[b] : UNSHAPED;
		struct split_profile pr;

		lab_profile(p, p->o->rate[b], &pr);
		for (uint32_t l = 0; l < p->o->n_load; l++) {
			struct split_opts o = {.link_gbps = gbps,
					       .objective = p->o->objective,
					       .packet = true,
					       .load_rps = p->load[b][l],
					       .min_answered = SWEEP_MIN_ANSWERED,
					       .cpu_op_s = p->pm.cpu_op_s,
					       .nic_suffix_s = p->pm.nic_suffix_s};
			struct split_problem prob;
			struct split_plan plan;
			const struct split_stage *last;

			if (split_tools_plan(m, &pr, &o, false, &prob, &plan, &p->plan_pred[b][l],
					     err, sizeof(err))) {
				fprintf(stderr, "splitnic sweep: %s\n", err);
				return -EINVAL;
			}
			last = &plan.stage[plan.n_stages - 1];
			p->plan_k[b][l] = last->exec == SPLIT_EX_NIC ? last->first : m->n_layers;
			for (uint32_t j = 0; j < p->n_cand; j++) {
				struct pk_cand *c = &p->cand[j];
				struct split_pipeline pl;

				if (split_plan_pipeline(&prob, m, &pr, &o, &c->plan, &pl)) {
					fprintf(stderr,
						"splitnic sweep: split at op %u: not a plan of the "
						"cost model\n",
						c->k);
					split_problem_free(&prob);
					return -EINVAL;
				}
				split_pipeline_predict(&pl, p->load[b][l],
						       &c->pt[b * SWEEP_MAX_LOAD + l].pred);
				c->smax[b] = split_pipeline_smax(&pl);
			}
			split_problem_free(&prob);
		}
	}
	return 0;
}

/* ---- measuring ----------------------------------------------------------------------------- */

static uint32_t point_count(const struct pk *p, double load)
{
	double n = load * p->o->duration;

	return n < 100 ? 100 : n > 50000 ? 50000 : (uint32_t)n;
}

static void progress(struct pk *p, const struct pk_cand *c, uint32_t b,
		     const struct sweep_point *pt)
{
	const double el = (double)(lat_now_ns() - p->t_start) * 1e-9;
	char name[48];

	p->points_done++;
	fprintf(stderr,
		"sweep %s: [%u/%u] %s, link %g Gbit/s (0: not shaped), %.0f req/s: p50 %.0f us "
		"(MODELED %.0f us), %lu/%lu answered; %.0f s so far, about %.0f s left\n",
		p->m->name, p->points_done, p->points, cand_name(p, c->k, name, sizeof(name)),
		p->o->rate[b], pt->load, pt->p50, pt->pred.p50 * 1e6, (unsigned long)pt->responses,
		(unsigned long)pt->requests, el,
		el / p->points_done * (p->points - p->points_done));
}

/* The client at `load` requests/s, open loop (Poisson). */
static int run_point(struct pk *p, double load, struct sweep_point *pt)
{
	char cnt[32], rate[32];
	char *args[16] = {"--model",	  (char *)p->o->model_path,
			  "--count",	  cnt,
			  "--timeout-ms", "5000",
			  "--rate",	  rate,
			  "--poisson"};
	size_t n = 9;

	snprintf(cnt, sizeof(cnt), "%u", point_count(p, load));
	snprintf(rate, sizeof(rate), "%.3f", load);
	if (p->o->images) {
		args[n++] = "--images";
		args[n++] = (char *)p->o->images;
	}
	args[n] = NULL;
	return sweep_lab_client(&p->lab, args, pt);
}

/* The MODELED capacity (requests/s) of candidate c at rate index b; 0 if it has none. */
static double modeled_capacity(const struct pk *p, const struct pk_cand *c, uint32_t b)
{
	struct split_opts o = {.link_gbps = p->o->rate[b] > 0 ? p->o->rate[b] : UNSHAPED,
			       .packet = true,
			       .cpu_op_s = p->pm.cpu_op_s,
			       .nic_suffix_s = p->pm.nic_suffix_s};
	struct split_profile pr;
	struct split_problem prob;
	struct split_pipeline pl;
	struct split_load_pred lp = {0};

	lab_profile(p, p->o->rate[b], &pr);
	o.nic_first = kexec_nic_first(p->m);
	o.exec_mask = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_NIC);
	if (split_problem_from_model(&prob, p->m, &pr, &o))
		return 0;
	if (!split_plan_pipeline(&prob, p->m, &pr, &o, &c->plan, &pl))
		split_pipeline_predict(&pl, 0, &lp);
	split_problem_free(&prob);
	return lp.throughput;
}

/* The all-host capacity at each rate (for loads given as multiples of it). */
static int measure_capacity(struct pk *p)
{
	for (uint32_t b = 0; b < p->o->n_rate && !pk_stop; b++) {
		if (sweep_lab_shape(&p->lab, p->o->rate[b], lab_burst(p->o->rate[b])) ||
		    sweep_lab_capacity(&p->lab, p->o->model_path, p->o->images, 0, 0.5,
				       SPLIT_CAPACITY_ANSWERED, &p->cap[b]))
			return pk_stop ? -EINTR : -EIO;
		fprintf(
		    stderr,
		    "sweep %s: %s capacity at link %g Gbit/s (0: not shaped): %.0f requests/s "
		    "(MEASURED: the largest open-loop load answered at %.0f%%; MODELED %.0f/s)\n",
		    p->m->name, p->o->servers ? "the servers'" : "all-host", p->o->rate[b],
		    p->cap[b], 100 * SPLIT_CAPACITY_ANSWERED, modeled_capacity(p, &p->cand[0], b));
		for (uint32_t l = 0; l < p->o->n_load; l++)
			p->load[b][l] =
			    p->o->load_rel[l] ? p->o->load[l] * p->cap[b] : p->o->load[l];
	}
	return pk_stop ? -EINTR : 0;
}

/* A point from its rounds: the medians of each figure, the counts summed. */
static void combine_rounds(struct sweep_point *pt, const struct sweep_point *r, uint32_t n)
{
	const struct split_load_pred pred = pt->pred;
	double v[SWEEP_MAX_ROUNDS];

#define MEDIAN_OF(field)                                                                           \
	do {                                                                                       \
		uint32_t m_ = 0;                                                                   \
		for (uint32_t i_ = 0; i_ < n; i_++)                                                \
			if (isfinite(r[i_].field))                                                 \
				v[m_++] = r[i_].field;                                             \
		pt->field = stats_median(v, m_);                                                   \
	} while (0)
	memset(pt, 0, sizeof(*pt));
	pt->pred = pred;
	pt->load = r[0].load;
	pt->done = true;
	MEDIAN_OF(p50);
	MEDIAN_OF(p99);
	MEDIAN_OF(mean);
	MEDIAN_OF(thr);
	for (unsigned k = 0; k < PROTO_T_COUNT; k++) {
		MEDIAN_OF(srv[k]);
		MEDIAN_OF(srv_p50[k]);
	}
#undef MEDIAN_OF
	{
		double lo = INFINITY, hi = -INFINITY;
		uint32_t m = 0;

		for (uint32_t i = 0; i < n; i++)
			if (isfinite(r[i].p50))
				v[m++] = r[i].p50;
		pt->spread = split_cal_range(v, m);
		/* the answered share's range over the rounds: it ties splits that all shed */
		for (uint32_t i = 0; i < n; i++)
			if (r[i].requests) {
				const double a = (double)r[i].responses / (double)r[i].requests;

				lo = fmin(lo, a);
				hi = fmax(hi, a);
			}
		pt->ans_spread = hi > lo ? hi - lo : 0;
	}
	for (uint32_t i = 0; i < n; i++) {
		pt->requests += r[i].requests;
		pt->responses += r[i].responses;
		pt->errors += r[i].errors;
		pt->busy += r[i].busy;
		pt->timeouts += r[i].timeouts;
		pt->ex_nic += r[i].ex_nic;
		pt->ex_fallback += r[i].ex_fallback;
	}
}

/*
 * Every candidate at every rate and load, in --rounds interleaved rounds (the candidates one
 * after the other in each round, so that a machine whose load drifts sees them alike); each
 * point is the medians over its rounds.
 */
static int measure(struct pk *p)
{
	const uint32_t R = p->o->rounds;
	int ret = 0;

	for (uint32_t r = 0; r < R && !ret && !pk_stop; r++) {
		for (uint32_t j = 0; j < p->n_cand && !ret && !pk_stop; j++) {
			struct pk_cand *c = &p->cand[j];

			if (!p->o->servers && start_servers(p, c)) {
				fprintf(stderr,
					"splitnic sweep: the servers did not start (split at %u)\n",
					c->k);
				return -EIO;
			}
			for (uint32_t b = 0; b < p->o->n_rate && !ret && !pk_stop; b++) {
				if (sweep_lab_shape(&p->lab, p->o->rate[b],
						    lab_burst(p->o->rate[b])))
					return -EIO;
				for (uint32_t l = 0; l < p->o->n_load && !ret && !pk_stop; l++) {
					const uint32_t i = b * SWEEP_MAX_LOAD + l;
					struct sweep_point *pt = &c->rnd[i * SWEEP_MAX_ROUNDS + r];

					ret = run_point(p, p->load[b][l], pt);
					pt->load = p->load[b][l];
					pt->pred = c->pt[i].pred;
					if (!ret)
						progress(p, c, b, pt);
					/* let a saturated queue drain before the next point */
					usleep(300000);
				}
			}
		}
	}
	for (uint32_t j = 0; j < p->n_cand && !ret; j++)
		for (uint32_t b = 0; b < p->o->n_rate; b++)
			for (uint32_t l = 0; l < p->o->n_load; l++) {
				const uint32_t i = b * SWEEP_MAX_LOAD + l;

				combine_rounds(&p->cand[j].pt[i],
					       &p->cand[j].rnd[i * SWEEP_MAX_ROUNDS], R);
			}
	return ret ? ret : pk_stop ? -EINTR : 0;
}

/* ---- report -------------------------------------------------------------------------------- */

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

static void report_text(struct pk *p)
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
				printf(" (tc tbf, a %.0f B bucket)", lab_burst(p->o->rate[b]));
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
				    cand_name(p, p->cand[j].k, name, sizeof(name)), pt->p50,
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
				       cand_name(p, p->plan_k[b][l], name, sizeof(name)));
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
			    cand_name(p, p->plan_k[b][l], name, sizeof(name)), val,
			    1e6 * (p->o->objective == SPLIT_OBJ_P99 ? p->plan_pred[b][l].p99
								    : p->plan_pred[b][l].p50),
			    val, measured_value(p, &p->cand[pj].pt[pi]),
			    100 * answered_share(&p->cand[pj].pt[pi]),
			    100 * p->plan_pred[b][l].answered,
			    cand_name(p, p->cand[v.best].k, name2, sizeof(name2)),
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

	json_object_set_new(j, "split", json_string(cand_name(p, c->k, name, sizeof(name))));
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

static int report_json(const struct pk *p)
{
	json_t *rates = json_array(), *root;
	char name[48];

	root = sweep_json_root(p->m->name, "packet", pk_method);
	json_object_set_new(root, "platform", json_string(p->o->platform));
	json_object_set_new(root, "poll_nic_sleep_us", jreal(1e6 * p->pr.v[SPLIT_P_POLL_NIC]));
	json_object_set_new(root, "poll_host_sleep_us", jreal(1e6 * p->pr.v[SPLIT_P_POLL_HOST]));
	json_object_set_new(root, "poll_wake_late_us", jreal(1e6 * p->pr.v[SPLIT_P_POLL_WAKE]));
	for (uint32_t b = 0; b < p->o->n_rate; b++) {
		json_t *rb = json_object(), *loads = json_array();

		json_object_set_new(rb, "link_gbps",
				    p->o->rate[b] > 0 ? json_real(p->o->rate[b]) : json_null());
		json_object_set_new(rb, "link_burst_bytes", jreal(lab_burst(p->o->rate[b])));
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
			    json_string(cand_name(p, p->plan_k[b][l], name, sizeof(name))));
			json_object_set_new(lo, "planner_predicted_p50_us",
					    jreal(p->plan_pred[b][l].p50 * 1e6));
			json_object_set_new(lo, "planner_predicted_answered",
					    jreal(p->plan_pred[b][l].answered));
			for (uint32_t j = 0; j < p->n_cand && j < SWEEP_MAX_CAND; j++)
				if (v.tie[j])
					json_array_append_new(
					    best, json_string(cand_name(p, p->cand[j].k, name,
									sizeof(name))));
			for (uint32_t r = 0; r < n_order; r++)
				json_array_append_new(rank,
						      json_string(cand_name(p, p->cand[order[r]].k,
									    name, sizeof(name))));
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
static int report_plot(const struct pk *p)
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
				cand_name(p, p->cand[j].k, bar->name, sizeof(bar->name));
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

/* ---- set-up -------------------------------------------------------------------------------- */

static bool wanted(const struct sweep_pk_opts *o, uint32_t k)
{
	if (o->split >= 0)
		return (uint32_t)o->split == k;
	for (uint32_t i = 0; i < o->n_splits; i++)
		if (o->splits[i] == k)
			return true;
	return !o->n_splits;
}

static int candidates(struct pk *p)
{
	const struct model *m = p->m;

	p->cand = calloc(m->n_layers + 1, sizeof(*p->cand));
	if (!p->cand)
		return -ENOMEM;
	/* all-host first: the capacity runs use it */
	for (uint32_t i = 0; i <= m->n_layers; i++) {
		const uint32_t k = i ? i - 1 : m->n_layers;
		struct pk_cand *c = &p->cand[p->n_cand];

		if ((k < m->n_layers && !kexec_nic_handoff_ok(m, k)) || !wanted(p->o, k))
			continue;
		c->k = k;
		if (k)
			c->plan.stage[c->plan.n_stages++] =
			    (struct split_stage){.exec = SPLIT_EX_CPU, .first = 0, .last = k};
		if (k < m->n_layers)
			c->plan.stage[c->plan.n_stages++] = (struct split_stage){
			    .exec = SPLIT_EX_NIC, .first = k, .last = m->n_layers};
		c->pt = calloc(SWEEP_MAX_BW * SWEEP_MAX_LOAD, sizeof(*c->pt));
		c->rnd = calloc(SWEEP_MAX_BW * SWEEP_MAX_LOAD * SWEEP_MAX_ROUNDS, sizeof(*c->rnd));
		if (!c->pt || !c->rnd)
			return -ENOMEM;
		p->n_cand++;
	}
	if (!p->n_cand) {
		fprintf(stderr,
			"splitnic sweep: no split to measure (--split/--splits: ops where the "
			"packet path can hand over to the NIC, or 'host')\n");
		return -EINVAL;
	}
	return 0;
}

int sweep_packet_run(const struct model *m, const struct split_profile *pr,
		     const struct sweep_pk_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
	struct pk p = {.m = m, .o = o, .pr = *pr};
	bool need_cap = false;
	int ret;

	for (uint32_t l = 0; l < o->n_load; l++)
		need_cap |= o->load_rel[l];
	if (!o->servers) /* the lab's servers poll as their options say */
		sweep_lab_poll(&p.pr, o->host_opt, o->nic_opt);
	ret = candidates(&p);
	if (ret)
		goto out;
	{
		char err[512];

		ret = plan_measure(m, pr, SWEEP_OP_ROUNDS, PLAN_MEASURE_TIMES, o->executors, &p.pm,
				   err, sizeof(err));
		if (ret) {
			fprintf(stderr, "splitnic sweep: %s\n", err);
			goto out;
		}
	}
	ret = sweep_lab_init(&p.lab, o->lab, o->tag, o->servers, o->netns);
	if (ret)
		goto out;
	p.lab.stop = &pk_stop; /* the capacity search's clients too */
	for (uint32_t b = 0; b < o->n_rate; b++)
		for (uint32_t l = 0; l < o->n_load; l++)
			p.load[b][l] = o->load_rel[l] ? 0 : o->load[l];
	p.points = p.n_cand * o->n_rate * o->n_load * o->rounds;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	p.t_start = lat_now_ns();
	ret = sweep_lab_up(&p.lab);
	if (ret)
		goto out_sig;
	if (need_cap) {
		if (p.cand[0].k != m->n_layers && !o->servers) {
			fprintf(stderr,
				"splitnic sweep: loads as multiples of the all-host capacity "
				"need the all-host split among --splits\n");
			ret = -EINVAL;
			goto out_lab;
		}
		if (!o->servers && (ret = start_servers(&p, &p.cand[0])) != 0) {
			ret = -EIO;
			goto out_lab;
		}
		ret = measure_capacity(&p);
		if (ret)
			goto out_lab;
	}
	ret = predict(&p);
	if (!ret)
		ret = measure(&p);
out_lab:
	sweep_lab_down(&p.lab);
	if (ret == -EINTR)
		fprintf(stderr, "splitnic sweep: interrupted; the lab is down\n");
	if (!ret && o->result) {
		o->result->n = 0;
		for (uint32_t j = 0; j < p.n_cand && j < SWEEP_MAX_CAND; j++) {
			o->result->k[o->result->n] = p.cand[j].k;
			o->result->pt[o->result->n++] = p.cand[j].pt[0];
		}
	}
	if (!ret) {
		report_text(&p);
		if (o->json)
			ret = report_json(&p);
		if (!ret && o->plot)
			ret = report_plot(&p);
	}
out_sig:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
out:
	for (uint32_t j = 0; p.cand && j < p.n_cand; j++) {
		free(p.cand[j].pt);
		free(p.cand[j].rnd);
	}
	free(p.cand);
	plan_measured_free(&p.pm);
	return ret ? 1 : 0;
}

int sweep_parse_list(const char *arg, double *v, bool *rel, uint32_t *n, uint32_t max,
		     bool allow_none)
{
	const char *tok = arg;

	*n = 0;
	for (;;) {
		const char *comma = strchr(tok, ',');
		const size_t len = comma ? (size_t)(comma - tok) : strlen(tok);
		char buf[64];
		double x = 0;
		bool r;

		if (!len || len >= sizeof(buf) || *n == max)
			return -EINVAL;
		memcpy(buf, tok, len);
		buf[len] = 0;
		r = rel && len > 1 && buf[len - 1] == 'x';
		if (r)
			buf[len - 1] = 0;
		if (!(allow_none && !r && !strcmp(buf, "none")) &&
		    conf_double(NULL, NULL, buf, 0, INFINITY, true, NULL, &x))
			return -EINVAL;
		if (rel)
			rel[*n] = r;
		v[(*n)++] = x;
		if (!comma)
			return 0;
		tok = comma + 1;
	}
}
