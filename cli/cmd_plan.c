// SPDX-License-Identifier: MIT
/*
 * splitnic plan: the planner over the cost model, priced from this machine's measurements (each
 * op timed on this CPU, the NIC's suffixes on its platform: lab/plan_measure.h, as the sweeps
 * do), under the profile's packet-path curves; --measure K: the model ranks the splits, the best
 * K are measured over the packet path (the sweep's machinery) and the best measured is written.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmds.h"
#include "conf/args.h"
#include "exec/kexec.h"
#include "lab/plan_measure.h"
#include "lab/sweep.h"
#include "split/split.h"
#include "split/verbs.h"

#define PLAN_OP_ROUNDS 31 /* timed runs of each prefix (their median), as the sweeps */

struct plan_opts {
	struct split_opts o;
	const char *profile, *out, *lab, *tag, *host_opt, *nic_opt, *objective;
	bool in_process, no_timing;
	long measure, rounds;
	double duration;
};

#define PLAN_OPT(f) offsetof(struct plan_opts, f)

static const struct conf_opt plan_opts[] = {
    CONF_STR_ROW("profile", "P", offsetof(struct plan_opts, profile), NULL,
		 "the calibration profile (default: the built-in one)"),
    CONF_POSITIVE_ROW("link-gbps", "X", PLAN_OPT(o.link_gbps), INFINITY, "Gbit/s", NULL,
		      "the host <-> NIC link (default: the profile's)"),
    CONF_DOUBLE_ROW("load", "RPS", PLAN_OPT(o.load_rps), 0, 1e9, "requests/s", NULL,
		    "offered requests/s: each stage a queue"),
    CONF_CHOICE_ROW("objective", "latency|p99|throughput", PLAN_OPT(objective), "latency",
		    "p50, p99, or the slowest stage"),
    CONF_DOUBLE_ROW("min-answered", "F", PLAN_OPT(o.min_answered), 0, 1, "share", "0.99",
		    "goodput first: a plan answering less of the load ranks by its share"),
    CONF_FLAG_ROW("in-process", offsetof(struct plan_opts, in_process),
		  "predict in process, not the packet path"),
    CONF_FLAG_ROW("allow-approx", offsetof(struct plan_opts, o.allow_approx),
		  "cuts that change values (fp16, int8) allowed"),
    CONF_FLAG_ROW("no-timing", offsetof(struct plan_opts, no_timing),
		  "price the ops by the profile's per-op model, not timed here"),
    CONF_LONG_ROW("measure", "K", offsetof(struct plan_opts, measure), 0, SWEEP_MAX_CAND, "0",
		  "measure the model's best K splits over the packet path (root)"),
    CONF_DOUBLE_ROW("duration", "S", PLAN_OPT(duration), 0.2, 60, "seconds", "2",
		    "--measure: seconds of load a split"),
    CONF_LONG_ROW("rounds", "N", offsetof(struct plan_opts, rounds), 1, SWEEP_MAX_ROUNDS, "3",
		  "--measure: interleaved rounds (medians)"),
    CONF_STR_ROW("host-opt", "'OPTS'", offsetof(struct plan_opts, host_opt), "--idle-sleep-us 20",
		 "--measure: more splitnic-host options"),
    CONF_STR_ROW("nic-opt", "'OPTS'", offsetof(struct plan_opts, nic_opt), "--idle-sleep-us 20",
		 "--measure: more splitnic-nic options"),
    CONF_STR_ROW("lab", "SCRIPT", offsetof(struct plan_opts, lab), NULL,
		 "--measure: the lab (lab/sweep_lab.sh)"),
    CONF_STR_ROW("tag", "T", offsetof(struct plan_opts, tag), NULL,
		 "--measure: the lab's namespaces' tag"),
    CONF_OUTPUT_ROW("PLAN", offsetof(struct plan_opts, out),
		    "write the plan file (splitnic run --plan, splitnic-host)"),
};

const struct conf_cmd cmd_plan_spec = {
    CONF_CMD("splitnic plan",
	     "MODEL [--profile P] [--link-gbps X] [--load RPS] "
	     "[--objective latency|p99|throughput] [--min-answered F] [--in-process] "
	     "[--allow-approx] [--no-timing] [--measure K [--duration S] [--rounds N] "
	     "[--host-opt 'OPTS'] [--nic-opt 'OPTS'] [--lab SCRIPT] [--tag T]] [-o PLAN]",
	     "choose the split (CPU, GPU, NIC stages) from the cost model, under load", plan_opts,
	     1, 1, NULL),
    .notes =
	"Predicts the packet path (front-end -> splitnic-nic -> splitnic-host -> NIC) unless\n"
	"--in-process, pricing each op from its time on this CPU and the NIC's part from its\n"
	"platform's own time (as the sweeps do; --no-timing: the profile's per-op model) and the\n"
	"waits and shares under --load from the profile's packet-path curves (calibrate "
	"--packet).\n"
	"Goodput first: a plan MODELED to answer less than --min-answered of the load ranks by "
	"the\n"
	"share it answers; then a plan with every stage below saturation before one whose NIC (or\n"
	"host) is saturated and answers through the fallback. --measure K (root): the K best "
	"single splits by the model are measured\n"
	"over the packet path (splitnic sweep --packet's machinery, at --load or, without one,\n"
	"200 requests/s) and the best MEASURED one is written, with its figures.\n"};

/* Which profile, how it was calibrated and how long ago. */
static void print_profile(const char *path, const struct split_profile *pr)
{
	const double t = pr->v[SPLIT_P_CAL_TIME];
	const double age = difftime(time(NULL), (time_t)t);
	char when[64] = "";

	if (!path) {
		printf("profile: the built-in defaults (not this machine's: run splitnic calibrate "
		       "--packet)\n");
		return;
	}
	if (!(t > 0)) {
		printf("profile %s: no packet-path calibration (its load curves are the built-in "
		       "defaults: run splitnic calibrate --packet)\n",
		       path);
		return;
	}
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", gmtime(&(time_t){(time_t)t}));
	printf("profile %s: packet path calibrated %s, %.0f %s ago (NIC %s, %.0f executors); its "
	       "rounds spread %.1f%%\n",
	       path, when,
	       age < 7200     ? age / 60
	       : age < 172800 ? age / 3600
			      : age / 86400,
	       age < 7200     ? "min"
	       : age < 172800 ? "h"
			      : "days",
	       pr->v[SPLIT_P_NIC_EMU] ? "emu" : "lcore", pr->v[SPLIT_P_NIC_EXECS],
	       100 * pr->v[SPLIT_P_CAL_SPREAD]);
}

/* A single split the packet path can serve: CPU [0, k) + NIC [k, n); k = n: all-host. */
static void single_split(const struct model *m, uint32_t k, struct split_plan *plan)
{
	memset(plan, 0, sizeof(*plan));
	if (k)
		plan->stage[plan->n_stages++] =
		    (struct split_stage){.exec = SPLIT_EX_CPU, .first = 0, .last = k};
	if (k < m->n_layers)
		plan->stage[plan->n_stages++] =
		    (struct split_stage){.exec = SPLIT_EX_NIC, .first = k, .last = m->n_layers};
}

struct ranked {
	uint32_t k;
	struct split_load_pred pred;
};

static double objective_value(uint32_t objective, const struct split_load_pred *lp)
{
	return objective == SPLIT_OBJ_P99 ? lp->p99 : lp->p50;
}

static const char *split_label(const struct model *m, uint32_t k, char *buf, size_t len)
{
	if (k == m->n_layers)
		snprintf(buf, len, "all-host");
	else if (!k)
		snprintf(buf, len, "nic-alone");
	else
		snprintf(buf, len, "nic@%u:%s", k, model_op_name(m->layers[k].op));
	return buf;
}

/* The single splits ranked by the model at o->load_rps (goodput first); their count. */
static uint32_t rank_splits(const struct model *m, const struct split_profile *pr,
			    const struct split_opts *o, struct ranked *r)
{
	struct split_opts so = *o;
	struct split_problem p;
	struct split_rank_key key[SWEEP_MAX_CAND];
	struct ranked tmp[SWEEP_MAX_CAND];
	uint32_t n = 0, order[SWEEP_MAX_CAND];

	so.exec_mask = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_NIC);
	if (split_problem_from_model(&p, m, pr, &so))
		return 0;
	for (uint32_t k = 0; k <= m->n_layers && n < SWEEP_MAX_CAND; k++) {
		struct split_plan plan;
		struct split_pipeline pl;

		if (k < m->n_layers && !kexec_nic_handoff_ok(m, k))
			continue;
		single_split(m, k, &plan);
		if (split_plan_pipeline(&p, m, pr, &so, &plan, &pl))
			continue;
		split_pipeline_predict(&pl, o->load_rps, &tmp[n].pred);
		tmp[n].k = k;
		split_rank_key(o, &tmp[n].pred, split_pipeline_smax(&pl), plan.n_stages, &key[n]);
		n++;
	}
	split_problem_free(&p);
	split_rank_order(key, n, order);
	for (uint32_t i = 0; i < n; i++)
		r[i] = tmp[order[i]];
	return n;
}

static double share(const struct sweep_point *pt)
{
	return pt->requests ? (double)pt->responses / (double)pt->requests : 0;
}

/*
 * --measure K: the model's best K single splits measured over the packet path; the best
 * MEASURED (goodput first; ties within 3% or the rounds' spread, and when every split sheds,
 * answered shares within a point or the rounds' range of the share, go to the model's order)
 * into plan and its figures into meas. 0, or -errno after a message.
 */
static int measure_best(const struct model *m, const char *path, const struct split_profile *pr,
			const struct plan_opts *po, struct split_plan *plan,
			struct sweep_point *meas)
{
	struct ranked r[SWEEP_MAX_CAND];
	struct sweep_pk_result *res = calloc(1, sizeof(*res));
	struct sweep_pk_opts so = {.model_path = path,
				   .n_rate = 1,
				   .n_load = 1,
				   .duration = po->duration,
				   .rounds = (uint32_t)po->rounds,
				   .objective = po->o.objective,
				   .platform = pr->v[SPLIT_P_NIC_EMU] ? "emu" : "lcore",
				   .executors = (uint32_t)pr->v[SPLIT_P_NIC_EXECS],
				   .host_opt = po->host_opt,
				   .nic_opt = po->nic_opt,
				   .lab = po->lab,
				   .tag = po->tag,
				   .split = -1,
				   .result = res};
	const uint32_t n = rank_splits(m, pr, &po->o, r);
	uint32_t best = UINT32_MAX, rank_of[SWEEP_MAX_CAND] = {0};
	char name[48];
	int ret;

	if (!res)
		return -ENOMEM;
	so.rate[0] = po->o.link_gbps;
	so.load[0] = po->o.load_rps > 0 ? po->o.load_rps : 200;
	printf("--measure %ld: the model's ranking of the single splits at %g requests/s "
	       "(MODELED; goodput first):\n",
	       po->measure, so.load[0]);
	for (uint32_t i = 0; i < n; i++) {
		printf("  %2u. %-22s p50 %9.1f us  p99 %9.1f us  answered %5.1f%%%s\n", i + 1,
		       split_label(m, r[i].k, name, sizeof(name)), r[i].pred.p50 * 1e6,
		       r[i].pred.p99 * 1e6, 100 * r[i].pred.answered,
		       i < (uint32_t)po->measure ? "  (measured)" : "");
		if (i < (uint32_t)po->measure)
			so.splits[so.n_splits++] = r[i].k;
	}
	fflush(stdout);
	ret = sweep_packet_run(m, pr, &so) ? -EIO : 0;
	for (uint32_t j = 0; !ret && j < res->n; j++) {
		const struct sweep_point *pt = &res->pt[j];

		for (uint32_t i = 0; i < n; i++)
			if (r[i].k == res->k[j])
				rank_of[j] = i;
		if (!pt->done || !(pt->p50 > 0))
			continue;
		if (best == UINT32_MAX) {
			best = j;
			continue;
		}
		{
			const struct sweep_point *bp = &res->pt[best];
			const bool ok = share(pt) >= po->o.min_answered,
				   bok = share(bp) >= po->o.min_answered;
			const double v = po->o.objective == SPLIT_OBJ_P99 ? pt->p99 : pt->p50;
			const double bv = po->o.objective == SPLIT_OBJ_P99 ? bp->p99 : bp->p50;
			const double tol = fmax(0.03, fmax(pt->spread, bp->spread));
			const double atol = fmax(0.01, fmax(pt->ans_spread, bp->ans_spread));

			if (ok != bok ? ok
			    : ok      ? (v < bv / (1 + tol) ||
					 (v <= bv * (1 + tol) && rank_of[j] < rank_of[best]))
				      : (share(pt) > share(bp) + atol ||
					 (share(pt) >= share(bp) - atol && rank_of[j] < rank_of[best])))
				best = j;
		}
	}
	if (!ret && best == UINT32_MAX) {
		fprintf(stderr, "splitnic plan: --measure: no measured split got answers\n");
		ret = -EIO;
	}
	if (!ret) {
		single_split(m, res->k[best], plan);
		*meas = res->pt[best];
		printf("--measure: best MEASURED: %s, p50 %.1f us, p99 %.1f us, answered %.1f%% "
		       "(rank %u by the model)\n",
		       split_label(m, res->k[best], name, sizeof(name)), meas->p50, meas->p99,
		       100 * share(meas), rank_of[best] + 1);
	}
	free(res);
	return ret;
}

int cmd_plan(int argc, char **argv)
{
	struct plan_opts po = {.duration = 2};
	struct split_opts *op = &po.o;
	struct split_load_pred pred;
	struct split_profile pr;
	struct split_problem p;
	struct split_plan plan;
	struct plan_measured pm = {0};
	struct sweep_point meas = {0};
	struct model *m;
	char err[512];
	int arg, ret = 1;

	op->min_answered = 0.99;
	arg = conf_parse(&cmd_plan_spec, argc, argv, &po);
	if (arg < 0)
		return 2;
	op->objective = (uint32_t)split_objective_from_name(po.objective);
	op->packet = !po.in_process;
	if (po.measure && !op->packet) {
		fprintf(stderr, "splitnic plan: --measure measures the packet path: not with "
				"--in-process\n");
		return 2;
	}
	if (po.out && conf_output_ok("plan", "-o", po.out))
		return 1;
	if (split_tools_load_profile("plan", po.profile, &pr))
		return 1;
	if (op->link_gbps <= 0)
		op->link_gbps = pr.v[SPLIT_P_LINK_GBPS];
	m = model_load(argv[arg], err, sizeof(err));
	if (!m) {
		fprintf(stderr, "splitnic plan: %s\n", err);
		return 1;
	}
	if (!po.no_timing) {
		if (plan_measure(m, &pr, PLAN_OP_ROUNDS, PLAN_MEASURE_TIMES, 0, &pm, err,
				 sizeof(err))) {
			fprintf(stderr, "splitnic plan: %s\n", err);
			goto out_model;
		}
		op->cpu_op_s = pm.cpu_op_s;
		op->nic_suffix_s = op->packet ? pm.nic_suffix_s : NULL;
	}
	if (split_tools_plan(m, &pr, op, true, &p, &plan, &pred, err, sizeof(err))) {
		fprintf(stderr, "splitnic plan: %s\n", err);
		goto out_model;
	}
	print_profile(po.profile, &pr);
	printf("model %s: %u ops; objective %s (%.1f us); link %g Gbit/s; %s; offered load %g "
	       "requests/s (goodput first: %.0f%% answered); GPU %s; approximate cuts %s; ops "
	       "priced %s\n",
	       m->name, m->n_layers,
	       op->objective == SPLIT_OBJ_THROUGHPUT ? "throughput: slowest stage"
						     : split_objective_name(op->objective),
	       plan.cost * 1e6, op->link_gbps, op->packet ? "packet path" : "in process",
	       op->load_rps, 100 * op->min_answered,
	       pr.v[SPLIT_P_GPU_PRESENT] ? "in the profile" : "not in the profile",
	       op->allow_approx ? "allowed" : "not allowed",
	       po.no_timing ? "by the profile's per-op model"
			    : "from their times on this CPU (and the NIC's platform)");
	split_tools_print_plan(m, &plan);
	split_tools_print_load(m, &pr, op, &p, &plan);
	if (po.measure) {
		struct split_plan mp;

		split_problem_free(&p);
		op->exec_mask = SPLIT_EXM(SPLIT_EX_CPU) | SPLIT_EXM(SPLIT_EX_NIC);
		if (split_problem_from_model(&p, m, &pr, op) ||
		    measure_best(m, argv[arg], &pr, &po, &mp, &meas)) {
			split_problem_free(&p);
			goto out_model;
		}
		plan = mp;
		split_plan_eval(&p, &plan); /* the cuts' formats */
		{
			struct split_pipeline pl;

			if (split_plan_pipeline(&p, m, &pr, op, &plan, &pl)) {
				fprintf(stderr,
					"splitnic plan: the measured split is not a plan\n");
				split_problem_free(&p);
				goto out_model;
			}
			split_pipeline_predict(&pl, op->load_rps, &pred);
			plan.cost = objective_value(op->objective, &pred);
			plan.latency = pred.p50;
		}
	}
	ret = 0;
	if (po.out) {
		struct split_plan_figures fig = {.measured = po.measure > 0,
						 .p50_us = meas.p50,
						 .p99_us = meas.p99,
						 .answered = share(&meas)};

		ret = split_plan_save_figures(po.out, m, &plan, op, op->link_gbps, &fig);
		if (ret) {
			fprintf(stderr, "splitnic plan: %s: %s\n", po.out, strerror(-ret));
			ret = 1;
		}
	}
	split_problem_free(&p);
out_model:
	plan_measured_free(&pm);
	model_free(m);
	return ret;
}
