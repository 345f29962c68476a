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
#include "lab/sweep_pk.h"
#include "protocol/proto.h"
#include "split/calib.h"
#include "split/stats.h"
#include "split/verbs.h"

/* The lab's link: tbf counts a frame from its Ethernet header (14 + 20 + 8 bytes before the
 * UDP payload) and lets pk_lab_burst() bytes through at once (lab/sweep_lab.sh): one full frame
 * and LAB_CATCHUP of the rate. tbf holds a frame until its tokens are there and sets a timer
 * for it; on this kind of machine the timer fires tens of microseconds late, and a bucket of
 * one frame throws the tokens of that lateness away at every frame: at 1 Gbit/s, where a
 * frame takes 12 us, the link passed 40% of its rate (a 12.6 KB request: 2,447/s against the
 * 6,315/s of a bucket with 100 us of catch-up). See docs/split-planning.md. */
#define LAB_FRAME    1600
#define LAB_CATCHUP  100e-6
#define LAB_OVERHEAD 42
#define UNSHAPED     1000.0 /* Gbit/s standing for an unshaped veth in the model */

#define SWEEP_OP_ROUNDS 31 /* timed runs of each prefix for the cost model (their median) */

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

const char *pk_cand_name(const struct pk *p, uint32_t k, char *buf, size_t len)
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
double pk_lab_burst(double r)
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
	pr->v[SPLIT_P_LINK_BURST] = pk_lab_burst(r);
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
		p->m->name, p->points_done, p->points, pk_cand_name(p, c->k, name, sizeof(name)),
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
		if (sweep_lab_shape(&p->lab, p->o->rate[b], pk_lab_burst(p->o->rate[b])) ||
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
						    pk_lab_burst(p->o->rate[b])))
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

int pk_candidates(struct pk *p)
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

static void pk_free(struct pk *p)
{
	for (uint32_t j = 0; p->cand && j < p->n_cand; j++) {
		free(p->cand[j].pt);
		free(p->cand[j].rnd);
	}
	free(p->cand);
	plan_measured_free(&p->pm);
}

/* --replay: the file's MEASURED points, the MODELED ones of this build and profile (no lab). */
static int replay(const struct model *m, const struct split_profile *pr,
		  const struct sweep_pk_opts *o)
{
	struct sweep_pk_opts ro = *o;
	struct pk p = {.m = m, .o = &ro, .pr = *pr};
	char err[512];
	bool recorded;
	int ret;

	sweep_lab_poll(&p.pr, o->host_opt, o->nic_opt);
	ret = pk_replay_load(&p, &ro);
	recorded = p.pm.n > 0;
	if (!ret && !recorded &&
	    (ret = plan_measure(m, pr, SWEEP_OP_ROUNDS, PLAN_MEASURE_TIMES, o->executors, &p.pm,
				err, sizeof(err))) != 0)
		fprintf(stderr, "splitnic sweep: %s\n", err);
	if (!ret)
		ret = predict(&p);
	if (!ret) {
		printf(
		    "replayed: the MEASURED points of %s, as recorded; the MODELED figures, the "
		    "planner's choice and the model's ranking computed now by this build's model "
		    "with this run's profile, each op priced at %s\n",
		    o->replay,
		    recorded ? "its CPU time as the file records it"
			     : "its CPU time measured in process now (the file records none)");
		pk_report_text(&p);
		if (o->json)
			ret = pk_report_json(&p);
		if (!ret && o->plot)
			ret = pk_report_plot(&p);
	}
	pk_free(&p);
	return ret ? 1 : 0;
}

int sweep_packet_run(const struct model *m, const struct split_profile *pr,
		     const struct sweep_pk_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
	struct pk p = {.m = m, .o = o, .pr = *pr};
	bool need_cap = false;
	int ret;

	if (o->replay)
		return replay(m, pr, o);
	for (uint32_t l = 0; l < o->n_load; l++)
		need_cap |= o->load_rel[l];
	if (!o->servers) /* the lab's servers poll as their options say */
		sweep_lab_poll(&p.pr, o->host_opt, o->nic_opt);
	ret = pk_candidates(&p);
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
		pk_report_text(&p);
		if (o->json)
			ret = pk_report_json(&p);
		if (!ret && o->plot)
			ret = pk_report_plot(&p);
	}
out_sig:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
out:
	pk_free(&p);
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
